"""Issue 22 round 17: the joint fit's sweeps at large P (branch sweep22q).

Both variants run in ONE process, alternating, so that their CPU seconds
(``time.process_time``, every thread) compare at the same load: "main" puts
main's sweeps back (the certify step without the own-pair bound,
``_alternation.OWN_PAIRS = False``, and main's ``rotate_pairs``, loaded from
``--main-tree``), "branch" is this tree's.

``--compare SET ... [--rounds R]``: ``bench_datapath``'s data (``cube86``,
``cube124``), ``SPCATV(3, alpha_rel=1.0, tol=1e-3, random_state=0)`` (its
``joint`` setting; ``cubeN:S``: the cube data of side N with data seed S):
CPU of the fit and of its sweeps (restarts' sweeps
included), sweeps returned, certify steps that evaluated a gap (``prox_gap``
calls in the sweeps), the largest difference of the components and of
``dual_gaps_`` to "main".

``--counts SET``: one fit of this tree, its starts one after the other: per
sweep, the v-steps' iterations per component, the certify steps' gap
evaluations and re-solves, the support flips per component and ``J``.

``--variants``: also "jstop", the branch with ``_joint.SWEEP_J_STOP`` (the
sweeps stop after a sweep that rotated nothing and raised ``J``).

``--recovery SET ... --seeds S ...``: the trust sets at ``bench_joint22i.POINT``,
both variants: recovery |cos|, certified Dice, ``J``, the largest difference
of the components, CPU.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_sweep22q.py --compare cube86 cube124 \\
        --main-tree /work/main
    OMP_NUM_THREADS=1 python benchmarks/bench_sweep22q.py --counts cube124
    OMP_NUM_THREADS=1 python benchmarks/bench_sweep22q.py --recovery paper-0.7 fs5-0.5 \\
        c69-0.6 --seeds 3660 3661 --main-tree /work/main
"""

import argparse
import importlib.util
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class _Tally:
    """CPU seconds in the sweeps, ``prox_gap`` calls there, per-sweep rows."""

    def __init__(self):
        from neurospca.decomposition import _alternation, _joint
        from neurospca.solvers import _problem

        self.sweeps_cpu, self.gaps, self.depth, self.rows = 0.0, 0, 0, []
        self.resolves = 0
        self.saved = [
            (_joint, "_sweeps", self._wrap_sweeps(_joint._sweeps)),
            (_joint, "_sweep", self._wrap_sweep(_joint._sweep)),
            (_problem, "prox_gap", self._wrap_gap(_problem.prox_gap)),
            (_alternation, "_certify_pair", self._wrap_cert(_alternation._certify_pair)),
        ]

    def __enter__(self):
        self.saved = [(mod, name, getattr(mod, name), new) for mod, name, new in self.saved]
        for mod, name, _, new in self.saved:
            setattr(mod, name, new)
        return self

    def __exit__(self, *exc):
        for mod, name, old, _ in self.saved:
            setattr(mod, name, old)

    def _wrap_sweeps(self, fn):
        def run(*args, **kw):
            self.rows.append(None)  # a new run of sweeps
            c0 = time.process_time()
            try:
                return fn(*args, **kw)
            finally:
                self.sweeps_cpu += time.process_time() - c0

        return run

    def _wrap_sweep(self, fn):
        from neurospca.decomposition import _joint

        def run(op, sqnorm, U, V, d, Z, info, kw):
            it0, gaps0, res0 = np.array(info["n_inner_iter"]), self.gaps, self.resolves
            support = V != 0
            out = fn(op, sqnorm, U, V, d, Z, info, kw)
            flips = (support != (V != 0)).sum(axis=0)
            iters = np.array(info["n_inner_iter"]) - it0
            J = _joint._objective(op, U, V, Z, kw)
            self.rows.append((iters, self.gaps - gaps0, self.resolves - res0, flips, J))
            return out

        return run

    def _wrap_gap(self, fn):
        def run(*args, **kw):
            self.gaps += self.depth > 0
            return fn(*args, **kw)

        return run

    def _wrap_cert(self, fn):
        def run(*args, **kw):
            self.depth += 1
            try:
                v, res, extra = fn(*args, **kw)
            finally:
                self.depth -= 1
            self.resolves += extra > 0
            return v, res, extra

        return run


