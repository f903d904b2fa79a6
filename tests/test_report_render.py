"""The report's figures: one-draw encoder, reused canvases, content-hash cache, workers.

Issue 22, item 2. What is checked is behaviour, not speed: a reused canvas draws
the same pixels as a fresh one, a cached redraw draws nothing and gives the same
page, workers give the same figures as this process.
"""

import base64
import io
import re

import matplotlib

matplotlib.use("Agg")

import nibabel as nib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from neurospca import SPCATV, icosphere, tv_from_hemispheres  # noqa: E402
from neurospca.reporting import FigureCache, _canvases, _png, make_report, plotting  # noqa: E402
from neurospca.reporting.images import loadings_to_nifti  # noqa: E402

from .test_reporting import fit_volume_model  # noqa: E402


@pytest.fixture(scope="module")
def volume_model():
    return fit_volume_model()


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def _uri_pixels(uri):
    return _pixels(base64.b64decode(uri.split(",", 1)[1]))


def _images(html):
    return re.findall(r'<img src="(data:image/png;base64,[^"]+)" alt="([^"]+)"', html)


# --------------------------------------------------------------------------
# the encoder
# --------------------------------------------------------------------------


def test_encode_png_crops_to_the_ink_with_the_pad():
    plt = plotting._pyplot()
    fig = plt.figure(figsize=(4, 3))
    ax = fig.add_axes([0.4, 0.4, 0.2, 0.2])
    ax.set_axis_off()
    ax.add_patch(matplotlib.patches.Rectangle((0, 0), 1, 1, color="k"))
    rgb = _pixels(_png.encode_png(fig, dpi=100))
    pad = 10  # 0.1 inch at 100 dpi
    ink = np.argwhere(np.any(rgb < 255, axis=-1))
    # the black square (0.2 x 0.3 of a 4 x 3 inch figure: 80 x 60 px) plus the pad
    assert abs(rgb.shape[0] - (60 + 2 * pad)) <= 2 and abs(rgb.shape[1] - (80 + 2 * pad)) <= 2
    assert ink.min(axis=0).tolist() == [pad, pad]
    assert (np.asarray(rgb.shape[:2]) - 1 - ink.max(axis=0)).tolist() == [pad, pad]
    assert not plt.fignum_exists(fig.number)  # closed


def test_encode_png_of_a_blank_figure_is_the_whole_canvas():
    plt = plotting._pyplot()
    fig = plt.figure(figsize=(2, 1))
    rgb = _pixels(_png.encode_png(fig, dpi=50))
    assert rgb.shape == (50, 100, 3) and np.all(rgb == 255)


@pytest.mark.parametrize("pad", [0, 7])
def test_crop_of_an_agg_buffer_is_the_crop_of_its_colours(pad):
    # RGBA (one 32-bit word per pixel) and RGB crop the same box; alpha is not ink
    rng = np.random.default_rng(3181)
    rgba = np.full((60, 90, 4), 255, dtype=np.uint8)
    rgba[20:30, 30:41, :3] = rng.integers(0, 200, (10, 11, 3))
    rgba[5, 3, 3] = 0  # only the alpha differs: not ink
    rgba[50, 70] = (255, 255, 254, 255)  # one colour channel differs: ink
    box = _png._crop(rgba, pad)
    assert np.array_equal(box[..., :3], _png._crop(np.ascontiguousarray(rgba[..., :3]), pad))
    assert box.shape[:2] == (50 - 20 + 1 + 2 * pad, 70 - 30 + 1 + 2 * pad)


# --------------------------------------------------------------------------
# reused canvases
# --------------------------------------------------------------------------


def test_volume_canvas_reused_draws_what_a_fresh_one_draws(volume_model):
    model, masker, bg = volume_model
    imgs = [loadings_to_nifti(c, masker) for c in model.components_]
    canvas = _canvases.VolumeCanvas(plotting.CMAP)
    n_axes = len(canvas.figure.axes)
    try:
        for img in imgs:
            plotting.plot_volume_component(img, "title", bg_img=bg, canvas=canvas)
            reused = _pixels(_png.encode_png(canvas.figure, close=False))
            canvas.clear()
            assert len(canvas.figure.axes) == n_axes
            assert all(t.get_text() != "title" for t in canvas.figure.texts)
            fresh = _pixels(
                plotting.figure_to_png(plotting.plot_volume_component(img, "title", bg_img=bg))
            )
            assert reused.shape == fresh.shape
            assert np.array_equal(reused, fresh)
    finally:
        canvas.close()
    # the two components differ, so the comparison above can fail
    assert not np.array_equal(*(np.asarray(i.dataobj) for i in imgs))


def test_default_background_is_the_template_unresampled():
    from nilearn.datasets import load_mni152_template

    template = load_mni152_template(resolution=1)
    bg = _canvases.default_background()
    assert bg.shape == template.shape and np.allclose(bg.affine, template.affine)
    data = template.get_fdata()
    out = data <= np.finfo(np.float32).eps
    assert out.any() and np.all(bg.get_fdata()[out] == np.float32(data.max()))
    assert np.allclose(bg.get_fdata()[~out], data[~out], rtol=1e-6)


# --------------------------------------------------------------------------
# the cache and the workers
# --------------------------------------------------------------------------


