"""SPCA-TV: PCA with l1, l2 and total-variation penalties on the loadings.

:func:`spca_tv` (the paper's Algorithm 3) and :class:`SPCATV` (a
scikit-learn estimator with the paper's ``(alpha, l1_ratio, tv_ratio)``
parametrisation) validate their inputs once and call the private worker
:func:`~neurospca.decomposition._alternation._spca_tv`.

Size: about 610 lines, most of them the estimator's docstring (25 parameters and
fitted attributes); the code is the fit's sequence, its workers live elsewhere.
"""

import time
import warnings
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.docs import fill_doc
from .._utils.validation import (
    check_data,
    check_int,
    check_n_components,
    check_nonneg,
    check_not_constant,
)
from ..operators import GroupOperator, chain_operator, check_operator
from ..solvers import SOLVERS, get_solver
from ..solvers._base import resolve_n_threads
from ..solvers.penalties import check_penalties, eq3_pieces
from ._alternation import _adjusted_variance, _check_l2_scale, _pca_variance_ratio, _spca_tv
from ._base import (
    Integral,
    Interval,
    LoadingsTransformerMixin,
    Real,
    StrOptions,
    _fit_context,
    reconstruction_error,
)
from ._data import as_data_operator, validated_data_operator
from ._joint import _joint_spca_tv
from ._stability import auto_fit, auto_path, scores_of, set_stability
from ._support import certify_fit
from ._weights import _weights, weights_from_ratios

__all__ = ["SPCATV", "spca_tv"]


