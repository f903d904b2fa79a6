"""Loadings back on the brain as image files: NIfTI for volumes, GIFTI/MGH per hemisphere.

>>> img = loadings_to_nifti(model.components_, masker)              # doctest: +SKIP
>>> maps = loadings_to_surface(model.components_, hemispheres)      # doctest: +SKIP
>>> save_loadings(model.components_, masker, "out")                 # doctest: +SKIP
['out/loadings.nii.gz']
"""

import os

import nibabel as nib
import numpy as np

from .._utils.io import atomic_write
from ..masking import VolumeMasker, unmask
from ..surface import Hemispheres, write_surf_data

__all__ = ["loadings_to_nifti", "loadings_to_surface", "save_loadings"]


def _check_components(components):
    try:
        comps = np.asarray(components, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"components must be a numeric array: {exc}") from None
    if comps.ndim == 1:
        comps = comps[None, :]
    if comps.ndim != 2:
        raise ValueError(
            f"components must have shape (n_components, n_features), got {comps.shape}."
        )
    return comps


def loadings_to_nifti(components, space):
    """Loadings as a 4-D NIfTI image (one volume per component).

    Parameters
    ----------
    components : array-like of shape (n_components, n_features) or (n_features,)
        E.g. ``SPCATV.components_``; column ``g`` is the ``g``-th in-mask voxel.
    space : VolumeMasker, nibabel image, path or 3-D boolean array
        The mask that produced the columns.

    Returns
    -------
    nibabel.Nifti1Image
        float64, 4-D (3-D for a single vector), the mask's affine; zero
        outside the mask.
    """
    comps = _check_components(components)
    mask = space.mask_img if isinstance(space, VolumeMasker) else space
    return unmask(comps[0] if np.ndim(components) == 1 else comps, mask)


def loadings_to_surface(components, space, fill_value=0.0):
    """Loadings as per-hemisphere vertex maps.

    Parameters
    ----------
    components : array-like of shape (n_components, n_features)
    space : Hemispheres
    fill_value : float, default=0.0
        Value at vertices left out of the fit (medial wall).

    Returns
    -------
    dict
        ``{"left": (n_vertices_left, n_components), "right": (...)}``.
    """
    if not isinstance(space, Hemispheres):
        raise TypeError(f"space must be a Hemispheres, got {type(space).__name__}.")
    comps = _check_components(components)
    return space.inverse_transform(comps, fill_value=fill_value)


def save_loadings(components, space, directory, *, prefix="loadings", surface_format="gii"):
    """Write loadings next to each other in ``directory``.

    Volumes give ``<prefix>.nii.gz`` (4-D); surfaces give
    ``<prefix>_lh.func.gii`` and ``<prefix>_rh.func.gii`` (one data array per
    component) or ``<prefix>_lh.mgh``/``<prefix>_rh.mgh``. Each file is written
    to a temporary name then renamed.

    Parameters
    ----------
    components : array-like of shape (n_components, n_features)
    space : VolumeMasker or Hemispheres
    directory : str or os.PathLike
        Must exist.
    prefix : str, default="loadings"
    surface_format : {"gii", "mgh"}, default="gii"

    Returns
    -------
    list of str
        The paths written.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory: no such directory {directory!r}.")
    if surface_format not in ("gii", "mgh"):
        raise ValueError(f"surface_format must be 'gii' or 'mgh', got {surface_format!r}.")
    if isinstance(space, Hemispheres):
        maps = loadings_to_surface(components, space)
        ext = ".func.gii" if surface_format == "gii" else ".mgh"
        paths = []
        for hemi, short in (("left", "lh"), ("right", "rh")):
            path = os.path.join(directory, f"{prefix}_{short}{ext}")
            paths.append(write_surf_data(maps[hemi], path))
        return paths
    if isinstance(space, VolumeMasker) or isinstance(space, nib.spatialimages.SpatialImage):
        img = loadings_to_nifti(components, space)
        path = os.path.join(directory, f"{prefix}.nii.gz")
        return [atomic_write(img.to_filename, path)]
    raise TypeError(f"space must be a VolumeMasker or a Hemispheres, got {type(space).__name__}.")
