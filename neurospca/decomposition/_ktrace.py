"""Sparse PCA with the (k, PSD) trace norm (Richard, Obozinski and Vert, 2014).

The covariance estimate

.. math::

    \\hat Z = \\arg\\min_Z \\tfrac12 \\|Z - \\hat\\Sigma\\|_F^2
    + \\lambda\\, \\Omega_{k,\\succeq}(Z)

where :math:`\\Omega_{k,\\succeq}` is the gauge of the atoms :math:`a a^T`,
:math:`\\|a\\|_0 \\le k`, :math:`\\|a\\|_2 = 1` (section 2.3 and eq. 7 of the
paper, with the 1/2 of its experiments). Writing
:math:`Z = \\sum_{I} Z^{(I)}` with :math:`Z^{(I)} \\succeq 0` supported on
:math:`I \\times I`, :math:`|I| = k`, the gauge is the smallest
:math:`\\sum_I \\operatorname{tr} Z^{(I)}`; its polar is
:math:`\\Omega^\\circ(K) = \\max_{|I| = k} \\lambda_{\\max}(K_{II})`.

:func:`ktrace_pca` is the paper's working-set algorithm (section 5):
exact block minimisation by eigenvalue thresholding over a working set of
supports, and truncated power iteration (TPI, Yuan and Zhang 2013) with
restarts to find a support violating the optimality condition
:math:`\\lambda_{\\max}((\\hat\\Sigma - Z)_{II}) \\le \\lambda`.
:class:`KTraceNormPCA` is the estimator around it. The baselines of the
paper's Table 2 are the functions ``*_covariance`` below.
"""

import itertools
import logging
import math
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._utils.docs import fill_doc
from .._utils.validation import check_int, check_n_components, check_nonneg
from ._base import (
    Integral,
    Interval,
    LoadingsTransformerMixin,
    Real,
    StrOptions,
    _deprecated_alias,
    _fit_context,
)
from ._covariance import _min_eigenvalue, _tpi_candidates, check_covariance, covariance_input

logger = logging.getLogger("neurospca")

__all__ = ["KTraceNormPCA", "ktrace_pca", "ktrace_objective", "polar_upper_bound"]

_EXACT_POLAR_MAX_SUBSETS = 20_000


def _exact_candidates(K, k):
    """All supports with their ``lambda_max(K_II)``, by enumeration (tiny
    problems), sorted by decreasing value."""
    p = K.shape[0]
    out = []
    for I in itertools.combinations(range(p), k):
        I = np.asarray(I)
        w, V = np.linalg.eigh(K[np.ix_(I, I)])
        out.append((float(w[-1]), I, V[:, -1]))
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


