"""Volumes: masks, images <-> X, unmasking, the grid TV operator on NIfTI input.

Only nilearn's bundled data is used (no download): the MNI152 brain mask at
3 mm (64,030 voxels) and the sample motor t-map (on another grid).
"""

import nibabel as nib
import numpy as np
import pytest

import neurospca
from neurospca.masking import (
    VolumeMasker,
    grid_tv_operator,
    images_to_data,
    load_mask_img,
    load_volume_data,
    tv_from_mask,
    unmask,
)


@pytest.fixture(scope="module")
def mni_mask():
    datasets = pytest.importorskip("nilearn.datasets")
    return datasets.load_mni152_brain_mask(resolution=3, threshold=0.48)


@pytest.fixture(scope="module")
def small_mask(mni_mask):
    """A real piece of the MNI brain mask: a box of it (a few thousand voxels)."""
    data = np.asanyarray(mni_mask.dataobj).astype(bool)
    box = np.zeros_like(data)
    box[20:44, 25:50, 25:45] = True
    return nib.Nifti1Image((data & box).astype(np.uint8), mni_mask.affine, mni_mask.header)


def _maps(mask_img, n, seed=0):
    """n random 3-D float maps on the mask's grid (as images)."""
    rng = np.random.default_rng(seed)
    return [nib.Nifti1Image(rng.standard_normal(mask_img.shape), mask_img.affine) for _ in range(n)]


def _tv_by_hand(vol, mask):
    """Independent grid TV: sum over in-mask voxels of the norm of the forward
    differences towards in-mask neighbours (np.diff along each axis)."""
    sq = np.zeros(vol.shape)
    for axis in range(vol.ndim):
        d = np.diff(vol, axis=axis)
        both = np.logical_and(
            np.take(mask, range(0, vol.shape[axis] - 1), axis=axis),
            np.take(mask, range(1, vol.shape[axis]), axis=axis),
        )
        d = np.where(both, d, 0.0)
        pad = [(0, 0)] * vol.ndim
        pad[axis] = (0, 1)
        sq += np.pad(d, pad) ** 2
    return float(np.sqrt(sq)[mask].sum())


# ---------------------------------------------------------------- masks


def test_mni_mask_has_paper_size_and_same_operator_from_image_path_array(mni_mask, tmp_path):
    img = load_mask_img(mni_mask)
    arr = np.asanyarray(img.dataobj).astype(bool)
    assert arr.sum() == 64030
    np.testing.assert_array_equal(img.affine, mni_mask.affine)
    path = tmp_path / "mask.nii.gz"
    mni_mask.to_filename(path)
    ops = [tv_from_mask(mni_mask), tv_from_mask(str(path)), tv_from_mask(path), tv_from_mask(arr)]
    for op in ops:
        assert op.n_features == 64030
        assert op.norm2 == 12.0
        assert (op.matrix != ops[-1].matrix).nnz == 0
        np.testing.assert_array_equal(op.group_ptr, ops[-1].group_ptr)
    assert neurospca.tv_from_mask is tv_from_mask


def test_tv_of_mask_matches_independent_computation(small_mask):
    arr = np.asanyarray(small_mask.dataobj).astype(bool)
    vol = np.random.default_rng(1).standard_normal(arr.shape)
    op = tv_from_mask(small_mask)
    X, _ = images_to_data(nib.Nifti1Image(vol, small_mask.affine), small_mask)
    assert np.isclose(op.value(X[0]), _tv_by_hand(vol, arr), rtol=1e-12)


def test_array_behaviour_is_kept():
    mask = np.zeros((4, 5), dtype=bool)
    mask[1:, 1:] = True
    op = tv_from_mask(mask)
    ref = grid_tv_operator(mask)
    assert (op.matrix != ref.matrix).nnz == 0
    assert op.norm2 == 8.0
    # 1-D and 0/1 ints still work
    assert tv_from_mask(np.array([0, 1, 1, 1])).n_rows == 2
    # threshold binarises arrays explicitly
    prob = np.where(mask, 0.9, 0.1)
    with pytest.raises(ValueError, match="mask"):
        tv_from_mask(prob)
    assert (tv_from_mask(prob, threshold=0.5).matrix != ref.matrix).nnz == 0


