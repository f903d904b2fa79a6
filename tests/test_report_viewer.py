"""The report's interactive viewer (issue 21, item 5).

Without a browser: the shipped script is the pinned one, the page's
Content-Security-Policy allows exactly its inline script by hash, and the
embedded data decode (in Python, as the page decodes them) to the loadings
within the 8-bit quantisation, at the right voxels and world coordinates.

In headless Chromium (real, no mocks): the viewer renders a volume model and a
two-hemisphere surface model (WebGL, and the 2-D canvas without WebGL),
clicks, wheel, drags and the component selector change what is shown, the
console stays clean, no request leaves the file and no CSP violation is
reported; a tampered script is blocked by the CSP.
"""

import base64
import hashlib
import html as htmllib
import io
import json
import os
import re
import zlib

import nibabel as nib
import numpy as np
import pytest

from neurospca import SPCATV, VolumeMasker, tv_from_hemispheres
from neurospca.reporting import _viewer, make_report, save_report
from neurospca.reporting._tables import certified_view

CHROMIUM_GL_NOTE = "GPU stall due to ReadPixels"  # Chromium's note on software GL, not the page's


# --------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------


def _blob(xyz, centre, width):
    return np.exp(-((xyz - np.asarray(centre)) ** 2).sum(1) / (2 * width**2))


def _volume_model(mask_img):
    """Two planted blobs (left motor, right occipital) in 30 noisy maps."""
    masker = VolumeMasker(mask_img)
    aff = masker.mask_img.affine
    xyz = np.argwhere(masker.mask) @ aff[:3, :3].T + aff[:3, 3]
    rng = np.random.default_rng(3)
    X = 0.3 * rng.standard_normal((30, masker.n_features))
    for centre, sd in (([-38, -22, 56], 3.0), ([30, -70, 4], 2.0)):
        X += np.outer(sd * rng.standard_normal(30), _blob(xyz, centre, 8.0))
    op = masker.operator()
    model = SPCATV(2, alpha_rel=0.5, l1_ratio=0.1, tv_ratio=0.2, operator=op, tol=1e-3).fit(X)
    return model, masker


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    from nilearn.datasets import load_mni152_brain_mask

    model, masker = _volume_model(load_mni152_brain_mask(resolution=4, threshold=0.48))
    html = make_report(model, masker, title="Volume viewer")
    path = tmp_path_factory.mktemp("viewer") / "volume.html"
    save_report(html, path)
    return model, masker, html, path


@pytest.fixture(scope="module")
def surface(tmp_path_factory):
    """fsaverage5, inflated meshes drawn, one blob per hemisphere."""
    from nilearn.datasets import load_fsaverage

    from neurospca.reporting import surface_background

    fs = load_fsaverage("fsaverage5")
    rng = np.random.default_rng(0)
    meshes, maps = {}, []
    for hemi, vertex in (("left", 500), ("right", 3000)):
        pial = fs["pial"].parts[hemi]
        infl = fs["inflated"].parts[hemi]
        meshes[hemi] = (infl.coordinates, infl.faces)
        meshes[f"bg_{hemi}"] = surface_background(pial.coordinates, pial.faces)
        c = pial.coordinates
        blob = _blob(c, c[vertex], 15.0)
        maps.append(rng.standard_normal((12, 1)) * blob + 0.2 * rng.standard_normal((12, len(c))))
    op, hemis = tv_from_hemispheres(fs["pial"].parts["left"], fs["pial"].parts["right"])
    X = hemis.transform(maps[0], maps[1])
    model = SPCATV(2, alpha=0.3, l1_ratio=0.05, tv_ratio=0.1, operator=op, tol=1e-2).fit(X)
    pial = tuple(fs["pial"].parts[h].coordinates for h in ("left", "right"))
    html = make_report(
        model,
        hemis,
        meshes=meshes,
        surface_coords=pial,
        title="Surface viewer",
        engine="matplotlib",
    )
    path = tmp_path_factory.mktemp("viewer") / "surface.html"
    save_report(html, path)
    return model, hemis, meshes, html, path, pial


# --------------------------------------------------------------------------
# the script, its pin and the page's policy
# --------------------------------------------------------------------------


