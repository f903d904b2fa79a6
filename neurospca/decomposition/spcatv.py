"""SPCA-TV: PCA with l1, l2 and total-variation penalties on the loadings.

The math lives in :func:`spca_tv` (the paper's Algorithm 3); :class:`SPCATV`
is a thin scikit-learn estimator around it with the paper's
``(alpha, l1_ratio, tv_ratio)`` parametrisation.
"""

import logging
import numbers
import time
import warnings
from dataclasses import replace

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from ._base import (
    Integral, Interval, LoadingsTransformerMixin, Real, StrOptions, _fit_context,
)
from .._validation import (
    check_data,
    check_n_components,
    check_nonneg,
    check_not_constant,
    check_operator,
)
from ..operators import GroupOperator, chain_operator
from ..solvers import conesta, prox_dual
from ..solvers.gap import primal_certificate, prox_gap

logger = logging.getLogger("neurospca")

__all__ = ["SPCATV", "spca_tv", "weights_from_ratios", "ratios_from_weights"]

_SOLVERS = ("dual", "conesta")


def weights_from_ratios(alpha, l1_ratio, tv_ratio):
    """The paper's parametrisation (section III) to raw weights.

    ``alpha = l1 + l2 + tv``, ``l1_ratio = l1 / alpha``, ``tv_ratio = tv / alpha``.

    Returns
    -------
    l1, l2, tv : float

    Raises
    ------
    ValueError
        If ``alpha <= 0``, a ratio is negative, or ``l1_ratio + tv_ratio >= 1``
        (``l2`` must be > 0 for the duality gap).
    """
    alpha = check_nonneg(alpha, "alpha", strict=True)
    l1_ratio = check_nonneg(l1_ratio, "l1_ratio")
    tv_ratio = check_nonneg(tv_ratio, "tv_ratio")
    if l1_ratio + tv_ratio >= 1.0:
        raise ValueError(
            f"l1_ratio + tv_ratio must be < 1 (got {l1_ratio} + {tv_ratio} = "
            f"{l1_ratio + tv_ratio}): the l2 weight alpha * (1 - l1_ratio - tv_ratio) "
            "must be > 0 for the duality gap to exist."
        )
    return alpha * l1_ratio, alpha * (1.0 - l1_ratio - tv_ratio), alpha * tv_ratio


def ratios_from_weights(l1, l2, tv):
    """Raw ``(l1, l2, tv)`` weights to ``(alpha, l1_ratio, tv_ratio)``."""
    l1 = check_nonneg(l1, "l1")
    l2 = check_nonneg(l2, "l2", strict=True)
    tv = check_nonneg(tv, "tv")
    alpha = l1 + l2 + tv
    return alpha, l1 / alpha, tv / alpha


def _check_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return int(value)


class _Deflated:
    """``X_k = X - sum_j d_j u_j v_j^T`` applied implicitly (memory O(N P))."""

    def __init__(self, X):
        self.X = X
        self.U, self.V, self.d = [], [], []
        self.sqnorm = float(np.einsum("ij,ij->", X, X))

    def dot(self, v):
        out = self.X @ v
        for u_j, v_j, d_j in zip(self.U, self.V, self.d):
            out -= (d_j * float(v_j @ v)) * u_j
        return out

    def tdot(self, u):
        out = self.X.T @ u
        for u_j, v_j, d_j in zip(self.U, self.V, self.d):
            out -= (d_j * float(u_j @ u)) * v_j
        return out

    def deflate(self, u, v, d):
        self.sqnorm = max(self.sqnorm - d * d * float(v @ v), 0.0)
        self.U.append(u)
        self.V.append(v)
        self.d.append(d)


def _init_u(defl, gram, init, rng):
    if init == "random":
        u = rng.standard_normal(defl.X.shape[0])
    else:  # leading left singular vector of the deflated matrix
        _, vecs = np.linalg.eigh(gram)
        u = vecs[:, -1]
    nrm = np.linalg.norm(u)
    return u / nrm if nrm > 0 else u


