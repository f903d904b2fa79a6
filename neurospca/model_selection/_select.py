"""Choosing SPCA-TV's penalties, scale and split, by evidence (issues 12 and 20).

:func:`select_penalty` searches the relative penalty ``alpha_rel`` AND the
split of the penalty ``(l1_ratio, tv_ratio)``, warm-started along
``alpha_rel`` within each split, on an array or, through an ``ImageSPCATV``,
on the images it takes. The default rule, ``"reproducibility"``, is the
criterion of ``SPCATV(alpha_rel="auto")`` (split-half matched absolute
correlation, ``_halves``), applied since issue 20 round 8 to the model each
grid point would return (``criterion="returned"``, ``_returned``); the K-fold
rules of issue 12 (``_folds``) are kept by name. It returns a
:class:`PenaltySelection`; :func:`one_se_refit` is the one-standard-error
rule as a ``refit`` callable for scikit-learn's ``GridSearchCV``.

Size: 600+ lines: :func:`select_penalty`'s docstring (one argument per way to
give the data and the search: ``split_groups`` since issue 20 round 10) and
:class:`PenaltySelection`'s table; the searches live in ``_halves``,
``_returned`` and ``_folds``.
"""

import logging

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state

from .._utils.validation import check_int, check_matrix
from ..decomposition import AUTO_SPLITS, fixed_split, row_groups, weights_from_ratios
from ._default import default_row, fit_default, prefer_default, refit_from, refit_start
from ._folds import FOLD_RULES, STABLE_TOLERANCE, _choose, _paired_se, fold_search, fold_stability
from ._groups import search_groups
from ._halves import (
    _say,
    choose_reproducible,
    chosen_stability,
    default_path_starts,
    reproducibility_search,
)
from ._metrics import check_sparsity_rule
from ._returned import default_n_splits, run_returned

logger = logging.getLogger("neurospca")

__all__ = [
    "select_penalty",
    "PenaltySelection",
    "one_se_refit",
    "DEFAULT_ALPHA_REL_GRID",
    "SELECTION_RULES",
    "STABLE_TOLERANCE",
    "REPRODUCIBILITY_TOLERANCE",
    "_choose",
    "choose_reproducible",
    "default_path_starts",
]

#: Default grid of :func:`select_penalty` (relative penalties, weakest first).
DEFAULT_ALPHA_REL_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
#: The rules of :func:`select_penalty` (the default first).
SELECTION_RULES = ("reproducibility",) + FOLD_RULES
#: The sparser splits ``(l1_ratio, tv_ratio)`` searched besides the estimator's
#: own: with TV (SPCA-TV), and without (ElasticNet PCA, ``tv_ratio=0``).
SPARSER_SPLITS = ((0.2, 0.2), (0.5, 0.3))
SPARSER_SPLITS_NO_TV = ((0.2, 0.0), (0.5, 0.0))
#: ``rule="reproducibility"`` with ``tolerance=REPRODUCIBILITY_TOLERANCE`` (the
#: default before issue 20 round 6): admissible points whose mean
#: reproducibility is within this of the most reproducible one are near-ties,
#: decided by the held-out score. The default is now ``tolerance=None``, the
#: default fit's rule (:func:`choose_reproducible`).
REPRODUCIBILITY_TOLERANCE = 0.01


