"""Meshes: the mesh TV operators, FreeSurfer/GIFTI/MGH I/O, cortex masks, hemispheres.

Real data: nilearn's bundled fsaverage5 (no download). Larger meshes are
generated (icospheres).
"""

import os

import nibabel as nib
import numpy as np
import pytest

import neurospca
from neurospca.masking import tv_from_mask
from neurospca.operators import lanczos_norm2
from neurospca.surface import (
    Hemispheres,
    block_diag_operators,
    icosphere,
    load_cortex_mask,
    load_surf_data,
    load_surf_mesh,
    load_surface_data,
    load_surface_subjects,
    mesh_edges,
    tv_from_hemispheres,
    tv_from_mesh,
    write_surf_data,
    write_surf_mesh,
)


@pytest.fixture(scope="module")
def fs5():
    """Paths of nilearn's bundled fsaverage5 GIFTI files."""
    datasets = pytest.importorskip("nilearn.datasets")
    return datasets.fetch_surf_fsaverage("fsaverage5")


@pytest.fixture(scope="module")
def fs5_left(fs5):
    coords, faces = load_surf_mesh(fs5["pial_left"])
    thick = load_surf_data(fs5["thick_left"])
    return coords, faces, thick


def grid_mesh(nx, ny):
    """Flat triangulated nx x ny grid, vertex (i, j) = index i * ny + j (C order);
    each square is split along its anti-diagonal (i+1, j)-(i, j+1)."""
    i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    coords = np.stack([i.ravel(), j.ravel(), np.zeros(nx * ny)], axis=1).astype(float)
    idx = np.arange(nx * ny).reshape(nx, ny)
    v00, v10 = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel()
    v01, v11 = idx[:-1, 1:].ravel(), idx[1:, 1:].ravel()
    faces = np.concatenate([np.stack([v00, v10, v01], 1), np.stack([v10, v11, v01], 1)])
    return coords, faces


def edge_rows_by_hand(faces, n_vertices, mask=None):
    """Independent (loop-based) edge operator: {group vertex: sorted [(lo, hi)]}."""
    keep = np.ones(n_vertices, bool) if mask is None else np.asarray(mask)
    edges = set()
    for a, b, c in faces.tolist():
        for p, q in ((a, b), (b, c), (c, a)):
            if keep[p] and keep[q]:
                edges.add((min(p, q), max(p, q)))
    groups = {}
    for lo, hi in sorted(edges):
        groups.setdefault(lo, []).append((lo, hi))
    return groups


# ---------------------------------------------------------------- icosphere


@pytest.mark.parametrize("n", [0, 1, 3])
def test_icosphere_is_a_closed_outward_unit_sphere(n):
    coords, faces = icosphere(n)
    assert coords.shape == (10 * 4**n + 2, 3) and faces.shape == (20 * 4**n, 3)
    np.testing.assert_allclose(np.linalg.norm(coords, axis=1), 1.0, atol=1e-14)
    low, high = mesh_edges(faces, coords.shape[0])
    assert coords.shape[0] - low.size + faces.shape[0] == 2  # Euler characteristic
    # every edge in exactly two faces (closed manifold)
    a, b = faces.ravel(), faces[:, [1, 2, 0]].ravel()
    _, counts = np.unique(np.minimum(a, b) * 10**7 + np.maximum(a, b), return_counts=True)
    assert np.all(counts == 2)
    p = coords[faces]
    normal = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    assert np.all(np.einsum("ij,ij->i", normal, p.mean(axis=1)) > 0)
    # FreeSurfer-like ordering: the icosahedron's vertices come first
    np.testing.assert_array_equal(coords[:12], icosphere(0)[0])
    tv_from_mesh(coords, faces)  # valid mesh (no degenerate/duplicate faces)


def test_icosphere_full_fsaverage_size():
    coords, faces = icosphere(7)
    assert coords.shape == (163842, 3) and faces.shape == (327680, 3)
    degree = np.bincount(np.concatenate(mesh_edges(faces, coords.shape[0])))
    assert degree.min() == 5 and degree.max() == 6  # 12 pentagons, the rest hexagons
    assert np.sum(degree == 5) == 12


def test_icosphere_bad_arguments():
    with pytest.raises(ValueError, match="n_subdivisions"):
        icosphere(-1)
    with pytest.raises(TypeError, match="n_subdivisions"):
        icosphere(2.0)
    with pytest.raises(ValueError, match="radius"):
        icosphere(1, radius=0.0)


# ---------------------------------------------------------------- edge operator


