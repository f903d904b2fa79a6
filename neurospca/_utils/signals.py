"""SIGINT/SIGTERM around file commits: blocked while a folder is half-moved, and
SIGTERM raised as :class:`Terminated` (like KeyboardInterrupt for SIGINT)."""

import contextlib
import signal
import threading

__all__ = ["Terminated", "signal_in", "signals_blocked", "sigterm_raises"]


class Terminated(BaseException):
    """SIGTERM arrived; like KeyboardInterrupt, not an Exception."""


def signal_in(exc):
    """The signal an exception stands for, if any.

    Parameters
    ----------
    exc : BaseException or None
        An exception, e.g. one raised by cleanup while a signal unwound (a ZIP
        file closed with a member still open raises ``ValueError``).

    Returns
    -------
    KeyboardInterrupt or Terminated or None
        The first of them in ``exc``'s chain (``__cause__``, else
        ``__context__``), or None.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (KeyboardInterrupt, Terminated)):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


@contextlib.contextmanager
def signals_blocked():
    """Hold SIGINT and SIGTERM while the block runs; a pending one is delivered at its end.

    A no-op outside the main thread or where ``pthread_sigmask`` does not exist.

    Yields
    ------
    None
    """
    previous = None
    if hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread():
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        if previous is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _on_sigterm(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not stop cleanup
    raise Terminated()


@contextlib.contextmanager
def sigterm_raises():
    """Inside the block SIGTERM raises :class:`Terminated`; the previous handler comes back.

    A no-op outside the main thread (signals can only be handled there).

    Yields
    ------
    None
    """
    previous, installed = None, False
    if threading.current_thread() is threading.main_thread():
        try:
            previous, installed = signal.signal(signal.SIGTERM, _on_sigterm), True
        except (ValueError, OSError):  # pragma: no cover - no signals here
            pass
    try:
        yield
    finally:
        if installed:  # previous None: installed outside Python
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