def spca_tv(
    X,
    n_components,
    *,
    l1,
    l2,
    tv,
    operator=None,
    tol=1e-3,
    max_iter=100,
    solver="dual",
    max_inner_iter=None,
    init="svd",
    random_state=None,
    gap_every=10,
    kernels="cython",
    verbose=0,
    u0=None,
    w0=None,
    penalties=None,
    n_threads=None,
):
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
    X : ndarray, numpy.memmap or dask.array of shape (n_samples, n_features)
        Data, used as given (centre it first; :class:`SPCATV` does, implicitly).
        float32 is kept float32 (products in float32, sums, v-steps and
        certificates in float64); a memmap is streamed from disk by row
        blocks and a dask array is reduced block by block as dask tasks,
        never materialised.
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
        When > 0, log progress at INFO level (logger ``"neurospca"``); the
        lines are also printed to stdout unless a handler is attached to that
        logger.
    u0 : ndarray of shape (n_samples, n_components), optional
        Warm start: initial ``u`` of each component (a zero column falls back
        to ``init``), e.g. the ``U`` of a fit at neighbouring penalties.
    w0 : list of ndarray of shape (operator.n_rows,) or None, optional
        Warm start of the solver state of each component's v-steps (the
        dual variables for ``solver="dual"``; ignored by CONESTA), e.g.
        ``info["w"]`` of a neighbouring fit with the same penalties.
    penalties : list of penalty pieces, optional
        Further penalties added to eq. 3, e.g.
        ``[neurospca.solvers.penalties.GraphLaplacian(operator, weight)]``
        for ``weight * v^T D^T D v``; weights in the units of eq. 3 (as
        ``l1``, ``l2``, ``tv``). A solver that cannot handle a piece raises
        a ValueError naming both (CONESTA handles none).
    n_threads : int, optional
        Threads for the v-step kernels (OpenMP) and for the row blocks of the
        data products; None: the default of
        :func:`neurospca.solvers.set_n_threads`, else the cores this process
        may use. BLAS runs on one thread while a multi-threaded v-step runs,
        so the two never oversubscribe the cores.

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
        units)``), ``rel_gap_history`` (the same gaps over the prox objective
        at 0 of their v-step, the quantity compared with ``tol``),
        ``mu_history`` (CONESTA), ``converged``, ``time``, ``w`` (final solver
        state per component: the dual variables of the dual method, None for
        CONESTA; see ``w0``), ``y`` (per component, the ``y_k`` of the
        returned pair's v-step, prox form; None for a vanished component).

    Raises
    ------
    ValueError, TypeError
        Bad data, weights, operator, penalties, warm starts or settings; the
        message names the argument.
    """
    n_threads = resolve_n_threads(n_threads)
    op = as_data_operator(X, n_threads=n_threads)
    n_samples, n_features = op.shape
    n_components = check_n_components(n_components, n_samples, n_features)
    l1 = check_nonneg(l1, "l1")
    l2 = check_nonneg(l2, "l2", strict=True)
    tv = check_nonneg(tv, "tv")
    tol = check_nonneg(tol, "tol", strict=True)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    gap_every = check_int(gap_every, "gap_every", minimum=1)
    the_solver = get_solver(solver)
    if init not in ("svd", "random"):
        raise ValueError(f"init must be 'svd' or 'random', got {init!r}.")
    if max_inner_iter is None:
        max_inner_iter = the_solver.default_max_iter
    max_inner_iter = check_int(max_inner_iter, "max_inner_iter", minimum=1)
    if operator is None:
        operator = chain_operator(n_features)
    check_operator(operator, n_features)
    extra = check_penalties(penalties, n_features, the_solver)
    if op.is_constant() if op.mean is not None else op.is_zero():
        check_not_constant(np.zeros(1))  # raises the constant-data error
    rng = check_random_state(random_state)
    if u0 is not None:
        u0 = np.asarray(u0, dtype=np.float64)
        if u0.shape != (n_samples, n_components) or not np.all(np.isfinite(u0)):
            raise ValueError(
                f"u0 must be a finite array of shape ({n_samples}, "
                f"{n_components}), got shape {u0.shape}."
            )
    if w0 is not None and len(w0) != n_components:
        raise ValueError(
            f"w0 must hold one dual vector (or None) per component ({n_components}), got {len(w0)}."
        )
    _check_l2_scale(op, l2)
    return _spca_tv(
        op,
        n_components,
        l2=l2,
        pieces=eq3_pieces(l1, tv, operator, l2, extra),
        solver=the_solver,
        weights_msg=f"l1={l1:.3g}, tv={tv:.3g}",
        tol=tol,
        max_iter=max_iter,
        max_inner_iter=max_inner_iter,
        init=init,
        rng=rng,
        gap_every=gap_every,
        kernels=kernels,
        verbose=verbose,
        u0=u0,
        w0=w0,
        n_threads=n_threads,
    )


#: The path of relative penalties tried by ``alpha_rel="auto"`` (weakest first).
AUTO_ALPHA_REL_PATH = (0.5, 1.0, 2.0, 4.0, 8.0)
#: Above this many features, ``operator=None`` (a 1-D chain) warns.
CHAIN_WARNING_FEATURES = 500


class SPCATV(ClassNamePrefixFeaturesOutMixin, LoadingsTransformerMixin, BaseEstimator):
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
        ``alpha_ = alpha_rel_ * l1_max_`` with ``l1_max_ = max_j ||Xc_j||_2 / N``
        of the centred training data, so the same settings suit maps of any
        scale (``lambda_1 / l1_max_`` is a threshold on the correlation of a
        feature with the component's scores, for features of the largest
        norm). For fixed scores the normalised loadings depend only on
        ``lambda_1`` and ``lambda``; ``lambda_2`` scales them.
    l1_ratio : float, default=0.05
    tv_ratio : float, default=0.1
        ``l1_ratio + tv_ratio < 1``.
    alpha_rel : "auto" or float, default="auto"
        ``alpha`` in units of ``l1_max_``, used when ``alpha`` is None. "auto"
        fits two random halves of the samples along the path
        :data:`AUTO_ALPHA_REL_PATH` (0.5, 1, 2, 4, 8; warm-started) and keeps
        the penalty whose components reproduce best between the halves
        (mean matched absolute correlation, among the penalties with every
        component non-empty and at most half non-zero:
        :func:`neurospca.decomposition.choose_alpha_rel`). The value used is
        ``alpha_rel_``, the path ``auto_path_``; evidence in docs/trust.rst.
    operator : GroupOperator, optional
        The structure, e.g. from :func:`neurospca.tv_from_mask` or
        :func:`neurospca.tv_from_mesh`. Default: a 1-D chain over the features
        in column order (warns above 500 features).
    tol : float, default=1e-3
        Scale-free tolerance of the certified v-step gaps (``rel_gaps_``) and
        of the outer loop.
    max_iter : int, default=100
        Maximum alternations per component.
    solver : {"dual", "conesta"}, default="dual"
    max_inner_iter : int, optional
    init : {"svd", "random"}, default="svd"
    random_state : int, RandomState or None
    verbose : int, default=0
        Print progress when > 0 (also INFO records on the ``"neurospca"``
        logger; when a handler is attached there, nothing is printed).
    warm_start : bool, default=False
        Start from the previous fit's scores and dual variables (same data
        shape), e.g. along a grid of penalties.
    penalties : list of penalty pieces, optional
        Further penalties added to eq. 3 with absolute weights in its units,
        e.g. ``[GraphLaplacian(operator, 0.1)]`` from
        :mod:`neurospca.solvers.penalties` for ``0.1 * v^T D^T D v``
        (see :func:`spca_tv`; only ``solver="dual"`` handles them).
    n_threads : int, optional
        Threads of the v-step kernels and of the data products (see
        :func:`spca_tv`); None: :func:`neurospca.solvers.set_n_threads`'s
        default, else all the cores this process may use.
    stability : "auto" or bool, default="auto"
        Compute ``stability_``, the split-half reproducibility of each
        component: "auto" when ``alpha_rel="auto"`` (free: the halves of the
        chosen penalty), True always (two more fits on halves), False never.
        Components below 0.5 raise a warning.
    method : {"joint", "deflation"}, default="joint"
        "deflation" is the paper's Algorithm 3: component ``k`` is fitted on
        the data minus the components before it, so when regions co-vary
        (atrophy sharing a disease severity) the first component merges them.
        "joint" starts from deflation's fit and then re-fits each component,
        with the same certified v-step, on the data minus all the other
        components, sweeping until the loadings settle (block-coordinate
        descent, as scikit-learn's SparsePCA updates one atom at a time):
        the penalties then separate co-varying regions
        (docs/trust.rst). ``n_sweeps_`` records the sweeps.
    certify_support : bool, default=True
        Certify which loadings are non-zero and which zero
        (``certified_support_``); False skips it (faster; ``certified_*`` None).
    max_sweeps : int, default=50
        Most sweeps of ``method="joint"``; a fit not settled by then warns.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Unit-norm loading vectors (zero rows for vanished components); each
        component's largest-magnitude loading is positive.
    loadings_ : ndarray of shape (n_features, n_components)
        The raw ``v_k`` of eq. 3 (same signs as ``components_``).
    scores_ : ndarray of shape (n_samples, n_components)
        The unit-norm ``u_k`` (signs flipped with the loadings).
    alpha_ : float
        The absolute ``alpha`` used (``alpha``, or ``alpha_rel_ * l1_max_``).
    alpha_rel_ : float
        ``alpha_ / l1_max_``.
    penalty_weights_ : dict
        The absolute weights of eq. 3 actually used: ``{"l1": lambda_1,
        "l2": lambda_2, "tv": lambda}``, plus each extra penalty's name and
        weight.
    auto_path_ : list of dict
        With ``alpha_rel="auto"``: the path points tried (``alpha_rel``,
        ``reproducibility`` per matched pair of half components,
        ``nonzero_fraction`` per component of both halves); else empty.
    stability_ : ndarray of shape (n_components,)
        Split-half reproducibility of each component in [0, 1]: the absolute
        correlation of the two half-sample components matched to it (0 for an
        empty component; NaN when not computed, see ``stability``). Below 0.5
        the component does not reproduce.
    l1_max_ : float
        ``max_j ||Xc_j||_2 / N`` of the centred training data.
    mean_ : ndarray of shape (n_features,)
    singular_values_ : ndarray of shape (n_components,)
        ``d_k ||v_k||``, the rank-one scales for unit loadings.
    dual_gaps_ : ndarray of shape (n_components,)
        Certified v-step gaps of the returned pairs ``(u_k, v_k)`` (``u_k`` =
        ``scores_[:, k]``, ``v_k`` = ``loadings_[:, k]``), in units of the
        objective of eq. 3: ``v_k`` is within ``dual_gaps_[k]`` of the best
        ``v`` for that ``u_k`` (with ``method="joint"``, on the data minus the
        other returned components). The alternation is not certified.
    rel_gaps_ : ndarray of shape (n_components,)
        The same gaps over the v-step's prox objective at 0: compared with
        ``tol``.
    certified_support_ : ndarray of bool, shape (n_components, n_features)
        Loadings certified non-zero, with their sign, in the exact solution
        of their v-step (``|v_j| > sqrt(dual_gaps_[k] / lambda_2)``, the
        strong-convexity radius; :func:`neurospca.solvers.certify_support`).
        Each v-step is first re-solved (warm started) until that radius is
        at most :data:`~neurospca.decomposition.SUPPORT_RESOLUTION` (1 %)
        of the component's peak loading, or until five times the component's
        own solver iterations (at least 200, at most ``max_inner_iter``) are
        spent (dual solver only). Reports, cluster tables and
        ``neurospca fit`` count, draw and cluster these loadings only.
    certified_zeros_ : ndarray of bool, shape (n_components, n_features)
        Loadings certified zero in the exact solution (a gap-safe test); they
        are exactly 0 in ``components_``. No other loading is altered.
    n_uncertain_ : ndarray of int, shape (n_components,)
        Loadings neither certified non-zero nor certified zero (all of them,
        for a vanished component). Most are 0 in ``components_``; the others
        are at most ``support_radius_`` in magnitude.
    support_radius_ : ndarray of shape (n_components,)
        The radius in the units of ``components_``: ``support_radius_[k] *
        ||v_k||`` bounds ``||v_k - v_k*||_2`` (``v_k = loadings_[:, k]``,
        ``v_k*`` the exact v-step solution); NaN for a vanished component.
    support_time_ : ndarray of shape (n_components,)
        Seconds spent re-solving and certifying each component's support
        (included in ``component_times_``).
    rel_gap_history_ : list of list of (int, float)
        Per component, ``(cumulative inner iteration, relative gap)``.
    n_iter_ : int
        Largest number of alternations over the components.
    n_iter_per_component_ : ndarray of shape (n_components,)
    n_inner_iter_ : ndarray of shape (n_components,)
    gap_history_ : list of list of (int, float)
    explained_variance_ : ndarray of shape (n_components,)
        Adjusted variance (QR of the scores, Zou et al. 2006).
    explained_variance_ratio_ : ndarray of shape (n_components,)
    pca_explained_variance_ratio_ : ndarray of shape (n_components,)
        Plain PCA's explained variance ratios of the same centred data (top
        ``n_components``), for comparison.
    n_sweeps_ : int (sweeps of ``method="joint"``; 0 for deflation)
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

    def __init__(
        self,
        n_components=3,
        *,
        alpha=None,
        l1_ratio=0.05,
        tv_ratio=0.1,
        alpha_rel="auto",
        operator=None,
        tol=1e-3,
        max_iter=100,
        solver="dual",
        max_inner_iter=None,
        init="svd",
        random_state=None,
        verbose=0,
        warm_start=False,
        penalties=None,
        n_threads=None,
        method="joint",
        max_sweeps=50,
        stability="auto",
        certify_support=True,
    ):
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
        self.warm_start = warm_start
        self.penalties = penalties
        self.n_threads = n_threads
        self.method = method
        self.max_sweeps = max_sweeps
        self.stability = stability
        self.certify_support = certify_support

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="neither"), None],
        "alpha_rel": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "l1_ratio": [Interval(Real, 0, 1, closed="left")],
        "tv_ratio": [Interval(Real, 0, 1, closed="left")],
        "operator": [GroupOperator, None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions(set(SOLVERS))],
        "max_inner_iter": [Interval(Integral, 1, None, closed="left"), None],
        "init": [StrOptions({"svd", "random"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "penalties": [list, tuple, None],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "method": [StrOptions({"joint", "deflation"})],
        "max_sweeps": [Interval(Integral, 1, None, closed="left")],
        "stability": ["boolean", StrOptions({"auto"})],
        "certify_support": ["boolean"],
    }

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _run(self, Xc, n_components, alpha, u0, w0, checked, from_scores=False):
        """One fit at absolute ``alpha`` (inputs validated); warnings recorded, not shown."""
        operator, extra, solver, max_inner_iter = checked
        l1, l2, tv = _weights(alpha, self.l1_ratio, self.tv_ratio)
        _check_l2_scale(Xc, l2)
        worker = _spca_tv
        if self.method == "joint":
            worker = partial(
                _joint_spca_tv, max_sweeps=self.max_sweeps, from_scores=from_scores, rotate=l1 > 0
            )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            U, V, info = worker(
                Xc,
                n_components,
                l2=l2,
                pieces=eq3_pieces(l1, tv, operator, l2, extra),
                solver=solver,
                weights_msg=f"l1={l1:.3g}, tv={tv:.3g}",
                tol=self.tol,
                max_iter=self.max_iter,
                max_inner_iter=max_inner_iter,
                init=self.init,
                rng=check_random_state(self.random_state),
                gap_every=10,
                kernels="cython",
                verbose=self.verbose,
                u0=u0,
                w0=w0,
                n_threads=Xc.n_threads,
            )
        weights = {"l1": l1, "l2": l2, "tv": tv}
        weights.update((p.name, p.weight) for p in extra)
        return U, V, info, caught, weights

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y=None):
        """Fit the model on ``X`` (n_samples, n_features).

        ``X`` may be an array (float32 kept), a ``numpy.memmap`` or a
        ``dask.array`` chunked by rows: it is never copied, centred or
        converted as a whole (see :func:`spca_tv`). The inputs are validated
        here once; the fit itself runs the private worker of :func:`spca_tv`.

        Parameters
        ----------
        X : array-like, numpy.memmap or dask.array of shape (n_samples, n_features)
            The training data.
        %(y_ignored)s

        Returns
        -------
        SPCATV
            The fitted estimator.

        Raises
        ------
        ValueError, TypeError
            Bad data, parameters, operator or penalties; the message names the
            argument.
        """
        warm = (
            self.warm_start
            and hasattr(self, "scores_")
            and getattr(self, "n_features_in_", None) == np.shape(X)[-1]
        )
        n_threads = resolve_n_threads(self.n_threads)
        X_in = X
        op = validated_data_operator(self, X, reset=True, min_samples=2, n_threads=n_threads)
        X = op
        n_components = check_n_components(self.n_components, *X.shape)
        weights_from_ratios(1.0, self.l1_ratio, self.tv_ratio)  # l1_ratio + tv_ratio < 1
        solver = get_solver(self.solver)
        operator = self.operator
        if operator is None:
            operator = chain_operator(X.shape[1])
        check_operator(operator, X.shape[1])
        extra = check_penalties(self.penalties, X.shape[1], solver)
        max_inner_iter = self.max_inner_iter
        if max_inner_iter is None:
            max_inner_iter = solver.default_max_iter
        checked = (operator, extra, solver, max_inner_iter)
        if self.operator is None and X.shape[1] > CHAIN_WARNING_FEATURES:
            warnings.warn(
                f"operator is None: the TV penalty is a 1-D chain linking feature j to "
                f"feature j+1 in column order, which is spatial structure only if the "
                f"{X.shape[1]} columns are ordered along a line. For brain maps pass "
                "operator=neurospca.tv_from_mask(mask) (volumes) or "
                "neurospca.tv_from_mesh(coords, faces) / tv_from_hemispheres (surfaces).",
                UserWarning,
            )
        t0 = time.perf_counter()
        # implicit centring: X - 1 mean_^T inside the products, never a copy
        self.mean_ = op.stats["mean"].copy()
        op.centre(self.mean_)
        if op.is_constant():
            check_not_constant(np.zeros(1))  # raises the constant-data error
        self.l1_max_ = float(np.sqrt(op.col_sqnorms().max())) / X.shape[0]
        Xc = op
        u0 = w0 = None
        if warm and self.scores_.shape == (X.shape[0], n_components):
            u0 = self.scores_
            w0 = getattr(self, "_duals", None)
            if w0 is not None and (
                getattr(self, "_duals_for", None) != _state_key(self, extra)
                or len(w0) != n_components
            ):
                w0 = None
        halves, path = auto_path(self, X_in, AUTO_ALPHA_REL_PATH)
        if self.alpha is not None or not path:
            alpha = (
                float(self.alpha)
                if self.alpha is not None
                else float(self.alpha_rel) * self.l1_max_
            )
            U, V, info, caught, weights = self._run(Xc, n_components, alpha, u0, w0, checked)
        else:
            alpha, halves, (U, V, info, caught, weights) = auto_fit(
                path,
                lambda a, u: self._run(
                    Xc,
                    n_components,
                    a * self.l1_max_,
                    u,
                    None,
                    checked,
                    from_scores=self.method == "joint" and u is not None,
                ),
                lambda h: scores_of(Xc, h[0]) if self.method == "joint" else u0,
            )
            alpha *= self.l1_max_
        self.auto_path_ = path
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self.alpha_ = float(alpha)
        self.alpha_rel_ = self.alpha_ / self.l1_max_
        self.penalty_weights_ = weights
        # deterministic signs: each component's largest-|loading| positive
        for k in range(V.shape[1]):
            j = int(np.argmax(np.abs(V[:, k])))
            if V[j, k] < 0:
                V[:, k], U[:, k] = -V[:, k], -U[:, k]
                if info["w"][k] is not None:
                    info["w"][k] = -info["w"][k]
        certify_fit(self, Xc, U, V, info, weights, checked)
        norms = np.linalg.norm(V, axis=0)
        safe = np.where(norms > 0, norms, 1.0)
        self.loadings_ = V
        self.components_ = (V / safe).T
        self.scores_ = U
        if self.warm_start:  # solver states for the next warm start (not saved)
            self._duals, self._duals_for = info["w"], _state_key(self, extra)
        else:
            for name in ("_duals", "_duals_for"):
                if hasattr(self, name):
                    delattr(self, name)
        self.singular_values_ = info["d"] * norms
        self.dual_gaps_ = info["gaps"]
        self.rel_gaps_ = info["rel_gaps"]
        self.rel_gap_history_ = info["rel_gap_history"]
        self.n_iter_per_component_ = info["n_iter"]
        self.n_iter_ = int(np.max(info["n_iter"]))
        self.n_inner_iter_ = info["n_inner_iter"]
        self.gap_history_ = info["gap_history"]
        self.mu_history_ = info["mu_history"]
        self.converged_ = info["converged"]
        self.n_sweeps_ = int(info.get("n_sweeps", 0))
        self.component_times_ = info["time"]
        self.explained_variance_, self.explained_variance_ratio_ = _adjusted_variance(
            Xc, self.components_
        )
        self.pca_explained_variance_ratio_ = _pca_variance_ratio(Xc, n_components)
        set_stability(self, X_in, halves)
        self.fit_time_ = time.perf_counter() - t0
        return self

    def score(self, X, y=None):
        """Fraction of the variance of ``X`` explained by the components.

        ``1 - ||Xc - Xc Q^T Q||_F^2 / ||Xc||_F^2`` with ``Xc = X - mean_``
        (training mean) and ``Q`` an orthonormal basis of the loadings' span:
        the held-out criterion of :func:`neurospca.model_selection.select_penalty`
        and the default score of ``GridSearchCV`` / ``cross_val_score``
        (higher is better; compare settings with it together with stability,
        since it alone always prefers the weakest penalty).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        float
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=False)
        X = check_data(X, min_samples=1)
        total = float(np.sum((X - self.mean_) ** 2))
        err = reconstruction_error(X, self.components_, self.mean_) ** 2
        if total == 0.0:
            return 1.0
        return 1.0 - err / total


def _state_key(estimator, extra):
    """What the solver states of a warm start depend on besides the data."""
    return estimator.solver, tuple(p.name for p in extra)
