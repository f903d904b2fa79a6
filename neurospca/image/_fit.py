"""Fit an estimator on images in one call: NIfTI maps in a mask, or per-subject
surface maps of two hemispheres.

Thin layers over :class:`~neurospca.ImageSPCATV`; they sit here, above
:mod:`neurospca.decomposition`, because they fit. :mod:`neurospca.masking` and
:mod:`neurospca.surface` only build data and operators.
"""

from .._utils.validation import check_tv_kind
from ..decomposition import SPCATV
from ..masking import load_mask_img
from ..surface import load_surface_image
from ._estimators import check_estimator
from ._spcatv import ImageSPCATV

__all__ = ["fit_images", "fit_surfaces"]


def _estimator(estimator):
    """The estimator to fit: the given one (checked) or ``SPCATV()``."""
    return SPCATV() if check_estimator(estimator) is None else estimator


def fit_images(imgs, mask, estimator=None, *, threshold=None, resample=False):
    """Fit SPCA-TV (or another estimator) on NIfTI maps inside a mask; loadings back as
    an image.

    Parameters
    ----------
    imgs : list of images or paths, 4-D image, path or glob pattern
        One map per subject (see :func:`~neurospca.images_to_data`).
    mask : nibabel image, path or 3-D ndarray
        Brain mask (see :func:`~neurospca.load_mask_img`).
    estimator : estimator, optional
        An unfitted SPCATV, SSPCA, NonnegativeSparsePCA, KTraceNormPCA or
        HierarchicalDictionaryLearning, e.g. ``neurospca.SPCATV(n_components=3,
        alpha=0.1, tv_ratio=0.5)`` (the default is ``SPCATV()``). It is cloned
        and given the mask's structure (see :class:`neurospca.ImageSPCATV`'s
        ``estimator``).
    threshold : float, optional
        Binarise the mask as ``mask > threshold``.
    resample : bool, default=False
        Resample images whose grid differs from the mask's (nilearn).

    Returns
    -------
    estimator : the fitted clone
    loadings_img : nibabel.Nifti1Image
        4-D, one volume per component (``estimator.components_``), with the
        mask's affine and header.
    masker : VolumeMasker
        Maps further results (e.g. ``estimator.mean_``) back to images.

    Notes
    -----
    A thin layer over :class:`neurospca.ImageSPCATV` (nilearn needed), which
    also offers ``standardize``, ``smoothing_fwhm``, ``confounds`` and a
    computed mask.
    """
    model = ImageSPCATV(
        mask=load_mask_img(mask, threshold=threshold),
        resample=resample,
        estimator=_estimator(estimator),
    )
    model.fit(imgs)
    return model.estimator_, model.components_img_, model.space_


def fit_surfaces(
    left_data,
    right_data,
    left_mesh,
    right_mesh=None,
    estimator=None,
    *,
    mask_left=None,
    mask_right=None,
    kind="edges",
):
    """Fit SPCA-TV (or another estimator) on per-subject maps of both hemispheres;
    loadings back per hemisphere.

    A thin layer over :class:`neurospca.ImageSPCATV` (nilearn needed): the
    maps become a ``SurfaceImage`` (:func:`~neurospca.load_surface_image`) fitted with the
    given masks.

    Parameters
    ----------
    left_data, right_data : list of paths/arrays, path or array-like
        One map per subject (see :func:`~neurospca.load_surface_subjects`), e.g. the
        subjects' ``lh.thickness`` / ``rh.thickness`` files resampled to a
        common surface, or qcache stacks.
    left_mesh, right_mesh : path, (coords, faces) or mesh object
        The common surfaces (see :func:`~neurospca.load_surf_mesh`); a nilearn
        ``PolyMesh`` as ``left_mesh`` with ``right_mesh=None``.
    estimator : estimator, optional
        An unfitted estimator among the five (default ``neurospca.SPCATV()``);
        it is cloned and given the two hemispheres' structure (SPCATV: their
        TV operator; see :class:`neurospca.ImageSPCATV`'s ``estimator``).
    mask_left, mask_right : array-like of bool or path, optional
        Cortex masks (see :func:`~neurospca.load_cortex_mask`). A hemisphere without a
        mask keeps the vertices that vary across the maps: the medial wall,
        constant, is left out (with a warning saying how many).
    kind : {"edges", "gradient"}, default="edges"
        See :func:`~neurospca.tv_from_mesh`.

    Returns
    -------
    estimator : the fitted clone
    loadings : dict
        ``{"left": (n_vertices_left, n_components), "right": ...}``, zero on
        masked vertices; write them with :meth:`neurospca.Hemispheres.save`.
    hemispheres : Hemispheres
    """
    kind = check_tv_kind(kind)
    estimator = _estimator(estimator)
    img = load_surface_image(left_data, right_data, left_mesh, right_mesh)
    mask = None if mask_left is None and mask_right is None else (mask_left, mask_right)
    model = ImageSPCATV(mask=mask, estimator=estimator, tv_kind=kind)
    model.fit(img)
    hemis = model.space_
    return model.estimator_, hemis.inverse_transform(model.estimator_.components_), hemis
