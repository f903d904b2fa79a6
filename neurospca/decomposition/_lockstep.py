"""Several fits on the same data side by side, sharing each pass over it (issue 22).

The joint fit settles several starts (:mod:`~neurospca.decomposition._joint`):
deflation's, the data's top singular subspace's, and a given start's. They do
not depend on each other, and each one's passes over ``X`` come one after the
other (every product needs the vectors of the last). :func:`run_side_by_side`
runs them in lockstep: the last start in the calling thread, each other start
in a thread of its own, ONE thread running at a time; when every live start
waits for a pass, the products they asked for
are computed in one read of every row block (:func:`_blk_many`: each request's
own block function with its own accumulator, added up in the same order), and
each start continues with its own. Each start's numbers are those of running
it alone, bit for bit; the passes over ``X`` are those of the longest start
instead of the sum.

The starts' threads take turns, so a start's ``warnings`` state (the filters
and handlers of its ``catch_warnings`` blocks) is saved when it stops for a
pass and put back when it resumes, as if it ran alone. With
:data:`FREE_STARTS` (issue 22 round 20, off by default) the starts run at once
between passes: their warnings are recorded per thread
(:mod:`neurospca._utils.routed_warnings`; code that runs in a start records
or filters its warnings with ``routed_warnings.recorded``, never with
``catch_warnings``), each start's are emitted in the calling thread after
the last start ended, in the jobs' order.
"""

import threading
import warnings
from functools import partial

import numpy as np

from .. import _kernels
from .._utils import routed_warnings, turns
from ._blocks import _add

#: Where the starts of a joint fit share their passes (:func:`run_side_by_side`):
#: True, everywhere (the default since issue 22 round 14); ``"memmap"``, only
#: when a pass reads the data from a file (a memmap or a dask array; on dask the
#: requests' rows come back side by side); False, nowhere (one start after the
#: other: the same numbers, more passes). In memory the start threads'
#: allocations once cost more than the shared passes saved (N = 100, P =
#: 636,056 float64: +1 to +19 % wall, issue 22 round 10); with one start in the
#: calling thread (:data:`MAIN_THREAD_START`) the CPU is -2 to +5 % of one after
#: the other at that size (four pairs on a loaded machine), in 24 passes instead
#: of 43, and 54 instead of 104 at P = 1,906,624, -2 % (round 14).
SIDE_BY_SIDE = True

#: The last start runs in the calling thread (the others in threads of their
#: own, taking turns with it): the same numbers and passes; in memory a
#: thread's P-long temporaries come from a glibc arena of its own, which hands
#: freed memory back to the system, so the next allocation faults it in again
#: (issue 22 rounds 10 and 14); one start fewer in a thread of its own (N =
#: 100, P = 636,056: 109 k minor page faults against 132 k, 79 k one after the
#: other).
MAIN_THREAD_START = True


class _Stopped(Exception):
    """Raised in a start's thread to stop it when another start failed."""


class _Many:
    """The accumulators of several products of one pass, merged product by
    product as each one's own pass merges them."""

    def __init__(self, makes):
        self.parts = [None if make is None else make() for make in makes]

    def __iadd__(self, other):
        self.parts = [_add(a, b) for a, b in zip(self.parts, other.parts, strict=True)]
        return self


def _blk_many(B, sl, acc, rows, cols, items):
    """Each request's block function on the same row block (one read):
    ``items`` holds ``(fn, args, rows out or None)``, ``acc.parts`` their sums."""
    for (fn, args, out), part in zip(items, acc.parts, strict=True):
        fn(B, sl, part, None if out is None else out[sl], cols, *args)


def _blk_many_rows(B, sl, acc, rows, cols, items):
    """:func:`_blk_many` with the requests' rows side by side in ``rows`` (the
    rows part of a dask task): ``items`` holds ``(fn, args, lo, tail)``, the
    request's rows in columns ``lo:`` (one for a vector, ``tail == ()``)."""
    for (fn, args, lo, tail), part in zip(items, acc.parts, strict=True):
        out = None if tail is None else rows[:, lo] if tail == () else rows[:, lo : lo + tail[0]]
        fn(B, sl, part, out, cols, *args)


