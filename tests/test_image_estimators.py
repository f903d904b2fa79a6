"""ImageSPCATV as a meta-estimator: ``estimator=`` takes any of the five estimators.

Each estimator is fitted on a small NIfTI written to disk and on a small
two-hemisphere surface image (icospheres): loadings back as images,
transform / inverse_transform, the model file's exact round trip and the
HTML report. The structure each one gets from the images is checked (the TV
operator, SSPCA's half-space groups), as are the conflicts between the image
model's SPCA-TV parameters and a given estimator, clone-safety of the
configuration (``estimator``, ``tv_kind``), the default estimator's results
against the build before this change, and ``neurospca fit --estimator``.
"""

import os
import subprocess
import sys
import warnings

import nibabel as nib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA

import neurospca
from neurospca import (
    SPCATV,
    SSPCA,
    HierarchicalDictionaryLearning,
    ImageSPCATV,
    KTraceNormPCA,
    NonnegativeSparsePCA,
    balanced_tree,
    grid_halfspace_groups,
    load_model,
    save_model,
)
from neurospca.surface import icosphere

nilearn = pytest.importorskip("nilearn")
from nilearn.surface import InMemoryMesh, PolyMesh, SurfaceImage  # noqa: E402

BASE = "/work/wt-base"  # the build before issue 23 (commit 808b191), when present


def _estimators():
    return {
        "spcatv": SPCATV(2, stability=False, max_iter=20),
        "sspca": SSPCA(2, max_iter=20, random_state=0),
        "nspca": NonnegativeSparsePCA(2, n_init=1, max_iter=30, random_state=0),
        "ktrace": KTraceNormPCA(n_components=2, k=2, n_restarts=1, max_iter=20, random_state=0),
        "dictionary": HierarchicalDictionaryLearning(
            balanced_tree((2,)), max_iter=3, random_state=0
        ),
    }


NAMES = tuple(_estimators())
N_COMPONENTS = {"spcatv": 2, "sspca": 2, "nspca": 2, "ktrace": 2, "dictionary": 3}


@pytest.fixture(scope="module")
def volume_files(tmp_path_factory):
    """A 4-D NIfTI of 12 maps (two blobs plus noise) and an ellipsoid mask, on disk."""
    folder = tmp_path_factory.mktemp("vol")
    rng = np.random.default_rng(3)
    shape = (7, 8, 6)
    affine = np.diag([2.0, 2.5, 3.0, 1.0])
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    mask = ((grid - [3, 3.5, 2.5]) ** 2 / [10, 14, 8]).sum(-1) < 1
    blobs = [np.exp(-((grid - c) ** 2).sum(-1) / 2.0) for c in ([2, 2, 2], [4, 5, 3])]
    n = 12
    data = (
        2 * rng.standard_normal((n, 1, 1, 1)) * blobs[0]
        + rng.standard_normal((n, 1, 1, 1)) * blobs[1]
        + 0.2 * rng.standard_normal((n,) + shape)
    )
    img_path, mask_path = str(folder / "maps.nii.gz"), str(folder / "mask.nii.gz")
    nib.save(nib.Nifti1Image(np.moveaxis(data, 0, -1).astype(np.float32), affine), img_path)
    nib.save(nib.Nifti1Image(mask.astype(np.uint8), affine), mask_path)
    paths = []
    for i in range(n):  # one 3-D file per subject, for the command line
        paths.append(str(folder / f"sub-{i:02d}_map.nii.gz"))
        nib.save(nib.Nifti1Image(data[i].astype(np.float32), affine), paths[-1])
    return img_path, mask_path, mask, paths


@pytest.fixture(scope="module")
def surface_img():
    """Two icosphere hemispheres (162 vertices each) with 12 maps of a smooth pattern."""
    rng = np.random.default_rng(4)
    coords, faces = icosphere(2)
    mesh = PolyMesh(
        left=InMemoryMesh(coords, faces), right=InMemoryMesh(coords + [3.0, 0, 0], faces)
    )
    pattern = np.exp(-((coords - coords[0]) ** 2).sum(1))
    data = {
        h: np.outer(pattern, rng.standard_normal(12)) + 0.1 * rng.standard_normal((162, 12))
        for h in ("left", "right")
    }
    return SurfaceImage(mesh=mesh, data=data)


