"""Figures a paper can use (issue 21, item 5): slices cut at the peak and at the cluster
centres and showing brain, labelled colour bars, anatomical surface coordinates, a
zoomed view of the certified support, per-figure export (SVG, PNG at a stated dpi)
from Python and the command line, and the report's explanations of the explained
variance and of the two gaps."""

import os
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import nibabel as nib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from neurospca import SPCATV, VolumeMasker, icosphere, tv_from_hemispheres  # noqa: E402
from neurospca.cli import main  # noqa: E402
from neurospca.persistence import load_model, save_model  # noqa: E402
from neurospca.reporting import (  # noqa: E402
    _slices,
    anatomy,
    cluster_table,
    loadings_to_nifti,
    make_report,
    peak_coordinates,
    plot_component,
    plot_surface_component,
    plot_volume_component,
    save_figures,
)

from .test_reporting import fit_volume_model  # noqa: E402

# --------------------------------------------------------------------------
# data: components in the MNI152 3 mm mask, a small fitted model
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mni_masker():
    from nilearn.datasets import load_mni152_brain_mask

    return VolumeMasker(load_mni152_brain_mask(resolution=3, threshold=0.48))


def _blob(masker, centre_mm, width_mm=8.0):
    """A Gaussian blob (unnormalised) centred at a world coordinate, on the mask."""
    ijk = np.argwhere(masker.mask)
    affine = np.asarray(masker.mask_img.affine)
    xyz = ijk @ affine[:3, :3].T + affine[:3, 3]
    return np.exp(-((xyz - centre_mm) ** 2).sum(1) / (2 * width_mm**2))


def _sparse_unit(values, keep=0.05):
    values = np.where(np.abs(values) > keep * np.abs(values).max(), values, 0.0)
    return values / np.linalg.norm(values)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """A fitted 2-component SPCA-TV on a small volume, saved: (model, masker, path)."""
    model, masker, _ = fit_volume_model()
    path = tmp_path_factory.mktemp("model") / "model.npz"
    save_model(model, path, space=masker, metadata={"title": "small"})
    return model, masker, path


# --------------------------------------------------------------------------
# volume slices: cut at the peak, inside the brain, clusters zoomed
# --------------------------------------------------------------------------


def test_cerebellar_peak_is_cut_through_and_the_slices_show_brain(mni_masker):
    comp = _sparse_unit(_blob(mni_masker, [18.0, -62.0, -48.0]))  # right cerebellum
    img = loadings_to_nifti(comp, mni_masker)
    fig = plot_volume_component(img, "cerebellar", cbar_label="loading (unit-norm component)")
    drawn = fig.neurospca_drawn
    g = int(np.argmax(np.abs(comp)))
    peak_ijk = tuple(int(i) for i in np.argwhere(mni_masker.mask)[g])
    affine = np.asarray(mni_masker.mask_img.affine)
    assert tuple(int(i) for i in drawn["peak"]) == peak_ijk
    np.testing.assert_allclose(drawn["cut"], affine[:3, :3] @ peak_ijk + affine[:3, 3])
    assert drawn["cut"][2] < -40  # the planted depth: a low axial cut
    for plane, values in drawn["slices"].items():  # each slice goes through the peak
        assert np.isclose(np.ma.max(np.abs(values)), comp[g]), plane
    # the axial slice at the peak shows brain: the background's brain pixels, not blank
    axial = fig.axes[2]
    shade = axial.images[0].get_array()
    assert np.ma.count(shade) > 0.15 * shade.size
    # the panel is cropped to the brain: the brain fills much of it (not a tiny inset)
    sagittal = fig.axes[0].images[0].get_array()
    assert np.ma.count(sagittal) > 0.4 * sagittal.size


def test_clusters_are_zoomed_through_their_centres(mni_masker):
    comp = _sparse_unit(
        _blob(mni_masker, [40.0, -20.0, 30.0]) - 0.7 * _blob(mni_masker, [-40.0, 20.0, 10.0], 6)
    )
    img = loadings_to_nifti(comp, mni_masker)
    fig = plot_volume_component(img, support_label="certified support, largest clusters")
    clusters = fig.neurospca_drawn["clusters"]
    assert [c["sign"] for c in clusters] == ["+", "-"]
    data = np.asarray(img.dataobj)
    inv = np.linalg.inv(img.affine)
    for c in clusters:  # the centre is a voxel of the cluster, of the cluster's sign
        ijk = np.rint(inv[:3, :3] @ c["centre"] + inv[:3, 3]).astype(int)
        value = data[tuple(ijk)]
        assert value > 0 if c["sign"] == "+" else value < 0
        assert np.all(c["lo"] <= c["centre"]) and np.all(c["centre"] <= c["hi"])
    # the zoomed panels (row 3) are titled with the cluster and hold its loadings
    zoom = fig.axes[6:9]
    titles = [t.get_text() for ax in zoom for t in ax.texts]
    assert any(t.startswith("cluster 1 (+") for t in titles)
    assert any(t.startswith("cluster 2 (-") for t in titles)
    assert np.ma.min(zoom[1].images[1].get_array()) < 0
    assert any("certified support" in t.get_text() for t in fig.texts)


