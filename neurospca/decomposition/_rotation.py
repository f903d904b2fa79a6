"""Sparsest rotations of pairs of components: the joint fit's escape from merged regions.

When two regions co-vary (atrophy that shares a disease severity), a pair of
components can settle on their sum and difference: ``A + B`` and ``A - B``
span the same plane as ``A`` and ``B`` and fit the data as well, and the
back-fitting sweeps, which move one component at a time, do not leave that
point (measured on conte69 and fsaverage5 cohorts: both split halves
reproduced the merged pair at 0.98-0.99, issue 20). Within the plane of two
loadings the l1 norm of a unit vector is smallest along separated regions:
for disjoint supports ``||(A + B) / sqrt(2)||_1 = sqrt(2) ||A||_1`` at equal
norms. :func:`rotate_pairs` searches each plane for its two sparsest
directions and, where they are sparser than the current pair by
:data:`MIN_GAIN`, replaces the pair by them, as a start for the next sweep
(which fits both again with the certified v-step; nothing is certified here).
"""

import numpy as np

#: A pair is replaced when the summed ``||w||_1`` of its unit loadings falls by
#: at least this fraction.
MIN_GAIN = 0.02

#: Angles searched in each plane (over half a turn).
N_ANGLES = 180

#: The two directions kept are at least this far apart (radians, 20 degrees).
MIN_SEPARATION = np.pi / 9


def _l1_profile(e1, e2, n_angles=N_ANGLES):
    """``||cos(t) e1 + sin(t) e2||_1`` at ``t = i pi / n_angles``, in O(n log n).

    Each term is ``|a_i cos t + b_i sin t|`` with ``(a_i, b_i)`` turned by a
    half turn where needed so that its angle lies in ``[-pi/2, pi/2)``: the
    term is then ``+(a_i cos t + b_i sin t)`` for ``t < tau_i`` (its angle
    plus ``pi/2``) and ``-(...)`` after, so the profile is ``cos t (S_a -
    2 C_a(t)) + sin t (S_b - 2 C_b(t))`` with ``C`` the cumulative sums of the
    terms whose ``tau_i <= t`` (sorted once). Equal to the direct sum over
    every angle (:func:`_l1_profile_direct`, ``O(n_angles n)``, which took
    17 % of a default fit's time on fsaverage5) to rounding.
    """
    t = np.arange(n_angles) * np.pi / n_angles
    nonzero = (e1 != 0) | (e2 != 0)
    a, b = e1[nonzero], e2[nonzero]
    phi = np.arctan2(b, a)
    flip = (phi >= np.pi / 2) | (phi < -np.pi / 2)
    a, b, phi = np.where(flip, -a, a), np.where(flip, -b, b), np.where(flip, phi - np.pi, phi)
    phi = np.where(phi < -np.pi / 2, phi + 2 * np.pi, phi)  # rounding at the edge
    order = np.argsort(phi + np.pi / 2, kind="stable")
    ca = np.concatenate([[0.0], np.cumsum(a[order])])
    cb = np.concatenate([[0.0], np.cumsum(b[order])])
    before = np.searchsorted((phi + np.pi / 2)[order], t, side="right")
    out = np.cos(t) * (ca[-1] - 2.0 * ca[before]) + np.sin(t) * (cb[-1] - 2.0 * cb[before])
    return t, out


def _l1_profile_direct(e1, e2, n_angles=N_ANGLES, chunk=16):
    """:func:`_l1_profile` summed directly at every angle (the reference)."""
    t = np.arange(n_angles) * np.pi / n_angles
    nonzero = (e1 != 0) | (e2 != 0)
    e1, e2 = e1[nonzero], e2[nonzero]
    out = np.empty(n_angles)
    for s in range(0, n_angles, chunk):
        c, sn = np.cos(t[s : s + chunk]), np.sin(t[s : s + chunk])
        out[s : s + chunk] = np.abs(np.outer(e1, c) + np.outer(e2, sn)).sum(axis=0)
    return t, out


