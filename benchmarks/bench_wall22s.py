"""Issue 22 round 19: the joint fit's wall time on two cores (branch wall22s).

``--timeline SET [SET ...]``: one joint fit per set (``bench_datapath``'s
``joint`` setting: ``SPCATV(3, alpha_rel=1.0, tol=1e-3, random_state=0)``, the
default threads) with its phases timed in the calling thread: wall, CPU (the
process's, every thread) and CPU / wall (the cores used); then a randomized PCA
of the same data.

``--compare SET [SET ...] [--rounds R] [--variants serial parallel]``: per
round a randomized PCA, then one whole fit per variant (the order turned
every round), in one process: wall, CPU, their ratios to that round's PCA,
the largest difference of the components to the first variant's.

Variants (:data:`VARIANTS`): "serial" runs the joint finishing's Jacobi steps
one after the other (``_support.PARALLEL_FINISH = False``, main's order) and
the starts one at a time (``_lockstep.LEND_KERNELS = False``); "parallel" the
finishing's steps side by side on the fit's threads; "lent" the starts'
v-step kernels at once; "both" (this branch's default) the two.

Usage::

    python benchmarks/bench_wall22s.py --timeline cube86 cube124 --variants serial both
    python benchmarks/bench_wall22s.py --compare cube86 cube124 --rounds 2 \\
        --variants serial parallel both
"""

import argparse
import os
import sys
import threading
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

#: (module, attribute, label) of the phases timed (the calling thread only).
PHASES = [
    ("_joint", "_joint", "joint fit (sweeps' state)"),
    ("_joint", "_search", "  starts side by side, their sweeps and restarts"),
    ("_joint_certify", "_certify_all", "  certify returned"),
    ("_support", "certify_fit", "finishing (certified support)"),
    ("_joint_certify", "Snapshot", "  snapshot (one pass)"),
    ("_joint_certify", "_jacobi_step", "  Jacobi steps (working-set solves, labels)"),
    ("_support", "each_component", "  Jacobi steps (working-set solves, labels)"),
    ("_joint_certify", "_returned_pairs", "  returned pairs' gaps"),
]