def test_shipped_viewer_is_the_pinned_file_with_its_licence():
    from importlib import resources

    assets = resources.files("neurospca.reporting").joinpath("assets")
    text = assets.joinpath("viewer.js").read_bytes()
    assert hashlib.sha256(text).hexdigest() == _viewer.VIEWER_SHA256
    assert f"viewer {_viewer.VIEWER_VERSION}" in text.decode().splitlines()[0]
    assert "BSD-3-Clause" in text.decode().splitlines()[0]
    licence = assets.joinpath("LICENSE").read_text()
    assert licence.startswith("BSD 3-Clause License") and "neurospca developers" in licence
    assert _viewer.viewer_script().encode() == text


def test_an_edited_viewer_is_refused(monkeypatch):
    monkeypatch.setattr(_viewer, "VIEWER_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="pinned"):
        _viewer.viewer_script()


def _policy(html):
    """The policy as the browser reads it (attribute entities decoded)."""
    (csp,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    csp = htmllib.unescape(csp)
    return dict((part.split()[0], part.split()[1:]) for part in (p.strip() for p in csp.split(";")))


def test_csp_allows_exactly_the_inline_script_by_hash(volume):
    html = volume[2]
    policy = _policy(html)
    assert policy["default-src"] == ["'none'"] and policy["img-src"] == ["data:"]
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1 and scripts[0] == _viewer.viewer_script()
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert policy["script-src"] == [f"'sha256-{digest}'"]
    # the only other script element is a data block, never run
    blocks = re.findall(r"<script ([^>]*)>", html)
    assert blocks == ['type="application/json" class="nsv-data"']


def test_no_viewer_no_script(volume):
    model, masker = volume[:2]
    html = make_report(model, masker, interactive=False)
    assert "<script" not in html and "script-src" not in _policy(html)
    assert 'id="viewer"' not in html and 'id="viewer"' in volume[2]
    with pytest.raises(TypeError, match="interactive"):
        make_report(model, masker, interactive="yes")


def test_report_command_no_interactive(volume, tmp_path):
    from neurospca import save_model
    from neurospca.cli import main

    model, masker = volume[:2]
    save_model(model, tmp_path / "model.npz", space=masker)
    out = tmp_path / "plain.html"
    assert (
        main(["report", str(tmp_path / "model.npz"), "-o", str(out), "--no-interactive", "-q"]) == 0
    )
    assert "<script" not in out.read_text()
    assert main(["report", str(tmp_path / "model.npz"), "-o", str(out), "-q"]) == 0
    assert 'class="nsv"' in out.read_text()


# --------------------------------------------------------------------------
# the embedded data, decoded as the page decodes them
# --------------------------------------------------------------------------


def _unpack(text, dtype):
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype)


def _ints(text, size, cols, signed=False):
    """The inverse of pack_ints: byte planes, then cumulative sums modulo 2**(8 size)."""
    raw = np.frombuffer(zlib.decompress(base64.b64decode(text)), np.uint8)
    planes = raw.reshape(size, -1).astype(np.int64)
    mod = 1 << (8 * size)
    deltas = sum(planes[b] << (8 * b) for b in range(size)).reshape(cols, -1)
    values = np.cumsum(deltas, axis=1) % mod
    return (np.where(values >= mod // 2, values - mod, values) if signed else values).T


@pytest.mark.parametrize("size", [2, 4])
def test_pack_ints_round_trip(size):
    rng = np.random.default_rng(size)
    top = 1 << (8 * size - 1)
    values = rng.integers(-top, top, size=(500, 3))
    assert np.array_equal(_ints(_viewer.pack_ints(values, size), size, 3, signed=True), values)
    faces = np.sort(rng.integers(0, 2 * top, size=(400, 3)), axis=0)  # unsigned, ordered
    packed = _viewer.pack_ints(faces, size)
    assert np.array_equal(_ints(packed, size, 3), faces)
    assert len(packed) < len(_viewer._pack(faces.astype(f"<u{size}")))  # smaller


def _data(html):
    (text,) = re.findall(r'<script type="application/json" class="nsv-data">(.*?)</script>', html)
    return json.loads(text)


def _within_a_step(shown, values, step):
    """Half a step off, a whole one for values under half a step (shown as +-1, not 0)."""
    err = np.abs(shown - values)
    assert err.max(initial=0.0) <= step + 1e-12
    assert err[np.abs(values) >= step / 2].max(initial=0.0) <= step / 2 + 1e-12


def test_quantise_keeps_sign_support_and_half_a_step():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(1000) * (rng.random(1000) < 0.3)
    v[5] = 1e-9  # tiny but non-zero: shown
    scale = np.abs(v).max()
    q = _viewer.quantise(v, scale).astype(float)
    assert np.array_equal(q != 0, v != 0) and np.array_equal(np.sign(q), np.sign(v))
    big = np.abs(v) > scale / 127
    assert np.abs(q * scale / 127 - v)[big].max() <= 0.5 * scale / 127 + 1e-15
    assert np.abs(q).max() == 127


@pytest.mark.parametrize("flip", [False, True])
def test_volume_data_decode_to_the_loadings_at_their_coordinates(flip):
    """Reoriented to RAS+ and cropped, each voxel's loading and world position kept
    (a mask stored LAS, with x flipped, too)."""
    from nilearn.datasets import load_mni152_brain_mask

    mask = load_mni152_brain_mask(resolution=4, threshold=0.48)
    if flip:
        flipper = np.diag([-1.0, 1, 1, 1])
        flipper[0, 3] = mask.shape[0] - 1
        mask = nib.Nifti1Image(np.asarray(mask.dataobj)[::-1], mask.affine @ flipper)
    masker = VolumeMasker(mask)
    rng = np.random.default_rng(1)
    comps = rng.standard_normal((2, masker.n_features)) * (rng.random((2, masker.n_features)) < 0.2)
    d = _viewer.volume_data(masker, comps)
    shape, affine = d["shape"], np.asarray(d["affine"])
    assert np.all(np.diag(affine)[:3] > 0)  # RAS+ voxel order
    inside = np.unpackbits(_unpack(d["mask"], np.uint8))[: np.prod(shape)].reshape(shape) > 0
    assert inside.sum() == masker.n_features
    world = np.argwhere(inside) @ affine[:3, :3].T + affine[:3, 3]
    src = masker.mask_img.affine
    original = np.argwhere(masker.mask) @ src[:3, :3].T + src[:3, 3]
    keys = [tuple(p) for p in np.round(world, 3)]
    assert sorted(keys) == sorted(tuple(p) for p in np.round(original, 3))  # the same voxels
    for k, c in enumerate(d["comps"]):
        q = _unpack(c["data"], np.int8).astype(float) * c["scale"] / 127
        got = dict(zip(keys, q, strict=True))
        shown = np.array([got[tuple(p)] for p in np.round(original, 3)])
        assert np.array_equal(shown != 0, comps[k] != 0)
        _within_a_step(shown, comps[k], c["scale"] / 127)
        peak = affine[:3, :3] @ c["peak"] + affine[:3, 3]
        assert np.allclose(peak, original[np.argmax(np.abs(comps[k]))])
    bg = _unpack(d["bg"], np.uint8).reshape(shape).astype(float)
    assert bg[inside].std() > 10  # the template's anatomy, not a flat image
    # where nilearn's linear resampling puts the template on this grid
    from nilearn.datasets import load_mni152_template
    from nilearn.image import resample_to_img

    grid = nib.Nifti1Image(np.zeros(shape, dtype=np.float32), affine)
    ref = resample_to_img(load_mni152_template(resolution=1), grid, interpolation="linear")
    ref = _viewer._grey(ref.get_fdata()).astype(float)
    assert np.corrcoef(bg[inside], ref[inside])[0, 1] > 0.99
    assert np.median(np.abs(bg - ref)[inside]) <= 2


def test_surface_data_decode_to_meshes_and_loadings(surface):
    model, hemis, meshes, html, _, pial = surface
    d = _data(html)
    assert d["kind"] == "surface" and [h["name"] for h in d["hemis"]] == ["left", "right"]
    lo, step = np.asarray(d["lo"]), np.asarray(d["step"])
    xs = []
    for h, name in zip(d["hemis"], ("left", "right"), strict=True):
        coords, faces = meshes[name]
        xyz = lo + _ints(h["coords"], 2, 3) * step
        shift = xyz - coords  # moved apart along x only (inflated hemispheres overlap)
        assert np.abs(shift - shift.mean(0)).max() <= step.max() and np.allclose(
            shift.mean(0)[1:], 0, atol=step.max()
        )
        assert np.array_equal(_ints(h["faces"], 2, 3), faces)
        assert np.allclose(h["shift"], shift.mean(0), atol=step.max())
        anat = _ints(h["anat"], h["anat_bytes"], 3, signed=True) / 10
        assert np.abs(anat - pial[0 if name == "left" else 1]).max() <= 0.05 + 1e-9
        xs.append(xyz[:, 0])
    assert xs[0].max() < xs[1].min()  # side by side
    shown_view, _ = certified_view(model, model.components_)  # what the figures show
    assert np.count_nonzero(shown_view) > 100
    maps = hemis.inverse_transform(shown_view)
    for k, c in enumerate(d["comps"]):
        for name, text in zip(("left", "right"), c["data"], strict=True):
            shown = _unpack(text, np.int8).astype(float) * c["scale"] / 127
            want = maps[name][:, k]
            assert np.array_equal(shown != 0, want != 0)
            _within_a_step(shown, want, c["scale"] / 127)


# --------------------------------------------------------------------------
# in Chromium
# --------------------------------------------------------------------------

_WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation',
    e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
"""


def _open(browser, path, *, ready=True):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    log = {"console": [], "requests": []}
    page.on("console", lambda m: log["console"].append((m.type, m.text)))
    page.on("pageerror", lambda e: log["console"].append(("pageerror", str(e))))
    page.on("request", lambda r: log["requests"].append(r.url))
    page.add_init_script(_WATCH)
    url = "file://" + os.path.abspath(path)
    page.goto(url)
    page.wait_for_load_state("load")
    if ready:
        page.wait_for_selector(".nsv[data-ready='1']", timeout=60_000)
        page.locator(".nsv-canvas").scroll_into_view_if_needed()  # mouse events land on it
    log["url"] = url
    return page, log


def _clean(page, log):
    noise = [c for c in log["console"] if c[0] in ("error", "pageerror", "warning")]
    noise = [c for c in noise if CHROMIUM_GL_NOTE not in c[1]]
    assert not noise, noise
    assert all(u == log["url"] for u in log["requests"]), log["requests"]
    assert page.evaluate("window.__violations") == []


def _canvas(page):
    from PIL import Image

    png = page.locator(".nsv-canvas").screenshot()
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    return rgb[2:-2, 2:-2]  # inside the border


def _coloured(rgb):
    """Pixels of the colour map (not grey): loadings drawn."""
    return int((np.ptp(rgb, axis=-1) > 60).sum())


def test_volume_viewer_renders_and_moves_its_cut(browser, volume):
    model, masker, _, path = volume
    page, log = _open(browser, path)
    try:
        first = _canvas(page)
        assert first.std() > 20 and len(np.unique(first.reshape(-1, 3), axis=0)) > 100
        assert _coloured(first) > 200  # the component over the background
        status = page.text_content(".nsv-status")
        d = _data(volume[2])
        peak = d["comps"][0]["peak"]
        xyz = np.asarray(d["affine"])[:3] @ [*peak, 1]
        assert f"x = {xyz[0]:.1f}, y = {xyz[1]:.1f}, z = {xyz[2]:.1f} mm" in status
        assert "voxel " + ", ".join(map(str, peak)) in status
        # a click on the axial panel (right third) moves x and y, not z
        box = page.locator(".nsv-canvas").bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.9, box["y"] + box["height"] * 0.5)
        cut = list(map(int, page.get_attribute(".nsv", "data-cut").split(",")))
        assert cut[2] == peak[2] and cut[:2] != peak[:2]
        assert page.text_content(".nsv-status") != status
        after_click = _canvas(page)
        assert np.abs(after_click - first).sum() > 0
        # the wheel over the sagittal panel (left) moves through x only
        page.mouse.move(box["x"] + box["width"] * 0.15, box["y"] + box["height"] * 0.5)
        page.mouse.wheel(0, -100)
        wheeled = list(map(int, page.get_attribute(".nsv", "data-cut").split(",")))
        assert wheeled == [cut[0] + 1, cut[1], cut[2]]
        # another component: cut at its own peak, other pixels
        page.select_option(".nsv-select", "1")
        assert page.get_attribute(".nsv", "data-cut") == ",".join(map(str, d["comps"][1]["peak"]))
        assert np.abs(_canvas(page) - after_click).sum() > 0
        _clean(page, log)
    finally:
        page.close()


def _halves(rgb):
    """Non-white pixels in the left and right halves of a canvas."""
    ink = np.any(rgb < 235, axis=-1)
    half = rgb.shape[1] // 2
    return int(ink[:, :half].sum()), int(ink[:, half:].sum())


def _pick(page, pial):
    """Click the left hemisphere (dorsal view): the vertex, its pial xyz and loading shown."""
    box = page.locator(".nsv-canvas").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.5)
    hemi, vertex = map(int, page.get_attribute(".nsv", "data-picked").split(","))
    assert hemi == 0
    xyz = ", ".join(f"{c:.1f}" for c in np.rint(pial[0][vertex] * 10).astype(int) / 10)
    status = page.text_content(".nsv-status")
    assert f"left vertex {vertex} at ({xyz}) mm, loading " in status, status
    assert pial[0][vertex][2] > 0  # seen from above: a dorsal vertex


def _surface_checks(page, pial):
    _pick(page, pial)
    first = _canvas(page)
    left, right = _halves(first)
    assert left > 20_000 and right > 20_000  # both hemispheres drawn
    assert _coloured(first) > 200  # the component's colours
    view = page.get_attribute(".nsv", "data-view")
    box = page.locator(".nsv-canvas").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + 120, cy + 40, steps=4)
    page.mouse.up()
    assert page.get_attribute(".nsv", "data-view") == "60,20,1.00" != view
    dragged = _canvas(page)
    assert np.abs(dragged - first).sum() > 0
    page.select_option(".nsv-select", "1")
    assert np.abs(_canvas(page) - dragged).sum() > 0
    page.click("button[data-view='90,-90']")  # left lateral
    page.uncheck("input[data-hemi='1']")
    lateral_left = _canvas(page)
    assert _halves(lateral_left)[0] + _halves(lateral_left)[1] > 20_000
    page.click("button[data-view='0,0']")
    left, right = _halves(_canvas(page))
    assert left > 20_000 and right == 0  # the right hemisphere hidden


@pytest.fixture(scope="module")
def browser_without_webgl(browser):
    """Another Chromium of the same playwright, with WebGL switched off."""
    from .conftest import CHROMIUM

    b = browser.browser_type.launch(
        executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-3d-apis"]
    )
    yield b
    b.close()


@pytest.mark.parametrize("renderer", ["webgl", "2d"])
def test_surface_viewer_draws_both_hemispheres_and_turns(request, surface, renderer):
    """With WebGL, and on the 2-D canvas of a Chromium without WebGL."""
    chromium = request.getfixturevalue(
        "browser" if renderer == "webgl" else "browser_without_webgl"
    )
    page, log = _open(chromium, surface[4])
    try:
        assert page.get_attribute(".nsv", "data-renderer") == renderer
        _surface_checks(page, surface[5])
        _clean(page, log)
    finally:
        page.close()


def test_a_tampered_script_is_blocked_by_the_policy(browser, volume, tmp_path):
    """The hash bites: one changed character and the browser refuses the script."""
    html = volume[2]
    tampered = html.replace("<script>/*! neurospca", "<script>/*! neurospcA", 1)
    assert tampered != html
    path = tmp_path / "tampered.html"
    path.write_text(tampered, encoding="utf-8")
    page, log = _open(browser, path, ready=False)
    try:
        page.wait_for_function("window.__violations.length > 0", timeout=10_000)
        assert any(v.startswith("script-src") for v in page.evaluate("window.__violations"))
        assert page.get_attribute(".nsv", "data-ready") is None
    finally:
        page.close()
