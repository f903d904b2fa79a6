"""Meshes: FreeSurfer/GIFTI/MGH I/O, cortex masks and the mesh TV operator.

Cortical maps live on triangulated surfaces: ``coords`` (V x 3 vertex
positions) and ``faces`` (F x 3 vertex indices). :func:`tv_from_mesh` builds
the structure operator of the SPCA-TV paper (section II-C2) in one of two
kinds:

``kind="edges"`` (default)
    Every undirected edge ``{a, b}`` of the mesh (``a < b``) gives one
    difference row ``v[b] - v[a]``, assigned to its lower vertex ``a``; group
    ``g`` holds the rows assigned to vertex ``g`` (at most its degree, <= 7 on
    FreeSurfer meshes). ``A^T A`` is the graph Laplacian, so
    ``||A||^2 <= 2 * max degree``. On a triangulated grid whose vertices are
    numbered in C order these are the grid's forward differences plus one
    diagonal per square.

``kind="gradient"``
    The gradient of the piecewise-linear interpolant on each triangle ``t``,
    three rows (the x, y, z components) scaled by the triangle's area, so that

    .. math::

        \\sum_t \\|A_t v\\|_2 = \\sum_t \\mathrm{area}_t \\, |\\nabla v_h|_t
        = \\int_S |\\nabla v_h| \\, dA ,

    the exact total variation of the interpolant, which converges to
    :math:`\\int |\\nabla f| dA` as the mesh is refined (second order on
    spheres: ``f = z`` on the unit sphere gives :math:`\\pi^2`). Group =
    triangle. The rows are weighted by the area itself, not its square root:
    ``sqrt(area)`` rows would sum to :math:`\\sum_t \\sqrt{a_t} |\\nabla v_h|_t`,
    which has no continuous limit (it diverges under refinement). ``norm2`` is
    a Gershgorin bound of ``A^T A`` (the area-weighted cotangent Laplacian).

Two hemispheres form one problem through :func:`tv_from_hemispheres`: a
block-diagonal operator whose columns are the kept left vertices then the kept
right vertices, and a :class:`Hemispheres` mapping back to per-hemisphere maps.

nilearn is never imported at module level.
"""

import os
import warnings

import nibabel as nib
import numpy as np
import scipy.sparse as sp

from .._utils.io import atomic_write
from ..operators import GroupOperator

__all__ = [
    "Hemispheres",
    "block_diag_operators",
    "fit_surfaces",
    "icosphere",
    "load_cortex_mask",
    "load_surf_data",
    "load_surf_mesh",
    "load_surface_data",
    "load_surface_image",
    "mesh_edges",
    "tv_from_hemispheres",
    "tv_from_mesh",
    "write_surf_data",
    "write_surf_mesh",
]

# Names of annotation labels that are not cortex (FreeSurfer's aparc, a2009s,
# DKT and Yeo atlases use these for the medial wall).
MEDIAL_WALL_NAMES = ("unknown", "medial_wall", "medialwall", "???", "corpuscallosum")

_GIFTI_EXT = (".gii", ".gii.gz")
_MGH_EXT = (".mgh", ".mgz")
# extensions that are clearly not FreeSurfer morphometry (lh.thickness, lh.curv...)
_NOT_MORPH_EXT = (".nii", ".nii.gz", ".img", ".hdr", ".npy", ".npz", ".txt", ".csv",
                  ".json", ".vtk", ".ply", ".obj")


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------


def _check_coords(coords, name="coords"):
    try:
        arr = np.asarray(coords)
    except Exception as exc:  # ragged input
        raise TypeError(f"{name} must be a numeric array of shape (n_vertices, 3): {exc}")
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
        raise ValueError(
            f"{name} must have shape (n_faces, 3) with n_faces >= 1, got {arr.shape}."
        )
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
    key = (srt[:, 0] * n_vertices + srt[:, 1]) * n_vertices + srt[:, 2] \
        if n_vertices < 2**20 else None
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
            f"{name} has {dup.size} duplicate face(s) (the same three vertices), e.g. "
            f"{example}."
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


def _check_kind(kind):
    if kind not in ("edges", "gradient"):
        raise ValueError(f"kind must be 'edges' or 'gradient', got {kind!r}.")
    return kind


# --------------------------------------------------------------------------
# operators
# --------------------------------------------------------------------------


def _column_map(mask, n_vertices):
    """Column of each vertex (-1 if masked out) and the kept vertex indices."""
    if mask is None:
        return np.arange(n_vertices, dtype=np.int64), np.arange(n_vertices, dtype=np.int64)
    kept = np.flatnonzero(mask).astype(np.int64)
    col = np.full(n_vertices, -1, dtype=np.int64)
    col[kept] = np.arange(kept.size, dtype=np.int64)
    return col, kept


def mesh_edges(faces, n_vertices):
    """Unique undirected edges of a triangle mesh, sorted by (low, high).

    Parameters
    ----------
    faces : ndarray of int, shape (n_faces, 3)
    n_vertices : int

    Returns
    -------
    low, high : ndarray of int64, shape (n_edges,)
        ``low < high``; lexicographically sorted.
    """
    faces = np.asarray(faces, dtype=np.int64)
    a = faces.ravel()
    b = faces[:, [1, 2, 0]].ravel()
    key = np.minimum(a, b) * n_vertices + np.maximum(a, b)
    key.sort()  # a sort is much faster than np.unique's hashing here
    first = np.empty(key.size, dtype=bool)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    key = key[first]
    return key // n_vertices, key % n_vertices


def _edge_operator(faces, n_vertices, mask):
    col, kept = _column_map(mask, n_vertices)
    low, high = mesh_edges(faces, n_vertices)
    lo, hi = col[low], col[high]
    keep = (lo >= 0) & (hi >= 0)
    lo, hi = lo[keep], hi[keep]  # col is increasing, so lo < hi and order is kept
    n_rows, n_cols = lo.size, kept.size
    indices = np.empty(2 * n_rows, dtype=np.int64)
    indices[0::2] = lo
    indices[1::2] = hi
    data = np.tile(np.array([-1.0, 1.0]), n_rows)
    indptr = np.arange(0, 2 * n_rows + 1, 2, dtype=np.int64)
    mat = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))
    group_ptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(lo, minlength=n_cols), out=group_ptr[1:])
    degree = np.bincount(lo, minlength=n_cols) + np.bincount(hi, minlength=n_cols)
    # A^T A is the graph Laplacian of the kept edges: ||A||^2 <= 2 * max degree.
    norm2 = 2.0 * float(degree.max()) if n_cols else 0.0
    return GroupOperator(mat, group_ptr, norm2=norm2)


