"""Loadings as images, figures, and the self-contained HTML report."""

import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import nibabel as nib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from neurospca import SPCATV, VolumeMasker, icosphere, load_surf_data, tv_from_hemispheres  # noqa: E402
from neurospca.reporting import (  # noqa: E402
    component_scores,
    library_versions,
    loadings_to_nifti,
    loadings_to_surface,
    make_report,
    plot_convergence,
    plot_surface_component,
    plot_volume_component,
    pyvista_available,
    save_loadings,
    save_report,
    surface_background,
)
from neurospca.reporting import plotting  # noqa: E402


@pytest.fixture(scope="module")
def volume_model():
    rng = np.random.default_rng(0)
    mask = np.zeros((12, 14, 11), dtype=bool)
    mask[2:10, 2:12, 2:9] = True
    affine = np.diag([4.0, 4.0, 4.0, 1.0])
    affine[:3, 3] = [-24, -30, -20]
    masker = VolumeMasker(nib.Nifti1Image(mask.astype(np.uint8), affine))
    ijk = np.argwhere(mask)
    patterns = [np.exp(-((ijk - c) ** 2).sum(1) / 3.0) for c in ([4, 5, 4], [7, 9, 6])]
    X = (rng.standard_normal((30, 2)) * [3, 2]) @ np.array(patterns)
    X += 0.3 * rng.standard_normal(X.shape)
    model = SPCATV(2, alpha=0.2, l1_ratio=0.1, tv_ratio=0.3, operator=masker.operator(),
                   tol=1e-2).fit(X)
    bg = nib.Nifti1Image(mask.astype(np.float32), affine)
    return model, masker, bg


@pytest.fixture(scope="module")
def surface_model():
    coords, faces = icosphere(3)
    n = coords.shape[0]
    keep = coords[:, 2] > -0.8  # a "medial wall" cap left out
    op, hemis = tv_from_hemispheres((coords, faces), (coords, faces), keep, keep)
    rng = np.random.default_rng(1)
    full = np.exp(-((coords - [1, 0, 0]) ** 2).sum(1) / 0.1)
    pattern = np.concatenate([full[keep], np.zeros(keep.sum())])
    pattern2 = np.concatenate([np.zeros(keep.sum()), full[keep]])
    X = (rng.standard_normal((20, 2)) * [3, 2]) @ np.array([pattern, pattern2])
    X += 0.3 * rng.standard_normal(X.shape)
    model = SPCATV(2, alpha=0.2, operator=op, tol=1e-2).fit(X)
    meshes = {"left": (coords, faces), "right": (coords + [3, 0, 0], faces),
              "bg_left": surface_background(coords, faces)}
    return model, hemis, meshes, n


# --------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------


def test_loadings_to_nifti(volume_model, tmp_path):
    model, masker, _ = volume_model
    img = loadings_to_nifti(model.components_, masker)
    assert img.shape == masker.mask.shape + (2,)
    np.testing.assert_array_equal(img.affine, masker.mask_img.affine)
    data = img.get_fdata()
    np.testing.assert_array_equal(data[masker.mask], model.components_.T)
    assert not np.any(data[~masker.mask])
    (path,) = save_loadings(model.components_, masker, tmp_path)
    assert path.endswith("loadings.nii.gz")
    np.testing.assert_array_equal(nib.load(path).get_fdata(), data)


@pytest.mark.parametrize("fmt, ext", [("gii", ".func.gii"), ("mgh", ".mgh")])
def test_loadings_to_surface_files(surface_model, tmp_path, fmt, ext):
    model, hemis, _, n = surface_model
    maps = loadings_to_surface(model.components_, hemis)
    assert maps["left"].shape == (n, 2) and maps["right"].shape == (n, 2)
    paths = save_loadings(model.components_, hemis, tmp_path, surface_format=fmt)
    assert [p.rsplit("/", 1)[1] for p in paths] == [f"loadings_lh{ext}", f"loadings_rh{ext}"]
    for hemi, path in zip(("left", "right"), paths):
        back = np.asarray(load_surf_data(path), dtype=np.float64)
        np.testing.assert_allclose(back, maps[hemi], rtol=1e-6, atol=1e-7)  # float32 files
    left = np.asarray(load_surf_data(paths[0]))
    assert not np.any(left[~np.isin(np.arange(n), hemis.vertices[0])])  # medial wall = 0


