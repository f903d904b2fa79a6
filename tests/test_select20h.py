"""Issue 20 round 9: select_penalty compares models paired by rank, searches split
by split and judges one ElasticNet model once."""

import numpy as np
import pytest
from sklearn.base import clone

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import start_from
from neurospca.model_selection import select_penalty
from neurospca.model_selection._returned import (
    OTHER_SPLITS_BELOW,
    SWITCH_GAIN,
    _past_best,
    _reproduces,
    choose_returned,
    default_n_splits,
    least_l2,
    paired_gain,
    same_model,
)


def _row(alpha_rel, split, returned, admissible=True):
    returned = np.asarray(returned, float)
    return {
        "alpha_rel": alpha_rel,
        "l1_ratio": split[0],
        "tv_ratio": split[1],
        "returned_per_component": returned,
        "returned_stability": float(returned.mean()),
        "returned_admissible": admissible,
    }


def test_paired_gain_pairs_by_rank():
    gain, err = paired_gain([0.2, 0.9, 0.6], [0.5, 0.1, 0.8])
    # ranks: 0.9-0.8, 0.6-0.5, 0.2-0.1
    assert gain == pytest.approx(0.1)
    assert err == pytest.approx(0.0, abs=1e-12)
    gain, err = paired_gain([1.0, 0.5], [0.5, 0.5])
    d = np.array([0.5, 0.0])
    assert gain == pytest.approx(0.25)
    assert err == pytest.approx(np.std(d, ddof=1) / np.sqrt(2))


def test_same_model_only_without_tv_and_at_one_l1_weight():
    rows = [
        _row(2.0, (0.05, 0.0), [0.5]),
        _row(0.5, (0.2, 0.0), [0.5]),  # l1 weight 0.1, as row 0
        _row(1.0, (0.2, 0.0), [0.5]),  # 0.2
        _row(2.0, (0.05, 0.1), [0.5]),
        _row(0.5, (0.2, 0.1), [0.5]),  # with TV: another model
    ]
    assert same_model(rows, 1, [0]) == 0
    assert same_model(rows, 2, [0]) is None
    assert same_model(rows, 4, [3]) is None


def test_least_l2_names_the_least_shrunk_row_of_one_model():
    rows = [
        _row(2.0, (0.05, 0.0), [0.5]),
        _row(0.5, (0.2, 0.0), [0.5]),
        _row(0.2, (0.5, 0.0), [0.5]),
    ]
    rows[1]["same_as"] = rows[2]["same_as"] = 0
    # l2 weights 1.9, 0.4, 0.1
    assert least_l2(rows, 0) == 2
    assert least_l2(rows, 1) == 2
    del rows[2]["same_as"]
    assert least_l2(rows, 0) == 1


def test_without_tv_two_points_of_one_l1_weight_are_one_model():
    X, _, mask = make_paper_simulation(60, snr=0.5, random_state=3, shape=(16, 16))
    est = SPCATV(3, operator=tv_from_mask(mask), random_state=0, stability=False)
    start = clone(est).set_params(alpha_rel=1.0, l1_ratio=0.05, tv_ratio=0.0).fit(X[:30])
    fits = [
        start_from(clone(est).set_params(alpha_rel=a, l1_ratio=r, tv_ratio=0.0), start.components_)
        .fit(X)
        .components_
        for a, r in ((2.0, 0.05), (0.5, 0.2))
    ]
    np.testing.assert_array_equal(fits[0] != 0, fits[1] != 0)
    unit = [f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-300) for f in fits]
    np.testing.assert_allclose(unit[0], unit[1], atol=1e-4)


def test_a_point_better_at_every_rank_is_chosen_within_a_split():
    own = (0.05, 0.0)
    rows = [
        _row(0.5, own, [0.46, 0.32, 0.01]),
        _row(1.0, own, [0.56, 0.42, 0.00]),
        _row(2.0, own, [0.73, 0.62, 0.05]),  # round 8's unpaired error: 0.24
        _row(4.0, own, [0.79, 0.64, 0.01]),  # the best, does not beat 2.0
    ]
    models = dict.fromkeys(range(4))
    assert choose_returned(rows, models) == 2


def test_another_split_needs_the_switch_gain():
    own, other = (0.05, 0.1), (0.2, 0.2)
    rows = [
        _row(0.5, own, [0.90, 0.88, 0.80]),
        _row(1.0, own, [0.91, 0.89, 0.81]),
        _row(0.25, other, [0.94, 0.92, 0.84]),  # +0.03 at every rank: not enough
    ]
    models = dict.fromkeys(range(3))
    assert choose_returned(rows, models) == 1
    rows[2]["returned_per_component"] = np.array([0.90, 0.88, 0.80]) + SWITCH_GAIN + 0.01
    assert choose_returned(rows, models) == 2


