"""The penalty ``alpha_rel="auto"`` chooses from split-half fits (issue 20).

- :func:`choose_alpha_rel` chooses along one split's path (the rule of
  ``select_penalty``), :func:`choose_point` across the splits searched
  (:data:`AUTO_SPLITS`): the rule of ``SPCATV(alpha_rel="auto")``
  (:func:`choose_least_shrunk` within a split);
- :func:`split_search` fits one split's halves along its path;
  :func:`auto_path` and :func:`auto_fit` drive them.

The halves themselves, and the ``stability_`` they give, are in
:mod:`._stability`.

Size: 600+ lines, the whole choice rule in one place (what makes a point
admissible: density, the reproducibility floor and whole-map components since
issue 20 round 14; the choice within and across splits; the walk and its
warnings, and since round 16 the whole-map signal seen at weaker points and the
participants column it follows), so that the rule can be read at once; the full
fits' checks are in :mod:`._auto_check`.
"""

import warnings

import numpy as np

from .._utils.naming import component_names
from ._split_groups import groups_of
from ._stability import (
    STABILITY_THRESHOLD,
    _fit_point,
    _half_models,
    component_stability,
    half_jobs,
    refit_halves,
    split_halves,
)
from ._stability import WHOLE_MAP as _WHOLE_MAP


def choose_alpha_rel(path):
    """The rule of ``alpha_rel="auto"`` on a path of split-half fits.

    Parameters
    ----------
    path : list of dict
        Per ``alpha_rel``: ``"alpha_rel"``, ``"reproducibility"`` (split-half
        matched absolute correlation per component pair),
        ``"nonzero_fraction"`` (per component of both halves).

    Returns
    -------
    int
        Index into ``path`` of the chosen point: the highest mean split-half
        reproducibility among the admissible points (every component of both
        halves non-empty and at most :data:`MAX_NONZERO` non-zero, or
        whole-map; the mean above :data:`REPRODUCE_FLOOR`: :func:`_admissible`;
        all points if none is admissible); an exact tie goes to the stronger
        penalty.
    """
    score = np.array([np.mean(p["reproducibility"]) for p in path])
    ok = np.array([_admissible(p) for p in path])
    if not ok.any():
        ok[:] = True
    strength = np.array([p["alpha_rel"] for p in path])
    candidates = np.flatnonzero(ok & (score == np.max(score[ok])))
    return int(candidates[np.argmax(strength[candidates])])


#: An admissible point of the automatic path has every component at most this
#: fraction non-zero (a component that covers most of the brain is not a region).
MAX_NONZERO = 0.5
#: A component at least this fraction non-zero in both halves is *whole-map*:
#: a signal spread over the whole map (a site or scanner offset, a global
#: signal), not a region. The l1 penalty shrinks such a map evenly, so it stays
#: whole (a site offset: 99-100 % non-zero at every point where it was
#: non-empty, benchmarks/RESULTS.md, issue 20 round 14), while a regional
#: component under too weak a penalty spreads part-way (55-80 %). A point
#: whose only dense components are whole-map in both halves, reproduce, and
#: leave a regional component is admissible when no point without one has
#: every component reproducing (:func:`mark_whole_map`); the fit reports
#: them (:func:`warn_empty_components`).
WHOLE_MAP = _WHOLE_MAP  # (defined in ._stability, whose stability_ uses it)
#: An admissible point's half components reproduce on average (matched
#: absolute correlation) at least this: specks that reproduce at 0.001-0.006
#: are not evidence of a pattern (issue 20 round 14; unrelated smooth maps
#: match at a few hundredths).
REPRODUCE_FLOOR = 0.1

#: The documented fixed split ``(l1_ratio, tv_ratio)``: what ``l1_ratio="auto"``
#: and ``tv_ratio="auto"`` mean when the split is not searched.
DEFAULT_SPLIT = (0.05, 0.1)
#: The path of relative penalties of a fixed split under ``alpha_rel="auto"``.
AUTO_ALPHA_REL_PATH = (0.5, 1.0, 2.0, 4.0, 8.0)
#: The splits searched by ``alpha_rel="auto"`` when ``l1_ratio`` and
#: ``tv_ratio`` are "auto": ``(split, its path)``. The sparse split puts more
#: of ``alpha`` on l1 and TV, so its path is weaker.
AUTO_SPLITS = (
    (DEFAULT_SPLIT, AUTO_ALPHA_REL_PATH),
    ((0.3, 0.3), (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)),
)
#: A split's path stops after a point that reproduces worse than an earlier
#: admissible point which reproduced at least this (:func:`split_search`).
STOP_REPRODUCIBILITY = 0.9
#: A split other than the first one searched is chosen only when its best
#: point is more reproducible by more than this (mean matched |corr|).
SPLIT_MARGIN = 0.02
#: The other splits are searched only when the first split's best point
#: reproduces below this (mean matched |corr|), and then (issue 20 round 10)
#: only when the full fit at its choice has a component ``stability_`` would
#: flag (:class:`Others`): they are the fallback for a default split whose
#: components do not reproduce. Measured (benchmarks/
#: RESULTS.md, issue 20 round 4): the sparse split won only where the default
#: split's best was 0.64-0.82; where it was 0.96-0.97 (four instances) the
#: sparse split reached at most 0.97 and its walk was 30-70 % of the fit's
#: time. (Before: ``1 - SPLIT_MARGIN``, where no other split can win.)
OTHER_SPLITS_BELOW = 0.95


