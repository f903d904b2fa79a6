"""The sections of the HTML report, one builder each (as nilearn's reporting).

Each builder reads a :class:`~neurospca.reporting._inputs.ReportInputs` (and
the per-component facts of :func:`~._component_sections.component_facts`)
and returns the context of its template partial
(``templates/section_<name>.html``), or None when the section does not apply
to this model (no penalty selection, no participants, no stored scores, no
convergence record...): the partial then leaves the section out or says why.
"""

import time

import numpy as np

from ..masking import VolumeMasker
from ..operators import GroupOperator
from ..surface import Hemispheres
from . import plotting
from ._component_sections import (
    component_item,
    component_row,
    component_warnings,
    components_header,
    convergence_header,
    convergence_row,
    coordinates_text,
)
from ._estimators import fit_convergence_rows, is_spcatv, relative_alpha_text, variance_basis
from ._explanations import variance_explanation
from ._findings import findings_section, n_components_section
from ._methods import atlas_description, methods_text, weights_text
from ._png import cached_uri
from ._tables import fmt, per_component, space_rows
from ._viewer import viewer_section

__all__ = [
    "SECTIONS",
    "methods_section",
    "data_section",
    "parameters_section",
    "components_section",
    "loadings_section",
    "viewer_section",
    "selection_section",
    "variance_section",
    "n_components_evidence_section",
    "scores_section",
    "participants_section",
    "convergence_section",
    "timings_section",
    "versions_section",
]

#: Above this many features a model without a structure operator is flagged
#: (SPCATV warns at fit time from the same size).
CHAIN_WARNING_FEATURES = 500

#: the fitted attributes a convergence section is drawn from (any one suffices)
_CONVERGENCE_ATTRIBUTES = (
    "rel_gap_history_",
    "gap_history_",
    "rel_gaps_",
    "dual_gaps_",
    "converged_",
    "n_iter_",
)


def methods_section(r):
    """The methods paragraph and the command line (always present).

    Returns
    -------
    dict
        ``text`` and ``command`` (None: not recorded).
    """
    atlas_desc = None if r.atlas is None else atlas_description(r.atlas, r.atlas_name)
    text = methods_text(
        r.estimator,
        r.space,
        r.meshes,
        r.pen,
        r.n_samples,
        r.n_features,
        r.versions,
        r.rel_gaps,
        r.tol,
        r.selection,
        atlas_desc,
    )
    return {"text": text, "command": r.command}


def data_section(r):
    """The data table: samples, the space, the user's own rows (always present)."""
    rows = [] if r.n_samples is None else [("samples", fmt(r.n_samples))]
    rows += space_rows(r.space, r.n_features)
    rows += [(str(k), fmt(v)) for k, v in (r.data_description or {}).items()]
    return {"rows": rows}


#: a list or tuple parameter longer than this is summarised, not printed
SHORT_LIST = 8


def _is_scalar(value):
    return value is None or isinstance(value, (str, bool, int, float, np.generic))


def _container_text(key, value):
    """A summary of an array, tree or long list parameter (None: print it as is)."""
    if isinstance(value, np.ndarray):
        if key == "tree":  # a parent array
            return f"tree of {value.size:,} nodes"
        return f"array of shape {value.shape}"
    if hasattr(value, "parent") and hasattr(value, "n_nodes"):
        return f"tree of {int(value.n_nodes):,} nodes"
    if isinstance(value, (list, tuple)):
        if len(value) <= SHORT_LIST and all(_is_scalar(v) for v in value):
            return None
        unit = "groups" if key == "groups" else "items"
        return f"{len(value):,} {unit}"
    return None


def _parameter_text(estimator, key, value):
    if isinstance(value, GroupOperator):
        return (
            f"{value.n_rows:,} rows x {value.n_features:,} columns, "
            f"{value.n_groups:,} groups, ||A||^2 <= {value.norm2:.4g}"
        )
    if value is None and key == "operator":
        return "1-D chain over the features"
    if value is None and key == "alpha" and hasattr(estimator, "alpha_rel"):
        return relative_alpha_text(estimator)
    summary = _container_text(key, value)
    return value if summary is None else summary


def parameters_section(r):
    """The estimator's parameters, fitted penalties and raw weights (always present).

    Returns
    -------
    dict
        ``rows`` ((name, text) pairs) and ``weights`` ("" without penalties).
    """
    est = r.estimator
    rows = [
        (key, fmt(_parameter_text(est, key, value)))
        for key, value in est.get_params(deep=False).items()
    ]
    rows += [
        (f"{key} (fitted)", fmt(getattr(est, key)))
        for key in ("alpha_", "alpha_rel_", "l1_ratio_", "tv_ratio_", "l1_max_", "alpha_max_")
        if hasattr(est, key)
    ]
    return {"rows": rows, "weights": weights_text(r.pen)}


def _chain_warning(r):
    op = getattr(r.estimator, "operator", "absent")
    if op is None and r.n_features > CHAIN_WARNING_FEATURES:
        return [
            f"No structure operator: the TV penalty ran along a 1-D chain over "
            f"the {r.n_features:,} features in column order, which is not the "
            "brain's geometry; pass operator= (tv_from_mask, tv_from_mesh)."
        ]
    return []


