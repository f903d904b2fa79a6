"""Issue 20 round 17: ElasticNet PCA's evidence fits continue each sample's own
previous evidence fit of the search (``model_selection._continuation``)."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from neurospca.model_selection import _continuation, _returned

from .test_select20p import paper_model

continuations, guarded_fit = _continuation.continuations, _continuation.guarded_fit
PARAMS = {"alpha": None, "alpha_rel": 1.0, "l1_ratio": 0.05, "tv_ratio": 0.0}
STRONGER = dict(PARAMS, alpha_rel=2.0)


@pytest.fixture(autouse=True)
def chained(monkeypatch):
    """The chains on, whatever the module's default."""
    monkeypatch.setattr(_continuation, "CHAIN", True)


@pytest.fixture(scope="module")
def fitted():
    """An ElasticNet PCA model of the paper simulation (16 x 16) at (0.05, 0) 1."""
    return paper_model(PARAMS)


def test_the_first_fit_of_a_sample_is_cold_the_next_continues_it(fitted, monkeypatch):
    X, model = fitted
    starts = []
    holds = _continuation.chain_holds

    def seen(data, start, comps):
        starts.append(start)
        return holds(data, start, comps)

    monkeypatch.setattr(_continuation, "chain_holds", seen)
    with continuations():
        first, warm1 = guarded_fit(model, X[::2], PARAMS, model.components_, "a")
        other = guarded_fit(model, X[1::2], STRONGER, model.components_, "b")[1]
        second, warm2 = guarded_fit(model, X[::2], STRONGER, model.components_, "a")
    assert not warm1 and not other and warm2
    assert len(starts) == 1 and starts[0] is model.components_  # guarded against the model
    assert not np.array_equal(first, second)
    cold = guarded_fit(model, X[::2], STRONGER, model.components_, "a")  # outside a search
    assert not cold[1]


def test_the_nearest_l1_weight_of_the_same_split_is_continued():
    def at(l1, alpha):
        return {"l1_ratio": l1, "alpha_rel": alpha, "tv_ratio": 0}

    with continuations():
        for a, name in ((0.25, "w05"), (0.5, "w1"), (2.0, "w4")):
            _continuation._remember("a", at(0.2, a), name)
        _continuation._remember("a", at(0.5, 0.25), "other split")
        got = [_continuation.chained_start("a", at(0.2, a)) for a in (0.5, 1.0, 4.0)]
        assert got == ["w1", "w1", "w4"]  # 0.2: 0.1 and 0.4 as near on a log scale, the weaker
        assert _continuation.chained_start("a", at(0.5, 0.5)) == "other split"
        assert _continuation.chained_start("a", at(0.05, 4.0)) is None  # no fit of its split
        assert _continuation.chained_start("b", at(0.2, 1.0)) is None
        assert _continuation.chained_start("a", dict(at(0.2, 1.0), tv_ratio=0.1)) is None
    assert _continuation.chained_start("a", at(0.2, 1.0)) is None  # no search


def test_no_l1_weight_is_never_chained():
    """A user's grid with l1_ratio 0 (no l1 weight to match on a log scale)
    neither keeps nor continues a fit."""
    with continuations():
        point = {"l1_ratio": 0.0, "alpha_rel": 1.0, "tv_ratio": 0}
        _continuation._remember("a", point, "ridge")
        assert _continuation._SEARCH.get()[1] == {}
        _continuation._remember("a", dict(point, l1_ratio=0.5), "lasso")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert _continuation.chained_start("a", point) is None


def test_a_chained_continuation_that_does_not_hold_is_refitted_cold(fitted, monkeypatch):
    X, model = fitted
    holds, fail = _continuation.chain_holds, [True]
    monkeypatch.setattr(
        _continuation, "chain_holds", lambda *a: not fail.pop() if fail else holds(*a)
    )
    with continuations():
        guarded_fit(model, X[::2], PARAMS, model.components_, "a")
        comps, warm = guarded_fit(model, X[::2], STRONGER, model.components_, "a")  # fails
        assert not warm and not fail
        assert not guarded_fit(model, X[::2], STRONGER, model.components_, "a")[1]  # stopped
    monkeypatch.setattr(_continuation, "CHAIN", False)
    cold = guarded_fit(model, X[::2], STRONGER, model.components_, "a")[0]
    np.testing.assert_array_equal(comps, cold)


def test_the_chained_evidence_is_the_cold_evidence_within_001(fitted, monkeypatch):
    X, model = fitted
    stronger = clone(model).set_params(**STRONGER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stronger.fit(X)
    held = []
    holds = _continuation.chain_holds
    monkeypatch.setattr(_continuation, "chain_holds", lambda *a: held.append(holds(*a)) or held[-1])
    with continuations():
        _returned.returned_evidence(model, X, PARAMS, 0)
        warm = _returned.returned_evidence(stronger, X, STRONGER, 0)
    assert held == [True] * 4  # the second model's four fits were continuations
    cold = _returned.returned_evidence(stronger, X, STRONGER, 0)  # no search: cold
    assert np.max(cold[0]) > 0.5  # a component reproduces: a comparison that can fail
    keep = cold[0] > 0.5
    np.testing.assert_allclose(warm[0][keep], cold[0][keep], atol=0.01)
    assert abs(warm[1][0] - cold[1][0]) <= cold[1][1]  # held-out variance within its floor


def test_a_sample_keeps_its_latest_fits_only():
    with continuations():
        for a in range(1, 6):
            _continuation._remember("a", {"l1_ratio": 0.5, "alpha_rel": a, "tv_ratio": 0}, a)
        got = _continuation.chained_start("a", {"l1_ratio": 0.5, "alpha_rel": 1, "tv_ratio": 0})
    assert got == 6 - _continuation.CHAIN_KEEP  # the oldest kept is the nearest


def test_a_merge_that_holds_the_sum_does_not_hold_rank_by_rank(fitted):
    X, model = fitted
    start = model.components_
    merged = np.vstack([start[0] + start[1], start[2] * 0, start[2]])
    merged[1, np.argmax(np.abs(start[1]))] = 1.0  # a one-pixel second component
    merged /= np.linalg.norm(merged, axis=1, keepdims=True)
    assert _continuation.continuation_holds(X, start, merged)  # the sum holds
    assert not _continuation.chain_holds(X, start, merged)
    assert _continuation.chain_holds(X, start, start)
