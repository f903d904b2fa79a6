"""The user's timeline, from command to report: import, load, mask, select, fit, report.

Three scenarios, each run in a fresh interpreter (so that imports count) on the
checkout given by ``--repo`` (``PYTHONPATH``), so that one script times the
code before and after a change on the same inputs, in the same run:

- ``demo``: the ``neurospca demo -q`` command end to end (its own seeded
  simulation: 83 maps x 13,682 voxels in the MNI152 mask at 5 mm). Stages from
  the command's progress lines: generate, select + fit (``alpha_rel="auto"``),
  report (drawing and writing); "import" is the wall time before the
  simulation starts (interpreter, ``neurospca.cli`` and what it imports).
- ``nifti``: ``ImageSPCATV(3).fit(<4-D NIfTI on disk>)`` then
  ``generate_report()`` and ``save_as_html``: 60 fMRI-like maps
  (``make_fmri_like(random_state=1)``) written once as a 4-D ``.nii.gz``; the
  mask is computed from the data (``mask=None``), as in the issue.
- ``surface``: ``ImageSPCATV(3).fit(load_surface_image(lh.mgh, rh.mgh, lh.gii,
  rh.gii))`` then the report: 60 cortical-thickness maps on both fsaverage5
  hemispheres (``make_cortical_atrophy(60)``, 2 x 10,242 vertices), written
  once as multi-frame MGH files and GIFTI pial meshes.

- ``demo_stages``: the same command in one interpreter (``cli.main``), each
  step timed in wall and CPU time by wrapping the functions it calls:
  interpreter start-up, import (``neurospca.cli``), generate
  (``make_fmri_like``), build the 4-D image, mask (``load_maps``), select +
  fit (``fit_with_progress``), print the table, write + report (``write_all``).

Stages of the ``nifti`` and ``surface`` drivers: ``import`` (``import
neurospca``), ``first use`` (the names used: ``ImageSPCATV``,
``load_surface_image``: scikit-learn, nibabel, nilearn), ``load`` (the files
into memory), ``mask``, ``select + fit`` (the default model, ``alpha_rel="auto"``),
``report``; then, outside the timeline, ``fit (alpha known)``: the same model
refitted at the chosen ``alpha_`` (so ``select`` ~ ``select + fit`` - this), the
time of each component figure (the report's log) and ``report again``: a second
``generate_report()`` of the same model (a redraw).

Each stage has its wall time and its CPU time (this process, all threads, plus
the children it waited for, e.g. the pyvista probe): on a shared machine the CPU
column moves much less with the load than the wall column.

The components of each run are saved (``.npy``) and compared between checkouts:
``--compare`` prints the largest absolute difference of the unit loadings.

Usage::

    python benchmarks/bench_timeline.py --repo /path/to/before --label before
    python benchmarks/bench_timeline.py --repo . --label after
    python benchmarks/bench_timeline.py --compare before after
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.environ.get("TMPDIR", "/tmp"), "neurospca_timeline")

# --------------------------------------------------------------------------
# inputs (made once, by this checkout; identical for every run)
# --------------------------------------------------------------------------


def make_inputs(out, scenarios=("nifti", "surface")):
    """Write the 4-D NIfTI and the surface files into ``out`` (once, for the
    ``scenarios`` that read them)."""
    nifti = os.path.join(out, "maps.nii.gz")
    if "nifti" in scenarios and not os.path.exists(nifti):
        import nibabel as nib
        from nilearn.datasets import load_mni152_brain_mask

        from neurospca.datasets import make_fmri_like

        X, _, mask = make_fmri_like(n_samples=60, random_state=1)
        affine = load_mni152_brain_mask(resolution=3, threshold=0.48).affine
        data = np.zeros(mask.shape + (X.shape[0],), dtype=np.float32)
        data[mask] = X.T
        nib.Nifti1Image(data, affine).to_filename(nifti + ".tmp.nii.gz")
        os.replace(nifti + ".tmp.nii.gz", nifti)
    if "surface" in scenarios and not os.path.exists(os.path.join(out, "rh.pial.gii")):
        import nibabel as nib

        from neurospca.datasets import make_cortical_atrophy
        from neurospca.surface import write_surf_mesh

        data = make_cortical_atrophy(60, random_state=0)
        n_left = data.n_vertices[0]
        for short, cols, mesh in (
            ("lh", slice(0, n_left), data.mesh_left),
            ("rh", slice(n_left, None), data.mesh_right),
        ):
            maps = np.asarray(data.X[:, cols].T, dtype=np.float32)[:, None, None, :]
            nib.MGHImage(maps, np.eye(4)).to_filename(os.path.join(out, f"{short}.maps.mgh"))
            write_surf_mesh(*mesh, os.path.join(out, f"{short}.pial.gii"))


# --------------------------------------------------------------------------
# the drivers (run in a fresh interpreter on the checkout under test)
# --------------------------------------------------------------------------

_DRIVER = r"""
import json, os, resource, sys, time, warnings
def clock():  # (wall, CPU of this process and of the children it waited for)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), time.process_time() + r.ru_utime + r.ru_stime
stages, cpu = {}, {}
def done(name, start):
    now = clock()
    stages[name], cpu[name] = now[0] - start[0], now[1] - start[1]
    return clock()
