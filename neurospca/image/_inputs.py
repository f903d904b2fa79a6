"""Input handling of :class:`~neurospca.ImageSPCATV`: nilearn lookups, checks of
SurfaceImage inputs and surface masks, and stacking of NIfTI volumes."""

import os
import sys

import nibabel as nib
import numpy as np

from .._utils.images import check_grid
from ..surface import load_cortex_mask

_HEMIS = ("left", "right")
_INSTALL_HINT = 'pip install "neurospca[report]" (or pip install nilearn)'


def _nilearn_maskers():
    try:
        from nilearn import maskers
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(f"ImageSPCATV needs nilearn: {_INSTALL_HINT}.") from None
    return maskers


def _nilearn_masking():
    """:mod:`nilearn.masking` (lighter than :mod:`nilearn.maskers`)."""
    try:
        from nilearn import masking
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(f"ImageSPCATV needs nilearn: {_INSTALL_HINT}.") from None
    return masking


def _loaded(module):
    """``module`` if it is imported already, else None (never imports it).

    An object can be an instance of a nilearn class only once the module
    defining that class has been imported (and its package with it), so the
    type checks below need not import nilearn (``nilearn.surface`` alone pulls
    in scikit-learn's clustering, ~0.4 s; ``nilearn.maskers`` ~0.8 s).
    """
    return sys.modules.get(module)


def _surface_image_class():
    if _loaded("nilearn.surface") is None:
        return None
    from nilearn.surface import SurfaceImage

    return SurfaceImage


def _is_surface_image(obj):
    cls = _surface_image_class()
    return cls is not None and isinstance(obj, cls)


def _is_nilearn_masker(obj, name):
    cls = getattr(_loaded("nilearn.maskers"), name, None)
    return cls is not None and isinstance(obj, cls)


def _is_surface_masker(obj):
    return _is_nilearn_masker(obj, "SurfaceMasker")


def _is_nifti_masker(obj):
    return _is_nilearn_masker(obj, "NiftiMasker")


def _nilearn_standardize(standardize):
    """nilearn 0.14 spells False as None and True as "zscore_sample" (the booleans are
    deprecated there); older versions keep the booleans."""
    try:
        import nilearn
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(f"ImageSPCATV needs nilearn: {_INSTALL_HINT}.") from None

    try:
        new = tuple(int(x) for x in nilearn.__version__.split(".")[:2]) >= (0, 14)
    except ValueError:  # pragma: no cover - development versions
        new = True
    if standardize is False or standardize is None:
        return None if new else False
    if standardize is True:
        return "zscore_sample"
    return standardize


# --------------------------------------------------------------------------
# surfaces: validation of SurfaceImage inputs
# --------------------------------------------------------------------------


def _surface_parts(img, name):
    """Vertex-major float arrays (n_vertices, n_samples) per hemisphere, checked
    against the image's own mesh."""
    mesh_parts = getattr(img.mesh, "parts", {})
    data_parts = getattr(img.data, "parts", {})
    missing = [
        h for h in _HEMIS if h not in mesh_parts or h not in data_parts or data_parts[h] is None
    ]
    if missing:
        raise ValueError(
            f"{name} must hold both hemispheres ('left' and 'right' parts); "
            f"{' and '.join(missing)} is missing."
        )
    out = {}
    for hemi in _HEMIS:
        n_mesh = int(mesh_parts[hemi].n_vertices)
        arr = np.asarray(data_parts[hemi])
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[0] != n_mesh:
            raise ValueError(
                f"{name}: the {hemi} data have shape {arr.shape} but the {hemi} mesh has "
                f"{n_mesh} vertices; the data of a SurfaceImage must be (n_vertices,) or "
                "(n_vertices, n_samples) on its own mesh."
            )
        if arr.dtype == bool or not (
            np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
        ):
            raise TypeError(f"{name}: the {hemi} data must be numeric, got {arr.dtype}.")
        out[hemi] = arr
    if out["left"].shape[1] != out["right"].shape[1]:
        raise ValueError(
            f"{name}: the left data hold {out['left'].shape[1]} samples but the right data "
            f"hold {out['right'].shape[1]}."
        )
    return out


def _concat_surface_images(imgs, name):
    """One SurfaceImage (samples stacked) from a list of SurfaceImages on one mesh."""
    from nilearn.surface import SurfaceImage

    if len(imgs) == 1:
        return imgs[0]
    first = imgs[0].mesh
    parts = {h: [] for h in _HEMIS}
    for i, img in enumerate(imgs):
        if not _is_surface_image(img):
            raise TypeError(
                f"{name}[{i}] is a {type(img).__name__}; a list must hold "
                "only SurfaceImages (or only NIfTI images)."
            )
        data = _surface_parts(img, f"{name}[{i}]")
        for h in _HEMIS:
            if img.mesh.parts[h].n_vertices != first.parts[h].n_vertices:
                raise ValueError(
                    f"{name}[{i}] is on a mesh with another number of {h} vertices than {name}[0]."
                )
            parts[h].append(data[h])
    return SurfaceImage(mesh=first, data={h: np.concatenate(parts[h], axis=1) for h in _HEMIS})


