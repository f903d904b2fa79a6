"""The Python turn of the joint fit's starts side by side (issue 22 round 19).

The starts of :func:`neurospca.decomposition._lockstep.run_side_by_side` run
their Python one thread at a time (the ``warnings`` state of a
``catch_warnings`` block is global): the thread that runs holds the TURN.
Around a compiled kernel that releases the GIL and touches no Python state
(the v-step's dual iterations) the holder lends the turn (:func:`lent`), so
another start's Python runs meanwhile on the other core; the holder takes
the turn back after the kernel, its ``warnings`` state restored. Outside the
starts (no thread holds the turn) :func:`lent` does nothing.
"""

import threading
import warnings
from contextlib import contextmanager

_COND = threading.Condition()
_TURN = {"holder": None, "in_kernel": 0}
_LOCAL = threading.local()


def _warnings_state():
    return warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl


def _set_warnings_state(state):
    warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl = state
    warnings._filters_mutated()


def holding():
    """Whether the calling thread holds the turn."""
    return _TURN["holder"] == threading.get_ident()


def take(state=None):
    """Wait for the turn and take it; then the ``warnings`` state this thread
    had when it gave the turn (or ``state``) is put back. Nothing when the
    calling thread holds it already."""
    if holding():
        return
    with _COND:
        while _TURN["holder"] is not None:
            _COND.wait()
        _TURN["holder"] = threading.get_ident()
    state = state if state is not None else getattr(_LOCAL, "saved", None)
    if state is not None:
        _set_warnings_state(state)


def give():
    """Give the turn back; its ``warnings`` state is kept for :func:`take`.
    Nothing unless the calling thread holds it (e.g. a signal's exception
    raised while it waited)."""
    if not holding():
        return
    _LOCAL.saved = _warnings_state()
    with _COND:
        _TURN["holder"] = None
        _COND.notify_all()


def others_in_kernel():
    """How many other threads are in a kernel with the turn lent."""
    return _TURN["in_kernel"] - int(getattr(_LOCAL, "in_kernel", False))


@contextmanager
def lent():
    """Around a GIL-free kernel: lend the turn when the calling thread holds it."""
    if not holding():
        yield
        return
    give()
    with _COND:
        _TURN["in_kernel"] += 1
    _LOCAL.in_kernel = True
    try:
        yield
    finally:
        _LOCAL.in_kernel = False
        with _COND:
            _TURN["in_kernel"] -= 1
        take()


def lend(fn):
    """``fn``, lending the turn while it runs (:func:`lent`)."""

    def call(*args):
        with lent():
            return fn(*args)

    return call
