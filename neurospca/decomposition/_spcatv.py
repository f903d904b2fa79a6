"""SPCA-TV: PCA with l1, l2 and total-variation penalties on the loadings.

:class:`SPCATV` (a scikit-learn estimator with the paper's ``(alpha,
l1_ratio, tv_ratio)`` parametrisation) and, in ``_spcatv_function``,
:func:`spca_tv` (the paper's Algorithm 3 on raw weights) validate their
inputs once and call the private worker
:func:`~neurospca.decomposition._alternation._spca_tv`. Most of this module
is the estimator's docstring (25 parameters and fitted attributes); the fit
is a sequence of short steps, its workers live elsewhere (``fit`` and its
``split_groups`` in ``_split_groups``).

Size: 600+ lines, the estimator's docstring (one attribute, ``split_groups_``,
over the 600 of round 8); the code is split by job already.
"""

import time
import warnings
from functools import partial
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.naming import component_names
from .._utils.validation import check_data, check_n_components, check_not_constant
from ..operators import GroupOperator, chain_operator, check_operator
from ..solvers import SOLVERS, get_solver, resolve_n_threads
from ..solvers.penalties import check_penalties, eq3_pieces
from ._alternation import _adjusted_variance, _check_l2_scale, _pca_variance_ratio, _spca_tv
from ._auto import auto_fit, auto_path, fixed_split, warn_empty_components
from ._base import ComponentsEstimator, Integral, Interval, Real, StrOptions, reconstruction_error
from ._data import validated_data_operator
from ._joint import _joint_spca_tv, kept_scores, returned_signs
from ._spcatv_function import spca_tv
from ._stability import scores_of, set_stability
from ._support import certify_fit
from ._warm import start_state
from ._weights import _weights, weights_from_ratios

__all__ = ["SPCATV", "spca_tv"]


#: Above this many features, ``operator=None`` (a 1-D chain) warns.
CHAIN_WARNING_FEATURES = 500


