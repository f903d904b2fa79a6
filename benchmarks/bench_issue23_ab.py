"""Interleaved A/B of another build against this tree (issue 23: same speed after the split).

Each measurement is one fresh subprocess that imports one build, prepares the
inputs (untimed) and times one call; the builds alternate (ABAB, the order
swapped every repeat) so that a change of the machine's load hits both.
Tasks: ``SPCATV(3, alpha_rel=1, stability=False).fit`` on the fMRI-like set
(P = 64,030), ``spca_tv`` with CONESTA on the MNI152 3 mm mask, and
``prox_dual`` on its grid TV.

Usage::

    python benchmarks/bench_issue23_ab.py --before /work/wt-base [--repeat 5]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TASKS = ("SPCATV(3).fit, fMRI-like", "spca_tv CONESTA, MNI 3 mm", "prox_dual, MNI 3 mm TV")


def _child(task):
    """Run ``task`` once in this process (the build on sys.path[0]); print its seconds."""
    import warnings

    warnings.simplefilter("ignore")
    import neurospca
    from neurospca.datasets import make_fmri_like
    from neurospca.solvers import prox_dual

    X, _, mask = make_fmri_like()
    op = neurospca.tv_from_mask(mask)
    Xc = X - X.mean(axis=0)
    l1_max = float(np.sqrt((Xc * Xc).sum(axis=0)).max()) / X.shape[0]
    if task == TASKS[0]:
        model = neurospca.SPCATV(3, operator=op, alpha_rel=1.0, stability=False)
        t0 = time.perf_counter()
        model.fit(X)
    elif task == TASKS[1]:
        l1, l2, tv = l1_max * 0.05, l1_max, l1_max * 0.1
        t0 = time.perf_counter()
        neurospca.spca_tv(Xc, 3, l1=l1, l2=l2, tv=tv, operator=op, solver="conesta", tol=1e-2)
    else:
        y = np.random.default_rng(0).standard_normal(op.n_features)
        t0 = time.perf_counter()
        prox_dual(y, op, 0.1, 0.5, tol=1e-4)
    print(json.dumps({"seconds": time.perf_counter() - t0, "file": neurospca.__file__}))


def _measure(tree, task):
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, __file__, "--child", task],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    res = json.loads(out.strip().splitlines()[-1])
    if not res["file"].startswith(str(tree)):
        raise RuntimeError(f"{tree}: imported {res['file']}")
    return res["seconds"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child")
    parser.add_argument("--only", help="run the tasks whose name contains this text")
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return
    trees = {"before": args.before.resolve(), "after": ROOT}
    print(
        f"# bench_issue23_ab.py - {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {os.getloadavg()[0]:.2f}; seconds, medians of {args.repeat} "
        "interleaved repeats (one subprocess each)\n"
    )
    print("| task | before (808b191) | after | after / before | all before | all after |")
    print("|---|---:|---:|---:|---|---|")
    for task in [t for t in TASKS if args.only is None or args.only in t]:
        times = {"before": [], "after": []}
        for i in range(args.repeat):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            for key in order:
                times[key].append(_measure(trees[key], task))
        mb, ma = np.median(times["before"]), np.median(times["after"])
        fmt = " ".join(f"{t:.3f}" for t in times["before"])
        fma = " ".join(f"{t:.3f}" for t in times["after"])
        print(f"| {task} | {mb:.3f} | {ma:.3f} | {ma / mb:.3f} | {fmt} | {fma} |", flush=True)
    print(f"\n(load average after: {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
