"""Figures of loadings on the brain, scores, explained variance and convergence.

Every function returns a matplotlib ``Figure`` (Agg-friendly, nothing shown).
matplotlib, nilearn and pyvista are imported inside the functions, with an
install hint when missing (``pip install "neurospca[report]"``).

- Volumes (:func:`plot_volume_component`): slices through the peak, a glass
  brain and zoomed clusters (:mod:`._slices`), symmetric labelled colour
  scale, zeros transparent.
- Surfaces (:func:`plot_surface_component`): lateral and medial views of both
  hemispheres. pyvista renders them off-screen when it can; whether it can is
  probed once in a subprocess (:func:`pyvista_available`), because VTK can
  crash the process without EGL or OSMesa. Otherwise nilearn's matplotlib
  surface plots are used.
"""

import logging
import os
import subprocess
import sys

import numpy as np
import scipy.sparse as sp

from ._canvases import SurfaceCanvas, VolumeCanvas
from ._png import encode_png, png_data_uri
from ._summary_plots import plot_convergence, plot_explained_variance, plot_scores

logger = logging.getLogger("neurospca")

__all__ = [
    "figure_to_png",
    "figure_to_data_uri",
    "plot_convergence",
    "plot_explained_variance",
    "plot_scores",
    "plot_surface_component",
    "plot_volume_component",
    "pyvista_available",
    "surface_background",
    "surface_component_png",
]

INSTALL_HINT = 'install the report extra: pip install "neurospca[report]"'
CMAP = "cold_hot"
_PYVISTA_OK = None
_PROBE_RUN = None  # a probe started ahead by start_pyvista_probe (subprocess.Popen)

_PROBE = """
import os
os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")
import pyvista as pv
pv.OFF_SCREEN = True
p = pv.Plotter(off_screen=True, window_size=(64, 64))
p.add_mesh(pv.Sphere(), color="red")
img = p.screenshot(return_img=True)
p.close()
assert img.std() > 0
print("ok")
"""


def _pyplot():
    try:
        import matplotlib

        if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(f"plotting needs matplotlib: {INSTALL_HINT}.") from None
    return plt


def _nilearn_plotting():
    try:
        from nilearn import plotting
    except ImportError:
        raise ImportError(f"brain plots need nilearn: {INSTALL_HINT}.") from None
    return plotting


def figure_to_png(fig, dpi=80):
    """PNG bytes of a matplotlib figure (the figure is closed).

    One Agg draw, the white margins cropped (as ``bbox_inches="tight"``) and a
    fast PNG writer (:func:`neurospca.reporting._png.encode_png`).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    dpi : int, default=80

    Returns
    -------
    bytes
    """
    _pyplot()
    return encode_png(fig, dpi)


def figure_to_data_uri(fig, dpi=80):
    """``data:image/png;base64,...`` URI of a figure (embedded in the HTML report)."""
    return png_data_uri(figure_to_png(fig, dpi))


def _symmetric_scale(values):
    """(vmax, threshold): symmetric colour limit and a threshold that hides exact zeros."""
    absval = np.abs(np.asarray(values, dtype=np.float64))
    absval = absval[np.isfinite(absval)]
    nonzero = absval[absval > 0]
    if nonzero.size == 0:
        return 0.0, 0.0
    return float(nonzero.max()), float(0.5 * nonzero.min())


def _empty_figure(title, message, figsize=(8, 2)):
    plt = _pyplot()
    fig = plt.figure(figsize=figsize)
    fig.text(0.5, 0.5, message, ha="center", va="center", fontsize=12)
    if title:
        fig.suptitle(title)
    return fig


# --------------------------------------------------------------------------
# volumes
# --------------------------------------------------------------------------


