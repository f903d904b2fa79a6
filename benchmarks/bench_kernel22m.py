"""Single passes with and without the AVX-512 kernels of float32 blocks (issue 22 round 13).

In one process, alternating: the fused pass of one vector, the Gram pass of 8
columns, the scan with its 8-column sketch and ``matmat`` of 3 columns, each
with the compiled kernels (``new``) and with the BLAS path they replace
(``old``), best CPU seconds of 3, against the streaming floor (best of a
column sum and ``X @ v``)::

    OMP_NUM_THREADS=1 python benchmarks/bench_kernel22m.py X.npy memory|memmap
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ooc22i import _floor  # noqa: E402


def main():
    from neurospca.decomposition import _blocks, _data

    path, mode = sys.argv[1], sys.argv[2]
    X = np.load(path) if mode == "memory" else np.load(path, mmap_mode="r")
    op = _data.DataOperator(X).scan()
    op.centre(op.stats["mean"])
    rng = np.random.default_rng(3456)
    v, W = rng.standard_normal(X.shape[1]), rng.standard_normal((X.shape[1], 8))
    kernels = {"new": (_blocks._wide8, _data._fused_kernel)}
    kernels["old"] = (lambda *a, **k: None, lambda *a: None)
    passes = {
        "fused": lambda: op.fused(v),
        "gram8": lambda: op.gram(W),
        "scan+8": lambda: op.scan(sketch=8),
        "matmat3": lambda: op.matmat(W[:, :3]),
    }
    best, floor = {}, np.inf
    for _ in range(3):
        for tag, (wide, fused) in kernels.items():
            _blocks._wide8, _data._fused_kernel = wide, fused
            for name, run in passes.items():
                c0 = time.process_time()
                run()
                cpu = time.process_time() - c0
                best[tag, name] = min(best.get((tag, name), np.inf), cpu)
        floor = min(floor, _floor(X)[1])
    print(f"{mode}: floor {floor:.3f} CPU s")
    for name in passes:
        old, new = best["old", name], best["new", name]
        print(f"  {name:8s} old {old:.3f} ({old / floor:.1f}x)  new {new:.3f} ({new / floor:.1f}x)")


if __name__ == "__main__":
    main()
