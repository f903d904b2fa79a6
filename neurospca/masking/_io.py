"""NIfTI volumes and masks: reading, checking, images <-> data matrix."""

import warnings

import nibabel as nib
import numpy as np

from .._utils.images import (
    check_grid,
    collect_images,
    image_data,
    load_image,
    make_mask_img,
    mask_array,
)

__all__ = ["images_to_data", "load_mask_img", "unmask"]


def _binarise(data, name, threshold):
    """Boolean mask from image or array values, explicitly."""
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)):
            raise TypeError(f"threshold must be a number, got {type(threshold).__name__}.")
        with np.errstate(invalid="ignore"):
            return np.asarray(data) > float(threshold)
    data = np.asarray(data)
    if data.dtype == bool:
        return data
    if not (np.issubdtype(data.dtype, np.integer) or np.issubdtype(data.dtype, np.floating)):
        raise TypeError(f"{name} must hold boolean or numeric values, got dtype {data.dtype}.")
    values = np.unique(data)
    if not np.all(np.isin(values, [0, 1])):
        raise ValueError(
            f"{name} must hold only 0 and 1, got values such as {values[:5].tolist()}; "
            "binarise it explicitly, e.g. with threshold=0.5 (keeps values > 0.5)."
        )
    return data.astype(bool)


def load_mask_img(mask, *, threshold=None):
    """A binary mask image from a NIfTI image, a path or a 3-D array.

    Parameters
    ----------
    mask : nibabel image, str, os.PathLike or ndarray
        A 3-D image (or array) holding only 0 and 1 (or booleans). Arrays get
        an identity affine.
    threshold : float, optional
        If given, the mask is ``data > threshold``: the explicit way to
        binarise a probabilistic or label image.

    Returns
    -------
    nibabel.Nifti1Image
        ``uint8`` data (0/1) with the mask's affine and header.

    Raises
    ------
    ValueError
        If the mask is not 3-D (4-D masks included), holds values other than 0
        and 1 without ``threshold``, or is empty.
    """
    if isinstance(mask, np.ndarray):
        data = _binarise(mask, "mask", threshold)
        affine, header = np.eye(4), None
    else:
        img = load_image(mask, "mask")
        if len(img.shape) != 3:
            raise ValueError(
                f"mask must be a 3-D image, got a {len(img.shape)}-D image of shape "
                f"{img.shape}; for a 4-D mask pick one volume (e.g. "
                "nilearn.image.index_img(mask, 0))."
            )
        data = _binarise(image_data(img, "mask"), "mask", threshold)
        affine, header = img.affine, img.header
    if data.ndim != 3:
        raise ValueError(f"mask must be a 3-D array, got {data.ndim}-D.")
    if not data.any():
        raise ValueError("mask is empty: it selects no voxel.")
    return make_mask_img(data, affine, header)


def _raw_matrix(imgs, mask_img, mask_arr, resample):
    """In-mask values of every image, one row per 3-D volume (NaN kept)."""
    if not isinstance(resample, (bool, np.bool_)):
        raise TypeError(f"resample must be True or False, got {resample!r}.")
    rows = []
    for label, img in collect_images(imgs):
        img = check_grid(label, img, mask_img, resample)
        values = np.asarray(image_data(img, label)[mask_arr], dtype=np.float64)
        rows.append(values[None, :] if values.ndim == 1 else values.T)  # (P,) or (P, T)
    return np.ascontiguousarray(np.concatenate(rows, axis=0))


def images_to_data(imgs, mask, *, threshold=None, resample=False):
    """Data matrix ``X`` (N x P) of the in-mask voxels of a set of images.

    Parameters
    ----------
    imgs : list of images or paths, 4-D image, path or glob pattern
        3-D images give one row each, 4-D images one row per volume, in order
        (a glob is sorted).
    mask : nibabel image, path or 3-D ndarray
        See :func:`load_mask_img`.
    threshold : float, optional
        Binarise the mask as ``mask > threshold``.
    resample : bool, default=False
        Images whose shape or affine differ from the mask's raise a
        ``ValueError`` unless ``resample=True``, which resamples them onto the
        mask's grid with ``nilearn.image.resample_to_img`` (continuous
        interpolation).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Column ``g`` is the ``g``-th in-mask voxel in C order.
    mask_img : nibabel.Nifti1Image
        The mask actually used. Voxels that are NaN or infinite in any image
        are removed from it (with a warning saying how many), so ``X`` is
        finite and its columns match ``mask_img``.
    """
    mask_img = load_mask_img(mask, threshold=threshold)
    mask_arr = mask_array(mask_img)
    X = _raw_matrix(imgs, mask_img, mask_arr, resample)
    bad = ~np.all(np.isfinite(X), axis=0)
    n_bad = int(bad.sum())
    if n_bad:
        if n_bad == X.shape[1]:
            raise ValueError(
                "imgs are NaN or infinite in every voxel of the mask in at least one "
                "image; nothing is left to analyse."
            )
        warnings.warn(
            f"{n_bad} voxel(s) of the mask are NaN or infinite in at least one image; "
            f"they were removed from the mask ({X.shape[1]} -> {X.shape[1] - n_bad} "
            "voxels). Use the returned mask to map results back.",
            UserWarning,
            stacklevel=2,
        )
        new_mask = mask_arr.copy()
        new_mask[mask_arr] = ~bad
        mask_img = make_mask_img(new_mask, mask_img.affine, mask_img.header)
        X = np.ascontiguousarray(X[:, ~bad])
    return X, mask_img


def unmask(V, mask, *, fill_value=0.0):
    """Map a vector or the rows of a matrix back to a 3-D or 4-D image.

    Parameters
    ----------
    V : array-like of shape (n_features,) or (n_components, n_features)
        Values of the in-mask voxels (C order), e.g. ``SPCATV.components_``.
    mask : nibabel image, path or 3-D ndarray
        The mask that produced the columns (see :func:`images_to_data`).
    fill_value : float, default=0.0
        Value outside the mask.

    Returns
    -------
    nibabel.Nifti1Image
        3-D for a vector, 4-D (one volume per row) for a matrix, float64, with
        the mask's affine and header.
    """
    mask_img = load_mask_img(mask)
    mask_arr = mask_array(mask_img)
    n_features = int(mask_arr.sum())
    try:
        V = np.asarray(V, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"V must be a numeric array: {exc}") from None
    if V.ndim not in (1, 2) or V.shape[-1] != n_features:
        raise ValueError(
            f"V must have shape ({n_features},) or (n_components, {n_features}) to "
            f"match the {n_features} voxels of the mask, got {V.shape}."
        )
    if V.ndim == 1:
        data = np.full(mask_arr.shape, fill_value, dtype=np.float64)
        data[mask_arr] = V
    else:
        data = np.full(mask_arr.shape + (V.shape[0],), fill_value, dtype=np.float64)
        data[mask_arr] = V.T
    header = mask_img.header.copy()
    header.set_data_dtype(np.float64)
    img = nib.Nifti1Image(data, mask_img.affine, header)
    img.header.set_slope_inter(1.0, 0.0)
    return img
