"""Time-to-precision of SPCA-TV (3 components), like the paper's Table III.

For each instance and solver, fits 3 components at tol = 1, 1e-1, 1e-2, 1e-3,
1e-6 (the scale-free precision of DESIGN.md section 2) and prints the wall time,
the solver iterations and the largest final certified gap (absolute, in units of
the objective of eq. 3). scikit-learn's PCA and SparsePCA are timed on the same
data for reference. Penalties: the reference implementation's example,
``(l1, l2, tv) = l1_max * (0.05, 1, 0.1)``, ``l1_max = max_j ||X_j|| / N``.

Also times one dual iteration against one sparse product pair ``A v``, ``A^T w``.

Usage::

    python benchmarks/bench_spcatv.py [--quick] [--conesta-budget SECONDS]
"""

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _instances import example_weights, fmri_like, simulation_2d  # noqa: E402

import neurospca  # noqa: E402
from neurospca.solvers import prox_dual  # noqa: E402

TOLS = [1.0, 1e-1, 1e-2, 1e-3, 1e-6]


def _time_fit(Xc, op, weights, solver, tol):
    l1, l2, tv = weights
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, V, info = neurospca.spca_tv(
            Xc, 3, l1=l1, l2=l2, tv=tv, operator=op, tol=tol, solver=solver, max_inner_iter=10**7
        )
    return (
        time.perf_counter() - t0,
        int(np.sum(info["n_inner_iter"])),
        float(np.nanmax(info["gaps"])),
    )


def _iteration_cost(Xc, op, weights):
    l1, l2, tv = weights
    A, At = op.matrix, op.matrix_t
    v, w = np.random.default_rng(0).standard_normal(op.n_features), np.zeros(op.n_rows)
    n = 200
    t0 = time.perf_counter()
    for _ in range(n):
        A @ v
        At @ w
    pair = (time.perf_counter() - t0) / n
    y = Xc.T @ np.linalg.svd(Xc, full_matrices=False)[0][:, 0] / (2 * Xc.shape[0] * l2)
    kw = dict(tol=1e-300, max_iter=1000, gap_every=1000)
    prox_dual(y, op, l1 / (2 * l2), tv / (2 * l2), **kw)
    t0 = time.perf_counter()
    prox_dual(y, op, l1 / (2 * l2), tv / (2 * l2), **kw)
    it = (time.perf_counter() - t0) / 1000
    return pair, it


def run(name, X, mask, conesta_budget):
    from sklearn.decomposition import PCA, SparsePCA

    Xc = X - X.mean(axis=0)
    t0 = time.perf_counter()
    op = neurospca.tv_from_mask(mask)
    t_op = time.perf_counter() - t0
    weights = example_weights(X)
    print(
        f"\n## {name}: N = {X.shape[0]}, P = {X.shape[1]}, operator {op.n_rows} rows, "
        f"built in {t_op:.3f} s; (l1, l2, tv) = " + ", ".join(f"{w:.4g}" for w in weights)
    )
    print("\n| solver | tol | time (s) | solver iterations | max certified gap |")
    print("|---|---|---|---|---|")
    for solver in ("dual", "conesta"):
        for tol in TOLS:
            if solver == "conesta" and conesta_budget <= 0:
                print(f"| {solver} | {tol:g} | skipped (over budget) | | |")
                continue
            dt, iters, gap = _time_fit(Xc, op, weights, solver, tol)
            print(f"| {solver} | {tol:g} | {dt:.3f} | {iters} | {gap:.3e} |", flush=True)
            if solver == "conesta":
                conesta_budget -= dt
    t0 = time.perf_counter()
    PCA(3, svd_solver="full").fit(X)
    print(f"| sklearn PCA (full SVD) | - | {time.perf_counter() - t0:.3f} | | |")
    if X.shape[1] <= 10_000:  # hours at fMRI size: not run there
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SparsePCA(3, alpha=1.0, random_state=0, max_iter=100).fit(X)
        print(
            f"| sklearn SparsePCA (alpha=1, max_iter=100) | - | "
            f"{time.perf_counter() - t0:.3f} | | |"
        )
    import tracemalloc

    l1, l2, tv = weights
    tracemalloc.start()
    neurospca.spca_tv(Xc, 3, l1=l1, l2=l2, tv=tv, operator=op, tol=1e-3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        f"\nPeak memory allocated by a tol=1e-3 fit (dual): {peak / 2**20:.1f} MiB "
        f"= {peak / Xc.nbytes:.2f} x the data matrix ({Xc.nbytes / 2**20:.1f} MiB)"
    )
    pair, it = _iteration_cost(Xc, op, weights)
    print(
        f"One dual iteration: {it * 1e3:.3f} ms; one scipy product pair A v, A^T w: "
        f"{pair * 1e3:.3f} ms (ratio {it / pair:.2f})"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2D simulation only")
    parser.add_argument(
        "--conesta-budget",
        type=float,
        default=900.0,
        help="seconds of CONESTA per instance before skipping the rest",
    )
    args = parser.parse_args()
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in open("/proc/cpuinfo")
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    import os

    print(
        f"# SPCA-TV time to precision — {time.strftime('%Y-%m-%d')}, {cpu}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, neurospca {neurospca.__version__}"
    )
    X, _, mask = simulation_2d(seed=0)
    run("Paper 2D simulation (100x100, 250 samples)", X, mask, args.conesta_budget)
    if not args.quick:
        X, _, mask = fmri_like(seed=0)
        run("fMRI-sized (MNI152 3 mm mask)", X, mask, args.conesta_budget)


if __name__ == "__main__":
    main()