t = clock()
import neurospca
t = done("import", t)
scenario, out, label = sys.argv[1], sys.argv[2], sys.argv[3]
warnings.simplefilter("ignore")
ImageSPCATV = neurospca.ImageSPCATV
if scenario == "surface":
    load_surface_image = neurospca.load_surface_image
t = done("first use", t)
if scenario == "nifti":
    import nibabel as nib
    img = nib.load(os.path.join(out, "maps.nii.gz"))
    img = nib.Nifti1Image(img.get_fdata(dtype="float32"), img.affine)
else:
    img = load_surface_image(*(os.path.join(out, f) for f in (
        "lh.maps.mgh", "rh.maps.mgh", "lh.pial.gii", "rh.pial.gii")))
t = done("load", t)
model = ImageSPCATV(3)
X = model._prepare(img, None)
t = done("mask", t)
model._fit_matrix(X)
t = done("select + fit", t)
import logging, re
drawn = []
class _Figures(logging.Handler):
    def emit(self, record):
        m = re.match(r"report: [Cc]omponent \d+ drawn in ([\d.]+) s(?: \(CPU ([\d.]+) s\))?",
                     record.getMessage())
        if m:
            drawn.append(m.group(1) + ("" if m.group(2) is None else f" (CPU {m.group(2)})"))
log = logging.getLogger("neurospca")
log.addHandler(_Figures())
log.setLevel(logging.INFO)
t = clock()
model.generate_report().save_as_html(os.path.join(out, f"{label}_{scenario}.html"))
t = done("report", t)
first = list(drawn)
model.generate_report()
t = done("report again", t)
import numpy as np
np.save(os.path.join(out, f"{label}_{scenario}_components.npy"), model.components_)
refit = ImageSPCATV(3, alpha=model.estimator_.alpha_)
refit._prepare(img, None)
t = clock()
refit._fit_matrix(X)
done("fit (alpha known)", t)
extra = {"component figures (s each)": ", ".join(first),
         "shape": list(X.shape), "alpha_rel_": float(model.estimator_.alpha_rel_)}
print(json.dumps({"stages": stages, "cpu": cpu, "extra": extra}))
"""


# ``neurospca demo`` in one interpreter, its steps timed (wall and CPU) by wrapping
# the functions the command calls (looked up at call time; nothing else changes)
_DEMO_DRIVER = r"""
import json, resource, sys, time
def clock():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), time.process_time() + r.ru_utime + r.ru_stime
marks = [("start", clock())]
from neurospca import cli
marks.append(("import neurospca.cli", clock()))
def timed(module, name, stage, before=None):
    original = getattr(module, name)
    def wrapper(*a, **k):
        if before:
            marks.append((before, clock()))
        out = original(*a, **k)
        marks.append((stage, clock()))
        return out
    setattr(module, name, wrapper)
