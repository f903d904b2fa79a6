"""The report's surface figure composed with Pillow, and the report's warm-up thread
(issue 22, round 4).

What is checked: the colours are matplotlib's byte for byte; the composed figure
shows the four views with their titles and a colour bar running from -vmax (cold)
to +vmax (hot) with its ticks and label; a surface report draws its component
figures without importing matplotlib; the warm-up thread imports what a report
needs, and the modules the demo imports while it runs do not meet its modules.
"""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import neurospca
from neurospca.reporting import _surface_png, _warmup, plotting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(neurospca.__file__)))


def _fresh(code, env=None, timeout=600):
    """Run ``code`` in a new interpreter on this checkout; its last stdout line as JSON."""
    env = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
    env.pop("MPLBACKEND", None)
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_cold_hot_table_and_vertex_colours_are_matplotlibs():
    pytest.importorskip("matplotlib")
    from neurospca.reporting._slices import cold_hot

    ref = np.asarray(cold_hot()(np.arange(256)))[:, :3]
    assert np.array_equal(_surface_png.cold_hot_lut(), ref)
    rng = np.random.default_rng(0)
    values = rng.standard_normal(5000)
    values[rng.random(5000) < 0.4] = 0.0
    vmax = float(np.abs(values).max())
    values[:2] = vmax, -vmax  # both ends of the scale
    bg = rng.uniform(-1.5, 1.5, 5000)
    for shading in (bg, None):
        for threshold in (0.0, 0.5):
            want = plotting._vertex_colors(values, shading, vmax, threshold, cold_hot())
            got = _surface_png.vertex_colors(values, shading, vmax, threshold)
            assert got.dtype == np.uint8 and np.array_equal(got, want)


def _shots():
    """Four flat views: one distinct colour each, on white."""
    shots = []
    for colour in ([200, 30, 30], [30, 200, 30], [30, 30, 200], [200, 200, 30]):
        shot = np.full((160, 210, 3), 255, dtype=np.uint8)
        shot[20:140, 20:190] = colour
        shots.append(shot)
    return shots


def test_composed_figure_shows_the_views_titles_and_a_labelled_colour_bar():
    titles = ["left lateral", "left medial", "right lateral", "right medial"]
    png = _surface_png.surface_figure_png(_shots(), titles, 0.0563, "certified loading", dpi=80)
    img = Image.open(io.BytesIO(png))
    assert img.info["dpi"] == pytest.approx((80, 80), abs=0.5)
    rgb = np.asarray(img.convert("RGB")).astype(int)
    assert 700 < rgb.shape[1] <= 960 and 150 < rgb.shape[0] <= 272
    # each view is drawn once, left to right in the order given
    centres = []
    for colour in ([200, 30, 30], [30, 200, 30], [30, 30, 200], [200, 200, 30]):
        hit = np.all(np.abs(rgb - colour) <= 3, axis=-1)
        assert hit.sum() > 2000
        centres.append(np.argwhere(hit)[:, 1].mean())
    assert np.all(np.diff(centres) > 150)
    # titles: dark text above each view (the views themselves have no black)
    dark = np.all(rgb < 90, axis=-1)
    top = np.argwhere(np.all(np.abs(rgb - [200, 30, 30]) <= 3, axis=-1))[:, 0].min()
    for c in centres:
        assert dark[:top, int(c) - 40 : int(c) + 40].sum() > 20
    # the colour bar: right of the views, hot at the top, cold at the bottom
    lut = (_surface_png.cold_hot_lut() * 255).astype(int)
    col = int(max(centres)) + 90
    bar = rgb[:, col:]
    assert np.array_equal(lut[255], [255, 255, 255])  # both ends are white: look inside
    top_hit = (bar[..., 0] > 220) & (bar[..., 1] > 200) & (bar[..., 2] < 60)  # yellow
    bottom_hit = (bar[..., 0] < 60) & (bar[..., 1] > 200) & (bar[..., 2] > 220)  # light blue
    assert top_hit.any() and bottom_hit.any()
    assert np.argwhere(top_hit)[:, 0].mean() < np.argwhere(bottom_hit)[:, 0].mean()
    # ticks and the rotated label: dark pixels right of the bar
    right = int(np.argwhere(top_hit)[:, 1].max()) + col + 2
    assert dark[:, right:].sum() > 200


def test_long_labels_widen_the_figure_rather_than_cut_it():
    titles = ["a", "b", "c", "d"]
    short = _surface_png.surface_figure_png(_shots(), titles, 1.0, "x")
    label = "\n".join(f"line {i}" for i in range(12))
    long = _surface_png.surface_figure_png(_shots(), titles, 1.0, label)
    short, long = (np.asarray(Image.open(io.BytesIO(p)).convert("RGB")) for p in (short, long))
    assert long.shape[1] > short.shape[1] > 0
    ink = np.flatnonzero(np.any(long < 128, axis=(0, 2)))
    assert ink[-1] < long.shape[1] - 4  # the last line is drawn whole, with the margin


