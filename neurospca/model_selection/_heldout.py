"""Held-out variance of a returned model: evidence about its weakest pattern (issue 20 round 10).

The returned model's stability (``_returned.returned_stability``) scores each
component by how well fits started from it reproduce it. A pattern that no
model reproduces (ElasticNet PCA's third on the paper simulation, 0.0-0.3 at
every grid point) gives no evidence either way, so a model that loses it and
sharpens the other two scored higher (round 9, fresh seed 3225: l1 weight 0.2,
MSE to the truth 0.71 against the default's 0.49 and 0.33 at l1 weight 0.1).

The evidence here is what the components explain of rows they were not fitted
on: each half of the search's first sample split is fitted from the model's
components (the fits :func:`~._returned.returned_evidence` makes already) and
the other half is projected on the span of its components
(:func:`heldout_variance`, the paper's held-out reconstruction, as a fraction
of the held-out variance). Its noise floor is what the same components explain
when the held-out half's columns are independent (:func:`independent_floor`:
the expectation under a permutation of each column's rows). A model whose
held-out variance is below another's by more than that floor has lost
variance a model of its size explains beyond chance, whatever the stability
says (:func:`explains_less`), and the method's own default fit is left only
for a model that explains more than it by more than that floor
(:func:`explains_more`). Measured on ElasticNet PCA (paper simulation,
development seeds 3225, 3226, 3228, 3229): held-out variance 6.3-6.8e-3 at l1
weight 0.1-0.125 (the truth-best), 5.0-5.2e-3 at the default's 0.05 and
5.4-5.6e-3 at 0.2 (a pattern lost), floor 0.3-0.5e-3 (benchmarks/RESULTS.md,
issue 20 round 10).
"""

import numpy as np


def _basis(components):
    """Orthonormal rows spanning the non-zero components (as
    ``reconstruction_error``)."""
    C = np.asarray(components, dtype=np.float64)
    _, s, Vt = np.linalg.svd(C, full_matrices=False)
    cutoff = s.max(initial=0.0) * max(C.shape) * np.finfo(float).eps
    return Vt[s > cutoff]


def heldout_variance(components, train, test):
    """Fraction of the variance of ``test`` (centred on the mean of ``train``)
    in the span of ``components`` (fitted on ``train``), and its floor
    (:func:`independent_floor`).

    Parameters
    ----------
    components : ndarray of shape (n_components, n_features)
    train, test : ndarray of shape (n_rows, n_features)

    Returns
    -------
    explained, floor : float
    """
    B = np.asarray(test, dtype=np.float64) - np.asarray(train, dtype=np.float64).mean(axis=0)
    total = float(np.sum(B**2))
    Q = _basis(components)
    if total == 0.0 or Q.shape[0] == 0:
        return 0.0, 0.0
    explained = float(np.sum((B @ Q.T) ** 2)) / total
    return explained, independent_floor(Q, B, total)


def independent_floor(Q, B, total):
    """The fraction of ``B``'s variance the orthonormal rows ``Q`` explain in
    expectation when each column's rows are permuted independently: the
    cross-column covariance averages to zero and each column keeps its
    variance, so the expectation is ``sum_j ||Q[:, j]||^2 ||B[:, j]||^2 /
    ||B||^2`` (up to the O(1 / n) correlation of a permutation's entries).

    Parameters
    ----------
    Q : ndarray of shape (k, n_features)
        Orthonormal rows.
    B : ndarray of shape (n_rows, n_features)
        Centred held-out rows.
    total : float
        ``||B||^2``.

    Returns
    -------
    float
    """
    leverage = np.sum(Q**2, axis=0)
    return float(leverage @ np.sum(B**2, axis=0)) / total


def pair_heldout(pair, halves):
    """Held-out variance of two half fits, each on the other half: the mean
    of the two directions and the mean of their floors.

    Parameters
    ----------
    pair : sequence of two ndarray of shape (n_components, n_features)
        The components fitted on ``halves[0]`` and ``halves[1]``.
    halves : sequence of two ndarray

    Returns
    -------
    ndarray of shape (2,)
        ``(explained, floor)``.
    """
    ab = heldout_variance(pair[0], halves[0], halves[1])
    ba = heldout_variance(pair[1], halves[1], halves[0])
    return np.mean([ab, ba], axis=0)


def explains_more(chosen, other):
    """True when the held-out variance of ``chosen`` is above ``other``'s by
    more than ``other``'s floor (both ``(explained, floor)``; True when
    ``other`` is missing, False when ``chosen`` is): the evidence needed to
    leave the method's own default fit (``_returned.returned_choice``)."""
    if other is None:
        return True
    if chosen is None:
        return False
    return bool(chosen[0] > other[0] + other[1])


def explains_less(chosen, other):
    """True when the held-out variance of ``chosen`` is below ``other``'s by
    more than ``other``'s floor (both ``(explained, floor)`` of
    :func:`pair_heldout`; False when either is missing)."""
    if chosen is None or other is None:
        return False
    return bool(chosen[0] < other[0] - other[1])
