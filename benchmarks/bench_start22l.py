"""The start's passes and driver work, out of core and in memory (issue 22 round 12).

:mod:`bench_ooc22i`'s per-pass-kind CPU, plus the driver thread's CPU in the
start (the Krylov subspace and the deflated start bases: linear algebra on
P-long blocks, no pass) and the share of the streaming floor by CPU seconds.
Run with the tree to measure on ``PYTHONPATH``::

    OMP_NUM_THREADS=1 python benchmarks/bench_start22l.py fixed|joint OUT.npy X.npy [memory]

``X.npy``: a ``bench_cohort.make_data`` file (2,000 x 327,684 float32 with
``BENCH_COHORT_MESH=ico7x2``, read as a memmap; or 10,000 x 10,242 with the
default mesh, read into memory with ``memory``); ``OUT.npy`` receives the
components.
"""

import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ooc22i import SETTINGS, _floor, _instrument  # noqa: E402


def _driver_clock(module, names, spent):
    """Wrap ``module.<name>`` to add its calling thread's CPU seconds to ``spent``."""
    for name in names:
        fn = getattr(module, name)

        def timed(*a, _fn=fn, **k):
            c0 = time.thread_time()
            try:
                return _fn(*a, **k)
            finally:
                spent[0] += time.thread_time() - c0

        setattr(module, name, timed)


def main():
    warnings.simplefilter("ignore")
    setting, out, path = sys.argv[1:4]
    memory = len(sys.argv) > 4 and sys.argv[4] == "memory"
    if not memory:
        os.environ["BENCH_COHORT_MESH"] = "ico7x2"
    import bench_cohort

    from neurospca import SPCATV, tv_from_mesh
    from neurospca.decomposition import _data, _deflated, _subspace

    coords, faces = bench_cohort._mesh()
    op = tv_from_mesh(coords, faces)
    X = np.load(path) if memory else np.load(path, mmap_mode="r")
    floor_wall, floor_cpu = _floor(X)
    kern, cnt, pcpu, _ = _instrument(_data)
    krylov, bases = [0.0], [0.0]
    _driver_clock(_subspace, ["krylov_subspace"], krylov)
    _driver_clock(_deflated._Deflated, ["deflated_basis"], bases)
    t0, c0 = time.perf_counter(), time.process_time()
    m = SPCATV(3, operator=op, tol=1e-3, random_state=0, **SETTINGS[setting]).fit(X)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    np.save(out, m.components_)
    n = kern["bytes"] / X.nbytes
    res = dict(setting=setting, memory=memory, wall=round(wall, 2), cpu=round(cpu, 2))
    res.update(passes=round(n, 1), floor_cpu=round(floor_cpu, 4))
    res.update(share_cpu=round(n * floor_cpu / cpu, 4), pass_cpu=round(sum(pcpu.values()), 2))
    res.update(krylov_driver_cpu=round(krylov[0], 2), bases_driver_cpu=round(bases[0], 2))
    print(json.dumps(res))
    for k in cnt:
        print(f"  {k:22s} passes {cnt[k]:3d}  cpu {pcpu[k]:7.2f}  kernel-thread-cpu {kern[k]:7.2f}")


if __name__ == "__main__":
    main()
