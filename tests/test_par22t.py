"""Issue 22 round 20 (par22t): the joint fit's starts run at once, warnings per thread.

A start's ``catch_warnings`` blocks changed the process's ``warnings`` state
(Python 3.11), so the starts ran their Python one at a time (a turn). Their
blocks are now frames of their own thread (``_utils.routed_warnings``), one
hook routes each warning to the thread that raised it, and the starts run at
once (``_lockstep.FREE_STARTS``): the same fits bit for bit, the same passes,
and only the returned start's warnings reach the user. Seeds 3768-3773.
"""

import threading
import warnings

import numpy as np
import pytest

from neurospca import SPCATV, tv_from_mask
from neurospca._utils import routed_warnings as rw
from neurospca._utils import turns
from neurospca.decomposition import _joint, _lockstep


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001  checked by the test
            out["error"] = exc

    th = threading.Thread(target=run)
    th.start()
    return th, out


def test_routed_threads_record_only_their_own_warnings_at_the_same_time():
    """Two routed threads inside their blocks at once (a barrier) each record
    only their own warnings; "ignore" and "filter" frames drop theirs; a
    thread that is not routed meets the caller's state; the state is back
    after. With ``catch_warnings`` in both threads one list gets both."""
    met = threading.Barrier(3, timeout=20)

    def start(name, kind):
        with rw.as_start(None) as top:
            with rw.recorded() as mine:
                with rw.recorded(kind, message="drop", category=UserWarning):
                    met.wait()
                    warnings.warn(f"{name} kept", UserWarning, stacklevel=1)
                    warnings.warn("drop me", UserWarning, stacklevel=1)
                    met.wait()
            warnings.warn(f"{name} after", RuntimeWarning, stacklevel=1)
        return [str(w.message) for w in mine], [str(w.message) for w in top]

    filters, show = warnings.filters, warnings.showwarning
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        with rw.route():
            a, got_a = _in_thread(lambda: start("a", "filter"))
            b, got_b = _in_thread(lambda: start("b", "ignore"))
            met.wait()
            warnings.warn("caller", UserWarning, stacklevel=1)  # not routed
            met.wait()
            a.join(20), b.join(20)
    assert got_a["value"] == (["a kept"], ["a after"])
    assert got_b["value"] == ([], ["b after"])  # "ignore": nothing recorded in the block
    assert [str(w.message) for w in outer] == ["caller"]
    assert warnings.filters is filters and warnings.showwarning is show


def test_a_start_frame_keeps_what_would_be_shown_and_raises_what_is_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("error", message="bad")
        warnings.filterwarnings("always", message="shown")
        with rw.route():
            with rw.as_start(None) as log:
                warnings.warn("shown", UserWarning, stacklevel=1)
                warnings.warn("hidden", UserWarning, stacklevel=1)
                with pytest.raises(UserWarning, match="bad"):
                    warnings.warn("bad", UserWarning, stacklevel=1)
                with rw.recorded() as inner:  # "always" inside: recorded, not raised
                    warnings.warn("bad", UserWarning, stacklevel=1)
    assert [str(w.message) for w in log] == ["shown"]
    assert [str(w.message) for w in inner] == ["bad"]
    assert rw.frames() is None


def _op(seed):
    from neurospca.decomposition._data import as_data_operator

    X = np.random.default_rng(seed).standard_normal((30, 11))
    op = as_data_operator(X, n_threads=1)
    op.centre(op.stats["mean"])
    return op


def test_free_starts_run_their_python_at_once_share_passes_and_emit_warnings_in_order(monkeypatch):
    """Two starts meet at a barrier in plain Python between their passes (with
    the turn of round 19 one would wait for the other for ever); their passes
    are shared and their numbers those of each alone; each start's warnings
    come out after both, in the jobs' order; the kernels run on one thread
    while the other start runs."""
    monkeypatch.setattr(_lockstep, "FREE_STARTS", True)
    op = _op(3768)
    met = threading.Barrier(2, timeout=20)
    caps = []

    def start(name):
        from neurospca import _kernels

        out = []
        for i in range(3):
            out.append(op.matvec(np.full(11, i + 1.0)))
            met.wait()
            caps.append(_kernels.kernel_threads(2))
            warnings.warn(f"{name} {i}", UserWarning, stacklevel=1)
            with rw.recorded("ignore"):
                warnings.warn(f"{name} dropped", UserWarning, stacklevel=1)
        return out

    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        got = _lockstep.run_side_by_side(op, [lambda: start("a"), lambda: start("b")])
    alone = [op.matvec(np.full(11, i + 1.0)) for i in range(3)]
    for res in got:
        assert all(np.array_equal(x, y) for x, y in zip(res, alone, strict=True))
    assert [str(w.message) for w in outer] == ["a 0", "a 1", "a 2", "b 0", "b 1", "b 2"]
    assert 1 in caps and rw.frames() is None and turns.current() is None