def _gradient_operator(coords, faces, mask, cross, area2):
    n_vertices = coords.shape[0]
    col, kept = _column_map(mask, n_vertices)
    fc = col[faces]
    keep = np.all(fc >= 0, axis=1)
    fc, f = fc[keep], faces[keep]
    cross, area2 = cross[keep], area2[keep]
    n_tri, n_cols = f.shape[0], kept.size
    half_normal = cross * (0.5 / np.sqrt(area2))[:, None]
    p0, p1, p2 = coords[f[:, 0]], coords[f[:, 1]], coords[f[:, 2]]
    # area * grad(phi_i) = (n x e_i) / 2, e_i the edge opposite vertex i,
    # oriented so that e_0 + e_1 + e_2 = 0 (constants have zero gradient).
    w = np.empty((n_tri, 3, 3))  # (triangle t, dim d, vertex i): row 3t+d, entry i
    nx, ny, nz = half_normal[:, 0], half_normal[:, 1], half_normal[:, 2]
    edges = (p2 - p1, p0 - p2, p1 - p0)
    for i, e in enumerate(edges):
        w[:, 0, i] = ny * e[:, 2] - nz * e[:, 1]
        w[:, 1, i] = nz * e[:, 0] - nx * e[:, 2]
        w[:, 2, i] = nx * e[:, 1] - ny * e[:, 0]
    data = w.ravel()
    indices = np.repeat(fc, 3, axis=0).ravel()
    indptr = np.arange(0, 9 * n_tri + 1, 3, dtype=np.int64)
    mat = sp.csr_matrix((data, indices, indptr), shape=(3 * n_tri, n_cols))
    group_ptr = np.arange(0, 3 * n_tri + 1, 3, dtype=np.int64)
    return GroupOperator(mat, group_ptr, norm2=_gradient_norm2(edges, fc, n_cols))


def _gradient_norm2(edges, fc, n_cols):
    """Upper bound of ``||A||_2^2`` for the gradient kind (no eigensolver).

    ``A^T A = sum_t A_t^T A_t`` is symmetric, so its largest eigenvalue is at
    most its largest absolute row sum (Gershgorin), itself at most
    ``max_i sum_{t ni i} sum_j |(A_t^T A_t)_ij|`` (equal when no angle is
    obtuse). With ``A_t`` the rows ``(n x e_i) / 2``, ``(A_t^T A_t)_ij =
    e_i . e_j / 4`` for the edges ``e_i`` opposite the vertices. The bound is
    within a factor 1.5 of the exact norm on fsaverage and icospheres and costs
    a few vector operations, whereas Lanczos took 15-36 s at 2 x 163,842
    vertices (clustered top eigenvalues).

    Parameters
    ----------
    edges : sequence of 3 ndarrays of shape (n_triangles, 3)
        The edges opposite each vertex of each triangle.
    fc : ndarray of int, shape (n_triangles, 3)
        Columns of the triangles' vertices.
    n_cols : int
    """
    if fc.shape[0] == 0:
        return 0.0
    e0, e1, e2 = edges
    d01 = np.abs(np.einsum("ij,ij->i", e0, e1))
    d12 = np.abs(np.einsum("ij,ij->i", e1, e2))
    d20 = np.abs(np.einsum("ij,ij->i", e2, e0))
    local = np.stack([
        np.einsum("ij,ij->i", e0, e0) + d01 + d20,
        np.einsum("ij,ij->i", e1, e1) + d01 + d12,
        np.einsum("ij,ij->i", e2, e2) + d12 + d20,
    ], axis=1)
    rows = np.bincount(fc.ravel(), weights=local.ravel(), minlength=n_cols)
    return 0.25 * float(rows.max()) * (1.0 + 1e-12)


def tv_from_mesh(coords, faces, mask=None, kind="edges"):
    """Total-variation operator of a triangle mesh.

    Parameters
    ----------
    coords : array-like of shape (n_vertices, 3)
        Vertex positions (e.g. a FreeSurfer white or sphere surface).
    faces : array-like of int, shape (n_faces, 3)
        Triangles as vertex indices. Faces out of range, repeating a vertex,
        of zero area or duplicated are errors, as are vertices in no face.
    mask : array-like of bool, shape (n_vertices,), optional
        Vertices to keep (e.g. cortex without the medial wall). Masked
        vertices, and every edge or triangle touching them, are dropped;
        column ``g`` is the ``g``-th kept vertex in index order.
    kind : {"edges", "gradient"}, default="edges"
        ``"edges"``: one row ``v[b] - v[a]`` per undirected edge ``a < b``,
        grouped at the lower vertex ``a`` (one group per kept vertex;
        ``norm2 = 2 * max degree``). ``"gradient"``: per triangle, the
        gradient of the piecewise-linear interpolant times the triangle's area
        (3 rows, one group per kept triangle), so that ``operator.value(v)``
        is the exact :math:`\\int |\\nabla v_h| dA`; ``norm2`` is a
        Gershgorin-type bound of ``A^T A`` (within a factor 1.5 of the exact
        norm on cortical meshes and spheres).

    Returns
    -------
    GroupOperator

    Notes
    -----
    The two kinds have different units, so a TV weight tuned for one does not
    carry over to the other: the edge TV sums differences over about three
    edges per vertex (dimensionless in the mesh size), the gradient TV is an
    integral, in value x area (mm^2 on FreeSurfer surfaces; about 4 pi x the
    value's variation on a unit sphere).

    Examples
    --------
    >>> from neurospca import icosphere, tv_from_mesh
    >>> coords, faces = icosphere(2)
    >>> op = tv_from_mesh(coords, faces)
    >>> op.n_features, op.n_rows, op.norm2
    (162, 480, 12.0)
    """
    kind = _check_kind(kind)
    return _build(_check_mesh(coords, faces, mask), kind)


def _build(checked, kind):
    """Operator of a validated mesh (the output of ``_check_mesh``)."""
    coords, faces, mask, cross, area2 = checked
    if kind == "edges":
        return _edge_operator(faces, coords.shape[0], mask)
    return _gradient_operator(coords, faces, mask, cross, area2)


