"""Volume component figures drawn from the arrays, for a paper.

One figure per component, three rows on a shared symmetric colour scale:

1. slices through the component's peak (sagittal, coronal, axial), large,
   over the background image and cropped to the brain, so that a cut low in
   the cerebellum still shows the brain it lies in;
2. a glass brain: the largest-magnitude loading along each projection
   (signed), over the brain's silhouette;
3. the largest clusters of the loadings drawn (the certified support in a
   report), each cut through its centre (the cluster voxel nearest its
   absolute-loading-weighted centroid) and zoomed to the cluster.

The colour bar is labelled with what is shown and its symmetric limits.

Everything is drawn with matplotlib ``imshow`` on arrays sampled from the
images (nearest neighbour, any affine): nilearn's plotting module is not
imported, and the default background is nilearn's MNI152 template read from
its file.
"""

import os

import numpy as np

__all__ = [
    "VolumeLayout",
    "cluster_centres",
    "clear_volume_axes",
    "draw_volume_figure",
    "make_volume_axes",
    "cold_hot",
    "resolve_cmap",
    "template_image",
    "volume_cuts",
]

#: (name, world axis cut, horizontal world axis, vertical world axis)
PLANES = (("sagittal", 0, 1, 2), ("coronal", 1, 0, 2), ("axial", 2, 0, 1))
#: clusters drawn in the zoomed row
N_CLUSTER_VIEWS = 3
#: margin (mm) around a zoomed cluster, and the smallest zoomed field of view (mm)
ZOOM_MARGIN, ZOOM_MIN = 10.0, 40.0
_TEMPLATE = []
_BRAINS = {}
_COLD_HOT = []


def cold_hot():
    """nilearn's ``cold_hot`` colour map (the same colours), without importing nilearn.

    The registered one when nilearn has registered it; otherwise an equal,
    unregistered copy (registering the name would make nilearn's own
    registration fail later in the process).

    Returns
    -------
    matplotlib.colors.Colormap
    """
    from matplotlib import colormaps
    from matplotlib.colors import LinearSegmentedColormap

    if "cold_hot" in colormaps:
        return colormaps["cold_hot"]
    if not _COLD_HOT:
        hot = colormaps["hot"]._segmentdata

        def channel(low, high):  # nilearn's _pigtailed_cmap(hot)
            return [(0.5 * (1 - p), c1, c2) for (p, c1, c2) in reversed(hot[low])] + [
                (0.5 * (1 + p), c1, c2) for (p, c1, c2) in hot[high]
            ]

        cdict = {"green": channel("green", "green"), "blue": channel("red", "blue")}
        cdict["red"] = channel("blue", "red")
        _COLD_HOT.append(LinearSegmentedColormap("cold_hot", cdict, 256))
    return _COLD_HOT[0]


def resolve_cmap(cmap):
    """A colour map object from a name (``"cold_hot"``: :func:`cold_hot`) or an object."""
    from matplotlib import colormaps

    if not isinstance(cmap, str):
        return cmap
    return cold_hot() if cmap == "cold_hot" else colormaps[cmap]


def template_image():
    """nilearn's 1 mm MNI152 template (skull-stripped T1, scaled to 0..1) from its file:
    what ``nilearn.datasets.load_mni152_template(resolution=1)`` gives, without
    importing nilearn.datasets (about 1 s).

    Returns
    -------
    nibabel.Nifti1Image
    """
    if not _TEMPLATE:
        import importlib.util

        import nibabel as nib

        spec = importlib.util.find_spec("nilearn")
        if spec is None:
            from .plotting import INSTALL_HINT

            raise ImportError(f"the default background needs nilearn: {INSTALL_HINT}.")
        path = os.path.join(
            spec.submodule_search_locations[0],
            "datasets",
            "data",
            "mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz",
        )
        img = nib.load(path)
        data = img.get_fdata(dtype=np.float32)
        data /= data.max()  # scaled to 0..1, as nilearn's load_mni152_template
        _TEMPLATE.append(nib.Nifti1Image(data, img.affine))
    return _TEMPLATE[0]


