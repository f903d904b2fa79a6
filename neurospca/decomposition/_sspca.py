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

import numpy as np
from sklearn.utils.validation import validate_data

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
    ComponentsEstimator,
    Integral,
    Interval,
    Real,
    StrOptions,
    _deprecated_alias,
    _renamed,
    data_adjusted_variance,
)
from ._sspca_args import DEFAULT_EXPONENT as _DEFAULT_EXPONENT
from ._sspca_args import _check_partition, _weight_and_exponent
from ._sspca_solver import _group_norms, _membership, _objective, _omega, _sspca

__all__ = ["SSPCA", "sspca", "structured_norm", "_membership", "_objective"]

_CODE_CONSTRAINTS = ("l2", "l1")
_INITS = ("random", "svd")
#: ``alpha`` in units of ``alpha_max`` when no absolute ``alpha`` is given:
#: measured on half-space groups (benchmarks/RESULTS.md, issue 20, item 5).
DEFAULT_ALPHA_REL = 0.5


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
    verbose=0,
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
    verbose : int, default=0
        When > 0, log each alternation's objective at INFO level (logger
        ``"neurospca"``; printed to stdout when no handler is attached).

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
        verbose,
    )


class SSPCA(ComponentsEstimator):
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
    verbose : int, default=0
        When > 0, log each alternation's objective and relative decrease
        (INFO records on the ``"neurospca"`` logger; printed to stdout when no
        handler is attached there).

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
    converged_ : bool
        Whether the kept run's relative decrease reached ``tol`` within
        ``max_iter`` (else a ConvergenceWarning names both).
    n_components_ : int
        Number of components (rows of ``components_``).
    explained_variance_ : ndarray of shape (n_components,)
        Adjusted variance (Zou et al. 2006) of the components on the centred
        training data: QR of the scores ``Xc components_^T``, ``R_kk^2 / n``
        (0 for a collapsed component), as for every neurospca estimator.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``explained_variance_`` over the total variance; in [0, 1], sum <= 1.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Names of the features seen in ``fit`` (when ``X`` has string column
        names).

    Notes
    -----
    ``n_components=3`` is the default, as for :class:`~neurospca.SPCATV`
    (DESIGN §5), rather than scikit-learn's ``None`` (all components): the
    penalty scale ``alpha_max_`` and the default ``alpha_rel=0.5`` were
    measured with a few components (issue 20), and a structured fit of every
    component is neither cheap nor what the method is for.

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
        verbose=0,
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
        self.verbose = verbose

    _parameter_constraints = {
        **ComponentsEstimator._parameter_constraints,
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
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "support_threshold": [Interval(Real, 0, 1, closed="left")],
        "lam": [Interval(Real, 0, None, closed="left"), _DEPRECATED_OPTION],
    }

    codes_ = _deprecated_alias("scores_", "codes_", "the training codes.")

    def _fit(self, X):
        """Validate ``X``, centre it and run the algorithm (:func:`sspca`)."""
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
            self.verbose,
        )
        self._set_results(Xc, U, V, info)

    def _set_results(self, Xc, U, V, info):
        """The fitted attributes from the kept run."""
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
        self.converged_ = bool(info["converged"])
        self.explained_variance_, self.explained_variance_ratio_ = data_adjusted_variance(
            Xc, self.components_
        )
