"""Issue 22 round 20: the joint fit's finishing on two cores (branch fin22t).

``--finish SET [SET ...] [--rounds R]``: one joint fit (``bench_datapath``'s
``joint`` setting: ``SPCATV(3, alpha_rel=1.0, tol=1e-3, random_state=0)``,
default threads) whose certified-support finishing (``_support.certify_fit``)
is captured, then that finishing run again per variant, alternating, on the
same state: wall, CPU (the process's), cores, the wall of its phases (the
Jacobi steps, the returned pairs' gaps), and for the finishing's threads
what they did with their wall (from ``/proc/self/task/<tid>/schedstat`` at
the start and end of each step: on a core, waiting for a core in the run
queue, asleep: the GIL, a lock), the time in the compiled v-step kernels
(GIL released), and whether the loadings, gaps and labels equal the first
run's bit for bit.

``--quiet S``: before each run, wait up to S seconds until the rest of the
machine uses under 0.3 cores (the "others' cores" column: what it used in
the second before the run).

``--compare SET [SET ...] [--rounds R]``: per round a randomized PCA
(``PCA(3, svd_solver="randomized", random_state=0)``, default BLAS threads),
then one whole fit per variant (the order turned every round), in one
process: wall, CPU, ratios to that round's PCA, the largest differences of
the components and ``dual_gaps_`` to the first fit, whether the certified
supports are equal.

Variants (:data:`VARIANTS`): "main" (the finishing's components on one thread
per core, the returned pairs' gaps one after the other: main's code) and
"branch" (``_support.SHARE_CORES``: every component at once;
``_joint_certify.PARALLEL_PAIRS``: the returned pairs side by side).

Usage::

    python benchmarks/bench_fin22t.py --finish cube86 cube124 --rounds 3
    python benchmarks/bench_fin22t.py --compare cube86 cube124 --rounds 2
"""

import collections
import copy
import os
import sys
import threading
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

#: The variants' switches: (``_support.PARALLEL_FINISH``, ``_support.SHARE_CORES``,
#: ``_joint_certify.PARALLEL_PAIRS``); "serial": the components one after the other.
VARIANTS = {
    "serial": (False, False, False),
    "main": (True, False, False),
    "branch": (True, True, True),
    "share": (True, True, False),
    "pairs": (True, False, True),
}


def _variant(name):
    from neurospca.decomposition import _joint_certify, _support

    flags = VARIANTS[name]
    _support.PARALLEL_FINISH, _support.SHARE_CORES, _joint_certify.PARALLEL_PAIRS = flags


def _busy_others(seconds=1.0):
    """Cores the rest of the machine used over ``seconds`` (``/proc/stat`` less this process)."""

    def ticks():
        with open("/proc/stat") as f:
            cpu = [int(x) for x in f.readline().split()[1:]]
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()
        return sum(cpu) - cpu[3] - cpu[4], int(own[11]) + int(own[12])

    (b0, o0), t0 = ticks(), time.perf_counter()
    time.sleep(seconds)
    (b1, o1), t1 = ticks(), time.perf_counter()
    return ((b1 - b0) - (o1 - o0)) / TICK / (t1 - t0)


TICK = os.sysconf("SC_CLK_TCK")
#: ``--quiet S``: before each run, wait up to S seconds for the rest of the
#: machine to use under :data:`QUIET_CORES` (the other sessions' benchmarks).
QUIET = {"wait": 0.0}
QUIET_CORES = 0.3


def _wait_quiet():
    """Wait (up to ``QUIET["wait"]`` s) for a quiet machine; the others' cores then."""
    t0 = time.perf_counter()
    while True:
        busy = _busy_others()
        if busy < QUIET_CORES or time.perf_counter() - t0 > QUIET["wait"]:
            return busy


def _sched():
    """``(on a core, in the run queue)`` seconds of the calling thread."""
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
        run, wait = f.read().split()[:2]
    return int(run) / 1e9, int(wait) / 1e9


class Threads:
    """Per finishing thread: its steps' wall, CPU, run-queue wait, sleep and
    the wall inside the v-step kernels (``_dual_kernels.lend``'s calls)."""

    def __init__(self):
        self.acc = collections.defaultdict(collections.Counter)

    def install(self):
        from neurospca.decomposition import _support
        from neurospca.solvers import _dual_kernels

        timed, lend, acc = _support._timed, _dual_kernels.lend, self.acc

        def step_timed(step, k):
            t0, (c0, q0) = time.perf_counter(), _sched()
            try:
                return timed(step, k)
            finally:
                c1, q1 = _sched()
                a = acc[threading.get_ident()]
                a["wall"] += time.perf_counter() - t0
                a["cpu"] += c1 - c0
                a["runq"] += q1 - q0
                a["steps"] += 1

        def lent(fn):
            inner = lend(fn)

            def kernel(*args, **kwargs):
                t0 = time.perf_counter()
                try:
                    return inner(*args, **kwargs)
                finally:
                    acc[threading.get_ident()]["kernel"] += time.perf_counter() - t0

            return kernel

        _support._timed, _dual_kernels.lend = step_timed, lent

        def undo():
            _support._timed, _dual_kernels.lend = timed, lend

        return undo