def _world(affine, ijk):
    return ijk @ affine[:3, :3].T + affine[:3, 3]


def _sample(data, affine, points, fill=np.nan):
    """Nearest-neighbour values of ``data`` at world ``points`` (..., 3); ``fill`` outside."""
    inv = np.linalg.inv(affine)
    ijk = np.rint(points @ inv[:3, :3].T + inv[:3, 3]).astype(np.int64)
    inside = np.all((ijk >= 0) & (ijk < np.asarray(data.shape[:3])), axis=-1)
    out = np.full(points.shape[:-1], fill, dtype=np.float64)
    idx = ijk[inside]
    out[inside] = data[idx[:, 0], idx[:, 1], idx[:, 2]]
    return out


class _Background:
    """A background image, its brain, the brain's bounding box and silhouettes."""

    def __init__(self, img):
        data = np.asarray(np.asanyarray(img.dataobj), dtype=np.float32)
        if data.ndim == 4:
            data = data[..., 0]
        self.data, self.affine = data, np.asarray(img.affine, dtype=np.float64)
        sub = data[::2, ::2, ::2]  # the scale from every 8th voxel: the same to 1 %
        positive = sub[np.isfinite(sub) & (sub > 0)]
        top = float(np.percentile(positive, 99)) if positive.size else 1.0
        self.brain = np.isfinite(data) & (data > 0.05 * top)
        self.vmin, self.vmax = -0.6 * top, 1.25 * top  # a light, dimmed grey scale
        lo_ijk, hi_ijk = [], []
        for axis in range(3):  # the brain's bounding box, from its projections
            on = np.flatnonzero(self.brain.any(axis=tuple(a for a in range(3) if a != axis)))
            lo_ijk.append(on[0] if on.size else 0)
            hi_ijk.append(on[-1] if on.size else data.shape[axis] - 1)
        corners = (
            np.array(np.meshgrid(*zip(lo_ijk, hi_ijk, strict=True), indexing="ij")).reshape(3, -1).T
        )
        corners = _world(self.affine, corners.astype(np.float64))
        self.lo, self.hi = corners.min(0), corners.max(0)
        self.step = float(np.min(np.sqrt((self.affine[:3, :3] ** 2).sum(axis=0))))
        self.shade = np.where(self.brain, data, np.nan).astype(np.float32)  # nan: not brain
        self._silhouettes = {}

    def silhouette(self, grid):
        """Brain silhouette (bool image) of a projection grid (see :func:`_mip_grid`)."""
        key = (grid.axis, grid.step, tuple(grid.lo), tuple(grid.shape))
        if key not in self._silhouettes:
            stride = max(1, int(round(grid.step / self.step)))
            ijk = np.argwhere(self.brain[::stride, ::stride, ::stride]) * stride
            out = np.zeros(grid.shape, dtype=bool)
            rows, cols, ok = grid.bins(_world(self.affine, ijk.astype(np.float64)))
            out[rows[ok], cols[ok]] = True
            self._silhouettes[key] = out
        return self._silhouettes[key]


def _background(bg_img):
    """The :class:`_Background` of an image, path or None (template), cached by identity."""
    if bg_img is None:
        bg_img = template_image()
    elif isinstance(bg_img, (str, os.PathLike)):
        import nibabel as nib

        bg_img = nib.load(bg_img)
    key = id(bg_img)
    if key not in _BRAINS or _BRAINS[key][0] is not bg_img:
        if len(_BRAINS) > 4:
            _BRAINS.clear()
        _BRAINS[key] = (bg_img, _Background(bg_img))
    return _BRAINS[key][1]


