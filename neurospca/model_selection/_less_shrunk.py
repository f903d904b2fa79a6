"""The less shrunk of the models the evidence does not separate (issue 20 round 12).

After :func:`~._returned.returned_choice` has kept a model (the default fit or
a chosen row), two steps move to a less shrunk model of SPCA-TV (``tv_ratio >
0``) that the evidence supports at least as well (the second only when
:data:`LEAST_L2_TIES`, off by default). Both apply the default
fit's own preference (``alpha_rel="auto"`` keeps the least shrunk point whose
components reproduce, ``decomposition._auto_check``) to the returned models'
evidence. Without TV the rule of rounds 9-11 is unchanged (the points of one
l1 weight are one model there, :func:`~._returned.least_l2`).

1. :func:`weaker_reproducing`: a weaker point of the kept model's split whose
   model is at least as reproducible at every rank and explains more held-out
   variance than the kept one by more than its floor. Measured (development
   seed 3357, paper simulation, scores correlated r = 0.7): the default fit
   chose ``alpha_rel`` 2 (MSE to the truth 0.174, Dice 0.745); ``alpha_rel``
   1 reproduced 0.981 / 0.972 / 0.954 against 0.978 / 0.965 / 0.936 and
   explained 9.8 against 8.8 x 1e-3 held-out variance (floor 0.34): MSE
   0.049, Dice 0.934. The gain (0.009) is below the margin the default needs
   to be left for a *stronger* or another split's point (``SWITCH_GAIN``), but
   here every piece of evidence points one way and the move is toward less
   shrinkage, the direction the halves are known to under-rate.
2. :func:`least_l2_tied`: among the models of the kept model's l1 weight
   (``l1_ratio * alpha_rel``) with no more TV weight, one whose evidence is
   tied with the kept model's (:func:`~._returned.mark_ties`) and with the
   least l2 weight. The l2 term is rotation invariant and favours PCA's
   merged directions (issue 20); at one l1 weight the model with less of it
   shrinks the loadings less. Measured on development seeds 3351-3353 and
   3359: the default (0.05, 0.1) 1 and (0.2, 0.2) 0.25 (l1 weight 0.05 both,
   TV 0.1 against 0.05, l2 0.85 against 0.15) were tied; the latter's Dice
   to the truth was higher by 0.001-0.016, its MSE within 0.001. Such a row
   of another split is walked (halves up to that point) and judged only for
   this comparison (:func:`less_shrunk`).
"""

import numpy as np

from ._heldout import explains_more
from ._returned import _default_params, candidate_rows, judge_rows, paired_gain, tied_evidence

#: Step (2), :func:`least_l2_tied`, is taken (with its walk and judging of
#: another split's point). On fresh seeds (benchmarks/RESULTS.md, issue 20
#: round 12) it moved 8 of 10 SPCA-TV choices, within one step of the
#: truth-best 7 of 10 against 5, never worse than the default 6 of 10
#: strictly against 10 (by at most MSE +0.0024, Dice -0.0051), at 21 % more
#: CPU. Off (the lead's choice, round 12): the project's "never worse than
#: the default" is kept strictly; True takes step (2).
LEAST_L2_TIES = False


def weights(params):
    """``(l1, tv, l2)`` weights of a point (multiples of ``alpha``)."""
    a, l1, tv = float(params["alpha_rel"]), float(params["l1_ratio"]), float(params["tv_ratio"])
    return a * l1, a * tv, a * (1.0 - l1 - tv)


def _split(params):
    return float(params["l1_ratio"]), float(params["tv_ratio"])


def _judged(results):
    return [i for i, r in enumerate(results) if r.get("returned_admissible")]


def weaker_reproducing(results, kept, evidence):
    """The least shrunk judged admissible row of ``kept``'s split (params) with
    a weaker ``alpha_rel``, at least as reproducible as ``evidence`` (the kept
    model's per-component stability and held-out variance) at every rank, by
    a mean gain above its standard error, and explaining more held-out
    variance than it by more than its floor; None if there is none."""
    stab, heldout = evidence
    rows = []
    for i in _judged(results):
        r = results[i]
        if _split(r) != _split(kept) or r["alpha_rel"] >= float(kept["alpha_rel"]):
            continue
        score = r["returned_per_component"]
        diff = np.sort(score)[::-1] - np.sort(np.asarray(stab, float))[::-1]
        gain, err = paired_gain(score, stab)
        if diff.min() >= 0 and gain > err and explains_more(r.get("returned_heldout"), heldout):
            rows.append(i)
    return min(rows, key=lambda i: results[i]["alpha_rel"], default=None)