def test_edge_operator_matches_independent_construction():
    coords, faces = icosphere(1)
    rng = np.random.default_rng(0)
    mask = rng.random(coords.shape[0]) > 0.2
    for m in (None, mask):
        op = tv_from_mesh(coords, faces, mask=m)
        expected = edge_rows_by_hand(faces, coords.shape[0], m)
        kept = np.arange(coords.shape[0]) if m is None else np.flatnonzero(m)
        col = {v: c for c, v in enumerate(kept)}
        dense = op.matrix.toarray()
        assert op.n_features == kept.size and op.n_groups == kept.size
        for g, v in enumerate(kept):
            rows = dense[op.group_ptr[g] : op.group_ptr[g + 1]]
            want = np.zeros((len(expected.get(v, [])), kept.size))
            for r, (lo, hi) in enumerate(expected.get(v, [])):
                want[r, col[lo]], want[r, col[hi]] = -1.0, 1.0
            np.testing.assert_array_equal(rows, want)
        # norm2 = 2 * max degree bounds the true norm (A^T A is the Laplacian)
        lap = dense.T @ dense
        degree = np.diag(lap)
        assert op.norm2 == 2 * degree.max()
        np.testing.assert_array_equal(lap - np.diag(degree) <= 0, True)
        assert op.norm2 >= np.linalg.eigvalsh(lap).max() - 1e-12


def test_edge_tv_on_flat_grid_equals_grid_tv():
    """Vertices numbered in C order: the edge rows grouped at the lower vertex
    are the grid's forward differences plus the triangulation's anti-diagonals.
    For maps constant along the anti-diagonals (v = g(i + j), g random) the two
    TVs are equal; for any map the edge TV is at least the grid TV."""
    nx, ny = 9, 13
    coords, faces = grid_mesh(nx, ny)
    rng = np.random.default_rng(1)
    masks = [None, rng.random((nx, ny)) > 0.25]
    i, j = np.indices((nx, ny))
    for m in masks:
        grid_mask = np.ones((nx, ny), bool) if m is None else m
        vmask = None if m is None else m.ravel()
        edge_op = tv_from_mesh(coords, faces, mask=vmask)
        grid_op = tv_from_mask(grid_mask)
        assert edge_op.n_features == grid_op.n_features == grid_mask.sum()
        for _ in range(5):
            g = rng.standard_normal(nx + ny)
            v = g[i + j][grid_mask]
            assert np.isclose(edge_op.value(v), grid_op.value(v), rtol=1e-13)
            w = rng.standard_normal(grid_mask.sum())
            assert edge_op.value(w) >= grid_op.value(w) - 1e-12
        # row by row: dropping the anti-diagonal rows leaves exactly the grid rows
        coo = edge_op.matrix.tocoo()
        kept = np.flatnonzero(grid_mask.ravel())
        pos = coords[kept][:, :2]
        step = np.zeros((edge_op.n_rows, 2))
        np.add.at(step, coo.row, coo.data[:, None] * pos[coo.col])
        axis_rows = np.flatnonzero(np.abs(step).sum(axis=1) == 1)
        assert edge_op.n_rows - axis_rows.size == np.sum(np.abs(step[:, 0] + step[:, 1]) == 0)
        sub = edge_op.matrix[axis_rows]

        def row_pairs(mat):
            return sorted(
                tuple(mat.indices[mat.indptr[r] : mat.indptr[r + 1]].tolist())
                for r in range(mat.shape[0])
            )

        assert row_pairs(sub.tocsr()) == row_pairs(grid_op.matrix)


def test_constant_maps_have_zero_tv(fs5_left):
    coords, faces, _ = fs5_left
    ones = np.ones(coords.shape[0])
    assert tv_from_mesh(coords, faces).value(3.7 * ones) == 0.0
    grad = tv_from_mesh(coords, faces, kind="gradient")
    assert grad.value(3.7 * ones) < 1e-10 * grad.value(coords[:, 0])
    assert grad.value(coords[:, 0]) > 1.0


def test_masked_vertex_has_no_rows():
    coords, faces = icosphere(2)
    n = coords.shape[0]
    k = 37
    mask = np.ones(n, bool)
    mask[k] = False
    degree = np.bincount(np.concatenate(mesh_edges(faces, n)), minlength=n)
    n_tri_k = int(np.any(faces == k, axis=1).sum())
    full_e, cut_e = tv_from_mesh(coords, faces), tv_from_mesh(coords, faces, mask=mask)
    full_g = tv_from_mesh(coords, faces, kind="gradient")
    cut_g = tv_from_mesh(coords, faces, mask=mask, kind="gradient")
    assert cut_e.n_features == cut_g.n_features == n - 1
    assert cut_e.n_rows == full_e.n_rows - degree[k]
    assert cut_g.n_rows == full_g.n_rows - 3 * n_tri_k
    assert cut_g.n_groups == full_g.n_groups - n_tri_k
    # the kept map has the same TV as the full map with the masked vertex's
    # edges and triangles removed: compare with an explicit construction
    keep_faces = faces[~np.any(faces == k, axis=1)]
    v = np.random.default_rng(3).standard_normal(n)
    ref = tv_from_mesh(coords, faces, kind="gradient")
    rows = np.repeat(~np.any(faces == k, axis=1), 3)
    expected = np.linalg.norm((ref.matrix @ v)[rows].reshape(-1, 3), axis=1).sum()
    assert np.isclose(cut_g.value(v[mask]), expected, rtol=1e-12)
    assert keep_faces.shape[0] == cut_g.n_groups