class _PlaneGrid:
    """A 2-D display grid (world mm) of one plane: pixel centres, extent, binning."""

    def __init__(self, axis, h, v, lo, hi, step, level=0.0):
        self.axis, self.h, self.v, self.step = axis, h, v, float(step)
        self.lo = np.array([lo[h], lo[v]], dtype=np.float64)
        n_h = max(int(np.ceil((hi[h] - lo[h]) / step)) + 1, 2)
        n_v = max(int(np.ceil((hi[v] - lo[v]) / step)) + 1, 2)
        self.shape = (n_v, n_h)
        self.level = float(level)

    def points(self):
        """World coordinates (n_v, n_h, 3) of the pixel centres, at the cut ``level``."""
        n_v, n_h = self.shape
        pts = np.empty((n_v, n_h, 3))
        pts[..., self.axis] = self.level
        pts[..., self.h] = self.lo[0] + self.step * np.arange(n_h)[None, :]
        pts[..., self.v] = self.lo[1] + self.step * np.arange(n_v)[:, None]
        return pts

    def extent(self):
        """``imshow`` extent (origin lower) in world mm."""
        half = self.step / 2
        n_v, n_h = self.shape
        return (
            self.lo[0] - half,
            self.lo[0] + self.step * (n_h - 1) + half,
            self.lo[1] - half,
            self.lo[1] + self.step * (n_v - 1) + half,
        )

    def bins(self, points):
        """(rows, cols, inside) pixel of each world point projected on the plane."""
        cols = np.rint((points[:, self.h] - self.lo[0]) / self.step).astype(np.int64)
        rows = np.rint((points[:, self.v] - self.lo[1]) / self.step).astype(np.int64)
        ok = (rows >= 0) & (rows < self.shape[0]) & (cols >= 0) & (cols < self.shape[1])
        return rows, cols, ok


def _nonzero_points(data, affine, threshold):
    """World coordinates and values of the loadings whose magnitude exceeds ``threshold``."""
    ijk = np.argwhere(np.abs(data) > threshold)
    return _world(affine, ijk.astype(np.float64)), data[tuple(ijk.T)]


def volume_cuts(data, affine):
    """World coordinates (mm) of the peak cut: the centre of the largest-magnitude voxel.

    Parameters
    ----------
    data : ndarray of shape (nx, ny, nz)
    affine : ndarray of shape (4, 4)

    Returns
    -------
    (ndarray of shape (3,), tuple of int)
        The cut in mm and the peak's voxel index.
    """
    peak = np.unravel_index(int(np.argmax(np.abs(data))), data.shape)
    return _world(np.asarray(affine, dtype=np.float64), np.asarray(peak, dtype=np.float64)), peak


def cluster_centres(data, affine, threshold, n=N_CLUSTER_VIEWS):
    """The ``n`` largest same-sign clusters (26-connectivity) of the loadings drawn.

    Parameters
    ----------
    data : ndarray of shape (nx, ny, nz)
    affine : ndarray of shape (4, 4)
    threshold : float
        Loadings of magnitude at most this are not drawn (and not clustered).
    n : int, default=3

    Returns
    -------
    list of dict
        ``sign``, ``size`` (voxels), ``centre`` (mm: the cluster voxel nearest
        its absolute-loading-weighted centroid, so a cut there goes through the
        cluster), ``lo``/``hi`` (its bounding box in mm), largest first.
    """
    from scipy import ndimage

    affine = np.asarray(affine, dtype=np.float64)
    structure = np.ones((3, 3, 3), dtype=bool)
    found = []
    for sign, on in (("+", data > threshold), ("-", data < -threshold)):
        labels, count = ndimage.label(on, structure=structure)
        if count == 0:
            continue
        sizes = np.bincount(labels.ravel(), minlength=count + 1)[1:]
        for c in np.argsort(-sizes, kind="stable")[:n]:
            found.append((int(sizes[c]), sign, labels == c + 1))
    found.sort(key=lambda t: -t[0])
    out = []
    for size, sign, member in found[:n]:
        ijk = np.argwhere(member).astype(np.float64)
        xyz = _world(affine, ijk)
        weight = np.abs(data[member])
        centroid = (xyz * weight[:, None]).sum(0) / weight.sum()
        centre = xyz[int(np.argmin(((xyz - centroid) ** 2).sum(1)))]
        out.append(
            {"sign": sign, "size": size, "centre": centre, "lo": xyz.min(0), "hi": xyz.max(0)}
        )
    return out


