"""A report drawn in a second process: ``neurospca demo``'s report worker.

The command line starts this module as a fresh interpreter
(``python -m neurospca._commands._report_worker``, see ``neurospca.cli``) before
it imports scikit-learn. On the machine's other core the worker imports the
report's stacks (matplotlib, Pillow, jinja2, nilearn, and scikit-learn, which
the report's and the model file's modules import), reads and prepares the
default background, makes the volume canvas and compiles the templates
(:func:`neurospca.reporting.prepare_report_worker`), then waits on its standard
input. The command fits meanwhile, saves the model (``model.npz``, no pickle)
into its temporary output folder and sends one job, a JSON line naming that
file and the report to write (:func:`neurospca.reporting.report_job`); the
worker loads the model, draws the report (the same page as
:func:`~neurospca.reporting.make_report` of the fitted model: the saved model
holds everything the report reads), writes it whole or not at all
(:func:`~neurospca.reporting.save_report`) and answers with one JSON line.

Its component figures are drawn by a forked child while it builds the other
sections: the worker is a fresh single-threaded interpreter that never ran an
OpenMP kernel, so forking it is safe.

Failures never hang the command and never lose the report: a worker that
failed to start, died, answered an error or did not answer in time is
stopped and the command draws the report itself, as it did without a worker
(raising the report's own error, if any). The worker exits when its standard
input closes (the command ended, whatever the way).
"""

import json
import os
import resource
import sys
import time

__all__ = ["worker_main"]


def _draw(job):
    """Load the model, draw its report and write it (the worker's side of a job)."""
    from .. import persistence
    from ..reporting import make_report, save_report

    saved = persistence.load_model(job["model"])
    html = make_report(
        saved.estimator,
        saved.space,
        meshes=saved.meshes,
        title=saved.metadata.get("title") or "neurospca report",
        data_description=saved.metadata.get("data"),
        bg_img=job.get("bg_img"),
        engine=job.get("engine", "auto"),
        metadata=saved.metadata,
        study=saved.study,
    )
    save_report(html, job["report"])


def _prepare():
    """Everything a report imports and reads before its first figure (in this worker)."""
    from .. import persistence  # noqa: F401 - the model file's modules, before the job
    from ..reporting import prepare_report_worker

    prepare_report_worker()


def _cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def worker_main():
    """The worker: prepare, then answer one JSON line per job until stdin closes.

    An answer holds ``ok`` and, on success, the job's ``seconds``, its CPU
    (``report_cpu``, ``figure_child_cpu``: the forked figure child), when the
    worker was ready (``ready_at``, epoch seconds) and its CPU until then
    (``prepare_cpu``); on failure the ``error``.

    Returns
    -------
    int
        Exit code (0).
    """
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything printed goes to stderr, never into the answers
    _prepare()
    ready = {"ready_at": time.time(), "prepare_cpu": _cpu(resource.RUSAGE_SELF)}
    for line in sys.stdin:
        t0, c0, k0 = time.perf_counter(), time.process_time(), _cpu(resource.RUSAGE_CHILDREN)
        try:
            _draw(json.loads(line))
            answer = {
                "ok": True,
                "seconds": time.perf_counter() - t0,
                "report_cpu": time.process_time() - c0,
                "figure_child_cpu": _cpu(resource.RUSAGE_CHILDREN) - k0,
                **ready,
            }
        except Exception as exc:  # noqa: BLE001 - the command draws it and raises there
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        replies.write(json.dumps(answer) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    code = worker_main()
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown (0.2-2 s with these stacks): the command waits
