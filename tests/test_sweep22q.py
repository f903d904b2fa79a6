"""Issue 22 round 17: the joint fit's sweeps at large P.

* :func:`~neurospca.decomposition._alternation.own_moved_gap` bounds the gap of
  the dual solver's own pair (``v`` the primal point of its ``w``) for a moved
  prox centre by ``G0 + ||d||^2 / 2`` (no cross term);
* the joint fit's certify steps take it (:data:`~._alternation.OWN_PAIRS`): it
  certifies steps that :func:`~._alternation.moved_gap` did not, and the fit's
  components, scales, returned gaps and iterations are those without it, bit
  for bit.
"""

import warnings

import numpy as np
import pytest

import neurospca.decomposition._alternation as alternation
from neurospca import SPCATV, tv_from_mask
from neurospca.solvers import ProxProblem, get_solver
from neurospca.solvers.penalties import L1, GroupNorm

from ._helpers import assert_same_fit, switched_fits
from .test_datapath import _instance


def _problem(rng, side=9):
    op = tv_from_mask(rng.random((side,) * 3) < 0.85)
    y = rng.standard_normal(op.n_features) + 2.0 * (rng.random(op.n_features) < 0.1)
    a, b = rng.uniform(0.01, 0.3), rng.uniform(0.05, 0.6)
    return y, [L1(a), GroupNorm(op, b)]


def test_own_bound_holds_for_the_solvers_pair_and_is_tighter():
    """The dual solver's pairs at tolerances 1e-2 .. 1e-6, centres moved by
    1e-4 .. 0.3 of ``||y0||`` (at random, along ``v``, along ``y0``): the exact
    gap at ``y`` is at most ``own_moved_gap`` (to rounding), which is at most
    ``moved_gap``; the bound is attained (along ``v``), so a tighter formula
    would fail here."""
    rng = np.random.default_rng(3657)
    solver = get_solver("dual")
    worst, n = 0.0, 0
    for _ in range(12):
        y0, pieces = _problem(rng)
        base = ProxProblem(y0, pieces)
        res = solver.solve(base, tol=10.0 ** -rng.uniform(2, 6), max_iter=5000)
        assert base.gap(res.v, res.w)[0] <= res.gap * (1 + 1e-9) + 1e-12
        for scale in (1e-4, 1e-3, 1e-2, 0.1, 0.3):
            for d in (rng.standard_normal(y0.size), res.v, y0):
                if not np.any(d):
                    continue
                y = y0 + scale * np.linalg.norm(y0) * d / np.linalg.norm(d)
                exact = ProxProblem(y, pieces).gap(res.v, res.w)[0]
                own = alternation.own_moved_gap(y, y0, res.gap)
                assert own <= alternation.moved_gap(y, y0, res.gap)
                # rounding: ~1e-15 of P(0) (the 1 % margin of the certify step is 1e-5 of it)
                assert exact <= own + 1e-13 * 0.5 * float(y @ y)
                worst, n = max(worst, exact / own), n + 1
    assert worst > 0.99  # attained (along v): a smaller bound would fail
    assert n > 100


