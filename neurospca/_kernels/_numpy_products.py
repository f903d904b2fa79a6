"""NumPy twin of :mod:`neurospca._kernels._products` (same results, slower)."""

import numpy as np


def rmatvec_exact(B, z, out):
    """``out += B^T z`` in float64 (``B`` float32)."""
    out += np.asarray(z, dtype=np.float64) @ np.asarray(B, dtype=np.float64)


def column_stats(T, s, lo, hi):
    """Column sums (float64), minima and maxima of ``T`` into ``s``, ``lo``, ``hi``."""
    T = np.asarray(T)
    s[...] = T.sum(axis=0, dtype=np.float64)
    if T.shape[0]:
        lo[...] = T.min(axis=0)
        hi[...] = T.max(axis=0)
    else:
        lo[...] = np.inf
        hi[...] = -np.inf


def column_m2(T, mean, m2):
    """Centred column sums of squares of ``T`` (float64) into ``m2``."""
    D = np.subtract(T, mean, dtype=np.float64)
    m2[...] = np.einsum("ij,ij->j", D, D)


def column_moments(T, s, lo, hi, mean, m2):
    """:func:`column_stats`, ``mean = s / n`` and :func:`column_m2` (float64)."""
    column_stats(T, s, lo, hi)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        mean[...] = s / np.asarray(T).shape[0]
        column_m2(T, mean, m2)


def scan_tile(T, n_before, mean, m2, lo, hi):
    """:func:`column_moments` of ``T`` merged into running statistics of
    ``n_before`` rows (Chan et al.), in place; returns the columns whose sum,
    minimum or maximum is not finite."""
    T = np.asarray(T)
    n, w = T.shape
    if n == 0 or w == 0:
        return 0
    s, lo_b, hi_b, mean_b, m2_b = (np.empty(w) for _ in range(5))
    column_moments(T, s, lo_b, hi_b, mean_b, m2_b)
    total = n_before + n
    with np.errstate(invalid="ignore", over="ignore"):
        delta = mean_b - mean
        m2 += m2_b + delta * delta * (n_before * n / total)
        mean += delta * (n / total)
    np.minimum(lo, lo_b, out=lo)
    np.maximum(hi, hi_b, out=hi)
    return int(w - np.count_nonzero(np.isfinite(s) & np.isfinite(lo_b) & np.isfinite(hi_b)))


def pair_rows(W):
    """``W`` (p x 8) with its rows in pairs, interleaved (as the compiled ``matmat8`` takes it)."""
    W = np.asarray(W, dtype=np.float32)
    p = W.shape[0]
    Wp = np.zeros((p + p % 2, 8), np.float32)
    Wp[:p] = W
    return np.ascontiguousarray(Wp.reshape(-1, 2, 8).transpose(0, 2, 1).reshape(-1, 16))


def matmat8(B, W, Wi, Y):
    """``Y += B W`` (float32 products, float64 ``Y``; ``Wi`` unused here)."""
    Y += np.asarray(B) @ np.asarray(W, dtype=np.float32)


def rmatmat8(B, Y, G):
    """``G += B^T Y`` (float32 products, float64 ``G``)."""
    G += np.asarray(B).T @ np.asarray(Y, dtype=np.float32)


def fused_exact(B, v, shift, z, acc):
    """``z = B v - shift`` and ``acc += B^T z``, in float64."""
    B64 = np.asarray(B, dtype=np.float64)
    z[...] = B64 @ v - shift
    acc += z @ B64
