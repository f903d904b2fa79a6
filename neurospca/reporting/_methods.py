"""The methods paragraph of the report: method and citation, penalties (absolute and
relative to l1_max), structure, solver and tolerance, selection, software."""

import os

import numpy as np

from ..decomposition import SUPPORT_RESOLUTION, weights_from_ratios
from ..masking import VolumeMasker
from ..operators import GroupOperator
from ..surface import Hemispheres
from ._estimators import method_citation, method_sentence
from ._tables import fmt

__all__ = ["penalties", "weights_text", "methods_text", "atlas_description"]


def _fitted_weights(estimator):
    """The fitted ``penalty_weights_`` as {name: float}, or None when absent or invalid."""
    weights = getattr(estimator, "penalty_weights_", None)
    if not isinstance(weights, dict) or not {"l1", "l2", "tv"} <= set(weights):
        return None
    try:
        return {str(k): float(v) for k, v in weights.items()}
    except (TypeError, ValueError):
        return None


def penalties(estimator):
    """Absolute and relative penalties of an SPCA-TV-like estimator, or None.

    The absolute weights are the fitted ``penalty_weights_`` (the weights the
    solver used, extra penalty terms included); a model saved before that
    attribute existed gets them from ``alpha_``, ``l1_ratio`` and ``tv_ratio``
    (:func:`neurospca.decomposition.weights_from_ratios`).

    Parameters
    ----------
    estimator : fitted estimator
        Read: ``penalty_weights_``, ``alpha_``/``alpha``, ``l1_ratio``,
        ``tv_ratio`` (or the fitted ``l1_ratio_``, ``tv_ratio_``), ``l1_max_``,
        ``alpha_rel``/``alpha_rel_``, ``auto_path_``.

    Returns
    -------
    dict or None
        ``alpha``, ``l1_ratio``, ``tv_ratio``, ``weights`` ({name: weight},
        ``l1``, ``l2``, ``tv`` first), ``l1``, ``l2``, ``tv``, ``l1_max``,
        ``relative``, ``alpha_rel``, ``auto``, ``auto_path``, ``empty`` (the
        indices of empty components); None for an estimator without these penalties.
    """
    absolute = _absolute_penalties(estimator)
    if absolute is None:
        return None
    alpha, l1_ratio, tv_ratio, weights = absolute
    l1_max = getattr(estimator, "l1_max_", None)
    l1_max = float(l1_max) if l1_max is not None and np.isfinite(l1_max) and l1_max > 0 else None
    relative = getattr(estimator, "alpha", 0.0) is None
    auto = isinstance(getattr(estimator, "alpha_rel", None), str)  # chosen along a path
    return {
        "alpha": alpha,
        "l1_ratio": l1_ratio,
        "tv_ratio": tv_ratio,
        "weights": weights,
        "l1": weights["l1"],
        "l2": weights["l2"],
        "tv": weights["tv"],
        "l1_max": l1_max,
        "relative": relative,
        "alpha_rel": _alpha_rel(estimator, alpha, l1_max, auto),
        "auto": auto and relative,
        "auto_path": getattr(estimator, "auto_path_", None),
        "empty": _empty_components(estimator),
    }


def _empty_components(estimator):
    """The indices of the fitted components with no non-zero loading ([] if unknown)."""
    C = getattr(estimator, "components_", None)
    if C is None or np.ndim(C) != 2:
        return []
    return np.flatnonzero(~np.any(np.asarray(C) != 0, axis=1)).tolist()


def _absolute_penalties(estimator):
    """(alpha, l1_ratio, tv_ratio, weights) of an SPCA-TV-like estimator, or None."""
    if not all(hasattr(estimator, a) for a in ("l1_ratio", "tv_ratio")):
        return None
    alpha = getattr(estimator, "alpha_", None)
    if alpha is None:
        alpha = getattr(estimator, "alpha", None)
    try:
        alpha = float(alpha)
        l1_ratio, tv_ratio = (  # fitted (searched by alpha_rel="auto"), else given
            float(getattr(estimator, f"{k}_", getattr(estimator, k)))
            for k in ("l1_ratio", "tv_ratio")
        )
        weights = _fitted_weights(estimator)
        if weights is None:  # a model saved before penalty_weights_ existed
            ratios = weights_from_ratios(alpha, l1_ratio, tv_ratio)
            weights = dict(zip(("l1", "l2", "tv"), ratios, strict=True))
    except (TypeError, ValueError):
        return None
    return alpha, l1_ratio, tv_ratio, weights


