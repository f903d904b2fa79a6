"""Volumes: masks, the grid TV operator, images <-> data matrices.

The TV operator of a mask follows the SPCA-TV paper (section II-C1): voxel
``(i, j, k)`` of the mask is column ``g`` (C order of the in-mask voxels) and
group ``g`` holds its forward differences ``v(i+1,j,k) - v(i,j,k)``,
``v(i,j+1,k) - v``, ``v(i,j,k+1) - v``; a row whose neighbour leaves the mask is
dropped.

The image front end turns NIfTI maps into a data matrix ``X`` (N x P) whose
column ``g`` is the same voxel as column ``g`` of :func:`tv_from_mask`, and maps
loadings back to images with the mask's affine and header:

>>> X, operator, masker = load_volume_data("maps/*.nii.gz", "mask.nii.gz")  # doctest: +SKIP
>>> est = SPCATV(n_components=3, operator=operator).fit(X)                # doctest: +SKIP
>>> loadings_img = masker.inverse_transform(est.components_)              # doctest: +SKIP

nilearn is only needed for ``resample=True`` and is imported lazily.

Modules: ``_io`` (masks, images <-> data matrix), ``_operators``
(``tv_from_mask``), ``_masker`` (``VolumeMasker``, ``load_volume_data``).
Fitting images (``fit_images``, ``ImageSPCATV``) lives one layer up, in
:mod:`neurospca.image`.
"""

# private helpers used by neurospca.image, neurospca.cohort and the command line
from ._io import images_to_data, load_mask_img, unmask
from ._masker import VolumeMasker, load_volume_data
from ._operators import grid_tv_operator, tv_from_mask

__all__ = [
    "VolumeMasker",
    "grid_tv_operator",
    "images_to_data",
    "load_mask_img",
    "load_volume_data",
    "tv_from_mask",
    "unmask",
]
