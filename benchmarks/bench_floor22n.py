"""The fixed-penalty fit's share of the streaming floor, decomposed (issue 22 round 14).

In one process, ``old`` (the compiled kernels of another tree, e.g. main's,
and W prepared per block) and ``new`` (this tree) alternating, each round:
the floor (best CPU seconds of a column sum and ``X @ v``); single passes of
each kind the fit makes (best of 2): an empty pass (the blocks, threads and
page give-back alone), a float32 column sum by blocks (the floor through the
data path), the fused pass of one vector, the 8-column Gram pass, the scan
with its 8-column sketch, ``matmat`` of 3 columns; then the fit
(``alpha_rel=1``, ``method="deflation"``) with the CPU of each pass kind and
the CPU outside the passes (v-steps, finishing)::

    OMP_NUM_THREADS=1 python benchmarks/bench_floor22n.py X.npy memory|memmap OLD_TREE [ROUNDS]

``X.npy``: :mod:`bench_cohort`'s 10,000 x 10,242 (``memory``) or 2,000 x
327,684 float32 (``memmap``, written with ``BENCH_COHORT_MESH=ico7x2``).
Vectors from seed 3500; the fits use ``random_state=0``. ``BENCH_FLOOR_SETTING=joint``
fits the joint fit at ``alpha_rel=1`` instead (``bench_ooc22i.SETTINGS``; round 17).

Round 18: ``OLD_TREE`` ``-`` measures this tree only (run it once per tree,
``PYTHONPATH=TREE``, for a before / after: each share is a ratio within its
process); ``BENCH_FLOOR_SEED`` replaces seed 3500; the single passes add the
scan without its sketch (``scan``); ``BENCH_FLOOR_PROFILE=N`` prints the N
functions with the most CPU outside the passes (``cProfile`` on
``time.process_time``, switched off during every pass); ``BENCH_FLOOR_OUT``
saves the last fit's components (``.npy``).

Round 19: ``BENCH_FLOOR_THREADS=N`` runs the single passes' data path and the
fit (``n_threads=N``: its passes' workers and its solvers' threads) on ``N``
threads (default: the machine's); ``BENCH_FLOOR_KEEP_PAGES=1`` keeps a
memmap's pages mapped between passes (``_data.GIVE_BACK_PAGES = False``).
"""

import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ooc22i import SETTINGS, _floor, _instrument  # noqa: E402


def _empty(B, sl, acc, rows, cols):
    return None


def _colsum(B, sl, acc, rows, cols):
    acc += B.sum(axis=0)


