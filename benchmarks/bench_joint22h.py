"""Issue 22 rounds 9-10: the joint fit's passes over ``X``, by caller, before / after.

``--passes``: the joint fit of ``tests/test_datapath.py``'s memmap instance
(3,000 x 1,728 float32, 3 components, tol 1e-3, ``alpha_rel=1.0``) in each
tree (a fresh subprocess), every pass over ``X`` (``DataOperator._map``)
tagged by the functions on the stack (since round 10 a pass shared by the
starts side by side is one pass, and each start's request it served is listed
under its caller, indented); prints the counts by tag and the largest
difference of the components between the trees.

``--instances``: the joint fit of the paper simulation (150 x 900, weights
correlated 0.7, seeds given) as float64 / float32, in memory and from a
memmap, in each tree: passes, sweeps, relative gaps, and the largest
difference of the components.

Usage::

    python benchmarks/bench_joint22h.py --before /tmp/joint22h-old --passes
    python benchmarks/bench_joint22h.py --before /tmp/joint22h-old --instances 3251,3252
    python benchmarks/bench_joint22h.py --before /tmp/joint22h-old --cube 86 --rounds 2

``--cube n``: the joint fit (``SPCATV(3, alpha_rel=1.0)``, tol 1e-3) of
``bench_datapath.cube_data(n)`` (N = 100, P = n^3 float64), trees
alternating in fresh subprocesses: wall and CPU seconds (every thread of the
process), passes, and the largest difference of the components.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import traceback
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: (tag, test on the stack of function names, innermost last)
TAGS = (
    ("starts side by side: shared passes", lambda s: "_pass" in s and "run_side_by_side" in s),
    ("scan", lambda s: s[-1] == "scan"),
    ("Krylov (start subspace)", lambda s: "krylov_subspace" in s),
    ("diagnostics", lambda s: "_adjusted_variance" in s),
    ("support snapshot", lambda s: "certify_joint" in s),
    ("certification", lambda s: "_certify_all" in s),
    ("restart checks", lambda s: "_restarts" in s and ("_init_svd" in s or "svd_starts" in s)),
    ("restart fits", lambda s: "_restarts" in s),
    ("PCA start: certify steps", lambda s: "_start_from_scores" in s and "_certify_step" in s),
    ("PCA start: u-steps", lambda s: "_start_from_scores" in s),
    ("deflation start: Z = Xc V", lambda s: "_deflation_start" in s and "matmat" in s),
    ("deflation start: starts", lambda s: "_deflation_start" in s and "_init_svd" in s),
    ("deflation start: alternation", lambda s: "_deflation_start" in s),
    ("sweeps: first X_k^T u", lambda s: "_sweep" in s and s[-1] == "rmatvec"),
    ("sweeps", lambda s: "_sweep" in s),
)


#: The prefix of a start's request served by a shared pass (not a pass of its own).
REQUEST = "  (in a shared pass) "


def _tag(stack):
    return next((tag for tag, test in TAGS if test(stack)), "other: " + " < ".join(stack[-4:]))


def _count_passes(out):
    """The child: the memmap instance's joint fit with every pass tagged."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from test_datapath import _fit, _instance

    from neurospca.decomposition._data import DataOperator

    tags = []
    inner = DataOperator._map

    def tagged(self, *args, **kw):
        stack = traceback.extract_stack()[:-1]
        tags.append(_tag([f.name for f in stack if "neurospca" in f.filename]))
        return inner(self, *args, **kw)

    def requests():  # round 10: the starts' requests, each served by a shared pass
        try:
            from neurospca.decomposition._lockstep import _Lockstep
        except ImportError:
            return
        request = _Lockstep._map

        def requested(self, *args, **kw):
            if getattr(self.local, "start", None) is not None:
                stack = traceback.extract_stack()[:-1]
                tags.append(REQUEST + _tag([f.name for f in stack if "neurospca" in f.filename]))
            return request(self, *args, **kw)

        _Lockstep._map = requested

    X = _instance(n=3000).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "x.npy"), X)
        Xm = np.load(os.path.join(tmp, "x.npy"), mmap_mode="r")
        _fit(Xm, alpha_rel=1.0)  # warm
        DataOperator._map = tagged
        requests()
        m = _fit(Xm, alpha_rel=1.0)
    np.save(out + ".npy", m.components_)
    with open(out + ".json", "w") as fh:
        json.dump(dict(collections.Counter(tags)), fh)


def _pass_counter():
    """Count every pass over X (``DataOperator._map``) from now on: a one-item list."""
    from neurospca.decomposition._data import DataOperator

    count = [0]
    inner = DataOperator._map

    def counted(self, *args, **kw):
        count[0] += 1
        return inner(self, *args, **kw)

    DataOperator._map = counted
    return count


