"""Structured sparse PCA (Jenatton, Obozinski and Bach, AISTATS 2010).

A matrix factorisation ``X ~ U V^T`` whose dictionary columns ``V^k`` (the
loadings) are penalised by a structured norm over (overlapping) groups,

.. math::

    \\min_{U, V} \\frac{1}{2np} \\|X - U V^T\\|_F^2
    + \\alpha \\sum_{k=1}^r \\Omega^q(V^k)
    \\quad \\text{s.t.} \\quad \\Omega_u(U^k) \\le 1,
    \\qquad
    \\Omega^q(y) = \\Big(\\sum_{G} \\|d^G \\circ y\\|_2^q\\Big)^{1/q},

with ``Omega_u`` the ℓ2 (or ℓ1) norm. The paper writes ``lambda`` for the
weight (here ``alpha``, the penalty weight of every neurospca estimator) and
``alpha`` for the exponent (here ``exponent``, ``q``). ``exponent = 1`` is
the convex overlapping group lasso; ``exponent < 1`` (the paper uses 0.5)
gives sparser, more salient supports. With the half-spaces of a grid as groups
(:func:`neurospca.grid_halfspace_groups`) the supports are rectangles or
convex polygons.

The algorithm is the paper's Algorithm 1: cyclic minimisation over the
variational weights ``eta`` (closed form, Lemma 3.1), the code columns
``U^k`` (projected block coordinate descent) and the loading columns ``V^k``
(closed-form, diagonal block coordinate descent).
"""

import logging
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from .._utils.docs import fill_doc
from .._utils.validation import (
    check_data,
    check_finite_array,
    check_int,
    check_n_components,
    check_nonneg,
    check_not_constant,
)
from ..groups import check_groups
from ._base import (
    _DEPRECATED_OPTION,
    DEPRECATED,
    Integral,
    Interval,
    LoadingsTransformerMixin,
    Real,
    StrOptions,
    _deprecated_alias,
    _fit_context,
    _renamed,
)
from ._projections import _project_l1_ball
from ._sspca_args import (
    DEFAULT_EXPONENT as _DEFAULT_EXPONENT,
)
from ._sspca_args import (
    _check_partition,
    _weight_and_exponent,
)
from ._sspca_scale import alpha_max, collapsed_components

logger = logging.getLogger("neurospca")

__all__ = ["SSPCA", "sspca", "structured_norm"]

_CODE_CONSTRAINTS = ("l2", "l1")
_INITS = ("random", "svd")
#: ``alpha`` in units of ``alpha_max`` when no absolute ``alpha`` is given:
#: measured on half-space groups (benchmarks/RESULTS.md, issue 20, item 5).
DEFAULT_ALPHA_REL = 0.5


def _membership(groups, weights, n_features):
    """Sparse (n_groups, n_features) matrix of squared weights ``(d^G_j)^2``."""
    rows = np.repeat(np.arange(len(groups)), [g.size for g in groups])
    cols = np.concatenate(groups)
    data = np.concatenate(weights) ** 2
    return sp.csr_matrix((data, (rows, cols)), shape=(len(groups), n_features))


def _group_norms(Msq, V, classes=None):
    """``N[G, k] = ||d^G o V^k||_2``, shape (n_groups, r).

    With ``classes`` (an (r, n_classes) 0/1 matrix of a partition of the
    components), the block norms ``N[G, M] = ||(d^G_j V_jk)_{j in G, k in M}||_F``
    of the shared-pattern model, shape (n_groups, n_classes).
    """
    sq = Msq @ (V * V)
    if classes is not None:
        sq = sq @ classes
    return np.sqrt(np.maximum(sq, 0.0))


def _omega(N, exponent):
    """``(sum_G N_G^exponent)^(1/exponent)`` per column of N."""
    if exponent == 1.0:
        return N.sum(axis=0)
    return (N**exponent).sum(axis=0) ** (1.0 / exponent)


