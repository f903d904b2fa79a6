"""Issue 23 A/B: the five estimators' fit times, old build against new.

Each measurement is one fresh subprocess (``--one BUILD CASE``) that imports
neurospca from BUILD, makes the case's data, fits once untimed (warm-up:
imports, kernel loading, caches) and prints the time of one more fit. The
driver alternates the builds (old/new, then new/old) for every case and
repeat, so load drifts on a shared machine hit both alike; it prints the
medians and the new/old ratio. Single-threaded BLAS and OpenMP.

    python benchmarks/bench_contract_ab.py --old /work/wt-base --new . --repeats 5
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = ("spcatv_fmri", "sspca", "nspca", "ktrace", "dictionary")  # + "spcatv_fmri_auto" (110 s)

#: Fits per subprocess (its best is reported) for the cases under a second.
FITS = {"sspca": 7, "nspca": 7, "dictionary": 7}


def _case(name):
    """(estimator, X) of a case, built with the neurospca on sys.path."""
    import numpy as np

    import neurospca as ns
    from neurospca.datasets import make_fmri_like, make_structured_images

    if name.startswith("spcatv_fmri"):
        X, _, mask = make_fmri_like(83, random_state=1001)
        tv = ns.tv_from_mask(mask)
        if name == "spcatv_fmri":
            return ns.SPCATV(3, alpha_rel=1.0, operator=tv, stability=False), X
        return ns.SPCATV(3, operator=tv), X
    if name == "sspca":
        X = make_structured_images(0)[0]
        return ns.SSPCA(3, groups=ns.grid_halfspace_groups((16, 16)), random_state=0), X
    rng = np.random.default_rng(0)
    if name == "nspca":
        X = rng.standard_normal((200, 60)) @ rng.standard_normal((60, 60)) * 0.3
        return ns.NonnegativeSparsePCA(3, alpha=1.0, random_state=0), X
    if name == "ktrace":
        p = 60
        a, b = np.zeros(p), np.zeros(p)
        a[:5], b[20:25] = 1 / np.sqrt(5), 1 / np.sqrt(5)
        X = (
            rng.standard_normal((300, 1)) * 2 * a
            + rng.standard_normal((300, 1)) * 1.5 * b
            + 0.3 * rng.standard_normal((300, p))
        )
        return ns.KTraceNormPCA(k=5, alpha=0.05, random_state=0), X
    if name == "dictionary":
        X = rng.standard_normal((300, 64))
        tree = ns.balanced_tree((3, 2))
        return ns.HierarchicalDictionaryLearning(tree, alpha=0.1, max_iter=10, random_state=0), X
    raise ValueError(name)


def one(build, name):
    sys.path.insert(0, os.path.abspath(build))
    import warnings

    from sklearn.base import clone

    warnings.simplefilter("ignore")
    est, X = _case(name)
    clone(est).fit(X)  # warm-up
    best = float("inf")
    for _ in range(FITS.get(name, 1)):  # best of a few fits for the short cases
        t0 = time.perf_counter()
        clone(est).fit(X)
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old", default="/work/wt-base")
    parser.add_argument("--new", default=".")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--one", nargs=2, metavar=("BUILD", "CASE"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    times = {(c, b): [] for c in args.cases for b in ("old", "new")}
    for rep in range(args.repeats):
        for case in args.cases:
            order = ("old", "new") if rep % 2 == 0 else ("new", "old")
            for b in order:
                build = args.old if b == "old" else args.new
                out = subprocess.run(
                    [sys.executable, __file__, "--one", build, case],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                times[case, b].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(f"rep {rep} {case} {b} {times[case, b][-1]:.3f} s", flush=True)
    print("\n| case | old median (s) | new median (s) | new / old | old runs | new runs |")
    print("|---|---:|---:|---:|---|---|")
    for case in args.cases:
        o, n = statistics.median(times[case, "old"]), statistics.median(times[case, "new"])
        fmt = " ".join(f"{t:.3f}" for t in times[case, "old"])
        fmt2 = " ".join(f"{t:.3f}" for t in times[case, "new"])
        print(f"| {case} | {o:.3f} | {n:.3f} | {n / o:.3f} | {fmt} | {fmt2} |")


if __name__ == "__main__":
    main()
