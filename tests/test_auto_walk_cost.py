"""Issue 20, round 13: the default fit's walk of the halves costs fewer sweeps.

The halves' first (cold) point runs at most ``FIRST_POINT_SWEEPS`` sweeps,
and the walk stops after a second point that is the split's choice
(``_second_kept``). On the 12 x 12 paper simulation below (seed 3104,
scores correlated 0.8) the default fit before round 13 walked three points,
its first point's halves at the cap of 15 sweeps, and chose the second.
"""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import _auto
from neurospca.decomposition._auto import FIRST_POINT_SWEEPS, _second_kept, choose_least_shrunk


def _point(alpha_rel, reproducibility, nonzero=0.1):
    r = np.asarray(reproducibility, float)
    return {
        "alpha_rel": alpha_rel,
        "reproducibility": r,
        "nonzero_fraction": np.full(2 * r.size, nonzero),
    }


def test_second_kept_is_a_chosen_admissible_second_point():
    first = _point(0.5, [0.7, 0.6, 0.2])
    second = _point(1.0, [0.9, 0.8, 0.1])
    assert choose_least_shrunk([first, second]) == 1
    assert _second_kept([first, second])
    assert not _second_kept([first])  # one point: the walk goes on
    assert not _second_kept([first, second, _point(2.0, [0.9, 0.9, 0.9])])
    empty = dict(second, nonzero_fraction=np.r_[0.0, np.full(5, 0.1)])
    assert not _second_kept([first, empty])  # not admissible
    better_first = _point(0.5, [0.99, 0.99, 0.99])
    assert choose_least_shrunk([better_first, second]) == 0
    assert not _second_kept([better_first, second])  # the first point reproduces far better


def _counted_default_fit(monkeypatch):
    X, _, mask = make_paper_simulation(
        60, random_state=3104, shape=(12, 12), correlation=0.8, snr=0.3
    )
    points = []
    fit_point = _auto._fit_point

    def counted(models, halves, params, n_jobs=1):
        out = fit_point(models, halves, params, n_jobs)
        points.append((params["alpha_rel"], [m.n_sweeps_ for m in models]))
        return out

    monkeypatch.setattr(_auto, "_fit_point", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SPCATV(3, operator=tv_from_mask(mask), random_state=0).fit(X)
    return model, points


def test_the_default_fit_walks_two_points_the_first_with_few_sweeps(monkeypatch):
    model, points = _counted_default_fit(monkeypatch)
    assert model.alpha_rel_ == pytest.approx(1.0)
    assert [a for a, _ in points] == [0.5, 1.0]  # before round 13: 0.5, 1, 2
    assert max(points[0][1]) <= FIRST_POINT_SWEEPS  # before: 15 and 15
    assert max(points[1][1]) > FIRST_POINT_SWEEPS  # the later points keep the halves' cap
    assert len(model.auto_path_) == 2


def test_without_the_rules_the_walk_is_the_old_one(monkeypatch):
    """The same instance with the first point's cap off and the second-point
    stop off walks as before round 13 (so the test above can fail)."""
    monkeypatch.setattr(_auto, "FIRST_POINT_SWEEPS", None)
    monkeypatch.setattr(_auto, "_second_kept", lambda points: False)
    _, points = _counted_default_fit(monkeypatch)
    assert [a for a, _ in points] == [0.5, 1.0, 2.0]
    assert max(points[0][1]) > 3
