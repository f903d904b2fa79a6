"""Canvases reused across a report's component figures.

- :class:`VolumeCanvas`: one figure every volume component is drawn into
  (:mod:`._slices`: slices, glass brain, zoomed clusters), cleared in
  between; the background's brain and silhouettes are computed once.
- :class:`SurfaceCanvas`: one pyvista plotter holding both hemispheres is
  built once; each component only recolours the vertices and takes the four
  shots (``engine="pyvista"``; ``"auto"`` draws the same views with numpy,
  :mod:`._raster`).
- :class:`ReportCanvases`: both, with the content hashes and the cache of one
  report's figures.
"""

import os

import numpy as np

from ._png import digest, encode_png, image_digest, png_data_uri

__all__ = [
    "default_background",
    "prepare_volume_canvas",
    "VolumeCanvas",
    "SurfaceCanvas",
    "ReportCanvases",
]

_BACKGROUND = []

#: ``(cmap, canvas)``: a volume canvas made and drawn once ahead of a report
#: (:func:`prepare_volume_canvas`), taken by the next report's first volume figure
_SPARE = []


def prepare_volume_canvas(cmap="cold_hot"):
    """Make a volume canvas and draw one blob on it (then clear it), ahead of a report.

    A canvas's first figure costs ~0.15 s CPU more than the next ones (making
    the panels, the first layout of their texts); the report worker does it
    while the command fits, and its forked figure child inherits the canvas.
    The report's first volume figure is then drawn as the later ones are: on a
    canvas that already drew and was cleared (:meth:`VolumeCanvas.clear`).

    Parameters
    ----------
    cmap : str, default="cold_hot"
        The report's colour map (:data:`neurospca.reporting.plotting.CMAP`).

    Returns
    -------
    VolumeCanvas
    """
    import nibabel as nib

    from .plotting import plot_volume_component

    canvas = VolumeCanvas(cmap)
    grid = np.indices((19, 23, 19), dtype=np.float64)  # 8 mm voxels around the MNI origin
    blob = np.exp(-((grid - np.array([9, 13, 9])[:, None, None, None]) ** 2).sum(0) / 4.0)
    affine = np.diag([8.0, 8.0, 8.0, 1.0])
    affine[:3, 3] = (-72.0, -104.0, -72.0)
    fig = plot_volume_component(nib.Nifti1Image(blob, affine), None, canvas=canvas)
    encode_png(fig, 80, close=False)
    canvas.clear()
    _SPARE[:] = [(cmap, canvas)]
    return canvas


def _volume_canvas(cmap, labels):
    """The spare canvas of :func:`prepare_volume_canvas` (same colour map), else a new one."""
    if _SPARE and _SPARE[0][0] == cmap:
        canvas = _SPARE.pop()[1]
        canvas.cbar_label = labels.get("cbar_label", "loading")
        canvas.support_label = labels.get("support_label", "largest clusters")
        return canvas
    return VolumeCanvas(cmap, **labels)


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

        from ._slices import template_image

        template = template_image()  # its file, without importing nilearn.datasets
        # a copy: nilearn may hand out a cached array, which must stay as it is
        data = np.array(template.get_fdata(dtype=np.float32), copy=True)
        data[data <= np.finfo(np.float32).eps] = data.max()
        _BACKGROUND.append(nib.Nifti1Image(data, template.affine))
    return _BACKGROUND[0]


class VolumeCanvas:
    """The figure a report draws every volume component into (cleared in between).

    The figure is drawn by :func:`neurospca.reporting._slices.draw_volume_figure`
    (slices through the peak, glass brain, zoomed clusters, labelled colour
    bar); the background's brain, bounding box and silhouettes are computed
    once per background and reused.

    Parameters
    ----------
    cmap : str or matplotlib colormap
    figsize : (float, float), optional
        Default :attr:`~neurospca.reporting._slices.VolumeLayout.figsize`.
    cbar_label : str, default="loading"
        What the colour bar shows.
    support_label : str, default="largest clusters"
        What the zoomed row shows.
    """

    def __init__(self, cmap, figsize=None, cbar_label="loading", support_label="largest clusters"):
        from ._slices import VolumeLayout, make_volume_axes, resolve_cmap
        from .plotting import _pyplot

        plt = _pyplot()
        self.cmap = resolve_cmap(cmap)
        self.cbar_label, self.support_label = cbar_label, support_label
        self.figure = plt.figure(figsize=figsize or VolumeLayout.figsize)
        self.drawn = None
        self._axes = make_volume_axes(self.figure, self.cmap)  # the panels, kept

    def draw(self, img, cut, vmax, threshold, bg_img=None, title=None):
        """Draw one component (``cut``: world mm of the slices); returns the figure.

        What was drawn (cut, peak voxel, clusters, slices) is kept in ``drawn``
        and on the figure as ``neurospca_drawn``.
        """
        from ._slices import draw_volume_figure

        self.clear()
        self.drawn = draw_volume_figure(
            self.figure,
            img,
            vmax,
            threshold,
            bg_img=bg_img,
            cmap=self.cmap,
            title=title,
            cbar_label=self.cbar_label,
            support_label=self.support_label,
            cut=cut,
            axes=self._axes,
        )
        self.figure.neurospca_drawn = self.drawn
        return self.figure

    def clear(self):
        """Remove what :meth:`draw` added for one component (the panels stay)."""
        from ._slices import clear_volume_axes

        clear_volume_axes(self.figure, self._axes)

    def close(self):
        """Release the figure."""
        import matplotlib.pyplot as plt

        plt.close(self.figure)


