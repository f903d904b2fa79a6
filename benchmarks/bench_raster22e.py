"""Issue 22 round 6: the report's four surface views, numpy rasteriser against pyvista.

Each run is a fresh interpreter on this checkout (alternating engines, ``--repeat``
times) that loads fsaverage5's inflated meshes (bundled with nilearn), colours
the vertices as the report does (``vertex_colors``) and takes the four views of
``plotting._VIEWS`` with :class:`neurospca.reporting._raster.RasterSurfaceCanvas`
or the pyvista :class:`neurospca.reporting._canvases.SurfaceCanvas`. Printed,
in process CPU seconds: ``first`` (the engine's imports, the canvas and the
first four views: what a process's first surface figure pays) and ``again``
(the four views of a second component on the same canvas).

    python benchmarks/bench_raster22e.py --repeat 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

_RUN = r"""
import json, os, sys, time
import numpy as np
from nilearn.datasets import load_fsaverage
from neurospca.reporting._surface_png import vertex_colors
from neurospca.reporting.plotting import _VIEWS
fs = load_fsaverage("fsaverage5")["inflated"]
meshes = {h: (np.asarray(fs.parts[h].coordinates), np.asarray(fs.parts[h].faces))
          for h in ("left", "right")}
maps = {h: np.where(np.abs(c[:, 1] + 20) < 25, c[:, 2] / 50, 0.0) for h, (c, _) in meshes.items()}
colors = {h: vertex_colors(maps[h], None, 1.0, 1e-6) for h in meshes}
engine = sys.argv[1]
c0 = time.process_time()
if engine == "raster":
    from neurospca.reporting._raster import RasterSurfaceCanvas as Canvas
else:
    os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")
    from neurospca.reporting._canvases import SurfaceCanvas as Canvas
canvas = Canvas(meshes)
shots = canvas.shots(colors, _VIEWS)
c1 = time.process_time()
shots = canvas.shots({h: colors[h][::-1].copy() for h in colors}, _VIEWS)
c2 = time.process_time()
ink = [int(np.any(s[..., :3] < 250, axis=-1).sum()) for s in shots]
print(json.dumps({"first": c1 - c0, "again": c2 - c1, "ink": ink}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    results = {"raster": [], "pyvista": []}
    for i in range(args.repeat):
        for engine in ("raster", "pyvista") if i % 2 == 0 else ("pyvista", "raster"):
            load = os.getloadavg()[0]
            out = subprocess.run(
                [sys.executable, "-c", _RUN, engine],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                cwd=os.path.dirname(root),
            )
            res = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"# {i} {engine} (load {load:.1f}): {json.dumps(res)}", flush=True)
            results[engine].append(res)
    print("| engine | first surface figure's views CPU (s) | a later component's views CPU (s) |")
    print("|---|---:|---:|")
    for engine, runs in results.items():
        first = [r["first"] for r in runs]
        again = [r["again"] for r in runs]
        print(
            f"| {engine} | {statistics.median(first):.2f} ({min(first):.2f}-{max(first):.2f}) "
            f"| {statistics.median(again):.2f} ({min(again):.2f}-{max(again):.2f}) |"
        )


if __name__ == "__main__":
    main()
