"""ImageSPCATV: images in, images out (NIfTI volumes and nilearn SurfaceImages).

Checks that the columns of the masked data, of the TV operator and of the
report's space are the same voxels/vertices in the same order (against
nilearn's maskers and against TV values computed directly on the images),
that images round-trip with their affine / parts / vertex order, real data
that ships with nilearn at the default penalties, files users have on disk
(qcache MGH stacks, GIFTI label/shape masks, PolyMesh), bad input, and the
report of a fitted model in a real browser.
"""

import os
import warnings

import nibabel as nib
import numpy as np
import pytest

import neurospca
from neurospca import (
    SPCATV,
    Hemispheres,
    ImageSPCATV,
    VolumeMasker,
    load_cortex_mask,
    load_surface_image,
    tv_from_hemispheres,
    tv_from_mask,
    write_surf_data,
)

nilearn = pytest.importorskip("nilearn")
from nilearn.datasets import (  # noqa: E402
    load_fsaverage,
    load_fsaverage_data,
    load_mni152_brain_mask,
    load_sample_motor_activation_image,
)
from nilearn.maskers import NiftiMasker, SurfaceMasker  # noqa: E402
from nilearn.surface import InMemoryMesh, PolyMesh, SurfaceImage  # noqa: E402

HEMIS = ("left", "right")


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fs5():
    return load_fsaverage("fsaverage5")


@pytest.fixture(scope="module")
def small_volume():
    """An irregular mask on an anisotropic, shifted grid, and 4-D maps with two blobs."""
    rng = np.random.default_rng(12)
    shape = (11, 13, 9)
    affine = np.array([[3.0, 0, 0, -15], [0, 2.5, 0, -20], [0, 0, 3.5, -10], [0, 0, 0, 1]])
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    mask = ((grid - [5, 6, 4]) ** 2 / [25, 36, 16]).sum(-1) < 1.0
    mask[5, 6, 4] = False  # a hole: neighbours are dropped from the operator
    blobs = [np.exp(-((grid - c) ** 2).sum(-1) / 3.0) for c in ([3, 4, 4], [7, 8, 4])]
    n = 16
    data = (
        3 * rng.standard_normal((n, 1, 1, 1)) * blobs[0]
        + 2 * rng.standard_normal((n, 1, 1, 1)) * blobs[1]
        + 0.2 * rng.standard_normal((n,) + shape)
    )
    img = nib.Nifti1Image(np.moveaxis(data, 0, -1).astype(np.float32), affine)
    mask_img = nib.Nifti1Image(mask.astype(np.uint8), affine)
    return img, mask_img, mask, blobs


def _blob(coords, centre, width):
    return np.exp(-((coords - coords[centre]) ** 2).sum(1) / (2 * width**2))


@pytest.fixture(scope="module")
def thickness_img(fs5):
    """Real fsaverage5 thickness with seeded per-subject perturbations of three regions.

    Each subject's map is the real thickness map plus random multiples of the
    thickness inside three smooth regions (two left, one right) and noise; the
    medial wall (thickness 0) stays constant.
    """
    rng = np.random.default_rng(2024)
    thick = load_fsaverage_data(mesh="fsaverage5", data_type="thickness")
    n = 20
    centres = {"left": [(1200, 0), (6000, 1)], "right": [(3000, 2)]}
    amps = 0.8 * rng.standard_normal((n, 3))
    data, patterns = {}, {}
    for hemi in HEMIS:
        coords = fs5["pial"].parts[hemi].coordinates
        base = np.asarray(thick.data.parts[hemi], dtype=np.float64)
        cortex = base > 0
        maps = np.repeat(base[:, None], n, axis=1)
        patterns[hemi] = {}
        for vertex, k in centres[hemi]:
            pat = _blob(coords, vertex, 12.0) * base
            patterns[hemi][k] = pat
            maps += pat[:, None] * amps[:, k]
        maps += 0.15 * rng.standard_normal(maps.shape) * cortex[:, None]
        data[hemi] = maps
    return SurfaceImage(mesh=fs5["pial"], data=data), patterns


# --------------------------------------------------------------------------
# orders: the masker's columns are the operator's columns
# --------------------------------------------------------------------------


def _grid_tv(vol, mask):
    """sum over in-mask voxels of ||forward differences to in-mask neighbours||_2."""
    sq = np.zeros(vol.shape)
    for axis in range(3):
        d = np.diff(vol, axis=axis)
        both = (
            mask[tuple(slice(0, -1) if a == axis else slice(None) for a in range(3))]
            & mask[tuple(slice(1, None) if a == axis else slice(None) for a in range(3))]
        )
        pad = [(0, 1) if a == axis else (0, 0) for a in range(3)]
        sq += np.pad(np.where(both, d, 0.0) ** 2, pad)
    return float(np.sqrt(sq[mask]).sum())


def test_volume_columns_follow_nilearn_masker(small_volume):
    img, mask_img, mask, _ = small_volume
    data = img.get_fdata()
    # nilearn's column order is C order of the in-mask voxels
    X_nilearn = NiftiMasker(mask_img=mask_img, standardize=None).fit().transform(img)
    np.testing.assert_array_equal(X_nilearn, data[mask].T)
    model = ImageSPCATV(2, mask=mask_img, tol=1e-2, alpha_rel=0.5).fit(img)
    X = model.masker_.transform(img)
    np.testing.assert_array_equal(X, X_nilearn)
    op = tv_from_mask(mask_img)
    assert (op.matrix != model.operator_.matrix).nnz == 0
    # the operator's TV of each row equals the TV computed on the image itself:
    # a different column order would give another value on random maps
    for i in range(3):
        np.testing.assert_allclose(
            model.operator_.value(X[i]), _grid_tv(data[..., i], mask), rtol=1e-10
        )
    shuffled = np.random.default_rng(0).permutation(X[0])
    assert abs(model.operator_.value(shuffled) - _grid_tv(data[..., 0], mask)) > 1.0
    assert isinstance(model.space_, VolumeMasker)
    np.testing.assert_array_equal(model.space_.mask, mask)


