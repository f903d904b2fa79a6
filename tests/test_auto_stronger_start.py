"""Issue 20 round 12: a pattern lost at the chosen point, found from a stronger fit.

On the paper's r = 0.7 set (seeds 3315, 3316, 3324, 3329) and fsaverage5
r = 0.8 (seed 3312) the default fit lost its weakest planted pattern at
``alpha_rel`` 1: the sweeps settled with that component collapsed or on
noise, at a joint objective *above* that of a fit started from the planted
patterns (the loss is the optimisation's, not the objective's). A cold fit at
a stronger penalty held the pattern, and the fit at 1 started there kept it.
``_auto_check._from_stronger`` does that when a component of the fit kept
collapsed (not when it only fails to reproduce: on a resting-state run that
refit made the halves agree less, benchmarks/RESULTS.md round 12).

Round 13: with ``_auto_check.BETTER_SOLUTION`` (off by default) the refit also
fires for a flagged component and is kept only as a better solution of the
same problem: a joint objective lower by more than both fits' certified gaps.
"""

import numpy as np
import pytest

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import DEFAULT_SPLIT, _auto_check
from neurospca.decomposition._data import validated_data_operator
from neurospca.decomposition._objective import joint_objective
from neurospca.solvers.penalties import eq3_pieces

from ._helpers import path_record

W = 40  # features per pattern: a component on 1 feature has collapsed (< 0.05 x 40)


def _separate():
    """Three patterns on ``W`` features each."""
    V = np.zeros((3 * W, 3))
    V[:W, 0], V[W : 2 * W, 1], V[2 * W :, 2] = 1.0, 1.0, 1.0
    return V


def _lost(width=1):
    """Two patterns kept, the third on ``width`` noise features of the first's
    (one: collapsed)."""
    V = _separate()
    V[2 * W :, 2] = 0.0
    V[3 : 3 + width, 2] = 1.0
    return V


def _noise():
    """The third component spread over the other two patterns' features (not
    collapsed, flagged on the halves)."""
    V = _separate()
    V[:, 2] = np.sin(np.arange(3.0 * W))
    V[2 * W :, 2] = 0.0
    return V


class _Check:
    """``Others`` with a measure of each full fit on the halves: a component
    without a pattern of its own is flagged."""

    def __init__(self, joint=True):
        self.starts_from_scores = joint

    def reproduce(self, point, V):
        flagged = np.sum(V[2 * W :, 2] != 0) == 0
        return np.array([0.9, 0.9, 0.1 if flagged else 0.9]), None

    def refit_of(self, point, V):
        return None


def _auto_fit(fits, joint=True):
    """The check of a one-point path at ``alpha_rel`` 1; ``fits(alpha_rel, u0)``
    is the full fit's loadings, or ``(loadings, info)``. Returns the point
    kept, its loadings and the fits made as ``(alpha_rel, start)``."""
    path = [dict(path_record(DEFAULT_SPLIT, 1.0, (0.9,) * 3, (0.1,) * 6), components=(None, None))]
    path[0]["_check"] = _Check(joint)
    made = []

    def run(point, u0):
        made.append((point["alpha_rel"], u0))
        out = fits(point["alpha_rel"], u0)
        return (None, *out) if isinstance(out, tuple) else (None, out)

    point, _, result = _auto_check.auto_fit(path, run, lambda h: ("scores of", h[0]))
    return point["alpha_rel"], result[1], made


def test_a_lost_pattern_is_found_from_a_stronger_fit():
    def fits(a, u0):
        if a == 1.0:  # the lost pattern only from the stronger fit's scores
            return _separate() if u0 is not None and u0[1] is not None else _lost()
        return _separate() * (a > 1.5)  # 1.41: the weak pattern empty; 2: held

    alpha_rel, V, made = _auto_fit(fits)
    assert alpha_rel == 1.0 and np.array_equal(V, _separate())
    # the chosen point, its halves' start; 1.41 (an empty component: no start),
    # 2 (held), then the chosen point from 2's loadings
    assert [a for a, _ in made] == [1.0, 2**0.5, 2.0, 1.0]
    assert np.array_equal(made[-1][1][1], _separate().T)


def test_a_start_that_agrees_with_the_fit_is_not_tried():
    def fits(a, u0):
        if a == 1.0:
            return _lost()
        V = _lost()  # not collapsed (a second feature), the same patterns: abs corr 0.995
        V[4, 2] = 0.1
        return V

    alpha_rel, V, made = _auto_fit(fits)
    assert np.array_equal(V, _lost())
    assert [a for a, _ in made] == [1.0, 2**0.5, 2.0, 4.0]  # no second fit at 1