def test_past_best_and_the_other_splits():
    own = (0.05, 0.1)
    rows = [
        _row(0.5, own, [0.97, 0.96, 0.95]),
        _row(1.0, own, [0.96, 0.96, 0.94]),  # within the margin
        _row(2.0, own, [0.95, 0.90, 0.70]),  # beaten by an earlier row reproducing >= 0.9
    ]
    assert not _past_best(rows, [0, 1], 1)
    assert _past_best(rows, [0, 1, 2], 2)
    rows[0]["returned_stability"] = 0.85  # the earlier rows reproduce below the stop
    rows[1]["returned_stability"] = 0.85
    assert not _past_best(rows, [0, 1, 2], 2)
    models = dict.fromkeys(range(3))
    assert rows[1]["returned_stability"] < OTHER_SPLITS_BELOW
    assert not _reproduces(rows, models, own)
    rows[1]["returned_stability"] = OTHER_SPLITS_BELOW
    assert _reproduces(rows, models, own)
    rows[1]["returned_admissible"] = False
    assert not _reproduces(rows, models, own)


def test_n_splits_default():
    assert default_n_splits(None, "reproducibility", "returned", None) == 1
    assert default_n_splits(None, "reproducibility", "halves", None) == 2
    assert default_n_splits(None, "reproducibility", "returned", 0.01) == 2
    assert default_n_splits(3, "reproducibility", "returned", None) == 3


@pytest.fixture(scope="module")
def elasticnet_selection():
    X, patterns, mask = make_paper_simulation(80, snr=0.5, random_state=5, shape=(16, 16))
    est = SPCATV(3, operator=tv_from_mask(mask), random_state=0, tv_ratio=0.0)
    return X, select_penalty(est, X, alpha_rel=(0.5, 1.0, 2.0, 4.0), random_state=0)


def test_select_penalty_judges_one_elasticnet_model_once(elasticnet_selection):
    X, sel = elasticnet_selection
    res = sel.results_
    copies = [r for r in res if "same_as" in r]
    for r in copies:
        o = res[r["same_as"]]
        assert "same_as" not in o
        assert r["l1_ratio"] * r["alpha_rel"] == pytest.approx(o["l1_ratio"] * o["alpha_rel"])
        np.testing.assert_array_equal(r["returned_per_component"], o["returned_per_component"])
    best = res[sel.best_index_]
    model = sel.best_estimator_
    assert (model.alpha_rel_, model.l1_ratio_, model.tv_ratio_) == (
        best["alpha_rel"],
        best["l1_ratio"],
        0.0,
    )
    assert model.stability_.shape == (3,)
    if sel.default_index_ != sel.best_index_:
        np.testing.assert_array_equal(model.stability_, best["returned_per_component"])
    # the chosen row is the least l2 weight among the rows of its model
    root = best.get("same_as", sel.best_index_)
    same = [r for i, r in enumerate(res) if i == root or r.get("same_as") == root]
    if sel.default_index_ != sel.best_index_:
        assert (1 - best["l1_ratio"]) * best["alpha_rel"] == min(
            (1 - r["l1_ratio"]) * r["alpha_rel"] for r in same
        )
    assert "*" in sel.table()


class _Model:
    def __init__(self, counts, p=1000):
        self.components_ = np.zeros((len(counts), p))
        for k, c in enumerate(counts):
            self.components_[k, :c] = 1.0


def test_a_model_shrunk_to_a_few_pixels_against_its_split_is_not_admissible():
    from neurospca.model_selection._returned import COLLAPSED, _shrunk_away

    split = (0.5, 0.0)
    rows = [_row(0.25, split, [0.8, 0.6, 0.3]), _row(0.5, split, [0.7, 0.5, 0.2])]
    models = {0: _Model([200, 150, 100])}
    one_pixel = _Model([1, 1, 1])  # admissible on its own: nothing empty, nothing collapsed
    assert _shrunk_away(rows, models, 1, one_pixel)
    assert not _shrunk_away(rows, models, 1, _Model([int(COLLAPSED * 200) + 1, 5, 5]))
    rows[0]["returned_admissible"] = False  # no admissible model before it
    assert not _shrunk_away(rows, models, 1, one_pixel)


def test_beats_needs_no_rank_worse_than_the_min_gain():
    from neurospca.model_selection._returned import MIN_GAIN, beats

    other = [0.73, 0.62, 0.05]
    assert beats([0.83, 0.72, 0.05], other)
    # better on average, but its weakest component lost 0.04
    assert not beats([0.95, 0.80, 0.01], other)
    assert beats([0.95, 0.80, 0.05 - MIN_GAIN / 2], other)
