"""Where a memmap fit's CPU goes (issue 22 round 10, branch ooc22i).

Per pass kind: the workers' block kernels (thread CPU), the driver's reads
(thread CPU), and the rest of the fit; the streaming floor (best of a column
sum and ``X @ v`` on the same memmap) and the fit's share of it, by wall and
by CPU seconds. Run with the tree to measure on ``PYTHONPATH``::

    OMP_NUM_THREADS=1 python benchmarks/bench_ooc22i.py fixed|joint|default OUT.npy [X.npy]

``X.npy``: a ``bench_cohort.make_data`` file written with
``BENCH_COHORT_MESH=ico7x2`` (default ``/tmp/ooc22i/ooc.npy``: 2,000 x 327,684
float32); ``OUT.npy`` receives the components.
"""

import collections
import json
import os
import sys
import threading
import time
import warnings

import numpy as np

SETTINGS = {
    "fixed": dict(alpha_rel=1.0, method="deflation"),
    "joint": dict(alpha_rel=1.0),
    "default": {},
}


def _floor(X):
    """(wall, CPU) seconds of the best of a column sum and ``X @ v``."""
    v = np.ones(X.shape[1], X.dtype)
    times = []
    for f in (lambda: X.sum(axis=0), lambda: X @ v):
        for _ in range(2):
            t0, c0 = time.perf_counter(), time.process_time()
            f()
            times.append((time.perf_counter() - t0, time.process_time() - c0))
    return min(w for w, _ in times), min(c for _, c in times)


def _instrument(data):
    """Wrap ``DataOperator._map`` and ``_blocks``: per pass kind, the pass's
    CPU and wall seconds and its kernels' thread CPU; the driver's reads."""
    kern, cnt = collections.defaultdict(float), collections.Counter()
    pcpu, pwall = collections.defaultdict(float), collections.defaultdict(float)
    lock = threading.Lock()
    orig_map, orig_blocks = data.DataOperator._map, data.DataOperator._blocks

    def blocks(self):
        it = orig_blocks(self)
        while True:
            c0 = time.thread_time()
            item = next(it, None)
            kern["read"] += time.thread_time() - c0
            if item is None:
                return
            kern["bytes"] += item[2].nbytes
            yield item

    def mapped(self, fn, *a, **k):
        def timed(*args):
            c0 = time.thread_time()
            out = fn(*args)
            with lock:
                kern[fn.__name__] += time.thread_time() - c0
            return out

        cnt[fn.__name__] += 1
        c0, t0 = time.process_time(), time.perf_counter()
        out = orig_map(self, timed, *a, **k)
        pcpu[fn.__name__] += time.process_time() - c0
        pwall[fn.__name__] += time.perf_counter() - t0
        return out

    data.DataOperator._blocks = blocks
    data.DataOperator._map = mapped
    return kern, cnt, pcpu, pwall


def main():
    warnings.simplefilter("ignore")
    setting, out = sys.argv[1], sys.argv[2]
    path = sys.argv[3] if len(sys.argv) > 3 else "/tmp/ooc22i/ooc.npy"
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ["BENCH_COHORT_MESH"] = "ico7x2"
    import bench_cohort

    from neurospca import SPCATV, tv_from_mesh
    from neurospca.decomposition import _data

    coords, faces = bench_cohort._mesh()
    op = tv_from_mesh(coords, faces)
    X = np.load(path, mmap_mode="r")
    floor_wall, floor_cpu = _floor(X)
    kern, cnt, pcpu, pwall = _instrument(_data)
    t0, c0 = time.perf_counter(), time.process_time()
    m = SPCATV(3, operator=op, tol=1e-3, random_state=0, **SETTINGS[setting]).fit(X)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    np.save(out, m.components_)
    # passes in units of the whole X (a split half's pass counts half)
    n = kern["bytes"] / X.nbytes
    res = dict(setting=setting, wall=round(wall, 2), cpu=round(cpu, 2), passes=round(n, 1))
    res["map_calls"] = sum(cnt.values())
    res.update(floor_wall=round(floor_wall, 4), floor_cpu=round(floor_cpu, 4))
    res.update(share_wall=round(n * floor_wall / wall, 4), share_cpu=round(n * floor_cpu / cpu, 4))
    res.update(gbs_wall=round(n * X.nbytes / 1e9 / wall, 2), floor_gbs=X.nbytes / 1e9 / floor_wall)
    res.update(pass_cpu=round(sum(pcpu.values()), 2), pass_wall=round(sum(pwall.values()), 2))
    print(json.dumps(res))
    for k in cnt:
        print(
            f"  {k:22s} passes {cnt[k]:3d}  cpu {pcpu[k]:7.2f}  wall {pwall[k]:7.2f}  "
            f"kernel-thread-cpu {kern[k]:7.2f}"
        )
    print(f"  read (driver thread cpu) {kern['read']:.2f}")
    print("  alternations", np.asarray(m.n_iter_per_component_).tolist())


if __name__ == "__main__":
    main()
