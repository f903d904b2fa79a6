"""Cohort scale (issue 14): SPCA-TV on N subjects x one fsaverage5 hemisphere.

Seeded low-rank + noise data (3 smooth blobs on the left fsaverage5 sphere,
10,242 vertices), float32, written once to a ``.npy`` file. Each fit runs in a
fresh subprocess so that its peak memory (``ru_maxrss``) is its own:

* ``pca``      sklearn ``PCA(3, svd_solver="randomized")`` on the in-memory array;
* ``spcatv``   ``SPCATV(3, alpha_rel=1, tol=1e-3)`` with ``tv_from_mesh``, in memory;
* ``memmap``   the same fit on ``np.load(path, mmap_mode="r")`` (streamed);
* ``dask``     the same fit on a dask array on a ``LocalCluster`` (127.0.0.1).

Peak memory is reported as ``(peak RSS during load + fit - RSS before) / X.nbytes``
(the kernel's VmHWM, reset just before loading X).

Usage: python benchmarks/bench_cohort.py [--n 10000] [--modes pca,spcatv,memmap,dask]
[--data X.npy] [--method deflation|joint] [--progress LOG]

``--method`` sets ``SPCATV(method=...)`` (default: the estimator's default);
passes over X are counted (calls of ``DataOperator._map``, one pass each) and
the bytes the process read from disk (``/proc/self/io``) are reported;
``--progress LOG`` appends one line per pass (seconds since the fit started,
passes so far) so that a stopped run can be reported in part.

``--data`` fits an existing ``.npy`` file of this benchmark (kept) instead of
writing (and then deleting) a new one: the N = 40,000 file takes 5 minutes to
write and 50 GB of disk.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def _rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _reset_peak():
    """Reset the kernel's peak RSS (VmHWM) of this process (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _peak_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024


MESH = os.environ.get("BENCH_COHORT_MESH", "fsaverage5")


def _mesh():
    """fsaverage5 left sphere (10,242 vertices), or with BENCH_COHORT_MESH=ico7x2
    two icospheres of 163,842 vertices (P = 327,684, fsaverage's size)."""
    if MESH == "ico7x2":
        from neurospca import icosphere

        c, f = icosphere(7)
        return np.vstack([c, c + [3.0, 0, 0]]), np.vstack([f, f + len(c)])
    from nilearn.datasets import load_fsaverage

    mesh = load_fsaverage("fsaverage5")["sphere"].parts["left"]
    return np.asarray(mesh.coordinates, float), np.asarray(mesh.faces)


