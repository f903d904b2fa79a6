"""The default fit's absolute cost, passes over X and components (issue 20 round 5, issue 22).

For each evidence set and seed (benchmarks/_trust.py), fit
``SPCATV(3, operator=op, random_state=0)`` with every other setting at its
default, then one fit (the median of three) at the chosen ``alpha_rel_``,
``l1_ratio_``, ``tv_ratio_`` in the same process, and print one row: the
chosen point, matched |cos| and Dice per planted pattern, wall and CPU seconds
of both fits, their ratios, and the passes over ``X`` of each (bytes of the
row blocks the data operators read, over ``X.nbytes``: a pass over a split
half counts one half). The default fit's components are saved to
``--out`` (one ``.npz`` per instance) so that two builds can be compared
(``--compare DIR_A DIR_B``).

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_cost20d.py \\
        --sets fs5-0.8 paper-0.7 --seeds 3031 2912 --out /tmp/after [--float32]
    python benchmarks/bench_cost20d.py --compare /tmp/before /tmp/after
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import print_table_start, recovery  # noqa: E402
from bench_trust_defaults import fmt, load  # noqa: E402  (the same evidence sets)

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition._data import DataOperator  # noqa: E402

READ = []


def _count_reads():
    """Record the bytes of every row block a data operator reads."""
    inner = DataOperator._blocks

    def blocks(op):
        for lo, hi, B in inner(op):
            READ.append(B.nbytes)  # list.append: safe from the halves' threads
            yield lo, hi, B

    DataOperator._blocks = blocks


def measured(fit, nbytes):
    """``(model, wall s, CPU s, passes over X)``."""
    READ.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit()
    return model, time.perf_counter() - t0, time.process_time() - c0, sum(READ) / nbytes


def run_one(name, seed, out, float32=False):
    X, op, P = load(name, seed)
    if float32:  # float32 data: not on the N x N Gram path (Krylov starts, kept products)
        X, name = X.astype(np.float32), name + "-f32"
    m, t, c, n = measured(lambda: SPCATV(3, operator=op, random_state=0).fit(X), X.nbytes)
    point = {"alpha_rel": m.alpha_rel_, "l1_ratio": m.l1_ratio_, "tv_ratio": m.tv_ratio_}
    ones = [measured(lambda: SPCATV(3, operator=op, **point).fit(X), X.nbytes) for _ in range(3)]
    t1, c1, n1 = np.median([o[1:] for o in ones], axis=0)
    cos, dice = recovery(m.components_, P)
    if out:
        np.savez(
            Path(out) / f"{name}_{seed}.npz",
            components=m.components_,
            one=ones[0][0].components_,
            alpha_rel=m.alpha_rel_,
            split=(m.l1_ratio_, m.tv_ratio_),
            cos=cos,
        )
    print(
        f"| {name} | {seed} | ({m.l1_ratio_:g}, {m.tv_ratio_:g}) {m.alpha_rel_:g} | {fmt(cos)} | "
        f"{fmt(dice)} | {t:.1f} / {c:.1f} | {t1:.2f} / {c1:.2f} | {t / t1:.1f}x / {c / c1:.1f}x "
        f"| {n:.0f} | {n1:.0f} |",
        flush=True,
    )


def compare(a, b):
    """Max abs difference of the components (default fit, one fit) of two runs."""
    print("| instance | same point | default fit: max abs diff | one fit: max abs diff | abs cos |")
    print("|---|---|---|---|---|")
    for fa in sorted(Path(a).glob("*.npz")):
        fb = Path(b) / fa.name
        if not fb.exists():
            continue
        A, B = np.load(fa), np.load(fb)
        same = float(A["alpha_rel"]) == float(B["alpha_rel"]) and np.array_equal(
            A["split"], B["split"]
        )
        d0 = np.max(np.abs(A["components"] - B["components"]))
        d1 = np.max(np.abs(A["one"] - B["one"]))
        print(f"| {fa.stem} | {same} | {d0:.1e} | {d1:.1e} | {fmt(A['cos'])} -> {fmt(B['cos'])} |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["fs5-0.8", "paper-0.7"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3031])
    p.add_argument("--out", default=None)
    p.add_argument("--compare", nargs=2, default=None)
    p.add_argument("--float32", action="store_true", help="the data cast to float32")
    args = p.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    _count_reads()
    cols = "set|seed|chosen (l1, tv) alpha_rel|abs cos|Dice|default s wall / CPU"
    cols += "|one fit s wall / CPU|ratio wall / CPU|default passes|one-fit passes"
    print_table_start(Path(sys.modules["neurospca"].__file__).parents[1], cols.split("|"))
    for name in args.sets:
        for seed in args.seeds:
            run_one(name, seed, args.out, args.float32)


if __name__ == "__main__":
    main()
