"""Cost of ``alpha_rel="auto"`` against one fit at its chosen point (issue 20, round 4).

For each evidence set and seed (benchmarks/_trust.py), fit
``SPCATV(3, operator=op, random_state=0)`` with every other setting at its
default, then one fit (the median of three) at the chosen ``alpha_rel_``, ``l1_ratio_``,
``tv_ratio_`` in the same process, and print one row: the chosen point, the
matched |cos| and support Dice per planted pattern, ``stability_``, the wall
and CPU seconds of both fits and their ratios, the number of half fits, and
the path (split, alpha_rel: mean split-half reproducibility, x where the
point is not admissible, seconds of the point's two half fits). The half
fits are timed by wrapping the search's point-fitting function, so the same
script measures any build (run it with ``PYTHONPATH`` pointing at the tree to
measure).

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_auto_cost.py \
        --sets c69-0.6 fs5-0.5 fs5-0.8 paper-0.7 --seeds 2702 2911 [--profile out.prof]
"""

import argparse
import cProfile
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import path_text, print_table_start, recovery  # noqa: E402
from bench_trust_defaults import fmt, load  # noqa: E402  (the same evidence sets)

import neurospca.decomposition._stability as stab  # noqa: E402
from neurospca import SPCATV  # noqa: E402

POINT_TIMES = []


def _timed_points():
    """Wrap the search's point fit so that each point's seconds are recorded."""
    inner = stab._fit_point

    def fit_point(*args, **kwargs):
        t0 = time.perf_counter()
        out = inner(*args, **kwargs)
        POINT_TIMES.append(time.perf_counter() - t0)
        return out

    stab._fit_point = fit_point


def timed(fit):
    """``(model, wall seconds, CPU seconds of the process)``."""
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit()
    return model, time.perf_counter() - t0, time.process_time() - c0


def run_one(name, seed, profile=None):
    X, op, P = load(name, seed)
    POINT_TIMES.clear()
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    m, t, c = timed(lambda: SPCATV(3, operator=op, random_state=0).fit(X))
    if prof:
        prof.disable()
        prof.dump_stats(profile)
    point = {"alpha_rel": m.alpha_rel_, "l1_ratio": m.l1_ratio_, "tv_ratio": m.tv_ratio_}
    # the one fit is short (1-3 s): the median of three runs, against load noise
    ones = [timed(lambda: SPCATV(3, operator=op, **point).fit(X))[1:] for _ in range(3)]
    t1, c1 = np.median(ones, axis=0)
    cos, dice = recovery(m.components_, P)
    print(
        f"| {name} | {seed} | ({m.l1_ratio_:g}, {m.tv_ratio_:g}) {m.alpha_rel_:g} | {fmt(cos)} | "
        f"{fmt(dice)} | {fmt(m.stability_)} | {t:.0f} / {c:.0f} | {t1:.0f} / {c1:.0f} | "
        f"{t / t1:.1f}x / {c / c1:.1f}x | {2 * len(POINT_TIMES)} | "
        f"{path_text(m.auto_path_, POINT_TIMES)} |",
        flush=True,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["c69-0.6", "fs5-0.5", "fs5-0.8", "paper-0.7"])
    p.add_argument("--seeds", nargs="+", type=int, default=[2702])
    p.add_argument("--profile", default=None, help="cProfile output of the (single) default fit")
    args = p.parse_args()
    _timed_points()
    cols = "set|seed|chosen (l1, tv) alpha_rel|abs cos|Dice|stability|default s wall / CPU"
    cols += "|one fit s wall / CPU|ratio wall / CPU|half fits|path"
    print(f"# {platform.node()}")
    print_table_start(Path(stab.__file__).parents[2], cols.split("|"))
    for name in args.sets:
        for seed in args.seeds:
            run_one(name, seed, args.profile)


if __name__ == "__main__":
    main()