def make_data(path, n, seed=0):
    coords, _ = _mesh()
    rng = np.random.default_rng(seed)
    if MESH != "ico7x2":  # fsaverage's sphere has radius 100
        coords = coords / np.linalg.norm(coords, axis=1, keepdims=True)
    centres = coords[rng.choice(len(coords), 3, replace=False)]
    patterns = np.exp(-((coords[None] - centres[:, None]) ** 2).sum(-1) / 0.05)  # 3 x P
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, len(coords)))
    patterns = patterns.astype(np.float32)
    step = max(1, int(4e7 // len(coords)))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        S = (rng.standard_normal((hi - lo, 3)) * np.array([3.0, 2.0, 1.5])).astype(np.float32)
        B = rng.standard_normal((hi - lo, len(coords)), dtype=np.float32)
        B *= 0.5
        B += S @ patterns
        B += 2.5
        X[lo:hi] = B
    X.flush()
    return X.shape


def _read_bytes():
    with open("/proc/self/io") as fh:
        return dict(line.split(": ") for line in fh.read().splitlines()).get("read_bytes", "0")


def _count_passes(progress):
    """Wrap ``DataOperator._map`` (one call = one pass over X): a counter,
    and a line per pass in ``progress`` (a file) when given."""
    from neurospca.decomposition import _data

    seen = {"passes": 0, "t0": time.perf_counter()}
    original = _data.DataOperator._map

    def counted(self, *args, **kw):
        out = original(self, *args, **kw)
        seen["passes"] += 1
        if progress:
            with open(progress, "a") as fh:
                t = time.perf_counter() - seen["t0"]
                fh.write(f"{t:.1f} s: {seen['passes']} passes\n")
        return out

    _data.DataOperator._map = counted
    return seen


def child(mode, path, method=None, progress=None):
    import warnings

    warnings.simplefilter("ignore")
    from neurospca import SPCATV, tv_from_mesh

    coords, faces = _mesh()
    op = tv_from_mesh(coords, faces)
    cluster = client = None
    rss0 = _rss_mb()
    _reset_peak()
    if mode == "dask":
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=2,
            processes=False,
            host="127.0.0.1",
            protocol="tcp",
            dashboard_address="127.0.0.1:0",
        )
        client = Client(cluster)
        from neurospca import npy_to_dask

        p = np.load(path, mmap_mode="r").shape[1]
        X = npy_to_dask(path, chunk_rows=max(1, int(32e6 // (4 * p))))  # 32 MB chunks
        nbytes = X.nbytes
    elif mode == "memmap":
        X = np.load(path, mmap_mode="r")
        nbytes = X.nbytes
    else:
        X = np.load(path)
        nbytes = X.nbytes
    seen = _count_passes(progress)
    read0 = int(_read_bytes())
    t0 = seen["t0"] = time.perf_counter()
    c0 = time.process_time()
    out = {}
    if mode == "pca":
        from sklearn.decomposition import PCA

        pca = PCA(3, svd_solver="randomized", random_state=0).fit(X)
        out["evr"] = pca.explained_variance_ratio_.tolist()
    else:
        kw = {} if method is None else {"method": method}
        m = SPCATV(3, operator=op, alpha_rel=1.0, tol=1e-3, **kw).fit(X)
        out.update(
            passes=seen["passes"],
            read_gb=(int(_read_bytes()) - read0) / 1e9,
            n_iter=m.n_iter_per_component_.tolist(),
            rel_gaps=m.rel_gaps_.tolist(),
            nonzero=np.mean(m.components_ != 0, axis=1).tolist(),
            components_head=m.components_[:, :2000].ravel().tolist(),
        )
    out["time"] = time.perf_counter() - t0
    out["cpu"] = time.process_time() - c0  # every thread (dask's too: processes=False)
    maxrss = _peak_mb()
    out["peak_ratio"] = (maxrss - rss0) * 2**20 / nbytes
    out["maxrss_mb"] = maxrss
    out["data_mb"] = nbytes / 2**20
    if client is not None:
        client.close()
        cluster.close()
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--modes", default="pca,spcatv,memmap,dask")
    ap.add_argument("--child", default=None)
    ap.add_argument("--path", default=None)
    ap.add_argument("--data", default=None)
    ap.add_argument("--method", default=None)
    ap.add_argument("--progress", default=None)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.path, args.method, args.progress)
        return
    tmp = None
    if args.data:
        path = args.data
        shape = np.load(path, mmap_mode="r").shape
        print(f"data {shape} float32 ({np.prod(shape) * 4 / 2**20:.0f} MB) from {path}")
    else:
        tmp = tempfile.mkdtemp(prefix="bench_cohort_")
        path = os.path.join(tmp, "X.npy")
        t0 = time.perf_counter()
        shape = make_data(path, args.n)
        print(
            f"data {shape} float32 ({np.prod(shape) * 4 / 2**20:.0f} MB) written in "
            f"{time.perf_counter() - t0:.1f} s"
        )
    res = {}
    try:
        for mode in args.modes.split(","):
            extra = ["--method", args.method] if args.method else []
            extra += ["--progress", args.progress] if args.progress else []
            r = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--path", path] + extra,
                capture_output=True,
                text=True,
                cwd=os.getcwd(),
            )
            if r.returncode:
                print(mode, "FAILED", r.stderr[-2000:])
                continue
            res[mode] = json.loads(r.stdout.strip().splitlines()[-1])
            print(
                f"{mode}: {res[mode]['time']:.1f} s ({res[mode]['cpu']:.1f} CPU s), "
                f"peak {res[mode]['peak_ratio']:.2f}x the data "
                f"(max RSS {res[mode]['maxrss_mb']:.0f} MB), passes {res[mode].get('passes')}, "
                f"read from disk {res[mode].get('read_gb', 0):.1f} GB",
                flush=True,
            )
    finally:
        if tmp is not None:
            os.remove(path)
            os.rmdir(tmp)
    base = res.get("pca", {}).get("time")
    print(
        f"\n| fit (N = {shape[0]}, P = {shape[1]}, float32) | time (s) | x randomized PCA "
        "| peak memory / data | alternations | rel. gaps |"
    )
    print("|---|---|---|---|---|---|")
    for mode, r in res.items():
        ratio = f"{r['time'] / base:.2f}" if base else "-"
        print(
            f"| {mode} | {r['time']:.1f} | {ratio} | {r['peak_ratio']:.2f} "
            f"| {r.get('n_iter', '-')} | "
            f"{', '.join(f'{g:.1e}' for g in r.get('rel_gaps', []))} |"
        )
    ref = res.get("spcatv", {}).get("components_head")
    for mode in ("memmap", "dask"):
        if ref and mode in res:
            d = np.abs(np.array(res[mode]["components_head"]) - np.array(ref)).max()
            print(f"max |components({mode}) - components(in memory)| = {d:.2e}")


if __name__ == "__main__":
    main()