class VolumeLayout:
    """Where the rows of a volume figure go (figure fractions) and its size (inches)."""

    figsize = (11.0, 8.6)
    rows = ((0.53, 0.38), (0.27, 0.22), (0.0, 0.22))  # (bottom, height) of each row
    width = 0.87  # the colour bar lies to the right of this


def _panel_axes(fig, row, k, n=3, layout=VolumeLayout):
    bottom, height = layout.rows[row]
    w = layout.width / n
    ax = fig.add_axes([k * w + 0.01, bottom + 0.01, w - 0.02, height - 0.04])
    ax.set_axis_off()
    return ax


def _title(ax, text, fontsize):
    """A panel title as a plain text (no title layout pass at each draw)."""
    ax.text(0.5, 1.01, text, transform=ax.transAxes, ha="center", va="bottom", fontsize=fontsize)


def make_volume_axes(fig, cmap):
    """The panels of a volume figure, made once and reused (see :func:`clear_volume_axes`).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    cmap : Colormap

    Returns
    -------
    dict
        ``rows``: three lists of three axes; ``cbar``: the colour bar's axes
        (its gradient drawn once, on -1..1; ticks set per component).
    """
    rows = [[_panel_axes(fig, r, k) for k in range(3)] for r in range(3)]
    cax = fig.add_axes([0.905, 0.33, 0.014, 0.52])
    cax.imshow(
        np.linspace(-1, 1, 256)[:, None],
        cmap=cmap,
        vmin=-1,
        vmax=1,
        origin="lower",
        aspect="auto",
        extent=(0, 1, -1, 1),
    )
    cax.set_xticks([])
    cax.yaxis.tick_right()
    cax.yaxis.set_label_position("right")
    cax.set_yticks([-1, -0.5, 0, 0.5, 1])
    cax.tick_params(labelsize=8)
    return {"rows": rows, "cbar": cax, "base": list(cax.images)}


def clear_volume_axes(fig, axes):
    """Remove what one component added (images and texts); the panels stay."""
    for row in axes["rows"]:
        for ax in row:
            for artist in list(ax.images) + list(ax.texts):
                artist.remove()
    for text in list(fig.texts):
        text.remove()


def _orientation(ax, plane, extent):
    """L/R (coronal, axial) or P/A (sagittal) at the panel's sides (neurological view)."""
    left, right = ("P", "A") if plane == "sagittal" else ("L", "R")
    y = 0.5 * (extent[2] + extent[3])
    for x, text in ((extent[0], left), (extent[1], right)):
        ax.text(x, y, text, fontsize=9, color="#444444", ha="center", va="center")


def _draw_plane(ax, bg, grid, data, affine, norm, cmap, threshold):
    """Background and loadings of one plane of ``grid`` in ``ax``."""
    pts = grid.points()
    shade = np.ma.masked_invalid(_sample(bg.shade, bg.affine, pts))  # masked: not brain
    extent = grid.extent()
    ax.imshow(
        shade,
        cmap="gray",
        vmin=bg.vmin,
        vmax=bg.vmax,
        origin="lower",
        extent=extent,
        interpolation="nearest",
    )
    values = _sample(data, affine, pts)
    values = np.ma.masked_where(~(np.abs(np.nan_to_num(values)) > threshold), values)
    ax.imshow(values, cmap=cmap, norm=norm, origin="lower", extent=extent, interpolation="nearest")
    ax.set_xlim(extent[0], extent[1])
    ax.set_ylim(extent[2], extent[3])
    ax.set_aspect("equal")
    return values


