"""Nonnegative sparse PCA (Zass and Shashua, NIPS 2006).

The math lives in :func:`nspca` (the paper's Algorithm 1 on a covariance
matrix); :class:`NonnegativeSparsePCA` is a thin scikit-learn estimator around
it that accepts data or a covariance matrix.
"""

import logging
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._kernels import KERNELS as _KERNELS
from .._kernels import load as _load_kernel
from .._utils.validation import check_data, check_int, check_n_components, check_nonneg
from ._base import ComponentsEstimator, Integral, Interval, Real, StrOptions, adjusted_variance
from ._covariance import _INPUTS, check_covariance, covariance_input

logger = logging.getLogger("neurospca")

__all__ = ["NonnegativeSparsePCA", "nspca", "nspca_objective"]

_INITS = ("svd", "random")
_REFRESH_EVERY = 10  # recompute the caches A U and U^T U from scratch every so many sweeps

#: Starts per fit: the SVD start, then random ones; the best objective is kept.
#: With one start, the explained variance fell to 0.46 of SparsePCA's at the
#: same cardinality on one seed in ten; with 10 (benchmarks/RESULTS.md, issue
#: 20, item 5) no seed was below 0.9x at the sparse settings measured.
DEFAULT_N_INIT = 10


# ----------------------------------------------------------------------------
# the scalar update and its NumPy twins
# ----------------------------------------------------------------------------


def _quartic(x, alpha, c2, c1):
    """``-(alpha/4) x^4 + (c2/2) x^2 + c1 x`` (eq. 4 without its constant)."""
    return x * (c1 + x * (0.5 * c2 - 0.25 * alpha * x * x))


def _polish(t, alpha, c2, c1):
    for _ in range(2):
        g = c1 + t * (c2 - alpha * t * t)
        dg = c2 - 3.0 * alpha * t * t
        if dg == 0.0:
            return t
        tn = t - g / dg
        if abs(c1 + tn * (c2 - alpha * tn * tn)) >= abs(g):
            return t
        t = tn
    return t


def _best_entry_numpy(alpha, c2, c1, x0=0.0):
    """Global maximiser over ``[0, inf)`` of eq. 4 (NumPy twin of the kernel).

    The stationary points solve the depressed cubic ``t^3 + p t + q = 0``
    (eq. 5 divided by ``-alpha``), ``p = -c2/alpha``, ``q = -c1/alpha``: one
    real root by Cardano's formula (in its cancellation-free form) when the
    discriminant ``q^2/4 + p^3/27`` is positive, else three by the
    trigonometric formula. The objective is evaluated at the positive roots
    (polished by two guarded Newton steps), at 0 and at the current value
    ``x0``, and the best is kept.
    """
    p = -c2 / alpha
    q = -c1 / alpha
    D = 0.25 * q * q + p * p * p / 27.0
    if D > 0.0:
        w = np.cbrt(-0.5 * q - np.copysign(np.sqrt(D), q))
        roots = [w - p / (3.0 * w) if w != 0.0 else 0.0]
    elif p < 0.0:
        m = 2.0 * np.sqrt(-p / 3.0)
        arg = min(1.0, max(-1.0, (1.5 * q / p) * np.sqrt(-3.0 / p)))
        th = np.arccos(arg) / 3.0
        roots = [m * np.cos(th - 2.0943951023931957 * j) for j in range(3)]
    else:
        roots = []
    best, fbest = 0.0, 0.0
    for t in roots:
        if t > 0.0:
            t = _polish(t, alpha, c2, c1)
            if t > 0.0:
                f = _quartic(t, alpha, c2, c1)
                if f > fbest:
                    best, fbest = t, f
    if x0 > 0.0 and _quartic(x0, alpha, c2, c1) > fbest:
        best = x0
    return float(best)


def _entry_coefficients(A, Ut, AUt, G, alpha, beta, r, s):
    """``(c1, c2)`` of eq. 4 for entry ``U[s, r]`` from the caches."""
    x = Ut[r, s]
    others = np.arange(Ut.shape[0]) != r
    usq = Ut[others, s]
    cross = float(usq @ (G[others, r] - x * usq))
    rown = float(usq @ usq)
    c1 = AUt[r, s] - A[s, s] * x - alpha * cross - beta
    c2 = A[s, s] + alpha - alpha * (G[r, r] - x * x) - alpha * rown
    return c1, c2


