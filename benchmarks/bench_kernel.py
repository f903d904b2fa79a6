"""Cost of one v-step dual iteration, thread scaling and time to 1e-6 (issue 14 part 3).

Part 1 (per iteration, same process): on the MNI152 3 mm mask grid TV
(P = 64,030) and on two full-size fsaverage-like icospheres with edge TV
(``icosphere(7)`` twice through ``tv_from_hemispheres``, P = 327,684), the
median time of

- one scipy CSR product pair ``A v``, ``A^T w`` (the reference),
- one iteration of the general CSR dual kernel (``dual_iterations``),
- one iteration of the difference kernel (``diff_dual_iterations``) on 1 and
  on 2 OpenMP threads, without and with the fused gap every 10 iterations, in
  the layout ``prox_dual`` runs (the operator's locality order when it has
  one, halo buffers between chunks) and, for 2 threads, in the user's order
  with a full scatter buffer per chunk (the layout before the locality order);
- the ceiling of two threads on this machine at that moment: two 1-thread
  kernels run at once from two Python threads (no synchronisation between
  them); their throughput over one alone bounds what 2 OpenMP threads can
  gain. On a machine shared with other jobs it can be ~1 (Linux autogroup
  scheduling splits the cores between sessions whatever their nice values).

Part 2 (fits, each in a fresh subprocess, in this same run): ``spca_tv`` with
3 components at tol 1e-6 on the fMRI-sized instance (N = 83, P = 64,030) and
``SPCATV`` on the cortical simulation of ``bench_cortex.py`` (N = 133,
P = 314,790), for the code *before* this work (``--before-tree``: a checkout
of the base commit ``1e61741``, built in place; its own ``benchmarks/bench_cortex.py``
makes its data) and for this tree on 1 and 2 threads.

Usage::

    python benchmarks/bench_kernel.py [--before-tree /tmp/kernel_before] [--skip-fits]
        [--repeat 7] [--tol 1e-6] [--fit-repeat 1] [--cases fmri3d cortical]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # this tree's neurospca, not an installed one

FIT_CODE = r"""
import json, sys, time, warnings
sys.path.insert(0, {tree!r}); sys.path.insert(1, {bench!r})
import numpy as np
import neurospca
assert neurospca.__file__.startswith({tree!r}), neurospca.__file__
n_threads = {n_threads!r}
if n_threads is not None:
    from neurospca.solvers import set_n_threads
    set_n_threads(n_threads)
warnings.simplefilter("ignore")
import neurospca.solvers.prox as _sp
_name = "_dual_fast"  # the compiled dual v-step (issue 15 layout)
if not hasattr(_sp, _name):  # the base commit: the estimators call prox_dual
    import neurospca.decomposition.spcatv as _sp
    _name = "prox_dual"
_inner = getattr(_sp, _name)
VSTEP = [0.0]
def _timed_vstep(*a, **k):  # time spent in the v-step solver
    t0 = time.perf_counter()
    try:
        return _inner(*a, **k)
    finally:
        VSTEP[0] += time.perf_counter() - t0
setattr(_sp, _name, _timed_vstep)
def example_weights(X):  # l1_max (0.05, 1, 0.1), as neurospca._commands.penalties
    Xc = X - X.mean(axis=0)
    l1_max = np.sqrt(np.einsum("ij,ij->j", Xc, Xc)).max() / X.shape[0]
    return 0.05 * l1_max, l1_max, 0.1 * l1_max
if {case!r} == "fmri3d":
    from neurospca.datasets import make_fmri_like
    X, _, mask = make_fmri_like(random_state=0)
    Xc = X - X.mean(axis=0)
    op = neurospca.tv_from_mask(mask)
    l1, l2, tv = example_weights(X)
    neurospca.spca_tv(Xc, 3, l1=l1, l2=l2, tv=tv, operator=op, tol=1e-3)  # warm-up
    VSTEP[0] = 0.0
    t0 = time.perf_counter()
    _, V, info = neurospca.spca_tv(Xc, 3, l1=l1, l2=l2, tv=tv, operator=op, tol={tol!r},
                                   max_inner_iter=10**7)
    dt = time.perf_counter() - t0
    out = dict(time=dt, inner=int(np.sum(info["n_inner_iter"])), vstep=VSTEP[0],
               gap=float(np.nanmax(info["gaps"])), V=V[::97].T.tolist())
else:
    from bench_cortex import simulate
    coords, faces, masks, X, patterns = simulate(133, 7)
    op, hemis = neurospca.tv_from_hemispheres((coords, faces), (coords, faces),
                                              masks[0], masks[1], kind="edges")
    l1, l2, tv = example_weights(X)
    alpha = l1 + l2 + tv
    est = neurospca.SPCATV(n_components=3, alpha=alpha, l1_ratio=l1 / alpha,
                           tv_ratio=tv / alpha, operator=op, tol={tol!r})
    VSTEP[0] = 0.0
    t0 = time.perf_counter()
    est.fit(X)
    dt = time.perf_counter() - t0
    out = dict(time=dt, inner=int(np.sum(est.n_inner_iter_)),
               gap=float(np.max(est.dual_gaps_)),
               vstep=VSTEP[0],
               V=est.components_[:, ::487].tolist())
