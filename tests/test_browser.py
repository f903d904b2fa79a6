"""Headless Chromium opens the demo report, a volume and a surface report.

Checks: the screenshots are not blank, the console shows no error, no request
leaves the file (every request is the file itself or a data: URI), every
embedded image decodes, a title holding ``<script>`` is shown as text, and the
paper-facing parts are laid out: a caption with the peak's coordinates and a
cluster table under every component, the methods paragraph.

Needs Chromium (``apt-get install -y chromium``; ``.ci/run`` installs it) and
the ``playwright`` Python package (the ``test`` extra); skipped otherwise.
"""

import os
import re
import shutil

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (apt-get install -y chromium; .ci/run installs it)",
)

EVIL = "<script>alert('pwned')</script>"


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    from neurospca.cli import main

    out = tmp_path_factory.mktemp("demo") / "neurospca_demo"
    assert main(["demo", "--output", str(out), "--n-components", "2", "-q"]) == 0
    return out / "report.html"


@pytest.fixture(scope="module")
def surface_report(tmp_path_factory):
    """A surface report on fsaverage5 (inflated views, pyvista when it renders)."""
    from nilearn.datasets import load_fsaverage, load_fsaverage_data

    from neurospca import SPCATV, tv_from_hemispheres
    from neurospca.reporting import make_report, save_report, surface_background

    fs = load_fsaverage("fsaverage5")
    thick = load_fsaverage_data(mesh="fsaverage5", data_type="thickness")
    rng = np.random.default_rng(0)
    meshes, maps = {}, []
    for hemi in ("left", "right"):
        pial = fs["pial"].parts[hemi]
        infl = fs["inflated"].parts[hemi]
        meshes[hemi] = (infl.coordinates, infl.faces)
        meshes[f"bg_{hemi}"] = surface_background(pial.coordinates, pial.faces)
        c = pial.coordinates
        blob = np.exp(-((c - c[500]) ** 2).sum(1) / (2 * 15.0**2))
        base = np.asarray(thick.data.parts[hemi], dtype=np.float64)
        maps.append(
            base + rng.standard_normal((10, 1)) * blob + 0.2 * rng.standard_normal((10, c.shape[0]))
        )
    op, hemis = tv_from_hemispheres(fs["pial"].parts["left"], fs["pial"].parts["right"])
    X = hemis.transform(maps[0], maps[1])
    model = SPCATV(2, alpha=0.3, l1_ratio=0.05, tv_ratio=0.1, operator=op, tol=1e-2).fit(X)
    pial = tuple(fs["pial"].parts[h].coordinates for h in ("left", "right"))
    atlas = tuple((c[:, 1] > -20).astype(np.int32) for c in pial)
    html = make_report(
        model,
        hemis,
        meshes=meshes,
        title=f"Surface {EVIL}",
        data_description={EVIL: "fsaverage5 thickness + blobs"},
        surface_coords=pial,
        atlas=atlas,
        atlas_labels={0: "posterior", 1: f"anterior {EVIL}"},
        command=f"neurospca fit --title '{EVIL}'",
    )
    path = tmp_path_factory.mktemp("surface") / "report.html"
    save_report(html, path)
    return path


@pytest.fixture(scope="module")
def volume_report(tmp_path_factory):
    """A volume report in the MNI mask (4 mm), two planted blobs, default renderers."""
    from nilearn.datasets import load_mni152_brain_mask

    from neurospca import SPCATV, VolumeMasker
    from neurospca.reporting import make_report, save_report

    masker = VolumeMasker(load_mni152_brain_mask(resolution=4, threshold=0.48))
    aff = masker.mask_img.affine
    xyz = np.argwhere(masker.mask) @ aff[:3, :3].T + aff[:3, 3]
    blobs = [
        np.exp(-((xyz - c) ** 2).sum(1) / (2 * 8.0**2)) for c in ([-38, -22, 56], [30, -70, 4])
    ]
    rng = np.random.default_rng(3)
    X = (rng.standard_normal((30, 2)) * [3, 2]) @ np.array(blobs)
    X += 0.3 * rng.standard_normal(X.shape)
    model = SPCATV(
        2, alpha_rel=0.5, l1_ratio=0.1, tv_ratio=0.2, operator=masker.operator(), tol=1e-3
    ).fit(X)
    html = make_report(
        model,
        masker,
        title="Volume report",
        command="neurospca fit maps/*.nii.gz --mask mni_4mm.nii.gz",
    )
    path = tmp_path_factory.mktemp("volume") / "report.html"
    save_report(html, path)
    return path