class PenaltySelection:
    """What :func:`select_penalty` returns.

    Parameters
    ----------
    **kwargs
        The attributes below, set by :func:`select_penalty` (this class is a
        plain record; it is not meant to be built by hand).

    Attributes
    ----------
    best_params_ : dict
        The chosen parameters: ``alpha`` (None), ``alpha_rel``, ``l1_ratio``,
        ``tv_ratio``.
    best_index_ : int
    default_index_ : int or None
        Rule ``"reproducibility"`` with ``keep_default``: the row of the
        estimator's own default fit's point (None if not on the grid or not
        fitted); the table marks it ``d`` when it is not the chosen row.
    results_ : list of dict
        One per grid point (per split, weakest penalty first): ``params``,
        ``alpha_rel``, ``l1_ratio``, ``tv_ratio``, ``mean_score`` /
        ``std_score`` (held-out score), ``zero_fraction``, ``support``
        (mean non-zero fraction), ``n_empty``, ``mean_fit_time``, with
        ``truth`` ``mse`` and ``dice_truth``. Rule ``"reproducibility"``:
        ``reproducibility`` (mean split-half matched absolute correlation),
        ``reproducibility_min`` (of the worst component),
        ``reproducibility_per_component``, ``nonzero_fraction``,
        ``admissible``; criterion ``"returned"``, on the rows whose returned
        model was fitted: ``returned_stability`` (mean),
        ``returned_per_component``, ``returned_admissible``,
        ``returned_heldout`` (held-out variance explained and its floor,
        ``_heldout``) and ``returned_explained`` (the first), and with
        ``truth`` ``returned_mse`` / ``returned_dice`` (of that model), and
        ``tied`` (issue 20 round 11: True where that model's stability and
        held-out variance do not separate from the kept model's, so the data
        do not choose between the two; ``_returned.mark_ties``).
        Issue 20 round 15: when the default fit reproduces so well that no
        model can beat it (mean 0.95 or more), only the default's split up
        to its point is walked and only its weaker points are judged
        (``_default_first``); a weaker row whose subsample stability is
        already below the default's at some rank keeps that upper bound as
        ``returned_bound`` (its ``returned_stability`` is nan).
        K-fold rules: ``fold_scores``, ``stability`` and
        ``stability_corrected`` (Dice across folds),
        ``zero_fraction_per_component``, ``passes_sparsity``,
        ``within_one_se``.
    rule : str
    component_stability_ : ndarray of shape (n_components,)
        Per component of ``best_estimator_``: split-half matched absolute
        correlation (rule ``"reproducibility"``, as ``SPCATV.stability_``), or
        mean pairwise Dice across the fold fits (K-fold rules).
    best_estimator_ : estimator or None
        The estimator given (SPCATV or ImageSPCATV), refitted on all the data
        with ``best_params_`` (None if ``refit=False``); with rule
        ``"reproducibility"`` its ``stability_`` is ``component_stability_``.
    fold_components_ : list of ndarray
        K-fold rules: the chosen setting's components on each fold. Rule
        ``"reproducibility"``: the two halves' components of each split.
    """

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __repr__(self):
        return (
            f"PenaltySelection(rule={self.rule!r}, best_params_={self.best_params_!r}, "
            f"n_settings={len(self.results_)})"
        )

    def table(self, float_format="{:.4g}"):
        """The results as aligned plain text (the chosen row marked ``*``).

        Parameters
        ----------
        float_format : str, default="{:.4g}"
            Format of the floating-point cells (:meth:`str.format` syntax).

        Returns
        -------
        str
            One line per grid point under a header: ``alpha_rel``,
            ``l1_ratio``, ``tv_ratio``, the rule's stability (``repro`` and
            ``repro_min``, or ``stability`` and ``corrected``), ``support``,
            ``empty``, held-out ``score``, ``mse`` / ``dice_truth`` with a
            truth; criterion ``"returned"``: ``returned`` (the returned
            model's reproducibility, ``nan`` where it was not fitted),
            ``heldout`` (the held-out variance its halves explain, issue 20
            round 10) and, with a truth, its ``ret_mse`` / ``ret_dice``;
            ``tied`` (issue 20 round 11): ``yes`` where the returned model's
            evidence does not separate from the kept model's (``-``: not
            judged).
        """
        if self.rule == "reproducibility":
            keys = ["reproducibility", "reproducibility_min"]
            names = ["repro", "repro_min"]
        else:
            keys, names = ["stability", "stability_corrected"], ["stability", "corrected"]
        keys = ["alpha_rel", "l1_ratio", "tv_ratio"] + keys + ["support", "n_empty", "mean_score"]
        names = ["alpha_rel", "l1_ratio", "tv_ratio"] + names + ["support", "empty", "score"]
        if "mse" in self.results_[0]:
            keys, names = keys + ["mse", "dice_truth"], names + ["mse", "dice_truth"]
        if any("returned_stability" in r for r in self.results_):
            keys += ["returned_stability", "returned_explained"]
            names += ["returned", "heldout"]
            if "mse" in self.results_[0]:
                keys += ["returned_mse", "returned_dice"]
                names += ["ret_mse", "ret_dice"]
        if any("tied" in r for r in self.results_):
            keys, names = keys + ["tied"], names + ["tied"]
        lines = ["  " + "  ".join(f"{c:>10s}" for c in names)]
        for i, r in enumerate(self.results_):
            values = [r.get(k, float("nan")) for k in keys]
            if "tied" in keys:
                values[-1] = {True: "yes", False: "no"}.get(r.get("tied"), "-")
            cells = [
                f"{float_format.format(v):>10s}" if isinstance(v, float) else f"{v!s:>10s}"
                for v in values
            ]
            mark = "*" if i == self.best_index_ else "d" if i == self.default_index_ else " "
            lines.append(mark + " " + "  ".join(cells))
        return "\n".join(lines)