def _instances(seeds, out):
    """The child: the paper simulation's joint fits (float64 / float32, memory / memmap)."""
    from neurospca import SPCATV, make_paper_simulation, tv_from_mask

    count = _pass_counter()
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            X, _, mask = make_paper_simulation(
                150, random_state=seed, shape=(30, 30), correlation=0.7
            )
            for kind in ("f64", "f32", "f64mm", "f32mm"):
                Y = X.astype(np.float32) if kind.startswith("f32") else X
                if kind.endswith("mm"):
                    np.save(os.path.join(tmp, "x.npy"), Y)
                    Y = np.load(os.path.join(tmp, "x.npy"), mmap_mode="r")
                count[0] = 0
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = SPCATV(3, operator=tv_from_mask(mask), alpha_rel=1.0, random_state=0)
                    m.fit(Y)
                key = f"{seed}_{kind}"
                res[key] = m.components_
                res[key + "_info"] = np.array([count[0], m.n_sweeps_, m.rel_gaps_.max()])
    np.savez(out, **res)


def _cube(n, out):
    """The child: the joint fit of the cube data, wall and CPU seconds, passes."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from bench_datapath import cube_data

    from neurospca import tv_from_mask

    count = _pass_counter()
    X, op = cube_data(n), tv_from_mask(np.ones((n,) * 3, bool))
    timed_joint_fit(X, op, count, out)


def timed_joint_fit(X, op, count, out):
    """The joint fit at ``alpha_rel=1``, tol 1e-3, saved to ``out``: components and
    ``[wall s, CPU s, passes]`` (``count``: :func:`_pass_counter`'s, set before the data)."""
    import time

    from neurospca import SPCATV

    w, c = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(3, operator=op, tol=1e-3, alpha_rel=1.0, random_state=0).fit(X)
    res = [time.perf_counter() - w, time.process_time() - c, count[0]]
    np.savez(out, comps=m.components_, res=np.array(res))


def _run(tree, args):
    env = dict(os.environ, PYTHONPATH=tree)
    subprocess.run([sys.executable, os.path.abspath(__file__), *args], check=True, env=env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=False)
    ap.add_argument("--passes", action="store_true")
    ap.add_argument("--instances", default="")
    ap.add_argument("--cube", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", nargs=2, default=None)
    args = ap.parse_args()
    if args.child:
        what, out = args.child
        if what == "passes":
            _count_passes(out)
        elif what.startswith("cube"):
            _cube(int(what[4:]), out)
        else:
            _instances([int(s) for s in what.split(",")], out)
        return
    trees = {"before": args.before, "after": ROOT} if args.before else {"after": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if args.passes:
            got = {}
            for name, tree in trees.items():
                _run(tree, ["--child", "passes", os.path.join(tmp, name)])
                with open(os.path.join(tmp, name + ".json")) as fh:
                    got[name] = json.load(fh)
            for tag in sorted({t for c in got.values() for t in c}):
                print(f"| {tag} | " + " | ".join(str(c.get(tag, 0)) for c in got.values()) + " |")
            total = [sum(n for t, n in c.items() if t[0] != " ") for c in got.values()]
            print("| total | " + " | ".join(str(n) for n in total) + " |")
            if len(trees) == 2:
                a, b = (np.load(os.path.join(tmp, n + ".npy")) for n in trees)
                print(f"max abs diff of the components: {np.abs(a - b).max():.2e}")
        if args.cube:
            comps = {}
            for r in range(args.rounds):
                for name, tree in trees.items():
                    out = os.path.join(tmp, f"{name}{r}.npz")
                    _run(tree, ["--child", f"cube{args.cube}", out])
                    got = np.load(out)
                    comps[name] = got["comps"]
                    wall, cpu, passes = got["res"]
                    print(
                        f"round {r} {name}: wall {wall:.1f} s, CPU {cpu:.1f} s, {passes:.0f} passes"
                    )
            if len(comps) == 2:
                diff = np.abs(comps["before"] - comps["after"]).max()
                print(f"max abs diff of the components: {diff:.2e}")
        if args.instances:
            for name, tree in trees.items():
                _run(tree, ["--child", args.instances, os.path.join(tmp, name + ".npz")])
            res = {n: np.load(os.path.join(tmp, n + ".npz")) for n in trees}
            for key in sorted(k for k in res["after"].files if not k.endswith("_info")):
                info = " | ".join(
                    "{:.0f} passes, {:.0f} sweeps, gap {:.1e}".format(*r[key + "_info"])
                    for r in res.values()
                )
                diff = np.abs(res["before"][key] - res["after"][key]).max() if len(res) == 2 else 0
                print(f"| {key} | {info} | {diff:.1e} |")


if __name__ == "__main__":
    main()