def _split_of(point):
    return point.get("l1_ratio"), point.get("tv_ratio")


def whole_map_count(point):
    """The number of *whole-map* components of a point's halves
    (:data:`WHOLE_MAP`) when every other component is regional (at most
    :data:`MAX_NONZERO` non-zero), both halves have as many whole-map
    components, each of half A's reproduces at least :data:`REPRODUCE_FLOOR`
    and each half keeps a regional component; else 0."""
    nz = np.asarray(point["nonzero_fraction"], float)
    a, b = np.split(nz, 2)
    whole_a, whole_b = a >= WHOLE_MAP, b >= WHOLE_MAP
    shape = np.all((nz <= MAX_NONZERO) | (nz >= WHOLE_MAP)) and whole_a.sum() == whole_b.sum()
    regional = (a <= MAX_NONZERO).any() and (b <= MAX_NONZERO).any()
    repro = np.asarray(point["reproducibility"], float)[whole_a]
    return int(whole_a.sum()) if shape and regional and np.all(repro >= REPRODUCE_FLOOR) else 0


def _admissible(point):
    """Every component of both halves non-empty and regional (at most
    :data:`MAX_NONZERO` non-zero), or whole-map where :func:`mark_whole_map`
    allowed it (``"whole_map"`` in the record), and the mean reproducibility
    at least :data:`REPRODUCE_FLOOR` (issue 20 round 14)."""
    nz = np.asarray(point["nonzero_fraction"], float)
    if not np.all(nz > 0) or np.mean(point["reproducibility"]) < REPRODUCE_FLOOR:
        return False
    return bool(np.all(nz <= MAX_NONZERO) or point.get("whole_map", False))


def mark_whole_map(points):
    """Allow whole-map components in the records ``points`` (every split
    searched so far) when no record without one is admissible with every
    component reproducing at least :data:`REPRODUCE_FLOOR`: then each record
    with :func:`whole_map_count` at least 1 gets ``"whole_map": True`` (else
    the mark is removed). Returns ``points``.

    A regional point whose every component reproduces is preferred: on the
    harmonised cohort (each site's mean removed) the age effect, thinning the
    whole cortex, was whole-map at weaker points, and choosing one cost a
    planted pattern (abs cos 0.90 -> 0.44, and 0.95/0.96/0.97 -> 0.64/0.75/0.99
    against the sparse split's regional point); without its sites, one
    cohort's only regional admissible point (alpha_rel 8) held specks in two
    of its three components (reproducing at 0.007 and 0.003) (issue 20
    round 14, benchmarks/RESULTS.md).
    """
    for p in points:
        p.pop("whole_map", None)
    if not any(_admissible(p) and min(p["reproducibility"]) >= REPRODUCE_FLOOR for p in points):
        for p in points:
            if np.all(np.asarray(p["nonzero_fraction"]) > 0) and whole_map_count(p):
                p["whole_map"] = True
    return points


def _has_empty(point):
    return bool(np.any(point["nonzero_fraction"] == 0))


