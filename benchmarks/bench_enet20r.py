"""Issue 20 round 18: ``select_penalty`` for ElasticNet PCA, main's fits and the branch's.

One process per instance of the paper simulation, as ``bench_enet20q.py`` (its
phase timers and judged rows): the default fit (its CPU seconds are the unit),
one fit at the default's point, then ``select_penalty(est, X, random_state=seed)``
with each variant of ``--variants`` in turn: ``main`` (``_continuation.CHAIN_FULL``
off: every judged row's full fit from its half fit with the competing starts, as
main; ``_shared_walk.SHARE_WALK`` off: every split walked), ``chain`` (the full
fits continued along the split's path, guarded), ``share`` (also the walks
of equal l1 weight shared), ``walkd`` (also the default fit's halves' evidence
continued from the walk's fits at its point), ``walk`` (every judged row's) and
``jguard`` (``share`` with a full continuation kept only when its joint objective
is at most a continuation's from the row's half fit).
Per variant: the chosen point and its MSE / Dice, CPU and phases (``full cont``:
the full continuations tried, ``full kept``: those kept), every judged row's
evidence. One JSON line per instance appended to ``--out``; ``--summary FILE``
prints the tables (``bench_enet20q.py``'s, main against the branch).

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_enet20r.py --seed 3667 \\
        --corr 0 --method elasticnet --out rows.jsonl
    python benchmarks/bench_enet20r.py --summary rows.jsonl [share|chain]
    python benchmarks/bench_enet20r.py --recorded rows.jsonl out_enet20q/recorded_ab.jsonl \\
        out_enet20q/fresh_ab.jsonl   # against round 17's rows of the same seeds
    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_enet20r.py --fit-profile 3667 0
"""

import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_enet20q as q  # noqa: E402

from neurospca.model_selection import _continuation, _shared_walk  # noqa: E402

#: ``(CHAIN_FULL, SHARE_WALK, WALK_DEFAULT, WALK_EVIDENCE, CHAIN_FULL_OBJECTIVE)``.
VARIANTS = {
    "main": (False, False, False, False, False),
    "chain": (True, False, False, False, False),
    "share": (True, True, False, False, False),
    "walkd": (True, True, True, False, False),
    "walk": (True, True, True, True, False),
    "jguard": (True, True, False, False, True),
}


def _count_kept():
    """Count the full continuations tried and kept (observation only)."""
    original = _continuation.continued_full

    def counted(*args, **kw):
        model = original(*args, **kw)
        q.CPU["full kept n"] = q.CPU.get("full kept n", 0) + (model is not None)
        return model

    import neurospca.model_selection._returned as returned

    returned.continued_full = counted


def summary(path, variant="jguard"):
    """``bench_enet20q.py``'s table with main as "off" and ``variant`` as "on"."""
    rows = []
    for line in open(path):
        r = json.loads(line)
        if variant not in r:
            continue
        r["off"], r["on"] = r["main"], r[variant]
        rows.append(json.dumps(r))
    tmp = Path(path).with_suffix(".ab.tmp")
    tmp.write_text("\n".join(rows) + "\n")
    try:
        q.summary(str(tmp))
    finally:
        tmp.unlink()


PHASES = ("default", "walks", "full fits", "evidence")


def _cell(chosen):
    return "({:g}, {:g}) {:g}: {:.3f} / {:.3f}".format(*chosen)


def recorded(path, *before):
    """Markdown rows: the branch's runs in ``path`` (the last variant of each row)
    against round 17's recorded rows (``bench_enet20q.py``'s ``on``, main's code
    path) of the same seeds."""
    old = {}
    for name in before:
        for line in open(name):
            r = json.loads(line)
            old[r["seed"]] = r["on"]
    ratios = []
    for line in open(path):
        r = json.loads(line)
        variant = [k for k in r if k in VARIANTS][-1]
        a, b = old[r["seed"]], r[variant]
        same = a["chosen"][:3] == b["chosen"][:3] and np.allclose(a["chosen"][3:], b["chosen"][3:])
        ph = b["phases"]
        cells = [
            r["seed"],
            r["corr"],
            _cell(a["chosen"]),
            "yes" if same else "**no** " + _cell(b["chosen"]),
            f"{a['ratio']:.1f}x -> **{b['ratio']:.1f}x**",
            " / ".join(f"{ph.get(k, 0):.1f}" for k in PHASES),
            f"{ph.get('full kept n', 0)} of {ph.get('full fits n', 0)}",
        ]
        ratios.append(b["ratio"])
        print("| " + " | ".join(str(c) for c in cells) + " |")
    low, high = min(ratios), max(ratios)
    print(f"n {len(ratios)}, median {np.median(ratios):.1f}x, range {low:.1f}-{high:.1f}x")


