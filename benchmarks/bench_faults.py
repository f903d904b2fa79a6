"""What the fault checks of issue 24 cost: reading through npy_to_dask (ordinary
reads after an identity check, against the former memmap-per-task reader),
building the data operator of a memmap (its file checks), writing a ``.npy``
with images_to_memmap's writer (preallocated ordinary writes, against the
former write through a memory map), and a v-step in a forked child (one
thread) against the parent (two threads).

    OMP_NUM_THREADS=2 python benchmarks/bench_faults.py

Times are the best of ``REPEAT`` runs (the machine is shared).
"""

import os
import sys
import tempfile
import time

import numpy as np

import neurospca
from neurospca import cohort
from neurospca.decomposition._data import DataOperator

REPEAT = 3


def best(fn, repeat=REPEAT):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _old_read_rows(path, lo, hi):  # the reader before issue 24
    return np.array(np.load(path, mmap_mode="r")[lo:hi])


def _old_write(path, blocks, shape, dtype):  # the writer before issue 24
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    i = 0
    for b in blocks:
        out[i : i + b.shape[0]] = b
        i += b.shape[0]
    out.flush()
    del out


def reads(folder, n=4000, p=20000, chunk=500):
    path = os.path.join(folder, "X.npy")
    X = np.random.default_rng(0).standard_normal((n, p)).astype(np.float32)
    np.save(path, X)
    identity = cohort._npy_identity(path)
    new = best(
        lambda: [
            cohort._read_rows(path, lo, min(n, lo + chunk), identity) for lo in range(0, n, chunk)
        ]
    )
    old = best(lambda: [_old_read_rows(path, lo, min(n, lo + chunk)) for lo in range(0, n, chunk)])
    t_id = best(lambda: cohort._npy_identity(path), 20)
    mm = np.load(path, mmap_mode="r")
    t_op = best(lambda: DataOperator(mm), 20)
    blocks = [X[lo : lo + 100] for lo in range(0, n, 100)]
    out = os.path.join(folder, "out.npy")
    w_new = best(
        lambda: cohort._write_rows(
            out, n, p, np.dtype(np.float32), ((str(i), b) for i, b in enumerate(blocks))
        )
    )
    w_old = best(lambda: _old_write(out, blocks, (n, p), np.float32))
    mb = X.nbytes / 2**20
    print(
        f"| read {n} x {p} float32 ({mb:.0f} MB), {n // chunk} chunks | {new:.3f} | "
        f"{old:.3f} | {new / old:.2f} |"
    )
    print(
        f"| write it ({n // 100} blocks of 100 rows) | {w_new:.3f} | {w_old:.3f} | "
        f"{w_new / w_old:.2f} |"
    )
    print(f"| npy_to_dask identity (stat + header), once per task | {t_id * 1e6:.0f} us | | |")
    print(f"| DataOperator of a memmap (maps lookup + stat) | {t_op * 1e6:.0f} us | | |")


def fork_vstep():
    from neurospca.solvers import _base, prox_dual

    op = neurospca.tv_from_mask(np.ones((48, 48, 40), bool))
    y = np.random.default_rng(0).standard_normal(op.matrix.shape[1])
    kw = dict(tol=1e-12, max_iter=200, gap_every=10, n_threads=2)
    prox_dual(y, op, 0.1, 0.5, **kw)
    t_parent = best(lambda: prox_dual(y, op, 0.1, 0.5, **kw))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _base._THREAD_TIMES.clear()
        t = best(lambda: prox_dual(y, op, 0.1, 0.5, **kw))
        os.write(w, repr(t).encode())
        os._exit(0)
    os.close(w)
    t_child = float(os.read(r, 100).decode())
    os.waitpid(pid, 0)
    print(
        f"| v-step, 200 iterations, 270,336 rows: forked child (1 thread) vs parent "
        f"(2 threads) | {t_child:.3f} | {t_parent:.3f} | {t_child / t_parent:.2f} |"
    )


if __name__ == "__main__":
    print("| what | new (s) | before / reference (s) | ratio |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        reads(folder)
    fork_vstep()
    sys.stdout.flush()
