"""The working-set algorithm of the (k, PSD) trace norm (Richard, Obozinski, Vert).

:func:`_ktrace_pca` on validated arguments, its block coordinate descent,
oracle and certificate, with the primal and dual values and the polar bound;
split from :mod:`neurospca.decomposition._ktrace` (the public function, the
estimator) by job.
"""

import itertools
import logging
import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from ._covariance import _min_eigenvalue, _tpi_candidates

logger = logging.getLogger("neurospca")

__all__ = [
    "_EXACT_POLAR_MAX_SUBSETS",
    "_exact_candidates",
    "_ktrace_pca",
    "ktrace_objective",
    "polar_upper_bound",
]

_EXACT_POLAR_MAX_SUBSETS = 20_000


def _exact_candidates(K, k):
    """All supports with their ``lambda_max(K_II)``, by enumeration (tiny
    problems), sorted by decreasing value."""
    p = K.shape[0]
    out = []
    for idx in itertools.combinations(range(p), k):
        idx = np.asarray(idx)
        w, V = np.linalg.eigh(K[np.ix_(idx, idx)])
        out.append((float(w[-1]), idx, V[:, -1]))
    out.sort(key=lambda c: -c[0])
    return out


def ktrace_objective(S, Z, alpha, blocks):
    """Primal value ``1/2 ||Z - S||_F^2 + alpha * sum_I tr Z^(I)``.

    With the decomposition ``blocks`` (a list of ``(support, Z_I)``, summing to
    ``Z``) this upper-bounds ``1/2 ||Z - S||^2 + alpha * Omega(Z)``.

    Parameters
    ----------
    S : ndarray of shape (p, p)
        The empirical covariance.
    Z : ndarray of shape (p, p)
        The estimate.
    alpha : float
        The penalty weight.
    blocks : iterable of (ndarray of int, ndarray of shape (k, k))
        The decomposition of ``Z``.

    Returns
    -------
    float
    """
    R = Z - S
    return float(0.5 * np.sum(R * R) + alpha * sum(float(np.trace(Zb)) for _, Zb in blocks))


def _dual_value(S, K, alpha, polar):
    """Dual objective at ``K`` rescaled into ``{Omega°(K) <= alpha}``."""
    scale = 1.0 if polar <= alpha else alpha / polar
    Kf = scale * K
    return float(np.sum(Kf * S) - 0.5 * np.sum(Kf * Kf))


def _exact_polar_value(K, k):
    """``max_{|I|=k} lambda_max(K_II)`` by batched enumeration (small problems)."""
    idx = np.array(list(itertools.combinations(range(K.shape[0]), k)), dtype=np.intp)
    best = -np.inf
    for start in range(0, idx.shape[0], 4096):
        chunk = idx[start : start + 4096]
        blocks = K[chunk[:, :, None], chunk[:, None, :]]
        best = max(best, float(np.linalg.eigvalsh(blocks)[:, -1].max()))
    return best


def polar_upper_bound(K, k):
    """A certified upper bound of the polar ``max_{|I|=k} lambda_max(K_II)``.

    The smaller of ``lambda_max(K)`` (Cauchy interlacing: a principal
    submatrix has no larger eigenvalue) and a Gershgorin bound on every
    ``k x k`` principal submatrix (``|K_ii|`` plus the ``k - 1`` largest
    ``|K_ij|`` of row ``i``). Unlike the truncated power iteration estimate,
    it can never miss a violating support, so the dual point
    ``K min(1, alpha / bound)`` is feasible and its gap is a true bound.

    Parameters
    ----------
    K : ndarray of shape (p, p), symmetric
        The matrix (a residual ``S - Z``).
    k : int
        Support size.

    Returns
    -------
    float
        A bound ``>= 0``.
    """
    p = K.shape[0]
    lam = float(np.linalg.eigvalsh(K)[-1])
    A = np.abs(K)
    diag = np.diag(A).copy()
    off = A.copy()
    np.fill_diagonal(off, 0.0)
    if k > 1 and p > 1:
        top = -np.sort(-off, axis=1)[:, : k - 1].sum(axis=1)
    else:
        top = np.zeros(p)
    gersh = float(np.max(diag + top))
    return max(min(lam, gersh), 0.0)


