"""``select_penalty`` never below the method's own default (issue 20 round 7).

The search's rule (:func:`~._halves.choose_reproducible`) reads split-half
reproducibility, which on a method whose halves do not reproduce (ElasticNet
PCA on the paper simulation: standard error about 0.2) cannot tell the grid
points apart, so its choice may be worse than the one the method's default fit
(``alpha_rel="auto"``) makes on its own halves. :func:`prefer_default` makes the
default's point a candidate that is kept unless the chosen point is more
reproducible by more than the standard error of the difference; the refit
starts, as the default fit does, from a fit of the point (:func:`refit_start`).
"""

import numpy as np
from sklearn.base import clone

from ..decomposition import groups_of, start_from


def fit_default(estimator, X):
    """The estimator's own default fit on ``X``: ``alpha_rel="auto"`` with its
    ratios and other settings (no ``stability_``: the search gives it), its
    halves keeping ``estimator``'s row groups (``groups_of``)."""
    model = clone(estimator).set_params(alpha=None, alpha_rel="auto", stability=False)
    return model.fit(X, split_groups=groups_of(estimator))


def default_row(results, model):
    """Index of the row of ``results`` at the default fit's point, or None."""
    for i, r in enumerate(results):
        if (
            np.isclose(r["alpha_rel"], model.alpha_rel_, rtol=1e-6)
            and np.isclose(r["l1_ratio"], model.l1_ratio_)
            and np.isclose(r["tv_ratio"], model.tv_ratio_)
        ):
            return i
    return None


def _standard_error(row):
    r = np.asarray(row["reproducibility_per_component"], float).ravel()
    return float(np.std(r, ddof=1) / np.sqrt(r.size)) if r.size > 1 else 0.0


def prefer_default(results, chosen, default):
    """The row kept: ``chosen`` when it is more reproducible than the default's
    row by more than the standard error of the difference (``hypot`` of the two
    rows' standard errors over their components and sample splits), else
    ``default`` (also when ``chosen`` is not admissible and ``default`` is).
    Marks each row's ``default`` (the default fit's point).

    Parameters
    ----------
    results : list of dict
        The rows of the search (``reproducibility``,
        ``reproducibility_per_component``, ``admissible``).
    chosen : int
        The search rule's row.
    default : int or None
        The default fit's row (None: not on the grid, ``chosen`` kept).

    Returns
    -------
    int
    """
    for i, r in enumerate(results):
        r["default"] = i == default
    if default is None or default == chosen:
        return chosen
    a, b = results[chosen], results[default]
    if b["admissible"] and not a["admissible"]:
        return default
    margin = np.hypot(_standard_error(a), _standard_error(b))
    return chosen if a["reproducibility"] - b["reproducibility"] > margin else default


def refit_start(default_model, kept, default, chosen_fits):
    """The components the refit at the kept row starts from: the default fit's
    when its row is kept (the refit is then the default fit), else the first
    half fit of the first sample split at the kept row (as the default fit
    starts from its half fit)."""
    if kept == default:
        return default_model.components_
    return chosen_fits[0][0]


def refit_from(
    estimator, kind, X, confounds, params, start, default_model=None, fitted=None, groups=None
):
    """The estimator given, refitted on all the data with ``params``, its
    SPCATV started from ``start`` (:func:`neurospca.decomposition.start_from`;
    through an ImageSPCATV, on the estimator it makes for the masked data).

    With an SPCATV, when ``start`` is the default fit's components
    (``default_model``'s: its row was kept), the default fit itself is
    returned, its parameters set to ``params`` and the given ``stability``:
    the same model, not a refit that could settle elsewhere; likewise
    ``fitted``, the chosen point's model already fitted on the data from
    ``start`` (criterion ``"returned"``). ``groups``: the search's row groups
    (``split_groups``), given to the refit's ``fit``."""
    stability = estimator.get_params()["stability"]
    if default_model is not None and kind != "image" and start is default_model.components_:
        return default_model.set_params(**params, stability=stability)
    if fitted is not None and kind != "image":
        return fitted.set_params(**params, stability=stability)
    best = clone(estimator).set_params(**params)
    if kind != "image":
        return start_from(best, start).fit(X, split_groups=groups)
    make = best._make_estimator
    best._make_estimator = lambda operator: start_from(make(operator), start)
    try:
        return best.fit(X, confounds=confounds, split_groups=groups)
    finally:
        del best._make_estimator
