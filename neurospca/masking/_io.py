"""NIfTI volumes and masks: reading, checking, images <-> data matrix."""

import glob
import gzip
import os
import warnings
import zlib

import nibabel as nib
import numpy as np

from .._utils.io import regular_file

__all__ = ["images_to_data", "load_mask_img", "unmask"]

_AFFINE_ATOL = 1e-4


def _is_pathlike(obj):
    return isinstance(obj, (str, bytes, os.PathLike))


def _load_image(obj, name):
    """A nibabel spatial image from an image or a path (errors name ``name``), its
    header checked (:func:`_check_header`)."""
    if isinstance(obj, nib.spatialimages.SpatialImage):
        return _check_header(obj, name)
    if _is_pathlike(obj):
        path = regular_file(obj, name)
        try:
            img = nib.load(path)
        except Exception as exc:  # nibabel raises several types for unreadable files
            raise ValueError(
                f"{name}: cannot read {path!r} as an image{_gzip_problem(path)}: {exc}"
            ) from None
        if not isinstance(img, nib.spatialimages.SpatialImage):
            raise TypeError(f"{name}: {path!r} is a {type(img).__name__}, not a volume image.")
        return _check_header(img, name)
    raise TypeError(f"{name} must be a NIfTI image or a path to one, got {type(obj).__name__}.")