def _alpha_rel(estimator, alpha, l1_max, auto):
    """alpha relative to l1_max: fitted, given, or alpha / l1_max (None if unknown)."""
    alpha_rel = getattr(estimator, "alpha_rel_", None)
    given = getattr(estimator, "alpha_rel", None)
    if alpha_rel is None and not auto and given is not None:
        alpha_rel = given
    if alpha_rel is None and l1_max is not None:
        alpha_rel = alpha / l1_max
    try:
        return None if alpha_rel is None else float(alpha_rel)
    except (TypeError, ValueError):
        return None


#: how the methods paragraph names the weights of paper eq. 3 (others: their own name)
_PAPER_NAMES = {"l1": "lambda_1 (l1)", "l2": "lambda_2 (l2)", "tv": "lambda (TV)"}


def _weight_list(pen, names=None):
    """``"l1 = 0.1, l2 = 1, tv = 0.2"`` (every penalty term, with ``names`` if given)."""
    names = names or {}
    return ", ".join(f"{names.get(k, k)} = {w:.4g}" for k, w in pen["weights"].items())


def _auto_text(pen):
    """How ``alpha_rel="auto"`` chose its value and the split (from ``auto_path_``)."""
    groups = {}
    for step in pen["auto_path"] or []:
        try:
            rep = np.asarray(step["reproducibility"], dtype=np.float64)
            split = tuple(float(step.get(k, pen[k])) for k in ("l1_ratio", "tv_ratio"))
            groups.setdefault(split, []).append(f"{float(step['alpha_rel']):g} ({rep.mean():.2f})")
        except (KeyError, TypeError, ValueError):
            continue
    text = (
        '; alpha_rel was chosen automatically (alpha_rel="auto": two random halves '
        "of the samples were fitted along a path of relative penalties"
        + (
            " for each split of the penalty (l1_ratio, tv_ratio) searched"
            if len(groups) > 1
            else ""
        )
        + " and the point whose components reproduce best between the halves was kept, "
        "among those with every component non-empty and at most half non-zero"
        " and a mean split-half correlation of at least 0.1"
    )
    if any(step.get("whole_map") for step in pen["auto_path"] or []):
        text += (
            " (or, as no such point had every component reproducing at 0.1 or more, "
            "with components at least 90 % non-zero in both halves: a signal over the "
            "whole map, such as a site offset, kept as a component unless the full fit at "
            "the most reproducible point without one kept every component regional and "
            "reproducing on the halves)"
        )
    text += _dense_effect_text(pen)
    if len(groups) > 1:
        text += " (a split other than the first only if more reproducible by more than 0.02)"
    if groups:
        text += (
            "; tried, with the mean split-half absolute correlation of matched components: "
            + "; ".join(
                f"l1_ratio = {a:g}, tv_ratio = {b:g}: alpha_rel " + ", ".join(steps)
                for (a, b), steps in groups.items()
            )
        )
    return text + ")"


def _dense_effect_text(pen):
    """The whole-map signal seen at points of the path (``"dense_effect"``), and the
    components it left empty at the chosen penalty (issue 20 round 16), or ""."""
    seen = [p for p in pen["auto_path"] or [] if p.get("dense_effect")]
    if not seen:
        return ""
    empty = pen.get("empty") or []
    return (
        "; at alpha_rel "
        + ", ".join(f"{float(p['alpha_rel']):g}" for p in seen)
        + " both halves held a component at least 90 % non-zero, the same map in both: a "
        "signal over the whole map, such as an unregressed confound (e.g. age), a site "
        "offset or a global signal, which took a component there"
        + (
            f", and components {', '.join(map(str, empty))} were empty at the chosen point"
            if empty
            else ""
        )
    )