def _same_l1_less_l2(params, kept):
    """True when ``params`` has ``kept``'s l1 weight, no more TV weight and less l2 weight."""
    w, k = weights(params), weights(kept)
    return bool(np.isclose(w[0], k[0], rtol=1e-9) and w[1] <= k[1] * (1 + 1e-9) and w[2] < k[2])


def least_l2_tied(results, kept, evidence):
    """The judged admissible row of ``kept``'s l1 weight, no more TV weight
    and the least l2 weight below ``kept``'s, whose evidence is tied with
    ``evidence`` (:func:`~._returned.tied_evidence`); None if there is none."""
    rows = [
        i
        for i in _judged(results)
        if _same_l1_less_l2(results[i]["params"], kept) and tied_evidence(results[i], *evidence)
    ]
    return min(rows, key=lambda i: weights(results[i]["params"])[2], default=None)


def same_l1_points(splits, grid, kept):
    """The ``(split, alpha_rel)`` of ``splits`` x ``grid`` at ``kept``'s l1
    weight with no more TV weight and less l2 weight."""
    out = []
    for s in splits:
        for a in grid:
            params = {"alpha_rel": a, "l1_ratio": s[0], "tv_ratio": s[1]}
            if _same_l1_less_l2(params, kept):
                out.append((tuple(map(float, s)), float(a)))
    return out


def _row_at(results, split, alpha):
    for i, r in enumerate(results):
        if _split(r) == split and np.isclose(r["alpha_rel"], alpha, rtol=1e-9):
            return i
    return None


def judge_points(estimator, X, search, points, truth=None, verbose=0):
    """Judge the rows at ``points`` (:func:`same_l1_points`): a split not
    searched yet is walked by its halves up to the point (warm, weakest
    first, as the search walks it); a row already judged is left as it is.

    ``search`` is ``(results, halves, models, grid, seeds)`` of
    :func:`~._returned.returned_search` (extended in place)."""
    from ._halves import reproducibility_search

    results, halves, models, grid, seeds = search
    todo = []
    for split, alpha in points:
        i = _row_at(results, split, alpha)
        if i is None:
            path = np.asarray([a for a in grid if a <= alpha * (1 + 1e-9)])
            rows, pairs = reproducibility_search(estimator, X, [split], path, seeds, truth, verbose)
            results += rows
            halves += pairs
            i = _row_at(results, split, alpha)
        if "returned_admissible" not in results[i] and i in candidate_rows(results, None):
            todo.append(i)
    judge_rows(estimator, X, results, halves, todo, seeds[0], truth, models)


def less_shrunk(estimator, X, splits, search, kept, evidence, truth=None, verbose=0):
    """The row of a less shrunk model the evidence supports as well as the
    kept one (module docstring: :func:`weaker_reproducing`, then
    :func:`least_l2_tied` from its result), or None; only for SPCA-TV
    (``kept``'s ``tv_ratio`` > 0).

    Parameters
    ----------
    estimator, X
        As :func:`~._returned.returned_search`'s.
    splits : list of (float, float)
        The splits of the search.
    search : tuple
        ``(results, halves, models, grid, seeds)``, extended in place by the
        rows judged here (:func:`judge_points`).
    kept : dict
        ``alpha_rel``, ``l1_ratio``, ``tv_ratio`` of the kept model.
    evidence : (ndarray, ndarray)
        Its per-component stability and held-out variance with its floor.

    Returns
    -------
    int or None
    """
    results, grid = search[0], search[3]
    if float(kept["tv_ratio"]) <= 0 or evidence[1] is None:
        return None
    row = weaker_reproducing(results, kept, evidence)
    if row is not None:
        kept = results[row]["params"]
        evidence = (results[row]["returned_per_component"], results[row]["returned_heldout"])
    if not LEAST_L2_TIES:
        return row
    judge_points(estimator, X, search, same_l1_points(splits, grid, kept), truth, verbose)
    tied = least_l2_tied(results, kept, evidence)
    return tied if tied is not None else row


def less_shrunk_from(inner, X, splits, search, best, use_default, model, stability, truth, verbose):
    """:func:`less_shrunk` from the model :func:`~._returned.returned_choice`
    kept: the default fit ``model`` (``use_default``) or row ``best``; None
    when it kept no returned model (``stability`` None)."""
    results = search[0]
    if stability is None:
        return None
    if use_default:
        kept, heldout = _default_params(model), results[0].get("default_heldout")
    else:
        kept, heldout = results[best]["params"], results[best].get("returned_heldout")
    return less_shrunk(inner, X, splits, search, kept, (stability, heldout), truth, verbose)
