"""The report's "Scores and participants" section: each component's scores by group
(box plot with every subject's point) and against each covariate (scatter with the
least-squares line), with the association table.

It reads the ``study`` dict that :class:`neurospca.ImageSPCATV` and ``neurospca
fit`` build (and a saved model stores): ``participant_ids``, ``groups``
(name -> labels), ``covariates`` (name -> values), ``associations`` (column ->
values, see :func:`neurospca.study.associations`) and ``methods`` (sentences).
"""

import numpy as np

from . import plotting

__all__ = ["findings_section", "n_components_section"]

_COLUMNS = [
    ("component", "component", None),
    ("variable", "variable", None),
    ("test", "test", None),
    ("statistic", "statistic", ".4g"),
    ("effect size", "effect_size", ".3f"),
    ("measure", "effect_size_measure", None),
    ("n", "n", None),
    ("p (permutation)", "p", ".2g"),
    ("p corrected (FWER)", "p_corrected", ".2g"),
]


def _rows_of(assoc):
    n = len(assoc["component"])
    return [{key: assoc[key][i] for _, key, _ in _COLUMNS} for i in range(n)]


def _find(rows, component, variable):
    for r in rows:
        if int(r["component"]) == component and str(r["variable"]) == variable:
            return r
    return None


def _title(variable, row):
    if row is None:
        return variable
    measure = "\u03b7\u00b2" if str(row["effect_size_measure"]) == "eta2_H" else "\u03c1"
    return (
        f"{variable}: {measure} = {float(row['effect_size']):.2f}, "
        f"p corr. = {float(row['p_corrected']):.2g}"
    )


def _group_axis(ax, scores, labels, title):
    levels = sorted(set(labels.tolist()))
    data = [scores[labels == lv] for lv in levels]
    ax.boxplot(data, showfliers=False, widths=0.5)
    rng = np.random.default_rng(0)
    for i, values in enumerate(data):
        ax.scatter(i + 1 + rng.uniform(-0.12, 0.12, values.size), values, s=9, alpha=0.6, zorder=3)
    ax.set_xticks(np.arange(1, len(levels) + 1))
    ax.set_xticklabels(
        [f"{lv}\n(n={d.size})" for lv, d in zip(levels, data, strict=True)], fontsize=8
    )
    ax.set_title(title, fontsize=9)


def _covariate_axis(ax, scores, values, variable, title):
    ax.scatter(values, scores, s=9, alpha=0.6)
    if np.ptp(values) > 0:
        slope, intercept = np.polyfit(values, scores, 1)
        xs = np.linspace(values.min(), values.max(), 2)
        ax.plot(xs, intercept + slope * xs, color="k", lw=1)
    ax.set_xlabel(variable, fontsize=8)
    ax.set_title(title, fontsize=9)


def _component_figure(k, scores, study, rows):
    plt = plotting._pyplot()
    groups, covariates = study.get("groups") or {}, study.get("covariates") or {}
    n_axes = len(groups) + len(covariates)
    fig, axes = plt.subplots(1, n_axes, figsize=(3.2 * n_axes + 0.4, 3.0), squeeze=False)
    i = 0
    for name, labels in groups.items():
        _group_axis(
            axes[0, i],
            scores,
            np.asarray(labels).astype(str),
            _title(name, _find(rows, k + 1, name)),
        )
        i += 1
    for name, values in covariates.items():
        _covariate_axis(
            axes[0, i],
            scores,
            np.asarray(values, dtype=np.float64),
            name,
            _title(name, _find(rows, k + 1, name)),
        )
        i += 1
    axes[0, 0].set_ylabel(f"component {k + 1} score")
    fig.tight_layout()
    return fig