def test_gradient_on_flat_grid_is_exact_for_linear_maps():
    coords, faces = grid_mesh(7, 5)
    coords = coords * [0.5, 2.0, 1.0]  # anisotropic spacing
    op = tv_from_mesh(coords, faces, kind="gradient")
    area = 3.0 * 8.0  # (7-1)*0.5 by (5-1)*2
    a, b = 1.7, -0.4
    v = a * coords[:, 0] + b * coords[:, 1]
    assert np.isclose(op.value(v), np.hypot(a, b) * area, rtol=1e-12)
    # each group is area_t * grad: rows of a triangle times (x, y, z) = area * I
    tri = op.matrix[:3].toarray()
    cols = np.flatnonzero(np.any(tri != 0, axis=0))
    np.testing.assert_allclose(
        tri[:, cols] @ coords[cols], 0.5 * 0.5 * 2.0 * np.diag([1, 1, 0]), atol=1e-14
    )


def test_gradient_tv_converges_to_integral_on_refined_spheres():
    """f = z on the unit sphere: |grad_S f| = sqrt(1 - z^2), so
    int |grad f| dA = 2 pi int_{-1}^{1} sqrt(1 - z^2) dz = pi^2."""
    errors = []
    for n in range(1, 6):
        coords, faces = icosphere(n)
        op = tv_from_mesh(coords, faces, kind="gradient")
        errors.append(abs(op.value(coords[:, 2]) - np.pi**2))
        # rotation invariance: f = x gives the same integral
        assert abs(op.value(coords[:, 0]) - np.pi**2) < 2 * errors[-1] + 1e-12
    errors = np.array(errors)
    assert np.all(np.diff(errors) < 0)
    assert np.all(errors[1:] / errors[:-1] < 0.3)  # second order: ratio ~ 1/4
    assert errors[-1] / np.pi**2 < 1e-3


@pytest.mark.parametrize("kind", ["edges", "gradient"])
def test_adjoint_identity(kind, fs5_left):
    coords, faces, thick = fs5_left
    rng = np.random.default_rng(4)
    for mask in (None, thick > 0):
        op = tv_from_mesh(coords, faces, mask=mask, kind=kind)
        v = rng.standard_normal(op.n_features)
        w = rng.standard_normal(op.n_rows)
        lhs, rhs = np.dot(op.matvec(v), w), np.dot(v, op.rmatvec(w))
        assert np.isclose(lhs, rhs, rtol=1e-12, atol=1e-12 * np.abs(w).sum())
        # A^T w against an explicit transpose built from the COO triplets
        coo = op.matrix.tocoo()
        at_w = np.bincount(coo.col, weights=coo.data * w[coo.row], minlength=op.n_features)
        np.testing.assert_allclose(op.rmatvec(w), at_w, rtol=1e-10, atol=1e-10)


def test_gradient_norm2_is_a_tight_gershgorin_bound(fs5_left):
    """norm2 = largest absolute row sum of A^T A (Gershgorin), an upper bound
    of ||A||^2 within a factor 1.5 on spheres and fsaverage."""
    coords, faces, thick = fs5_left
    meshes = [icosphere(2) + (None,), (coords, faces, None), (coords, faces, thick > 0)]
    for c, f, m in meshes:
        op = tv_from_mesh(c, f, mask=m, kind="gradient")
        gram = (op.matrix.T @ op.matrix).tocsr()
        gershgorin = abs(gram).sum(axis=1).max()
        assert gershgorin <= op.norm2 <= gershgorin * (1 + 1e-6)
        exact = lanczos_norm2(op.matrix, tol=1e-8, safety=0.0)
        assert exact <= op.norm2 <= 1.5 * exact


# ---------------------------------------------------------------- validation


def _tet():
    coords = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    return coords, faces


def test_tetrahedron_is_valid():
    coords, faces = _tet()
    op = tv_from_mesh(coords, faces)
    assert op.n_rows == 6 and op.norm2 == 6.0
    assert np.diff(op.group_ptr).tolist() == [3, 2, 1, 0]


