"""One self-contained HTML report of a fitted model, for a paper.

The report (a jinja2 template shipped with the package, autoescaping on) holds
a methods paragraph generated from the fitted estimator and the command line
that produced it, the data summary, the parameters, a table of the components
in fitted order (adjusted and PCA explained variance, support, clusters, peak,
stability, relative gap against ``tol``, convergence), per component a figure
(zero loadings transparent), a caption with the peak coordinates and a cluster
table (with atlas labels when an atlas is given), the penalty selection, the
explained variance, the component scores, the convergence of the relative
gaps against ``tol``, timings and library versions. Figures are embedded as
base64 PNG; the page loads nothing from the network (its Content Security
Policy forbids it) and needs no JavaScript.

>>> html = make_report(model, masker, title="My study")            # doctest: +SKIP
>>> save_report(html, "report.html")                               # doctest: +SKIP
"""

import datetime
import logging
import os
import platform
import time

import numpy as np

from .._utils.io import atomic_write
from ..decomposition import STABILITY_THRESHOLD
from ..masking import VolumeMasker
from ..operators import GroupOperator
from ..surface import Hemispheres
from . import anatomy, plotting
from ._findings import findings_section, n_components_section
from ._methods import atlas_description, methods_text, penalties, weights_text
from ._png import cached_uri
from ._render import component_images
from ._tables import (
    Text,
    caption_text,
    cells,
    certified_view,
    cluster_note,
    cluster_rows,
    convergence_status,
    fmt,
    peak_text,
    per_component,
    selection_table,
    space_rows,
    uncertain_text,
)
from .anatomy import load_atlas

logger = logging.getLogger("neurospca")

__all__ = ["HTMLReport", "make_report", "save_report", "component_scores", "library_versions"]

#: Above this many features a model without a structure operator is flagged
#: (SPCATV warns at fit time from the same size).
_CHAIN_WARNING_FEATURES = 500

_TEMPLATE_DIR = os.path.join(os.path.dirname(__file__), "templates")


def _jinja_env():
    try:
        import jinja2
    except ImportError:
        raise ImportError(f"the HTML report needs jinja2: {plotting.INSTALL_HINT}.") from None
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def library_versions():
    """Versions of Python and of the libraries the fit and the report used.

    Read from the installed distributions' metadata (nothing is imported).

    Returns
    -------
    dict
        Name -> version string ("not installed" when missing).
    """
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in (
        "neurospca",
        "numpy",
        "scipy",
        "scikit-learn",
        "nibabel",
        "nilearn",
        "matplotlib",
        "jinja2",
        "pyvista",
    ):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def component_scores(estimator):
    """Scores of the training samples: ``d_k ||v_k|| u_k`` for each component.

    These are the samples' coordinates on the unit loadings in the deflated
    data (the rank-one fits of the algorithm); they need no data, so a saved
    model gives the same values.

    Parameters
    ----------
    estimator : fitted SPCATV

    Returns
    -------
    ndarray of shape (n_samples, n_components)
    """
    scores = np.asarray(estimator.scores_, dtype=np.float64)
    return scores * np.asarray(estimator.singular_values_, dtype=np.float64)[None, :]


def _loading_note(space, surface_coords):
    """How to read the component figures."""
    if isinstance(space, VolumeMasker):
        return (
            "Unit-norm loadings, in the order fitted. Left: slices through the peak over "
            "the background image; right: glass brain. The colour scale is symmetric "
            "about zero; zero voxels are transparent (threshold just above zero). "
            "Coordinates are world (scanner/MNI) mm from the mask's affine."
        )
    if isinstance(space, Hemispheres):
        coords_note = (
            "the given anatomical coordinates"
            if surface_coords is not None
            else "the coordinates of the drawn meshes"
        )
        return (
            "Unit-norm loadings, in the order fitted: lateral and medial views of both "
            "hemispheres. The colour scale is symmetric about zero; zero vertices show "
            f"the background shading only. Peak xyz are {coords_note}; vertex indices "
            "are those of each hemisphere's mesh."
        )
    return "Unit-norm loadings against the feature index, in the order fitted."


