"""Issue 20 round 18: ElasticNet PCA's search continues the judged rows' full
fits along the split's path, shares the walks of equal l1 weight and starts the
default fit's halves' evidence from its split's walk
(``model_selection._continuation``, ``_shared_walk``)."""

import warnings

import numpy as np
import pytest

from neurospca.decomposition import split_halves
from neurospca.model_selection import _continuation, _halves, _returned, _shared_walk

from .test_select20p import paper_model

continuations = _continuation.continuations
PARAMS = {"alpha": None, "alpha_rel": 1.0, "l1_ratio": 0.05, "tv_ratio": 0.0}
STRONGER = dict(PARAMS, alpha_rel=2.0)
GRID = np.array([1.0, 2.0, 4.0])


@pytest.fixture(autouse=True)
def chained(monkeypatch):
    """The chains on, whatever the modules' defaults."""
    monkeypatch.setattr(_continuation, "CHAIN", True)
    monkeypatch.setattr(_continuation, "CHAIN_FULL", True)
    monkeypatch.setattr(_continuation, "WALK_DEFAULT", True)
    monkeypatch.setattr(_shared_walk, "SHARE_WALK", True)


@pytest.fixture(scope="module")
def fitted():
    """An ElasticNet PCA model of the paper simulation (16 x 16) at (0.05, 0) 1."""
    return paper_model(PARAMS)


def _main_fit(model, X, params, start, monkeypatch):
    monkeypatch.setattr(_continuation, "CHAIN_FULL", False)
    with continuations():
        main = _returned.fit_returned(model, X, params, start)
    monkeypatch.setattr(_continuation, "CHAIN_FULL", True)
    return main


