"""The look-ahead where a pass is expensive (issue 22 round 17, branch look22q).

One joint fit (``SPCATV(3, alpha_rel=1, tol=1e-3)``) of a memmap in this process,
with the page cache in one of three states, and one set of flags::

    OMP_NUM_THREADS=1 PYTHONPATH=TREE python benchmarks/bench_look22q.py \\
        X.npy OUT.npy cached|cold|each off|memmap|tree

- ``cached``: the file read once before the fit (in the page cache);
  ``cold``: dropped from the page cache before the fit
  (``posix_fadvise(POSIX_FADV_DONTNEED)``), so the first pass reads the disk and
  the file stays cached after it; ``each``: dropped before every pass, as a
  file larger than memory (52 GB at biobank size) is read from disk by every pass.
- flags: ``off``, the look-ahead and the checks' span nowhere (``LOOK_AHEAD``
  False, ``CHECK_LOADINGS`` False: main's look-ahead-off path); ``memmap``,
  round 16's ``"memmap"`` (main's default); ``tree``, the tree's own defaults.

Prints one JSON line: CPU and wall seconds of the fit, passes (bytes of the
row blocks over ``X.nbytes``), bytes read from storage (``/proc/self/io``),
the u-step passes that looked ahead; saves the components to ``OUT.npy``.
"""

import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tests._helpers import drop_from_page_cache  # noqa: E402


def _flags(name):
    from neurospca.decomposition import _joint_starts, _start

    if name == "off":
        _start.LOOK_AHEAD, _joint_starts.CHECK_LOADINGS = False, False
    elif name == "memmap":
        _start.LOOK_AHEAD, _joint_starts.CHECKS_WHERE = "memmap", "memmap"


def _instrument(path, cache):
    """Count the bytes of the passes and the look-ahead's u-steps; with ``each``
    drop the file from the page cache before every pass."""
    from neurospca.decomposition import _data, _start

    got = dict(bytes=0, ahead=0)
    orig_map, orig_blocks = _data.DataOperator._map, _data.DataOperator._blocks
    orig_direction = _start.LookAhead._direction

    def blocks(self):
        for item in orig_blocks(self):
            got["bytes"] += item[2].nbytes
            yield item

    def mapped(self, *a, **k):
        if cache == "each":
            drop_from_page_cache(path)
        return orig_map(self, *a, **k)

    def direction(self):
        w = orig_direction(self)
        got["ahead"] += w is not None
        return w

    _data.DataOperator._blocks, _data.DataOperator._map = blocks, mapped
    _start.LookAhead._direction = direction
    return got


def main():
    warnings.simplefilter("ignore")
    path, out, cache, flags = sys.argv[1:5]
    sys.path.insert(0, HERE)
    os.environ["BENCH_COHORT_MESH"] = "ico7x2"
    import bench_cohort

    from neurospca import SPCATV, tv_from_mesh

    coords, faces = bench_cohort._mesh()
    op = tv_from_mesh(coords, faces)
    X = np.load(path, mmap_mode="r")
    if cache == "cached":
        with open(path, "rb") as fh:
            while fh.read(2**26):
                pass
    else:
        drop_from_page_cache(path)
    _flags(flags)
    got = _instrument(path, cache)
    r0, t0, c0 = int(bench_cohort._read_bytes()), time.perf_counter(), time.process_time()
    m = SPCATV(3, operator=op, alpha_rel=1.0, tol=1e-3, random_state=0).fit(X)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    np.save(out, m.components_)
    res = dict(cache=cache, flags=flags, cpu=round(cpu, 2), wall=round(wall, 2))
    res.update(passes=round(got["bytes"] / X.nbytes, 2), ahead=got["ahead"])
    res.update(read_passes=round((int(bench_cohort._read_bytes()) - r0) / X.nbytes, 2))
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
