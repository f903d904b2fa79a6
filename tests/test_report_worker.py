"""``neurospca demo``'s report worker: started before scikit-learn, the same page as the
report drawn in the command, and every failure falls back to drawing in the command.

Real processes throughout (the worker is ``python -m neurospca._commands._report_worker``);
checks that depend on what a process imported run in a fresh interpreter.
"""

import os
import re
import subprocess
import sys

import pytest

import neurospca
from neurospca import load_model
from neurospca.cli import main

from .test_report_surface_png import _fresh

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")
pytest.importorskip("nilearn")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(neurospca.__file__)))

#: what importing the command line must not load (the demo's worker starts first)
HEAVY = ("sklearn", "scipy.stats", "pandas", "matplotlib", "nilearn", "jinja2", "dask")


def _page(html):
    """The page without what changes from one drawing to the next (date, report time)."""
    html = re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated DATE", html)
    return re.sub(r"(<th>report \(s\)</th><td class=\"num\">)[\d.]+", r"\1T", html)


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory):
    """One ``neurospca demo`` run (1 component) through the command line: the worker's."""
    out = tmp_path_factory.mktemp("worker") / "demo"
    assert main(["demo", "--output", str(out), "--n-components", "1"]) == 0
    return out


def test_importing_the_command_line_loads_no_heavy_stack():
    loaded = _fresh(
        "import json, sys\n"
        "import neurospca.cli\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    assert loaded == []


def test_the_worker_starts_before_scikit_learn_only_for_the_demo():
    out = _fresh(
        "import json, sys\n"
        "from neurospca import cli\n"
        "w = cli._early_report_worker(['demo', '-o', 'x'])\n"
        "before = [m for m in sys.modules if m.split('.')[0] in ('sklearn', 'matplotlib')]\n"
        "others = [cli._early_report_worker(a) is None for a in\n"
        "          (['fit'], ['report', 'm.npz'], ['demo', '--help'], ['demo', '-h'], [])]\n"
        "alive = w.poll() is None\n"
        "w.stdin.close()\n"  # it exits once prepared (slow on a loaded machine)
        "w.wait(timeout=600)\n"
        "print(json.dumps([before, others, alive, w.returncode]))\n"
    )
    assert out == [[], [True] * 5, True, 0]  # an idle worker exits when its input closes
    off = _fresh(
        "import json\nfrom neurospca import cli\n"
        "print(json.dumps(cli._early_report_worker(['demo']) is None))\n",
        env={"NEUROSPCA_NO_WARM_UP": "1"},
    )
    assert off is True


def test_the_workers_report_is_the_commands_report(demo_folder):
    from neurospca.reporting import make_report

    saved = load_model(demo_folder / "model.npz")
    here = make_report(
        saved.estimator,
        saved.space,
        meshes=saved.meshes,
        title=saved.metadata["title"],
        data_description=saved.metadata.get("data"),
        metadata=saved.metadata,
        study=saved.study,
    )
    page = (demo_folder / "report.html").read_text(encoding="utf-8")
    assert _page(page) == _page(here)
    assert page.count("data:image/png;base64,") >= 4  # the component figure and summaries


def _worker():
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "neurospca._commands._report_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def _job(worker, model, report, notes):
    from neurospca.reporting import report_job

    return report_job(
        worker,
        str(model),
        str(report),
        engine="auto",
        bg_img=None,
        scores=None,
        atlas=None,
        note=notes.append,
    )


def test_a_job_is_written_by_the_worker(demo_folder, tmp_path):
    notes, worker = [], _worker()
    job = _job(worker, demo_folder / "model.npz", tmp_path / "r.html", notes)
    assert job.written() and notes == []
    answer = job.answer
    assert answer["seconds"] > 0 and answer["prepare_cpu"] > 0
    assert answer["figure_child_cpu"] > 0  # the component figure was drawn by the child
    assert _page((tmp_path / "r.html").read_text(encoding="utf-8")) == _page(
        (demo_folder / "report.html").read_text(encoding="utf-8")
    )
    from neurospca.reporting import stop_worker

    stop_worker(worker)
    assert worker.returncode == 0


def test_a_worker_that_failed_leaves_the_report_to_the_command(demo_folder, tmp_path):
    # a job the worker cannot do: it answers the error and is stopped
    notes, worker = [], _worker()
    job = _job(worker, tmp_path / "missing.npz", tmp_path / "r.html", notes)
    assert not job.written()
    assert "report worker failed" in notes[0] and "missing.npz" in notes[0]
    assert worker.poll() is not None and not (tmp_path / "r.html").exists()
    # a worker that died before the job
    notes, worker = [], _worker()
    worker.kill()
    worker.wait()
    job = _job(worker, demo_folder / "model.npz", tmp_path / "r.html", notes)
    assert not job.written() and "exited with code" in notes[0]
    # a process that never answers: stopped at the timeout
    notes = []
    silent = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    job = _job(silent, demo_folder / "model.npz", tmp_path / "r.html", notes)
    assert not job.written(timeout=1.0) and "no answer in 1.0 s" in notes[0]
    assert silent.poll() is not None  # killed, not left behind
    # no worker, or a report that needs more than the saved model: no job
    assert _job(None, demo_folder / "model.npz", tmp_path / "r.html", notes) is None


def test_forked_figures_are_the_figures_drawn_here(demo_folder):
    # in a fresh interpreter, as in the worker: drawn here, by a forked child, and by
    # this process after the child was stopped (timeout 0): the same data URIs
    out = _fresh(
        "import json\n"
        "from neurospca import load_model\n"
        "from neurospca.reporting import _render\n"
        f"saved = load_model({str(demo_folder / 'model.npz')!r})\n"
        "comps = saved.estimator.components_\n"
        "args = (comps, saved.space, None, None, {}, None, 'auto', 80)\n"
        "here = _render.component_images(*args)\n"
        "_render.FORK_DRAWING = True\n"
        "forked = _render.component_images(*args, deferred=True)()\n"
        "_render.FORK_TIMEOUT = 0.0\n"
        "stopped = _render.component_images(*args, deferred=True)()\n"
        "print(json.dumps([here == forked, here == stopped, len(here),\n"
        "                  all(u.startswith('data:image/png') for u in here)]))\n"
    )
    assert out == [True, True, 1, True]


#: a command line run as the console script runs it, then what became of its process
_OWN_PROCESS = """
import atexit, sys, threading
from neurospca.cli import main


class Teardown:
    def __del__(self):
        print("teardown", flush=True)


kept = Teardown()  # freed (and printed) only by the interpreter's teardown
atexit.register(print, "atexit handler ran", flush=True)
case, model = sys.argv[1:3]
if case in ("thread", "daemon"):  # another thread still alive: the normal exit
    done = threading.Event()
    threading.Thread(target=done.wait, args=(600.0,), daemon=case == "daemon").start()
sys.argv = ["neurospca", "report", model]
code = main()
print("main returned", code, flush=True)
if case in ("thread", "daemon"):
    done.set()
sys.exit(code)
"""


@pytest.mark.parametrize("case", ["plain", "thread", "daemon"])
def test_the_command_lines_own_process_leaves_without_teardown(tmp_path, case):
    missing = str(tmp_path / "absent" / "model.npz")
    res = subprocess.run(
        [sys.executable, "-c", _OWN_PROCESS, case, missing],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        timeout=600,
        check=False,
    )
    assert res.returncode == 2, res.stderr[-2000:]  # the command's exit status
    assert "neurospca: error:" in res.stderr and "model" in res.stderr  # flushed
    lines = res.stdout.splitlines()
    assert "atexit handler ran" in lines  # the atexit handlers run, as at a normal exit
    if case == "plain":  # left from inside main(): no teardown
        assert "main returned 2" not in lines and "teardown" not in lines
    else:  # a thread is still running: main returns and the interpreter exits as always
        assert lines[0] == "main returned 2" and "teardown" in lines


def test_main_with_arguments_returns(tmp_path):
    assert main(["report", str(tmp_path / "absent.npz")]) == 2  # callers in Python go on