def _edge_tv(values, faces, keep):
    """sum over kept vertices a of sqrt(sum over kept edges (a, b), a < b of (v_b - v_a)^2)."""
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    e = np.unique(np.sort(e, axis=1), axis=0)
    e = e[keep[e[:, 0]] & keep[e[:, 1]]]
    sq = np.bincount(
        e[:, 0], weights=(values[e[:, 1]] - values[e[:, 0]]) ** 2, minlength=values.size
    )
    return float(np.sqrt(sq).sum())


def test_surface_columns_follow_surface_masker(fs5):
    rng = np.random.default_rng(5)
    data = {h: rng.standard_normal((10242, 4)) for h in HEMIS}
    img = SurfaceImage(mesh=fs5["pial"], data=data)
    keep = {h: rng.random(10242) > 0.3 for h in HEMIS}
    mask_img = SurfaceImage(mesh=fs5["pial"], data=keep)
    X_nilearn = SurfaceMasker(mask_img=mask_img, standardize=None).fit().transform(img)
    model = ImageSPCATV(1, mask=mask_img, tol=1e-2, alpha_rel=0.5).fit(img)
    X = model.masker_.transform(img)
    np.testing.assert_array_equal(X, X_nilearn)
    # nilearn's order: kept left vertices, then kept right vertices, in index order
    np.testing.assert_array_equal(
        X, np.concatenate([data["left"][keep["left"]].T, data["right"][keep["right"]].T], 1)
    )
    assert isinstance(model.space_, Hemispheres)
    for h, hemi in enumerate(HEMIS):
        np.testing.assert_array_equal(model.space_.vertices[h], np.flatnonzero(keep[hemi]))
    np.testing.assert_array_equal(model.space_.transform(data["left"].T, data["right"].T), X)
    # the operator's TV equals the edge TV computed on each hemisphere's mesh
    for i in range(2):
        expected = sum(
            _edge_tv(data[hemi][:, i], np.asarray(fs5["pial"].parts[hemi].faces), keep[hemi])
            for hemi in HEMIS
        )
        np.testing.assert_allclose(model.operator_.value(X[i]), expected, rtol=1e-10)
    op, _ = tv_from_hemispheres(
        fs5["pial"].parts["left"], fs5["pial"].parts["right"], keep["left"], keep["right"]
    )
    assert (op.matrix != model.operator_.matrix).nnz == 0


def test_same_model_as_spcatv_on_the_matrix(small_volume):
    """The image model is SPCATV on the masked matrix with the mask's operator."""
    img, mask_img, mask, _ = small_volume
    X = img.get_fdata()[mask].T
    ref = SPCATV(2, alpha_rel=0.5, tol=1e-3, operator=tv_from_mask(mask)).fit(X)
    model = ImageSPCATV(2, mask=mask_img, alpha_rel=0.5, tol=1e-3).fit(img)
    np.testing.assert_allclose(model.components_, ref.components_, atol=1e-10)
    np.testing.assert_allclose(model.alpha_, ref.alpha_)
    np.testing.assert_allclose(model.explained_variance_ratio_, ref.explained_variance_ratio_)


def test_defaults_follow_spcatv():
    shared = set(ImageSPCATV().get_params()) & set(SPCATV().get_params())
    assert {"alpha", "alpha_rel", "l1_ratio", "tv_ratio", "tol", "max_iter", "solver"} <= shared
    for name in shared:
        assert ImageSPCATV().get_params()[name] == SPCATV().get_params()[name], name
    from sklearn.base import clone

    model = ImageSPCATV(4, alpha_rel=2.0, standardize=True)
    assert clone(model).get_params() == model.get_params()
    assert "ImageSPCATV" in neurospca.__all__ and neurospca.ImageSPCATV is ImageSPCATV
    with pytest.raises(Exception, match="not fitted"):
        ImageSPCATV().transform(None)


# --------------------------------------------------------------------------
# round trips
# --------------------------------------------------------------------------


def test_nifti_round_trip(small_volume, tmp_path):
    img, mask_img, mask, blobs = small_volume
    # a list of 3-D files (a glob) is the same data as the 4-D image
    for i in range(img.shape[-1]):
        nib.Nifti1Image(img.get_fdata()[..., i].astype(np.float32), img.affine).to_filename(
            tmp_path / f"sub-{i:02d}.nii.gz"
        )
    mask_img.to_filename(tmp_path / "mask.nii.gz")
    model = ImageSPCATV(2, mask=str(tmp_path / "mask.nii.gz"), alpha_rel=0.5, tol=1e-3)
    model.fit(str(tmp_path / "sub-*.nii.gz"))
    comp = model.components_img_
    assert comp.shape == mask.shape + (2,)
    np.testing.assert_array_equal(comp.affine, mask_img.affine)
    values = comp.get_fdata()
    assert not np.any(values[~mask])
    np.testing.assert_array_equal(values[mask], model.components_.T)
    # each component is one of the two blobs
    corr = np.array(
        [[abs(np.corrcoef(values[..., k][mask], b[mask])[0, 1]) for b in blobs] for k in range(2)]
    )
    assert max(corr[0, 0] + corr[1, 1], corr[0, 1] + corr[1, 0]) > 1.7, corr
    # scores and back: images with the mask's affine
    S = model.transform(img)
    assert S.shape == (img.shape[-1], 2)
    np.testing.assert_allclose(S, model.fit_transform(img), atol=1e-8)
    back = model.inverse_transform(S)
    assert back.shape == mask.shape + (img.shape[-1],)
    np.testing.assert_array_equal(back.affine, mask_img.affine)
    X = img.get_fdata()[mask].T
    np.testing.assert_allclose(
        back.get_fdata()[mask].T,
        model.estimator_.inverse_transform(model.estimator_.transform(X)),
        atol=1e-6,
    )
    # the rank-2 reconstruction explains most of the two-blob data
    resid = np.linalg.norm(back.get_fdata()[mask].T - X) / np.linalg.norm(X - X.mean(0))
    assert resid < 0.6, resid


