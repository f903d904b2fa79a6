"""Issue 22 round 14: the lockstep's last start runs in the calling thread.

:data:`~neurospca.decomposition._lockstep.MAIN_THREAD_START`: the last job of
:func:`~neurospca.decomposition._lockstep.run_side_by_side` runs in the thread
that called it (the others in threads of their own, taking turns with it), so
that in memory one start fewer allocates from a thread arena of its own. The
numbers and the passes must be those of the threads-only lockstep: each job's
products bit for bit its own alone, in the longest job's passes, nested or not;
an error of any job stops the others and is raised to the caller.
"""

import threading
import warnings

import numpy as np
import pytest

import neurospca.decomposition._lockstep as lockstep

from .test_datapath import _fit, _instance, _Reads
from .test_joint_lockstep import _chain, _op


@pytest.fixture
def everywhere(monkeypatch):
    monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", True)


def _jobs(op, where):
    """Three jobs; the last runs two chains side by side, then one of its own
    (a nested lockstep inside the calling thread's job). Each records its thread."""

    def chain(seed, steps):
        where.setdefault(seed, threading.get_ident())
        return _chain(op, seed, steps)

    def nested():
        where.setdefault("nested", threading.get_ident())
        inner = lockstep.run_side_by_side(op, [lambda: chain(5, 4), lambda: chain(6, 6)])
        return inner + [chain(7, 2)]

    return [lambda: chain(1, 7), lambda: chain(2, 3), nested]


@pytest.mark.parametrize("main", [True, False])
@pytest.mark.usefixtures("everywhere")
def test_last_start_in_the_calling_thread_same_numbers_and_passes(monkeypatch, main):
    """With and without the calling thread's start: every product bit for bit
    the jobs' own one after the other, passes those of the longest job (the
    nested chains counted as their longest); with it, the last job (and the
    last of its nested jobs) ran in the calling thread, the others did not."""
    monkeypatch.setattr(lockstep, "MAIN_THREAD_START", main)
    X = np.random.default_rng(3490).standard_normal((150, 41)) + 0.2
    offsets = [0, 40, 90, 150]
    op = _op(X, 1, offsets)
    alone, own = [], {}
    for job in _jobs(op, {}):
        n0 = op.n_passes
        alone.append(job())
        own[len(own)] = op.n_passes - n0
    one = {}
    for seed, steps in ((5, 4), (6, 6), (7, 2)):
        n0 = op.n_passes
        _chain(op, seed, steps)
        one[seed] = op.n_passes - n0
    op = _op(X, 1, offsets)
    where, n0 = {}, op.n_passes
    got = lockstep.run_side_by_side(op, _jobs(op, where))
    longest = max(own[0], own[1], max(one[5], one[6]) + one[7])
    assert op.n_passes - n0 == longest < sum(own.values())
    assert "_map" not in vars(op)
    flat = lambda res: [res[0], res[1], *res[2][0], *res[2][1:]]  # noqa: E731
    for a, b in zip(flat(alone), flat(got), strict=True):
        assert len(a) == len(b) > 0
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)
    me = threading.get_ident()
    assert (where["nested"] == me) is main and (where[6] == me) is main
    assert where[1] != me and where[2] != me and where[5] != me


@pytest.mark.parametrize("failing", [0, 2])
@pytest.mark.usefixtures("everywhere")
def test_an_error_of_a_thread_or_of_the_calling_threads_start_is_raised(failing):
    """A job that fails after one pass (a thread's, or the calling thread's
    last job): its error reaches the caller, the other jobs stop at their next
    pass, and the operator has its own passes again."""
    op = _op(np.random.default_rng(3491).standard_normal((40, 9)))
    reached = []

    def job(i):
        op.matvec(np.ones(9))
        if i == failing:
            raise RuntimeError(f"job {i} failed")
        for _ in range(5):
            op.matvec(np.ones(9))
            reached.append(i)
        return i

    with pytest.raises(RuntimeError, match=f"job {failing} failed"):
        lockstep.run_side_by_side(op, [lambda i=i: job(i) for i in range(3)])
    assert len(reached) <= 2  # each other job at most one pass past the failure
    assert "_map" not in vars(op)
    assert np.allclose(op.matvec(np.ones(9)), op.matvec(np.ones(9)))


@pytest.mark.usefixtures("everywhere")
def test_a_thread_start_warns_to_the_caller_not_into_the_calling_threads_start(monkeypatch):
    """The threads' starts begin while the calling thread's start is inside a
    ``catch_warnings`` block of its own (its first pass runs their first
    turns): their warnings still go to the caller, the calling thread's
    start's only to its own block (the starts taking turns; free starts:
    tests/test_par22t.py)."""
    monkeypatch.setattr(lockstep, "FREE_STARTS", False)
    op = _op(np.random.default_rng(3492).standard_normal((30, 7)))

    def thread_job():
        warnings.warn("from the thread's start", UserWarning, stacklevel=1)
        op.matvec(np.ones(7))
        warnings.warn("again from the thread's start", UserWarning, stacklevel=1)

    def own_job():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            op.matvec(np.ones(7))  # the thread's start runs from here
            warnings.warn("from the calling thread's start", UserWarning, stacklevel=1)
            op.matvec(np.ones(7))
        return [str(w.message) for w in caught]

    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        _, own = lockstep.run_side_by_side(op, [thread_job, own_job])
    assert own == ["from the calling thread's start"]
    assert sorted(str(w.message) for w in outer) == [
        "again from the thread's start",
        "from the thread's start",
    ]


def test_in_memory_the_joint_fit_reads_x_as_often_as_from_a_memmap(monkeypatch):
    """The memmap test's instance in memory (float32, 3,000 x 12^3): by default
    the starts share their passes there too, 16 passes (12 from the memmap,
    ``tests/test_datapath.py``, whose deflation start and restart checks look
    ahead, issue 22 round 16; not in memory; 26 one after the other; 20 and 34
    before each sweep read X once, round 15), with the same components bit for
    bit."""
    X = _instance(n=3000).astype(np.float32)
    counted = _Reads(monkeypatch)
    models, passes = {}, {}
    for on in ("memmap", True):
        monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", on)
        counted.bytes = 0
        models[on] = _fit(X, alpha_rel=1.0)
        passes[on] = counted.bytes / X.nbytes
    assert passes[True] <= 16 <= passes["memmap"] - 10, passes
    for name in ("components_", "scores_", "dual_gaps_", "certified_support_"):
        assert np.array_equal(getattr(models[True], name), getattr(models["memmap"], name))
