"""The command line's penalty defaults and the reference example penalties, in one place.

The command line follows SPCATV's own defaults (:func:`spcatv_defaults`); the
benchmarks use the reference implementation's example penalties
``(l1, l2, tv) = l1_max * (0.05, 1, 0.1)`` (:func:`example_weights`), with
``l1_max = max_j ||Xc_j||_2 / N`` of the centred data (:func:`l1_max`): the l1
weight above which every loading is zero without TV (SPCATV's ``l1_max_``).
"""

import numpy as np

from ..image import SPCATV_DEFAULTS

__all__ = ["spcatv_defaults", "l1_max", "example_weights"]


def spcatv_defaults():
    """SPCATV's penalty defaults, as the image model reads them once from SPCATV's
    signature (``neurospca.image.SPCATV_DEFAULTS``; the command follows them).

    Returns
    -------
    dict
        ``alpha_rel``, ``l1_ratio``, ``tv_ratio``, ``max_iter`` and ``tol``
        defaults.
    """
    names = ("alpha_rel", "l1_ratio", "tv_ratio", "max_iter", "tol")
    return {name: SPCATV_DEFAULTS[name] for name in names}


def l1_max(X):
    """``max_j ||Xc_j||_2 / N`` of the column-centred data.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data (centred here).

    Returns
    -------
    float
    """
    X = np.asarray(X, dtype=np.float64)
    Xc = X - X.mean(axis=0)
    return float(np.sqrt(np.einsum("ij,ij->j", Xc, Xc)).max()) / X.shape[0]


def example_weights(X, l1=0.05, l2=1.0, tv=0.1):
    """The reference implementation's example penalties relative to :func:`l1_max`.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data.
    l1, l2, tv : float, default=(0.05, 1.0, 0.1)
        The weights in units of ``l1_max``.

    Returns
    -------
    tuple of float
        ``(l1, l2, tv)`` absolute weights.
    """
    scale = l1_max(X)
    return l1 * scale, l2 * scale, tv * scale
