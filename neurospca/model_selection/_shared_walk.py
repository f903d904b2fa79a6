"""Without TV, a split's walk shares the rows of equal l1 weight (issue 20 round 18).

Without TV the l2 term only scales the loadings, so two points with the same l1
weight ``l1_ratio * alpha_rel`` are one model (``_returned.same_model``): on
the default grid the walk of (0.2, 0) at 0.25, 0.5, 1, 2 repeats the walk of
(0.05, 0) at 1, 2, 4, 8 (the halves' rows differ in the fourth digit, round
17: 0.3583 / 0.3585 on development seed 3353). :func:`walk_split` takes those
rows from the earlier walk (the same sample splits) and fits only the points
that have no such row, from the first of them on.
"""

import numpy as np

from . import _continuation
from ._halves import reproducibility_search

#: Without TV, a split's walk takes the rows of an earlier split's walk with
#: the same l1 weight (False: every split walked, as round 17).
SHARE_WALK = True


def _twin(results, l1_weight):
    """Index of an earlier walked row without TV at ``l1_weight``, or None."""
    for j, r in enumerate(results):
        if r["tv_ratio"] == 0 and np.isclose(r["l1_ratio"] * r["alpha_rel"], l1_weight, rtol=1e-9):
            return j
    return None


def _copy(row, split, alpha_rel):
    """Row ``row`` as the row of ``split`` at ``alpha_rel`` (``shared_walk``:
    the index of the row it was taken from is set by the caller)."""
    params = dict(row["params"], alpha_rel=float(alpha_rel), l1_ratio=split[0], tv_ratio=split[1])
    copied = {k: v for k, v in row.items() if k not in ("admissible", "near_best", "default")}
    copied.update(params=params, alpha_rel=params["alpha_rel"], l1_ratio=split[0])
    copied.update(tv_ratio=split[1])
    return copied


def walk_split(estimator, X, split, grid, seeds, truth, verbose, walked):
    """One split's rows and halves (``_halves.reproducibility_search``); without
    TV the leading points whose l1 weight a row of ``walked`` (the rows and
    halves of the splits walked before, the same ``seeds``) has are that row,
    and the rest are walked from the first point without one (none after a
    taken row whose half components are all empty: the walk stops there).
    Within a search, a walk made before its turn (:func:`walk_first`) is taken."""
    search = _continuation._SEARCH.get()
    key = (tuple(map(float, split)), tuple(np.asarray(grid, float).tolist()), tuple(seeds))
    if search is not None and key in search[3]:
        return search[3].pop(key)
    results, halves = walked
    rows, pairs = [], []
    if SHARE_WALK and float(split[1]) == 0 and split[0] > 0:
        for a in grid:
            j = _twin(results, split[0] * a)
            if j is None:
                break
            rows.append(dict(_copy(results[j], split, a), shared_walk=j))
            pairs.append(halves[j])
    rest = np.asarray(grid)[len(rows) :]
    if rest.size and not (rows and np.all(rows[-1]["nonzero_fraction"] == 0)):
        more = reproducibility_search(estimator, X, [split], rest, seeds, truth, verbose)
        rows, pairs = rows + more[0], pairs + more[1]
    return rows, pairs


def walk_first(estimator, X, split, grid, seeds, truth, verbose, params):
    """Without TV, within a search (:data:`_continuation.WALK_DEFAULT`): the
    walk of ``split`` made now and kept for its turn (:func:`walk_split`), and
    its pair of half fits at ``params`` (the default fit's point, whose evidence
    is made before the search walks: ``_default_first``); else None."""
    search = _continuation._SEARCH.get()
    if not (_continuation.WALK_DEFAULT and _continuation.CHAIN) or search is None:
        return None
    if float(split[1]) != 0:
        return None
    rows, pairs = walk_split(estimator, X, split, grid, seeds, truth, verbose, ([], []))
    key = (tuple(map(float, split)), tuple(np.asarray(grid, float).tolist()), tuple(seeds))
    search[3][key] = rows, pairs
    for r, pair in zip(rows, pairs, strict=True):
        if np.isclose(r["alpha_rel"], params["alpha_rel"], rtol=1e-6):
            return pair[0]
    return None
