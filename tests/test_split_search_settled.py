"""Issue 20 round 7: a split's walk stops once its choice has settled.

The walk of a split's path (weakest first, warm-started) stops after the first
point that does not change the split's choice (:func:`choose_least_shrunk`)
when that choice is an admissible point past the path's first. The points it
did not fit are fitted later, with the same half models, when the full fit's
check needs a stronger point (:func:`_extend`): the same records as an
unstopped walk, bit for bit.
"""

import numpy as np

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import AUTO_ALPHA_REL_PATH, DEFAULT_SPLIT, split_halves
from neurospca.decomposition._auto import (
    STOP_REPRODUCIBILITY,
    SplitWalk,
    _reproduces,
    _second_kept,
    _settled,
    auto_fit,
    choose_least_shrunk,
)
from neurospca.decomposition._stability import _half_models

from ._helpers import path_record


def _records(scores, nonzero=None):
    nonzero = nonzero or [(0.1,) * 6] * len(scores)
    return [
        path_record(DEFAULT_SPLIT, a, r, nz)
        for a, r, nz in zip(AUTO_ALPHA_REL_PATH, scores, nonzero, strict=False)
    ]


def test_settled_once_a_later_point_leaves_the_choice():
    # the paper's third pattern lost by the halves: the choice is 1 and stays
    path = _records([(0.99, 0.95, 0.0), (0.97, 0.97, 0.0), (0.98, 0.97, 0.0)])
    assert choose_least_shrunk(path[:2]) == choose_least_shrunk(path) == 1
    assert not _settled(path[:2]) and _settled(path)
    # a stronger point where every pattern reproduces moves the choice: not settled
    moved = path[:2] + _records([(0.99, 0.99, 0.99)])[:1]
    moved[2]["alpha_rel"] = 2.0
    assert choose_least_shrunk(moved) == 2 and not _settled(moved)


def test_not_settled_on_the_first_point_or_an_inadmissible_choice():
    # 1 and 2 too dense (more than half non-zero): the choice is the cold first point
    dense = [(0.1,) * 6, (0.6,) * 6, (0.6,) * 6]
    path = _records([(0.9, 0.9, 0.9), (0.95, 0.95, 0.95), (0.95, 0.95, 0.95)], dense)
    assert choose_least_shrunk(path) == choose_least_shrunk(path[:2]) == 0
    assert not _settled(path)
    # nothing admissible (empty half components): the walk does not settle
    empty = [(0.0,) + (0.1,) * 5] * 3
    assert not _settled(_records([(0.5, 0.5, 0.0)] * 3, empty))


def test_reproduces_once_every_pattern_reproduces_past_the_first_point():
    high = (0.99, 0.97, STOP_REPRODUCIBILITY)
    assert not _reproduces(_records([high]))  # the cold first point
    assert _reproduces(_records([(0.5, 0.5, 0.5), high]))
    low = (0.99, 0.97, STOP_REPRODUCIBILITY - 0.01)  # one pattern short
    assert not _reproduces(_records([(0.5, 0.5, 0.5), low]))
    dense = [(0.1,) * 6, (0.1,) * 5 + (0.6,)]  # a half component too dense
    assert not _reproduces(_records([(0.5, 0.5, 0.5), high], dense))


def _simulation():
    """Scores correlated 0.8, 80 samples, low signal: the halves lose a pattern
    and the default split's walk settles at 2 before reaching 4 (measured:
    0.5, 1, 2 reproduce at 0.41, 0.56, 0.60; 4 empties every component)."""
    X, _, mask = make_paper_simulation(
        80, random_state=3103, shape=(30, 30), snr=0.25, correlation=0.8
    )
    return X, tv_from_mask(mask)


def _walk(X, op):
    est = SPCATV(3, operator=op)
    return SplitWalk(_half_models(est), split_halves(X, 0), DEFAULT_SPLIT, AUTO_ALPHA_REL_PATH)


def _same(a, b):
    assert a["alpha_rel"] == b["alpha_rel"]
    np.testing.assert_array_equal(a["reproducibility"], b["reproducibility"])
    for ca, cb in zip(a["components"], b["components"], strict=True):
        np.testing.assert_array_equal(ca, cb)


def test_a_stopped_walk_resumes_to_the_unstopped_walk_bit_for_bit():
    """The walk stops once settled or at a chosen second point (round 13;
    fewer points than the path's stops alone); stepping on gives the records
    of a walk that never stopped for that."""
    X, op = _simulation()
    stopped = _walk(X, op)
    points = list(stopped.walk())
    assert _settled(points) or _second_kept(points)
    assert len(points) < len(AUTO_ALPHA_REL_PATH)
    full = _walk(X, op)
    while full.step():
        pass
    assert len(full.points) > len(points)
    while stopped.step():
        pass
    assert len(stopped.points) == len(full.points)
    for a, b in zip(stopped.points, full.points, strict=True):
        _same(a, b)


def test_a_dense_full_fit_extends_the_walk():
    """The walk stopped at the halves' choice (1, its second point: round 13);
    every full fit is more than half non-zero, so the split's next point (2)
    is fitted, the check moves there and, that one dense too, fits the next
    (they are in the records after, in the path's order): 4 empties every
    half component, the walk ends, and 2 is kept."""
    X, op = _simulation()
    walk = _walk(X, op)
    path = [dict(p, _walk=walk) for p in walk.walk()]
    n, chosen = len(path), path[choose_least_shrunk(path)]["alpha_rel"]
    fitted = []

    def run(point, u0):
        fitted.append(point["alpha_rel"])
        V = np.zeros((900, 3))
        V[:800] = 1.0  # every full fit too dense
        return None, V

    point, halves, _ = auto_fit(path, run, lambda h: None)
    assert n == 2 and len(path) == n + 2 and np.all(path[-1]["nonzero_fraction"] == 0)
    assert chosen == 1.0 and fitted[:2] == [1.0, 2.0] and point["alpha_rel"] == 2.0
    assert all("_walk" not in p and "components" not in p for p in path)
    assert [p["alpha_rel"] for p in path] == list(AUTO_ALPHA_REL_PATH[: len(path)])
    assert halves[0].shape == (3, X.shape[1])