def block_diag_operators(operators):
    """Block-diagonal stack of operators on disjoint feature sets.

    Columns and groups of the first operator come first. ``norm2`` is the
    largest of the blocks' (the norm of a block-diagonal matrix), or None if
    one of them is not known yet.

    Parameters
    ----------
    operators : sequence of GroupOperator

    Returns
    -------
    GroupOperator
    """
    operators = list(operators)
    mats, ptrs, offset = [], [], 0
    for op in operators:
        if not isinstance(op, GroupOperator):
            raise TypeError(f"operators must be GroupOperator, got {type(op).__name__}.")
        mats.append(op.matrix)
        ptrs.append(op.group_ptr[:-1] + offset)
        offset += op.n_rows
    known = [op._norm2 for op in operators]
    norm2 = None if any(x is None for x in known) else max(known)
    group_ptr = np.concatenate(ptrs + [[offset]]).astype(np.int64)
    # CSR blocks side by side: shift the column indices and the row pointers
    col_off = np.cumsum([0] + [m.shape[1] for m in mats])
    nnz_off = np.cumsum([0] + [m.nnz for m in mats])
    indices = np.concatenate([m.indices.astype(np.int64) + c for m, c in zip(mats, col_off)])
    indptr = np.concatenate(
        [m.indptr[:-1].astype(np.int64) + z for m, z in zip(mats, nnz_off)] + [[nnz_off[-1]]]
    )
    data = np.concatenate([m.data for m in mats])
    mat = sp.csr_matrix((data, indices, indptr), shape=(offset, int(col_off[-1])))
    return GroupOperator(mat, group_ptr, norm2=norm2)


# --------------------------------------------------------------------------
# icosphere
# --------------------------------------------------------------------------


def _icosahedron():
    t = (1.0 + 5.0**0.5) / 2.0
    v = np.array(
        [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0],
         [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
         [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], dtype=np.float64)
    f = np.array(
        [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11],
         [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8],
         [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9],
         [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]], dtype=np.int64)
    return v / np.linalg.norm(v, axis=1, keepdims=True), f


