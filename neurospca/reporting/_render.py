"""Figures to PNG quickly: one draw, a numpy crop, a fast encoder; canvases reused.

- :func:`encode_png`: the figure is drawn once by Agg, its white margins are
  cropped from the pixel buffer (what ``bbox_inches="tight"`` does with a
  second draw) and the pixels are written by Pillow at ``compress_level=1``
  (matplotlib's default is 6: slower, barely smaller on these figures).
- :class:`VolumeCanvas`: one figure whose glass-brain schematic (about 2,000
  outline patches, most of a glass brain's cost) is drawn once; each
  component adds its stat-map slices and its glass-brain overlay, is encoded,
  and those artists are removed again.
- :class:`SurfaceCanvas`: the pyvista plotters of both hemispheres are built
  once; each component only recolours the vertices and takes the four shots.
- :class:`FigureCache`: data URIs by a content hash of what a figure is drawn
  from, so that a redraw of an unchanged component is a dictionary look-up.
"""

import base64
import hashlib
import io
import logging
import os
from collections import OrderedDict

import numpy as np

logger = logging.getLogger("neurospca")

__all__ = [
    "encode_png",
    "png_data_uri",
    "digest",
    "image_digest",
    "FigureCache",
    "VolumeCanvas",
    "SurfaceCanvas",
    "ReportCanvases",
    "cached_uri",
    "component_figure",
    "component_images",
    "PARALLEL_MIN_FIGURES",
]

#: margin kept around the ink when cropping, in inches (as savefig's pad_inches)
_PAD_INCHES = 0.1
#: zlib level of the PNG writer (1: fastest)
COMPRESS_LEVEL = 1


def encode_png(fig, dpi=80, close=True):
    """PNG bytes of a matplotlib figure: one Agg draw, white margins cropped.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    dpi : int, default=80
    close : bool, default=True
        Close the figure afterwards (pyplot forgets it).

    Returns
    -------
    bytes
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    try:
        fig.set_dpi(dpi)
        canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
        canvas.draw()
        rgb = np.asarray(canvas.buffer_rgba())[..., :3]
        rgb = _crop(rgb, int(round(_PAD_INCHES * dpi)))
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(rgb)).save(
            buf, format="png", compress_level=COMPRESS_LEVEL
        )
    finally:
        if close:
            import matplotlib.pyplot as plt

            plt.close(fig)
    return buf.getvalue()


def _crop(rgb, pad):
    """The pixels inside the bounding box of everything that is not the background."""
    background = rgb[0, 0]
    ink = np.any(rgb != background, axis=-1)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size == 0:
        return rgb
    return rgb[
        max(rows[0] - pad, 0) : rows[-1] + pad + 1, max(cols[0] - pad, 0) : cols[-1] + pad + 1
    ]


def png_data_uri(png):
    """``data:image/png;base64,...`` of PNG bytes (str)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# --------------------------------------------------------------------------
# content hashes and the cache
# --------------------------------------------------------------------------


def digest(*parts):
    """A hex digest of arrays, strings, numbers and nested tuples/lists/dicts.

    Parameters
    ----------
    *parts : object
        ndarrays are hashed with their dtype and shape; paths are not opened
        (hash what a figure is drawn from, e.g. an image's data).

    Returns
    -------
    str
    """
    h = hashlib.blake2b(digest_size=16)
    _update(h, parts)
    return h.hexdigest()


def _update(h, obj):
    if isinstance(obj, np.ndarray):
        arr = np.ascontiguousarray(obj)
        h.update(f"nd{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.view(np.uint8).ravel() if arr.size else b"")
    elif isinstance(obj, dict):
        h.update(b"dict")
        for key in sorted(obj, key=str):
            _update(h, str(key))
            _update(h, obj[key])
    elif isinstance(obj, (tuple, list)):
        h.update(f"seq{len(obj)}".encode())
        for item in obj:
            _update(h, item)
    else:
        h.update(f"{type(obj).__name__}:{obj!r}".encode())


class FigureCache:
    """Data URIs of drawn figures by content hash (least recently used dropped first).

    Parameters
    ----------
    max_items : int, default=256
        Figures kept (a few hundred kB each).
    """

    def __init__(self, max_items=256):
        self.max_items = int(max_items)
        self._items = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key):
        """The cached data URI of ``key``.

        Parameters
        ----------
        key : str
            A content hash (:func:`digest`).

        Returns
        -------
        str or None
            None when the figure is not cached.
        """
        uri = self._items.get(key)
        if uri is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return uri

    def put(self, key, uri):
        """Store a figure.

        Parameters
        ----------
        key : str
            A content hash (:func:`digest`).
        uri : str
            The figure's data URI.

        Returns
        -------
        None
        """
        self._items[key] = uri
        self._items.move_to_end(key)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)

    def __len__(self):
        return len(self._items)