class SplitWalk:
    """One split's halves along its path, weakest first, resumable.

    Each point is warm-started from the previous one, the first with at
    most :data:`FIRST_POINT_SWEEPS` sweeps (a start from the
    weaker, denser point keeps co-varying regions apart: started cold in the
    middle of the path, the halves of a severity-correlated cohort settled on
    merged components, benchmarks/RESULTS.md, issue 20 round 3). :meth:`walk`
    stops where :func:`split_search` says; :meth:`step` fits one more point
    (``auto_fit`` asks for more when the full fit at the last admissible
    point is too dense), with the same models, so a point is the same whether
    it was fitted by the walk or later.

    Parameters
    ----------
    models : list of two SPCATV
        :func:`_half_models`.
    halves : tuple of two arrays
    split : (float, float)
        ``(l1_ratio, tv_ratio)``.
    alpha_rels : sequence of float
        The split's path, weakest first.
    n_jobs : int
        Threads for the two halves of a point (:func:`half_jobs`).
    """

    def __init__(self, models, halves, split, alpha_rels, n_jobs=1):
        self.models, self.halves, self.n_jobs = models, halves, n_jobs
        self.base = {"l1_ratio": float(split[0]), "tv_ratio": float(split[1])}
        self.sweeps = getattr(models[0], "max_sweeps", None)
        self.todo = [float(a) for a in alpha_rels]
        self.points = []

    def ended(self):
        """True at the end of the path, after a point with an empty half
        component, or after the first point less reproducible than an earlier
        admissible one at :data:`STOP_REPRODUCIBILITY` (:func:`_past_best`)."""
        p = self.points
        return not self.todo or bool(p) and (_has_empty(p[-1]) or _past_best(p))

    def step(self):
        """Fit the next point unless :meth:`ended`; True if one was fitted."""
        if self.ended():
            return False
        params = dict(self.base, alpha_rel=self.todo.pop(0))
        first = not self.points and FIRST_POINT_SWEEPS is not None
        for m in self.models if self.sweeps is not None else []:  # FIRST_POINT_SWEEPS
            m.max_sweeps = min(self.sweeps, FIRST_POINT_SWEEPS) if first else self.sweeps
        self.points.append(_fit_point(self.models, self.halves, params, self.n_jobs))
        return True

    def walk(self):
        """Fit points until :meth:`ended`, :func:`_settled`,
        :func:`_reproduces` or :func:`_second_kept`; the points."""
        p = self.points
        while not (p and (_settled(p) or _reproduces(p) or _second_kept(p))) and self.step():
            pass
        return p


def split_search(models, halves, split, alpha_rels, n_jobs=1):
    """One split of the penalty: its halves along its path, weakest first.

    The path stops after the first point with an empty half component (it is
    not admissible, and stronger penalties only empty more), after the first
    point that reproduces worse than an earlier admissible point which
    reproduced at least :data:`STOP_REPRODUCIBILITY` (:func:`_past_best`;
    below that, reproducibility along the path is not monotone: measured
    0.55, 0.23, 0.65 along one split and 0.65, 0.50, 0.28, 0.99 along the other
    on one cohort), and, since issue 20 round 7, after the first point that
    did not change the split's choice (:func:`_settled`) and after the first
    point past the first whose every pair of half components reproduces at
    least :data:`STOP_REPRODUCIBILITY` (:func:`_reproduces`), and, since
    round 13, after a second point that is the split's choice
    (:func:`_second_kept`). The parameters are :class:`SplitWalk`'s.

    Returns
    -------
    list of dict
        :func:`fit_halves`' records with ``l1_ratio`` and ``tv_ratio``,
        weakest first.
    """
    return SplitWalk(models, halves, split, alpha_rels, n_jobs).walk()


def _reproduces(points):
    """True when the last point is admissible, not the path's first, and every
    pair of half components reproduces at least :data:`STOP_REPRODUCIBILITY`:
    the least shrunk point whose every pattern reproduces (issue 20 round 7;
    where a stronger point reproduced better still, the full fits' check of
    :func:`auto_fit` came back to this one on every measured instance)."""
    last = points[-1]
    return (
        len(points) > 1
        and _admissible(last)
        and bool(np.min(last["reproducibility"]) >= STOP_REPRODUCIBILITY)
    )


#: Most back-fitting sweeps of the halves at a split's first point (the
#: weakest, cold-started one; ``method="joint"``). That point is the warm
#: start of the next one and is not chosen while another point is admissible
#: (:func:`choose_least_shrunk`); at the halves' cap of 15 sweeps it was
#: 1.4-2.5 one-fit units of the default fit on fsaverage5 r = 0.8, its halves
#: unsettled (benchmarks/RESULTS.md, issue 20 round 13: at 3 sweeps 0.8-0.9
#: units, the same choice and recovery on the development seeds). None: as
#: every point.
FIRST_POINT_SWEEPS = 3


def _second_kept(points):
    """True when the walk has two points and the split's choice
    (:func:`choose_least_shrunk`) is the second, admissible: the least shrunk
    point past the cold first one. A third, stronger point could move the
    halves' choice only to a stronger point, and the full fits' check
    (:func:`._auto_check.auto_fit`) comes back to this one when their fits
    agree or its components reproduce (issue 20 round 13: on fsaverage5 r =
    0.8 the third point was 0.6-1.4 one-fit units and the point kept was the
    second on every measured instance)."""
    return len(points) == 2 and _admissible(points[1]) and choose_least_shrunk(points) == 1


def _settled(points):
    """True when the split's choice (:func:`choose_least_shrunk`) is an
    admissible point other than the path's first and the last point did not
    change it (issue 20 round 7, benchmarks/RESULTS.md: with
    :func:`_reproduces`, the points no longer walked were 13-51 % of the halves'
    CPU time on 49 instances, and the point the full fits' check returned was
    the same on all of them)."""
    if len(points) < 3:
        return False
    c = choose_least_shrunk(points)
    return c > 0 and _admissible(points[c]) and c == choose_least_shrunk(points[:-1])


