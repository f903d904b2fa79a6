"""Issue 22 round 20 (fin22t): the joint finishing's components all at once
(switches, off by default: no gain measured on the 2-core VM).

Three components on two cores, one thread per core, end on the longer of two
sums (``_support.SHARE_CORES`` off: the longest component alone, the two
others one after the other); with ``SHARE_CORES`` every component runs at
once (up to ``AT_ONCE_PER_CORE`` threads per core), its kernels on one
OpenMP thread while others run, and the returned pairs' gaps run side by
side too (``_joint_certify.PARALLEL_PAIRS``). Nothing a step reads is written
by another, so the fits are the same bit for bit. Seeds 3778-3781 (fresh,
round 20).
"""

import threading
import warnings

import numpy as np
import pytest

from neurospca import SPCATV, _kernels, tv_from_mask
from neurospca.decomposition import _joint_certify, _support

from ._helpers import assert_same_fit, switched_fits


def test_three_components_on_two_threads_run_all_at_once_with_one_kernel_thread_each(monkeypatch):
    """Three steps meet at one barrier (all three run at the same time, or the
    barrier times out: one thread per core runs two at once); while three run,
    each one's kernels get one thread."""
    monkeypatch.setattr(_support, "SHARE_CORES", True)
    met = threading.Barrier(3, timeout=20)

    def step(k):
        cap = _kernels.kernel_threads(2)  # read before any step ends
        met.wait()
        return cap, threading.get_ident()

    got = _support.each_component(step, [0, 1, 2], 2)
    assert list(got) == [0, 1, 2]
    assert [cap for (cap, _), _ in got.values()] == [1, 1, 1]
    assert len({ident for (_, ident), _ in got.values()}) == 3
    assert _kernels.kernel_threads(2) == 2  # the calling thread is not capped


def test_at_most_at_once_per_core_threads_and_one_per_core_when_off(monkeypatch):
    """Six components on two cores: at most 4 at once (``AT_ONCE_PER_CORE``);
    with ``SHARE_CORES`` off at most 2 (main's)."""
    for share, most in ((True, 4), (False, 2)):
        monkeypatch.setattr(_support, "SHARE_CORES", share)
        lock, now, peak = threading.Lock(), [0], [0]

        def step(k, lock=lock, now=now, peak=peak):
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            threading.Event().wait(0.05)
            with lock:
                now[0] -= 1
            return k

        got = _support.each_component(step, range(6), 2)
        assert [v for v, _ in got.values()] == list(range(6))
        assert peak[0] == most, share


def test_returned_pairs_side_by_side(monkeypatch):
    """``_returned_pairs`` runs each pair's gap in a step of its own, on the
    fit's threads (two pairs meet at a barrier), and one after the other in
    the calling thread with ``PARALLEL_PAIRS`` off."""
    monkeypatch.setattr(_joint_certify, "PARALLEL_PAIRS", True)
    met, seen = threading.Barrier(2, timeout=20), []

    def pair(snap, V, info, kw, tol, k):
        met.wait()
        seen.append((k, threading.get_ident()))

    monkeypatch.setattr(_joint_certify, "_returned_pair", pair)
    _joint_certify._returned_pairs(None, [0, 1], None, None, {"n_threads": 2}, 1e-3)
    assert sorted(k for k, _ in seen) == [0, 1]
    assert threading.get_ident() not in {t for _, t in seen}
    monkeypatch.setattr(_joint_certify, "PARALLEL_PAIRS", False)
    seen.clear()
    monkeypatch.setattr(
        _joint_certify, "_returned_pair", lambda *a: seen.append((a[-1], threading.get_ident()))
    )
    _joint_certify._returned_pairs(None, [1, 0], None, None, {"n_threads": 2}, 1e-3)
    assert seen == [(1, threading.get_ident()), (0, threading.get_ident())]


def _instance(seed, n=60, side=14):
    """``tests/test_datapath``'s blobs on a ``side``-cube, and its TV operator."""
    from .test_datapath import _instance as blobs

    return blobs(n, side, seed), tv_from_mask(np.ones((side,) * 3, bool))


@pytest.mark.parametrize("method", ["joint", "deflation"])
@pytest.mark.parametrize("seed", [3778, 3779])
def test_fits_with_every_component_at_once_are_main_s_bit_for_bit(monkeypatch, method, seed):
    """The finishings all at once and the returned pairs side by side: the
    same fit as main's schedule (one thread per core, the pairs in turn)."""
    X, op = _instance(seed)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = SPCATV(3, operator=op, alpha_rel=1.0, method=method, tol=1e-3, n_threads=2)
            return m.fit(X)

    def pairs_too(mp):
        mp.setattr(_joint_certify, "PARALLEL_PAIRS", True)

    monkeypatch.setattr(_joint_certify, "PARALLEL_PAIRS", False)
    a, b, _ = switched_fits(monkeypatch, _support, "SHARE_CORES", fit, pairs_too)
    assert np.any(a.components_)
    assert_same_fit(a, b)  # components, gaps, iterations, certified non-zeros
    np.testing.assert_array_equal(a.certified_zeros_, b.certified_zeros_)
    np.testing.assert_array_equal(a.support_radius_, b.support_radius_)  # NaN where NaN
