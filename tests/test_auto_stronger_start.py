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
"""

import numpy as np

from neurospca.decomposition import DEFAULT_SPLIT, _auto_check

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
    is the full fit. Returns the point kept, its loadings and the fits made
    as ``(alpha_rel, start)``."""
    path = [dict(path_record(DEFAULT_SPLIT, 1.0, (0.9,) * 3, (0.1,) * 6), components=(None, None))]
    path[0]["_check"] = _Check(joint)
    made = []

    def run(point, u0):
        made.append((point["alpha_rel"], u0))
        return None, fits(point["alpha_rel"], u0)

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