def _past_best(points):
    """True when the last point reproduces worse than the best admissible point
    before it and that one reproduced at least :data:`STOP_REPRODUCIBILITY`."""
    score = [float(np.mean(p["reproducibility"])) for p in points]
    best = [score[i] for i, p in enumerate(points[:-1]) if _admissible(p)]
    return bool(best) and max(best) >= STOP_REPRODUCIBILITY and score[-1] < max(best)


def _standard_error(point):
    """Standard error of a point's mean reproducibility over its components
    (sample standard deviation / sqrt(K); 0 for one component)."""
    r = np.asarray(point["reproducibility"], float)
    return float(np.std(r, ddof=1) / np.sqrt(r.size)) if r.size > 1 else 0.0


def choose_least_shrunk(path):
    """The default fit's rule on one split's path: the least shrunk point that
    reproduces within one standard error of the best (issue 20, round 5).

    The most reproducible admissible point (:func:`choose_alpha_rel`) is the
    reference. A point's mean reproducibility over its components has the
    standard error :func:`_standard_error`; a point is *near* the reference
    when its mean is at least the reference's minus the standard error of
    the difference of the two means (``hypot`` of the two errors: the
    components of two points are not paired). Among the admissible near
    points the weakest penalty is chosen, the path's first (weakest,
    cold-started) point excepted while another admissible point exists.

    Why (benchmarks/RESULTS.md, issue 20 round 5; docs/trust.rst): the halves
    have half the samples and reproduce best at a penalty that shrinks the
    weakest pattern of the full fit (the most reproducible point merged or lost
    a pattern on 12 of 16 development instances, where a weaker point separated
    every one), and the differences were mostly within the error; the first
    point's half fits never settle (cold start).

    Parameters
    ----------
    path : list of dict
        One split's records (``alpha_rel``, ``reproducibility``,
        ``nonzero_fraction``), weakest first.

    Returns
    -------
    int
        Index into ``path``.
    """
    ref = choose_alpha_rel(path)
    if not _admissible(path[ref]):
        return ref
    best, err = np.mean(path[ref]["reproducibility"]), _standard_error(path[ref])
    near = [
        i
        for i, p in enumerate(path)
        if _admissible(p)
        and np.mean(p["reproducibility"]) >= best - np.hypot(err, _standard_error(p))
    ]
    later = [i for i in near if i > 0]
    return min(later or near, key=lambda i: path[i]["alpha_rel"])


def choose_point(path):
    """The rule of ``alpha_rel="auto"`` over one or several splits of the penalty.

    Each split's point is :func:`choose_least_shrunk` of its own points (the
    least shrunk point within one standard error of the split's most
    reproducible admissible point). The first split (the documented default,
    ``(0.05, 0.1)``) is kept unless another split's best point (the most
    reproducible admissible one) is more reproducible than the first
    split's best by more than :data:`SPLIT_MARGIN` and by more than the
    standard error of the first split's best (or the first split has no
    admissible point and another has): differences within that error are
    not evidence (issue 20 round 5). Among the other splits the most
    reproducible best point wins.

    Parameters
    ----------
    path : list of dict
        Records with ``alpha_rel``, ``l1_ratio``, ``tv_ratio``,
        ``reproducibility``, ``nonzero_fraction``; a split's records are
        contiguous, the first split's first.

    Returns
    -------
    int
        Index into ``path``.
    """
    groups = {}
    for i, p in enumerate(path):
        groups.setdefault(_split_of(p), []).append(i)
    best = []
    for idx in groups.values():
        points = [path[i] for i in idx]
        j = idx[choose_alpha_rel(points)]
        best.append((idx, _admissible(path[j]), float(np.mean(path[j]["reproducibility"])), j))
    chosen, ok, score, j0 = best[0]
    margin = max(SPLIT_MARGIN, _standard_error(path[j0]))
    others = sorted((b for b in best[1:] if b[1]), key=lambda b: -b[2])  # admissible ones
    for idx, _, score_j, _ in others[:1]:
        if not ok or score_j > score + margin:
            chosen = idx
    return chosen[choose_least_shrunk([path[i] for i in chosen])]


def _unbeatable(path):
    """True when the first split's best point is admissible and reproduces at
    least :data:`OTHER_SPLITS_BELOW`: its components reproduce, and the other
    splits are not searched (below ``1 - SPLIT_MARGIN`` one could still win in
    principle; on the four measured instances where the default split's best
    reproduced at 0.96-0.97, none did)."""
    first = [p for p in path if _split_of(p) == _split_of(path[0])]
    best = first[choose_alpha_rel(first)]
    return _admissible(best) and np.mean(best["reproducibility"]) >= OTHER_SPLITS_BELOW


