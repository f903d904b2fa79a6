"""Images in, images out: SPCA-TV on NIfTI volumes and nilearn surface images.

:class:`ImageSPCATV` is to :class:`~neurospca.SPCATV` what nilearn's
``DictLearning`` is to scikit-learn's: ``fit`` takes images (a 4-D NIfTI, a
list or glob of 3-D NIfTI, or a nilearn ``SurfaceImage`` holding both
hemispheres), masks them with a nilearn masker, builds the total-variation
operator of the final mask (:func:`~neurospca.tv_from_mask` on the mask image,
:func:`~neurospca.tv_from_hemispheres` on the image's meshes) and fits SPCA-TV;
the loadings come back as images (``components_img_``). ``estimator=`` fits any
of the five estimators instead (SSPCA, NonnegativeSparsePCA, KTraceNormPCA,
HierarchicalDictionaryLearning or a configured SPCATV), each given the
structure it needs from the images (``_estimators``).

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

The masking is in ``_masking`` (its input checks in ``_inputs``), the
estimator to fit and its structure in ``_estimators``, the report in
``_report``, the participants side in ``_study``.

Size: 600+ lines: ``fit``'s docstring (one argument, ``split_groups``, over the
600 lines of round 8); its logic is in ``_time_series``.

nilearn is imported only when an image model is fitted (``pip install
"neurospca[report]"``).
"""

import logging
import os

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._utils.docs import fill_doc
from ..decomposition import name_dense_confound
from ._estimators import (
    SPCATV_DEFAULTS,
    check_conflicts,
    check_estimator,
    default_spcatv,
    with_structure,
)
from ._masking import ImageMasking
from ._report import ImageReport
from ._study import (
    fit_study,
    image_subject_ids,
    participant_rows,
    study_findings,
    study_state,
    transform_study,
)
from ._time_series import image_split_groups

logger = logging.getLogger("neurospca")

__all__ = ["ImageSPCATV"]


# --------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------


