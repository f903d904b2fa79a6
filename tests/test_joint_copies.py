"""Issue 20 round 12: a continuation's joint sweeps stop before copies of one pattern."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import _joint
from neurospca.decomposition._joint_starts import (
    COPIES_COS,
    COPIES_RISES,
    CopiesWatch,
    loadings_cos,
)


def _covarying(seed):
    """The paper's three patterns, 12 x 12, scores correlated 0.8 (a shared severity)."""
    X, _, mask = make_paper_simulation(
        60, random_state=seed, shape=(12, 12), correlation=0.8, snr=0.3
    )
    return X, tv_from_mask(mask)


def _pair(cos):
    """Two unit loadings at |cos| ``cos`` and a third orthogonal to both."""
    V = np.zeros((5, 3))
    V[0, 0], V[0, 1], V[1, 1], V[4, 2] = 1.0, cos, np.sqrt(1 - cos**2), 1.0
    return V


def _watched(coses):
    """CopiesWatch over loadings at the given |cos| (the first is the start):
    the index of the sweep at which it stops (None) and the state it keeps."""
    state = {"i": 0}
    watch = CopiesWatch(_pair(coses[0]), lambda: state["i"])
    for i, c in enumerate(coses[1:], start=1):
        state["i"] = i
        if watch.climbed(_pair(c)):
            return i, watch.before
    return None, watch.before


def test_loadings_cos_ignores_empty_components_and_signs():
    V = _pair(0.3)
    V[:, 1] *= -2.0
    assert loadings_cos(V) == pytest.approx(0.3)
    V[:, 0] = 0.0
    assert loadings_cos(V) == pytest.approx(0.0)
    assert loadings_cos(V[:, :1]) == 0.0


def test_watch_stops_a_steady_climb_above_the_threshold_at_its_foot():
    assert COPIES_COS == 0.5 and COPIES_RISES == 3
    # falls to 0.1 at sweep 2, then rises every sweep: stops at the third rise above 0.5
    stop, before = _watched([0.3, 0.2, 0.1, 0.3, 0.45, 0.55, 0.7])
    assert (stop, before) == (5, 2)
    # rising from the start: the start is kept
    assert _watched([0.1, 0.3, 0.5, 0.6]) == (3, 0)


@pytest.mark.parametrize(
    "coses",
    [
        [0.1, 0.2, 0.3, 0.4, 0.45, 0.49, 0.3, 0.2],  # a long climb that stays below 0.5
        [0.1, 0.4, 0.6, 0.55, 0.7, 0.8, 0.75],  # above 0.5, never 3 rises in a row
        [0.9, 0.9, 0.9, 0.9],  # copies that do not climb: no rise
    ],
)
def test_watch_does_not_stop_without_a_steady_climb_above_the_threshold(coses):
    assert _watched(coses)[0] is None


def _fit(X, op, alpha_rel, guard, monkeypatch):
    monkeypatch.setattr(_joint, "COPIES_GUARD", guard)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = SPCATV(
            3, operator=op, alpha_rel=alpha_rel, warm_start=True, max_sweeps=40, random_state=0
        ).fit(X)
    return m, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


def test_a_continuation_drifting_to_copies_is_stopped_before_them(monkeypatch):
    """Cold continuation (``warm_start=True``: no search) at alpha_rel 0.5 on co-varying
    patterns: without the guard the sweeps drift to copies of one pattern (|cos| between
    loadings near 1, unsettled after 40 sweeps); with it they stop once the |cos| is above
    0.5 after three rises and return the state before the climb."""
    X, op = _covarying(3101)
    free, said = _fit(X, op, 0.5, False, monkeypatch)
    assert loadings_cos(free.components_.T) > 0.9 and free.n_sweeps_ == 40
    assert any("did not settle" in s for s in said)
    guarded, said = _fit(X, op, 0.5, True, monkeypatch)
    assert [s for s in said if "stopped after" in s] and guarded.n_sweeps_ <= 6
    assert loadings_cos(guarded.components_.T) < COPIES_COS
    assert not np.any(guarded.converged_)  # not settled: no component is called converged
    assert np.all(guarded.rel_gaps_ <= guarded.tol)  # the certificates hold for the model


def test_a_continuation_whose_loadings_climb_below_the_threshold_is_not_stopped(monkeypatch):
    """At alpha_rel 1 the same kind of data settles with the loadings' |cos| rising for
    three sweeps (0.11 -> 0.16) but far below 0.5: the guard changes nothing, bit for bit."""
    X, op = _covarying(3104)
    free, said_free = _fit(X, op, 1.0, False, monkeypatch)
    guarded, said = _fit(X, op, 1.0, True, monkeypatch)
    assert not [s for s in said if "stopped" in s] and said == said_free
    assert guarded.n_sweeps_ == free.n_sweeps_ >= 4
    np.testing.assert_array_equal(guarded.components_, free.components_)


def test_a_fit_with_its_search_is_not_guarded(monkeypatch):
    """The guard is for continuations only: a cold fit with its search (the default) is
    the same with and without it."""
    X, op = _covarying(3101)
    monkeypatch.setattr(_joint, "COPIES_GUARD", True)
    a = SPCATV(3, operator=op, alpha_rel=0.5, max_sweeps=10, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a.fit(X)
    assert not [w for w in caught if "stopped after" in str(w.message)]
    monkeypatch.setattr(_joint, "COPIES_GUARD", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = SPCATV(3, operator=op, alpha_rel=0.5, max_sweeps=10, random_state=0).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)
