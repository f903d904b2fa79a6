"""A/B of the compiled v-step kernels of another build against this tree's, in one process.

On a loaded machine two benchmark runs minutes apart differ by more than a
refactor does; here the two builds run interleaved (ABAB, the order
alternating each repeat) on the same arrays, so that a change of load hits
both. ``--before-so`` is the compiled prox module of the other build (for the
layout before issue 15: ``<tree>/neurospca/solvers/_kernels.*.so``); it must
take the same arguments as :mod:`neurospca._kernels._prox`. Instances as in
``bench_kernel.py``: the MNI152 3 mm grid TV and two ``icosphere(7)`` with
edge TV.

Usage::

    python benchmarks/bench_kernel_ab.py \
        --before-so /tmp/before/neurospca/solvers/_kernels.cpython-311-x86_64-linux-gnu.so
        [--repeat 160] [--n-iter 20]
"""

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this tree's neurospca, not an installed one


def load_module_file(path):
    """Import a compiled module from a file under the name its init function has."""
    name = Path(path).name.split(".")[0]
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def candidates(K, op, n_iter):
    """Timed closures of the kernels of module ``K`` on operator ``op``."""
    from neurospca.solvers._base import difference_arrays, operator_arrays

    rng = np.random.default_rng(0)
    P, R = op.n_features, op.n_rows
    y = rng.standard_normal(P)
    step = 1.0 / op.norm2
    arrs = operator_arrays(op)

    def csr():
        w, ATw = np.zeros(R), np.zeros(P)
        K.dual_iterations(
            n_iter,
            *arrs,
            y,
            1.0,
            0.5,
            step,
            w,
            w.copy(),
            ATw,
            ATw.copy(),
            np.empty(P),
            1.0,
            True,
            1,
        )

    def diff(n_threads, with_gap):
        heads, tails, scale, hg, gp, _ = difference_arrays(op, 1)
        chunk_ptr = difference_arrays(op, n_threads)[-1]
        w, ATw = np.zeros(R), np.zeros(P)
        w_old, ATw_old = w.copy(), ATw.copy()
        bufs = np.zeros((chunk_ptr.size - 2, P))
        vq, vw = np.empty(P), np.empty(P)

        def run():
            for _ in range(n_iter // 10):
                K.diff_dual_iterations(
                    10,
                    heads,
                    tails,
                    scale,
                    hg,
                    gp,
                    chunk_ptr,
                    y,
                    1.0,
                    0.5,
                    step,
                    w,
                    w_old,
                    ATw,
                    ATw_old,
                    bufs,
                    vq,
                    vw,
                    1.0,
                    True,
                    with_gap,
                    n_threads,
                )

        return run

    def fista():
        v = rng.standard_normal(P)
        K.fista_iterations(
            n_iter, 2, *arrs, y, 0.7, 0.1, 1e-2, 0.1, v, v.copy(), np.empty(P), np.empty(R)
        )

    return {
        "CSR iter": csr,
        "diff 1 thr": diff(1, False),
        "diff 1 thr + fused gap/10": diff(1, True),
        "diff 2 chunks 2 thr": diff(2, False),
        "diff 2 chunks 2 thr + fused gap/10": diff(2, True),
        "CONESTA FISTA iter": fista,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-so", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=160)
    parser.add_argument("--n-iter", type=int, default=20)
    args = parser.parse_args(argv)

    from nilearn.datasets import load_mni152_brain_mask

    import neurospca
    from neurospca._kernels import _prox as after

    before = load_module_file(args.before_so)
    print(
        f"# bench_kernel_ab.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {os.getloadavg()[0]:.2f}; ms per iteration, medians of "
        f"interleaved repeats\n"
    )
    ico = neurospca.icosphere(7)
    ops = [
        (
            "MNI 3 mm grid TV",
            neurospca.tv_from_mask(load_mni152_brain_mask(resolution=3, threshold=0.48)),
            args.repeat,
        ),
        ("ic7 x 2 edge TV", neurospca.tv_from_hemispheres(ico, ico)[0], max(5, args.repeat // 8)),
    ]
    print("| instance | kernel | repeats | before | after | after / before |")
    print("|---|---|---:|---:|---:|---:|")
    for name, op, repeat in ops:
        cb, ca = candidates(before, op, args.n_iter), candidates(after, op, args.n_iter)
        for key in cb:
            tb, ta = [], []
            for i in range(repeat):
                order = ((cb[key], tb), (ca[key], ta))
                for fn, times in order if i % 2 == 0 else order[::-1]:
                    t0 = time.perf_counter()
                    fn()
                    times.append((time.perf_counter() - t0) / args.n_iter * 1e3)
            mb, ma = np.median(tb), np.median(ta)
            print(
                f"| {name} | {key} | {repeat} | {mb:.3f} | {ma:.3f} | {ma / mb:.3f} |", flush=True
            )
    print(f"(load average after: {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
