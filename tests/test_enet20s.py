"""Issue 20 round 19: ElasticNet PCA's evidence fits with the competing starts
from the judged model's components and deflation's unswept fit only
(``_continuation.EVIDENCE_STARTS``)."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

import neurospca.decomposition._joint as joint
from neurospca.decomposition import fitted_objective, split_halves, start_from
from neurospca.model_selection import _continuation

from .test_select20p import paper_model

PARAMS = {"alpha": None, "alpha_rel": 1.0, "l1_ratio": 0.05, "tv_ratio": 0.0}


@pytest.fixture(scope="module")
def fitted():
    """An ElasticNet PCA model of the paper simulation (16 x 16) at (0.05, 0) 1."""
    return paper_model(PARAMS)


def _evidence_fit(model, data, params, mode, monkeypatch):
    """An evidence fit with the competing starts of ``mode``, outside a search."""
    monkeypatch.setattr(_continuation, "EVIDENCE_STARTS", mode)
    return _continuation._guarded_fit(model, data, params, model.components_)[0]


def _fit_with(model, data, params, **flags):
    """The evidence fit's model from ``model``'s components with ``_joint``'s
    flags set (restored after)."""
    saved = {k: getattr(joint, k) for k in flags}
    keep = dict(params, stability=False, certify_support=False, verbose=0)
    for k, v in flags.items():
        setattr(joint, k, v)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = start_from(clone(model).set_params(**keep, warm_start=False), model.components_)
            return fit.fit(data)
    finally:
        for k, v in saved.items():
            setattr(joint, k, v)


def test_evidence_starts_keep_the_lower_of_the_given_and_unswept_deflation(fitted, monkeypatch):
    X, model = fitted
    op = model.get_params()["operator"]
    for half in split_halves(X, 0):
        given = _fit_with(model, half, PARAMS, DEFLATION_START=False, PCA_START=False)
        two = _fit_with(model, half, PARAMS, DEFLATION_START_SWEEPS=False, PCA_START=False)
        every = _fit_with(model, half, PARAMS)
        got = _evidence_fit(model, half, PARAMS, "given+defl0", monkeypatch)
        np.testing.assert_array_equal(got, two.components_)
        j_given, j_two = fitted_objective(given, half, op), fitted_objective(two, half, op)
        assert j_two <= j_given  # the given start's fit competes
        assert fitted_objective(every, half, op) <= j_two  # every start: more candidates
        # the flags are restored: the next fit has every start again
        assert joint.start_switches() == (True, True, True, True)
        main = _evidence_fit(model, half, PARAMS, None, monkeypatch)
        np.testing.assert_array_equal(main, every.components_)


def test_evidence_starts_without_the_subspace_start_and_sweeps_of_deflation(fitted, monkeypatch):
    X, model = fitted
    half = split_halves(X, 0)[1]
    seen = []
    original = joint._search

    def spy(*args, **kw):
        given, deflation, sweeps, subspace = joint.start_switches()
        seen.append((subspace, sweeps, deflation))
        return original(*args, **kw)

    monkeypatch.setattr(joint, "_search", spy)
    monkeypatch.setattr(_continuation, "CONTINUATION", False)  # TV's fits with the starts too
    _evidence_fit(model, half, PARAMS, "given+defl0", monkeypatch)
    _evidence_fit(model, half, dict(PARAMS, tv_ratio=0.1), "given+defl0", monkeypatch)
    _evidence_fit(model, half, PARAMS, None, monkeypatch)
    assert seen[0] == (False, False, True)  # without TV: the given start and deflation unswept
    assert seen[1] == (True, True, True)  # with TV: every start (TV's path is main's)
    assert seen[2] == (True, True, True)


def test_the_starts_are_restored_after_an_error(fitted, monkeypatch):
    X, model = fitted
    monkeypatch.setattr(_continuation, "EVIDENCE_STARTS", "given+defl0")
    with pytest.raises(ValueError):
        _continuation._guarded_fit(model, X[:, :5], PARAMS, model.components_)
    assert joint.start_switches() == (True, True, True, True)


def test_after_deflation_unswept_won_the_later_fits_are_that_start_alone(fitted, monkeypatch):
    X, model = fitted
    half = split_halves(X, 0)[1]
    monkeypatch.setattr(_continuation, "EVIDENCE_STARTS", "given+defl0")
    monkeypatch.setattr(_continuation, "DEFL0_FIRST", True)
    calls = []
    original = joint._search

    def spy(*args, **kw):
        calls.append(joint.start_switches()[0])
        return original(*args, **kw)

    monkeypatch.setattr(joint, "_search", spy)
    flags = dict(GIVEN_START=False, DEFLATION_START_SWEEPS=False, PCA_START=False)
    alone = _fit_with(model, half, PARAMS, **flags)
    two = _fit_with(model, half, PARAMS, DEFLATION_START_SWEEPS=False, PCA_START=False)
    won = np.array_equal(alone.components_, two.components_)
    calls.clear()
    with _continuation.continuations():
        first = _continuation._guarded_fit(model, half, PARAMS, model.components_)[0]
        assert _continuation._SEARCH.get()[4] is won  # deflation's unswept fit won or not
        assert calls == [True, False]  # the two starts, then deflation's alone
        _continuation._SEARCH.get()[4] = True  # as if it had won
        calls.clear()
        later = _continuation._guarded_fit(model, half, PARAMS, model.components_)[0]
        assert calls[0] is False  # deflation's unswept fit alone first
        if _continuation.chain_holds(half, model.components_, alone.components_):
            assert calls == [False]
            np.testing.assert_array_equal(later, alone.components_)
        else:  # it does not hold: the two starts' fit
            assert calls == [False, True]
            np.testing.assert_array_equal(later, two.components_)
    np.testing.assert_array_equal(first, two.components_)
    calls.clear()
    _continuation._guarded_fit(model, half, PARAMS, model.components_)  # outside a search
    assert calls == [True]


def test_the_starts_are_set_in_this_thread_only():
    """``joint_starts`` is a context variable: a fit in another thread (a threaded
    joblib or dask worker running another search) keeps the module's starts."""
    import threading

    seen = []
    inside, release = threading.Event(), threading.Event()

    def other():
        inside.wait(10)
        seen.append(joint.start_switches())
        release.set()

    thread = threading.Thread(target=other)
    thread.start()
    with joint.joint_starts(given=False, deflation_sweeps=False, subspace=False):
        inside.set()
        release.wait(10)
        assert joint.start_switches() == (False, True, False, False)
    thread.join(10)
    assert seen == [(True, True, True, True)]
    assert joint.start_switches() == (True, True, True, True)
