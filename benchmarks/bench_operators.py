"""Build times of the structure operators (DESIGN.md section 3; target well under 2 s).

Instances:

- the MNI152 brain mask at 3 mm (nilearn's bundled template, 64,030 voxels),
  from the NIfTI image (including binarisation) and from the boolean array;
- fsaverage5, both hemispheres (nilearn's bundled white surfaces, 2 x 10,242
  vertices), medial wall masked out (zero thickness), edges and gradient kinds;
- a full-size fsaverage icosphere (icosahedron subdivided 7 times,
  2 x 163,842 vertices, generated), no mask and a random 10% "medial wall",
  edges and gradient kinds.

Build time includes validation of the mesh, the construction of the CSR
``GroupOperator`` and its ``norm2`` bound (closed form for grids and edges,
Gershgorin on ``A^T A`` for the gradient kind). For reference, the last
columns give the exact ``||A||^2`` by Lanczos (``eigsh``), its time, and the
ratio bound / exact, for instances up to ``--lanczos-max`` features (Lanczos
took 30-190 s on the 2 x 163,842-vertex operators; ``--lanczos-max 0`` skips it).

Usage::

    python benchmarks/bench_operators.py [--repeat 5]
"""

import argparse
import os
import platform
import time

import numpy as np

import neurospca
from neurospca.operators import lanczos_norm2
from neurospca.surface import icosphere, load_surf_data, load_surf_mesh


def _time(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times)), float(np.min(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lanczos-max", type=int, default=70000)
    args = parser.parse_args(argv)

    from nilearn import datasets

    mask_img = datasets.load_mni152_brain_mask(resolution=3, threshold=0.48)
    mask_arr = np.asanyarray(mask_img.dataobj).astype(bool)
    fs5 = datasets.fetch_surf_fsaverage("fsaverage5")
    fs_meshes = [load_surf_mesh(fs5["white_left"]), load_surf_mesh(fs5["white_right"])]
    fs_masks = [load_surf_data(fs5["thick_left"]) > 0, load_surf_data(fs5["thick_right"]) > 0]
    t0 = time.perf_counter()
    ico = icosphere(7)
    t_ico = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    ico_masks = [rng.random(ico[0].shape[0]) > 0.1 for _ in range(2)]

    cases = [
        ("MNI mask 3 mm (NIfTI image)", "grid", lambda: neurospca.tv_from_mask(mask_img)),
        ("MNI mask 3 mm (bool array)", "grid", lambda: neurospca.tv_from_mask(mask_arr)),
    ]
    for kind in ("edges", "gradient"):
        cases.append(
            (
                "fsaverage5, 2 hemis, cortex",
                kind,
                lambda kind=kind: neurospca.tv_from_hemispheres(
                    fs_meshes[0], fs_meshes[1], fs_masks[0], fs_masks[1], kind=kind
                )[0],
            )
        )
    for kind in ("edges", "gradient"):
        cases.append(
            (
                "icosphere ic7, 2 hemis",
                kind,
                lambda kind=kind: neurospca.tv_from_hemispheres(ico, ico, kind=kind)[0],
            )
        )
        cases.append(
            (
                "icosphere ic7, 2 hemis, 90% mask",
                kind,
                lambda kind=kind: neurospca.tv_from_hemispheres(
                    ico, ico, ico_masks[0], ico_masks[1], kind=kind
                )[0],
            )
        )

    print(
        f"# operator build times ({platform.machine()}, {os.cpu_count()} cpus, "
        f"load average {os.getloadavg()[0]:.1f}, numpy {np.__version__}, "
        f"repeat={args.repeat})"
    )
    print(f"# icosphere(7) generation: {t_ico:.3f} s")
    header = (
        f"{'instance':36s} {'kind':9s} {'P':>8s} {'rows':>9s} {'nnz':>9s} "
        f"{'median s':>9s} {'min s':>7s} {'norm2':>10s} {'lanczos s':>9s} {'ratio':>6s}"
    )
    print(header)
    print("-" * len(header))
    for name, kind, fn in cases:
        op, med, best = _time(fn, args.repeat)
        if op.n_features > args.lanczos_max:
            t_l, ratio = float("nan"), float("nan")
        else:
            t0 = time.perf_counter()
            exact = lanczos_norm2(op.matrix, tol=1e-6, safety=0.0)
            t_l = time.perf_counter() - t0
            ratio = op.norm2 / exact
        print(
            f"{name:36s} {kind:9s} {op.n_features:8d} {op.n_rows:9d} {op.matrix.nnz:9d} "
            f"{med:9.3f} {best:7.3f} {op.norm2:10.4g} {t_l:9.2f} {ratio:6.3f}"
        )


if __name__ == "__main__":
    main()