def _slices_row(panels, bg, data, affine, cut, norm, cmap, threshold, lo, hi):
    """Row 1: the three planes through ``cut``; returns the loading arrays drawn."""
    drawn = {}
    for ax, (plane, axis, h, v) in zip(panels, PLANES, strict=True):
        grid = _PlaneGrid(axis, h, v, lo, hi, bg.step, level=cut[axis])
        drawn[plane] = _draw_plane(ax, bg, grid, data, affine, norm, cmap, threshold)
        _orientation(ax, plane, grid.extent())
        _title(ax, f"{plane}, {'xyz'[axis]} = {cut[axis]:.0f} mm", 10)
    return drawn


def _mip(grid, data, affine, threshold):
    """Signed largest-magnitude loading along the grid's axis, per pixel (nan: none)."""
    xyz, vals = _nonzero_points(data, affine, threshold)
    out = np.full(grid.shape, np.nan)
    if vals.size == 0:
        return out
    rows, cols, ok = grid.bins(xyz)
    rows, cols, vals = rows[ok], cols[ok], vals[ok]
    order = np.argsort(np.abs(vals), kind="stable")  # the largest magnitude is written last
    flat = np.full(out.size, np.nan)
    idx = rows[order] * grid.shape[1] + cols[order]
    _, last = np.unique(idx[::-1], return_index=True)
    keep = idx.size - 1 - last
    flat[idx[keep]] = vals[order][keep]
    return flat.reshape(grid.shape)


def glass_grids(bg, affine):
    """The glass brain's three projection grids of images on ``affine`` over a background.

    One grid per background and voxel size: its silhouettes are computed once
    (:meth:`_Background.silhouette`), by the first figure or ahead of it
    (:func:`neurospca.reporting._warmup.prepare_volume_report`).

    Parameters
    ----------
    bg : _Background
    affine : ndarray of shape (4, 4)
        The drawn image's affine (its voxel size sets the grids' step).

    Returns
    -------
    list of _PlaneGrid
        Sagittal, coronal and axial (the order of ``PLANES``).
    """
    step = float(np.max(np.sqrt((np.asarray(affine)[:3, :3] ** 2).sum(axis=0))))
    step = max(step, bg.step)
    lo, hi = bg.lo - 10, bg.hi + 10
    return [_PlaneGrid(axis, h, v, lo, hi, step) for (_, axis, h, v) in PLANES]


def _glass_row(panels, bg, data, affine, norm, cmap, threshold, lo, hi):
    """Row 2: largest-magnitude projections over the brain's silhouette."""
    grids = glass_grids(bg, affine)
    for ax, (plane, _, _, _), grid in zip(panels, PLANES, grids, strict=True):
        sil = bg.silhouette(grid).astype(np.float64)
        extent = grid.extent()
        ax.imshow(
            np.ma.masked_where(sil == 0, sil),
            cmap="Greys",
            vmin=0,
            vmax=6,
            origin="lower",
            extent=extent,
            interpolation="bilinear",
        )
        mip = _mip(grid, data, affine, threshold)
        ax.imshow(
            np.ma.masked_invalid(mip),
            cmap=cmap,
            norm=norm,
            origin="lower",
            extent=extent,
            interpolation="nearest",
        )
        ax.set_xlim(extent[0], extent[1])
        ax.set_ylim(extent[2], extent[3])
        ax.set_aspect("equal")
        _orientation(ax, plane, extent)
        _title(ax, f"glass brain, {plane} projection", 9)