def _sweep_numpy(A, Ut, AUt, G, alpha, beta):
    """One coordinate-ascent sweep, in place (NumPy twin of ``nspca_sweep``)."""
    K, P = Ut.shape
    gain = 0.0
    for r in range(K):
        for s in range(P):
            x = Ut[r, s]
            c1, c2 = _entry_coefficients(A, Ut, AUt, G, alpha, beta, r, s)
            xn = _best_entry_numpy(alpha, c2, c1, x)
            if xn != x:
                d = xn - x
                gain += _quartic(xn, alpha, c2, c1) - _quartic(x, alpha, c2, c1)
                Ut[r, s] = xn
                AUt[r] += d * A[s]
                for q in range(K):
                    if q != r:
                        G[q, r] += d * Ut[q, s]
                        G[r, q] = G[q, r]
                G[r, r] += xn * xn - x * x
    return gain


def _get_sweep(kernels):
    fast = _load_kernel("nspca", kernels)  # compiled, or None for the NumPy twin
    return _sweep_numpy if fast is None else fast.nspca_sweep


# ----------------------------------------------------------------------------
# objective and solver
# ----------------------------------------------------------------------------


def nspca_objective(C, U, alpha, beta):
    """The objective of eq. 3 (to be maximised), for ``U >= 0``.

    .. math::

        F(U) = \\tfrac12 \\operatorname{tr}(U^T C U)
        - \\tfrac{\\alpha}{4} \\|I - U^T U\\|_F^2 - \\beta\\, 1^T U 1

    Parameters
    ----------
    C : ndarray of shape (n_features, n_features)
    U : ndarray of shape (n_features, n_components)
    alpha, beta : float

    Returns
    -------
    float
    """
    C = np.asarray(C, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    G = U.T @ U
    E = np.eye(U.shape[1]) - G
    return float(0.5 * np.sum(U * (C @ U)) - 0.25 * alpha * np.sum(E * E) - beta * np.sum(U))


def _objective_from_caches(Ut, AUt, G, alpha, beta):
    E = np.eye(G.shape[0]) - G
    return float(0.5 * np.sum(Ut * AUt) - 0.25 * alpha * np.sum(E * E) - beta * np.sum(Ut))


def _init_U(C, n_components, init, rng):
    P = C.shape[0]
    if init == "svd":
        w, V = np.linalg.eigh(C)
        U = np.abs(V[:, ::-1][:, :n_components])
    else:
        U = np.abs(rng.standard_normal((P, n_components)))
    norms = np.linalg.norm(U, axis=0)
    return U / np.where(norms > 0, norms, 1.0)


def _run(C, U0, alpha, beta, tol, max_iter, sweep, verbose):
    Ut = np.ascontiguousarray(U0.T)
    AUt = np.ascontiguousarray(Ut @ C)
    G = Ut @ Ut.T
    obj = _objective_from_caches(Ut, AUt, G, alpha, beta)
    history = [obj]
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        sweep(C, Ut, AUt, G, alpha, beta)
        if n_iter % _REFRESH_EVERY == 0:
            AUt = np.ascontiguousarray(Ut @ C)
            G = Ut @ Ut.T
        new = _objective_from_caches(Ut, AUt, G, alpha, beta)
        history.append(new)
        change = abs(new - obj) / max(abs(new), np.finfo(float).tiny)
        obj = new
        if verbose:
            logger.info(
                "NSPCA sweep %d: objective %.10g, relative change %.2e", n_iter, new, change
            )
        if change <= tol:
            converged = True
            break
    return Ut.T.copy(), np.asarray(history), n_iter, converged


def nspca(
    C,
    n_components,
    *,
    alpha,
    beta=0.0,
    tol=1e-6,
    max_iter=200,
    init="svd",
    n_init=DEFAULT_N_INIT,
    U_init=None,
    random_state=None,
    kernels="cython",
    verbose=0,
):
    """Nonnegative sparse PCA of a covariance matrix (Zass and Shashua, Alg. 1).

    Maximises over ``U >= 0`` (shape ``n_features x n_components``) the
    objective of the paper's eq. 3,

    .. math::

        \\max_{U \\ge 0}\\; \\tfrac12 \\operatorname{tr}(U^T C U)
        - \\frac{\\alpha}{4} \\|I - U^T U\\|_F^2 - \\beta\\, 1^T U 1

    (the paper writes ``1/2 ||U^T X||_F^2`` with ``C = X X^T``). ``alpha``
    pushes the columns towards orthonormality, hence, with ``U >= 0``, towards
    disjoint supports; ``beta`` is an l1 penalty. Each sweep sets every entry,
    one after the other, to the global maximiser over ``[0, inf)`` of the
    quartic of eq. 4 in that entry: the best of 0 and the nonnegative real
    roots of the cubic of eq. 5. The caches ``C U`` and ``U^T U`` make one
    entry update cost O(n_features + n_components). The objective never
    decreases; the result is a local maximum.

    Parameters
    ----------
    C : ndarray of shape (n_features, n_features)
        Symmetric matrix, e.g. a covariance ``X^T X / N`` of centred data
        (need not be PSD nor built from nonnegative data).
    n_components : int
        At most ``n_features``.
    alpha : float
        Orthonormality weight, > 0 (with ``alpha = 0`` the problem is
        unbounded). Same units as ``C``.
    beta : float, default=0.0
        l1 weight, >= 0. Same units as ``C``.
    tol : float, default=1e-6
        Stop when the relative objective change of a sweep is at most ``tol``.
    max_iter : int, default=200
        Maximum sweeps per run.
    init : {"svd", "random"}, default="svd"
        Start of the first run: absolute values of the leading eigenvectors
        of ``C``, or absolute Gaussian columns; columns are unit-norm.
    n_init : int, default=10
        Number of runs; runs after the first start at random (absolute
        Gaussian columns drawn from ``random_state``, so a fixed seed gives
        the same result). The run with the highest objective is kept. The
        objective is not concave: one start (the SVD's) can end in a local
        maximum that explains far less variance (0.46x SparsePCA's at the
        same cardinality on one seed of ten in the benchmark).
    U_init : ndarray of shape (n_features, n_components), optional
        Explicit nonnegative start (overrides ``init`` for the first run).
    random_state : int, RandomState or None
    kernels : {"cython", "numpy"}, default="cython"
        The compiled sweep or its pure NumPy twin.
    verbose : int, default=0
        Log progress at INFO level (logger ``"neurospca"``) when > 0.

    Returns
    -------
    U : ndarray of shape (n_features, n_components)
        Nonnegative loadings (not normalised).
    info : dict
        ``objective`` (history of the kept run, one value per sweep, the
        first at the start), ``n_iter`` (sweeps of the kept run),
        ``converged``, ``objectives`` (final objective of every run),
        ``time``.

    Raises
    ------
    TypeError, ValueError
        On a non-symmetric or non-finite ``C``, ``alpha <= 0``, ``beta < 0``,
        ``n_components`` out of range and other bad arguments; the message
        names the argument.
    """
    C = check_covariance(C, name="C")
    P = C.shape[0]
    n_components = check_n_components(n_components, P, P)
    alpha = check_nonneg(alpha, "alpha", strict=True)
    beta = check_nonneg(beta, "beta")
    tol = check_nonneg(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    n_init = check_int(n_init, "n_init", minimum=1)
    if init not in _INITS:
        raise ValueError(f"init must be one of {_INITS}, got {init!r}.")
    if kernels not in _KERNELS:
        raise ValueError(f"kernels must be one of {_KERNELS}, got {kernels!r}.")
    if U_init is not None:
        U_init = check_data(U_init, name="U_init", min_samples=1)
        if U_init.shape != (P, n_components):
            raise ValueError(f"U_init must have shape {(P, n_components)}, got {U_init.shape}.")
        if np.any(U_init < 0):
            raise ValueError("U_init must be nonnegative.")
    _check_alpha_scale(C, alpha)
    return _nspca(
        C,
        n_components,
        alpha,
        beta,
        tol,
        max_iter,
        init,
        n_init,
        U_init,
        random_state,
        kernels,
        verbose,
    )


def _check_alpha_scale(C, alpha):
    """Reject an ``alpha`` so small against ``C`` that the objective overflows."""
    ratio = float(np.max(np.abs(C))) / alpha
    if not ratio < 1e100:  # the columns' norms are about sqrt(1 + lambda / alpha)
        raise ValueError(
            f"alpha={alpha:.3g} is too small for a covariance of scale "
            f"{np.max(np.abs(C)):.3g}: the components would have norms about "
            f"sqrt(lambda / alpha) ~ {np.sqrt(ratio):.1e} and the objective overflows. "
            "Increase alpha (it is in the units of the covariance)."
        )


def _nspca(
    C,
    n_components,
    alpha,
    beta,
    tol,
    max_iter,
    init,
    n_init,
    U_init,
    random_state,
    kernels,
    verbose,
):
    """:func:`nspca` on validated arguments (the estimator calls it directly)."""
    rng = check_random_state(random_state)
    sweep = _get_sweep(kernels)

    t0 = time.perf_counter()
    best = None
    finals = []
    for run in range(n_init):
        if run == 0 and U_init is not None:
            U0 = U_init
        else:
            U0 = _init_U(C, n_components, init if run == 0 else "random", rng)
        U, hist, n_iter, converged = _run(C, U0, alpha, beta, tol, max_iter, sweep, verbose)
        finals.append(hist[-1])
        if verbose:
            logger.info("NSPCA run %d: objective %.10g after %d sweeps", run, hist[-1], n_iter)
        if best is None or hist[-1] > best[1][-1]:
            best = (U, hist, n_iter, converged)
    U, hist, n_iter, converged = best
    if not (np.all(np.isfinite(U)) and np.isfinite(hist[-1])):
        raise ValueError(
            "NSPCA diverged to non-finite values (overflow); rescale C (or X) to unit "
            f"scale and/or increase alpha (alpha={alpha:.3g})."
        )
    if not converged:
        change = abs(hist[-1] - hist[-2]) / max(abs(hist[-1]), np.finfo(float).tiny)
        warnings.warn(
            f"NSPCA did not reach tol={tol} in max_iter={max_iter} sweeps (last "
            f"relative objective change {change:.3e}); increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=3,
        )
    info = {
        "objective": hist,
        "n_iter": n_iter,
        "converged": converged,
        "objectives": np.asarray(finals),
        "time": time.perf_counter() - t0,
    }
    return U, info


# ----------------------------------------------------------------------------
# estimator
# ----------------------------------------------------------------------------


class NonnegativeSparsePCA(ComponentsEstimator):
    """Nonnegative sparse PCA (NSPCA, Zass and Shashua 2006).

    Finds nonnegative loadings ``U`` (n_features x n_components) maximising
    the paper's eq. 3 on the covariance ``C`` of the data,

    .. math::

        \\max_{U \\ge 0}\\; \\tfrac12 \\operatorname{tr}(U^T C U)
        - \\frac{\\alpha}{4} \\|I - U^T U\\|_F^2 - \\beta\\, 1^T U 1,

    by coordinate ascent with exact entry updates (see :func:`nspca`).
    Larger ``alpha`` gives less overlap between components (``U^T U``
    closer to ``I``); larger ``beta`` gives fewer nonzeros.

    ``C = X_c^T X_c / N`` for data ``X`` (N samples, centred), i.e. the
    paper's ``X X^T`` divided by ``N``: the paper's ``(alpha, beta)`` on its
    unnormalised scale correspond to ``(alpha / N, beta / N)`` here.

    Parameters
    ----------
    n_components : int, default=2
    alpha : float, default=1.0
        Orthonormality weight, > 0, in the units of the covariance.
    beta : float, default=0.0
        l1 weight, >= 0, in the units of the covariance.
    input : {"data", "covariance"}, default="data"
        With ``"covariance"``, ``fit(X)`` takes ``X`` to be a symmetric
        (n_features, n_features) matrix used as ``C`` directly (``mean_`` is
        then zero).
    tol : float, default=1e-6
        Relative objective change of a sweep at which to stop.
    max_iter : int, default=200
        Maximum sweeps per run.
    init : {"svd", "random"}, default="svd"
    n_init : int, default=10
        Starts: the ``init`` start, then random ones drawn from
        ``random_state`` (reproducible with a fixed seed); the run with the
        best objective is kept. One start can end in a poor local maximum
        (see :func:`nspca`); the cost grows linearly with ``n_init``.
    random_state : int, RandomState or None
    kernels : {"cython", "numpy"}, default="cython"
    verbose : int, default=0
        When > 0, log each sweep's objective and relative change (INFO
        records on the ``"neurospca"`` logger).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        ``U^T``: the nonnegative loadings, not renormalised (their norms
        carry the variance, about ``sqrt(1 + lambda / alpha)``).
    mean_ : ndarray of shape (n_features,)
    objective_ : float
        Final value of eq. 3.
    init_objectives_ : ndarray of shape (n_init,)
        Final objective of each start (``objective_`` is their maximum).
    objective_history_ : ndarray
        Objective after each sweep (first entry: at the start).
    n_iter_ : int
        Sweeps of the kept run.
    overlap_ : float
        ``||I - U^T U||_F``.
    cardinality_ : ndarray of shape (n_components,)
        Nonzeros per component.
    explained_variance_ : ndarray of shape (n_components,)
        Adjusted variance of the (unit-normalised) components, Zou et al.:
        ``diag(R)^2`` with ``R^T R = W C W^T``.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``explained_variance_`` over ``tr C``: in [0, 1], summing to at most 1
        (the definition of every neurospca estimator, docs/naming.rst).
    converged_ : bool
        Whether the kept run's relative objective change reached ``tol``
        within ``max_iter`` sweeps (else a ConvergenceWarning names both).
    n_components_ : int
        Number of components (rows of ``components_``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Names of the features seen in ``fit`` (string column names only).

    Notes
    -----
    ``n_components=2`` stays the default (scikit-learn's convention would be
    ``None``, all components): NSPCA's orthonormality penalty drives the
    components to disjoint nonnegative supports, so the number of parts is a
    modelling choice, not "all"; and changing it would change every default
    fit (it would need a FutureWarning transition for no gain in results).

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import NonnegativeSparsePCA
    >>> X = np.random.default_rng(0).standard_normal((50, 8))
    >>> model = NonnegativeSparsePCA(n_components=2, alpha=1.0).fit(X)
    >>> bool((model.components_ >= 0).all())
    True
    """

    def __init__(
        self,
        n_components=2,
        *,
        alpha=1.0,
        beta=0.0,
        input="data",
        tol=1e-6,
        max_iter=200,
        init="svd",
        n_init=DEFAULT_N_INIT,
        random_state=None,
        kernels="cython",
        verbose=0,
    ):
        self.n_components = n_components
        self.alpha = alpha
        self.beta = beta
        self.input = input
        self.tol = tol
        self.max_iter = max_iter
        self.init = init
        self.n_init = n_init
        self.random_state = random_state
        self.kernels = kernels
        self.verbose = verbose

    _parameter_constraints = {
        **ComponentsEstimator._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "input": [StrOptions(set(_INPUTS))],
        "tol": [Interval(Real, 0, None, closed="left")],  # 0: run max_iter sweeps
        "init": [StrOptions(set(_INITS))],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "kernels": [StrOptions(set(_KERNELS))],
    }

    def _fit(self, X):
        """Validate ``X`` (data or covariance) and fit the nonnegative loadings."""
        self.mean_, C, n_samples = covariance_input(self, X)
        n_components = check_n_components(self.n_components, n_samples, C.shape[0])
        alpha = float(self.alpha)
        _check_alpha_scale(C, alpha)
        U, info = _nspca(
            C,
            n_components,
            alpha,
            float(self.beta),
            float(self.tol),
            self.max_iter,
            self.init,
            self.n_init,
            None,
            self.random_state,
            self.kernels,
            self.verbose,
        )
        self.components_ = U.T
        self.objective_history_ = info["objective"]
        self.init_objectives_ = info["objectives"]
        self.objective_ = float(info["objective"][-1])
        self.n_iter_ = info["n_iter"]
        self.converged_ = info["converged"]
        self.fit_time_ = info["time"]
        G = U.T @ U
        self.overlap_ = float(np.linalg.norm(np.eye(n_components) - G))
        self.cardinality_ = np.count_nonzero(U, axis=0)
        self.explained_variance_, self.explained_variance_ratio_ = adjusted_variance(
            C, self.components_
        )
