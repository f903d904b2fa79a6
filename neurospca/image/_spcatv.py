"""Images in, images out: SPCA-TV on NIfTI volumes and nilearn surface images.

:class:`ImageSPCATV` is to :class:`~neurospca.SPCATV` what nilearn's
``DictLearning`` is to scikit-learn's: ``fit`` takes images (a 4-D NIfTI, a
list or glob of 3-D NIfTI, or a nilearn ``SurfaceImage`` holding both
hemispheres), masks them with a nilearn masker, builds the total-variation
operator of the final mask (:func:`~neurospca.tv_from_mask` on the mask image,
:func:`~neurospca.tv_from_hemispheres` on the image's meshes) and fits SPCA-TV;
the loadings come back as images (``components_img_``).

The columns of the data matrix, of the operator and of the report's space are
the same voxels/vertices in the same order: nilearn's maskers take the in-mask
voxels in C order (``data[mask]``), which is the column order of
:func:`~neurospca.tv_from_mask`, and the kept left vertices then the kept right
vertices in index order, which is the column order of
:func:`~neurospca.tv_from_hemispheres` (``tests/test_image_spcatv.py`` checks
both).

>>> model = ImageSPCATV(n_components=5).fit("maps/sub-*.nii.gz")       # doctest: +SKIP
>>> model.components_img_.shape                                        # doctest: +SKIP
(91, 109, 91, 5)
>>> model.generate_report().save_as_html("report.html")               # doctest: +SKIP

Size: about 720 lines, the estimator and its volume and surface masking in one
class (its input checks are in ``_inputs``, its participants side in ``_study``).

nilearn is imported only when an image model is fitted (``pip install
"neurospca[report]"``).
"""

import inspect
import logging
import os
import warnings

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from .._utils.docs import fill_doc
from ..decomposition import SPCATV
from ..masking import (
    VolumeMasker,
    _collect_images,
    _is_pathlike,
    _mask_array,
    _mask_img,
    load_mask_img,
    unmask,
)
from ..surface import load_surf_mesh, tv_from_hemispheres
from ._inputs import (
    _HEMIS,
    _check_confounds,
    _concat_surface_images,
    _is_surface_image,
    _is_surface_masker,
    _nilearn_maskers,
    _nilearn_standardize,
    _stack_volumes,
    _surface_mask_arrays,
    _surface_parts,
)
from ._study import (
    fit_study,
    image_subject_ids,
    participant_rows,
    study_findings,
    study_state,
    transform_study,
)

logger = logging.getLogger("neurospca")

__all__ = ["ImageSPCATV"]


# SPCATV's defaults, read from its signature: the image model follows them.
_SPCATV_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(SPCATV.__init__).parameters.items()
    if p.default is not inspect.Parameter.empty
}


# --------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------


