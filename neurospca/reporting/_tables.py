"""Tables and cells of the HTML report: number formatting, data rows, the penalty
selection grid and the cluster tables."""

import numpy as np

from ..masking import VolumeMasker
from ..surface import Hemispheres

__all__ = [
    "fmt",
    "Text",
    "cells",
    "signed",
    "peak_text",
    "space_rows",
    "per_component",
    "selection_table",
    "cluster_rows",
    "cluster_note",
    "convergence_status",
    "caption_text",
    "certified_view",
    "uncertain_text",
]


def fmt(value, spec=".4g"):
    """A table cell's text: "-" for None, yes/no, thousands separators, ``spec``."""
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        return "nan" if not np.isfinite(value) else format(float(value), spec)
    return str(value)


def space_rows(space, n_features):
    """Rows of the data table that describe the space (grid, voxel size, vertices)."""
    if isinstance(space, VolumeMasker):
        zooms = np.sqrt((np.asarray(space.mask_img.affine)[:3, :3] ** 2).sum(axis=0))
        return [
            ("space", "volume (brain mask)"),
            ("mask grid", " x ".join(str(s) for s in space.mask.shape)),
            ("voxel size (mm)", " x ".join(f"{z:.3g}" for z in zooms)),
            ("voxels in the mask", fmt(space.n_features)),
        ]
    if isinstance(space, Hemispheres):
        return [
            ("space", "cortical surface (two hemispheres)"),
            ("vertices (left, right)", f"{space.n_vertices[0]:,}, {space.n_vertices[1]:,}"),
            (
                "vertices analysed (left, right)",
                f"{space.vertices[0].size:,}, {space.vertices[1].size:,}",
            ),
        ]
    return [("space", "features (no brain space given)"), ("features", fmt(n_features))]


def per_component(estimator, name, k, n_components):
    """Entry ``k`` of a per-component fitted attribute, or None (absent or a scalar)."""
    if name == "n_iter_" and hasattr(estimator, "n_iter_per_component_"):
        name = "n_iter_per_component_"
    arr = getattr(estimator, name, None)
    if arr is None:
        return None
    if np.ndim(arr) == 0:
        return arr if n_components == 1 else None
    return arr[k] if k < len(arr) else None


class Text(str):
    """A table cell holding text (left-aligned, not wrapped), not a number."""


def cells(row):
    """``(value, css class)`` pairs: numbers right-aligned, text left-aligned."""
    return [(str(v), "txt" if isinstance(v, Text) else "num") for v in row]


def signed(value):
    """``value`` with its sign, 3 significant digits."""
    return f"{value:+.3g}"


def peak_text(peak, atlas):
    """The peak's coordinates (and atlas label), or "-"."""
    if peak is None:
        return "-"
    text = peak.describe()
    if atlas is not None:
        text += f" [{atlas.label(peak.feature) or 'no label'}]"
    return text


def selection_table(selection, n_components):
    """The penalty selection grid of a selection object, for the report.

    Parameters
    ----------
    selection : object
        Read: ``results_`` (rows with ``params`` or flat parameters and
        metrics), ``best_params_``, ``rule``, ``component_stability_``.
    n_components : int
        Components of the model (unused; kept for callers).

    Returns
    -------
    dict
        ``header``, ``rows`` (the chosen row ends with "yes"), ``rule``,
        ``best`` (text) and ``stability`` (per component, or None).
    """
    results = list(getattr(selection, "results_", None) or [])
    best = dict(getattr(selection, "best_params_", None) or {})
    rule = getattr(selection, "rule", None)
    stab = getattr(selection, "component_stability_", None)
    param_keys = _param_keys(results, best)
    metric_keys = [
        k
        for k in ("reproducibility", "mean_score", "std_score", "stability", "zero_fraction")
        if any(k in row for row in results)
    ]
    return {
        "header": param_keys + [k.replace("_", " ") for k in metric_keys] + ["chosen"],
        "rows": [_selection_row(row, best, param_keys, metric_keys) for row in results],
        "rule": "-" if rule is None else str(rule),
        "best": ", ".join(f"{k} = {fmt(v)}" for k, v in best.items()) or "-",
        "stability": None if stab is None else np.asarray(stab, dtype=np.float64).ravel(),
    }


def _row_params(row):
    """A result row's parameters: its ``params`` dict, else the row itself (flat)."""
    return row.get("params") if isinstance(row.get("params"), dict) else row


def _param_keys(results, best):
    """The chosen parameters' names, then the other ``params`` names in order of appearance."""
    keys = list(best)
    for row in results:
        params = row.get("params") if isinstance(row.get("params"), dict) else {}
        keys += [key for key in params if key not in keys]
    return keys


def _selection_row(row, best, param_keys, metric_keys):
    params = _row_params(row)
    chosen = bool(best) and all(_same(params.get(k), v) for k, v in best.items())
    return (
        [fmt(params.get(k)) for k in param_keys]
        + [fmt(row.get(k), ".4g") for k in metric_keys]
        + ["yes" if chosen else ""]
    )


def _same(a, b):
    if isinstance(a, (int, float, np.integer, np.floating)) and isinstance(
        b, (int, float, np.integer, np.floating)
    ):
        return bool(np.isclose(float(a), float(b), rtol=1e-9, atol=0))
    return a == b


