"""Figures for a paper, one file each: SVG, PDF or PNG at a stated resolution.

:func:`save_figures` writes every component's figure (the report's: slices,
glass brain and zoomed clusters for volumes; lateral and medial views for
surfaces; only the certified loadings when the model certifies its support),
the explained variance and the convergence figures of a fitted model into a
folder; :func:`plot_component` returns one component's figure. Each file is
written to a temporary name and renamed (complete or absent) and never over an
input file. PNG files record their resolution (``pHYs``).

>>> save_figures(model, "figures", format="svg")                      # doctest: +SKIP
['figures/component_01.svg', ..., 'figures/explained_variance.svg']
"""

import numbers
import os

import numpy as np

from .._utils.io import atomic_write, check_not_input

__all__ = ["FIGURE_FORMATS", "plot_component", "save_figures"]

#: the file formats :func:`save_figures` writes
FIGURE_FORMATS = ("svg", "png", "pdf")


def check_figure_options(format, dpi):
    """``(format, dpi)`` checked: a known format and a positive resolution.

    Raises
    ------
    ValueError
        If ``format`` is not one of :data:`FIGURE_FORMATS` or ``dpi`` is not a
        positive number; the message names the argument.
    """
    if not isinstance(format, str) or format.lower() not in FIGURE_FORMATS:
        raise ValueError(f"format must be one of {', '.join(FIGURE_FORMATS)}, got {format!r}.")
    if (
        isinstance(dpi, bool)
        or not isinstance(dpi, numbers.Real)
        or not np.isfinite(dpi)
        or dpi <= 0
    ):
        raise ValueError(f"dpi must be a positive number (e.g. 300), got {dpi!r}.")
    return format.lower(), float(dpi)


def _unwrap(model, space, meshes):
    """(estimator, space, meshes) of a fitted estimator, an image model or a saved model."""
    if hasattr(model, "estimator_") and hasattr(model, "space_"):  # ImageSPCATV
        meshes = meshes if meshes is not None else getattr(model, "meshes_", None)
        return model.estimator_, model.space_ if space is None else space, meshes
    if hasattr(model, "estimator") and hasattr(model, "metadata"):  # SavedModel
        meshes = meshes if meshes is not None else model.meshes
        return model.estimator, model.space if space is None else space, meshes
    if not hasattr(model, "components_"):
        raise ValueError("model must be fitted (it has no components_).")
    return model, space, meshes


def _labels(comps, certified):
    from ._component_sections import labels_for

    return labels_for(comps, certified)