def test_surface_round_trip_planted_vertices(fs5):
    """A component planted at known vertices comes back at those vertices, per part."""
    rng = np.random.default_rng(7)
    n = 14
    infl = {h: fs5["pial"].parts[h].coordinates for h in HEMIS}
    planted = {"left": _blob(infl["left"], 4321, 8.0), "right": _blob(infl["right"], 777, 8.0)}
    planted = {h: np.where(p > 0.05, p, 0.0) for h, p in planted.items()}
    amp = 3.0 * rng.standard_normal(n)
    data = {h: planted[h][:, None] * amp + 0.1 * rng.standard_normal((10242, n)) for h in HEMIS}
    img = SurfaceImage(mesh=fs5["pial"], data=data)
    model = ImageSPCATV(
        1, mask=(np.ones(10242, bool), np.ones(10242, bool)), alpha_rel=1.0, tol=1e-3
    ).fit(img)
    comp = model.components_img_
    assert isinstance(comp, SurfaceImage) and set(comp.data.parts) == set(HEMIS)
    for hemi in HEMIS:
        loading = np.asarray(comp.data.parts[hemi])
        assert loading.shape == (10242, 1)
        inside = planted[hemi] > 0
        assert np.any(loading[:, 0] != 0)
        # the loading lives in the planted region (vertex order preserved, per hemisphere)
        assert np.sum(loading[inside, 0] ** 2) / np.sum(loading**2) > 0.95
        assert planted[hemi][np.abs(loading[:, 0]).argmax()] > 0.8  # peak at the centre
    back = model.inverse_transform(model.transform(img))
    assert isinstance(back, SurfaceImage) and back.shape == (20484, n)
    for hemi in HEMIS:  # the reconstruction is the planted signal, denoised
        signal = planted[hemi][:, None] * (amp - amp.mean())  # centred across samples
        rec = np.asarray(back.data.parts[hemi])
        err = np.linalg.norm(rec - rec.mean(axis=1, keepdims=True) - signal)
        assert err / np.linalg.norm(signal) < 0.25, err / np.linalg.norm(signal)
        noise = data[hemi] - planted[hemi][:, None] * amp
        assert err < 0.5 * np.linalg.norm(noise - noise.mean(axis=1, keepdims=True))
    # a list of SurfaceImages (one per subject) is the same data
    singles = [
        SurfaceImage(mesh=fs5["pial"], data={h: data[h][:, i] for h in HEMIS}) for i in range(n)
    ]
    np.testing.assert_allclose(model.transform(singles), model.transform(img), atol=1e-10)


# --------------------------------------------------------------------------
# real data that ship with nilearn, default penalties
# --------------------------------------------------------------------------


def test_fsaverage5_thickness_default_penalties(thickness_img):
    img, patterns = thickness_img
    with pytest.warns(
        UserWarning,
        match=r"no mask was given for the left and right "
        r"hemispheres: \d+ vertex",
    ) as rec:
        model = ImageSPCATV(3).fit(img)
    thick = load_fsaverage_data(mesh="fsaverage5", data_type="thickness")
    n_wall = sum(int(np.sum(np.asarray(thick.data.parts[h]) == 0)) for h in HEMIS)
    assert f" {n_wall} vertex" in str(rec[0].message)
    assert model.components_.shape == (3, 20484 - n_wall)
    nonzero = np.mean(model.components_ != 0, axis=1)
    assert np.all(nonzero > 0), nonzero  # every component non-empty
    assert np.all(nonzero < 0.5), nonzero  # and sparse: a minority of the vertices
    # each planted region is found by one component
    truth = [
        np.concatenate(
            [patterns["left"].get(k, np.zeros(10242)), patterns["right"].get(k, np.zeros(10242))]
        )
        for k in range(3)
    ]
    maps = model.space_.inverse_transform(model.components_)
    comps = np.concatenate([maps["left"], maps["right"]]).T
    cos = np.abs(np.array([[c @ t / np.linalg.norm(t) for t in truth] for c in comps]))
    assert np.all(cos.max(axis=0) > 0.6), cos


