"""Issue 22 round 13: the joint fit's starts and their passes (branch sweeps22m).

The joint fit at a fixed penalty (``SPCATV(3, alpha_rel=1.0)``, tol 1e-3) in
fresh subprocesses, on the code of this tree with the starts' flags of
``neurospca.decomposition._joint`` set per variant, or on another tree
(``--before``): CPU seconds (every thread), passes over X (as
``bench_datapath``: bytes of the row blocks in units of X), sweeps, the
settled joint objective and the largest difference of the components to the
first variant's.

Variants: ``main`` (``--before`` tree), ``branch`` (this tree, defaults),
``nodefl`` (``DEFLATION_SWEEPS=False``: deflation's fit a candidate as it is),
``sbs`` (that and ``PCA_START_SIDE_BY_SIDE=True``: the subspace start's
components side by side, one shared pass). Data: ``bench_datapath``'s sets
(``cube<n>``: N = 100 float64 in memory; ``memmap<n>``: that cube with N =
3,000 as a float32 ``.npy`` memmap, where the starts share their passes;
``test``: the memmap of ``tests/test_datapath.py``'s pass count, 3,000 x 12^3;
``ooc``: ``bench_datapath``'s 2,000 x 327,684 float32 memmap, ``--ooc PATH``).

``--recovery SET ... --seeds S ...``: in one process, each variant (not
``main``) of the joint fit at the point the default fit chose on every trust
set since round 9 (l1_ratio 0.05, tv_ratio 0.1, alpha_rel 1), float64 in
memory (the Gram path: the starts one after the other): recovery |cos|,
certified Dice, J, sweeps, CPU.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_sweeps22m.py --sets memmap24 cube86 \\
        --variants main branch nodefl sbs --before /work/main
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

FLAGS = {
    "main": {},
    "branch": {},
    "nodefl": {"DEFLATION_SWEEPS": False},
    "nodefl1by1": {"DEFLATION_SWEEPS": False, "_lockstep.SIDE_BY_SIDE": "memmap"},
    "sbs": {"DEFLATION_SWEEPS": False, "PCA_START_SIDE_BY_SIDE": True},
    # issue 22 round 14 (joint22n): the starts side by side in memory too
    "share": {"DEFLATION_SWEEPS": False, "_lockstep.SIDE_BY_SIDE": True},
    "sbsshare": {
        "DEFLATION_SWEEPS": False,
        "PCA_START_SIDE_BY_SIDE": True,
        "_lockstep.SIDE_BY_SIDE": True,
    },
    "sharethr": {
        "DEFLATION_SWEEPS": False,
        "_lockstep.SIDE_BY_SIDE": True,
        "_lockstep.MAIN_THREAD_START": False,
    },
    "keep": {"DEFLATION_SWEEPS": False, "_lockstep.SIDE_BY_SIDE": True, "KEEP_RETURNED": True},
    "defl": {"DEFLATION_SWEEPS": True},
    "noshare": {"_lockstep.SIDE_BY_SIDE": "memmap"},
    "deflshare": {"DEFLATION_SWEEPS": True, "_lockstep.SIDE_BY_SIDE": True},
}


def set_flags(flags):
    """Set ``{"KEY" or "module.KEY": value}`` on ``_joint`` (or that module of
    ``neurospca.decomposition``)."""
    import importlib

    for key, val in flags.items():
        mod, _, name = key.rpartition(".")
        mod = importlib.import_module("neurospca.decomposition." + (mod or "_joint"))
        setattr(mod, name, val)


def child(name, variant, path, out):
    import warnings

    import bench_datapath

    from neurospca import SPCATV, tv_from_mask
    from neurospca.decomposition._objective import fitted_objective

    set_flags(FLAGS[variant])
    warnings.simplefilter("ignore")
    if name == "ooc":
        X, operator = bench_datapath._load("ooc", path)
    elif name.startswith("memmap") or name == "test":
        n = 12 if name == "test" else int(name[6:])  # test: test_datapath.SIDE
        X, operator = np.load(path, mmap_mode="r"), tv_from_mask(np.ones((n,) * 3, bool))
    else:
        X, operator = bench_datapath._load(name, None)
    passes = bench_datapath._count_passes(X.nbytes)
    t0, ru0 = time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
    m = SPCATV(3, operator=operator, alpha_rel=1.0, tol=1e-3, random_state=0).fit(X)
    res = dict(cpu=time.process_time() - t0, passes=passes(), sweeps=int(m.n_sweeps_))
    ru = resource.getrusage(resource.RUSAGE_SELF)
    res["sys"], res["faults"] = ru.ru_stime - ru0.ru_stime, ru.ru_minflt - ru0.ru_minflt
    big = name == "ooc"  # no float64 copy of 2.6 GB
    res["J"] = np.nan if big else float(fitted_objective(m, np.asarray(X, np.float64), operator))
    res["gap"] = float(np.nanmax(m.rel_gaps_))
    np.save(out, m.components_)
    res["radius"] = np.asarray(m.support_radius_, float).tolist()
    print(json.dumps(res))


def moved(comps, ref, radius):
    """Per component: ``||c_k - ref_k||_2`` over the reference's certified
    ``support_radius_[k]`` (how far the answer moved, in certified radii)."""
    if radius is None:
        return "-"
    diff = np.linalg.norm(np.asarray(comps) - np.asarray(ref), axis=1)
    return "/".join(f"{d / r:.2g}" for d, r in zip(diff, radius, strict=True))


def recovery(sets, seeds, variants):
    """``--recovery``: the variants side by side on the trust sets (one process)."""

    from bench_joint22i import point_fits

    from neurospca.decomposition._objective import fitted_objective

    saved = {key: _get(key) for f in FLAGS.values() for key in f}
    header = (
        "| set | seed | variant | abs cos | certified Dice | J (rel. to first) | sweeps | CPU s "
        "| L2 diff / first's radius |\n|---|---|---|---|---|---|---:|---:|---|"
    )
    setters = [(v, lambda v=v: set_flags(dict(saved, **FLAGS[v]))) for v in variants]
    for name, seed, variant, X, op, fit in point_fits(sets, seeds, setters, header):
        m, cpu, cos, dice = fit
        J = fitted_objective(m, X, op)
        if variant == variants[0]:
            first, ref = J, (m.components_, m.support_radius_)
        print(
            f"| {name} | {seed} | {variant} | {cos} | {dice} | {J:.9g} "
            f"({(J - first) / abs(first):+.1e}) | {m.n_sweeps_} | {cpu:.2f} "
            f"| {moved(m.components_, *ref)} |",
            flush=True,
        )
    set_flags(saved)


def _get(key):
    import importlib

    mod, _, name = key.rpartition(".")
    return getattr(importlib.import_module("neurospca.decomposition." + (mod or "_joint")), name)


def main():
    if "--recovery" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--recovery", nargs="+")
        ap.add_argument("--seeds", nargs="+", type=int)
        ap.add_argument("--variants", nargs="+", default=["branch", "nodefl", "sbs"])
        args = ap.parse_args()
        recovery(args.recovery, args.seeds, args.variants)
        return
    if "--child" in sys.argv:
        child(*sys.argv[sys.argv.index("--child") + 1 :])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="+", default=["memmap24", "cube86"])
    ap.add_argument("--variants", nargs="+", default=["main", "branch", "nodefl", "sbs"])
    ap.add_argument("--before", default="/work/main")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--ooc", default=None, help="the .npy of bench_datapath's set ooc (kept)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_sweeps22m_")
    print(
        "| data | round | variant | CPU s | passes | sweeps | J (rel. to first) | max rel gap "
        "| max abs diff of components to first | L2 diff / first's radius |"
    )
    print("|---|---|---|---:|---:|---:|---|---:|---:|---|")
    for name in args.sets:
        path = args.ooc if name == "ooc" else os.path.join(tmp, "x.npy")
        if name.startswith("memmap"):
            import bench_datapath

            X = bench_datapath.cube_data(int(name[6:]), n_samples=3000)
            np.save(path, X.astype(np.float32))
        elif name == "test":
            sys.path.insert(0, os.path.join(ROOT, "tests"))
            from test_datapath import _instance

            np.save(path, _instance(n=3000).astype(np.float32))
        for r in range(args.rounds):
            first = None
            for variant in args.variants:
                tree = args.before if variant == "main" else ROOT
                out = os.path.join(tmp, f"{variant}.npy")
                cmd = [sys.executable, __file__, "--child", name, variant, path, out]
                env = dict(os.environ, PYTHONPATH=tree)
                got = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
                if got.returncode:
                    print(name, variant, "FAILED", got.stderr[-800:], flush=True)
                    continue
                res = json.loads(got.stdout.strip().splitlines()[-1])
                comps = np.load(out)
                first = first or (res, comps)
                rel = (res["J"] - first[0]["J"]) / abs(first[0]["J"])
                print(
                    f"| {name} | {r} | {variant} | {res['cpu']:.2f} (sys {res['sys']:.2f}, "
                    f"{res['faults'] / 1e3:.0f} k faults) | {res['passes']:.0f} "
                    f"| {res['sweeps']} | {res['J']:.9g} ({rel:+.1e}) "
                    f"| {res['gap']:.1e} | {np.abs(comps - first[1]).max():.1e} "
                    f"| {moved(comps, first[1], first[0].get('radius'))} |",
                    flush=True,
                )
        if name != "ooc" and os.path.exists(path):
            os.remove(path)


if __name__ == "__main__":
    main()
