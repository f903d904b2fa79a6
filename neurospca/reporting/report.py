"""One self-contained HTML report of a fitted model.

The report (a jinja2 template shipped with the package, autoescaping on) holds
the data summary, the parameters, a table of the components (explained
variance, support size, sparsity, certified gap), a figure of each loading on
the brain, the explained variance, the component scores, the convergence of
the certified gaps, timings and library versions. Figures are embedded as
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

from .._io import atomic_write
from ..masking import VolumeMasker, unmask
from ..operators import GroupOperator
from ..surface import Hemispheres
from . import plotting

logger = logging.getLogger("neurospca")

__all__ = ["HTMLReport", "make_report", "save_report", "component_scores", "library_versions"]

_TEMPLATE_DIR = os.path.join(os.path.dirname(__file__), "templates")


def _jinja_env():
    try:
        import jinja2
    except ImportError:
        raise ImportError(f"the HTML report needs jinja2: {plotting.INSTALL_HINT}.") from None
    return jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATE_DIR), autoescape=True,
                              undefined=jinja2.StrictUndefined)


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
    for name in ("neurospca", "numpy", "scipy", "scikit-learn", "nibabel", "nilearn",
                 "matplotlib", "jinja2", "pyvista"):
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


def _fmt(value, spec=".4g"):
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        return "nan" if not np.isfinite(value) else format(float(value), spec)
    return str(value)


def _space_rows(space, n_features):
    if isinstance(space, VolumeMasker):
        zooms = np.sqrt((np.asarray(space.mask_img.affine)[:3, :3] ** 2).sum(axis=0))
        return [("space", "volume (brain mask)"),
                ("mask grid", " x ".join(str(s) for s in space.mask.shape)),
                ("voxel size (mm)", " x ".join(f"{z:.3g}" for z in zooms)),
                ("voxels in the mask", _fmt(space.n_features))]
    if isinstance(space, Hemispheres):
        return [("space", "cortical surface (two hemispheres)"),
                ("vertices (left, right)", f"{space.n_vertices[0]:,}, {space.n_vertices[1]:,}"),
                ("vertices analysed (left, right)",
                 f"{space.vertices[0].size:,}, {space.vertices[1].size:,}")]
    return [("space", "features (no brain space given)"), ("features", _fmt(n_features))]


def _peak_label(space, comp):
    if not np.any(comp):
        return "-"
    g = int(np.argmax(np.abs(comp)))
    if isinstance(space, VolumeMasker):
        ijk = np.argwhere(space.mask)[g]
        xyz = space.mask_img.affine[:3, :3] @ ijk + space.mask_img.affine[:3, 3]
        return "(" + ", ".join(f"{c:.0f}" for c in xyz) + ") mm"
    if isinstance(space, Hemispheres):
        h = 0 if g < space.slices[0].stop else 1
        vert = space.vertices[h][g - space.slices[h].start]
        return f"{('left', 'right')[h]} vertex {vert}"
    return f"feature {g}"


def _component_figures(estimator, space, meshes, bg_img, engine, dpi):
    comps = np.asarray(estimator.components_, dtype=np.float64)
    out = []
    surface_maps = None
    if isinstance(space, Hemispheres) and meshes is not None:
        surface_maps = space.inverse_transform(comps)
        bg_maps = {h: meshes.get(f"bg_{h}") for h in ("left", "right")}
        bg_maps = {h: v for h, v in bg_maps.items() if v is not None}
    for k, comp in enumerate(comps):
        label = f"Component {k + 1}"
        item = {"label": label, "image": None, "message": ""}
        t0 = time.perf_counter()
        if isinstance(space, VolumeMasker):
            fig = plotting.plot_volume_component(unmask(comp, space.mask_img), None,
                                                 bg_img=bg_img)
        elif surface_maps is not None:
            maps = {h: surface_maps[h][:, k] for h in ("left", "right")}
            fig = plotting.plot_surface_component(maps, meshes, None, bg_maps=bg_maps,
                                                  engine=engine)
        elif isinstance(space, Hemispheres):
            item["message"] = "No meshes were given: the surface loadings are not drawn."
            out.append(item)
            continue
        else:
            plt = plotting._pyplot()
            fig, ax = plt.subplots(figsize=(8, 2.2))
            ax.plot(comp, lw=0.8)
            ax.set_xlabel("feature")
            ax.set_ylabel("loading")
            fig.tight_layout()
        item["image"] = plotting.figure_to_data_uri(fig, dpi=dpi)
        logger.info("report: %s drawn in %.2f s", label, time.perf_counter() - t0)
        out.append(item)
    return out


def make_report(estimator, space=None, *, meshes=None, title="neurospca report",
                data_description=None, bg_img=None, engine="auto", dpi=80):
    """A self-contained HTML report of a fitted SPCA-TV model.

    Parameters
    ----------
    estimator : fitted SPCATV
    space : VolumeMasker, Hemispheres or None
        Where the columns live; loadings are drawn as stat maps and glass
        brains (volumes), as lateral/medial views of both hemispheres
        (surfaces, needs ``meshes``) or as a line plot (None).
    meshes : dict, optional
        ``{"left": (coords, faces), "right": (coords, faces)}`` to draw
        surface loadings on (inflated or pial), plus optional
        ``"bg_left"``/``"bg_right"`` shading maps.
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

    Returns
    -------
    str
        The HTML document.
    """
    if not hasattr(estimator, "components_"):
        raise ValueError("estimator must be fitted (it has no components_).")
    if space is not None and not isinstance(space, (VolumeMasker, Hemispheres)):
        raise TypeError(f"space must be a VolumeMasker, a Hemispheres or None, got "
                        f"{type(space).__name__}.")
    comps = np.asarray(estimator.components_, dtype=np.float64)
    n_components, n_features = comps.shape
    if space is not None and space.n_features != n_features:
        raise ValueError(f"space has {space.n_features} voxels/vertices but the model has "
                         f"{n_features} features.")
    if data_description is not None and not isinstance(data_description, dict):
        raise TypeError(f"data_description must be a dict, got "
                        f"{type(data_description).__name__}.")
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}.")
    t_start = time.perf_counter()
    env = _jinja_env()
    scores = component_scores(estimator) if hasattr(estimator, "scores_") else None

    data_rows = []
    if scores is not None:
        data_rows.append(("samples", _fmt(scores.shape[0])))
    data_rows += _space_rows(space, n_features)
    data_rows += [(str(k), _fmt(v)) for k, v in (data_description or {}).items()]

    params = []
    for key, value in estimator.get_params(deep=False).items():
        if isinstance(value, GroupOperator):
            value = (f"{value.n_rows:,} rows x {value.n_features:,} columns, "
                     f"{value.n_groups:,} groups, ||A||^2 <= {value.norm2:.4g}")
        elif value is None and key == "operator":
            value = "1-D chain over the features"
        params.append((key, _fmt(value)))
    weights = ""
    if all(hasattr(estimator, a) for a in ("alpha", "l1_ratio", "tv_ratio")):
        try:
            a, r1, rt = float(estimator.alpha), float(estimator.l1_ratio), float(estimator.tv_ratio)
            weights = (f"l1 = {a * r1:.4g}, l2 = {a * (1 - r1 - rt):.4g}, "
                       f"tv = {a * rt:.4g}")
        except (TypeError, ValueError):
            weights = ""

    def attr(name, k, default=None):
        arr = getattr(estimator, name, None)
        return default if arr is None or k >= len(arr) else arr[k]

    header = ["component", "explained var. (%)", "support", "sparsity (%)", "peak",
              "certified gap", "converged", "alternations", "solver iterations", "time (s)"]
    rows, warnings_ = [], []
    evr = getattr(estimator, "explained_variance_ratio_", np.full(n_components, np.nan))
    for k, comp in enumerate(comps):
        support = int(np.count_nonzero(comp))
        rows.append([str(k + 1), _fmt(100 * float(evr[k]), ".2f"), _fmt(support),
                     _fmt(100.0 * (1 - support / n_features), ".1f"), _peak_label(space, comp),
                     _fmt(attr("dual_gaps_", k), ".3e"), _fmt(attr("converged_", k)),
                     _fmt(attr("n_iter_", k)), _fmt(attr("n_inner_iter_", k)),
                     _fmt(attr("component_times_", k), ".3f")])
        if support == 0:
            warnings_.append(f"Component {k + 1} is identically zero: the penalties are too "
                             "strong for these data; decrease alpha.")
        elif attr("converged_", k) is not None and not attr("converged_", k):
            warnings_.append(f"Component {k + 1} did not reach the requested tolerance.")

    components = _component_figures(estimator, space, meshes, bg_img, engine, dpi)
    if isinstance(space, VolumeMasker):
        loading_note = ("Unit-norm loadings. Left: slices through the peak over the "
                        "background image; right: glass brain. The colour scale is symmetric "
                        "about zero; zero voxels are transparent.")
    elif isinstance(space, Hemispheres):
        loading_note = ("Unit-norm loadings: lateral and medial views of both hemispheres. "
                        "The colour scale is symmetric about zero; zero vertices show the "
                        "grey background.")
    else:
        loading_note = "Unit-norm loadings against the feature index."
    if scores is not None:
        scores_image = plotting.figure_to_data_uri(plotting.plot_scores(scores), dpi=dpi)
    else:
        scores_image = ""
    variance_image = plotting.figure_to_data_uri(plotting.plot_explained_variance(evr), dpi=dpi)
    convergence_image = plotting.figure_to_data_uri(
        plotting.plot_convergence(getattr(estimator, "gap_history_", [])), dpi=dpi)

    timings = []
    if hasattr(estimator, "fit_time_"):
        timings.append(("fit (s)", _fmt(estimator.fit_time_, ".3f")))
    for k in range(n_components):
        t = attr("component_times_", k)
        if t is not None:
            timings.append((f"component {k + 1} (s)", _fmt(t, ".3f")))
    timings.append(("report figures (s)", _fmt(time.perf_counter() - t_start, ".2f")))

    versions = library_versions()
    html = env.get_template("report.html").render(
        title=title,
        estimator_name=type(estimator).__name__,
        created=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        versions=versions,
        data_rows=data_rows,
        params=params,
        weights=weights,
        component_header=header,
        component_rows=rows,
        warnings=warnings_,
        components=components,
        loading_note=loading_note,
        variance_image=variance_image,
        total_variance=_fmt(100 * float(np.nansum(evr)), ".2f") + " %",
        scores_image=scores_image,
        scores_note=("Left: each sample's score on each component; right: component 1 "
                     "against component 2. Scores are d_k ||v_k|| u_k, the samples' "
                     "coordinates on the unit loadings in the deflated data."),
        convergence_image=convergence_image,
        timings=timings,
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

        return (f'<iframe srcdoc="{_html.escape(self.html, quote=True)}" '
                f'width="{int(width)}" height="{int(height)}" frameborder="0"></iframe>')

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
