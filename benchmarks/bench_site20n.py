"""Issue 20 round 14: the default fit on a multi-site cohort given without its sites.

``make_multisite_cohort(None, 133, random_state=seed)`` (fsaverage5, three
sites: offsets over the whole cortex), column-centred only (``raw``) or with
each site's mean removed (``harm``), rows as simulated (``shuffled``) or
sorted by site (``site``), fitted with ``SPCATV(3, operator=op,
random_state=0)``. One JSON line per instance: the chosen point, the non-zero
fraction per component, the best abs cos per planted pattern, ``stability_``,
CPU seconds and the warnings' first words. Run once per tree:

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_site20n.py \\
        --seeds 3473 3474 --out /tmp/after.jsonl
    python benchmarks/bench_site20n.py --summary /tmp/before.jsonl /tmp/after.jsonl
"""

import argparse
import json
import time
import warnings

import numpy as np

import neurospca  # noqa: F401  (first: the tree on PYTHONPATH)
from neurospca import SPCATV
from neurospca.study import make_multisite_cohort
from neurospca.surface import tv_from_hemispheres


def load(seed, order, variant):
    """The cohort's data (cortex), operator and planted patterns."""
    b = make_multisite_cohort(None, 133, random_state=seed)
    n_left = b.n_vertices[0]
    op, _ = tv_from_hemispheres(b.mesh_left, b.mesh_right, b.cortex[:n_left], b.cortex[n_left:])
    X, site = b.X[:, b.cortex], b.participants["site"].to_numpy()
    o = np.argsort(site, kind="stable") if order == "site" else np.arange(site.size)
    X, site = X[o], site[o]
    if variant == "harm":
        sites = np.unique(site)
        X = X - np.array([X[site == s].mean(axis=0) for s in sites])[np.searchsorted(sites, site)]
    return X - X.mean(axis=0), op, b.patterns[:, b.cortex]


def run_one(seed, order, variant):
    return fit_one(seed, order, variant)[0]


def fit_one(seed, order, variant):
    """``(record, model)``: the default fit of one instance and its JSON record."""
    X, op, P = load(seed, order, variant)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.process_time()
        m = SPCATV(3, operator=op, random_state=0).fit(X)
        cpu = time.process_time() - t
    C = m.components_
    Pn = P / np.linalg.norm(P, axis=1, keepdims=True)
    cos = np.abs(Pn @ C.T) / np.maximum(np.linalg.norm(C, axis=1), 1e-300)
    said = sorted({str(w.message)[:60] for w in caught if issubclass(w.category, UserWarning)})
    record = {
        "seed": seed,
        "order": order,
        "variant": variant,
        "point": [m.l1_ratio_, m.tv_ratio_, m.alpha_rel_],
        "nonzero": np.mean(C != 0, axis=1).round(3).tolist(),
        "cos": cos.max(axis=1).round(2).tolist(),
        "stability": np.round(m.stability_, 2).tolist(),
        "cpu": round(cpu, 1),
        "warnings": said,
    }
    return record, m


def fmt(a):
    return "/".join(f"{x:.3g}" for x in a)


def summary(before, after):
    """A markdown table: one row per instance, before and after side by side."""
    rows = [[json.loads(line) for line in open(f)] for f in (before, after)]
    key = lambda r: (r["variant"], r["order"], r["seed"])  # noqa: E731
    old = {key(r): r for r in rows[0]}
    print(
        "| variant | order | seed | before: point, non-zero, best abs cos | after: point | "
        "non-zero | best abs cos per pattern | stability_ | CPU s before -> after |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows[1], key=key):
        b = old.get(key(r))
        if b is None:
            continue
        same = all(b[k] == r[k] for k in ("point", "nonzero", "cos", "stability"))
        was = "same" if same else f"{_point(b)}, {fmt(b['nonzero'])}, {fmt(b['cos'])}"
        print(
            f"| {r['variant']} | {r['order']} | {r['seed']} | {was} | {_point(r)} | "
            f"{fmt(r['nonzero'])} | {fmt(r['cos'])} | {fmt(r['stability'])} | "
            f"{b['cpu']:.1f} -> {r['cpu']:.1f} |"
        )


def _point(r):
    return f"({r['point'][0]:g}, {r['point'][1]:g}) {r['point'][2]:g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+")
    ap.add_argument("--orders", nargs="+", default=["shuffled", "site"])
    ap.add_argument("--variants", nargs="+", default=["raw", "harm"])
    ap.add_argument("--out", help="JSON lines, appended")
    ap.add_argument("--summary", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.summary:
        return summary(*args.summary)
    run_all(args, run_one)


def run_all(args, one):
    """``one(seed, order, variant)`` per instance of ``args``, printed and
    appended to ``args.out`` as JSON lines."""
    for seed in args.seeds:
        for variant in args.variants:
            for order in args.orders:
                line = json.dumps(one(seed, order, variant))
                print(line, flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(line + "\n")


if __name__ == "__main__":
    main()
