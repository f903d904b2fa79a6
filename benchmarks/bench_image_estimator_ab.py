"""Issue 23 A/B: ImageSPCATV(3).fit on a small 4-D NIfTI and ``neurospca fit`` on files,
the build before issue 23 (``--old``, e.g. /work/wt-base at 808b191) against this one,
in alternating subprocesses.

    python benchmarks/bench_image_estimator_ab.py --old /work/wt-base --new . --repeats 5

Each subprocess times the fit (``ImageSPCATV(3, mask=...).fit(path)``) inside itself; the
command line is timed from outside (one ``neurospca fit`` run: load, fit, loadings, model,
report with the matplotlib engine). The components of both builds are compared bit for bit.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import nibabel as nib
import numpy as np

FIT = """
import sys, time, warnings, numpy as np, neurospca
img, mask, out = sys.argv[1:4]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    m = neurospca.ImageSPCATV(3, mask=mask).fit(img)
    t = time.perf_counter() - t0
np.save(out, m.components_)
print(t)
"""

CLI = "import sys; from neurospca.cli import main; sys.exit(main())"


def make_data(folder, seed=0):
    """A 20 x 24 x 20 grid, an ellipsoid mask (~3,900 voxels), 40 maps of three blobs."""
    rng = np.random.default_rng(seed)
    shape = (20, 24, 20)
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    mask = ((grid - [9.5, 11.5, 9.5]) ** 2 / [81, 121, 81]).sum(-1) < 1
    blobs = [
        np.exp(-((grid - c) ** 2).sum(-1) / 8.0) for c in ([6, 8, 8], [13, 15, 10], [9, 12, 14])
    ]
    n = 40
    data = sum(rng.standard_normal((n, 1, 1, 1)) * b for b in blobs)
    data = data + 0.3 * rng.standard_normal((n,) + shape)
    affine = np.diag([3.0, 3.0, 3.0, 1.0])
    img = os.path.join(folder, "maps.nii.gz")
    nib.save(nib.Nifti1Image(np.moveaxis(data, 0, -1).astype(np.float32), affine), img)
    mask_path = os.path.join(folder, "mask.nii.gz")
    nib.save(nib.Nifti1Image(mask.astype(np.uint8), affine), mask_path)
    paths = []
    for i in range(n):
        paths.append(os.path.join(folder, f"sub-{i:02d}.nii.gz"))
        nib.save(nib.Nifti1Image(data[i].astype(np.float32), affine), paths[-1])
    return img, mask_path, paths, int(mask.sum())


def run(root, argv):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *argv], env=env, check=True, capture_output=True, text=True
    )
    return time.perf_counter() - t0, done.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", default=".")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="nspca-ab-")
    img, mask, paths, p = make_data(folder)
    times = {(b, w): [] for b in ("old", "new") for w in ("fit", "cli")}
    comps = {}
    for r in range(args.repeats):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for build in order:
            root = args.old if build == "old" else args.new
            out = os.path.join(folder, f"{build}.npy")
            _, stdout = run(root, ["-c", FIT, img, mask, out])
            times[(build, "fit")].append(float(stdout.split()[-1]))
            comps[build] = np.load(out)
            wall, _ = run(
                root,
                ["-c", CLI, "fit", "--images", *paths, "--mask", mask, "--output",
                 os.path.join(folder, f"out_{build}"), "-q", "--engine", "matplotlib"],
            )  # fmt: skip
            times[(build, "cli")].append(wall)
    print(f"data: 40 maps x {p} voxels; {args.repeats} alternating repeats")
    print("| task | old median (s) | new median (s) | new / old | old runs | new runs |")
    print("|---|---|---|---|---|---|")
    for what, label in (("fit", "ImageSPCATV(3).fit"), ("cli", "neurospca fit (files)")):
        old, new = np.array(times[("old", what)]), np.array(times[("new", what)])
        print(
            f"| {label} | {np.median(old):.2f} | {np.median(new):.2f} | "
            f"{np.median(new) / np.median(old):.3f} | "
            f"{' '.join(f'{t:.2f}' for t in old)} | {' '.join(f'{t:.2f}' for t in new)} |"
        )
    same = np.array_equal(comps["old"], comps["new"])
    print(f"components bit for bit equal: {same}")


if __name__ == "__main__":
    main()
