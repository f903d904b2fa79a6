"""A fixed-penalty fit started from given components (issue 20 round 7).

``alpha_rel="auto"`` starts its full fit from the scores of the chosen half
fit's components, and the joint fit's other starts (deflation, the data's top
singular subspace) compete on the joint objective. A fit at a fixed penalty
starts cold. :func:`start_from` gives an unfitted SPCATV the start of the
default fit: ``select_penalty``'s refit at the chosen point starts from that
point's half fit, and the subsample fits of ``stability_`` from their own
path (:mod:`._stability`). The hook in ``SPCATV._fit_penalty`` is
:func:`start_state`.
"""

import numpy as np

from ._stability import scores_of


def start_from(estimator, components):
    """Start the next fixed-penalty fit of ``estimator`` from ``components``.

    The fit's first scores are the data's unit scores on ``components``
    (``Xc c_k / ||Xc c_k||``); with ``method="joint"`` the sweeps start there
    and the fit's other starts (deflation, the top singular subspace) still
    run, the lowest joint objective kept, so the start never gives a worse
    objective than a cold fit's. With ``method="deflation"`` they are
    deflation's warm start. Not kept by ``clone``; used once (the next fit).

    Parameters
    ----------
    estimator : SPCATV
    components : ndarray of shape (n_components, n_features) or None
        None removes a start set before.

    Returns
    -------
    estimator
    """
    if components is None:
        estimator.__dict__.pop("_start_components", None)
        return estimator
    C = np.asarray(components, dtype=np.float64)
    if C.ndim != 2 or not np.all(np.isfinite(C)):
        raise ValueError(f"components must be a finite 2-D array, got shape {C.shape}.")
    estimator._start_components = C
    return estimator


def start_state(estimator, op, u0):
    """``(u0, from_scores)`` of a fixed-penalty fit: the scores of the
    components given to :func:`start_from` (removed from the estimator: one
    fit), else ``(u0, False)``. Cold when the components do not fit the data
    (shape) or one of them has no score on it (empty)."""
    C = estimator.__dict__.pop("_start_components", None)
    k = estimator.n_components
    if C is None or C.shape[1] != op.shape[1] or (k is not None and C.shape[0] != k):
        return u0, False
    scores = scores_of(op, C)
    if scores is None:
        return u0, False
    return scores, estimator.method == "joint"