def ktrace_pca(
    S,
    k,
    alpha,
    *,
    tol=1e-4,
    max_blocks=None,
    max_iter=200,
    n_restarts=10,
    tpi_max_iter=100,
    max_add=5,
    exact_polar=False,
    random_state=None,
    verbose=0,
):
    """Covariance estimation / sparse PCA with the (k, PSD) trace norm.

    Solves

    .. math::

        \\min_{Z} \\tfrac12 \\|Z - S\\|_F^2 + \\alpha\\, \\Omega_{k,\\succeq}(Z),
        \\qquad
        \\Omega_{k,\\succeq}(Z) = \\min \\Big\\{ \\sum_I \\operatorname{tr} Z^{(I)} :
        Z = \\sum_{|I|=k} Z^{(I)},\\ Z^{(I)} \\succeq 0,\\
        \\operatorname{supp} Z^{(I)} \\subset I \\times I \\Big\\}

    by the working-set algorithm of Richard, Obozinski and Vert (section 5):

    1. block coordinate descent over the working set: each block is set to
       its exact minimiser ``psd_threshold((S - sum_{J != I} Z^(J))_II, alpha)``,
       until ``Z`` changes by at most ``tol * ||S||_F`` in a sweep;
    2. the oracle: truncated power iteration with restarts on the residual
       ``K = S - Z`` (the negative gradient) estimates the polar
       ``max_{|I|=k} lambda_max(K_II)`` and its support;
    3. if the estimate exceeds ``alpha * (1 + tol)`` the support joins the
       working set (with up to ``max_add - 1`` other violating supports
       reached by other restarts) and step 1 resumes; otherwise stop.
       Blocks that block descent sets to zero leave the working set (they
       satisfy their optimality condition; the oracle brings them back if
       they become violating).

    The polar gives a dual point ``K * min(1, alpha / polar)`` and a duality
    gap. TPI's estimate can miss a violating support, so its gap is not a
    bound; the returned ``dual_gap`` uses the exact polar with
    ``exact_polar=True`` or when ``comb(p, k) <= 20,000`` (enumeration, at
    the end only) and otherwise the certified upper bound of
    :func:`polar_upper_bound`: it is always a true
    bound of the suboptimality. ``converged`` is True only when the
    working-set criterion holds AND that certified gap is at most
    ``tol * ||S||_F^2 / 2`` (the objective at ``Z = 0``); when the TPI
    criterion holds but the certificate is looser, ``converged`` is False and
    a ``ConvergenceWarning`` says the result is not certified.

    Parameters
    ----------
    S : ndarray of shape (p, p), symmetric
        The empirical covariance.
    k : int
        Support size of the atoms, ``1 <= k <= p``.
    alpha : float
        Penalty weight ``lambda >= 0``.
    tol : float, default=1e-4
    max_blocks : int, optional
        Cap on the working-set size (default ``4 * p``).
    max_iter : int, default=200
        Cap on block coordinate descent sweeps per working set.
    n_restarts, tpi_max_iter : int
        Restarts and iterations of the truncated power iteration.
    max_add : int, default=5
        Most supports added per oracle call (the paper adds one; adding a
        few saves oracle calls, and unneeded blocks go back to zero).
    exact_polar : bool, default=False
        Enumerate all supports instead of TPI (at most 20,000 subsets).
    random_state : int, RandomState or None
    verbose : int, default=0

    Returns
    -------
    Z : ndarray of shape (p, p)
    blocks : list of (ndarray of int, ndarray of shape (k, k))
        The nonzero blocks ``(I, Z^(I))``.
    info : dict
        ``objective`` (after each working-set solve), ``polar`` (final polar
        estimate), ``dual_gap`` (certified gap: exact polar or its certified
        upper bound), ``dual_gap_estimate`` (gap with the TPI estimate, not a
        bound), ``polar_bound`` (the polar value used by ``dual_gap``),
        ``tol_abs`` (``tol * ||S||_F^2 / 2``), ``n_blocks``
        (final working-set size), ``n_iter``
        (working-set updates), ``n_sweeps`` (total BCD sweeps), ``converged``,
        ``certified`` (True if ``dual_gap <= tol_abs``), ``time``.
    """
    S = check_covariance(S, name="S")
    p = S.shape[0]
    k = check_int(k, "k", minimum=1, maximum=p)
    alpha = check_nonneg(alpha, "alpha")
    tol = check_nonneg(tol, "tol", strict=True)
    max_blocks = 4 * p if max_blocks is None else check_int(max_blocks, "max_blocks", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    n_restarts = check_int(n_restarts, "n_restarts", minimum=1)
    tpi_max_iter = check_int(tpi_max_iter, "tpi_max_iter", minimum=1)
    max_add = check_int(max_add, "max_add", minimum=1)
    if exact_polar and math.comb(p, k) > _EXACT_POLAR_MAX_SUBSETS:
        raise ValueError(
            f"exact_polar=True enumerates comb(p, k) = {math.comb(p, k)} "
            f"supports, more than {_EXACT_POLAR_MAX_SUBSETS}; use TPI."
        )
    return _ktrace_pca(
        S,
        k,
        alpha,
        tol,
        max_blocks,
        max_iter,
        n_restarts,
        tpi_max_iter,
        max_add,
        bool(exact_polar),
        random_state,
        verbose,
    )


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
    """:func:`ktrace_pca` on validated arguments (the estimator calls it directly)."""
    p = S.shape[0]
    rng = check_random_state(random_state)
    t0 = time.perf_counter()

    scale = float(np.linalg.norm(S))
    # lambda_min(S - Z) >= lambda_min(S) - lambda_max(Z), and Z is PSD with
    # lambda_max(Z) at most its largest absolute row sum (Gershgorin)
    lmin_S = _min_eigenvalue(S)
    Z = np.zeros_like(S)
    supports = np.zeros((0, k), dtype=np.intp)  # working set, one support per row
    values = np.zeros((0, k, k))  # the blocks Z^(I)
    history = []
    n_sweeps = 0
    converged = False
    polar = np.inf
    n_iter = 0
    stalled = 0
    bcd_tol = tol * scale
    small = math.comb(p, k) <= _EXACT_POLAR_MAX_SUBSETS
    while True:
        bcd_ok, sweeps = _block_descent(S, Z, supports, values, alpha, bcd_tol, max_iter)
        n_sweeps += sweeps
        if not bcd_ok:
            warnings.warn(
                f"block coordinate descent did not reach tol={tol} in "
                f"max_iter={max_iter} sweeps; increase max_iter.",
                ConvergenceWarning,
            )
        # blocks at zero satisfy their optimality condition: drop them
        keep = np.any(values != 0.0, axis=(1, 2))
        supports, values = supports[keep], values[keep]
        history.append(ktrace_objective(S, Z, alpha, zip(supports, values)))
        K = S - Z
        if exact_polar:
            cands = _exact_candidates(K, k)
        else:
            shift = max(0.0, float(np.max(np.sum(np.abs(Z), axis=1))) - lmin_S)
            cands = _tpi_candidates(K, k, n_restarts, tpi_max_iter, 1e-10, rng, shift)
        polar = cands[0][0]
        if (
            not exact_polar
            and polar <= alpha * (1.0 + tol)
            and small
            and _exact_polar_value(K, k) > alpha * (1.0 + tol)
        ):
            # TPI missed a violating support that enumeration finds: use it
            cands = _exact_candidates(K, k)
            polar = cands[0][0]
        if verbose:
            logger.info(
                "working set of %d blocks: objective %.10g, polar estimate %.6g (alpha %.6g)",
                len(supports),
                history[-1],
                polar,
                alpha,
            )
        if polar <= alpha * (1.0 + tol):
            converged = True
            break
        keys = {I.tobytes() for I in supports}
        new = [
            I for value, I, _ in cands if value > alpha * (1.0 + tol) and I.tobytes() not in keys
        ][:max_add]
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
            f"alpha * (1 + tol) = {alpha * (1 + tol):.6g} (working set of "
            f"{len(supports)} blocks, max_blocks={max_blocks}); increase max_blocks "
            "or max_iter.",
            ConvergenceWarning,
        )
    blocks = [(I.copy(), V.copy()) for I, V in zip(supports, values)]
    primal = history[-1]
    K = S - Z
    gap_estimate = primal - _dual_value(S, K, alpha, polar)
    if exact_polar:
        bound = polar
    elif math.comb(p, k) <= _EXACT_POLAR_MAX_SUBSETS:  # small: certify exactly
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
        )
    info = {
        "objective": np.asarray(history),
        "polar": float(polar),
        "dual_gap": float(gap),
        "dual_gap_estimate": float(gap_estimate),
        "polar_bound": float(bound),
        "tol_abs": tol_abs,
        "n_blocks": len(supports),
        "n_iter": n_iter,
        "n_sweeps": n_sweeps,
        "converged": converged,
        "certified": certified,
        "time": time.perf_counter() - t0,
    }
    return Z, blocks, info