def sparsest_pair(a, b, min_gain=None):
    """The two sparsest unit directions in the plane of ``a`` and ``b``.

    Parameters
    ----------
    a, b : ndarray of shape (n_features,)
        Two non-zero, non-parallel loadings.
    min_gain : float, optional
        When the gain is below it, ``w1`` and ``w2`` are not formed (None):
        the pair is kept (at large P those P-long products were a third of
        the search).

    Returns
    -------
    (w1, w2, gain) or None
        Two unit vectors of the plane at local minima of the l1 norm (at
        least :data:`MIN_SEPARATION` apart) and the relative decrease of the
        summed l1 norm against the unit ``a`` and ``b``; None when the plane
        is degenerate or has a single minimum.
    """
    return _sparsest(_unit(a), b, _unit(b), min_gain)


def _unit(a):
    """``(a / ||a||, its l1 norm, ||a||)``: a loading's part of :func:`sparsest_pair`."""
    nrm = np.linalg.norm(a)
    e = a / nrm
    return e, np.abs(e).sum(), nrm


def _sparsest(unit_a, b, unit_b, min_gain):
    """:func:`sparsest_pair` of ``a`` and ``b`` from their :func:`_unit`."""
    e1 = unit_a[0]
    r = b - (e1 @ b) * e1
    nr = np.linalg.norm(r)
    if nr <= 1e-8 * unit_b[2]:
        return None
    e2 = r / nr
    t, f = _l1_profile(e1, e2)
    minima = np.flatnonzero((f <= np.roll(f, 1)) & (f <= np.roll(f, -1)))
    minima = minima[np.argsort(f[minima])]
    if minima.size < 2:
        return None
    i = minima[0]
    far = [
        j for j in minima[1:] if min(abs(t[j] - t[i]), np.pi - abs(t[j] - t[i])) >= MIN_SEPARATION
    ]
    if not far:
        return None
    j = far[0]
    gain = 1.0 - (f[i] + f[j]) / (unit_a[1] + unit_b[1])
    if min_gain is not None and gain < min_gain:
        return None, None, gain
    w1 = np.cos(t[i]) * e1 + np.sin(t[i]) * e2
    w2 = np.cos(t[j]) * e1 + np.sin(t[j]) * e2
    return w1, w2, gain


def _set(U, V, d, Z, k, w, z, scale):
    """Component ``k`` along unit loading ``w`` (norm ``scale``, ``z = X w``), its
    scores the data's projection on it and ``d`` the least-squares scale."""
    nz = float(np.linalg.norm(z))
    U[:, k] = z / nz
    V[:, k] = scale * w
    Z[:, k] = scale * z
    d[k] = nz / scale


def rotate_pairs(op, U, V, d, Z, info):
    """Replace every pair of non-empty components by its sparsest rotation
    where that lowers the pair's summed l1 norm by :data:`MIN_GAIN` (in place).

    Parameters
    ----------
    op : DataOperator
        The centred data (``matvec``).
    U, V, d, Z : ndarray
        Scores, loadings, scales and ``Z = X V`` of the joint fit.
    info : dict
        The fit's record; the dual warm starts of moved components are reset.

    Returns
    -------
    int
        How many pairs were replaced.
    """
    moved = 0
    K = V.shape[1]
    live = [bool(np.any(V[:, k])) for k in range(K)]
    units = {}  # each loading's _unit, formed once per sweep (until it moves)
    for j in range(K):
        for k in range(j + 1, K):
            if not (live[j] and live[k]):
                continue
            for i in (j, k):
                units[i] = units[i] if i in units else _unit(V[:, i])
            best = _sparsest(units[j], V[:, k], units[k], MIN_GAIN)
            if best is None or best[2] < MIN_GAIN:
                continue
            w1, w2, _ = best
            sj, sk = units[j][2], units[k][2]
            # keep each loading's place: the new direction closer to the old one
            if abs(w1 @ V[:, j]) / sj < abs(w1 @ V[:, k]) / sk:
                w1, w2 = w2, w1
            zj, zk = op.matvec(w1), op.matvec(w2)
            if not (np.any(zj) and np.any(zk)):
                continue
            _set(U, V, d, Z, j, w1, zj, sj)
            _set(U, V, d, Z, k, w2, zk, sk)
            del units[j], units[k]
            info["w"][j] = info["w"][k] = None
            moved += 1
    return moved
