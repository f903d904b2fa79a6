"""What every section of the report reads: the checked arguments of
:func:`~neurospca.reporting.make_report` and the values derived from the fitted
model once (scores, penalties, explained variance, gaps, stability, the
certified view of the loadings).

A model may lack any of the fitted attributes an SPCA-TV model has (another
estimator, or a model saved by an older version): each value below is then None
and the sections that need it are left out or labelled.
"""

from types import SimpleNamespace

import numpy as np

from ..masking import VolumeMasker
from ..surface import Hemispheres
from . import anatomy
from ._methods import penalties
from ._tables import certified_view, selection_table

__all__ = [
    "ReportInputs",
    "check_arguments",
    "check_scores",
    "report_inputs",
    "stability_view",
    "feature_unit",
]


class ReportInputs(SimpleNamespace):
    """The arguments of one report and what is derived from the model once.

    Attributes
    ----------
    estimator, space, meshes, bg_img, engine, dpi, surface_coords, selection,
    cluster_connectivity, max_clusters, study, metadata, command, figure_cache,
    n_jobs, atlas, atlas_name, data_description, n_components_evidence
        As given to :func:`~neurospca.reporting.make_report` (``command``
        falls back to ``metadata["command"]``).
    comps : ndarray of shape (n_components, n_features)
        ``components_``.
    shown : ndarray of shape (n_components, n_features)
        The loadings drawn and counted (only the certified non-zeros when the
        model has ``certified_support_``).
    certified : ndarray of bool or None
        ``certified_support_``.
    atlas_obj, hemi_coords
        The loaded atlas and the surfaces' peak coordinates (or None).
    scores : ndarray or None
        :func:`~neurospca.reporting.component_scores` for SPCA-TV, else
        the ``scores`` given to the report (checked; None: no scores).
    scores_transformed : bool
        Whether ``scores`` are the given ones (not SPCA-TV's).
    versions, pen, tol, evr, pca_evr, rel_gaps
        Library versions, penalties (:func:`penalties`), the tolerance, the
        adjusted and PCA explained variance ratios and the final relative gaps.
    sel, stability, stability_label
        The selection table (or None) and the stability per component shown
        (from the selection, else the model's ``stability_``; or None).
    """

    @property
    def n_components(self):
        """Rows of ``components_``."""
        return self.comps.shape[0]

    @property
    def n_features(self):
        """Columns of ``components_``."""
        return self.comps.shape[1]

    @property
    def n_samples(self):
        """Training samples (None when the model stores no scores)."""
        return None if self.scores is None else int(self.scores.shape[0])

    @property
    def unit(self):
        """What a feature is: voxels, vertices or features."""
        return feature_unit(self.space)


def feature_unit(space):
    """ "voxels", "vertices" or "features" for a space (or None)."""
    if isinstance(space, VolumeMasker):
        return "voxels"
    if isinstance(space, Hemispheres):
        return "vertices"
    return "features"


def _check_space(space):
    if space is not None and not isinstance(space, (VolumeMasker, Hemispheres)):
        raise TypeError(
            f"space must be a VolumeMasker, a Hemispheres or None, got {type(space).__name__}."
        )


def _check_types(title, data_description, metadata):
    if data_description is not None and not isinstance(data_description, dict):
        raise TypeError(f"data_description must be a dict, got {type(data_description).__name__}.")
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}.")
    if metadata is not None and not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}.")


def _check_options(cluster_connectivity, max_clusters, atlas, space):
    if cluster_connectivity not in (6, 18, 26):
        raise ValueError(f"cluster_connectivity must be 6, 18 or 26, got {cluster_connectivity!r}.")
    if (
        isinstance(max_clusters, bool)
        or not isinstance(max_clusters, (int, np.integer))
        or max_clusters < 1
    ):
        raise ValueError(f"max_clusters must be an int >= 1, got {max_clusters!r}.")
    if atlas is not None and space is None:
        raise ValueError(
            "atlas needs a brain space: pass space= (a VolumeMasker or a Hemispheres) with atlas=."
        )


def check_arguments(estimator, space, args):
    """Check the arguments of a report (raises in the order the report always did).

    Parameters
    ----------
    estimator : object
        Must have ``components_``.
    space : VolumeMasker, Hemispheres or None
    args : dict
        The keyword arguments of :func:`~neurospca.reporting.make_report`.

    Returns
    -------
    comps : ndarray of shape (n_components, n_features)
    command : str or None
        ``args["command"]``, else the metadata's.
    """
    if not hasattr(estimator, "components_"):
        raise ValueError("estimator must be fitted (it has no components_).")
    _check_space(space)
    comps = np.asarray(estimator.components_, dtype=np.float64)
    if space is not None and space.n_features != comps.shape[1]:
        raise ValueError(
            f"space has {space.n_features} voxels/vertices but the model has "
            f"{comps.shape[1]} features."
        )
    metadata, command = args["metadata"], args["command"]
    _check_types(args["title"], args["data_description"], metadata)
    if command is None and metadata is not None:
        command = metadata.get("command")
    if command is not None and not isinstance(command, str):
        raise TypeError(f"command must be a str, got {type(command).__name__}.")
    _check_options(args["cluster_connectivity"], args["max_clusters"], args["atlas"], space)
    args["scores"] = check_scores(args["scores"], comps.shape[0])
    return comps, command