def test_volume_colorbar_is_labelled_with_its_symmetric_limits(small_model):
    model, masker, _ = small_model
    img = loadings_to_nifti(model.components_[0], masker)
    fig = plot_volume_component(img, cbar_label="loading (unit-norm component)")
    vmax = float(np.max(np.abs(model.components_[0])))
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert f"loading (unit-norm component)\nsymmetric limits \u00b1{vmax:.3g}" in labels
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels() if t.get_text()]
    assert f"{vmax:.2g}" in ticks and f"{-vmax:.2g}" in ticks


def test_surface_colorbar_is_labelled():
    coords, faces = icosphere(2)
    values = np.where(coords[:, 0] > 0.5, coords[:, 0], 0.0)
    meshes = {"left": (coords, faces), "right": (coords, faces)}
    fig = plot_surface_component(
        {"left": values, "right": -values},
        meshes,
        engine="matplotlib",
        cbar_label="certified loading (unit-norm component)",
    )
    vmax = float(np.abs(values).max())
    assert any(
        ax.get_ylabel()
        == f"certified loading (unit-norm component)\nsymmetric limits \u00b1{vmax:.3g}"
        for ax in fig.axes
    )


def test_nilearn_plotting_still_registers_its_colour_map():
    """The figures use cold_hot without registering it: nilearn's import must not fail."""
    _slices.cold_hot()
    from matplotlib import colormaps
    from nilearn import plotting  # noqa: F401  registers cold_hot itself

    ours = _slices._COLD_HOT[0] if _slices._COLD_HOT else _slices.cold_hot()
    x = np.linspace(0, 1, 11)
    np.testing.assert_allclose(ours(x), colormaps["cold_hot"](x), atol=1e-6)


# --------------------------------------------------------------------------
# surfaces: anatomical coordinates when an inflated mesh is drawn
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fsaverage_space():
    from nilearn.datasets import load_fsaverage

    fs5 = load_fsaverage("fsaverage5")
    pial = {
        h: (np.asarray(fs5["pial"].parts[h].coordinates), np.asarray(fs5["pial"].parts[h].faces))
        for h in ("left", "right")
    }
    infl = {h: np.asarray(fs5["inflated"].parts[h].coordinates) for h in ("left", "right")}
    keep = np.ones(pial["left"][0].shape[0], dtype=bool)
    _, hemis = tv_from_hemispheres(pial["left"], pial["right"], keep, keep)
    return hemis, pial, infl


def test_surface_peak_and_clusters_use_the_anatomical_mesh(fsaverage_space):
    hemis, pial, infl = fsaverage_space
    n = hemis.n_vertices[0]
    comp = np.zeros(hemis.n_features)
    v = 4321
    near = np.argsort(((pial["left"][0] - pial["left"][0][v]) ** 2).sum(1))[:30]
    comp[near] = np.linspace(1.0, 0.5, near.size)  # the peak at vertex v
    drawn = {h: (infl[h], pial[h][1]) for h in ("left", "right")}
    meshes = dict(drawn, anat_left=pial["left"][0], anat_right=pial["right"][0])
    peak = peak_coordinates(comp, hemis, surface_coords=anatomy._hemi_coords(hemis, meshes, None))
    assert peak.hemi == "left" and peak.vertex == v
    np.testing.assert_allclose(peak.xyz, pial["left"][0][v])  # white/pial, not inflated
    assert not np.allclose(peak.xyz, infl["left"][v])
    clusters = cluster_table(comp, hemis, meshes=meshes)
    np.testing.assert_allclose(clusters[0].peak.xyz, pial["left"][0][v])
    assert clusters[0].area_mm2 is not None and clusters[0].area_mm2 > 0
    assert anatomy.coordinate_source(meshes, None) == "anatomical"
    assert anatomy.coordinate_source(drawn, None) == "drawn"
    assert n == 10242