def test_save_loadings_errors(volume_model, tmp_path):
    model, masker, _ = volume_model
    with pytest.raises(FileNotFoundError, match="directory"):
        save_loadings(model.components_, masker, tmp_path / "absent")
    with pytest.raises(TypeError, match="space"):
        save_loadings(model.components_, "not a space", tmp_path)
    with pytest.raises(ValueError, match="surface_format"):
        save_loadings(model.components_, masker, tmp_path, surface_format="vtk")


# --------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------


def test_symmetric_scale_hides_exact_zeros_only():
    vmax, thr = plotting._symmetric_scale([0.0, -3.0, 1e-9, 2.0, 0.0])
    assert vmax == 3.0
    assert 0 < thr < 1e-9


def test_surface_background_is_convexity():
    coords, faces = icosphere(3)
    bg = surface_background(coords, faces)
    # a sphere is convex everywhere: the neighbours' mean lies inside, against the normal
    assert bg.shape == (coords.shape[0],)
    assert np.all(bg < 0)
    # a dent (vertex pushed inwards) is concave: positive at that vertex
    dented = coords.copy()
    dented[0] *= 0.9
    assert surface_background(dented, faces)[0] > 0


def test_volume_figure(volume_model):
    model, masker, bg = volume_model
    img = loadings_to_nifti(model.components_[0], masker)
    fig = plot_volume_component(img, "component 1", bg_img=bg)
    png = plotting.figure_to_png(fig)
    assert png.startswith(b"\x89PNG")
    zero = loadings_to_nifti(np.zeros(masker.n_features), masker)
    fig = plot_volume_component(zero, "zero", bg_img=bg)
    assert "identically zero" in fig.texts[0].get_text()


def test_surface_figure_matplotlib(surface_model):
    model, hemis, meshes, _ = surface_model
    maps = loadings_to_surface(model.components_, hemis)
    fig = plot_surface_component({h: maps[h][:, 0] for h in ("left", "right")}, meshes,
                                 "c1", bg_maps={"left": meshes["bg_left"]},
                                 engine="matplotlib")
    titles = [ax.get_title() for ax in fig.axes]
    assert {"left lateral", "left medial", "right lateral", "right medial"} <= set(titles)
    assert plotting.figure_to_png(fig).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="engine"):
        plot_surface_component(maps, meshes, engine="vtk")


def test_pyvista_probe(monkeypatch):
    monkeypatch.setattr(plotting, "_PYVISTA_OK", None)
    monkeypatch.setenv("NEUROSPCA_NO_PYVISTA", "1")
    assert pyvista_available() is False
    monkeypatch.setattr(plotting, "_PYVISTA_OK", None)
    monkeypatch.delenv("NEUROSPCA_NO_PYVISTA")
    assert pyvista_available() in (True, False)  # probed in a subprocess: never crashes


def test_convergence_figure_log_scale():
    fig = plot_convergence([[(0, 1.0), (10, 1e-2), (20, 1e-4)], [], [(0, 2.0), (10, 0.0)]])
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert len(ax.get_lines()) == 2


# --------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------


CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _check_self_contained(html):
    assert CSP in html
    # every src/href is a data URI or an in-page anchor: nothing leaves the file
    for attr, value in re.findall(r'\b(src|href)\s*=\s*"([^"]*)"', html):
        assert value.startswith("data:image/png;base64,") or value.startswith("#"), value
    assert not re.search(r"https?://", html)
    assert "<script" not in html.lower()
    assert "<link" not in html.lower() and "@import" not in html and "url(" not in html


def test_volume_report(volume_model, tmp_path):
    model, masker, bg = volume_model
    html = make_report(model, masker, title="Volume study", bg_img=bg,
                       data_description={"cohort": "20 controls"})
    _check_self_contained(html)
    for section in ("data", "parameters", "summary", "loadings", "variance", "scores",
                    "convergence", "timings", "versions"):
        assert f'id="{section}"' in html
    assert html.count('alt="Component ') == 2
    assert "20 controls" in html and "voxels in the mask" in html
    support = np.count_nonzero(model.components_[0])
    assert f"<td class=\"num\">{support:,}</td>" in html
    assert "certified gap" in html and "scikit-learn" in html
    path = save_report(html, tmp_path / "report.html")
    assert open(path, encoding="utf-8").read() == html


