"""Issue 20 round 16: ``select_penalty``'s evidence fits as guarded continuations
(``model_selection._continuation``)."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import subsample_stability
from neurospca.model_selection import _continuation, _returned

captured, continuation_holds = _continuation.captured, _continuation.continuation_holds
continuations, guarded_fit = _continuation.continuations, _continuation.guarded_fit
PARAMS = {"alpha": None, "alpha_rel": 1.0, "l1_ratio": 0.05, "tv_ratio": 0.1}


def paper_model(params):
    """A model of the paper simulation (16 x 16) at ``params``, and its data."""
    X, _, mask = make_paper_simulation(80, snr=1.0, random_state=5, shape=(16, 16))
    with warnings.catch_warnings():
        est = SPCATV(3, operator=tv_from_mask(mask), random_state=0)
        warnings.simplefilter("ignore")
        model = clone(est).set_params(**params, stability=False).fit(X)
    return X, model


@pytest.fixture(scope="module")
def fitted():
    """A model of the paper simulation (16 x 16) at the default split's point 1."""
    return paper_model(PARAMS)


def test_captured_is_the_variance_along_each_component():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4)) * np.array([3.0, 2.0, 1.0, 0.5])
    C = np.eye(4)[:3]
    np.testing.assert_allclose(captured(X, C), np.var(X[:, :3], axis=0))
    assert captured(X, np.zeros((2, 4))).tolist() == [0.0, 0.0]


def test_the_guard_rejects_a_collapse_and_an_emptied_component(fitted):
    X, model = fitted
    start = model.components_
    assert continuation_holds(X, start, start)
    # a fit along directions of little variance (the collapse: 0.04 of the start's)
    low = np.zeros_like(start)
    order = np.argsort(np.var(X, axis=0))
    for k in range(len(start)):
        low[k, order[k]] = 1.0
    assert captured(X, low).sum() < _continuation.KEEP_CAPTURED * captured(X, start).sum()
    assert not continuation_holds(X, start, low)
    # an emptied component, the others the start's: all but no longer every component
    emptied = start.copy()
    emptied[2] = 0.0
    assert captured(X, emptied).sum() >= _continuation.KEEP_CAPTURED * captured(X, start).sum()
    assert not continuation_holds(X, start, emptied)
    # a start with an empty component may keep it empty
    assert continuation_holds(X, emptied, emptied)


def test_a_continuation_that_does_not_hold_is_refitted_with_the_competing_starts(
    fitted, monkeypatch
):
    X, model = fitted
    half = X[::2]
    warm, kept = guarded_fit(model, half, PARAMS, model.components_)
    assert kept
    monkeypatch.setattr(_continuation, "CONTINUATION", False)
    cold, kept = guarded_fit(model, half, PARAMS, model.components_)
    assert not kept
    monkeypatch.setattr(_continuation, "CONTINUATION", True)
    monkeypatch.setattr(_continuation, "KEEP_CAPTURED", 1e9)  # no continuation holds
    refit, kept = guarded_fit(model, half, PARAMS, model.components_)
    assert not kept
    np.testing.assert_array_equal(refit, cold)
    # the continuation is another fit (the sweeps from the start only), near the same model
    assert not np.array_equal(warm, cold)
    assert np.min(np.abs(np.sum(warm * cold, axis=1))) > 0.99


def test_after_one_failed_continuation_the_search_tries_no_more(fitted, monkeypatch):
    X, model = fitted
    tried = []
    holds = continuation_holds

    def once(data, start, comps):
        tried.append(1)
        return holds(data, start, comps) and len(tried) > 1  # the first fails

    monkeypatch.setattr(_continuation, "continuation_holds", once)
    with continuations():
        got = [guarded_fit(model, X[::2], PARAMS, model.components_)[1] for _ in range(3)]
    assert got == [False, False, False] and len(tried) == 1
    with continuations():  # a new search tries again
        assert guarded_fit(model, X[::2], PARAMS, model.components_)[1]
    assert guarded_fit(model, X[::2], PARAMS, model.components_)[1]  # outside a search


def test_the_cold_subsample_fits_are_decompositions_bit_for_bit(fitted, monkeypatch):
    X, model = fitted
    monkeypatch.setattr(_continuation, "CONTINUATION", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = subsample_stability(model, X, PARAMS, start=model.components_)
    np.testing.assert_array_equal(_continuation.subsample_fits(model, X, PARAMS), ref)


def test_the_continuations_evidence_is_the_cold_evidence_within_001(fitted, monkeypatch):
    X, model = fitted
    warm = _returned.returned_evidence(model, X, PARAMS, 0)
    monkeypatch.setattr(_continuation, "CONTINUATION", False)
    cold = _returned.returned_evidence(model, X, PARAMS, 0)
    assert np.min(cold[0]) > 0.5  # the model reproduces: a comparison that can fail
    np.testing.assert_allclose(warm[0], cold[0], atol=0.01)
    assert abs(warm[1][0] - cold[1][0]) <= cold[1][1]  # held-out variance within its floor


def test_without_tv_the_evidence_fits_are_the_competing_starts(fitted):
    X, model = fitted
    params = dict(PARAMS, tv_ratio=0.0)
    comps, kept = guarded_fit(model, X[::2], params, model.components_)
    assert not kept
    with_tv = guarded_fit(model, X[::2], PARAMS, model.components_)
    assert with_tv[1] and not np.array_equal(comps, with_tv[0])