def _fit(X, op, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(3, operator=op, tol=1e-3, random_state=seed, alpha_rel=1.0).fit(X)


class _Counted:
    """How many certify steps the own bound certified where ``moved_gap`` did not."""

    def __init__(self, monkeypatch):
        self.own_only = 0
        original = alternation.own_moved_gap

        def counted(y, y0, gap0):
            out = original(y, y0, gap0)
            share = alternation.MOVED_SHARE * 1e-3 * 0.5 * float(y @ y)
            self.own_only += out <= share < alternation.moved_gap(y, y0, gap0)
            return out

        monkeypatch.setattr(alternation, "own_moved_gap", counted)


@pytest.mark.parametrize("seed", [3658, 3659])
def test_joint_fit_with_the_own_bound_is_the_same_fit(monkeypatch, seed):
    """The joint fit with and without the own-pair bound: the same components,
    scales, returned gaps, iterations and certified support bit for bit; the
    own bound certified steps that the general bound did not (else the test
    compares a fit with itself)."""
    X = _instance(n=60, side=12, seed=seed)
    op = tv_from_mask(np.ones((12,) * 3, bool))
    fit = lambda: _fit(X, op)  # noqa: E731
    before, after, counted = switched_fits(monkeypatch, alternation, "OWN_PAIRS", fit, _Counted)
    assert counted.own_only > 0
    assert_same_fit(after, before)
    assert after.n_sweeps_ == before.n_sweeps_


def _scripted(monkeypatch, changes, values, rotations):
    """``_joint._sweeps`` on a scripted fit: sweep ``i`` moves the loadings by
    ``changes[i]`` (relative), rotates ``rotations[i]`` pairs and leaves ``J =
    values[i]``. Returns the loop."""
    import neurospca.decomposition._joint as joint

    state = {"i": -1}
    V = np.ones((4, 2))

    def sweep(op, sqnorm, U, V, d, Z, info, kw):
        state["i"] += 1
        V *= 1.0 + changes[state["i"]]
        return []

    monkeypatch.setattr(joint, "_sweep", sweep)
    monkeypatch.setattr(joint, "rotate_pairs", lambda *a: rotations[state["i"] + 1])
    monkeypatch.setattr(joint, "_objective", lambda *a: values[state["i"]])
    loop = joint._Loop(True, False, len(changes), 1e-2, 0, [])
    out = joint._sweeps(None, 1.0, np.ones((3, 2)), V, np.ones(2), None, {}, {}, loop)
    return out, loop


@pytest.mark.parametrize("flag", [False, True])
def test_sweeps_stop_after_a_sweep_that_raised_j_without_a_rotation(monkeypatch, flag):
    """Scripted sweeps that move the loadings by 5 % each (never settled by the
    change): ``J`` falls, rises in a sweep that rotated a pair (no stop), falls,
    then rises without a rotation: with :data:`SWEEP_J_STOP` the sweeps stop
    there, settled, with that ``J``; without it they run to ``max_sweeps``
    unsettled."""
    import neurospca.decomposition._joint as joint

    monkeypatch.setattr(joint, "SWEEP_J_STOP", flag)
    values = [10.0, 9.0, 9.5, 8.0, 8.2, 7.0, 6.0, 5.0]
    rotations = [0, 0, 1, 0, 0, 0, 0, 0, 0]
    (settled, _, value), loop = _scripted(monkeypatch, [0.05] * 8, values, rotations)
    if flag:
        assert settled and len(loop.changes) == 5 and value == 8.2
    else:
        assert not settled and len(loop.changes) == 8 and value == 5.0


def _rotate_pairs_reference(op, U, V, d, Z, info):
    """``rotate_pairs`` as main wrote it before round 17 (each pair's
    :func:`sparsest_pair` from scratch, its rotated pair always formed)."""
    from neurospca.decomposition._rotation import MIN_GAIN, _set, sparsest_pair

    moved, K = 0, V.shape[1]
    for j in range(K):
        for k in range(j + 1, K):
            if not (np.any(V[:, j]) and np.any(V[:, k])):
                continue
            best = sparsest_pair(V[:, j], V[:, k])
            if best is None or best[2] < MIN_GAIN:
                continue
            w1, w2, _ = best
            sj, sk = np.linalg.norm(V[:, j]), np.linalg.norm(V[:, k])
            if abs(w1 @ V[:, j]) / sj < abs(w1 @ V[:, k]) / sk:
                w1, w2 = w2, w1
            zj, zk = op.matvec(w1), op.matvec(w2)
            _set(U, V, d, Z, j, w1, zj, sj)
            _set(U, V, d, Z, k, w2, zk, sk)
            info["w"][j] = info["w"][k] = None
            moved += 1
    return moved


def test_rotate_pairs_gives_the_bits_of_the_pairwise_search():
    """Merged, separated and random sparse loadings (4 components, so that a
    rotated loading meets a later pair): ``rotate_pairs`` with each loading's
    unit vector formed once gives the same state, bit for bit, and the same
    count as the search from scratch; some pairs rotate and some do not."""
    from neurospca.decomposition._data import DataOperator
    from neurospca.decomposition._rotation import rotate_pairs

    rng = np.random.default_rng(3660)
    X = rng.standard_normal((40, 300))
    op = DataOperator(X)
    op.centre(X.mean(axis=0))
    counts = []
    for trial in range(8):
        A, B, C, D = (rng.standard_normal(300) * (rng.random(300) < 0.15) for _ in range(4))
        if trial % 2 == 0:  # two merged pairs
            A, B, C, D = A + B, A - B, C + 0.5 * D, C - D
        V = np.column_stack([A, B, C, D])
        Z = op.matmat(V)
        U = Z / np.linalg.norm(Z, axis=0)
        d = np.linalg.norm(Z, axis=0) / np.linalg.norm(V, axis=0) ** 2
        states = [[M.copy() for M in (U, V, d, Z)] for _ in range(2)]
        infos = [{"w": [np.ones(3)] * 4} for _ in range(2)]
        n_new = rotate_pairs(op, *states[0], infos[0])
        n_ref = _rotate_pairs_reference(op, *states[1], infos[1])
        assert n_new == n_ref
        for new, ref in zip(*states, strict=True):
            np.testing.assert_array_equal(new, ref)
        assert [w is None for w in infos[0]["w"]] == [w is None for w in infos[1]["w"]]
        counts.append(n_new)
    assert max(counts) > 0 and min(counts) == 0
