"""Seeded cortical simulations on real meshes: atrophy maps on fsaverage5 and
atrophy cohorts whose patterns co-vary through a shared disease severity."""

import numpy as np

from ._images import _correlated

#: Centres (hemisphere, x, y, z in mm) of the three atrophy patterns.
ATROPHY_CENTRES = (
    # 1: bilateral medial temporal lobe (entorhinal / parahippocampal)
    (("left", -25.0, -15.0, -30.0), ("right", 25.0, -15.0, -30.0)),
    # 2: bilateral lateral prefrontal cortex
    (("left", -40.0, 35.0, 25.0), ("right", 40.0, 35.0, 25.0)),
    # 3: left precuneus / posterior cingulate
    (("left", -8.0, -60.0, 40.0),),
)


def _angular_patch(sphere, centre_vertex, radius_deg):
    """Truncated Gaussian bump of the great-circle angle on a sphere mesh."""
    unit = sphere / np.linalg.norm(sphere, axis=1, keepdims=True)
    cosang = np.clip(unit @ unit[centre_vertex], -1.0, 1.0)
    ang = np.degrees(np.arccos(cosang))
    return np.exp(-(ang**2) / (2.0 * (radius_deg / 2.0) ** 2)) * (ang <= radius_deg)


def make_cortical_atrophy(n_samples=100, noise=0.3, radius=18.0, random_state=0):
    """Cortical-thickness maps with three atrophy patterns on fsaverage5.

    Thickness of subject ``i`` at vertex ``j`` (both hemispheres, left first,
    10,242 vertices each)::

        X[i, j] = baseline[j] - sum_k s[i, k] * patterns[k, j] + noise[i, j]

    ``baseline`` is fsaverage5's mean thickness map (bundled with nilearn, no
    download), the patterns are smooth patches (truncated Gaussian bumps of the
    great-circle angle on the sphere mesh, ``radius`` degrees, peak 1 mm):
    (1) bilateral medial temporal lobe, (2) bilateral lateral prefrontal
    cortex, (3) left precuneus (centres in :data:`ATROPHY_CENTRES`). Atrophy
    severities ``s`` are half-normal with scales 0.8, 0.6, 0.5 mm; the noise
    is i.i.d. Gaussian with standard deviation ``noise`` mm. Needs nilearn.

    Parameters
    ----------
    n_samples : int, default=100
    noise : float, default=0.3
        Noise standard deviation (mm), >= 0.
    radius : float, default=18.0
        Patch radius in degrees on the sphere (support of each bump).
    random_state : int, default=0

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (n_samples, 20484), ``patterns`` (3, 20484), ``scores``
        (n_samples, 3), ``baseline`` (20484,), ``mesh_left`` and
        ``mesh_right`` (pial ``(coords, faces)``), ``inflated_left`` and
        ``inflated_right`` (inflated ``(coords, faces)``, for display),
        ``n_vertices`` (10242, 10242).
    """
    from nilearn.datasets import load_fsaverage, load_fsaverage_data
    from sklearn.utils import Bunch

    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise ValueError(f"n_samples must be an int >= 2, got {n_samples!r}.")
    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite float >= 0, got {noise!r}.")
    if not (np.isfinite(radius) and 0 < radius <= 180):
        raise ValueError(f"radius must be in (0, 180] degrees, got {radius!r}.")
    fs = load_fsaverage("fsaverage5")
    thick = load_fsaverage_data(mesh="fsaverage5", mesh_type="pial", data_type="thickness")
    meshes, spheres, inflated, baseline = {}, {}, {}, []
    for hemi in ("left", "right"):
        pial = fs["pial"].parts[hemi]
        meshes[hemi] = (np.asarray(pial.coordinates, float), np.asarray(pial.faces, np.int64))
        spheres[hemi] = np.asarray(fs["sphere"].parts[hemi].coordinates, float)
        infl = fs["inflated"].parts[hemi]
        inflated[hemi] = (np.asarray(infl.coordinates, float), np.asarray(infl.faces, np.int64))
        baseline.append(np.asarray(thick.data.parts[hemi], float).ravel())
    n_left = meshes["left"][0].shape[0]
    n_right = meshes["right"][0].shape[0]
    patterns = np.zeros((3, n_left + n_right))
    for k, patches in enumerate(ATROPHY_CENTRES):
        for hemi, *xyz in patches:
            coords = meshes[hemi][0]
            centre = int(np.argmin(((coords - np.asarray(xyz)) ** 2).sum(axis=1)))
            bump = _angular_patch(spheres[hemi], centre, radius)
            if hemi == "left":
                patterns[k, :n_left] = np.maximum(patterns[k, :n_left], bump)
            else:
                patterns[k, n_left:] = np.maximum(patterns[k, n_left:], bump)
    rng = np.random.default_rng(random_state)
    scores = np.abs(rng.standard_normal((int(n_samples), 3))) * np.array([0.8, 0.6, 0.5])
    baseline = np.concatenate(baseline)
    X = (
        baseline
        - scores @ patterns
        + noise * rng.standard_normal((int(n_samples), patterns.shape[1]))
    )
    return Bunch(
        X=X,
        patterns=patterns,
        scores=scores,
        baseline=baseline,
        mesh_left=meshes["left"],
        mesh_right=meshes["right"],
        inflated_left=inflated["left"],
        inflated_right=inflated["right"],
        n_vertices=(n_left, n_right),
    )


