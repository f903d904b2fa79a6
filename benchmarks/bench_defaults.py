"""Evidence for SPCATV's default penalties (issue 12, part 1).

For each data set and each relative penalty ``alpha_rel`` (``alpha_ =
alpha_rel * l1_max_``, ``l1_max_ = max_j ||Xc_j||_2 / N``; ratios at their
defaults ``l1_ratio=0.05``, ``tv_ratio=0.1``) fit ``SPCATV(3)`` and print:
fraction of non-zero loadings per component, number of connected regions of
each support (regions of >= 10 features in brackets), adjusted explained
variance of the three components, fit time. Real data nobody here made:
brainspace's resting-state run on fsaverage5, nilearn's motor t-map in the
2 mm MNI mask (per-subject amplitude + smooth noise), nilearn's fsaverage5
thickness (per-subject scale + smooth noise); plus the package's simulations.
Rows marked ``A`` are the default ``alpha_rel="auto"`` (the value it chose).
The last block checks scale invariance of the default (X * 1e3, X * 1e-3).

    OMP_NUM_THREADS=1 python benchmarks/bench_defaults.py [--quick] [--alpha-rel 1 2 5]
"""

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _instances import brainspace_rsfmri, motor_maps, support_regions, thickness_maps  # noqa: E402

from neurospca import (  # noqa: E402
    SPCATV,
    make_cortical_atrophy,
    make_fmri_like,
    make_paper_simulation,
    tv_from_hemispheres,
    tv_from_mask,
)


def datasets(quick):
    out = []
    try:
        X, op, _ = brainspace_rsfmri(step=2 if quick else 1)
        out.append(("brainspace rs-fMRI fsa5", X, op))
    except ImportError:
        print("# brainspace not installed: rs-fMRI skipped (pip install brainspace)")
    X, op, _ = motor_maps(n_samples=20 if quick else 40, seed=0)
    out.append(("motor t-map MNI 2mm", X, op))
    X, op, _ = thickness_maps(n_samples=60, seed=0)
    out.append(("fsa5 thickness perturbed", X, op))
    X, P, mask = make_paper_simulation(250, random_state=1001)
    out.append(("paper simulation", X, tv_from_mask(mask)))
    d = make_cortical_atrophy(100, random_state=1001)
    op, _ = tv_from_hemispheres(d.mesh_left, d.mesh_right)
    out.append(("atrophy simulation", d.X, op))
    X, P, mask = make_fmri_like(83, random_state=1001)
    out.append(("fmri_like simulation", X, tv_from_mask(mask)))
    return out


def row(name, X, op, alpha_rel, **kw):
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = SPCATV(3, alpha_rel=alpha_rel, operator=op, **kw).fit(X)
    label = f"{m.alpha_rel_:6.2f}" if alpha_rel != "auto" else f"A{m.alpha_rel_:5.2f}"
    dt = time.perf_counter() - t0
    C = m.components_
    nz = [np.mean(c != 0) for c in C]
    reg = [f"{support_regions(c, op)}({support_regions(c, op, 10)})" for c in C]
    warn = (
        "W" if any("converge" in str(w.message) or "zero" in str(w.message) for w in caught) else ""
    )
    print(
        f"{name:26s} {X.shape[0]:5d} {X.shape[1]:7d} {label} "
        + " ".join(f"{z:5.3f}" for z in nz)
        + "  "
        + " ".join(f"{r:>8s}" for r in reg)
        + f"  {m.explained_variance_ratio_.sum():6.3f} {dt:7.1f}s {warn}",
        flush=True,
    )
    return m


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument(
        "--alpha-rel",
        nargs="+",
        default=["auto", 0.5, 1.0, 2.0, 4.0, 8.0],
        help='values of alpha_rel ("auto" = the default)',
    )
    p.add_argument("--only", default=None, help="substring of the data set names")
    args = p.parse_args()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor()}, "
        f"python {platform.python_version()}"
    )
    print(
        f"{'data set':26s} {'N':>5s} {'P':>7s} {'a_rel':>6s} {'non-zero fraction':>17s}  "
        f"{'regions (>=10 features)':>26s}  {'EV':>6s} {'time':>8s}"
    )
    for name, X, op in datasets(args.quick):
        if args.only and args.only not in name:
            continue
        for a in args.alpha_rel:
            row(name, X, op, a if a == "auto" else float(a))
    # scale invariance of the default
    X, P, mask = make_paper_simulation(250, random_state=1002)
    op = tv_from_mask(mask)
    ref = SPCATV(3, operator=op).fit(X).components_
    print(
        f"# paper simulation seed 1002, default: non-zero fractions "
        f"{np.round(np.mean(ref != 0, axis=1), 3)}"
    )
    for s in (1e3, 1e-3):
        C = SPCATV(3, operator=op).fit(X * s).components_
        print(
            f"# scale invariance: X * {s:g}: max |C - C_ref| = {np.abs(C - ref).max():.2e}, "
            f"same supports: {bool(np.array_equal(C != 0, ref != 0))}"
        )


if __name__ == "__main__":
    main()