def test_motor_map_set_default_penalties():
    """Real motor t-map (nilearn) resampled into the 3 mm MNI mask, perturbed per subject."""
    from nilearn.image import resample_to_img
    from scipy.ndimage import gaussian_filter

    mask = load_mni152_brain_mask(resolution=3)
    motor = nib.load(load_sample_motor_activation_image())
    t = resample_to_img(
        motor, mask, interpolation="continuous", force_resample=True, copy_header=True
    ).get_fdata()
    rng = np.random.default_rng(31)
    # per subject: the positive and negative parts of the real map, scaled independently
    pos, neg = np.clip(t, 0, None), np.clip(-t, 0, None)
    vols = []
    for _ in range(16):
        noise = gaussian_filter(rng.standard_normal(mask.shape), 1.0)
        vols.append(rng.normal(1.0, 0.6) * pos + rng.normal(1.0, 0.6) * neg + 0.3 * noise)
    set_img = nib.Nifti1Image(np.stack(vols, -1).astype(np.float32), mask.affine)
    model = ImageSPCATV(2, mask=mask).fit(set_img)
    in_mask = np.asarray(mask.dataobj).astype(bool)
    assert model.components_img_.shape == mask.shape + (2,)
    nonzero = np.mean(model.components_ != 0, axis=1)
    assert np.all(nonzero > 0), nonzero
    assert np.all(nonzero < 0.5), nonzero
    # the components live where the motor map is strong
    strong = np.abs(t[in_mask]) > np.percentile(np.abs(t[in_mask]), 90)
    for comp in model.components_:
        assert np.sum(comp[strong] ** 2) / np.sum(comp**2) > 0.5


# --------------------------------------------------------------------------
# options: masks, maskers, confounds, standardize, score
# --------------------------------------------------------------------------


def test_maskers_as_mask(small_volume):
    img, mask_img, mask, _ = small_volume
    ref = ImageSPCATV(1, mask=mask_img, alpha_rel=0.5, tol=1e-2).fit(img)
    unfitted = ImageSPCATV(1, mask=NiftiMasker(mask_img=mask_img), alpha_rel=0.5, tol=1e-2).fit(img)
    fitted = ImageSPCATV(1, mask=NiftiMasker(mask_img=mask_img).fit(), alpha_rel=0.5, tol=1e-2).fit(
        img
    )
    for other in (unfitted, fitted):
        np.testing.assert_allclose(other.components_, ref.components_, atol=1e-10)
    # a masker without a mask computes it (nilearn's background strategy), as mask=None
    computed = ImageSPCATV(1, mask=NiftiMasker(), alpha_rel=0.5, tol=1e-2).fit(img)
    default = ImageSPCATV(1, alpha_rel=0.5, tol=1e-2).fit(img)
    np.testing.assert_array_equal(computed.space_.mask, default.space_.mask)
    with pytest.raises(ValueError, match="standardize.*not both"):
        ImageSPCATV(mask=NiftiMasker(mask_img=mask_img), standardize=True).fit(img)
    with pytest.raises(TypeError, match="mask: a surface mask"):
        ImageSPCATV(mask=SurfaceMasker()).fit(img)


def test_nan_voxels_and_vertices_are_left_out(small_volume, fs5):
    img, mask_img, mask, _ = small_volume
    data = img.get_fdata().copy()  # get_fdata caches: do not modify the fixture
    ijk = tuple(np.argwhere(mask)[10])
    data[ijk + (3,)] = np.nan
    bad = nib.Nifti1Image(data, img.affine)
    with pytest.warns(UserWarning, match="1 voxel"):
        model = ImageSPCATV(1, mask=mask_img, alpha_rel=0.5, tol=1e-2).fit(bad)
    assert model.space_.n_features == mask.sum() - 1 and not model.space_.mask[ijk]
    assert np.all(np.isfinite(model.components_))
    rng = np.random.default_rng(0)
    parts = {h: rng.standard_normal((10242, 5)) for h in HEMIS}
    parts["right"][17, 2] = np.inf
    with pytest.warns(UserWarning, match="1 vertex"):
        model = ImageSPCATV(1, mask=(None, None), alpha_rel=0.5, tol=1e-2).fit(
            SurfaceImage(mesh=fs5["pial"], data=parts)
        )
    assert 17 not in model.space_.vertices[1] and model.space_.vertices[1].size == 10241


def test_confounds_and_standardize(small_volume):
    img, mask_img, mask, _ = small_volume
    n = img.shape[-1]
    rng = np.random.default_rng(3)
    confound = rng.standard_normal(n)
    data = img.get_fdata() + 5.0 * confound * np.where(mask, 1.0, 0.0)[..., None]
    conf_img = nib.Nifti1Image(data, img.affine)
    model = ImageSPCATV(1, mask=mask_img, alpha_rel=0.5, tol=1e-2)
    model.fit(conf_img, confounds=confound[:, None])
    X = model.masker_.transform(conf_img, confounds=confound[:, None])
    c = confound - confound.mean()
    assert np.abs(c @ (X - X.mean(0))).max() < 1e-6 * np.abs(X).max() * n  # regressed out
    # the first component is not the confound's uniform map
    assert np.mean(model.components_[0] != 0) < 0.9
    # smoothing is nilearn's, before masking
    smooth = ImageSPCATV(1, mask=mask_img, smoothing_fwhm=6.0, alpha_rel=0.5, tol=1e-2)
    smooth.fit(img)
    Xn = NiftiMasker(mask_img=mask_img, smoothing_fwhm=6.0, standardize=None).fit().transform(img)
    np.testing.assert_allclose(smooth.masker_.transform(img), Xn)
    assert np.linalg.norm(Xn - img.get_fdata()[mask].T) > 0.1 * np.linalg.norm(Xn)
    for bad in (-1.0, "6mm"):
        with pytest.raises(ValueError, match="smoothing_fwhm must be None or a number"):
            ImageSPCATV(1, mask=mask_img, smoothing_fwhm=bad).fit(img)
    with pytest.raises(TypeError, match="resample must be True or False"):
        ImageSPCATV(1, mask=mask_img, resample="yes").fit(img)
    std = ImageSPCATV(1, mask=mask_img, standardize=True, alpha_rel=0.5, tol=1e-2).fit(img)
    Xs = std.masker_.transform(img)
    np.testing.assert_allclose(Xs.std(axis=0, ddof=1), 1.0, rtol=1e-5)


