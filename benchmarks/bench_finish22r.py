"""Issue 22 round 18: the joint fit's finishing at P = 636k (branch finish22r).

``--finish SET [--variants main branch ...] [--rounds R] [--cprofile]``: one
joint fit (``SPCATV(3, alpha_rel=1.0)``, tol 1e-3, ``bench_datapath``'s
``joint``) whose certified-support finishing (``_support.certify_fit``) is
captured, then that finishing run again per variant, alternating, in the same
process on the same fitted state: CPU seconds (``time.process_time``),
finishing iterations, radii / peak, certified non-zeros, the largest
difference of the loadings, the distance over the sum of the certified radii
(at most 1 for two certified points of the same v-steps), the certified
supports' disagreements (a feature certified non-zero by one variant and zero
by the other: must be 0).

``--compare SET [--variants ...] [--rounds R]``: whole fits alternating in one
process, per variant: CPU, passes, sweeps, J, the components' differences.

Variants (:data:`VARIANTS`): "main" runs the certificates of main's tree (43b4c0a).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_finish22r.py --finish cube86 --rounds 2
    OMP_NUM_THREADS=1 python benchmarks/bench_finish22r.py --compare cube86 --rounds 2
"""

import argparse
import copy
import cProfile
import os
import pstats
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _support_module(tree):
    """``neurospca/solvers/support.py`` of ``tree`` (None: this tree's), loaded
    beside this tree's package (its relative imports are this tree's)."""
    import importlib.util

    from neurospca.solvers import support

    if tree is None:
        return support
    name = "neurospca.solvers._support_of_" + os.path.basename(os.path.abspath(tree))
    path = os.path.join(tree, "neurospca", "solvers", "support.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _certificates_of(tree):
    """A variant: the finishing's certificates and working sets from ``tree``'s
    ``solvers/support.py``, and main's restart checks (``_start.MATVEC_ONCE``
    off) unless ``tree`` is None (the rest of the fit is this tree's)."""

    def apply():
        from neurospca.decomposition import _joint_certify, _start, _support

        _start.MATVEC_ONCE = tree is None  # the restart checks' products once (this tree)
        module = apply.module = getattr(apply, "module", None) or _support_module(tree)
        _support.working_set, _support.pair_radius = module.working_set, module.pair_radius
        _support.certify_support = _joint_certify.certify_support = module.certify_support

    return apply


#: name -> function putting that variant in place. "main": the certificates of
#: ``BENCH_MAIN`` (default /work/main); "branch": this tree's.
VARIANTS = {
    "main": _certificates_of(os.environ.get("BENCH_MAIN", "/work/main")),
    "branch": _certificates_of(None),
    "no-once": lambda: (_certificates_of(None)(), setattr(_start_module(), "MATVEC_ONCE", False)),
}


def _start_module():
    from neurospca.decomposition import _start

    return _start


def _fit(name, X, operator):
    from neurospca import SPCATV

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(3, operator=operator, tol=1e-3, random_state=0, alpha_rel=1.0)
        return m.fit(X)


def capture(name):
    """``(X, model, saved)``: a joint fit and its finishing's inputs."""
    import bench_datapath

    from neurospca.decomposition import _spcatv

    X, operator = bench_datapath._load(name, None)
    saved, real = {}, _spcatv.certify_fit

    def grab(est, op, U, V, info, weights, settings):
        saved.update(op=op, U=U.copy(), V=V.copy(), info=copy.deepcopy(info), w=weights, s=settings)
        return real(est, op, U, V, info, weights, settings)

    _spcatv.certify_fit = grab
    try:
        model = _fit(name, X, operator)
    finally:
        _spcatv.certify_fit = real
    return X, model, saved


def finish_once(model, saved, prof=None):
    """Run the captured finishing once: ``(cpu, V, info, labels)``."""
    from neurospca.decomposition import _support

    V, info = saved["V"].copy(), copy.deepcopy(saved["info"])
    c0 = time.process_time()
    if prof is not None:
        prof.enable()
    _support.certify_fit(model, saved["op"], saved["U"], V, info, saved["w"], saved["s"])
    if prof is not None:
        prof.disable()
    cpu = time.process_time() - c0
    labels = (model.certified_support_.copy(), model.certified_zeros_.copy())
    return cpu, V, info, labels, model.support_radius_.copy()


def finish(sets, variants, rounds, cprofile):
    print(
        "| data | round | variant | CPU s | finishing iterations | radius / peak | non-zero "
        "| max abs diff | distance / radii | support conflicts | uncertain |"
    )
    print("|---|---:|---|---:|---|---|---|---:|---:|---:|---|")
    for name in sets:
        X, model, saved = capture(name)
        base = np.asarray(saved["info"]["n_inner_iter"])
        ref = None
        for r in range(rounds):
            for variant in variants:
                VARIANTS[variant]()
                prof = cProfile.Profile(time.process_time) if cprofile else None
                cpu, V, info, (sup, zer), rad = finish_once(model, saved, prof)
                its = np.asarray(info["n_inner_iter"]) - base
                absr = rad * np.linalg.norm(V, axis=0)
                ref = ref or (V, absr, sup, zer)
                dist = np.linalg.norm(V - ref[0], axis=0) / (absr + ref[1])
                conflicts = int(((sup & ref[3]) | (zer & ref[2])).sum())
                peak = np.abs(V).max(axis=0)
                print(
                    f"| {name} | {r} | {variant} | {cpu:.2f} | {' / '.join(map(str, its))} "
                    f"| {'/'.join(f'{x:.4f}' for x in absr / peak)} "
                    f"| {'/'.join(map(str, sup.sum(axis=1)))} "
                    f"| {np.abs(V - ref[0]).max():.1e} | {np.nanmax(dist):.2f} | {conflicts} "
                    f"| {'/'.join(map(str, model.n_uncertain_))} |",
                    flush=True,
                )
                if prof is not None:
                    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        VARIANTS[variants[0]]()
        VARIANTS["main"]()


def compare(sets, variants, rounds):
    import bench_datapath

    from neurospca.decomposition._objective import fitted_objective

    print("| data | round | variant | CPU s | passes | sweeps | J | max abs diff | radius / norm |")
    print("|---|---:|---|---:|---:|---:|---|---:|---|")
    for name in sets:
        X, operator = bench_datapath._load(name, None)
        passes = bench_datapath._count_passes(X.nbytes)
        ref = None
        for r in range(rounds):
            for variant in variants:
                VARIANTS[variant]()
                p0 = passes()
                c0 = time.process_time()
                m = _fit(name, X, operator)
                cpu = time.process_time() - c0
                ref = m.components_ if ref is None else ref
                print(
                    f"| {name} | {r} | {variant} | {cpu:.2f} | {passes() - p0:.0f} "
                    f"| {m.n_sweeps_} | {fitted_objective(m, X, operator):.10g} "
                    f"| {np.abs(m.components_ - ref).max():.1e} "
                    f"| {'/'.join(f'{x:.4f}' for x in m.support_radius_)} |",
                    flush=True,
                )
        VARIANTS["main"]()


def recovery(sets, seeds, variants):
    """``--recovery``: the trust sets' joint fit at ``bench_joint22i.POINT`` per
    variant in one process: recovery, ``J``, the components' and
    ``dual_gaps_``' largest difference to the first variant."""
    from bench_joint22i import point_fits

    from neurospca.decomposition._objective import fitted_objective

    header = (
        "| set | seed | variant | abs cos | certified Dice | J | max abs diff of "
        "components / dual_gaps_ | CPU s |\n|---|---|---|---|---|---|---|---:|"
    )
    ref = None
    chosen = [(v, VARIANTS[v]) for v in variants]
    for name, seed, variant, X, op, fit in point_fits(sets, seeds, chosen, header):
        m, cpu, cos, dice = fit
        ref = (m.components_, m.dual_gaps_) if variant == variants[0] else ref
        dc, dg = np.abs(m.components_ - ref[0]).max(), np.abs(m.dual_gaps_ - ref[1]).max()
        print(
            f"| {name} | {seed} | {variant} | {cos} | {dice} "
            f"| {fitted_objective(m, X, op):.12g} | {dc:.1e} / {dg:.1e} | {cpu:.2f} |",
            flush=True,
        )
    VARIANTS["main"]()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--finish", nargs="+")
    ap.add_argument("--compare", nargs="+")
    ap.add_argument("--variants", nargs="+", default=["main", "branch"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--recovery", nargs="+")
    ap.add_argument("--seeds", nargs="+", type=int)
    args = ap.parse_args()
    if args.finish:
        finish(args.finish, args.variants, args.rounds, args.cprofile)
    if args.compare:
        compare(args.compare, args.variants, args.rounds)
    if args.recovery:
        recovery(args.recovery, args.seeds, args.variants)


if __name__ == "__main__":
    main()