def _surface_mask_arrays(mask, img, name="mask"):
    """Per-hemisphere boolean arrays from a SurfaceImage mask, a pair/dict of arrays
    or cortex files (.label, .annot, .label.gii, .shape.gii)."""
    n = {h: int(img.mesh.parts[h].n_vertices) for h in _HEMIS}
    if _is_surface_image(mask):
        for h in _HEMIS:
            if h not in mask.mesh.parts or int(mask.mesh.parts[h].n_vertices) != n[h]:
                raise ValueError(
                    f"{name}: the mask's {h} mesh does not match the images' ({n[h]} "
                    "vertices); give a mask on the images' mesh."
                )
        items = {h: np.asarray(mask.data.parts[h]) for h in _HEMIS}
    elif isinstance(mask, dict):
        if set(mask) != set(_HEMIS):
            raise ValueError(
                f"{name} as a dict must have the keys 'left' and 'right', got {sorted(mask)}."
            )
        items = dict(mask)
    elif isinstance(mask, (tuple, list)) and len(mask) == 2:
        items = {"left": mask[0], "right": mask[1]}
    else:
        raise TypeError(
            f"{name} for surface images must be a SurfaceImage mask, a SurfaceMasker, a "
            "(left, right) pair of boolean arrays or cortex files, or None; got "
            f"{type(mask).__name__}."
        )
    return {h: _hemisphere_mask(items[h], n[h], h, name) for h in _HEMIS}


def _hemisphere_mask(value, n_vertices, hemi, name):
    """One hemisphere's boolean mask (None: computed by the caller, as for mask=None)."""
    if value is None:
        return None
    if not isinstance(value, (str, bytes, os.PathLike)):
        value = np.asarray(value)
        if value.ndim == 2 and value.shape[1] == 1:
            value = value[:, 0]
        if value.ndim != 1 or value.shape[0] != n_vertices:
            raise ValueError(
                f"{name}: the {hemi} mask has shape {value.shape}, expected ({n_vertices},): "
                f"one entry per vertex of the images' {hemi} mesh."
            )
        if value.dtype != bool:
            if not np.all(np.isin(np.unique(value), [0, 1])):
                raise ValueError(
                    f"{name}: the {hemi} mask must be boolean or hold only 0 "
                    "and 1; binarise it explicitly."
                )
            value = value.astype(bool)
    try:
        return load_cortex_mask(value, n_vertices)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{name} ({hemi}): {exc}") from None


def _stack_volumes(items, grid, resample):
    """One 4-D image on ``grid`` from (label, 3-D/4-D image) items (grids checked).

    The volumes are copied once into a Fortran-ordered array (NIfTI's own
    order, so each copy is contiguous); float32 data stay float32.
    """
    imgs = [check_grid(label, img, grid, resample) for label, img in items]
    n = sum(1 if len(img.shape) == 3 else int(img.shape[3]) for img in imgs)
    single = all(np.dtype(img.get_data_dtype()) == np.float32 for img in imgs)
    out = np.empty(
        tuple(grid.shape[:3]) + (n,), dtype=np.float32 if single else np.float64, order="F"
    )
    j = 0
    for img in imgs:
        arr = np.asanyarray(img.dataobj)
        if arr.ndim == 3:
            out[..., j] = arr
            j += 1
        else:
            out[..., j : j + arr.shape[3]] = arr
            j += arr.shape[3]
        del arr
    return nib.Nifti1Image(out, grid.affine)


_TEXT_CONFOUNDS = (
    "confounds: column {!r} is text; the masker takes numbers only. For a participants "
    "table give participants=TABLE and confounds=[column names] (text columns are one-hot "
    "encoded; on the command line --participants and --confounds)."
)


def _check_confounds_file(path):
    """A confounds file with a text column (e.g. participants.tsv) is a clear error."""
    path = os.fsdecode(path)
    if not os.path.isfile(path) or not path.lower().endswith((".tsv", ".csv", ".txt")):
        return
    import pandas as pd

    sep = "," if path.lower().endswith(".csv") else "\t"
    try:
        table = pd.read_csv(path, sep=sep, nrows=50)
    except (ValueError, OSError, UnicodeDecodeError):
        return  # nilearn reports what it cannot read
    text = [c for c in table.columns if table[c].dtype.kind not in "biuf"]
    if text:
        raise ValueError(_TEXT_CONFOUNDS.format(text[0]))


def _check_confounds(confounds, n_samples):
    """Confounds as given (None, a path or an array), checked: numeric, finite, one
    row per sample."""
    if confounds is None:
        return confounds
    if isinstance(confounds, (str, bytes, os.PathLike)):
        _check_confounds_file(confounds)
        return confounds
    text = [
        c
        for c in getattr(confounds, "columns", [])
        if getattr(confounds[c], "dtype", np.dtype(float)).kind not in "biuf"
    ]
    if text:
        raise ValueError(_TEXT_CONFOUNDS.format(text[0]))
    try:
        arr = np.asarray(confounds, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"confounds must be a numeric array (n_samples, n_confounds), a "
            f"DataFrame or a path: {exc}"
        ) from None
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"confounds must be 1-D or 2-D (n_samples, n_confounds), got shape {arr.shape}."
        )
    if arr.shape[0] != n_samples:
        raise ValueError(
            f"confounds has {arr.shape[0]} rows but imgs hold {n_samples} samples; give "
            "one row of confounds per sample (3-D volume or surface map)."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError("confounds contains NaN or infinite values.")
    return confounds
