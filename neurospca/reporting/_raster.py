"""The report's four surface views drawn by numpy: a z-buffer rasteriser.

The report's surface figure is four fixed views (lateral and medial of each
hemisphere, parallel projection, one light at the camera) of meshes coloured
per vertex. Drawing them with pyvista costs importing VTK and pyvista (which
imports ``matplotlib.pyplot``) and creating an OpenGL context: 1.8-2.1 s CPU for
a process's first surface figure, against 0.1-0.2 s for the drawing itself.
:class:`RasterSurfaceCanvas` draws the same views with numpy alone: vertices
projected as pyvista's camera does (same direction, up vector, focal point and
parallel scale), Gouraud shading (the vertex colours times a Lambert term of the
area-weighted vertex normals against the view direction), and a z-buffer at
the pixel centres. Triangles are rasterised in batches of equal bounding-box
size, so a mesh of any density costs a few vectorised passes. No anti-aliasing
(pyvista's off-screen shots have none either).
"""

import numpy as np

__all__ = ["RasterSurfaceCanvas", "rasterize", "closed_orientation"]

#: ambient share of the shading (the rest is Lambertian, light at the camera)
AMBIENT = 0.3


def _vertex_normals(coords, faces):
    """Unit vertex normals: the sum of the adjacent faces' area-weighted normals."""
    tri = coords[faces]
    face_n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normals = np.zeros_like(coords)
    for j in range(3):
        np.add.at(normals, faces[:, j], face_n)
    norm = np.linalg.norm(normals, axis=1, keepdims=True)
    return normals / np.where(norm > 0, norm, 1.0)


def closed_orientation(coords, faces):
    """1 if the mesh is closed with outward faces (counter-clockwise seen from outside),
    -1 if closed with inward faces, 0 if not closed (an edge not shared by exactly two
    faces, or no enclosed volume)."""
    faces = np.asarray(faces, dtype=np.intp)
    edges = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    _, counts = np.unique(edges[:, 0] * (int(faces.max()) + 1) + edges[:, 1], return_counts=True)
    if faces.size == 0 or np.any(counts != 2):
        return 0
    tri = np.asarray(coords, dtype=np.float64)[faces]
    tri = tri - tri.reshape(-1, 3).mean(axis=0)
    volume = np.einsum("ij,ij->i", tri[:, 0], np.cross(tri[:, 1], tri[:, 2])).sum()
    return 0 if volume == 0 else int(np.sign(volume))


def _camera(direction, up=(0.0, 0.0, 1.0)):
    """(right, up, toward-camera) unit vectors of a camera looking along -direction."""
    d = np.asarray(direction, dtype=np.float64)
    d = d / np.linalg.norm(d)
    u = np.asarray(up, dtype=np.float64)
    u = u - (u @ d) * d
    u /= np.linalg.norm(u)
    return np.cross(u, d), u, d


def _candidates(lo_x, lo_y, kx, ky):
    """Pixels of each triangle's kx x ky box from (lo_x, lo_y): two (T, kx * ky) arrays."""
    gx, gy = np.meshgrid(np.arange(kx), np.arange(ky))
    return lo_x[:, None] + gx.ravel()[None, :], lo_y[:, None] + gy.ravel()[None, :]


def _batch(x, y, z, rgb, px, py):
    """Covered pixel centres of a batch of triangles: (pixel x, y, depth, colour).

    x, y, z : (T, 3) screen coordinates and depth of the corners; rgb : (T, 3, 3)
    corner colours; px, py : (T, C) candidate pixels.
    """
    cx, cy = (px + 0.5).astype(np.float32), (py + 0.5).astype(np.float32)
    x0, x1, x2 = x[:, :1], x[:, 1:2], x[:, 2:]
    y0, y1, y2 = y[:, :1], y[:, 1:2], y[:, 2:]
    area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    ok = np.abs(area[:, 0]) > 1e-12
    area = np.where(np.abs(area) > 1e-12, area, 1.0)
    w0 = ((x1 - cx) * (y2 - cy) - (x2 - cx) * (y1 - cy)) / area
    w1 = ((x2 - cx) * (y0 - cy) - (x0 - cx) * (y2 - cy)) / area
    w2 = 1.0 - w0 - w1
    eps = -1e-9
    inside = (w0 >= eps) & (w1 >= eps) & (w2 >= eps) & ok[:, None]
    t, c = np.nonzero(inside)
    w = np.stack([w0[t, c], w1[t, c], w2[t, c]], axis=1)  # (n, 3)
    depth = np.einsum("nj,nj->n", w, z[t])
    color = np.einsum("nj,njc->nc", w, rgb[t])
    return px[t, c], py[t, c], depth, color