def _disjoint_groups(supports):
    """Greedy partition of the blocks into groups of pairwise disjoint supports.

    Blocks of one group do not interact (block I only reads ``Z`` on I x I),
    so a group is updated at once, exactly as a Gauss-Seidel pass would.
    """
    groups, used = [], []
    for b, I in enumerate(supports.tolist()):
        for g, taken in enumerate(used):
            if taken.isdisjoint(I):
                groups[g].append(b)
                taken.update(I)
                break
        else:
            used.append(set(I))
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
        for g, (rows, cols) in zip(groups, index):
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


def _atoms(blocks, p):
    """Eigen-decompose each block: unit k-sparse atoms and their weights."""
    vecs, weights = [], []
    for I, Zb in blocks:
        w, V = np.linalg.eigh(Zb)
        for j in np.flatnonzero(w > 1e-12 * max(1.0, float(w[-1]))):
            a = np.zeros(p)
            a[I] = V[:, j]
            # sign convention: largest-magnitude entry positive
            if a[np.argmax(np.abs(a))] < 0:
                a = -a
            vecs.append(a)
            weights.append(float(w[j]))
    if not vecs:
        return np.zeros((0, p)), np.zeros(0)
    order = np.argsort(weights, kind="stable")[::-1]
    return np.asarray(vecs)[order], np.asarray(weights)[order]


