"""Issue 20 round 6: select_penalty's default rule is the default fit's rule."""

import numpy as np

from neurospca.model_selection import choose_reproducible


def _row(alpha_rel, split, repro, nonzero=0.2):
    per = np.asarray(repro, float).reshape(2, -1)  # n_splits x components
    return {
        "alpha_rel": alpha_rel,
        "l1_ratio": split[0],
        "tv_ratio": split[1],
        "reproducibility": float(per.mean()),
        "reproducibility_per_component": per,
        "nonzero_fraction": np.full(per.size, nonzero),
        "mean_score": 0.1,
    }


OWN, SPARSE = (0.05, 0.1), (0.5, 0.3)


def test_own_split_kept_unless_another_wins_by_more_than_margin_and_error():
    own = [
        _row(0.25, OWN, [0.9, 0.8, 0.9, 0.8]),
        _row(0.5, OWN, [0.95, 0.85, 0.95, 0.85]),
        _row(1.0, OWN, [0.96, 0.88, 0.96, 0.88]),
    ]
    # the sparse split is more reproducible, but by less than the error: own kept,
    # at its least shrunk point within the error of its best (0.5, not 1: the means
    # 0.90 and 0.92 differ by less than hypot of their errors; 0.25 is the
    # cold-started first point)
    close = own + [_row(0.25, SPARSE, [0.97, 0.9, 0.97, 0.9])]
    i = choose_reproducible(close)
    assert (close[i]["l1_ratio"], close[i]["alpha_rel"]) == (0.05, 0.5)
    assert close[i]["near_best"] and not close[-1]["near_best"]
    # clearly better (by more than the margin and the error): the sparse split wins
    far = own + [_row(0.25, SPARSE, [0.99, 0.99, 0.99, 0.99])]
    i = choose_reproducible(far)
    assert (far[i]["l1_ratio"], far[i]["alpha_rel"]) == (0.5, 0.25)
    # the rule before round 6 (a number): the most reproducible admissible row
    assert choose_reproducible(close, 0.0) == len(close) - 1


def test_inadmissible_points_are_not_chosen():
    rows = [
        _row(0.25, OWN, [0.99] * 4, nonzero=0.8),  # too dense
        _row(0.5, OWN, [0.7, 0.6, 0.7, 0.6]),
        _row(1.0, OWN, [0.99] * 4, nonzero=0.0),  # empty
    ]
    i = choose_reproducible(rows)
    assert i == 1 and rows[1]["admissible"] and not rows[0]["admissible"]


def test_points_weaker_than_the_default_path_are_not_chosen():
    rows = [
        _row(0.125, OWN, [0.9] * 4),
        _row(0.25, OWN, [0.95, 0.93, 0.95, 0.93]),
        _row(0.5, OWN, [0.95, 0.93, 0.95, 0.93]),
        _row(1.0, OWN, [0.95, 0.94, 0.95, 0.94]),
    ]
    # unrestricted: the least shrunk near point after the first (0.25)
    assert rows[choose_reproducible(rows)]["alpha_rel"] == 0.25
    # the default fit's path of this split starts at 0.5 (excepted as its first
    # point): the choice is not weaker than 1, where the default fit could choose
    i = choose_reproducible(rows, path_starts={OWN: 0.5})
    assert rows[i]["alpha_rel"] == 1.0
    assert not rows[1]["near_best"] and rows[3]["near_best"]


def test_default_path_starts_follow_the_estimators_split():
    from neurospca import SPCATV
    from neurospca.model_selection import default_path_starts

    assert default_path_starts(SPCATV()) == {(0.05, 0.1): 0.5, (0.3, 0.3): 0.125}
    assert default_path_starts(SPCATV(tv_ratio=0.0)) == {(0.05, 0.0): 0.5}