def _warnings_state():
    return warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl


def _set_warnings_state(state):
    warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl = state
    warnings._filters_mutated()


class _Start:
    """One start's thread: its job, its turn, its pending request and its end."""

    def __init__(self, job):
        self.job, self.turn = job, threading.Semaphore(0)
        self.request = self.reply = self.result = self.error = None
        self.done = False


class _Lockstep:
    """The turns of the starts and their shared passes over ``op``'s data."""

    def __init__(self, op):
        self.op, self.back, self.local = op, threading.Semaphore(0), threading.local()
        self.stopped = False
        self.main, self.live, self.caller = None, [], None
        # inside another lockstep's start: the passes go to that one (shared there too)
        self.outer = op.__dict__.get("_map")

    def _base(self, *request):
        """One pass for ``request``: the enclosing lockstep's, else the operator's own."""
        if self.outer is not None:
            return self.outer(*request)
        return type(self.op)._map(self.op, *request)

    def _map(self, fn, args, make_acc=None, rows_tail=None):
        """``op._map`` while the starts run: a start's pass waits for the others'
        (the calling thread's start runs the others' turns, then the pass)."""
        start = getattr(self.local, "start", None)
        if start is None:
            return self._base(fn, args, make_acc, rows_tail)
        start.request = (fn, args, make_acc, rows_tail)
        if start is self.main:
            self._round()
            return start.reply
        state = _warnings_state()
        self.back.release()
        start.turn.acquire()
        _set_warnings_state(state)
        if self.stopped:
            raise _Stopped
        return start.reply

    def _thread(self, start):
        self.local.start = start
        start.turn.acquire()
        _set_warnings_state(self.caller)  # not the state of the start whose pass let it run
        try:
            self._run_job(start)
        finally:
            start.done = True
            self.back.release()

    def _run_job(self, start):
        """``start``'s job unless the starts were stopped; its error kept for
        the calling thread."""
        try:
            if not self.stopped:
                start.result = start.job()
        except BaseException as exc:  # noqa: BLE001  re-raised by the main thread
            start.error = exc

    def _turn(self, start):
        """Let ``start`` run until it asks for a pass or ends."""
        state = _warnings_state()
        start.turn.release()
        self.back.acquire()
        _set_warnings_state(state)

    def _pass(self, starts):
        """The requests of ``starts`` in one pass over the data."""
        replies = shared_pass(self.op, self._base, [s.request for s in starts])
        for start, reply in zip(starts, replies, strict=True):
            start.reply = reply

    def _round(self):
        """The other live starts' turns, then one pass for every live request."""
        for start in self.live:
            self._turn(start)
        self._pass_live()

    def _pass_live(self):
        """The ended starts dropped (the first error of one raised), then one
        pass for every live request."""
        self.live = [s for s in self.live if not s.done]
        failed = next((s.error for s in self.starts if s.error is not None), None)
        if failed is not None:
            raise failed
        waiting = self.live if self.main.done else [self.main] + self.live
        if waiting:
            self._pass(waiting)

    def run(self, jobs):
        """``[job() for job in jobs]`` in lockstep, the last job in the calling
        thread (:data:`MAIN_THREAD_START`) and the others in threads of their
        own; the first error of a job (or of a shared pass) stops the others
        and is raised here."""
        self.starts = starts = [_Start(job) for job in jobs]
        self.caller = _warnings_state()  # each start begins with the caller's
        self.main = starts[-1] if MAIN_THREAD_START else _Start(None)
        self.main.done = not MAIN_THREAD_START
        self.live = [s for s in starts if s is not self.main]
        threads = [threading.Thread(target=self._thread, args=(s,), daemon=True) for s in self.live]
        for th in threads:
            th.start()
        self.op._map = self._map  # every pass of the starts' threads comes here
        try:
            self._drive()
        finally:
            self._unpatch()
            self.stopped = True
            for start in self.live:
                if not start.done:
                    self._turn(start)
            for th in threads:
                th.join()
        return [s.result for s in starts]

    def _drive(self):
        """The calling thread's start (:data:`MAIN_THREAD_START`), then the
        rounds of the others until they end."""
        if MAIN_THREAD_START:
            self.local.start = self.main
            try:
                self.main.result = self.main.job()
            finally:
                self.main.done, self.local.start = True, None
        while self.live:
            self._round()

    def _unpatch(self):
        """The operator's passes back to the enclosing lockstep's, or its own."""
        if self.outer is None:
            del self.op._map
        else:
            self.op._map = self.outer