def _ktrace_pca(
    S,
    k,
    alpha,
    tol,
    max_blocks,
    max_iter,
    n_restarts,
    tpi_max_iter,
    max_add,
    exact_polar,
    random_state,
    verbose,
):
    """:func:`ktrace_pca` on validated arguments (the estimator calls it directly).

    The loop of the working-set algorithm: solve the working set
    (:func:`_solve_working_set`), ask the oracle for the polar and violating
    supports (:func:`_oracle`), add them or stop; then certify
    (:func:`_certificate`).
    """
    rng = check_random_state(random_state)
    t0 = time.perf_counter()
    # lambda_min(S - Z) >= lambda_min(S) - lambda_max(Z), and Z is PSD with
    # lambda_max(Z) at most its largest absolute row sum (Gershgorin)
    lmin_S = _min_eigenvalue(S)
    Z = np.zeros_like(S)
    supports = np.zeros((0, k), dtype=np.intp)  # working set, one support per row
    values = np.zeros((0, k, k))  # the blocks Z^(I)
    history = []
    n_sweeps = n_iter = stalled = 0
    converged = False
    bcd_tol = tol * float(np.linalg.norm(S))
    threshold = alpha * (1.0 + tol)
    while True:
        supports, values, sweeps = _solve_working_set(
            S, Z, supports, values, alpha, bcd_tol, max_iter, tol
        )
        n_sweeps += sweeps
        history.append(ktrace_objective(S, Z, alpha, zip(supports, values, strict=True)))
        cands = _oracle(S - Z, Z, k, threshold, exact_polar, n_restarts, tpi_max_iter, rng, lmin_S)
        polar = cands[0][0]
        if verbose:
            logger.info(
                "working set of %d blocks: objective %.10g, polar estimate %.6g (alpha %.6g)",
                len(supports),
                history[-1],
                polar,
                alpha,
            )
        if polar <= threshold:
            converged = True
            break
        keys = {idx.tobytes() for idx in supports}
        new = [idx for value, idx, _ in cands if value > threshold and idx.tobytes() not in keys]
        new = new[:max_add]
        if not new:
            # the violating supports are already in the working set: block
            # descent was not accurate enough; polish it, a bounded number of times
            stalled += 1
            if stalled > 3:
                break
            bcd_tol *= 0.1
            continue
        if len(supports) + len(new) > max_blocks or n_iter >= 4 * max_blocks:
            break  # (the second bound: supports dropped and re-added forever)
        supports = np.vstack([supports, np.asarray(new, dtype=np.intp)])
        values = np.concatenate([values, np.zeros((len(new), k, k))])
        n_iter += 1
    if not converged:
        warnings.warn(
            f"the working-set algorithm stopped with polar estimate {polar:.6g} > "
            f"alpha * (1 + tol) = {threshold:.6g} (working set of "
            f"{len(supports)} blocks, max_blocks={max_blocks}); increase max_blocks "
            "or max_iter.",
            ConvergenceWarning,
            stacklevel=3,
        )
    blocks = [(idx.copy(), V.copy()) for idx, V in zip(supports, values, strict=True)]
    info = _certificate(S, Z, k, alpha, tol, polar, history, converged, exact_polar)
    info.update(n_blocks=len(supports), n_iter=n_iter, n_sweeps=n_sweeps)
    info["time"] = time.perf_counter() - t0
    return Z, blocks, info


def _solve_working_set(S, Z, supports, values, alpha, bcd_tol, max_iter, tol):
    """Block descent over the working set, then the blocks at zero dropped.

    Returns
    -------
    supports, values : ndarray
        The working set without its zero blocks (they satisfy their
        optimality condition; the oracle brings them back if needed).
    n_sweeps : int
    """
    bcd_ok, sweeps = _block_descent(S, Z, supports, values, alpha, bcd_tol, max_iter)
    if not bcd_ok:
        warnings.warn(
            f"block coordinate descent did not reach tol={tol} in "
            f"max_iter={max_iter} sweeps; increase max_iter.",
            ConvergenceWarning,
            stacklevel=4,
        )
    keep = np.any(values != 0.0, axis=(1, 2))
    return supports[keep], values[keep], sweeps


