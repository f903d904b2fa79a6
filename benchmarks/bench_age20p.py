"""Issue 20 round 16: an age effect left in must not empty components silently.

:mod:`bench_site20n`'s cohort (``make_multisite_cohort``, fsaverage5, three
sites, age and sex effects planted) and fit, with a third variant ``regr``:
each site's mean removed and age and sex regressed out (as
``/work/notes/s40/conf_harm_age.py``). ``harm`` leaves the age effect in.
``--k`` sets ``n_components`` (3: the planted patterns; 4: one for the age
effect). One JSON line per instance (``bench_site20n.py``'s keys, so its
``--summary`` compares two runs) plus ``k``, the abs correlation of each
component's scores with age and the full text of the warnings.
``--evidence SET ...`` fits the evidence sets (``bench_cost20g.load``) and
``--rsfmri`` brainspace's run's two halves (``bench_stability20g_rsfmri``)
instead, recording the same keys (no planted age) and saving the components
(``--out``'s stem + ``_SET_SEED.npy``) to compare two trees:

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_age20p.py \\
        --seeds 3583 3584 --variants harm regr --k 3 4 --out /tmp/age.jsonl
    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_age20p.py \\
        --seeds 3590 --evidence c69-0.6 paper-0.7 --rsfmri --out /tmp/guard.jsonl
"""

import argparse
import json
import time
import warnings

import numpy as np
from bench_site20n import load

from neurospca import SPCATV
from neurospca.study import make_multisite_cohort


def confounds(seed, order):
    """Age and sex (numeric) in the rows' order of :func:`bench_site20n.load`."""
    part = make_multisite_cohort(None, 133, random_state=seed).participants
    site = part["site"].to_numpy()
    o = np.argsort(site, kind="stable") if order == "site" else np.arange(site.size)
    age = part["age"].to_numpy(float)[o]
    sex = (part["sex"].to_numpy()[o] == "F").astype(float)
    return age, sex


def fit_one(seed, order, variant, k):
    """The default fit with ``k`` components of one instance; its JSON record."""
    X, op, P = load(seed, order, "raw" if variant == "raw" else "harm")
    age, sex = confounds(seed, order)
    if variant == "regr":
        Z = np.column_stack([np.ones(age.size), age, sex])
        X = X - Z @ np.linalg.lstsq(Z, X, rcond=None)[0]
    return fit_record(X, op, P, age, k, dict(seed=seed, order=order, variant=variant, k=k))[0]


def fit_record(X, op, P, age, k, record):
    """``(record, model)``: the default fit of ``X`` and its JSON record."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.process_time()
        m = SPCATV(k, operator=op, random_state=0).fit(X)
        cpu = time.process_time() - t
    C = m.components_
    Pn = P / np.linalg.norm(P, axis=1, keepdims=True)
    cos = np.abs(Pn @ C.T) / np.maximum(np.linalg.norm(C, axis=1), 1e-300)
    scores = X @ C.T
    with np.errstate(invalid="ignore", divide="ignore"):
        r_age = [abs(np.corrcoef(s, age)[0, 1]) if np.std(s) > 0 else 0.0 for s in scores.T]
    return {
        **record,
        "point": [m.l1_ratio_, m.tv_ratio_, m.alpha_rel_],
        "nonzero": np.mean(C != 0, axis=1).round(3).tolist(),
        "cos": cos.max(axis=1).round(2).tolist(),
        "age_corr": np.round(r_age, 2).tolist(),
        "stability": np.round(m.stability_, 2).tolist(),
        "dense": [
            [p["alpha_rel"], p["l1_ratio"], p["tv_ratio"], *p["dense_effect"]]
            for p in m.auto_path_
            if p.get("dense_effect")
        ],
        "cpu": round(cpu, 1),
        "warnings": sorted({str(w.message) for w in caught if issubclass(w.category, UserWarning)}),
    }, m


def guard(args):
    """The evidence sets (``--evidence``) and the real run's halves (``--rsfmri``)."""
    from bench_cost20g import load as load_set

    jobs = [(name, seed) for name in args.evidence or [] for seed in args.seeds or []]
    for name, seed in jobs + ([("rsfmri", 0), ("rsfmri", 1)] if args.rsfmri else []):
        if name == "rsfmri":
            from bench_stability20g_rsfmri import brainspace_rsfmri, halves

            X, op, _ = brainspace_rsfmri()
            X = (X - X.mean(0)) / X.std(0)
            X, P, k = X[list(halves(len(X), -1))[seed]], np.ones((1, X.shape[1])), 5
        else:
            (X, op, P), k = load_set(name, seed), 3
        rec, m = fit_record(X, op, P, np.arange(len(X), dtype=float), k, dict(set=name, seed=seed))
        _write(args.out, rec)
        if args.out:
            np.save(f"{args.out.rsplit('.', 1)[0]}_{name}_{seed}.npy", m.components_)


