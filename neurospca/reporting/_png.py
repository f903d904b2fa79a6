"""Figures to PNG quickly, and the content hashes that let a report reuse them.

- :func:`encode_png`: the figure is drawn once by Agg, its white margins are
  cropped from the pixel buffer (what ``bbox_inches="tight"`` does with a
  second draw) and the pixels are written by Pillow at ``compress_level=1``
  (matplotlib's default is 6: slower, barely smaller on these figures).
- :class:`FigureCache`: data URIs by a content hash of what a figure is drawn
  from (:func:`digest`), so that a redraw of an unchanged component is a
  dictionary look-up.
"""

import base64
import hashlib
import io
import os
from collections import OrderedDict

import numpy as np

__all__ = [
    "encode_png",
    "png_data_uri",
    "digest",
    "image_digest",
    "FigureCache",
    "cached_uri",
    "COMPRESS_LEVEL",
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
        rgba = np.asarray(canvas.buffer_rgba())
        rgb = _crop(rgba, int(round(_PAD_INCHES * dpi)))[..., :3]
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
    """The pixels inside the bounding box of everything that is not the background.

    ``rgb``: (height, width, 3) or (height, width, 4) uint8; with 4 channels (an Agg
    buffer) only the colour is compared, one 32-bit word per pixel (a third of the
    time of comparing three channels and reducing them).
    """
    if rgb.ndim == 3 and rgb.shape[2] == 4 and rgb.dtype == np.uint8 and rgb.flags.c_contiguous:
        colour = rgb.view("<u4")[..., 0] & np.uint32(0x00FFFFFF)  # R, G, B bytes; alpha out
        ink = colour != colour[0, 0]
    else:
        ink = np.any(rgb != rgb[0, 0], axis=-1)
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
