"""Issue 22 round 15: where the joint fit's CPU goes at large P, and its
certificates (branch joint22o).

``--profile SET [SET ...] [--trees DIR ...]``: one joint fit
(``SPCATV(3, alpha_rel=1.0)``, tol 1e-3, as ``bench_datapath``'s ``joint``) per
set and tree, in a fresh process, with the starts one after the other
(``_lockstep.SIDE_BY_SIDE = False``: the same numbers, so that one thread's
profile sees every start); CPU seconds (``time.process_time``, all threads)
by phase (the outermost of: the starts, the sweeps, the restarts, the final
certification ``_certify_all``, the certified support's finishing
``certify_fit``) and by kind (the innermost of: a pass over X, a v-step or
finishing solve, a gap evaluation ``prox_gap``, the support labels, the
working-set build, the joint objective, the pair rotation, the residual of
the others; "other": the rest), from a ``sys.setprofile`` hook that looks only
at those functions' calls.

``--compare SET ... [--rounds R]``: in one process, alternating, the joint fit
with main's certificates (no moved bound, the plain gap formulas) and this
tree's: CPU seconds, the largest difference of the components.

``--recovery SET ... --seeds S ...``: the joint fit at the trust sets' usual
point (``bench_joint22i.POINT``) with the certify steps' moved-centre bound
(``_joint.MOVED_GAPS``, "branch") and without it ("exact"), in one process:
recovery |cos|, certified Dice, J, the largest difference of the components
and of ``dual_gaps_`` to "exact", CPU.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_joint22o.py --profile cube86 cube124 \\
        --trees /work/main .
    OMP_NUM_THREADS=1 python benchmarks/bench_joint22o.py --recovery paper-0.7 fs5-0.5 \\
        c69-0.6 --seeds 3545 3546
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PHASES = {
    "cached_subspace": "start: Krylov",
    "_pca_scores": "start: Krylov",
    "_deflation_start": "start: deflation",
    "_start_from_scores": "start: subspace",
    "_sweeps": "sweeps",
    "_restarts": "restarts",
    "_certify_all": "certify returned",
    "certify_fit": "finishing",
}
KINDS = {
    "_map": "pass",
    "_map_dask": "pass",
    "solve_dual": "solve",
    "_solve": "solve",
    "prox_gap": "gap",
    "certify_support": "labels",
    "working_set": "ws build",
    "joint_objective": "objective",
    "rotate_pairs": "rotation",
    "_others": "others",
}


class _Phases:
    """CPU seconds by (outermost phase, innermost kind) of the calls seen."""

    def __init__(self):
        self.acc = defaultdict(float)
        self.stack = [("setup", "other", None)]
        self.last = time.process_time()

    def hook(self, frame, event, arg):
        name = frame.f_code.co_name
        if event not in ("call", "return") or (name not in PHASES and name not in KINDS):
            return
        now = time.process_time()
        phase, kind, top = self.stack[-1]
        self.acc[phase, kind] += now - self.last
        self.last = now
        if event == "call":
            inner = PHASES.get(name, phase)
            if phase != "setup" and not (phase == "sweeps" and inner == "restarts"):
                inner = phase  # the outermost phase (restarts hold their sweeps)
            self.stack.append((inner, KINDS.get(name, kind), frame))
        elif top is frame:
            self.stack.pop()


def child_profile(name):
    import warnings

    import bench_datapath

    from neurospca import SPCATV
    from neurospca.decomposition import _lockstep

    _lockstep.SIDE_BY_SIDE = False
    warnings.simplefilter("ignore")
    X, operator = bench_datapath._load(name, None)
    passes = bench_datapath._count_passes(X.nbytes)
    prof = _Phases()
    c0 = prof.last = time.process_time()
    sys.setprofile(prof.hook)
    m = SPCATV(3, operator=operator, tol=1e-3, random_state=0, alpha_rel=1.0).fit(X)
    sys.setprofile(None)
    cpu = time.process_time() - c0
    prof.acc[prof.stack[-1][:2]] += time.process_time() - prof.last
    acc = {f"{p}|{k}": v for (p, k), v in prof.acc.items()}
    print(json.dumps(dict(cpu=cpu, passes=passes(), sweeps=int(m.n_sweeps_), acc=acc)))


def profile(sets, trees):
    for name in sets:
        for tree in trees:
            tree = os.path.abspath(tree)
            env = dict(os.environ, PYTHONPATH=tree)
            cmd = [sys.executable, __file__, "--child", name]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
            if r.returncode:
                print(name, tree, "FAILED", r.stderr[-1500:])
                continue
            res = json.loads(r.stdout.strip().splitlines()[-1])
            _table(name, tree, res)


def _table(name, tree, res):
    acc = {tuple(key.split("|")): val for key, val in res["acc"].items()}
    phases = sorted({p for p, _ in acc})
    kinds = sorted({k for _, k in acc})
    print(
        f"\n{name} ({tree}): CPU {res['cpu']:.2f} s, {res['passes']:.0f} passes, "
        f"{res['sweeps']} sweeps returned"
    )
    print("| phase | " + " | ".join(kinds) + " | total |")
    print("|---|" + "---:|" * (len(kinds) + 1))
    for p in phases + ["total"]:
        row = [sum(v for (q, k2), v in acc.items() if k2 == k and p in (q, "total")) for k in kinds]
        print(f"| {p} | " + " | ".join(f"{x:.2f}" for x in row) + f" | {sum(row):.2f} |")


def recovery(sets, seeds):

    from bench_joint22i import point_fits

    from neurospca.decomposition import _joint
    from neurospca.decomposition._objective import fitted_objective

    def moved_gaps(flag):
        return lambda: setattr(_joint, "MOVED_GAPS", flag)

    header = (
        "| set | seed | variant | abs cos | certified Dice | J | max abs diff of components "
        "| max abs diff of dual_gaps_ | CPU s |\n|---|---|---|---|---|---|---:|---:|---:|"
    )
    variants = [("exact", moved_gaps(False)), ("branch", moved_gaps(True))]
    ref = None
    for name, seed, variant, X, op, fit in point_fits(sets, seeds, variants, header):
        m, cpu, cos, dice = fit
        ref = ref if variant != "exact" else (m.components_, m.dual_gaps_)
        dc = np.abs(m.components_ - ref[0]).max()
        dg = np.abs(m.dual_gaps_ - ref[1]).max()
        print(
            f"| {name} | {seed} | {variant} | {cos} | {dice} "
            f"| {fitted_objective(m, X, op):.12g} | {dc:.1e} | {dg:.1e} | {cpu:.2f} |",
            flush=True,
        )
    _joint.MOVED_GAPS = True


def _plain_gaps(on):
    """Put main's (round 14) ``prox_gap`` / ``primal_certificate`` formulas back
    (``on``; kept in ``tests/test_joint22o.py``) or this tree's: the same values,
    more temporaries."""
    from neurospca.solvers import _problem
    from neurospca.solvers import gap as gapmod

    saved = _plain_gaps.saved = getattr(_plain_gaps, "saved", None) or (
        gapmod._prox_gap,
        _problem.primal_certificate,
    )
    if on:
        sys.path.insert(0, os.path.dirname(HERE))
        from tests.test_joint22o import _plain_certificate, _plain_gap

        gapmod._prox_gap, _problem.primal_certificate = _plain_gap, _plain_certificate
    else:
        gapmod._prox_gap, _problem.primal_certificate = saved


def compare(sets, rounds):
    """``--compare``: main's certificates ("main": no moved bound, the plain gap
    formulas) and this tree's ("branch") alternating in one process."""
    import warnings

    import bench_datapath

    from neurospca import SPCATV
    from neurospca.decomposition import _joint

    print("| data | round | variant | CPU s | sweeps | max abs diff to main |")
    print("|---|---:|---|---:|---:|---:|")
    for name in sets:
        X, operator = bench_datapath._load(name, None)
        ref = None
        for r in range(rounds):
            for variant in ("main", "branch"):
                _joint.MOVED_GAPS = variant == "branch"
                _plain_gaps(variant == "main")
                c0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = SPCATV(3, operator=operator, tol=1e-3, random_state=0, alpha_rel=1.0)
                    m.fit(X)
                cpu = time.process_time() - c0
                ref = ref if ref is not None else m.components_
                diff = np.abs(m.components_ - ref).max()
                print(f"| {name} | {r} | {variant} | {cpu:.2f} | {m.n_sweeps_} | {diff:.1e} |")
                sys.stdout.flush()
    _joint.MOVED_GAPS = True
    _plain_gaps(False)


def main():
    if "--child" in sys.argv:
        child_profile(sys.argv[sys.argv.index("--child") + 1])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", nargs="+")
    ap.add_argument("--trees", nargs="+", default=[os.path.dirname(HERE)])
    ap.add_argument("--recovery", nargs="+")
    ap.add_argument("--seeds", nargs="+", type=int)
    ap.add_argument("--compare", nargs="+")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if args.compare:
        compare(args.compare, args.rounds)
    if args.profile:
        profile(args.profile, args.trees)
    if args.recovery:
        recovery(args.recovery, args.seeds)


if __name__ == "__main__":
    main()