def _gzip_problem(path):
    """`` (a truncated gzip file)`` or similar when ``path`` is a damaged gzip
    stream, else ``""`` (only on the error path: the whole stream is read)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return ""
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except EOFError:
        return " (a truncated gzip file: it ends before its compressed stream does)"
    except (OSError, zlib.error) as exc:
        return f" (a corrupted gzip file: {exc})"
    return ""


def _check_header(img, name):
    """``img`` if its header describes real values on an oriented grid.

    Raises
    ------
    TypeError
        Complex values (never silently made real) or records such as RGB voxels.
    ValueError
        A singular or non-finite affine, or a 4-D image with no frame.
    """
    dtype = np.dtype(img.get_data_dtype())
    if dtype.kind == "c":
        raise TypeError(
            f"{name}: {_describe(img)} holds complex values ({dtype}); "
            "neurospca works on real maps: save the real part or the magnitude "
            "as its own image."
        )
    if dtype.fields is not None or dtype.kind not in "biuf":
        raise TypeError(
            f"{name}: {_describe(img)} holds {dtype} values (e.g. RGB colours), "
            "not one number per voxel."
        )
    affine = np.asarray(img.affine, dtype=np.float64) if img.affine is not None else None
    if (
        affine is None
        or not np.all(np.isfinite(affine))
        or abs(np.linalg.det(affine[:3, :3])) < 1e-12
    ):
        raise ValueError(
            f"{name}: {_describe(img)} has a singular or non-finite affine "
            "(its voxel axes do not span space); fix the sform/qform of its "
            "header."
        )
    if len(img.shape) == 4 and img.shape[3] == 0:
        raise ValueError(
            f"{name}: {_describe(img)} is a 4-D image with no frame (shape {tuple(img.shape)})."
        )
    return img


def _image_data(img, name):
    """The data of an image, read now: reader errors become ValueError naming ``name``.

    nibabel loads lazily, so a truncated or corrupted file (``.nii.gz`` cut
    short, bad gzip stream, header promising more data than the file holds)
    fails only when the data are read; that read happens here.
    """
    try:
        return np.asanyarray(img.dataobj)
    except MemoryError:
        raise ValueError(
            f"{name}: the image header of {_describe(img)} promises shape {img.shape}, too "
            "large to read; the file is corrupted or not a map."
        ) from None
    except Exception as exc:  # EOFError, zlib.error, OSError, struct.error, ValueError...
        raise ValueError(
            f"{name}: cannot read the data of {_describe(img)} (truncated or corrupted "
            f"file?): {type(exc).__name__}: {exc}"
        ) from None


def _describe(img):
    filename = img.get_filename() if hasattr(img, "get_filename") else None
    return repr(filename) if filename else "the in-memory image"


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
        img = _load_image(mask, "mask")
        if len(img.shape) != 3:
            raise ValueError(
                f"mask must be a 3-D image, got a {len(img.shape)}-D image of shape "
                f"{img.shape}; for a 4-D mask pick one volume (e.g. "
                "nilearn.image.index_img(mask, 0))."
            )
        data = _binarise(_image_data(img, "mask"), "mask", threshold)
        affine, header = img.affine, img.header
    if data.ndim != 3:
        raise ValueError(f"mask must be a 3-D array, got {data.ndim}-D.")
    if not data.any():
        raise ValueError("mask is empty: it selects no voxel.")
    return _mask_img(data, affine, header)


def _mask_img(data, affine, header):
    if header is not None and isinstance(header, nib.Nifti1Header):
        header = header.copy()
    else:
        header = None
    img = nib.Nifti1Image(data.astype(np.uint8), np.asarray(affine, dtype=np.float64), header)
    img.header.set_data_dtype(np.uint8)
    img.header.set_slope_inter(1.0, 0.0)
    return img


def _mask_array(mask_img):
    return np.asanyarray(mask_img.dataobj).astype(bool)


def _collect_images(imgs):
    """List of (label, image) from a list, a 4-D image, a path or a glob."""
    if isinstance(imgs, np.ndarray):
        raise TypeError(
            "imgs must be NIfTI images, paths or a glob pattern, got an ndarray; "
            "arrays are already a data matrix X."
        )
    if isinstance(imgs, (str, bytes)) and glob.has_magic(os.fsdecode(imgs)):
        pattern = os.path.expanduser(os.fsdecode(imgs))
        paths = sorted(glob.glob(pattern))
        if not paths:
            raise ValueError(f"imgs: the pattern {pattern!r} matches no file.")
        items = paths
    elif _is_pathlike(imgs) or isinstance(imgs, nib.spatialimages.SpatialImage):
        items = [imgs]
    elif isinstance(imgs, (list, tuple)):
        items = list(imgs)
        if not items:
            raise ValueError("imgs is empty: give at least one image.")
    else:
        raise TypeError(
            "imgs must be a list of 3-D images or paths, a 4-D image, a path or a "
            f"glob pattern, got {type(imgs).__name__}."
        )
    out = []
    for i, item in enumerate(items):
        label = f"imgs[{i}]" if len(items) > 1 or isinstance(imgs, (list, tuple)) else "imgs"
        img = _load_image(item, label)
        if len(img.shape) not in (3, 4):
            raise ValueError(f"{label} must be a 3-D or 4-D image, got shape {img.shape}.")
        out.append((label, img))
    return out


def _check_grid(label, img, mask_img, resample):
    """Same shape and affine as the mask, or resampled onto it if asked."""
    same_shape = tuple(img.shape[:3]) == tuple(mask_img.shape)
    same_affine = same_shape and np.allclose(img.affine, mask_img.affine, rtol=0, atol=_AFFINE_ATOL)
    if same_affine:
        return img
    if not resample:
        if not same_shape:
            what = f"shape {tuple(img.shape[:3])} but mask has shape {tuple(mask_img.shape)}"
        else:
            diff = float(np.max(np.abs(img.affine - mask_img.affine)))
            what = f"an affine that differs from the mask's (max abs difference {diff:.3g})"
        raise ValueError(
            f"{label} has {what}; resample the images onto the mask "
            "(pass resample=True, which uses nilearn.image.resample_to_img) or use "
            "a mask on the images' grid."
        )
    try:
        from nilearn.image import resample_to_img
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "resample=True needs nilearn: pip install nilearn (or neurospca[plotting])."
        ) from None
    header = img.header if isinstance(img.header, nib.Nifti1Header) else None
    img = nib.Nifti1Image(_image_data(img, label), img.affine, header)  # read errors named
    return resample_to_img(
        img, mask_img, interpolation="continuous", force_resample=True, copy_header=True
    )


def _raw_matrix(imgs, mask_img, mask_arr, resample):
    """In-mask values of every image, one row per 3-D volume (NaN kept)."""
    if not isinstance(resample, (bool, np.bool_)):
        raise TypeError(f"resample must be True or False, got {resample!r}.")
    rows = []
    for label, img in _collect_images(imgs):
        img = _check_grid(label, img, mask_img, resample)
        values = np.asarray(_image_data(img, label)[mask_arr], dtype=np.float64)
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
    mask_arr = _mask_array(mask_img)
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
        mask_img = _mask_img(new_mask, mask_img.affine, mask_img.header)
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
    mask_arr = _mask_array(mask_img)
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
