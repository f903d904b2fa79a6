"""Issue 22 round 10: would Jacobi sweeps keep the joint fit's quality?

The passes left in a joint fit whose starts run side by side (round 10) are
those of its longest start: deflation (8 on the memmap test), its sweeps (one
pass per refit: 3 per sweep) and its restart checks. A Jacobi sweep (every
component refitted against the OTHERS' STATE BEFORE THE SWEEP) would let one
pass serve all the refits of a sweep (3 -> 1). Before building that, this
measures what the change of algorithm does to the fits: ``_joint._sweep`` is
replaced by a Jacobi sweep (the refits computed one after the other from the
frozen state: the numbers a batched sweep would give) and the paper
simulation (weights correlated 0 and 0.7) and the fsaverage5 atrophy set
(0.5) are fitted both ways at the point the default fit chose on every trust
set of round 9 (l1_ratio 0.05, tv_ratio 0.1, alpha_rel 1): recovery |cos|
of the matched patterns, Dice of the certified support against the true
support, the joint objective, sweeps, whether they settled, and the largest
relative gap.

``--cost ...``: ``bench_cost20h.py``'s trust bench of the default fit
(recovery, certified Dice, CPU; its arguments follow) with the Jacobi sweeps,
to set beside the same bench's rows of the unchanged tree.

``--fit NAME --data PATH --before DIR``: the joint fit (``SPCATV(3,
alpha_rel=1.0)``, tol 1e-3) of ``bench_datapath``'s set ``cohort`` or ``ooc``
(the .npy at PATH), in each tree in turn (fresh subprocesses, ``--rounds``
times): CPU seconds (every thread of the process), wall seconds, passes and
the largest difference of the components.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_joint22i.py --seeds 3297 3298 --sets paper-0.7
    OMP_NUM_THREADS=1 python benchmarks/bench_joint22i.py --cost --sets paper-0.7 \\
        --seeds 3300 --out /tmp/jacobi
    OMP_NUM_THREADS=1 python benchmarks/bench_joint22i.py --fit ooc --data ooc.npy \\
        --before /tmp/old --rounds 2
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import neurospca.decomposition._joint as joint  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import certified_dice, recovery  # noqa: E402
from bench_trust_defaults import load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition._objective import fitted_objective  # noqa: E402

#: The point the default fit chose on every trust set of round 9 (RESULTS.md).
POINT = dict(l1_ratio=0.05, tv_ratio=0.1, alpha_rel=1.0)

GAUSS_SEIDEL = joint._sweep


def point_fit(X, op, patterns):
    """``SPCATV(3)`` at :data:`POINT` on ``X`` (warnings silenced): the model,
    its CPU seconds and its recovery of ``patterns`` as text (abs cos per
    pattern, certified Dice per pattern)."""
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(3, operator=op, random_state=0, **POINT).fit(X)
    cpu = time.process_time() - t0
    cos = "/".join(f"{c:.3f}" for c in recovery(m.components_, patterns)[0])
    dice = "/".join(f"{c:.2f}" for c in certified_dice(m, patterns))
    return m, cpu, cos, dice


def point_fits(sets, seeds, variants, header):
    """Print ``header`` (a markdown table's first two lines), then for every
    trust set, seed and variant ``(name, setter)`` of ``variants`` call the
    setter and yield ``(name, seed, variant, X, op, point_fit(...))``: the
    variants side by side on the same instance, in one process."""
    print(header, flush=True)
    for name in sets:
        for seed in seeds:
            X, op, patterns = load(name, seed)
            for variant, setter in variants:
                setter()
                yield name, seed, variant, X, op, point_fit(X, op, patterns)


def jacobi_sweep(op, sqnorm, U, V, d, Z, info, kw):
    """:func:`joint._sweep` with every refit against the state before the sweep."""
    old = U.copy(), V.copy(), d.copy(), Z.copy()
    caught, new = [], {}
    for k in range(U.shape[1]):
        if not np.any(old[1][:, k]):
            continue
        new[k] = joint._refit(op, sqnorm, *old, k, info["w"][k], kw)
    for k in range(U.shape[1]):
        if k not in new:  # an empty one comes back against the new state
            joint._revive(op, sqnorm, U, V, d, Z, k, info, kw)
            continue
        u, v, res, warned = new[k]
        caught.extend(w for w in warned if "v-step" in str(w.message))
        U[:, k], V[:, k], d[k] = u, v, res["d"][0]
        Z[:, k] = joint._xv(op, v, kw) if np.any(v) else 0.0
        joint._merge_info(info, k, res)
    return caught


def _row(name, seed, sweep):
    """The fit of set ``name`` at the default's usual point (l1_ratio 0.05,
    tv_ratio 0.1, alpha_rel 1) with ``sweep`` as the joint fit's sweep."""
    X, op, patterns = load(name, seed)
    joint._sweep = sweep
    t = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = SPCATV(3, operator=op, random_state=0, **POINT).fit(X)
    cpu = time.process_time() - t
    joint._sweep = GAUSS_SEIDEL
    return dict(
        cos=recovery(est.components_, patterns)[0],
        dice=certified_dice(est, patterns),
        J=fitted_objective(est, X, op),
        sweeps=est.n_sweeps_,
        settled=not any("did not settle" in str(w.message) for w in caught),
        gap=float(np.nanmax(est.rel_gaps_)),
        cpu=cpu,
    )


