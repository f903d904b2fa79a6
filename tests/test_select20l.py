"""Issue 20 round 12: ``select_penalty`` moves to a less shrunk SPCA-TV model that the
evidence supports as well as the kept one (``model_selection._less_shrunk``)."""

import numpy as np

from neurospca.model_selection._less_shrunk import (
    least_l2_tied,
    less_shrunk,
    same_l1_points,
    weaker_reproducing,
    weights,
)

from .test_select20j import _row

OWN, SPARSE = (0.05, 0.1), (0.2, 0.2)
GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def _seed_3357():
    """SPCA-TV, scores correlated r = 0.7, development seed 3357 (measured, x 1e-3 held-out):
    the default fit chose alpha_rel 2 (MSE to the truth 0.174); 1 is the better model."""
    return [
        {"alpha_rel": 0.25, "l1_ratio": 0.05, "tv_ratio": 0.1},  # not judged
        _row(0.5, OWN, [0.974, 0.961, 0.936], (9.93e-3, 0.33e-3)),
        _row(1.0, OWN, [0.981, 0.972, 0.954], (9.82e-3, 0.33e-3)),
        _row(2.0, OWN, [0.978, 0.965, 0.936], (8.84e-3, 0.34e-3)),
        _row(4.0, OWN, [np.nan] * 3, None, admissible=False),
    ]


def _kept(alpha_rel, split=OWN):
    return {"alpha_rel": alpha_rel, "l1_ratio": split[0], "tv_ratio": split[1]}


def test_a_weaker_point_at_least_as_reproducible_at_every_rank_and_explaining_more_is_taken():
    rows = _seed_3357()
    evidence = (rows[3]["returned_per_component"], rows[3]["returned_heldout"])
    # 0.5 is worse at two ranks: 1 is the least shrunk that qualifies
    assert weaker_reproducing(rows, _kept(2.0), evidence) == 2
    # one rank worse: not taken
    rows[2]["returned_per_component"] = np.array([0.981, 0.972, 0.930])
    assert weaker_reproducing(rows, _kept(2.0), evidence) is None
    # every rank better but the held-out variance within the kept model's floor: not taken
    rows[2]["returned_per_component"] = np.array([0.981, 0.972, 0.954])
    rows[2]["returned_heldout"] = (9.1e-3, 0.33e-3)
    assert weaker_reproducing(rows, _kept(2.0), evidence) is None
    # only weaker points of the kept model's own split
    rows[2]["returned_heldout"] = (9.82e-3, 0.33e-3)
    assert weaker_reproducing(rows, _kept(1.0), (rows[2]["returned_per_component"], None)) is None
    assert weaker_reproducing(rows, _kept(2.0, SPARSE), evidence) is None


def test_the_least_l2_model_of_the_same_l1_weight_is_taken_only_when_tied():
    # development seed 3352 (r = 0): the default (0.05, 0.1) 1 and (0.2, 0.2) 0.25
    rows = [
        _row(0.5, OWN, [0.971, 0.962, 0.921], (9.74e-3, 0.33e-3)),
        _row(1.0, OWN, [0.981, 0.973, 0.959], (9.66e-3, 0.33e-3)),
        _row(0.25, SPARSE, [0.972, 0.961, 0.94], (9.59e-3, 0.33e-3)),
        _row(0.5, SPARSE, [0.976, 0.961, 0.94], (8.86e-3, 0.34e-3)),
    ]
    evidence = (rows[1]["returned_per_component"], rows[1]["returned_heldout"])
    assert weights(rows[2]["params"]) == (0.05, 0.05, 0.15000000000000002)
    assert least_l2_tied(rows, _kept(1.0), evidence) == 2
    # separated by the held-out variance (more than the kept model's floor below): not taken
    rows[2]["returned_heldout"] = (9.2e-3, 0.33e-3)
    assert least_l2_tied(rows, _kept(1.0), evidence) is None
    # separated by the stability (the kept model beats it by more than MIN_GAIN)
    rows[2]["returned_heldout"] = (9.59e-3, 0.33e-3)
    rows[2]["returned_per_component"] = np.array([0.95, 0.94, 0.90])
    assert least_l2_tied(rows, _kept(1.0), evidence) is None
    # another l1 weight (0.5 at the own split: 0.025) is never a candidate, tied or not
    rows[2]["returned_admissible"] = False
    assert least_l2_tied(rows, _kept(1.0), evidence) is None


def test_the_points_of_the_same_l1_weight_with_less_l2_and_no_more_tv():
    splits = [OWN, SPARSE, (0.3, 0.3), (0.5, 0.3)]
    assert same_l1_points(splits, GRID, _kept(1.0)) == [(SPARSE, 0.25)]
    assert same_l1_points(splits, GRID, _kept(2.0)) == [(SPARSE, 0.5)]
    # from the sparse split back to the own split: more TV weight, not a candidate
    assert same_l1_points(splits, GRID, _kept(0.25, SPARSE)) == []


def test_without_tv_or_without_held_out_evidence_nothing_moves():
    rows = _seed_3357()
    search = (rows, [None] * len(rows), {}, np.asarray(GRID), [0])
    evidence = (rows[3]["returned_per_component"], rows[3]["returned_heldout"])
    assert less_shrunk(None, None, [(0.05, 0.0)], search, _kept(2.0, (0.05, 0.0)), evidence) is None
    assert less_shrunk(None, None, [OWN], search, _kept(2.0), (evidence[0], None)) is None
    # with TV: the weaker point is taken (no other split to walk: no fit)
    assert less_shrunk(None, None, [OWN], search, _kept(2.0), evidence) == 2


def test_the_same_l1_step_is_off_by_default_and_can_be_switched_on(monkeypatch):
    from neurospca.model_selection import _less_shrunk

    rows = [
        _row(0.5, OWN, [0.971, 0.962, 0.921], (9.74e-3, 0.33e-3)),
        _row(1.0, OWN, [0.981, 0.973, 0.959], (9.66e-3, 0.33e-3)),
        _row(0.25, SPARSE, [0.972, 0.961, 0.94], (9.59e-3, 0.33e-3)),
    ]
    search = (rows, [None] * len(rows), {}, np.asarray(GRID), [0])
    evidence = (rows[1]["returned_per_component"], rows[1]["returned_heldout"])
    splits = [OWN, SPARSE]
    assert less_shrunk(None, None, splits, search, _kept(1.0), evidence) is None
    monkeypatch.setattr(_less_shrunk, "LEAST_L2_TIES", True)
    # the sparse split's point is already judged: no fit, the tied row is taken
    assert less_shrunk(None, None, splits, search, _kept(1.0), evidence) == 2
