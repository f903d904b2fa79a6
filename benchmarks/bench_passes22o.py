"""Issue 22 round 15: the passes over X of a 3-component joint fit (branch passes22o).

``--phases``: every pass of ``SPCATV(3, alpha_rel=1.0, tol=1e-3)`` on the memmap of
``tests/test_datapath.py``'s pass count (3,000 x 12^3 float32), labelled by the stack
that asked for it, with the starts one after the other (each start's chain) and the
total with the defaults (the starts side by side: the longest chain).

``--sets``: variants (flags of ``neurospca.decomposition`` modules, as
``bench_sweeps22m.py``) in fresh subprocesses on that memmap (``test``) or
``bench_datapath``'s cube with N = 3,000 as a float32 memmap (``memmap<n>``): CPU
seconds, passes, sweeps, J relative to the first variant, the sum of the first's
certified gaps, the components' largest difference and move in certified radii.

``--recovery SET ... --seeds S ...``: the variants in one process on the trust sets
as float32 in memory (not the Gram path, so the starts' Davidson steps are used), at
the default fit's usual point (l1_ratio 0.05, tv_ratio 0.1, alpha_rel 1): matched
|cos|, certified Dice, J, passes, CPU. ``--dtype float64``: the Gram path.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_passes22o.py --phases
    OMP_NUM_THREADS=1 python benchmarks/bench_passes22o.py --sets test memmap24 \\
        --variants main branch
    OMP_NUM_THREADS=1 python benchmarks/bench_passes22o.py --recovery paper-0.7 fs5-0.5 \\
        c69-0.6 --seeds 3550 3551 --variants off onepass
"""

import argparse
import collections
import os
import sys
import time
import traceback
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(ROOT, "tests")]

import bench_sweeps22m  # noqa: E402

#: Variants: flags of ``neurospca.decomposition`` modules (``_start.START_TOL`` ...).
#: ``off``: main's values of every flag named here, on this tree.
MAIN = {
    "_start.START_TOL": 1e-3,
    "_start.CHECK_TOL": 1e-3,
    "_subspace.KRYLOV_PASSES": 2,
    "ONE_PASS": False,
    "_sweep_pass.ON_GRAM_PATH": False,
    "KNOWN_XV": False,
}
bench_sweeps22m.FLAGS.update(
    main={},  # the other tree (``--before``): its defaults
    off=MAIN,  # this tree with main's settings
    branch={},
    onepass=dict(MAIN, ONE_PASS=True),
    gram=dict(MAIN, ONE_PASS=True, **{"_sweep_pass.ON_GRAM_PATH": True}),
    start05=dict(MAIN, **{"_start.START_TOL": 0.05}),
    start1=dict(MAIN, **{"_start.START_TOL": 1.0}),
    chk1e2=dict(MAIN, **{"_start.CHECK_TOL": 1e-2}),
    onepasschk=dict(MAIN, ONE_PASS=True, **{"_start.CHECK_TOL": 1e-2}),
)
#: Stack frames that name a phase of the fit.
PHASES = (
    "scan", "cached_subspace", "_deflation_start", "_start_from_scores", "_init_step",
    "_u_step", "_certify_step", "_sweeps", "_checks", "_revive", "_certify_all",
    "_adjusted_variance", "recheck_support",
)  # fmt: skip


def _label():
    """``(start, phase)`` of the pass being asked for, from the stack."""
    names = [f.name for f in traceback.extract_stack()]
    start = (
        "deflation" if "_deflation_job" in names else "subspace" if "_scores_job" in names else "-"
    )
    phase = "/".join([n for n in names if n in PHASES][-2:])
    return start, phase


def phases():
    """``--phases``: the passes by phase, one start after the other, then the defaults."""
    from test_datapath import _instance, _op

    from neurospca import SPCATV
    from neurospca.decomposition import _data, _lockstep

    path = os.path.join(HERE, "_passes22o.npy")
    np.save(path, _instance(n=3000).astype(np.float32))
    X = np.load(path, mmap_mode="r")
    log, original = [], _data.DataOperator._map

    def counted(self, *args, **kw):
        log.append(_label())
        return original(self, *args, **kw)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return SPCATV(3, operator=_op(), tol=1e-3, random_state=0, alpha_rel=1.0).fit(X)

    for shared in (False, True):
        _lockstep.SIDE_BY_SIDE = shared
        fit()  # warm
        log.clear()
        _data.DataOperator._map = counted
        m = fit()
        _data.DataOperator._map = original
        print(f"starts side by side: {shared}; passes {len(log)}; sweeps {m.n_sweeps_}")
        if not shared:
            runs = collections.Counter(log)
            for (start, phase), n in runs.items():
                print(f"| {start} | {phase} | {n} |")
    os.remove(path)


def recovery(sets, seeds, variants, dtype):
    """``--recovery``: the variants on the trust sets, in memory (float32, or
    float64: the Gram path)."""
    from _trust import certified_dice
    from _trust import recovery as matched
    from bench_datapath import _count_passes
    from bench_joint22i import POINT
    from bench_trust_defaults import load

    from neurospca import SPCATV
    from neurospca.decomposition._objective import fitted_objective

    saved = {key: bench_sweeps22m._get(key) for key in MAIN}
    print("| set | seed | variant | abs cos | certified Dice | J rel. | passes | CPU s | move |")
    print("|---|---|---|---|---|---|---:|---:|---|")
    for name in sets:
        for seed in seeds:
            X, op, patterns = load(name, seed)
            X32 = X.astype(dtype)
            first = None
            for variant in variants:
                bench_sweeps22m.set_flags(dict(saved, **bench_sweeps22m.FLAGS[variant]))
                passes = _count_passes(X32.nbytes)
                t0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = SPCATV(3, operator=op, random_state=0, **POINT).fit(X32)
                cpu, n_passes = time.process_time() - t0, passes()
                J = fitted_objective(m, X, op)
                first = first or (J, m.components_, m.support_radius_)
                cells = [
                    "/".join(f"{c:.3f}" for c in matched(m.components_, patterns)[0]),
                    "/".join(f"{c:.2f}" for c in certified_dice(m, patterns)),
                    f"{(J - first[0]) / abs(first[0]):+.1e}",
                    f"{n_passes:.0f}",
                    f"{cpu:.2f}",
                    bench_sweeps22m.moved(m.components_, *first[1:]),
                ]
                print(f"| {name} | {seed} | {variant} | {' | '.join(cells)} |", flush=True)
    bench_sweeps22m.set_flags(saved)


def main():
    if "--phases" in sys.argv:
        phases()
        return
    if "--recovery" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--recovery", nargs="+")
        ap.add_argument("--seeds", nargs="+", type=int)
        ap.add_argument("--variants", nargs="+", default=["off", "branch"])
        ap.add_argument("--dtype", default="float32")
        args = ap.parse_args()
        recovery(args.recovery, args.seeds, args.variants, np.dtype(args.dtype))
        return
    if "--child" in sys.argv:
        bench_sweeps22m.child(*sys.argv[sys.argv.index("--child") + 1 :])
        return
    bench_sweeps22m.__file__ = os.path.abspath(__file__)  # its children run this script
    bench_sweeps22m.main()


if __name__ == "__main__":
    main()