class SPCATV(ComponentsEstimator):
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
    l1_ratio : "auto" or float, default="auto"
    tv_ratio : "auto" or float, default="auto"
        The split of the penalty, ``l1_ratio + tv_ratio < 1``. "auto" (both)
        with ``alpha_rel="auto"``: searched together with ``alpha_rel`` (see
        there); otherwise "auto" is the documented fixed default
        :data:`~neurospca.decomposition.DEFAULT_SPLIT` (``l1_ratio = 0.05``,
        ``tv_ratio = 0.1``). A number fixes it (not searched). The split used
        is ``l1_ratio_``, ``tv_ratio_``.
    alpha_rel : "auto" or float, default="auto"
        ``alpha`` in units of ``l1_max_``, used when ``alpha`` is None. "auto"
        fits two random halves of the samples along a path of ``alpha_rel``
        for each split of the penalty searched
        (:data:`~neurospca.decomposition.AUTO_SPLITS`: ``(0.05, 0.1)`` along
        0.5 ... 8 and ``(0.3, 0.3)`` along 0.125 ... 4 when ``l1_ratio`` and
        ``tv_ratio`` are "auto"; the one fixed split along 0.5 ... 8
        otherwise; weakest first, warm-started, stopping after a point with an
        empty component), and keeps the least shrunk point whose components
        reproduce between the halves within one standard error of the best
        (mean matched absolute correlation, among the points with every
        component non-empty and at most half non-zero; the sparse split only if
        more reproducible beyond that error and
        :data:`~neurospca.decomposition.SPLIT_MARGIN`:
        :func:`neurospca.decomposition.choose_point`); the full data are
        fitted there and, when it is not the least shrunk admissible point of
        the default split, there too, the latter kept when the two fits'
        components agree (matched absolute correlation at least 0.8); a
        component that collapses sends the fit to weaker points of its split
        (issue 20 round 6). The values used are
        ``alpha_rel_``, ``l1_ratio_``, ``tv_ratio_``, the points tried
        ``auto_path_``; evidence in docs/trust.rst.
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
        Compute ``stability_``, the reproducibility of each component: "auto"
        when ``alpha_rel="auto"``, True always, False never (under "auto": the
        chosen point's halves, refitted for a low component; else two fits on
        90 % of the samples; and 3-9 rank-one fits of permuted data).
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
    l1_ratio_, tv_ratio_ : float
        The split of the penalty used (chosen by ``alpha_rel="auto"`` when
        ``l1_ratio`` and ``tv_ratio`` are "auto", else the given or default one).
    penalty_weights_ : dict
        The absolute weights of eq. 3 actually used: ``{"l1": lambda_1,
        "l2": lambda_2, "tv": lambda}``, plus each extra penalty's name and
        weight.
    auto_path_ : list of dict
        With ``alpha_rel="auto"``: the path points tried, split by split
        (``alpha_rel``, ``l1_ratio``, ``tv_ratio``,
        ``reproducibility`` per matched pair of half components,
        ``nonzero_fraction`` per component of both halves); else empty.
    stability_ : ndarray of shape (n_components,)
        Reproducibility of each component in [0, 1] (docs/trust.rst). Under
        "auto": the absolute correlation of the two split-half components of
        the chosen point matched to component ``k`` (the halves refitted from
        the full fit before it is flagged; for a series, rows in order alike,
        halves of contiguous blocks fitted cold, the mean of three draws). At
        a fixed penalty: two cold fits on
        90 % of the samples sharing 80 % (blocks of 10 % of the rows), their
        matched correlation ``r`` corrected for the shared rows,
        ``(r - c) / (1 - c)``, ``c = 8 / 9``; out of core and below 20 samples,
        two half fits. 0 for an empty component and (in memory) for one whose
        singular value is not above that of a fit of the column-permuted data;
        NaN when not computed. Below 0.5: not reproduced. ``fit(X,
        split_groups=...)`` keeps groups of rows (a time series' blocks, a
        subject's sessions) in one half or subsample.
    split_groups_ : str
        How the halves were drawn: "random rows", "<n> contiguous blocks of rows"
        or "<n> groups of rows kept whole".
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
        spent (dual solver only; joint fits: on ``support_others_``, its own gap,
        to 0.3 %). Reports, cluster tables and the CLI use these loadings only.
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
    support_others_ : ndarray of shape (n_features, n_components) or None
        Joint fits: each certified v-step is on ``Xc - sum_{j != k} u_j s_j^T``,
        ``s_j = support_others_[:, j]`` (docs/trust.rst). None for deflation.
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
        l1_ratio="auto",
        tv_ratio="auto",
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

    _resamples_rows = True  # fit(X, split_groups=...): its halves keep row groups whole

    _parameter_constraints = {
        **ComponentsEstimator._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither"), None],
        "alpha_rel": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "l1_ratio": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "tv_ratio": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "operator": [GroupOperator, None],
        "solver": [StrOptions(set(SOLVERS))],
        "max_inner_iter": [Interval(Integral, 1, None, closed="left"), None],
        "init": [StrOptions({"svd", "random"})],
        "warm_start": ["boolean"],
        "penalties": [list, tuple, None],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "method": [StrOptions({"joint", "deflation"})],
        "max_sweeps": [Interval(Integral, 1, None, closed="left")],
        "stability": ["boolean", StrOptions({"auto"})],
        "certify_support": ["boolean"],
    }

    def _settings(self, n_features):
        """The settings with their defaults filled in: read here only.

        Checks ``l1_ratio + tv_ratio < 1`` (the one check of it), fills
        ``operator=None`` (a chain, warned about above
        :data:`CHAIN_WARNING_FEATURES` features) and ``max_inner_iter=None``
        (the solver's default), and checks the extra penalties.

        Returns
        -------
        Settings
            ``(operator, extra, solver, max_inner_iter)``.
        """
        weights_from_ratios(1.0, *fixed_split(self.l1_ratio, self.tv_ratio))  # sum < 1
        solver = get_solver(self.solver)
        operator = self.operator
        if operator is None:
            operator = chain_operator(n_features)
            if n_features > CHAIN_WARNING_FEATURES:
                warnings.warn(
                    f"operator is None: the TV penalty is a 1-D chain linking feature j to "
                    f"feature j+1 in column order, which is spatial structure only if the "
                    f"{n_features} columns are ordered along a line. For brain maps pass "
                    "operator=neurospca.tv_from_mask(mask) (volumes) or "
                    "neurospca.tv_from_mesh(coords, faces) / tv_from_hemispheres (surfaces).",
                    UserWarning,
                    stacklevel=5,  # _settings, _fit, fit, the fit context, the caller
                )
        check_operator(operator, n_features)
        extra = check_penalties(self.penalties, n_features, solver)
        max_inner_iter = self.max_inner_iter
        if max_inner_iter is None:
            max_inner_iter = solver.default_max_iter
        return Settings(operator, extra, solver, max_inner_iter)

    def _run(self, Xc, n_components, alpha, u0, w0, checked, from_scores=False, split=None):
        """One fit at absolute ``alpha`` and ``split`` = ``(l1_ratio, tv_ratio)``
        (default: the fixed split; inputs validated); warnings recorded, not shown."""
        operator, extra, solver, max_inner_iter = checked
        l1_ratio, tv_ratio = split or fixed_split(self.l1_ratio, self.tv_ratio)
        l1, l2, tv = _weights(alpha, l1_ratio, tv_ratio)
        _check_l2_scale(Xc, l2)
        worker = _spca_tv
        if self.method == "joint":
            worker = partial(
                _joint_spca_tv,
                max_sweeps=self.max_sweeps,
                from_scores=from_scores,
                rotate=l1 > 0,
                search=not self.warm_start,  # a continuation follows its previous fit
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

    def _fit(self, X):
        """The fit's steps: data, settings, centring, warm start, penalty, results.

        ``X`` may be an array (float32 kept), a ``numpy.memmap`` or a
        ``dask.array`` chunked by rows: it is never copied, centred or
        converted as a whole (see :func:`spca_tv`).
        """
        warm = (
            self.warm_start
            and hasattr(self, "scores_")
            and getattr(self, "n_features_in_", None) == np.shape(X)[-1]
        )
        n_threads = resolve_n_threads(self.n_threads)
        op = self._data_operator(X, n_threads)
        n_components = check_n_components(self.n_components, *op.shape)
        settings = self._settings(op.shape[1])
        t0 = time.perf_counter()
        self._centre(op)
        u0, w0 = self._warm_state(warm, op.shape[0], n_components, settings.extra)
        halves, fit = self._fit_penalty(X, op, n_components, u0, w0, settings)
        U, V, info, weights = fit
        _flip_signs(U, V, info)
        certify_fit(self, op, U, V, info, weights, settings)
        self._set_components(U, V, info, settings.extra)
        self._set_diagnostics(op, info, n_components)
        set_stability(self, X, halves)
        if getattr(halves, "dense_map", None) is not None:  # (issue 20 round 16; not saved)
            self._dense_map = halves.dense_map
        if self.auto_path_ and not getattr(self, "_half_fit", False):
            warn_empty_components(self)
        if self.solver == "conesta" and not getattr(self, "_half_fit", False):
            _warn_unconverged(self)
        self.fit_time_ = time.perf_counter() - t0

    def _data_operator(self, X, n_threads):
        """The scanned data; a split half of ``alpha_rel="auto"`` (``_half_fit``)
        keeps its operator across the path's fits of the same array (its scan,
        mean and N x N Gram matrix are the same at every point; measured, issue
        20 round 5: the scan and the Gram matrix were about 5 % of a default fit's
        CPU time on fsaverage5)."""
        kept = getattr(self, "_half_op", None) if getattr(self, "_half_fit", False) else None
        if kept is not None and kept[0] is X and kept[1].n_threads == n_threads:
            return kept[1]
        op = validated_data_operator(self, X, reset=True, min_samples=2, n_threads=n_threads)
        if getattr(self, "_half_fit", False):
            self._half_op = (X, op)
        return op

    def _centre(self, op):
        """Implicit centring: ``X - 1 mean_^T`` inside the products, never a copy."""
        self.mean_ = op.stats["mean"].copy()
        op.centre(self.mean_)
        if op.is_constant():
            check_not_constant(np.zeros(1))  # raises the constant-data error
        self.l1_max_ = float(np.sqrt(op.col_sqnorms().max())) / op.shape[0]

    def _warm_state(self, warm, n_samples, n_components, extra):
        """``(u0, w0)``: the previous fit's scores and solver states, or Nones."""
        if not (warm and self.scores_.shape == (n_samples, n_components)):
            return None, None
        w0 = getattr(self, "_duals", None)
        if w0 is not None and (
            getattr(self, "_duals_for", None) != _state_key(self, extra) or len(w0) != n_components
        ):
            w0 = None
        return self.scores_, w0

    def _fit_penalty(self, X, op, n_components, u0, w0, settings):
        """The fit at ``alpha`` (absolute, or ``alpha_rel`` times ``l1_max_``), or
        along the ``alpha_rel="auto"`` path; sets ``alpha_``, ``alpha_rel_``,
        ``l1_ratio_``, ``tv_ratio_``, ``auto_path_`` and ``penalty_weights_`` and
        replays the fit's warnings.

        Returns
        -------
        halves : tuple or None
            The split halves' components at the chosen penalty.
        fit : tuple
            ``(U, V, info, weights)``.
        """
        halves, path = auto_path(self, X)
        split = fixed_split(self.l1_ratio, self.tv_ratio)
        if self.alpha is not None or not path:
            alpha = (
                float(self.alpha)
                if self.alpha is not None
                else float(self.alpha_rel) * self.l1_max_
            )
            u0, from_scores = start_state(self, op, u0)  # start_from's components, if any
            U, V, info, caught, weights = self._run(
                op, n_components, alpha, u0, w0, settings, from_scores=from_scores
            )
        else:
            point, halves, (U, V, info, caught, weights) = auto_fit(
                path,
                lambda p, u: self._run(
                    op,
                    n_components,
                    p["alpha_rel"] * self.l1_max_,
                    u,
                    None,
                    settings,
                    from_scores=self.method == "joint" and u is not None,
                    split=(p["l1_ratio"], p["tv_ratio"]),
                ),
                lambda h: scores_of(op, h[0]) if self.method == "joint" else u0,
            )
            alpha = point["alpha_rel"] * self.l1_max_
            split = (point["l1_ratio"], point["tv_ratio"])
        self.auto_path_ = path
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self.alpha_ = float(alpha)
        self.alpha_rel_ = self.alpha_ / self.l1_max_
        self.l1_ratio_, self.tv_ratio_ = float(split[0]), float(split[1])
        self.penalty_weights_ = weights
        return halves, (U, V, info, weights)

    def _set_components(self, U, V, info, extra):
        """``components_`` (unit rows), ``loadings_``, ``scores_`` and the
        solver states kept for a warm start."""
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

    def _set_diagnostics(self, op, info, n_components):
        """Gaps, iterations, convergence and explained variance (None for the
        split halves of ``alpha_rel="auto"``, ``_half_fit``, whose components
        only are used: the PCA variance ratio's N x N Gram matrix was about 5 %
        of a default fit's CPU time, issue 20 round 5)."""
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
        if getattr(self, "_half_fit", False):  # a split half of alpha_rel="auto": not needed
            for name in (
                "explained_variance",
                "explained_variance_ratio",
                "pca_explained_variance_ratio",
            ):
                setattr(self, name + "_", None)
            return
        self.explained_variance_, self.explained_variance_ratio_ = _adjusted_variance(
            op, self.components_, kept_scores(self.loadings_, info.get("xv"))
        )
        self.pca_explained_variance_ratio_ = _pca_variance_ratio(op, n_components)

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


class Settings(NamedTuple):
    """SPCATV's settings with their defaults filled in (:meth:`SPCATV._settings`)."""

    operator: GroupOperator
    extra: list
    solver: object
    max_inner_iter: int


def _warn_unconverged(model):
    """A ``ConvergenceWarning`` naming the non-empty components whose relative
    gap ended above ``tol`` (``converged_`` False): with ``solver="conesta"`` the
    joint fit's sweeps can end there without one (issue 20 round 19)."""
    nonzero = np.any(model.components_ != 0, axis=1)
    short = [int(k) for k in np.flatnonzero(nonzero) if not model.converged_[k]]
    if not short:
        return
    gaps = ", ".join(f"{model.rel_gaps_[k]:.3g}" for k in short)
    warnings.warn(
        f"solver='conesta': {component_names(short)} ended with relative "
        f"gaps {gaps} above tol={model.tol:g} (converged_ False). Their gaps still bound "
        "the suboptimality, but their supports are not certified (certified_support_ "
        "may be empty, and the report then draws nothing). solver='dual' (the default) "
        "reaches tol, or method='deflation' runs CONESTA to tol one component at a time.",
        ConvergenceWarning,
        stacklevel=3,
    )


def _flip_signs(U, V, info):
    """Deterministic signs, in place: each component's largest-|loading| positive
    (:func:`~neurospca.decomposition._joint.returned_signs`)."""
    for k, sign in enumerate(returned_signs(V)):
        if sign < 0:
            V[:, k], U[:, k] = -V[:, k], -U[:, k]
            if info["w"][k] is not None:
                info["w"][k] = -info["w"][k]


def _state_key(estimator, extra):
    """What the solver states of a warm start depend on besides the data."""
    return estimator.solver, tuple(p.name for p in extra)
