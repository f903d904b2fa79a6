"""Seeded simulations (no downloads).

- :func:`make_paper_simulation`: the SPCA-TV paper's simulation (section III-A):
  100x100 images whose three loading patterns are two upper dots, two lower
  dots and one middle dot; Gaussian scores; Gaussian noise at a given SNR.
- :func:`make_fmri_like`: maps over nilearn's MNI152 brain mask at 3 mm
  (64,030 voxels, the size of the paper's fMRI set) with three smooth sparse
  patterns plus noise. Needs nilearn (its bundled template, no download).
"""

import numpy as np

__all__ = ["make_paper_simulation", "make_fmri_like", "paper_patterns"]


def _blob(shape, center, radius):
    grids = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    d2 = sum((g - c) ** 2 for g, c in zip(grids, center))
    return np.exp(-d2 / (2.0 * (radius / 2.0) ** 2)) * (d2 <= radius**2)


def paper_patterns(shape=(100, 100)):
    """The three loading patterns of the paper's simulation.

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


def make_paper_simulation(n_samples=250, snr=0.1, random_state=0, shape=(100, 100)):
    """The SPCA-TV paper's simulated data set.

    ``X = U V^T + noise`` with the three patterns of :func:`paper_patterns` as
    ``V``, centred Gaussian scores ``U`` (standard deviations 1, 0.8, 0.6) and
    i.i.d. Gaussian noise with ``std(signal) / std(noise) = snr``.

    Parameters
    ----------
    n_samples : int, default=250
    snr : float, default=0.1
    random_state : int, default=0
    shape : tuple of int, default=(100, 100)

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
    scores = rng.standard_normal((n_samples, 3)) * np.array([1.0, 0.8, 0.6])
    signal = scores @ patterns
    noise = rng.standard_normal(signal.shape)
    noise *= signal.std() / (snr * noise.std())
    return signal + noise, patterns, np.ones(shape, dtype=bool)


def make_fmri_like(n_samples=83, noise=1.0, random_state=0):
    """fMRI-sized maps in the MNI152 3 mm brain mask (64,030 voxels).

    Three Gaussian blobs (radius 8 voxels) at random in-mask centres, scores
    with standard deviations 3, 2, 1.5, plus i.i.d. Gaussian noise.

    Returns
    -------
    X : ndarray of shape (n_samples, 64030)
    patterns : ndarray of shape (3, 64030)
    mask : ndarray of bool, shape (61, 73, 61)
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