class ImageSPCATV(ImageMasking, ImageReport, BaseEstimator):
    """SPCA-TV on brain images: NIfTI volumes or nilearn surface images.

    Parameters
    ----------
    n_components : int or "auto", default=3
        "auto": chosen at fit by parallel analysis against the noise's own
        spectral edge (:func:`neurospca.model_selection.parallel_analysis`,
        ``null="edge"``, robust to spatially smooth noise; after masking,
        harmonisation and confound removal); at least 1, with a warning when
        no component exceeds the null. ``n_components_`` and
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
        many (also for a hemisphere given as None in a pair). Voxels or
        vertices that are NaN or infinite in any image are always left out
        (with a warning).
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
    alpha, alpha_rel, l1_ratio, tv_ratio, tol, max_iter
        Passed to :class:`~neurospca.SPCATV`, as the next line.
    solver, random_state, verbose, n_threads, method, stability
        Passed to :class:`~neurospca.SPCATV` (same meaning and defaults):
        ``alpha=None`` means ``alpha_ = alpha_rel * l1_max_`` (relative to the
        data), a float is the paper's absolute weight. They describe the
        default estimator only: with ``estimator=`` they must stay at their
        defaults (or equal the estimator's own value of the same name), else
        ``fit`` raises a ValueError naming the parameter.
    estimator : estimator or None, default=None
        None fits :class:`~neurospca.SPCATV` with the parameters above. Or an
        unfitted :class:`~neurospca.SPCATV`, :class:`~neurospca.SSPCA`,
        :class:`~neurospca.NonnegativeSparsePCA`,
        :class:`~neurospca.KTraceNormPCA` or
        :class:`~neurospca.HierarchicalDictionaryLearning`: cloned at fit,
        its own parameters (``n_components`` included) respected, and given
        the structure its penalty needs from the images: SPCATV the TV
        operator of the final mask or meshes; SSPCA with ``groups=None`` the
        half-space groups of the mask's grid (volumes,
        :func:`~neurospca.grid_halfspace_groups`) or of the vertex positions
        binned on an 8 x 8 x 8 grid per hemisphere, plus each hemisphere
        (surfaces). The others need none (the dictionary's tree is over its
        atoms). ``n_components`` of the image model is then used only when
        not the default: ``"auto"`` sets the estimator's number, an int must
        equal it.
    tv_kind : {"edges", "gradient"}, default="edges"
        Surfaces: the TV operator of the meshes (see
        :func:`~neurospca.tv_from_mesh`). Volumes use the grid's edges.

    Attributes
    ----------
    estimator_ : SPCATV or the class of ``estimator``
        The fitted model on the masked data.
    n_components_ : int
        The number of components (rows of ``components_``).
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
        alpha_rel=SPCATV_DEFAULTS["alpha_rel"],
        l1_ratio=SPCATV_DEFAULTS["l1_ratio"],
        tv_ratio=SPCATV_DEFAULTS["tv_ratio"],
        tol=SPCATV_DEFAULTS["tol"],
        max_iter=SPCATV_DEFAULTS["max_iter"],
        solver=SPCATV_DEFAULTS["solver"],
        random_state=None,
        verbose=0,
        n_threads=None,
        method=SPCATV_DEFAULTS["method"],
        stability=SPCATV_DEFAULTS["stability"],
        estimator=None,
        tv_kind="edges",
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
        self.estimator = estimator
        self.tv_kind = tv_kind

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
        split_groups="auto",
    ):
        """Mask the images, build the TV operator of the mask and fit SPCA-TV (or
        ``estimator``, given the structure it needs).

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
        split_groups : "auto", None, "blocks", int or array-like, default="auto"
            Images that belong together, kept in one split half by SPCA-TV's
            ``alpha_rel="auto"`` and ``stability_`` (see ``SPCATV.fit``). "auto":
            contiguous blocks for a single 4-D NIfTI time series (time unit and
            TR in the header; said in one line), else independent images
            (``_time_series``).

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
            groups = image_split_groups(self, imgs, split_groups)
            return self._fit_matrix(self._prepare(imgs, confounds), split_groups=groups)
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
        self._fit_matrix(X, split_groups=image_split_groups(self, imgs, split_groups, participants))
        d = self.study_  # a whole-map signal left in: name its column (issue 20 round 16)
        name_dense_confound(self.estimator_, X, self._study_rows, [d.id_column, d.harmonize])
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
        self._n_permutations = n_permutations
        self.associations_ = study_findings(
            self, self._training_scores(), n_permutations, self.random_state
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
        self._fit_matrix(X, split_groups=image_split_groups(self, imgs))
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
        estimator : SPCATV or the class of ``estimator``
            Unfitted, with the mask's TV operator (or the structure the given
            estimator gets, see ``estimator``).
        """
        X = self._prepare(imgs, confounds)
        return X, self._make_estimator(self.operator_)

    def split_groups_for(self, imgs, split_groups="auto"):
        """The ``split_groups`` :meth:`fit` gives its estimator for ``imgs``.

        For :func:`neurospca.model_selection.select_penalty`, whose halves
        then keep the rows together as the fit's do.

        Parameters
        ----------
        imgs : images as in :meth:`fit`
        split_groups : "auto", None, "blocks", int or array-like, default="auto"
            As in :meth:`fit` ("auto": ``"blocks"`` for a single 4-D NIfTI
            time series, else None).

        Returns
        -------
        None, "blocks", int or array-like
        """
        return image_split_groups(self, imgs, split_groups)

    def _make_estimator(self, operator):
        """The unfitted estimator of the masked data: the default SPCATV with
        ``operator``, or a clone of ``estimator`` with the images' structure."""
        k = self.n_components
        if isinstance(k, str):
            k = getattr(self, "n_components_", None)
            if k is None:
                raise ValueError(
                    "n_components='auto' is chosen from the data at fit; call fit (or give an int)."
                )
            if self.estimator is not None:
                return with_structure(self, self.estimator, k)
        if self.estimator is not None:
            return with_structure(self, self.estimator, None)
        return default_spcatv(self, k, operator)

    def _training_scores(self):
        """Scores of the training images: SPCA-TV's ``d_k ||v_k|| u_k`` (no data needed),
        else the estimator's ``transform`` of the training data (kept at fit)."""
        if _has_component_scores(self.estimator_):
            from ..reporting import component_scores

            return component_scores(self.estimator_)
        return self._train_scores

    def _check_estimator(self):
        """``estimator`` and the parameters that go with it (before any work)."""
        if check_estimator(self.estimator) is not None:
            check_conflicts(self, _IMAGE_DEFAULTS)

    def _choose_n_components(self, X):
        """``n_components_`` (and its evidence) from X: the given int (or the given
        estimator's), or parallel analysis for ``n_components="auto"`` (the edge
        null: the count of components above the noise's spectral edge, >= 1)."""
        self.n_components_evidence_ = None
        self._check_estimator()
        if isinstance(self.n_components, str):
            if self.n_components != "auto":
                raise ValueError(
                    f"n_components must be an int >= 1 or 'auto', got {self.n_components!r}."
                )
            from ..model_selection import parallel_analysis

            seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else 0
            k, self.n_components_evidence_ = parallel_analysis(X, null="edge", random_state=seed)
            self.n_components_ = k
        elif self.estimator is not None:
            self.n_components_ = _estimator_components(self.estimator)
        else:
            self.n_components_ = self.n_components
        return self.n_components_

    def _fit_matrix(self, X, n_components=None, split_groups=None):
        if n_components is None:
            self._choose_n_components(X)
        extra = {} if split_groups is None else {"split_groups": split_groups}
        self.estimator_ = self._make_estimator(self.operator_).fit(X, **extra)
        self.components_ = self.estimator_.components_
        if self.estimator is not None:
            self.n_components_ = int(self.components_.shape[0])
        if not _has_component_scores(self.estimator_):
            self._train_scores = self.estimator_.transform(X)
        self.components_img_ = self._to_img(self.components_)
        return self

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
        if hasattr(self.estimator_, "inverse_transform"):
            return self._to_img(self.estimator_.inverse_transform(S))
        S = np.atleast_2d(np.asarray(S, dtype=np.float64))  # the estimator has none
        return self._to_img(S @ self.components_ + getattr(self.estimator_, "mean_", 0.0))

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
        if not hasattr(self.estimator_, "score"):
            raise AttributeError(
                f"score: {type(self.estimator_).__name__} has no score method; "
                "compare held-out images with transform and inverse_transform."
            )
        if getattr(self, "study_", None) is None:
            return float(self.estimator_.score(self._data(imgs, confounds)))
        X = transform_study(self, self._data(imgs, None), imgs, participants, subject_ids)
        return float(self.estimator_.score(X))


_IMAGE_DEFAULTS = ImageSPCATV().get_params(deep=False)


def _has_component_scores(estimator):
    """Whether the reports' score formula applies (SPCA-TV's ``scores_`` and
    ``singular_values_``)."""
    return hasattr(estimator, "scores_") and hasattr(estimator, "singular_values_")


def _estimator_components(estimator):
    """The number of components an unfitted estimator will fit (its own parameters)."""
    tree = getattr(estimator, "tree", None)
    if tree is not None:  # HierarchicalDictionaryLearning: one atom per node
        return int(getattr(tree, "n_nodes", None) or np.asarray(tree).size)
    k = getattr(estimator, "n_components", None)
    return None if k is None else int(k)


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
    "l1_ratio_",
    "tv_ratio_",
    "rel_gaps_",
    "penalty_weights_",
    "stability_",
    "auto_path_",
    "n_sweeps_",
    "certified_support_",
    "certified_zeros_",
    "n_uncertain_",
    "support_radius_",
    "support_others_",
):
    setattr(ImageSPCATV, _name, _passthrough(_name))
del _name
