"""Issue 22 round 19 (branch thread22s): several trees' joint fits at large P
alternating in ONE process, per phase (CPU seconds and minor page faults).

Each ``NAME=DIR`` is a built checkout of neurospca; all are imported into this
process (each its own set of ``neurospca.*`` modules, put into ``sys.modules``
while its fit runs) and fitted in turn, round after round (the order reversed
every other round), on the same data, with the default threads unless
``OMP_NUM_THREADS`` / ``--threads`` say otherwise. ``--pca`` adds a randomized
PCA of the same data (scikit-learn's, default BLAS threads) to every round.

Data: ``bench_datapath``'s ``cube86`` / ``cube124`` (N = 100 float64, P =
636,056 / 1,906,624, data seed 0; ``cubeN:S`` the cube of side N with data seed
S). Fit: ``SPCATV(3, alpha_rel=1.0, tol=1e-3, random_state=0)``, a fresh TV
operator per fit (no cache carried from one fit to the next).

Columns (CPU: ``time.process_time``, all threads; faults: ``ru_minflt``):
the fit; the v-step solves outside the finishing (the solver wrapper, its
compiled kernel inside, and the kernel's iterations on one thread / several,
which :class:`~neurospca.solvers._base.ThreadChooser` picks from wall times);
the finishing (``certify_joint``); the rest; the passes; the largest difference
of the components to the first fit of the run.

``--faults``: one fit of each tree (its starts one after the other) under
``cProfile`` with the minor page faults as its clock: the functions by their
own faults.

``--solves``: the v-step solves alone, each tree's solver on the same chain
of warm-started 10-iteration solves (as a sweep's refits run them) on the
cube's TV, inside the fit's scope (``_alternation._vstep_blas``) when the
tree has one, trees alternating block by block: CPU, system CPU and minor
faults per solve, and whether the trees' ``v`` and ``w`` are the same bits.

Usage::

    python benchmarks/bench_thread22s.py --set cube124 --rounds 3 --pca \\
        base=/tmp/base branch=.
    python benchmarks/bench_thread22s.py --set cube86 --faults base=/tmp/base branch=.
"""

import argparse
import cProfile
import gc
import importlib
import os
import pstats
import resource
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_datapath import _count_passes, cube_data  # noqa: E402

MODULES = (
    "neurospca",
    "neurospca.solvers.prox",
    "neurospca.solvers._dual_kernels",
    "neurospca.decomposition._joint",
    "neurospca.decomposition._joint_certify",
    "neurospca.decomposition._data",
    "neurospca._kernels._prox",
)


def _ours():
    return {n: m for n, m in sys.modules.items() if n == "neurospca" or n.startswith("neurospca.")}


def _use(mods):
    """Put a tree's modules (and only them) into ``sys.modules``."""
    for name in _ours():
        del sys.modules[name]
    sys.modules.update(mods)


def _now():
    return time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _sys():
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


class Tally:
    """CPU seconds and minor faults of the solves and the finishing of one fit."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.acc = dict.fromkeys(("solve", "kernel", "finish", "fin_solve"), np.zeros(2))
        self.iters = {1: 0, "many": 0}
        self.in_finish = False

    def timed(self, key, fn):
        def run(*args, **kw):
            c0, f0 = _now()
            try:
                return fn(*args, **kw)
            finally:
                c1, f1 = _now()
                name = "fin_solve" if key == "solve" and self.in_finish else key
                self.acc[name] = self.acc[name] + (c1 - c0, f1 - f0)

        return run

    def kernel(self, fn, threads_at):
        timed = self.timed("kernel", fn)

        def run(*args, **kw):
            if not self.in_finish:
                n = args[threads_at] if len(args) > threads_at else 1
                self.iters[1 if n == 1 else "many"] += args[0]
                return timed(*args, **kw)
            return fn(*args, **kw)

        return run

    def finish(self, fn):
        timed = self.timed("finish", fn)

        def run(*args, **kw):
            self.in_finish = True
            try:
                return timed(*args, **kw)
            finally:
                self.in_finish = False

        return run


def _replace(mods, attr, old, new):
    for m in mods.values():
        if getattr(m, attr, None) is old:
            setattr(m, attr, new)


def load_tree(path, tally):
    """Import the package at ``path`` (its own modules) with ``tally``'s wrappers."""
    _use({})
    sys.path.insert(0, os.path.abspath(path))
    try:
        for name in MODULES:
            importlib.import_module(name)
    finally:
        sys.path.pop(0)
    mods = _ours()
    K, dk = mods["neurospca._kernels._prox"], mods["neurospca.solvers._dual_kernels"]
    K.diff_dual_iterations = tally.kernel(K.diff_dual_iterations, 21)
    K.dual_iterations = tally.kernel(K.dual_iterations, 20)
    _replace(mods, "dual_fast", dk.dual_fast, tally.timed("solve", dk.dual_fast))
    jc = mods["neurospca.decomposition._joint_certify"]
    _replace(mods, "certify_joint", jc.certify_joint, tally.finish(jc.certify_joint))
    return mods


def fit(mods, X, n_side, n_threads):
    """One joint fit with the modules ``mods``: (model, CPU s, wall s, faults, passes)."""
    _use(mods)
    neurospca = mods["neurospca"]
    op = neurospca.tv_from_mask(np.ones((n_side,) * 3, bool))
    data = mods["neurospca.decomposition._data"]
    original = data.DataOperator._blocks
    passes = _count_passes(X.nbytes)  # wraps this tree's DataOperator._blocks
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c0, f0 = _now()
        s0, t0 = _sys(), time.perf_counter()
        m = neurospca.SPCATV(
            3, operator=op, alpha_rel=1.0, tol=1e-3, random_state=0, n_threads=n_threads
        ).fit(X)
        wall = time.perf_counter() - t0
        c1, f1 = _now()
        m.sys_cpu_ = _sys() - s0
    data.DataOperator._blocks = original
    return m, c1 - c0, wall, f1 - f0, passes()