def _paper_parts(browser, path):
    """Captions, cluster tables and the methods paragraph as the browser lays them out."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto("file://" + os.path.abspath(path))
    page.wait_for_load_state("load")
    parts = page.evaluate("""() => ({
        captions: Array.from(document.querySelectorAll('figure.component figcaption'))
                       .map(e => e.innerText),
        tables: Array.from(document.querySelectorAll('figure.component'))
                     .map(f => f.querySelectorAll('table.clusters tr').length),
        tableWidths: Array.from(document.querySelectorAll('table.clusters'))
                          .map(t => t.getBoundingClientRect().width),
        methods: document.querySelector('#methods p.methods').innerText,
        command: (document.querySelector('#methods pre') || {innerText: ''}).innerText,
        visible: Array.from(document.querySelectorAll('figure.component img'))
                      .map(i => i.getBoundingClientRect().width > 300),
    })""")
    page.close()
    return parts


def _open(browser, path, shot):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    console, requests, dialogs, failures = [], [], [], []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failures.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    url = "file://" + os.path.abspath(path)
    page.goto(url)
    page.wait_for_load_state("load")
    images_ok = page.evaluate(
        "Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)"
    )
    title, h1 = page.title(), page.text_content("h1")
    page.screenshot(path=str(shot), full_page=True)
    page.close()
    return {
        "console": console,
        "requests": requests,
        "dialogs": dialogs,
        "failures": failures,
        "images_ok": images_ok,
        "title": title,
        "h1": h1,
        "url": url,
    }


def _not_blank(png_path):
    from PIL import Image

    with Image.open(png_path) as im:
        arr = np.asarray(im.convert("RGB"), dtype=np.float64)
    assert arr.shape[0] > 1000  # a long page: all sections laid out
    assert arr.std() > 20, "screenshot is blank"
    # the figures are there: many distinct colours, not just text on white
    assert len(np.unique(arr.reshape(-1, 3)[::7], axis=0)) > 500


def _check(result):
    errors = [c for c in result["console"] if c[0] in ("error", "pageerror", "warning")]
    # Chromium's own note on software WebGL (the viewer's surfaces), not the page's
    errors = [c for c in errors if "GPU stall due to ReadPixels" not in c[1]]
    assert not errors, errors
    leaving = [u for u in result["requests"] if u != result["url"] and not u.startswith("data:")]
    assert not leaving, leaving
    assert not result["failures"]
    assert result["images_ok"] and all(result["images_ok"])
    assert not result["dialogs"]


def test_demo_report_in_chromium(browser, demo_report, tmp_path):
    result = _open(browser, demo_report, tmp_path / "demo.png")
    _check(result)
    assert len(result["images_ok"]) == 2 + 3  # two components, variance, scores, convergence
    assert result["title"].startswith("neurospca demo")
    _not_blank(tmp_path / "demo.png")
    # the command line's report records the command that produced it
    parts = _paper_parts(browser, demo_report)
    assert parts["command"].startswith("neurospca demo --output ")
    assert len(parts["captions"]) == 2 and all(" mm " in c for c in parts["captions"])


def test_surface_report_in_chromium(browser, surface_report, tmp_path):
    result = _open(browser, surface_report, tmp_path / "surface.png")
    _check(result)
    assert len(result["images_ok"]) == 2 + 3
    # the <script> in the title is text: shown verbatim, never run
    assert result["title"] == f"Surface {EVIL}"
    assert result["h1"] == f"Surface {EVIL}"
    _not_blank(tmp_path / "surface.png")


def test_volume_report_in_chromium(browser, volume_report, tmp_path):
    result = _open(browser, volume_report, tmp_path / "volume.png")
    _check(result)
    assert len(result["images_ok"]) == 2 + 3
    _not_blank(tmp_path / "volume.png")
    parts = _paper_parts(browser, volume_report)
    assert len(parts["captions"]) == 2 and all(parts["visible"])
    for caption in parts["captions"]:
        assert re.search(
            r"Peak loading [+-][0-9.e-]+ at \(-?\d+, -?\d+, -?\d+\) mm "
            r"\(voxel \d+, \d+, \d+\)",
            caption,
        ), caption
    assert all(rows >= 2 for rows in parts["tables"])  # header + at least one cluster
    assert all(0 < w <= 1200 for w in parts["tableWidths"])
    assert "de Pierrefeu" in parts["methods"] and "tol = 0.001" in parts["methods"]
    assert parts["command"] == "neurospca fit maps/*.nii.gz --mask mni_4mm.nii.gz"


def test_surface_report_paper_parts(browser, surface_report):
    parts = _paper_parts(browser, surface_report)
    assert len(parts["captions"]) == 2 and all(parts["visible"])
    for caption in parts["captions"]:
        assert re.search(
            r"at (left|right) vertex \d+ \(-?[0-9.]+, -?[0-9.]+, -?[0-9.]+\), "
            r"atlas label: (posterior|anterior)",
            caption,
        ), caption
    assert all(rows >= 2 for rows in parts["tables"])
    assert parts["command"] == f"neurospca fit --title '{EVIL}'"  # text, never run


def test_injected_resource_would_be_caught(browser, tmp_path):
    """The checks bite: a page with a remote image and a console error fails them."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<html><body><h1>x</h1><img src='https://example.invalid/a.png'>"
        "<script>console.error('boom')</script></body></html>"
    )
    result = _open(browser, bad, tmp_path / "bad.png")
    assert any(u.startswith("https://") for u in result["requests"])
    with pytest.raises(AssertionError):
        _check(result)
