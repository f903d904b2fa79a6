"""What the report says about each component: its facts (support, peak, clusters,
convergence, stability), its row in the components and convergence tables, its
warnings and its figure with caption and cluster table.

Every function reads a :class:`~neurospca.reporting._inputs.ReportInputs` and
the facts of :func:`component_facts`; a fitted attribute the model lacks
(``converged_``, ``dual_gaps_``, ``certified_support_``, ``stability_``...)
gives a "-" cell or no column, never an error.
"""

from types import SimpleNamespace

import numpy as np

from ..decomposition import STABILITY_THRESHOLD
from ..masking import VolumeMasker
from ..surface import Hemispheres
from . import anatomy
from ._explanations import gap_scale
from ._tables import (
    Text,
    caption_text,
    cells,
    cluster_note,
    cluster_rows,
    convergence_status,
    fmt,
    peak_text,
    per_component,
    uncertain_text,
)

__all__ = [
    "component_facts",
    "components_header",
    "component_row",
    "component_warnings",
    "convergence_header",
    "convergence_row",
    "component_item",
    "figure_labels",
    "labels_for",
    "coordinates_text",
]


def labels_for(comps, certified):
    """What component figures' colour bars and zoomed views show.

    Parameters
    ----------
    comps : ndarray of shape (n_components, n_features)
        ``components_``.
    certified : ndarray of bool or None
        ``certified_support_`` (only those loadings are drawn), or None.

    Returns
    -------
    dict
        ``cbar_label`` ("loading (unit-norm component)" when every non-zero
        component has unit norm, else "loading (as fitted)"; "certified
        loading (...)" when only certified loadings are drawn) and
        ``support_label``.
    """
    norms = np.linalg.norm(np.asarray(comps, dtype=np.float64), axis=1)
    unit = bool(np.allclose(norms[norms > 0], 1.0, rtol=1e-6))
    what = "unit-norm component" if unit else "as fitted"
    if certified is not None:
        return {
            "cbar_label": f"certified loading ({what})",
            "support_label": "certified support, largest clusters",
        }
    return {
        "cbar_label": f"loading ({what})",
        "support_label": "non-zero loadings, largest clusters",
    }


def figure_labels(r):
    """:func:`labels_for` of a report (``r``: ReportInputs)."""
    return labels_for(r.comps, r.certified)


def _can_cluster(r):
    return isinstance(r.space, VolumeMasker) or (
        isinstance(r.space, Hemispheres) and r.meshes is not None
    )


def _clusters(r, k, support):
    if not (_can_cluster(r) and support):
        return None
    return anatomy.cluster_table(
        r.shown[k],
        r.space,
        meshes=r.meshes,
        surface_coords=r.surface_coords,
        connectivity=r.cluster_connectivity,
    )


def _entry(values, k):
    """``float(values[k])``, or None when there are no values or too few."""
    return None if values is None or k >= values.size else float(values[k])


def component_facts(r, k):
    """What the tables, warnings and captions of component ``k`` are made of.

    Parameters
    ----------
    r : ReportInputs
    k : int

    Returns
    -------
    types.SimpleNamespace
        ``k``, ``comp`` (its loadings), ``nonzero`` (non-zero loadings),
        ``support`` (loadings shown), ``peak``, ``clusters`` (None when the
        space cannot be clustered or nothing is shown), ``conv``
        (``converged_[k]`` or None), ``rel`` (final relative gap or None),
        ``conv_text``, ``stab`` (stability or None).
    """
    comp = r.comps[k]
    nonzero = int(np.count_nonzero(comp))
    support = int(np.count_nonzero(r.shown[k]))
    conv = per_component(r.estimator, "converged_", k, r.n_components)
    rel = _entry(r.rel_gaps, k)
    return SimpleNamespace(
        k=k,
        comp=comp,
        nonzero=nonzero,
        support=support,
        peak=anatomy.peak_coordinates(comp, r.space, surface_coords=r.hemi_coords),
        clusters=_clusters(r, k, support),
        conv=conv,
        rel=rel,
        conv_text=convergence_status(conv, nonzero, rel, r.tol),
        stab=_entry(r.stability, k),
    )


