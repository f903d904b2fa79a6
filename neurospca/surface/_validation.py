"""Checks of meshes and vertex masks (shared by the surface modules)."""

import numpy as np

from .._utils.validation import ARRAY_ERRORS

__all__ = ["check_plot_mesh"]

_HEMIS = ("left", "right")


def _check_coords(coords, name="coords"):
    try:
        arr = np.asarray(coords)
    except ARRAY_ERRORS as exc:  # ragged input
        raise TypeError(f"{name} must be a numeric array of shape (n_vertices, 3): {exc}") from None
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}.")
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] < 3:
        raise ValueError(
            f"{name} must have shape (n_vertices, 3) with n_vertices >= 3, got {arr.shape}."
        )
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return arr


def _check_faces(faces, n_vertices, name="faces"):
    arr = np.asarray(faces)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer vertex indices, got dtype {arr.dtype}.")
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n_faces, 3) with n_faces >= 1, got {arr.shape}.")
    arr = arr.astype(np.int64)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= n_vertices:
        bad = np.flatnonzero(np.any((arr < 0) | (arr >= n_vertices), axis=1))
        raise ValueError(
            f"{name} has {bad.size} face(s) with vertex indices out of range "
            f"[0, {n_vertices - 1}] (the number of coords), e.g. face {bad[0]} = "
            f"{arr[bad[0]].tolist()}."
        )
    rep = (arr[:, 0] == arr[:, 1]) | (arr[:, 1] == arr[:, 2]) | (arr[:, 0] == arr[:, 2])
    if rep.any():
        i = int(np.flatnonzero(rep)[0])
        raise ValueError(
            f"{name} has {int(rep.sum())} degenerate face(s) repeating a vertex, e.g. "
            f"face {i} = {arr[i].tolist()}."
        )
    srt = np.sort(arr, axis=1)
    key = (
        (srt[:, 0] * n_vertices + srt[:, 1]) * n_vertices + srt[:, 2]
        if n_vertices < 2**20
        else None
    )
    if key is not None:
        order = np.argsort(key, kind="stable")
        dup = np.flatnonzero(key[order][1:] == key[order][:-1])
    else:  # pragma: no cover - meshes with > 1M vertices
        _, first, counts = np.unique(srt, axis=0, return_index=True, return_counts=True)
        order = None
        dup = np.flatnonzero(counts > 1)
    if dup.size:
        if order is not None:
            i, j = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
            example = f"faces {i} and {j} = {srt[i].tolist()}"
        else:  # pragma: no cover
            example = f"vertices {srt[first[dup[0]]].tolist()}"
        raise ValueError(
            f"{name} has {dup.size} duplicate face(s) (the same three vertices), e.g. {example}."
        )
    return arr


def _check_mask(mask, n_vertices, name="mask", coords_name="coords"):
    if mask is None:
        return None
    arr = np.asarray(mask)
    if arr.dtype != bool:
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise TypeError(f"{name} must be a boolean array, got dtype {arr.dtype}.")
        if not np.all(np.isin(np.unique(arr), [0, 1])):
            raise ValueError(
                f"{name} must be boolean or hold only 0 and 1; binarise it explicitly."
            )
        arr = arr.astype(bool)
    if arr.ndim != 1 or arr.shape[0] != n_vertices:
        raise ValueError(
            f"{name} must have shape ({n_vertices},), one entry per vertex of "
            f"{coords_name}, got {arr.shape}."
        )
    if not arr.any():
        raise ValueError(f"{name} is empty: it keeps no vertex.")
    return arr


def _check_mesh(coords, faces, mask=None, prefix=""):
    """Validate a mesh once: shapes, dtypes, ranges, degenerate/duplicate faces."""
    cname, fname, mname = prefix + "coords", prefix + "faces", prefix + "mask"
    coords = _check_coords(coords, cname)
    n = coords.shape[0]
    faces = _check_faces(faces, n, fname)
    mask = _check_mask(mask, n, mname, cname)
    # zero-area faces (collinear vertices), relative to the face's size
    p0, p1, p2 = coords[faces[:, 0]], coords[faces[:, 1]], coords[faces[:, 2]]
    cross = np.cross(p1 - p0, p2 - p0)
    area2 = np.einsum("ij,ij->i", cross, cross)
    scale = np.maximum(
        np.einsum("ij,ij->i", p1 - p0, p1 - p0), np.einsum("ij,ij->i", p2 - p0, p2 - p0)
    )
    flat = area2 <= 1e-24 * scale**2  # |sin(angle)| <~ 1e-12
    if flat.any():
        i = int(np.flatnonzero(flat)[0])
        raise ValueError(
            f"{fname} has {int(flat.sum())} degenerate face(s) of zero area (collinear "
            f"vertices in {cname}), e.g. face {i} = {faces[i].tolist()}."
        )
    used = np.zeros(n, dtype=bool)
    used[faces.ravel()] = True
    isolated = ~used if mask is None else (~used & mask)
    if isolated.any():
        i = int(np.flatnonzero(isolated)[0])
        raise ValueError(
            f"{cname} has {int(isolated.sum())} isolated vertex(es) that belong to no "
            f"face, e.g. vertex {i}; remove them or leave them out with {mname}."
        )
    return coords, faces, mask, cross, area2


def check_plot_mesh(coords, faces, name="mesh"):
    """Validate a mesh that is only drawn (report, saved model), before any rendering.

    The checks of :func:`tv_from_mesh` that matter to a renderer: coords a
    finite (n_vertices, 3) array, faces an integer (n_faces, 3) array of
    in-range vertex indices, no face repeating a vertex, no duplicate face.
    (Isolated vertices and zero-area faces are allowed: they draw fine.)

    Parameters
    ----------
    coords : array-like of shape (n_vertices, 3)
    faces : array-like of int, shape (n_faces, 3)
    name : str
        Argument name used in error messages.

    Returns
    -------
    coords : ndarray of float64
    faces : ndarray of int64

    Raises
    ------
    ValueError, TypeError
        Naming ``name``.
    """
    coords = _check_coords(coords, f"{name} coords")
    faces = _check_faces(faces, coords.shape[0], f"{name} faces")
    return coords, faces