def plot_component(
    model, k, space=None, *, meshes=None, bg_img=None, engine="auto", title=None, canvas=None
):
    """The figure of component ``k`` as the report draws it.

    Parameters
    ----------
    model : fitted estimator, ImageSPCATV or SavedModel
    k : int
        Component index (0-based).
    space : VolumeMasker or Hemispheres, optional
        Default the model's (image and saved models).
    meshes : dict, optional
        Surfaces: the meshes to draw on (default the model's).
    bg_img : image or path, optional
        Volumes: background (default the MNI152 template).
    engine : {"auto", "pyvista", "matplotlib"}, default="auto"
    title : str, optional
        Default "Component <k + 1>".
    canvas : VolumeCanvas or SurfaceCanvas, optional
        A canvas to draw into (reused across components).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..masking import VolumeMasker, unmask
    from ..surface import Hemispheres
    from . import plotting
    from ._tables import certified_view

    estimator, space, meshes = _unwrap(model, space, meshes)
    comps = np.asarray(estimator.components_, dtype=np.float64)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k < comps.shape[0]:
        raise ValueError(f"k must be a component index in [0, {comps.shape[0]}), got {k!r}.")
    shown, certified = certified_view(estimator, comps)
    labels = _labels(comps, certified)
    title = f"Component {k + 1}" if title is None else title
    if isinstance(space, VolumeMasker):
        return plotting.plot_volume_component(
            unmask(shown[k], space.mask_img), title, bg_img=bg_img, canvas=canvas, **labels
        )
    if isinstance(space, Hemispheres):
        if meshes is None:
            raise ValueError("meshes are needed to draw a surface component.")
        maps = space.inverse_transform(shown[k : k + 1])
        return plotting.plot_surface_component(
            {h: maps[h][:, 0] for h in ("left", "right")},
            meshes,
            title,
            bg_maps={h: meshes[f"bg_{h}"] for h in ("left", "right") if f"bg_{h}" in meshes},
            engine=engine,
            canvas=canvas,
            cbar_label=labels["cbar_label"],
        )
    plt = plotting._pyplot()
    fig, ax = plt.subplots(figsize=(8, 2.2))
    ax.plot(shown[k], lw=0.8)
    ax.set_xlabel("feature")
    ax.set_ylabel(labels["cbar_label"])
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _save(fig, path, format, dpi, inputs):
    """Write ``fig`` to ``path`` atomically (never over an input); the figure is closed."""
    import matplotlib.pyplot as plt

    check_not_input(path, inputs, name="directory")
    try:
        atomic_write(
            lambda tmp: fig.savefig(tmp, format=format, dpi=dpi, bbox_inches="tight"),
            path,
            name="directory",
        )
    finally:
        plt.close(fig)
    return path


def _summary_figures(estimator):
    """(name, figure) of the explained variance and the convergence, when recorded."""
    from . import plotting

    out = []
    evr = getattr(estimator, "explained_variance_ratio_", None)
    if evr is not None and np.any(np.isfinite(evr)):
        pca = getattr(estimator, "pca_explained_variance_ratio_", None)
        out.append(("explained_variance", plotting.plot_explained_variance(evr, pca)))
    rel = getattr(estimator, "rel_gap_history_", None)
    if rel is not None:
        out.append(
            ("convergence", plotting.plot_convergence(rel, tol=getattr(estimator, "tol", None)))
        )
    elif getattr(estimator, "gap_history_", None):
        out.append(("convergence", plotting.plot_convergence(estimator.gap_history_)))
    return out


def _directory(directory):
    """The output folder (made when its parent exists)."""
    directory = os.fspath(directory)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise ValueError(f"directory: {directory!r} exists and is not a folder.")
    if not os.path.isdir(directory):
        parent = os.path.dirname(os.path.abspath(directory))
        if not os.path.isdir(parent):
            raise ValueError(f"directory: the folder of {directory!r} does not exist.")
        os.mkdir(directory)
    return directory


def _canvas(space, meshes, engine, dpi):
    """A canvas reused by every component figure (pyvista windows scaled to ``dpi``)."""
    from ..masking import VolumeMasker
    from ..surface import Hemispheres, check_plot_mesh
    from ._canvases import SurfaceCanvas
    from .plotting import pyvista_available

    if isinstance(space, VolumeMasker):
        return None  # labels differ per model: plot_component makes its own
    if not isinstance(space, Hemispheres) or meshes is None or engine == "matplotlib":
        return None
    if engine == "auto" and not pyvista_available():
        return None
    scale = min(max(dpi / 80.0, 1.0), 3.0)
    checked = {h: check_plot_mesh(*meshes[h], name=f"meshes['{h}']") for h in ("left", "right")}
    return SurfaceCanvas(checked, size=(int(420 * scale), int(320 * scale)))


def save_figures(
    model,
    directory,
    space=None,
    *,
    meshes=None,
    format="png",
    dpi=300,
    bg_img=None,
    engine="auto",
    inputs=(),
):
    """Write a fitted model's figures into ``directory``, one file each.

    ``component_01.<format>``, ``component_02.<format>``... (the report's
    component figures), ``explained_variance.<format>`` and
    ``convergence.<format>`` (when the model records them). Existing files of
    these names are replaced; nothing else in the folder is touched.

    Parameters
    ----------
    model : fitted estimator, ImageSPCATV or SavedModel
        (:func:`neurospca.load_model`'s result included.)
    directory : str or os.PathLike
        Output folder; made when its parent exists.
    space : VolumeMasker or Hemispheres, optional
        Default the model's.
    meshes : dict, optional
        Surfaces: meshes to draw on (default the model's).
    format : {"png", "svg", "pdf"}, default="png"
        SVG and PDF keep text and lines as vectors (images such as slices and
        surface renderings are embedded as pixels).
    dpi : float, default=300
        Resolution of PNG files (recorded in the file) and of the pixels
        embedded in SVG/PDF; the pyvista views are rendered larger to match.
    bg_img : image or path, optional
        Volumes: the slices' background (default the MNI152 template).
    engine : {"auto", "pyvista", "matplotlib"}, default="auto"
        Surface renderer.
    inputs : iterable of (label, path), optional
        Files that must never be overwritten (e.g. the model file).

    Returns
    -------
    list of str
        The paths written, in order.

    Raises
    ------
    ValueError
        Unknown ``format``, ``dpi`` not a positive number, a ``directory``
        that is a file or whose parent is missing, an output that is an
        input, or an unfitted model.
    """
    fmt, dpi = check_figure_options(format, dpi)
    if engine not in ("auto", "pyvista", "matplotlib"):
        raise ValueError(f"engine must be 'auto', 'pyvista' or 'matplotlib', got {engine!r}.")
    estimator, space, meshes = _unwrap(model, space, meshes)
    directory = _directory(directory)
    inputs = list(inputs) + [("bg_img", bg_img)]
    n = np.asarray(estimator.components_).shape[0]
    canvas = _canvas(space, meshes, engine, dpi)
    written = []
    try:
        for k in range(n):
            fig = plot_component(
                estimator, k, space, meshes=meshes, bg_img=bg_img, engine=engine, canvas=canvas
            )
            path = os.path.join(directory, f"component_{k + 1:02d}.{fmt}")
            written.append(_save(fig, path, fmt, dpi, inputs))
    finally:
        if canvas is not None:
            canvas.close()
    for name, fig in _summary_figures(estimator):
        written.append(_save(fig, os.path.join(directory, f"{name}.{fmt}"), fmt, dpi, inputs))
    return written