def _cluster_row(fig, panels, bg, data, affine, norm, cmap, threshold, clusters, support_label):
    """Row 3: each large cluster's axial cut through its centre, zoomed to it."""
    for ax, c in zip(panels, clusters, strict=False):
        k = panels.index(ax)
        mid, half = (c["lo"] + c["hi"]) / 2, (c["hi"] - c["lo"]) / 2 + ZOOM_MARGIN
        half = np.maximum(half, ZOOM_MIN / 2)
        grid = _PlaneGrid(2, 0, 1, mid - half, mid + half, bg.step / 2, level=c["centre"][2])
        _draw_plane(ax, bg, grid, data, affine, norm, cmap, threshold)
        x, y, z = (f"{v:.0f}" for v in c["centre"])
        _title(
            ax,
            f"cluster {k + 1} ({c['sign']}, {c['size']:,} vox), axial z = {z}\n"
            f"centre ({x}, {y}, {z}) mm",
            9,
        )
    if not clusters:
        panels[1].text(
            0.5,
            0.5,
            "no cluster to zoom on",
            transform=panels[1].transAxes,
            ha="center",
            va="center",
            fontsize=10,
        )
    fig.text(0.005, 0.235, f"zoom: {support_label}", fontsize=9, rotation=90, va="center")


def _colorbar(cax, label, vmax):
    """Tick labels (the gradient spans -vmax..vmax) and the label of the colour bar."""
    cax.set_yticklabels([f"{t:.2g}" for t in (-vmax, -vmax / 2, 0.0, vmax / 2, vmax)])
    cax.set_ylabel(f"{label}\nsymmetric limits \u00b1{vmax:.3g}", fontsize=9)


def draw_volume_figure(
    fig,
    img,
    vmax,
    threshold,
    *,
    bg_img=None,
    cmap="cold_hot",
    title=None,
    cbar_label="loading",
    support_label="largest clusters",
    cut=None,
    axes=None,
):
    """Draw one component into ``fig`` (three rows; see the module docstring).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Empty (or cleared), of size :attr:`VolumeLayout.figsize`.
    img : nibabel image
        The 3-D loading map.
    vmax, threshold : float
        Symmetric colour limit; loadings of magnitude at most ``threshold``
        are transparent.
    bg_img : nibabel image, path or None
        Background (default: :func:`template_image`).
    cmap : str or Colormap
    title : str, optional
    cbar_label : str
        What the colour bar shows.
    support_label : str
        What the zoomed row shows (e.g. "certified support, largest clusters").
    cut : array-like of shape (3,), optional
        World mm of the slices (default: the peak, :func:`volume_cuts`).
    axes : dict, optional
        The panels of :func:`make_volume_axes` (cleared); default new ones.

    Returns
    -------
    dict
        ``cut`` (mm), ``peak`` (voxel index), ``clusters``
        (:func:`cluster_centres`) and ``slices`` (the loading arrays drawn in
        row 1, by plane name; masked where transparent).
    """
    from matplotlib.colors import Normalize

    cmap = resolve_cmap(cmap)
    data = np.asarray(np.asanyarray(img.dataobj), dtype=np.float64)
    affine = np.asarray(img.affine, dtype=np.float64)
    bg = _background(bg_img)
    peak_cut, peak = volume_cuts(data, affine)
    cut = peak_cut if cut is None else np.asarray(cut, dtype=np.float64)
    xyz, _ = _nonzero_points(data, affine, threshold)
    lo = np.minimum(bg.lo, xyz.min(0)) - 4 if xyz.size else bg.lo - 4
    hi = np.maximum(bg.hi, xyz.max(0)) + 4 if xyz.size else bg.hi + 4
    norm = Normalize(-vmax, vmax)
    axes = make_volume_axes(fig, cmap) if axes is None else axes
    rows = axes["rows"]
    slices = _slices_row(rows[0], bg, data, affine, cut, norm, cmap, threshold, lo, hi)
    _glass_row(rows[1], bg, data, affine, norm, cmap, threshold, lo, hi)
    clusters = cluster_centres(data, affine, threshold)
    _cluster_row(fig, rows[2], bg, data, affine, norm, cmap, threshold, clusters, support_label)
    _colorbar(axes["cbar"], cbar_label, vmax)
    if title:
        fig.text(0.45, 0.995, title, ha="center", va="top", fontsize=12)
    return {"cut": cut, "peak": peak, "clusters": clusters, "slices": slices}