def _variant(name, main_tree):
    """Set "main" (main's rotation, no own-pair bound), "branch" or "jstop"
    (the branch with ``_joint.SWEEP_J_STOP``)."""
    from neurospca.decomposition import _alternation, _joint, _rotation

    if not hasattr(_variant, "main"):
        path = os.path.join(main_tree, "neurospca", "decomposition", "_rotation.py")
        spec = importlib.util.spec_from_file_location("main_rotation", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _variant.main = module.rotate_pairs
    _alternation.OWN_PAIRS = name != "main"
    _joint.SWEEP_J_STOP = name == "jstop"
    _joint.rotate_pairs = _variant.main if name == "main" else _rotation.rotate_pairs


def _fit(X, op, **params):
    from neurospca import SPCATV

    with _Tally() as tally, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c0 = time.process_time()
        m = SPCATV(3, operator=op, random_state=0, **params).fit(X)
        cpu = time.process_time() - c0
    return m, cpu, tally


def _radius_peak(m):
    """The certified support's radius over each component's peak."""
    peak = np.abs(m.components_).max(axis=1) / np.linalg.norm(m.components_, axis=1)
    return "/".join(f"{r:.4f}" for r in m.support_radius_ / peak)


def _data(name):
    """``bench_datapath``'s ``cubeN`` (data seed 0), or ``cubeN:S`` (data seed ``S``)."""
    import bench_datapath

    from neurospca import tv_from_mask

    n, seed = (int(x) for x in name[4:].split(":")) if ":" in name else (int(name[4:]), 0)
    return bench_datapath.cube_data(n, seed=seed), tv_from_mask(np.ones((n,) * 3, bool))


def _blobs(name):
    """The planted blobs of ``bench_datapath.cube_data`` (its draws replayed)."""
    n, seed = (int(x) for x in name[4:].split(":")) if ":" in name else (int(name[4:]), 0)
    rng = np.random.default_rng(seed)
    grid = np.indices((n,) * 3).reshape(3, -1).T / n
    rng.standard_normal((100, grid.shape[0]))
    rng.standard_normal((100, 3))
    centres = rng.uniform(0.25, 0.75, (3, 3))
    return np.array([np.exp(-((grid - c) ** 2).sum(axis=1) / 0.01) for c in centres])


def compare(sets, rounds, main_tree, variants):
    from _trust import recovery as matched

    from neurospca.decomposition._objective import fitted_objective

    print(
        "| data | round | variant | CPU s | sweeps' CPU s | sweeps | gaps in certify steps "
        "| J (sum of gaps) | radius / peak | abs cos of the blobs | max abs diff of components "
        "| of dual_gaps_ |\n|---|---:|---|---:|---:|---:|---:|---|---|---|---:|---:|"
    )
    for name in sets:
        X, op = _data(name)
        blobs, ref = _blobs(name), None
        for r in range(rounds):
            for variant in variants:
                _variant(variant, main_tree)
                m, cpu, tally = _fit(X, op, tol=1e-3, alpha_rel=1.0)
                ref = ref or m
                print(
                    f"| {name} | {r} | {variant} | {cpu:.2f} | {tally.sweeps_cpu:.2f} "
                    f"| {m.n_sweeps_} | {tally.gaps} "
                    f"| {fitted_objective(m, X, op):.10g} ({m.dual_gaps_.sum():.1e}) "
                    f"| {_radius_peak(m)} "
                    f"| {'/'.join(f'{c:.3f}' for c in matched(m.components_, blobs)[0])} "
                    f"| {np.abs(m.components_ - ref.components_).max():.1e} "
                    f"| {np.abs(m.dual_gaps_ - ref.dual_gaps_).max():.1e} |",
                    flush=True,
                )
    _variant("branch", main_tree)


def counts(name):
    import bench_datapath

    from neurospca.decomposition import _lockstep

    _lockstep.SIDE_BY_SIDE = False  # the starts one after the other: rows in order
    X, op = bench_datapath._load(name, None)
    m, cpu, tally = _fit(X, op, tol=1e-3, alpha_rel=1.0)
    print(f"{name}: CPU {cpu:.2f} s, sweeps' {tally.sweeps_cpu:.2f} s, {m.n_sweeps_} returned")
    print("| run | sweep | v-step iterations | gap evaluations | re-solves | support flips | J |")
    print("|---:|---:|---|---:|---:|---|---|")
    run, sweep = 0, 0
    for row in tally.rows:
        if row is None:
            run, sweep = run + 1, 0
            continue
        sweep += 1
        iters, gaps, res, flips, J = row
        print(
            f"| {run} | {sweep} | {'/'.join(map(str, iters))} | {gaps} | {res} "
            f"| {'/'.join(map(str, flips))} | {J:.10g} |"
        )


def recovery(sets, seeds, main_tree, variants):
    from bench_joint22i import point_fits

    from neurospca.decomposition._objective import fitted_objective

    header = (
        "| set | seed | variant | abs cos | certified Dice | J | max abs diff of components "
        "| CPU s |\n|---|---|---|---|---|---|---:|---:|"
    )
    variants = [(v, lambda v=v: _variant(v, main_tree)) for v in variants]
    ref = None
    for name, seed, variant, X, op, fit in point_fits(sets, seeds, variants, header):
        m, cpu, cos, dice = fit
        ref = m if variant == "main" else ref
        print(
            f"| {name} | {seed} | {variant} | {cos} | {dice} | {fitted_objective(m, X, op):.12g} "
            f"| {np.abs(m.components_ - ref.components_).max():.1e} | {cpu:.2f} |",
            flush=True,
        )
    _variant("branch", main_tree)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", nargs="+")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--counts")
    ap.add_argument("--recovery", nargs="+")
    ap.add_argument("--seeds", nargs="+", type=int)
    ap.add_argument("--main-tree", default="/work/main")
    ap.add_argument("--variants", nargs="+", default=["main", "branch"])
    args = ap.parse_args()
    if args.compare:
        compare(args.compare, args.rounds, args.main_tree, args.variants)
    if args.counts:
        counts(args.counts)
    if args.recovery:
        recovery(args.recovery, args.seeds, args.main_tree, args.variants)


if __name__ == "__main__":
    main()