def weights_text(pen):
    """The raw weights of the objective, in absolute units and relative to l1_max.

    Parameters
    ----------
    pen : dict or None
        From :func:`penalties`.

    Returns
    -------
    str
        Empty for None.
    """
    if pen is None:
        return ""
    text = _weight_list(pen)
    if pen["l1_max"] is not None:
        text += f"; l1 = {pen['l1'] / pen['l1_max']:.3g} x l1_max, l1_max = {pen['l1_max']:.4g}"
    return text


def _penalty_sentence(pen):
    """The methods paragraph's penalties: alpha, ratios, weights, how alpha was set."""
    text = (
        f"Penalties: alpha = {pen['alpha']:.4g}, l1_ratio = {pen['l1_ratio']:.4g}, "
        f"tv_ratio = {pen['tv_ratio']:.4g}, i.e. {_weight_list(pen, _PAPER_NAMES)}"
    )
    if pen["l1_max"] is not None:
        if pen["relative"] and pen["alpha_rel"] is not None:
            text += (
                f"; alpha was set relative to the data as alpha_rel x l1_max = "
                f"{float(pen['alpha_rel']):.4g} x {pen['l1_max']:.4g}, with l1_max = "
                "max_j ||x_j||_2 / N of the centred data (the l1 weight above which "
                "every loading is zero without TV)"
            )
            if pen["auto"]:
                text += _auto_text(pen)
        else:
            text += (
                f" (absolute; {pen['alpha'] / pen['l1_max']:.4g} x l1_max, "
                f"l1_max = max_j ||x_j||_2 / N = {pen['l1_max']:.4g})"
            )
    return text + "."


def _structure_text(estimator, space, meshes, n_features):
    op = getattr(estimator, "operator", None)
    if not hasattr(estimator, "operator"):
        return None
    if op is None:
        return (
            f"a 1-D chain over the {n_features:,} features in column order (no spatial "
            "structure was given)"
        )
    if not isinstance(op, GroupOperator):
        return f"a {type(op).__name__} operator"
    size = f"{op.n_groups:,} groups, {op.n_rows:,} rows, ||A||^2 <= {op.norm2:.3g}"
    if isinstance(space, VolumeMasker) and space.mask.ndim == 3:
        m = space.mask
        pairs = int(
            (m[1:] & m[:-1]).sum()
            + (m[:, 1:] & m[:, :-1]).sum()
            + (m[:, :, 1:] & m[:, :, :-1]).sum()
        )
        if pairs == op.n_rows:
            return (
                "total variation over the brain mask's 3-D grid: forward differences "
                f"between 6-neighbour voxels ({size})"
            )
    if isinstance(space, Hemispheres) and meshes is not None:
        from ..surface import mesh_edges

        n_edges = 0
        for h, hemi in enumerate(("left", "right")):
            a, b = mesh_edges(np.asarray(meshes[hemi][1]), space.n_vertices[h])
            kept = np.zeros(space.n_vertices[h], dtype=bool)
            kept[space.vertices[h]] = True
            n_edges += int((kept[a] & kept[b]).sum())
        if n_edges == op.n_rows:
            return (
                "total variation over the cortical meshes: differences along the mesh "
                f"edges of each hemisphere ({size})"
            )
    return f"a structure operator with {size}"


def _support_sentence(estimator):
    """How the supports were certified, with the uncertain loadings per component."""
    support = np.asarray(estimator.certified_support_)
    n_unc = np.asarray(getattr(estimator, "n_uncertain_", []), dtype=np.int64).ravel()
    text = (
        "Supports, clusters and figures show only the loadings certified non-zero: each "
        "loading update is 1-strongly convex in its proximal form, so its certified gap G "
        "bounds the distance to the exact update by sqrt(2 G) (by sqrt(G) for a dual "
        "solver's primal-dual pair), and a loading larger than "
        "that bound is non-zero, with its sign, at the optimum; loadings certified zero "
        "(a gap-safe test) are set exactly to zero and the others are uncertain. Before "
        "this test each update was re-solved until the bound was at most "
        f"{100 * SUPPORT_RESOLUTION:g} % of the component's peak loading (or the "
        "iteration limit). Certified non-zero loadings "
        "per component: " + ", ".join(f"{int(n):,}" for n in support.sum(axis=1))
    )
    if n_unc.size:
        text += "; uncertain: " + ", ".join(f"{int(n):,}" for n in n_unc)
    return text + "."