class SurfaceCanvas:
    """One off-screen pyvista plotter holding both hemispheres, built once; each
    component recolours the vertices and takes the shots, one hemisphere shown at a
    time (one render window: one OpenGL context to create, not two).

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
        self._plotter = pv.Plotter(off_screen=True, window_size=size)
        self._plotter.set_background("white")
        self._scenes = {}
        for hemi in ("left", "right"):
            coords, faces = meshes[hemi]
            cells = np.hstack([np.full((faces.shape[0], 1), 3), faces]).astype(np.int64).ravel()
            mesh = pv.PolyData(np.asarray(coords, dtype=np.float64), cells)
            mesh.point_data["rgb"] = np.zeros((mesh.n_points, 3), dtype=np.uint8)
            actor = self._plotter.add_mesh(mesh, scalars="rgb", rgb=True, smooth_shading=True)
            self._scenes[hemi] = (actor, mesh)
        self._plotter.enable_parallel_projection()
        self._plotter.show(auto_close=False)  # the first render resets the camera: do it now

    def shots(self, colors, views):
        """Screenshots of ``views`` ((hemi, name, direction) triples), vertices coloured
        by ``colors`` ({"left": uint8 (n, 3), "right": ...}); list of RGB arrays."""
        size, plotter = self.size, self._plotter
        shots = []
        for hemi in ("left", "right"):
            for other, (actor, _) in self._scenes.items():
                actor.SetVisibility(other == hemi)
            mesh = self._scenes[hemi][1]
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
        """Release the render window."""
        if self._plotter is not None:
            self._plotter.close()
        self._plotter, self._scenes = None, {}


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
    labels : dict, optional
        ``cbar_label`` (what the colour bars show) and ``support_label`` (what
        the zoomed view shows) of every component figure.
    """

    def __init__(self, space, meshes, bg_img, engine, dpi, cache=None, labels=None):
        self.engine, self.dpi, self.cache = engine, int(dpi), cache
        self.labels = dict(labels or {})
        self._volume = self._surface = None
        self._space_key = None
        if cache is not None:
            self._space_key = digest(
                _space_parts(space, meshes),
                image_digest(bg_img),
                engine,
                self.dpi,
                sorted(self.labels.items()),
            )

    def key(self, kind, values):
        """Content hash of one figure (None when there is no cache)."""
        if self.cache is None:
            return None
        return digest(kind, np.asarray(values, dtype=np.float64), self._space_key)

    def volume(self, cmap):
        """The report's :class:`VolumeCanvas` (made on first use)."""
        if self._volume is None:
            self._volume = _volume_canvas(cmap, self.labels)
        return self._volume

    def surface(self, meshes):
        """The report's surface canvas: :class:`~neurospca.reporting._raster.RasterSurfaceCanvas`
        (numpy) for ``engine="auto"``, :class:`SurfaceCanvas` for ``"pyvista"``, None
        for ``"matplotlib"`` (made on first use)."""
        if self.engine == "matplotlib":
            return None
        if self._surface is None:
            from ..surface import check_plot_mesh

            checked = {
                h: check_plot_mesh(*meshes[h], name=f"meshes['{h}']") for h in ("left", "right")
            }
            if self.engine == "pyvista":
                self._surface = SurfaceCanvas(checked)
            else:
                from ._raster import RasterSurfaceCanvas

                self._surface = RasterSurfaceCanvas(checked)
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