def cost():
    """``bench_cost20h.py`` (its arguments after ``--cost``) with Jacobi sweeps."""
    sys.argv.remove("--cost")
    import bench_cost20g
    import bench_cost20h

    joint._sweep = jacobi_sweep
    bench_cost20g._instrument = bench_cost20h._instrument()
    bench_cost20g.main()


def _fit_child(name, path, out):
    """The child of ``--fit``: one joint fit, its seconds, passes, components."""
    import bench_datapath
    from bench_joint22h import _pass_counter, timed_joint_fit

    X, operator = bench_datapath._load(name, path)
    timed_joint_fit(X, operator, _pass_counter(), out)


def fits(args):
    """``--fit``: the trees in turn, ``--rounds`` times."""
    import subprocess
    import tempfile

    root = str(Path(__file__).resolve().parents[1])
    trees = {"before": args.before, "after": root}
    comps = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, tree in trees.items():
                out = str(Path(tmp) / f"{name}{r}.npz")
                child = ["--child", args.fit, args.data, out]
                env = dict(__import__("os").environ, PYTHONPATH=tree)
                subprocess.run([sys.executable, __file__, *child], check=True, env=env)
                got = np.load(out)
                comps[name] = got["comps"]
                wall, cpu, passes = got["res"]
                print(f"round {r} {name}: CPU {cpu:.1f} s, wall {wall:.1f} s, {passes:.0f} passes")
    print(f"max abs diff of the components: {np.abs(comps['before'] - comps['after']).max():.2e}")


def main():
    if "--cost" in sys.argv:
        cost()
        return
    if "--child" in sys.argv:
        _fit_child(*sys.argv[sys.argv.index("--child") + 1 :])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[])
    ap.add_argument("--sets", nargs="+", default=["paper-0.0", "paper-0.7", "fs5-0.5"])
    ap.add_argument("--fit", choices=["cohort", "ooc"], default=None)
    ap.add_argument("--data", default=None)
    ap.add_argument("--before", default=None)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if args.fit:
        fits(args)
        return
    print(
        "| set | seed | |cos| GS ; Jacobi | certified Dice GS ; Jacobi "
        "| J GS / Jacobi (rel. diff) | sweeps GS / Jacobi | settled | max rel gap | CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.sets:
        for seed in args.seeds:
            a, b = _row(name, seed, GAUSS_SEIDEL), _row(name, seed, jacobi_sweep)
            fmt = "/".join
            print(
                f"| {name} | {seed} | {fmt(f'{c:.3f}' for c in a['cos'])} ; "
                f"{fmt(f'{c:.3f}' for c in b['cos'])} | {fmt(f'{c:.2f}' for c in a['dice'])} ; "
                f"{fmt(f'{c:.2f}' for c in b['dice'])} | {a['J']:.6g} / {b['J']:.6g} "
                f"({(b['J'] - a['J']) / abs(a['J']):+.1e}) | {a['sweeps']} / {b['sweeps']} "
                f"| {a['settled']} / {b['settled']} | {a['gap']:.1e} / {b['gap']:.1e} "
                f"| {a['cpu']:.1f} / {b['cpu']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
