"""Issue 22 round 19 (wall22s): the components' finishings side by side.

Each component's finishing solves its own v-step (the joint fit's against one
snapshot of the others), so the steps run on the fit's threads at once
(``_support.each_component``); a thread's kernels are capped to its share of
the threads (``_kernels.THREAD_CAP``), and the numbers never depend on which
thread runs a step or when: the same fits bit for bit as one step after the
other. Seeds 3727-3730 (fresh, round 19).
"""

import threading
import warnings

import numpy as np
import pytest

from neurospca import SPCATV, _kernels, tv_from_mask
from neurospca.decomposition import _support
from neurospca.solvers import prox_dual

from ._helpers import assert_same_fits, starts_side_by_side_warnings


def test_each_component_runs_the_steps_at_once_with_the_kernels_capped():
    """Two steps meet at a barrier (they run at the same time, or the barrier
    times out); while both run each one's kernels get one of the two threads,
    and a lone step (the other thread done) gets both back."""
    met = threading.Barrier(2, timeout=20)
    done = threading.Event()

    def step(k):
        if k < 2:
            met.wait()
            caps = [_kernels.kernel_threads(2)]
            if k == 1:  # the other thread takes k = 2, ends, then k = 1 is alone
                assert done.wait(20)
                while _kernels.kernel_threads(2) != 2:
                    threading.Event().wait(0.01)  # the other thread leaves after its step
                caps.append(_kernels.kernel_threads(2))
            return caps
        done.set()
        return [_kernels.kernel_threads(2)]

    got = _support.each_component(step, [2, 1, 0], 2)  # taken last first: 0, 1, then 2
    assert list(got) == [2, 1, 0]
    assert got[0][0] == [1] and got[1][0] == [1, 2] and got[2][0] == [1]
    assert _kernels.kernel_threads(2) == 2  # the calling thread is not capped


def test_each_component_raises_a_steps_error_and_runs_one_after_the_other_when_off(monkeypatch):
    def step(k):
        if k == 1:
            raise ValueError("step 1")
        return k

    with pytest.raises(ValueError, match="step 1"):
        _support.each_component(step, [0, 1, 2], 2)
    monkeypatch.setattr(_support, "PARALLEL_FINISH", False)
    order = []
    got = _support.each_component(lambda k: order.append(k) or threading.get_ident(), [2, 0], 2)
    assert order == [2, 0] and set(v for v, _ in got.values()) == {threading.get_ident()}


def test_capped_solves_side_by_side_equal_the_solves_alone():
    """v-step solves on an operator of two kernel chunks (n_threads=2), two at
    a time on capped threads, equal bit for bit the same solves one after the
    other on both threads (the chunks, not the threads, set the numbers)."""
    op = tv_from_mask(np.ones((36, 36, 36), bool))  # ~136 k rows: 2 chunks
    rng = np.random.default_rng(3727)
    ys = [rng.standard_normal(op.n_features) for _ in range(3)]

    def solve(k):
        return prox_dual(ys[k], op, 0.5, 0.3, tol=1e-8, max_iter=300, n_threads=2)

    alone = {k: solve(k) for k in range(3)}
    side = _support.each_component(solve, range(3), 2)
    for k in range(3):
        res = side[k][0]
        assert np.array_equal(res.v, alone[k].v) and np.array_equal(res.w, alone[k].w)
        assert res.gap == alone[k].gap and res.n_iter == alone[k].n_iter


def _instance(seed, n=60, side=14):
    """``tests/test_datapath``'s blobs on a ``side``-cube, and its TV operator."""
    from .test_datapath import _instance as blobs

    return blobs(n, side, seed), tv_from_mask(np.ones((side,) * 3, bool))


@pytest.mark.parametrize("method", ["joint", "deflation"])
@pytest.mark.parametrize("seed", [3728, 3729])
def test_fits_with_the_finishings_side_by_side_are_the_same_bit_for_bit(monkeypatch, method, seed):
    X, op = _instance(seed)
    got = {}
    for side in (False, True):
        monkeypatch.setattr(_support, "PARALLEL_FINISH", side)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = SPCATV(3, operator=op, alpha_rel=1.0, method=method, tol=1e-3, n_threads=2)
            got[side] = m.fit(X)
    a, b = got[False], got[True]
    assert_same_fits(a, b, ("components_", "dual_gaps_", "support_radius_", "n_uncertain_"))
    assert np.array_equal(a.certified_zeros_, b.certified_zeros_)


