"""Seeded image simulations: the SPCA-TV paper's 2-D set, fMRI-like maps in the
MNI152 3 mm mask, structured images and tree-structured patches (no downloads)."""

import os

import numpy as np


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


_MNI152_MASK = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "data", "mni152_brain_mask_3mm.npz"
)


def mni152_brain_mask(voxel_size=3):
    """nilearn's MNI152 brain mask at 3 mm, as stored in the package, or on a coarser grid.

    The array is ``nilearn.datasets.load_mni152_brain_mask(resolution=3,
    threshold=0.48)`` (nilearn 0.14, from its bundled 1 mm template; the
    tests check that it still is when nilearn is installed), kept as a
    6 kB file so that :func:`make_fmri_like` and ``neurospca demo`` neither
    import nilearn's datasets nor resample the template (about 2 s).

    Parameters
    ----------
    voxel_size : int, default=3
        Edge of the voxels in mm, >= 3. Other sizes than 3 are the 3 mm mask
        sampled at the nearest 3 mm voxel of each new voxel's centre (same
        origin and field of view): 13,682 voxels at 5 mm, 8,054 at 6 mm.

    Returns
    -------
    mask : ndarray of bool, shape (67, 79, 64) at 3 mm
        64,030 voxels at 3 mm.
    affine : ndarray of shape (4, 4)
        Its voxel-to-MNI affine.
    """
    if isinstance(voxel_size, bool) or not isinstance(voxel_size, (int, np.integer)):
        raise TypeError(f"voxel_size must be an int, got {voxel_size!r}.")
    if voxel_size < 3:
        raise ValueError(f"voxel_size must be >= 3 (mm), got {voxel_size!r}.")
    with np.load(_MNI152_MASK, allow_pickle=False) as stored:
        shape = tuple(int(n) for n in stored["shape"])
        mask = np.unpackbits(stored["bits"], count=int(np.prod(shape))).astype(bool)
        mask, affine = mask.reshape(shape), np.array(stored["affine"], dtype=np.float64)
    if voxel_size == 3:
        return mask, affine
    step = voxel_size / 3.0
    idx = [np.rint(np.arange(int((n - 1) / step) + 1) * step).astype(np.intp) for n in shape]
    affine[:3, :3] *= step
    return np.ascontiguousarray(mask[np.ix_(*idx)]), affine


def make_fmri_like(n_samples=83, noise=1.0, random_state=0, *, voxel_size=3):
    """fMRI-sized maps in the MNI152 3 mm brain mask (64,030 voxels).

    Three Gaussian blobs (radius 24 mm: 8 voxels at 3 mm) at random in-mask
    centres, scores with standard deviations 3, 2, 1.5, plus i.i.d. Gaussian
    noise.

    Parameters
    ----------
    n_samples : int, default=83
        Number of maps (the paper's fMRI set has 83).
    noise : float, default=1.0
        Standard deviation of the i.i.d. Gaussian noise.
    random_state : int, default=0
        Seed of the blob centres, the scores and the noise.
    voxel_size : int, default=3
        Voxel edge in mm (:func:`mni152_brain_mask`); ``neurospca demo`` uses 5
        (13,682 voxels). The blobs keep their radius in mm.

    Returns
    -------
    X : ndarray of shape (n_samples, n_voxels)
        64,030 voxels at 3 mm.
    patterns : ndarray of shape (3, n_voxels)
    mask : ndarray of bool, shape (67, 79, 64) at 3 mm
    """
    mask = mni152_brain_mask(voxel_size)[0]
    rng = np.random.default_rng(random_state)
    ijk = np.argwhere(mask)
    centers = ijk[rng.choice(len(ijk), 3, replace=False)]
    patterns = np.stack([_blob(mask.shape, c, 24.0 / voxel_size)[mask] for c in centers])
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
    from ..trees import balanced_tree, check_tree

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