class _Lent(_Lockstep):
    """:class:`_Lockstep` whose starts lend their Python turn around the v-step's
    kernels (:data:`LEND_KERNELS`, :mod:`neurospca._utils.turns`): a start's
    Python still runs while no other start's does, but its kernels run while
    another start's Python (or kernels) run. A start that asks for a pass gives
    the turn and waits until every live start asked (or ended); the calling
    thread then makes the shared pass and the starts go on. The numbers are
    each start's alone: only the order in which their independent steps run
    changes. While another start is in a kernel, a start's kernels run on one
    thread (their chunks, and so their numbers, do not change)."""

    def _map(self, fn, args, make_acc=None, rows_tail=None):
        over = getattr(_OVERRIDE, "map", None)  # this thread's in_one_pass
        if over is not None and over[0] is self.op:
            return over[1](fn, args, make_acc, rows_tail)
        start = getattr(self.local, "start", None)
        if start is None:
            return self._base(fn, args, make_acc, rows_tail)
        if self.stopped:
            raise _Stopped
        start.request = (fn, args, make_acc, rows_tail)
        if start is self.main:
            self._round()
            return start.reply
        with self.cond:
            start.waiting = True
            self.cond.notify_all()
        turns.give()
        with self.cond:
            while start.waiting and not self.stopped:
                self.cond.wait()
        turns.take()
        if self.stopped:
            raise _Stopped
        return start.reply

    def _thread(self, start):
        self.local.start = start
        _kernels.THREAD_CAP.cap = self.cap
        turns.join(self.turn)
        turns.take(self.caller)  # the caller's warnings state, not the last holder's
        try:
            self._run_job(start)
        finally:
            turns.give()
            with self.cond:
                start.done = True
                self.cond.notify_all()

    def _round(self):
        """Wait until every live start asked for a pass (or ended), then one pass
        for every live request; the starts then go on."""
        turns.give()
        with self.cond:
            while not all(s.waiting or s.done for s in self.live):
                self.cond.wait()
        turns.take()
        self._pass_live()
        with self.cond:
            for s in self.live:
                s.waiting = False
            self.cond.notify_all()

    def run(self, jobs):
        """As :meth:`_Lockstep.run`, the starts running at once between passes,
        their Python one at a time (:data:`FREE_STARTS`: at once too, each
        start's warnings recorded in its own thread and emitted here after
        the last one ended, in the jobs' order)."""
        self.free = FREE_STARTS
        if not self.free:
            return self._run(jobs)
        parent = routed_warnings.frames()  # the calling thread's frames, if routed
        with routed_warnings.route():
            results = self._run([partial(_recorded, job, parent) for job in jobs])
        for _, log in results:
            routed_warnings.emit(log)
        return [result for result, _ in results]

    def _run(self, jobs):
        """:meth:`run`'s starts."""
        self.cond = threading.Condition()
        self.starts = starts = [_Start(job) for job in jobs]
        for s in starts:
            s.waiting = False
        self.caller = _warnings_state()
        self.main = starts[-1]
        self.live = starts[:-1]
        own = turns.current() is None  # the outermost lockstep: a turn of its own
        if own:
            turns.join(turns.Turn(free=self.free))
            turns.take(self.caller)
        self.turn = turns.current()
        cap = getattr(_kernels.THREAD_CAP, "cap", None)
        self.cap = _one_if_others_running if self.turn.free else _one_if_others_in_kernel
        _kernels.THREAD_CAP.cap = self.cap
        threads = [threading.Thread(target=self._thread, args=(s,), daemon=True) for s in self.live]
        self.op._map = self._map
        for th in threads:
            th.start()
        try:
            self._drive()
        finally:
            self._unpatch()
            with self.cond:
                self.stopped = True
                self.cond.notify_all()
            turns.give()
            for th in threads:
                th.join()
            _kernels.THREAD_CAP.cap = cap
            turns.take()  # this thread's warnings state back
            if own:
                turns.give()
                turns.join(None)
        return [s.result for s in starts]


