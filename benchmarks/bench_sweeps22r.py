"""Issue 22 round 18: the joint fit's sweeps at large P, their bookkeeping and
gap evaluations (branch sweeps22r).

``--compare SET ... [--rounds R] [--main-tree DIR]``: ``bench_datapath``'s data
(``cube86``, ``cube124``; ``cubeN:S`` the cube of side N with data seed S),
``SPCATV(3, alpha_rel=1.0, tol=1e-3, random_state=0)``, two variants
alternating in ONE process (CPU seconds, ``time.process_time``, compare at
the same load): "main" puts main's sweeps back (``_alternation.KERNEL_GAPS =
False`` and main's ``_others``, executed from ``DIR``'s source in this
package's namespace, with main's ``_CachedDeflated``), "branch" is this tree's.
Columns: CPU of the fit and of its sweeps, sweeps, passes over X, the certify
steps' gap evaluations through the operator (``prox_gap``) and from the
kernel's products (``kernel_gap``), ``J``, the largest difference of the
components and of ``dual_gaps_`` to the round's first fit.

``--profile SET``: one fit of this tree, its starts one after the other, with
``cProfile`` (CPU clock) on inside the sweeps only: the functions by own CPU
seconds, with their call counts.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_sweeps22r.py --compare cube86 cube124 \\
        --rounds 2 --main-tree /path/to/main
    OMP_NUM_THREADS=1 python benchmarks/bench_sweeps22r.py --profile cube124
"""

import argparse
import cProfile
import os
import pstats
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_sweep22q import _Tally  # noqa: E402


def _main_others(main_tree):
    """Main's ``_others`` (and with it its ``_CachedDeflated``), executed from
    ``main_tree``'s source as a module of this package."""
    path = os.path.join(main_tree, "neurospca", "decomposition", "_joint_certify.py")
    ns = {
        "__name__": "neurospca.decomposition._main_joint_certify",
        "__package__": "neurospca.decomposition",
    }
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), ns)
    return lambda *args, norm=True, **kw: ns["_others"](*args, **kw)  # main has no norm


def _variant(name, main_tree):
    """Set "main" or "branch" (see the module's docstring)."""
    from neurospca.decomposition import (
        _alternation,
        _joint,
        _joint_certify,
        _joint_starts,
        _sweep_pass,
    )

    if not hasattr(_variant, "saved"):
        _variant.saved = _joint_certify._others, _main_others(main_tree)
    others = _variant.saved[1] if name == "main" else _variant.saved[0]
    for module in (_joint, _joint_certify, _joint_starts, _sweep_pass):
        module._others = others
    _alternation.KERNEL_GAPS = name != "main"


class _Gaps(_Tally):
    """``prox_gap`` and ``kernel_gap`` calls inside certify steps (installed and
    removed as :class:`bench_sweep22q._Tally`'s wrappers)."""

    def __init__(self):  # its own wrappers, not _Tally's
        from neurospca.decomposition import _alternation
        from neurospca.solvers import _problem

        self.operator = self.kernel = 0
        self.depth = 0
        self.saved = [
            (_problem, "prox_gap", self._count("operator", _problem.prox_gap)),
            (_alternation, "kernel_gap", self._kernel(_alternation.kernel_gap)),
            (_alternation, "_certify_pair", self._nest(_alternation._certify_pair)),
        ]

    def _count(self, attr, fn):
        def run(*args, **kw):
            setattr(self, attr, getattr(self, attr) + (self.depth > 0))
            return fn(*args, **kw)

        return run

    def _kernel(self, fn):
        def run(*args, **kw):
            out = fn(*args, **kw)
            self.kernel += out is not None
            return out

        return run

    def _nest(self, fn):
        def run(*args, **kw):
            self.depth += 1
            try:
                return fn(*args, **kw)
            finally:
                self.depth -= 1

        return run


def compare(sets, rounds, main_tree):
    import bench_datapath
    from bench_sweep22q import _data

    from neurospca import SPCATV
    from neurospca.decomposition._objective import fitted_objective

    print(
        "| data | round | variant | CPU s | sweeps' CPU s | sweeps | passes | gaps: operator "
        "/ kernel | J | max abs diff of components | of dual_gaps_ |\n"
        "|---|---:|---|---:|---:|---:|---:|---|---|---:|---:|"
    )
    for name in sets:
        X, op = _data(name)
        passes = bench_datapath._count_passes(X.nbytes)  # bytes read, in units of X
        for r in range(rounds):
            ref = None
            for variant in ("main", "branch") if r % 2 == 0 else ("branch", "main"):
                _variant(variant, main_tree)
                p0 = passes()
                with _Tally() as tally, _Gaps() as gaps, warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    c0 = time.process_time()
                    m = SPCATV(3, operator=op, random_state=0, tol=1e-3, alpha_rel=1.0).fit(X)
                    cpu = time.process_time() - c0
                n_passes = passes() - p0
                ref = ref or m
                print(
                    f"| {name} | {r} | {variant} | {cpu:.2f} | {tally.sweeps_cpu:.2f} "
                    f"| {m.n_sweeps_} | {n_passes:.0f} | {gaps.operator} / {gaps.kernel} "
                    f"| {fitted_objective(m, X, op):.10g} "
                    f"| {np.abs(m.components_ - ref.components_).max():.1e} "
                    f"| {np.nanmax(np.abs(m.dual_gaps_ - ref.dual_gaps_)):.1e} |",
                    flush=True,
                )
    _variant("branch", main_tree)


def profile(name, top=40):
    import bench_datapath

    from neurospca import SPCATV
    from neurospca.decomposition import _joint, _lockstep

    _lockstep.SIDE_BY_SIDE = False
    warnings.simplefilter("ignore")
    X, op = bench_datapath._load(name, None)
    prof, sweeps, acc = cProfile.Profile(time.process_time), _joint._sweeps, [0.0]

    def profiled(*args, **kw):
        c0 = time.process_time()
        prof.enable()
        try:
            return sweeps(*args, **kw)
        finally:
            prof.disable()
            acc[0] += time.process_time() - c0

    _joint._sweeps = profiled
    c0 = time.process_time()
    m = SPCATV(3, operator=op, tol=1e-3, random_state=0, alpha_rel=1.0).fit(X)
    print(f"{name}: CPU {time.process_time() - c0:.2f} s, sweeps' {acc[0]:.2f} s, {m.n_sweeps_}")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", nargs="+")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--main-tree", default="/work/main")
    ap.add_argument("--profile")
    args = ap.parse_args()
    if args.compare:
        compare(args.compare, args.rounds, args.main_tree)
    if args.profile:
        profile(args.profile)


if __name__ == "__main__":
    main()
