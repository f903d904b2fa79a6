"""Issue 20 round 7: the warm-start hook and select_penalty's default point."""

import numpy as np
import pytest
from sklearn.base import clone

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import matched_abs_corr, start_from
from neurospca.model_selection import select_penalty
from neurospca.model_selection._default import prefer_default


@pytest.fixture(scope="module")
def small():
    X, patterns, mask = make_paper_simulation(60, snr=0.5, random_state=3, shape=(16, 16))
    return X, patterns, tv_from_mask(mask)


def test_a_fit_started_from_its_own_components_stays_there(small):
    X, _, op = small
    est = SPCATV(3, operator=op, alpha_rel=1.0, random_state=0, certify_support=False)
    cold = clone(est).fit(X)
    again = start_from(clone(est), cold.components_).fit(X)
    _, corr = matched_abs_corr(cold.components_, again.components_)
    assert np.all(corr > 0.999), corr


def test_the_start_is_used_by_one_fit_only(small):
    X, _, op = small
    est = SPCATV(3, operator=op, alpha_rel=1.0, random_state=0, certify_support=False)
    cold = clone(est).fit(X)
    rng = np.random.default_rng(0)
    model = start_from(clone(est), rng.standard_normal((3, X.shape[1])))
    model.fit(X)
    assert not hasattr(model, "_start_components")
    np.testing.assert_array_equal(model.fit(X).components_, cold.components_)


def test_a_start_that_does_not_fit_the_data_is_ignored(small):
    X, _, op = small
    est = SPCATV(3, operator=op, alpha_rel=1.0, random_state=0, certify_support=False)
    cold = clone(est).fit(X)
    wrong = start_from(clone(est), np.ones((2, X.shape[1]))).fit(X)  # two rows, not three
    np.testing.assert_array_equal(wrong.components_, cold.components_)


@pytest.mark.parametrize("bad", [np.ones(5), np.full((3, 4), np.nan)])
def test_start_from_rejects_bad_components(bad):
    with pytest.raises(ValueError, match="components"):
        start_from(SPCATV(3), bad)


def _row(repro, nonzero=0.1):
    repro = np.asarray(repro, float)
    return {
        "reproducibility": float(repro.mean()),
        "reproducibility_per_component": repro.reshape(1, -1),
        "admissible": nonzero > 0,
    }


def test_prefer_default_keeps_the_default_unless_beaten_beyond_the_error():
    default = _row([0.70, 0.80, 0.90])  # mean 0.80, standard error 0.058
    near = _row([0.80, 0.85, 0.90])  # mean 0.85: +0.05, error of the difference 0.065
    far = _row([0.97, 0.98, 0.99])  # mean 0.98: +0.18
    assert prefer_default([default, near], 1, 0) == 0
    assert prefer_default([default, far], 1, 0) == 1
    rows = [default, far]
    prefer_default(rows, 1, 0)
    assert rows[0]["default"] and not rows[1]["default"]
    assert prefer_default([default, far], 1, None) == 1  # no default row: the rule's
    blocked = _row([0.99, 0.99, 0.99], nonzero=0)  # not admissible
    assert prefer_default([default, blocked], 1, 0) == 0


def test_select_penalty_never_trades_the_default_for_a_point_it_cannot_tell_apart(small):
    X, patterns, op = small
    est = SPCATV(2, operator=op, random_state=0)
    default = clone(est).set_params(stability=False).fit(X)
    sel = select_penalty(  # round 7's comparison (the halves); round 8's: test_select20g
        est, X, alpha_rel=(0.5, 1.0, 2.0), n_splits=1, random_state=0, criterion="halves"
    )
    res = sel.results_
    d = sel.default_index_
    assert d is not None and res[d]["default"]
    assert res[d]["alpha_rel"] == pytest.approx(default.alpha_rel_)
    assert (res[d]["l1_ratio"], res[d]["tv_ratio"]) == (default.l1_ratio_, default.tv_ratio_)
    if sel.best_index_ == d:  # the default fit itself is returned
        np.testing.assert_array_equal(sel.best_estimator_.components_, default.components_)
        assert sel.best_estimator_.get_params()["alpha_rel"] == res[d]["alpha_rel"]
    else:
        b, r = res[sel.best_index_], res[d]
        se = [
            np.std(x["reproducibility_per_component"], ddof=1)
            / np.sqrt(x["reproducibility_per_component"].size)
            for x in (b, r)
        ]
        assert b["reproducibility"] - r["reproducibility"] > np.hypot(*se)
    assert "d" in sel.table() or sel.best_index_ == d


def test_the_refit_starts_from_the_chosen_points_half_fit(small):
    X, _, op = small
    est = SPCATV(2, operator=op, random_state=0)
    sel = select_penalty(
        est, X, alpha_rel=(0.5, 1.0, 2.0), n_splits=1, random_state=0, keep_default=False
    )
    assert sel.default_index_ is None
    half = sel.fold_components_[0][0]
    expected = start_from(clone(est).set_params(**sel.best_params_), half).fit(X)
    np.testing.assert_array_equal(sel.best_estimator_.components_, expected.components_)