@pytest.mark.parametrize(
    "change, exc, pattern",
    [
        (
            lambda c, f: (c, np.vstack([f, [[1, 2, 4]]])),
            ValueError,
            r"faces has 1 face\(s\) with vertex indices out of range",
        ),
        (lambda c, f: (c, np.vstack([f, [[-1, 2, 3]]])), ValueError, "faces .*out of range"),
        (
            lambda c, f: (c, np.vstack([f, [[1, 1, 3]]])),
            ValueError,
            "faces has 1 degenerate face.*repeating a vertex",
        ),
        (
            lambda c, f: (np.vstack([c, [[0.5, 0.5, 0.0]]]), np.vstack([f, [[1, 2, 4]]])),
            ValueError,
            "faces has 1 degenerate face.*zero area",
        ),
        (
            lambda c, f: (c, np.vstack([f, [[2, 0, 1]]])),
            ValueError,
            r"faces has 1 duplicate face.*faces 0 and 4",
        ),
        (lambda c, f: (c, np.vstack([f, f[3]])), ValueError, "faces has 1 duplicate face"),
        (
            lambda c, f: (np.vstack([c, [[5.0, 5.0, 5.0]]]), f),
            ValueError,
            r"coords has 1 isolated vertex.*vertex 4",
        ),
        (lambda c, f: (c[:, :2], f), ValueError, r"coords must have shape \(n_vertices, 3\)"),
        (lambda c, f: (c, f[:, :2]), ValueError, r"faces must have shape \(n_faces, 3\)"),
        (lambda c, f: (c, f.astype(float)), TypeError, "faces must hold integer"),
        (lambda c, f: (c.astype(str), f), TypeError, "coords must hold real numbers"),
        (lambda c, f: (np.where(c == 1, np.nan, c), f), ValueError, "coords contains NaN"),
        (lambda c, f: (c, f[:0]), ValueError, "faces must have shape"),
    ],
)
def test_bad_meshes_raise_naming_the_argument(change, exc, pattern):
    coords, faces = change(*_tet())
    with pytest.raises(exc, match=pattern):
        tv_from_mesh(coords, faces)


def test_bad_mask_and_kind():
    coords, faces = _tet()
    with pytest.raises(ValueError, match=r"mask must have shape \(4,\)"):
        tv_from_mesh(coords, faces, mask=np.ones(3, bool))
    with pytest.raises(ValueError, match="mask is empty"):
        tv_from_mesh(coords, faces, mask=np.zeros(4, bool))
    with pytest.raises(ValueError, match="mask must be boolean"):
        tv_from_mesh(coords, faces, mask=np.array([0, 1, 2, 1]))
    with pytest.raises(TypeError, match="mask must be a boolean"):
        tv_from_mesh(coords, faces, mask=np.array(["a"] * 4))
    with pytest.raises(ValueError, match="kind must be 'edges' or 'gradient'"):
        tv_from_mesh(coords, faces, kind="cotan")
    # an isolated vertex is fine once masked out
    c2 = np.vstack([coords, [[5.0, 5.0, 5.0]]])
    op = tv_from_mesh(c2, faces, mask=np.array([1, 1, 1, 1, 0], bool))
    assert op.n_features == 4


# ---------------------------------------------------------------- file round trips


def test_fsaverage5_loads(fs5, fs5_left):
    coords, faces, thick = fs5_left
    assert coords.shape == (10242, 3) and faces.shape == (20480, 3)
    assert thick.shape == (10242,)
    img = nib.load(fs5["pial_left"])  # independent reading
    np.testing.assert_array_equal(coords, img.darrays[0].data)
    np.testing.assert_array_equal(faces, img.darrays[1].data)
    # the same mesh through nilearn's own loader
    datasets = pytest.importorskip("nilearn.datasets")
    mesh = datasets.load_fsaverage("fsaverage5")["pial"].parts["left"]
    c2, f2 = load_surf_mesh(mesh)
    np.testing.assert_array_equal(c2, coords)
    np.testing.assert_array_equal(f2, faces)


@pytest.mark.parametrize("name", ["lh.white", "lh.pial.gii", "rh.sphere.gii.gz"])
def test_mesh_round_trip(name, fs5_left, tmp_path):
    coords, faces, _ = fs5_left
    path = write_surf_mesh(coords, faces, tmp_path / name)
    assert os.path.basename(path) == name
    c2, f2 = load_surf_mesh(tmp_path / name)
    np.testing.assert_array_equal(c2, coords.astype(np.float32))  # values, vertex order
    np.testing.assert_array_equal(f2, faces)
    if "gii" not in name:  # readable by nibabel's FreeSurfer reader
        c3, f3 = nib.freesurfer.read_geometry(str(tmp_path / name))
        np.testing.assert_array_equal(c3, coords.astype(np.float32))
        np.testing.assert_array_equal(f3, faces)
    assert os.listdir(tmp_path) == [name]  # no temporary file left