def components_section(r, facts):
    """The components table and its warnings (always present).

    Returns
    -------
    dict
        ``header``, ``rows``, ``certified`` (the model certifies its
        supports) and ``warnings``.
    """
    warnings_ = [w for f in facts for w in component_warnings(r, f)]
    return {
        "header": components_header(r),
        "rows": [component_row(r, f) for f in facts],
        "certified": r.certified is not None,
        "spcatv": is_spcatv(r.estimator),
        "warnings": warnings_ + _chain_warning(r) + _fit_warning(r),
    }


def _fit_warning(r):
    """A method fitting all components at once that did not converge (the whole fit)."""
    conv = getattr(r.estimator, "converged_", None)
    if is_spcatv(r.estimator) or conv is None or bool(np.all(conv)):
        return []
    n_iter = getattr(r.estimator, "n_iter_", None)
    return [
        "The fit did not converge (its stopping rule was not met"
        + ("" if n_iter is None else f" in {fmt(n_iter)} iterations")
        + "): increase max_iter or loosen tol; see Convergence."
    ]


def _unit_norm(r):
    """Whether the loadings are unit-norm (SPCA-TV's always are, or every non-zero row)."""
    if is_spcatv(r.estimator):
        return True
    norms = np.linalg.norm(r.comps, axis=1)
    return bool(np.allclose(norms[norms > 0], 1.0, rtol=1e-6))


def _loading_note(space, coords_note):
    """How to read the component figures (``coords_note``: where surface xyz come from)."""
    if isinstance(space, VolumeMasker):
        return (
            "Unit-norm loadings, in the order fitted. Top: sagittal, coronal and axial "
            "slices through the peak over the background image, cropped to the brain; "
            "middle: glass brain (the largest |loading| along each projection, over the "
            "brain's silhouette); bottom: the largest clusters, each cut through its "
            "centre and zoomed to it. One colour scale, symmetric about zero and "
            "labelled with its limits; zero voxels are transparent (threshold just above "
            "zero). Coordinates are world (scanner/MNI) mm from the mask's affine."
        )
    if isinstance(space, Hemispheres):
        coords_note = coords_note or "the drawn meshes"
        return (
            "Unit-norm loadings, in the order fitted: lateral and medial views of both "
            "hemispheres. The colour scale is symmetric about zero; zero vertices show "
            "the background shading only. Peak and cluster xyz (mm) come from "
            f"{coords_note}; vertex indices are those of each hemisphere's mesh."
        )
    return "Unit-norm loadings against the feature index, in the order fitted."


def loadings_section(r, facts, images):
    """Each component's figure, caption and cluster table (always present).

    Parameters
    ----------
    r : ReportInputs
    facts : list
        :func:`~._component_sections.component_facts` of every component.
    images : list of str or None
        The component figures' data URIs.

    Returns
    -------
    dict
        ``note`` and ``components`` (one dict per component).
    """
    note = _loading_note(r.space, coordinates_text(r))
    if not _unit_norm(r):
        note = note.replace("Unit-norm loadings", "Loadings as fitted (not unit-norm)", 1)
    return {
        "note": note,
        "components": [component_item(r, f, image) for f, image in zip(facts, images, strict=True)],
    }


def selection_section(r):
    """The penalty selection grid, or None without a selection."""
    return r.sel


def variance_section(r):
    """The explained variance, beside PCA's when the model stores it (always present).

    Returns
    -------
    dict
        ``image`` (data URI) and ``note``.
    """
    evr, pca_evr, n_components = r.evr, r.pca_evr, r.n_components
    image = cached_uri(
        r.figure_cache,
        ("variance", evr, pca_evr, r.dpi),
        lambda: plotting.figure_to_data_uri(
            plotting.plot_explained_variance(evr, pca_evr), dpi=r.dpi
        ),
    )
    total = fmt(100 * float(np.nansum(evr)), ".2f")
    if pca_evr is not None:
        note = (
            "Adjusted explained variance of the components (scores orthogonalised by QR, "
            "Zou et al. 2006) beside plain PCA's on the same centred data (its cumulative "
            f"variance bounds any {n_components} components'). Total: {total} % (PCA "
            f"{fmt(100 * float(np.nansum(pca_evr[:n_components])), '.2f')} %)."
        )
    elif not np.any(np.isfinite(evr)):
        note = (
            "This model stores no explained variance (explained_variance_ratio_): it "
            "needs the training data."
        )
    elif is_spcatv(r.estimator):
        note = (
            "Adjusted explained variance (scores orthogonalised by QR, Zou et al. 2006), "
            f"as a share of the total variance. Total: {total} %. PCA's explained "
            "variance is not shown: this model does not store it (it needs the training "
            "data; models fitted by a current SPCATV do)."
        )
    else:
        note = (
            "Adjusted explained variance (scores orthogonalised by QR, Zou et al. 2006), "
            f"as a share of {variance_basis(r.estimator)}: the estimator's "
            "explained_variance_ratio_. "
            f"Total: {total} %. PCA's explained variance is not computed by "
            f"{type(r.estimator).__name__}."
        )
    return {"image": image, "note": note, "why": variance_explanation(evr, pca_evr, n_components)}