def _certify_pair(defl, u, v, w, res, scale_y, operator, a, b, tol, solver,
                  max_inner_iter, gap_every, kernels):
    """Certify the returned pair: the v-step gap of ``v`` for the FINAL ``u``.

    The last v-step was solved for the previous ``u``; the u-step then moved
    ``u``. The exact Fenchel gap of ``v`` for the prox problem of the final
    ``u`` is evaluated (any dual point gives a bound: the last ``w`` and the
    candidates of :func:`neurospca.solvers.gap.primal_certificate`); if it
    exceeds ``tol * P_u(0)``, the v-step is re-solved for that ``u`` (warm
    started) and its ``v`` replaces the old one.

    Returns
    -------
    v, res, y, extra_iter
        ``res.gap`` / ``res.converged`` then certify ``(u, v)``.
    """
    y = defl.tdot(u) * scale_y
    tol_abs = tol * 0.5 * float(y @ y)
    gap, obj = primal_certificate(v, y, operator, a, b, (1e-3, 1e-6))
    if w is not None:
        gap = min(gap, prox_gap(v, y, operator, a, b, w)[0])
    if gap <= tol_abs or not np.any(v):
        return v, replace(res, v=v, gap=gap, tol_abs=tol_abs, converged=bool(gap <= tol_abs),
                          objective=obj), y, 0
    if solver == "dual":
        new = prox_dual(y, operator, a, b, tol=tol, max_iter=max_inner_iter, w0=w,
                        gap_every=gap_every, kernels=kernels, check_input=False)
    else:
        new = conesta(y, operator, a, b, tol=tol, v0=v, max_iter=max_inner_iter,
                      gap_every=gap_every, kernels=kernels, check_input=False)
    if not np.any(new.v):  # keep a non-zero component; report its own bound
        return v, replace(res, v=v, gap=gap, tol_abs=tol_abs, converged=False,
                          objective=obj), y, new.n_iter
    return new.v, new, y, new.n_iter