def test_digest_tracks_content_dtype_and_shape():
    a = np.arange(6.0)
    assert _png.digest(a) == _png.digest(a.copy())
    assert _png.digest(a) != _png.digest(a.astype(np.float32))
    assert _png.digest(a) != _png.digest(a.reshape(2, 3))
    b = a.copy()
    b[3] += 1e-12
    assert _png.digest(a) != _png.digest(b)
    assert _png.digest({"x": 1, "y": [a]}) == _png.digest({"y": [a], "x": 1})


def test_cached_redraw_draws_nothing_and_gives_the_same_figures(volume_model, monkeypatch):
    model, masker, bg = volume_model
    cache = FigureCache()
    first = make_report(model, masker, bg_img=bg, figure_cache=cache)
    assert cache.misses > 0 and cache.hits == 0
    n_cached = len(cache)

    def forbidden(*args, **kwargs):
        raise AssertionError("an unchanged figure was redrawn")

    monkeypatch.setattr(plotting, "plot_volume_component", forbidden)
    monkeypatch.setattr(plotting, "plot_convergence", forbidden)
    monkeypatch.setattr(plotting, "plot_explained_variance", forbidden)
    second = make_report(model, masker, bg_img=bg, figure_cache=cache)
    assert _images(second) == _images(first) and len(cache) == n_cached
    # another background is another figure: drawn again
    with pytest.raises(AssertionError, match="redrawn"):
        make_report(
            model,
            masker,
            bg_img=nib.Nifti1Image(2 * np.asarray(bg.dataobj), bg.affine),
            figure_cache=cache,
        )


def test_one_changed_component_is_the_only_one_redrawn(volume_model):
    model, masker, bg = volume_model
    cache = FigureCache()
    make_report(model, masker, bg_img=bg, figure_cache=cache)
    misses = cache.misses
    changed = SPCATV(2, alpha=0.2, l1_ratio=0.1, tv_ratio=0.3, operator=masker.operator(), tol=1e-2)
    changed.__dict__.update(model.__dict__)
    changed.components_ = model.components_.copy()
    changed.components_[1] *= -1
    html = make_report(changed, masker, bg_img=bg, figure_cache=cache)
    assert cache.misses - misses == 1  # component 2 only (the summaries are unchanged)
    assert len(_images(html)) == 5


def test_workers_draw_the_same_figures(volume_model):
    model, masker, bg = volume_model
    serial = make_report(model, masker, bg_img=bg, n_jobs=1)
    parallel = make_report(model, masker, bg_img=bg, n_jobs=2)
    a, b = _images(serial), _images(parallel)
    assert [alt for _, alt in a] == [alt for _, alt in b]
    for (ua, alt), (ub, _) in zip(a, b, strict=True):
        if alt.startswith("Component"):
            assert np.array_equal(_uri_pixels(ua), _uri_pixels(ub)), alt
    with pytest.raises(ValueError, match="n_jobs"):
        make_report(model, masker, bg_img=bg, n_jobs=0)


def test_surface_canvas_reused_matches_a_fresh_render():
    if not plotting.pyvista_available():
        pytest.skip("pyvista cannot render off-screen here")
    coords, faces = icosphere(2)
    keep = np.ones(coords.shape[0], dtype=bool)
    _, hemis = tv_from_hemispheres((coords, faces), (coords, faces), keep, keep)
    meshes = {"left": (coords, faces), "right": (coords + [3, 0, 0], faces)}
    maps = [
        {"left": np.exp(-((coords - c) ** 2).sum(1) / 0.1), "right": np.zeros(len(coords))}
        for c in ([1, 0, 0], [0, 0, 1])
    ]
    canvas = _canvases.SurfaceCanvas(meshes)
    try:
        for m in maps:
            reused = plotting.figure_to_png(
                plotting.plot_surface_component(m, meshes, engine="pyvista", canvas=canvas)
            )
            fresh = plotting.figure_to_png(
                plotting.plot_surface_component(m, meshes, engine="pyvista")
            )
            assert np.array_equal(_pixels(reused), _pixels(fresh))
    finally:
        canvas.close()


def test_pyvista_probe_started_ahead_gives_the_same_answer(monkeypatch):
    monkeypatch.setattr(plotting, "_PYVISTA_OK", None)
    monkeypatch.setattr(plotting, "_PROBE_RUN", None)
    plotting.start_pyvista_probe()
    ahead = plotting.pyvista_available()
    assert plotting._PROBE_RUN is None  # collected
    monkeypatch.setattr(plotting, "_PYVISTA_OK", None)
    assert plotting.pyvista_available() is ahead


def test_space_hash_tells_apart_what_changes_the_drawing(volume_model):
    _, masker, _ = volume_model
    coords, faces = icosphere(2)
    full = np.ones(coords.shape[0], dtype=bool)
    first, last = full.copy(), full.copy()
    first[:5], last[-5:] = False, False
    # the same number of columns, mapped to other vertices: another figure
    _, h1 = tv_from_hemispheres((coords, faces), (coords, faces), first, full)
    _, h2 = tv_from_hemispheres((coords, faces), (coords, faces), last, full)
    assert h1.n_features == h2.n_features
    meshes = {"left": (coords, faces), "right": (coords, faces)}
    key = [_png.digest(_canvases._space_parts(h, meshes)) for h in (h1, h2)]
    assert key[0] != key[1]
    moved = {"left": (coords * 1.01, faces), "right": (coords, faces)}
    assert _png.digest(_canvases._space_parts(h1, moved)) != key[0]
    assert _png.digest(_canvases._space_parts(masker, None)) not in key