def structured_norm(v, groups, *, exponent=1.0, weights=None, alpha=None):
    """The structured norm ``Omega^q`` of a vector (``q = exponent``).

    .. math::

        \\Omega^q(v) = \\Big(\\sum_G \\|d^G \\circ v\\|_2^q\\Big)^{1/q}

    Parameters
    ----------
    v : array-like of shape (n_features,)
        The vector.
    groups : sequence of array-like of int
        The groups ``G`` (need not cover every feature).
    exponent : float in (0, 1], default=1.0
        The exponent ``q`` (1: the overlapping group lasso norm).
    weights : None, array-like of shape (n_groups,) or sequence of arrays
        The weights ``d^G``; see :func:`neurospca.groups.check_groups`.
    alpha : float, optional
        Deprecated name of ``exponent`` (FutureWarning).

    Returns
    -------
    float
    """
    exponent = _renamed(alpha, exponent, "alpha", "exponent", "structured_norm")
    v = check_finite_array(v, "v")
    if v.ndim != 1:
        raise ValueError(f"v must be 1-D, got {v.ndim}-D.")
    groups, wts = check_groups(groups, v.size, weights, require_cover=False)
    exponent = _check_exponent(exponent)
    N = _group_norms(_membership(groups, wts, v.size), v[:, None])
    return float(_omega(N, exponent)[0])


def _check_exponent(exponent):
    exponent = check_nonneg(exponent, "exponent", strict=True)
    if exponent > 1:
        raise ValueError(f"exponent must be in (0, 1], got {exponent}.")
    return exponent


def _problem(n_samples, n_features, n_components, groups, group_weights, partition):
    """Convert the structure arguments: ``(Msq, classes, label)``."""
    if groups is None:
        groups = [np.array([j]) for j in range(n_features)]
    groups, wts = check_groups(groups, n_features, group_weights)
    classes, label = _check_partition(partition, n_components)
    return _membership(groups, wts, n_features), classes, label


def _project_code(w, constraint, nonneg=False):
    """Euclidean projection on the unit ball of ``Omega_u`` (intersected with the
    nonnegative orthant if ``nonneg``: clipping first, then the ball, is exact
    for these balls centred at 0)."""
    if nonneg:
        w = np.maximum(w, 0.0)
    if constraint == "l2":
        nrm = np.sqrt(float(w @ w))
        return w / nrm if nrm > 1.0 else w
    return _project_l1_ball(w, 1.0)


def _objective(X, U, V, Msq, alpha, exponent, classes=None):
    n, p = X.shape
    R = X - U @ V.T
    return 0.5 * float(np.einsum("ij,ij->", R, R)) / (n * p) + alpha * float(
        _omega(_group_norms(Msq, V, classes), exponent).sum()
    )


