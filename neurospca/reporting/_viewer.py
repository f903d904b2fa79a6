"""The report's interactive viewer: slices of a volume, or both hemispheres' meshes.

The viewer is one small script shipped with the package
(``reporting/assets/viewer.js``, BSD-3-Clause as the package, its licence
beside it), pinned by its SHA-256 (:data:`VIEWER_SHA256`, checked each time it
is read) and put inline in the page, where the report's Content-Security-Policy
allows it by that hash and nothing else (no network, no other script). Volumes
are shown as three orthogonal slices (click or drag to move the cut, the wheel
to scroll through a panel's slices; the cut's world coordinates and loading are
shown); surfaces as both hemispheres drawn with WebGL (a small z-buffer
rasteriser on a 2-D canvas when WebGL is missing), drag to rotate, wheel to
zoom, preset views, hemisphere toggles, a click reads a vertex (its anatomical
coordinates when ``surface_coords`` are given, and its loading).

What it draws is embedded once: the background (cropped to the mask's box) or
the meshes (coordinates on a 16-bit grid of their bounding box, faces, and the
anatomical coordinates to 0.1 mm, as delta-coded byte planes:
:func:`pack_ints`) and per component the loadings quantised to 8 bits (``q =
round(127 v / max|v|)``; a non-zero loading is never rounded to zero, so the
support shown is the support), in-mask voxels only, each deflated and base64
encoded. The browser inflates them with ``DecompressionStream``.

Why the package's own script and not a vendored viewer: nilearn's
brainsprite.js (MIT, 12 KB, ``view_img``) reads a voxel's value back from its
colour, which the report's colour map (nilearn's cold_hot, white at both ends)
cannot tell apart, and needs one PNG sprite per component; nilearn's surface
views need plotly (1.4 MB) and niivue is 2.3 MB, more than the data. This one
is one file of about 420 lines without dependencies, under the package's own
licence, so nothing third-party is shipped.
"""

import base64
import hashlib
import json
import zlib
from importlib import resources

import numpy as np

from ..masking import VolumeMasker
from ..surface import Hemispheres

__all__ = [
    "VIEWER_FILE",
    "VIEWER_VERSION",
    "VIEWER_SHA256",
    "check_interactive",
    "csp_hash",
    "pack_ints",
    "quantise",
    "surface_data",
    "viewer_script",
    "viewer_section",
    "volume_data",
]

#: the viewer's file in the package, its version and its pinned SHA-256 (hex)
VIEWER_FILE = "assets/viewer.js"
VIEWER_VERSION = "1.0.0"
VIEWER_SHA256 = "b2b9da5b8ddb4cb0c4e26c5f47944a6a5ee744c3f6ed3f88e29fcf00a30fa02a"

#: largest quantised magnitude (int8)
LEVELS = 127


def check_interactive(interactive):
    """``interactive`` must be a bool (TypeError naming it otherwise)."""
    if not isinstance(interactive, (bool, np.bool_)):
        raise TypeError(f"interactive must be True or False, got {type(interactive).__name__}.")
    return bool(interactive)


