"""Issue 20 round 9: the default fit's ``stability_`` on noise and planted data.

Per instance (the 12 x 12 ``noise`` and ``planted`` instances of
``bench_stability20f.instance``, or a ``bench_trust_defaults.load`` set): the
default fit ``SPCATV(k, operator=op, random_state=0)`` as a user gets it
(``stability_`` computed by the fit, with its warning), the point chosen, the
splits searched, matched |cos| to the planted patterns, ``stability_`` and CPU
seconds; ``--out`` saves the components and ``stability_`` (``.npz``) so that
two trees can be compared (``--compare DIR_A DIR_B``).

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_stability20h.py \\
        --sets noise planted --seeds 3231 3232 --out /tmp/after
    PYTHONPATH=. python benchmarks/bench_stability20h.py --compare /tmp/before /tmp/after
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stability20e import fmt, matched_cos  # noqa: E402
from bench_stability20f import instance  # noqa: E402

import neurospca  # noqa: E402,F401  (first: the tree on PYTHONPATH)
from neurospca import SPCATV  # noqa: E402


def row(name, seed, out):
    X, op, P, k = instance(name, seed, False)
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(k, operator=op, random_state=0).fit(X)
    cpu = time.process_time() - c0
    splits = sorted({(p["l1_ratio"], p["tv_ratio"]) for p in m.auto_path_})
    cos = matched_cos(m, P) if P is not None else np.full(k, np.nan)
    flagged = int(np.sum(m.stability_ < 0.5))
    print(
        f"| {name} | {seed} | {m.alpha_rel_:g} ({m.l1_ratio_:g}, {m.tv_ratio_:g}) | "
        f"{len(m.auto_path_)} ({len(splits)} split{'s' if len(splits) > 1 else ''}) | "
        f"{fmt(cos)} | {fmt(m.stability_)} | {flagged} of {k} | {cpu:.1f} |",
        flush=True,
    )
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        np.savez(Path(out) / f"{name}_{seed}.npz", components=m.components_, stability=m.stability_)


def compare(a, b):
    """Per saved instance: components bit for bit the same, stability_ difference."""
    for f in sorted(Path(a).glob("*.npz")):
        g = Path(b) / f.name
        if g.exists():
            x, y = np.load(f), np.load(g)
            same = np.array_equal(x["components"], y["components"])
            diff = np.max(np.abs(x["stability"] - y["stability"]))
            print(f"{f.stem}: components same {same}, max |stability_ difference| {diff:.3f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["noise", "planted"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3231])
    p.add_argument("--out", default=None)
    p.add_argument("--compare", nargs=2, default=None)
    args = p.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    print(
        "| set | seed | chosen | path points (splits) | abs cos | stability_ | flagged | CPU s |\n"
        + "|---" * 8
        + "|",
        flush=True,
    )
    for name in args.sets:
        for seed in args.seeds:
            row(name, seed, args.out)


if __name__ == "__main__":
    main()