def test_the_fit_is_kept_when_the_new_start_loses_the_pattern_too():
    def fits(a, u0):
        return _lost() if a == 1.0 else _separate()

    alpha_rel, V, made = _auto_fit(fits)
    assert alpha_rel == 1.0 and np.array_equal(V, _lost())
    assert [a for a, _ in made] == [1.0, 2**0.5, 1.0, 2.0, 1.0, 4.0, 1.0]


def test_a_fit_whose_components_reproduce_is_not_refitted():
    alpha_rel, V, made = _auto_fit(lambda a, u0: _separate())
    assert [a for a, _ in made] == [1.0]


def test_a_flagged_component_that_did_not_collapse_is_not_refitted():
    # flagged on the halves (the check's measure) but not collapsed: no refit
    for kept in (_noise(), _lost(width=3)):
        alpha_rel, V, made = _auto_fit(lambda a, u0, kept=kept: kept if a == 1.0 else _separate())
        assert [a for a, _ in made] == [1.0] and np.array_equal(V, kept)


def test_deflation_is_not_refitted():
    # deflation's full fit does not start from given scores: a new start is the same fit
    alpha_rel, V, made = _auto_fit(lambda a, u0: _lost(), joint=False)
    assert [a for a, _ in made] == [1.0]


def _info(objective, gap=1e-3):
    return {"objective": objective, "gaps": np.full(3, gap)}


def _from_start(better, worse):
    """At ``alpha_rel`` 1: ``_noise()`` (flagged, not collapsed) cold, the
    separated patterns from a stronger fit's start; ``better`` and ``worse``:
    the joint objectives of the two."""

    def fits(a, u0):
        if a != 1.0:
            return _separate(), _info(1.0)
        if u0 is not None and u0[1] is not None:
            return _separate(), _info(better)
        return _noise(), _info(worse)

    return fits


def test_a_flagged_component_is_refitted_as_a_better_solution(monkeypatch):
    monkeypatch.setattr(_auto_check, "BETTER_SOLUTION", True)
    # the new start's J below the kept fit's by more than the six gaps (6e-3)
    alpha_rel, V, made = _auto_fit(_from_start(10.0 - 0.05, 10.0))
    assert alpha_rel == 1.0 and np.array_equal(V, _separate())
    assert [a for a, _ in made] == [1.0, 2**0.5, 1.0]
    assert np.array_equal(made[-1][1][1], _separate().T)


def test_a_refit_within_the_gaps_or_above_is_not_kept(monkeypatch):
    monkeypatch.setattr(_auto_check, "BETTER_SOLUTION", True)
    # lower by 5e-3 < 6e-3 (not evidence), then higher: every stronger start
    # tried, the cold fit kept although the new one reproduces (not flagged)
    for better in (10.0 - 5e-3, 10.0 + 0.05):
        alpha_rel, V, made = _auto_fit(_from_start(better, 10.0))
        assert np.array_equal(V, _noise())
        assert [a for a, _ in made] == [1.0, 2**0.5, 1.0, 2.0, 1.0, 4.0, 1.0]


def test_with_the_switch_a_collapsed_fit_needs_a_better_solution_too(monkeypatch):
    monkeypatch.setattr(_auto_check, "BETTER_SOLUTION", True)

    def fits(a, u0, better):
        if a == 1.0:
            new = u0 is not None and u0[1] is not None
            return (_separate(), _info(better)) if new else (_lost(), _info(10.0))
        return _separate(), _info(1.0)

    _, V, _ = _auto_fit(lambda a, u0: fits(a, u0, 9.0))
    assert np.array_equal(V, _separate())
    _, V, _ = _auto_fit(lambda a, u0: fits(a, u0, 11.0))
    assert np.array_equal(V, _lost())


def test_the_joint_fit_reports_the_objective_of_the_fit_it_returns():
    X, _, mask = make_paper_simulation(60, random_state=3420, shape=(12, 12), correlation=0.7)
    op = tv_from_mask(mask)
    est = SPCATV(3, operator=op, alpha_rel=1.0)
    data = validated_data_operator(est, X, reset=True, min_samples=2, n_threads=1)
    est._centre(data)
    alpha = est.l1_max_
    U, V, info, _, w = est._run(data, 3, alpha, None, None, est._settings(data.shape[1]))
    value = joint_objective(data, U, V, w["l2"], eq3_pieces(w["l1"], w["tv"], op, w["l2"]))
    assert np.all(np.any(V, axis=0))
    assert info["objective"] == pytest.approx(value, rel=1e-10)