def wrap_command():
    # the command's own modules, imported when its parser is built (after the report
    # worker started, on checkouts that start one) and then wrapped
    import neurospca.datasets as datasets
    from neurospca._commands import demo
    timed(datasets, "make_fmri_like", "generate", before="command start")
    timed(demo, "load_maps", "mask", before="build the 4-D image")
    try:  # the alpha_rel="auto" search, summed over its calls (nested calls once)
        from neurospca.decomposition import _spcatv
        accumulated(_spcatv, "auto_path")
    except (ImportError, AttributeError):
        pass
    timed(demo, "fit_with_progress", "select + fit")
    timed(demo, "write_all", "write + report", before="print the table")
select = {"wall": 0.0, "cpu": 0.0, "depth": 0, "calls": 0}
def accumulated(module, name):
    original = getattr(module, name)
    def wrapper(*a, **k):
        select["depth"] += 1
        t = clock()
        try:
            return original(*a, **k)
        finally:
            select["depth"] -= 1
            if select["depth"] == 0:
                e = clock()
                select["wall"] += e[0] - t[0]
                select["cpu"] += e[1] - t[1]
                select["calls"] += 1
    setattr(module, name, wrapper)
worker = {}
def wrap_jobs():  # the report worker's answer (checkouts that have one)
    try:
        from neurospca.reporting import _report_jobs
    except ImportError:
        return
    submit, written = _report_jobs.submit_report, _report_jobs.ReportJob.written
    def submitted(*a, **k):
        worker["sent_at"] = time.time()
        return submit(*a, **k)
    def answered(self, *a, **k):
        ok = written(self, *a, **k)
        worker.update(getattr(self, "answer", None) or {}, written=ok, answered_at=time.time())
        return ok
    _report_jobs.submit_report = submitted
    _report_jobs.ReportJob.written = answered
build = cli._build_parser
def build_parser():
    marks.append(("start the report worker", clock()))
    wrap_command()
    wrap_jobs()
    marks.append(("import the commands (scikit-learn)", clock()))
    return build()
cli._build_parser = build_parser
code = cli.main(["demo", "-q", "-o", sys.argv[1]])
marks.append(("end (report worker reaped)", clock()))
stages, cpu = {}, {}
for (_, a), (name, b) in zip(marks, marks[1:]):
    stages[name], cpu[name] = b[0] - a[0], b[1] - a[1]
if select["calls"]:  # "select + fit" = the search (auto_path) + the rest ("fit")
    stages = {("fit" if k == "select + fit" else k): v for k, v in stages.items()}
    cpu = {("fit" if k == "select + fit" else k): v for k, v in cpu.items()}
    stages["fit"] -= select["wall"]
    cpu["fit"] -= select["cpu"]
    stages["select (alpha_rel='auto' search)"] = select["wall"]
    cpu["select (alpha_rel='auto' search)"] = select["cpu"]
print(json.dumps({"stages": stages, "cpu": cpu, "code": code, "worker": worker,
                  "printed_at": time.time()}), flush=True)
import neurospca._commands as commands
leave = getattr(commands, "leave_now", None)  # the console script's exit, where it has one
if leave is not None:
    leave(code)
