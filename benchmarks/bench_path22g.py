"""Issue 22 item 3, round 8: the in-memory data path before / after, alternating.

Each round runs, in fresh subprocesses and in this order, for every tree
(``--before`` then this worktree): the fixed-penalty fit
(``method="deflation"``) and the joint fit (``SPCATV(3, alpha_rel=1.0)``) of
the cohort array (10,000 x 10,242 float32, ``bench_cohort.make_data``), then
the streaming floor (the best of 3 of a column sum and ``X @ v``) and a
randomized PCA of the same array. Wall and CPU seconds (``time.process_time``:
every thread of the process) are both recorded, since the machine is shared;
medians over the rounds are printed with the share of the floor
(``passes * X.nbytes / fit time`` over the floor's rate, wall and CPU) and the
ratio to the randomized PCA. ``--passes`` instead times single passes
(``DataOperator`` scan, Gram pass, fused pass, ...) in both trees, best of 5.

Usage::

    python benchmarks/bench_path22g.py --data cohort.npy --before /tmp/old --rounds 5
    python benchmarks/bench_path22g.py --data cohort.npy --before /tmp/old --passes
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SETTINGS = {"fixed": dict(alpha_rel=1.0, method="deflation"), "joint": dict(alpha_rel=1.0)}


def _clock():
    return time.perf_counter(), time.process_time()


def _since(t):
    w, c = _clock()
    return w - t[0], c - t[1]


def child(setting, path, out):
    import warnings

    warnings.simplefilter("ignore")
    sys.path.insert(0, HERE)
    import bench_datapath

    X, operator = bench_datapath._load("cohort", path)
    res = {}
    if setting == "pca":
        from sklearn.decomposition import PCA

        t = _clock()
        PCA(3, svd_solver="randomized", random_state=0).fit(X)
        res["wall"], res["cpu"] = _since(t)
    elif setting == "floor":
        v = np.ones(X.shape[1], dtype=X.dtype)
        res["wall"] = res["cpu"] = np.inf
        for _ in range(3):
            for f in (lambda: X.sum(axis=0), lambda: X @ v):
                t = _clock()
                f()
                w, c = _since(t)
                res["wall"], res["cpu"] = min(res["wall"], w), min(res["cpu"], c)
    else:
        from neurospca import SPCATV

        passes = bench_datapath._count_passes(X.nbytes)
        t = _clock()
        m = SPCATV(3, operator=operator, tol=1e-3, random_state=0, **SETTINGS[setting]).fit(X)
        res["wall"], res["cpu"] = _since(t)
        res["passes"] = passes()
        np.save(out, m.components_)
    res["nbytes"] = X.nbytes
    print(json.dumps(res))


def child_passes(path):
    """Single passes of ``DataOperator`` on the array, best of 5 (ms)."""
    from neurospca.decomposition._data import DataOperator

    X = np.load(path)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((X.shape[1], 16))
    u = rng.standard_normal(X.shape[0])
    op = DataOperator(X)
    out = {}

    def best(name, f):
        w = c = np.inf
        for _ in range(5):
            t = _clock()
            f()
            dw, dc = _since(t)
            w, c = min(w, dw), min(c, dc)
        out[name] = (1e3 * w, 1e3 * c)

    v = np.ones(X.shape[1], X.dtype)
    best("floor: column sum", lambda: X.sum(axis=0))
    best("floor: X @ v", lambda: X @ v)
    best("scan (statistics)", lambda: op.scan(sketch=0))
    best("scan + 16-column sketch", lambda: op.scan(sketch=16))
    op.centre(op.stats["mean"])
    best("Gram pass, 16 columns", lambda: op.gram(W))
    best("fused pass (X v, X^T z exact)", lambda: op.fused(W[:, 0]))
    best("rmatvec exact", lambda: op.rmatvec(u, exact=True))
    best("matmat, 3 columns", lambda: op.matmat(W[:, :3]))
    print(json.dumps(out))


def run(code, *args):
    env = dict(os.environ, PYTHONPATH=code)
    r = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, env=env
    )
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def _median(xs):
    return float(np.median(xs)) if xs else float("nan")


def main_fits(args, trees):
    tmp = tempfile.mkdtemp(prefix="path22g_")
    rec = {(t, s): [] for t in trees for s in SETTINGS}
    floors, pcas, diffs = [], [], {s: [] for s in SETTINGS}
    for r in range(args.rounds):
        for s in SETTINGS:
            for t, code in trees.items():
                res = run(code, "fit", s, args.data, os.path.join(tmp, f"{t}_{s}.npy"))
                rec[(t, s)].append(res)
                print(f"round {r} {t:6s} {s}: {res}", flush=True)
            if len(trees) == 2:
                a, b = (np.load(os.path.join(tmp, f"{t}_{s}.npy")) for t in trees)
                diffs[s].append(float(np.abs(a - b).max()))
        floors.append(run(ROOT, "fit", "floor", args.data, ""))
        pcas.append(run(ROOT, "fit", "pca", args.data, ""))
        print(f"round {r} floor {floors[-1]}  pca {pcas[-1]}", flush=True)
    fw, fc = _median([f["wall"] for f in floors]), _median([f["cpu"] for f in floors])
    pw, pc = _median([p["wall"] for p in pcas]), _median([p["cpu"] for p in pcas])
    nbytes = floors[0]["nbytes"]
    print(f"\nfloor: {nbytes / fw / 1e9:.1f} GB/s wall, {nbytes / fc / 1e9:.1f} GB/s CPU")
    print(f"randomized PCA: {pw:.2f} s wall, {pc:.2f} s CPU\n")
    print(
        "| setting | tree | fit wall (s) | fit CPU (s) | passes | share of the floor, wall "
        "| share, CPU | x PCA wall | x PCA CPU | max abs diff to before |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in SETTINGS:
        for t in trees:
            w = _median([x["wall"] for x in rec[(t, s)]])
            c = _median([x["cpu"] for x in rec[(t, s)]])
            p = _median([x["passes"] for x in rec[(t, s)]])
            d = max(diffs[s]) if (t != "before" and diffs[s]) else None
            print(
                f"| {s} | {t} | {w:.2f} | {c:.2f} | {p:.0f} | {100 * p * fw / w:.0f} % "
                f"| {100 * p * fc / c:.0f} % | {w / pw:.2f} | {c / pc:.2f} | "
                f"{'-' if d is None else f'{d:.1e}'} |"
            )


def main_passes(args, trees):
    res = {t: [] for t in trees}
    for _ in range(args.rounds):
        for t, code in trees.items():
            res[t].append(run(code, "passes", "", args.data, ""))
    names = list(res[next(iter(trees))][0])
    head = " | ".join(f"{t} wall / CPU (ms)" for t in trees)
    print(f"\n| pass | {head} |\n|---|" + "---:|" * len(trees))
    for n in names:
        cells = []
        for t in trees:
            w, c = (_median([r[n][i] for r in res[t]]) for i in (0, 1))
            cells.append(f"{w:.1f} / {c:.1f}")
        print(f"| {n} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=False)
    ap.add_argument("--before", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", action="store_true")
    ap.add_argument("--child", nargs=4, default=None)
    args = ap.parse_args()
    if args.child:
        kind, setting, path, out = args.child
        if kind == "passes":
            child_passes(path)
        else:
            child(setting, path, out)
        return
    trees = ({"before": args.before} if args.before else {}) | {"after": ROOT}
    (main_passes if args.passes else main_fits)(args, trees)


if __name__ == "__main__":
    main()