@pytest.mark.parametrize(
    "name", ["lh.thickness", "lh.thickness.mgh", "lh.thickness.mgz", "lh.thickness.shape.gii"]
)
def test_morph_data_round_trip(name, fs5_left, tmp_path):
    _, _, thick = fs5_left
    write_surf_data(thick, tmp_path / name)
    back = load_surf_data(tmp_path / name)
    assert back.shape == thick.shape
    np.testing.assert_array_equal(back, thick)
    if name == "lh.thickness":
        np.testing.assert_array_equal(nib.freesurfer.read_morph_data(str(tmp_path / name)), thick)
    if name.endswith((".mgh", ".mgz")):
        assert nib.load(tmp_path / name).shape == (10242, 1, 1)
    assert os.listdir(tmp_path) == [name]


@pytest.mark.parametrize("name", ["maps.mgz", "maps.func.gii"])
def test_multi_map_round_trip(name, tmp_path):
    values = np.random.default_rng(5).standard_normal((500, 3)).astype(np.float32)
    write_surf_data(values, tmp_path / name)
    back = load_surf_data(tmp_path / name)
    np.testing.assert_array_equal(back, values)


def test_writes_are_complete_or_absent(tmp_path, monkeypatch):
    def broken(path, values):
        with open(path, "wb") as fh:
            fh.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(nib.freesurfer, "write_morph_data", broken)
    with pytest.raises(OSError, match="disk full"):
        write_surf_data(np.ones(10), tmp_path / "lh.thickness")
    assert os.listdir(tmp_path) == []
    # an existing file is left untouched by a failed write
    (tmp_path / "lh.thickness").write_bytes(b"old")
    with pytest.raises(OSError):
        write_surf_data(np.ones(10), tmp_path / "lh.thickness")
    assert (tmp_path / "lh.thickness").read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["lh.thickness"]


def test_bad_io_arguments(tmp_path, fs5):
    with pytest.raises(FileNotFoundError, match="surf"):
        load_surf_mesh(tmp_path / "lh.white")
    (tmp_path / "junk").write_bytes(b"not a surface")
    with pytest.raises(ValueError, match="surf: cannot read"):
        load_surf_mesh(tmp_path / "junk")
    with pytest.raises(ValueError, match="data: cannot read"):
        load_surf_data(tmp_path / "junk")
    with pytest.raises(ValueError, match="data: .* is a surface mesh"):
        load_surf_data(fs5["pial_left"])
    with pytest.raises(ValueError, match="values: FreeSurfer morphometry files hold one map"):
        write_surf_data(np.ones((5, 2)), tmp_path / "lh.curv")
    with pytest.raises(TypeError, match="values must hold numbers"):
        write_surf_data(np.array(["a", "b"]), tmp_path / "x.mgh")
    with pytest.raises(ValueError, match="path: cannot write"):
        write_surf_data(np.ones(5), tmp_path / "x.nii")


# ---------------------------------------------------------------- cortex masks


def _write_label(path, vertices):
    lines = ["#!ascii label", str(len(vertices))]
    lines += [f"{v} 0.0 0.0 0.0 0.0" for v in vertices]
    path.write_text("\n".join(lines) + "\n")


def test_cortex_mask_from_annot_and_label(fs5_left, tmp_path):
    coords, faces, thick = fs5_left
    cortex = thick > 0  # fsaverage's medial wall has zero thickness
    assert 9000 < cortex.sum() < 10242
    labels = np.where(cortex, 1 + (np.arange(thick.size) % 2), 0).astype(np.int32)
    labels[np.flatnonzero(~cortex)[:10]] = -1  # unlabelled vertices are not cortex
    ctab = np.array([[25, 5, 25, 0, 0], [0, 200, 0, 0, 0], [200, 0, 0, 0, 0]], np.int32)
    names = [b"Medial_Wall", b"precentral", b"postcentral"]
    nib.freesurfer.write_annot(str(tmp_path / "lh.aparc.annot"), labels, ctab, names)
    np.testing.assert_array_equal(load_cortex_mask(tmp_path / "lh.aparc.annot"), cortex)
    np.testing.assert_array_equal(
        load_cortex_mask(tmp_path / "lh.aparc.annot", 10242, medial_wall_names=()), labels >= 0
    )
    _write_label(tmp_path / "lh.cortex.label", np.flatnonzero(cortex))
    (tmp_path / "lh.cortex.label.txt").write_text("")
    np.testing.assert_array_equal(load_cortex_mask(tmp_path / "lh.cortex.label", 10242), cortex)
    # masks given as files to the two-hemisphere builders
    op, hemis = tv_from_hemispheres(
        (coords, faces), (coords, faces), tmp_path / "lh.cortex.label", tmp_path / "lh.aparc.annot"
    )
    np.testing.assert_array_equal(hemis.vertices[0], np.flatnonzero(cortex))
    np.testing.assert_array_equal(hemis.vertices[1], np.flatnonzero(cortex))
    assert op.n_features == 2 * cortex.sum()
    with pytest.raises(ValueError, match="n_vertices is required"):
        load_cortex_mask(tmp_path / "lh.cortex.label")
    with pytest.raises(ValueError, match="out of range for n_vertices=100"):
        load_cortex_mask(tmp_path / "lh.cortex.label", 100)
    with pytest.raises(ValueError, match="source has 10242 vertices but n_vertices=10"):
        load_cortex_mask(tmp_path / "lh.aparc.annot", 10)
    with pytest.raises(ValueError, match="neither a .label nor an .annot"):
        load_cortex_mask(tmp_path / "lh.cortex.label.txt")


