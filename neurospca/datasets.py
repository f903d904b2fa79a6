"""Seeded simulations (no downloads).

- :func:`make_paper_simulation`: the SPCA-TV paper's simulation (section III-A):
  100x100 images whose three loading patterns are two upper dots, two lower
  dots and one middle dot; Gaussian scores; Gaussian noise at a given SNR.
- :func:`make_fmri_like`: maps over nilearn's MNI152 brain mask at 3 mm
  (64,030 voxels, the size of the paper's fMRI set) with three smooth sparse
  patterns plus noise. Needs nilearn (its bundled template, no download).
- :func:`make_paper_simulation_split`: the paper's 250 training + 250 test
  images.
- :func:`make_cortical_atrophy`: cortical-thickness maps on fsaverage5 (both
  hemispheres) with three smooth atrophy patterns. Needs nilearn (bundled
  meshes and thickness map, no download).
- :func:`make_atrophy_cohort`: a cohort on a real mesh (fsaverage5 or conte69)
  whose three atrophy patterns co-vary through a shared disease severity, with
  age and sex effects and smooth noise.
"""

import numpy as np

__all__ = [
    "make_paper_simulation",
    "make_paper_simulation_split",
    "make_fmri_like",
    "make_cortical_atrophy",
    "make_atrophy_cohort",
    "paper_patterns",
    "make_structured_images",
    "make_tree_patches",
]


def _blob(shape, center, radius):
    grids = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    d2 = sum((g - c) ** 2 for g, c in zip(grids, center, strict=True))
    return np.exp(-d2 / (2.0 * (radius / 2.0) ** 2)) * (d2 <= radius**2)


def paper_patterns(shape=(100, 100)):
    """The three loading patterns of the paper's simulation.

    Parameters
    ----------
    shape : (int, int), default=(100, 100)
        ``(height, width)`` of each pattern image.

    Returns
    -------
    ndarray of shape (3, height, width)
        Two upper dots, two lower dots, one middle dot; each dot is a
        truncated Gaussian bump of radius ``height / 10``.
    """
    h, w = shape
    r = h / 10
    p1 = _blob(shape, (0.25 * h, 0.3 * w), r) + _blob(shape, (0.25 * h, 0.7 * w), r)
    p2 = _blob(shape, (0.75 * h, 0.3 * w), r) + _blob(shape, (0.75 * h, 0.7 * w), r)
    p3 = _blob(shape, (0.5 * h, 0.5 * w), r)
    return np.stack([p1, p2, p3])


def make_paper_simulation(
    n_samples=250, snr=0.1, random_state=0, shape=(100, 100), *, correlation=0.0
):
    """The SPCA-TV paper's simulated data set.

    ``X = U V^T + noise`` with the three patterns of :func:`paper_patterns` as
    ``V``, centred Gaussian scores ``U`` (standard deviations 1, 0.8, 0.6) and
    i.i.d. Gaussian noise with ``std(signal) / std(noise) = snr``.

    Parameters
    ----------
    n_samples : int, default=250
        Number of images.
    snr : float, default=0.1
        ``std(signal) / std(noise)`` over the whole data set (the paper's 0.1).
    random_state : int, default=0
        Seed of the scores and the noise.
    shape : tuple of int, default=(100, 100)
        Image shape.
    correlation : float, default=0.0
        Pairwise correlation of the three scores, in [0, 1): patterns that
        co-vary (a shared severity), as in real data. 0 is the paper's set-up
        (the same draws as before this option existed).

    Returns
    -------
    X : ndarray of shape (n_samples, height * width)
    patterns : ndarray of shape (3, height * width)
    mask : ndarray of bool, shape ``shape`` (all True)
    """
    if not (isinstance(n_samples, (int, np.integer)) and n_samples >= 2):
        raise ValueError(f"n_samples must be an int >= 2, got {n_samples!r}.")
    if not snr > 0:
        raise ValueError(f"snr must be > 0, got {snr!r}.")
    rng = np.random.default_rng(random_state)
    patterns = paper_patterns(shape).reshape(3, -1)
    scores = _correlated(rng.standard_normal((n_samples, 3)), correlation)
    scores *= np.array([1.0, 0.8, 0.6])
    signal = scores @ patterns
    noise = rng.standard_normal(signal.shape)
    noise *= signal.std() / (snr * noise.std())
    return signal + noise, patterns, np.ones(shape, dtype=bool)


def _correlated(z, correlation):
    """Columns of i.i.d. standard normal ``z`` mixed to a pairwise ``correlation``."""
    if not (np.isfinite(correlation) and 0.0 <= correlation < 1.0):
        raise ValueError(f"correlation must be in [0, 1), got {correlation!r}.")
    if correlation == 0.0:
        return z
    k = z.shape[1]
    cov = np.full((k, k), float(correlation)) + (1.0 - correlation) * np.eye(k)
    return z @ np.linalg.cholesky(cov).T


