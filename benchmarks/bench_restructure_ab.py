"""A/B of whole fits and a report between another build and this tree (issue 23).

A restructuring must leave results and speed unchanged. On a shared machine two
runs minutes apart differ by more than a refactor does, so each case runs in a
fresh subprocess per build, the two builds alternating (ABAB, the order
swapped every repeat). Each subprocess imports its build, times the fit (not the
import) with ``perf_counter`` and saves the fitted arrays; the script reports
the median time per build, the ratio after / before and the largest absolute
difference of the fitted arrays.

Usage::

    python benchmarks/bench_restructure_ab.py --before /work/wt-base [--repeat 5] [--cases ...]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import time, numpy as np
from neurospca import datasets as ds
"""

CASES = {
    "spcatv_fmri": """
from neurospca import SPCATV, tv_from_mask
X, _, mask = ds.make_fmri_like(random_state=0)
op = tv_from_mask(mask)
t0 = time.perf_counter(); m = SPCATV(3, operator=op).fit(X); t = time.perf_counter() - t0
arrays = {"components": m.components_}
""",
    "spcatv_auto_paper": """
from neurospca import SPCATV, tv_from_mask
X, _, mask = ds.make_paper_simulation(random_state=0)
op = tv_from_mask(mask)
t0 = time.perf_counter()
m = SPCATV(3, operator=op, alpha_rel="auto").fit(X)
t = time.perf_counter() - t0
arrays = {"components": m.components_}
""",
    "sspca": """
from neurospca import SSPCA
from neurospca.groups import grid_halfspace_groups
X, _, mask = ds.make_paper_simulation(random_state=0)
X = X[:, :]
t0 = time.perf_counter()
m = SSPCA(3, groups=grid_halfspace_groups(mask.shape), random_state=0).fit(X)
t = time.perf_counter() - t0
arrays = {"components": m.components_}
""",
    "nspca": """
from neurospca import NonnegativeSparsePCA
rng = np.random.default_rng(0)
X = rng.standard_normal((200, 100)); X[:, :15] += 3 * np.abs(rng.standard_normal((200, 1)))
t0 = time.perf_counter()
m = NonnegativeSparsePCA(n_components=2, alpha=1.0, random_state=0).fit(X)
t = time.perf_counter() - t0
arrays = {"components": m.components_}
""",
    "ktrace": """
from neurospca import KTraceNormPCA
rng = np.random.default_rng(0)
X = rng.standard_normal((200, 60)); X[:, :10] += 3 * rng.standard_normal((200, 1))
t0 = time.perf_counter()
m = KTraceNormPCA(n_components=2, k=3, alpha=0.1, random_state=0).fit(X)
t = time.perf_counter() - t0
arrays = {"components": m.components_}
""",
    "dictionary": """
from neurospca import HierarchicalDictionaryLearning
X, parent = ds.make_tree_patches(400, random_state=0)
t0 = time.perf_counter()
m = HierarchicalDictionaryLearning(parent, n_components=parent.size, random_state=0).fit(X)
t = time.perf_counter() - t0
arrays = {"components": m.components_}
""",
    "image_fit_report": """
import nibabel as nib, tempfile, os
from neurospca import ImageSPCATV
X, _, mask = ds.make_fmri_like(n_samples=40, random_state=1)
vol = np.zeros(mask.shape + (40,), np.float32); vol[mask] = X.T
img = nib.Nifti1Image(vol, np.diag([3.0, 3.0, 3.0, 1.0]))
mask_img = nib.Nifti1Image(mask.astype(np.uint8), img.affine)
t0 = time.perf_counter()
m = ImageSPCATV(3, mask=mask_img).fit(img)
rep = m.generate_report()
with tempfile.TemporaryDirectory() as d:
    rep.save_as_html(os.path.join(d, "r.html"))
t = time.perf_counter() - t0
arrays = {"components": m.components_}
""",
}

EPILOGUE = """
import json, sys
np.savez(sys.argv[1], **arrays)
print(json.dumps({"time": t}))
"""


def run_case(tree, case, out):
    """Time one case in a fresh interpreter importing ``tree``'s neurospca."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    code = PRELUDE + CASES[case] + EPILOGUE
    proc = subprocess.run(
        [sys.executable, "-c", code, out], env=env, capture_output=True, text=True, timeout=1800
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{case} in {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["time"]


def largest_difference(path_a, path_b):
    """The largest absolute difference over the arrays saved by two runs."""
    a, b = np.load(path_a), np.load(path_b)
    return max(
        float(np.max(np.abs(a[k] - b[k]))) if a[k].shape == b[k].shape else np.inf for k in a.files
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="root of the other build's tree")
    parser.add_argument("--after", default=str(ROOT), help="root of this build's tree")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args(argv)
    print("| case | before (s) | after (s) | after / before | max abs diff |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            times = {"before": [], "after": []}
            for r in range(args.repeat):
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for side in order:
                    tree = args.before if side == "before" else args.after
                    out = os.path.join(tmp, f"{case}-{side}.npz")
                    times[side].append(run_case(tree, case, out))
            diff = largest_difference(*(os.path.join(tmp, f"{case}-{s}.npz") for s in times))
            tb, ta = np.median(times["before"]), np.median(times["after"])
            print(f"| {case} | {tb:.3f} | {ta:.3f} | {ta / tb:.3f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