def test_surface_report_figures_draw_no_matplotlib_figure():
    if not plotting.pyvista_available():
        pytest.skip("pyvista cannot render off-screen here")
    out = _fresh(
        "import json, sys\n"
        "import numpy as np\n"
        "from neurospca import icosphere\n"
        "from neurospca.reporting import _canvases, plotting\n"
        "coords, faces = icosphere(2)\n"
        "meshes = {'left': (coords, faces), 'right': (coords + [3, 0, 0], faces)}\n"
        "m = {'left': np.exp(-((coords - [1, 0, 0]) ** 2).sum(1) / 0.1),\n"
        "     'right': np.zeros(len(coords))}\n"
        "canvas = _canvases.SurfaceCanvas(meshes)\n"
        "from matplotlib.figure import Figure\n"
        "made = []\n"
        "init = Figure.__init__\n"
        "Figure.__init__ = lambda self, *a, **k: made.append(1) or init(self, *a, **k)\n"
        "png = plotting.surface_component_png(m, meshes, canvas, cbar_label='loading')\n"
        "zero = plotting.surface_component_png({h: 0 * m['left'] for h in m}, meshes, canvas)\n"
        "old = plotting.plot_surface_component(m, meshes, engine='pyvista', canvas=canvas)\n"
        "canvas.close()\n"
        "print(json.dumps([png[:8].hex(), zero, len(made)]))\n"
    )
    # no matplotlib figure for the report's figure (the public function makes one)
    assert out == [b"\x89PNG\r\n\x1a\n".hex(), None, 1]


def test_warm_up_imports_what_a_report_needs_and_can_be_switched_off():
    out = _fresh(
        "import json, sys\n"
        "from neurospca import reporting\n"
        "before = 'matplotlib.pyplot' in sys.modules\n"
        "t = reporting.start_warm_up(volume=True)\n"
        "waited = reporting.wait_warm_up()\n"
        "from neurospca.reporting import _slices\n"
        "print(json.dumps([before, t is not None, waited, reporting.wait_warm_up(),\n"
        "    [m in sys.modules for m in reporting._warmup.WARM_UP_MODULES],\n"
        "    len(_slices._TEMPLATE), len(_slices._BRAINS)]))\n"
    )
    assert out == [False, True, True, False, [True] * len(_warmup.WARM_UP_MODULES), 1, 1]
    off = _fresh(
        "import json, sys\n"
        "from neurospca import reporting\n"
        "t = reporting.start_warm_up()\n"
        "print(json.dumps([t is None, reporting.wait_warm_up(), 'matplotlib' in sys.modules]))\n",
        env={"NEUROSPCA_NO_WARM_UP": "1"},
    )
    assert off == [True, False, False]


# the demo, its command-line steps wrapped: the modules its main thread imports after
# the warm-up started (while the thread runs), and those the warm-up imports
_DEMO_MODULES = r"""
import json, sys
from neurospca import cli, reporting
from neurospca._commands import demo
state = {}
def start(**kwargs):
    state["start"] = set(sys.modules)
def write(*args, **kwargs):
    state["main"] = sorted(set(sys.modules) - state["start"])
reporting.start_warm_up = start
demo.write_all = write
cli._early_report_worker = lambda argv: None  # the thread (no report worker: `fit`'s path)
cli.main(["demo", "-q", "-o", sys.argv[1]])
print(json.dumps(state["main"]))
"""

_WARM_MODULES = r"""
import json, sys
from neurospca import cli, datasets, reporting
from neurospca.reporting import _warmup
before = set(sys.modules)
_warmup._warm_up(True, False)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_demo_imports_nothing_the_warm_up_imports_while_it_runs(tmp_path):
    # two threads importing each other's modules could deadlock; the demo's main
    # thread meets the warm-up only in standard-library modules, which import no
    # third-party package (so no import cycle can join the two threads)
    pytest.importorskip("nilearn")
    pytest.importorskip("matplotlib")
    main = set(_fresh(_DEMO_MODULES.replace("sys.argv[1]", repr(str(tmp_path / "demo")))))
    warm = set(_fresh(_WARM_MODULES))
    assert "matplotlib.pyplot" in warm and "jinja2" in warm
    assert any(m.startswith("neurospca._kernels") for m in main)  # the fit ran
    shared = main & warm
    assert all(m.split(".")[0] in sys.stdlib_module_names for m in shared), shared