def _gap_header(r):
    return f"relative gap (tol = {r.tol:g})" if r.tol is not None else "relative gap"


def components_header(r):
    """Header of the components table (columns only where the model has the values)."""
    header = ["component", "explained var. (%)"]
    if r.pca_evr is not None:
        header.append("PCA explained var. (%)")
    header += ["support" if r.certified is None else "certified support", "sparsity (%)"]
    if r.certified is not None:
        header.append("uncertain (non-zero)")
    if r.space is not None:
        header.append("clusters")
    header.append("peak")
    if r.stability is not None:
        header.append(f"stability ({r.stability_label})")
    if r.rel_gaps is not None:
        header.append(_gap_header(r))
    header.append("converged")
    return header


def _variance_cells(r, k):
    row = [fmt(100 * float(r.evr[k]), ".2f")]
    if r.pca_evr is not None:
        row.append(fmt(100 * float(r.pca_evr[k]), ".2f") if k < r.pca_evr.size else "-")
    return row


def component_row(r, f):
    """Cells of component ``f.k``'s row in the components table (``(text, css)`` pairs)."""
    k = f.k
    row = [str(k + 1)] + _variance_cells(r, k)
    row += [fmt(f.support), fmt(100.0 * (1 - f.support / r.n_features), ".1f")]
    if r.certified is not None:
        hidden = f.nonzero - f.support
        n_unc = per_component(r.estimator, "n_uncertain_", k, r.n_components)
        row.append(f"{fmt(n_unc)} ({hidden:,})")
    if r.space is not None:
        row.append(fmt(len(f.clusters)) if f.clusters is not None else "-")
    row.append(Text(peak_text(f.peak, r.atlas_obj)))
    if r.stability is not None:
        row.append(fmt(f.stab, ".2f") if f.stab is not None else "-")
    if r.rel_gaps is not None:
        row.append(fmt(f.rel, ".2e"))
    row.append(Text(f.conv_text))
    return cells(row)


def component_warnings(r, f):
    """Warnings about component ``f.k``: zero, not converged, not reproducible."""
    k, out = f.k, []
    if f.nonzero == 0:
        out.append(
            f"Component {k + 1} is identically zero: the penalties are too "
            "strong for these data; decrease alpha."
        )
    elif f.conv is not None and not bool(f.conv):
        out.append(f"Component {k + 1} did not reach the requested tolerance ({f.conv_text}).")
    if f.support and f.stab is not None and f.stab < STABILITY_THRESHOLD:
        out.append(
            f"Component {k + 1} does not reproduce across split halves "
            f"(stability {f.stab:.2f} < {STABILITY_THRESHOLD}): do not interpret it "
            "without replication."
        )
    return out


def convergence_header(r):
    """Header of the convergence table (relative and certified gaps, and the scale that
    links them, named so that the two gaps cannot be confused)."""
    header = ["component"]
    if r.rel_gaps is not None:
        header.append(_gap_header(r).replace("relative gap", "relative gap, scale-free"))
    header.append("certified gap")
    if r.rel_gaps is not None:
        header.append("scale = certified / relative gap")
    return header + ["converged", "alternations", "solver iterations", "time (s)"]


def convergence_row(r, f):
    """Cells of component ``f.k``'s row in the convergence table ("-" where absent)."""
    k, est, n = f.k, r.estimator, r.n_components
    certified = per_component(est, "dual_gaps_", k, n)
    row = [str(k + 1)] + ([fmt(f.rel, ".2e")] if r.rel_gaps is not None else [])
    row.append(fmt(certified, ".2e"))
    if r.rel_gaps is not None:
        row.append(fmt(gap_scale(certified, f.rel), ".3g"))
    row += [
        Text(f.conv_text),
        fmt(per_component(est, "n_iter_", k, n)),
        fmt(per_component(est, "n_inner_iter_", k, n)),
        fmt(per_component(est, "component_times_", k, n), ".3f"),
    ]
    return cells(row)