class ImageSPCATV(BaseEstimator):
    """SPCA-TV on brain images: NIfTI volumes or nilearn surface images.

    Parameters
    ----------
    n_components : int or "auto", default=3
        "auto": chosen at fit by parallel analysis
        (:func:`neurospca.model_selection.parallel_analysis`, after masking,
        harmonisation and confound removal); ``n_components_`` and
        ``n_components_evidence_`` say what was chosen and why.
    mask : mask image, masker, pair of arrays or None, default=None
        Volumes: a 3-D NIfTI mask (image or path) on the images' grid, or a
        ``NiftiMasker`` (fitted or not; its own parameters are used). Surfaces:
        a ``SurfaceImage`` mask, a ``SurfaceMasker``, or a ``(left, right)``
        pair (or ``{"left", "right"}`` dict) of boolean arrays or cortex files
        (``.label``, ``.annot``, ``.label.gii``, ``.shape.gii``). None computes
        the mask: like ``NiftiMasker``'s default (``mask_strategy="background"``)
        for volumes; for surfaces every vertex that is constant across the
        samples (e.g. the medial wall) is left out, with a warning saying how
        many (also for a hemisphere given as None in a pair). Voxels or vertices that are NaN or infinite in any image are
        always left out (with a warning).
    standardize : bool or str, default=False
        Passed to the nilearn masker: z-score every voxel/vertex across the
        samples (True) or not. Note that ``alpha=None`` already makes the
        penalties scale-free.
    smoothing_fwhm : float, optional
        Gaussian smoothing (mm) of volumes before masking (nilearn). Not
        available for surfaces.
    resample : bool, default=False
        Images whose shape or affine differ from the mask's raise a
        ``ValueError`` unless True (resampled with
        ``nilearn.image.resample_to_img``, continuous interpolation).
    alpha, alpha_rel, l1_ratio, tv_ratio, tol, max_iter, solver, random_state, verbose, n_threads, method, stability
        Passed to :class:`~neurospca.SPCATV` (same meaning and defaults):
        ``alpha=None`` means ``alpha_ = alpha_rel * l1_max_`` (relative to the
        data), a float is the paper's absolute weight.

    Attributes
    ----------
    estimator_ : SPCATV
        The fitted model on the masked data.
    masker_ : nilearn NiftiMasker or SurfaceMasker
        Fitted on the final mask; maps images to rows and rows to images.
    mask_img_ : Nifti1Image or SurfaceImage
        The final mask.
    operator_ : GroupOperator
        TV operator of the final mask (columns in the masker's order).
    space_ : VolumeMasker or Hemispheres
        The same columns for :func:`neurospca.reporting.make_report` and
        :func:`neurospca.save_model`.
    meshes_ : dict or None
        Surfaces: ``{"left": (coords, faces), "right": (coords, faces)}`` of the
        images' mesh (what the report draws on); None for volumes.
    components_ : ndarray of shape (n_components, n_features)
    components_img_ : Nifti1Image or SurfaceImage
        4-D image with one volume per component, on the mask's grid; or a
        SurfaceImage with one column per component on the images' mesh.
    n_samples_ : int
    explained_variance_ratio_, explained_variance_, dual_gaps_, alpha_, l1_max_,
    n_iter_, converged_, mean_, scores_, singular_values_
        The same attributes of ``estimator_``.
    certified_support_, certified_zeros_, n_uncertain_, support_radius_
        The certified support of ``estimator_`` (see :class:`~neurospca.SPCATV`):
        loadings certified non-zero or zero, the uncertain ones per component.
    participant_ids_ : ndarray of str or None
        With ``participants`` at fit: each image's participant ID (row order).
    study_ : neurospca.study.StudyDesign or None
        With ``participants``: the encoding, ComBat parameters and confound
        effects learnt at fit (applied by ``transform``).
    associations_ : pandas.DataFrame or None
        With ``groups`` or ``covariates``: one row per component and
        variable (test, statistic, effect size, p, p corrected; see
        :func:`neurospca.study.associations`).

    Examples
    --------
    >>> from nilearn.datasets import load_fsaverage_data                 # doctest: +SKIP
    >>> model = ImageSPCATV(n_components=3).fit(surface_img)            # doctest: +SKIP
    >>> model.components_img_.data.parts["left"].shape                  # doctest: +SKIP
    (10242, 3)
    """

    def __init__(
        self,
        n_components=3,
        *,
        mask=None,
        standardize=False,
        smoothing_fwhm=None,
        resample=False,
        alpha=None,
        alpha_rel=_SPCATV_DEFAULTS["alpha_rel"],
        l1_ratio=_SPCATV_DEFAULTS["l1_ratio"],
        tv_ratio=_SPCATV_DEFAULTS["tv_ratio"],
        tol=_SPCATV_DEFAULTS["tol"],
        max_iter=_SPCATV_DEFAULTS["max_iter"],
        solver=_SPCATV_DEFAULTS["solver"],
        random_state=None,
        verbose=0,
        n_threads=None,
        method=_SPCATV_DEFAULTS["method"],
        stability=_SPCATV_DEFAULTS["stability"],
    ):
        self.n_components = n_components
        self.mask = mask
        self.standardize = standardize
        self.smoothing_fwhm = smoothing_fwhm
        self.resample = resample
        self.alpha = alpha
        self.alpha_rel = alpha_rel
        self.l1_ratio = l1_ratio
        self.tv_ratio = tv_ratio
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.random_state = random_state
        self.verbose = verbose
        self.n_threads = n_threads
        self.method = method
        self.stability = stability

    # ------------------------------------------------------------------
    # fit
    # ------------------------------------------------------------------

    @fill_doc
    def fit(
        self,
        imgs,
        y=None,
        confounds=None,
        *,
        participants=None,
        harmonize=None,
        groups=None,
        covariates=None,
        subject_ids=None,
        id_column="participant_id",
        n_permutations=9999,
    ):
        """Mask the images, build the TV operator of the mask and fit SPCA-TV.

        Parameters
        ----------
        imgs : 4-D NIfTI, list or glob of 3-D/4-D NIfTI (images or paths), or SurfaceImage
            One sample per 3-D volume (in order; a glob is sorted) or per data
            column of a SurfaceImage (both hemispheres; the mesh is the
            image's). A list of SurfaceImages on one mesh is stacked.
        %(y_ignored)s
        confounds : list of str, array-like of shape (n_samples, n_confounds) or path, optional
            With ``participants``: column names whose effects are removed
            (learnt on these subjects, applied unchanged by ``transform``;
            text columns one-hot encoded). Without: an array (or file)
            regressed out of every voxel/vertex by the nilearn masker.
        participants : path or pandas.DataFrame, optional
            The participants table (BIDS ``participants.tsv``, CSV or
            DataFrame), matched to the images by subject ID (``sub-<label>``
            in the file or folder names, or ``subject_ids``).
        harmonize : str, optional
            The site column: ComBat harmonisation (learnt here, saved,
            applied by ``transform``), preserving confounds, groups and
            covariates.
        groups, covariates : list of str, optional
            Categorical and numeric columns that every component's scores are
            tested against (``associations_``).
        subject_ids : list of str, optional
            One ID (or path holding ``sub-<label>``) per image, when the images
            carry no file names (a SurfaceImage, a 4-D file).
        id_column : str, default="participant_id"
            The table's ID column.
        n_permutations : int, default=9999
            Permutations of the association tests.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Images not on the mask's grid (without ``resample``), a
            SurfaceImage whose data and mesh disagree, a mask of the wrong
            shape, confounds with another number of rows than samples;
            participants missing some subjects or matching none, unknown
            columns, a site with one subject, a text column as a covariate
            (each naming the argument and the column).
        """
        study = (participants, harmonize, groups, covariates, subject_ids)
        self.study_ = self.participant_ids_ = self.associations_ = None
        if participants is None:
            if any(v is not None for v in study[1:]) or _names(confounds):
                raise ValueError(
                    "participants: harmonize, groups, covariates, subject_ids "
                    "and confound column names need participants= (the "
                    "participants table)."
                )
            return self._fit_matrix(self._prepare(imgs, confounds))
        if confounds is not None and not _names(confounds):
            raise TypeError(
                "confounds: with participants=, give column names (e.g. "
                "['age', 'sex']), not an array."
            )
        X = self._prepare(imgs, None)
        ids = image_subject_ids(imgs, subject_ids, X.shape[0])
        X = self._study_prepare(
            X, ids, participants, confounds, harmonize, groups, covariates, id_column
        )
        self._fit_matrix(X)
        self._train_scores = self.estimator_.transform(X)
        self._study_findings(n_permutations)
        return self

    def _study_prepare(
        self,
        X,
        ids,
        participants,
        confounds,
        harmonize,
        groups,
        covariates,
        id_column="participant_id",
    ):
        """Match the participants to ``ids``, learn and apply the adjustments; returns X."""
        self._id_column = id_column
        rows = participant_rows(participants, ids, id_column)
        return fit_study(self, X, rows, confounds, harmonize, groups, covariates)

    def _study_findings(self, n_permutations=9999):
        """``associations_`` of the fitted model's training scores (as in scores.csv)."""
        from ..reporting import component_scores

        self._n_permutations = n_permutations
        self.associations_ = study_findings(
            self, component_scores(self.estimator_), n_permutations, self.random_state
        )
        return self.associations_

    def _study_state(self):
        """The participants side as saved with the model and shown in the report."""
        return None if getattr(self, "study_", None) is None else study_state(self)

    @fill_doc
    def fit_transform(self, imgs, y=None, confounds=None, **study):
        """Fit, then the scores of the training images (``transform``).

        Parameters
        ----------
        imgs : images as in :meth:`fit`
        %(y_ignored)s
        confounds : list of str, array-like of shape (n_samples, n_confounds) or path, optional
        **study
            ``participants``, ``harmonize``, ``groups``, ``covariates``,
            ``subject_ids``... as in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
        """
        if study:
            self.fit(imgs, confounds=confounds, **study)
            return self._train_scores
        X = self._prepare(imgs, confounds)
        self._fit_matrix(X)
        return self.estimator_.transform(X)

    def prepare(self, imgs, confounds=None):
        """Mask the images as :meth:`fit` does, without fitting.

        Sets the masker, mask and operator (``masker_``, ``mask_img_``,
        ``operator_``, ``space_``) and returns the data matrix with the
        unfitted SPCATV that :meth:`fit` would fit on it, e.g. for
        :func:`neurospca.model_selection.select_penalty`.

        Parameters
        ----------
        imgs : images as in :meth:`fit`
        confounds : array-like of shape (n_samples, n_confounds) or path, optional

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        estimator : SPCATV
            Unfitted, with the mask's TV operator.
        """
        X = self._prepare(imgs, confounds)
        return X, self._make_estimator(self.operator_)

    def _make_estimator(self, operator):
        """The unfitted SPCATV given the operator (fit_images swaps in a template)."""
        template = getattr(self, "_template", None)
        if template is not None:
            return clone(template).set_params(operator=operator)
        k = self.n_components
        if isinstance(k, str):
            k = getattr(self, "n_components_", None)
            if k is None:
                raise ValueError(
                    "n_components='auto' is chosen from the data at fit; call fit (or give an int)."
                )
        return SPCATV(
            k,
            alpha=self.alpha,
            alpha_rel=self.alpha_rel,
            l1_ratio=self.l1_ratio,
            tv_ratio=self.tv_ratio,
            operator=operator,
            tol=self.tol,
            max_iter=self.max_iter,
            solver=self.solver,
            random_state=self.random_state,
            verbose=self.verbose,
            n_threads=self.n_threads,
            method=self.method,
            stability=self.stability,
        )

    def _choose_n_components(self, X):
        """``n_components_`` (and its evidence) from X: the given int, or parallel analysis
        for ``n_components="auto"``."""
        self.n_components_evidence_ = None
        template = getattr(self, "_template", None)
        if template is not None:  # fit_images: the given estimator's own number
            self.n_components_ = template.n_components
        elif isinstance(self.n_components, str):
            if self.n_components != "auto":
                raise ValueError(
                    f"n_components must be an int >= 1 or 'auto', got {self.n_components!r}."
                )
            from ..model_selection import parallel_analysis

            seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else 0
            k, self.n_components_evidence_ = parallel_analysis(X, random_state=seed)
            self.n_components_ = k
        else:
            self.n_components_ = self.n_components
        return self.n_components_

    def _fit_matrix(self, X, n_components=None):
        if n_components is None:
            self._choose_n_components(X)
        self.estimator_ = self._make_estimator(self.operator_).fit(X)
        self.components_ = self.estimator_.components_
        self.components_img_ = self._to_img(self.components_)
        return self

    def _prepare(self, imgs, confounds):
        """Masker, mask, operator, space from the images; returns X (N x P)."""
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
        maskers = _nilearn_maskers()
        params = {
            "standardize": _nilearn_standardize(self.standardize),
            "smoothing_fwhm": self.smoothing_fwhm,
            "reports": False,
        }
        user = self.mask if isinstance(self.mask, maskers.NiftiMasker) else None
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
        maskers = _nilearn_maskers()
        if _is_surface_masker(self.mask) or _is_surface_image(self.mask):
            raise TypeError(
                "mask: a surface mask was given for volume images; give a NIfTI "
                "mask, a NiftiMasker or None."
            )
        params, user = self._volume_masker_params()
        items = _collect_images(imgs)
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
            else _mask_img(np.ones(ref.shape[:3], dtype=bool), ref.affine, None)
        )
        img4d = _stack_volumes(items, grid, self.resample and mask_img is not None)
        n_samples = img4d.shape[3]
        confounds = _check_confounds(confounds, n_samples)
        if mask_img is None:  # computed as nilearn does (or by the user's masker)
            auto = clone(user) if user is not None else maskers.NiftiMasker(**params)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                mask_img = load_mask_img(auto.fit(img4d).mask_img_)
        mask = _mask_array(mask_img)
        values = np.asarray(img4d.dataobj)[mask]  # (P, N), the masker's column order
        bad = ~np.all(np.isfinite(values), axis=1)
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
            mask_img = _mask_img(new, mask_img.affine, mask_img.header)
        self.mask_img_ = mask_img
        self.masker_ = maskers.NiftiMasker(mask_img=mask_img, **params)
        self._plain_masker = user is None and not self.standardize and self.smoothing_fwhm is None
        plain = self._plain_masker and confounds is None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if plain:  # the masker would only copy: the in-mask values are X already
                self.masker_.fit()
                X = np.ascontiguousarray(values[~bad].T, dtype=np.float64)
            else:
                X = self._masker_transform(img4d, confounds, fit=True)
        del values
        self.space_ = VolumeMasker(mask_img)
        self.operator_ = self.space_.operator()
        self.meshes_ = None
        self.n_samples_ = int(n_samples)
        return X

    # ------------------------------------------------------------------
    # surfaces
    # ------------------------------------------------------------------

    def _prepare_surface(self, img, confounds):
        from nilearn.surface import SurfaceImage

        maskers = _nilearn_maskers()
        if self.smoothing_fwhm is not None:
            raise ValueError(
                "smoothing_fwhm is only available for volumes; smooth surface "
                "maps beforehand (e.g. FreeSurfer's qcache fwhm10 files)."
            )
        if isinstance(self.mask, maskers.NiftiMasker) or (
            self.mask is not None and (_is_pathlike(self.mask) or hasattr(self.mask, "affine"))
        ):
            raise TypeError(
                "mask: a NIfTI mask, a NiftiMasker or a single path was given "
                "for surface images; give a SurfaceImage mask, a SurfaceMasker, "
                "a (left, right) pair of arrays or cortex files, or None."
            )
        parts = _surface_parts(img, "imgs")
        n_samples = parts["left"].shape[1]
        confounds = _check_confounds(confounds, n_samples)
        params = {"standardize": _nilearn_standardize(self.standardize), "reports": False}
        if _is_surface_masker(self.mask):
            user = self.mask
            self._check_masker_params(user)
            params = {k: v for k, v in user.get_params().items() if k != "mask_img"}
            params["standardize"] = _nilearn_standardize(params.get("standardize"))
            if hasattr(user, "mask_img_"):
                masks = _surface_mask_arrays(user.mask_img_, img)
            elif user.mask_img is not None:
                masks = _surface_mask_arrays(user.mask_img, img)
            else:
                fitted = clone(user).fit(img)
                masks = _surface_mask_arrays(fitted.mask_img_, img)
        elif self.mask is None:
            masks = {h: None for h in _HEMIS}
        else:
            masks = _surface_mask_arrays(self.mask, img)
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
                stacklevel=3,
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
                stacklevel=3,
            )
        for h in _HEMIS:
            if not masks[h].any():
                raise ValueError(
                    f"mask: the {h} mask keeps no vertex (after leaving out "
                    "constant and non-finite vertices)."
                )
        mesh = img.mesh
        self.mask_img_ = SurfaceImage(mesh=mesh, data={h: masks[h] for h in _HEMIS})
        self.masker_ = maskers.SurfaceMasker(mask_img=self.mask_img_, **params)
        X = self._masker_transform(img, confounds, fit=True)
        meshes = {h: load_surf_mesh(mesh.parts[h], f"imgs ({h} mesh)") for h in _HEMIS}
        operator, hemis = tv_from_hemispheres(
            meshes["left"],
            meshes["right"],
            masks["left"],
            masks["right"],
            kind=getattr(self, "_tv_kind", "edges"),
        )
        self.operator_, self.space_, self.meshes_ = operator, hemis, meshes
        self.n_samples_ = int(n_samples)
        return X

    # ------------------------------------------------------------------
    # shared helpers
    # ------------------------------------------------------------------

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
            source = _stack_volumes(_collect_images(imgs), self.mask_img_, self.resample)
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

    # ------------------------------------------------------------------
    # transform, score, report
    # ------------------------------------------------------------------

    def transform(self, imgs, confounds=None, *, participants=None, subject_ids=None):
        """Scores of images on the components (least squares, as SPCATV.transform).

        Parameters
        ----------
        imgs : images as in :meth:`fit`
        confounds : array-like or path, optional
            Without participants at fit only (regressed by the masker).
        participants : path or pandas.DataFrame, optional
            The new subjects' rows (site and confound columns), needed when
            the fit harmonised sites or removed confounds: the training
            subjects' parameters are applied, nothing is re-estimated.
        subject_ids : list of str, optional
            As in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
        """
        self._check_fitted()
        if getattr(self, "study_", None) is None:
            return self.estimator_.transform(self._data(imgs, confounds))
        X = transform_study(self, self._data(imgs, None), imgs, participants, subject_ids)
        return self.estimator_.transform(X)

    def inverse_transform(self, S):
        """Images of scores: ``S components_ + mean_`` unmasked.

        Parameters
        ----------
        S : array-like of shape (n_samples, n_components)

        Returns
        -------
        Nifti1Image or SurfaceImage
            4-D (one volume per sample) with the mask's affine; or a
            SurfaceImage with one column per sample. Standardisation and
            confound removal (if used) are not undone.
        """
        self._check_fitted()
        return self._to_img(self.estimator_.inverse_transform(S))

    def score(self, imgs, confounds=None, *, participants=None, subject_ids=None):
        """Held-out fit of images, higher is better (``SPCATV.score`` on the masked data).

        Parameters
        ----------
        imgs : images as in :meth:`fit`
        confounds : array-like or path, optional
        participants, subject_ids : optional
            As in :meth:`transform` (the training adjustments are applied first).

        Returns
        -------
        float
        """
        self._check_fitted()
        if getattr(self, "study_", None) is None:
            return float(self.estimator_.score(self._data(imgs, confounds)))
        X = transform_study(self, self._data(imgs, None), imgs, participants, subject_ids)
        return float(self.estimator_.score(X))

    def generate_report(
        self, title=None, atlas=None, atlas_labels=None, selection=None, command=None
    ):
        """The HTML report of the fitted model (nilearn-style).

        Parameters
        ----------
        title : str, optional
            Default "neurospca report".
        atlas : NIfTI image/path or (left, right) annot paths/label arrays, optional
            Labels for the report's peaks and clusters (see
            :func:`neurospca.reporting.make_report`).
        atlas_labels : list or dict, optional
            Names of the atlas labels.
        selection : object, optional
            The result of ``neurospca.model_selection.select_penalty``.
        command : str, optional
            The command line that produced the model.

        Returns
        -------
        neurospca.reporting.HTMLReport
        """
        self._check_fitted()
        from ..reporting import FigureCache, HTMLReport, make_report

        extras = {
            k: v
            for k, v in (
                ("atlas", atlas),
                ("atlas_labels", atlas_labels),
                ("selection", selection),
                ("command", command),
                ("n_components_evidence", getattr(self, "n_components_evidence_", None)),
            )
            if v is not None
        }
        meshes = None
        if self.meshes_ is not None:
            from ..reporting.plotting import surface_background

            meshes = dict(self.meshes_)
            for h in _HEMIS:
                meshes[f"bg_{h}"] = surface_background(*self.meshes_[h])
        if getattr(self, "study_", None) is not None:
            extras["study"] = self._study_state()
        if getattr(self, "_figure_cache", None) is None:  # redraws reuse unchanged figures
            self._figure_cache = FigureCache()
        html = make_report(
            self.estimator_,
            self.space_,
            meshes=meshes,
            title="neurospca report" if title is None else title,
            data_description=self._data_description(),
            figure_cache=self._figure_cache,
            **extras,
        )
        return HTMLReport(html)

    def _data_description(self):
        desc = {
            "input": "surface images (nilearn SurfaceImage)"
            if self.meshes_ is not None
            else "NIfTI images",
            "samples (images)": self.n_samples_,
        }
        if self.standardize:
            desc["standardize"] = str(self.standardize)
        if self.smoothing_fwhm is not None:
            desc["smoothing FWHM (mm)"] = self.smoothing_fwhm
        return desc


def _names(confounds):
    """Whether ``confounds`` is column names (a str or a list of str)."""
    return (
        isinstance(confounds, str)
        and not os.path.exists(confounds)
        or (
            isinstance(confounds, (list, tuple))
            and bool(confounds)
            and all(isinstance(c, str) for c in confounds)
        )
    )


def _passthrough(name):
    def getter(self):
        check_is_fitted(self, "estimator_")
        return getattr(self.estimator_, name)

    getter.__name__ = name
    getter.__doc__ = f"``estimator_.{name}``."
    return property(getter)


for _name in (
    "explained_variance_ratio_",
    "explained_variance_",
    "dual_gaps_",
    "alpha_",
    "l1_max_",
    "n_iter_",
    "converged_",
    "mean_",
    "scores_",
    "singular_values_",
    "gap_history_",
    "fit_time_",
    "alpha_rel_",
    "rel_gaps_",
    "penalty_weights_",
    "stability_",
    "auto_path_",
    "n_sweeps_",
    "certified_support_",
    "certified_zeros_",
    "n_uncertain_",
    "support_radius_",
):
    setattr(ImageSPCATV, _name, _passthrough(_name))
del _name
