"""Progress lines of the command line: the estimators' log records and warnings on stderr."""

import contextlib
import logging
import re
import sys
import time
import warnings

__all__ = ["ProgressHandler", "print_warnings", "progress_lines"]


class ProgressHandler(logging.Handler):
    """Print the estimator's per-component log lines to stderr.

    Every finished component gives one line; alternations are shown with
    ``verbose``, or every ``heartbeat`` seconds on long components.

    Parameters
    ----------
    n_components : int
        Shown as ``component k/n_components`` (the engine counts from 0).
    verbose : int
        Show every record when > 0.
    heartbeat : float, default=10.0
        Seconds after which a record is shown anyway.
    """

    def __init__(self, n_components, verbose, heartbeat=10.0):
        super().__init__(logging.INFO)
        self.n_components = n_components
        self.verbose = verbose
        self.heartbeat = heartbeat
        self.last = time.perf_counter()

    def emit(self, record):
        """Print ``record`` if it ends a component, if verbose or after the heartbeat.

        Parameters
        ----------
        record : logging.LogRecord
            A record of the "neurospca" logger.

        Returns
        -------
        None
        """
        msg = record.getMessage()
        now = time.perf_counter()
        match = re.match(r"component (\d+)(.*)$", msg)
        if match:  # the engine counts from 0; people count from 1
            msg = f"component {int(match.group(1)) + 1}/{self.n_components}{match.group(2)}"
        if " done:" in msg or self.verbose or now - self.last > self.heartbeat:
            print(f"  {msg}", file=sys.stderr, flush=True)
            self.last = now


def print_warnings(caught):
    """Print caught warnings as one-line notes (resource and deprecation warnings left out).

    Parameters
    ----------
    caught : list of warnings.WarningMessage
        From ``warnings.catch_warnings(record=True)``.

    Returns
    -------
    None
    """
    for w in caught:
        if not issubclass(
            w.category, (ResourceWarning, DeprecationWarning, PendingDeprecationWarning)
        ):
            print(f"neurospca: warning: {w.message}", file=sys.stderr)


@contextlib.contextmanager
def progress_lines(n_components, verbose=0, quiet=False):
    """Inside the block, the "neurospca" logger's INFO records are progress lines and
    warnings are recorded, then printed as notes when the block ends normally.

    Parameters
    ----------
    n_components : int
        Components of the fit (see :class:`ProgressHandler`).
    verbose : int, default=0
        Show every record.
    quiet : bool, default=False
        No progress lines (warnings are still printed).

    Yields
    ------
    list
        The caught warnings (filled while the block runs).
    """
    logger = logging.getLogger("neurospca")
    handler = ProgressHandler(n_components, verbose)
    old_level = logger.level
    if not quiet:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield caught
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    print_warnings(caught)