# ---------------------------------------------------------------- hemispheres


def test_two_hemispheres_block_diagonal(fs5, tmp_path):
    lc, lf = load_surf_mesh(fs5["white_left"])
    rc, rf = load_surf_mesh(fs5["white_right"])
    ml = load_surf_data(fs5["thick_left"]) > 0
    mr = load_surf_data(fs5["thick_right"]) > 0
    for kind in ("edges", "gradient"):
        op, hemis = tv_from_hemispheres(fs5["white_left"], (rc, rf), ml, mr, kind=kind)
        opl = tv_from_mesh(lc, lf, ml, kind=kind)
        opr = tv_from_mesh(rc, rf, mr, kind=kind)
        assert op.n_features == ml.sum() + mr.sum() == hemis.n_features
        assert op.n_groups == opl.n_groups + opr.n_groups
        v = np.random.default_rng(6).standard_normal(op.n_features)
        vl, vr = v[hemis.slices[0]], v[hemis.slices[1]]
        assert np.isclose(op.value(v), opl.value(vl) + opr.value(vr), rtol=1e-12)
        # no row couples the hemispheres
        rows_left = op.matrix[: opl.n_rows]
        assert rows_left[:, hemis.slices[1]].nnz == 0
        assert op.matrix[opl.n_rows :][:, hemis.slices[0]].nnz == 0
        if kind == "edges":
            assert op.norm2 == max(opl.norm2, opr.norm2)
        w = np.random.default_rng(7).standard_normal(op.n_rows)
        assert np.isclose(op.matvec(v) @ w, v @ op.rmatvec(w))
    # the mapping: columns are left kept vertices then right kept vertices
    np.testing.assert_array_equal(hemis.vertices[0], np.flatnonzero(ml))
    np.testing.assert_array_equal(hemis.vertices[1], np.flatnonzero(mr))
    maps = hemis.inverse_transform(np.arange(hemis.n_features, dtype=float), fill_value=-1)
    assert maps["left"].shape == (10242,) and maps["right"].shape == (10242,)
    np.testing.assert_array_equal(maps["left"][~ml], -1)
    np.testing.assert_array_equal(maps["left"][ml], np.arange(ml.sum()))
    np.testing.assert_array_equal(maps["right"][mr], ml.sum() + np.arange(mr.sum()))
    V = np.random.default_rng(8).standard_normal((2, hemis.n_features)).astype(np.float32)
    X = hemis.transform(hemis.inverse_transform(V)["left"].T, hemis.inverse_transform(V)["right"].T)
    np.testing.assert_array_equal(X, V)
    # per-hemisphere files: GIFTI and MGH, exact
    for ext in (".func.gii", ".mgz"):
        lp, rp = hemis.save(V, tmp_path / f"lh.load{ext}", tmp_path / f"rh.load{ext}")
        back = hemis.transform(load_surf_data(lp).T, load_surf_data(rp).T)
        np.testing.assert_array_equal(back, V)


def test_block_diag_norm2():
    from neurospca.operators import GroupOperator

    coords, faces = icosphere(1)
    g = tv_from_mesh(coords, faces, kind="gradient")
    e = tv_from_mesh(coords, faces)
    assert block_diag_operators([g, e]).norm2 == max(g.norm2, e.norm2)
    lazy = GroupOperator(g.matrix, g.group_ptr)  # unknown norm: stays lazy
    both = block_diag_operators([lazy, e])
    assert both._norm2 is None
    assert np.isclose(both.norm2, max(lanczos_norm2(g.matrix), lanczos_norm2(e.matrix)), rtol=1e-3)


