"""The full fits' check of the point ``alpha_rel="auto"`` chose (issue 20).

:func:`auto_fit` fits the full data at the halves' choice (:mod:`._auto`)
and checks it: a component too dense, a less shrunk point of the documented
split that agrees or whose components reproduce, a pattern lost at the point
(fitted again from a stronger point's fit), a collapsed component; with
the other splits pending (:class:`._auto.Others`), whether the first split's components reproduce
before those are searched (issue 20 rounds 9-10, :func:`_flagged`).
"""

import numpy as np

from ._auto import (
    MAX_NONZERO,
    WHOLE_MAP,
    _admissible,
    _has_empty,
    _split_of,
    _standard_error,
    choose_alpha_rel,
    choose_point,
    mark_dense_effect,
    whole_map_count,
)
from ._stability import STABILITY_THRESHOLD, HalfFits, matched_abs_corr

#: Two full fits *agree* when every component of one matches a component of the
#: other at least this (matched |corr|): the same patterns, shrunk more or less
#: (:func:`auto_fit`). Measured (benchmarks/RESULTS.md, issue 20 round 6, the
#: full fits of every admissible point on fsaverage5 r = 0.8 seeds 2905, 3013
#: and the paper's r = 0.7 seeds 2902, 2933, 3013): a fit that merged a pair
#: agreed with a separating one at 0.67-0.79, fits of the same patterns at two
#: penalties or splits at 0.85-0.99.
AGREE = 0.8
#: A full-fit component with fewer non-zero loadings than this fraction of the
#: largest component's has *collapsed*: the penalty killed a pattern that a
#: weaker point keeps (:func:`auto_fit`; measured on the paper set, seed 3013:
#: 0.2 % against 9 % non-zero at alpha_rel 1, every pattern at 0.5).
COLLAPSED = 0.05
#: When a component of the fit kept collapsed, the full data are fitted cold at
#: these multiples of its ``alpha_rel`` (same split), weakest first, and the
#: kept point is fitted again from the first such fit that holds a pattern it
#: lacks (:func:`_from_stronger`). Measured (benchmarks/RESULTS.md, issue 20
#: round 12): the paper's r = 0.7 set lost its weakest pattern at alpha_rel 1
#: (seeds 3315, 3316, 3324, 3329, 3381: collapsed), a cold fit at 1.41 held
#: it; started there, the fit at 1 kept every pattern at a lower joint
#: objective. Not for a component that only fails to reproduce (fsaverage5 r =
#: 0.8 seed 3312 was mended that way): on brainspace's resting-state run that
#: refit made half B's components reproduce less across the halves (matched
#: abs corr 0.43 -> 0.35) while its ``stability_`` claimed more (0.79 -> 0.91).
STRONGER_STARTS = (2**0.5, 2.0, 4.0)
#: Off by default (issue 20 round 13, benchmarks/RESULTS.md). When on,
#: :func:`_from_stronger` also fires for a component flagged on the halves
#: (not only a collapsed one), and keeps the refit only when it is a better
#: solution of the same problem: its joint objective at the same penalties is
#: lower than the kept fit's by more than the two fits' certified gaps
#: (:func:`_better`), whatever ``stability_`` says of it. Measured: it mends
#: fsaverage5 r = 0.8 seed 3312 (J 462.2027 -> 462.1578, gaps 1e-3) and keeps
#: the paper set's refits (J lower by 0.04-0.06, gaps 1e-3 to 6e-3), but on
#: brainspace's resting-state run half B's refit is a better solution too (J
#: 9674.513 -> 9673.778, gaps 0.30) and the halves agree less (matched abs
#: corr 0.43 -> 0.35): a lower objective on one half is not a pattern the
#: other half holds.
BETTER_SOLUTION = False


def _whole(V, point):
    """The components of the full fit ``V`` (features x components) at
    ``point`` that are whole-map (:data:`WHOLE_MAP`) where the point's halves
    had as many whole-map components or more, allowed there
    (:func:`._auto.mark_whole_map`): reported as such, not too dense; none
    when they would be every component."""
    whole = np.mean(V != 0, axis=0) >= WHOLE_MAP
    n = whole_map_count(point) if point is not None and point.get("whole_map") else 0
    return whole if 0 < whole.sum() <= n and not whole.all() else np.zeros_like(whole)