def _fit_once(
    X,
    r,
    Msq,
    alpha,
    exponent,
    code_constraint,
    eps,
    n_inner,
    max_iter,
    tol,
    rng,
    classes=None,
    label=None,
    nonneg=False,
    U0=None,
):
    """One run of Algorithm 1 from ``U0`` (random if None). Returns U, V, eta, history."""
    n, p = X.shape
    U = rng.standard_normal((n, r)) if U0 is None else U0.copy()
    U = np.abs(U) if nonneg else np.linalg.qr(U)[0]
    U = np.array([_project_code(u, code_constraint, nonneg) for u in U.T]).T
    V = X.T @ U
    if nonneg:
        V = np.maximum(V, 0.0)
    if label is None:
        label = np.arange(r)
    npl = n * p * alpha
    history = [_objective(X, U, V, Msq, alpha, exponent, classes)]
    eta = None
    converged = False
    for it in range(1, max_iter + 1):
        # eta-step (Lemma 3.1): eta_G = N_G^(2-exponent) ||N||_alpha^(exponent-1) + eps,
        # one column per component (or per class of the partition)
        N = _group_norms(Msq, V, classes)
        nrm = _omega(N, exponent)
        safe = np.where(nrm > 0, nrm, 1.0)
        eta = N ** (2.0 - exponent) * safe ** (exponent - 1.0)
        top = eta.max(axis=0)
        eta = eta + eps * np.where(top > 0, top, 1.0)[None, :]
        # zeta_jk = 1 / sum_{G ∋ j} (d^G_j)^2 / eta^G_k (eta of the class of k)
        zeta = (1.0 / (Msq.T @ (1.0 / eta)))[:, label]
        # U-step: projected BCD on the columns
        XV = X @ V
        VtV = V.T @ V
        for _ in range(n_inner):
            for k in range(r):
                if VtV[k, k] <= 0:
                    continue
                w = U[:, k] + (XV[:, k] - U @ VtV[:, k]) / VtV[k, k]
                U[:, k] = _project_code(w, code_constraint, nonneg)
        # V-step: closed-form diagonal BCD on the columns
        XtU = X.T @ U
        UtU = U.T @ U
        for _ in range(n_inner):
            for k in range(r):
                c = XtU[:, k] - V @ UtU[:, k] + UtU[k, k] * V[:, k]
                v = zeta[:, k] * c / (UtU[k, k] * zeta[:, k] + npl)
                # the problem is separable in the coordinates: clipping is exact
                V[:, k] = np.maximum(v, 0.0) if nonneg else v
        history.append(_objective(X, U, V, Msq, alpha, exponent, classes))
        prev, cur = history[-2], history[-1]
        if abs(prev - cur) <= tol * max(abs(cur), 1e-300):
            converged = True
            break
    return U, V, eta, history, it, converged