def auto_path(estimator, X):
    """``alpha_rel="auto"``: the halves fitted along each searched split (else nothing).

    The halves are drawn once (``random_state``) and shared by every split;
    each split is searched by :func:`split_search` along its own path
    (:func:`searched_splits`). The other splits are not searched when the
    first split's best point already reproduces (:func:`_unbeatable`);
    otherwise they wait for the full fit at the first split's choice
    (:class:`Others`, ``"_others"`` in the first record: :func:`auto_fit`).
    The same :class:`Others` is ``"_check"`` in the first record whatever the
    splits: :func:`auto_fit` measures full fits on the halves with it.

    Returns
    -------
    halves : (ndarray, ndarray) or None
        The two halves' components at the chosen point.
    path : list of dict
        The records of every split (``auto_path_`` once :func:`auto_fit`
        has removed their components), split by split, weakest first.
    """
    splits = searched_splits(estimator)
    if not splits:
        return None, []
    seed = 0 if estimator.random_state is None else estimator.random_state
    halves = split_halves(X, seed, groups_of(estimator))
    n_jobs = half_jobs(estimator, X)

    def walk_split(split, alpha_rels):
        walk = SplitWalk(_half_models(estimator), halves, split, alpha_rels, n_jobs)
        points = [dict(p, _walk=walk) for p in walk.walk()]
        _say_points(estimator, points)
        return points

    path = mark_whole_map(walk_split(*splits[0]))
    others = splits[1:] if not _unbeatable(path) else []
    check = path[0]["_check"] = Others(estimator, halves, n_jobs, others, walk_split)
    if others:  # the full fit at the first split's choice decides first (auto_fit)
        path[0]["_others"] = check
    return path[choose_point(path)]["components"], path


def _say_points(estimator, points):
    from ._alternation import _say

    for p in points if estimator.verbose else []:
        _say(
            "l1_ratio=%g tv_ratio=%g alpha_rel=%g: split-half reproducibility %s, non-zero %s",
            p["l1_ratio"],
            p["tv_ratio"],
            p["alpha_rel"],
            np.array2string(p["reproducibility"], precision=2),
            np.array2string(p["nonzero_fraction"], precision=3),
        )


class Others:
    """The splits after the first, not yet searched (issue 20 rounds 9-10).

    The other splits are the fallback for a default split whose components
    do not reproduce. When the first split's best point reproduces below
    :data:`OTHER_SPLITS_BELOW` on the halves, :func:`auto_fit` fits the full
    data at the first split's choice first; :meth:`reproduce` measures its
    components on the halves as ``stability_`` does
    (:func:`._stability.halves_stability`: the walk's halves, refitted from
    the full fit for a component below :data:`STABILITY_THRESHOLD`), and the
    other splits are searched (:meth:`search`) only when a component is below
    :data:`STABILITY_THRESHOLD` there (``stability_`` would flag it, before
    its noise floor: :func:`._auto_check._flagged`). Round 9 did this only when the halves
    had lost a pattern at the choice, and searched when the mean was below
    :data:`OTHER_SPLITS_BELOW`: on fsaverage5 r = 0.8 both splits were then
    walked (7-10x one fit) for components that reproduced at 0.57-0.99 and
    the first split was kept every time (benchmarks/RESULTS.md, issue 20
    rounds 8-10).

    Parameters
    ----------
    estimator : SPCATV
    halves : tuple of two arrays
        The data's halves.
    n_jobs : int
    splits : list of ((float, float), sequence of float)
        The splits not searched yet and their paths.
    walk_split : callable
        ``walk_split(split, alpha_rels)``: a split's records.
    """

    def __init__(self, estimator, halves, n_jobs, splits, walk_split):
        self.estimator, self.halves, self.n_jobs = estimator, halves, n_jobs
        self.splits, self.walk_split = splits, walk_split
        self.done = {}

    @property
    def starts_from_scores(self):
        """True when the full fits start from given scores (``method="joint"``)."""
        return getattr(self.estimator, "method", None) == "joint"

    def reproduce(self, point, V):
        """``(stability, refit)`` of the full fit's loadings ``V`` (features x
        components) at the record ``point``: the walk's halves' value per
        component, refitted (``refit``: the two halves' components, else None)
        for one below :data:`STABILITY_THRESHOLD`. Each ``(point, V)`` is
        measured once (the last one per record is kept)."""
        old = self.done.get(id(point))
        if old is None or old[1] is not V:
            old = self.done[id(point)] = (point, V, *self._reproduce(point, V))
        return old[2].copy(), old[3]

    def refit_of(self, point, V):
        """The halves refitted when ``V`` was measured at ``point``, or None."""
        old = self.done.get(id(point))
        return old[3] if old is not None and old[1] is V else None

    def _reproduce(self, point, V):
        norms = np.linalg.norm(V, axis=0)
        C = (V / np.where(norms > 0, norms, 1.0)).T
        stab = component_stability(C, *point["components"])
        low = np.any(C != 0, axis=1) & (stab < STABILITY_THRESHOLD)
        if not low.any():
            return stab, None
        params = {"alpha": None, **{k: point[k] for k in ("alpha_rel", "l1_ratio", "tv_ratio")}}
        refit = refit_halves(self.estimator, self.halves, params, C, self.n_jobs)
        stab[low] = component_stability(C, *refit)[low]
        return stab, refit

    def search(self, path):
        """Append the other splits' records to ``path``."""
        for split, alpha_rels in self.splits:
            path += self.walk_split(split, alpha_rels)
        mark_whole_map(path)  # (a regional point of another split may now exist)


