"""``select_penalty`` judges the model it returns (issue 20 round 8).

Until round 7 the search judged a grid point by its halves: the matched
absolute correlation of two fits on N / 2 samples. The halves lose a weak
pattern that the full fit keeps (paper 2-D, scores correlated r = 0.7, seed
3167: the halves at the default point reproduced 0.97 / 0.94 / 0.0002, the
full default fit recovered all three patterns, MSE 0.063), so that criterion
traded the default for a sparser split that was worse (MSE 0.255).

Here a grid point is judged by the model ``select_penalty`` would return
there: the full-sample fit started from the point's first half fit
(:func:`fit_returned`, as the refit and the default fit are started), and its
reproducibility is that of ``stability_`` (:func:`returned_stability`: two
subsamples of 0.9 N sharing 0.8 N, started from the full fit's components,
corrected for the overlap), which does not lose a pattern the full fit found
and scores a merged or collapsed component near 0. The halves still walk the
grid (warm starts, admissibility); :func:`choose_returned` applies the default
fit's rule (:func:`neurospca.decomposition.choose_point`) to these scores, and
keeps the estimator's own default fit unless the chosen point's model is more
reproducible by more than the standard error of the difference.
"""

import warnings

import numpy as np
from sklearn.base import clone

from ..decomposition import (
    MAX_NONZERO,
    choose_point,
    component_stability,
    split_halves,
    start_from,
    subsample_stability,
)

#: A returned model whose component has fewer non-zero loadings than this
#: fraction of its largest component's has lost a pattern (as the default
#: fit's check, ``decomposition._auto.COLLAPSED``).
COLLAPSED = 0.05


def _quiet_fit(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X)


def fit_returned(estimator, X, params, start):
    """The full-sample fit at ``params`` started from ``start`` (a half fit's
    components), without ``stability_``: the model the refit returns."""
    model = clone(estimator).set_params(**params, stability=False)
    return _quiet_fit(start_from(model, start), X)