def test_the_free_turn_counts_the_starts_that_run():
    turn = turns.Turn(free=True)
    turns.join(turn)
    try:
        turns.take()
        turns.take()  # once
        assert turn.running == 1 and turns.others_running() == 0 and not turns.holding()
        with turns.lent():  # nothing to lend
            assert turn.in_kernel == 0
        th, _ = _in_thread(lambda: (turns.join(turn), turns.take(), turns.others_running()))
        th.join(20)
        assert turn.running == 2 and turns.others_running() == 1
        turns.give()
        turns.give()
        assert turn.running == 1 and turns.others_running() == 1
    finally:
        turns.join(None)


def _instance(seed, n=60, side=16):
    from .test_datapath import _instance as blobs

    return blobs(n, side, seed), tv_from_mask(np.ones((side,) * 3, bool))


@pytest.mark.parametrize("seed", [3769, 3770])
def test_joint_fits_with_free_starts_are_the_same_bit_for_bit(monkeypatch, seed):
    """Free starts and the turn of round 19: the same model bit for bit, the
    same passes over ``X`` and the same warnings."""
    from ._helpers import assert_same_fits, count_passes

    X, op = _instance(seed)
    counted = count_passes(monkeypatch)
    got, passes, said = {}, {}, {}
    for free in (False, True):
        monkeypatch.setattr(_lockstep, "FREE_STARTS", free)
        counted.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got[free] = SPCATV(3, operator=op, alpha_rel=1.0, tol=1e-3, n_threads=2).fit(X)
        passes[free], said[free] = len(counted), sorted(str(w.message) for w in caught)
    a, b = got[False], got[True]
    assert_same_fits(a, b, ("components_", "scores_", "dual_gaps_", "support_radius_"))
    assert a.n_sweeps_ == b.n_sweeps_ and passes[True] == passes[False]
    assert said[True] == said[False]


@pytest.mark.parametrize("free", [False, True])
def test_only_the_returned_starts_warnings_reach_the_user(monkeypatch, free):
    """Each start of the joint search warns once (deflation's fit, the
    subspace start); only one of them reaches the user: the returned start's.
    Without the per-start recording both do (``RETURNED_WARNINGS_ONLY`` off)."""
    monkeypatch.setattr(_lockstep, "FREE_STARTS", free)
    deflation, scores = _joint._deflation_start, _joint._pca_scores

    def deflation_start(*args, **kwargs):
        warnings.warn("from deflation's start", UserWarning, stacklevel=1)
        return deflation(*args, **kwargs)

    def pca_scores(*args, **kwargs):
        warnings.warn("from the subspace start", UserWarning, stacklevel=1)
        return scores(*args, **kwargs)

    monkeypatch.setattr(_joint, "_deflation_start", deflation_start)
    monkeypatch.setattr(_joint, "_pca_scores", pca_scores)
    X, op = _instance(3771, side=12)
    said = {}
    for only in (True, False):
        monkeypatch.setattr(_joint, "RETURNED_WARNINGS_ONLY", only)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            SPCATV(3, operator=op, alpha_rel=1.0, tol=1e-3, n_threads=2).fit(X)
        said[only] = [str(w.message) for w in caught if "start" in str(w.message)]
    assert sorted(said[False]) == ["from deflation's start", "from the subspace start"]
    assert len(said[True]) == 1


def test_a_free_thread_start_warns_to_the_caller_not_into_the_calling_threads_block(monkeypatch):
    """As tests/test_joint22n_lockstep.py with the starts free: the calling
    thread's start records in its own block while the thread's start runs;
    the thread's warnings go to the caller, the calling thread's only to its
    block."""
    monkeypatch.setattr(_lockstep, "FREE_STARTS", True)
    op = _op(3772)

    def thread_job():
        warnings.warn("from the thread's start", UserWarning, stacklevel=1)
        op.matvec(np.ones(11))
        warnings.warn("again from the thread's start", UserWarning, stacklevel=1)

    def own_job():
        with rw.recorded() as caught:
            op.matvec(np.ones(11))
            warnings.warn("from the calling thread's start", UserWarning, stacklevel=1)
            op.matvec(np.ones(11))
        return [str(w.message) for w in caught]

    filters = warnings.filters
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        _, own = _lockstep.run_side_by_side(op, [thread_job, own_job])
    assert own == ["from the calling thread's start"]
    assert [str(w.message) for w in outer] == [
        "from the thread's start",
        "again from the thread's start",
    ]
    assert warnings.filters is filters