def _one_if_others_in_kernel():
    """A start's kernel threads: one while another start runs a kernel."""
    return 1 if turns.others_in_kernel() else 1 << 30


def _one_if_others_running():
    """A free start's kernel threads: one while another start runs (its
    Python, NumPy or kernels), all when the others wait for a pass or ended."""
    return 1 if turns.others_running() else 1 << 30


def _recorded(job, parent):
    """``(job(), its warnings)``: the calling thread routed
    (:func:`~neurospca._utils.routed_warnings.as_start`; ``parent``: the frames
    of the thread that started the lockstep)."""
    with routed_warnings.as_start(parent) as log:
        result = job()
    return result, log


#: The starts side by side run their Python at once too (issue 22 round 20):
#: their warnings are recorded per thread (:mod:`~neurospca._utils.routed_warnings`)
#: instead of in ``catch_warnings`` blocks, so no turn is needed; the GIL still
#: runs one thread's Python at a time, but their NumPy, BLAS and kernels run
#: at once. Each start's kernels run on one thread while another start runs.
#: False (the default): the turn of round 19 (:data:`LEND_KERNELS`). The same
#: numbers and passes either way. Measured alternating in one process at load
#: 3.6-4.6 on the 2-core machine (N = 100, benchmarks/RESULTS.md, round 20): the
#: starts' phase 8.2-10.1 s free against 7.8-11.5 s with the turn at P = 636,056
#: (3 pairs of 4 faster), 82-109 s against 77-88 s at P = 1,906,624 (slower in
#: both pairs, the fit +4 and +14 % CPU): with no free core the two starts' Python and
#: NumPy contend for the GIL, the core and the memory bus.
FREE_STARTS = False

#: Per thread, ``(op, fn)``: the passes over ``op`` that this thread's
#: :func:`in_one_pass` records or serves (inside free starts, where patching
#: ``op._map`` would reach the other starts' threads).
_OVERRIDE = threading.local()


#: The starts side by side lend their Python turn around the v-step's kernels
#: (:class:`_Lent`): their kernels run at once on the cores (issue 22 round 19);
#: False: one start at a time (:class:`_Lockstep`). The same numbers either way.
LEND_KERNELS = True


def shared_pass(op, base, requests):
    """``[base(*request) for request in requests]`` in ONE pass over ``op``'s
    data (``base``: the operator's ``_map``, or an enclosing lockstep's): each
    request's block function with its own accumulator on every row block, the
    same arithmetic as its own pass. Returns each one's ``(rows, acc)``."""
    if len(requests) == 1:
        return [base(*requests[0])]
    n = op.shape[0]
    makes = [make for _, _, make, _ in requests]
    if op.kind == "dask":  # the rows come back from the tasks, side by side
        outs, acc = _dask_pass(base, requests, makes)
    else:
        outs = [None if tail is None else np.empty((n,) + tail) for *_, tail in requests]
        items = [(fn, args, out) for (fn, args, _, _), out in zip(requests, outs, strict=True)]
        _, acc = base(_blk_many, (items,), lambda: _Many(makes), None)
    return list(zip(outs, acc.parts, strict=True))