def test_mask_binarised_explicitly(mni_mask):
    data = np.asanyarray(mni_mask.dataobj).astype(np.float64) * 0.8 + 0.1
    img = nib.Nifti1Image(data, mni_mask.affine)
    with pytest.raises(ValueError, match=r"mask must hold only 0 and 1.*threshold"):
        load_mask_img(img)
    out = load_mask_img(img, threshold=0.5)
    assert np.asanyarray(out.dataobj).sum() == 64030
    assert out.get_data_dtype() == np.uint8


def test_empty_mask_raises(mni_mask):
    empty = nib.Nifti1Image(np.zeros(mni_mask.shape, np.uint8), mni_mask.affine)
    with pytest.raises(ValueError, match="mask is empty"):
        load_mask_img(empty)
    with pytest.raises(ValueError, match="mask is empty"):
        tv_from_mask(empty)
    with pytest.raises(ValueError, match="mask is empty"):
        images_to_data(_maps(mni_mask, 1), empty)


def test_4d_mask_raises(mni_mask):
    four = nib.Nifti1Image(np.ones((3, 3, 3, 2), np.uint8), np.eye(4))
    with pytest.raises(ValueError, match="mask must be a 3-D image.*4-D"):
        load_mask_img(four)
    with pytest.raises(ValueError, match="mask must be a 3-D image"):
        tv_from_mask(four)
    with pytest.raises(ValueError, match="mask must be a 3-D"):
        load_mask_img(np.ones((2, 2, 2, 2), bool))


def test_bad_mask_types(tmp_path):
    with pytest.raises(FileNotFoundError, match="mask"):
        load_mask_img(tmp_path / "missing.nii.gz")
    with pytest.raises(TypeError, match="mask"):
        load_mask_img(3.5)
    with pytest.raises(TypeError, match="threshold"):
        load_mask_img(np.ones((2, 2, 2)), threshold="high")


# ---------------------------------------------------------------- images -> X


def test_images_to_data_list_4d_and_glob_agree(small_mask, tmp_path):
    imgs = _maps(small_mask, 4)
    arr = np.asanyarray(small_mask.dataobj).astype(bool)
    X_list, m = images_to_data(imgs, small_mask)
    assert X_list.shape == (4, arr.sum())
    for i, img in enumerate(imgs):  # C order of in-mask voxels
        np.testing.assert_array_equal(X_list[i], img.get_fdata()[arr])
    four = nib.Nifti1Image(np.stack([i.get_fdata() for i in imgs], axis=-1), small_mask.affine)
    X_4d, _ = images_to_data(four, small_mask)
    for i, img in enumerate(imgs):
        img.to_filename(tmp_path / f"map_{i:02d}.nii.gz")
    X_glob, _ = images_to_data(str(tmp_path / "map_*.nii.gz"), small_mask)
    X_paths, _ = images_to_data(sorted(tmp_path.glob("map_*.nii.gz")), small_mask)
    np.testing.assert_array_equal(X_4d, X_list)
    np.testing.assert_array_equal(X_glob, X_list)
    np.testing.assert_array_equal(X_paths, X_list)
    np.testing.assert_array_equal(np.asanyarray(m.dataobj), arr)


def test_shape_mismatch_raises_and_resample_fixes(mni_mask):
    datasets = pytest.importorskip("nilearn.datasets")
    motor = datasets.load_sample_motor_activation_image()  # 53x63x46, other affine
    with pytest.raises(ValueError, match=r"imgs has shape \(53, 63, 46\).*resample=True"):
        images_to_data(motor, mni_mask)
    with pytest.raises(ValueError, match=r"imgs\[1\] has shape"):
        images_to_data([_maps(mni_mask, 1)[0], motor], mni_mask)
    X, mask_img = images_to_data([motor, motor], mni_mask, resample=True)
    assert X.shape[0] == 2 and X.shape[1] <= 64030 and np.all(np.isfinite(X))
    from nilearn.image import resample_to_img

    ref = resample_to_img(
        motor, mni_mask, interpolation="continuous", force_resample=True, copy_header=True
    ).get_fdata()
    kept = np.asanyarray(mask_img.dataobj).astype(bool)
    np.testing.assert_allclose(X[0], ref[kept])
    assert kept.sum() == 64030  # nothing NaN after resampling (fill value 0)
    masker = VolumeMasker(mni_mask, resample=True)
    np.testing.assert_array_equal(masker.transform(motor), X[:1])
    with pytest.raises(ValueError, match="resample=True"):
        VolumeMasker(mni_mask).transform(motor)


