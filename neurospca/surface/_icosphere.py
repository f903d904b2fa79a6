"""Subdivided icosahedra: test and benchmark meshes of known geometry."""

import numpy as np

__all__ = ["icosphere"]


def _icosahedron():
    t = (1.0 + 5.0**0.5) / 2.0
    v = np.array(
        [
            [-1, t, 0],
            [1, t, 0],
            [-1, -t, 0],
            [1, -t, 0],
            [0, -1, t],
            [0, 1, t],
            [0, -1, -t],
            [0, 1, -t],
            [t, 0, -1],
            [t, 0, 1],
            [-t, 0, -1],
            [-t, 0, 1],
        ],
        dtype=np.float64,
    )
    f = np.array(
        [
            [0, 11, 5],
            [0, 5, 1],
            [0, 1, 7],
            [0, 7, 10],
            [0, 10, 11],
            [1, 5, 9],
            [5, 11, 4],
            [11, 10, 2],
            [10, 7, 6],
            [7, 1, 8],
            [3, 9, 4],
            [3, 4, 2],
            [3, 2, 6],
            [3, 6, 8],
            [3, 8, 9],
            [4, 9, 5],
            [2, 4, 11],
            [6, 2, 10],
            [8, 6, 7],
            [9, 8, 1],
        ],
        dtype=np.int64,
    )
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
            [
                np.stack([f[:, 0], m01, m20], 1),
                np.stack([m01, f[:, 1], m12], 1),
                np.stack([m20, m12, f[:, 2]], 1),
                np.stack([m01, m12, m20], 1),
            ],
            axis=1,
        ).reshape(-1, 3)
        v = np.concatenate([v, mid])
    return v * float(radius), f