def methods_text(
    estimator,
    space,
    meshes,
    pen,
    n_samples,
    n_features,
    versions,
    rel_gaps,
    tol,
    selection,
    atlas_desc,
):
    """The methods paragraph: method and citation, data, penalties, structure, solver,
    selection, atlas and software versions.

    Parameters
    ----------
    estimator : fitted estimator
        The model.
    space : VolumeMasker, Hemispheres or None
        Where its columns live.
    meshes : dict or None
        Surface meshes (their edges tell the structure).
    pen : dict or None
        From :func:`penalties`.
    n_samples : int or None
        Training samples (None when unknown).
    n_features : int
        Columns of the data.
    versions : dict
        From :func:`neurospca.reporting.library_versions`.
    rel_gaps : ndarray or None
        Final relative gaps per component.
    tol : float or None
        The estimator's tolerance.
    selection : object or None
        The penalty selection (``results_``, ``best_params_``, ``rule``...).
    atlas_desc : str or None
        How the atlas is named.

    Returns
    -------
    str
    """
    citation = None if pen is not None else method_citation(estimator, versions)
    parts = [
        citation or _citation_sentence(type(estimator).__name__, pen, versions),
        _data_sentence(estimator, space, pen, n_samples, n_features),
        method_sentence(estimator) if pen is None else _penalty_sentence(pen),
    ]
    structure = _structure_text(estimator, space, meshes, n_features)
    parts.append(None if structure is None else f"Structure: {structure}.")
    parts.append(_solver_sentence(estimator, pen, tol, rel_gaps))
    if getattr(estimator, "certified_support_", None) is not None:
        parts.append(_support_sentence(estimator))
    parts.append(_selection_sentence(selection))
    stab = getattr(estimator, "stability_", None)
    if selection is None and stab is not None and np.any(np.isfinite(stab)):
        groups = getattr(estimator, "split_groups_", None)  # issue 20 round 9
        parts.append(_stability_sentence(np.asarray(stab, dtype=np.float64), groups))
    if atlas_desc:
        parts.append(f"Peaks and clusters were labelled with {atlas_desc}.")
    parts.append(_software_sentence(versions))
    return " ".join(p for p in parts if p is not None)


def _citation_sentence(name, pen, versions):
    """The method and its citation (SPCA-TV-like penalties), else the estimator's name."""
    if pen is None:
        return f"Components were estimated with {name} (neurospca {versions['neurospca']})."
    return (
        "Components were estimated with structured sparse PCA with the TV-elastic-net "
        "penalty (SPCA-TV; de Pierrefeu et al., Structured Sparse Principal Components "
        "Analysis With the TV-Elastic Net Penalty, IEEE Transactions on Medical Imaging "
        f"37(2):396-407, 2018) as implemented in neurospca {versions['neurospca']} "
        f"({name})."
    )


def _data_sentence(estimator, space, pen, n_samples, n_features):
    """Samples and features (and how the components were extracted), or None."""
    if n_samples is None:
        return None
    unit = (
        "voxels"
        if isinstance(space, VolumeMasker)
        else "vertices"
        if isinstance(space, Hemispheres)
        else "features"
    )
    text = f"The data held {n_samples:,} samples and {n_features:,} {unit}"
    if pen is None:
        return text + "."
    return text + "; they were centred and the components extracted " + _method_text(estimator)


