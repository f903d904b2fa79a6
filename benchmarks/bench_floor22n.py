"""The fixed-penalty fit's share of the streaming floor, decomposed (issue 22 round 14).

In one process: the floor (best CPU seconds of a column sum and ``X @ v``);
single passes of each kind the fit makes (best of 3): an empty pass (the
blocks, threads and page give-back alone), a column sum by blocks (the floor
through the data path: its per-block overheads and page faults), the fused
pass of one vector, the 8-column Gram pass, the scan with its 8-column
sketch, ``matmat`` of 3 columns; then the fit (``alpha_rel=1``,
``method="deflation"``) with the CPU of each pass kind and the CPU outside
the passes (v-steps, finishing)::

    OMP_NUM_THREADS=1 python benchmarks/bench_floor22n.py X.npy memory|memmap [OUT.npy]

``X.npy``: :mod:`bench_cohort`'s 10,000 x 10,242 (``memory``) or 2,000 x
327,684 float32 (``memmap``, written with ``BENCH_COHORT_MESH=ico7x2``).
"""

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
    acc += np.add.reduce(B, axis=0, dtype=np.float64)


def _single_passes(X):
    from neurospca.decomposition import _data

    op = _data.DataOperator(X).scan()
    op.centre(op.stats["mean"])
    rng = np.random.default_rng(3500)
    v, W = rng.standard_normal(X.shape[1]), rng.standard_normal((X.shape[1], 8))
    passes = {
        "empty": lambda: op._map(_empty, ()),
        "blocks_colsum": lambda: op._map(_colsum, (), make_acc=op._vec_acc()),
        "fused": lambda: op.fused(v),
        "gram8": lambda: op.gram(W),
        "scan+8": lambda: op.scan(sketch=8),
        "matmat3": lambda: op.matmat(W[:, :3]),
    }
    best = {}
    for _ in range(3):
        for name, run in passes.items():
            c0 = time.process_time()
            run()
            best[name] = min(best.get(name, np.inf), time.process_time() - c0)
    return best


def main():
    warnings.simplefilter("ignore")
    path, mode = sys.argv[1], sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else None
    if mode == "memmap":
        os.environ["BENCH_COHORT_MESH"] = "ico7x2"
    import bench_cohort

    from neurospca import SPCATV, tv_from_mesh
    from neurospca.decomposition import _data

    X = np.load(path) if mode == "memory" else np.load(path, mmap_mode="r")
    floor = min(_floor(X)[1] for _ in range(2))
    single = _single_passes(X)
    coords, faces = bench_cohort._mesh()
    tv = tv_from_mesh(coords, faces)
    kern, cnt, pcpu, _ = _instrument(_data)
    c0 = time.process_time()
    m = SPCATV(3, operator=tv, tol=1e-3, random_state=0, **SETTINGS["fixed"]).fit(X)
    cpu = time.process_time() - c0
    if out:
        np.save(out, m.components_)
    n = kern["bytes"] / X.nbytes
    pass_cpu = sum(pcpu.values())
    res = dict(mode=mode, floor=round(floor, 4), fit_cpu=round(cpu, 3), passes=round(n, 1))
    res.update(share=round(n * floor / cpu, 4), pass_cpu=round(pass_cpu, 3))
    res.update(non_pass_cpu=round(cpu - pass_cpu, 3))
    res["share_if_passes_at_floor"] = round(n * floor / (n * floor + cpu - pass_cpu), 4)
    print(json.dumps(res))
    for k, t in single.items():
        print(f"  single {k:14s} {t:7.3f} CPU s  {t / floor:5.1f}x floor")
    for k in cnt:
        ex = pcpu[k] - cnt[k] * floor
        print(
            f"  fit {k:20s} passes {cnt[k]:3d}  cpu {pcpu[k]:7.3f}  "
            f"kernels {kern[k]:7.3f}  excess over floor {ex:7.3f}"
        )


if __name__ == "__main__":
    main()
