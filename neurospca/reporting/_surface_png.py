"""The report's surface figure composed with Pillow: no matplotlib on its path.

A pyvista surface figure is four screenshots side by side, their titles and a
labelled colour bar: nothing there needs a plotting library once the shots are
taken. Composing them with Pillow (DejaVu Sans, matplotlib's own font file)
instead of a matplotlib figure saves the figure's layout and Agg draw (~0.3 s
CPU per component). It does not save importing matplotlib: pyvista imports
``matplotlib.pyplot`` itself (``pyvista.plotting.colors``). The layout is the one of
:func:`neurospca.reporting.plot_surface_component` (12 x 3.4 in, four panels,
titles "left lateral"..., a colour bar with ticks at -vmax, 0 and vmax labelled
with what it shows and its symmetric limits), which still draws the figure
for :func:`~neurospca.reporting.save_figures` and the matplotlib engine.

The colours are matplotlib's: :func:`cold_hot_lut` is the lookup table of
nilearn's ``cold_hot`` built from matplotlib's ``hot`` segments as
``LinearSegmentedColormap`` builds it, and :func:`vertex_colors` indexes it as
a matplotlib colour map does (tested equal, byte for byte).
"""

import importlib.util
import io
import os

import numpy as np

from ._png import COMPRESS_LEVEL, _crop

__all__ = ["cold_hot_lut", "vertex_colors", "surface_figure_png"]

#: matplotlib's ``hot`` colour map segments (``matplotlib._cm._hot_data``)
_HOT = {
    "red": ((0.0, 0.0416, 0.0416), (0.365079, 1.0, 1.0), (1.0, 1.0, 1.0)),
    "green": ((0.0, 0.0, 0.0), (0.365079, 0.0, 0.0), (0.746032, 1.0, 1.0), (1.0, 1.0, 1.0)),
    "blue": ((0.0, 0.0, 0.0), (0.746032, 0.0, 0.0), (1.0, 1.0, 1.0)),
}
#: panels of the four views, as fractions of the figure (left, bottom, width, height)
_PANEL = (0.225, 0.0, 0.225, 0.9)
_CBAR = (0.915, 0.12, 0.012, 0.66)
FIGSIZE = (12.0, 3.4)
_LUT = []
_FONTS = {}


def _segment_table(data, n):
    """``matplotlib.colors._create_lookup_table(n, data)`` (gamma 1)."""
    adata = np.array(data, dtype=np.float64)
    x, y0, y1 = adata[:, 0] * (n - 1), adata[:, 1], adata[:, 2]
    xind = (n - 1) * np.linspace(0, 1, n)
    ind = np.searchsorted(x, xind)[1:-1]
    distance = (xind[1:-1] - x[ind - 1]) / (x[ind] - x[ind - 1])
    lut = np.concatenate([[y1[0]], distance * (y0[ind] - y1[ind - 1]) + y1[ind - 1], [y0[-1]]])
    return np.clip(lut, 0.0, 1.0)


def cold_hot_lut():
    """nilearn's ``cold_hot`` colour map as a (256, 3) float table, without matplotlib.

    Returns
    -------
    ndarray of shape (256, 3)
    """
    if not _LUT:

        def channel(low, high):  # nilearn's _pigtailed_cmap(hot)
            return [(0.5 * (1 - p), c1, c2) for (p, c1, c2) in reversed(_HOT[low])] + [
                (0.5 * (1 + p), c1, c2) for (p, c1, c2) in _HOT[high]
            ]

        cdict = {"red": channel("blue", "red"), "green": channel("green", "green")}
        cdict["blue"] = channel("red", "blue")
        _LUT.append(np.stack([_segment_table(cdict[c], 256) for c in ("red", "green", "blue")], 1))
    return _LUT[0]


def _lut_index(values, vmax, n=256):
    """Rows of an ``n``-row table for ``values`` normalised to [-vmax, vmax] (as
    ``cmap(Normalize(-vmax, vmax)(values))``: ends clipped)."""
    xa = (np.asarray(values, dtype=np.float64) - (-vmax)) / (vmax - (-vmax)) * n
    xa[xa == n] = n - 1
    with np.errstate(invalid="ignore"):
        return np.clip(xa, -1, n).astype(int).clip(0, n - 1)


def vertex_colors(values, bg, vmax, threshold):
    """RGB bytes per vertex: grey shading where the loading is zero, ``cold_hot``
    elsewhere (:func:`neurospca.reporting.plotting._vertex_colors`, without matplotlib).

    Parameters
    ----------
    values : ndarray of shape (n_vertices,)
    bg : ndarray of shape (n_vertices,) or None
        Shading in [-1, 1] (None: flat grey).
    vmax, threshold : float

    Returns
    -------
    ndarray of shape (n_vertices, 3), uint8
    """
    shade = np.full(values.shape, 0.75) if bg is None else 0.7 - 0.2 * np.clip(bg, -1, 1)
    rgb = np.repeat(shade[:, None], 3, axis=1)
    on = np.abs(values) > threshold
    rgb[on] = cold_hot_lut()[_lut_index(values[on], vmax)]
    return (rgb * 255).astype(np.uint8)


