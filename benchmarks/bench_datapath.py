"""The data path at any P (issue 22, items 3-4): passes over X, streaming
efficiency, and the scaling against a randomized PCA of the same data.

Every fit runs in a fresh subprocess, on the code of this worktree or, with
``--before DIR``, also on another checkout (the code before the change), so
that both are measured in the same run on the same data. Passes are counted
by wrapping the data access (``DataOperator._blocks``: the bytes of every row
block handed to the products, in units of the whole ``X``; the half fits of
``alpha_rel="auto"`` count half a pass each); nothing else is changed.

Settings (3 components, tol 1e-3):

* ``fixed``   ``SPCATV(3, alpha_rel=1.0, method="deflation")``: one fit;
* ``joint``   ``SPCATV(3, alpha_rel=1.0)`` (the default method at a fixed penalty);
* ``default`` ``SPCATV(3)``: ``method="joint"``, ``alpha_rel="auto"`` (split-half
  path: several fits).

Data sets:

* ``cube<n>``  N = 100 float64 maps on an n x n x n grid (``tv_from_mask``), 3
  smooth blobs + noise, seeded (P = 22^3 = 10,648 ... 124^3 = 1,906,624);
* ``cohort``   N = 10,000 x P = 10,242 float32 (fsaverage5; ``bench_cohort.make_data``), in memory;
* ``ooc``      N = 2,000 x P = 327,684 float32 ``.npy`` memmap (two ``icosphere(7)``,
  fsaverage's size; ``bench_cohort.make_data``), read back from the page cache.

The streaming floor is the best of a plain column sum and a matrix-vector
product ``X @ v`` over the same array (BLAS on its default threads), in GB/s;
a fit's streaming rate is ``passes * X.nbytes / fit time``.

Usage::

    python benchmarks/bench_datapath.py --sets cube22,cube54,cube86,cube124 \\
        --settings fixed,default [--before /path/to/old/checkout]
    python benchmarks/bench_datapath.py --sets cohort,ooc --settings fixed,joint,default
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SETTINGS = {
    "fixed": dict(alpha_rel=1.0, method="deflation"),
    "joint": dict(alpha_rel=1.0),
    "default": {},
}


# ---------------------------------------------------------------- data
def cube_data(n_side, n_samples=100, seed=0):
    """N x n^3 float64: 3 Gaussian blobs with random scores + noise, mean 2.5."""
    rng = np.random.default_rng(seed)
    grid = np.indices((n_side,) * 3).reshape(3, -1).T / n_side
    X = rng.standard_normal((n_samples, grid.shape[0]))
    scores = rng.standard_normal((n_samples, 3)) * np.array([3.0, 2.0, 1.5])
    for k, c in enumerate(rng.uniform(0.25, 0.75, (3, 3))):
        X += np.outer(scores[:, k], np.exp(-((grid - c) ** 2).sum(axis=1) / 0.01))
    X += 2.5
    return X


def _load(name, path):
    """(X, operator) of a data set (``path``: the .npy of cohort/ooc)."""
    from neurospca import tv_from_mask, tv_from_mesh

    if name.startswith("cube"):
        n = int(name[4:])
        return cube_data(n), tv_from_mask(np.ones((n,) * 3, bool))
    os.environ["BENCH_COHORT_MESH"] = "ico7x2" if name == "ooc" else "fsaverage5"
    sys.path.insert(0, HERE)
    import bench_cohort

    coords, faces = bench_cohort._mesh()
    X = np.load(path, mmap_mode="r") if name == "ooc" else np.load(path)
    return X, tv_from_mesh(coords, faces)


def _write(name, tmp, data_dir=None):
    """Write the .npy of cohort / ooc (a memmap, row block by row block), or
    use ``data_dir/<name>.npy`` when it exists (kept)."""
    if name.startswith("cube"):
        return None
    if data_dir and os.path.exists(os.path.join(data_dir, f"{name}.npy")):
        return os.path.join(data_dir, f"{name}.npy")
    path = os.path.join(tmp, f"{name}.npy")
    env = dict(
        os.environ, BENCH_COHORT_MESH="ico7x2" if name == "ooc" else "fsaverage5", PYTHONPATH=ROOT
    )
    n = 2000 if name == "ooc" else 10_000
    code = (
        f"import sys; sys.path.insert(0, {HERE!r}); import bench_cohort; "
        f"bench_cohort.make_data({path!r}, {n})"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return path


# ---------------------------------------------------------------- children
def _count_passes(nbytes):
    """Wrap ``DataOperator._blocks`` (the one reader of X): bytes handed out."""
    from neurospca.decomposition import _data

    seen = {"bytes": 0}
    original = _data.DataOperator._blocks

    def counted(self):
        for lo, hi, B in original(self):
            seen["bytes"] += B.nbytes if hasattr(B, "nbytes") else 0
            yield lo, hi, B

    _data.DataOperator._blocks = counted
    return lambda: seen["bytes"] / nbytes


def child_fit(name, path, setting, out):
    import warnings

    warnings.simplefilter("ignore")
    X, operator = _load(name, path)
    res = {}
    if setting == "pca":
        from sklearn.decomposition import PCA

        t0, c0 = time.perf_counter(), time.process_time()
        PCA(3, svd_solver="randomized", random_state=0).fit(X)
        res["time"], res["cpu"] = time.perf_counter() - t0, time.process_time() - c0
    elif setting == "floor":
        res["gbs"] = _floor(X)
    else:
        from neurospca import SPCATV

        passes = _count_passes(X.nbytes)
        t0, c0 = time.perf_counter(), time.process_time()
        m = SPCATV(3, operator=operator, tol=1e-3, random_state=0, **SETTINGS[setting]).fit(X)
        res["time"], res["cpu"] = time.perf_counter() - t0, time.process_time() - c0
        res["passes"] = passes()
        res["gbs"] = res["passes"] * X.nbytes / res["time"] / 1e9
        res["alpha_rel"] = float(m.alpha_rel_)
        res["support_s"] = float(np.nansum(m.support_time_))
        comps = np.asarray(m.components_, dtype=np.float64)
        peak = np.abs(comps).max(axis=1) / np.linalg.norm(comps, axis=1)
        res["radius_over_peak"] = (np.asarray(m.support_radius_) / peak).tolist()
        res["n_iter"] = np.asarray(m.n_iter_per_component_).tolist()
        np.save(out, m.components_)
    print(json.dumps(res))


def _floor(X):
    """Best of 3 of a column sum and of ``X @ v`` (GB/s)."""
    v = np.ones(X.shape[1], dtype=X.dtype)
    best = np.inf
    for _ in range(3):
        for f in (lambda: X.sum(axis=0), lambda: X @ v):
            t0 = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - t0)
    return X.nbytes / best / 1e9


def run(code, name, path, setting, out):
    env = dict(os.environ, PYTHONPATH=code)
    r = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            name,
            "--path",
            path or "",
            "--setting",
            setting,
            "--out",
            out,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=code,
    )
    if r.returncode:
        print(f"{name} {setting} ({code}) FAILED:", r.stderr[-1500:], flush=True)
        return None
    res = json.loads(r.stdout.strip().splitlines()[-1])
    if CLOCK["cpu"] and "cpu" in res:  # --cpu: the child's CPU seconds in the table
        res["time"] = res["cpu"]
    return res


#: Whether the table shows CPU seconds (``--cpu``, for a loaded machine) instead of wall.
CLOCK = {"cpu": False}


# ---------------------------------------------------------------- main
def _p(name):
    return {"cohort": 10_242, "ooc": 327_684}.get(name) or int(name[4:]) ** 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="cube22,cube54,cube86,cube124")
    ap.add_argument("--settings", default="fixed,default")
    ap.add_argument("--before", default=None, help="an older checkout, built")
    ap.add_argument("--before-settings", default=None)
    ap.add_argument("--child", default=None)
    ap.add_argument("--path", default=None)
    ap.add_argument("--setting", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--data-dir", default=None, help="reuse <dir>/cohort.npy, ooc.npy (kept)")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds instead of wall (loaded)")
    args = ap.parse_args()
    CLOCK["cpu"] = args.cpu
    if args.child:
        child_fit(args.child, args.path or None, args.setting, args.out)
        return
    tmp = tempfile.mkdtemp(prefix="bench_datapath_")
    rows = []
    before_settings = (args.before_settings or args.settings).split(",")
    for name in args.sets.split(","):
        path = _write(name, tmp, args.data_dir)
        pca = run(ROOT, name, path, "pca", "")
        floor = run(ROOT, name, path, "floor", "") if not name.startswith("cube") else None
        for setting in args.settings.split(","):
            after = run(ROOT, name, path, setting, os.path.join(tmp, f"a_{name}_{setting}.npy"))
            before = None
            if args.before and setting in before_settings:
                before = run(
                    args.before, name, path, setting, os.path.join(tmp, f"b_{name}_{setting}.npy")
                )
            diff = None
            if after and before:
                diff = float(
                    np.abs(
                        np.load(os.path.join(tmp, f"a_{name}_{setting}.npy"))
                        - np.load(os.path.join(tmp, f"b_{name}_{setting}.npy"))
                    ).max()
                )
            rows.append([name, setting, pca, floor, before, after, diff])
            _print_row(rows[-1])
        # a second randomized PCA after the fits: the ratios use the mean of both
        pca2 = run(ROOT, name, path, "pca", "")
        if pca and pca2:
            print(
                f"  randomized PCA {pca['time']:.1f} s before the fits, {pca2['time']:.1f} s after"
            )
            for row in rows:
                if row[0] == name:
                    row[2] = {"time": 0.5 * (pca["time"] + pca2["time"])}
        if path and not path.startswith(args.data_dir or "\0"):
            os.remove(path)
    print()
    print(
        "| data | P | setting | randomized PCA (s) | before (s) | x PCA | passes | after (s) "
        "| x PCA | passes | support before (s, radius/peak) | support after "
        "| GB/s (floor) | max abs diff of components |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|")
    for row in rows:
        _print_row(row, table=True)


def _fmt(x, f="{:.2f}"):
    return "-" if x is None else f.format(x)


def _print_row(row, table=False):
    name, setting, pca, floor, before, after, diff = row
    t_pca = pca["time"] if pca else None
    cells = [name, f"{_p(name):,}", setting, _fmt(t_pca, "{:.1f}")]
    for r in (before, after):
        t = r["time"] if r else None
        cells += [
            _fmt(t, "{:.1f}"),
            _fmt(t / t_pca if t and t_pca else None),
            _fmt(r["passes"] if r else None, "{:.1f}"),
        ]
    for r in (before, after):  # certified-support finishing: seconds, radius / peak
        if r and "support_s" in r:
            cells.append(
                f"{r['support_s']:.1f} s, " + "/".join(f"{x:.3f}" for x in r["radius_over_peak"])
            )
        elif table:
            cells.append("-")
    gbs = _fmt(after["gbs"] if after else None, "{:.2f}")
    if floor:
        gbs += f" ({floor['gbs']:.1f}; {100 * after['gbs'] / floor['gbs']:.0f} %)" if after else ""
    cells += [gbs, _fmt(diff, "{:.1e}")]
    print("| " + " | ".join(cells) + " |" if table else "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