print("RESULT" + json.dumps(out))
"""


def iteration_costs(name, op, repeat, n_inner=50):
    """Per-iteration times (seconds) of the scipy pair and the kernels.

    The candidates are timed in turn within each repeat (interleaved), so that
    a change of the machine's load hits all of them; medians over repeats.
    """
    import threading

    from neurospca._kernels import _prox as K
    from neurospca.solvers._base import (
        difference_arrays,
        difference_halos,
        locality_order,
        operator_arrays,
    )

    rng = np.random.default_rng(0)
    P, R = op.n_features, op.n_rows
    y = rng.standard_normal(P)
    l1, radius, step = 1.0, 0.5, 1.0 / op.norm2
    A, At = op.matrix, op.matrix_t
    v, w0 = rng.standard_normal(P), rng.standard_normal(R) * 0.1
    n_inner = n_inner // 10 * 10
    arrs = operator_arrays(op)
    gptr = arrs[-1]

    def pair():
        for _ in range(n_inner):
            A @ v
            At @ w0

    def csr(with_gap):  # today's prox_dual: a separate gap evaluation every 10 iterations
        w = np.zeros(R)
        ATw = np.zeros(P)
        w_old, ATw_old, vq, vv = w.copy(), ATw.copy(), np.empty(P), np.empty(P)
        t = 1.0
        for _ in range(n_inner // 10):
            if with_gap:
                K.dual_gap_terms(arrs[0], arrs[1], arrs[2], gptr, y, ATw, l1, radius, vv)
            t, _ = K.dual_iterations(
                10, *arrs, y, l1, radius, step, w, w_old, ATw, ATw_old, vq, t, True, 1
            )

    def diff(with_gap, nt, layout="prox"):
        # "prox": as prox_dual runs it; "user": user's order, full buffers
        reorder = layout == "prox" and locality_order(op) is not None
        heads, tails, scale, hg, gp, chunk_ptr = difference_arrays(op, nt, reorder=reorder)
        yk = y[locality_order(op).features] if reorder else y
        halo = difference_halos(op, nt, reorder=reorder) if layout == "prox" else None
        w = np.zeros(R)
        ATw = np.zeros(P)
        w_old, ATw_old = w.copy(), ATw.copy()
        if halo is None:
            bufs, extra = np.zeros((chunk_ptr.size - 2, P)), ()
        else:
            bufs, extra = np.zeros((0, P)), (halo[0], halo[1], np.zeros(halo[2]))
        vq, vw = np.empty(P), np.empty(P)
        t = 1.0
        for _ in range(n_inner // 10):
            t, _, sw, *_ = K.diff_dual_iterations(
                10,
                heads,
                tails,
                scale,
                hg,
                gp,
                chunk_ptr,
                yk,
                l1,
                radius,
                step,
                w,
                w_old,
                ATw,
                ATw_old,
                bufs,
                vq,
                vw,
                t,
                True,
                with_gap,
                nt,
                *extra,
            )
            if sw:
                ATw, ATw_old = ATw_old, ATw
                w, w_old = w_old, w

    def two_at_once():  # the ceiling: two independent 1-thread kernels at once
        runs = [threading.Thread(target=diff, args=(False, 1)) for _ in range(2)]
        for r in runs:
            r.start()
        for r in runs:
            r.join()

    cands = {"pair": pair, "csr": lambda: csr(False), "csr+gap": lambda: csr(True)}
    for nt in (1, 2):
        cands[f"diff{nt}"] = lambda nt=nt: diff(False, nt)
        cands[f"diff{nt}+gap"] = lambda nt=nt: diff(True, nt)
    cands["diff2 user+gap"] = lambda: diff(True, 2, "user")
    cands["two 1-thr at once"] = two_at_once
    times = {k: [] for k in cands}
    for i in range(repeat):
        for k, fn in list(cands.items())[:: 1 if i % 2 == 0 else -1]:
            t0 = time.perf_counter()
            fn()
            times[k].append((time.perf_counter() - t0) / n_inner)
    row = {"instance": name, "P": P, "rows": R}
    row.update({k: float(np.median(v)) for k, v in times.items()})
    return row


def run_fit(tree, case, n_threads, tol, blas_threads=1):
    code = FIT_CODE.format(
        tree=str(tree),
        bench=str(Path(tree) / "benchmarks"),
        case=case,
        n_threads=n_threads,
        tol=tol,
    )
    env = dict(
        os.environ,
        OPENBLAS_NUM_THREADS=str(blas_threads),
        MKL_NUM_THREADS=str(blas_threads),
        OMP_NUM_THREADS=str(n_threads or 1),
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(tree)
    )
    for line in res.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[6:])
    raise RuntimeError(f"fit failed in {tree}:\n{res.stderr[-3000:]}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before-tree", type=Path, default=None)
    parser.add_argument("--skip-fits", action="store_true")
    parser.add_argument("--skip-iterations", action="store_true")
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--fit-repeat", type=int, default=1)
    parser.add_argument(
        "--cases", nargs="+", default=["fmri3d", "cortical"], choices=["fmri3d", "cortical"]
    )
    args = parser.parse_args(argv)

    import neurospca

    print(
        f"# bench_kernel.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {os.getloadavg()[0]:.2f}, numpy {np.__version__}"
    )
    env = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    try:
        with open("/proc/self/autogroup") as f:
            env["autogroup"] = f.read().strip()
    except OSError:  # not Linux, or no autogroup
        pass
    print(f"(environment: {env})")
    print("```")
    print(
        subprocess.run(
            "lscpu | head -20", shell=True, capture_output=True, text=True
        ).stdout.rstrip()
    )
    print("```")

    if not args.skip_iterations:
        from nilearn.datasets import load_mni152_brain_mask

        ops = [
            (
                "MNI 3 mm grid TV",
                neurospca.tv_from_mask(load_mni152_brain_mask(resolution=3, threshold=0.48)),
            )
        ]
        ico = neurospca.icosphere(7)
        ops.append(("ic7 x 2 edge TV", neurospca.tv_from_hemispheres(ico, ico)[0]))
        print(
            "\nOne dual iteration (ms, median of "
            f"{args.repeat}); ratios to one scipy CSR pair A v, A^T w\n"
        )
        print(
            "| instance | P | rows | scipy pair | CSR iter | CSR iter + gap/10 | diff 1 thr "
            "| diff 1 thr + fused gap/10 | diff 2 thr | diff 2 thr + fused gap/10 "
            "| diff1 / pair | diff2 / pair | 2-thread speed-up "
            "| diff 2 thr + gap, user order & full buffers | its speed-up "
            "| ceiling: two 1-thr at once |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, op in ops:
            r = iteration_costs(name, op, args.repeat)
            ms = {k: 1e3 * v for k, v in r.items() if isinstance(v, float)}
            print(
                f"| {name} | {r['P']:,} | {r['rows']:,} | {ms['pair']:.3f} | {ms['csr']:.3f} "
                f"| {ms['csr+gap']:.3f} | {ms['diff1']:.3f} | {ms['diff1+gap']:.3f} "
                f"| {ms['diff2']:.3f} | {ms['diff2+gap']:.3f} "
                f"| {r['diff1+gap'] / r['pair']:.2f} | {r['diff2+gap'] / r['pair']:.2f} "
                f"| {r['diff1+gap'] / r['diff2+gap']:.2f} | {ms['diff2 user+gap']:.3f} "
                f"| {r['diff1+gap'] / r['diff2 user+gap']:.2f} "
                f"| {2 * r['diff1'] / r['two 1-thr at once']:.2f} |",
                flush=True,
            )
        print(f"(load average after: {os.getloadavg()[0]:.2f})")

    if args.skip_fits:
        return
    trees = []
    if args.before_tree is not None:
        trees.append(("before (base commit)", args.before_tree, None, 1))
    trees += [
        ("after, 1 thread", ROOT, 1, 1),
        ("after, 2 threads", ROOT, 2, 1),
        ("after, 2 threads, BLAS on 2 threads", ROOT, 2, 2),
    ]
    print(
        f"\nFits at tol {args.tol:g} (fresh subprocess each; BLAS on 1 thread unless "
        f"said; best of {args.fit_repeat})\n"
    )
    print(
        "| instance | code | fit s | v-step s | inner iterations | max gap "
        "| fit ratio before / this | v-step ratio | max abs diff of loadings (up to sign) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for case in args.cases:
        base, base_v, base_V = None, None, None
        for label, tree, nt, blas in trees:
            outs = [run_fit(tree, case, nt, args.tol, blas) for _ in range(args.fit_repeat)]
            out = min(outs, key=lambda o: o["time"])
            if base is None:
                base, base_v, base_V = out["time"], out["vstep"], np.asarray(out["V"])
            V = np.asarray(out["V"])  # (k, subsampled features); signs are conventions
            dV = max(
                min(np.abs(a - b).max(), np.abs(a + b).max())
                for a, b in zip(V, base_V, strict=True)
            )
            print(
                f"| {case} | {label} | {out['time']:.2f} | {out['vstep']:.2f} | "
                f"{out['inner']} | {out['gap']:.3e} | {base / out['time']:.2f} | "
                f"{base_v / out['vstep']:.2f} | {dV:.1e} |",
                flush=True,
            )
    print(f"(load average after: {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