def certified_view(estimator, comps):
    """The loadings a report shows: only the certified non-zeros, when the model has them.

    Parameters
    ----------
    estimator : fitted estimator
        Read: ``certified_support_`` (n_components x n_features, bool), if any.
    comps : ndarray of shape (n_components, n_features)
        Its ``components_``.

    Returns
    -------
    shown : ndarray of shape (n_components, n_features)
        ``comps`` with every loading that is not certified non-zero set to 0
        (``comps`` itself for a model without ``certified_support_``, e.g. an
        older model file or another estimator).
    support : ndarray of bool or None
        ``certified_support_``, or None.
    """
    support = getattr(estimator, "certified_support_", None)
    if support is None:
        return comps, None
    support = np.asarray(support)
    if support.dtype != bool or support.shape != comps.shape:
        raise ValueError(
            f"certified_support_ must be a boolean array of shape {comps.shape}, "
            f"got {support.dtype} of shape {support.shape}."
        )
    return np.where(support, comps, 0.0), support


def uncertain_text(estimator, k, comp, support, unit):
    """The sentence on component ``k``'s uncertain loadings, or "" without a certificate."""
    if support is None:
        return ""
    n_unc = per_component(estimator, "n_uncertain_", k, support.shape[0])
    radius = per_component(estimator, "support_radius_", k, support.shape[0])
    n_zero = per_component(estimator, "certified_zeros_", k, support.shape[0])
    n_zero = None if n_zero is None else int(np.count_nonzero(n_zero))
    if n_unc is None:
        return ""
    hidden = int(np.count_nonzero((comp != 0) & ~support[k]))
    peak = float(np.max(np.abs(comp)))
    text = (
        f"Only the loadings certified non-zero (sign certified) are counted, drawn and "
        f"clustered: {int(n_unc):,} {unit} are uncertain"
    )
    if radius is not None and np.isfinite(radius) and peak > 0:
        text += f" (|loading| at most {100 * float(radius) / peak:.2g} % of the peak)"
    text += f", {hidden:,} of them non-zero in the returned loadings and not drawn"
    if n_zero is not None:
        text += f"; {n_zero:,} are certified zero"
    return text + "."


def cluster_rows(clusters, space, atlas, max_clusters, with_area=False):
    """Rows of a component's cluster table (the ``max_clusters`` largest)."""
    rows = []
    for i, c in enumerate(clusters[:max_clusters]):
        row = [str(i + 1), c.sign, fmt(c.size)]
        if isinstance(space, VolumeMasker):
            row.append(fmt(c.volume_mm3, ",.0f"))
        elif with_area:
            row.append(fmt(c.area_mm2, ",.0f"))
        row += [Text(c.peak.describe()), signed(c.peak.value), signed(c.mean)]
        if atlas is not None:
            label, share = atlas.majority(c.features)
            row.append(Text("no label" if label is None else f"{label} ({100 * share:.0f} %)"))
        rows.append(cells(row))
    return rows


def cluster_note(clusters, space, max_clusters, connectivity, certified=False):
    """The note under a cluster table: connectivity and the clusters not listed."""
    unit = "voxels" if isinstance(space, VolumeMasker) else "vertices"
    how = (
        f"{connectivity}-connectivity on the voxel grid"
        if isinstance(space, VolumeMasker)
        else "connected along the mesh edges"
    )
    text = (
        f"{len(clusters)} cluster(s) of non-zero loadings ({how}; positive and negative "
        "loadings form separate clusters), largest first."
    )
    if certified:
        text = text.replace("non-zero loadings", "loadings certified non-zero")
    rest = clusters[max_clusters:]
    if rest:
        text += (
            f" Only the {max_clusters} largest are listed; the {len(rest)} others hold "
            f"{sum(c.size for c in rest):,} {unit} in all (at most "
            f"{max(c.size for c in rest):,} each)."
        )
    return text


def convergence_status(conv, support, rel, tol):
    """The "converged" cell of a component: yes, or why not."""
    if conv is None:
        return "-"
    if support == 0:
        return "no (zero component)"
    if bool(conv):
        return "yes"
    if rel is not None and tol is not None and np.isfinite(rel) and rel > tol:
        return "no: relative gap > tol"
    if rel is not None and tol is not None:
        return "no: alternations hit max_iter"
    return "no"


def caption_text(
    label,
    peak,
    atlas,
    support,
    n_features,
    unit,
    clusters,
    stability,
    stability_label="mean pairwise Dice",
    certified=False,
):
    """A component figure's caption: peak, atlas label, support, clusters, stability
    (``certified``: ``support`` counts the loadings certified non-zero)."""
    if peak is None:
        return f"{label} is identically zero."
    caption = f"Peak loading {signed(peak.value)} at {peak.describe()}"
    if peak.ijk is not None:
        caption += f" (voxel {peak.ijk[0]}, {peak.ijk[1]}, {peak.ijk[2]})"
    if atlas is not None:
        caption += f", atlas label: {atlas.label(peak.feature) or 'no label'}"
    if certified:
        caption += (
            f". {support:,} {unit} certified non-zero "
            f"({100.0 * (1 - support / n_features):.1f} % of the loadings are not)"
        )
    else:
        caption += (
            f". {support:,} non-zero {unit} "
            f"({100.0 * (1 - support / n_features):.1f} % of the loadings are zero)"
        )
    if clusters is not None:
        caption += f" in {len(clusters):,} cluster(s)"
    caption += "."
    if stability is not None:
        caption += f" Stability across splits ({stability_label}): {stability:.2f}."
    return caption