def test_score_delegates(small_volume):
    img, mask_img, mask, _ = small_volume
    model = ImageSPCATV(2, mask=mask_img, alpha_rel=0.5, tol=1e-2).fit(img)
    X = img.get_fdata()[mask].T
    score = model.score(img)
    assert np.isfinite(score)
    if hasattr(model.estimator_, "score"):
        assert score == pytest.approx(model.estimator_.score(X))
    else:  # fallback: minus the held-out reconstruction error
        from neurospca.model_selection import reconstruction_error

        assert score == pytest.approx(-reconstruction_error(X, model.estimator_))
    # the training maps are fitted better than maps of pure noise of the same size
    noise = nib.Nifti1Image(
        np.random.default_rng(1).standard_normal(img.shape) * X.std(), img.affine
    )
    assert model.score(img) > model.score(noise)


# --------------------------------------------------------------------------
# files users have on disk
# --------------------------------------------------------------------------


def test_qcache_stack_and_per_subject_mgh(fs5, tmp_path):
    rng = np.random.default_rng(11)
    n = 6
    maps = {h: (2.5 + rng.standard_normal((10242, n))).astype(np.float32) for h in HEMIS}
    for hemi, short in (("left", "lh"), ("right", "rh")):
        # qcache: one MGH file holding n frames, shape (n_vertices, 1, 1, n)
        write_surf_data(maps[hemi], tmp_path / f"{short}.thickness.fwhm10.fsaverage5.mgh")
        for i in range(n):
            (tmp_path / f"sub-{i}").mkdir(exist_ok=True)
            write_surf_data(
                maps[hemi][:, i], tmp_path / f"sub-{i}" / f"{short}.thickness.fwhm10.fsaverage5.mgh"
            )
    stack = nib.load(tmp_path / "lh.thickness.fwhm10.fsaverage5.mgh")
    assert stack.shape == (10242, 1, 1, n)
    img_stack = load_surface_image(
        tmp_path / "lh.thickness.fwhm10.fsaverage5.mgh",
        tmp_path / "rh.thickness.fwhm10.fsaverage5.mgh",
        fs5["pial"],
    )
    per_subject = load_surface_image(
        [tmp_path / f"sub-{i}" / "lh.thickness.fwhm10.fsaverage5.mgh" for i in range(n)],
        [tmp_path / f"sub-{i}" / "rh.thickness.fwhm10.fsaverage5.mgh" for i in range(n)],
        fs5["pial"],
    )
    # two stacks of three frames each are the same data as well
    for hemi, short in (("left", "lh"), ("right", "rh")):
        write_surf_data(maps[hemi][:, :3], tmp_path / f"a_{short}.mgh")
        write_surf_data(maps[hemi][:, 3:], tmp_path / f"b_{short}.mgh")
    two = load_surface_image(
        [tmp_path / "a_lh.mgh", tmp_path / "b_lh.mgh"],
        [tmp_path / "a_rh.mgh", tmp_path / "b_rh.mgh"],
        fs5["pial"],
    )
    for img in (img_stack, per_subject, two):
        assert img.shape == (20484, n)
        for hemi in HEMIS:
            np.testing.assert_array_equal(np.asarray(img.data.parts[hemi]), maps[hemi])
    a = ImageSPCATV(1, mask=(None, None), alpha_rel=0.5, tol=1e-2).fit(img_stack)
    b = ImageSPCATV(1, mask=(None, None), alpha_rel=0.5, tol=1e-2).fit(per_subject)
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-12)


def _write_label_gii(path, labels, names):
    table = nib.gifti.GiftiLabelTable()
    for key, name in names.items():
        lab = nib.gifti.GiftiLabel(key=key, red=0.5, green=0.5, blue=0.5, alpha=1.0)
        lab.label = name
        table.labels.append(lab)
    darray = nib.gifti.GiftiDataArray(
        labels.astype(np.int32), intent="NIFTI_INTENT_LABEL", datatype="NIFTI_TYPE_INT32"
    )
    nib.gifti.GiftiImage(darrays=[darray], labeltable=table).to_filename(path)


def test_gifti_label_and_shape_masks(fs5, tmp_path):
    rng = np.random.default_rng(4)
    coords = fs5["pial"].parts["left"].coordinates
    wall = coords[:, 0] > 30  # a stand-in medial wall
    _write_label_gii(
        tmp_path / "lh.cortex.label.gii", np.where(wall, 0, 1), {0: "Medial_Wall", 1: "Cortex"}
    )
    np.testing.assert_array_equal(load_cortex_mask(tmp_path / "lh.cortex.label.gii", 10242), ~wall)
    # labels without names: 0 is left out
    _write_label_gii(tmp_path / "lh.nonames.label.gii", np.where(wall, 0, 3), {0: "", 3: ""})
    np.testing.assert_array_equal(load_cortex_mask(tmp_path / "lh.nonames.label.gii"), ~wall)
    right = rng.random(10242) > 0.2
    write_surf_data(right.astype(np.float32), tmp_path / "rh.cortex.shape.gii")
    np.testing.assert_array_equal(load_cortex_mask(tmp_path / "rh.cortex.shape.gii", 10242), right)
    write_surf_data(rng.random(10242).astype(np.float32), tmp_path / "rh.prob.shape.gii")
    with pytest.raises(ValueError, match="other than 0 and 1"):
        load_cortex_mask(tmp_path / "rh.prob.shape.gii", 10242)
    with pytest.raises(ValueError, match="source has 10242 vertices but n_vertices=5"):
        load_cortex_mask(tmp_path / "lh.cortex.label.gii", 5)
    data = {h: rng.standard_normal((10242, 4)) for h in HEMIS}
    img = SurfaceImage(mesh=fs5["pial"], data=data)
    model = ImageSPCATV(
        1,
        mask=(tmp_path / "lh.cortex.label.gii", str(tmp_path / "rh.cortex.shape.gii")),
        alpha_rel=0.5,
        tol=1e-2,
    ).fit(img)
    np.testing.assert_array_equal(model.space_.vertices[0], np.flatnonzero(~wall))
    np.testing.assert_array_equal(model.space_.vertices[1], np.flatnonzero(right))