"""


def run_demo_stages(repo, out, label):
    """``neurospca demo`` in one interpreter, each step timed (wall and CPU)."""
    folder = os.path.join(out, f"{label}_demo_stages")
    result = _run_timed(repo, out, [_DEMO_DRIVER, folder], "demo stages")
    end = result["started_at"] + result["wall"]
    exit_ = end - result["printed_at"]  # after the command: the process's exit
    stages = {"interpreter": result["wall"] - sum(result["stages"].values()) - exit_}
    stages.update(result["stages"])
    stages["exit (after the command)"] = exit_
    result["stages"] = stages
    w = result.get("worker") or {}
    result["extra"] = {}
    if w.get("written") and "ready_at" in w:  # when, from the command's start (s)
        t0 = result["started_at"]
        result["extra"]["report worker: ready / job sent / answer, s after the start"] = (
            f"{w['ready_at'] - t0:.2f} / {w['sent_at'] - t0:.2f} / {w['answered_at'] - t0:.2f}"
        )
    if w.get("written") and "prepare_cpu" in w:
        main_cpu = sum(v for k, v in result["cpu"].items() if not k.startswith("end"))
        result["extra"] |= {
            "command's CPU (report worker excluded)": f"{main_cpu:.2f}",
            "report worker: CPU until ready": f"{w['prepare_cpu']:.2f}",
            "report worker: ready before the job came (s)": f"{w['sent_at'] - w['ready_at']:.2f}",
            "report worker: report wall / CPU / figure child CPU": (
                f"{w['seconds']:.2f} / {w['report_cpu']:.2f} / {w['figure_child_cpu']:.2f}"
            ),
        }
    _save_components(folder, os.path.join(out, f"{label}_demo_stages_components.npy"))
    return result


def _save_components(folder, path):
    """The components of the model a command wrote (``model.npz``) as ``path``."""
    with np.load(os.path.join(folder, "model.npz"), allow_pickle=False) as z:
        key = next(k for k in z.files if k.endswith("components_"))
        np.save(path, z[key])


#: extra environment of the timed processes (``--env KEY=VALUE``)
EXTRA_ENV = {}


def _env(repo):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(repo), MPLBACKEND="Agg")
    env.update(EXTRA_ENV)
    return env


def run_driver(repo, scenario, out, label):
    """Stages (seconds) of one scenario on ``repo``."""
    return _run_timed(repo, out, [_DRIVER, scenario, out, label], scenario)


def _run_timed(repo, out, args, what):
    """Run ``python -c *args`` on ``repo``; its last stdout line (JSON) with ``wall`` and
    ``cpu_total`` (seconds, the child's) added."""
    t0, c0, epoch = time.perf_counter(), _children_cpu(), time.time()
    res = subprocess.run(
        [sys.executable, "-c", *args],
        env=_env(repo),
        capture_output=True,
        text=True,
        cwd=out,
        check=False,
    )
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if res.returncode:
        raise RuntimeError(f"{what} on {repo} failed:\n{res.stderr[-3000:]}")
    result = json.loads(res.stdout.strip().splitlines()[-1])
    result["wall"], result["cpu_total"], result["started_at"] = wall, cpu, epoch
    return result


def _children_cpu():
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _seconds(lines, prefix, pattern):
    import re

    for line in lines:
        if line.startswith(prefix):
            m = re.search(pattern, line)
            if m:
                return float(m.group(1))
    return float("nan")


def run_demo(repo, out, label):
    """Stages of ``neurospca demo`` (from its progress lines) and its wall time."""
    folder = os.path.join(out, f"{label}_demo")
    t0, c0 = time.perf_counter(), _children_cpu()
    res = subprocess.run(
        [sys.executable, "-m", "neurospca.cli", "demo", "-o", folder],
        env=_env(repo),
        capture_output=True,
        text=True,
        cwd=out,
        check=False,
    )
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if res.returncode:
        raise RuntimeError(f"demo on {repo} failed:\n{res.stderr[-3000:]}")
    lines = [ln.strip() for ln in res.stderr.splitlines()]
    generate = _seconds(lines, "83 maps", r"generated in ([\d.]+) s")
    fit = _seconds(lines, "fitted", r" in ([\d.]+) s")
    report = _seconds(lines, "report drawn", r"in ([\d.]+) s")
    total = _seconds(lines, "total", r"total ([\d.]+) s")
    stages = {
        "import": wall - total,
        "load (generate)": generate,
        "mask + write": total - generate - fit - report,
        "select + fit": fit,
        "report": report,
    }
    _save_components(folder, os.path.join(out, f"{label}_demo_components.npy"))
    return {"stages": stages, "extra": {}, "wall": wall, "cpu_total": cpu}


# --------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------


TIMELINE = (
    "interpreter",
    "import neurospca.cli",
    "start the report worker",
    "import the commands (scikit-learn)",
    "select (alpha_rel='auto' search)",
    "fit",
    "end (report worker reaped)",
    "exit (after the command)",
    "command start",
    "generate",
    "build the 4-D image",
    "print the table",
    "write + report",
    "end",
    "import",
    "first use",
    "load",
    "load (generate)",
    "mask",
    "mask + write",
    "select + fit",
    "report",
)


#: the user's timeline of the demo (issue 22, item 5): stages of ``demo_stages`` summed
USER_TIMELINE = {
    "import": (
        "interpreter",
        "import neurospca.cli",
        "start the report worker",
        "import the commands (scikit-learn)",
        "command start",
    ),
    "load": ("generate", "build the 4-D image"),
    "mask": ("mask",),
    "select": ("select (alpha_rel='auto' search)",),
    "fit": ("fit", "select + fit"),
    "report": ("print the table", "write + report", "end (report worker reaped)"),
    "exit": ("exit (after the command)",),
}


def print_user_timeline(res):
    """import / load / mask / select / fit / report of a ``demo_stages`` run (wall; CPU
    of this process, the report worker's CPU counted in "report" when it is reaped)."""
    print("| import | load | mask | select | fit | report | exit | total (wall) | CPU |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cells = [sum(res["stages"].get(k, 0.0) for k in keys) for keys in USER_TIMELINE.values()]
    print(
        "| "
        + " | ".join(f"{c:.2f}" for c in cells)
        + f" | {res['wall']:.2f} | {res.get('cpu_total', 0):.2f} |"
    )


def print_table(results):
    for scenario, res in results.items():
        print(f"\n{scenario} (wall {res['wall']:.2f} s, CPU {res.get('cpu_total', 0):.2f} s)")
        print("| stage | wall (s) | share | CPU (s) |")
        print("|---|---:|---:|---:|")
        total = sum(v for k, v in res["stages"].items() if k in TIMELINE)
        for stage, sec in res["stages"].items():
            share = f"{100 * sec / total:.0f} %" if stage in TIMELINE else "(outside)"
            cpu = res.get("cpu", {}).get(stage)
            print(
                f"| {stage} | {sec:.2f} | {share} | {'-' if cpu is None else format(cpu, '.2f')} |"
            )
        for key, value in res["extra"].items():
            print(f"| ({key}) | {value} | | |")
        if scenario == "demo_stages":
            print()
            print_user_timeline(res)


def compare(out, labels):
    a, b = labels
    for scenario in ("demo", "demo_stages", "nifti", "surface"):
        pa = os.path.join(out, f"{a}_{scenario}_components.npy")
        pb = os.path.join(out, f"{b}_{scenario}_components.npy")
        if os.path.exists(pa) and os.path.exists(pb):
            diff = float(np.max(np.abs(np.load(pa) - np.load(pb))))
            print(f"{scenario}: max |components {a} - {b}| = {diff:.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=os.path.dirname(HERE), help="checkout to time")
    parser.add_argument("--label", default="after", help="name of this run's outputs")
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder of inputs and outputs")
    parser.add_argument("--scenarios", nargs="+", default=["demo", "nifti", "surface"])
    parser.add_argument("--compare", nargs=2, metavar=("LABEL_A", "LABEL_B"))
    parser.add_argument(
        "--env",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="set in the timed processes, e.g. NEUROSPCA_NO_WARM_UP=1",
    )
    args = parser.parse_args()
    EXTRA_ENV.update(item.split("=", 1) for item in args.env)
    os.makedirs(args.out, exist_ok=True)
    if args.compare:
        compare(args.out, args.compare)
        return
    make_inputs(args.out, args.scenarios)
    print(
        f"checkout {os.path.abspath(args.repo)} ({args.label}); python "
        f"{sys.version.split()[0]}; {os.cpu_count()} cores (shared); load average "
        f"{os.getloadavg()[0]:.1f}" + (f"; env {EXTRA_ENV}" if EXTRA_ENV else "")
    )
    results = {}
    for scenario in args.scenarios:
        runner = {"demo": run_demo, "demo_stages": run_demo_stages}.get(scenario)
        results[scenario] = (
            runner(args.repo, args.out, args.label)
            if runner
            else run_driver(args.repo, scenario, args.out, args.label)
        )
        print_table({scenario: results[scenario]})
        sys.stdout.flush()
    with open(os.path.join(args.out, f"{args.label}_timeline.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