def _too_dense(V, point=None):
    """True when a component of ``V`` other than a whole-map one (:func:`_whole`)
    is more than :data:`MAX_NONZERO` non-zero."""
    return bool(np.any(np.mean(V != 0, axis=0)[~_whole(V, point)] > MAX_NONZERO))


def _collapsed(V, point=None):
    """True when a component of ``V`` (features x components) has fewer than
    :data:`COLLAPSED` times the largest component's non-zero loadings (the
    whole-map ones at ``point``, :func:`_whole`, left out)."""
    count = np.count_nonzero(V, axis=0)[~_whole(V, point)]
    return bool(np.any(count < COLLAPSED * np.max(count)))


def _agreement(V, W):
    """The least matched |corr| between the components of two full fits."""
    _, corr = matched_abs_corr(np.asarray(V).T, np.asarray(W).T)
    return float(np.min(np.nan_to_num(corr)))


def _fallback(path, i):
    """The least shrunk admissible point of the first (documented) split: the
    path's first point only when it is the only admissible one; None if the
    split has no admissible point, ``i`` is it, or it is not weaker than ``i``
    on the same split (the check only moves toward less shrunk fits)."""
    first = [j for j, p in enumerate(path) if _split_of(p) == _split_of(path[0]) and _admissible(p)]
    later = [j for j in first if j > 0]
    j = min(later or first, key=lambda j: path[j]["alpha_rel"], default=None)
    same = j is not None and _split_of(path[j]) == _split_of(path[i])
    return None if j is None or (same and path[j]["alpha_rel"] >= path[i]["alpha_rel"]) else j


def _stronger(path, i):
    """Indices of the admissible points of ``path[i]``'s split after it."""
    return [
        j
        for j in range(i + 1, len(path))
        if _admissible(path[j]) and _split_of(path[j]) == _split_of(path[i])
    ]


def _extend(path, i):
    """Fit the next point of ``path[i]``'s split (its :class:`SplitWalk`, kept
    in the records as ``"_walk"``) and insert it after the split's last
    record; False when the walk has ended or the records have none."""
    walk = path[i].get("_walk")
    if walk is None or not walk.step():
        return False
    last = max(j for j, p in enumerate(path) if p.get("_walk") is walk)
    path.insert(last + 1, dict(walk.points[-1], _walk=walk))
    return True


def _fit_dense_checked(path, i, run, start):
    """The full fit at ``path[i]``; when a component is more than
    :data:`MAX_NONZERO` non-zero, the next admissible stronger point of the same
    split (the most reproducible one) instead, if there is one; the split's
    walk goes on (:func:`_extend`) until it has one or ends."""
    while True:
        result = run(path[i], start(path[i]["components"]))
        if not _too_dense(result[1], path[i]):
            return i, result
        while not _stronger(path, i) and _extend(path, i):
            pass
        stronger = _stronger(path, i)
        if not stronger:
            return i, result
        i = stronger[choose_alpha_rel([path[j] for j in stronger])]


def _uncollapse(path, i, result, run, start):
    """When a component of the full fit at ``path[i]`` collapsed
    (:func:`_collapsed`), the weaker points of the same split, strongest first,
    whose halves have no empty component: the first whose full fit neither
    collapsed nor is too dense replaces it."""
    weaker = [
        j
        for j in range(i - 1, -1, -1)
        if _split_of(path[j]) == _split_of(path[i]) and not _has_empty(path[j])
    ]
    for j in weaker if _collapsed(result[1], path[i]) else []:
        other = run(path[j], start(path[j]["components"]))
        if not (_collapsed(other[1], path[j]) or _too_dense(other[1], path[j])):
            return j, other
    return i, result