def thread_ticks():
    """``{thread id: user + system clock ticks}`` of every thread of this process
    (OpenMP's too), from ``/proc/self/task``."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        out[tid] = int(fields[11]) + int(fields[12])
    return out


TICK = os.sysconf("SC_CLK_TCK")


class Timeline:
    """Wall, process CPU and the busiest thread's CPU of the phases' calls in the
    calling thread (the busiest thread: a floor of the phase's wall on free cores
    when its threads do not wait for each other)."""

    def __init__(self):
        self.acc, self.main = {}, threading.main_thread()

    def wrap(self, fn, label):
        def timed(*args, **kwargs):
            if threading.current_thread() is not self.main:
                return fn(*args, **kwargs)
            t0, c0, k0 = time.perf_counter(), time.process_time(), thread_ticks()
            try:
                return fn(*args, **kwargs)
            finally:
                k1 = thread_ticks()
                busiest = max(k1[t] - k0.get(t, 0) for t in k1) / TICK
                w, c, b = self.acc.get(label, (0.0, 0.0, 0.0))
                self.acc[label] = (
                    w + time.perf_counter() - t0,
                    c + time.process_time() - c0,
                    b + busiest,
                )

        return timed

    def install(self):
        from neurospca.decomposition import _joint, _joint_certify, _spcatv, _support

        timed, self.steps = _support._timed, []

        def step_timed(step, k):  # each finishing step: its thread, CPU and wall
            c0 = time.thread_time()
            out = timed(step, k)
            self.steps.append((threading.get_ident(), k, time.thread_time() - c0, out[1]))
            return out

        _support._timed = step_timed

        mods = {"_joint": _joint, "_joint_certify": _joint_certify, "_support": _support}
        undo = []
        for mod, name, label in PHASES:
            if not hasattr(mods[mod], name):
                continue
            orig = getattr(mods[mod], name)
            new = self.wrap(orig, label)
            for m in (_joint, _joint_certify, _spcatv, _support):
                if getattr(m, name, None) is orig:
                    undo.append((m, name, orig))
                    setattr(m, name, new)
        undo.append((_support, "_timed", timed))
        return lambda: [setattr(m, n, o) for m, n, o in undo]


def _fit(X, operator):
    from neurospca import SPCATV

    t0, c0 = time.perf_counter(), time.process_time()
    m = SPCATV(3, operator=operator, tol=1e-3, random_state=0, alpha_rel=1.0).fit(X)
    return m, time.perf_counter() - t0, time.process_time() - c0


def _pca(X):
    from sklearn.decomposition import PCA

    t0, c0 = time.perf_counter(), time.process_time()
    PCA(3, svd_solver="randomized", random_state=0).fit(X)
    return time.perf_counter() - t0, time.process_time() - c0


def timeline(sets, variants):
    import bench_datapath

    for name, variant in [(n, v) for n in sets for v in variants]:
        X, operator = bench_datapath._load(name, None)
        _variant(variant)
        tl = Timeline()
        undo = tl.install()
        load0 = os.getloadavg()[0]
        fit = tl.wrap(_fit, "**fit**")
        _, wall, cpu = fit(X, operator)
        undo()
        pw, pc = _pca(X)
        print(
            f"\n{name} ({variant}): P = {X.shape[1]:,},",
            f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}",
        )
        print("| phase | wall s | CPU s | CPU / wall | busiest thread CPU s | CPU / busiest |")
        print("|---|---:|---:|---:|---:|---:|")
        top, rows = 0.0, list(tl.acc.items())
        for label, (w, c, b) in rows[-1:] + rows[:-1]:
            print(
                f"| {label} | {w:.2f} | {c:.2f} | {c / w:.2f} | {b:.2f} | {c / max(b, 1e-9):.2f} |"
            )
            top += w if label[0] not in " *" else 0.0
        print(f"| rest (scan, set-up, ordering) | {wall - top:.2f} | | | | |")
        per = {}
        for ident, k, c, w in tl.steps:  # the finishing's steps by thread
            per.setdefault(ident, []).append(f"{k}: {c:.2f} CPU s / {w:.2f} s")
        print("finishing steps by thread:", "; ".join(", ".join(v) for v in per.values()))
        print(f"| randomized PCA | {pw:.2f} | {pc:.2f} | {pc / pw:.2f} | | |")
        print(f"fit / PCA: wall {wall / pw:.2f}x, CPU {cpu / pc:.2f}x")


def _variant(name):
    from neurospca.decomposition import _lockstep, _support

    _support.PARALLEL_FINISH = name in ("parallel", "both")
    _lockstep.LEND_KERNELS = name in ("lent", "both")


#: "serial": main's code (the finishings one after the other, one start at a
#: time); "parallel": the finishings side by side; "lent": the starts' kernels
#: at once; "both": this branch.
VARIANTS = ("serial", "parallel", "lent", "both")


def pca_row(X, name, r, blanks):
    """A randomized PCA of ``X``: its table row (``blanks`` empty cells after
    CPU / wall) printed, ``(wall, CPU)`` returned."""
    pw, pc = _pca(X)
    print(
        f"| {name} | {r} | randomized PCA | {os.getloadavg()[0]:.1f} | {pw:.2f} "
        f"| {pc:.2f} | {pc / pw:.2f} |" + " |" * blanks,
        flush=True,
    )
    return pw, pc


def fits_header(load, *extra):
    """Print the header of :func:`fit_row`'s table: ``load``'s label, then the
    ``extra`` columns (right-aligned; shared with ``bench_fin22t``)."""
    cols = ["data", "round", "variant", load, "wall s", "CPU s", "CPU/wall", "x PCA wall"]
    cols += ["x PCA CPU", *extra]
    print("| " + " | ".join(cols) + " |")
    print("|---|---:|---|" + "---:|" * (len(cols) - 3))


def each_round(sets, rounds):
    """``(name, round, X, operator)`` of ``bench_datapath``'s sets, each set
    loaded once (shared with ``bench_fin22t``)."""
    import bench_datapath

    for name in sets:
        X, operator = bench_datapath._load(name, None)
        for r in range(rounds):
            yield name, r, X, operator


def compare(sets, rounds, variants):
    fits_header("load", "finishing s", "max abs diff")
    refs = {}  # each set's first fit
    for name, r, X, operator in each_round(sets, rounds):
        pw, pc = pca_row(X, name, r, 4)
        for v in variants if r % 2 == 0 else variants[::-1]:
            _variant(v)
            load = os.getloadavg()[0]
            m, wall, cpu = _fit(X, operator)
            comps = np.asarray(m.components_)
            ref = refs.setdefault(name, comps)
            diff = float(np.max(np.abs(comps - ref)))
            fit_row(
                (name, r, v, load),
                (wall, cpu, pw, pc),
                f"{np.nansum(m.support_time_):.2f}",
                f"{diff:.1e}",
            )


def fit_row(where, times, *extra):
    """Print one fit's table row: ``where`` = (data, round, variant, load),
    ``times`` = (wall, CPU, the round's PCA wall, its CPU), then ``extra`` cells
    (shared with ``bench_fin22t``)."""
    name, r, v, load = where
    wall, cpu, pw, pc = times
    cells = [name, r, v, f"{load:.2f}", f"{wall:.2f}", f"{cpu:.2f}", f"{cpu / wall:.2f}"]
    cells += [f"{wall / pw:.2f}x", f"{cpu / pc:.2f}x", *extra]
    print("| " + " | ".join(map(str, cells)) + " |", flush=True)


def compare_parser(doc, first, variants):
    """The arguments of a benchmark with ``first`` (e.g. ``--timeline``) and
    ``--compare SETS --rounds R --variants V...`` (shared with ``bench_fin22t``)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument(first, nargs="+")
    ap.add_argument("--compare", nargs="+")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", nargs="+", default=list(variants))
    return ap


def main():
    args = compare_parser(__doc__, "--timeline", VARIANTS).parse_args()
    warnings.simplefilter("ignore")
    if args.timeline:
        timeline(args.timeline, args.variants)
    if args.compare:
        compare(args.compare, args.rounds, args.variants)


if __name__ == "__main__":
    main()