def _phases():
    """Wrap the finishing's phases (calling thread): ``(acc, undo)``."""
    from neurospca.decomposition import _joint_certify

    acc, undo = {}, []
    for name in ("Snapshot", "_returned_pairs"):
        orig = getattr(_joint_certify, name)

        def timed(*args, _orig=orig, _name=name, **kwargs):
            t0 = time.perf_counter()
            try:
                return _orig(*args, **kwargs)
            finally:
                acc[_name] = acc.get(_name, 0.0) + time.perf_counter() - t0

        setattr(_joint_certify, name, timed)
        undo.append((name, orig))
    return acc, lambda: [setattr(_joint_certify, n, o) for n, o in undo]


def finish(sets, rounds, variants):
    import bench_finish22r

    from neurospca.decomposition import _support

    print(
        "| data | round | variant | others' cores | wall s | CPU s | cores | snapshot s | steps s "
        "| returned pairs s | threads: CPU / run queue / asleep / kernel s | same bits |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for name in sets:
        _, model, saved = bench_finish22r.capture(name)
        ref = None
        for r in range(rounds):
            for v in variants if r % 2 == 0 else variants[::-1]:
                _variant(v)
                th = Threads()
                undo_t = th.install()
                acc, undo_p = _phases()
                load = _wait_quiet()
                V, info = saved["V"].copy(), copy.deepcopy(saved["info"])
                t0, c0 = time.perf_counter(), time.process_time()
                _support.certify_fit(
                    model, saved["op"], saved["U"], V, info, saved["w"], saved["s"]
                )
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                undo_p()
                undo_t()
                out = (
                    V,
                    np.asarray(info["gaps"]),
                    np.asarray(info["snapshot_gaps"]),
                    model.certified_support_.copy(),
                    model.certified_zeros_.copy(),
                    np.asarray(info["n_inner_iter"]),
                )
                ref = out if ref is None else ref
                same = all(np.array_equal(a, b) for a, b in zip(out, ref, strict=True))
                steps = wall - sum(acc.values())
                per = "; ".join(
                    f"{a['steps']}: {a['cpu']:.2f} / {a['runq']:.2f} / "
                    f"{a['wall'] - a['cpu'] - a['runq']:.2f} / {a['kernel']:.2f}"
                    for a in th.acc.values()
                )
                print(
                    f"| {name} | {r} | {v} | {load:.2f} | {wall:.2f} | {cpu:.2f} | {cpu / wall:.2f}"
                    f" | {acc.get('Snapshot', 0):.2f} | {steps:.2f}"
                    f" | {acc.get('_returned_pairs', 0):.2f} | {per} | {same} |",
                    flush=True,
                )


def compare(sets, rounds, variants):
    from bench_wall22s import _fit, _pca, each_round, fit_row, fits_header

    fits_header(
        "others' cores", "max diff components", "max diff dual_gaps_", "same certified support"
    )
    refs = {}  # each set's first fit
    for name, r, X, operator in each_round(sets, rounds):
        load = _wait_quiet()
        pw, pc = _pca(X)
        print(
            f"| {name} | {r} | randomized PCA | {load:.2f} | {pw:.2f} | {pc:.2f} "
            f"| {pc / pw:.2f} | | | | | |",
            flush=True,
        )
        for v in variants if r % 2 == 0 else variants[::-1]:
            _variant(v)
            load = _wait_quiet()
            m, wall, cpu = _fit(X, operator)
            out = (
                np.asarray(m.components_),
                np.asarray(m.dual_gaps_),
                m.certified_support_,
                m.certified_zeros_,
            )
            ref = refs.setdefault(name, out)
            same = np.array_equal(out[2], ref[2]) and np.array_equal(out[3], ref[3])
            fit_row(
                (name, r, v, load),
                (wall, cpu, pw, pc),
                f"{np.max(np.abs(out[0] - ref[0])):.1e}",
                f"{np.max(np.abs(out[1] - ref[1])):.1e}",
                same,
            )


def main():
    from bench_wall22s import compare_parser

    ap = compare_parser(__doc__, "--finish", ["main", "branch"])
    ap.add_argument("--quiet", type=float, default=0.0)
    args = ap.parse_args()
    QUIET["wait"] = args.quiet
    warnings.simplefilter("ignore")
    print(f"uptime: {os.getloadavg()}, {time.strftime('%H:%M:%S', time.gmtime())} UTC")
    if args.finish:
        finish(args.finish, args.rounds, args.variants)
    if args.compare:
        compare(args.compare, args.rounds, args.variants)
    print(f"uptime: {os.getloadavg()}, {time.strftime('%H:%M:%S', time.gmtime())} UTC")


if __name__ == "__main__":
    main()
