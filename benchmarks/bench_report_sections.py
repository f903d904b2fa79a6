"""The report as section builders (issue 23): drawing speed against the old build.

Interleaved A/B: for each repeat, one fresh subprocess per tree (old, new,
alternating), each fitting the same small model (not timed) and timing
``ImageSPCATV.generate_report``: the first call of the process (cold: lazy
imports, canvases) and a second call with an empty figure cache (warm: every
figure redrawn); wall-clock and process CPU times. Medians over the repeats.

    python benchmarks/bench_report_sections.py --old /work/wt-base --new . --repeat 5
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = r"""
import json, sys, time, warnings
import numpy as np
import nibabel as nib
import matplotlib
matplotlib.use("Agg")
warnings.simplefilter("ignore")
import neurospca
from neurospca import ImageSPCATV
assert neurospca.__file__.startswith(sys.argv[2]), neurospca.__file__

def volume():
    rng = np.random.default_rng(12)
    shape = (11, 13, 9)
    affine = np.array([[3.0, 0, 0, -15], [0, 2.5, 0, -20], [0, 0, 3.5, -10], [0, 0, 0, 1]])
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    mask = ((grid - [5, 6, 4]) ** 2 / [25, 36, 16]).sum(-1) < 1.0
    blobs = [np.exp(-((grid - c) ** 2).sum(-1) / 3.0) for c in ([3, 4, 4], [7, 8, 4])]
    n = 16
    data = (3 * rng.standard_normal((n, 1, 1, 1)) * blobs[0]
            + 2 * rng.standard_normal((n, 1, 1, 1)) * blobs[1]
            + 0.2 * rng.standard_normal((n,) + shape))
    img = nib.Nifti1Image(np.moveaxis(data, 0, -1).astype(np.float32), affine)
    mask_img = nib.Nifti1Image(mask.astype(np.uint8), affine)
    return ImageSPCATV(2, mask=mask_img, alpha_rel=0.5, tol=1e-2).fit(img)

def surface():
    from nilearn.datasets import load_fsaverage, load_fsaverage_data
    from nilearn.surface import SurfaceImage
    fs5 = load_fsaverage("fsaverage5")
    thick = load_fsaverage_data(mesh="fsaverage5", data_type="thickness")
    rng = np.random.default_rng(2024)
    n, data = 20, {}
    for h, (vertex, amp) in {"left": (1200, 0), "right": (3000, 1)}.items():
        coords = fs5["pial"].parts[h].coordinates
        base = np.asarray(thick.data.parts[h], dtype=np.float64)
        pat = np.exp(-((coords - coords[vertex]) ** 2).sum(1) / (2 * 12.0**2)) * base
        maps = base[:, None] + pat[:, None] * 0.8 * rng.standard_normal(n)
        data[h] = maps + 0.15 * rng.standard_normal(maps.shape) * (base > 0)[:, None]
    return ImageSPCATV(1, tol=1e-2).fit(SurfaceImage(mesh=fs5["pial"], data=data))

model = {"volume": volume, "surface": surface}[sys.argv[1]]()
def timed():
    t0, c0 = time.perf_counter(), time.process_time()
    html = model.generate_report().html
    return time.perf_counter() - t0, time.process_time() - c0, html

cold, cold_cpu, first = timed()
model._figure_cache = None  # a new, empty cache: every figure is drawn again
warm, warm_cpu, _ = timed()
print(json.dumps({"cold": cold, "warm": warm, "cold_cpu": cold_cpu, "warm_cpu": warm_cpu,
                  "chars": len(first)}))
"""


def run(tree, case):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OMP_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, case, os.path.abspath(tree)],
        env=env,
        cwd=os.path.abspath(tree),
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise RuntimeError(f"{tree} {case}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cases", default="volume,surface")
    args = parser.parse_args()
    rows = []
    for case in args.cases.split(","):
        times = {"old": [], "new": []}
        for i in range(args.repeat):
            order = ("old", "new") if i % 2 == 0 else ("new", "old")
            for which in order:
                res = run(getattr(args, which), case)
                times[which].append(res)
                print(case, i, which, res, flush=True)
        for kind in ("cold", "warm", "cold_cpu", "warm_cpu"):
            old = statistics.median(t[kind] for t in times["old"])
            new = statistics.median(t[kind] for t in times["new"])
            rows.append((case, kind, old, new, new / old))
    print("\n| model | call (wall or CPU) | old (s) | new (s) | new / old |")
    print("|---|---|---:|---:|---:|")
    for case, kind, old, new, ratio in rows:
        print(f"| {case} | {kind} | {old:.2f} | {new:.2f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