def cached_uri(cache, parts, draw):
    """``draw()`` (a data URI), or the one ``cache`` holds for ``parts`` (hashed)."""
    if cache is None:
        return draw()
    key = digest(*parts)
    uri = cache.get(key)
    if uri is None:
        uri = draw()
        cache.put(key, uri)
    return uri


def image_digest(img):
    """Content hash of a nibabel image, a path (name, size, mtime) or None (str)."""
    if img is None:
        return "default"
    if isinstance(img, (str, os.PathLike)):
        st = os.stat(img)
        return digest(os.path.abspath(os.fspath(img)), st.st_size, st.st_mtime_ns)
    return digest(np.asanyarray(img.dataobj), np.asarray(img.affine))


# --------------------------------------------------------------------------
# reusable canvases
# --------------------------------------------------------------------------


_BACKGROUND = []


def default_background():
    """nilearn's MNI152 template at its own 1 mm grid, white outside the brain.

    nilearn's default background resamples the 1 mm template to 2 mm in
    every new process (1-3 s here); this reads the file as it is (0.2 s) and
    looks the same: outside the brain nilearn masks the template (the axes
    show white), here those voxels hold the template's maximum (white in the
    gray colour map), so the colour limits and the dimming are unchanged.

    Returns
    -------
    nibabel.Nifti1Image
    """
    if not _BACKGROUND:
        import nibabel as nib
        from nilearn.datasets import load_mni152_template

        template = load_mni152_template(resolution=1)
        # a copy: nilearn may hand out a cached array, which must stay as it is
        data = np.array(template.get_fdata(dtype=np.float32), copy=True)
        data[data <= np.finfo(np.float32).eps] = data.max()
        _BACKGROUND.append(nib.Nifti1Image(data, template.affine))
    return _BACKGROUND[0]


class VolumeCanvas:
    """A volume-component figure whose glass-brain schematic is drawn only once.

    Left half: nilearn stat-map slices (``plot_stat_map``), new for each
    component (the cuts go through its peak). Right half: the glass brain
    (``plot_glass_brain`` with no image draws the outlines once); each
    component adds an overlay and a colour bar, removed after encoding. The
    default background is :func:`default_background` (no resampling).

    Parameters
    ----------
    cmap : str or matplotlib colormap
    figsize : (float, float), default=(11, 3.2)
    """

    def __init__(self, cmap, figsize=(11, 3.2)):
        from .plotting import _nilearn_plotting, _pyplot

        plt = _pyplot()
        self._plotting = _nilearn_plotting()
        self.cmap = cmap
        self.figure = plt.figure(figsize=figsize)
        ax = self.figure.add_axes([0.5, 0.0, 0.46, 0.9])
        self._glass = self._plotting.plot_glass_brain(
            None, display_mode="lzr", axes=ax, figure=self.figure, plot_abs=False
        )
        self._base_axes = list(self.figure.axes)
        self._base_images = {id(a): list(a.images) for a in self._base_axes}
        self._base_texts = list(self.figure.texts)

    def draw(self, img, cut, vmax, threshold, bg_img=None, title=None):
        """Draw one component (``cut``: world mm of the slices); returns the figure."""
        from matplotlib import colormaps
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        self.clear()
        fig = self.figure
        kwargs = (
            {"bg_img": default_background(), "black_bg": False}
            if bg_img is None
            else {"bg_img": bg_img}
        )
        ax = fig.add_axes([0.0, 0.0, 0.5, 0.9])
        self._plotting.plot_stat_map(
            img,
            cut_coords=tuple(cut),
            display_mode="ortho",
            axes=ax,
            figure=fig,
            threshold=threshold,
            vmax=vmax,
            cmap=self.cmap,
            symmetric_cbar=True,
            colorbar=True,
            draw_cross=False,
            annotate=True,
            **kwargs,
        )
        self._glass.add_overlay(
            img, threshold=threshold, vmin=-vmax, vmax=vmax, cmap=self.cmap, colorbar=False
        )
        cmap = colormaps[self.cmap] if isinstance(self.cmap, str) else self.cmap
        cax = fig.add_axes([0.955, 0.12, 0.008, 0.66])
        fig.colorbar(ScalarMappable(Normalize(-vmax, vmax), cmap), cax=cax, format="%.2g")
        cax.tick_params(labelsize=8)
        if title:  # a plain figure text: clear() removes it with the others
            fig.text(0.5, 0.99, title, ha="center", va="top", fontsize=12)
        return fig

    def clear(self):
        """Remove what :meth:`draw` added (the schematic stays)."""
        fig = self.figure
        for ax in list(fig.axes):
            if ax not in self._base_axes:
                ax.remove()
        for ax in self._base_axes:
            keep = self._base_images[id(ax)]
            for image in list(ax.images):
                if image not in keep:
                    image.remove()
        for text in list(fig.texts):
            if text not in self._base_texts:
                text.remove()

    def close(self):
        """Release the figure."""
        import matplotlib.pyplot as plt

        plt.close(self.figure)


