"""The report's numpy rasteriser of surface views (``reporting._raster``): coverage,
depth, colours and shading, the camera of the pyvista canvas, and no VTK import."""

import numpy as np
import pytest

from neurospca.reporting._raster import AMBIENT, RasterSurfaceCanvas, closed_orientation, rasterize

from .test_report_surface_png import _fresh

WHITE = np.array([255, 255, 255])


def _ink(img):
    return np.any(img != 255, axis=-1)


def _square(half, z=0.0):
    """A square in the plane x = z (facing +x), corners at y, z = +-half: 2 triangles."""
    coords = np.array(
        [[z, -half, -half], [z, half, -half], [z, half, half], [z, -half, half]], dtype=float
    )
    return coords, np.array([[0, 1, 2], [0, 2, 3]])


def test_square_covers_exactly_its_projected_pixels():
    coords, faces = _square(10.0)
    colors = np.full((4, 3), 100, np.uint8)
    # 100 x 80 pixels, 40 world units high: 2 pixels per unit; the square is 40 x 40 px
    img = rasterize(coords, faces, colors, (1, 0, 0), (0, 0, 0), 20.0, (100, 80))
    ink = _ink(img)
    assert ink.sum() == 40 * 40
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    assert (rows[0], rows[-1], cols[0], cols[-1]) == (20, 59, 30, 69)  # centred
    # facing the camera: the full light, the vertex colour itself
    assert np.all(img[ink] == 100)


def test_disk_of_a_sphere_and_lambert_shading():
    # a UV sphere of radius 10 seen from +x: its silhouette is a disk of radius 20 px
    th, ph = np.meshgrid(np.linspace(0, np.pi, 61), np.linspace(0, 2 * np.pi, 121)[:-1])
    coords = 10 * np.stack(
        [np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], axis=-1
    ).reshape(-1, 3)
    n_ph, n_th = th.shape
    idx = np.arange(n_ph * n_th).reshape(n_ph, n_th)
    nxt = np.roll(idx, -1, axis=0)
    faces = np.concatenate(
        [
            np.stack([idx[:, :-1], nxt[:, :-1], nxt[:, 1:]], -1).reshape(-1, 3),
            np.stack([idx[:, :-1], nxt[:, 1:], idx[:, 1:]], -1).reshape(-1, 3),
        ]
    )
    colors = np.full((len(coords), 3), 200, np.uint8)
    img = rasterize(coords, faces, colors, (1, 0, 0), (0, 0, 0), 25.0, (100, 100))
    ink = _ink(img)
    assert abs(ink.sum() / (np.pi * 20**2) - 1) < 0.03
    # brightest at the centre (normal towards the camera), darker at the rim
    assert img[50, 50, 0] >= 198 and img[50, 50, 0] <= 200
    rim = img[50, 31, 0]  # one pixel inside the silhouette's left edge
    assert AMBIENT * 200 - 1 <= rim < 0.6 * 200


def _sphere(n_th=61, n_ph=120, radius=10.0):
    th, ph = np.meshgrid(np.linspace(0, np.pi, n_th), np.linspace(0, 2 * np.pi, n_ph + 1)[:-1])
    coords = radius * np.stack(
        [np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], axis=-1
    ).reshape(-1, 3)
    idx = np.arange(coords.shape[0]).reshape(th.shape)
    nxt = np.roll(idx, -1, axis=0)
    faces = np.concatenate(
        [
            np.stack([idx[:, :-1], nxt[:, :-1], nxt[:, 1:]], -1).reshape(-1, 3),
            np.stack([idx[:, :-1], nxt[:, 1:], idx[:, 1:]], -1).reshape(-1, 3),
        ]
    )
    # merge the poles' copies into one vertex each: a closed mesh
    pole = np.where(np.isclose(np.abs(coords[:, 2]), radius))[0]
    first = {round(coords[i, 2]): i for i in pole[::-1]}
    remap = np.arange(coords.shape[0])
    remap[pole] = [first[round(coords[i, 2])] for i in pole]
    faces = remap[faces]
    faces = faces[(faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2])]
    faces = faces[faces[:, 0] != faces[:, 2]]
    return coords, faces


def test_culling_a_closed_mesh_changes_no_pixel():
    coords, faces = _sphere()
    orientation = closed_orientation(coords, faces)
    assert orientation in (1, -1)
    assert closed_orientation(coords, faces[:, ::-1]) == -orientation
    assert closed_orientation(coords, faces[1:]) == 0  # a hole: not closed
    colors = np.random.default_rng(0).integers(0, 255, (len(coords), 3)).astype(np.uint8)
    for direction in ((1, 0, 0), (0.3, -1, 0.2)):
        args = (coords, faces, colors, direction, (0, 0, 0), 12.0, (90, 70))
        assert np.array_equal(rasterize(*args), rasterize(*args, orientation))
    # the wrong sign culls the visible half: the camera sees the inside, not the outside
    wrong = rasterize(coords, faces, colors, (1, 0, 0), (0, 0, 0), 12.0, (90, 70), -orientation)
    assert not np.array_equal(wrong, rasterize(*args[:3], (1, 0, 0), *args[4:]))