def icosphere(n_subdivisions=7, radius=1.0):
    """Geodesic sphere: an icosahedron whose triangles are split ``n`` times.

    Each subdivision splits every triangle into four at its edge midpoints,
    projected back onto the sphere; the original vertices keep their indices
    and new ones follow, as in FreeSurfer's ``ic<n>`` surfaces. Subdivided 7
    times it has the size of full-resolution fsaverage (163,842 vertices,
    327,680 faces per hemisphere).

    Parameters
    ----------
    n_subdivisions : int, default=7
        ``n >= 0``; the sphere has ``10 * 4**n + 2`` vertices and
        ``20 * 4**n`` faces.
    radius : float, default=1.0

    Returns
    -------
    coords : ndarray of shape (n_vertices, 3), float64
    faces : ndarray of shape (n_faces, 3), int64
        Counter-clockwise seen from outside (normals point outwards).
    """
    if isinstance(n_subdivisions, bool) or not isinstance(n_subdivisions, (int, np.integer)):
        raise TypeError(f"n_subdivisions must be an int, got {type(n_subdivisions).__name__}.")
    if not 0 <= n_subdivisions <= 9:
        raise ValueError(f"n_subdivisions must be between 0 and 9, got {n_subdivisions}.")
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}.")
    v, f = _icosahedron()
    for _ in range(int(n_subdivisions)):
        n = v.shape[0]
        a, b = f.ravel(), f[:, [1, 2, 0]].ravel()
        key = np.minimum(a, b) * n + np.maximum(a, b)
        order = np.argsort(key, kind="stable")
        sk = key[order]
        first = np.empty(sk.size, dtype=bool)
        first[:1] = True
        np.not_equal(sk[1:], sk[:-1], out=first[1:])
        uniq = sk[first]
        inv = np.empty(key.size, dtype=np.int64)
        inv[order] = np.cumsum(first) - 1
        mid = v[uniq // n] + v[uniq % n]
        mid /= np.linalg.norm(mid, axis=1, keepdims=True)
        m = (inv.reshape(-1, 3) + n).astype(np.int64)  # midpoints of (0,1), (1,2), (2,0)
        m01, m12, m20 = m[:, 0], m[:, 1], m[:, 2]
        f = np.stack(
            [np.stack([f[:, 0], m01, m20], 1), np.stack([m01, f[:, 1], m12], 1),
             np.stack([m20, m12, f[:, 2]], 1), np.stack([m01, m12, m20], 1)], axis=1
        ).reshape(-1, 3)
        v = np.concatenate([v, mid])
    return v * float(radius), f


# --------------------------------------------------------------------------
# file I/O
# --------------------------------------------------------------------------


def _ext(path):
    low = path.lower()
    for ext in _GIFTI_EXT[::-1] + _MGH_EXT + (".annot", ".label"):
        if low.endswith(ext):
            return ext
    return ""


def _as_path(obj, name):
    if not isinstance(obj, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a path, got {type(obj).__name__}.")
    return os.fsdecode(obj)


def _existing(obj, name):
    path = _as_path(obj, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{name}: no such file {path!r}.")
    return path


def _is_polymesh(obj):
    """A nilearn PolyMesh (duck-typed: ``parts`` dict of meshes, no coordinates)."""
    parts = getattr(obj, "parts", None)
    return (isinstance(parts, dict) and not hasattr(obj, "coordinates")
            and all(hasattr(m, "coordinates") for m in parts.values()))


def _split_polymesh(left_mesh, right_mesh, name="left_mesh"):
    """(left, right) meshes, a PolyMesh given as ``left_mesh`` split in two."""
    if _is_polymesh(left_mesh):
        if right_mesh is not None:
            raise ValueError(f"{name} is a PolyMesh (both hemispheres): leave right_mesh "
                             "as None.")
        missing = [h for h in _HEMIS if h not in left_mesh.parts]
        if missing:
            raise ValueError(f"{name}: the PolyMesh has no {' and '.join(missing)} part.")
        return left_mesh.parts["left"], left_mesh.parts["right"]
    if right_mesh is None:
        raise TypeError("right_mesh is required unless left_mesh is a nilearn PolyMesh "
                        "holding both hemispheres.")
    return left_mesh, right_mesh


def _read_file(reader, path, name, what):
    """``reader(path)``; any reader error becomes a ValueError naming ``name`` and the file.

    nibabel raises EOFError, ExpatError, zlib.error, struct.error, OSError,
    IndexError... on truncated or corrupted files; the caller gets one type.
    """
    try:
        return reader(path)
    except MemoryError:
        raise ValueError(f"{name}: {path!r} declares data too large to read; the file is "
                         f"corrupted or not {what}.") from None
    except Exception as exc:
        raise ValueError(f"{name}: cannot read {path!r} as {what} (truncated or corrupted "
                         f"file?): {type(exc).__name__}: {exc}") from None


def _read_label(path):
    """Vertex indices of a FreeSurfer ASCII .label; its declared count must match."""
    with open(path, "r", encoding="ascii") as fh:
        fh.readline()
        declared = int(fh.readline().split()[0])
    idx = np.atleast_1d(nib.freesurfer.read_label(path))
    if idx.size != declared:
        raise ValueError(f"it declares {declared} vertices but lists {idx.size}")
    return idx


def _read_morph(path):
    """FreeSurfer "new" curv data; the declared number of values must all be there."""
    with open(path, "rb") as fh:
        fh.read(3)
        declared = int(np.frombuffer(fh.read(4), dtype=">i4")[0])
    values = nib.freesurfer.read_morph_data(path)
    if values.size != declared:
        raise ValueError(f"it declares {declared} values but holds {values.size}")
    return values


def _magic(path):
    with open(path, "rb") as fh:
        return fh.read(3)


def _gifti_arrays(img, intent):
    code = nib.nifti1.intent_codes.code[intent]
    return [d.data for d in img.darrays if d.intent == code]


def load_surf_mesh(surf, name="surf"):
    """Vertices and triangles of a surface.

    Parameters
    ----------
    surf : str, os.PathLike, GiftiImage, (coords, faces) or mesh object
        A FreeSurfer geometry file (``lh.white``, ``lh.pial``,
        ``lh.inflated``, ``lh.sphere``...), a GIFTI surface (``.gii`` or
        ``.gii.gz``), a pair of arrays, or any object with ``coordinates``
        and ``faces`` attributes (nilearn's ``SurfaceMesh``: ``InMemoryMesh``,
        ``FileMesh``). A ``PolyMesh`` (both hemispheres) is a ``TypeError``:
        pass one of its ``parts``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    coords : ndarray of shape (n_vertices, 3), float64
    faces : ndarray of shape (n_faces, 3), int64
        In file order (vertex order is preserved). Not validated here:
        :func:`tv_from_mesh` validates.
    """
    if isinstance(surf, nib.gifti.GiftiImage):
        img = surf
    elif _is_polymesh(surf):
        raise TypeError(
            f"{name} is a nilearn PolyMesh holding {sorted(surf.parts)}; give one "
            f"hemisphere, e.g. mesh.parts['left'] (tv_from_hemispheres and "
            "load_surface_data take a PolyMesh as left_mesh with right_mesh=None)."
        )
    elif hasattr(surf, "coordinates") and hasattr(surf, "faces"):
        return (np.asarray(surf.coordinates, dtype=np.float64),
                np.asarray(surf.faces).astype(np.int64))
    elif isinstance(surf, (tuple, list)):
        if len(surf) != 2:
            raise ValueError(
                f"{name} as a sequence must be (coords, faces), got {len(surf)} items."
            )
        return np.asarray(surf[0], dtype=np.float64), np.asarray(surf[1]).astype(np.int64)
    else:
        path = _existing(surf, name)
        if _ext(path) in _GIFTI_EXT:
            img = _read_file(nib.load, path, name, "a GIFTI surface")
        else:
            coords, faces = _read_file(nib.freesurfer.read_geometry, path, name,
                                       "a FreeSurfer surface or GIFTI (.gii) file")
            return coords.astype(np.float64), faces.astype(np.int64)
    if not isinstance(img, nib.gifti.GiftiImage):
        raise ValueError(f"{name}: {path!r} is not a GIFTI image.")
    points = _gifti_arrays(img, "NIFTI_INTENT_POINTSET")
    tris = _gifti_arrays(img, "NIFTI_INTENT_TRIANGLE")
    if len(points) != 1 or len(tris) != 1:
        raise ValueError(
            f"{name}: a GIFTI surface needs one POINTSET and one TRIANGLE array, got "
            f"{len(points)} and {len(tris)}."
        )
    return np.asarray(points[0], dtype=np.float64), np.asarray(tris[0]).astype(np.int64)


def write_surf_mesh(coords, faces, path):
    """Write a surface as GIFTI (``.gii``, ``.gii.gz``) or FreeSurfer geometry.

    Coordinates are stored as float32 (both formats' type), faces as int32.
    The file is written to a temporary name then renamed.

    Parameters
    ----------
    coords : array-like of shape (n_vertices, 3)
    faces : array-like of int, shape (n_faces, 3)
    path : str or os.PathLike
        Any other extension than ``.gii``/``.gii.gz`` writes FreeSurfer
        geometry (e.g. ``lh.white``).

    Returns
    -------
    str
        The path written.
    """
    coords = _check_coords(coords)
    faces = _check_faces(faces, coords.shape[0])
    path = _as_path(path, "path")
    c32, f32 = coords.astype(np.float32), faces.astype(np.int32)
    if _ext(path) in _GIFTI_EXT:
        img = nib.gifti.GiftiImage(darrays=[
            nib.gifti.GiftiDataArray(c32, intent="NIFTI_INTENT_POINTSET",
                                     datatype="NIFTI_TYPE_FLOAT32"),
            nib.gifti.GiftiDataArray(f32, intent="NIFTI_INTENT_TRIANGLE",
                                     datatype="NIFTI_TYPE_INT32"),
        ])
        return atomic_write(img.to_filename, path)
    if _ext(path) or path.lower().endswith(_NOT_MORPH_EXT):
        raise ValueError(f"path: cannot write a surface mesh to {os.path.basename(path)!r}; "
                         "use .gii or a FreeSurfer name such as lh.white.")
    return atomic_write(lambda tmp: nib.freesurfer.write_geometry(tmp, c32, f32), path)


def load_surf_data(data, name="data"):
    """Per-vertex values from a file or an array.

    Parameters
    ----------
    data : str, os.PathLike, GiftiImage, MGHImage or array-like
        FreeSurfer morphometry (``lh.thickness``, ``lh.curv``, ``lh.sulc``,
        ``lh.area``...), MGH/MGZ (``lh.thickness.fsaverage.mgh``), GIFTI data
        (``.func.gii``, ``.shape.gii``; one array per map), or an array.
    name : str
        Argument name used in error messages.

    Returns
    -------
    ndarray of shape (n_vertices,) or (n_vertices, n_maps)
        Vertex-major, as nilearn; the file's dtype is kept (e.g. float32).
    """
    if isinstance(data, nib.gifti.GiftiImage):
        arrays = [d.data for d in data.darrays]
        if not arrays:
            raise ValueError(f"{name}: the GIFTI image holds no data array.")
        return arrays[0] if len(arrays) == 1 else np.stack(arrays, axis=1)
    if isinstance(data, nib.freesurfer.MGHImage):
        return _mgh_values(data, name)
    if not isinstance(data, (str, bytes, os.PathLike)):
        try:
            return np.asarray(data)
        except Exception as exc:
            raise TypeError(f"{name} must be a path or a numeric array: {exc}") from None
    path = _existing(data, name)
    ext = _ext(path)
    if ext in _GIFTI_EXT:
        img = _read_file(nib.load, path, name, "GIFTI data")
        if not isinstance(img, nib.gifti.GiftiImage):
            raise ValueError(f"{name}: {path!r} is not a GIFTI image.")
        if _gifti_arrays(img, "NIFTI_INTENT_POINTSET"):
            raise ValueError(f"{name}: {path!r} is a surface mesh, not per-vertex data; "
                             "use load_surf_mesh.")
        return load_surf_data(img, name)
    if ext in _MGH_EXT:
        return _mgh_values(_read_file(nib.load, path, name, "MGH (.mgh/.mgz) data"), name)
    if ext in (".annot", ".label"):
        raise ValueError(f"{name}: {path!r} is a {ext} file; use load_cortex_mask.")
    magic = _read_file(_magic, path, name, "a file")
    if magic != b"\xff\xff\xff":  # FreeSurfer's "new" curv format (all since 2000)
        raise ValueError(
            f"{name}: cannot read {path!r}: not FreeSurfer morphometry (curv format), "
            "MGH (.mgh/.mgz) or GIFTI (.gii) data."
        )
    return _read_file(_read_morph, path, name, "FreeSurfer morphometry, MGH or GIFTI data")


def _mgh_values(img, name):
    if not isinstance(img, nib.freesurfer.MGHImage):
        raise ValueError(f"{name}: not an MGH image.")
    filename = img.get_filename()
    arr = _read_file(lambda _: np.asanyarray(img.dataobj), filename or "<in-memory image>",
                     name, "MGH (.mgh/.mgz) data")  # nibabel reads the data lazily: now
    spatial = arr.shape[:3]
    n_vertices = int(np.prod(spatial))
    if sum(s > 1 for s in spatial) > 1:
        raise ValueError(
            f"{name}: the MGH volume has shape {arr.shape}, not per-vertex data "
            "(n_vertices, 1, 1[, n_maps])."
        )
    if arr.ndim == 3 or (arr.ndim == 4 and arr.shape[3] == 1):
        return arr.reshape(n_vertices)
    return arr.reshape(n_vertices, -1)


def write_surf_data(values, path, *, dtype=np.float32):
    """Write per-vertex values as GIFTI, MGH/MGZ or FreeSurfer morphometry.

    Parameters
    ----------
    values : array-like of shape (n_vertices,) or (n_vertices, n_maps)
        Vertex-major (one column per map, e.g. per component).
    path : str or os.PathLike
        ``.gii``/``.gii.gz`` writes one GIFTI data array per map; ``.mgh`` or
        ``.mgz`` an MGH image of shape (n_vertices, 1, 1[, n_maps]); any other
        name FreeSurfer morphometry (one map, float32 only).
    dtype : numpy dtype, default=float32
        Stored type for GIFTI and MGH (MGH allows float32, int32, int16,
        uint8; FreeSurfer morphometry is always float32).

    Returns
    -------
    str
        The path written (written to a temporary name, then renamed).
    """
    try:
        arr = np.asarray(values)
    except Exception as exc:
        raise TypeError(f"values must be a numeric array: {exc}") from None
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"values must hold numbers, got dtype {arr.dtype}.")
    if arr.ndim not in (1, 2) or arr.shape[0] < 1:
        raise ValueError(
            f"values must have shape (n_vertices,) or (n_vertices, n_maps), got {arr.shape}."
        )
    path = _as_path(path, "path")
    ext = _ext(path)
    dtype = np.dtype(dtype)
    arr = arr.astype(dtype)
    if ext in _GIFTI_EXT:
        cols = [arr] if arr.ndim == 1 else [np.ascontiguousarray(c) for c in arr.T]
        img = nib.gifti.GiftiImage(darrays=[
            nib.gifti.GiftiDataArray(c, intent="NIFTI_INTENT_NONE", datatype=dtype)
            for c in cols
        ])
        return atomic_write(img.to_filename, path)
    if ext in _MGH_EXT:
        # MGH drops a trailing singleton frame axis: one map is (n_vertices, 1, 1)
        n_maps = () if arr.ndim == 1 or arr.shape[1] == 1 else (arr.shape[1],)
        shape = (arr.shape[0], 1, 1) + n_maps
        img = nib.freesurfer.MGHImage(arr.reshape(shape), np.eye(4))
        return atomic_write(img.to_filename, path)
    if ext or path.lower().endswith(_NOT_MORPH_EXT):
        raise ValueError(
            f"path: cannot write per-vertex data to {os.path.basename(path)!r}; use .gii, "
            ".mgh/.mgz or a FreeSurfer name such as lh.thickness."
        )
    if arr.ndim != 1:
        raise ValueError(
            "values: FreeSurfer morphometry files hold one map; got "
            f"{arr.shape[1]} columns (use .gii or .mgh for several)."
        )
    values32 = arr.astype(np.float32)
    return atomic_write(lambda tmp: nib.freesurfer.write_morph_data(tmp, values32), path)


def load_cortex_mask(source, n_vertices=None, *, medial_wall_names=MEDIAL_WALL_NAMES,
                     name="source"):
    """Cortex mask (medial wall out) from a label or annotation file.

    Parameters
    ----------
    source : str, os.PathLike or array-like of bool
        A FreeSurfer ``.label`` listing the cortex vertices (``lh.cortex.label``),
        a ``.annot`` parcellation (vertices with no label or a label named as
        in ``medial_wall_names`` are left out), a GIFTI ``.label.gii``
        (the same rule on its label table; without names, label 0 is left
        out), a GIFTI ``.shape.gii``/``.func.gii`` holding only 0 and 1, or a
        boolean array.
    n_vertices : int, optional
        Number of vertices of the surface. Required for ``.label`` files (they
        list only the kept vertices); checked against the others.
    medial_wall_names : sequence of str
        Annotation names (case-insensitive) that are not cortex.
    name : str, default="source"
        Argument name used in error messages.

    Returns
    -------
    ndarray of bool, shape (n_vertices,)

    Raises
    ------
    ValueError
        If the file is truncated or corrupted, lists vertices out of range,
        or the mask is empty or of the wrong length.
    """
    if n_vertices is not None:
        if isinstance(n_vertices, bool) or not isinstance(n_vertices, (int, np.integer)) \
                or n_vertices < 1:
            raise ValueError(f"n_vertices must be a positive int, got {n_vertices!r}.")
        n_vertices = int(n_vertices)
    if isinstance(source, (str, bytes, os.PathLike)):
        path = _existing(source, name)
        ext = _ext(path)
        if ext == ".label":
            if n_vertices is None:
                raise ValueError("n_vertices is required for a .label file (it lists only "
                                 "the cortex vertices).")
            idx = np.asarray(_read_file(_read_label, path, name, "a FreeSurfer .label file"),
                             dtype=np.int64)
            if idx.size and (idx.min() < 0 or idx.max() >= n_vertices):
                raise ValueError(
                    f"{name}: {path!r} lists vertex {int(idx.max())}, out of range for "
                    f"n_vertices={n_vertices}."
                )
            mask = np.zeros(n_vertices, dtype=bool)
            mask[idx] = True
        elif ext in _GIFTI_EXT:
            mask = _gifti_cortex_mask(path, medial_wall_names, name)
        elif ext == ".annot":
            labels, _, names = _read_file(nib.freesurfer.read_annot, path, name,
                                          "a FreeSurfer .annot file")
            labels = np.asarray(labels)
            if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype,
                                                                         np.integer):
                raise ValueError(f"{name}: {path!r} holds no per-vertex labels.")
            labels = np.where(labels >= len(names), -1, labels)
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
            wall = {s.lower() for s in medial_wall_names}
            is_wall = np.array([n.lower() in wall for n in names] + [True])  # [-1] = no label
            mask = ~is_wall[np.where(labels < 0, len(names), labels)]
        else:
            raise ValueError(
                f"{name}: {path!r} is neither a .label nor an .annot file (nor a GIFTI "
                ".label.gii or .shape.gii)."
            )
    else:
        mask = np.asarray(source)
        if mask.dtype != bool:
            raise TypeError(f"{name} must be a path or a boolean array, got dtype {mask.dtype}.")
    if mask.ndim != 1:
        raise ValueError(f"{name} must give a 1-D mask, got shape {mask.shape}.")
    if n_vertices is not None and mask.shape[0] != n_vertices:
        raise ValueError(
            f"{name} has {mask.shape[0]} vertices but n_vertices={n_vertices}."
        )
    if not mask.any():
        where = f" ({path!r})" if isinstance(source, (str, bytes, os.PathLike)) else ""
        raise ValueError(f"{name}{where} gives an empty cortex mask.")
    return mask


def _gifti_cortex_mask(path, medial_wall_names, name="source"):
    """Cortex mask from a GIFTI label (.label.gii) or 0/1 shape (.shape.gii) file."""
    img = _read_file(nib.load, path, name, "a GIFTI cortex mask")
    if _gifti_arrays(img, "NIFTI_INTENT_POINTSET"):
        raise ValueError(f"{name}: {path!r} is a surface mesh, not a cortex mask.")
    if len(img.darrays) != 1:
        raise ValueError(f"{name}: {path!r} holds {len(img.darrays)} data arrays; a cortex "
                         "mask needs one.")
    data = np.asarray(_read_file(lambda _: img.darrays[0].data, path, name,
                                 "a GIFTI cortex mask"))
    if data.ndim == 2 and data.shape[1] == 1:
        data = data[:, 0]
    is_label = (img.darrays[0].intent == nib.nifti1.intent_codes.code["NIFTI_INTENT_LABEL"]
                or path.lower().endswith((".label.gii", ".label.gii.gz")))
    if is_label:
        labels = np.asarray(data).astype(np.int64)
        names = {int(lab.key): (getattr(lab, "label", None) or "")
                 for lab in img.labeltable.labels}
        if any(names.values()):
            wall = {w.lower() for w in medial_wall_names}
            wall_keys = [k for k, n in names.items() if n.strip().lower() in wall]
            known = np.isin(labels, list(names))
            return known & ~np.isin(labels, wall_keys)
        return labels != 0
    values = np.unique(data)
    if not np.all(np.isin(values, [0, 1])):
        raise ValueError(
            f"{name}: {path!r} holds values other than 0 and 1 (e.g. "
            f"{values[:5].tolist()}); a .shape.gii cortex mask must be binary: binarise it "
            "(e.g. load_surf_data(path) > 0.5) and pass the array.")
    return data.astype(bool)


# --------------------------------------------------------------------------
# two hemispheres
# --------------------------------------------------------------------------

_HEMIS = ("left", "right")


class Hemispheres:
    """Columns of a two-hemisphere problem <-> per-hemisphere vertex maps.

    Columns are the kept vertices of the left hemisphere (in vertex order)
    then those of the right hemisphere.

    Parameters
    ----------
    n_vertices : (int, int)
        Vertices of the left and right meshes.
    masks : (array-like of bool or None, array-like of bool or None), optional
        Kept vertices of each hemisphere (None keeps all).

    Attributes
    ----------
    n_vertices : tuple of int
    vertices : tuple of ndarray of int64
        Kept vertex indices of each hemisphere; column ``j`` of the left block
        is vertex ``vertices[0][j]``.
    slices : tuple of slice
        Columns of each hemisphere.
    n_features : int
    """

    def __init__(self, n_vertices, masks=(None, None)):
        if len(n_vertices) != 2 or len(masks) != 2:
            raise ValueError("n_vertices and masks must each have two entries (left, right).")
        verts = []
        for hemi, n, m in zip(_HEMIS, n_vertices, masks):
            m = _check_mask(m, int(n), f"mask_{hemi}", f"coords_{hemi}")
            verts.append(np.arange(int(n), dtype=np.int64) if m is None
                         else np.flatnonzero(m).astype(np.int64))
        self.n_vertices = (int(n_vertices[0]), int(n_vertices[1]))
        self.vertices = tuple(verts)
        n_left = verts[0].size
        self.slices = (slice(0, n_left), slice(n_left, n_left + verts[1].size))
        self.n_features = n_left + verts[1].size

    def __repr__(self):
        return (f"Hemispheres(n_vertices={self.n_vertices}, "
                f"kept=({self.vertices[0].size}, {self.vertices[1].size}))")

    def _hemi_matrix(self, values, hemi_index, name):
        n = self.n_vertices[hemi_index]
        arr = np.asarray(values, dtype=np.float64)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != n:
            raise ValueError(
                f"{name} must have shape (n_samples, {n}) or ({n},): one value per "
                f"vertex of the {_HEMIS[hemi_index]} hemisphere, got {np.shape(values)}."
            )
        return arr

    def transform(self, left, right):
        """Data matrix from per-hemisphere maps.

        Parameters
        ----------
        left, right : array-like of shape (n_samples, n_vertices) or (n_vertices,)
            Subject-major (one row per subject).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        lm = self._hemi_matrix(left, 0, "left")
        rm = self._hemi_matrix(right, 1, "right")
        if lm.shape[0] != rm.shape[0]:
            raise ValueError(
                f"left has {lm.shape[0]} samples but right has {rm.shape[0]}; both "
                "hemispheres need one map per subject."
            )
        return np.ascontiguousarray(
            np.concatenate([lm[:, self.vertices[0]], rm[:, self.vertices[1]]], axis=1)
        )

    def inverse_transform(self, V, fill_value=0.0):
        """Per-hemisphere vertex maps of a vector or of the rows of a matrix.

        Parameters
        ----------
        V : array-like of shape (n_features,) or (n_components, n_features)
            E.g. ``SPCATV.components_``.
        fill_value : float, default=0.0
            Value at masked vertices (``np.nan`` hides them in plots).

        Returns
        -------
        dict
            ``{"left": ..., "right": ...}``, each of shape (n_vertices,) or
            (n_vertices, n_components) (vertex-major, as nilearn and GIFTI).
        """
        V = np.asarray(V, dtype=np.float64)
        if V.ndim not in (1, 2) or V.shape[-1] != self.n_features:
            raise ValueError(
                f"V must have shape ({self.n_features},) or (n_components, "
                f"{self.n_features}), got {V.shape}."
            )
        out = {}
        for h, hemi in enumerate(_HEMIS):
            block = V[..., self.slices[h]]
            shape = (self.n_vertices[h],) + ((V.shape[0],) if V.ndim == 2 else ())
            full = np.full(shape, fill_value, dtype=np.float64)
            full[self.vertices[h]] = block.T if V.ndim == 2 else block
            out[hemi] = full
        return out

    def save(self, V, left_path, right_path, *, fill_value=0.0):
        """Write the maps of :meth:`inverse_transform` per hemisphere.

        Parameters
        ----------
        V : array-like of shape (n_features,) or (n_components, n_features)
        left_path, right_path : str or os.PathLike
            ``.gii``/``.gii.gz``, ``.mgh``/``.mgz`` (see :func:`write_surf_data`).
        fill_value : float, default=0.0

        Returns
        -------
        (str, str)
        """
        maps = self.inverse_transform(V, fill_value=fill_value)
        return (write_surf_data(maps["left"], left_path),
                write_surf_data(maps["right"], right_path))

    def to_surface_image(self, V, mesh, fill_value=0.0):
        """A nilearn ``SurfaceImage`` of the maps on ``mesh`` (nilearn needed).

        Parameters
        ----------
        V : array-like of shape (n_features,) or (n_components, n_features)
        mesh : nilearn PolyMesh or dict
            E.g. ``nilearn.datasets.load_fsaverage("fsaverage5")["pial"]``.
        fill_value : float, default=0.0
        """
        try:
            from nilearn.surface import SurfaceImage
        except ImportError:  # pragma: no cover
            raise ImportError("to_surface_image needs nilearn: pip install nilearn.") from None
        return SurfaceImage(mesh=mesh, data=self.inverse_transform(V, fill_value))


def tv_from_hemispheres(left_mesh, right_mesh=None, mask_left=None, mask_right=None,
                        kind="edges"):
    """Block-diagonal TV operator of both hemispheres, and the column mapping.

    Parameters
    ----------
    left_mesh, right_mesh : path, (coords, faces) or mesh object
        See :func:`load_surf_mesh`. A nilearn ``PolyMesh`` holding both
        hemispheres may be given as ``left_mesh`` with ``right_mesh=None``.
    mask_left, mask_right : array-like of bool or path, optional
        Kept vertices (e.g. :func:`load_cortex_mask`); a path is read with
        :func:`load_cortex_mask`.
    kind : {"edges", "gradient"}, default="edges"
        See :func:`tv_from_mesh`.

    Returns
    -------
    operator : GroupOperator
        Columns: kept left vertices, then kept right vertices. ``norm2`` is the
        larger block's bound.
    hemispheres : Hemispheres
    """
    kind = _check_kind(kind)
    left_mesh, right_mesh = _split_polymesh(left_mesh, right_mesh)
    ops, sizes, masks = [], [], []
    for hemi, mesh, mask in (("left", left_mesh, mask_left), ("right", right_mesh, mask_right)):
        coords, faces = load_surf_mesh(mesh, f"{hemi}_mesh")
        n = _check_coords(coords, f"{hemi}_mesh coords").shape[0]
        if isinstance(mask, (str, bytes, os.PathLike)):
            mask = load_cortex_mask(mask, n, name=f"mask_{hemi}")
        mask = _check_mask(mask, n, f"mask_{hemi}", f"{hemi}_mesh")
        checked = _check_mesh(coords, faces, mask, prefix=f"{hemi}_mesh ")
        ops.append(_build(checked, kind))
        sizes.append(n)
        masks.append(mask)
    return block_diag_operators(ops), Hemispheres(sizes, masks)


def _subject_maps(data, n_vertices, name):
    """(n_samples, n_vertices) from a list of files/arrays, one file or an array."""
    if isinstance(data, (list, tuple)):
        if not data:
            raise ValueError(f"{name} is empty: give one map per subject.")
        rows = []
        for i, item in enumerate(data):
            arr = np.asarray(load_surf_data(item, f"{name}[{i}]"), dtype=np.float64)
            if arr.ndim not in (1, 2) or arr.shape[0] != n_vertices:
                raise ValueError(
                    f"{name}[{i}] has shape {arr.shape}, expected ({n_vertices},) or "
                    f"({n_vertices}, n_maps): one value per vertex of the mesh."
                )
            rows.append(arr[None, :] if arr.ndim == 1 else arr.T)  # files: vertex-major
        return np.concatenate(rows, axis=0)
    arr = np.asarray(load_surf_data(data, name), dtype=np.float64)
    if isinstance(data, (str, bytes, os.PathLike)):
        arr = arr[:, None] if arr.ndim == 1 else arr  # files are vertex-major
        if arr.shape[0] != n_vertices:
            raise ValueError(
                f"{name} has {arr.shape[0]} vertices, expected {n_vertices} (the mesh)."
            )
        return arr.T
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != n_vertices:
        raise ValueError(
            f"{name} must have shape (n_samples, {n_vertices}), got {arr.shape}."
        )
    return arr


def load_surface_data(left_data, right_data, left_mesh, right_mesh=None, *,
                      mask_left=None, mask_right=None, kind="edges"):
    """Everything SPCA-TV needs from per-subject maps on two hemispheres.

    Parameters
    ----------
    left_data, right_data : list of paths/arrays, path or array-like
        One map per subject: a list of files (``lh.thickness``, ``.mgh``,
        ``.gii``) or of arrays, one multi-map file (vertex-major, e.g. a
        FreeSurfer qcache stack ``lh.thickness.fwhm10.fsaverage.mgh`` with one
        frame per subject), or an array of shape (n_samples, n_vertices).
    left_mesh, right_mesh : path, (coords, faces) or mesh object
        Surfaces defining the neighbourhoods (white or sphere, say); a
        nilearn ``PolyMesh`` as ``left_mesh`` with ``right_mesh=None``.
    mask_left, mask_right : array-like of bool or path, optional
        Cortex masks (medial wall out); see :func:`load_cortex_mask`.
    kind : {"edges", "gradient"}, default="edges"
        See :func:`tv_from_mesh`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Columns: kept left vertices then kept right vertices. Vertices that
        are NaN or infinite in any map are removed (with a warning).
    operator : GroupOperator
    hemispheres : Hemispheres
        ``hemispheres.inverse_transform(est.components_)`` gives the loadings
        per hemisphere; ``hemispheres.save(...)`` writes them.
    """
    kind = _check_kind(kind)
    left_mesh, right_mesh = _split_polymesh(left_mesh, right_mesh)
    meshes = []
    for hemi, mesh in (("left", left_mesh), ("right", right_mesh)):
        meshes.append(load_surf_mesh(mesh, f"{hemi}_mesh"))
    maps, masks = [], []
    for h, (hemi, data, mask) in enumerate(
        (("left", left_data, mask_left), ("right", right_data, mask_right))
    ):
        n = meshes[h][0].shape[0]
        maps.append(_subject_maps(data, n, f"{hemi}_data"))
        if isinstance(mask, (str, bytes, os.PathLike)):
            mask = load_cortex_mask(mask, n, name=f"mask_{hemi}")
        masks.append(_check_mask(mask, n, f"mask_{hemi}", f"{hemi}_mesh"))
    if maps[0].shape[0] != maps[1].shape[0]:
        raise ValueError(
            f"left_data has {maps[0].shape[0]} maps but right_data has "
            f"{maps[1].shape[0]}; give one map per subject for each hemisphere."
        )
    n_dropped = 0
    for h in range(2):
        keep = np.ones(maps[h].shape[1], dtype=bool) if masks[h] is None else masks[h].copy()
        bad = keep & ~np.all(np.isfinite(maps[h]), axis=0)
        if bad.any():
            n_dropped += int(bad.sum())
            keep &= ~bad
            masks[h] = keep
    if n_dropped:
        warnings.warn(
            f"{n_dropped} vertex(es) are NaN or infinite in at least one map; they were "
            "removed from the cortex mask.", UserWarning, stacklevel=2,
        )
    operator, hemis = tv_from_hemispheres(meshes[0], meshes[1], masks[0], masks[1], kind)
    return hemis.transform(maps[0], maps[1]), operator, hemis


def load_surface_image(left_data, right_data, left_mesh, right_mesh=None):
    """A nilearn ``SurfaceImage`` of per-subject maps on two hemispheres.

    What users have on disk (FreeSurfer or GIFTI meshes, per-subject
    ``lh.thickness``/``.mgh``/``.gii`` files, FreeSurfer qcache stacks with one
    frame per subject) becomes the input of :class:`neurospca.ImageSPCATV`.
    Vertex order is the files' order; nothing is masked here.

    Parameters
    ----------
    left_data, right_data : list of paths/arrays, path or array-like
        One map per subject (see :func:`load_surface_data`): a list of files,
        one multi-frame file (``lh.thickness.fwhm10.fsaverage.mgh`` holding N
        frames gives N samples), or an array (n_samples, n_vertices).
    left_mesh, right_mesh : path, (coords, faces) or mesh object
        See :func:`load_surf_mesh`; a nilearn ``PolyMesh`` as ``left_mesh``
        with ``right_mesh=None``. nilearn meshes are kept as they are.

    Returns
    -------
    nilearn.surface.SurfaceImage
        Data of shape (n_vertices, n_samples) per hemisphere.

    Raises
    ------
    ValueError
        Maps whose number of vertices differs from the mesh's, or a different
        number of maps per hemisphere.
    """
    try:
        from nilearn.surface import InMemoryMesh, PolyMesh, SurfaceImage
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError('load_surface_image needs nilearn: pip install "neurospca[report]" '
                          "(or pip install nilearn).") from None
    left_mesh, right_mesh = _split_polymesh(left_mesh, right_mesh)
    meshes, maps = {}, {}
    for hemi, mesh, data in (("left", left_mesh, left_data), ("right", right_mesh, right_data)):
        coords, faces = load_surf_mesh(mesh, f"{hemi}_mesh")
        coords = _check_coords(coords, f"{hemi}_mesh coords")
        if hasattr(mesh, "coordinates") and hasattr(mesh, "n_vertices"):
            meshes[hemi] = mesh  # a nilearn mesh: keep it (and its file, if any)
        else:
            meshes[hemi] = InMemoryMesh(coords, _check_faces(faces, coords.shape[0],
                                                             f"{hemi}_mesh faces"))
        maps[hemi] = _subject_maps(data, coords.shape[0], f"{hemi}_data")
    if maps["left"].shape[0] != maps["right"].shape[0]:
        raise ValueError(
            f"left_data has {maps['left'].shape[0]} maps but right_data has "
            f"{maps['right'].shape[0]}; give one map per subject for each hemisphere."
        )
    return SurfaceImage(mesh=PolyMesh(left=meshes["left"], right=meshes["right"]),
                        data={h: np.ascontiguousarray(maps[h].T) for h in _HEMIS})


def fit_surfaces(left_data, right_data, left_mesh, right_mesh=None, estimator=None, *,
                 mask_left=None, mask_right=None, kind="edges"):
    """Fit SPCA-TV on per-subject maps of both hemispheres; loadings back per hemisphere.

    A thin layer over :class:`neurospca.ImageSPCATV` (nilearn needed): the
    maps become a ``SurfaceImage`` (:func:`load_surface_image`) fitted with the
    given masks.

    Parameters
    ----------
    left_data, right_data : list of paths/arrays, path or array-like
        One map per subject (see :func:`load_surface_data`), e.g. the
        subjects' ``lh.thickness`` / ``rh.thickness`` files resampled to a
        common surface, or qcache stacks.
    left_mesh, right_mesh : path, (coords, faces) or mesh object
        The common surfaces (see :func:`load_surf_mesh`); a nilearn
        ``PolyMesh`` as ``left_mesh`` with ``right_mesh=None``.
    estimator : estimator, optional
        An unfitted estimator with an ``operator`` parameter (default
        ``neurospca.SPCATV()``); it is cloned and given the two-hemisphere TV
        operator.
    mask_left, mask_right : array-like of bool or path, optional
        Cortex masks (see :func:`load_cortex_mask`). A hemisphere without a
        mask keeps the vertices that vary across the maps: the medial wall,
        constant, is left out (with a warning saying how many).
    kind : {"edges", "gradient"}, default="edges"
        See :func:`tv_from_mesh`.

    Returns
    -------
    estimator : the fitted clone
    loadings : dict
        ``{"left": (n_vertices_left, n_components), "right": ...}``, zero on
        masked vertices; write them with :meth:`Hemispheres.save`.
    hemispheres : Hemispheres
    """
    from ..image import ImageSPCATV
    from ..masking import _with_operator

    kind = _check_kind(kind)
    template = _with_operator(estimator, None)
    img = load_surface_image(left_data, right_data, left_mesh, right_mesh)
    mask = None if mask_left is None and mask_right is None else (mask_left, mask_right)
    model = ImageSPCATV(mask=mask)
    model._template, model._tv_kind = template, kind
    model.fit(img)
    hemis = model.space_
    return model.estimator_, hemis.inverse_transform(model.estimator_.components_), hemis