def auto_fit(path, run, start):
    """The full fit of ``alpha_rel="auto"`` at the chosen point of ``path``.

    The halves choose the point (:func:`choose_point`); the full fits check it
    (issue 20 round 6, benchmarks/RESULTS.md):

    1. The fit at the chosen point starts from its half fit (``start(halves)``:
       scores, or None). The admissibility of :func:`choose_alpha_rel` is
       checked on the halves; the full sample passes more features, so when a
       returned component is more than :data:`MAX_NONZERO` non-zero the next
       admissible point of the same split toward stronger penalties (the most
       reproducible one) is fitted instead, if there is one.
    2. When the chosen point is not the least shrunk admissible point of the
       documented split (:func:`_fallback`: the halves reproduced less there),
       the full data are fitted there too, and that fit is kept when it
       *agrees* with the chosen one (:func:`_agreement` at least
       :data:`AGREE`), neither collapsed nor too dense: the same patterns, less
       shrunk. The halves have half the samples and reproduce the weakest
       pattern only at a penalty that shrinks it in the full fit; the full fits
       do not have that handicap. Since issue 20 round 11 it is also kept
       when it disagrees but none of its components is flagged on the halves
       (:func:`_reproduces`): the least shrunk point whose components
       reproduce. On fsaverage5 r = 0.8 (seed 3316) the halves chose
       ``alpha_rel`` 2, where two co-varying patterns merged and the merged
       component reproduced (0.97-0.98); the fit at 1 separated them (abs cos
       0.99) and reproduced at 0.72-0.97 (benchmarks/RESULTS.md, issue 20
       round 11).
    3. When a component of the kept fit collapsed (:func:`_collapsed`), it
       is fitted again from the cold fit of a
       stronger point that holds a pattern it lacks (:func:`_from_stronger`,
       issue 20 round 12: the sweeps had missed the weakest pattern's basin,
       at a higher joint objective than a start from the planted patterns).
    4. When a component of the kept fit still collapsed (the penalty killed a
       pattern), the weaker points of its split are fitted, strongest first,
       until one keeps every component (:func:`_uncollapse`).

    Parameters
    ----------
    path : list of dict
        :func:`auto_path`'s records; their ``"components"`` are removed here.
    run : callable
        ``run(point, u0)`` fits the full data at a record's ``alpha_rel``,
        ``l1_ratio``, ``tv_ratio``; returns ``(U, V, ...)``.
    start : callable
        ``start((half_a, half_b))``: the start scores ``u0`` of the full fit.

    Returns
    -------
    point : dict
        The record fitted (``alpha_rel``, ``l1_ratio``, ``tv_ratio``).
    halves : (ndarray, ndarray)
        The two halves' components at the point fitted.
    result : tuple
        What ``run`` returned.
    """
    run = _once(run)
    check = path[0].pop("_check", None)
    i, result, refit = _first_fit(path, run, start)
    j = _fallback(path, i)
    if j is not None:
        other = run(path[j], start(path[j]["components"]))
        if not (_collapsed(other[1], path[j]) or _too_dense(other[1], path[j])) and (
            _agreement(result[1], other[1]) >= AGREE or _reproduces(check, path[j], other[1])
        ):
            i, result = j, other
    i, result = _regional(path, i, result, run, start, check)
    record, result = _from_stronger(path[i], result, run, start, check)
    if record is path[i]:
        i, result = _uncollapse(path, i, result, run, start)
        record = path[i]
    point = {key: record[key] for key in ("alpha_rel", "l1_ratio", "tv_ratio")}
    halves = HalfFits(record["components"])
    if check is not None:  # the halves refitted for the fit kept, if any
        halves.refit = check.refit_of(record, result[1])
    elif refit is not None and refit[0] is record:
        halves.refit = refit[1]
    halves.dense_map = mark_dense_effect(path)
    for p in path:  # keep the summary, not every half's maps (nor the walks)
        del p["components"]
        p.pop("_walk", None)
    return point, halves, result


#: A whole-map point is kept only when the full fit at the most
#: reproducible regional admissible point (any split searched) fails, on the
#: halves and in full (:func:`_regional`). Off: round 14's rule.
REGIONAL_FULL_CHECK = True