def test_polymesh_accepted(fs5):
    from neurospca import load_surf_mesh

    poly = fs5["white_matter"]
    assert isinstance(poly, PolyMesh)
    op1, h1 = tv_from_hemispheres(poly)
    op2, h2 = tv_from_hemispheres(poly.parts["left"], poly.parts["right"])
    assert (op1.matrix != op2.matrix).nnz == 0 and h1.n_vertices == h2.n_vertices
    with pytest.raises(TypeError, match=r"PolyMesh.*mesh.parts\['left'\]"):
        load_surf_mesh(poly, "left_mesh")
    with pytest.raises(ValueError, match="leave right_mesh as None"):
        tv_from_hemispheres(poly, poly.parts["right"])
    # an in-memory PolyMesh built from arrays, and a SurfaceImage on it
    mem = PolyMesh(
        left=InMemoryMesh(poly.parts["left"].coordinates, poly.parts["left"].faces),
        right=InMemoryMesh(poly.parts["right"].coordinates, poly.parts["right"].faces),
    )
    rng = np.random.default_rng(0)
    left, right = rng.standard_normal((5, 10242)), rng.standard_normal((5, 10242))
    img = load_surface_image(left, right, mem)
    np.testing.assert_array_equal(np.asarray(img.data.parts["left"]), left.T)
    model = ImageSPCATV(1, mask=(None, None), alpha_rel=0.5, tol=1e-2).fit(img)
    assert (model.operator_.matrix != op1.matrix).nnz == 0
    np.testing.assert_array_equal(model.meshes_["left"][1], poly.parts["left"].faces)
    # fit_surfaces and load_surface_subjects take the PolyMesh too
    est, maps, hemis = neurospca.fit_surfaces(
        left, right, mem, estimator=SPCATV(1, tol=1e-2, alpha_rel=0.5)
    )
    np.testing.assert_allclose(est.components_, model.components_, atol=1e-10)


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------


def test_bad_input(small_volume, fs5, tmp_path):
    img, mask_img, mask, _ = small_volume
    rng = np.random.default_rng(0)
    # a SurfaceImage whose data and mesh disagree
    surf = SurfaceImage(mesh=fs5["pial"], data={h: rng.standard_normal((10242, 3)) for h in HEMIS})
    surf.data.parts["left"] = rng.standard_normal((10000, 3))
    with pytest.raises(
        ValueError,
        match=r"imgs: the left data have shape \(10000, 3\) but "
        "the left mesh has 10242 vertices",
    ):
        ImageSPCATV(1).fit(surf)
    one = SurfaceImage(
        mesh=PolyMesh(left=fs5["pial"].parts["left"]),
        data={"left": rng.standard_normal((10242, 3))},
    )
    with pytest.raises(ValueError, match="imgs must hold both hemispheres"):
        ImageSPCATV(1).fit(one)
    # confounds of the wrong length
    with pytest.raises(ValueError, match="confounds has 5 rows but imgs hold 16 samples"):
        ImageSPCATV(1, mask=mask_img).fit(img, confounds=np.ones((5, 2)))
    good = SurfaceImage(mesh=fs5["pial"], data={h: rng.standard_normal((10242, 3)) for h in HEMIS})
    with pytest.raises(ValueError, match="confounds has 4 rows but imgs hold 3 samples"):
        ImageSPCATV(1).fit(good, confounds=np.ones(4))
    # a mask of the wrong shape or affine
    wrong_shape = nib.Nifti1Image(np.ones((5, 5, 5), np.uint8), mask_img.affine)
    with pytest.raises(
        ValueError,
        match=r"imgs has shape \(11, 13, 9\) but mask has shape "
        r"\(5, 5, 5\).*resample",
    ):
        ImageSPCATV(1, mask=wrong_shape).fit(img)
    shifted = mask_img.affine.copy()
    shifted[0, 3] += 2.0
    with pytest.raises(ValueError, match="affine that differs from the mask's.*resample"):
        ImageSPCATV(1, mask=nib.Nifti1Image(mask.astype(np.uint8), shifted)).fit(img)
    # resample=True resamples onto the mask instead
    model = ImageSPCATV(
        1,
        mask=nib.Nifti1Image(mask.astype(np.uint8), shifted),
        resample=True,
        alpha_rel=0.5,
        tol=1e-2,
    ).fit(img)
    np.testing.assert_array_equal(model.components_img_.affine, shifted)
    with pytest.raises(
        ValueError,
        match=r"mask: the left mask has shape \(100,\), expected "
        r"\(10242,\)",
    ):
        ImageSPCATV(1, mask=(np.ones(100, bool), None)).fit(good)
    small = SurfaceImage(
        mesh=PolyMesh(
            left=InMemoryMesh(*neurospca.icosphere(2)), right=InMemoryMesh(*neurospca.icosphere(2))
        ),
        data={h: np.ones(162, bool) for h in HEMIS},
    )
    with pytest.raises(ValueError, match="mask: the mask's left mesh does not match"):
        ImageSPCATV(1, mask=small).fit(good)
    with pytest.raises(
        TypeError,
        match="mask: a NIfTI mask, a NiftiMasker or a single path was given for surface images",
    ):
        ImageSPCATV(1, mask=mask_img).fit(good)
    with pytest.raises(ValueError, match="smoothing_fwhm is only available for volumes"):
        ImageSPCATV(1, smoothing_fwhm=6.0).fit(good)
    fitted = ImageSPCATV(1, alpha_rel=0.5, tol=1e-2).fit(good)
    with pytest.raises(TypeError, match="fitted on surfaces"):
        fitted.transform(img)
    # new images with NaN inside the fitted mask: the columns are fixed
    nan_surf = SurfaceImage(
        mesh=fs5["pial"], data={h: rng.standard_normal((10242, 2)) for h in HEMIS}
    )
    nan_surf.data.parts["right"][5, 1] = np.nan
    with pytest.raises(ValueError, match="imgs: some voxels/vertices of the mask are NaN"):
        fitted.transform(nan_surf)
    vol_model = ImageSPCATV(1, mask=mask_img, alpha_rel=0.5, tol=1e-2).fit(img)
    nan_vol = img.get_fdata().copy()
    nan_vol[tuple(np.argwhere(mask)[0]) + (0,)] = np.nan
    with pytest.raises(ValueError, match="imgs: some voxels/vertices of the mask are NaN"):
        vol_model.transform(nib.Nifti1Image(nan_vol, img.affine))
    with pytest.raises(ValueError, match="imgs.*no file"):
        ImageSPCATV(1).fit(str(tmp_path / "nothing-*.nii.gz"))


