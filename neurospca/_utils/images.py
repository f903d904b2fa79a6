"""Volume images shared across packages: reading, checking, masks on a grid.

The one internal module for the image helpers that :mod:`neurospca.masking`,
:mod:`neurospca.cohort`, :mod:`neurospca.image` and the command line share
(they used to be private names of :mod:`neurospca.masking`). Every reader
error becomes a ValueError naming the argument.
"""

import glob
import gzip
import os
import struct
import zlib
from xml.parsers.expat import ExpatError

import nibabel as nib
import numpy as np

from .io import regular_file

__all__ = [
    "AFFINE_ATOL",
    "READ_ERRORS",
    "check_grid",
    "collect_images",
    "describe_image",
    "image_data",
    "is_pathlike",
    "load_image",
    "mask_array",
    "make_mask_img",
]

#: Largest absolute difference of two affines taken as the same grid.
AFFINE_ATOL = 1e-4

#: What nibabel and its readers raise on a truncated, corrupted or foreign file
#: (EOFError, zlib.error, struct.error, ExpatError, OSError, ValueError,
#: IndexError, KeyError, TypeError, ...; nibabel's own errors are plain Exceptions).
READ_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    OverflowError,
    UnicodeError,
    RuntimeError,
    AssertionError,
    zlib.error,
    struct.error,
    ExpatError,
    nib.filebasedimages.ImageFileError,
    nib.spatialimages.HeaderDataError,
    nib.spatialimages.HeaderTypeError,
    nib.spatialimages.ImageDataError,
    nib.wrapstruct.WrapStructError,
    nib.freesurfer.mghformat.MGHError,
)


def is_pathlike(obj):
    return isinstance(obj, (str, bytes, os.PathLike))


def load_image(obj, name):
    """A nibabel spatial image from an image or a path (errors name ``name``), its
    header checked (:func:`_check_header`)."""
    if isinstance(obj, nib.spatialimages.SpatialImage):
        return _check_header(obj, name)
    if is_pathlike(obj):
        path = regular_file(obj, name)
        try:
            img = nib.load(path)
        except READ_ERRORS as exc:  # nibabel raises several types for unreadable files
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
            f"{name}: {describe_image(img)} holds complex values ({dtype}); "
            "neurospca works on real maps: save the real part or the magnitude "
            "as its own image."
        )
    if dtype.fields is not None or dtype.kind not in "biuf":
        raise TypeError(
            f"{name}: {describe_image(img)} holds {dtype} values (e.g. RGB colours), "
            "not one number per voxel."
        )
    affine = np.asarray(img.affine, dtype=np.float64) if img.affine is not None else None
    if (
        affine is None
        or not np.all(np.isfinite(affine))
        or abs(np.linalg.det(affine[:3, :3])) < 1e-12
    ):
        raise ValueError(
            f"{name}: {describe_image(img)} has a singular or non-finite affine "
            "(its voxel axes do not span space); fix the sform/qform of its "
            "header."
        )
    if len(img.shape) == 4 and img.shape[3] == 0:
        raise ValueError(
            f"{name}: {describe_image(img)} is a 4-D image with no frame "
            f"(shape {tuple(img.shape)})."
        )
    return img


def image_data(img, name):
    """The data of an image, read now: reader errors become ValueError naming ``name``.

    nibabel loads lazily, so a truncated or corrupted file (``.nii.gz`` cut
    short, bad gzip stream, header promising more data than the file holds)
    fails only when the data are read; that read happens here.
    """
    try:
        return np.asanyarray(img.dataobj)
    except MemoryError:
        raise ValueError(
            f"{name}: the image header of {describe_image(img)} promises shape {img.shape}, too "
            "large to read; the file is corrupted or not a map."
        ) from None
    except READ_ERRORS as exc:
        raise ValueError(
            f"{name}: cannot read the data of {describe_image(img)} (truncated or corrupted "
            f"file?): {type(exc).__name__}: {exc}"
        ) from None


def describe_image(img):
    filename = img.get_filename() if hasattr(img, "get_filename") else None
    return repr(filename) if filename else "the in-memory image"


def make_mask_img(data, affine, header):
    if header is not None and isinstance(header, nib.Nifti1Header):
        header = header.copy()
    else:
        header = None
    img = nib.Nifti1Image(data.astype(np.uint8), np.asarray(affine, dtype=np.float64), header)
    img.header.set_data_dtype(np.uint8)
    img.header.set_slope_inter(1.0, 0.0)
    return img


def mask_array(mask_img):
    return np.asanyarray(mask_img.dataobj).astype(bool)


def collect_images(imgs):
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
    elif is_pathlike(imgs) or isinstance(imgs, nib.spatialimages.SpatialImage):
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
        img = load_image(item, label)
        if len(img.shape) not in (3, 4):
            raise ValueError(f"{label} must be a 3-D or 4-D image, got shape {img.shape}.")
        out.append((label, img))
    return out


def check_grid(label, img, mask_img, resample):
    """Same shape and affine as the mask, or resampled onto it if asked."""
    same_shape = tuple(img.shape[:3]) == tuple(mask_img.shape)
    same_affine = same_shape and np.allclose(img.affine, mask_img.affine, rtol=0, atol=AFFINE_ATOL)
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
    img = nib.Nifti1Image(image_data(img, label), img.affine, header)  # read errors named
    return resample_to_img(
        img, mask_img, interpolation="continuous", force_resample=True, copy_header=True
    )