def test_starts_side_by_side_run_their_kernels_at_once_and_keep_their_warnings(monkeypatch):
    """Two starts' lent kernels meet at a barrier inside the kernel (they run at
    the same time, or the barrier times out), each start's ``catch_warnings``
    records only its own warnings around them, their passes stay shared, and
    the caller's warnings state is back at the end (the starts taking turns,
    ``FREE_STARTS`` off: tests/test_par22t.py for free starts)."""
    from neurospca._utils.turns import holding, lend
    from neurospca.decomposition import _lockstep

    monkeypatch.setattr(_lockstep, "FREE_STARTS", False)
    from neurospca.decomposition._data import as_data_operator

    X = np.random.default_rng(3730).standard_normal((30, 11))
    op = as_data_operator(X, n_threads=1)
    op.centre(op.stats["mean"])
    met = threading.Barrier(2, timeout=20)
    inside = []

    def kernel(name):
        inside.append((name, holding()))
        met.wait()  # both "kernels" at once
        return name

    def start(name, action):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            for i in range(3):
                z = op.matvec(np.ones(11))
                lend(kernel)(name)
                warnings.warn(f"{name} {i}", UserWarning, stacklevel=1)
        return [str(w.message) for w in caught], z

    filters = warnings.filters
    got, outer = starts_side_by_side_warnings(_lockstep.run_side_by_side, op, start)
    assert got[0][0] == ["a 0", "a 1", "a 2"] and got[1][0] == []
    assert np.array_equal(got[0][1], got[1][1])
    assert sorted(inside) == [("a", False)] * 3 + [("b", False)] * 3  # the turn lent
    assert outer == ["caller"]
    assert warnings.filters is filters and not holding()


@pytest.mark.parametrize("seed", [3731, 3732])
def test_joint_fits_with_the_kernels_lent_are_the_same_bit_for_bit(monkeypatch, seed):
    """The joint fit with its starts' kernels at once (``LEND_KERNELS``) and one
    start at a time: the same model bit for bit, the same passes over ``X``."""
    from neurospca.decomposition import _lockstep

    from ._helpers import count_passes

    X, op = _instance(seed, side=16)
    counted = count_passes(monkeypatch)
    got, passes = {}, {}
    for lent in (False, True):
        monkeypatch.setattr(_lockstep, "LEND_KERNELS", lent)
        counted.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got[lent] = SPCATV(3, operator=op, alpha_rel=1.0, tol=1e-3, n_threads=2).fit(X)
        passes[lent] = len(counted)
    a, b = got[False], got[True]
    for name in ("components_", "scores_", "dual_gaps_", "support_radius_"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert np.array_equal(a.certified_support_, b.certified_support_)
    assert a.n_sweeps_ == b.n_sweeps_ and passes[True] == passes[False]


def test_the_turn_is_taken_and_given_once_and_lent_only_by_its_holder():
    from neurospca._utils import turns

    assert turns.current() is None and not turns.holding()
    with turns.lent():  # no lockstep: nothing lent
        assert not turns.holding() and turns.others_in_kernel() == 0
    turns.take()  # no turn: nothing
    assert not turns.holding()
    turn = turns.Turn()
    turns.join(turn)
    try:
        turns.give()  # not held: nothing
        turns.take()
        turns.take()  # held: nothing (no deadlock)
        assert turns.holding()
        other = threading.Thread(target=lambda: (turns.join(turns.Turn()), turns.take()))
        other.start()
        other.join(20)  # another thread's own turn: not this one's
        assert not other.is_alive() and turns.holding()
        with turns.lent():
            assert not turns.holding() and turns.others_in_kernel() == 0
            assert turn.in_kernel == 1
        assert turns.holding() and turn.in_kernel == 0
        turns.give()
        assert not turns.holding() and turn.holder is None
    finally:
        turns.join(None)