def returned_stability(model, X, params, seed):
    """Per component of a fitted model: the lower of two reproducibilities,
    both from fits started from its components at ``params``.

    ``sub``: ``stability_``'s subsample measure (two subsamples of 0.9 N
    sharing 0.8 N, corrected for the overlap, no noise floor), where a merged
    start is left for a lower objective (measured on the paper's r = 0.7 seed
    3167: a merged full fit scored 0.06 on the merged component). ``half``: the
    two random halves of ``seed`` (the search's first sample split), matched
    to the model's components (``component_stability``), where components of
    a few pixels that only the full sample's penalty keeps empty (measured:
    ElasticNet PCA at a strong penalty, one pixel per component, ``sub`` 1.0
    and ``half`` 0). A pattern the full fit found is not lost by halves that
    start from it (the same seed's default fit: 0.98 / 0.97 / 0.96)."""
    start = model.components_
    keep = dict(params, stability=False, certify_support=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sub = np.asarray(subsample_stability(model, X, params, start=start))
        pair = [
            start_from(clone(model).set_params(**keep), start).fit(h) for h in split_halves(X, seed)
        ]
    half = component_stability(start, *(m.components_ for m in pair))
    return np.minimum(sub, half)


def full_admissible(components):
    """Every component non-empty, at most :data:`MAX_NONZERO` non-zero, and
    not collapsed (:data:`COLLAPSED`)."""
    nz = np.mean(np.asarray(components) != 0, axis=1)
    return bool(np.all(nz > 0) and np.all(nz <= MAX_NONZERO) and nz.min() >= COLLAPSED * nz.max())


def candidate_rows(results, path_starts):
    """Rows whose returned model is fitted: not weaker than the first point of
    the default fit's path of their split (``path_starts``), no half component
    more than :data:`MAX_NONZERO` non-zero (the full fit is denser) and not
    every half component empty."""
    starts = path_starts or {}
    return [
        i
        for i, r in enumerate(results)
        if r["alpha_rel"] >= starts.get((r["l1_ratio"], r["tv_ratio"]), 0.0)
        and np.all(r["nonzero_fraction"] <= MAX_NONZERO)
        and np.any(r["nonzero_fraction"] > 0)
    ]


def _split(row):
    return row["l1_ratio"], row["tv_ratio"]


def judge_rows(estimator, X, results, halves, rows, seed, truth=None):
    """Fit and score the returned model of each row of ``rows`` (a split's rows
    weakest first; a split stops after a model with an empty component).

    Sets ``returned_stability`` (mean), ``returned_per_component``,
    ``returned_admissible`` (and ``returned_mse``, ``returned_dice`` with
    ``truth``) on the rows fitted. Returns ``{row: model}``."""
    from ._metrics import dice_to_truth, mse_to_truth

    models, stopped = {}, set()
    for i in rows:
        r = results[i]
        if _split(r) in stopped:
            continue
        model = fit_returned(estimator, X, r["params"], halves[i][0][0])
        stab = returned_stability(model, X, r["params"], seed)
        r["returned_per_component"] = stab
        r["returned_stability"] = float(stab.mean())
        r["returned_admissible"] = full_admissible(model.components_)
        if truth is not None:
            r["returned_mse"] = mse_to_truth(model.components_, truth)
            r["returned_dice"] = dice_to_truth(model.components_, truth)
        models[i] = model
        if not np.all(np.any(model.components_ != 0, axis=1)):
            stopped.add(_split(r))
    return models


def _standard_error(values):
    v = np.asarray(values, float).ravel()
    return float(np.std(v, ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0


def choose_returned(results, models):
    """:func:`~neurospca.decomposition.choose_point` over the rows whose
    returned model is admissible, their ``returned_per_component`` as the
    reproducibility; None if there is none."""
    idx = [i for i in sorted(models) if results[i]["returned_admissible"]]
    if not idx:
        return None
    path = [
        {
            "alpha_rel": results[i]["alpha_rel"],
            "l1_ratio": results[i]["l1_ratio"],
            "tv_ratio": results[i]["tv_ratio"],
            "reproducibility": results[i]["returned_per_component"],
            "nonzero_fraction": np.mean(models[i].components_ != 0, axis=1),
        }
        for i in idx
    ]
    return idx[choose_point(path)]


def beats(chosen, default):
    """True when the per-component scores ``chosen`` have a mean above
    ``default``'s by more than the standard error of the difference."""
    margin = np.hypot(_standard_error(chosen), _standard_error(default))
    return float(np.mean(chosen)) - float(np.mean(default)) > margin


def _default_params(model):
    return {
        "alpha": None,
        "alpha_rel": float(model.alpha_rel_),
        "l1_ratio": float(model.l1_ratio_),
        "tv_ratio": float(model.tv_ratio_),
    }


def returned_choice(estimator, X, search, path_starts, fallback, default_fit, seed, truth=None):
    """The row ``select_penalty`` keeps under ``criterion="returned"``.

    Parameters
    ----------
    estimator : SPCATV
    X : ndarray
    search : (list of dict, list)
        The rows and halves of :func:`~._halves.reproducibility_search`.
    path_starts : dict
        :func:`~._halves.default_path_starts`.
    fallback : int
        The halves' rule's row (:func:`~._halves.choose_reproducible`), kept
        (through :func:`~._default.prefer_default`) when no returned model is
        admissible.
    default_fit : (SPCATV, int or None) or None
        The estimator's own default fit and its row (``keep_default``).
    seed : int
        The search's first split of the samples (:func:`returned_stability`).
    truth : ndarray, optional

    Returns
    -------
    row : int
    model : SPCATV or None
        The fitted model at ``row`` (the default fit when it is kept); None
        when the row is the halves' fallback (refitted by the caller).
    stability : ndarray or None
        Its per-component returned stability.
    use_default : bool
        True when the default fit is kept.
    """
    from ._default import prefer_default

    results, halves = search
    model_default, default = default_fit if default_fit is not None else (None, None)
    rows = candidate_rows(results, path_starts)
    models = judge_rows(estimator, X, results, halves, rows, seed, truth)
    best = choose_returned(results, models)
    if best is None:
        kept = prefer_default(results, fallback, default)
        use = kept == default and model_default is not None
        return kept, (model_default if use else None), None, use
    for i, r in enumerate(results):
        r["default"] = i == default
    if model_default is None or default is None:
        return best, models[best], results[best]["returned_per_component"], False
    stab = returned_stability(model_default, X, _default_params(model_default), seed)
    if beats(results[best]["returned_per_component"], stab):
        return best, models[best], results[best]["returned_per_component"], False
    return default, model_default, stab, True
