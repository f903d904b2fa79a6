"""A volume report reads its background in a thread while matplotlib is imported
(issue 22 items 2 and 5, round 20: the report's first figure).

:func:`neurospca.reporting._warmup.prepare_volume_report` computes, in a thread,
the arrays the first figure and the viewer computed one after the other: the
template's brain, box and shading (``_slices._background``) and the template
sampled on the viewer's grid (``_viewer._background``), while the calling
thread imports matplotlib. Checked here, each in a fresh interpreter (the
first report of a process is the one that pays):

- the figures and the viewer's data are the same with and without the thread
  (every PNG data URI and the viewer's JSON byte for byte);
- the thread ran in the first report and found everything prepared in the
  second one (it does not run again), and the arrays it cached are equal to
  those computed without it;
- the thread imports no module (two threads importing the same package could
  deadlock): it only runs code whose modules the caller imported;
- it does nothing for a background given as a path, in the report worker
  (``FORK_DRAWING``), or with ``PREPARE_IN_THREAD`` off.

Without the change, ``prepare_volume_report`` does not exist and every test
here fails.
"""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("nilearn")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_MODEL = r"""
import json, re, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from nilearn.datasets import load_mni152_brain_mask
from neurospca import SPCATV, VolumeMasker
from neurospca.reporting import _warmup, make_report

masker = VolumeMasker(load_mni152_brain_mask(resolution=4, threshold=0.48))
aff = masker.mask_img.affine
xyz = np.argwhere(masker.mask) @ aff[:3, :3].T + aff[:3, 3]
rng = np.random.default_rng(3788)
X = 0.3 * rng.standard_normal((24, masker.n_features))
for centre in ([-38, -22, 56], [30, -70, 4]):
    blob = np.exp(-((xyz - np.asarray(centre)) ** 2).sum(1) / 128.0)
    X += np.outer(2 * rng.standard_normal(24), blob)
model = SPCATV(2, alpha_rel=0.5, l1_ratio=0.1, tv_ratio=0.2, operator=masker.operator(),
               tol=1e-3).fit(X)
ran = []
prepare = _warmup.prepare_volume_report
def counted(*a, **k):
    ran.append(prepare(*a, **k))
    return ran[-1]
import neurospca.reporting.report as report_module
report_module.prepare_volume_report = counted
_warmup.PREPARE_IN_THREAD = sys.argv[1] == "on"
html = make_report(model, masker, title="t")
again = make_report(model, masker, title="t")
pngs = re.findall(r"data:image/png;base64,[A-Za-z0-9+/=]+", html)
viewer = re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S)
print(json.dumps({"ran": ran, "pngs": pngs, "n": len(pngs),
                  "viewer": viewer.group(1) if viewer else None,
                  "same_again": pngs == re.findall(r"data:image/png;base64,[A-Za-z0-9+/=]+",
                                                    again)}))
"""


def _run(code, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    env.pop("NEUROSPCA_NO_WARM_UP", None)
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reports():
    return {flag: _run(_MODEL, flag) for flag in ("on", "off")}


def test_figures_and_viewer_identical_with_and_without_the_thread(reports):
    on, off = reports["on"], reports["off"]
    assert on["n"] >= 2  # the component figures and the summary figures
    assert on["pngs"] == off["pngs"]
    assert on["viewer"] is not None and on["viewer"] == off["viewer"]
    assert on["same_again"] and off["same_again"]


def test_thread_runs_in_the_first_report_only(reports):
    assert reports["on"]["ran"] == [True, False]
    assert reports["off"]["ran"] == [False, False]


_CACHED = r"""
import json, sys
import numpy as np
import nibabel, scipy.ndimage
from nilearn.datasets import load_mni152_brain_mask
from neurospca import VolumeMasker
from neurospca.reporting import _render, _slices, _viewer, _warmup

masker = VolumeMasker(load_mni152_brain_mask(resolution=4, threshold=0.48))
ornt, affine, box = _viewer._canonical(masker)
shape = tuple(s.stop - s.start for s in box)
before = set(sys.modules)
_warmup._read_background(None, masker.mask_img.affine, (affine, shape))  # the thread's work
new_modules = sorted(set(sys.modules) - before)
threaded = _slices._background(None)
sampled = _viewer._DEFAULT_BACKGROUNDS[(shape, np.asarray(affine, dtype=np.float64).tobytes())]
# computed again without any cache
_slices._BRAINS.clear(); _viewer._DEFAULT_BACKGROUNDS.clear()
fresh = _slices._Background(_slices.template_image())
again = _viewer._background(None, affine, shape)
grids = _slices.glass_grids(fresh, masker.mask_img.affine)
sils = all(np.array_equal(threaded._silhouettes[k], fresh.silhouette(g))
           for k, g in zip(list(threaded._silhouettes), grids))
arrays = all(np.array_equal(getattr(threaded, a), getattr(fresh, a), equal_nan=True)
             for a in ("data", "brain", "shade", "lo", "hi"))
same = len(threaded._silhouettes) == 3 and sils and arrays and np.array_equal(sampled, again)
skipped = [
    _warmup.prepare_volume_report(masker, "/no/such/file.nii.gz"),  # a path: not read here
]
_render.FORK_DRAWING = True
skipped.append(_warmup.prepare_volume_report(masker, None))
_render.FORK_DRAWING = False
print(json.dumps({"new_modules": new_modules, "same": bool(same), "skipped": skipped,
                  "pyplot": "matplotlib.pyplot" in sys.modules}))
"""


def test_thread_imports_nothing_and_caches_the_same_arrays():
    out = _run(_CACHED)
    assert out["new_modules"] == []
    assert out["same"]
    assert out["skipped"] == [False, False]
    assert not out["pyplot"]  # skipped calls import nothing either