def plot_volume_component(
    img,
    title=None,
    *,
    bg_img=None,
    cmap=None,
    canvas=None,
    cbar_label="loading",
    support_label="largest clusters",
):
    """Slices through the peak, a glass brain and the largest clusters of one loading map.

    Three rows on one symmetric colour scale (:mod:`neurospca.reporting._slices`):
    sagittal, coronal and axial slices through the peak over the background,
    cropped to the brain; largest-magnitude projections over the brain's
    silhouette; each of the three largest clusters cut through its centre and
    zoomed to it. The colour bar is labelled (``cbar_label`` and the
    symmetric limits).

    Parameters
    ----------
    img : nibabel image
        A 3-D loading map (e.g. a volume of :func:`loadings_to_nifti`).
    title : str, optional
    bg_img : nibabel image or path, optional
        Anatomical background of the slices (default: nilearn's bundled
        MNI152 template, read from its file).
    cmap : str or matplotlib colormap, optional
        Default nilearn's ``"cold_hot"``.
    canvas : VolumeCanvas, optional
        A figure to draw into (the report draws every component into one;
        its ``cmap`` and labels are used). Default: a new figure.
    cbar_label : str, default="loading"
        What the colour bar shows, e.g. "loading (unit-norm component)".
    support_label : str, default="largest clusters"
        What the zoomed row shows, e.g. "certified support".

    Returns
    -------
    matplotlib.figure.Figure
        Zero voxels are transparent (the threshold lies just above zero:
        half the smallest non-zero magnitude); the colour scale is symmetric
        about zero. ``fig.neurospca_drawn`` holds the cut (mm), the peak
        voxel, the clusters zoomed on and the slices drawn.
    """
    import nibabel as nib

    data = np.asanyarray(img.dataobj)
    if data.ndim == 4 and data.shape[3] == 1:
        data = data[..., 0]
        img = nib.Nifti1Image(data, img.affine)
    if data.ndim != 3:
        raise ValueError(f"img must be a 3-D image (one component), got shape {data.shape}.")
    vmax, threshold = _symmetric_scale(data)
    if vmax == 0:
        return _empty_figure(title, "this component is identically zero")
    peak = np.unravel_index(np.argmax(np.abs(data)), data.shape)
    cut = img.affine[:3, :3] @ np.asarray(peak, dtype=np.float64) + img.affine[:3, 3]
    if canvas is None:
        canvas = VolumeCanvas(
            CMAP if cmap is None else cmap, cbar_label=cbar_label, support_label=support_label
        )
    return canvas.draw(img, cut, vmax, threshold, bg_img=bg_img, title=title)


# --------------------------------------------------------------------------
# surfaces
# --------------------------------------------------------------------------