def make_fmri_like(n_samples=83, noise=1.0, random_state=0):
    """fMRI-sized maps in the MNI152 3 mm brain mask (64,030 voxels).

    Three Gaussian blobs (radius 8 voxels) at random in-mask centres, scores
    with standard deviations 3, 2, 1.5, plus i.i.d. Gaussian noise.

    Parameters
    ----------
    n_samples : int, default=83
        Number of maps (the paper's fMRI set has 83).
    noise : float, default=1.0
        Standard deviation of the i.i.d. Gaussian noise.
    random_state : int, default=0
        Seed of the blob centres, the scores and the noise.

    Returns
    -------
    X : ndarray of shape (n_samples, 64030)
    patterns : ndarray of shape (3, 64030)
    mask : ndarray of bool, shape (67, 79, 64)
    """
    from nilearn.datasets import load_mni152_brain_mask

    mask = load_mni152_brain_mask(resolution=3, threshold=0.48).get_fdata() > 0
    rng = np.random.default_rng(random_state)
    ijk = np.argwhere(mask)
    centers = ijk[rng.choice(len(ijk), 3, replace=False)]
    patterns = np.stack([_blob(mask.shape, c, 8.0)[mask] for c in centers])
    scores = rng.standard_normal((n_samples, 3)) * np.array([3.0, 2.0, 1.5])
    X = scores @ patterns + noise * rng.standard_normal((n_samples, int(mask.sum())))
    return X, patterns, mask


def make_paper_simulation_split(n_train=250, n_test=250, snr=0.1, random_state=0, shape=(100, 100)):
    """The paper's simulation split into a training and a test set.

    One data set of ``n_train + n_test`` images is drawn with
    :func:`make_paper_simulation` (the SNR is that of the whole set); the
    first ``n_train`` rows are the training set, the others the test set, as
    in section III-A (250 + 250 images).

    Parameters
    ----------
    n_train : int, default=250
    n_test : int, default=250
    snr : float, default=0.1
    random_state : int, default=0
    shape : tuple of int, default=(100, 100)

    Returns
    -------
    X_train : ndarray of shape (n_train, height * width)
    X_test : ndarray of shape (n_test, height * width)
    patterns : ndarray of shape (3, height * width)
    mask : ndarray of bool, shape ``shape``
    """
    for name, value in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
            raise ValueError(f"{name} must be an int >= 2, got {value!r}.")
    X, patterns, mask = make_paper_simulation(
        int(n_train) + int(n_test), snr=snr, random_state=random_state, shape=shape
    )
    return X[:n_train], X[n_train:], patterns, mask


# Centres (approximate MNI coordinates on the pial surface, mm) of the atrophy
# patterns of :func:`make_cortical_atrophy`: (hemisphere, x, y, z) per patch.
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


def make_structured_images(
    random_state=0, shape=(16, 16), n_samples=100, noise=1.5, *, floor=0.0, layout="default"
):
    """Images from three loadings with rectangular and convex supports (SSPCA).

    The supports are two rectangles and a diamond (45 degree edges), the
    shapes the half-space groups of Jenatton et al. can select. Each loading
    is a smooth cosine bump, unit-norm. ``X = 8 U V + noise E`` with Gaussian
    ``U`` and ``E``.

    Parameters
    ----------
    random_state : int
        Seed of the codes and the noise (the loadings are fixed).
    shape : tuple of int, default=(16, 16)
        Grid shape; the supports sit in the top-left 16 x 16 corner.
    n_samples : int, default=100
    noise : float, default=1.5
        Standard deviation of the white noise.
    floor : float in [0, 1), default=0.0
        Amplitude at the support's edge relative to its peak: the loading is
        ``floor + (1 - floor) * bump`` on the support. 0 is the bump alone,
        which vanishes towards the edge (its border pixels are then weaker
        than the noise).
    layout : {"default", "overlapping"}, default="default"
        ``"default"``: a 6 x 10 rectangle (rows 1-6, columns 2-11), a diamond
        of radius 4.5 and a 10 x 4 rectangle (rows 5-14, columns 11-14), the
        rectangles sharing 2 pixels. ``"overlapping"``: an 8 x 10 rectangle
        (rows 1-8, columns 1-10), an 11 x 8 rectangle (rows 4-14, columns
        7-14) overlapping it on 5 x 4 pixels, and a diamond of radius 4
        touching the second rectangle.

    Returns
    -------
    X : ndarray of shape (n_samples, height * width)
    supports : ndarray of bool, shape (3, height * width)
    loadings : ndarray of shape (3, height * width)
    """
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"floor must be in [0, 1), got {floor!r}.")
    rng = np.random.default_rng(random_state)
    h, w = shape
    yy, xx = np.mgrid[:h, :w]
    if layout == "default":
        supports = [
            (yy >= 1) & (yy < 7) & (xx >= 2) & (xx < 12),
            np.abs(yy - 10.5) + np.abs(xx - 5.5) <= 4.5,
            (yy >= 5) & (yy < 15) & (xx >= 11) & (xx < 15),
        ]
    elif layout == "overlapping":
        supports = [
            (yy >= 1) & (yy < 9) & (xx >= 1) & (xx < 11),
            (yy >= 4) & (yy < 15) & (xx >= 7) & (xx < 15),
            np.abs(yy - 11.5) + np.abs(xx - 4.5) <= 4,
        ]
    else:
        raise ValueError(f"layout must be 'default' or 'overlapping', got {layout!r}.")
    V = np.zeros((3, h * w))
    for k, sup in enumerate(supports):
        cy, cx = yy[sup].mean(), xx[sup].mean()
        ry, rx = np.ptp(yy[sup]) / 2 + 0.5, np.ptp(xx[sup]) / 2 + 0.5
        bump = np.cos(np.pi / 2 * np.abs(yy - cy) / ry) * np.cos(np.pi / 2 * np.abs(xx - cx) / rx)
        if floor > 0:
            bump = floor + (1.0 - floor) * bump / bump[sup].max()
        V[k, sup.ravel()] = bump[sup]
        V[k] /= np.linalg.norm(V[k])
    X = 8 * rng.standard_normal((n_samples, 3)) @ V + noise * rng.standard_normal(
        (n_samples, h * w)
    )
    return X, np.array([sup.ravel() for sup in supports]), V