class SurfaceCanvas:
    """pyvista plotters of both hemispheres, built once; each component recolours them.

    Parameters
    ----------
    meshes : dict
        ``{"left": (coords, faces), "right": (coords, faces)}``, checked.
    size : (int, int), default=(420, 320)
        Window size of each view.
    """

    def __init__(self, meshes, size=(420, 320)):
        os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")
        try:
            import pyvista as pv
        except ImportError:
            raise ImportError(
                'engine="pyvista" needs pyvista: pip install '
                '"neurospca[plotting]", or use engine="matplotlib".'
            ) from None

        pv.OFF_SCREEN = True
        self.size = size
        self._scenes = {}
        for hemi in ("left", "right"):
            coords, faces = meshes[hemi]
            cells = np.hstack([np.full((faces.shape[0], 1), 3), faces]).astype(np.int64).ravel()
            mesh = pv.PolyData(np.asarray(coords, dtype=np.float64), cells)
            mesh.point_data["rgb"] = np.zeros((mesh.n_points, 3), dtype=np.uint8)
            plotter = pv.Plotter(off_screen=True, window_size=size)
            plotter.set_background("white")
            plotter.add_mesh(mesh, scalars="rgb", rgb=True, smooth_shading=True)
            plotter.enable_parallel_projection()
            plotter.show(auto_close=False)  # the first render resets the camera: do it now
            self._scenes[hemi] = (plotter, mesh)

    def shots(self, colors, views):
        """Screenshots of ``views`` ((hemi, name, direction) triples), vertices coloured
        by ``colors`` ({"left": uint8 (n, 3), "right": ...}); list of RGB arrays."""
        size = self.size
        shots = []
        for hemi in ("left", "right"):
            plotter, mesh = self._scenes[hemi]
            mesh.point_data["rgb"][:] = colors[hemi]
            mesh.Modified()
            lo, hi = mesh.points.min(axis=0), mesh.points.max(axis=0)
            center = (lo + hi) / 2
            # the same scale for every view, fitting the y (front-back) and z extents
            scale = 0.5 * max(hi[2] - lo[2], (hi[1] - lo[1]) * size[1] / size[0]) * 1.05
            for h, _, direction in views:
                if h != hemi:
                    continue
                plotter.view_vector(direction, viewup=(0, 0, 1))
                plotter.camera.focal_point = tuple(center)
                plotter.camera.position = tuple(
                    center + 4 * float(np.max(hi - lo)) * np.asarray(direction, dtype=np.float64)
                )
                plotter.camera.parallel_scale = scale
                plotter.reset_camera_clipping_range()
                shots.append(plotter.screenshot(return_img=True))
        return shots

    def close(self):
        """Release the render windows."""
        for plotter, _ in self._scenes.values():
            plotter.close()
        self._scenes = {}


