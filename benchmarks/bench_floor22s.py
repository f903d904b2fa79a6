"""The Gram passes' kernels block by block; each pass against its reads of X (issue 22, r19).

One process, CPU seconds (``time.process_time``) and ratios within it::

    OMP_NUM_THREADS=1 python benchmarks/bench_floor22s.py X.npy memory|memmap [ROUNDS]

``X.npy``: :mod:`bench_cohort`'s 10,000 x 10,242 (``memory``) or 2,000 x
327,684 float32 (``memmap``). Per round:

* ``floor``: the best of ``X.sum(0)`` and ``X @ v`` on one thread;
* the kernels on one thread over the data path's row blocks: ``matmat8``
  (``B W``), ``rmatmat8`` (``B^T Y``), both on each block in turn (the Gram
  pass's pair: the second reads a block just read), and the data path's
  ``gram`` on one worker (the kernels plus the Python around them);
* the same two kernels on one block that stays in the L2 cache (204 x 1,024
  float32, 0.8 MiB) and a one-thread ``sgemm``: their compute rates;
* passes through the data path on ``n_threads`` workers (1 and the default):
  a column sum by blocks (one read of X), the scan with its 8-column sketch
  (three reads: the statistics, ``B W``, ``B^T (B W)``), the Gram pass (two)
  and the fused pass (one), each over ``reads x`` the column sum.

Seed ``BENCH_FLOOR_SEED`` (default 3749) draws ``W``, ``Y`` and ``v``.
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_floor22n import _colsum, _sgemm_rate  # noqa: E402
from bench_ooc22i import _floor  # noqa: E402


def _best(run, reps=2):
    best = np.inf
    for _ in range(reps):
        c0 = time.process_time()
        run()
        best = min(best, time.process_time() - c0)
    return best


def _kernels_by_block(X, op, K, W, Wi, Yf):
    """CPU seconds of the 8-column kernels over the data path's row blocks (one thread)."""
    p = X.shape[1]
    bounds = list(zip(op._offsets[:-1], op._offsets[1:], strict=True))
    Z, G = np.zeros((X.shape[0], 8)), np.zeros((p, 8))

    def xw():
        for lo, hi in bounds:
            K.matmat8(X[lo:hi], W, Wi, Z[lo:hi])

    def xty():
        for lo, hi in bounds:
            K.rmatmat8(X[lo:hi], Yf[lo:hi], G)

    def pair():
        for lo, hi in bounds:
            K.matmat8(X[lo:hi], W, Wi, Z[lo:hi])
            K.rmatmat8(X[lo:hi], Yf[lo:hi], G)

    return {"matmat8": _best(xw), "rmatmat8": _best(xty), "both per block": _best(pair)}


def _cached_rates(K, rng):
    """GFlop/s of the two kernels on a block that stays in the L2 cache."""
    B = rng.standard_normal((204, 1024)).astype(np.float32)
    W = rng.standard_normal((1024, 8)).astype(np.float32)
    Wi, Yf = K.pair_rows(W), rng.standard_normal((204, 8)).astype(np.float32)
    Z, G, reps = np.zeros((204, 8)), np.zeros((1024, 8)), 400
    flops = 16 * B.size * reps / 1e9
    xw = _best(lambda: [K.matmat8(B, W, Wi, Z) for _ in range(reps)], 3)
    xty = _best(lambda: [K.rmatmat8(B, Yf, G) for _ in range(reps)], 3)
    return flops / xw, flops / xty


def _passes(X, n_threads, W, v):
    from neurospca.decomposition._data import DataOperator

    op = DataOperator(X, n_threads=n_threads).scan()
    op.centre(op.stats["mean"])
    runs = {
        "column sum": (1, lambda: op._map(_colsum, (), make_acc=op._vec_acc())),
        "scan+8": (3, lambda: op.scan(sketch=8)),
        "gram8": (2, lambda: op.gram(W)),
        "fused": (1, lambda: op.fused(v)),
    }
    return {name: (reads, _best(run)) for name, (reads, run) in runs.items()}


def main():
    from neurospca._kernels import load
    from neurospca.decomposition._data import DataOperator

    path, mode = sys.argv[1:3]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    X = np.load(path) if mode == "memory" else np.load(path, mmap_mode="r")
    K = load("products")
    rng = np.random.default_rng(int(os.environ.get("BENCH_FLOOR_SEED", 3749)))
    n, p = X.shape
    W = rng.standard_normal((p, 8)).astype(np.float32)
    Wi, Yf = K.pair_rows(W), rng.standard_normal((n, 8)).astype(np.float32)
    v = rng.standard_normal(p)
    one = DataOperator(X, n_threads=1).scan()
    one.centre(one.stats["mean"])
    gflop = 16 * n * p / 1e9  # one 8-column product over X
    for r in range(rounds):
        floor = min(_floor(X)[1] for _ in range(2))
        print(f"round {r} {mode} load {os.getloadavg()[0]:.1f} {time.strftime('%H:%M:%S')}")
        print(f"  floor {floor:.4f} CPU s ({X.nbytes / floor / 1e9:.1f} GB/s)")
        kern = _kernels_by_block(X, one, K, W, Wi, Yf)
        kern["data path gram, 1 worker"] = _best(lambda: one.gram(W.astype(np.float64)))
        for name, t in kern.items():
            rate = gflop * (1 if name in ("matmat8", "rmatmat8") else 2) / t
            print(f"  {name:26s} {t:7.3f} CPU s  {t / floor:5.2f}x floor  {rate:5.1f} GFlop/s")
        xw, xty = _cached_rates(K, rng)
        print(f"  in the L2 cache: matmat8 {xw:.1f}, rmatmat8 {xty:.1f} GFlop/s;", end="")
        print(f" sgemm (one thread) {_sgemm_rate():.1f} GFlop/s")
        for threads in (1, None):
            got = _passes(X, threads, W.astype(np.float64), v)
            col = got["column sum"][1]
            print(f"  passes, n_threads={threads}: column sum {col / floor:.2f}x floor")
            for name, (reads, t) in got.items():
                print(
                    f"    {name:12s} {t:7.3f} CPU s  {t / floor:5.2f}x floor  "
                    f"{reads} read(s): {t / (reads * col):4.2f}x their column sums"
                )


if __name__ == "__main__":
    main()