def _thread_cpu(times, module, name, label=None):
    """Wrap ``module.name`` to add its thread CPU seconds to ``times`` (the joint
    fit's starts run side by side in threads; observation only)."""
    original = getattr(module, name)

    def timed(*args, **kw):
        t0 = time.thread_time()
        try:
            return original(*args, **kw)
        finally:
            key = label(args) if label else name
            times[key] = times.get(key, 0.0) + time.thread_time() - t0

    setattr(module, name, timed)


def fit_profile(seed, corr):
    """One fit's CPU in default-fit units, by piece (thread CPU of the starts:
    ``given``, ``pca``, ``_deflation_job``; restarts, set-up, certificates): an
    evidence fit on a half from the default fit's components and a full fit from
    a half fit's, each with the competing starts, as a continuation and cold;
    and the scoring of one evidence fit (guard, matching, held-out variance)."""
    import neurospca.decomposition._spcatv as spcatv
    from neurospca.decomposition import _joint, component_stability, split_halves, start_from
    from neurospca.model_selection import _heldout

    times = {}
    for name in ("_deflation_job", "_pca_scores", "_restarts", "_start_from_scores"):
        _thread_cpu(times, _joint, name)
    _thread_cpu(times, _joint, "_scores_job", lambda a: "pca" if a[3] is None else "given")
    for name in ("certify_fit", "validated_data_operator"):
        _thread_cpu(times, spcatv, name)
    X, _, est, d, cpu = q.default_fit(seed, corr, "elasticnet")
    at = dict(alpha=None, alpha_rel=d.alpha_rel_, l1_ratio=d.l1_ratio_, tv_ratio=d.tv_ratio_)
    halves = split_halves(X, 1)
    keep = dict(at, stability=False, certify_support=False, verbose=0)
    half = q.quiet(clone(est).set_params(**keep).fit, halves[0]).components_
    print(f"seed {seed} r {corr}: default fit {cpu:.2f} CPU s")
    for name, data, start in (("evidence", halves[0], d.components_), ("full", X, half)):
        for label, warm in (("competing", False), ("continued", True), ("cold", False)):
            times.clear()
            fit = clone(est).set_params(**keep, warm_start=warm)
            fit = start_from(fit, start) if label != "cold" else fit
            t0 = time.process_time()
            q.quiet(fit.fit, data)
            total = (time.process_time() - t0) / cpu
            pieces = {k: round(v / cpu, 3) for k, v in sorted(times.items())}
            print(f"  {name} {label}: {total:.3f} units; {pieces}")
    t0 = time.process_time()
    for _ in range(20):
        _continuation.chain_holds(X, d.components_, d.components_)
        component_stability(d.components_, d.components_, d.components_)
        _heldout.pair_heldout([d.components_, d.components_], halves)
    print(f"  scoring of one evidence fit: {(time.process_time() - t0) / 20 / cpu:.4f} units")


def main():
    if sys.argv[1:2] == ["--fit-profile"]:
        return fit_profile(int(sys.argv[2]), float(sys.argv[3]))
    if sys.argv[1:2] == ["--summary"]:
        return summary(*sys.argv[2:4])
    if sys.argv[1:2] == ["--recorded"]:
        return recorded(*sys.argv[2:])
    args, X, P, est, row = q.variants_instance("main,share")
    _count_kept()
    for name in args.variants.split(","):
        c = _continuation
        flags = VARIANTS[name]
        c.CHAIN_FULL, _shared_walk.SHARE_WALK, c.WALK_DEFAULT, c.WALK_EVIDENCE = flags[:4]
        c.CHAIN_FULL_OBJECTIVE = flags[4]
        row[name] = q.run(est, X, P, args.seed, row["cpu_default"], True)
    with open(args.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row)[:600], flush=True)


if __name__ == "__main__":
    main()