def rasterize(coords, faces, colors, direction, center, scale, size, orientation=0):
    """One view of a mesh: RGB pixels, white where no triangle covers the pixel centre.

    Parameters
    ----------
    coords : ndarray of shape (n_vertices, 3)
    faces : ndarray of shape (n_faces, 3), int
    colors : ndarray of shape (n_vertices, 3), uint8
    direction : (3,) array-like
        From the focal point towards the camera (as ``plotter.view_vector``).
    center : (3,) array-like
        Focal point, drawn at the centre of the image.
    scale : float
        Half of the image's height in world units (pyvista's ``parallel_scale``).
    size : (int, int)
        (width, height) in pixels.
    orientation : {0, 1, -1}, default=0
        For a closed mesh (:func:`closed_orientation`), the sign of its outward
        normals: faces turned away from the camera are skipped (a closed surface
        hides them). 0 draws every face.

    Returns
    -------
    ndarray of shape (height, width, 3), uint8
    """
    width, height = size
    coords = np.asarray(coords, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.intp)
    right, up, toward = _camera(direction)
    rel = coords - np.asarray(center, dtype=np.float64)
    ppu = 0.5 * height / float(scale)  # pixels per world unit
    sx = rel @ right * ppu + 0.5 * width
    sy = 0.5 * height - rel @ up * ppu
    depth = rel @ toward
    light = AMBIENT + (1 - AMBIENT) * np.abs(_vertex_normals(coords, faces) @ toward)
    shaded = np.asarray(colors, dtype=np.float64) * light[:, None]
    image = np.full((height, width, 3), 255.0, dtype=np.float32)
    if orientation:  # a closed mesh: faces turned away are hidden by nearer ones
        tri = rel[faces]
        normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]) @ toward
        faces = faces[orientation * normal > 0]
    x, y = sx[faces].astype(np.float32), sy[faces].astype(np.float32)
    # the pixels whose centres (i + 0.5) lie in each triangle's box, inside the image
    lo_x = np.maximum(np.ceil(x.min(axis=1) - 0.5), 0).astype(np.intp)
    lo_y = np.maximum(np.ceil(y.min(axis=1) - 0.5), 0).astype(np.intp)
    kx = np.minimum(np.floor(x.max(axis=1) - 0.5), width - 1).astype(np.intp) - lo_x + 1
    ky = np.minimum(np.floor(y.max(axis=1) - 0.5), height - 1).astype(np.intp) - lo_y + 1
    hit = np.flatnonzero((kx > 0) & (ky > 0))
    shape_id = kx[hit] * (height + 1) + ky[hit]  # one batch per box shape
    order = np.argsort(shape_id, kind="stable")
    hit, shape_id = hit[order], shape_id[order]
    starts = np.flatnonzero(np.r_[True, shape_id[1:] != shape_id[:-1]])
    z, rgb = depth[faces].astype(np.float32), shaded[faces].astype(np.float32)
    parts = []
    for sel in np.split(hit, starts[1:]):
        bx, by = int(kx[sel[0]]), int(ky[sel[0]])
        for chunk in np.array_split(sel, len(sel) * bx * by // 1_000_000 + 1):
            px, py = _candidates(lo_x[chunk], lo_y[chunk], bx, by)
            parts.append(_batch(x[chunk], y[chunk], z[chunk], rgb[chunk], px, py))
    if not parts:
        return np.full((height, width, 3), 255, dtype=np.uint8)
    px, py, d, color = (np.concatenate(p) for p in zip(*parts, strict=True))
    pix = py * width + px
    order = np.argsort(d, kind="stable")  # far to near: the nearest is written last
    image = image.reshape(-1, 3)
    image[pix[order]] = color[order]
    image = image.reshape(height, width, 3)
    return np.clip(np.rint(image), 0, 255).astype(np.uint8)


class RasterSurfaceCanvas:
    """Both hemispheres' views drawn by :func:`rasterize`, with
    :class:`~neurospca.reporting._canvases.SurfaceCanvas`'s interface and camera.

    Parameters
    ----------
    meshes : dict
        ``{"left": (coords, faces), "right": (coords, faces)}``, checked.
    size : (int, int), default=(420, 320)
        Size of each view.
    """

    def __init__(self, meshes, size=(420, 320)):
        self.size = size
        self._meshes = {
            h: (np.asarray(meshes[h][0], np.float64), np.asarray(meshes[h][1], np.intp))
            for h in ("left", "right")
        }
        self._orientation = {h: closed_orientation(*self._meshes[h]) for h in self._meshes}

    def shots(self, colors, views):
        """Images of ``views`` ((hemi, name, direction) triples), vertices coloured by
        ``colors`` ({"left": uint8 (n, 3), "right": ...}); list of RGB arrays."""
        width, height = self.size
        shots = []
        for hemi in ("left", "right"):
            coords, faces = self._meshes[hemi]
            lo, hi = coords.min(axis=0), coords.max(axis=0)
            center = (lo + hi) / 2
            scale = 0.5 * max(hi[2] - lo[2], (hi[1] - lo[1]) * height / width) * 1.05
            for h, _, direction in views:
                if h == hemi:
                    shots.append(
                        rasterize(
                            coords,
                            faces,
                            colors[hemi],
                            direction,
                            center,
                            scale,
                            self.size,
                            self._orientation[hemi],
                        )
                    )
        return shots

    def close(self):
        """Nothing to release (kept for the canvas interface)."""