def _cortical_meshes(mesh):
    """``(coords, faces)`` per hemisphere and the mean thickness of a real mesh."""
    import nibabel as nib

    if mesh == "fsaverage5":
        from nilearn.datasets import load_fsaverage, load_fsaverage_data

        fs = load_fsaverage("fsaverage5")
        thick = load_fsaverage_data(mesh="fsaverage5", mesh_type="pial", data_type="thickness")
        meshes = [
            (
                np.asarray(fs["pial"].parts[h].coordinates, float),
                np.asarray(fs["pial"].parts[h].faces, np.int64),
            )
            for h in ("left", "right")
        ]
        base = np.concatenate(
            [np.asarray(thick.data.parts[h], float).ravel() for h in ("left", "right")]
        )
        return meshes, base
    if mesh != "conte69":
        raise ValueError(f"mesh must be 'fsaverage5' or 'conte69', got {mesh!r}.")
    import importlib.util
    import os

    spec = importlib.util.find_spec("brainspace")
    if spec is None:
        raise ImportError("mesh='conte69' needs brainspace (pip install brainspace).")
    root = os.path.join(os.path.dirname(spec.origin), "datasets")
    meshes = []
    for h in ("lh", "rh"):
        gii = nib.load(os.path.join(root, "surfaces", f"conte69_32k_{h}.gii"))
        meshes.append(
            (np.asarray(gii.darrays[0].data, float), np.asarray(gii.darrays[1].data, np.int64))
        )
    base = np.loadtxt(os.path.join(root, "matrices", "main_group", "conte69_32k_thickness.csv"))
    return meshes, base


def _mesh_graph(coords, faces):
    """Edge-length weighted adjacency (CSR) of a triangle mesh."""
    import scipy.sparse as sp

    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    length = np.linalg.norm(coords[e[:, 0]] - coords[e[:, 1]], axis=1)
    n = coords.shape[0]
    G = sp.coo_matrix((length, (e[:, 0], e[:, 1])), shape=(n, n)).tocsr()
    return G.maximum(G.T)


def _geodesic_patch(graph, coords, xyz, radius):
    """Truncated Gaussian bump of the graph-geodesic distance (mm) to the vertex
    nearest ``xyz``; support: distance <= ``radius``."""
    from scipy.sparse.csgraph import dijkstra

    centre = int(np.argmin(((coords - np.asarray(xyz)) ** 2).sum(axis=1)))
    dist = dijkstra(graph, indices=centre, limit=radius * 1.0001)
    return np.where(dist <= radius, np.exp(-(dist**2) / (2.0 * (radius / 2.0) ** 2)), 0.0)


def _smooth_fields(meshes, n_fields, rng, steps=10):
    """Unit-variance smooth Gaussian fields (neighbourhood averaging on each mesh)."""
    import scipy.sparse as sp

    blocks = []
    for coords, faces in meshes:
        G = _mesh_graph(coords, faces)
        A = (G > 0).astype(float) + sp.identity(coords.shape[0], format="csr")
        blocks.append(sp.diags(1.0 / np.asarray(A.sum(1)).ravel()) @ A)
    S = sp.block_diag(blocks, format="csr")
    F = rng.standard_normal((S.shape[0], n_fields))
    for _ in range(steps):
        F = S @ F
    return (F / F.std(axis=0)).T