def _regional(path, i, result, run, start, check):
    """``(i, result)``: when ``path[i]`` holds whole-map components
    (:func:`._auto.mark_whole_map`), the full fit at a regional admissible
    point (``"whole_map"`` unmarked, every component regional) replaces it if
    that fit has every component non-empty, none collapsed or too dense, and
    none flagged on the halves (:func:`_reproduces`: refitted from the full
    fit, as ``stability_``). The point is the least shrunk one within one
    standard error (as :func:`._auto.choose_least_shrunk`, the path's first
    point included) among the regional admissible points of the split that
    holds the most reproducible of them
    (the most reproducible one itself failed on seed 3521: the sparse split's
    ``alpha_rel`` 1, 0.94 / 0.96 / 0.004 on the halves, against 0.82 / 0.98
    / 0.014 at 0.5).

    The halves alone do not separate a regional point whose two half fits
    hold the planted patterns in a different order from one that holds
    specks: on a harmonised cohort with the age effect left in (seed 3478)
    the sparse split's regional point reproduced at 0.72 / 0.012 / 0.006 on
    the halves while its full fit held every pattern (abs cos 0.95 / 0.96 /
    0.97); without its sites, a cohort's regional point reproduced at 0.74 /
    0.007 / 0.003 and its full fit was specks (0.3 % / 0.1 % / 0 non-zero).
    The full fit and its halves refitted from it tell them apart
    (benchmarks/RESULTS.md, issue 20 round 15)."""
    if not (REGIONAL_FULL_CHECK and check is not None and path[i].get("whole_map")):
        return i, result
    regional = [p for p in path if _admissible(p) and not p.get("whole_map")]
    if not regional:
        return i, result
    best = regional[choose_alpha_rel(regional)]
    score, err = np.mean(best["reproducibility"]), _standard_error(best)
    near = [
        p
        for p in regional
        if _split_of(p) == _split_of(best)
        and np.mean(p["reproducibility"]) >= score - np.hypot(err, _standard_error(p))
    ]
    j = _index(path, min(near, key=lambda p: p["alpha_rel"]))
    other = run(path[j], start(path[j]["components"]))
    V = other[1]
    if (
        np.all(np.any(V != 0, axis=0))
        and not (_collapsed(V, path[j]) or _too_dense(V, path[j]))
        and _reproduces(check, path[j], V)
    ):
        return j, other
    return i, result


def _lacks_pattern(check, point, V):
    """True when a component of the full fit ``V`` at ``point`` collapsed
    (:func:`_collapsed`) or, with ``check``, does not reproduce on the halves
    (:func:`_flagged`)."""
    return _collapsed(V, point) or (check is not None and _flagged(check.reproduce(point, V)[0]))


def _from_stronger(record, result, run, start, check):
    """``(record, result)``: the fit at ``record`` again from a stronger
    point's fit, when a component of ``result`` collapsed (:func:`_collapsed`);
    else as given.

    The full data are fitted cold at :data:`STRONGER_STARTS` times the
    record's ``alpha_rel`` (same split), weakest first; a fit with no empty
    or collapsed component that disagrees with ``result`` (:func:`_agreement`
    below :data:`AGREE`: a pattern ``result`` lacks) is the start of a new
    fit at the record (its own starts compete as in every fit, the lowest
    joint objective kept), kept when none of its components collapsed, is
    too dense or is flagged on the halves. A weak pattern whose scores are
    not in the data's top singular directions (below the noise of the
    residual's) has a basin the sweeps miss at the weaker penalty, but the
    sparser fit finds it and the weaker fit, started there, keeps it
    (benchmarks/RESULTS.md, issue 20 round 12)."""
    if not getattr(check, "starts_from_scores", False):
        return record, result  # (deflation's full fit does not start from given scores)
    lost = (
        _lacks_pattern(check, record, result[1])
        if BETTER_SOLUTION
        else _collapsed(result[1], record)
    )
    if not lost:
        return record, result
    for factor in STRONGER_STARTS:
        stronger = run(dict(record, alpha_rel=record["alpha_rel"] * factor), None)
        V = stronger[1]
        if (
            not np.all(np.any(V, axis=0))
            or _collapsed(V, record)
            or _agreement(V, result[1]) >= AGREE
        ):
            continue
        again = dict(record)  # the same point and halves, fitted from a new start
        other = run(again, start((V.T,)))
        if BETTER_SOLUTION and not (_too_dense(other[1], again) or _collapsed(other[1], again)):
            if _better(other, result):
                return again, other
            continue
        if not (
            BETTER_SOLUTION or _too_dense(other[1], again) or _lacks_pattern(check, again, other[1])
        ):
            return again, other
    return record, result


