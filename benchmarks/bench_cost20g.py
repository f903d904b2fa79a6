"""Where a default fit's time goes, with ``stability_`` in its parts (issue 20 round 8).

``bench_cost20f.py``'s record per instance (path points, full fits, one fit at
the chosen point: the median of three, same process), plus the CPU seconds of
``stability_``'s noise floor (``below_noise``) apart from its resampled fits,
``stability_`` itself and, for comparison, the split-half measure of the
walk's halves at the chosen point (``component_stability`` of the full fit's
components and the chosen point's two half fits: no extra fit). Runs on any
tree with ``set_stability`` and ``below_noise`` in ``decomposition._stability``.

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_cost20g.py \\
        --sets paper-0.7 --seeds 3181 3182 --out /tmp/after
    python benchmarks/bench_cost20g.py --summary /tmp/before /tmp/after
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cost20f  # noqa: E402
from _trust import certified_dice, recovery  # noqa: E402
from bench_auto_cost import timed as _timed  # noqa: E402
from bench_cost20f import _cpu_wrapped, chosen, meets  # noqa: E402
from bench_trust_defaults import fmt, load  # noqa: E402

import neurospca  # noqa: E402,F401  (first: the tree on PYTHONPATH, not the repo root)
from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import _spcatv, _stability  # noqa: E402

LOG = bench_cost20f.LOG  # points, full fits and stability_, timed by bench_cost20f
EXTRA = {"noise": 0.0, "halves": None}


def _instrument():
    """bench_cost20f's timers, plus the noise floor's CPU and the chosen halves."""
    bench_cost20f._instrument()
    inner_fit = _spcatv.auto_fit

    def auto_fit(path, run, start):
        out = inner_fit(path, run, start)
        EXTRA["halves"] = [np.array(h) for h in out[1]]
        return out

    def noise(args, out, cpu):
        EXTRA["noise"] += cpu

    _spcatv.auto_fit = auto_fit
    _stability.below_noise = _cpu_wrapped(_stability.below_noise, noise)


def run_one(name, seed, out):
    X, op, P = load(name, seed)
    LOG.update(points=[], full=[], stability=0.0)
    EXTRA.update(noise=0.0, halves=None)
    m, t, c = _timed(lambda: SPCATV(3, operator=op, random_state=0).fit(X))
    walk = _stability.component_stability(m.components_, *EXTRA["halves"])
    rec = {"set": name, "seed": seed, **{k: LOG[k] for k in ("points", "full")}}
    rec.update(stability=LOG["stability"], noise=EXTRA["noise"], walk_halves=walk.tolist())
    point = {"alpha_rel": m.alpha_rel_, "l1_ratio": m.l1_ratio_, "tv_ratio": m.tv_ratio_}
    ones = [_timed(lambda: SPCATV(3, operator=op, **point).fit(X)) for _ in range(3)]
    t1, c1 = np.median([o[1:] for o in ones], axis=0)
    cos, dice = recovery(m.components_, P)
    rec.update(
        point=point,
        cos=cos.tolist(),
        dice=dice.tolist(),
        cert=certified_dice(m, P).tolist(),
        stability_=np.asarray(m.stability_).tolist(),
        wall=t,
        cpu=c,
        one_wall=float(t1),
        one_cpu=float(c1),
    )
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{name}_{seed}.json").write_text(json.dumps(rec))
        np.save(Path(out) / f"{name}_{seed}.npy", m.components_)
    print(table_row(rec), flush=True)


def _parts(rec):
    one = rec["one_cpu"]
    half = sum(p["cpu"] for p in rec["points"]) / one
    full = sum(f["cpu"] for f in rec["full"]) / one
    noise = rec["noise"] / one
    stab = rec["stability"] / one - noise
    return half, full, stab, noise, rec["cpu"] / one - half - full - stab - noise


def table_row(rec):
    half, full, stab, noise, rest = _parts(rec)
    return (
        f"| {rec['set']} | {rec['seed']} | {chosen(rec)} | {fmt(rec['cos'])} | "
        f"{fmt(rec['cert'])} | {'yes' if meets(rec) else 'no'} | {fmt(rec['stability_'])} | "
        f"{fmt(rec['walk_halves'])} | {len(rec['points'])} | {half:.1f} / {full:.1f} / "
        f"{stab:.1f} / {noise:.1f} / {rest:.1f} | {rec['cpu']:.1f} | {rec['one_cpu']:.2f} | "
        f"{rec['cpu'] / rec['one_cpu']:.2f}x |"
    )


HEAD = (
    "| set | seed | chosen | abs cos | certified Dice | meets | stability_ | walk halves "
    "| path points | one-fit units: halves / full / resampled / noise floor / rest "
    "| default CPU s | one fit CPU s | CPU ratio |\n" + "|---" * 13 + "|"
)


def _records(d):
    return {p.stem: json.loads(p.read_text()) for p in sorted(Path(d).glob("*.json"))}


def _medians(recs):
    rows = {}
    for r in recs:
        rows.setdefault(r["set"], []).append(r)
    rows["all"] = list(recs)
    for name, rs in rows.items():
        parts = np.median([_parts(r) for r in rs], axis=0)
        ratio = np.median([r["cpu"] / r["one_cpu"] for r in rs])
        cells = " | ".join(f"{x:.2f}x" for x in parts)
        print(f"| {name} | {len(rs)} | {cells} | {ratio:.2f}x |")


def _compare(runs, keys):
    """Before -> after per instance: the choice, recovery, stability_ and CPU ratio."""
    print(
        "\n| set | seed | chosen (before = after?) | abs cos | certified Dice | meets | "
        "stability_ before -> after | walk halves | CPU ratio before -> after |\n"
        + "|---" * 9
        + "|"
    )
    for k in keys:
        a, b = runs[0][k], runs[1][k]
        same = "same" if chosen(a) == chosen(b) else f"-> {chosen(b)}"
        print(
            f"| {a['set']} | {a['seed']} | {chosen(a)} ({same}) | {fmt(b['cos'])} | "
            f"{fmt(b['cert'])} | {'yes' if meets(a) else 'no'} / {'yes' if meets(b) else 'no'} | "
            f"{fmt(a['stability_'])} -> {fmt(b['stability_'])} | {fmt(b['walk_halves'])} | "
            f"{a['cpu'] / a['one_cpu']:.2f}x -> {b['cpu'] / b['one_cpu']:.2f}x |"
        )
    for i, tag in enumerate(("before", "after")):
        r = [runs[i][k]["cpu"] / runs[i][k]["one_cpu"] for k in keys]
        n = sum(x <= 5 for x in r)
        print(
            f"\n{tag}: median CPU ratio {np.median(r):.2f}x ({min(r):.2f}-{max(r):.2f}); "
            f"at most 5x on {n} of {len(r)}"
        )


def summary(dirs):
    """The saved runs: rows, then per set the medians of the parts (one-fit units)."""
    runs = [_records(d) for d in dirs]
    both = [k for k in runs[0] if all(k in r for r in runs)]
    for d, recs in zip(dirs, runs, strict=True):
        print(f"\n{d}\n\n{HEAD}")
        for k in both:
            print(table_row(recs[k]))
        print("\n| set | n | halves | full fits | resampled | noise floor | rest | total |")
        print("|---" * 8 + "|")
        _medians([recs[k] for k in both])
        n_meet = sum(meets(recs[k]) for k in both)
        # K = 3 components for 3 patterns: where every pattern is recovered
        # (|cos| >= .90, distinct components), every component is a recovered one
        found = [recs[k] for k in both if min(recs[k]["cos"]) >= 0.90]
        low = sum(int(np.sum(np.asarray(r["stability_"]) < 0.5)) for r in found)
        print(
            f"\nmeets {n_meet}/{len(both)}; recovered components flagged (stability_ < 0.5): "
            f"{low} of {3 * len(found)}"
        )
    if len(runs) == 2:
        _compare(runs, both)
        same = sum(
            np.array_equal(np.load(Path(dirs[0]) / f"{k}.npy"), np.load(Path(dirs[1]) / f"{k}.npy"))
            for k in both
        )
        print(f"components bit for bit the same: {same}/{len(both)}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["fs5-0.8", "paper-0.7"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3181])
    p.add_argument("--out", default=None)
    p.add_argument("--summary", nargs="+", default=None)
    args = p.parse_args()
    if args.summary:
        summary(args.summary)
        return
    _instrument()
    print(HEAD, flush=True)
    for name in args.sets:
        for seed in args.seeds:
            run_one(name, seed, args.out)


if __name__ == "__main__":
    main()