# --------------------------------------------------------------------------
# the command line's new options
# --------------------------------------------------------------------------


def test_cli_alpha_options(small_volume, tmp_path, capsys):
    from neurospca import load_model
    from neurospca.cli import main

    img, mask_img, mask, _ = small_volume
    img.to_filename(tmp_path / "maps.nii.gz")
    mask_img.to_filename(tmp_path / "mask.nii.gz")
    base = [
        "fit",
        "--images",
        str(tmp_path / "maps.nii.gz"),
        "--mask",
        str(tmp_path / "mask.nii.gz"),
        "--n-components",
        "1",
        "--tol",
        "1e-2",
        "-q",
    ]
    assert main(base + ["--alpha-rel", "0.7", "--output", str(tmp_path / "rel")]) == 0
    saved = load_model(tmp_path / "rel" / "model.npz")
    assert saved.estimator.alpha is None and saved.estimator.alpha_rel == 0.7
    X = img.get_fdata()[mask].T
    Xc = X - X.mean(0)
    l1_max = np.sqrt((Xc**2).sum(0)).max() / X.shape[0]
    np.testing.assert_allclose(saved.estimator.alpha_, 0.7 * l1_max, rtol=1e-6)
    # defaults are SPCATV's (the parser's and the model's, without fitting)
    from neurospca._commands import estimator_from_args as _estimator
    from neurospca.cli import _build_parser

    args = _build_parser().parse_args(base[:-1] + ["-q"])
    model = _estimator(args, mask=mask_img)
    for name in ("alpha", "alpha_rel", "l1_ratio", "tv_ratio", "max_iter", "solver"):
        assert model.get_params()[name] == SPCATV().get_params()[name], name
    args = _build_parser().parse_args(base + ["--alpha", "0.3", "--l1-ratio", "0.2"])
    model = _estimator(args)
    assert model.alpha == 0.3 and model.l1_ratio == 0.2
    assert model.tv_ratio == SPCATV().tv_ratio
    capsys.readouterr()
    assert main(base + ["--alpha", "1", "--alpha-rel", "2", "--output", str(tmp_path / "x")]) == 2
    assert "--alpha (absolute) or --alpha-rel" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------------
# the report of a fitted image model, in a browser
# --------------------------------------------------------------------------


def _open_report(browser, path):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    console = []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    page.goto("file://" + os.path.abspath(path))
    page.wait_for_load_state("load")
    images_ok = page.evaluate(
        "Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)"
    )
    alts = page.evaluate("Array.from(document.images).map(i => i.alt)")
    text = page.text_content("body")
    captions = page.evaluate(
        "Array.from(document.querySelectorAll('figcaption')).map(c => c.textContent)"
    )
    n_cluster_rows = page.evaluate(
        "Array.from(document.querySelectorAll('table.clusters')).map("
        "t => t.querySelectorAll('tbody tr').length)"
    )
    page.close()
    return console, images_ok, alts, text, captions, n_cluster_rows