def fixed_split(l1_ratio, tv_ratio):
    """``(l1_ratio, tv_ratio)`` as numbers: "auto" is the documented default
    (:data:`DEFAULT_SPLIT`) when the split is not searched."""
    return (
        DEFAULT_SPLIT[0] if isinstance(l1_ratio, str) else float(l1_ratio),
        DEFAULT_SPLIT[1] if isinstance(tv_ratio, str) else float(tv_ratio),
    )


def searched_splits(estimator):
    """The splits ``alpha_rel="auto"`` searches: ``[(split, path)]``.

    None searched (an empty list) at a fixed penalty (``alpha`` given or
    ``alpha_rel`` a number). With ``l1_ratio`` and ``tv_ratio`` both "auto":
    :data:`AUTO_SPLITS`; otherwise the one fixed split (an "auto" ratio
    taking its default) along :data:`AUTO_ALPHA_REL_PATH`.
    """
    if estimator.alpha is not None or not isinstance(estimator.alpha_rel, str):
        return []
    if isinstance(estimator.l1_ratio, str) and isinstance(estimator.tv_ratio, str):
        return list(AUTO_SPLITS)
    split = fixed_split(estimator.l1_ratio, estimator.tv_ratio)
    return [(split, AUTO_ALPHA_REL_PATH)]


def auto_fit(path, run, start):
    """The full fit of ``alpha_rel="auto"`` at the chosen point of ``path``:
    :func:`._auto_check.auto_fit` (the full fits' check of the choice)."""
    from ._auto_check import auto_fit as check

    return check(path, run, start)


def mark_dense_effect(path):
    """Record in ``path`` (records with their halves' ``"components"``) each
    point whose two halves both hold a whole-map component (:data:`WHOLE_MAP`)
    that agree (uncentred abs cosine at least :data:`STABILITY_THRESHOLD`):
    ``"dense_effect"`` = ``[non-zero fraction in half A, in half B, cosine]``
    (issue 20 round 16). Returns the weakest such point's half-A map (unit
    norm) or None.

    A whole-map signal left in the data (an unregressed confound such as age,
    a site offset) takes a component at the weaker penalties and makes them
    inadmissible; the chosen, stronger point may then leave a component empty
    or a planted pattern missed (harmonised cohorts with the age effect left
    in, benchmarks/RESULTS.md, issue 20 round 16): :func:`warn_empty_components`
    says so."""
    first = None
    for p in path:
        a, b = (np.asarray(c, dtype=float) for c in p["components"])
        if a.ndim != 2 or b.ndim != 2 or 0 in a.shape or 0 in b.shape:
            continue  # (scripted records without the halves' maps)
        da, db = np.mean(a != 0, axis=1), np.mean(b != 0, axis=1)
        i, j = int(np.argmax(da)), int(np.argmax(db))
        if da[i] < WHOLE_MAP or db[j] < WHOLE_MAP:
            continue
        na, nb = np.linalg.norm(a[i]), np.linalg.norm(b[j])
        cos = abs(float(a[i] @ b[j])) / float(na * nb)
        if cos >= STABILITY_THRESHOLD:
            p["dense_effect"] = [round(float(da[i]), 3), round(float(db[j]), 3), round(cos, 3)]
            first = a[i] / na if first is None else first
    return first