def _check_grid(alpha_rel):
    """The relative penalties, unique and weakest first."""
    try:
        values = np.atleast_1d(np.asarray(alpha_rel, dtype=np.float64))
    except (TypeError, ValueError):
        values = np.array([np.nan])
    if (
        values.ndim != 1
        or values.size == 0
        or not np.all(np.isfinite(values))
        or np.any(values <= 0)
    ):
        raise ValueError(
            f"alpha_rel must be a non-empty sequence of positive floats, got {alpha_rel!r}."
        )
    return np.unique(values)


def _check_splits(splits, estimator, rule):
    """The ``(l1_ratio, tv_ratio)`` pairs: the given ones, or the estimator's own
    (first) then the sparser defaults (the K-fold rules: its own only)."""
    params = estimator.get_params()
    ratios = params["l1_ratio"], params["tv_ratio"]
    if all(isinstance(r, str) for r in ratios):  # "auto": the splits the default fit searches
        own = [tuple(split) for split, _ in AUTO_SPLITS]
    else:
        own = [fixed_split(*ratios)]
    if splits is None:
        if rule != "reproducibility":
            return own[:1]
        extra = SPARSER_SPLITS if own[0][1] > 0 else SPARSER_SPLITS_NO_TV
        return sorted(set(own + [s for s in extra if s[0] > own[0][0]]))
    try:
        pairs = [(float(a), float(b)) for a, b in splits]
    except (TypeError, ValueError):
        raise ValueError(
            f"splits must be a sequence of (l1_ratio, tv_ratio) pairs, got {splits!r}."
        ) from None
    if not pairs:
        raise ValueError("splits must hold at least one (l1_ratio, tv_ratio) pair, got none.")
    for l1_ratio, tv_ratio in pairs:
        try:
            weights_from_ratios(1.0, l1_ratio, tv_ratio)
        except ValueError as exc:
            raise ValueError(f"splits: ({l1_ratio:g}, {tv_ratio:g}): {exc}") from None
    return list(dict.fromkeys(pairs))


def _check_estimator(estimator):
    """``"image"`` for an ImageSPCATV-like estimator (a ``prepare`` method), else
    ``"matrix"``; TypeError for anything without the penalty parameters."""
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    if not hasattr(estimator, "fit") or not {"alpha_rel", "l1_ratio", "tv_ratio"} <= set(params):
        raise TypeError(
            f"estimator must be an SPCATV or ImageSPCATV (parameters alpha_rel, "
            f"l1_ratio, tv_ratio), got {type(estimator).__name__}."
        )
    return "image" if callable(getattr(estimator, "prepare", None)) else "matrix"


def _data(estimator, kind, X, confounds):
    """The data matrix and the SPCATV to select on it."""
    if kind == "image":  # masked once, as ImageSPCATV.fit would
        return clone(estimator).prepare(X, confounds=confounds)
    if confounds is not None:
        raise ValueError(
            "confounds: only with an ImageSPCATV estimator (its masker "
            "regresses them out); regress them out of X first."
        )
    try:
        return check_matrix(X, "X"), estimator
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ValueError) and "X " in str(exc):
            raise
        raise TypeError(
            f"X must be a numeric (n_samples, n_features) array for "
            f"{type(estimator).__name__}; for images (NIfTI, SurfaceImage) pass "
            f"an ImageSPCATV as estimator. ({exc})"
        ) from None