def _write(out, rec):
    line = json.dumps(rec)
    print(line, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")


def _kinds(warned):
    """The warnings' kinds: E empty, W whole-map, H the signal seen at weaker
    points only (round 16), S flagged by ``stability_``."""
    keys = (("are empty", "E"), ("are whole-map", "W"), ("no component is empty", "H"))
    keys += (("do not reproduce", "S"),)
    return "".join(sorted({k for w in warned for text, k in keys if text in w}))


def _small(r, small=0.2):
    """H of the landed rule (``_auto.SMALL``) from a record: the signal seen, no
    component empty or whole-map, one below ``small`` x the largest's non-zeros."""
    nz = np.asarray(r["nonzero"])
    plain = nz.min() > 0 and nz.max() < 0.9
    return bool(r["dense"]) and plain and bool(np.any(nz < small * nz.max()))


def _said(r):
    """The kinds said by main and the branch (E, W, S: the branch names the signal
    in E and W) and ``(H)`` where ``_auto.WARN_SMALL`` (off) would add one
    (recomputed: :func:`_small`)."""
    return _kinds(r["warnings"]).replace("H", ""), "(H)" if _small(r) else ""


def summary(files):
    """Markdown: one row per instance, then per variant and ``k`` the counts of
    empty components, missed patterns, and of those said by a warning (main's
    kinds E, W, S; this branch's add H and the signal's text in E)."""
    rows = [json.loads(line) for f in files for line in open(f) if '"variant"' in line]
    rows.sort(key=lambda r: (r["variant"], r["k"], r["order"], r["seed"]))
    print(
        "| variant | K | order | seed | point | non-zero | best abs cos | age corr | "
        "stability_ | signal seen at | warnings |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        pt = r["point"]
        print(
            f"| {r['variant']} | {r['k']} | {r['order']} | {r['seed']} | "
            f"({pt[0]:g}, {pt[1]:g}) {pt[2]:g} | {fmt(r['nonzero'])} | {fmt(r['cos'])} | "
            f"{fmt(r['age_corr'])} | {fmt(r['stability'])} | "
            f"{', '.join(f'{d[0]:g}' for d in r['dense']) or '-'} | "
            f"{''.join(_said(r)) or '-'} |"
        )
    print(
        "\n| variant | K | n | an empty component | a pattern < 0.90 | < 0.75 | "
        "empty or < 0.75 and no warning: main, branch / with WARN_SMALL | signal seen |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted({(r["variant"], r["k"]) for r in rows}):
        g = [r for r in rows if (r["variant"], r["k"]) == key]
        empty = [r for r in g if min(r["nonzero"]) == 0]
        bad = [r for r in g if min(r["nonzero"]) == 0 or min(r["cos"]) < 0.75]
        silent = [sum(not _said(r)[0] for r in bad), sum(not "".join(_said(r)) for r in bad)]
        print(
            f"| {key[0]} | {key[1]} | {len(g)} | {len(empty)} | "
            f"{sum(min(r['cos']) < 0.9 for r in g)} | {sum(min(r['cos']) < 0.75 for r in g)} | "
            f"{silent[0]} / {silent[1]} of {len(bad)} | {sum(bool(r['dense']) for r in g)} |"
        )


def fmt(a):
    return "/".join(f"{x:.2g}" for x in a)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[])
    ap.add_argument("--orders", nargs="+", default=["shuffled", "site"])
    ap.add_argument("--variants", nargs="+", default=["harm", "regr", "raw"])
    ap.add_argument("--k", type=int, nargs="+", default=[3])
    ap.add_argument("--out", help="JSON lines, appended")
    ap.add_argument("--evidence", nargs="+", help="bench_cost20h's sets instead")
    ap.add_argument("--rsfmri", action="store_true", help="the real run's halves instead")
    ap.add_argument("--summary", nargs="+", help="JSON lines files: the tables")
    args = ap.parse_args()
    if args.summary:
        return summary(args.summary)
    if args.evidence or args.rsfmri:
        return guard(args)
    for seed in args.seeds:
        for variant in args.variants:
            for order in args.orders:
                for k in args.k:
                    _write(args.out, fit_one(seed, order, variant, k))


if __name__ == "__main__":
    main()
