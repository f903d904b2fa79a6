"""Fit an estimator on images in one call: NIfTI maps in a mask, or per-subject
surface maps of two hemispheres.

Thin layers over :class:`~neurospca.ImageSPCATV`; they sit here, above
:mod:`neurospca.decomposition`, because they fit. :mod:`neurospca.masking` and
:mod:`neurospca.surface` only build data and operators.
"""

from sklearn.base import clone

from ..decomposition import SPCATV
from ..masking import load_mask_img
from ..surface import load_surface_image
from ..surface._validation import _check_kind
from ._spcatv import ImageSPCATV

__all__ = ["fit_images", "fit_surfaces"]


def _with_operator(estimator, operator):
    """An unfitted copy of ``estimator`` (default ``SPCATV()``) using ``operator``."""
    if estimator is None:
        estimator = SPCATV()
    if not hasattr(estimator, "fit") or "operator" not in estimator.get_params():
        raise TypeError(
            "estimator must be an unfitted estimator with an 'operator' parameter "
            f"(e.g. neurospca.SPCATV(n_components=3)), got {type(estimator).__name__}."
        )
    return clone(estimator).set_params(operator=operator)


def fit_images(imgs, mask, estimator=None, *, threshold=None, resample=False):
    """Fit SPCA-TV on NIfTI maps inside a mask; loadings back as an image.

    Parameters
    ----------
    imgs : list of images or paths, 4-D image, path or glob pattern
        One map per subject (see :func:`~neurospca.images_to_data`).
    mask : nibabel image, path or 3-D ndarray
        Brain mask (see :func:`~neurospca.load_mask_img`).
    estimator : estimator, optional
        An unfitted estimator with an ``operator`` parameter, e.g.
        ``neurospca.SPCATV(n_components=3, alpha=0.1, tv_ratio=0.5)`` (the
        default is ``SPCATV()``). It is cloned and its ``operator`` set to the
        mask's TV operator.
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
    template = _with_operator(estimator, None)
    model = ImageSPCATV(mask=load_mask_img(mask, threshold=threshold), resample=resample)
    model._template = template
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
    """Fit SPCA-TV on per-subject maps of both hemispheres; loadings back per hemisphere.

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
        An unfitted estimator with an ``operator`` parameter (default
        ``neurospca.SPCATV()``); it is cloned and given the two-hemisphere TV
        operator.
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
    kind = _check_kind(kind)
    template = _with_operator(estimator, None)
    img = load_surface_image(left_data, right_data, left_mesh, right_mesh)
    mask = None if mask_left is None and mask_right is None else (mask_left, mask_right)
    model = ImageSPCATV(mask=mask)
    model._template, model._tv_kind = template, kind
    model.fit(img)
    hemis = model.space_
    return model.estimator_, hemis.inverse_transform(model.estimator_.components_), hemis
