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

import math

import numpy as np

from .._utils.validation import check_int, check_n_components, check_nonneg
from ._base import (
    ComponentsEstimator,
    Integral,
    Interval,
    Real,
    StrOptions,
    _deprecated_alias,
    adjusted_variance,
)
from ._covariance import check_covariance, covariance_input
from ._ktrace_solver import (
    _EXACT_POLAR_MAX_SUBSETS,
    _exact_candidates,
    _ktrace_pca,
    ktrace_objective,
    polar_upper_bound,
)

__all__ = [
    "KTraceNormPCA",
    "ktrace_pca",
    "ktrace_objective",
    "polar_upper_bound",
    "_exact_candidates",
]
#: The support size of ``k=None`` (at most the number of features).
DEFAULT_K = 3


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


def _atoms(blocks, p):
    """Eigen-decompose each block: unit k-sparse atoms and their weights."""
    vecs, weights = [], []
    for idx, Zb in blocks:
        w, V = np.linalg.eigh(Zb)
        for j in np.flatnonzero(w > 1e-12 * max(1.0, float(w[-1]))):
            a = np.zeros(p)
            a[idx] = V[:, j]
            # sign convention: largest-magnitude entry positive
            if a[np.argmax(np.abs(a))] < 0:
                a = -a
            vecs.append(a)
            weights.append(float(w[j]))
    if not vecs:
        return np.zeros((0, p)), np.zeros(0)
    order = np.argsort(weights, kind="stable")[::-1]
    return np.asarray(vecs)[order], np.asarray(weights)[order]


class KTraceNormPCA(ComponentsEstimator):
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
    k : int or None, default=None
        Support size of the atoms, ``1 <= k <= n_features``. None:
        ``min(3, n_features)`` (``k_``); it was 3, which gives the same fits
        wherever 3 was accepted and, unlike 3, fits data of one or two
        features (scikit-learn's estimator checks use such data).
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
        When > 0, log each working-set solve (objective, polar estimate) at
        INFO level on the ``"neurospca"`` logger.

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        The estimate ``Z``.
    blocks_ : list of (ndarray, ndarray)
        Nonzero blocks ``(I, Z^(I))`` of the decomposition.
    components_ : ndarray of shape (n_components, n_features)
    n_components_ : int
        Rows of ``components_`` (``n_components``, or the number of nonzero
        atoms when ``n_components`` is None).
    k_ : int
        The support size used.
    explained_variance_ : ndarray of shape (n_components,)
        Atom weights (eigenvalues of the blocks): ``Z = sum_j
        explained_variance_[j] outer(c_j, c_j)``. Not the adjusted variance
        of the other estimators (kept: it is how ``Z`` is rebuilt).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        The definition of every neurospca estimator (docs/naming.rst): the
        adjusted variance (Zou et al. 2006) of the atoms on the empirical
        covariance ``S`` (QR of ``W S W^T``), over ``tr S``; in [0, 1], sum
        <= 1.
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
    feature_names_in_ : ndarray of str
        Names of the features seen in ``fit`` (string column names only).

    Notes
    -----
    ``n_components=None`` (all nonzero atoms) is scikit-learn's convention
    ("None: keep all"); the penalty, not a count, decides how many atoms
    the covariance estimate has.

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
        k=None,
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
        **ComponentsEstimator._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "k": [Interval(Integral, 1, None, closed="left"), None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "input": [StrOptions({"data", "covariance"})],
        "max_blocks": [Interval(Integral, 1, None, closed="left"), None],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "tpi_max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    dual_gap_ = _deprecated_alias(
        "dual_gaps_",
        "dual_gap_",
        "the certified gap, a float.",
        to_old=lambda gaps: float(gaps[0]),
        to_new=lambda gap: np.array([float(gap)]),
    )

    def _fit(self, X):
        """Validate ``X`` (data or covariance), estimate the covariance and its atoms."""
        self.mean_, S, _ = covariance_input(self, X)
        p = S.shape[0]
        n_components = self.n_components
        if n_components is not None:
            n_components = check_n_components(n_components, p, p)
        k = min(DEFAULT_K, p) if self.k is None else check_int(self.k, "k", minimum=1, maximum=p)
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
        self.k_ = k
        self.explained_variance_ratio_ = adjusted_variance(S, atoms)[1]