def _variance_figure(evr, pca_evr, n_components, dpi, cache=None):
    """(image, note) of the explained variance, beside PCA's when the model stores it."""
    image = cached_uri(
        cache,
        ("variance", evr, pca_evr, dpi),
        lambda: plotting.figure_to_data_uri(
            plotting.plot_explained_variance(evr, pca_evr), dpi=dpi
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
    else:
        note = (
            "Adjusted explained variance (scores orthogonalised by QR, Zou et al. 2006), "
            f"as a share of the total variance. Total: {total} %. PCA's explained "
            "variance is not shown: this model does not store it (it needs the training "
            "data; models fitted by a current SPCATV do)."
        )
    return image, note


def _convergence_figure(estimator, tol, dpi, cache=None):
    """(image, note) of the gaps against solver iterations (relative gaps and tol when
    the model stores them)."""
    rel_hist = getattr(estimator, "rel_gap_history_", None)
    if rel_hist is not None:
        image = cached_uri(
            cache,
            ("convergence", rel_hist, tol, dpi),
            lambda: plotting.figure_to_data_uri(
                plotting.plot_convergence(rel_hist, tol=tol), dpi=dpi
            ),
        )
        return image, (
            "Relative duality gap (certified gap over the objective at zero) of "
            "the v-steps against cumulative solver iterations, one line per "
            "component. Each v-step stops once its relative gap is at most tol "
            f"(dashed line, tol = {fmt(tol, 'g')}); the final values are the "
            "table's relative gaps."
        )
    image = plotting.figure_to_data_uri(
        plotting.plot_convergence(getattr(estimator, "gap_history_", []) or []), dpi=dpi
    )
    return image, (
        "Certified duality gap of the v-steps (in units of the objective) against "
        "cumulative solver iterations, one line per component. This model does "
        "not store the relative gaps that tol bounds, so the tol line is not "
        "drawn."
    )


def make_report(
    estimator,
    space=None,
    *,
    meshes=None,
    title="neurospca report",
    data_description=None,
    bg_img=None,
    engine="auto",
    dpi=80,
    atlas=None,
    atlas_labels=None,
    atlas_name=None,
    selection=None,
    command=None,
    metadata=None,
    surface_coords=None,
    cluster_connectivity=26,
    max_clusters=10,
    study=None,
    n_components_evidence=None,
    figure_cache=None,
    n_jobs=None,
):
    """A self-contained HTML report of a fitted SPCA-TV model, for a paper.

    It holds a methods paragraph (method and citation, penalties absolute and
    relative, structure, tolerance and certified gaps, versions) and the
    command line; a table of the components in fitted order (adjusted and
    PCA explained variance, support, clusters, peak, stability, relative gap
    against ``tol``, convergence); per component a figure (zero loadings
    transparent), a caption with the peak's coordinates and a cluster table;
    the selection grid; explained variance, scores and the convergence of the
    relative gaps with the ``tol`` line.

    Parameters
    ----------
    estimator : fitted SPCATV (or another neurospca estimator with ``components_``)
        Attributes an older model lacks (``rel_gap_history_``,
        ``pca_explained_variance_ratio_``, ``alpha_``...) are left out with a note.
    space : VolumeMasker, Hemispheres or None
        Where the columns live; loadings are drawn as stat maps and glass
        brains (volumes), as lateral/medial views of both hemispheres
        (surfaces, needs ``meshes``) or as a line plot (None).
    meshes : dict, optional
        ``{"left": (coords, faces), "right": (coords, faces)}`` to draw
        surface loadings on (inflated or pial), plus optional
        ``"bg_left"``/``"bg_right"`` shading maps. The faces give the surface
        clusters; the coordinates the peaks' xyz (see ``surface_coords``).
    title : str, default="neurospca report"
        Page title (escaped, as every string put in the page).
    data_description : dict, optional
        Extra rows of the data table (label -> value), e.g. input files.
    bg_img : nibabel image or path, optional
        Background of volume slices (default: MNI152 template).
    engine : {"auto", "pyvista", "matplotlib"}, default="auto"
        Surface renderer (see :func:`plot_surface_component`).
    dpi : int, default=80
        Resolution of the embedded figures.
    atlas : image, path or pair, optional
        Names the peak and each cluster: volumes, a labelled NIfTI (image or
        path) on the mask's grid; surfaces, a pair ``(left, right)`` of
        FreeSurfer ``.annot`` paths, GIFTI label paths or integer label arrays
        (see :func:`neurospca.reporting.anatomy.load_atlas`).
    atlas_labels : list or dict, optional
        Names of the atlas values (list indexed by value, or dict value ->
        name; for surfaces also a pair). ``.annot`` files carry their own.
    atlas_name : str, optional
        How the methods paragraph names the atlas (default: its file name).
    selection : object, optional
        What :func:`neurospca.model_selection.select_penalty` returned
        (read: ``component_stability_``, ``results_``, ``best_params_``,
        ``rule``): a stability column and the selection table.
    command : str, optional
        The command line that produced the model (shown verbatim).
    metadata : dict, optional
        Metadata saved with the model (:func:`neurospca.save_model`); its
        ``"command"`` is used when ``command`` is not given.
    surface_coords : (ndarray, ndarray), optional
        Anatomical coordinates (e.g. pial or white) of the left and right
        vertices for the peaks' xyz, when ``meshes`` are inflated.
    cluster_connectivity : {6, 18, 26}, default=26
        Voxel neighbourhood of the volume clusters.
    max_clusters : int, default=10
        Clusters listed per component (the largest; the rest summarised).
    study : dict, optional
        A cohort fit's participants (``ImageSPCATV``, ``neurospca fit
        --participants``): the "Scores and participants" section.
    n_components_evidence : dict, optional
        Evidence of :func:`~neurospca.model_selection.parallel_analysis`
        (default ``metadata["n_components_evidence"]``), drawn.
    figure_cache : FigureCache, optional
        Component figures already drawn, by a hash of what they are drawn
        from (loadings, space, background, engine, dpi): an unchanged
        component is not redrawn; new figures are added to it.
    n_jobs : int, optional
        Worker processes drawing the component figures (loky: started, not
        forked, so OpenMP kernels used before are safe). Default: workers
        only when there are enough figures to pay for starting them
        (:data:`neurospca.reporting._render.PARALLEL_MIN_FIGURES`), one per
        core; 1 draws them in this process.

    Returns
    -------
    str
        The HTML document.

    Raises
    ------
    ValueError
        If the estimator is not fitted, the space or atlas does not match it
        (the message names ``atlas``), or an option is out of range.
    TypeError
        If an argument has the wrong type.
    """
    if not hasattr(estimator, "components_"):
        raise ValueError("estimator must be fitted (it has no components_).")
    if space is not None and not isinstance(space, (VolumeMasker, Hemispheres)):
        raise TypeError(
            f"space must be a VolumeMasker, a Hemispheres or None, got {type(space).__name__}."
        )
    comps = np.asarray(estimator.components_, dtype=np.float64)
    n_components, n_features = comps.shape
    if space is not None and space.n_features != n_features:
        raise ValueError(
            f"space has {space.n_features} voxels/vertices but the model has {n_features} features."
        )
    if data_description is not None and not isinstance(data_description, dict):
        raise TypeError(f"data_description must be a dict, got {type(data_description).__name__}.")
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}.")
    if metadata is not None and not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}.")
    if command is None and metadata is not None:
        command = metadata.get("command")
    if command is not None and not isinstance(command, str):
        raise TypeError(f"command must be a str, got {type(command).__name__}.")
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
    t_start = time.perf_counter()
    if isinstance(space, Hemispheres) and meshes is not None and engine == "auto":
        plotting.start_pyvista_probe()  # runs while the tables are made
    env = _jinja_env()
    atlas_obj = None if atlas is None else load_atlas(atlas, space, atlas_labels)
    hemi_coords = None
    if isinstance(space, Hemispheres) and (meshes is not None or surface_coords is not None):
        hemi_coords = anatomy._hemi_coords(space, meshes, surface_coords)
    scores = (
        component_scores(estimator)
        if hasattr(estimator, "scores_") and hasattr(estimator, "singular_values_")
        else None
    )
    n_samples = None if scores is None else int(scores.shape[0])
    versions = library_versions()
    pen = penalties(estimator)
    tol = getattr(estimator, "tol", None)
    tol = float(tol) if isinstance(tol, (int, float, np.integer, np.floating)) else None

    data_rows = []
    if n_samples is not None:
        data_rows.append(("samples", fmt(n_samples)))
    data_rows += space_rows(space, n_features)
    data_rows += [(str(k), fmt(v)) for k, v in (data_description or {}).items()]

    params = []
    for key, value in estimator.get_params(deep=False).items():
        if isinstance(value, GroupOperator):
            value = (
                f"{value.n_rows:,} rows x {value.n_features:,} columns, "
                f"{value.n_groups:,} groups, ||A||^2 <= {value.norm2:.4g}"
            )
        elif value is None and key == "operator":
            value = "1-D chain over the features"
        elif value is None and key == "alpha" and hasattr(estimator, "alpha_rel"):
            value = "None (data-relative: alpha_rel x l1_max_)"
        params.append((key, fmt(value)))
    for key in ("alpha_", "alpha_rel_", "l1_max_"):
        if hasattr(estimator, key):
            params.append((f"{key} (fitted)", fmt(getattr(estimator, key))))

    evr = np.asarray(
        getattr(estimator, "explained_variance_ratio_", np.full(n_components, np.nan)),
        dtype=np.float64,
    )
    pca_evr = getattr(estimator, "pca_explained_variance_ratio_", None)
    pca_evr = None if pca_evr is None else np.asarray(pca_evr, dtype=np.float64).ravel()
    rel_gaps = getattr(estimator, "rel_gaps_", None)
    rel_gaps = None if rel_gaps is None else np.asarray(rel_gaps, dtype=np.float64).ravel()
    sel = None if selection is None else selection_table(selection, n_components)
    stability = None if sel is None else sel["stability"]
    stability_label = (
        "split-half reproducibility"
        if getattr(selection, "rule", None) == "reproducibility"
        else "mean pairwise Dice"
    )
    own = getattr(estimator, "stability_", None)
    if stability is None and own is not None and np.any(np.isfinite(own)):
        stability = np.asarray(own, dtype=np.float64).ravel()
        stability_label = "split-half reproducibility"

    header = ["component", "explained var. (%)"]
    if pca_evr is not None:
        header.append("PCA explained var. (%)")
    shown, certified = certified_view(estimator, comps)
    header += ["support" if certified is None else "certified support", "sparsity (%)"]
    if certified is not None:
        header.append("uncertain (non-zero)")
    if space is not None:
        header.append("clusters")
    header.append("peak")
    if stability is not None:
        header.append(f"stability ({stability_label})")
    if rel_gaps is not None:
        header.append(f"relative gap (tol = {tol:g})" if tol is not None else "relative gap")
    header.append("converged")
    conv_header = ["component"]
    if rel_gaps is not None:
        conv_header.append(f"relative gap (tol = {tol:g})" if tol is not None else "relative gap")
    conv_header += ["certified gap", "converged", "alternations", "solver iterations", "time (s)"]
    conv_rows = []

    rows, warnings_, components = [], [], []
    surface_maps, bg_maps = None, {}
    if isinstance(space, Hemispheres) and meshes is not None:
        surface_maps = space.inverse_transform(shown)
        bg_maps = {h: meshes.get(f"bg_{h}") for h in ("left", "right")}
        bg_maps = {h: v for h, v in bg_maps.items() if v is not None}
    can_cluster = isinstance(space, VolumeMasker) or (
        isinstance(space, Hemispheres) and meshes is not None
    )
    images = component_images(
        shown,
        space,
        meshes,
        surface_maps,
        bg_maps,
        bg_img,
        engine,
        dpi,
        cache=figure_cache,
        n_jobs=n_jobs,
    )
    for k, comp in enumerate(comps):
        nonzero = int(np.count_nonzero(comp))
        support = int(np.count_nonzero(shown[k]))
        peak = anatomy.peak_coordinates(comp, space, surface_coords=hemi_coords)
        clusters = None
        if can_cluster and support:
            clusters = anatomy.cluster_table(
                shown[k],
                space,
                meshes=meshes,
                surface_coords=surface_coords,
                connectivity=cluster_connectivity,
            )
        conv = per_component(estimator, "converged_", k, n_components)
        rel = None if rel_gaps is None or k >= rel_gaps.size else float(rel_gaps[k])
        conv_text = convergence_status(conv, nonzero, rel, tol)
        row = [str(k + 1), fmt(100 * float(evr[k]), ".2f")]
        if pca_evr is not None:
            row.append(fmt(100 * float(pca_evr[k]), ".2f") if k < pca_evr.size else "-")
        row += [fmt(support), fmt(100.0 * (1 - support / n_features), ".1f")]
        if certified is not None:
            hidden = int(np.count_nonzero(comp)) - support
            row.append(
                f"{fmt(per_component(estimator, 'n_uncertain_', k, n_components))} ({hidden:,})"
            )
        if space is not None:
            row.append(fmt(len(clusters)) if clusters is not None else "-")
        row.append(Text(peak_text(peak, atlas_obj)))
        if stability is not None:
            row.append(fmt(float(stability[k]), ".2f") if k < stability.size else "-")
        if rel_gaps is not None:
            row.append(fmt(rel, ".2e"))
        row.append(Text(conv_text))
        rows.append(cells(row))
        conv_row = [str(k + 1)] + ([fmt(rel, ".2e")] if rel_gaps is not None else [])
        conv_row += [
            fmt(per_component(estimator, "dual_gaps_", k, n_components), ".2e"),
            Text(conv_text),
            fmt(per_component(estimator, "n_iter_", k, n_components)),
            fmt(per_component(estimator, "n_inner_iter_", k, n_components)),
            fmt(per_component(estimator, "component_times_", k, n_components), ".3f"),
        ]
        conv_rows.append(cells(conv_row))
        if nonzero == 0:
            warnings_.append(
                f"Component {k + 1} is identically zero: the penalties are too "
                "strong for these data; decrease alpha."
            )
        elif conv is not None and not bool(conv):
            warnings_.append(
                f"Component {k + 1} did not reach the requested tolerance ({conv_text})."
            )
        if (
            support
            and stability is not None
            and k < stability.size
            and stability[k] < STABILITY_THRESHOLD
        ):
            warnings_.append(
                f"Component {k + 1} does not reproduce across split halves "
                f"(stability {float(stability[k]):.2f} < "
                f"{STABILITY_THRESHOLD}): do not interpret it without "
                "replication."
            )

        # the component's own section
        label = f"Component {k + 1}"
        heading = label
        if np.isfinite(evr[k]):
            heading += f" \u00b7 {100 * float(evr[k]):.2f} % explained variance (adjusted)"
        if pca_evr is not None and k < pca_evr.size:
            heading += f" \u00b7 PCA {100 * float(pca_evr[k]):.2f} %"
        image = images[k]
        unit = (
            "voxels"
            if isinstance(space, VolumeMasker)
            else "vertices"
            if isinstance(space, Hemispheres)
            else "features"
        )
        stab = None if stability is None or k >= stability.size else float(stability[k])
        caption = caption_text(
            label,
            peak,
            atlas_obj,
            support,
            n_features,
            unit,
            clusters,
            stab,
            stability_label,
            certified is not None,
        )
        caption = " ".join(
            t for t in (caption, uncertain_text(estimator, k, comp, certified, unit)) if t
        )
        cluster_header = ["cluster", "sign", f"size ({unit})"]
        if isinstance(space, VolumeMasker):
            cluster_header.append("volume (mm\u00b3)")
        elif surface_coords is not None:
            cluster_header.append("area (mm\u00b2)")
        cluster_header += [
            "peak (x, y, z mm)"
            if isinstance(space, VolumeMasker)
            else "peak (hemisphere, vertex, xyz)",
            "peak loading",
            "mean loading",
        ]
        if atlas_obj is not None:
            cluster_header.append("atlas label (share)")
        item = {
            "label": label,
            "heading": heading,
            "image": image,
            "caption": caption,
            "message": "" if image else "No meshes were given: the surface loadings are not drawn.",
            "cluster_header": cluster_header,
            "cluster_rows": [],
            "cluster_note": "",
        }
        if clusters:
            item["cluster_rows"] = cluster_rows(
                clusters, space, atlas_obj, max_clusters, surface_coords is not None
            )
            item["cluster_note"] = cluster_note(
                clusters, space, max_clusters, cluster_connectivity, certified is not None
            )
        elif isinstance(space, Hemispheres) and meshes is None and nonzero:
            item["cluster_note"] = "No meshes were given: the surface clusters need the mesh edges."
        components.append(item)

    op = getattr(estimator, "operator", "absent")
    if op is None and n_features > _CHAIN_WARNING_FEATURES:
        warnings_.append(
            f"No structure operator: the TV penalty ran along a 1-D chain over "
            f"the {n_features:,} features in column order, which is not the "
            "brain's geometry; pass operator= (tv_from_mask, tv_from_mesh)."
        )

    loading_note = _loading_note(space, surface_coords)
    scores_image = (
        "" if scores is None else plotting.figure_to_data_uri(plotting.plot_scores(scores), dpi=dpi)
    )
    variance_image, variance_note = _variance_figure(evr, pca_evr, n_components, dpi, figure_cache)
    convergence_image, convergence_note = _convergence_figure(estimator, tol, dpi, figure_cache)

    timings = []
    if hasattr(estimator, "fit_time_"):
        timings.append(("fit (s)", fmt(estimator.fit_time_, ".3f")))
    for k in range(n_components):
        t = per_component(estimator, "component_times_", k, n_components)
        if t is not None:
            timings.append((f"component {k + 1} (s)", fmt(t, ".3f")))
    timings.append(("report (s)", fmt(time.perf_counter() - t_start, ".2f")))

    methods = methods_text(
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
        None if atlas is None else atlas_description(atlas, atlas_name),
    )
    html = env.get_template("report.html").render(
        title=title,
        estimator_name=type(estimator).__name__,
        created=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        versions=versions,
        methods=methods,
        command=command,
        data_rows=data_rows,
        params=params,
        weights=weights_text(pen),
        component_header=header,
        certified=certified is not None,
        component_rows=rows,
        warnings=warnings_,
        components=components,
        loading_note=loading_note,
        selection=sel,
        variance_image=variance_image,
        variance_note=variance_note,
        scores_image=scores_image,
        scores_note=(
            "Left: each sample's score on each component; right: component 1 "
            "against component 2. Scores are d_k ||v_k|| u_k, the samples' "
            "coordinates on the unit loadings in the deflated data."
        ),
        convergence_image=convergence_image,
        convergence_header=conv_header,
        convergence_rows=conv_rows,
        convergence_note=convergence_note,
        timings=timings,
        findings=findings_section(study, scores, dpi=dpi),
        ncomp=n_components_section(n_components_evidence, metadata, dpi),
    )
    return html


