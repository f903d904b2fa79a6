"""How :class:`~neurospca.ImageSPCATV` turns images into a data matrix and back.

A mixin of the image model: volumes (a nilearn ``NiftiMasker`` on the given,
the user's masker's or a computed mask; non-finite voxels left out), surfaces
(a ``SurfaceMasker`` on both hemispheres; constant and non-finite vertices
left out) and the total-variation operator and space of the final mask;
new images on the fitted mask (``_data``) and rows back to images
(``_to_img``).
"""

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from .._utils.images import collect_images, is_pathlike, make_mask_img, mask_array
from ..masking import VolumeMasker, load_mask_img, unmask
from ..surface import load_surf_mesh, tv_from_hemispheres
from ._inputs import (
    _HEMIS,
    _check_confounds,
    _concat_surface_images,
    _is_nifti_masker,
    _is_surface_image,
    _is_surface_masker,
    _nilearn_maskers,
    _nilearn_masking,
    _nilearn_standardize,
    _stack_volumes,
    _surface_mask_arrays,
    _surface_parts,
)

__all__ = ["ImageMasking"]


class ImageMasking:
    """Images to rows and back, for :class:`~neurospca.ImageSPCATV` (a mixin)."""

    def _prepare(self, imgs, confounds):
        """Masker, mask, operator, space from the images; returns X (N x P)."""
        self._check_estimator()
        if not isinstance(self.resample, (bool, np.bool_)):
            raise TypeError(f"resample must be True or False, got {self.resample!r}.")
        fwhm = self.smoothing_fwhm
        if fwhm is not None and (
            isinstance(fwhm, bool)
            or not isinstance(fwhm, (int, float, np.number))
            or not np.isfinite(fwhm)
            or fwhm < 0
        ):
            raise ValueError(f"smoothing_fwhm must be None or a number >= 0 (mm), got {fwhm!r}.")
        if isinstance(imgs, (list, tuple)) and imgs and all(_is_surface_image(i) for i in imgs):
            imgs = _concat_surface_images(list(imgs), "imgs")
        if _is_surface_image(imgs):
            return self._prepare_surface(imgs, confounds)
        return self._prepare_volume(imgs, confounds)

    # ------------------------------------------------------------------
    # volumes
    # ------------------------------------------------------------------

    def _volume_masker_params(self):
        """Params of the nilearn masker, and a user masker (or None)."""
        params = {
            "standardize": _nilearn_standardize(self.standardize),
            "smoothing_fwhm": self.smoothing_fwhm,
            "reports": False,
        }
        user = self.mask if _is_nifti_masker(self.mask) else None
        if user is not None:
            self._check_masker_params(user)
            params = {k: v for k, v in user.get_params().items() if k != "mask_img"}
            params["standardize"] = _nilearn_standardize(params.get("standardize"))
        return params, user

    def _check_masker_params(self, masker):
        for name, default in (("standardize", False), ("smoothing_fwhm", None)):
            value = getattr(self, name)
            if value != default and _nilearn_standardize(value) != _nilearn_standardize(
                masker.get_params().get(name)
            ):
                raise ValueError(
                    f"{name}={value!r} conflicts with the masker's "
                    f"{name}={masker.get_params().get(name)!r}: give {name} to the masker "
                    "or to ImageSPCATV, not both."
                )

    def _prepare_volume(self, imgs, confounds):
        if _is_surface_masker(self.mask) or _is_surface_image(self.mask):
            raise TypeError(
                "mask: a surface mask was given for volume images; give a NIfTI "
                "mask, a NiftiMasker or None."
            )
        params, user = self._volume_masker_params()
        items = collect_images(imgs)
        mask_img = None
        if user is not None and hasattr(user, "mask_img_"):
            mask_img = load_mask_img(user.mask_img_)
        elif user is not None and user.mask_img is not None:
            mask_img = load_mask_img(user.mask_img)
        elif user is None and self.mask is not None:
            mask_img = load_mask_img(self.mask)
        ref = mask_img if mask_img is not None else items[0][1]
        grid = (
            mask_img
            if mask_img is not None
            else make_mask_img(np.ones(ref.shape[:3], dtype=bool), ref.affine, None)
        )
        img4d = _stack_volumes(items, grid, self.resample and mask_img is not None)
        n_samples = img4d.shape[3]
        confounds = _check_confounds(confounds, n_samples)
        if mask_img is None:  # computed as nilearn does (or by the user's masker)
            mask_img = load_mask_img(_computed_mask(img4d, user))
        mask = mask_array(mask_img)
        values = _in_mask(np.asarray(img4d.dataobj), mask)  # (N, P), the masker's order
        bad = ~np.all(np.isfinite(values), axis=0)
        n_bad = int(bad.sum())
        if n_bad:
            if n_bad == bad.size:
                raise ValueError(
                    "imgs are NaN or infinite in every voxel of the mask in at "
                    "least one image; nothing is left to analyse."
                )
            warnings.warn(
                f"{n_bad} voxel(s) of the mask are NaN or infinite in at least one image; "
                f"they were removed from the mask ({bad.size} -> {bad.size - n_bad} voxels).",
                UserWarning,
                stacklevel=3,
            )
            new = mask.copy()
            new[mask] = ~bad
            mask_img = make_mask_img(new, mask_img.affine, mask_img.header)
        self.mask_img_ = mask_img
        self._plain_masker = user is None and not self.standardize and self.smoothing_fwhm is None
        if self._plain_masker and confounds is None:
            # the masker would only copy: the in-mask values are X already, and the
            # masker (nilearn.maskers: ~0.8 s to import) is made when first asked for
            self._set_masker(lazy=(mask_img, params))
            X = np.ascontiguousarray(values[:, ~bad] if n_bad else values, dtype=np.float64)
        else:
            self._set_masker(_nilearn_maskers().NiftiMasker(mask_img=mask_img, **params))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                X = self._masker_transform(img4d, confounds, fit=True)
        del values
        self.space_ = VolumeMasker(mask_img)
        self.operator_ = self.space_.operator()
        self.meshes_ = None
        self.n_samples_ = int(n_samples)
        return X

    def _set_masker(self, masker=None, lazy=None):
        """Set ``masker_``, or (``lazy``: its mask image and params) have it made,
        fitted, when first read (:meth:`__getattr__`)."""
        self.__dict__.pop("masker_", None)
        self.__dict__.pop("_lazy_masker", None)
        if masker is not None:
            self.masker_ = masker
        else:
            self._lazy_masker = lazy

    def __getattr__(self, name):
        """``masker_`` of a plain volume fit: nilearn's NiftiMasker on the fitted mask,
        made (and fitted) on first use; it would only have copied the in-mask values."""
        lazy = self.__dict__.get("_lazy_masker") if name == "masker_" else None
        if lazy is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        mask_img, params = lazy
        masker = _nilearn_maskers().NiftiMasker(mask_img=mask_img, **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            masker.fit()
        self._set_masker(masker)
        return masker

    # ------------------------------------------------------------------
    # surfaces
    # ------------------------------------------------------------------

    def _check_surface_options(self):
        """smoothing_fwhm and a volume mask are refused for surfaces."""
        if self.smoothing_fwhm is not None:
            raise ValueError(
                "smoothing_fwhm is only available for volumes; smooth surface "
                "maps beforehand (e.g. FreeSurfer's qcache fwhm10 files)."
            )
        if _is_nifti_masker(self.mask) or (
            self.mask is not None and (is_pathlike(self.mask) or hasattr(self.mask, "affine"))
        ):
            raise TypeError(
                "mask: a NIfTI mask, a NiftiMasker or a single path was given "
                "for surface images; give a SurfaceImage mask, a SurfaceMasker, "
                "a (left, right) pair of arrays or cortex files, or None."
            )

    def _surface_masks(self, img):
        """The masker's params and the given masks per hemisphere (None: to compute)."""
        params = {"standardize": _nilearn_standardize(self.standardize), "reports": False}
        if not _is_surface_masker(self.mask):
            if self.mask is None:
                return params, {h: None for h in _HEMIS}
            return params, _surface_mask_arrays(self.mask, img)
        user = self.mask
        self._check_masker_params(user)
        params = {k: v for k, v in user.get_params().items() if k != "mask_img"}
        params["standardize"] = _nilearn_standardize(params.get("standardize"))
        if hasattr(user, "mask_img_"):
            return params, _surface_mask_arrays(user.mask_img_, img)
        if user.mask_img is not None:
            return params, _surface_mask_arrays(user.mask_img, img)
        return params, _surface_mask_arrays(clone(user).fit(img).mask_img_, img)

    def _prepare_surface(self, img, confounds):
        from nilearn.surface import SurfaceImage

        self._check_surface_options()
        tv_kind = _check_tv_kind(self.tv_kind)
        parts = _surface_parts(img, "imgs")
        n_samples = parts["left"].shape[1]
        confounds = _check_confounds(confounds, n_samples)
        params, masks = self._surface_masks(img)
        masks = _complete_surface_masks(masks, parts)
        mesh = img.mesh
        self.mask_img_ = SurfaceImage(mesh=mesh, data={h: masks[h] for h in _HEMIS})
        self._set_masker(_nilearn_maskers().SurfaceMasker(mask_img=self.mask_img_, **params))
        X = self._masker_transform(img, confounds, fit=True)
        meshes = {h: load_surf_mesh(mesh.parts[h], f"imgs ({h} mesh)") for h in _HEMIS}
        operator, hemis = tv_from_hemispheres(
            meshes["left"], meshes["right"], masks["left"], masks["right"], kind=tv_kind
        )
        self.operator_, self.space_, self.meshes_ = operator, hemis, meshes
        self.n_samples_ = int(n_samples)
        return X

    def _masker_transform(self, imgs, confounds, fit=False):
        if fit:
            self.masker_.fit()
        try:
            X = self.masker_.transform(imgs, confounds=confounds)
        except ValueError as exc:
            if confounds is not None and "confound" in str(exc).lower():
                raise ValueError(f"confounds: {exc}") from None
            raise
        return np.asarray(X, dtype=np.float64)

    def _check_fitted(self):
        check_is_fitted(self, "estimator_")

    def _data(self, imgs, confounds):
        """X of new images on the fitted mask (grid and mesh checked)."""
        self._check_fitted()
        if isinstance(imgs, (list, tuple)) and imgs and all(_is_surface_image(i) for i in imgs):
            imgs = _concat_surface_images(list(imgs), "imgs")
        if _is_surface_image(imgs):
            if self.meshes_ is None:
                raise TypeError("imgs: the model was fitted on volumes; give NIfTI images.")
            parts = _surface_parts(imgs, "imgs")
            for h in _HEMIS:
                if parts[h].shape[0] != self.space_.n_vertices[_HEMIS.index(h)]:
                    raise ValueError(
                        f"imgs: the {h} mesh has {parts[h].shape[0]} vertices, "
                        f"the model's {self.space_.n_vertices[_HEMIS.index(h)]}."
                    )
            n_samples = parts["left"].shape[1]
            finite = all(
                np.all(np.isfinite(parts[h][self.space_.vertices[i]])) for i, h in enumerate(_HEMIS)
            )
            source, X = imgs, None
        else:
            if self.meshes_ is not None:
                raise TypeError("imgs: the model was fitted on surfaces; give a SurfaceImage.")
            source = _stack_volumes(collect_images(imgs), self.mask_img_, self.resample)
            n_samples = source.shape[3]
            values = np.asarray(source.dataobj)[self.space_.mask]
            finite = bool(np.all(np.isfinite(values)))
            X = (
                np.ascontiguousarray(values.T, dtype=np.float64)
                if self._plain_masker and confounds is None
                else None
            )
            del values
        if not finite:  # checked before nilearn, which would replace them by zeros
            raise ValueError(
                "imgs: some voxels/vertices of the mask are NaN or infinite; the "
                "model's columns are fixed, so they cannot be left out here."
            )
        confounds = _check_confounds(confounds, n_samples)
        if X is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                X = self._masker_transform(source, confounds)
        return X

    def _to_img(self, V):
        """Rows (K x P) as images: 4-D NIfTI with the mask's affine, or SurfaceImage."""
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
        if self.meshes_ is None:
            return unmask(V, self.mask_img_)
        from nilearn.surface import SurfaceImage

        maps = self.space_.inverse_transform(V)
        return SurfaceImage(mesh=self.mask_img_.mesh, data=maps)


def _computed_mask(img4d, user):
    """The mask a masker computes from ``img4d``: the user's (a clone, fitted), or
    what ``NiftiMasker()`` computes with its default strategy ("background"),
    :func:`nilearn.masking.compute_background_mask`, called directly: importing
    ``nilearn.maskers`` costs 0.15-0.35 s more (scikit-learn's estimator checks,
    pytest) and the plain fit never needs it (issue 22 round 20)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if user is not None:
            return clone(user).fit(img4d).mask_img_
        return _nilearn_masking().compute_background_mask(img4d, verbose=0)


def _check_tv_kind(kind):
    """``tv_kind`` is "edges" or "gradient" (see :func:`neurospca.tv_from_mesh`)."""
    if not isinstance(kind, str) or kind not in ("edges", "gradient"):
        raise ValueError(f"tv_kind must be 'edges' or 'gradient', got {kind!r}.")
    return kind


def _complete_surface_masks(masks, parts):
    """Masks of both hemispheres: computed ones keep the vertices that vary across the
    samples; non-finite vertices are removed (each with a warning)."""
    computed = [h for h in _HEMIS if masks[h] is None]
    for h in computed:  # vertices that vary across the samples
        masks[h] = np.ptp(np.where(np.isfinite(parts[h]), parts[h], 0), axis=1) > 0
    n_const = {h: int((~masks[h]).sum()) for h in computed}
    if sum(n_const.values()):
        warnings.warn(
            f"no mask was given for the {' and '.join(computed)} hemisphere"
            f"{'s' if len(computed) > 1 else ''}: {sum(n_const.values())} vertex(es) "
            "constant across the samples (e.g. the medial wall; "
            + ", ".join(f"{h} {c}" for h, c in n_const.items())
            + ") were left out of the mask.",
            UserWarning,
            stacklevel=4,
        )
    n_bad = 0
    for h in _HEMIS:
        bad = masks[h] & ~np.all(np.isfinite(parts[h]), axis=1)
        if bad.any():
            n_bad += int(bad.sum())
            masks[h] = masks[h] & ~bad
    if n_bad:
        warnings.warn(
            f"{n_bad} vertex(es) are NaN or infinite in at least one map; they "
            "were removed from the mask.",
            UserWarning,
            stacklevel=4,
        )
    for h in _HEMIS:
        if not masks[h].any():
            raise ValueError(
                f"mask: the {h} mask keeps no vertex (after leaving out "
                "constant and non-finite vertices)."
            )
    return masks


def _in_mask(data, mask):
    """``data[mask].T``: the in-mask values of a 4-D array as (images, voxels), in
    the masker's column order (the mask's C order), in the data's dtype.

    Data in Fortran order (as NIfTI stores them and :func:`_stack_volumes`
    makes them) are gathered image by image from their contiguous volumes (a
    transposed boolean index would stride across every image per voxel).
    """
    n_images = data.shape[3]
    if data.flags.f_contiguous:
        flat = data.reshape(-1, n_images, order="F").T  # (images, voxels in F order), C order
        idx = np.ravel_multi_index(np.nonzero(mask), mask.shape, order="F")
        return np.take(flat, idx, axis=1)
    return np.ascontiguousarray(data[mask].T)