def _font(px):
    """DejaVu Sans (matplotlib's font file) at ``px`` pixels; Pillow's own otherwise."""
    from PIL import ImageFont

    if px not in _FONTS:
        spec = importlib.util.find_spec("matplotlib")
        path = None
        if spec is not None and spec.submodule_search_locations:
            path = os.path.join(
                spec.submodule_search_locations[0], "mpl-data", "fonts", "ttf", "DejaVuSans.ttf"
            )
        try:
            _FONTS[px] = ImageFont.truetype(path, px)
        except (OSError, TypeError, ValueError):
            _FONTS[px] = ImageFont.load_default(px)
    return _FONTS[px]


def _box(frac, size):
    """Pixel box (x0, y0, x1, y1) of a figure-fraction rectangle (origin bottom left)."""
    w, h = size
    left, bottom, width, height = frac
    return (
        round(left * w),
        round((1 - bottom - height) * h),
        round((left + width) * w),
        round((1 - bottom) * h),
    )


def _paste_shots(canvas, draw, shots, titles, dpi):
    """Each shot scaled into its panel (aspect kept, centred), its title above it."""
    from PIL import Image

    font = _font(max(6, round(9 * dpi / 72)))
    for i, (shot, title) in enumerate(zip(shots, titles, strict=True)):
        x0, y0, x1, y1 = _box((i * _PANEL[0],) + _PANEL[1:], canvas.size)
        h, w = shot.shape[:2]
        scale = min((x1 - x0) / w, (y1 - y0) / h)
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        img = Image.fromarray(np.ascontiguousarray(shot[..., :3])).resize(size, Image.LANCZOS)
        left, top = x0 + (x1 - x0 - size[0]) // 2, y0 + (y1 - y0 - size[1]) // 2
        canvas.paste(img, (left, top))
        draw.text((left + size[0] / 2, top - 2), title, fill="black", font=font, anchor="md")


def _colorbar(canvas, draw, vmax, label, dpi):
    """The vertical colour bar: ``cold_hot`` from -vmax to vmax, three ticks, the label."""
    from PIL import Image, ImageDraw

    x0, y0, x1, y1 = _box(_CBAR, canvas.size)
    rows = np.linspace(1.0, 0.0, y1 - y0)  # top: +vmax
    colours = cold_hot_lut()[np.clip((rows * 256).astype(int), 0, 255)]
    bar = np.repeat((colours * 255).astype(np.uint8)[:, None, :], x1 - x0, axis=1)
    canvas.paste(Image.fromarray(np.ascontiguousarray(bar)), (x0, y0))
    draw.rectangle((x0, y0, x1, y1), outline="black", width=1)
    font = _font(max(6, round(8 * dpi / 72)))
    tick = max(2, round(3.5 * dpi / 72))
    widest = 0
    for y, text in ((y0, f"{vmax:.2g}"), ((y0 + y1) / 2, "0"), (y1, f"{-vmax:.2g}")):
        draw.line((x1, y, x1 + tick, y), fill="black", width=1)
        draw.text((x1 + tick + 2, y), text, fill="black", font=font, anchor="lm")
        widest = max(widest, draw.textlength(text, font=font))
    lines = f"{label}\nsymmetric limits \u00b1{vmax:.3g}"
    big = _font(max(6, round(9 * dpi / 72)))
    probe = draw.multiline_textbbox((0, 0), lines, font=big, align="center")
    text = Image.new("RGB", (int(np.ceil(probe[2])) + 4, int(np.ceil(probe[3])) + 4), "white")
    ImageDraw.Draw(text).multiline_text((2, 2), lines, fill="black", font=big, align="center")
    text = text.rotate(90, expand=True)  # reads bottom to top, as matplotlib's label
    x = round(x1 + tick + 6 + widest)
    canvas.paste(text, (x, round((y0 + y1) / 2 - text.size[1] / 2)))
    return x + text.size[0]


def surface_figure_png(shots, titles, vmax, label, dpi=80, title=None):
    """PNG bytes of the report's surface figure from pyvista ``shots``.

    Parameters
    ----------
    shots : list of ndarray (h, w, 3 or 4), uint8
        The views (cropped to one common box, as ``_render_pyvista`` returns them).
    titles : list of str
        One per shot ("left lateral", ...).
    vmax : float
        The symmetric colour limit.
    label : str
        What the colour bar shows (its limits are added).
    dpi : int, default=80
    title : str, optional
        Above the views.

    Returns
    -------
    bytes
    """
    from PIL import Image, ImageDraw

    size = (round(FIGSIZE[0] * dpi), round(FIGSIZE[1] * dpi))
    canvas = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(canvas)
    _paste_shots(canvas, draw, shots, titles, dpi)
    right = _colorbar(canvas, draw, float(vmax), label, dpi)
    if right > size[0]:  # a long label: widen the figure rather than cut it
        wider = Image.new("RGB", (right + 4, size[1]), "white")
        wider.paste(canvas, (0, 0))
        canvas = wider
    if title:
        draw = ImageDraw.Draw(canvas)
        font = _font(max(6, round(12 * dpi / 72)))
        draw.text((canvas.size[0] / 2, 2), title, fill="black", font=font, anchor="ma")
    rgb = _crop(np.asarray(canvas), round(0.1 * dpi))
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(
        buf, format="png", compress_level=COMPRESS_LEVEL, dpi=(dpi, dpi)
    )
    return buf.getvalue()