def test_hemisphere_size_mismatch_raises(fs5):
    rc, rf = load_surf_mesh(fs5["white_right"])
    hemis = Hemispheres((10242, 10242))
    with pytest.raises(ValueError, match=r"left must have shape \(n_samples, 10242\)"):
        hemis.transform(np.zeros((3, 10000)), np.zeros((3, 10242)))
    with pytest.raises(ValueError, match="left has 3 samples but right has 2"):
        hemis.transform(np.zeros((3, 10242)), np.zeros((2, 10242)))
    with pytest.raises(ValueError, match="V must have shape"):
        hemis.inverse_transform(np.zeros(100))
    with pytest.raises(ValueError, match=r"mask_left must have shape \(10242,\)"):
        tv_from_hemispheres(fs5["white_left"], (rc, rf), np.ones(10000, bool), None)
    with pytest.raises(ValueError, match=r"mask_right must have shape \(10242,\)"):
        Hemispheres((10242, 10242), (None, np.ones(5, bool)))
    with pytest.raises(ValueError, match="left_data has 3 maps but right_data has 2"):
        load_surface_subjects(np.ones((3, 10242)), np.ones((2, 10242)), fs5["white_left"], (rc, rf))
    with pytest.raises(ValueError, match=r"right_data must have shape \(n_samples, 10242\)"):
        load_surface_subjects(np.ones((3, 10242)), np.ones((3, 10241)), fs5["white_left"], (rc, rf))
    with pytest.raises(ValueError, match="right_mesh faces .*out of range"):
        tv_from_hemispheres(fs5["white_left"], (rc[:100], rf))


# ---------------------------------------------------------------- front end


def _simulated_thickness(fs5, n, seed):
    """Per-subject thickness on fsaverage5: the template's thickness plus two
    smooth patterns (geodesic-ish blobs on the sphere) with random weights and
    noise. Returns data per hemisphere, the patterns and the cortex masks."""
    rng = np.random.default_rng(seed)
    out = {}
    for hemi, _side in (("left", "lh"), ("right", "rh")):
        sphere, _ = load_surf_mesh(fs5[f"sphere_{hemi}"])
        sphere = sphere / np.linalg.norm(sphere, axis=1, keepdims=True)
        thick = load_surf_data(fs5[f"thick_{hemi}"]).astype(float)
        mask = thick > 0
        cortex = np.flatnonzero(mask)
        centers = sphere[cortex[[1000, 6000]]]
        patterns = np.stack([np.exp(-(1 - sphere @ c) / 0.02) for c in centers])
        out[hemi] = dict(thick=thick, mask=mask, patterns=patterns)
    w = rng.standard_normal((n, 2)) * [0.5, 0.35]
    for hemi in ("left", "right"):
        d = out[hemi]
        maps = d["thick"] + w @ d["patterns"] + 0.05 * rng.standard_normal((n, d["thick"].size))
        d["maps"] = np.where(d["mask"], maps, 0.0)
    return out


def test_load_surface_subjects_from_thickness_files(fs5, tmp_path):
    sim = _simulated_thickness(fs5, 6, seed=0)
    files = {"left": [], "right": []}
    for i in range(6):
        for hemi, side, ext in (("left", "lh", ""), ("right", "rh", ".mgh")):
            path = tmp_path / f"sub{i}.{side}.thickness{ext}"
            write_surf_data(sim[hemi]["maps"][i], path)
            files[hemi].append(path)
    X, op, hemis = load_surface_subjects(
        files["left"],
        files["right"],
        fs5["white_left"],
        fs5["white_right"],
        mask_left=sim["left"]["mask"],
        mask_right=sim["right"]["mask"],
    )
    ml, mr = sim["left"]["mask"], sim["right"]["mask"]
    assert X.shape == (6, ml.sum() + mr.sum()) == (6, op.n_features)
    expected = np.concatenate([sim["left"]["maps"][:, ml], sim["right"]["maps"][:, mr]], 1)
    np.testing.assert_array_equal(X, expected.astype(np.float32))
    # one multi-map file per hemisphere gives the same X
    write_surf_data(sim["left"]["maps"].T, tmp_path / "lh.all.mgz")
    write_surf_data(sim["right"]["maps"].T, tmp_path / "rh.all.func.gii")
    X2, _, _ = load_surface_subjects(
        tmp_path / "lh.all.mgz",
        tmp_path / "rh.all.func.gii",
        fs5["white_left"],
        fs5["white_right"],
        mask_left=ml,
        mask_right=mr,
    )
    np.testing.assert_array_equal(X2, X)
    # NaN vertices leave the mask with a warning saying how many
    maps = sim["left"]["maps"].copy()
    maps[2, np.flatnonzero(ml)[:7]] = np.nan
    with pytest.warns(UserWarning, match=r"7 vertex\(es\) are NaN"):
        X3, op3, h3 = load_surface_subjects(
            maps,
            sim["right"]["maps"],
            fs5["white_left"],
            fs5["white_right"],
            mask_left=ml,
            mask_right=mr,
        )
    assert X3.shape[1] == X.shape[1] - 7 == op3.n_features and np.all(np.isfinite(X3))
    assert h3.vertices[0].size == ml.sum() - 7
    # the old name still works, with a FutureWarning naming the new one
    with pytest.warns(FutureWarning, match="use load_surface_subjects"):
        X4, op4, h4 = load_surface_data(
            files["left"],
            files["right"],
            fs5["white_left"],
            fs5["white_right"],
            mask_left=ml,
            mask_right=mr,
        )
    np.testing.assert_array_equal(X4, X)
    assert (op4.matrix != op.matrix).nnz == 0 and h4.vertices[1].size == mr.sum()
    assert neurospca.load_surface_data is load_surface_data


