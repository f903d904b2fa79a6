"""Where a default fit's time goes, point by point (issue 20 round 7, cost).

For each evidence set and seed (benchmarks/_trust.py) fit
``SPCATV(3, operator=op, random_state=0)`` with defaults and record, in one
JSON per instance (``--out``): every point of the automatic path (split,
``alpha_rel``, split-half reproducibility per pair, non-zero fraction, the CPU
seconds of its two half fits), every full fit of ``auto_fit`` (its point and
CPU seconds), the CPU seconds of ``stability_``; the chosen point, matched
|cos|, Dice of the non-zero loadings and of the certified support per planted
pattern; the default fit's wall and CPU seconds and those of one fit at the
chosen point (the median of three, same process). One table row per
instance is printed ("meets": |cos| >= .90 and certified Dice >= .80 for
every pattern). ``--summary DIR_A [DIR_B]`` prints the table of saved runs
(before -> after when two).

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_cost20f.py \\
        --sets paper-0.7 --seeds 3151 3152 --out /tmp/after
    python benchmarks/bench_cost20f.py --summary /tmp/before /tmp/after
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import certified_dice, recovery  # noqa: E402
from bench_auto_cost import timed as _timed  # noqa: E402
from bench_trust_defaults import fmt, load  # noqa: E402

import neurospca  # noqa: E402,F401  (first: the tree on PYTHONPATH, not the repo root)
from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import _auto, _spcatv  # noqa: E402

LOG = {"points": [], "full": [], "stability": 0.0}


def _cpu_wrapped(fn, record):
    def wrapped(*args, **kwargs):
        c0 = time.process_time()
        out = fn(*args, **kwargs)
        record(args, out, time.process_time() - c0)
        return out

    return wrapped


def _instrument():
    """Time each path point, each full fit of ``auto_fit`` and ``stability_``."""

    def point(args, out, cpu):
        LOG["points"].append(
            {
                "split": [out.get("l1_ratio"), out.get("tv_ratio")],
                "alpha_rel": out["alpha_rel"],
                "reproducibility": np.asarray(out["reproducibility"]).tolist(),
                "nonzero_fraction": np.asarray(out["nonzero_fraction"]).tolist(),
                "cpu": cpu,
            }
        )

    _auto._fit_point = _cpu_wrapped(_auto._fit_point, point)
    inner_fit = _auto.auto_fit

    def auto_fit(path, run, start):
        def full(args, out, cpu):
            p = args[0]
            LOG["full"].append(
                {"split": [p["l1_ratio"], p["tv_ratio"]], "alpha_rel": p["alpha_rel"], "cpu": cpu}
            )

        return inner_fit(path, _cpu_wrapped(run, full), start)

    _spcatv.auto_fit = auto_fit

    def stab(args, out, cpu):
        LOG["stability"] += cpu

    _spcatv.set_stability = _cpu_wrapped(_spcatv.set_stability, stab)


def run_one(name, seed, out):
    X, op, P = load(name, seed)
    LOG.update(points=[], full=[], stability=0.0)
    m, t, c = _timed(lambda: SPCATV(3, operator=op, random_state=0).fit(X))
    rec = {"set": name, "seed": seed, **{k: LOG[k] for k in ("points", "full", "stability")}}
    point = {"alpha_rel": m.alpha_rel_, "l1_ratio": m.l1_ratio_, "tv_ratio": m.tv_ratio_}
    ones = [_timed(lambda: SPCATV(3, operator=op, **point).fit(X)) for _ in range(3)]
    t1, c1 = np.median([o[1:] for o in ones], axis=0)
    cos, dice = recovery(m.components_, P)
    cert = certified_dice(m, P)
    rec.update(
        point=point,
        cos=cos.tolist(),
        dice=dice.tolist(),
        cert=cert.tolist(),
        stability_=np.asarray(m.stability_).tolist(),
        wall=t,
        cpu=c,
        one_wall=float(t1),
        one_cpu=float(c1),
    )
    if out:
        (Path(out) / f"{name}_{seed}.json").write_text(json.dumps(rec))
        np.save(Path(out) / f"{name}_{seed}.npy", m.components_)
    print(table_row(rec), flush=True)


def meets(rec):
    return min(rec["cos"]) >= 0.90 and min(rec["cert"]) >= 0.80


def chosen(rec):
    p = rec["point"]
    return f"({p['l1_ratio']:g}, {p['tv_ratio']:g}) {p['alpha_rel']:g}"


def table_row(rec):
    half = sum(p["cpu"] for p in rec["points"])
    full = sum(f["cpu"] for f in rec["full"])
    return (
        f"| {rec['set']} | {rec['seed']} | {chosen(rec)} | {fmt(rec['cos'])} | "
        f"{fmt(rec['cert'])} | {'yes' if meets(rec) else 'no'} | {len(rec['points'])} | "
        f"{half:.1f} / {len(rec['full'])}: {full:.1f} / {rec['stability']:.1f} | "
        f"{rec['cpu']:.1f} / {rec['wall']:.1f} | {rec['one_cpu']:.2f} / {rec['one_wall']:.2f} | "
        f"{rec['cpu'] / rec['one_cpu']:.1f}x / {rec['wall'] / rec['one_wall']:.1f}x |"
    )


HEAD = (
    "| set | seed | chosen | abs cos | certified Dice | meets | path points | CPU s: halves / "
    "full fits: n, s / stability | default CPU / wall s | one fit CPU / wall s | ratio CPU / wall |"
)


def _records(d):
    return {p.stem: json.loads(p.read_text()) for p in sorted(Path(d).glob("*.json"))}


def summary(dirs):
    """The saved runs as a table; with two directories, before -> after per instance."""
    runs = [_records(d) for d in dirs]
    if len(runs) == 1:
        print(HEAD + "\n" + "|---" * 11 + "|")
        for rec in runs[0].values():
            print(table_row(rec))
        ratios = [r["cpu"] / r["one_cpu"] for r in runs[0].values()]
        print(f"\nmedian CPU ratio {np.median(ratios):.2f}x over {len(ratios)}")
        return
    print(
        "| set | seed | chosen before -> after | abs cos | certified Dice | meets | path points "
        "| default CPU s | CPU ratio | wall ratio |\n" + "|---" * 10 + "|"
    )
    both = [k for k in runs[0] if k in runs[1]]
    for k in both:
        a, b = runs[0][k], runs[1][k]
        same = chosen(a) == chosen(b)
        pts = f"{len(a['points'])} -> {len(b['points'])}"
        print(
            f"| {a['set']} | {a['seed']} | {chosen(a)} -> {'(same)' if same else chosen(b)} | "
            f"{fmt(a['cos'])} -> {fmt(b['cos'])} | {fmt(a['cert'])} -> {fmt(b['cert'])} | "
            f"{'yes' if meets(a) else 'no'} / {'yes' if meets(b) else 'no'} | {pts} | "
            f"{a['cpu']:.1f} -> {b['cpu']:.1f} | {a['cpu'] / a['one_cpu']:.1f}x -> "
            f"{b['cpu'] / b['one_cpu']:.1f}x | {a['wall'] / a['one_wall']:.1f}x -> "
            f"{b['wall'] / b['one_wall']:.1f}x |"
        )
    for i, tag in enumerate(("before", "after")):
        ratios = [runs[i][k]["cpu"] / runs[i][k]["one_cpu"] for k in both]
        walls = [runs[i][k]["wall"] / runs[i][k]["one_wall"] for k in both]
        n_meet = sum(meets(runs[i][k]) for k in both)
        print(
            f"\n{tag}: median CPU ratio {np.median(ratios):.2f}x ({min(ratios):.1f}-"
            f"{max(ratios):.1f}), median wall ratio {np.median(walls):.2f}x, meets "
            f"{n_meet}/{len(both)}"
        )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["fs5-0.8", "paper-0.7"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3151])
    p.add_argument("--out", default=None)
    p.add_argument("--summary", nargs="+", default=None)
    args = p.parse_args()
    if args.summary:
        summary(args.summary)
        return
    _instrument()
    print(HEAD + "\n" + "|---" * 11 + "|", flush=True)
    for name in args.sets:
        for seed in args.seeds:
            run_one(name, seed, args.out)


if __name__ == "__main__":
    main()