def make_tree_patches(
    n_samples,
    branching=(4, 3),
    side=5,
    noise=0.1,
    random_state=0,
    dictionary_state=None,
    n_paths=1,
    codes="gaussian",
):
    """Patches from a tree-structured dictionary (hierarchical dictionary learning).

    Each signal uses the atoms on ``n_paths`` random root-to-node paths (the
    union of the paths, an ancestor-closed support); atoms are correlated with
    their parents, as the learned trees of Jenatton et al. are. With the
    defaults (one path, Gaussian codes) a patch has one root-to-node path;
    ``n_paths > 1`` makes patches mixtures of several branches, as natural
    patches (an edge plus a texture) are, and ``codes="laplace"`` gives
    heavier-tailed coefficients.

    Parameters
    ----------
    n_samples : int
    branching : tuple of int
        Children per node at each depth (:func:`neurospca.trees.balanced_tree`).
    side : int
        Patches are ``side x side``.
    noise : float
        Standard deviation of the additive Gaussian noise.
    random_state : int
        Seed of the codes and the noise (and of the dictionary when
        ``dictionary_state`` is None, drawn first from the same generator).
    dictionary_state : int, optional
        Separate seed of the dictionary, to draw several patch sets from one.
    n_paths : int, default=1
        Root-to-node paths per patch (end nodes drawn uniformly with
        replacement); the support is their union. A node shared by several
        paths gets one coefficient.
    codes : {"gaussian", "laplace"}, default="gaussian"
        Distribution of a coefficient: ``N(0, 1) + 0.5 s`` (``s`` a random
        sign), or a standard Laplace variable plus ``0.5 s`` (heavier tails).

    Returns
    -------
    X : ndarray of shape (n_samples, side * side)
    parent : ndarray of int
        The tree as a parent array (-1 at the root).
    """
    from .trees import balanced_tree, check_tree

    if isinstance(n_paths, bool) or not isinstance(n_paths, (int, np.integer)) or n_paths < 1:
        raise ValueError(f"n_paths must be a positive int, got {n_paths!r}.")
    if codes not in ("gaussian", "laplace"):
        raise ValueError(f"codes must be 'gaussian' or 'laplace', got {codes!r}.")
    rng = np.random.default_rng(random_state)
    drng = rng if dictionary_state is None else np.random.default_rng(dictionary_state)
    parent = balanced_tree(branching)
    p, m = parent.size, side * side
    D = drng.standard_normal((p, m))
    for node in check_tree(parent).order:
        if parent[node] >= 0:
            D[node] = 0.6 * D[parent[node]] + 0.8 * D[node]
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    draw = rng.standard_normal if codes == "gaussian" else rng.laplace
    A = np.zeros((n_samples, p))
    for i in range(n_samples):
        for _ in range(int(n_paths)):
            node = rng.integers(p)
            while node >= 0:
                if A[i, node] == 0.0:
                    A[i, node] = draw() + 0.5 * np.sign(rng.standard_normal())
                node = parent[node]
    return A @ D + noise * rng.standard_normal((n_samples, m)), parent


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