def stability_view(estimator, selection, sel):
    """(stability per component, its label) of a report, or (None, label).

    Parameters
    ----------
    estimator : fitted estimator
        Its ``stability_`` (reproducibility across resampled fits) is used when there is
        no selection and it holds a finite value.
    selection : object or None
        A penalty selection (its ``rule`` names the measure).
    sel : dict or None
        :func:`selection_table` of ``selection``.

    Returns
    -------
    stability : ndarray or None
    label : str
    """
    stability = None if sel is None else sel["stability"]
    label = (
        "split-half reproducibility"
        if getattr(selection, "rule", None) == "reproducibility"
        else "mean pairwise Dice"
    )
    own = getattr(estimator, "stability_", None)
    if stability is None and own is not None and np.any(np.isfinite(own)):
        return np.asarray(own, dtype=np.float64).ravel(), "reproducibility across resampled fits"
    return stability, label


def _float_or_none(value):
    return float(value) if isinstance(value, (int, float, np.integer, np.floating)) else None


def _ravel_or_none(value):
    return None if value is None else np.asarray(value, dtype=np.float64).ravel()


def _fitted_values(estimator, n_components):
    """Explained variance (adjusted, PCA), final relative gaps and tol of a model."""
    evr = np.asarray(
        getattr(estimator, "explained_variance_ratio_", np.full(n_components, np.nan)),
        dtype=np.float64,
    )
    return {
        "evr": evr,
        "pca_evr": _ravel_or_none(getattr(estimator, "pca_explained_variance_ratio_", None)),
        "rel_gaps": _ravel_or_none(getattr(estimator, "rel_gaps_", None)),
        "tol": _float_or_none(getattr(estimator, "tol", None)),
    }


def _scores(estimator, given):
    """The training scores: SPCA-TV's ``d_k ||v_k|| u_k`` (no data needed), else
    the given ones (e.g. the estimator's ``transform`` of the training data)."""
    from .report import component_scores

    if hasattr(estimator, "scores_") and hasattr(estimator, "singular_values_"):
        return component_scores(estimator)
    return given


def check_scores(scores, n_components):
    """``scores`` as a float array of shape (n_samples, n_components), or None.

    Raises
    ------
    TypeError
        If ``scores`` is not array-like of numbers.
    ValueError
        If it is not 2-D with one column per component, or not finite.
    """
    if scores is None:
        return None
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"scores must be an array of numbers, got {type(scores).__name__}."
        ) from None
    if arr.ndim != 2 or arr.shape[1] != n_components or arr.shape[0] < 1:
        raise ValueError(
            f"scores must have shape (n_samples, {n_components}) (one column per "
            f"component), got {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError("scores must be finite (no nan or inf).")
    return arr


def _hemi_coords(space, meshes, surface_coords):
    if isinstance(space, Hemispheres) and (meshes is not None or surface_coords is not None):
        return anatomy._hemi_coords(space, meshes, surface_coords)
    return None


def report_inputs(estimator, space, comps, args, versions):
    """Everything the sections read, derived once (see :class:`ReportInputs`).

    Parameters
    ----------
    estimator : fitted estimator
    space : VolumeMasker, Hemispheres or None
    comps : ndarray of shape (n_components, n_features)
        From :func:`check_arguments`.
    args : dict
        The checked keyword arguments of :func:`~neurospca.reporting.make_report`.
    versions : dict
        :func:`~neurospca.reporting.library_versions`.

    Returns
    -------
    ReportInputs
    """
    atlas = args["atlas"]
    r = ReportInputs(estimator=estimator, space=space, comps=comps, versions=versions, **args)
    r.atlas_obj = None if atlas is None else anatomy.load_atlas(atlas, space, args["atlas_labels"])
    r.hemi_coords = _hemi_coords(space, args["meshes"], args["surface_coords"])
    r.scores = _scores(estimator, args["scores"])
    r.scores_transformed = r.scores is not None and r.scores is args["scores"]
    r.pen = penalties(estimator)
    for key, value in _fitted_values(estimator, comps.shape[0]).items():
        setattr(r, key, value)
    selection = args["selection"]
    r.sel = None if selection is None else selection_table(selection, comps.shape[0])
    r.stability, r.stability_label = stability_view(estimator, selection, r.sel)
    r.shown, r.certified = certified_view(estimator, comps)
    return r
