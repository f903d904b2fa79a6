"""One self-contained HTML report of a fitted model, for a paper.

The report (jinja2 templates shipped with the package, autoescaping on) holds
a methods paragraph generated from the fitted estimator and the command line
that produced it, the data summary, the parameters, a table of the components
in fitted order (adjusted and PCA explained variance, support, clusters, peak,
stability, relative gap against ``tol``, convergence), per component a figure
(zero loadings transparent), a caption with the peak coordinates and a cluster
table (with atlas labels when an atlas is given), the penalty selection, the
explained variance, the component scores, the convergence of the relative
gaps against ``tol``, timings and library versions. Figures are embedded as
base64 PNG; the page loads nothing from the network (its Content Security
Policy forbids it). Its only script is the optional interactive viewer
(:mod:`._viewer`, ``interactive=True``), inline and allowed by its hash.

As nilearn's reporting, the page is built section by section: the arguments
are checked and what every section reads is derived from the model once
(:mod:`._inputs`), one small builder per section returns its context, or None
when the section does not apply to this model (:mod:`._sections`, with the
per-component rows, captions and warnings in :mod:`._component_sections`), and
``templates/report.html`` includes one partial per section
(``templates/section_<name>.html``). :func:`make_report` only runs them in
order.

>>> html = make_report(model, masker, title="My study")            # doctest: +SKIP
>>> save_report(html, "report.html")                               # doctest: +SKIP
"""

import datetime
import functools
import logging
import os
import platform
import time

import numpy as np

from .._utils.io import atomic_write
from ..masking import VolumeMasker
from ..surface import Hemispheres
from . import plotting
from ._component_sections import component_facts, figure_labels
from ._estimators import method_title
from ._inputs import check_arguments, report_inputs
from ._render import component_images
from ._sections import (
    components_section,
    convergence_section,
    data_section,
    loadings_section,
    methods_section,
    n_components_evidence_section,
    parameters_section,
    participants_section,
    scores_section,
    selection_section,
    timings_section,
    variance_section,
    versions_section,
    viewer_section,
)
from ._viewer import check_interactive
from ._warmup import prepare_volume_report, wait_warm_up

logger = logging.getLogger("neurospca")

__all__ = ["HTMLReport", "make_report", "save_report", "component_scores", "library_versions"]


def _jinja_env():
    try:
        import jinja2
    except ImportError:
        raise ImportError(f"the HTML report needs jinja2: {plotting.INSTALL_HINT}.") from None
    return _environment(jinja2)


@functools.lru_cache(maxsize=1)
def _environment(jinja2):
    """The report's jinja2 environment, made once (its compiled templates are kept)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("neurospca.reporting", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def jinja_templates():
    """The report's jinja2 environment with every template compiled (a worker's warm-up).

    Returns
    -------
    jinja2.Environment
    """
    env = _jinja_env()
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".html"):
            env.get_template(name)
    return env


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
    scores=None,
    interactive=True,
):
    """A self-contained HTML report of a fitted model (SPCA-TV or another of the
    five estimators), for a paper.

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
        Attributes an older model or another estimator lacks
        (``rel_gap_history_``, ``pca_explained_variance_ratio_``, ``alpha_``,
        ``dual_gaps_``, ``certified_support_``, ``stability_``...) are left out
        with a note: their columns, sentences or sections are not shown.
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
        Surface renderer (see :func:`plot_surface_component`). ``"auto"``
        draws the report's four views with numpy (``reporting._raster``: no VTK,
        no OpenGL context; 0.1-0.2 s CPU for a process's first surface figure
        instead of 1.8-2.1 s with pyvista), ``"pyvista"`` with pyvista.
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
    scores : array-like of shape (n_samples, n_components), optional
        The training samples' scores of an estimator other than SPCA-TV
        (whose scores are :func:`component_scores`, from the model alone),
        e.g. its ``transform`` of the training data: the scores and
        participants sections and the number of samples.
    interactive : bool, default=True
        An interactive viewer (volumes: three slices to click and scroll;
        surfaces: both hemispheres to rotate), inline and offline, allowed by
        its hash in the page's Content-Security-Policy (see
        :mod:`neurospca.reporting._viewer`). It embeds once the background
        (about 100 KB at 3 mm, 300 KB at 2 mm) or the meshes (350 KB for
        fsaverage5), and 2-6 KB per sparse component (up to 60 KB at 3 mm
        and 200 KB at 2 mm when every voxel is non-zero). False: a page
        without any script, as before.

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
    args = dict(
        meshes=meshes,
        title=title,
        data_description=data_description,
        bg_img=bg_img,
        engine=engine,
        dpi=dpi,
        atlas=atlas,
        atlas_labels=atlas_labels,
        atlas_name=atlas_name,
        selection=selection,
        command=command,
        metadata=metadata,
        surface_coords=surface_coords,
        cluster_connectivity=cluster_connectivity,
        max_clusters=max_clusters,
        study=study,
        n_components_evidence=n_components_evidence,
        figure_cache=figure_cache,
        n_jobs=n_jobs,
        scores=scores,
        interactive=check_interactive(interactive),
    )
    comps, args["command"] = check_arguments(estimator, space, args)
    t_start = time.perf_counter()
    wait_warm_up()  # a command's warm-up thread: done before the report imports its stacks
    env = _jinja_env()
    r = report_inputs(estimator, space, comps, args, library_versions())
    if isinstance(r.space, VolumeMasker):  # matplotlib imported while a thread reads the
        prepare_volume_report(r.space, r.bg_img, r.interactive)  # template (not drawn)
    images = _component_figures(r)  # drawn by a forked child in the report worker
    facts = [component_facts(r, k) for k in range(r.n_components)]
    context = {
        "components": components_section(r, facts),
        "viewer": viewer_section(r),
        "scores": scores_section(r),
        "variance": variance_section(r),
        "convergence": convergence_section(r, facts),
        "methods": methods_section(r),
        "data": data_section(r),
        "parameters": parameters_section(r),
        "selection": selection_section(r),
        "participants": participants_section(r),
        "ncomp": n_components_evidence_section(r),
        "versions": versions_section(r),
    }
    context["loadings"] = loadings_section(r, facts, images())
    context["timings"] = timings_section(r, t_start)
    return env.get_template("report.html").render(
        title=title,
        estimator_name=type(estimator).__name__,
        method_title=method_title(estimator),
        created=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        **context,
    )


def _component_figures(r):
    """A function returning the data URIs of the component figures (None where nothing
    is drawn): they are drawn now, or by a forked child in the report worker."""
    surface_maps, bg_maps = None, {}
    if isinstance(r.space, Hemispheres) and r.meshes is not None:
        surface_maps = r.space.inverse_transform(r.shown)
        bg_maps = {h: r.meshes.get(f"bg_{h}") for h in ("left", "right")}
        bg_maps = {h: v for h, v in bg_maps.items() if v is not None}
    return component_images(
        r.shown,
        r.space,
        r.meshes,
        surface_maps,
        bg_maps,
        r.bg_img,
        r.engine,
        r.dpi,
        cache=r.figure_cache,
        n_jobs=r.n_jobs,
        labels=figure_labels(r),
        deferred=True,
    )


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