def _solver_sentence(estimator, pen, tol, rel_gaps):
    """The solver, its stopping rule and the largest final relative gap, or None."""
    solver = getattr(estimator, "solver", None)
    if pen is None or tol is None:
        return None if solver is None else f"Solver: {solver}."
    solver_name = {
        "dual": "the exact-proximal dual solver",
        "conesta": "CONESTA (paper Algorithm 2)",
    }.get(solver, str(solver))
    text = (
        f"Each loading update was solved with {solver_name}, stopped when its "
        f"certified duality gap was at most tol = {tol:g} times the objective at zero "
        "(relative gap)"
    )
    finite = None if rel_gaps is None else np.asarray(rel_gaps, dtype=np.float64)
    finite = None if finite is None else finite[np.isfinite(finite)]
    if finite is not None and finite.size:
        text += (
            f"; the largest final relative gap was {finite.max():.2e} over "
            f"{finite.size} component(s)"
        )
    return text + "."


def _selection_sentence(selection):
    """How the penalties were selected, with the chosen components' stability, or None."""
    if selection is None:
        return None
    results = getattr(selection, "results_", None) or []
    best = getattr(selection, "best_params_", None) or {}
    text = (
        "Penalties were chosen by neurospca.model_selection.select_penalty"
        + (f" among {len(results)} settings" if results else "")
        + f" (rule: {getattr(selection, 'rule', 'not recorded')}); chosen: "
        + ", ".join(f"{k} = {fmt(v)}" for k, v in best.items())
    )
    stab = getattr(selection, "component_stability_", None)
    if stab is not None and len(stab):
        measure = (
            "split-half matched absolute correlation"
            if getattr(selection, "rule", None) == "reproducibility"
            else "mean pairwise Dice"
        )
        text += f"; stability of the chosen components across splits ({measure}): " + ", ".join(
            fmt(float(s), ".2f") for s in stab
        )
    return text + "."


def _software_sentence(versions):
    """neurospca, Python and the numerical libraries' versions."""
    libs = ", ".join(
        f"{k} {versions[k]}"
        for k in ("numpy", "scipy", "scikit-learn", "nibabel")
        if versions.get(k) not in (None, "not installed")
    )
    return f"Software: neurospca {versions['neurospca']}, Python {versions['python']}, {libs}."


def _method_text(estimator):
    """How the components were extracted: deflation alone, or the joint fit."""
    text = "one at a time by alternating minimisation and deflation"
    if getattr(estimator, "method", "deflation") == "joint":
        sweeps = getattr(estimator, "n_sweeps_", None)
        text += (
            ", then fitted jointly: each component was fitted again on the data minus "
            "all the other components, sweeping until the loadings settled"
            + (f" ({sweeps} sweeps)" if sweeps else "")
        )
    return text + "."


def _stability_sentence(stab, groups=None):
    """The reproducibility of the components across resampled fits (drawn as
    ``groups``, the model's ``split_groups_``, when not random rows), and which do
    not reproduce."""
    text = (
        "Reproducibility of the components (absolute correlation, or uncentred absolute "
        "cosine between two components at least 90 % non-zero, of the matched "
        "components of fits on two subsamples of 90 % of the samples sharing 80 %, "
        "corrected for the overlap; out of core or below 20 samples, of fits on two "
        "halves of the samples): "
        + ", ".join("-" if not np.isfinite(s) else f"{s:.2f}" for s in stab)
    )
    if groups and groups != "random rows":
        text += f" (samples resampled as {groups})"
    low = [str(k + 1) for k, s in enumerate(stab) if np.isfinite(s) and s < 0.5]
    if low:
        text += (
            "; component(s) " + ", ".join(low) + " did not reproduce (below 0.5) and "
            "should not be interpreted without replication"
        )
    return text + "."


def atlas_description(atlas, atlas_name):
    """How the methods paragraph names the atlas.

    Parameters
    ----------
    atlas : object
        The ``atlas`` given to the report (path, pair of paths, image or arrays).
    atlas_name : str or None
        The name given by the user, used as is.

    Returns
    -------
    str
    """
    if atlas_name is not None:
        return str(atlas_name)
    if isinstance(atlas, (str, os.PathLike)):
        return f"the atlas {os.path.basename(os.fspath(atlas))}"
    if (
        isinstance(atlas, (tuple, list))
        and len(atlas) == 2
        and all(isinstance(a, (str, os.PathLike)) for a in atlas)
    ):
        return "the atlas " + " / ".join(os.path.basename(os.fspath(a)) for a in atlas)
    return "the given atlas"
