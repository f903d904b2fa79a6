"""The demo's inputs without nilearn's datasets (issue 22, round 3): the stored
MNI152 3 mm mask, and the in-mask values gathered volume by volume."""

import numpy as np
import pytest

from neurospca.datasets import make_fmri_like, mni152_brain_mask
from neurospca.image._masking import _in_mask


def test_stored_mask_is_nilearns_mni152_mask_at_3mm():
    datasets = pytest.importorskip("nilearn.datasets")
    ref = datasets.load_mni152_brain_mask(resolution=3, threshold=0.48)
    mask, affine = mni152_brain_mask()
    assert mask.dtype == bool and mask.sum() == 64_030
    assert np.array_equal(mask, ref.get_fdata() > 0)
    assert np.array_equal(affine, ref.affine)
    X, patterns, fmri_mask = make_fmri_like(n_samples=5, random_state=3)
    assert np.array_equal(fmri_mask, mask) and X.shape == (5, 64_030)


@pytest.mark.parametrize("voxel_size", [4, 5, 6])
def test_coarser_mask_is_the_3mm_mask_at_the_nearest_voxel(voxel_size):
    mask3, affine3 = mni152_brain_mask()
    mask, affine = mni152_brain_mask(voxel_size)
    assert np.allclose(np.diag(affine), [voxel_size] * 3 + [1])
    assert np.array_equal(affine[:3, 3], affine3[:3, 3])  # same origin
    # every voxel centre in world mm, looked up in the 3 mm mask at the nearest voxel
    ijk = np.indices(mask.shape).reshape(3, -1).T
    world = ijk @ affine[:3, :3].T + affine[:3, 3]
    ijk3 = np.rint((world - affine3[:3, 3]) / 3).astype(int)
    assert np.all(ijk3 < mask3.shape)  # inside the 3 mm field of view
    assert np.array_equal(mask.ravel(), mask3[tuple(ijk3.T)])
    # the brain keeps its volume (within 10 %)
    assert abs(mask.sum() * voxel_size**3 / (mask3.sum() * 27) - 1) < 0.1
    X, patterns, fmri_mask = make_fmri_like(n_samples=4, random_state=2, voxel_size=voxel_size)
    assert np.array_equal(fmri_mask, mask) and X.shape == (4, mask.sum())
    # the blobs keep their radius in mm: support (loading > 0) within a 24 mm ball
    for pattern in patterns:
        centre = world[mask.ravel()][np.argmax(pattern)]
        dist = np.linalg.norm(world[mask.ravel()][pattern > 0] - centre, axis=1)
        assert dist.max() <= 24 + 1e-9 and dist.max() >= 24 - voxel_size


@pytest.mark.parametrize("bad", [2, 0, -3])
def test_mask_voxel_size_below_3_mm_is_refused(bad):
    with pytest.raises(ValueError, match="voxel_size"):
        mni152_brain_mask(bad)
    with pytest.raises(TypeError, match="voxel_size"):
        mni152_brain_mask(4.5)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_in_mask_values_are_the_boolean_index_in_the_masks_order(order, dtype):
    rng = np.random.default_rng(0)
    data = np.asarray(rng.standard_normal((7, 6, 5, 4)), dtype=dtype, order=order)
    data[1, 2, 3, 0] = np.nan
    mask = rng.random((7, 6, 5)) > 0.4
    got = _in_mask(data, mask)
    want = data[mask].T
    assert got.dtype == dtype and got.shape == (4, mask.sum()) and got.flags.c_contiguous
    assert np.array_equal(got, want, equal_nan=True)
    # a non-contiguous view takes the general path, same values
    view = np.asarray(rng.standard_normal((7, 6, 5, 8)), dtype=dtype)[..., ::2]
    assert np.array_equal(_in_mask(view, mask), view[mask].T)


def _box_mask(shape, box):
    """A boolean mask that is True on ``box`` (a tuple of slices), and its NIfTI image."""
    nib = pytest.importorskip("nibabel")
    mask = np.zeros(shape, bool)
    mask[box] = True
    return mask, nib.Nifti1Image(mask.astype(np.uint8), np.eye(4))


def test_volume_masking_gives_the_same_matrix_for_both_orders():
    nib = pytest.importorskip("nibabel")
    pytest.importorskip("nilearn")
    from neurospca.image import ImageSPCATV

    rng = np.random.default_rng(1)
    mask, mask_img = _box_mask((9, 8, 7), np.s_[2:7, 1:6, 1:6])
    data = rng.standard_normal(mask.shape + (6,)).astype(np.float32)
    data[3, 3, 3, 2] = np.inf  # a voxel left out, with a warning
    out = []
    for order in "CF":
        img = nib.Nifti1Image(np.asarray(data, order=order), np.eye(4))
        with pytest.warns(UserWarning, match="NaN or infinite"):
            out.append(ImageSPCATV(2, mask=mask_img)._prepare(img, None))
    keep = mask.copy()
    keep[3, 3, 3] = False
    assert np.array_equal(out[0], out[1])
    assert np.array_equal(out[0], data[keep].T.astype(np.float64))


def test_masker_of_a_refit_is_the_refits():
    nib = pytest.importorskip("nibabel")
    pytest.importorskip("nilearn")
    from neurospca import ImageSPCATV

    rng = np.random.default_rng(1)
    mask, mask_img = _box_mask((8, 7, 6), np.s_[1:7, 2:6, 1:5])
    img = nib.Nifti1Image(rng.standard_normal(mask.shape + (5,)), np.eye(4))
    model = ImageSPCATV(2, mask=mask_img)
    with pytest.raises(AttributeError, match="masker_"):
        model.masker_  # noqa: B018 - not fitted
    model._prepare(img, None)
    plain = model.masker_
    assert plain.standardize in (None, False)
    model.set_params(standardize=True)._prepare(img, None)  # not plain: made at once
    assert model.masker_ is not plain and model.masker_.standardize == "zscore_sample"
    model.set_params(standardize=False)._prepare(img, None)
    assert model.masker_ is not plain and model.masker_.standardize in (None, False)
    with pytest.raises(AttributeError, match="no attribute 'other_'"):
        model.other_  # noqa: B018