def test_nearer_triangle_hides_the_farther_in_either_order():
    near, faces = _square(5.0, z=3.0)
    far, _ = _square(10.0, z=-3.0)
    coords = np.vstack([near, far])
    colors = np.vstack([np.full((4, 3), (250, 0, 0)), np.full((4, 3), (0, 0, 250))]).astype(
        np.uint8
    )
    for order in ([0, 1, 2, 3], [2, 3, 0, 1]):
        all_faces = np.vstack([faces, faces + 4])[order]
        img = rasterize(coords, all_faces, colors, (1, 0, 0), (0, 0, 0), 20.0, (80, 80))
        red = (img[..., 0] == 250) & (img[..., 2] == 0)
        blue = (img[..., 2] == 250) & (img[..., 0] == 0)
        assert red.sum() == 20 * 20 and blue.sum() == 40 * 40 - 20 * 20
        # seen from behind, the other square is in front
        back = rasterize(coords, all_faces, colors, (-1, 0, 0), (0, 0, 0), 20.0, (80, 80))
        assert np.all(back[_ink(back)][:, 2] == 250)


def test_colours_interpolated_between_vertices():
    coords, faces = _square(10.0)
    colors = np.array([[0, 0, 0], [0, 0, 0], [240, 0, 0], [240, 0, 0]], np.uint8)  # low z dark
    img = rasterize(coords, faces, colors, (1, 0, 0), (0, 0, 0), 20.0, (100, 80))
    column = img[20:60, 50, 0].astype(int)  # top (z = +10, red) to bottom (z = -10, black)
    assert np.all(np.diff(column) <= 0) and column[0] > 230 and column[-1] < 10
    assert np.all(img[_ink(img)][:, 1:] == 0)


def test_canvas_views_fit_the_window_as_the_pyvista_canvas_does():
    from neurospca.reporting.plotting import _VIEWS

    rng = np.random.default_rng(0)
    coords, faces = _square(10.0)
    coords = coords + rng.normal(0, 0.01, coords.shape)
    canvas = RasterSurfaceCanvas({"left": (coords, faces), "right": (coords + [5, 0, 0], faces)})
    colors = {h: np.full((4, 3), 90, np.uint8) for h in ("left", "right")}
    shots = canvas.shots(colors, _VIEWS)
    assert len(shots) == 4 and all(s.shape == (320, 420, 3) for s in shots)
    for shot in shots:  # the z extent fills 1/1.05 of the height
        rows = np.flatnonzero(_ink(shot).any(axis=1))
        assert abs((rows[-1] - rows[0] + 1) / 320 - 1 / 1.05) < 0.02
        assert np.all(shot[0] == WHITE) and np.all(shot[-1] == WHITE)


def test_report_surface_figure_imports_no_vtk():
    code = (
        "import sys, numpy as np\n"
        "from neurospca.reporting._canvases import ReportCanvases\n"
        "from neurospca.reporting.plotting import surface_component_png\n"
        "th, ph = np.meshgrid(np.linspace(0, np.pi, 21), np.linspace(0, 2 * np.pi, 41)[:-1])\n"
        "c = 10 * np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)],"
        " -1).reshape(-1, 3)\n"
        "i = np.arange(c.shape[0]).reshape(th.shape); n = np.roll(i, -1, 0)\n"
        "f = np.concatenate([np.stack([i[:, :-1], n[:, :-1], n[:, 1:]], -1).reshape(-1, 3),"
        " np.stack([i[:, :-1], n[:, 1:], i[:, 1:]], -1).reshape(-1, 3)])\n"
        "meshes = {'left': (c, f), 'right': (c, f)}\n"
        "canvas = ReportCanvases(None, meshes, None, 'auto', 80).surface(meshes)\n"
        "maps = {h: c[:, 2] / 10 for h in meshes}\n"
        "png = surface_component_png(maps, meshes, canvas)\n"
        "import json\n"
        "print(json.dumps([type(canvas).__name__, len(png) > 1000,"
        " [m for m in ('vtk', 'pyvista', 'matplotlib') if m in sys.modules]]))\n"
    )
    assert _fresh(code) == ["RasterSurfaceCanvas", True, []]


@pytest.mark.parametrize("engine", ["pyvista", "matplotlib"])
def test_other_engines_keep_their_canvas(engine):
    from neurospca.reporting._canvases import ReportCanvases

    coords, faces = _square(10.0)
    meshes = {"left": (coords, faces), "right": (coords, faces)}
    canvases = ReportCanvases(None, meshes, None, engine, 80)
    if engine == "matplotlib":
        assert canvases.surface(meshes) is None
    else:
        pytest.importorskip("pyvista")
        from neurospca.reporting.plotting import pyvista_available

        if not pyvista_available():
            pytest.skip("pyvista cannot render here")
        assert type(canvases.surface(meshes)).__name__ == "SurfaceCanvas"
        canvases.close()
