"""The end of the command line's own process: no interpreter teardown."""

import atexit
import os
import sys
import threading

__all__ = ["leave_now"]


def leave_now(code):
    """End this process with exit status ``code`` without the interpreter's teardown.

    Only for the process's own command (:func:`neurospca.cli.main` without
    ``argv``), after the command returned: its files are closed and its output
    folder committed. With scikit-learn, scipy and pandas loaded, the teardown
    (clearing every module, freeing every object) took 0.5-3.6 s wall at load
    10-15 after ``neurospca demo`` and did nothing the command needs. The standard
    streams are flushed and the ``atexit`` handlers run as at a normal exit; if a
    stream cannot be flushed (e.g. a closed pipe) or any other thread is still
    alive (a daemon thread too: the hooks that ``threading`` runs at exit, such as
    those of thread and process pools, are not run here), this returns and the
    normal exit follows (reporting the error, stopping the threads).

    Parameters
    ----------
    code : int
    """
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None or threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    run_exit_functions()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 120  # what the interpreter returns when it cannot flush at exit
    os._exit(code)
