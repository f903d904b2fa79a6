"""Issue 20 round 19: ``select_penalty`` for ElasticNet PCA, the competing starts.

One process per instance of the paper simulation, as ``bench_enet20r.py`` (its phase
timers, judged rows and tables): the default fit (its CPU seconds are the unit), then
``select_penalty(est, X, random_state=seed)`` with each variant of ``--variants`` in
turn: ``main`` (main's settings: the round's switches off), ``given`` (an evidence fit
with the competing starts first from the judged model's start alone, kept when it
holds), ``gd0`` (that start and deflation's unswept fit only; both
``_continuation.EVIDENCE_STARTS``), ``tol`` (the evidence fits at ``tol`` 1e-2,
``_continuation.EVIDENCE_TOL``), ``cut`` (a split's judged rows stop after its score
fell twice, ``_returned.ROW_CUT``: measured with the round's first code, removed since,
it never cut a row), ``gc`` (``gd0`` and ``cut``), ``gcf`` (also the judged rows' full
fits from those two starts, ``_continuation.FULL_STARTS``), ``adapt`` (``gc`` with
``_continuation.DEFL0_FIRST``: the library's defaults of round 19). Each joint fit with
the competing starts is logged (observation only: ``_joint``'s start jobs wrapped): the
phase it was made in, each start's joint objective, thread CPU in default-fit units, and
the winner (``given``: the start from given components, ``pca``: the data's top singular
subspace, ``defl``: deflation's swept fit, ``defl0``: its unswept state). ``--starts
FILE`` prints the winners' table of the rows in ``FILE``.

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_enet20s.py --seed 3717 \\
        --corr 0 --method elasticnet --variants main,given --out rows.jsonl
    python benchmarks/bench_enet20r.py --summary rows.jsonl given   # main against given
    python benchmarks/bench_enet20s.py --starts rows.jsonl
"""

import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_enet20q as q  # noqa: E402

import neurospca.decomposition._joint as joint  # noqa: E402
from neurospca.model_selection import _continuation, _returned  # noqa: E402

#: ``(EVIDENCE_STARTS, EVIDENCE_TOL, ROW_CUT, FULL_STARTS)`` per variant; ``main``
#: the library's.
VARIANTS = {
    "main": (None, None, False, None),
    "given": ("given", None, False, None),
    "gd0": ("given+defl0", None, False, None),
    "tol": (None, 1e-2, False, None),
    "cut": (None, None, True, None),
    "gc": ("given+defl0", None, True, None),
    "gcf": ("given+defl0", None, True, "given+defl0"),
    "adapt": ("given+defl0", None, True, None),
}
LOG, PHASE, JOBS = [], ["other"], []


def _phase(fn, name):
    def wrapped(*args, **kw):
        PHASE.append(name)
        try:
            return fn(*args, **kw)
        finally:
            PHASE.pop()

    return wrapped


def _job(fn, kind):
    def wrapped(*args, **kw):
        t0 = time.thread_time()
        got = fn(*args, **kw)
        label = kind if kind == "defl" or args[3] is None else "given"
        JOBS.append((label, got[0], time.thread_time() - t0))
        return got

    return wrapped


def _search(fn):
    def wrapped(*args, **kw):
        JOBS.clear()
        best = fn(*args, **kw)
        won = next((k for k, c, _ in JOBS if c is best), "defl0")
        values = {k: (None if c is None else c.value) for k, c, _ in JOBS}
        cpu = {k: t for k, _, t in JOBS}
        LOG.append({"phase": PHASE[-1], "won": won, "J": values | {"best": best.value}, "cpu": cpu})
        return best

    return wrapped


def _wrap():
    """Phase tags on the phases' functions and the start log (observation only)."""
    import neurospca.model_selection._default_first as first

    for module, attr, name in q.PHASES:
        current = getattr(module, attr)
        wrapped = _phase(current, name)
        for mod in (module, _returned, first, _continuation):
            if getattr(mod, attr, None) is current:
                setattr(mod, attr, wrapped)
    joint._deflation_job = _job(joint._deflation_job, "defl")
    joint._scores_job = _job(joint._scores_job, "pca")
    joint._search = _search(joint._search)


def starts(path):
    """Per instance and variant: the evidence fits with the competing starts, the
    winners' counts, the losers' CPU (default-fit units) and the largest relative
    objective lead of the winner over the given start where another won."""
    for line in open(path):
        r = json.loads(line)
        for v in [k for k in r if k in VARIANTS]:
            log = [e for e in r[v].get("starts", []) if e["phase"] == "evidence"]
            won = Counter(e["won"] for e in log)
            lose = sum(t for e in log for k, t in e["cpu"].items() if k != e["won"])
            given = sum(e["cpu"].get("given", 0) for e in log)
            leads = [
                (e["J"]["given"] - e["J"]["best"]) / abs(e["J"]["best"])
                for e in log
                if e["won"] != "given" and e["J"].get("given") is not None
            ]
            print(
                f"| {r['seed']} | {r['corr']} | {v} | {len(log)} | {dict(won)} | "
                f"{given / r['cpu_default']:.2f} | {lose / r['cpu_default']:.2f} | "
                f"{max(leads, default=0):.2e} |"
            )


def main():
    if sys.argv[1:2] == ["--starts"]:
        return starts(sys.argv[2])
    args, X, P, est, row = q.variants_instance("main,given")
    _wrap()
    for name in args.variants.split(","):
        flags = VARIANTS[name]
        _continuation.EVIDENCE_STARTS, _continuation.EVIDENCE_TOL = flags[:2]
        _returned.ROW_CUT, _continuation.FULL_STARTS = flags[2:]
        _continuation.DEFL0_FIRST = name == "adapt"
        LOG.clear()
        row[name] = q.run(est, X, P, args.seed, row["cpu_default"], True)
        row[name]["starts"] = list(LOG)
    with open(args.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k not in VARIANTS}), flush=True)


if __name__ == "__main__":
    main()