def sspca(
    X,
    n_components,
    *,
    groups=None,
    alpha=None,
    alpha_rel=DEFAULT_ALPHA_REL,
    exponent=_DEFAULT_EXPONENT,
    group_weights=None,
    code_constraint="l2",
    partition=None,
    nonneg=False,
    init="random",
    eps=1e-6,
    n_inner=3,
    max_iter=200,
    tol=1e-4,
    n_init=1,
    random_state=None,
    lam=None,
):
    """Structured sparse PCA on centred data (Jenatton et al. 2010, Algorithm 1).

    .. math::

        \\min_{U, V, \\Omega_u(U^k) \\le 1} \\frac{1}{2np} \\|X - U V^T\\|_F^2
        + \\alpha \\sum_k \\Big(\\sum_{G} \\|d^G \\circ V^k\\|_2^q\\Big)^{1/q}

    solved through the variational form of Lemma 3.1,
    ``||y||_q = min_z 1/2 sum_j y_j^2 / z_j + 1/2 ||z||_beta``
    (``beta = q / (2 - q)``): the ``eta``-step is in closed form, and
    with ``eta`` fixed the problem is a ridge with diagonal weights
    ``zeta_jk = (sum_{G ∋ j} (d^G_j)^2 / eta^G_k)^-1``, solved by block
    coordinate descent on the columns of ``U`` (projected) and ``V``.
    (The paper's ``lambda`` is ``alpha`` here, its ``alpha`` is ``exponent``.)

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Centred data.
    n_components : int
        Number of components ``r``.
    groups : sequence of array-like of int, optional
        The group set ``G``; must cover every feature. Default: singletons
        (``Omega^q`` is then the ℓq quasi-norm, ℓ1 for ``exponent = 1``).
    alpha : float or None, default=None
        The penalty weight (the paper's ``lambda``; the loss is divided by
        ``n p``). None: ``alpha_rel * alpha_max`` (relative to the data).
    alpha_rel : float, default=0.5
        ``alpha`` in units of ``alpha_max``, the smallest weight at which
        ``V = 0`` is a minimiser (``_sspca_scale.alpha_max``: exact on
        singletons, a lower bound on overlapping groups, where every
        component was empty by 1.5). Used when ``alpha`` is None.
    exponent : float in (0, 1], default=0.5
        The exponent ``q`` of the group quasi-norm (the paper's ``alpha``).
    group_weights : None, array-like of shape (n_groups,) or sequence of arrays
        The weights ``d^G`` (the paper leaves them unspecified; default 1).
    code_constraint : {"l2", "l1"}, default="l2"
        ``Omega_u``: unit ℓ2 or ℓ1 ball on each code column.
    partition : sequence of sequences of int, optional
        Shared patterns (the paper's section 3.2): a partition ``M`` of the
        components, e.g. ``[[0, 1], [2]]``. The components of a block share one
        support: the penalty of a block ``M`` is
        ``(sum_G ||(d^G_j V_jk)_{j in G, k in M}||_F^q)^(1/q)``, one
        ``eta`` per block. Default: every component alone (the model above).
    nonneg : bool, default=False
        Constrain ``U >= 0`` and ``V >= 0`` (the paper's NMF-like variant): both
        block updates are followed by the exact projection on the orthant.
        Meant for nonnegative data that is not centred.
    init : {"random", "svd"}, default="random"
        Initial codes: Gaussian (the paper), or the leading left singular
        vectors of ``X`` for the first run (their absolute values with
        ``nonneg``); further ``n_init`` runs start at random.
    eps : float, default=1e-6
        Smoothing of ``eta`` (``eta^G_k <- eta*^G_k + eps max_G eta*^G_k``),
        relative to the component's largest weight so that it does not depend
        on the data scale. The
        loadings are therefore never exactly zero; threshold them.
    n_inner : int, default=3
        Block-coordinate sweeps ``T_u = T_v`` per alternation.
    max_iter : int, default=200
        Maximum alternations per run.
    tol : float, default=1e-4
        Relative decrease of the objective that stops a run.
    n_init : int, default=1
        Random restarts; the run with the lowest objective is kept.
    random_state : int, RandomState or None
        Seed of the random starts.
    lam : float, optional
        Deprecated name of ``alpha`` (FutureWarning). With ``lam`` given,
        ``alpha`` keeps its old meaning, the exponent.

    Returns
    -------
    U : ndarray of shape (n_samples, n_components)
        The codes (scores).
    V : ndarray of shape (n_features, n_components)
        The loadings.
    info : dict
        ``objective`` (history of the best run), ``eta`` (n_groups, r), or
        (n_groups, n_blocks) with a ``partition``,
        ``n_iter``, ``converged``, ``objectives`` (final value of each run),
        ``alpha`` (the weight used), ``alpha_max``, ``collapsed`` (bool per
        component: its loadings do not lower the objective below that of
        dropping it, ``_sspca_scale.collapsed_components``; a
        ``UserWarning`` names them).

    Raises
    ------
    TypeError, ValueError
        On bad arguments; the message names the argument.
    """
    alpha, exponent = _weight_and_exponent(lam, alpha, exponent, "sspca")
    X = check_data(X)
    check_not_constant(X - X.mean(axis=0))
    n, p = X.shape
    r = check_n_components(n_components, n, p)
    Msq, classes, label = _problem(n, p, r, groups, group_weights, partition)
    alpha = None if alpha is None else check_nonneg(alpha, "alpha")
    alpha_rel = check_nonneg(alpha_rel, "alpha_rel", strict=True)
    exponent = _check_exponent(exponent)
    if code_constraint not in _CODE_CONSTRAINTS:
        raise ValueError(
            f"code_constraint must be one of {_CODE_CONSTRAINTS}, got {code_constraint!r}."
        )
    if init not in _INITS:
        raise ValueError(f"init must be one of {_INITS}, got {init!r}.")
    if not isinstance(nonneg, (bool, np.bool_)):
        raise TypeError(f"nonneg must be a bool, got {type(nonneg).__name__}.")
    eps = check_nonneg(eps, "eps", strict=True)
    n_inner = check_int(n_inner, "n_inner", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    n_init = check_int(n_init, "n_init", minimum=1)
    tol = check_nonneg(tol, "tol", strict=True)
    return _sspca(
        X,
        r,
        Msq,
        classes,
        label,
        alpha,
        alpha_rel,
        exponent,
        code_constraint,
        bool(nonneg),
        init,
        eps,
        n_inner,
        max_iter,
        tol,
        n_init,
        random_state,
    )


def _sspca(
    X,
    r,
    Msq,
    classes,
    label,
    alpha,
    alpha_rel,
    exponent,
    code_constraint,
    nonneg,
    init,
    eps,
    n_inner,
    max_iter,
    tol,
    n_init,
    random_state,
):
    """:func:`sspca` on validated arguments (the estimator calls it directly)."""
    a_max = alpha_max(X, Msq, exponent, r, code_constraint=code_constraint, nonneg=nonneg)
    if alpha is None:
        alpha = alpha_rel * a_max
    rng = check_random_state(random_state)
    best, finals = None, []
    U0 = np.linalg.svd(X, full_matrices=False)[0][:, :r] if init == "svd" else None
    for run in range(n_init):
        res = _fit_once(
            X,
            r,
            Msq,
            alpha,
            exponent,
            code_constraint,
            eps,
            n_inner,
            max_iter,
            tol,
            rng,
            classes,
            label,
            nonneg,
            U0 if run == 0 else None,
        )
        finals.append(res[3][-1])
        logger.debug("sspca: run %d, %d iterations, objective %.6g", run, res[4], res[3][-1])
        if best is None or res[3][-1] < best[3][-1]:
            best = res
    U, V, eta, history, n_iter, converged = best
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(V)) and np.isfinite(history[-1])):
        raise ValueError(
            "SSPCA diverged to non-finite values (overflow); rescale X to unit scale "
            f"and/or change alpha (alpha={alpha:.3g})."
        )
    if not converged:
        warnings.warn(
            f"sspca did not converge in {max_iter} iterations (relative decrease "
            f"{abs(history[-2] - history[-1]) / max(abs(history[-1]), 1e-300):.2e} > "
            f"tol={tol}); increase max_iter.",
            ConvergenceWarning,
            stacklevel=3,
        )
    collapsed = collapsed_components(
        lambda W: _objective(X, U, W, Msq, alpha, exponent, classes), X, V
    )
    if np.any(collapsed):
        warnings.warn(
            f"SSPCA: component(s) {np.flatnonzero(collapsed).tolist()} of {r} collapsed: "
            f"at alpha={alpha:.3g} ({alpha / a_max:.3g} x alpha_max={a_max:.3g}) their "
            "loadings do not lower the objective below that of V = 0, so they are set "
            "to zero in components_ and supports_. Decrease alpha_rel (with alpha=None) "
            "or alpha, or ask for fewer components.",
            UserWarning,
            stacklevel=3,
        )
    info = {
        "objective": history,
        "eta": eta,
        "n_iter": n_iter,
        "converged": converged,
        "objectives": np.asarray(finals),
        "alpha": float(alpha),
        "alpha_max": a_max,
        "collapsed": collapsed,
    }
    return U, V, info