def test_report_and_saved_model_keep_the_anatomical_coordinates(fsaverage_space, tmp_path):
    hemis, pial, infl = fsaverage_space
    rng = np.random.default_rng(3)
    coords = pial["left"][0]
    pattern = np.exp(-((coords - coords[900]) ** 2).sum(1) / (2 * 10.0**2))
    base = np.concatenate([pattern, np.zeros_like(pattern)])
    X = rng.standard_normal((25, 1)) * base + 0.05 * rng.standard_normal((25, base.size))
    op, _ = tv_from_hemispheres(pial["left"], pial["right"])
    model = SPCATV(1, alpha_rel=1.0, operator=op, tol=1e-2).fit(X)
    drawn = {h: (infl[h], pial[h][1]) for h in ("left", "right")}
    meshes = dict(drawn, anat_left=pial["left"][0], anat_right=pial["right"][0])
    path = tmp_path / "model.npz"
    save_model(model, path, space=hemis, meshes=meshes)
    saved = load_model(path)
    np.testing.assert_array_equal(saved.meshes["anat_left"], pial["left"][0])
    html = make_report(saved.estimator, saved.space, meshes=saved.meshes, engine="matplotlib")
    peak = peak_coordinates(
        saved.estimator.components_[0], hemis, surface_coords=(pial["left"][0], pial["right"][0])
    )
    xyz = "(" + ", ".join(anatomy._coord(c) for c in peak.xyz) + ")"
    assert f"{peak.hemi} vertex {peak.vertex} {xyz}" in html
    assert "xyz mm on the anatomical mesh" in html and "area (mm" in html
    assert "anatomical mesh the model was fitted on" in html


# --------------------------------------------------------------------------
# export: files, formats, resolution, atomicity, bad input
# --------------------------------------------------------------------------


def test_save_figures_svg_and_png_at_300_dpi(small_model, tmp_path):
    model, masker, _ = small_model
    svg = save_figures(model, tmp_path / "svg", masker, format="svg")
    names = [os.path.basename(p) for p in svg]
    assert names == [
        "component_01.svg",
        "component_02.svg",
        "explained_variance.svg",
        "convergence.svg",
    ]
    for p in svg:
        root = ET.parse(p).getroot()
        assert root.tag.endswith("svg")
    text = open(svg[0], encoding="utf-8").read()
    assert "certified loading (unit-norm component)" in text  # labels stay text
    png = save_figures(model, tmp_path / "png", masker, format="png", dpi=300)
    from PIL import Image

    for p in png:
        with Image.open(p) as im:
            assert im.format == "PNG"
            assert np.allclose(im.info["dpi"], 300, atol=0.01)  # the pHYs chunk
            width = im.size[0]
        assert width > 1500  # inches x 300, not the report's 80 dpi
    assert sorted(os.listdir(tmp_path / "png")) == sorted(os.path.basename(p) for p in png)


def test_save_figures_never_writes_over_an_input(small_model, tmp_path):
    model, masker, _ = small_model
    target = tmp_path / "component_01.png"
    target.write_bytes(b"input data")
    with pytest.raises(ValueError, match="directory: .* is the input model"):
        save_figures(model, tmp_path, masker, inputs=[("model", str(target))])
    assert target.read_bytes() == b"input data"
    assert sorted(os.listdir(tmp_path)) == ["component_01.png"]  # nothing half-written


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"format": "gif"}, "format"),
        ({"format": None}, "format"),
        ({"dpi": 0}, "dpi"),
        ({"dpi": -300}, "dpi"),
        ({"dpi": True}, "dpi"),
        ({"dpi": float("nan")}, "dpi"),
        ({"dpi": "300"}, "dpi"),
        ({"engine": "vtk"}, "engine"),
    ],
)
def test_save_figures_bad_input(small_model, tmp_path, kwargs, match):
    model, masker, _ = small_model
    with pytest.raises(ValueError, match=match):
        save_figures(model, tmp_path / "out", masker, **kwargs)
    assert not (tmp_path / "out").exists()


def test_save_figures_bad_directory_and_component(small_model, tmp_path):
    model, masker, _ = small_model
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="directory"):
        save_figures(model, tmp_path / "file", masker)
    with pytest.raises(ValueError, match="directory"):
        save_figures(model, tmp_path / "missing" / "deeper", masker)
    with pytest.raises(ValueError, match="k must be"):
        plot_component(model, 2, masker)
    with pytest.raises(ValueError, match="fitted"):
        save_figures(SPCATV(1), tmp_path / "x", masker)


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------


