"""The certified finishing before/after a change (issue 22 item 4, round 12).

Runs ``diag_finish22j.py``'s fit (``bench_datapath``'s cube data, 3 components,
``tol=1e-3``, ``random_state=0``) in a subprocess on this tree and on ``--before
TREE``, alternating, and prints per run: the fit's CPU seconds, the finishing's
CPU seconds (``support_time_`` is wall; the CPU is timed around
``_support._finish`` and ``certify_support``), finishing iterations, certified
non-zero / zero / uncertain counts, radius / peak, and the largest difference
of the components between the trees; with ``--pca`` also the CPU seconds of
``PCA(3, svd_solver="randomized")`` on the same data (the issue's denominator).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/diag_finish22l.py cube86 fixed --before /work/main
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, {here!r})
from bench_datapath import SETTINGS, _load
import neurospca.decomposition._support as S
import neurospca.decomposition._joint_certify as J
from neurospca import SPCATV
warnings.simplefilter("ignore")
cpu = {{"finish": 0.0, "certify": 0.0}}
iters = []
def timed(mod, name, key):
    func = getattr(mod, name)
    def wrapped(*a, **k):
        t0 = time.process_time()
        out = func(*a, **k)
        cpu[key] += time.process_time() - t0
        if key == "finish":
            iters.append(int(out[3]))
        return out
    setattr(mod, name, wrapped)
timed(S, "_finish", "finish")
timed(S, "certify_support", "certify")
timed(J, "certify_support", "certify")
X, op = _load({data!r}, None)
m = SPCATV(3, operator=op, tol=1e-3, random_state=0, **SETTINGS[{setting!r}])
t0 = time.process_time()
m.fit(X)
fit = time.process_time() - t0
np.save({out!r}, m.components_)
peak = np.abs(m.components_).max(axis=1) / np.linalg.norm(m.components_, axis=1)
import neurospca
print(json.dumps(dict(src=neurospca.__file__, fit=fit, finish=cpu["finish"],
    certify=cpu["certify"], iters=iters,
    nonzero=m.certified_support_.sum(1).tolist(), zero=m.certified_zeros_.sum(1).tolist(),
    uncertain=m.n_uncertain_.tolist(),
    radius_peak=np.round(m.support_radius_ / peak, 5).tolist())))
"""


PCA_CHILD = r"""
import json, sys, time
sys.path.insert(0, {here!r})
from bench_datapath import _load
from sklearn.decomposition import PCA
X, _ = _load({data!r}, None)
t0 = time.process_time()
PCA(3, svd_solver="randomized", random_state=0).fit(X)
print(json.dumps(dict(pca=time.process_time() - t0)))
"""


def run(tree, data, setting, out):
    """One fit on ``tree`` in a fresh process; its JSON line."""
    code = (PCA_CHILD if setting == "pca" else CHILD).format(
        here=HERE, data=data, setting=setting, out=out
    )
    env = dict(os.environ, PYTHONPATH=tree)
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tree, capture_output=True, text=True, check=True
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="cube86 or cube124")
    ap.add_argument("setting", choices=["fixed", "joint"])
    ap.add_argument("--before", required=True, help="the tree before the change")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--pca", action="store_true", help="also time a randomized PCA")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    for rep in range(args.repeats):
        comps = {}
        for label, tree in (("before", args.before), ("after", ROOT)):
            out = os.path.join(tmp, f"{label}.npy")
            row = run(tree, args.data, args.setting, out)
            comps[label] = np.load(out)
            print(
                f"{args.data} {args.setting} run {rep + 1} {label}: {json.dumps(row)}", flush=True
            )
        b, a = comps["before"], comps["after"]
        signs = np.sign(np.sum(a * b, axis=1))[:, None]
        print(f"  components max |after - before| {np.abs(a - signs * b).max():.2e}", flush=True)
        if args.pca:  # randomized PCA of the same data, CPU seconds (the ratio's denominator)
            print(f"  {json.dumps(run(ROOT, args.data, 'pca', ''))}", flush=True)


if __name__ == "__main__":
    main()