def _better(new, old):
    """True when the joint fit ``new`` (``(U, V, info, ...)``) solves the
    problem of ``old`` (the same point) better: its joint objective
    (``info["objective"]``, :func:`._objective.joint_objective`) lower by more
    than the sum of both fits' certified gaps (``info["gaps"]``, the v-steps'
    duality gaps in the same units). The objective is not convex in ``(U, V)``:
    two fits at one point are two local answers, and the lower one is the
    better answer of the problem asked, whatever the halves say of it."""
    margin = np.nansum(new[2]["gaps"]) + np.nansum(old[2]["gaps"])
    return bool(new[2]["objective"] < old[2]["objective"] - margin)


def _reproduces(check, point, V):
    """True when no component of the full fit ``V`` at ``point`` is flagged on
    the halves (:meth:`._auto.Others.reproduce`, :func:`_flagged`); False when
    that is unknown (``check`` None)."""
    return check is not None and not _flagged(check.reproduce(point, V)[0])


def _once(run):
    """``run`` fitting each record once: a record fitted again (the fallback to
    the first split's choice, fitted first when the other splits were
    pending) gets the same result, the same arithmetic (issue 20 round 9)."""
    done = {}

    def cached(point, u0):
        key = id(point)
        if key not in done:
            done[key] = (point, run(point, u0))  # the record kept: its id stays its own
        return done[key][1]

    return cached


def _flagged(stability):
    """True when a component of the full fit at the first split's choice does
    not reproduce on the halves (:meth:`._auto.Others.reproduce`: below
    :data:`STABILITY_THRESHOLD`, the flag of ``stability_``, whose noise floor
    is not computed here; an empty one scores 0): only then are the other
    splits searched (issue 20 round 10; before, when the mean was below
    ``OTHER_SPLITS_BELOW``, 0.95: the fsaverage5 r = 0.8 instances whose
    correct components reproduced at 0.57-0.99 walked both splits, 7-10x one
    fit, and kept the first split every time, benchmarks/RESULTS.md)."""
    return bool(np.min(stability) < STABILITY_THRESHOLD)


def _index(path, record):
    return next(j for j, p in enumerate(path) if p is record)


def _first_fit(path, run, start):
    """The full fit at the chosen point (:func:`_fit_dense_checked`); with the
    other splits pending (``"_others"``, :class:`Others`), at the first
    split's choice first, and the other splits searched only when one of its
    components does not reproduce (:meth:`Others.reproduce`, :func:`_flagged`)
    or the first split has no admissible point or chose one with whole-map
    components (:func:`._auto.mark_whole_map`, issue 20 round 14); then at the
    choice over every split if that is another point.

    Returns
    -------
    i : int
    result : tuple
    refit : (dict, tuple of two arrays) or None
        The record whose halves were refitted, and their components.
    """
    others = path[0].pop("_others", None)
    chosen = path[choose_point(path)]
    i, result = _fit_dense_checked(path, _index(path, chosen), run, start)
    if others is None:
        return i, result, None
    stab, refit = others.reproduce(path[i], result[1])
    refit = None if refit is None else (path[i], refit)
    if not (_flagged(stab) or path[i].get("whole_map")) and any(_admissible(p) for p in path):
        return i, result, refit  # (else the other splits may have a regional point)
    others.search(path)
    new = path[choose_point(path)]
    if new is chosen:
        return i, result, refit
    i, result = _fit_dense_checked(path, _index(path, new), run, start)
    return i, result, refit