#: With a whole-map signal seen at weaker points (:func:`mark_dense_effect`), a
#: component with fewer than this fraction of the largest one's non-zero
#: loadings (and a small share of the variance, :data:`SMALL_SHARE`) is named by
#: :func:`warn_empty_components`: on a harmonised cohort with the age effect
#: left in (seed 3583 sorted by site) the third component was a speck of 0.2 %
#: (against 2 %) following age (abs corr 0.55), and a planted pattern was
#: missed with no warning; where every pattern was found the least component
#: had 0.50-0.62 of the largest's non-zeros (benchmarks/RESULTS.md, issue 20
#: round 16; set after seeing those seeds).
SMALL = 0.2
#: ... and less than this fraction of the largest one's variance
#: (``singular_values_`` squared; issue 20 round 17): the size alone also named
#: the smallest component of brainspace's resting-state run (every 8th volume,
#: 3 components: 28 % / 12 % / 4.4 % non-zero, a whole-map signal at alpha_rel
#: 0.5), which carries 0.28 of the largest's variance; the age specks carried
#: 0.06-0.08 (RESULTS.md, issue 20 round 17). ``explained_variance_ratio_``
#: (adjusted: what the earlier components left) gave 0.17 for the former.
SMALL_SHARE = 0.2
#: The small-component warning (:data:`SMALL` and :data:`SMALL_SHARE`) is on
#: (issue 20 round 17; round 16 built it off): on fresh harmonised cohorts with
#: the age effect left in it named the one silent miss (seed 3654 sorted by
#: site: a 0.6 % component following age, two planted patterns merged in one)
#: and nothing on the fits that found every pattern, the evidence sets, age
#: regressed, nor brainspace's resting-state fits (benchmarks/RESULTS.md).
WARN_SMALL = True


def _minor(estimator):
    """Components whose rank-one variance (``singular_values_`` squared) is
    below :data:`SMALL_SHARE` of the largest one's (all False without it)."""
    sv = getattr(estimator, "singular_values_", None)
    if sv is None or np.size(sv) == 0 or not np.max(np.abs(sv)) > 0:
        return False
    var = np.asarray(sv, dtype=float) ** 2
    return var < SMALL_SHARE * var.max()


def _are(rows):
    """The verb for :func:`component_names` of ``rows``."""
    return "is" if len(rows) == 1 else "are"


def _percent(values):
    return "/".join(f"{v:.1%}" for v in values)


def _dense_text(estimator):
    """The whole-map signal seen at weaker points (``"dense_effect"`` records), or ""."""
    seen = [p for p in getattr(estimator, "auto_path_", None) or [] if p.get("dense_effect")]
    if not seen:
        return ""
    nz = [f for p in seen for f in p["dense_effect"][:2]]
    span = (
        f"{min(nz):.0%}"
        if round(min(nz), 2) == round(max(nz), 2)
        else f"{min(nz):.0%}-{max(nz):.0%}"
    )
    at = ", ".join(f"{p['alpha_rel']:g} ({p['l1_ratio']:g}, {p['tv_ratio']:g})" for p in seen)
    return (
        f" At alpha_rel {at} (l1_ratio, tv_ratio) both halves held a whole-map component "
        f"({span} non-zero, the same map in both): a signal over the whole map (an "
        "unregressed confound such as age, a site offset, a global signal) took a component "
        "there"
    )


def warn_empty_components(estimator):
    """Warn when the penalty ``alpha_rel="auto"`` chose leaves components of
    ``estimator`` (fitted) empty, or whole-map (:data:`WHOLE_MAP`), or when a
    whole-map signal was seen at weaker points (:func:`mark_dense_effect`).

    Measured (benchmarks/RESULTS.md, issue 20 rounds 13-14): a simulated
    three-site cortical-thickness cohort (``make_multisite_cohort``) given
    without its sites. Every penalty's first component is the site offset,
    spread over the whole cortex. Before round 14 that made every weaker
    point inadmissible; the only admissible point of the default split was
    alpha_rel 8, whose halves held specks (0.2-2.5 % non-zero, reproducing at
    0.001-0.006), and the full fit there had all three components empty.
    Since round 14 such specks are not admissible (:data:`REPRODUCE_FLOOR`)
    and a whole-map component is allowed where no point without one has every
    component reproducing (:func:`mark_whole_map`): it is kept, and this
    warning names it. Since round 16 a whole-map signal seen only at weaker
    points is named too (with the age effect left in, the chosen point left
    components empty or missed a planted pattern; round 16), and since round 17
    a component small in non-zeros and in variance beside it (:data:`SMALL`,
    :data:`SMALL_SHARE`: a speck that may hold the signal while a region is
    missed).
    """
    density = np.mean(estimator.loadings_ != 0, axis=0)
    empty, whole = np.flatnonzero(density == 0), np.flatnonzero(density >= WHOLE_MAP)
    k = density.size
    point = (
        f'alpha_rel="auto" chose alpha_rel={estimator.alpha_rel_:.3g} (l1_ratio='
        f"{estimator.l1_ratio_:.3g}, tv_ratio={estimator.tv_ratio_:.3g}), where "
    )
    remedy = (
        "remove it first (ImageSPCATV's confounds=, site harmonisation with neurospca.study, "
        f"split_groups); n_components={k + 1} leaves room for it, but in simulations only "
        "removing it brought every pattern back"
    )
    if whole.size:
        warnings.warn(
            f"{point}{component_names(whole, k)} {_are(whole)} whole-map (at least "
            f"{WHOLE_MAP:.0%} non-zero): a signal spread over the whole map (a site or "
            f"scanner offset, a global signal, an effect of age), not a region. To see the "
            f"regions it hides, {remedy}.",
            UserWarning,
            stacklevel=3,
        )
    dense = _dense_text(estimator)
    small = np.flatnonzero((density > 0) & (density < SMALL * density.max()) & _minor(estimator))
    if WARN_SMALL and empty.size == 0 and whole.size == 0 and small.size and dense:
        warnings.warn(
            f"{point}{component_names(small, k)} {_are(small)} much smaller than the largest "
            f"({_percent(density[small])} against {density.max():.1%} non-zero, with less "
            f"than {SMALL_SHARE:.0%} of the largest variance).{dense}, and may hide a "
            "regional component at the chosen penalty (with the age effect left in, a "
            "simulated cohort's smallest component held it, not a planted pattern). To see "
            f"the regions, {remedy}.",
            UserWarning,
            stacklevel=3,
        )
    if empty.size == 0:
        return
    said = (
        f"{dense} and made those penalties inadmissible. To see the regions, {remedy}."
        if dense
        else " When a component spread over the whole map (a site or scanner offset, a "
        f"global signal) makes the weaker penalties too dense to be chosen, {remedy}; "
        "otherwise fewer components or a fixed alpha_rel may suit the data."
    )
    warnings.warn(
        f"{point}{component_names(empty, k)} {_are(empty)} empty.{said}", UserWarning, stacklevel=3
    )


