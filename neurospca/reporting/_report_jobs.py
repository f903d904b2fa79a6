"""The command's side of the report worker (``neurospca._commands._report_worker``):
send a job, wait for the answer, stop the worker; every failure falls back to drawing
in the command."""

import json
import os
import select
import signal
import subprocess
import time

__all__ = [
    "REPORT_TIMEOUT",
    "WorkerError",
    "ReportJob",
    "report_job",
    "submit_report",
    "wait_report",
    "stop_worker",
]

#: the longest wait (s) for the worker's report before the command stops it and
#: draws the report itself (a loaded machine slows the report 10-30x)
REPORT_TIMEOUT = 1800.0


class WorkerError(RuntimeError):
    """The worker did not write the report (why, in the message)."""


def submit_report(worker, model_path, report_path, *, engine="auto", bg_img=None):
    """Ask ``worker`` to write the report of the model saved at ``model_path``.

    Parameters
    ----------
    worker : subprocess.Popen
        Started by the command line (stdin and stdout pipes).
    model_path : str
        The saved model (:func:`neurospca.save_model`).
    report_path : str
        Where the worker writes the HTML report.
    engine : str, default="auto"
        Surface renderer (see :func:`~neurospca.reporting.make_report`).
    bg_img : str or None
        Background image path of the volume figures.

    Raises
    ------
    WorkerError
        If the worker is gone (it died while starting).
    """
    job = {"model": model_path, "report": report_path, "engine": engine, "bg_img": bg_img}
    if worker.poll() is not None:
        raise WorkerError(f"it exited with code {worker.returncode} before the job")
    try:
        worker.stdin.write((json.dumps(job) + "\n").encode())
        worker.stdin.flush()
    except OSError as exc:
        raise WorkerError(f"it could not be reached ({exc})") from None


def wait_report(worker, timeout=None):
    """Wait for the worker's answer to :func:`submit_report`.

    Parameters
    ----------
    worker : subprocess.Popen
    timeout : float, optional
        Seconds (default :data:`REPORT_TIMEOUT`).

    Returns
    -------
    dict
        The worker's answer (``seconds``, ``report_cpu``, ``figure_child_cpu``,
        ``ready_at``, ``prepare_cpu``: see ``neurospca._commands._report_worker``).

    Raises
    ------
    WorkerError
        If the worker answered an error, died, or did not answer in time.
    """
    deadline = time.monotonic() + (REPORT_TIMEOUT if timeout is None else timeout)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise WorkerError(f"no answer in {REPORT_TIMEOUT if timeout is None else timeout} s")
        ready, _, _ = select.select([worker.stdout], [], [], min(left, 1.0))
        if ready:
            break
    line = worker.stdout.readline()
    if not line:
        worker.wait()
        raise WorkerError(f"it exited with code {worker.returncode}")
    try:
        answer = json.loads(line)
    except ValueError:
        raise WorkerError(f"unreadable answer {line[:200]!r}") from None
    if not answer.get("ok"):
        raise WorkerError(str(answer.get("error", "unknown error")))
    return answer


def stop_worker(worker, kill=False):
    """Close the worker's input (an idle worker exits) and make sure it is gone.

    The worker runs in its own process group (``start_new_session``): killing
    the group also ends a forked figure child (:mod:`._render`).

    Parameters
    ----------
    worker : subprocess.Popen
    kill : bool, default=False
        Kill it now (the command failed or was interrupted); else it is given
        5 s to exit, then killed.

    Returns
    -------
    None
    """
    for stream in (worker.stdin, worker.stdout):
        try:
            stream.close()
        except OSError:
            pass
    if not kill:
        try:
            worker.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(worker.pid, signal.SIGKILL)
    except OSError:  # already gone, or not a group leader
        worker.kill()
    worker.wait()


class ReportJob:
    """A report asked of the worker; :meth:`written` says whether the worker wrote it.

    Parameters
    ----------
    worker : subprocess.Popen
    model_path, report_path : str
        As :func:`submit_report`.
    engine : str
    bg_img : str or None
    note : callable
        Called with one line when the worker failed (the command then draws the
        report itself).
    """

    def __init__(self, worker, model_path, report_path, *, engine, bg_img, note):
        self.worker, self.note, self.error, self.answer = worker, note, None, None
        try:
            submit_report(worker, model_path, report_path, engine=engine, bg_img=bg_img)
        except WorkerError as exc:
            self.error = exc

    def written(self, timeout=None):
        """Wait for the worker; True if it wrote the report, else False (worker stopped).

        Parameters
        ----------
        timeout : float, optional
            Seconds (default :data:`REPORT_TIMEOUT`).

        Returns
        -------
        bool
        """
        if self.error is None:
            try:
                self.answer = wait_report(self.worker, timeout)
                return True
            except (WorkerError, OSError) as exc:
                self.error = exc
        stop_worker(self.worker, kill=True)
        self.note(f"the report worker failed ({self.error}); drawing the report here ...")
        return False


def report_job(worker, model_path, report_path, *, engine, bg_img, scores, atlas, note):
    """A :class:`ReportJob`, or None when there is no worker or the report needs more
    than the saved model holds (given ``scores``, an ``atlas``, a background image
    that is not a path).

    Parameters
    ----------
    worker : subprocess.Popen or None
        The command's worker (``args.report_worker``).
    model_path, report_path : str
        The saved model and the report to write (the command's temporary folder).
    engine : str
    bg_img : str, os.PathLike, image or None
    scores : ndarray or None
    atlas : object or None
        As :func:`~neurospca.reporting.make_report` has them.
    note : callable
        Called with one line if the worker fails.

    Returns
    -------
    ReportJob or None
    """
    if worker is None or scores is not None or atlas is not None:
        return None
    if bg_img is not None and not isinstance(bg_img, (str, os.PathLike)):
        return None
    bg_img = None if bg_img is None else os.fspath(bg_img)
    return ReportJob(worker, model_path, report_path, engine=engine, bg_img=bg_img, note=note)
