"""Issue 22, round 20 (branch front22t): the user's timeline outside the solver.

Two measurements, each in fresh interpreters (a process pays its one-off costs once):

- ``report``: ``ImageSPCATV(3, alpha=<the alpha bench_timeline's nifti scenario
  selects>)`` fitted on bench_timeline's 4-D NIfTI (60 x 64,030), then
  ``generate_report()``, with ``reporting._warmup.PREPARE_IN_THREAD`` off (main's
  order: the first figure imports matplotlib, then reads the template) or on
  (this branch: the template, its silhouettes and the viewer's sampled template
  read in a thread while matplotlib is imported), the two alternating, one
  process each. Printed: the report's wall and CPU, each component figure's
  wall (the report's log), the digest of every PNG in the page (must agree), the
  load average.
- ``imports``: what the demo's import and ``ImageSPCATV``'s first use cost, module by
  module: a fresh interpreter imports, in this order, numpy, scipy.sparse,
  scipy.stats, pandas, sklearn.base, neurospca.decomposition, neurospca.image,
  the command modules, nibabel, nilearn.maskers and matplotlib.pyplot, and the
  CPU of each step (what it adds to what was imported before) is printed.

Usage::

    python benchmarks/bench_timeline.py --scenarios nifti   # writes the NIfTI once
    PYTHONPATH=. python benchmarks/bench_front22t.py report --pairs 6
    PYTHONPATH=. python benchmarks/bench_front22t.py imports --runs 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(os.environ.get("TMPDIR", "/tmp"), "neurospca_timeline")
#: ``alpha_`` that ``ImageSPCATV(3)`` selects on bench_timeline's NIfTI (main 0668e4a)
ALPHA = 0.39008336437113383


def _report_code():
    # generate_report once, timed; the page's PNGs hashed
    return r"""
import hashlib, json, logging, os, re, sys, time, warnings
warnings.simplefilter("ignore")
import nibabel as nib
import neurospca
img = nib.load(os.path.join(sys.argv[2], "maps.nii.gz"))
img = nib.Nifti1Image(img.get_fdata(dtype="float32"), img.affine)
model = neurospca.ImageSPCATV(3, alpha=float(sys.argv[3]))
model._fit_matrix(model._prepare(img, None))
from neurospca.reporting import _warmup
_warmup.PREPARE_IN_THREAD = sys.argv[1] == "on"
drawn = []
class Figures(logging.Handler):
    def emit(self, record):
        m = re.match(r"report: component \d+ drawn in ([\d.]+) s", record.getMessage())
        if m:
            drawn.append(float(m.group(1)))
log = logging.getLogger("neurospca")
log.addHandler(Figures())
log.setLevel(logging.INFO)
load = os.getloadavg()[0]
t0, c0 = time.perf_counter(), time.process_time()
report = model.generate_report()
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
page = report._repr_html_() if hasattr(report, "_repr_html_") else str(report)
pngs = re.findall(r"data:image/png;base64,[A-Za-z0-9+/=]+", page)
print(json.dumps({"wall": wall, "cpu": cpu, "figures": drawn, "load": load,
                  "pngs": len(pngs), "digest": hashlib.blake2b("".join(pngs).encode(),
                                                              digest_size=8).hexdigest()}))
"""


def _child(code, args, repo):
    env = dict(os.environ, PYTHONPATH=repo)
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_report(repo, pairs):
    """Alternating processes, the thread off / on; prints one row per process."""
    rows = {"off": [], "on": []}
    print("| pair | flag | load | report wall (s) | report CPU (s) | figures (s) | PNGs | digest |")
    print("|---:|---|---:|---:|---:|---|---:|---|")
    for i in range(pairs):
        for flag in ("off", "on") if i % 2 == 0 else ("on", "off"):
            r = _child(_report_code(), [flag, INPUTS, repr(ALPHA)], repo)
            rows[flag].append(r)
            figs = " / ".join(f"{f:.2f}" for f in r["figures"])
            print(
                f"| {i + 1} | {flag} | {r['load']:.1f} | {r['wall']:.2f} | {r['cpu']:.2f} | "
                f"{figs} | {r['pngs']} | {r['digest']} |",
                flush=True,
            )
    print("\n| flag | median wall | median CPU | median first figure | max later figure |")
    print("|---|---:|---:|---:|---:|")
    for flag, rs in rows.items():
        print(
            f"| {flag} | {statistics.median(r['wall'] for r in rs):.2f} | "
            f"{statistics.median(r['cpu'] for r in rs):.2f} | "
            f"{statistics.median(r['figures'][0] for r in rs):.2f} | "
            f"{max(max(r['figures'][1:]) for r in rs):.2f} |"
        )
    digests = {r["digest"] for rs in rows.values() for r in rs}
    print(f"\nPNG digests over all runs: {sorted(digests)} (one: the figures are identical)")


_STEPS = (
    "numpy",
    "scipy.sparse",
    "scipy.stats",
    "pandas",
    "sklearn.base",
    "neurospca.decomposition",
    "neurospca.image",
    "neurospca._commands.demo",
    "neurospca._commands.fit",
    "nibabel",
    "nilearn.maskers",
    "matplotlib.pyplot",
)

_IMPORTS = r"""
import importlib, json, sys, time
import neurospca.cli
out = []
for name in sys.argv[1:]:
    c0 = time.process_time()
    importlib.import_module(name)
    out.append(time.process_time() - c0)
print(json.dumps(out))
"""


def run_imports(repo, runs):
    """CPU of each import step (in order, each adding to the ones before)."""
    got = [_child(_IMPORTS, list(_STEPS), repo) for _ in range(runs)]
    load = os.getloadavg()[0]
    print(f"load {load:.1f}; CPU seconds per step, {runs} fresh interpreters (min / median)")
    print("| step (after the ones above) | min | median |")
    print("|---|---:|---:|")
    for i, name in enumerate(_STEPS):
        vals = [g[i] for g in got]
        print(f"| {name} | {min(vals):.3f} | {statistics.median(vals):.3f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("report", "imports"))
    parser.add_argument("--repo", default=os.path.dirname(HERE))
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.what == "report":
        run_report(args.repo, args.pairs)
    else:
        run_imports(args.repo, args.runs)


if __name__ == "__main__":
    main()