class SSPCA(LoadingsTransformerMixin, BaseEstimator):
    """Structured sparse PCA (Jenatton, Obozinski and Bach 2010).

    .. math::

        \\min_{U, V, \\Omega_u(U^k) \\le 1} \\frac{1}{2np} \\|X - U V^T\\|_F^2
        + \\alpha \\sum_k \\Big(\\sum_{G} \\|d^G \\circ V^k\\|_2^q\\Big)^{1/q}

    on the centred data ``X`` (``q = exponent``). See :func:`sspca` for the
    algorithm.

    Parameters
    ----------
    n_components : int, default=3
        Number of components.
    alpha : float or None, default=None
        The penalty weight (the paper's ``lambda``); the loss is divided by
        ``n_samples * n_features``. None (the default): ``alpha_rel *
        alpha_max_``, relative to the data.
    alpha_rel : float, default=0.5
        ``alpha`` in units of ``alpha_max_``, the smallest weight at which
        ``V = 0`` minimises the objective (on half-space groups every
        component was empty by 1.5). Used when ``alpha`` is None; 0.5 lost
        least support accuracy over noise levels and layouts with half-space
        groups (docs/sspca.rst).
    exponent : float in (0, 1], default=0.5
        Exponent ``q`` of the group quasi-norm (the paper's ``alpha``; 1: the
        convex overlapping group lasso).
    groups : sequence of array-like of int, optional
        The group set, e.g. :func:`neurospca.grid_halfspace_groups` of the
        image grid or brain mask; must cover every feature. Default: singletons.
    group_weights : None, array-like of shape (n_groups,) or sequence of arrays
        The positive weights ``d^G`` (default 1).
    code_constraint : {"l2", "l1"}, default="l2"
        Unit ball of each code column.
    partition : sequence of sequences of int, optional
        Shared patterns: components in one block share their support (see
        :func:`sspca`), e.g. ``[[0, 1], [2, 3]]``.
    nonneg : bool, default=False
        Nonnegative codes and loadings (NMF-like); use with ``center=False`` on
        nonnegative data.
    center : bool, default=True
        Subtract the feature means before fitting (``mean_``; zeros if False).
    init : {"random", "svd"}, default="random"
        Start of the first run: random codes (the paper) or the leading left
        singular vectors.
    eps : float, default=1e-6
        Relative smoothing of the variational weights ``eta``.
    n_inner : int, default=3
        Block-coordinate sweeps per alternation.
    max_iter : int, default=200
        Maximum alternations per run.
    tol : float, default=1e-4
        Relative decrease of the objective that stops a run.
    n_init : int, default=1
        Random restarts, the best objective is kept.
    support_threshold : float, default=1e-3
        ``supports_[k]`` holds the features with ``|V_jk| > support_threshold *
        max_j |V_jk|`` (the ``eps`` smoothing leaves no exact zeros); empty
        for a collapsed component.
    random_state : int, RandomState or None
        Seed of the random starts.
    lam : float, optional
        Deprecated name of ``alpha`` (FutureWarning); with ``lam`` given,
        ``alpha`` keeps its old meaning, the exponent.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Unit-norm loadings; zero rows for collapsed components.
    loadings_ : ndarray of shape (n_features, n_components)
        The raw dictionary ``V`` (as fitted, also for collapsed components).
    scores_ : ndarray of shape (n_samples, n_components)
        The training codes ``U`` (``codes_`` is a deprecated alias).
    supports_ : ndarray of bool, shape (n_components, n_features)
        Features above ``support_threshold`` per component (none for a
        collapsed component).
    collapsed_ : ndarray of bool, shape (n_components,)
        Components whose loadings do not lower the objective below that of
        dropping them (a ``UserWarning`` names them): what is left of a
        collapse to zero, not a pattern.
    alpha_ : float
        The weight used (``alpha``, or ``alpha_rel * alpha_max_``).
    alpha_rel_ : float
        ``alpha_ / alpha_max_``.
    alpha_max_ : float
        The smallest weight at which ``V = 0`` is a minimiser: exact for
        singleton groups, else the best lower bound over candidate directions
        (``neurospca.decomposition._sspca_scale.alpha_max``).
    mean_ : ndarray of shape (n_features,)
        Feature means (zeros with ``center=False``).
    eta_ : ndarray of shape (n_groups, n_components) or (n_groups, n_blocks)
        Final variational weights.
    objective_ : float
        Final objective.
    objective_history_ : list of float
        Objective after each alternation of the kept run (first: at the start).
    n_iter_ : int
        Alternations of the kept run.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import SSPCA, grid_halfspace_groups
    >>> X = np.random.default_rng(0).standard_normal((30, 36))
    >>> model = SSPCA(2, groups=grid_halfspace_groups((6, 6)), random_state=0).fit(X)
    >>> model.components_.shape
    (2, 36)
    """

    def __init__(
        self,
        n_components=3,
        *,
        alpha=None,
        alpha_rel=DEFAULT_ALPHA_REL,
        exponent=_DEFAULT_EXPONENT,
        groups=None,
        group_weights=None,
        code_constraint="l2",
        partition=None,
        nonneg=False,
        center=True,
        init="random",
        eps=1e-6,
        n_inner=3,
        max_iter=200,
        tol=1e-4,
        n_init=1,
        support_threshold=1e-3,
        random_state=None,
        lam=DEPRECATED,
    ):
        self.n_components = n_components
        self.alpha = alpha
        self.alpha_rel = alpha_rel
        self.exponent = exponent
        self.groups = groups
        self.group_weights = group_weights
        self.code_constraint = code_constraint
        self.partition = partition
        self.nonneg = nonneg
        self.center = center
        self.init = init
        self.eps = eps
        self.n_inner = n_inner
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.support_threshold = support_threshold
        self.random_state = random_state
        self.lam = lam

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left"), None],
        "alpha_rel": [Interval(Real, 0, None, closed="neither")],
        "exponent": [Interval(Real, 0, 1, closed="right")],
        "groups": ["array-like", None],
        "group_weights": ["array-like", None],
        "code_constraint": [StrOptions(set(_CODE_CONSTRAINTS))],
        "partition": ["array-like", None],
        "nonneg": ["boolean"],
        "center": ["boolean"],
        "init": [StrOptions(set(_INITS))],
        "eps": [Interval(Real, 0, None, closed="neither")],
        "n_inner": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "support_threshold": [Interval(Real, 0, 1, closed="left")],
        "random_state": ["random_state"],
        "lam": [Interval(Real, 0, None, closed="left"), _DEPRECATED_OPTION],
    }

    codes_ = _deprecated_alias("scores_", "codes_", "the training codes.")

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y=None):
        """Fit the model on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        %(y_ignored)s

        Returns
        -------
        self : SSPCA
            The fitted estimator.
        """
        alpha, exponent = _weight_and_exponent(self.lam, self.alpha, self.exponent, "SSPCA")
        if exponent == 0 or exponent > 1:  # an old-style alpha read as the exponent
            raise ValueError(f"exponent must be in (0, 1], got {exponent}.")
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2, ensure_all_finite=False)
        X = check_data(X)
        self.mean_ = X.mean(axis=0) if self.center else np.zeros(X.shape[1])
        Xc = X - self.mean_
        check_not_constant(Xc)
        n, p = X.shape
        r = check_n_components(self.n_components, n, p)
        Msq, classes, label = _problem(n, p, r, self.groups, self.group_weights, self.partition)
        U, V, info = _sspca(
            Xc,
            r,
            Msq,
            classes,
            label,
            None if alpha is None else float(alpha),
            float(self.alpha_rel),
            float(exponent),
            self.code_constraint,
            bool(self.nonneg),
            self.init,
            float(self.eps),
            self.n_inner,
            self.max_iter,
            float(self.tol),
            self.n_init,
            self.random_state,
        )
        kept = ~info["collapsed"]
        norms = np.linalg.norm(V, axis=0)
        safe = np.where(norms > 0, norms, 1.0)
        self.loadings_ = V
        self.scores_ = U
        self.components_ = (V / safe * kept).T
        absV = np.abs(V)
        thr = float(self.support_threshold)
        self.supports_ = (absV > thr * absV.max(axis=0, keepdims=True)).T & kept[:, None]
        self.collapsed_ = info["collapsed"]
        self.alpha_ = info["alpha"]
        self.alpha_max_ = info["alpha_max"]
        self.alpha_rel_ = self.alpha_ / self.alpha_max_
        self.eta_ = info["eta"]
        self.objective_ = float(info["objective"][-1])
        self.objective_history_ = info["objective"]
        self.n_iter_ = int(info["n_iter"])
        return self