def fault_profile(mods, X, n_side, top=25):
    """One fit with its starts one after the other, profiled by minor faults."""
    _use(mods)
    lockstep = importlib.import_module("neurospca.decomposition._lockstep")
    lockstep.SIDE_BY_SIDE = False
    prof = cProfile.Profile(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt, 1.0)
    prof.enable()
    m, cpu, wall, n_faults, passes = fit(mods, X, n_side, None)
    prof.disable()
    lockstep.SIDE_BY_SIDE = True
    print(f"CPU {cpu:.2f} s (profiled), {n_faults / 1e3:.0f} k faults, {passes:.0f} passes")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def solves(trees, n_side, rounds, per_block=8, threads=None):
    """Warm-started 10-iteration solves, each tree's block after the other."""
    rng = np.random.default_rng(3741)
    y0 = cube_data(n_side, n_samples=1, seed=3741)[0] - 2.5
    ops, chains = {}, {}
    for name, mods, _ in trees:
        _use(mods)
        ops[name] = mods["neurospca"].tv_from_mask(np.ones((n_side,) * 3, bool))
        chains[name] = None
    steps = [0.02 * rng.standard_normal(y0.size) for _ in range(per_block)]
    print("| round | tree | CPU s / solve | system CPU s / solve | faults k / solve | same bits |")
    print("|---:|---|---:|---:|---:|---|")
    for r in range(rounds):
        last = None
        for name, mods, _ in trees if r % 2 == 0 else trees[::-1]:
            _use(mods)
            prox_dual = mods["neurospca.solvers.prox"].prox_dual
            scope = mods["neurospca.decomposition._alternation"]._vstep_blas(2)
            w, out = chains[name], []
            gc.collect()
            with scope:
                c0, f0 = _now()
                s0 = _sys()
                for step in steps:
                    res = prox_dual(y0 + step, ops[name], 0.05, 0.5, tol=1e-12, max_iter=10,
                                    w0=w, n_threads=threads)  # fmt: skip
                    w = res.w
                    out.append((res.v, res.w))
                c1, f1 = _now()
                s1 = _sys()
            same = (
                ""
                if last is None
                else all(
                    np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
                    for a, b in zip(out, last, strict=True)
                )
            )
            last = out
            n = len(steps)
            print(f"| {r} | {name} | {(c1 - c0) / n:.3f} | {(s1 - s0) / n:.3f} "
                  f"| {(f1 - f0) / n / 1e3:.1f} | {same} |", flush=True)  # fmt: skip
        for name in chains:  # the next round continues from the same point
            chains[name] = None


def pca_row(X):
    from sklearn.decomposition import PCA

    c0, t0 = time.process_time(), time.perf_counter()
    PCA(3, svd_solver="randomized", random_state=0).fit(X)
    return time.process_time() - c0, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", help="NAME=DIR")
    ap.add_argument("--set", default="cube124")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pca", action="store_true")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--faults", action="store_true")
    ap.add_argument("--solves", action="store_true")
    args = ap.parse_args()
    side, _, seed = args.set[4:].partition(":")
    trees = []
    for spec in args.trees:
        name, path = spec.split("=")
        tally = Tally()
        trees.append((name, load_tree(path, tally), tally))
        print(f"{name}: {trees[-1][1]['neurospca'].__file__}", flush=True)
    if args.solves:
        solves(trees, int(side), args.rounds, threads=args.threads)
        return
    X = cube_data(int(side), seed=int(seed or 0))
    if args.faults:
        for name, mods, _ in trees:
            print(f"## {name}", flush=True)
            fault_profile(mods, X, int(side))
        return
    print(
        "| round | tree | CPU s | wall s | faults k (system CPU s) | solves CPU s (faults k) "
        "| kernel CPU s | kernel its 1 / many threads | finishing CPU s (its solves) "
        "| rest CPU s | passes | max abs diff |\n"
        "|---:|---|---:|---:|---:|---|---:|---|---|---:|---:|---:|"
    )
    ref = None
    for r in range(args.rounds):
        if args.pca:
            cpu, wall = pca_row(X)
            print(f"| {r} | randomized PCA | {cpu:.2f} | {wall:.2f} | | | | | | | | |", flush=True)
        for name, mods, tally in trees if r % 2 == 0 else trees[::-1]:
            tally.reset()
            m, cpu, wall, faults, passes = fit(mods, X, int(side), args.threads)
            a = tally.acc
            ref = m.components_ if ref is None else ref
            rest = cpu - a["solve"][0] - a["finish"][0]
            print(
                f"| {r} | {name} | {cpu:.2f} | {wall:.2f} | {faults / 1e3:.0f} ({m.sys_cpu_:.2f}) "
                f"| {a['solve'][0]:.2f} ({a['solve'][1] / 1e3:.0f}) | {a['kernel'][0]:.2f} "
                f"| {tally.iters[1]} / {tally.iters['many']} "
                f"| {a['finish'][0]:.2f} ({a['fin_solve'][0]:.2f}) | {rest:.2f} | {passes:.0f} "
                f"| {np.abs(m.components_ - ref).max():.1e} |",
                flush=True,
            )
            del m
            gc.collect()


if __name__ == "__main__":
    main()