def _dask_pass(base, requests, makes):
    """The requests in one pass over a dask array: ``(rows of each, acc)``."""
    items, lo = [], 0
    for fn, args, _, tail in requests:
        items.append((fn, args, lo, tail))
        lo += 0 if tail is None else 1 if tail == () else tail[0]
    Z, acc = base(_blk_many_rows, (items,), lambda: _Many(makes), (lo,))
    outs = []
    for _, _, c, tail in items:
        out = None if tail is None else Z[:, c] if tail == () else Z[:, c : c + tail[0]]
        outs.append(None if out is None else np.ascontiguousarray(out))
    return outs, acc


def in_one_pass(op, calls):
    """``[call() for call in calls]`` where each call makes ONE pass over
    ``op``'s data (e.g. ``partial(op.fused, v)``), in one shared pass and no
    thread: each call runs once to record its pass's request (on placeholder
    results), then once more on its own part of the shared pass (each result
    bit for bit the call's alone). Inside a start of :func:`run_side_by_side`
    the shared pass is that lockstep's."""
    outer = op.__dict__.get("_map")
    base = outer if outer is not None else partial(type(op)._map, op)
    lock = getattr(outer, "__self__", None)
    if isinstance(lock, _Lent) and getattr(lock, "free", False):
        return _in_one_pass_here(op, calls, outer)
    requests = []
    record = _recorder(op, requests)

    def restore():
        if outer is None:
            op.__dict__.pop("_map", None)
        else:
            op._map = outer

    try:
        op._map = record
        for call in calls:
            call()
        restore()  # the shared pass may let other starts run: they see theirs
        if len(requests) != len(calls):
            raise RuntimeError("in_one_pass: each call must make exactly one pass")
        replies = iter(shared_pass(op, base, requests))
        op._map = lambda *request, **kw: next(replies)
        return [call() for call in calls]
    finally:
        restore()


def _recorder(op, requests):
    """A stand-in for ``op._map`` that keeps each pass's request in ``requests``
    and returns placeholder results."""

    def record(fn, args, make_acc=None, rows_tail=None):
        requests.append((fn, args, make_acc, rows_tail))
        rows = None if rows_tail is None else np.zeros((op.shape[0],) + rows_tail)
        return rows, None if make_acc is None else make_acc()

    return record


def _in_one_pass_here(op, calls, base):
    """:func:`in_one_pass` inside free starts: the calls' passes recorded and
    served in this thread only (:data:`_OVERRIDE`), ``op._map`` left alone."""
    requests, before = [], getattr(_OVERRIDE, "map", None)
    record = _recorder(op, requests)
    try:
        _OVERRIDE.map = (op, record)
        for call in calls:
            call()
        _OVERRIDE.map = before
        if len(requests) != len(calls):
            raise RuntimeError("in_one_pass: each call must make exactly one pass")
        replies = iter(shared_pass(op, base, requests))
        _OVERRIDE.map = (op, lambda *request, **kw: next(replies))
        return [call() for call in calls]
    finally:
        _OVERRIDE.map = before


def run_side_by_side(op, jobs):
    """``[job() for job in jobs]``, the jobs' passes over ``op``'s data shared
    (:data:`SIDE_BY_SIDE`: by default in memory and out of core; more than
    one job).

    Each job must depend on no other job's state and draw no shared random
    numbers; its numbers are then those of running it alone, bit for bit.
    """
    shared = op.kind in ("memmap", "dask") if SIDE_BY_SIDE == "memmap" else bool(SIDE_BY_SIDE)
    if not shared or len(jobs) < 2:
        return [job() for job in jobs]
    lend = LEND_KERNELS and MAIN_THREAD_START
    return (_Lent if lend else _Lockstep)(op).run(jobs)