def _fit(model, imgs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of the short fits
        return model.fit(imgs)


def _same_fitted(a, b):
    """Every fitted attribute of ``a`` equal (bit for bit) in ``b``."""
    names = sorted(k for k in vars(a) if k.endswith("_") and not k.startswith("_"))
    assert names == sorted(k for k in vars(b) if k.endswith("_") and not k.startswith("_"))
    for name in names:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), name
        elif isinstance(x, neurospca.trees.Tree):
            assert np.array_equal(x.parent, y.parent), name
        elif isinstance(x, float) and np.isnan(x):
            assert np.isnan(y), name
        elif not isinstance(x, (list, dict, tuple)):
            assert x == y, name


# --------------------------------------------------------------------------
# every estimator, volumes and surfaces
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_volume_fit_transform_save_report(name, volume_files, tmp_path):
    img_path, mask_path, mask, _ = volume_files
    est = _estimators()[name]
    model = _fit(ImageSPCATV(mask=mask_path, estimator=est), img_path)
    k, p = N_COMPONENTS[name], int(mask.sum())
    assert type(model.estimator_) is type(est) and model.estimator_ is not est
    assert not hasattr(est, "components_")  # cloned, the given one untouched
    assert model.components_.shape == (k, p) and model.n_components_ == k
    assert model.components_img_.shape == mask.shape + (k,)
    loadings = model.components_img_.get_fdata()
    np.testing.assert_allclose(loadings[mask].T, model.components_, rtol=1e-6, atol=1e-12)
    assert np.all(loadings[~mask] == 0)
    S = model.transform(img_path)
    assert S.shape == (12, k)
    np.testing.assert_array_equal(S, model.estimator_.transform(model._data(img_path, None)))
    back = model.inverse_transform(S)
    assert back.shape == mask.shape + (12,)
    np.testing.assert_allclose(
        back.get_fdata()[mask].T, model.estimator_.inverse_transform(S), rtol=1e-6, atol=1e-10
    )
    path = save_model(model, tmp_path / "model.npz")
    saved = load_model(path)
    assert type(saved.estimator) is type(model.estimator_)
    assert saved.estimator.get_params().keys() == model.estimator_.get_params().keys()
    _same_fitted(model.estimator_, saved.estimator)
    assert np.array_equal(saved.space.mask, model.space_.mask)
    np.testing.assert_array_equal(saved.estimator.transform(model._data(img_path, None)), S)
    model.generate_report(title=f"{name} report").save_as_html(tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") or "<html" in html[:500]
    assert f"{name} report" in html and type(est).__name__ in html


@pytest.mark.parametrize("name", NAMES)
def test_surface_fit_transform_save_report(name, surface_img, tmp_path):
    est = _estimators()[name]
    model = _fit(ImageSPCATV(estimator=est), surface_img)
    k = N_COMPONENTS[name]
    assert model.components_.shape == (k, 324) and model.meshes_ is not None
    parts = model.components_img_.data.parts
    assert parts["left"].shape == (162, k) and parts["right"].shape == (162, k)
    np.testing.assert_array_equal(
        np.concatenate([parts["left"], parts["right"]]).T, model.components_
    )
    S = model.transform(surface_img)
    assert S.shape == (12, k)
    back = model.inverse_transform(S)
    assert back.data.parts["left"].shape == (162, 12)
    saved = load_model(save_model(model, tmp_path / "model.npz"))
    _same_fitted(model.estimator_, saved.estimator)
    assert set(saved.meshes) >= {"left", "right"}
    np.testing.assert_array_equal(saved.meshes["left"][0], model.meshes_["left"][0])
    model.generate_report().save_as_html(tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    assert type(est).__name__ in html and "nsv-data" in html  # the viewer's data block
    static = str(model.generate_report(interactive=False))
    assert "<script" not in static.lower() and type(est).__name__ in static


# --------------------------------------------------------------------------
# the structure each estimator gets
# --------------------------------------------------------------------------


def test_structure_given_to_each_estimator(volume_files, surface_img):
    img_path, mask_path, mask, _ = volume_files
    est = _estimators()
    tv = _fit(ImageSPCATV(mask=mask_path, estimator=est["spcatv"]), img_path)
    assert tv.estimator_.operator is tv.operator_
    assert est["spcatv"].operator is None
    sspca = _fit(ImageSPCATV(mask=mask_path, estimator=est["sspca"]), img_path)
    expected = grid_halfspace_groups(mask=mask)
    assert len(sspca.estimator_.groups) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(sspca.estimator_.groups, expected, strict=True))
    own = [np.arange(int(mask.sum()))]  # groups given by the user are kept
    mine = _fit(
        ImageSPCATV(mask=mask_path, estimator=clone(est["sspca"]).set_params(groups=own)), img_path
    )
    assert len(mine.estimator_.groups) == 1
    surf = _fit(ImageSPCATV(estimator=est["sspca"]), surface_img)
    groups = surf.estimator_.groups
    covered = np.zeros(324, dtype=bool)
    for g in groups:
        covered[g] = True
        assert g.min() >= 0 and g.max() < 324
        assert g.max() < 162 or g.min() >= 162  # within one hemisphere
    assert covered.all()
    assert np.array_equal(groups[0], np.arange(162))  # each hemisphere is a group
    assert any(np.array_equal(g, np.arange(162, 324)) for g in groups)
    assert len(groups) > 10
    tree = _fit(ImageSPCATV(mask=mask_path, estimator=est["dictionary"]), img_path)
    assert np.array_equal(tree.estimator_.tree_.parent, balanced_tree((2,)))


def test_tv_kind_is_a_parameter(surface_img):
    edges = _fit(ImageSPCATV(estimator=SPCATV(2, stability=False, max_iter=5)), surface_img)
    grad = _fit(
        ImageSPCATV(estimator=SPCATV(2, stability=False, max_iter=5), tv_kind="gradient"),
        surface_img,
    )
    assert grad.get_params()["tv_kind"] == "gradient"
    assert grad.operator_.matrix.shape != edges.operator_.matrix.shape
    with pytest.raises(ValueError, match="tv_kind"):
        ImageSPCATV(tv_kind="faces").fit(surface_img)


# --------------------------------------------------------------------------
# parameters: conflicts, n_components, bad input
# --------------------------------------------------------------------------


def test_spcatv_parameters_conflict_with_a_given_estimator(volume_files):
    img_path, mask_path, _, _ = volume_files
    with pytest.raises(ValueError, match=r"l1_ratio=0\.2 .*SSPCA has no such parameter"):
        ImageSPCATV(mask=mask_path, l1_ratio=0.2, estimator=SSPCA(2)).fit(img_path)
    with pytest.raises(ValueError, match=r"alpha=0\.5 .*set it on the estimator"):
        ImageSPCATV(mask=mask_path, alpha=0.5, estimator=SSPCA(2)).fit(img_path)
    with pytest.raises(ValueError, match="n_components=5"):
        ImageSPCATV(5, mask=mask_path, estimator=NonnegativeSparsePCA(2)).fit(img_path)
    with pytest.raises(ValueError, match="tol="):
        ImageSPCATV(mask=mask_path, tol=0.5, estimator=SPCATV(2)).prepare(img_path)
    # equal values are not a conflict; the default n_components (3) yields to the estimator's
    model = _fit(
        ImageSPCATV(
            2, mask=mask_path, random_state=0, estimator=NonnegativeSparsePCA(2, random_state=0)
        ),
        img_path,
    )
    assert model.n_components_ == 2
    model = _fit(ImageSPCATV(mask=mask_path, estimator=KTraceNormPCA(n_components=1)), img_path)
    assert model.components_.shape[0] == 1


def test_auto_n_components_sets_the_estimators(volume_files):
    img_path, mask_path, _, _ = volume_files
    model = _fit(
        ImageSPCATV("auto", mask=mask_path, estimator=SSPCA(5, max_iter=5, random_state=0)),
        img_path,
    )
    k = model.n_components_evidence_["n_components"]
    assert model.estimator_.n_components == k == model.components_.shape[0]


@pytest.mark.parametrize("bad", [object(), "sspca", SSPCA, PCA(2)])
def test_estimator_must_be_one_of_the_five(bad, volume_files):
    img_path, mask_path, _, _ = volume_files
    with pytest.raises(TypeError, match="estimator must be an unfitted estimator among"):
        ImageSPCATV(mask=mask_path, estimator=bad).fit(img_path)
    with pytest.raises(TypeError, match="estimator must be an unfitted estimator among"):
        neurospca.fit_images(img_path, mask_path, estimator=bad)


def test_score_only_where_the_estimator_has_one(volume_files):
    img_path, mask_path, _, _ = volume_files
    model = _fit(ImageSPCATV(mask=mask_path, estimator=_estimators()["nspca"]), img_path)
    with pytest.raises(AttributeError, match="NonnegativeSparsePCA has no score"):
        model.score(img_path)
    model = _fit(ImageSPCATV(mask=mask_path, estimator=_estimators()["spcatv"]), img_path)
    assert model.score(img_path) == model.estimator_.score(model._data(img_path, None))


# --------------------------------------------------------------------------
# clone-safety and the thin layers
# --------------------------------------------------------------------------


def test_clone_of_a_configured_model_fits_identically(volume_files, surface_img):
    img_path, mask_path, _, _ = volume_files
    model = ImageSPCATV(mask=mask_path, estimator=SSPCA(2, max_iter=10, random_state=0))
    twin = clone(model)
    assert twin.get_params()["estimator"] is not model.estimator
    _fit(model, img_path)
    _fit(twin, img_path)
    assert np.array_equal(model.components_, twin.components_)
    surf = ImageSPCATV(estimator=SPCATV(2, stability=False, max_iter=5), tv_kind="gradient")
    a, b = _fit(surf, surface_img), _fit(clone(surf), surface_img)
    assert b.tv_kind == "gradient"
    assert np.array_equal(a.components_, b.components_)
    assert (a.operator_.matrix != b.operator_.matrix).nnz == 0


def test_fit_surfaces_and_fit_images_are_the_image_model(volume_files, surface_img):
    img_path, mask_path, _, _ = volume_files
    est = SSPCA(2, max_iter=10, random_state=0)
    fitted, loadings, masker = neurospca.fit_images(img_path, mask_path, estimator=est)
    direct = _fit(ImageSPCATV(mask=mask_path, estimator=est), img_path)
    assert np.array_equal(fitted.components_, direct.components_)
    assert loadings.shape == direct.components_img_.shape
    coords = {h: surface_img.mesh.parts[h].coordinates for h in ("left", "right")}
    faces = surface_img.mesh.parts["left"].faces
    spcatv = SPCATV(2, stability=False, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted, maps, hemis = neurospca.fit_surfaces(
            surface_img.data.parts["left"].T,
            surface_img.data.parts["right"].T,
            (coords["left"], faces),
            (coords["right"], faces),
            spcatv,
            kind="gradient",
        )
    direct = _fit(ImageSPCATV(estimator=spcatv, tv_kind="gradient"), surface_img)
    assert np.array_equal(fitted.components_, direct.components_)
    assert maps["left"].shape == (162, 2)


# --------------------------------------------------------------------------
# the default estimator: the same results as before this change
# --------------------------------------------------------------------------

_FIXED_FIT = """
import sys, warnings, numpy as np, neurospca
img, mask, out = sys.argv[1:4]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    m = neurospca.ImageSPCATV(3, mask=mask).fit(img)
est = m.estimator_
np.save(out, np.concatenate([m.components_, est.scores_.T, est.dual_gaps_[:, None]], axis=1))
"""


@pytest.mark.skipif(not os.path.isdir(os.path.join(BASE, "neurospca")), reason="no old build")
def test_default_estimator_bit_for_bit_as_before(volume_files, tmp_path):
    img_path, mask_path, _, _ = volume_files
    results = []
    for root in (BASE, os.path.dirname(os.path.dirname(neurospca.__file__))):
        out = str(tmp_path / f"{len(results)}.npy")
        env = dict(os.environ, PYTHONPATH=root)
        subprocess.run(
            [sys.executable, "-c", _FIXED_FIT, img_path, mask_path, out], check=True, env=env
        )
        results.append(np.load(out))
    assert results[0].shape == results[1].shape
    assert np.array_equal(results[0], results[1])


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------


def test_cli_fit_estimator_sspca_on_files(volume_files, tmp_path, capsys):
    from neurospca.cli import main

    _, mask_path, mask, paths = volume_files
    out = tmp_path / "out"
    code = main(
        ["fit", "--estimator", "sspca", "--images", *paths, "--mask", mask_path,
         "--n-components", "2", "--max-iter", "10", "--output", str(out), "-q",
         "--engine", "matplotlib"]
    )  # fmt: skip
    assert code == 0
    assert sorted(os.listdir(out)) == ["loadings.nii.gz", "model.npz", "report.html", "scores.csv"]
    saved = load_model(out / "model.npz")
    assert type(saved.estimator) is SSPCA and saved.estimator.components_.shape == (2, mask.sum())
    assert saved.estimator.random_state == 0 and saved.estimator.max_iter == 10
    rows = (out / "scores.csv").read_text().splitlines()
    assert rows[0] == "sample,component_1,component_2" and len(rows) == 13
    direct = _fit(
        ImageSPCATV(mask=mask_path, estimator=SSPCA(2, max_iter=10, random_state=0)), paths
    )
    np.testing.assert_array_equal(saved.estimator.components_, direct.components_)
    first = [float(x) for x in rows[1].split(",")[1:]]
    np.testing.assert_allclose(first, direct.transform(paths)[0], rtol=1e-9)
    assert nib.load(out / "loadings.nii.gz").shape == mask.shape + (2,)
    assert "SSPCA" in (out / "report.html").read_text()
    capsys.readouterr()
    code = main(
        ["fit", "--estimator", "nspca", "--alpha", "0.1", "--images", *paths, "--mask",
         mask_path, "--output", str(tmp_path / "o2"), "-q"]
    )  # fmt: skip
    assert code == 2
    assert "--alpha" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()


# --------------------------------------------------------------------------
# the study wiring and prepare
# --------------------------------------------------------------------------


def test_participants_confounds_and_findings_with_another_estimator(volume_files, tmp_path):
    import pandas as pd

    _, mask_path, _, paths = volume_files
    rng = np.random.default_rng(5)
    table = pd.DataFrame(
        {
            "participant_id": [f"sub-{i:02d}" for i in range(12)],
            "age": rng.uniform(20, 80, 12),
            "dx": ["a", "b"] * 6,
            "site": ["s1"] * 6 + ["s2"] * 6,
        }
    )
    est = SSPCA(2, max_iter=10, random_state=0)
    model = _fit(ImageSPCATV(mask=mask_path, estimator=est), paths)
    plain = model.components_
    model = ImageSPCATV(mask=mask_path, estimator=est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(
            paths, participants=table, confounds=["age"], harmonize="site", groups=["dx"],
            n_permutations=99,
        )  # fmt: skip
    assert list(model.participant_ids_) == list(table["participant_id"])
    assert not np.array_equal(model.components_, plain)  # the adjusted data were fitted
    assoc = model.associations_
    assert set(assoc["component"]) == {1, 2} and set(assoc["variable"]) == {"dx"}
    train = model.transform(paths, participants=table)
    np.testing.assert_allclose(train, model._training_scores(), rtol=1e-10, atol=1e-12)
    saved = load_model(save_model(model, tmp_path / "study.npz"))
    assert list(saved.study["participant_ids"]) == list(table["participant_id"])


def test_prepare_gives_the_structured_clone(volume_files):
    img_path, mask_path, mask, _ = volume_files
    model = ImageSPCATV(mask=mask_path, estimator=SSPCA(2))
    X, est = model.prepare(img_path)
    assert X.shape == (12, int(mask.sum())) and type(est) is SSPCA
    assert len(est.groups) == len(grid_halfspace_groups(mask=mask))
    with pytest.raises(ValueError, match="n_components='auto'"):
        ImageSPCATV("auto", mask=mask_path, estimator=SSPCA(2)).prepare(img_path)