def test_affine_mismatch_raises(small_mask):
    affine = small_mask.affine.copy()
    affine[0, 3] += 1.5
    shifted = nib.Nifti1Image(np.ones(small_mask.shape), affine)
    with pytest.raises(ValueError, match=r"imgs\[0\] has an affine that differs.*resample"):
        images_to_data([shifted], small_mask)


def test_bad_imgs_arguments(small_mask, tmp_path):
    with pytest.raises(TypeError, match="imgs must be NIfTI images"):
        images_to_data(np.zeros((3, 4)), small_mask)
    with pytest.raises(ValueError, match="imgs is empty"):
        images_to_data([], small_mask)
    with pytest.raises(ValueError, match="imgs: the pattern .* matches no file"):
        images_to_data(str(tmp_path / "*.nii"), small_mask)
    with pytest.raises(FileNotFoundError, match=r"imgs\[0\]"):
        images_to_data([tmp_path / "nope.nii"], small_mask)
    with pytest.raises(TypeError, match="resample"):
        images_to_data(_maps(small_mask, 1), small_mask, resample="yes")


def test_nan_voxels_leave_the_mask_with_a_warning(small_mask):
    imgs = _maps(small_mask, 3)
    arr = np.asanyarray(small_mask.dataobj).astype(bool)
    idx = np.argwhere(arr)[[0, 10, 100, 1000, 2000]]
    data = imgs[1].get_fdata()
    data[tuple(idx[:4].T)] = np.nan
    data[tuple(idx[4])] = np.inf
    imgs[1] = nib.Nifti1Image(data, small_mask.affine)
    with pytest.warns(UserWarning, match=r"5 voxel\(s\) of the mask are NaN"):
        X, reduced = images_to_data(imgs, small_mask)
    red = np.asanyarray(reduced.dataobj).astype(bool)
    assert red.sum() == arr.sum() - 5 and X.shape == (3, arr.sum() - 5)
    assert not red[tuple(idx.T)].any() and np.all(np.isfinite(X))
    np.testing.assert_array_equal(X[0], imgs[0].get_fdata()[red])
    # the operator of the returned mask matches X
    with pytest.warns(UserWarning):
        X2, op, masker = load_volume_data(imgs, small_mask)
    assert op.n_features == X2.shape[1]
    # a masker with fixed columns refuses NaN instead of dropping silently
    with pytest.raises(ValueError, match="imgs: .*NaN"):
        VolumeMasker(small_mask).transform(imgs)


def test_all_nan_raises(small_mask):
    img = nib.Nifti1Image(np.full(small_mask.shape, np.nan), small_mask.affine)
    with pytest.raises(ValueError, match="imgs are NaN"):
        images_to_data(img, small_mask)


# ---------------------------------------------------------------- unmask


def test_unmask_round_trip_through_nifti_files(small_mask, tmp_path):
    arr = np.asanyarray(small_mask.dataobj).astype(bool)
    rng = np.random.default_rng(2)
    V = rng.standard_normal((3, arr.sum()))
    img4 = unmask(V, small_mask)
    assert img4.shape == arr.shape + (3,)
    np.testing.assert_array_equal(img4.affine, small_mask.affine)
    np.testing.assert_array_equal(img4.get_fdata()[~arr], 0.0)
    img3 = unmask(V[1], small_mask)
    assert img3.shape == arr.shape
    # exact NIfTI round trip: values, affine, and the columns of X
    img4.to_filename(tmp_path / "loadings.nii.gz")
    back = nib.load(tmp_path / "loadings.nii.gz")
    np.testing.assert_array_equal(back.affine, small_mask.affine)
    np.testing.assert_array_equal(back.header.get_qform(), small_mask.header.get_qform())
    X, _ = images_to_data(tmp_path / "loadings.nii.gz", small_mask)
    np.testing.assert_array_equal(X, V)
    X3, _ = images_to_data(img3, small_mask)
    np.testing.assert_array_equal(X3[0], V[1])