class ReportCanvases:
    """The canvases, content hashes and cache of one report's component figures.

    Parameters
    ----------
    space : VolumeMasker, Hemispheres or None
    meshes : dict or None
        Surface meshes (and ``bg_left``/``bg_right``) the report draws on.
    bg_img : image, path or None
    engine : {"auto", "pyvista", "matplotlib"}
    dpi : int
    cache : FigureCache, optional
        Figures already drawn (by content hash); new ones are added.
    """

    def __init__(self, space, meshes, bg_img, engine, dpi, cache=None):
        self.engine, self.dpi, self.cache = engine, int(dpi), cache
        self._volume = self._surface = None
        self._space_key = None
        if cache is not None:
            self._space_key = digest(
                _space_parts(space, meshes), image_digest(bg_img), engine, self.dpi
            )

    def key(self, kind, values):
        """Content hash of one figure (None when there is no cache)."""
        if self.cache is None:
            return None
        return digest(kind, np.asarray(values, dtype=np.float64), self._space_key)

    def volume(self, cmap):
        """The report's :class:`VolumeCanvas` (made on first use)."""
        if self._volume is None:
            self._volume = VolumeCanvas(cmap)
        return self._volume

    def surface(self, meshes):
        """The report's :class:`SurfaceCanvas` (pyvista engine only; None otherwise)."""
        import importlib

        from .plotting import _pyvista_installed, pyvista_available, start_pyvista_probe

        engine = self.engine
        if engine == "auto" and self._surface is None:
            start_pyvista_probe()  # (a no-op once probed) and, while it runs, import
            if _pyvista_installed():  # pyvista here: importing is safe, rendering may not be
                importlib.import_module("pyvista")
            engine = "pyvista" if pyvista_available() else "matplotlib"
        elif engine == "auto":
            engine = "pyvista"
        if engine != "pyvista":
            return None
        if self._surface is None:
            from ..surface import check_plot_mesh

            self._surface = SurfaceCanvas(
                {h: check_plot_mesh(*meshes[h], name=f"meshes['{h}']") for h in ("left", "right")}
            )
        return self._surface

    def encode(self, fig):
        """Data URI of ``fig``; a canvas figure is cleared for the next component."""
        if self._volume is not None and fig is self._volume.figure:
            uri = png_data_uri(encode_png(fig, self.dpi, close=False))
            self._volume.clear()
            return uri
        return png_data_uri(encode_png(fig, self.dpi))

    def close(self):
        """Release the canvases."""
        for canvas in (self._volume, self._surface):
            if canvas is not None:
                canvas.close()
        self._volume = self._surface = None


def _space_parts(space, meshes):
    """What a space's figures are drawn from, for the content hash."""
    parts = [type(space).__name__]
    mask_img = getattr(space, "mask_img", None)
    if mask_img is not None:
        parts += [np.asanyarray(mask_img.dataobj), np.asarray(mask_img.affine)]
    vertices = getattr(space, "vertices", None)  # Hemispheres: which vertex each column is
    if vertices is not None:
        parts += [tuple(np.asarray(v) for v in vertices), tuple(space.n_vertices)]
    if meshes is not None:
        parts.append(
            {
                str(k): (tuple(np.asarray(a) for a in v) if isinstance(v, tuple) else np.asarray(v))
                for k, v in meshes.items()
            }
        )
    return parts


# --------------------------------------------------------------------------
# the component figures of a report, in this process or in workers
# --------------------------------------------------------------------------

#: with ``n_jobs=None``, worker processes draw the component figures only from
#: this many figures on (starting a worker imports matplotlib and nilearn: ~2 s)
PARALLEL_MIN_FIGURES = 8