def test_a_full_fit_continues_the_split_nearest_full_fit(fitted, monkeypatch):
    X, model = fitted
    half = _returned.fit_returned(model, X[::2], PARAMS, model.components_).components_
    tried = []
    cont = _continuation.continued_full
    monkeypatch.setattr(_returned, "continued_full", lambda *a: tried.append(cont(*a)) or tried[-1])
    with continuations():
        first = _returned.fit_returned(model, X, PARAMS, half)  # nothing to continue
        _continuation.remember_full(PARAMS, first.components_)
        other = _returned.fit_returned(model, X, dict(STRONGER, l1_ratio=0.2), half)
        second = _returned.fit_returned(model, X, STRONGER, half)
    assert tried[0] is None and tried[1] is None  # the first of its split; another split
    assert tried[2] is second and second.get_params()["warm_start"] is False
    assert other.get_params()["l1_ratio"] == 0.2
    main = _main_fit(model, X, STRONGER, half, monkeypatch)
    assert not np.array_equal(second.components_, main.components_)  # a continuation
    assert _continuation.chain_holds(X, half, second.components_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outside = _returned.fit_returned(model, X, STRONGER, half)  # no search: main's fit
    np.testing.assert_array_equal(outside.components_, main.components_)


def test_a_full_continuation_that_does_not_hold_is_main_fit_and_stops(fitted, monkeypatch):
    X, model = fitted
    half = model.components_
    monkeypatch.setattr(_continuation, "chain_holds", lambda *a: False)
    with continuations():
        _continuation.remember_full(PARAMS, model.components_)
        got = _returned.fit_returned(model, X, STRONGER, half)
        assert _continuation._SEARCH.get()[2]  # no more full continuations in this search
        assert _continuation.continued_full(model, X, STRONGER, half) is None
    main = _main_fit(model, X, STRONGER, half, monkeypatch)
    np.testing.assert_array_equal(got.components_, main.components_)


def test_with_tv_a_full_fit_is_never_continued(fitted):
    X, model = fitted
    tv = dict(PARAMS, tv_ratio=0.1)
    with continuations():
        _continuation.remember_full(tv, model.components_)
        assert _continuation._SEARCH.get()[1] == {}
        assert _continuation.continued_full(model, X, tv, model.components_) is None


def _counted_walks(monkeypatch):
    calls = []
    search = _halves.reproducibility_search

    def counted(est, data, splits, grid, *a, **k):
        calls.append((tuple(splits[0]), tuple(grid)))
        return search(est, data, splits, grid, *a, **k)

    monkeypatch.setattr(_shared_walk, "reproducibility_search", counted)
    return calls


def test_a_walk_takes_the_rows_of_equal_l1_weight(fitted, monkeypatch):
    X, model = fitted
    calls = _counted_walks(monkeypatch)
    own = _shared_walk.walk_split(model, X, (0.05, 0.0), GRID, [0], None, 0, ([], []))
    rows, pairs = _shared_walk.walk_split(model, X, (0.2, 0.0), GRID, [0], None, 0, own)
    # (0.2, 0) at 1 has the l1 weight of (0.05, 0) at 4: taken, not fitted
    assert rows[0]["shared_walk"] == 2 and pairs[0] is own[1][2]
    assert rows[0]["params"] == {"alpha": None, "alpha_rel": 1.0, "l1_ratio": 0.2, "tv_ratio": 0.0}
    assert rows[0]["reproducibility"] == own[0][2]["reproducibility"]
    assert np.any(rows[0]["nonzero_fraction"] > 0)  # the walk goes on: 2 and 4 are fitted
    assert calls == [((0.05, 0.0), tuple(GRID)), ((0.2, 0.0), (2.0, 4.0))]
    assert [r["alpha_rel"] for r in rows] == [1.0, 2.0, 4.0][: len(rows)]
    assert all("shared_walk" not in r for r in rows[1:])
    tv = _shared_walk.walk_split(model, X, (0.2, 0.1), GRID[:1], [0], None, 0, own)
    assert "shared_walk" not in tv[0][0]  # with TV: walked
    monkeypatch.setattr(_shared_walk, "SHARE_WALK", False)
    calls.clear()
    _shared_walk.walk_split(model, X, (0.2, 0.0), GRID, [0], None, 0, own)
    assert calls == [((0.2, 0.0), tuple(GRID))]  # every point walked


def test_the_default_split_is_walked_once_and_starts_its_evidence(fitted, monkeypatch):
    X, model = fitted
    calls = _counted_walks(monkeypatch)
    with continuations():
        pair = _shared_walk.walk_first(model, X, (0.05, 0.0), GRID, [0], None, 0, PARAMS)
        rows, pairs = _shared_walk.walk_split(model, X, (0.05, 0.0), GRID, [0], None, 0, ([], []))
        assert _shared_walk.walk_first(model, X, (0.05, 0.1), GRID, [0], None, 0, PARAMS) is None
    assert len(calls) == 1 and pairs[0][0] is pair  # the walk kept for its turn, not repeated
    half = split_halves(X, 0)[0]
    with continuations():
        assert _continuation.walk_start(half, PARAMS, model.components_, pair[0]) is pair[0]
        emptied = pair[0].copy()
        emptied[2] = 0.0  # a walk that lost a pattern the model has: not a start
        assert _continuation.walk_start(half, PARAMS, model.components_, emptied) is None
        tv = dict(PARAMS, tv_ratio=0.1)
        assert _continuation.walk_start(half, tv, model.components_, pair[0]) is None
    assert _continuation.walk_start(half, PARAMS, model.components_, pair[0]) is None  # no search
    monkeypatch.setattr(_continuation, "WALK_DEFAULT", False)
    with continuations():
        assert _shared_walk.walk_first(model, X, (0.05, 0.0), GRID, [0], None, 0, PARAMS) is None


def test_the_walked_default_evidence_is_the_cold_evidence_within_001(fitted, monkeypatch):
    X, model = fitted
    own = _shared_walk.walk_split(model, X, (0.05, 0.0), GRID, [0], None, 0, ([], []))
    cold = _returned.returned_evidence(model, X, PARAMS, 0)
    started = []
    walk_start = _continuation.walk_start
    monkeypatch.setattr(
        _continuation, "walk_start", lambda *a: started.append(walk_start(*a)) or started[-1]
    )
    with continuations():
        warm = _returned.returned_evidence(model, X, PARAMS, 0, None, own[1][0][0])
    assert [s is not None for s in started] == [False, False, True, True]  # the halves walked
    assert np.max(cold[0]) > 0.5  # a component reproduces: a comparison that can fail
    keep = cold[0] > 0.5
    np.testing.assert_allclose(warm[0][keep], cold[0][keep], atol=0.01)
    assert abs(warm[1][0] - cold[1][0]) <= cold[1][1]  # held-out variance within its floor


def test_the_objective_guard_keeps_a_continuation_only_as_low(fitted, monkeypatch):
    X, model = fitted
    monkeypatch.setattr(_continuation, "CHAIN_FULL_OBJECTIVE", True)
    base = float(np.sum((X - X.mean(axis=0)) ** 2)) / (2 * X.shape[0])
    gap = _continuation.CHAIN_FULL_GAP
    values = []
    objective = _continuation.fitted_objective
    monkeypatch.setattr(
        _continuation, "fitted_objective", lambda *a: values.append(objective(*a)) or values[-1]
    )
    with continuations():
        _continuation.remember_full(PARAMS, model.components_)
        got = _continuation.continued_full(model, X, STRONGER, model.components_)
    assert len(values) == 2  # the chained fit's and the half start's continuation's
    assert (got is not None) == (values[0] - values[1] <= gap * abs(base - values[1]))
    monkeypatch.setattr(_continuation, "fitted_objective", lambda *a: values.pop())
    for explained, kept in ((1 - gap / 2, True), (1 - 2 * gap, False)):
        values[:] = [base - 1.0, base - explained]  # popped: the chained fit's first
        with continuations():
            _continuation.remember_full(PARAMS, model.components_)
            got = _continuation.continued_full(model, X, STRONGER, model.components_)
            assert (got is not None) == kept
            assert _continuation._SEARCH.get()[2] == (not kept)  # no more tries after a miss