class KTraceNormPCA(LoadingsTransformerMixin, BaseEstimator):
    """Sparse PCA with the (k, PSD) trace norm (Richard, Obozinski, Vert 2014).

    Estimates the covariance as a sum of k-sparse rank-one PSD atoms,

    .. math::

        \\hat Z = \\arg\\min_Z \\tfrac12 \\|Z - \\hat\\Sigma\\|_F^2
        + \\alpha\\, \\Omega_{k,\\succeq}(Z)

    (:func:`ktrace_pca`), and returns the atoms as sparse components:
    ``Z = sum_j explained_variance_[j] * outer(c_j, c_j)`` with ``c_j`` the
    rows of ``components_`` (unit norm, at most ``k`` nonzeros each).

    Parameters
    ----------
    n_components : int or None, default=None
        Number of atoms reported (largest weights first). None: all nonzero
        atoms. When fewer atoms exist, the remaining rows are zero.
    k : int, default=3
        Support size of the atoms, ``1 <= k <= n_features``.
    alpha : float, default=0.1
        Penalty weight ``>= 0`` in the units of the covariance. Atoms appear
        only when ``alpha`` is below the k-sparse largest eigenvalue of the
        covariance.
    input : {"data", "covariance"}, default="data"
        With ``"data"`` the covariance is ``X_c^T X_c / N`` of the centred
        ``X``; with ``"covariance"`` ``fit(X)`` takes ``X`` as the symmetric
        matrix itself (``mean_`` is then zero).
    tol : float, default=1e-4
    max_blocks : int or None, default=None
    max_iter : int, default=200
    n_restarts : int, default=10
    tpi_max_iter : int, default=100
    random_state : int, RandomState or None
    verbose : int, default=0

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        The estimate ``Z``.
    blocks_ : list of (ndarray, ndarray)
        Nonzero blocks ``(I, Z^(I))`` of the decomposition.
    components_ : ndarray of shape (n_components, n_features)
    explained_variance_ : ndarray of shape (n_components,)
        Atom weights (eigenvalues of the blocks).
    mean_ : ndarray of shape (n_features,)
    objective_ : float
    objective_history_ : ndarray
    dual_norm_ : float
        Final estimate of the polar of the residual (``<= alpha`` at
        convergence, up to ``tol`` and the accuracy of TPI).
    dual_gaps_ : ndarray of shape (1,)
        Certified duality gap of the one convex problem: a true bound of the
        suboptimality, from the exact polar (enumeration, when
        ``comb(p, k) <= 20,000``) or a certified upper bound of it
        (:func:`polar_upper_bound`), never from the TPI estimate alone.
        (``dual_gap_``, its float, is a deprecated alias.)
    n_iter_ : int
        Supports added to the working set.
    converged_ : bool
        True only when certified: the working-set criterion holds and
        ``dual_gaps_[0] <= tol * ||S||_F^2 / 2``; otherwise a ConvergenceWarning
        says the result is not certified.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import KTraceNormPCA
    >>> rng = np.random.default_rng(0)
    >>> a = np.zeros(12); a[:3] = 1 / np.sqrt(3)
    >>> X = rng.standard_normal((200, 1)) * 2 * a + 0.1 * rng.standard_normal((200, 12))
    >>> model = KTraceNormPCA(k=3, alpha=0.1, random_state=0).fit(X)
    >>> sorted(np.flatnonzero(model.components_[0]).tolist())
    [0, 1, 2]
    """

    def __init__(
        self,
        n_components=None,
        *,
        k=3,
        alpha=0.1,
        input="data",
        tol=1e-4,
        max_blocks=None,
        max_iter=200,
        n_restarts=10,
        tpi_max_iter=100,
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.k = k
        self.alpha = alpha
        self.input = input
        self.tol = tol
        self.max_blocks = max_blocks
        self.max_iter = max_iter
        self.n_restarts = n_restarts
        self.tpi_max_iter = tpi_max_iter
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "k": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "input": [StrOptions({"data", "covariance"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_blocks": [Interval(Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "tpi_max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    dual_gap_ = _deprecated_alias(
        "dual_gaps_",
        "dual_gap_",
        "the certified gap, a float.",
        to_old=lambda gaps: float(gaps[0]),
        to_new=lambda gap: np.array([float(gap)]),
    )

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y=None):
        """Estimate the covariance and its k-sparse atoms.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_features, n_features)
            Data (its covariance ``X_c^T X_c / N`` is decomposed) or, with
            ``input="covariance"``, the symmetric covariance matrix itself.
        %(y_ignored)s

        Returns
        -------
        self : KTraceNormPCA
            The fitted estimator.
        """
        self.mean_, S, _ = covariance_input(self, X)
        p = S.shape[0]
        n_components = self.n_components
        if n_components is not None:
            n_components = check_n_components(n_components, p, p)
        k = check_int(self.k, "k", minimum=1, maximum=p)
        max_blocks = 4 * p if self.max_blocks is None else self.max_blocks
        Z, blocks, info = _ktrace_pca(
            S,
            k,
            float(self.alpha),
            float(self.tol),
            max_blocks,
            self.max_iter,
            self.n_restarts,
            self.tpi_max_iter,
            5,
            False,
            self.random_state,
            self.verbose,
        )
        atoms, weights = _atoms(blocks, p)
        if n_components is not None:
            atoms, weights = atoms[:n_components], weights[:n_components]
            pad = n_components - atoms.shape[0]
            if pad > 0:
                atoms = np.vstack([atoms, np.zeros((pad, p))])
                weights = np.concatenate([weights, np.zeros(pad)])
        self.covariance_ = Z
        self.blocks_ = blocks
        self.components_ = atoms
        self.explained_variance_ = weights
        self.objective_history_ = info["objective"]
        self.objective_ = float(info["objective"][-1])
        self.dual_norm_ = info["polar"]
        self.dual_gaps_ = np.array([info["dual_gap"]])
        self.n_iter_ = info["n_iter"]
        self.converged_ = info["converged"]
        self.fit_time_ = info["time"]
        return self