def n_components_evidence_section(r):
    """The parallel-analysis evidence for the number of components, or None."""
    return n_components_section(r.n_components_evidence, r.metadata, r.dpi)


def scores_section(r):
    """The training samples' scores, or None when the model stores none."""
    if r.scores is None:
        return None
    how = (
        "Scores are d_k ||v_k|| u_k, the samples' coordinates on the unit loadings in "
        "the deflated data."
        if not r.scores_transformed
        else "Scores are the estimator's transform of the training data."
    )
    return {
        "image": plotting.figure_to_data_uri(plotting.plot_scores(r.scores), dpi=r.dpi),
        "note": (
            "Left: each sample's score on each component; right: component 1 "
            "against component 2. " + how
        ),
    }


def participants_section(r):
    """Scores by participant group and covariate, or None without a study."""
    return findings_section(r.study, r.scores, dpi=r.dpi)


def _convergence_figure(r):
    """(image, note) of the gaps against solver iterations (relative gaps and tol when
    the model stores them)."""
    rel_hist = getattr(r.estimator, "rel_gap_history_", None)
    if rel_hist is not None:
        image = cached_uri(
            r.figure_cache,
            ("convergence", rel_hist, r.tol, r.dpi),
            lambda: plotting.figure_to_data_uri(
                plotting.plot_convergence(rel_hist, tol=r.tol), dpi=r.dpi
            ),
        )
        return image, (
            "Relative duality gap (certified gap over the objective at zero) of "
            "the v-steps against cumulative solver iterations, one line per "
            "component. Each v-step stops once its relative gap is at most tol "
            f"(dashed line, tol = {fmt(r.tol, 'g')}); the final values are the "
            "table's relative gaps."
        )
    history = getattr(r.estimator, "gap_history_", []) or []
    image = plotting.figure_to_data_uri(plotting.plot_convergence(history), dpi=r.dpi)
    return image, (
        "Certified duality gap of the v-steps (in units of the objective) against "
        "cumulative solver iterations, one line per component. This model does "
        "not store the relative gaps that tol bounds, so the tol line is not "
        "drawn."
    )


def convergence_section(r, facts):
    """Gaps against iterations and the convergence table, or None when the model
    records no convergence at all (none of gaps, ``converged_`` or ``n_iter_``).

    Returns
    -------
    dict or None
        ``image``, ``note``, ``header`` and ``rows``.
    """
    if not any(hasattr(r.estimator, name) for name in _CONVERGENCE_ATTRIBUTES):
        return None
    if not is_spcatv(r.estimator):
        return _fit_convergence(r)
    image, note = _convergence_figure(r)
    return {
        "image": image,
        "note": note,
        "header": convergence_header(r),
        "rows": [convergence_row(r, f) for f in facts],
        "fit_rows": None,
    }


def _fit_convergence(r):
    """The whole fit's convergence of a method without per-component gaps."""
    name = type(r.estimator).__name__
    certified = getattr(r.estimator, "dual_gaps_", None) is not None
    note = (
        f"{name} fits all components at once: iterations and convergence are those of "
        "the whole fit"
        + (
            "; its certified duality gap bounds the suboptimality of the one convex problem."
            if certified
            else ". The method gives no certified duality gap: convergence means only "
            "that the stopping rule was met."
        )
    )
    return {"fit_rows": fit_convergence_rows(r.estimator), "note": note}


def timings_section(r, t_start):
    """Fit, per-component and report times (always present).

    Parameters
    ----------
    r : ReportInputs
    t_start : float
        ``time.perf_counter()`` when the report was started.

    Returns
    -------
    dict
        ``rows`` ((name, seconds as text) pairs).
    """
    est, rows = r.estimator, []
    if hasattr(est, "fit_time_"):
        rows.append(("fit (s)", fmt(est.fit_time_, ".3f")))
    for k in range(r.n_components):
        t = per_component(est, "component_times_", k, r.n_components)
        if t is not None:
            rows.append((f"component {k + 1} (s)", fmt(t, ".3f")))
    rows.append(("report (s)", fmt(time.perf_counter() - t_start, ".2f")))
    return {"rows": rows}


def versions_section(r):
    """Versions of Python and the libraries (always present; the page header reads
    ``neurospca`` from it too).

    Returns
    -------
    dict
        Name -> version.
    """
    return dict(r.versions)


#: the page's sections in order: (name, template partial); each partial reads the
#: context its builder returned under ``name``
SECTIONS = (
    ("methods", "section_methods.html"),
    ("data", "section_data.html"),
    ("parameters", "section_parameters.html"),
    ("components", "section_components.html"),
    ("loadings", "section_loadings.html"),
    ("viewer", "section_viewer.html"),
    ("selection", "section_selection.html"),
    ("variance", "section_variance.html"),
    ("scores", "section_scores.html"),
    ("participants", "section_participants.html"),
    ("convergence", "section_convergence.html"),
    ("timings", "section_timings.html"),
    ("versions", "section_versions.html"),
)