def surface_background(coords, faces):
    """A sulcal shading map from a folded mesh (white or pial): convexity per vertex.

    For each vertex, the offset of the mean of its neighbours from it, along
    the vertex normal (positive in sulci, negative on gyral crowns), scaled to
    about [-1, 1]. Draw it on the inflated mesh of the same vertices.

    Parameters
    ----------
    coords : ndarray of shape (n_vertices, 3)
    faces : ndarray of shape (n_faces, 3)

    Returns
    -------
    ndarray of shape (n_vertices,)
    """
    coords = np.asarray(coords, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    n = coords.shape[0]
    a, b = faces.ravel(), faces[:, [1, 2, 0]].ravel()
    adj = sp.csr_matrix((np.ones(2 * a.size), (np.r_[a, b], np.r_[b, a])), shape=(n, n))
    adj.data[:] = 1.0
    deg = np.asarray(adj.sum(axis=1)).ravel()
    mean_nb = (adj @ coords) / np.maximum(deg, 1)[:, None]
    fn = np.cross(
        coords[faces[:, 1]] - coords[faces[:, 0]], coords[faces[:, 2]] - coords[faces[:, 0]]
    )
    normals = np.zeros_like(coords)
    for j in range(3):
        np.add.at(normals, faces[:, j], fn)
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    conv = np.einsum("ij,ij->i", mean_nb - coords, normals)
    scale = np.percentile(np.abs(conv), 95)
    return np.clip(conv / scale, -1, 1) if scale > 0 else conv


def start_pyvista_probe():
    """Start the probe of :func:`pyvista_available` in the background (returns at once).

    A command that will draw surfaces calls this before its fit, so that the
    probe (a new interpreter importing VTK and rendering: seconds) runs while
    the model is fitted; :func:`pyvista_available` then only collects it.

    Returns
    -------
    None
    """
    global _PROBE_RUN
    if _PYVISTA_OK is not None or _PROBE_RUN is not None or not _pyvista_installed():
        return
    env = dict(os.environ)
    env.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")
    try:
        _PROBE_RUN = subprocess.Popen(
            [sys.executable, "-c", _PROBE],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
    except OSError:
        _PROBE_RUN = None


def _pyvista_installed():
    if os.environ.get("NEUROSPCA_NO_PYVISTA"):
        return False
    import importlib.util

    return importlib.util.find_spec("pyvista") is not None


def pyvista_available():
    """Whether pyvista can render off-screen here (probed once, in a subprocess).

    Set ``NEUROSPCA_NO_PYVISTA=1`` to force the matplotlib fallback.

    Returns
    -------
    bool
    """
    global _PYVISTA_OK, _PROBE_RUN
    if _PYVISTA_OK is None:
        if not _pyvista_installed():
            _PYVISTA_OK = False
            return False
        start_pyvista_probe()
        run, _PROBE_RUN = _PROBE_RUN, None
        try:
            if run is None:
                raise OSError("the probe did not start")
            out, _ = run.communicate(timeout=120)
            _PYVISTA_OK = run.returncode == 0 and "ok" in out
        except (OSError, subprocess.SubprocessError):
            if run is not None:
                run.kill()
                run.communicate()
            _PYVISTA_OK = False
        if not _PYVISTA_OK:
            logger.info("pyvista off-screen rendering unavailable; using matplotlib.")
    return _PYVISTA_OK


_VIEWS = (
    ("left", "lateral", (-1, 0, 0)),
    ("left", "medial", (1, 0, 0)),
    ("right", "lateral", (1, 0, 0)),
    ("right", "medial", (-1, 0, 0)),
)


def _vertex_colors(values, bg, vmax, threshold, cmap):
    """RGB per vertex: grey shading where the loading is zero, colormap elsewhere."""
    from matplotlib.colors import Normalize

    shade = np.full(values.shape, 0.75) if bg is None else 0.7 - 0.2 * np.clip(bg, -1, 1)
    rgb = np.repeat(shade[:, None], 3, axis=1)
    on = np.abs(values) > threshold
    rgb[on] = cmap(Normalize(-vmax, vmax)(values[on]))[:, :3]
    return (rgb * 255).astype(np.uint8)


def _render_pyvista(meshes, maps, bgs, vmax, threshold, cmap, canvas=None):
    owned = canvas is None
    if owned:
        canvas = SurfaceCanvas(meshes)  # an ImportError with the install hint without pyvista
    colors = {
        h: _vertex_colors(maps[h], bgs.get(h), vmax, threshold, cmap) for h in ("left", "right")
    }
    try:
        shots = canvas.shots(colors, _VIEWS)
    finally:
        if owned:
            canvas.close()
    return _crop_shots(shots)


def _crop_shots(shots):
    """The shots cropped to one box around the ink of all of them."""
    # crop the white margins, with one box for all views so that scales stay equal
    ink = np.zeros(shots[0].shape[:2], dtype=bool)
    for shot in shots:
        ink |= np.any(shot[..., :3] < 250, axis=-1)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size and cols.size:
        shots = [
            shot[max(rows[0] - 4, 0) : rows[-1] + 5, max(cols[0] - 4, 0) : cols[-1] + 5]
            for shot in shots
        ]
    return shots


def plot_surface_component(
    maps,
    meshes,
    title=None,
    *,
    bg_maps=None,
    engine="auto",
    cmap=None,
    canvas=None,
    cbar_label="loading",
):
    """Lateral and medial views of one loading on both hemispheres.

    Parameters
    ----------
    maps : dict
        ``{"left": (n_vertices_left,), "right": (n_vertices_right,)}`` values
        of one component (e.g. a column of :func:`loadings_to_surface`).
    meshes : dict
        ``{"left": (coords, faces), "right": (coords, faces)}``: the surfaces
        to draw on (inflated or pial).
    title : str, optional
    bg_maps : dict, optional
        ``{"left": ..., "right": ...}`` background shading (sulcal depth or
        :func:`surface_background`), shown where the loading is zero.
    engine : {"auto", "pyvista", "matplotlib"}, default="auto"
        ``"auto"`` uses pyvista when :func:`pyvista_available`, else nilearn's
        matplotlib surface plots.
    cmap : str or matplotlib colormap, optional
        Default nilearn's ``"cold_hot"``.
    canvas : SurfaceCanvas, optional
        pyvista plotters of these ``meshes`` built once (the report draws
        every component with one); used by the pyvista engine only.
    cbar_label : str, default="loading"
        What the colour bar shows (its symmetric limits are added).

    Returns
    -------
    matplotlib.figure.Figure
        With either engine, vertices whose loading is exactly zero show the
        background shading only (grey when no ``bg_maps``), never a colour
        of the colormap.
    """
    if engine not in ("auto", "pyvista", "matplotlib"):
        raise ValueError(f"engine must be 'auto', 'pyvista' or 'matplotlib', got {engine!r}.")
    plt = _pyplot()
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    maps, meshes = _checked_surface_maps(maps, meshes)
    bgs = dict(bg_maps or {})
    vmax, threshold = _symmetric_scale(np.concatenate([maps["left"], maps["right"]]))
    if vmax == 0:
        return _empty_figure(title, "this component is identically zero")
    cmap = _surface_cmap(cmap)
    if engine == "auto":
        engine = "pyvista" if pyvista_available() else "matplotlib"
    fig = plt.figure(figsize=(12, 3.4))
    if engine == "pyvista":
        shots = _render_pyvista(meshes, maps, bgs, vmax, threshold, cmap, canvas)
        _show_shots(fig, shots)
    else:
        _draw_matplotlib_views(fig, maps, meshes, bgs, vmax, threshold, cmap)
    cax = fig.add_axes([0.915, 0.12, 0.012, 0.66])
    cbar = fig.colorbar(ScalarMappable(Normalize(-vmax, vmax), cmap), cax=cax)
    cbar.set_ticks([-vmax, 0.0, vmax])
    cbar.ax.set_yticklabels([f"{-vmax:.2g}", "0", f"{vmax:.2g}"])
    cbar.ax.tick_params(labelsize=8)
    cbar.set_label(f"{cbar_label}\nsymmetric limits \u00b1{vmax:.3g}", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=12)
    return fig


def surface_component_png(maps, meshes, canvas, *, bg_maps=None, cbar_label="loading", dpi=80):
    """PNG bytes of :func:`plot_surface_component`'s pyvista figure (default colour
    map), composed without matplotlib (:mod:`._surface_png`); None for a zero component.

    Parameters
    ----------
    maps, meshes, bg_maps, cbar_label
        As :func:`plot_surface_component`.
    canvas : SurfaceCanvas
        The report's pyvista plotter of these meshes.
    dpi : int, default=80

    Returns
    -------
    bytes or None
    """
    from ._surface_png import surface_figure_png, vertex_colors

    maps, meshes = _checked_surface_maps(maps, meshes)
    bgs = dict(bg_maps or {})
    vmax, threshold = _symmetric_scale(np.concatenate([maps["left"], maps["right"]]))
    if vmax == 0:
        return None
    colors = {h: vertex_colors(maps[h], bgs.get(h), vmax, threshold) for h in ("left", "right")}
    shots = _crop_shots(canvas.shots(colors, _VIEWS))
    titles = [f"{hemi} {view}" for hemi, view, _ in _VIEWS]
    return surface_figure_png(shots, titles, vmax, cbar_label, dpi)


def _checked_surface_maps(maps, meshes):
    """(maps as float arrays, meshes checked): one value per vertex of each hemisphere."""
    maps = {h: np.asarray(maps[h], dtype=np.float64) for h in ("left", "right")}
    from ..surface import check_plot_mesh  # a bad face index must never reach VTK

    meshes = {h: check_plot_mesh(*meshes[h], name=f"meshes['{h}']") for h in ("left", "right")}
    for h in ("left", "right"):
        if maps[h].shape != (meshes[h][0].shape[0],):
            raise ValueError(
                f"maps['{h}'] has shape {maps[h].shape}, expected "
                f"({meshes[h][0].shape[0]},) (one value per mesh vertex)."
            )
    return maps, meshes


def _surface_cmap(cmap):
    """A colormap object (None: nilearn's cold_hot; an unknown name: RdBu_r)."""
    from matplotlib import colormaps

    if cmap is not None and not isinstance(cmap, str):
        return cmap
    from ._slices import cold_hot

    name = CMAP if cmap is None else cmap
    if name == "cold_hot":
        return cold_hot()  # nilearn's colours, without importing nilearn
    return colormaps.get(name, colormaps["RdBu_r"])


def _show_shots(fig, shots):
    """The pyvista screenshots of :data:`_VIEWS` side by side in ``fig``."""
    for i, ((hemi, view, _), shot) in enumerate(zip(_VIEWS, shots, strict=True)):
        ax = fig.add_axes([i * 0.225, 0.0, 0.225, 0.9])
        ax.imshow(shot)
        ax.set_axis_off()
        ax.set_title(f"{hemi} {view}", fontsize=9)


def _draw_matplotlib_views(fig, maps, meshes, bgs, vmax, threshold, cmap):
    """The views of :data:`_VIEWS` drawn by nilearn's matplotlib surface plots in ``fig``."""
    plotting = _nilearn_plotting()
    for i, (hemi, view, _) in enumerate(_VIEWS):
        ax = fig.add_axes([i * 0.225, 0.0, 0.225, 0.9], projection="3d")
        coords, faces = meshes[hemi]
        plotting.plot_surf_stat_map(
            [np.asarray(coords), np.asarray(faces)],
            maps[hemi],
            bg_map=bgs.get(hemi),
            hemi=hemi,
            view=view,
            engine="matplotlib",
            cmap=cmap,
            colorbar=False,
            threshold=threshold,
            vmax=vmax,
            symmetric_cbar=True,
            alpha=1.0,
            axes=ax,
            figure=fig,
        )
        ax.set_title(f"{hemi} {view}", fontsize=9)
