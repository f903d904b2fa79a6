"""Issue 22 round 20: the joint fit's starts on two cores (branch par22t).

``--compare SET [SET ...] [--rounds R] [--variants main free]``: per round a
randomized PCA (scikit-learn, default BLAS threads, as ``bench_datapath``), then
one whole fit per variant (the order turned every round), in ONE process:
``SPCATV(3, alpha_rel=1.0, tol=1e-3, random_state=0)`` (``bench_datapath``'s
``joint`` setting, default threads). Per fit: wall, CPU (the process's), the
starts' phase (``_joint._search``: wall, CPU, cores), the rest of the fit, the
ratios to the round's PCA, the passes, the load, and the largest difference of
the components, ``dual_gaps_`` and iterations to the first variant's fit.

Variants (:data:`VARIANTS`): "main" the starts as on main (one Python turn,
the v-step kernels lent: ``_lockstep.FREE_STARTS = False``); "free" this
branch (the starts' Python at once, warnings per thread).

Usage::

    python benchmarks/bench_par22t.py --compare cube86 cube124 --rounds 2
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_wall22s import pca_row  # noqa: E402

#: "main": main's starts (a turn); "free": this branch's; "free-si": free, the
#: interpreter's switch interval 1 ms during the fit (tried, see RESULTS.md).
VARIANTS = ("main", "free")


def _variant(name):
    from neurospca.decomposition import _lockstep

    _lockstep.FREE_STARTS = name.startswith("free")
    sys.setswitchinterval(0.001 if name == "free-si" else 0.005)


def _fit(X, operator):
    """The fit, its wall and CPU, and the starts' phase's wall and CPU."""
    from neurospca import SPCATV
    from neurospca.decomposition import _joint

    phase, search = [0.0, 0.0], _joint._search

    def timed(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return search(*args, **kwargs)
        finally:
            phase[0] += time.perf_counter() - t0
            phase[1] += time.process_time() - c0

    _joint._search = timed
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        m = SPCATV(3, operator=operator, tol=1e-3, random_state=0, alpha_rel=1.0).fit(X)
        return m, time.perf_counter() - t0, time.process_time() - c0, phase
    finally:
        _joint._search = search


def _diff(m, ref):
    """Largest |diff| of the components; gaps and iterations equal (bit for bit)."""
    if ref is None:
        return 0.0, True
    same = np.array_equal(np.asarray(m.dual_gaps_), np.asarray(ref.dual_gaps_), equal_nan=True)
    same = same and np.array_equal(np.asarray(m.n_iter_), np.asarray(ref.n_iter_))
    return float(np.max(np.abs(np.asarray(m.components_) - ref.components_))), same


def compare(sets, rounds, variants):
    import bench_datapath

    print(
        "| data | round | variant | load | wall s | CPU s | cores | starts wall s | starts CPU s "
        "| starts cores | rest wall s | x PCA wall | x PCA CPU | passes | max abs diff "
        "| gaps, its |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in sets:
        X, operator = bench_datapath._load(name, None)
        passes, ref = bench_datapath._count_passes(X.nbytes), None
        for r in range(rounds):
            pw, pc = pca_row(X, name, r, 9)
            for v in variants if r % 2 == 0 else variants[::-1]:
                _variant(v)
                load, p0 = os.getloadavg()[0], passes()
                m, wall, cpu, (sw, sc) = _fit(X, operator)
                n_passes = passes() - p0
                diff, same = _diff(m, ref)
                ref = m if ref is None else ref
                print(
                    f"| {name} | {r} | {v} | {load:.1f} | {wall:.2f} | {cpu:.2f} "
                    f"| {cpu / wall:.2f} | {sw:.2f} | {sc:.2f} | {sc / max(sw, 1e-9):.2f} "
                    f"| {wall - sw:.2f} | {wall / pw:.2f}x | {cpu / pc:.2f}x | {n_passes:.1f} "
                    f"| {diff:.1e} | {'same' if same else 'DIFFER'} |",
                    flush=True,
                )
    _variant("free")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", nargs="+", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    compare(args.compare, args.rounds, args.variants)


if __name__ == "__main__":
    main()
