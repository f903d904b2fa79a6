"""Issue 21 item 5 / issue 22 item 2: the report's component figures, per component.

Interleaved A/B: for each repeat, one fresh subprocess per tree (old, new,
alternating) loads the same saved models (fitted once by ``--fit-tree``; the fit
is not timed) and draws ``make_report`` of each, recording from the report's log
the wall and process CPU time of every component figure: the first carries the
report's fixed costs (imports of matplotlib and nilearn, the template, the
canvases, the pyvista plotters), the later ones the drawing itself.

Models: ``volume``, ``ImageSPCATV(3)`` on 60 fMRI-like maps in the MNI152 3 mm
mask (``make_fmri_like(random_state=1)``, 64,030 voxels); ``surface``,
``ImageSPCATV(3)`` on 60 cortical-thickness maps on both fsaverage5
hemispheres (``make_cortical_atrophy(60)``, pial meshes, pyvista views). Both at
``alpha_rel=1``.

    python benchmarks/bench_figures21.py --old /tmp/base --new . --repeat 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

OUT = os.path.join(os.environ.get("TMPDIR", "/tmp"), "neurospca_figures21")

_FIT = r"""
import os, sys, warnings
import numpy as np
import nibabel as nib
warnings.simplefilter("ignore")
from neurospca import ImageSPCATV, save_model
from neurospca.datasets import make_cortical_atrophy, make_fmri_like
out = sys.argv[1]
from nilearn.datasets import load_mni152_brain_mask
X, _, mask = make_fmri_like(n_samples=60, random_state=1)
affine = load_mni152_brain_mask(resolution=3, threshold=0.48).affine
data = np.zeros(mask.shape + (X.shape[0],), dtype=np.float32)
data[mask] = X.T
model = ImageSPCATV(3, mask=nib.Nifti1Image(mask.astype(np.uint8), affine), alpha_rel=1.0)
model.fit(nib.Nifti1Image(data, affine))
save_model(model, os.path.join(out, "volume.npz"))
from neurospca.surface import load_surface_image
from neurospca.reporting.plotting import surface_background
d = make_cortical_atrophy(60, random_state=0)
nl = d.n_vertices[0]
from nilearn.surface import PolyMesh, SurfaceImage, InMemoryMesh
mesh = PolyMesh(left=InMemoryMesh(*d.mesh_left), right=InMemoryMesh(*d.mesh_right))
img = SurfaceImage(mesh=mesh, data={"left": d.X[:, :nl].T, "right": d.X[:, nl:].T})
model = ImageSPCATV(3, alpha_rel=1.0).fit(img)
meshes = dict(model.meshes_)
for h in ("left", "right"):
    meshes[f"bg_{h}"] = surface_background(*model.meshes_[h])
save_model(model.estimator_, os.path.join(out, "surface.npz"), space=model.space_, meshes=meshes)
"""

_CHILD = r"""
import json, logging, re, sys, time, warnings
warnings.simplefilter("ignore")
import neurospca
assert neurospca.__file__.startswith(sys.argv[2]), neurospca.__file__
from neurospca.persistence import load_model
saved = load_model(sys.argv[1])
from neurospca.reporting import make_report
drawn = []
class _Figures(logging.Handler):
    def emit(self, record):
        m = re.match(r"report: component \d+ drawn in ([\d.]+) s \(CPU ([\d.]+) s\)",
                     record.getMessage())
        if m:
            drawn.append((float(m.group(1)), float(m.group(2))))
log = logging.getLogger("neurospca")
log.addHandler(_Figures())
log.setLevel(logging.INFO)
t0, c0 = time.perf_counter(), time.process_time()
html = make_report(saved.estimator, saved.space, meshes=saved.meshes, n_jobs=1)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"drawn": drawn, "wall": wall, "cpu": cpu, "chars": len(html)}))
"""


def run(tree, case):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, os.path.join(OUT, f"{case}.npz"), os.path.abspath(tree)],
        env=env,
        cwd=OUT,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median(runs, pick):
    return statistics.median(pick(r) for r in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--fit-tree", default=None, help="tree that fits the models (old)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", nargs="+", default=["volume", "surface"])
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if not os.path.exists(os.path.join(OUT, "surface.npz")):
        tree = os.path.abspath(args.fit_tree or args.old)
        env = dict(os.environ, PYTHONPATH=tree, MPLBACKEND="Agg")
        subprocess.run([sys.executable, "-c", _FIT, OUT], env=env, cwd=OUT, check=True)
    results = {(t, c): [] for t in ("old", "new") for c in args.cases}
    for i in range(args.repeat):
        for case in args.cases:
            for name in ("old", "new") if i % 2 == 0 else ("new", "old"):
                res = run(getattr(args, name), case)
                results[(name, case)].append(res)
                load = os.getloadavg()[0]
                print(f"# {i} {case} {name} (load {load:.1f}): {json.dumps(res)}", flush=True)
    head = "| model | tree | first comp. wall (s) | CPU | later comps wall (s) | CPU |"
    print(head + " report wall | CPU |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for case in args.cases:
        for name in ("old", "new"):
            runs = results[(name, case)]
            first_w = _median(runs, lambda r: r["drawn"][0][0])
            first_c = _median(runs, lambda r: r["drawn"][0][1])
            later_w = _median(runs, lambda r: statistics.mean(d[0] for d in r["drawn"][1:]))
            later_c = _median(runs, lambda r: statistics.mean(d[1] for d in r["drawn"][1:]))
            print(
                f"| {case} | {name} | {first_w:.2f} | {first_c:.2f} | {later_w:.2f} | "
                f"{later_c:.2f} | {_median(runs, lambda r: r['wall']):.2f} | "
                f"{_median(runs, lambda r: r['cpu']):.2f} |"
            )


if __name__ == "__main__":
    main()
