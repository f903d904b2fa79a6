"""The Python turn of the joint fit's starts side by side (issue 22 round 19).

The starts of :func:`neurospca.decomposition._lockstep.run_side_by_side` run
their Python one thread at a time (the ``warnings`` state of a
``catch_warnings`` block is global): the thread that runs holds the TURN of
its fit (a :class:`Turn`, shared by nested locksteps; another fit in another
thread has its own). Around a compiled kernel that releases the GIL and
touches no Python state (the v-step's dual iterations) the holder lends the
turn (:func:`lent`), so another start's Python runs meanwhile on the other
core; the holder takes the turn back after the kernel, its ``warnings`` state
restored. A thread outside the starts has no turn: :func:`lent` does nothing.

A FREE turn (round 20, ``Turn(free=True)``: the starts' warnings recorded per
thread, :mod:`neurospca._utils.routed_warnings`) is held by every start at once:
:func:`take` and :func:`give` only count the starts running (not waiting for
a pass), for their kernels' threads (:func:`others_running`).
"""

import threading
import warnings
from contextlib import contextmanager

_LOCAL = threading.local()  # .turn, .saved (warnings state), .in_kernel


class Turn:
    """The turn of one fit's starts: its holder and how many are in a kernel
    (``free``: no holder; how many starts run)."""

    def __init__(self, free=False):
        self.cond = threading.Condition()
        self.holder, self.in_kernel = None, 0
        self.free, self.running = free, 0


def current():
    """The calling thread's :class:`Turn`, or None."""
    return getattr(_LOCAL, "turn", None)


def join(turn):
    """Make ``turn`` (or None: no turn) the calling thread's."""
    _LOCAL.turn = turn


def _warnings_state():
    return warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl


def _set_warnings_state(state):
    warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl = state
    warnings._filters_mutated()


def holding():
    """Whether the calling thread holds its turn."""
    turn = current()
    return turn is not None and turn.holder == threading.get_ident()


def take(state=None):
    """Wait for the calling thread's turn and take it; then the ``warnings``
    state this thread had when it gave the turn (or ``state``) is put back.
    Nothing when it holds it already."""
    turn = current()
    if turn is not None and turn.free:
        if not getattr(_LOCAL, "running", False):
            with turn.cond:
                turn.running += 1
            _LOCAL.running = True
        return
    if turn is None or holding():
        return
    with turn.cond:
        while turn.holder is not None:
            turn.cond.wait()
        turn.holder = threading.get_ident()
    state = state if state is not None else getattr(_LOCAL, "saved", None)
    if state is not None:
        _set_warnings_state(state)


def give():
    """Give the turn back; its ``warnings`` state is kept for :func:`take`.
    Nothing unless the calling thread holds it (e.g. a signal's exception
    raised while it waited)."""
    turn = current()
    if turn is not None and turn.free:
        if getattr(_LOCAL, "running", False):
            with turn.cond:
                turn.running -= 1
            _LOCAL.running = False
        return
    if not holding():
        return
    _LOCAL.saved = _warnings_state()
    with turn.cond:
        turn.holder = None
        turn.cond.notify_all()


def others_in_kernel():
    """How many other threads of the calling thread's turn are in a kernel."""
    turn = current()
    if turn is None:
        return 0
    return turn.in_kernel - int(getattr(_LOCAL, "in_kernel", False))


def others_running():
    """How many other starts of the calling thread's free turn run now."""
    turn = current()
    if turn is None or not turn.free:
        return 0
    return turn.running - int(getattr(_LOCAL, "running", False))


@contextmanager
def lent():
    """Around a GIL-free kernel: lend the turn when the calling thread holds it."""
    if not holding():
        yield
        return
    turn = current()
    give()
    with turn.cond:
        turn.in_kernel += 1
    _LOCAL.in_kernel = True
    try:
        yield
    finally:
        _LOCAL.in_kernel = False
        with turn.cond:
            turn.in_kernel -= 1
        take()


def lend(fn):
    """``fn``, lending the turn while it runs (:func:`lent`)."""

    def call(*args):
        with lent():
            return fn(*args)

    return call