def _load_kernels(tree):
    """The compiled ``_products`` of another tree, as a module of its own."""
    from neurospca._kernels import _products

    path = os.path.join(tree, "neurospca", "_kernels", os.path.basename(_products.__file__))
    loader = importlib.machinery.ExtensionFileLoader("old_kernels._products", path)
    spec = importlib.util.spec_from_file_location("old_kernels._products", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _configure(tag, old):
    """Point the data path at the old or the new kernels and W preparation."""
    from neurospca.decomposition import _blocks, _data

    new_kernels, cast_wide = _configure.saved
    kernels = old if tag == "old" else new_kernels
    _blocks._products = _data._products = lambda: kernels
    _data.DataOperator._cast_wide = _data.DataOperator._cast if tag == "old" else cast_wide


def _threads():
    value = os.environ.get("BENCH_FLOOR_THREADS")
    return int(value) if value else None


def _single_passes(X):
    from neurospca.decomposition import _data

    op = _data.DataOperator(X, n_threads=_threads()).scan()
    op.centre(op.stats["mean"])
    rng = np.random.default_rng(int(os.environ.get("BENCH_FLOOR_SEED", 3500)))
    v, W = rng.standard_normal(X.shape[1]), rng.standard_normal((X.shape[1], 8))
    passes = {
        "empty": lambda: op._map(_empty, ()),
        "blocks_colsum": lambda: op._map(_colsum, (), make_acc=op._vec_acc()),
        "fused": lambda: op.fused(v),
        "gram8": lambda: op.gram(W),
        "scan": lambda: op.scan(sketch=0),
        "scan+8": lambda: op.scan(sketch=8),
        "matmat3": lambda: op.matmat(W[:, :3]),
    }
    best = {}
    for _ in range(2):
        for name, run in passes.items():
            c0 = time.process_time()
            run()
            best[name] = min(best.get(name, np.inf), time.process_time() - c0)
    return best


def _fit(X, tv, counters):
    from neurospca import SPCATV

    kern, cnt, pcpu = counters
    for d in counters:
        d.clear()
    setting = SETTINGS[os.environ.get("BENCH_FLOOR_SETTING", "fixed")]
    top = int(os.environ.get("BENCH_FLOOR_PROFILE", 0))
    prof = _outside_profile() if top else None
    m = SPCATV(3, operator=tv, tol=1e-3, random_state=0, n_threads=_threads(), **setting)
    c0, w0 = time.process_time(), time.perf_counter()
    m.fit(X)
    cpu = time.process_time() - c0
    print(f"  fit wall {time.perf_counter() - w0:.3f} s (n_threads={_threads()})")
    if prof is not None:
        _print_profile(prof, top)
    return m.components_, cpu, kern["bytes"] / X.nbytes, dict(cnt), dict(pcpu), dict(kern)


def _outside_profile():
    """A ``cProfile`` on process CPU, switched off during every pass."""
    import cProfile

    from neurospca.decomposition import _data

    prof = cProfile.Profile(time.process_time)
    inner = _data.DataOperator._map

    def mapped(self, *args, **kw):
        prof.disable()
        try:
            return inner(self, *args, **kw)
        finally:
            prof.enable()

    _data.DataOperator._map = mapped
    prof.enable()
    return prof, inner


def _print_profile(prof, top):
    import pstats

    from neurospca.decomposition import _data

    prof, inner = prof
    prof.disable()
    _data.DataOperator._map = inner
    st = pstats.Stats(prof)
    print("  outside the passes, by own CPU (cProfile tottime):")
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
    for (file, line, name), (_, ncalls, tt, ct, _) in rows:
        where = f"{os.path.basename(file)}:{line}({name})"
        print(f"    {tt:7.3f} own {ct:7.3f} cum {ncalls:5d} calls  {where}")


def _sgemm_rate():
    """GFlop/s of a one-thread float32 product of two 2,048 x 2,048 matrices (best of 3)."""
    A = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
    best = np.inf
    for _ in range(3):
        c0 = time.process_time()
        A @ A
        best = min(best, time.process_time() - c0)
    return 2 * 2048**3 / best / 1e9


def _report(tag, floor, single, fit):
    comps, cpu, n, cnt, pcpu, kern = fit
    pass_cpu = sum(pcpu.values())
    res = dict(tree=tag, floor=round(floor, 4), fit_cpu=round(cpu, 3), passes=round(n, 1))
    res.update(share=round(n * floor / cpu, 4), pass_cpu=round(pass_cpu, 3))
    res.update(non_pass_cpu=round(cpu - pass_cpu, 3))
    res["share_if_passes_at_floor"] = round(n * floor / (n * floor + cpu - pass_cpu), 4)
    print(json.dumps(res))
    for k, t in single.items():
        print(f"  single {k:14s} {t:7.3f} CPU s  {t / floor:5.1f}x floor")
    n_x = fit[0].shape[1] * _report.rows  # N P
    rate, sgemm = 32 * n_x / single["gram8"] / 1e9, _sgemm_rate()
    print(f"  gram8: {rate:.1f} GFlop/s per CPU s; sgemm (one thread) {sgemm:.1f} GFlop/s;")
    print(f"  gram8 at the sgemm rate: {32 * n_x / 1e9 / sgemm / floor:.2f}x floor")
    for k in cnt:
        ex = pcpu[k] - cnt[k] * floor
        print(
            f"  fit {k:20s} passes {cnt[k]:3d}  cpu {pcpu[k]:7.3f}  "
            f"kernels {kern.get(k, 0):7.3f}  excess over floor {ex:7.3f}"
        )


def main():
    warnings.simplefilter("ignore")
    path, mode, old_tree = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    if mode == "memmap":
        os.environ["BENCH_COHORT_MESH"] = "ico7x2"
    import bench_cohort

    from neurospca import tv_from_mesh
    from neurospca.decomposition import _data

    _configure.saved = (_data._products(), _data.DataOperator._cast_wide)
    _data.GIVE_BACK_PAGES = os.environ.get("BENCH_FLOOR_KEEP_PAGES", "0") != "1"
    tags = ("new",) if old_tree == "-" else ("old", "new")
    old = None if old_tree == "-" else _load_kernels(old_tree)
    X = np.load(path) if mode == "memory" else np.load(path, mmap_mode="r")
    coords, faces = bench_cohort._mesh()
    tv = tv_from_mesh(coords, faces)
    comps = {}
    _report.rows = X.shape[0]
    for r in range(rounds):
        for tag in tags:
            _configure(tag, old)
            floor = min(_floor(X)[1] for _ in range(2))
            single = _single_passes(X)
            kern, cnt, pcpu, _ = _instrument(_data)
            fit = _fit(X, tv, (kern, cnt, pcpu))
            _uninstrument(_data)
            floor = min([floor] + [_floor(X)[1] for _ in range(2)])  # before and after the fit
            print(f"round {r} {mode} load {os.getloadavg()[0]:.1f} {time.strftime('%H:%M:%S')}")
            _report(tag, floor, single, fit)
            comps[tag] = fit[0]
        if "old" in comps:
            print("components max |old - new|", float(np.max(np.abs(comps["old"] - comps["new"]))))
    if os.environ.get("BENCH_FLOOR_OUT"):
        np.save(os.environ["BENCH_FLOOR_OUT"], comps["new"])


def _uninstrument(data):
    data.DataOperator._map, data.DataOperator._blocks = _ORIG


if __name__ == "__main__":
    from neurospca.decomposition import _data as _d

    _ORIG = (_d.DataOperator._map, _d.DataOperator._blocks)
    main()