def test_unmask_wrong_size_raises(small_mask):
    with pytest.raises(ValueError, match="V must have shape"):
        unmask(np.zeros(7), small_mask)
    with pytest.raises(ValueError, match="V must have shape"):
        unmask(np.zeros((2, 3, 4)), small_mask)


def test_masker_is_consistent(small_mask):
    imgs = _maps(small_mask, 2)
    X, op, masker = load_volume_data(imgs, small_mask)
    assert op.n_features == X.shape[1] == masker.n_features
    np.testing.assert_array_equal(masker.transform(imgs), X)
    back = masker.inverse_transform(X)
    np.testing.assert_array_equal(masker.transform(back), X)
    assert "VolumeMasker" in repr(masker)


# ---------------------------------------------------------------- end to end


def _blob(shape, center, width):
    grid = np.indices(shape).astype(float)
    d2 = sum((g - c) ** 2 for g, c in zip(grid, center, strict=True))
    return np.exp(-d2 / (2 * width**2))


def test_spcatv_end_to_end_on_a_real_mask_returns_loading_images(small_mask, tmp_path):
    """Maps = two smooth blobs with random weights + noise, on a real mask;
    the first two loadings recover the blobs and come back as a 4-D image."""
    arr = np.asanyarray(small_mask.dataobj).astype(bool)
    rng = np.random.default_rng(0)
    blobs = [_blob(arr.shape, (28, 33, 32), 3.0), _blob(arr.shape, (37, 43, 37), 3.0)]
    n = 40
    w = rng.standard_normal((n, 2)) * [3.0, 2.0]
    for i in range(n):
        vol = w[i, 0] * blobs[0] + w[i, 1] * blobs[1] + 0.3 * rng.standard_normal(arr.shape)
        img = nib.Nifti1Image(vol.astype(np.float32), small_mask.affine)
        img.to_filename(tmp_path / f"s{i:02d}.nii")
    template = neurospca.SPCATV(n_components=2, alpha=0.1, l1_ratio=0.1, tv_ratio=0.5)
    est, img, masker = neurospca.fit_images(str(tmp_path / "s*.nii"), small_mask, template)
    assert template.operator is None and not hasattr(template, "components_")  # cloned
    assert est.operator.n_features == masker.n_features == est.components_.shape[1]
    # the same as preparing the data by hand
    X, op, _ = load_volume_data(str(tmp_path / "s*.nii"), small_mask)
    np.testing.assert_allclose(est.mean_, X.mean(axis=0))
    assert (op.matrix != est.operator.matrix).nnz == 0
    assert img.shape == arr.shape + (2,)
    np.testing.assert_array_equal(img.affine, small_mask.affine)
    loadings = img.get_fdata()
    assert np.all(loadings[~arr] == 0)
    corr = np.array(
        [
            [abs(np.corrcoef(np.abs(loadings[..., k][arr]), b[arr])[0, 1]) for b in blobs]
            for k in range(2)
        ]
    )
    # each component is one blob (in either order)
    assert max(corr[0, 0] + corr[1, 1], corr[0, 1] + corr[1, 0]) > 1.8, corr
    # sparse: most voxels are exactly zero, unlike plain PCA
    assert np.all(np.mean(est.components_ == 0, axis=1) > 0.5)


def test_fit_images_rejects_bad_estimator(small_mask):
    with pytest.raises(TypeError, match="estimator must be an unfitted estimator"):
        neurospca.fit_images(_maps(small_mask, 3), small_mask, estimator="SPCATV")