def spca_tv(X, n_components, *, l1, l2, tv, operator=None, tol=1e-3, max_iter=100,
            solver="dual", max_inner_iter=None, init="svd", random_state=None,
            gap_every=10, kernels="cython", verbose=0):
    """SPCA-TV by alternating minimisation and deflation (paper Algorithm 3).

    Component ``k`` solves, on the deflated matrix ``X_k`` (``X_0 = X``),

    .. math::

        \\min_{\\|u\\|_2 \\le 1, v} -\\frac1N u^T X_k v + \\lambda_2 \\|v\\|_2^2
        + \\lambda_1 \\|v\\|_1 + \\lambda \\sum_g \\|A_g v\\|_2

    alternating ``u = X_k v / ||X_k v||`` (eq. 5) with the v-step, until the
    relative change of ``||X_k - d u v^T||_F`` (eq. 26, least-squares ``d``) is
    at most ``tol``; then ``X_{k+1} = X_k - d u v^T`` with
    ``d = u^T X_k v / ||v||^2``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Data, used as given (centre it first; :class:`SPCATV` does).
    n_components : int
    l1, l2, tv : float
        The weights ``lambda_1 >= 0``, ``lambda_2 > 0``, ``lambda >= 0``.
    operator : GroupOperator, optional
        The structure ``A``; default a 1-D chain over the features.
    tol : float, default=1e-3
        Scale-free tolerance of the v-steps (certified gap at most ``tol``
        times the prox objective at 0) and of the outer loop (eq. 26).
    max_iter : int, default=100
        Maximum alternations per component.
    solver : {"dual", "conesta"}, default="dual"
        The v-step solver: the exact-prox dual method, or the paper's CONESTA.
    max_inner_iter : int, optional
        Iteration cap of one v-step (default 10,000 for "dual", 100,000 for
        "conesta").
    init : {"svd", "random"}, default="svd"
        Initial ``u``: leading left singular vector of ``X_k``, or random.
    random_state : int, RandomState or None
        Used by ``init="random"``.
    gap_every : int, default=10
        Evaluate the certified gap every ``gap_every`` inner iterations.
    kernels : {"cython", "numpy"}, default="cython"
    verbose : int, default=0
        Log progress at INFO level (logger ``"neurospca"``) when > 0.

    Returns
    -------
    U : ndarray of shape (n_samples, n_components)
        Unit-norm components ``u_k``.
    V : ndarray of shape (n_features, n_components)
        The raw loadings ``v_k`` of eq. 3 (not renormalised).
    info : dict
        ``d`` (rank-one scales), ``gaps`` (certified v-step gaps of the
        RETURNED pairs, in units of ``f``, eq. 3: ``f_{u_k}(v_k) - min_v
        f_{u_k}(v) <= gaps[k]`` with ``X_k^T u_k`` from the returned ``u_k``;
        the last v-step is re-solved for the final ``u_k`` when needed; see
        docs/certificates.rst), ``rel_gaps`` (gap over the prox objective at 0),
        ``n_iter`` (alternations), ``n_inner_iter`` (solver iterations),
        ``gap_history`` (per component, ``(cumulative inner iteration, gap in f
        units)``), ``mu_history`` (CONESTA), ``converged``, ``time``.
    """
    X = check_data(X)
    n_samples, n_features = X.shape
    n_components = check_n_components(n_components, n_samples, n_features)
    l1 = check_nonneg(l1, "l1")
    l2 = check_nonneg(l2, "l2", strict=True)
    tv = check_nonneg(tv, "tv")
    tol = check_nonneg(tol, "tol", strict=True)
    max_iter = _check_int(max_iter, "max_iter")
    gap_every = _check_int(gap_every, "gap_every")
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}.")
    if init not in ("svd", "random"):
        raise ValueError(f"init must be 'svd' or 'random', got {init!r}.")
    if max_inner_iter is None:
        max_inner_iter = 10_000 if solver == "dual" else 100_000
    max_inner_iter = _check_int(max_inner_iter, "max_inner_iter")
    if operator is None:
        operator = chain_operator(n_features)
    check_operator(operator, n_features)
    check_not_constant(X)
    rng = check_random_state(random_state)

    a, b = l1 / (2.0 * l2), tv / (2.0 * l2)
    scale_y = 1.0 / (2.0 * n_samples * l2)
    # |y_j| = |X_j^T u| / (2 N l2) <= ||X_j|| / (2 N l2): the loadings' scale
    y_bound = float(np.sqrt(np.einsum("ij,ij->j", X, X).max())) * scale_y
    if not y_bound < 1e150:
        raise ValueError(
            f"l2={l2:.3g} (alpha * (1 - l1_ratio - tv_ratio) in SPCATV) is too small for "
            f"data of this scale: the loadings ||X_j|| / (2 N l2) reach {y_bound:.1e} "
            "and their squares overflow. Increase alpha (or use SPCATV(alpha=None) "
            "for penalties relative to the data)."
        )
    defl = _Deflated(X)
    gram = X @ X.T if init == "svd" else None
    U = np.zeros((n_samples, n_components))
    V = np.zeros((n_features, n_components))
    info = {key: [] for key in ("d", "gaps", "rel_gaps", "n_iter", "n_inner_iter",
                                "gap_history", "mu_history", "converged", "time")}
    zero_from = None
    for k in range(n_components):
        t0 = time.perf_counter()
        u = _init_u(defl, gram, init, rng)
        v = np.zeros(n_features)
        w = None
        resid_prev, change = np.sqrt(defl.sqnorm), np.inf
        history, mu_hist, inner, outer_ok = [], [], 0, False
        for it in range(1, max_iter + 1):
            y = defl.tdot(u) * scale_y
            if solver == "dual":
                res = prox_dual(y, operator, a, b, tol=tol, max_iter=max_inner_iter,
                                w0=w, gap_every=gap_every, kernels=kernels,
                                check_input=False)
                w = res.w
            else:
                if it == 1:  # v^0 of Algorithm 2: the l1-only prox, not the trivial 0
                    v = np.sign(y) * np.maximum(np.abs(y) - a, 0.0)
                res = conesta(y, operator, a, b, tol=tol, v0=v, max_iter=max_inner_iter,
                              gap_every=gap_every, kernels=kernels, check_input=False)
                mu_hist.extend((inner + i, mu, 2.0 * l2 * e) for i, mu, e in res.mu_history)
            history.extend((inner + i, 2.0 * l2 * g) for i, g in res.gap_history)
            inner += res.n_iter
            vstep_ok = res.converged
            v = res.v
            Xv = defl.dot(v)
            nrm = float(np.linalg.norm(Xv))
            vv = float(v @ v)
            if nrm == 0.0 or vv == 0.0:
                break
            u = Xv / nrm
            resid = np.sqrt(max(defl.sqnorm - nrm * nrm / vv, 0.0))
            # eq. 26 compares two iterates: the first v-step has no predecessor
            # (v^0 = 0 would compare against ||X_k||), so it never stops the loop.
            change = abs(resid - resid_prev) / resid if resid > 0 else 0.0
            if it == 1:
                change = np.inf
            resid_prev = resid
            if verbose:
                logger.info("component %d, iteration %d: residual %.6g, change %.2e, "
                            "gap %.2e", k, it, resid, change, res.gap)
            if change <= tol:
                outer_ok = True
                break
        if nrm > 0.0 and vv > 0.0:  # certify the returned (u, v), not (u_prev, v)
            v, res, y, extra = _certify_pair(defl, u, v, w, res, scale_y, operator, a, b,
                                             tol, solver, max_inner_iter, gap_every, kernels)
            inner += extra
            vstep_ok = res.converged
            history.append((inner, 2.0 * l2 * res.gap))
            Xv, vv = defl.dot(v), float(v @ v)
            nrm = float(u @ Xv)
        if nrm == 0.0 or vv == 0.0:
            zero_from = k
            warnings.warn(
                f"component {k} is identically zero: the penalties are too strong "
                f"for this data (l1={l1:.3g}, tv={tv:.3g}); decrease alpha. The "
                "remaining components are set to zero.",
                UserWarning,
            )
            break
        if not vstep_ok:
            warnings.warn(
                f"component {k}: the v-step reached max_inner_iter={max_inner_iter} "
                f"with certified gap {res.gap:.3e} > tol * P(0) = {res.tol_abs:.3e} "
                f"(tol={tol}); increase max_inner_iter or tol.",
                ConvergenceWarning,
            )
        if not outer_ok:
            warnings.warn(
                f"component {k}: the alternating minimisation did not reach "
                f"tol={tol} in max_iter={max_iter} iterations (last relative change "
                f"{change:.3e}); increase max_iter.",
                ConvergenceWarning,
            )
        # least-squares scale: d = u^T X_k v / ||v||^2 with u = X_k v / ||X_k v||
        d = nrm / vv
        if gram is not None:
            gram -= d * (np.outer(Xv, u) + np.outer(u, Xv)) - d * d * vv * np.outer(u, u)
        defl.deflate(u, v, d)
        U[:, k], V[:, k] = u, v
        info["d"].append(d)
        info["gaps"].append(2.0 * l2 * res.gap)
        info["rel_gaps"].append(res.gap / (0.5 * float(y @ y)))
        info["n_iter"].append(it)
        info["n_inner_iter"].append(inner)
        info["gap_history"].append(history)
        info["mu_history"].append(mu_hist)
        info["converged"].append(outer_ok and res.converged)
        info["time"].append(time.perf_counter() - t0)
        if verbose:
            logger.info("component %d done: %d alternations, %d solver iterations, "
                        "gap %.3e, %.2f s", k, it, inner, info["gaps"][-1], info["time"][-1])
    if zero_from is not None:  # not computed: NaN gaps, no iterations
        for k in range(zero_from, n_components):
            for key, value in (("d", 0.0), ("gaps", np.nan), ("rel_gaps", np.nan),
                               ("n_iter", 0), ("n_inner_iter", 0), ("gap_history", []),
                               ("mu_history", []), ("converged", False), ("time", 0.0)):
                info[key].append(value)
    info = {key: (np.asarray(val) if key not in ("gap_history", "mu_history") else val)
            for key, val in info.items()}
    return U, V, info


