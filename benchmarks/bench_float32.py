"""float32 against float64 v-step kernels and solves, interleaved in one process (issue 14).

Instances as in ``bench_kernel.py``: the MNI152 3 mm grid TV (P = 64,030) and
two ``icosphere(7)`` with edge TV (P = 327,684). Printed:

1. the median time of one dual iteration of the difference kernel on 1 thread
   (one chunk) and on 2 threads (two chunks), and of the CSR kernel, float64
   against float32 (the same kernel and starting point; each repeat runs the
   two in turn, the order alternating, so that a change of load hits both);
2. ``prox_dual`` to ``tol`` 1e-3 and 1e-6 with a float64 and a float32 ``y``
   (the float32 one certified in float64): time, iterations and the certified
   relative gap, on 1 and 2 threads, interleaved likewise.

With ``--before-so`` (the compiled ``_prox`` module of a build before the
fused types) it first checks that the float64 outputs of this tree's kernels
equal that build's bit for bit (``np.array_equal``).

Usage::

    python benchmarks/bench_float32.py [--repeat 40] [--n-iter 20]
        [--before-so /tmp/before/_prox.cpython-311-x86_64-linux-gnu.so]
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this tree's neurospca, not an installed one


def kernel_runs(K, op, n_iter, dtype, n_threads, path):
    """A closure running ``n_iter`` iterations of kernel ``path`` in ``dtype``."""
    from neurospca.solvers._base import difference_arrays, operator_arrays

    rng = np.random.default_rng(0)
    P, R = op.n_features, op.n_rows
    y = rng.standard_normal(P).astype(dtype)
    step = 1.0 / op.norm2
    if path == "csr":
        arrs = operator_arrays(op, dtype)
        w, ATw = np.zeros(R, dtype), np.zeros(P, dtype)
        w_old, ATw_old, vq = w.copy(), ATw.copy(), np.empty(P, dtype)

        def run():
            K.dual_iterations(
                n_iter, *arrs, y, 1.0, 0.5, step, w, w_old, ATw, ATw_old, vq, 1.0, True, 1
            )

        return run
    heads, tails, scale, hg, gp, chunk_ptr = difference_arrays(op, n_threads)
    w, ATw = np.zeros(R, dtype), np.zeros(P, dtype)
    w_old, ATw_old = w.copy(), ATw.copy()
    bufs = np.zeros((chunk_ptr.size - 2, P), dtype)
    vq, vw = np.empty(P, dtype), np.empty(P, dtype)

    def run():  # the fused gap every 10 iterations, as prox_dual runs it
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
                True,
                n_threads,
            )

    return run


def float64_outputs(K, op, n_iter=25):
    """Every float64 output of the dual kernels from a fixed start (for the bit check)."""
    from neurospca.solvers._base import difference_arrays, operator_arrays

    rng = np.random.default_rng(1)
    P, R = op.n_features, op.n_rows
    y = rng.standard_normal(P)
    arrs = operator_arrays(op)
    out = []
    w, ATw = np.zeros(R), np.zeros(P)
    w_old, ATw_old, vq, v = w.copy(), ATw.copy(), np.empty(P), np.empty(P)
    out.append(
        K.dual_iterations(
            n_iter, *arrs, y, 0.3, 0.5, 1 / op.norm2, w, w_old, ATw, ATw_old, vq, 1.0, True, 1
        )
    )
    out.append(K.dual_gap_terms(*arrs[:3], arrs[-1], y, ATw, 0.3, 0.5, v))
    out += [w, w_old, ATw, ATw_old, vq, v]
    for n_chunks in (1, 2):
        heads, tails, scale, hg, gp, chunk_ptr = difference_arrays(op, n_chunks)
        w, ATw = np.zeros(R), np.zeros(P)
        w_old, ATw_old = w.copy(), ATw.copy()
        bufs = np.zeros((chunk_ptr.size - 2, P))
        vq, vw = np.empty(P), np.empty(P)
        out.append(
            K.diff_dual_iterations(
                n_iter,
                heads,
                tails,
                scale,
                hg,
                gp,
                chunk_ptr,
                y,
                0.3,
                0.5,
                1 / op.norm2,
                w,
                w_old,
                ATw,
                ATw_old,
                bufs,
                vq,
                vw,
                1.0,
                True,
                True,
                n_chunks,
            )
        )
        out += [w, w_old, ATw, ATw_old, bufs, vq, vw]
    return out


def check_float64_unchanged(before_so, ops):
    from bench_kernel_ab import load_module_file

    from neurospca._kernels import _prox as after

    before = load_module_file(before_so)
    for name, op in ops:
        a, b = float64_outputs(before, op), float64_outputs(after, op)
        same = all(
            np.array_equal(x, z, equal_nan=True)
            if isinstance(x, np.ndarray)
            else np.array_equal(np.asarray(x, float), np.asarray(z, float), equal_nan=True)
            for x, z in zip(a, b, strict=True)
        )
        print(
            f"- {name}: float64 outputs of this tree's kernels equal the build "
            f"{Path(before_so).name}'s bit for bit ({len(a)} outputs): {same}"
        )
        if not same:
            raise SystemExit("float64 outputs changed")


def interleaved(cands, repeat, scale=1.0):
    """Median seconds (times ``scale``) of each closure, run in turn, order alternating."""
    keys = list(cands)
    times = {k: [] for k in keys}
    for i in range(repeat):
        for k in keys if i % 2 == 0 else keys[::-1]:
            t0 = time.perf_counter()
            cands[k]()
            times[k].append((time.perf_counter() - t0) * scale)
    return {k: float(np.median(v)) for k, v in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--n-iter", type=int, default=20)
    parser.add_argument("--solve-repeat", type=int, default=3)
    parser.add_argument("--before-so", type=Path, default=None)
    parser.add_argument("--skip-solves", action="store_true")
    args = parser.parse_args(argv)

    from nilearn.datasets import load_mni152_brain_mask

    import neurospca
    from neurospca._kernels import _prox as K
    from neurospca.solvers import prox_dual

    assert neurospca.__file__.startswith(str(ROOT)), neurospca.__file__
    print(
        f"# bench_float32.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs\n"
    )
    ico = neurospca.icosphere(7)
    ops = [
        (
            "MNI 3 mm grid TV",
            neurospca.tv_from_mask(load_mni152_brain_mask(resolution=3, threshold=0.48)),
        ),
        ("ic7 x 2 edge TV", neurospca.tv_from_hemispheres(ico, ico)[0]),
    ]
    if args.before_so is not None:
        check_float64_unchanged(args.before_so, ops)
        print()

    print("## One dual iteration (ms, medians of interleaved repeats)\n")
    print("| instance | P | kernel | threads | repeats | float64 | float32 | f32 / f64 |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for name, op in ops:
        repeat = args.repeat if op.n_features < 100_000 else max(6, args.repeat // 4)
        for path, nt in (("difference", 1), ("difference", 2), ("csr", 1)):
            cands = {
                dt: kernel_runs(K, op, args.n_iter, dt, nt, path) for dt in (np.float64, np.float32)
            }
            for fn in cands.values():
                fn()  # warm-up
            med = interleaved(cands, repeat, 1e3 / args.n_iter)
            a, b = med[np.float64], med[np.float32]
            print(
                f"| {name} | {op.n_features:,} | {path} | {nt} | {repeat} | {a:.3f} | "
                f"{b:.3f} | {b / a:.2f} |",
                flush=True,
            )

    if args.skip_solves:
        return
    print("\n## prox_dual to tol (float32 y certified in float64)\n")
    print(
        "| instance | tol | threads | f64 s | f64 iter | f64 rel gap | f32 s | f32 iter | "
        "f32 rel gap | f32 converged | f32 / f64 time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for name, op in ops:
        rng = np.random.default_rng(0)
        P = op.n_features
        y = rng.standard_normal(P) + np.where(np.arange(P) < P // 5, 2.0, 0.0)
        y32 = y.astype(np.float32)
        y = y32.astype(np.float64)  # the same problem for both
        p0 = 0.5 * float(y @ y)
        for tol in (1e-3, 1e-6):
            for nt in (1, 2):
                res = {}

                def solve(yy, tol=tol, nt=nt, op=op, res=res):
                    def run():
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            res[yy.dtype] = prox_dual(
                                yy, op, 0.5, 0.3, tol=tol, n_threads=nt, max_iter=20_000
                            )

                    return run

                med = interleaved({"f64": solve(y), "f32": solve(y32)}, args.solve_repeat)
                r64, r32 = res[np.dtype(np.float64)], res[np.dtype(np.float32)]
                print(
                    f"| {name} | {tol:g} | {nt} | {med['f64']:.3f} | {r64.n_iter} | "
                    f"{r64.gap / p0:.1e} | {med['f32']:.3f} | {r32.n_iter} | "
                    f"{r32.gap / p0:.1e} | {r32.converged} | "
                    f"{med['f32'] / med['f64']:.2f} |",
                    flush=True,
                )
    print(f"\n(load average after: {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