def test_script_in_title_and_labels_is_text(volume_model):
    model, masker, bg = volume_model
    evil = "<script>alert('x')</script>"
    html = make_report(model, masker, title=f"Study {evil}", bg_img=bg,
                       data_description={f"label {evil}": f"value {evil}"})
    assert "<script" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert html.count("&lt;script&gt;") >= 4  # <title>, <h1>, the label and the value
    _check_self_contained(html)


def test_surface_report_and_plain_report(surface_model):
    model, hemis, meshes, _ = surface_model
    html = make_report(model, hemis, meshes=meshes, engine="matplotlib", title="Surface")
    _check_self_contained(html)
    assert html.count('alt="Component ') == 2 and "vertices analysed" in html
    html = make_report(model, hemis, title="no meshes")
    assert "No meshes were given" in html
    X = np.random.default_rng(0).standard_normal((15, 40))
    plain = SPCATV(1, alpha=0.1, tol=1e-2).fit(X)
    html = make_report(plain)
    _check_self_contained(html)
    assert "features (no brain space given)" in html


def test_zero_component_is_flagged(volume_model):
    _, masker, bg = volume_model
    X = np.random.default_rng(0).standard_normal((10, masker.n_features))
    with pytest.warns(UserWarning, match="identically zero"):
        model = SPCATV(1, alpha=50.0, l1_ratio=0.5, operator=masker.operator(),
                       tol=1e-2).fit(X)
    html = make_report(model, masker, bg_img=bg)
    assert "Component 1 is identically zero" in html


def test_report_errors(volume_model, surface_model):
    model, masker, _ = volume_model
    with pytest.raises(ValueError, match="fitted"):
        make_report(SPCATV())
    with pytest.raises(TypeError, match="space"):
        make_report(model, "mask.nii.gz")
    _, hemis, _, _ = surface_model
    with pytest.raises(ValueError, match="space has"):
        make_report(model, hemis)
    with pytest.raises(TypeError, match="title"):
        make_report(model, masker, title=3)
    with pytest.raises(TypeError, match="html"):
        save_report(b"bytes", "x.html")


def test_missing_jinja2_gives_install_hint(volume_model, monkeypatch):
    model, masker, _ = volume_model
    monkeypatch.setitem(sys.modules, "jinja2", None)
    with pytest.raises(ImportError, match=r'pip install "neurospca\[report\]"'):
        make_report(model, masker)


def test_scores_and_versions(volume_model):
    model, _, _ = volume_model
    scores = component_scores(model)
    np.testing.assert_allclose(scores, model.scores_ * model.singular_values_)
    versions = library_versions()
    assert versions["numpy"] == np.__version__


def test_core_import_stays_light():
    code = ("import sys, neurospca, neurospca.reporting, neurospca.persistence; "
            "heavy = [m for m in ('matplotlib', 'jinja2', 'pyvista', 'vtk', 'nilearn') "
            "if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_pyvista_views_when_available(surface_model):
    """Off-screen pyvista (when it renders here): four distinct views at one scale."""
    if not pyvista_available():
        pytest.skip("pyvista cannot render off-screen here (the matplotlib fallback is used)")
    from matplotlib import colormaps

    model, hemis, meshes, _ = surface_model
    maps = loadings_to_surface(model.components_, hemis)
    one = {h: maps[h][:, 0] for h in ("left", "right")}
    vmax, thr = plotting._symmetric_scale(np.concatenate([one["left"], one["right"]]))
    shots = plotting._render_pyvista(meshes, one, {}, vmax, thr, colormaps["RdBu_r"])
    assert len(shots) == 4 and len({s.shape for s in shots}) == 1  # one crop box for all
    left_lateral, left_medial = shots[0].astype(float), shots[1].astype(float)
    assert left_lateral.std() > 10 and np.abs(left_lateral - left_medial).mean() > 1
    # lateral and medial views of a sphere are mirror images: same silhouette width
    width = [np.any(s[..., :3] < 250, axis=(0, 2)).sum() for s in shots[:2]]
    assert abs(width[0] - width[1]) <= 0.05 * max(width)
    fig = plot_surface_component(one, meshes, engine="pyvista")
    assert plotting.figure_to_png(fig).startswith(b"\x89PNG")