def _oracle(K, Z, k, threshold, exact_polar, n_restarts, tpi_max_iter, rng, lmin_S):
    """Candidate supports of the residual ``K = S - Z``, best (largest
    ``lambda_max(K_II)``) first: by enumeration, or by truncated power
    iteration, checked by enumeration on small problems when TPI finds no
    violating support (a violating one it missed is then used)."""
    if exact_polar:
        return _exact_candidates(K, k)
    shift = max(0.0, float(np.max(np.sum(np.abs(Z), axis=1))) - lmin_S)
    cands = _tpi_candidates(K, k, n_restarts, tpi_max_iter, 1e-10, rng, shift)
    small = math.comb(K.shape[0], k) <= _EXACT_POLAR_MAX_SUBSETS
    if cands[0][0] <= threshold and small and _exact_polar_value(K, k) > threshold:
        # TPI missed a violating support that enumeration finds: use it
        return _exact_candidates(K, k)
    return cands


def _certificate(S, Z, k, alpha, tol, polar, history, converged, exact_polar):
    """The certified duality gap and what :func:`ktrace_pca` reports of it.

    The gap uses the exact polar (``exact_polar``, or enumeration when
    ``comb(p, k) <= 20,000``) or :func:`polar_upper_bound`, never the TPI
    estimate alone; a fit whose certificate exceeds ``tol * ||S||_F^2 / 2``
    is not converged (ConvergenceWarning).
    """
    primal = history[-1]
    K = S - Z
    gap_estimate = primal - _dual_value(S, K, alpha, polar)
    if exact_polar:
        bound = polar
    elif math.comb(S.shape[0], k) <= _EXACT_POLAR_MAX_SUBSETS:  # small: certify exactly
        bound = _exact_polar_value(K, k)
    else:
        bound = max(polar, polar_upper_bound(K, k))
    gap = primal - _dual_value(S, K, alpha, bound)
    tol_abs = tol * 0.5 * float(np.sum(S * S))
    certified = bool(np.isfinite(gap) and gap <= tol_abs)
    if converged and not certified:
        converged = False
        warnings.warn(
            f"ktrace_pca: the truncated power iteration finds no violating support, "
            f"but the certified duality gap {gap:.3e} (from the polar upper bound "
            f"{bound:.6g}) exceeds tol * ||S||_F^2 / 2 = {tol_abs:.3e}: the result "
            "is not certified. Use exact_polar=True on small problems for a "
            "certificate.",
            ConvergenceWarning,
            stacklevel=4,
        )
    return {
        "objective": np.asarray(history),
        "polar": float(polar),
        "dual_gap": float(gap),
        "dual_gap_estimate": float(gap_estimate),
        "polar_bound": float(bound),
        "tol_abs": tol_abs,
        "converged": converged,
        "certified": certified,
    }


def _disjoint_groups(supports):
    """Greedy partition of the blocks into groups of pairwise disjoint supports.

    Blocks of one group do not interact (block I only reads ``Z`` on I x I),
    so a group is updated at once, exactly as a Gauss-Seidel pass would.
    """
    groups, used = [], []
    for b, idx in enumerate(supports.tolist()):
        for g, taken in enumerate(used):
            if taken.isdisjoint(idx):
                groups[g].append(b)
                taken.update(idx)
                break
        else:
            used.append(set(idx))
            groups.append([b])
    return [np.asarray(g) for g in groups]


def _block_descent(S, Z, supports, values, alpha, tol_abs, max_iter):
    """Exact block coordinate descent over the working set, in place.

    Block ``I`` is set to ``psd_threshold((S - Z + Z^(I))_II, alpha)``, its
    exact minimiser (``Z`` and ``values`` are updated). Stops when the sum
    ``Z`` moves by at most ``tol_abs`` (Frobenius) in a sweep: ``Z`` is
    unique (the loss is strongly convex in ``Z``) while its decomposition
    into blocks need not be, and can drift slowly.

    Returns
    -------
    converged : bool
    n_sweeps : int
    """
    if len(supports) == 0:
        return True, 0
    groups = _disjoint_groups(supports)
    index = [(supports[g][:, :, None], supports[g][:, None, :]) for g in groups]
    for sweep in range(1, max_iter + 1):
        Z_old = Z.copy()
        for g, (rows, cols) in zip(groups, index, strict=True):
            old = values[g]
            R = S[rows, cols] - Z[rows, cols] + old
            w, V = np.linalg.eigh(R)
            w = np.maximum(w - alpha, 0.0)
            new = np.einsum("bij,bj,bkj->bik", V, w, V)
            diff = new - old
            Z[rows, cols] += diff
            values[g] = new
        if float(np.linalg.norm(Z - Z_old)) <= tol_abs:
            return True, sweep
    return False, max_iter
