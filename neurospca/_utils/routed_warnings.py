"""Warnings recorded per thread: the joint fit's starts run at once (issue 22 round 20).

In Python 3.11 a ``warnings.catch_warnings`` block changes the process's
``warnings`` state, so two threads in such blocks at once see each other's
filters and handlers. The starts of the joint fit (run side by side in
threads, :func:`neurospca.decomposition._lockstep.run_side_by_side`) record and
filter their warnings with :func:`recorded` instead: in a ROUTED thread it
pushes a frame on the thread's own stack and touches no shared state, and one
hook (:func:`route`, installed once for the process while any routed thread
lives) hands each warning to the frames of the thread that raised it:

* ``"record"``: kept in the frame's list (``catch_warnings(record=True)`` with
  ``simplefilter("always")``);
* ``"ignore"``: dropped (``simplefilter("ignore")``);
* ``"filter"``: dropped when it matches ``message`` and ``category``
  (``filterwarnings("ignore", ...)``), else passed to the frame below;
* ``"start"``: kept when the frames below it (and, at a thread's first frame,
  the frames of the thread that started it, then the process's filters)
  would show it, raised when they say ``"error"``, dropped when they ignore
  it (``catch_warnings(record=True)``): a start's warnings, for its caller
  to emit when it wants (:func:`emit`).

A thread that is not routed gets the same blocks from ``catch_warnings`` (one
thread's fits, bit for bit as before), and while the hook is in, its
warnings meet the process's filters and handlers as they were when the hook
went in (an approximation: no ``"once"``/``"default"`` registry there).
"""

import re
import threading
import warnings
from contextlib import contextmanager

_LOCAL = threading.local()  # .frames: the routed thread's stack (a list), else None
_LOCK = threading.Lock()
_HOOK = {"depth": 0, "saved": None, "filters": None}


class Frame:
    """One :func:`recorded` block of a routed thread."""

    def __init__(self, kind, message=None, category=Warning, parent=None):
        self.kind, self.log, self.parent = kind, [], parent
        self.message = None if message is None else re.compile(message, re.I)
        self.category = category

    def matches(self, msg):
        """Whether a ``"filter"`` frame drops ``msg`` (a ``WarningMessage``)."""
        text = str(msg.message)
        return issubclass(msg.category, self.category) and (
            self.message is None or self.message.match(text) is not None
        )


def frames():
    """The calling thread's stack of frames (None: the thread is not routed)."""
    return getattr(_LOCAL, "frames", None)


def _action(chain, msg):
    """What ``chain`` (frames, bottom first) and below it do with ``msg``:
    "show", "ignore" or "error"."""
    for frame in reversed(chain or ()):
        if frame.kind == "record":
            return "show"
        if frame.kind == "ignore" or (frame.kind == "filter" and frame.matches(msg)):
            return "ignore"
        if frame.kind == "start" and frame.parent is not None:
            return _action(frame.parent, msg)
    return _process_action(msg)


def _process_action(msg):
    """``msg``'s action under the process's filters saved by :func:`route`."""
    saved = _HOOK["saved"]
    filters = saved[0] if saved is not None else warnings.filters
    text, module = str(msg.message), (msg.filename or "")[:-3]
    action = next(
        (
            action
            for action, mre, cat, modre, ln in filters
            if (mre is None or mre.match(text))
            and issubclass(msg.category, cat)
            and (modre is None or modre.match(module))
            and (ln == 0 or ln == msg.lineno)
        ),
        warnings.defaultaction,
    )
    return action if action in ("ignore", "error") else "show"


def _raise(msg):
    raise msg.message if isinstance(msg.message, Warning) else msg.category(msg.message)


def _route_to(stack, msg):
    """``msg`` into the routed thread's ``stack`` (top frame first)."""
    for i in range(len(stack) - 1, -1, -1):
        frame = stack[i]
        if frame.kind == "record":
            frame.log.append(msg)
            return
        if frame.kind == "ignore" or (frame.kind == "filter" and frame.matches(msg)):
            return
        if frame.kind == "start":
            act = _action(stack[:i] if frame.parent is None else frame.parent, msg)
            if act == "error":
                _raise(msg)
            if act == "show":
                frame.log.append(msg)
            return
    _show(msg)


def _show(msg):
    """``msg`` under the process's state saved by :func:`route`."""
    act = _process_action(msg)
    if act == "error":
        _raise(msg)
    if act == "ignore":
        return
    _, show, impl = _HOOK["saved"]
    if show is not warnings._showwarning_orig:
        show(msg.message, msg.category, msg.filename, msg.lineno, msg.file, msg.line)
    else:
        impl(msg)


def _dispatch(msg):
    """The hook's ``warnings._showwarnmsg_impl``: ``msg`` to its thread's frames."""
    stack = frames()
    if stack is None:
        _show(msg)
    else:
        _route_to(stack, msg)


@contextmanager
def route():
    """The hook in (nested and from several threads: the outermost exit takes
    it out): every warning reaches :func:`_dispatch` (``"always"``).

    Another thread's ``catch_warnings`` block that spans an exit (not
    thread-safe before Python 3.14, e.g. a fit in another thread) puts the
    hook's state back when it ends; the hook then keeps to the state it
    saved (a thread that is not routed meets it), and the next entry keeps
    that saved state."""
    with _LOCK:
        if _HOOK["depth"] == 0:
            if warnings._showwarnmsg_impl is not _dispatch:  # else: the hook's, put back
                _HOOK["saved"] = (
                    warnings.filters,
                    warnings.showwarning,
                    warnings._showwarnmsg_impl,
                )
            warnings.filters = _HOOK["filters"] = [("always", None, Warning, None, 0)]
            warnings.showwarning = warnings._showwarning_orig
            warnings._showwarnmsg_impl = _dispatch
            warnings._filters_mutated()
        _HOOK["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _HOOK["depth"] -= 1
            if (
                _HOOK["depth"] == 0
                and warnings._showwarnmsg_impl is _dispatch
                and warnings.filters is _HOOK["filters"]
            ):
                warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl = _HOOK["saved"]
                warnings._filters_mutated()


@contextmanager
def as_start(parent):
    """The calling thread routed, its warnings kept in a ``"start"`` frame whose
    frames below are ``parent`` (the starting thread's frames, or None: the
    process's filters); yields the frame's list. Needs :func:`route`."""
    before = frames()
    frame = Frame("start", parent=list(parent) if parent is not None else None)
    _LOCAL.frames = [frame]
    try:
        yield frame.log
    finally:
        _LOCAL.frames = before


@contextmanager
def recorded(kind="record", message=None, category=Warning):
    """A ``catch_warnings`` block safe in routed threads (see the module); yields
    the list of recorded warnings (empty for "ignore" and "filter")."""
    stack = frames()
    if stack is not None:
        frame = Frame(kind, message, category)
        stack.append(frame)
        try:
            yield frame.log
        finally:
            stack.pop()
        return
    with warnings.catch_warnings(record=kind in ("record", "start")) as log:
        if kind == "record":
            warnings.simplefilter("always")
        elif kind == "ignore":
            warnings.simplefilter("ignore")
        elif kind == "filter":
            warnings.filterwarnings("ignore", message=message or "", category=category)
        yield log if log is not None else []


def emit(log):
    """The warnings of ``log`` again, in order: into the calling thread's frames
    when it is routed, else through ``warnings.warn_explicit``."""
    stack = frames()
    for msg in log:
        if stack is not None:
            _route_to(stack, msg)
        else:
            warnings.warn_explicit(msg.message, msg.category, msg.filename, msg.lineno)
