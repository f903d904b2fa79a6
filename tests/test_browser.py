"""Headless Chromium opens the demo report and a surface report.

Checks: the screenshots are not blank, the console shows no error, no request
leaves the file (every request is the file itself or a data: URI), every
embedded image decodes, and a title holding ``<script>`` is shown as text.

Needs Chromium (``apt-get install -y chromium``; ``.ci/run`` installs it) and
the ``playwright`` Python package (the ``test`` extra); skipped otherwise.
"""

import os
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
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api",
        reason="the playwright package is missing (pip install -e '.[test]')")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM,
                               args=["--no-sandbox", "--disable-gpu",
                                     "--disable-background-networking",
                                     "--disable-component-update", "--disable-sync",
                                     "--no-first-run", "--disable-quic"])
        yield b
        b.close()


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
        maps.append(base + rng.standard_normal((10, 1)) * blob
                    + 0.2 * rng.standard_normal((10, c.shape[0])))
    op, hemis = tv_from_hemispheres(fs["pial"].parts["left"], fs["pial"].parts["right"])
    X = hemis.transform(maps[0], maps[1])
    model = SPCATV(2, alpha=0.3, l1_ratio=0.05, tv_ratio=0.1, operator=op, tol=1e-2).fit(X)
    html = make_report(model, hemis, meshes=meshes, title=f"Surface {EVIL}",
                       data_description={EVIL: "fsaverage5 thickness + blobs"})
    path = tmp_path_factory.mktemp("surface") / "report.html"
    save_report(html, path)
    return path


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
        "Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)")
    title, h1 = page.title(), page.text_content("h1")
    page.screenshot(path=str(shot), full_page=True)
    page.close()
    return {"console": console, "requests": requests, "dialogs": dialogs,
            "failures": failures, "images_ok": images_ok, "title": title, "h1": h1,
            "url": url}


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
    assert not errors, errors
    leaving = [u for u in result["requests"]
               if u != result["url"] and not u.startswith("data:")]
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


def test_surface_report_in_chromium(browser, surface_report, tmp_path):
    result = _open(browser, surface_report, tmp_path / "surface.png")
    _check(result)
    assert len(result["images_ok"]) == 2 + 3
    # the <script> in the title is text: shown verbatim, never run
    assert result["title"] == f"Surface {EVIL}"
    assert result["h1"] == f"Surface {EVIL}"
    _not_blank(tmp_path / "surface.png")


def test_injected_resource_would_be_caught(browser, tmp_path):
    """The checks bite: a page with a remote image and a console error fails them."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><h1>x</h1><img src='https://example.invalid/a.png'>"
                   "<script>console.error('boom')</script></body></html>")
    result = _open(browser, bad, tmp_path / "bad.png")
    assert any(u.startswith("https://") for u in result["requests"])
    with pytest.raises(AssertionError):
        _check(result)