def save_report(html, path):
    """Write an HTML report (temporary name, then rename: complete or absent).

    Parameters
    ----------
    html : str
        From :func:`make_report`.
    path : str or os.PathLike

    Returns
    -------
    str
        The path written.
    """
    if not isinstance(html, str):
        raise TypeError(f"html must be a str, got {type(html).__name__}.")

    def _write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(html)

    return atomic_write(_write, path)


class HTMLReport:
    """A rendered report, as nilearn's ``generate_report`` returns.

    Parameters
    ----------
    html : str
        The self-contained page (from :func:`make_report`).

    Examples
    --------
    >>> report = image_model.generate_report()                    # doctest: +SKIP
    >>> report.save_as_html("report.html")                        # doctest: +SKIP
    """

    def __init__(self, html):
        if not isinstance(html, str):
            raise TypeError(f"html must be a str, got {type(html).__name__}.")
        self.html = html

    def __str__(self):
        return self.html

    def __repr__(self):
        return f"<HTMLReport: {len(self.html):,} characters>"

    def _repr_html_(self):
        return self.get_iframe()

    def get_iframe(self, width=960, height=800):
        """The page inside an ``<iframe srcdoc=...>`` (for notebooks).

        Parameters
        ----------
        width, height : int
            Size of the frame in pixels.

        Returns
        -------
        str
        """
        import html as _html

        return (
            f'<iframe srcdoc="{_html.escape(self.html, quote=True)}" '
            f'width="{int(width)}" height="{int(height)}" frameborder="0"></iframe>'
        )

    def save_as_html(self, path):
        """Write the page (temporary name, then rename: complete or absent).

        Parameters
        ----------
        path : str or os.PathLike

        Returns
        -------
        str
            The path written.
        """
        return save_report(self.html, path)
