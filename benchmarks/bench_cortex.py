"""SPCA-TV on cortical thickness at full fsaverage size: time and peak memory.

Instance (seeded, generated, no download): both hemispheres of a full-size
fsaverage icosphere (icosahedron subdivided 7 times, 2 x 163,842 vertices),
a "medial wall" cap masked out on each hemisphere (about 8% of the vertices),
N = 133 subjects (the paper's ADNI cortical-thickness sample size). Thickness
of subject i is ``2.5 + sum_k w_ik p_k + noise`` with three smooth patterns
``p_k`` (Gaussian bumps of geodesic width ~0.15 rad on the sphere, two on the
left hemisphere and one on the right), Gaussian weights and i.i.d. noise
(std 0.25).

The fit is ``neurospca.SPCATV(n_components=3)`` with the default solver on the
edge TV operator of both hemispheres (and, with ``--kind gradient``, the
area-weighted gradient). Penalties follow the reference implementation's
example relative to ``l1_max = max_j ||X_j|| / N``:
``(l1, l2, tv) = l1_max * (0.05, 1, 0.1)`` (``--tv`` and ``--l1`` change the
multipliers). Reported: operator build time, fit time, certified gaps, the
correlation of each loading with its pattern, and memory: the process's peak
RSS (``resource.getrusage``) before and after the fit, and the peak of memory
allocated during the fit (``tracemalloc``; numpy reports its buffers to it).
X itself is 133 x 301k float64, about 320 MB.

Usage::

    python benchmarks/bench_cortex.py [--kind edges|gradient] [--tol 1e-3]
"""

import argparse
import os
import platform
import resource
import time
import tracemalloc
import warnings

import numpy as np

import neurospca
from neurospca._commands import penalties
from neurospca.surface import icosphere


def simulate(n_samples=133, n_subdivisions=7, noise=0.25, seed=0):
    """Simulated thickness on two icosphere hemispheres.

    Returns
    -------
    coords, faces : the icosphere (shared by both hemispheres)
    masks : (ndarray of bool, ndarray of bool)
        Cortex (vertices outside a polar cap at x > 0.92 on the left, x < -0.92
        on the right: the "medial wall").
    X : ndarray of shape (n_samples, n_kept_left + n_kept_right)
    patterns : ndarray of shape (3, n_features)
    """
    rng = np.random.default_rng(seed)
    coords, faces = icosphere(n_subdivisions)
    masks = (coords[:, 0] < 0.92, coords[:, 0] > -0.92)
    centers = [  # (hemisphere, unit vector)
        (0, np.array([0.0, 0.6, 0.8])),
        (0, np.array([-0.5, -0.5, -0.7])),
        (1, np.array([0.0, -0.8, 0.6])),
    ]
    n_left, n_right = int(masks[0].sum()), int(masks[1].sum())
    patterns = np.zeros((3, n_left + n_right))
    for k, (hemi, c) in enumerate(centers):
        c = c / np.linalg.norm(c)
        angle = np.arccos(np.clip(coords @ c, -1.0, 1.0))
        bump = np.exp(-0.5 * (angle / 0.15) ** 2)
        bump[bump < 1e-3] = 0.0
        cols = slice(0, n_left) if hemi == 0 else slice(n_left, n_left + n_right)
        patterns[k, cols] = bump[masks[hemi]]
    weights = rng.standard_normal((n_samples, 3)) * np.array([1.0, 0.8, 0.6])
    X = weights @ patterns
    X += 2.5
    for i in range(n_samples):  # row by row: no second N x P temporary
        X[i] += noise * rng.standard_normal(X.shape[1])
    return coords, faces, masks, X, patterns


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=["edges", "gradient"], default="edges")
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--l1", type=float, default=0.05)
    parser.add_argument("--tv", type=float, default=0.1)
    parser.add_argument("--n-samples", type=int, default=133)
    parser.add_argument("--subdivisions", type=int, default=7)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    coords, faces, masks, X, patterns = simulate(args.n_samples, args.subdivisions)
    t_sim = time.perf_counter() - t0
    t0 = time.perf_counter()
    op, hemis = neurospca.tv_from_hemispheres(
        (coords, faces), (coords, faces), masks[0], masks[1], kind=args.kind
    )
    t_op = time.perf_counter() - t0

    l1_max = penalties.l1_max(X)
    l1, l2, tv = penalties.example_weights(X, l1=args.l1, tv=args.tv)
    alpha = l1 + l2 + tv
    est = neurospca.SPCATV(
        n_components=3,
        alpha=alpha,
        l1_ratio=l1 / alpha,
        tv_ratio=tv / alpha,
        operator=op,
        tol=args.tol,
    )

    rss_before = _rss_mb()
    tracemalloc.start()
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    t_fit = time.perf_counter() - t0
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = _rss_mb()

    corr = np.abs(np.corrcoef(np.vstack([est.components_, patterns]))[:3, 3:])
    print(f"# SPCA-TV, cortical thickness at full fsaverage size ({args.kind} TV)")
    print(
        f"# machine: {platform.machine()}, {os.cpu_count()} cpus, load average "
        f"{os.getloadavg()[0]:.1f}; numpy {np.__version__}"
    )
    print(
        f"N = {X.shape[0]}, P = {X.shape[1]} ({hemis.vertices[0].size} + "
        f"{hemis.vertices[1].size} kept of 2 x {coords.shape[0]} vertices), "
        f"operator rows = {op.n_rows}, nnz = {op.matrix.nnz}"
    )
    print(
        f"(l1, l2, tv) = l1_max * ({args.l1}, 1, {args.tv}), l1_max = {l1_max:.4g}; "
        f"tol = {args.tol}"
    )
    print(f"simulation {t_sim:.2f} s, operator build {t_op:.2f} s (norm2 = {op.norm2:g})")
    print(
        f"fit: {t_fit:.2f} s  (per component: "
        f"{', '.join(f'{t:.2f}' for t in np.atleast_1d(est.component_times_))} s; "
        f"alternations {np.asarray(est.n_iter_).tolist()}, inner iterations "
        f"{np.asarray(est.n_inner_iter_).tolist()})"
    )
    outside = t_fit - float(np.sum(est.component_times_))
    print(
        f"  of which outside the components (validation, centring, X X^T for the SVD "
        f"init, explained variance): {outside:.2f} s"
    )
    print(f"certified v-step gaps: {', '.join(f'{g:.2e}' for g in est.dual_gaps_)}")
    print(
        f"zero fraction per loading: "
        f"{', '.join(f'{z:.2f}' for z in np.mean(est.components_ == 0, axis=1))}"
    )
    print(f"|corr(loading k, best pattern)|: {', '.join(f'{c:.3f}' for c in corr.max(axis=1))}")
    print(
        f"memory: X = {X.nbytes / 2**20:.0f} MiB; peak RSS before fit {rss_before:.0f} MiB, "
        f"after fit {rss_after:.0f} MiB; peak allocated during fit (tracemalloc) "
        f"{traced_peak / 2**20:.0f} MiB"
    )
    for w in caught:
        print(f"warning: {w.category.__name__}: {w.message}")


if __name__ == "__main__":
    main()