def make_atrophy_cohort(
    n_samples=133,
    *,
    mesh="fsaverage5",
    correlation=0.6,
    radius=25.0,
    noise=0.15,
    smooth_noise=0.15,
    random_state=0,
):
    """A cortical-thickness cohort with co-varying atrophy and confounds.

    Thickness of subject ``i`` at vertex ``j`` (both hemispheres, left first)::

        X[i, j] = baseline[j] - sum_k s[i, k] patterns[k, j]
                  + age_i a[j] + sex_i b[j] + smooth_noise_ij + noise_ij

    ``baseline`` is the mesh's real mean thickness map; the three patterns are
    smooth patches (truncated Gaussian bumps of the graph-geodesic distance on
    the mesh, support ``radius`` mm, peak 1 mm) in the bilateral medial
    temporal lobe, the bilateral lateral prefrontal cortex and the left
    precuneus (:data:`ATROPHY_CENTRES`). The severities ``s`` share a disease
    severity: pairwise ``correlation``, standard deviations 0.5, 0.4, 0.35 mm.
    Age (uniform 55-90 years, correlated 0.3 with the shared severity) thins
    the cortex by 5 um/year times a smooth positive map ``a``; sex (0/1) adds
    a smooth map ``b`` of 0.05 mm sd; subject-specific smooth fields
    (``smooth_noise`` mm sd) and white noise (``noise`` mm sd) are added.
    Regress the confounds out before a decomposition (the patterns are then
    what remains). Vertices of zero baseline thickness (medial wall) are
    outside ``cortex``.

    Parameters
    ----------
    n_samples : int, default=133
    mesh : {"fsaverage5", "conte69"}, default="fsaverage5"
        fsaverage5 (nilearn, 10,242 vertices per hemisphere) or conte69
        (brainspace, 32,492 per hemisphere); both bundled, no download.
    correlation : float, default=0.6
        Pairwise correlation of the three severities, in [0, 1).
    radius : float, default=25.0
        Geodesic radius (mm) of each patch.
    noise, smooth_noise : float, default=0.15
        Standard deviations (mm) of the white and the smooth noise, >= 0.
    random_state : int, default=0

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (n_samples, n_vertices), ``patterns`` (3, n_vertices),
        ``scores`` (n_samples, 3; the severities), ``confounds``
        (n_samples, 2; age in years, sex 0/1), ``cortex`` (bool mask),
        ``mesh_left`` and ``mesh_right`` ``(coords, faces)``, ``n_vertices``.
    """
    from sklearn.utils import Bunch

    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise ValueError(f"n_samples must be an int >= 2, got {n_samples!r}.")
    for name, value in (("noise", noise), ("smooth_noise", smooth_noise)):
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite float >= 0, got {value!r}.")
    if not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a positive number of mm, got {radius!r}.")
    meshes, baseline = _cortical_meshes(mesh)
    sizes = [c.shape[0] for c, _ in meshes]
    offsets = {"left": 0, "right": sizes[0]}
    patterns = np.zeros((3, sum(sizes)))
    for k, patches in enumerate(ATROPHY_CENTRES):
        for hemi, *xyz in patches:
            coords, faces = meshes[0 if hemi == "left" else 1]
            bump = _geodesic_patch(_mesh_graph(coords, faces), coords, xyz, radius)
            sl = slice(offsets[hemi], offsets[hemi] + coords.shape[0])
            patterns[k, sl] = np.maximum(patterns[k, sl], bump)
    cortex = baseline > 0
    patterns[:, ~cortex] = 0.0
    rng = np.random.default_rng(random_state)
    n = int(n_samples)
    z = rng.standard_normal((n, 4))
    scores = _correlated(z[:, :3], correlation) * np.array([0.5, 0.4, 0.35])
    shared = scores.sum(axis=1)
    shared = (shared - shared.mean()) / shared.std()
    age = np.clip(72.5 + 10.0 * (0.3 * shared + np.sqrt(0.91) * z[:, 3]), 55.0, 90.0)
    sex = rng.integers(0, 2, n).astype(float)
    age_map, sex_map = _smooth_fields(meshes, 2, rng, steps=30)
    age_map = 0.005 * (1.0 + 0.5 * np.tanh(age_map))
    sex_map = 0.05 * sex_map
    X = baseline - scores @ patterns + np.outer(age - age.mean(), -age_map) + np.outer(sex, sex_map)
    X += smooth_noise * _smooth_fields(meshes, n, rng, steps=10)
    X += noise * rng.standard_normal(X.shape)
    X[:, ~cortex] = baseline[~cortex]
    return Bunch(
        X=X,
        patterns=patterns,
        scores=scores,
        confounds=np.column_stack([age, sex]),
        cortex=cortex,
        mesh_left=meshes[0],
        mesh_right=meshes[1],
        n_vertices=tuple(sizes),
    )