def findings_section(study, scores, dpi=80):
    """The section's content for the template (None when there is nothing to show).

    Parameters
    ----------
    study : dict or None
        See the module docstring.
    scores : ndarray of shape (n_samples, n_components) or None
        The training subjects' scores (rows in the order of
        ``participant_ids``).
    dpi : int, default=80

    Returns
    -------
    dict or None
        ``methods`` (sentences), ``ids`` (first IDs), ``figures`` (one data URI per
        component), ``header`` and ``rows`` of the association table, ``note``.
    """
    if not study:
        return None
    ids = [str(i) for i in np.asarray(study.get("participant_ids", []))]
    assoc = study.get("associations")
    rows = _rows_of(assoc) if assoc else []
    return {
        "methods": [str(m) for m in study.get("methods") or []],
        "n_subjects": len(ids),
        "ids": ", ".join(ids[:8]) + (" ..." if len(ids) > 8 else ""),
        "figures": _figures(study, scores, rows, len(ids), dpi),
        "header": [h for h, _, _ in _COLUMNS],
        "rows": [[format(r[key], f) if f else str(r[key]) for _, key, f in _COLUMNS] for r in rows],
        "note": _note(study) if rows else "",
    }


def _figures(study, scores, rows, n_subjects, dpi):
    """One figure per component (label, data URI), when there are scores and variables."""
    has_vars = bool(study.get("groups")) or bool(study.get("covariates"))
    if scores is None or not has_vars or scores.shape[0] != n_subjects:
        return []
    figures = []
    for k in range(scores.shape[1]):
        fig = _component_figure(k, scores[:, k], study, rows)
        figures.append(
            {"label": f"Component {k + 1}", "image": plotting.figure_to_data_uri(fig, dpi=dpi)}
        )
    return figures


def _note(study):
    """The tests under the association table."""
    return (
        "Groups: Kruskal-Wallis H, effect size eta\u00b2_H = (H - G + 1) / (N - G); "
        "covariates: Spearman's rho (the line is the least-squares fit). p: share of "
        "joint permutations of the participants' rows (observed included) with a "
        "statistic at least as large; p corrected: family-wise error over all "
        "components x variables by the Westfall-Young single-step min-P method "
        f"({int(study.get('n_permutations', 0)):,} permutations; the smallest attainable "
        "p is 1/(permutations + 1))."
    )


def n_components_section(evidence, metadata=None, dpi=80):
    """The evidence for the number of components (None without it).

    Parameters
    ----------
    evidence : dict or None
        ``observed`` and ``null`` explained-variance ratios per rank,
        ``n_components``, ``quantile``, ``null_kind`` (the null drawn in the
        legend), ``rule`` (the note: the rule, its threshold and the first
        ranks' numbers; from :func:`neurospca.model_selection.parallel_analysis`).
    metadata : dict, optional
        A saved model's metadata: its ``"n_components_evidence"`` is used
        when ``evidence`` is None.
    dpi : int, default=80

    Returns
    -------
    dict or None
        ``image`` (data URI) and ``note``.
    """
    if evidence is None:
        evidence = (metadata or {}).get("n_components_evidence")
    if not evidence:
        return None
    observed = 100 * np.asarray(evidence["observed"], dtype=np.float64)
    null = 100 * np.array([np.nan if v is None else v for v in evidence["null"]], dtype=np.float64)
    k = int(evidence["n_components"])
    plt = plotting._pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    ranks = np.arange(1, observed.size + 1)
    ax.plot(ranks, observed, "o-", ms=4, label="data (PCA)")
    ax.plot(
        ranks,
        null,
        "s--",
        ms=3,
        color="grey",
        label=(
            f"null ({evidence.get('null_kind', 'permutation')}), "
            f"{100 * float(evidence['quantile']):g}th percentile"
        ),
    )
    ax.axvline(k + 0.5, color="k", lw=0.8)
    ax.set_xlabel("component (rank)")
    ax.set_ylabel("explained variance (%)")
    ax.set_title(f"{k} component(s) kept", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return {"image": plotting.figure_to_data_uri(fig, dpi=dpi), "note": str(evidence["rule"])}