def viewer_script():
    """The viewer's source, checked against :data:`VIEWER_SHA256`.

    Raises
    ------
    RuntimeError
        If the shipped file is not the pinned one (an edited installation).
    """
    text = resources.files("neurospca.reporting").joinpath(VIEWER_FILE).read_text("utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if digest != VIEWER_SHA256:
        raise RuntimeError(
            f"the report viewer {VIEWER_FILE} has SHA-256 {digest}, not the pinned "
            f"{VIEWER_SHA256}: reinstall neurospca."
        )
    if "</script" in text.lower():
        raise RuntimeError(f"{VIEWER_FILE} must not contain '</script'.")
    return text


def csp_hash(script):
    """The Content-Security-Policy source allowing one inline script: ``'sha256-...'``."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _pack(arr):
    """Deflated (zlib) and base64-encoded bytes of an array (little-endian)."""
    return base64.b64encode(zlib.compress(np.ascontiguousarray(arr).tobytes(), 6)).decode("ascii")


def pack_ints(values, size):
    """Integers of shape (n, cols) packed for the viewer: each column delta-coded
    modulo ``2**(8 size)``, the little-endian bytes split into planes (all low bytes,
    then the next...), deflated and base64-encoded. Neighbouring vertices and faces
    have close indices and coordinates: the deltas' high bytes are mostly 0 or 255,
    which deflate well (fsaverage5 faces: 37 KB instead of 96 KB per hemisphere).

    Parameters
    ----------
    values : array-like of int, shape (n, cols)
    size : {2, 4}
        Bytes per value (values are taken modulo ``2**(8 size)``).

    Returns
    -------
    str
    """
    mod = 1 << (8 * size)
    cols = np.asarray(values, dtype=np.int64).reshape(len(values), -1).T % mod
    deltas = np.diff(cols, axis=1, prepend=0) % mod
    items = deltas.astype(f"<u{size}").ravel()
    return _pack(items.view(np.uint8).reshape(-1, size).T)


def quantise(values, scale):
    """8-bit loadings: ``round(127 v / scale)``, non-zero values never rounded to zero.

    Parameters
    ----------
    values : ndarray
    scale : float
        The largest magnitude (> 0).

    Returns
    -------
    ndarray of int8
    """
    values = np.asarray(values, dtype=np.float64)
    q = np.clip(np.rint(values / scale * LEVELS), -LEVELS, LEVELS)
    small = (q == 0) & (values != 0) & np.isfinite(values)
    q[small] = np.sign(values[small])
    q[~np.isfinite(values)] = 0
    return q.astype(np.int8)


def _scale(values):
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    return top if top > 0 else 1.0


def _lut():
    """The colour map (nilearn's cold_hot, as the static figures) as 256 RGB bytes."""
    from ._slices import cold_hot  # nilearn's colours, without importing nilearn.plotting

    rgb = np.asarray(cold_hot()(np.linspace(0.0, 1.0, 256)))[:, :3]
    return [int(v) for v in np.rint(255 * rgb).ravel()]


#: the default background on a viewer's grid, by (shape, affine): a report redrawn
#: in the same process does not sample it again
_DEFAULT_BACKGROUNDS = {}


def _background(bg_img, affine, shape):
    """The background sampled (linear, 0 outside it) at the voxels of a grid.

    Parameters
    ----------
    bg_img : nibabel image, path or None
        None: nilearn's 1 mm MNI152 template as stored.
    affine : ndarray of shape (4, 4)
        The grid's voxel-to-world affine.
    shape : tuple of int

    Returns
    -------
    ndarray of shape ``shape``
    """
    import nibabel as nib
    from scipy.ndimage import map_coordinates

    key = (tuple(shape), np.asarray(affine, dtype=np.float64).tobytes())
    if bg_img is None and key in _DEFAULT_BACKGROUNDS:
        return _DEFAULT_BACKGROUNDS[key]
    if bg_img is None:
        from ._slices import template_image

        img = template_image()  # nilearn's 1 mm template, its file: no nilearn.datasets
    else:
        img = bg_img if isinstance(bg_img, nib.spatialimages.SpatialImage) else nib.load(bg_img)
    data = np.asarray(img.dataobj, dtype=np.float32)
    data = data.reshape(data.shape[:3] + (-1,))[..., 0]  # a 4-D image: its first volume
    to_voxels = np.linalg.inv(img.affine) @ affine
    ijk = np.indices(shape, dtype=np.float64).reshape(3, -1)
    where = to_voxels[:3, :3] @ ijk + to_voxels[:3, 3:]
    out = map_coordinates(data, where, order=1, mode="constant", cval=0.0).reshape(shape)
    if bg_img is None:
        _DEFAULT_BACKGROUNDS.clear()  # one grid kept
        _DEFAULT_BACKGROUNDS[key] = out
    return out


def _grey(bg):
    """Background bytes: the 2nd..99.5th percentiles of the non-zero voxels to 0..255."""
    inside = bg[np.isfinite(bg) & (bg != 0)]
    if inside.size == 0:
        return np.zeros(bg.shape, dtype=np.uint8)
    lo, hi = np.percentile(inside, [2, 99.5])
    grey = (np.nan_to_num(bg) - lo) / max(hi - lo, 1e-12)
    return np.rint(255 * np.clip(grey, 0, 1)).astype(np.uint8)


def _canonical(masker):
    """(orientation, affine, box) of the mask in RAS+ voxel order, cropped to its extent
    plus one voxel."""
    from nibabel.orientations import apply_orientation, inv_ornt_aff, io_orientation

    affine = masker.mask_img.affine
    ornt = io_orientation(affine)
    mask = apply_orientation(masker.mask, ornt).astype(bool)
    ras = affine @ inv_ornt_aff(ornt, masker.mask.shape)
    where = np.argwhere(mask)
    lo = np.maximum(where.min(axis=0) - 1, 0)
    hi = np.minimum(where.max(axis=0) + 2, mask.shape)
    box = tuple(slice(int(a), int(b)) for a, b in zip(lo, hi, strict=True))
    shift = np.eye(4)
    shift[:3, 3] = lo
    return ornt, ras @ shift, box


def volume_data(masker, comps, bg_img=None):
    """What the slice viewer draws (a JSON-able dict).

    Parameters
    ----------
    masker : VolumeMasker
    comps : ndarray of shape (n_components, n_voxels)
        The loadings shown.
    bg_img : nibabel image, path or None
        Background (default: the MNI152 template).

    Returns
    -------
    dict
        ``kind``, ``shape``, ``affine`` (RAS+ voxel order, the crop's
        origin), ``voxel`` (mm), ``bg`` and ``mask`` (packed), ``lut`` and
        ``comps`` (``label``, ``scale``, ``peak`` voxel, ``data``).
    """
    from nibabel.orientations import apply_orientation

    ornt, affine, box = _canonical(masker)
    mask = apply_orientation(masker.mask, ornt).astype(bool)[box]
    grey = _grey(_background(bg_img, affine, mask.shape))
    out = {
        "kind": "volume",
        "shape": [int(n) for n in mask.shape],
        "affine": np.round(affine, 6).tolist(),
        "voxel": [float(v) for v in np.linalg.norm(affine[:3, :3], axis=0)],
        "bg": _pack(grey),
        "mask": _pack(np.packbits(mask.ravel())),
        "lut": _lut(),
        "comps": [],
    }
    full = np.zeros(masker.mask.shape)
    for k, comp in enumerate(np.asarray(comps, dtype=np.float64)):
        full[masker.mask] = comp
        vol = apply_orientation(full, ornt)[box]
        scale = _scale(comp)
        out["comps"].append(
            {
                "label": f"Component {k + 1}",
                "scale": scale,
                "peak": [int(i) for i in np.unravel_index(np.argmax(np.abs(vol)), vol.shape)],
                "data": _pack(quantise(vol[mask], scale)),
            }
        )
    return out


def _side_by_side(coords):
    """The x shifts moving left and right apart when they overlap (inflated meshes)."""
    left, right = coords
    gap = 0.1 * max(np.ptp(left[:, 0]), np.ptp(right[:, 0]))
    if left[:, 0].max() + gap <= right[:, 0].min():
        return [np.zeros(3), np.zeros(3)]
    return [
        np.array([-(left[:, 0].max() + gap / 2), 0.0, 0.0]),
        np.array([-(right[:, 0].min() - gap / 2), 0.0, 0.0]),
    ]


def _shading(meshes, hemi, n_vertices):
    """Grey bytes of a hemisphere: its background map (sulci darker) or a flat grey."""
    bg = meshes.get(f"bg_{hemi}")
    if bg is None:
        return np.full(n_vertices, 190, dtype=np.uint8)
    bg = np.nan_to_num(np.asarray(bg, dtype=np.float64).ravel())
    return np.rint(np.clip(175 - 55 * bg, 0, 255)).astype(np.uint8)


def surface_data(space, meshes, comps, surface_coords=None):
    """What the mesh viewer draws (a JSON-able dict).

    Parameters
    ----------
    space : Hemispheres
    meshes : dict
        ``{"left": (coords, faces), "right": (coords, faces)}`` and optional
        ``"bg_left"``/``"bg_right"`` shading maps (as the report's figures).
    comps : ndarray of shape (n_components, n_features)
    surface_coords : (ndarray, ndarray), optional
        Anatomical coordinates of the vertices (e.g. pial when the drawn
        meshes are inflated): a clicked point's xyz, to 0.1 mm.

    Returns
    -------
    dict
        ``kind``, ``lo``/``step`` (the 16-bit coordinate grid), ``centre``,
        ``radius``, ``hemis`` (``name``, ``n``, ``shift`` (moved apart along
        x), packed ``coords``, ``faces``, ``gray`` and ``anat`` or None),
        ``lut`` and ``comps`` (``label``, ``scale``, ``data`` per hemisphere).
    """
    hemis = ("left", "right")
    drawn = [np.asarray(meshes[h][0], dtype=np.float64) for h in hemis]
    shifts = _side_by_side(drawn)
    coords = [c + shift for c, shift in zip(drawn, shifts, strict=True)]
    lo = np.min([c.min(axis=0) for c in coords], axis=0)
    hi = np.max([c.max(axis=0) for c in coords], axis=0)
    step = np.maximum(hi - lo, 1e-9) / 65535
    centre = (lo + hi) / 2
    out = {
        "kind": "surface",
        "lo": lo.tolist(),
        "step": step.tolist(),
        "centre": centre.tolist(),
        "radius": float(max(np.linalg.norm(c - centre, axis=1).max() for c in coords)),
        "hemis": [],
        "lut": _lut(),
        "comps": [],
    }
    for i, (h, c) in enumerate(zip(hemis, coords, strict=True)):
        faces = np.asarray(meshes[h][1])
        size = 2 if c.shape[0] <= 65535 else 4
        anat = None if surface_coords is None else np.asarray(surface_coords[i], dtype=np.float64)
        anat_bytes = 2 if anat is None or np.abs(anat).max() < 3276 else 4  # 0.1 mm in int16
        out["hemis"].append(
            {
                "name": h,
                "n": int(c.shape[0]),
                "shift": shifts[i].tolist(),
                "coords": pack_ints(np.rint((c - lo) / step), 2),
                "faces": pack_ints(faces, size),
                "gray": _pack(_shading(meshes, h, c.shape[0])),
                "anat": None if anat is None else pack_ints(np.rint(10 * anat), anat_bytes),
                "anat_bytes": anat_bytes,
            }
        )
    maps = space.inverse_transform(np.asarray(comps, dtype=np.float64))
    for k, comp in enumerate(np.asarray(comps, dtype=np.float64)):
        scale = _scale(comp)
        out["comps"].append(
            {
                "label": f"Component {k + 1}",
                "scale": scale,
                "data": [_pack(quantise(maps[h][:, k], scale)) for h in hemis],
            }
        )
    return out


def _json(data):
    """JSON for a ``<script type="application/json">`` block (no ``<``, ``>`` or ``&``)."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _sizes(data):
    """(total, shared, per component) kilobytes of the embedded data."""
    per = [len(json.dumps(c, separators=(",", ":"))) for c in data["comps"]]
    total = len(_json(data))
    return total / 1e3, (total - sum(per)) / 1e3, (np.mean(per) if per else 0.0) / 1e3


def _note(kind, sizes, anatomical=False):
    total, shared, per = sizes
    how = (
        "Three orthogonal slices through the component's peak over the background: "
        "click or drag to move the cut, scroll a panel to move through its slices; the "
        "cut's world (mm) coordinates and loading are shown below."
        if kind == "volume"
        else "Both hemispheres of the mesh the figures are drawn on: drag to rotate, "
        "scroll to zoom, pick a preset view or hide a hemisphere (to see a medial wall); "
        "click a point for its vertex, coordinates and loading (the coordinates "
        + ("given as anatomical, e.g. pial)." if anatomical else "of the drawn mesh).")
    )
    return (
        f"{how} Loadings are quantised to 8 bits (step max|loading|/127; a non-zero "
        "loading is never shown as zero), with the colour scale of the figures, "
        "symmetric about zero. Data embedded in this page: "
        f"{total:,.0f} KB ({shared:,.0f} KB shared, {per:,.1f} KB per component). "
        f"neurospca viewer {VIEWER_VERSION}, inline, no network."
    )


def viewer_section(r):
    """The interactive viewer's context, or None (``interactive=False``, no brain
    space, or surfaces without meshes).

    Returns
    -------
    dict or None
        ``kind``, ``labels``, ``data`` and ``script`` (markup put verbatim in the
        page), ``csp`` (the script's hash source) and ``note``.
    """
    from markupsafe import Markup

    if not r.interactive:
        return None
    if isinstance(r.space, VolumeMasker):
        data = volume_data(r.space, r.shown, r.bg_img)
    elif isinstance(r.space, Hemispheres) and r.meshes is not None:
        data = surface_data(r.space, r.meshes, r.shown, r.surface_coords)
    else:
        return None
    script = viewer_script()
    return {
        "kind": data["kind"],
        "labels": [c["label"] for c in data["comps"]],
        "data": Markup(_json(data)),
        "script": Markup(script),
        "csp": csp_hash(script),
        "note": _note(data["kind"], _sizes(data), r.surface_coords is not None),
    }
