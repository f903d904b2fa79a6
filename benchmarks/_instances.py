"""Seeded benchmark instances (shared by the benchmark scripts).

- ``simulation_2d``: the SPCA-TV paper's simulation (section III-A): 100x100
  images, loadings of two upper dots, two lower dots and one middle dot,
  Gaussian scores, noise at SNR 0.1 (ratio of standard deviations), 250 samples.
- ``fmri_like``: N = 83 maps over the P = 64,030 voxels of nilearn's MNI152
  brain mask at 3 mm (threshold 0.48), three smooth sparse patterns plus noise.
"""

import numpy as np


def _blob(shape, center, radius):
    grids = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    d2 = sum((g - c) ** 2 for g, c in zip(grids, center))
    return np.exp(-d2 / (2.0 * (radius / 2.0) ** 2)) * (d2 <= radius**2)


def paper_patterns_2d(shape=(100, 100)):
    """The three loading patterns of the paper's simulation, (3, 100, 100)."""
    h, w = shape
    r = h / 10
    p1 = _blob(shape, (0.25 * h, 0.3 * w), r) + _blob(shape, (0.25 * h, 0.7 * w), r)
    p2 = _blob(shape, (0.75 * h, 0.3 * w), r) + _blob(shape, (0.75 * h, 0.7 * w), r)
    p3 = _blob(shape, (0.5 * h, 0.5 * w), r)
    return np.stack([p1, p2, p3])


def simulation_2d(n_samples=250, snr=0.1, seed=0, shape=(100, 100)):
    """Paper simulation: X (n_samples, 10,000), true patterns (3, 10,000), mask."""
    rng = np.random.default_rng(seed)
    patterns = paper_patterns_2d(shape).reshape(3, -1)
    scales = np.array([1.0, 0.8, 0.6])
    scores = rng.standard_normal((n_samples, 3)) * scales
    signal = scores @ patterns
    noise = rng.standard_normal(signal.shape)
    noise *= signal.std() / (snr * noise.std())  # SNR = std(signal) / std(noise)
    return signal + noise, patterns, np.ones(shape, dtype=bool)


def fmri_like(n_samples=83, seed=0, noise=1.0):
    """fMRI-sized instance on the MNI152 3 mm mask: X (83, 64030), patterns, mask."""
    from nilearn.datasets import load_mni152_brain_mask

    mask = load_mni152_brain_mask(resolution=3, threshold=0.48).get_fdata() > 0
    rng = np.random.default_rng(seed)
    ijk = np.argwhere(mask)
    centers = ijk[rng.choice(len(ijk), 3, replace=False)]
    patterns = np.stack([_blob(mask.shape, c, 8.0)[mask] for c in centers])
    scores = rng.standard_normal((n_samples, 3)) * np.array([3.0, 2.0, 1.5])
    X = scores @ patterns + noise * rng.standard_normal((n_samples, mask.sum()))
    return X, patterns, mask


def example_weights(X):
    """The reference implementation's example penalties:
    ``(l1, l2, tv) = l1_max * (0.05, 1, 0.1)`` with ``l1_max = max_j ||X_j|| / N``."""
    Xc = X - X.mean(axis=0)
    l1_max = np.sqrt((Xc**2).sum(axis=0)).max() / X.shape[0]
    return 0.05 * l1_max, 1.0 * l1_max, 0.1 * l1_max