def _check_tolerance(tolerance):
    """None, or a finite float in [0, 1)."""
    if tolerance is None:
        return None
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float, np.number))
        or not 0 <= tolerance < 1
    ):
        raise ValueError(f"tolerance must be a number in [0, 1), got {tolerance!r}.")
    return float(tolerance)


#: How ``rule="reproducibility"`` (``tolerance=None``) judges a grid point: the
#: model it would return (the default, issue 20 round 8), or its halves.
CRITERIA = ("returned", "halves")


def _check_criterion(criterion):
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}.")
    return criterion


def _seeds(random_state, n_splits):
    """One integer seed per random split of the samples."""
    n_splits = check_int(n_splits, "n_splits", minimum=1)
    rng = check_random_state(random_state)
    return [int(s) for s in rng.randint(np.iinfo(np.int32).max, size=n_splits)]


def select_penalty(
    estimator,
    X,
    *,
    alpha_rel=DEFAULT_ALPHA_REL_GRID,
    splits=None,
    rule="reproducibility",
    n_splits=None,
    tolerance=None,
    confounds=None,
    cv=5,
    n_jobs=None,
    random_state=None,
    refit=True,
    truth=None,
    verbose=0,
    min_zero_fraction=0.5,
    sparse_indices=(1, 2),
    keep_default=True,
    criterion="returned",
    split_groups="auto",
):
    """Choose SPCA-TV's penalties, scale AND split, by the reproducibility of the components.

    Length: the two rules' searches, the default point and the refit, in order.

    For each split of the penalty ``(l1_ratio, tv_ratio)`` in ``splits``, the
    grid of relative penalties ``alpha_rel`` is fitted weakest first, each fit
    warm-started from the previous one. With the default rule,
    ``"reproducibility"`` (the criterion of ``SPCATV(alpha_rel="auto")``), two
    random halves of the samples are fitted
    (:func:`neurospca.decomposition.fit_halves`), ``n_splits`` times with
    different halves, and each point gets the matched absolute correlation of
    the halves' components (mean over components and splits; ``min``: the
    worst component), their support, their empty components and the held-out
    score of each half's components on the other half. The chosen point is
    the default fit's (:func:`neurospca.decomposition.choose_point`, see
    :func:`choose_reproducible`): among the admissible points (every component
    of every half non-empty and at most half non-zero), within each split the
    least shrunk one whose reproducibility is within the standard error of the
    split's most reproducible point, and the estimator's own split unless
    another split is more reproducible by more than the margin and the error.
    The default fit's own path is a subset of this search.

    The K-fold rules of issue 12 (held-out score and Dice stability across
    ``cv`` folds) are kept by name: ``"weakest_stable"`` (the former
    default), ``"one_se_stability"``, ``"stability"``, ``"one_se"``,
    ``"sparsity"``, ``"score"`` (see docs/model_selection.rst); with them
    ``splits`` defaults to the estimator's own split.

    Parameters
    ----------
    estimator : SPCATV or ImageSPCATV
        With its ``operator`` and other settings (SPCATV), or its mask,
        masker settings and estimator settings (ImageSPCATV: the images are
        masked once as :meth:`ImageSPCATV.fit` would, through its
        ``prepare``); ``alpha`` is set to None, ``alpha_rel``, ``l1_ratio``
        and ``tv_ratio`` to each grid point.
    X : array-like of shape (n_samples, n_features), or images
        A matrix for an SPCATV; what :meth:`ImageSPCATV.fit` takes for an
        ImageSPCATV (a 4-D NIfTI, a list or glob of 3-D NIfTI, a
        SurfaceImage).
    alpha_rel : sequence of float, default=(0.25, 0.5, 1, 2, 4, 8)
        Relative penalties (``alpha_ = alpha_rel * l1_max_``).
    splits : sequence of (float, float), optional
        ``(l1_ratio, tv_ratio)`` pairs. Default: the estimator's own (with
        ``l1_ratio = tv_ratio = "auto"``, the splits its default fit searches,
        :data:`neurospca.decomposition.AUTO_SPLITS`: (0.05, 0.1) and
        (0.3, 0.3)) and the sparser (0.2, 0.2) and (0.5, 0.3) (without TV,
        ``tv_ratio=0``: (0.2, 0) and (0.5, 0)) whose ``l1_ratio`` is larger
        than its own, in increasing ``l1_ratio``; the K-fold rules: its own
        only (with "auto", the documented default (0.05, 0.1)).
    rule : str, default="reproducibility"
        One of :data:`SELECTION_RULES`.
    n_splits : int, optional
        Random splits of the samples into halves (``"reproducibility"``);
        each costs two fits per grid point. None: 1 under
        ``criterion="returned"`` (the halves walk the grid and start the
        returned models, from the first split), else 2.
    tolerance : float or None, default=None
        ``"reproducibility"``: None is the default fit's rule (above). A
        number is the rule before issue 20 round 6: among the admissible
        points whose mean reproducibility is within ``tolerance`` of the most
        reproducible one's, the one with the best held-out score (0: the most
        reproducible).
    confounds : array-like or path, optional
        With an ImageSPCATV: regressed out by its masker, as in its ``fit``.
    cv : int, cross-validation splitter or iterable, default=5
        K-fold rules only. An int is a shuffled ``KFold`` seeded by
        ``random_state``.
    n_jobs : int, optional
        K-fold rules: folds run in parallel through joblib.
    random_state : int, RandomState or None
        Seeds the random halves (and the folds).
    refit : bool, default=True
        Refit the chosen setting on all the data (``best_estimator_``).
    truth : array-like of shape (n_true, n_features), optional
        Known patterns (simulations, masked columns): adds ``mse`` and
        ``dice_truth`` (mean over the half or fold fits).
    verbose : int, default=0
        When > 0, print one line per grid point as each split's path is
        done, then the table (also INFO records on the ``"neurospca"``
        logger; nothing is printed when a handler is attached there).
    min_zero_fraction : float, default=0.5
    sparse_indices : sequence of int, default=(1, 2)
        For ``rule="sparsity"``.
    keep_default : bool, default=True
        Rule ``"reproducibility"`` with ``tolerance=None``: also fit the estimator's own default
        (``alpha_rel="auto"``) and keep its point unless the chosen point is
        more reproducible by more than the standard error of the difference
        (so the search never trades the default for a point it cannot tell
        apart from it; ``default_index_``). The refit starts from the default
        fit's components when its point is kept, else from the chosen point's
        first half fit, as the default fit starts (issue 20 round 7).
    criterion : {"returned", "halves"}, default="returned"
        Rule ``"reproducibility"`` with ``tolerance=None``: how a grid point
        is judged. ``"returned"`` (issue 20 round 8): by the model that would
        be returned there, the full-sample fit started from the point's first
        half fit, and its ``stability_`` measure (two overlapping subsamples
        started from its components; ``returned_stability`` in
        ``results_``), with the same rule and the same ``keep_default``
        comparison (the default fit scored the same way); the halves, which
        lose a weak pattern the full fit keeps, only walk the grid. Models
        are compared paired by rank of their components' scores (issue 20
        round 9, ``_returned.beats``); the search goes split by split, the
        other splits only when the own split's best model reproduces below
        0.95 (docs/model_selection.rst). The default fit is judged first
        (issue 20 round 15): when its mean returned stability is 0.95 or
        more, no model can beat it by the switch margin, so the stronger
        points and the other splits are not fitted and only the weaker
        points of its split are judged (the choice the full search makes,
        at about half its cost). Round 16: with TV each evidence fit
        (subsamples, halves) is first a continuation from the judged model's
        components (the joint fit's sweeps from that start only), kept when
        it captures at least half the variance the start captures on its rows
        (``_continuation``), else made with the competing starts as before.
        Rounds 17-18, without TV: the evidence fits and the judged points'
        full fits continue the search's earlier fits of the same split, each
        kept when it holds rank by rank (a full fit also when its objective
        is as low), and the walks of equal l1 weight are shared
        (docs/model_selection.rst).
        ``"halves"``: by the halves' reproducibility (rounds 6-7).
    split_groups : "auto", None, "blocks", int or array-like, default="auto"
        Rows that belong together, kept in one half by every split the search
        draws (its walk, the returned models' stability and held-out
        variance, the default fit) and by the refit, as
        ``SPCATV.fit(X, split_groups=...)`` keeps them (docs/trust.rst).
        "auto": what :meth:`ImageSPCATV.fit` would use for these images
        (contiguous blocks for a single 4-D NIfTI time series), None for an
        array. Rule ``"reproducibility"`` only (the K-fold rules take a
        group-aware ``cv``).

    Returns
    -------
    PenaltySelection
        ``table()`` prints the search.

    Raises
    ------
    ValueError
        Unknown rule, empty or non-positive grid, a bad split, ``n_splits``
        < 1, fewer than 2 folds, ``confounds`` without an ImageSPCATV, bad
        ``split_groups`` or ``split_groups`` with a K-fold rule.
    TypeError
        An estimator without ``alpha_rel``, ``l1_ratio``, ``tv_ratio``;
        images with an SPCATV.
    """
    if rule not in SELECTION_RULES:
        raise ValueError(f"rule must be one of {SELECTION_RULES}, got {rule!r}.")
    sparse_indices = check_sparsity_rule(
        min_zero_fraction,
        sparse_indices,
        getattr(estimator, "n_components", None) if rule == "sparsity" else None,
    )
    grid_values = _check_grid(alpha_rel)
    kind = _check_estimator(estimator)
    splits = _check_splits(splits, estimator, rule)
    seeds = _seeds(random_state, default_n_splits(n_splits, rule, criterion, tolerance))
    data, inner = _data(estimator, kind, X, confounds)
    groups = search_groups(estimator, kind, X, split_groups, data.shape[0], rule)
    inner = clone(inner)  # carries the groups during the search (row_groups)
    if truth is not None:
        truth = check_matrix(truth, "truth", data.shape[1])
    logger.info(
        "select_penalty (%s): %d splits x %d alpha_rel", rule, len(splits), len(grid_values)
    )
    fitted = returned = None
    if rule == "reproducibility":
        tolerance = _check_tolerance(tolerance)
        criterion = _check_criterion(criterion)
        with row_groups(inner, data, groups):
            best, results, halves, fitted, returned, default, default_model, start = _reproduce(
                inner,
                data,
                splits,
                grid_values,
                seeds,
                truth,
                verbose,
                keep_default,
                criterion,
                tolerance,
            )
        chosen_fits = halves[best]
    else:
        grid = [
            {"alpha": None, "alpha_rel": float(a), "l1_ratio": s[0], "tv_ratio": s[1]}
            for s in splits
            for a in grid_values
        ]
        results, fold_comps = fold_search(
            inner,
            data,
            grid,
            cv=cv,
            random_state=random_state,
            n_jobs=n_jobs,
            truth=truth,
            min_zero_fraction=min_zero_fraction,
            sparse_indices=sparse_indices,
        )
        for r in results:
            _say(
                verbose,
                "l1_ratio=%g tv_ratio=%g alpha_rel=%g: held-out score %.4g (std "
                "%.2g), stability %.3f (corrected %.3f), support %.1f %%, %d empty",
                r["l1_ratio"],
                r["tv_ratio"],
                r["alpha_rel"],
                r["mean_score"],
                r["std_score"],
                r["stability"],
                r["stability_corrected"],
                100 * r["support"],
                r["n_empty"],
            )
        best = _choose(results, rule, len(fold_comps[0]))
        chosen_fits, default, start, default_model = fold_comps[best], None, None, None
    best_params = dict(results[best]["params"])
    best_estimator = (
        refit_from(estimator, kind, X, confounds, best_params, start, default_model, fitted, groups)
        if refit
        else None
    )
    stability = _component_stability(best_estimator, rule, chosen_fits, returned)
    logger.info("select_penalty (%s): %s", rule, best_params)
    selection = PenaltySelection(
        best_params_=best_params,
        best_index_=best,
        default_index_=default,
        results_=results,
        rule=rule,
        component_stability_=stability,
        best_estimator_=best_estimator,
        fold_components_=chosen_fits,
    )
    if verbose and not logger.handlers:
        print(selection.table(), flush=True)
    return selection


