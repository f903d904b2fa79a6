"""Issue 20 round 15: ``select_penalty`` judges the default fit first and, when no model
can beat it, only its split's weaker points (``model_selection._default_first``)."""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca import model_selection as ms
from neurospca.model_selection import _default_first, _returned
from neurospca.model_selection._default_first import unbeatable, weaker_first
from neurospca.model_selection._returned import SWITCH_GAIN, beats, judge_rows

OWN = (0.05, 0.1)


def test_an_unbeatable_default_cannot_be_beaten_by_switch_gain():
    rng = np.random.default_rng(0)
    for default in (np.array([0.99, 0.96, 0.951]), np.array([1.0, 0.95, 0.91]), np.full(3, 0.96)):
        assert unbeatable(default)
        for _ in range(50):
            chosen = np.minimum(1.0, default + rng.uniform(0, 0.2, 3))
            assert not beats(chosen, default, SWITCH_GAIN)
    # 0.95 itself is beaten by a perfect model (the gain is 0.05 plus rounding): not unbeatable
    for default in (np.full(3, 0.95), np.array([0.99, 0.95, 0.90]), np.full(3, 0.9)):
        assert beats(np.ones(3), default, SWITCH_GAIN) and not unbeatable(default)


@pytest.fixture(scope="module")
def reproducing():
    X, _, mask = make_paper_simulation(80, snr=1.0, random_state=5, shape=(16, 16))
    return X, SPCATV(3, operator=tv_from_mask(mask), random_state=0)


def test_the_default_first_choice_is_the_full_searchs(reproducing, monkeypatch):
    X, est = reproducing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quick = ms.select_penalty(est, X, random_state=0)
        monkeypatch.setattr(_default_first, "unbeatable", lambda s: False)  # never: the full search
        full = ms.select_penalty(est, X, random_state=0)
    assert quick.best_params_ == full.best_params_
    d = quick.results_[quick.default_index_]
    assert unbeatable(d["returned_per_component"])
    # the default fit is its own point's model in both: the same evidence
    same = full.results_[full.default_index_]
    np.testing.assert_array_equal(d["returned_per_component"], same["returned_per_component"])
    # only the default's split up to its point was walked; nothing stronger judged
    assert all((r["l1_ratio"], r["tv_ratio"]) == OWN for r in quick.results_)
    assert max(r["alpha_rel"] for r in quick.results_) == d["alpha_rel"]
    assert len(full.results_) > len(quick.results_)
    assert "returned" in quick.table() and len(quick.table().splitlines()) == 1 + len(
        quick.results_
    )


class _Model:
    def __init__(self, nonzero):
        self.components_ = np.zeros((3, 100))
        for k, n in enumerate(nonzero):
            self.components_[k, :n] = 1.0


def _rows():
    def row(alpha_rel):
        params = {"alpha": None, "alpha_rel": alpha_rel, "l1_ratio": OWN[0], "tv_ratio": OWN[1]}
        return dict(params, params=params, nonzero_fraction=np.full(6, 0.1))

    rows = [row(0.25), row(0.5), row(1.0)]
    rows[2].update(
        returned_admissible=True,
        returned_per_component=np.array([0.98, 0.97, 0.96]),
        returned_heldout=np.array([9.6e-3, 0.3e-3]),
    )
    return rows, [[(np.zeros((3, 100)), None)]] * 3


def _patch(monkeypatch, sub, half, heldout):
    calls = []
    monkeypatch.setattr(_default_first, "fit_returned", lambda *a: _Model([10, 10, 10]))
    monkeypatch.setattr(_default_first, "subsample_evidence", lambda *a: np.asarray(sub))

    def halves(*a):
        calls.append("halves")
        return np.asarray(half), np.asarray(heldout)

    monkeypatch.setattr(_default_first, "halves_evidence", halves)
    return calls


def test_a_weaker_row_whose_subsample_bound_fails_a_rank_is_not_fitted_on_halves(monkeypatch):
    rows, halves = _rows()
    evidence = (rows[2]["returned_per_component"], rows[2]["returned_heldout"])
    # better at two ranks, below the default at the third: cannot be taken
    calls = _patch(monkeypatch, [0.99, 0.99, 0.95], [1.0, 1.0, 1.0], [9.9e-3, 0.3e-3])
    search = (rows, halves, {})
    assert weaker_first(SPCATV(3), None, search, 2, evidence, 0) is None
    assert calls == []  # its halves were never fitted
    np.testing.assert_array_equal(rows[1]["returned_bound"], [0.99, 0.99, 0.95])
    assert np.isnan(rows[1]["returned_stability"])
    assert 0 not in search[2]  # 0.25 is weaker than the default path's first point: not judged


def test_a_weaker_row_at_least_as_reproducible_and_explaining_more_is_taken(monkeypatch):
    rows, halves = _rows()
    evidence = (rows[2]["returned_per_component"], rows[2]["returned_heldout"])
    calls = _patch(monkeypatch, [0.99, 0.99, 0.99], [0.985, 0.975, 0.97], [9.95e-3, 0.3e-3])
    assert weaker_first(SPCATV(3), None, (rows, halves, {}), 2, evidence, 0) == 1
    assert calls == ["halves"]
    np.testing.assert_allclose(rows[1]["returned_per_component"], [0.985, 0.975, 0.97])
    # the same evidence within the default's held-out floor: not taken
    rows, halves = _rows()
    _patch(monkeypatch, [0.99, 0.99, 0.99], [0.985, 0.975, 0.97], [9.8e-3, 0.3e-3])
    assert weaker_first(SPCATV(3), None, (rows, halves, {}), 2, evidence, 0) is None


def test_judge_rows_takes_a_known_model_and_its_evidence_without_a_fit(monkeypatch):
    def never(*a, **k):
        raise AssertionError("fitted")

    monkeypatch.setattr(_returned, "fit_returned", never)
    monkeypatch.setattr(_returned, "returned_evidence", never)
    rows, halves = _rows()
    model, stab = _Model([10, 12, 8]), np.array([0.9, 0.8, 0.7])
    known = {(OWN[0], OWN[1], 0.5): (model, (stab, np.array([5e-3, 1e-3])))}
    models = judge_rows(None, None, rows, halves, [1], 0, None, None, known)
    assert models == {1: model}
    assert rows[1]["returned_admissible"]
    assert rows[1]["returned_stability"] == pytest.approx(0.8)
    assert rows[1]["returned_explained"] == pytest.approx(5e-3)


def test_the_weaker_walk_stops_after_a_model_with_an_empty_component(monkeypatch):
    rows, halves = _rows()
    rows.insert(2, dict(rows[1], alpha_rel=0.75, params=dict(rows[1]["params"], alpha_rel=0.75)))
    halves = halves + halves[:1]
    evidence = (rows[3]["returned_per_component"], rows[3]["returned_heldout"])
    fits = []

    def fit(inner, X, params, start):
        fits.append(params["alpha_rel"])
        return _Model([10, 10, 0])  # a component emptied: not admissible, not too dense

    calls = _patch(monkeypatch, [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 0.0])
    monkeypatch.setattr(_default_first, "fit_returned", fit)
    assert weaker_first(SPCATV(3), None, (rows, halves, {}), 3, evidence, 0) is None
    assert fits == [0.5] and calls == []  # 0.75 is never fitted
    assert not rows[1]["returned_admissible"] and "returned_admissible" not in rows[2]