def test_spcatv_end_to_end_on_fsaverage5(fs5, tmp_path):
    sim = _simulated_thickness(fs5, 60, seed=1)
    ml, mr = sim["left"]["mask"], sim["right"]["mask"]
    template = neurospca.SPCATV(n_components=2, alpha=0.01, l1_ratio=0.1, tv_ratio=0.5)
    est, maps, hemis = neurospca.fit_surfaces(
        sim["left"]["maps"],
        sim["right"]["maps"],
        fs5["white_left"],
        fs5["white_right"],
        template,
        mask_left=ml,
        mask_right=mr,
    )
    assert template.operator is None and est.operator.n_features == ml.sum() + mr.sum()
    assert maps["left"].shape == (10242, 2) and maps["right"].shape == (10242, 2)
    np.testing.assert_array_equal(maps["left"][~ml], 0.0)
    truth = [
        np.concatenate([sim["left"]["patterns"][k][ml], sim["right"]["patterns"][k][mr]])
        for k in range(2)
    ]
    corr = np.array(
        [[abs(np.corrcoef(est.components_[k], t)[0, 1]) for t in truth] for k in range(2)]
    )
    assert max(corr[0, 0] + corr[1, 1], corr[0, 1] + corr[1, 0]) > 1.8, corr
    assert np.all(np.mean(est.components_ == 0, axis=1) > 0.5)
    # loadings back as files and as a nilearn SurfaceImage
    lp, rp = hemis.save(
        est.components_, tmp_path / "lh.loadings.func.gii", tmp_path / "rh.loadings.func.gii"
    )
    np.testing.assert_allclose(load_surf_data(lp), maps["left"], rtol=1e-6, atol=1e-7)
    datasets = pytest.importorskip("nilearn.datasets")
    img = hemis.to_surface_image(est.components_, datasets.load_fsaverage("fsaverage5")["pial"])
    np.testing.assert_allclose(np.asarray(img.data.parts["left"]), maps["left"])


def test_public_names():
    for name in (
        "fit_images",
        "fit_surfaces",
        "tv_from_mesh",
        "icosphere",
        "load_surf_mesh",
        "load_surf_data",
        "write_surf_data",
        "write_surf_mesh",
        "load_cortex_mask",
        "Hemispheres",
        "tv_from_hemispheres",
        "load_surface_subjects",
        "load_volume_data",
        "unmask",
        "images_to_data",
        "load_mask_img",
        "VolumeMasker",
    ):
        assert name in neurospca.__all__ and hasattr(neurospca, name)
    # a deprecated alias still imports but is no longer advertised
    assert "load_surface_data" not in neurospca.__all__
    assert neurospca.load_surface_data is neurospca.surface.load_surface_data
    # the packages re-export what other modules and users import from them
    assert neurospca.surface.icosphere is icosphere and callable(icosphere)  # the function
    assert neurospca.fit_images is neurospca.image.fit_images
    assert neurospca.fit_surfaces is neurospca.image.fit_surfaces
    for name in neurospca.surface.__all__:
        assert getattr(neurospca.surface, name) is not None
    for name in neurospca.masking.__all__:
        assert callable(getattr(neurospca.masking, name))
    # the image helpers shared across packages live in one internal module, and
    # masking no longer re-exports them as private names
    from neurospca._utils import images

    for name in images.__all__:
        assert not hasattr(neurospca.masking, "_" + name)
        assert callable(getattr(images, name)) or name.isupper()


def test_write_one_column_mgh(tmp_path):
    """A single map given as one column is written as the (n, 1, 1) MGH volume."""
    from neurospca import load_surf_data, write_surf_data

    values = np.arange(12, dtype=np.float32).reshape(12, 1)
    path = write_surf_data(values, tmp_path / "one.mgh")
    np.testing.assert_array_equal(np.asarray(load_surf_data(path)).ravel(), values.ravel())