def _reproduce(
    inner, data, splits, grid, seeds, truth, verbose, keep_default, criterion, tolerance
):
    """Rule ``"reproducibility"``: the search, the choice and the refit's start.
    Returns the row kept, the rows, their halves, the returned model at that
    row (None: refit), its stability (criterion ``"returned"``), the default
    fit's row, the default fit when kept (else None) and the refit's start."""
    if criterion == "returned" and tolerance is None:
        best, results, halves, fitted, returned, default, default_model = run_returned(
            inner, data, splits, grid, seeds, truth, verbose, keep_default
        )
        start = default_model.components_ if default_model is not None else halves[best][0][0]
        return best, results, halves, fitted, returned, default, default_model, start
    results, halves = reproducibility_search(inner, data, splits, grid, seeds, truth, verbose)
    best = choose_reproducible(results, tolerance, default_path_starts(inner))
    default_model = fit_default(inner, data) if keep_default and tolerance is None else None
    default = None if default_model is None else default_row(results, default_model)
    best = prefer_default(results, best, default)
    start = refit_start(default_model, best, default, halves[best])
    return best, results, halves, None, None, default, default_model, start


def _component_stability(best_estimator, rule, chosen_fits, returned=None):
    """Per component of the refit (else of the first fit): ``returned`` (the
    returned model's subsample stability, criterion ``"returned"``), else
    reproducibility across halves, or Dice across folds; sets the refit's
    ``stability_``."""
    inner = getattr(best_estimator, "estimator_", best_estimator)
    if rule != "reproducibility":
        reference = chosen_fits[0] if inner is None else inner.components_
        return fold_stability(reference, chosen_fits)
    reference = chosen_fits[0][0] if inner is None else inner.components_
    stability = chosen_stability(reference, chosen_fits) if returned is None else returned
    if inner is not None:
        inner.stability_ = stability
    return stability