def _heading(r, k):
    heading = f"Component {k + 1}"
    if np.isfinite(r.evr[k]):
        heading += f" \u00b7 {100 * float(r.evr[k]):.2f} % explained variance (adjusted)"
    if r.pca_evr is not None and k < r.pca_evr.size:
        heading += f" \u00b7 PCA {100 * float(r.pca_evr[k]):.2f} %"
    return heading


def _caption(r, f):
    caption = caption_text(
        f"Component {f.k + 1}",
        f.peak,
        r.atlas_obj,
        f.support,
        r.n_features,
        r.unit,
        f.clusters,
        f.stab,
        r.stability_label,
        r.certified is not None,
    )
    extra = uncertain_text(r.estimator, f.k, f.comp, r.certified, r.unit)
    return " ".join(t for t in (caption, extra) if t)


def _anatomical(r):
    """Whether surface xyz are anatomical (given, or the meshes' ``anat_<hemi>``)."""
    return anatomy.coordinate_source(r.meshes, r.surface_coords) in ("given", "anatomical")


#: what the surface xyz are, by :func:`anatomy.coordinate_source`
_COORDINATE_WORDS = {
    "given": "the anatomical coordinates given (surface_coords)",
    "anatomical": "the anatomical mesh the model was fitted on (white or pial), not the "
    "drawn (inflated) mesh",
    "drawn": "the drawn mesh",
}


def coordinates_text(r):
    """Which mesh the surface peaks' and clusters' xyz come from (None: not a surface)."""
    if not isinstance(r.space, Hemispheres):
        return None
    source = anatomy.coordinate_source(r.meshes, r.surface_coords)
    if source is None:
        return None
    text = _COORDINATE_WORDS[source]
    label = ((r.metadata or {}).get("data") or {}).get("meshes")
    if label and source != "given":
        text += f" (meshes: {label})"
    return text


def _cluster_header(r):
    header = ["cluster", "sign", f"size ({r.unit})"]
    volume = isinstance(r.space, VolumeMasker)
    if volume:
        header.append("volume (mm\u00b3)")
    elif _anatomical(r):
        header.append("area (mm\u00b2)")
    mesh = "anatomical mesh" if _anatomical(r) else "drawn mesh"
    header += [
        "peak (x, y, z mm)" if volume else f"peak (hemisphere, vertex, xyz mm on the {mesh})",
        "peak loading",
        "mean loading",
    ]
    if r.atlas_obj is not None:
        header.append("atlas label (share)")
    return header


def _cluster_table(r, f):
    """(rows, note) of component ``f.k``'s cluster table."""
    if f.clusters:
        rows = cluster_rows(f.clusters, r.space, r.atlas_obj, r.max_clusters, _anatomical(r))
        note = cluster_note(
            f.clusters, r.space, r.max_clusters, r.cluster_connectivity, r.certified is not None
        )
        return rows, note
    if isinstance(r.space, Hemispheres) and r.meshes is None and f.nonzero:
        return [], "No meshes were given: the surface clusters need the mesh edges."
    return [], ""


def component_item(r, f, image):
    """Component ``f.k``'s figure, heading, caption and cluster table (a dict).

    Parameters
    ----------
    r : ReportInputs
    f : types.SimpleNamespace
        :func:`component_facts` of the component.
    image : str or None
        Its figure's data URI (None: a surface without meshes, not drawn).

    Returns
    -------
    dict
        ``label``, ``heading``, ``image``, ``caption``, ``message``,
        ``cluster_header``, ``cluster_rows``, ``cluster_note``.
    """
    rows, note = _cluster_table(r, f)
    return {
        "label": f"Component {f.k + 1}",
        "heading": _heading(r, f.k),
        "image": image,
        "caption": _caption(r, f),
        "message": "" if image else "No meshes were given: the surface loadings are not drawn.",
        "cluster_header": _cluster_header(r),
        "cluster_rows": rows,
        "cluster_note": note,
    }
