"""Scratch arrays kept between the v-step solves of one fit (issue 22 round 19).

A dual solve at P = 1,906,624 (TV: 5.7 M dual variables) made about ten fresh
arrays of 15-45 MB (the locality order's copies of ``y`` and the warm start,
the iteration pair, the kernel's buffers); arrays that large are mapped
afresh by the allocator on every call, so each solve paid their page faults
(about 13 % of a warm solve). Inside :func:`reused_buffers` (entered once per
fit), a solver takes its scratch arrays with :func:`scratch` and hands back
the ones it does not return with :func:`release`; the next solve of the same
size gets them back. Outside it, :func:`scratch` is ``np.empty`` and
:func:`release` does nothing. Only the memory is shared, never values: every
array taken is written before it is read, so the results do not change.

Thread-safe: several fits (or a fit's starts in threads of their own) may
share the kept arrays; an array is handed to one caller at a time.
"""

import threading
from contextlib import contextmanager

import numpy as np

__all__ = ["KEPT_SIZES", "release", "reused_buffers", "scratch"]

#: The most array sizes kept at once (a fit's full problem and the working
#: sets of its finishing have different sizes); the oldest size goes first.
KEPT_SIZES = 8

_LOCK = threading.Lock()
_KEPT = {"depth": 0, "free": {}}


@contextmanager
def reused_buffers():
    """Keep the solvers' scratch arrays for the next solve until the outermost exit."""
    with _LOCK:
        _KEPT["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _KEPT["depth"] -= 1
            if _KEPT["depth"] == 0:
                _KEPT["free"].clear()


def _key(shape, dtype):
    return (tuple(int(s) for s in np.atleast_1d(shape)), np.dtype(dtype).str)


def scratch(shape, dtype=np.float64):
    """An uninitialised array: a kept one of this shape and dtype, or a new one.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    dtype : dtype, default=np.float64
        Its dtype.

    Returns
    -------
    ndarray
        C-contiguous; its values are arbitrary.
    """
    with _LOCK:
        kept = _KEPT["free"].get(_key(shape, dtype)) if _KEPT["depth"] else None
        if kept:
            return kept.pop()
    return np.empty(shape, dtype)


def release(*arrays):
    """Keep ``arrays`` for later :func:`scratch` calls (inside :func:`reused_buffers`).

    The caller must not use them afterwards. None entries are skipped.

    Parameters
    ----------
    *arrays : ndarray or None
        C-contiguous arrays that own their memory.
    """
    with _LOCK:
        if not _KEPT["depth"]:
            return
        free = _KEPT["free"]
        for a in arrays:
            if a is None or a.size == 0 or a.base is not None or not a.flags.c_contiguous:
                continue
            key = _key(a.shape, a.dtype)
            if key not in free and len(free) >= KEPT_SIZES:
                del free[next(iter(free))]
            free.setdefault(key, []).append(a)