def component_figure(comp, k, space, meshes, surface_maps, bg_maps, bg_img, engine, canvases):
    """Data URI of component ``k``'s figure (None for surfaces without meshes)."""
    from ..masking import VolumeMasker, unmask
    from ..surface import Hemispheres
    from . import plotting

    key = canvases.key("component", comp)
    uri = None if key is None else canvases.cache.get(key)
    if uri is not None:
        return uri
    if isinstance(space, VolumeMasker):
        fig = plotting.plot_volume_component(
            unmask(comp, space.mask_img), None, bg_img=bg_img, canvas=canvases.volume(plotting.CMAP)
        )
    elif surface_maps is not None:
        maps = {h: surface_maps[h][:, k] for h in ("left", "right")}
        fig = plotting.plot_surface_component(
            maps, meshes, None, bg_maps=bg_maps, engine=engine, canvas=canvases.surface(meshes)
        )
    elif isinstance(space, Hemispheres):
        return None
    else:
        plt = plotting._pyplot()
        fig, ax = plt.subplots(figsize=(8, 2.2))
        ax.plot(comp, lw=0.8)
        ax.set_xlabel("feature")
        ax.set_ylabel("loading")
        fig.tight_layout()
    uri = canvases.encode(fig)
    if key is not None:
        canvases.cache.put(key, uri)
    return uri


def _draw_chunk(ks, comps, space, meshes, surface_maps, bg_maps, bg_img, engine, dpi):
    """Figures of components ``ks`` (one canvas for all of them): list of data URIs."""
    import time

    canvases = ReportCanvases(space, meshes, bg_img, engine, dpi)
    out = []
    try:
        for k, comp in zip(ks, comps):
            t0, c0 = time.perf_counter(), time.process_time()
            out.append(
                component_figure(
                    comp, k, space, meshes, surface_maps, bg_maps, bg_img, engine, canvases
                )
            )
            logger.info(
                "report: component %d drawn in %.2f s (CPU %.2f s)",
                k + 1,
                time.perf_counter() - t0,
                time.process_time() - c0,
            )
    finally:
        canvases.close()
    return out


def _n_workers(n_jobs, n_figures):
    if n_jobs is None:
        if n_figures < PARALLEL_MIN_FIGURES:
            return 1
        n_jobs = os.cpu_count() or 1
    if (
        isinstance(n_jobs, bool)
        or not isinstance(n_jobs, (int, np.integer))
        or n_jobs == 0
        or n_jobs < -1
    ):
        raise ValueError(
            f"n_jobs must be a positive int, -1 (one per core) or None, got {n_jobs!r}."
        )
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    return max(1, min(int(n_jobs), n_figures))


def component_images(
    comps, space, meshes, surface_maps, bg_maps, bg_img, engine, dpi, *, cache=None, n_jobs=None
):
    """Data URIs of every component's figure (None where nothing is drawn).

    Parameters
    ----------
    comps : ndarray of shape (n_components, n_features)
        The loadings drawn (certified view).
    space, meshes, surface_maps, bg_maps, bg_img, engine, dpi
        As :func:`neurospca.reporting.make_report` has them.
    cache : FigureCache, optional
        Figures found there are not redrawn; new ones are added.
    n_jobs : int, optional
        Worker processes (see :func:`_n_workers`); each draws a contiguous
        block of components on one canvas.

    Returns
    -------
    list of str or None
    """
    canvases = ReportCanvases(space, meshes, bg_img, engine, dpi, cache)
    images = [None] * len(comps)
    keys = [canvases.key("component", comp) for comp in comps]
    todo = []
    for k, key in enumerate(keys):
        hit = None if key is None else cache.get(key)
        if hit is None:
            todo.append(k)
        else:
            images[k] = hit
    workers = _n_workers(n_jobs, len(todo)) if todo else 1
    blocks = [list(b) for b in np.array_split(np.asarray(todo, dtype=int), workers) if b.size]
    args = (space, meshes, surface_maps, bg_maps, bg_img, engine, dpi)
    if workers > 1:
        from joblib import Parallel, delayed

        drawn = Parallel(n_jobs=workers, backend="loky")(
            delayed(_draw_chunk)(b, comps[b], *args) for b in blocks
        )
    else:
        drawn = [_draw_chunk(b, comps[b], *args) for b in blocks]
    for block, uris in zip(blocks, drawn):
        for k, uri in zip(block, uris):
            images[k] = uri
            if keys[k] is not None and uri is not None:
                cache.put(keys[k], uri)
    return images