def test_report_command_writes_the_figures(small_model, tmp_path, capsys):
    _, masker, path = small_model
    atlas = np.zeros(masker.mask.shape, dtype=np.int16)
    atlas[:7] = 1
    atlas[7:] = 2
    nib.Nifti1Image(atlas, masker.mask_img.affine).to_filename(tmp_path / "atlas.nii.gz")
    out = tmp_path / "figs"
    rc = main(
        [
            "report",
            str(path),
            "--output",
            str(tmp_path / "r.html"),
            "--figures",
            str(out),
            "--figure-format",
            "svg",
            "--dpi",
            "150",
            "--atlas",
            str(tmp_path / "atlas.nii.gz"),
            "-q",
        ]
    )
    assert rc == 0
    files = sorted(os.listdir(out))
    assert files == [
        "component_01.svg",
        "component_02.svg",
        "convergence.svg",
        "explained_variance.svg",
    ]
    assert all(ET.parse(out / f).getroot().tag.endswith("svg") for f in files)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "atlas label" in html and "label 1" in html
    assert "Why" in html and "Eckart-Young" in html  # the explained-variance explanation
    assert "Two gaps, one certificate on two scales" in html


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--figure-format", "gif"], "--figure-format"),
        (["--dpi", "0"], "--dpi"),
        (["--dpi", "-5"], "--dpi"),
    ],
)
def test_report_command_bad_figure_options(small_model, tmp_path, capsys, extra, message):
    _, _, path = small_model
    with pytest.raises(SystemExit) as exc:
        main(["report", str(path), "--figures", str(tmp_path / "f"), *extra])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "f").exists()


def test_report_command_figures_never_over_the_model(small_model, tmp_path, capsys):
    _, _, path = small_model
    rc = main(["report", str(path), "--output", str(tmp_path / "r.html"), "--figures", str(path)])
    assert rc == 2
    assert "--figures" in capsys.readouterr().err
    assert load_model(path).estimator.components_.shape[0] == 2  # intact


def test_report_command_anat_mesh(fsaverage_space, tmp_path, capsys):
    hemis, pial, infl = fsaverage_space
    from neurospca.surface import write_surf_mesh

    rng = np.random.default_rng(4)
    coords = pial["right"][0]
    pattern = np.exp(-((coords - coords[77]) ** 2).sum(1) / (2 * 10.0**2))
    base = np.concatenate([np.zeros_like(pattern), pattern])
    X = rng.standard_normal((25, 1)) * base + 0.05 * rng.standard_normal((25, base.size))
    op, _ = tv_from_hemispheres(pial["left"], pial["right"])
    model = SPCATV(1, alpha_rel=1.0, operator=op, tol=1e-2).fit(X)
    drawn = {h: (infl[h], pial[h][1]) for h in ("left", "right")}
    save_model(model, tmp_path / "m.npz", space=hemis, meshes=drawn)
    for h, short in (("left", "lh"), ("right", "rh")):
        write_surf_mesh(*pial[h], str(tmp_path / f"{short}.pial.gii"))
    args = ["report", str(tmp_path / "m.npz"), "--engine", "matplotlib", "-q"]
    assert main(args + ["--output", str(tmp_path / "drawn.html")]) == 0
    anat = ["--anat-mesh", str(tmp_path / "lh.pial.gii"), str(tmp_path / "rh.pial.gii")]
    assert main(args + ["--output", str(tmp_path / "anat.html")] + anat) == 0
    peak = peak_coordinates(model.components_[0], hemis)
    on = {
        name: np.asarray(c[peak.vertex])
        for name, c in (("pial", pial[peak.hemi][0]), ("inflated", infl[peak.hemi]))
    }

    def shown(c):
        return "(" + ", ".join(anatomy._coord(x) for x in c) + ")"

    html = (tmp_path / "anat.html").read_text(encoding="utf-8")
    assert shown(on["pial"]) in html and shown(on["inflated"]) not in html
    html = (tmp_path / "drawn.html").read_text(encoding="utf-8")
    assert shown(on["inflated"]) in html and "xyz mm on the drawn mesh" in html
    ico = icosphere(2)
    write_surf_mesh(*ico, str(tmp_path / "small.gii"))
    bad = ["--anat-mesh", str(tmp_path / "small.gii"), str(tmp_path / "rh.pial.gii")]
    assert main(args + ["--output", str(tmp_path / "bad.html")] + bad) == 2
    assert "--anat-mesh" in capsys.readouterr().err