@pytest.mark.parametrize("kind", ["volume", "surface"])
def test_generate_report_in_browser(kind, small_volume, thickness_img, browser, tmp_path):
    from neurospca.reporting import HTMLReport

    if kind == "volume":
        img, mask_img, _, _ = small_volume
        model = ImageSPCATV(2, mask=mask_img, alpha_rel=0.5, tol=1e-2).fit(img)
    else:
        img, _ = thickness_img
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model = ImageSPCATV(1, tol=1e-2).fit(img)  # one component: drawing is slow
    report = model.generate_report(title=f"ImageSPCATV {kind} <b>x</b>")
    assert isinstance(report, HTMLReport)
    assert "ImageSPCATV" in report._repr_html_()
    path = report.save_as_html(tmp_path / "report.html")
    console, images_ok, alts, text, captions, n_cluster_rows = _open_report(browser, path)
    errors = [c for c in console if c[0] in ("error", "pageerror")]
    assert not errors, errors
    assert images_ok and all(images_ok)
    assert sum(a.startswith("Component ") for a in alts) == model.n_components, alts
    assert f"ImageSPCATV {kind} <b>x</b>" in text  # escaped, shown as text
    # one caption per component, naming the peak where the loading is largest
    peaks = [c for c in captions if c.startswith("Peak loading")]
    assert len(peaks) == model.n_components, captions
    C = model.components_
    if kind == "surface":
        assert "cortical surface" in text
        for k, cap in enumerate(peaks):
            col = int(np.argmax(np.abs(C[k])))
            hemi = 0 if col < model.space_.vertices[0].size else 1
            vertex = model.space_.vertices[hemi][col - hemi * model.space_.vertices[0].size]
            assert f"vertex {vertex}" in cap and ("left" if hemi == 0 else "right") in cap
    else:
        assert "volume (brain mask)" in text
        affine = model.mask_img_.affine
        ijk = np.argwhere(np.asarray(model.mask_img_.dataobj) > 0)
        for k, cap in enumerate(peaks):
            xyz = affine[:3, :3] @ ijk[int(np.argmax(np.abs(C[k])))] + affine[:3, 3]
            assert "({:.0f}, {:.0f}, {:.0f}) mm".format(*xyz) in cap, (cap, xyz)
    # a cluster table per component, at least one cluster each
    assert len(n_cluster_rows) == model.n_components and min(n_cluster_rows) >= 1
    assert "de Pierrefeu" in text and "certified" in text  # the methods paragraph


def test_surface_maskers_confounds_standardize(fs5):
    rng = np.random.default_rng(8)
    n = 12
    confound = rng.standard_normal(n)
    data = {h: rng.standard_normal((10242, n)) + 3.0 * confound for h in HEMIS}
    img = SurfaceImage(mesh=fs5["pial"], data=data)
    keep = {h: rng.random(10242) > 0.1 for h in HEMIS}
    mask_img = SurfaceImage(mesh=fs5["pial"], data=keep)
    ref = ImageSPCATV(1, mask=mask_img, alpha_rel=0.5, tol=1e-2).fit(img)
    for masker in (SurfaceMasker(mask_img=mask_img), SurfaceMasker(mask_img=mask_img).fit()):
        other = ImageSPCATV(1, mask=masker, alpha_rel=0.5, tol=1e-2).fit(img)
        np.testing.assert_array_equal(other.space_.vertices[0], ref.space_.vertices[0])
        np.testing.assert_allclose(other.components_, ref.components_, atol=1e-10)
    model = ImageSPCATV(1, mask=mask_img, standardize=True, alpha_rel=0.5, tol=1e-2)
    model.fit(img, confounds=confound)
    X = model.masker_.transform(img, confounds=confound)
    c = confound - confound.mean()
    assert np.abs(c @ X).max() < 1e-6 * n  # the confound is regressed out
    np.testing.assert_allclose(X.std(axis=0, ddof=1), 1.0, rtol=1e-5)
    # confounds in transform too
    assert model.transform(img, confounds=confound).shape == (n, 1)


def test_cli_surface_qcache_and_gifti_cortex(fs5, tmp_path, capsys):
    """The command line on a qcache stack per hemisphere and GIFTI cortex masks."""
    from neurospca import load_model, write_surf_mesh
    from neurospca.cli import main

    rng = np.random.default_rng(21)
    n = 8
    thick = load_fsaverage_data(mesh="fsaverage5", data_type="thickness")
    varying = {}
    for hemi, short in (("left", "lh"), ("right", "rh")):
        mesh = fs5["pial"].parts[hemi]
        write_surf_mesh(mesh.coordinates, mesh.faces, tmp_path / f"{short}.pial.gii")
        base = np.asarray(thick.data.parts[hemi], dtype=np.float64)
        blob = _blob(mesh.coordinates, 2000, 12.0)
        maps = (
            base[:, None]
            + (blob[:, None] * rng.standard_normal(n) + 0.1 * rng.standard_normal((10242, n)))
            * (base > 0)[:, None]
        )
        maps = maps.astype(np.float32)
        varying[hemi] = np.ptp(maps, axis=1) > 0
        write_surf_data(maps, tmp_path / f"{short}.thickness.fwhm10.fsaverage5.mgh")
        _write_label_gii(
            tmp_path / f"{short}.cortex.label.gii",
            (base > 0).astype(int),
            {0: "Medial_Wall", 1: "Cortex"},
        )
    args = ["fit", "--n-components", "1", "--tol", "1e-2", "--engine", "matplotlib", "-q"]
    for hemi, short in (("left", "lh"), ("right", "rh")):
        args += [
            f"--{hemi}-mesh",
            str(tmp_path / f"{short}.pial.gii"),
            f"--{hemi}-data",
            str(tmp_path / f"{short}.thickness.fwhm10.fsaverage5.mgh"),
        ]
    # left: a GIFTI label cortex mask; right: none, so its constant medial wall is left out
    args += ["--left-cortex", str(tmp_path / "lh.cortex.label.gii")]
    capsys.readouterr()
    assert main(args + ["--output", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "neurospca: warning: no mask was given for the right hemisphere: " in err
    saved = load_model(tmp_path / "out" / "model.npz")
    assert len(saved.metadata["sample_labels"]) == n  # one sample per frame of the stack
    cortex_left = np.asarray(thick.data.parts["left"]) > 0  # the labels written above
    np.testing.assert_array_equal(saved.space.vertices[0], np.flatnonzero(cortex_left))
    np.testing.assert_array_equal(saved.space.vertices[1], np.flatnonzero(varying["right"]))
    assert 200 < 10242 - saved.space.vertices[1].size < 400  # the medial wall
    assert np.any(saved.estimator.components_ != 0)