#: :func:`name_dense_confound` names a column only when its association with
#: the whole-map signal's scores is at least this (lead, round 16): a column
#: that follows the signal by chance (random levels, n = 120: about 0.1-0.15)
#: is not named; the age effect left in scored 0.8-0.96 (RESULTS.md, round 16).
NAME_MIN = 0.3
#: Text columns with more levels than this are not scored (the correlation
#: ratio of many small levels is large by chance).
NAME_MAX_LEVELS = 20


def name_dense_confound(estimator, X, table, skip=()):
    """Warn naming the column of the participants ``table`` whose values
    correlate most with the scores of the whole-map signal that
    ``estimator`` (a fitted SPCATV, ``alpha_rel="auto"``) saw at weaker
    points (:func:`mark_dense_effect`), if any; returns ``(column, |r|)`` or None.

    Parameters
    ----------
    estimator : SPCATV
        Fitted on ``X``.
    X : array of shape (n_samples, n_features)
        The data it was fitted on, one row per row of ``table``.
    table : pandas.DataFrame
        The participants' rows in the order of ``X``.
    skip : iterable of str
        Columns not to name (the ID column, the sites harmonised).

    Numeric columns are scored by the absolute Pearson correlation, text
    columns by the correlation ratio (the square root of the share of the
    scores' variance between the column's levels, at most
    :data:`NAME_MAX_LEVELS` levels); a column is named only from
    :data:`NAME_MIN`."""
    dense = getattr(estimator, "_dense_map", None)
    if dense is None:
        return None
    s = np.asarray(X @ dense, float) - float(np.mean(X, axis=0) @ dense)
    best = max(
        ((_association(s, table[c]), c) for c in table.columns if c not in set(skip)),
        default=(0.0, None),
    )
    if best[1] is None or not best[0] >= NAME_MIN:
        return None
    warnings.warn(
        "The whole-map signal both halves held at weaker penalties (auto_path_'s "
        f'"dense_effect") correlates most with the participants column {best[1]!r} (|r| = '
        f"{best[0]:.2f}): pass confounds=[{best[1]!r}] if it is a confound (or fit "
        f"n_components={estimator.loadings_.shape[1] + 1} to leave room for it).",
        UserWarning,
        stacklevel=3,
    )
    return best[1], best[0]


def _association(scores, column):
    """|Pearson r| of a numeric column, else the correlation ratio of its levels."""
    values = np.asarray(column.to_numpy())
    if values.dtype.kind in "biuf":
        ok = np.isfinite(values.astype(float))
        v, s = values[ok].astype(float), scores[ok]
        if v.size < 3 or np.std(v) == 0 or np.std(s) == 0:
            return 0.0
        return float(abs(np.corrcoef(v, s)[0, 1]))
    levels = values.astype(str)
    names = np.unique(levels)
    if not 1 < names.size <= min(NAME_MAX_LEVELS, levels.size - 1) or np.var(scores) == 0:
        return 0.0
    between = sum(
        np.sum(levels == n) * (scores[levels == n].mean() - scores.mean()) ** 2 for n in names
    )
    return float(np.sqrt(between / (np.var(scores) * scores.size)))