class SPCATV(LoadingsTransformerMixin, BaseEstimator):
    """Sparse and structured PCA with the TV-elastic-net penalty (SPCA-TV).

    Each component solves (de Pierrefeu et al., eq. 3), on the deflated data,

    .. math::

        \\min_{\\|u\\|_2 \\le 1, v} -\\frac1N u^T X v + \\lambda_2 \\|v\\|_2^2
        + \\lambda_1 \\|v\\|_1 + \\lambda \\sum_g \\|A_g v\\|_2

    with ``alpha = lambda_1 + lambda_2 + lambda``,
    ``l1_ratio = lambda_1 / alpha`` and ``tv_ratio = lambda / alpha``.
    ``tv_ratio = 0`` gives ElasticNet PCA; ``l1_ratio = tv_ratio = 0`` the PCA
    directions.

    Parameters
    ----------
    n_components : int, default=3
    alpha : float or None, default=None
        Absolute total penalty weight (> 0), the paper's parametrisation. None
        (the default) makes the penalties relative to the data:
        ``alpha_ = alpha_rel * l1_max_`` with ``l1_max_ = max_j ||Xc_j||_2 / N``
        of the centred training data, so the same settings suit maps of any
        scale. Sparsity is driven by ``l1 = alpha * l1_ratio`` relative to
        ``l1_max_`` (no component survives when ``l1`` exceeds it and
        ``tv_ratio = 0``).
    l1_ratio : float, default=0.05
    tv_ratio : float, default=0.1
        ``l1_ratio + tv_ratio < 1``.
    alpha_rel : float, default=5.0
        ``alpha`` in units of ``l1_max_``, used when ``alpha`` is None.
    operator : GroupOperator, optional
        The structure, e.g. from :func:`neurospca.tv_from_mask` or
        :func:`neurospca.tv_from_mesh`. Default: a 1-D chain over the features.
    tol : float, default=1e-3
        Scale-free tolerance of the certified v-step gaps and of the outer loop.
    max_iter : int, default=100
        Maximum alternations per component.
    solver : {"dual", "conesta"}, default="dual"
    max_inner_iter : int, optional
    init : {"svd", "random"}, default="svd"
    random_state : int, RandomState or None
    verbose : int, default=0

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Unit-norm loading vectors (zero rows for vanished components).
    loadings_ : ndarray of shape (n_features, n_components)
        The raw ``v_k`` of eq. 3.
    alpha_ : float
        The absolute ``alpha`` used (``alpha``, or ``alpha_rel * l1_max_``).
    l1_max_ : float
        ``max_j ||Xc_j||_2 / N`` of the centred training data.
    mean_ : ndarray of shape (n_features,)
    singular_values_ : ndarray of shape (n_components,)
        ``d_k ||v_k||``, the rank-one scales for unit loadings.
    dual_gaps_ : ndarray of shape (n_components,)
        Certified v-step gaps of the returned pairs ``(u_k, v_k)`` (``u_k`` =
        ``scores_[:, k]``, ``v_k`` = ``loadings_[:, k]``), in units of the
        objective of eq. 3: ``v_k`` is within ``dual_gaps_[k]`` of the best
        ``v`` for that ``u_k``. The alternation itself is non-convex and not
        certified.
    n_iter_ : ndarray of shape (n_components,)
        Alternations per component.
    n_inner_iter_ : ndarray of shape (n_components,)
    gap_history_ : list of list of (int, float)
    explained_variance_ : ndarray of shape (n_components,)
        Adjusted variance (QR of the scores, Zou et al. 2006).
    explained_variance_ratio_ : ndarray of shape (n_components,)
    n_features_in_ : int
    fit_time_ : float

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import SPCATV
    >>> X = np.random.default_rng(0).standard_normal((20, 30))
    >>> model = SPCATV(n_components=2, alpha=0.1).fit(X)
    >>> model.components_.shape
    (2, 30)
    """

    def __init__(self, n_components=3, *, alpha=None, l1_ratio=0.05, tv_ratio=0.1,
                 alpha_rel=5.0, operator=None, tol=1e-3, max_iter=100, solver="dual",
                 max_inner_iter=None, init="svd", random_state=None, verbose=0):
        self.n_components = n_components
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.tv_ratio = tv_ratio
        self.alpha_rel = alpha_rel
        self.operator = operator
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.max_inner_iter = max_inner_iter
        self.init = init
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="neither"), None],
        "alpha_rel": [Interval(Real, 0, None, closed="neither")],
        "l1_ratio": [Interval(Real, 0, 1, closed="left")],
        "tv_ratio": [Interval(Real, 0, 1, closed="left")],
        "operator": [GroupOperator, None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions(set(_SOLVERS))],
        "max_inner_iter": [Interval(Integral, 1, None, closed="left"), None],
        "init": [StrOptions({"svd", "random"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model on ``X`` (n_samples, n_features). ``y`` is ignored."""
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2,
                          ensure_all_finite=False)
        X = check_data(X)
        n_components = check_n_components(self.n_components, *X.shape)
        t0 = time.perf_counter()
        self.mean_ = X.mean(axis=0)
        Xc = X - self.mean_
        check_not_constant(Xc)
        self.l1_max_ = float(np.sqrt(np.einsum("ij,ij->j", Xc, Xc)).max()) / X.shape[0]
        alpha = self.alpha_rel * self.l1_max_ if self.alpha is None else self.alpha
        self.alpha_ = float(alpha)
        l1, l2, tv = weights_from_ratios(self.alpha_, self.l1_ratio, self.tv_ratio)
        U, V, info = spca_tv(
            Xc, n_components, l1=l1, l2=l2, tv=tv, operator=self.operator,
            tol=self.tol, max_iter=self.max_iter, solver=self.solver,
            max_inner_iter=self.max_inner_iter, init=self.init,
            random_state=self.random_state, verbose=self.verbose,
        )
        norms = np.linalg.norm(V, axis=0)
        safe = np.where(norms > 0, norms, 1.0)
        self.loadings_ = V
        self.components_ = (V / safe).T
        self.scores_ = U
        self.singular_values_ = info["d"] * norms
        self.dual_gaps_ = info["gaps"]
        self.n_iter_ = info["n_iter"]
        self.n_inner_iter_ = info["n_inner_iter"]
        self.gap_history_ = info["gap_history"]
        self.mu_history_ = info["mu_history"]
        self.converged_ = info["converged"]
        self.component_times_ = info["time"]
        self.explained_variance_, self.explained_variance_ratio_ = _adjusted_variance(
            Xc, self.components_
        )
        self.fit_time_ = time.perf_counter() - t0
        return self


def _adjusted_variance(Xc, components):
    """Adjusted explained variance of non-orthogonal components (Zou et al.).

    The scores ``Z = Xc C^T`` are orthogonalised by QR; component k explains
    ``R_kk^2 / (N - 1)``.
    """
    n = Xc.shape[0]
    Z = Xc @ components.T
    R = np.linalg.qr(Z, mode="r")
    var = np.abs(np.diag(R)) ** 2 / max(n - 1, 1)
    total = float(np.einsum("ij,ij->", Xc, Xc)) / max(n - 1, 1)
    return var, var / total if total > 0 else np.zeros_like(var)