def one_se_refit(cv_results, param="param_alpha_rel"):
    """``refit`` callable for ``GridSearchCV``: the one-standard-error rule.

    Among the candidates whose mean test score is within one standard error
    of the best (standard error of the split-paired differences to the best,
    as in :func:`select_penalty`), returns the index
    of the one with the largest ``param`` (the strongest penalty), as
    ``select_penalty(..., rule="one_se")`` does. Use it as
    ``GridSearchCV(SPCATV(operator=op), {"alpha_rel": [...]}, refit=one_se_refit)``
    (for a Pipeline pass ``param="param_spcatv__alpha_rel"`` through
    :func:`functools.partial`).

    Parameters
    ----------
    cv_results : dict
        ``GridSearchCV.cv_results_``.
    param : str, default="param_alpha_rel"

    Returns
    -------
    int
    """
    if param not in cv_results:
        raise ValueError(
            f"cv_results has no {param!r} column; pass param= the "
            f"'param_<name>' of the penalty (columns: "
            f"{sorted(k for k in cv_results if k.startswith('param_'))})."
        )
    mean = np.asarray(cv_results["mean_test_score"], dtype=float)
    splits = sorted(
        (k for k in cv_results if k.startswith("split") and k.endswith("_test_score")),
        key=lambda k: int(k[5:].split("_")[0]),
    )
    folds = np.column_stack([np.asarray(cv_results[k], dtype=float) for k in splits])
    values = np.asarray(cv_results[param], dtype=float)
    finite = np.isfinite(mean)
    if not finite.any():
        raise ValueError("cv_results has no finite mean_test_score.")
    best = int(np.nanargmax(np.where(finite, mean, -np.inf)))
    se = _paired_se(folds, best)
    within = np.flatnonzero(finite & (mean >= mean[best] - se))
    return int(within[np.argmax(values[within])])
