"""Issue 22 round 10: would Jacobi sweeps keep the joint fit's quality?

The passes left in a joint fit whose starts run side by side (round 10) are
those of its longest start: deflation (8 on the memmap test), its sweeps (one
pass per refit: 3 per sweep) and its restart checks. A Jacobi sweep (every
component refitted against the OTHERS' STATE BEFORE THE SWEEP) would let one
pass serve all the refits of a sweep (3 -> 1). Before building that, this
measures what the change of algorithm does to the fits: ``_joint._sweep`` is
replaced by a Jacobi sweep (the refits computed one after the other from the
frozen state: the numbers a batched sweep would give) and the paper
simulation is fitted both ways (float64 in memory, ``SPCATV(3,
alpha_rel=1.0)``): recovery |cos| of the matched patterns, Dice of the
certified support against the true support, the joint objective, sweeps,
whether they settled, and the largest relative gap.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_joint22i.py --seeds 3297 3298 --corr 0 0.7
"""

import argparse
import time
import warnings

import numpy as np

import neurospca.decomposition._joint as joint
from neurospca import SPCATV, make_paper_simulation, match_components, tv_from_mask
from neurospca.decomposition._data import validated_data_operator
from neurospca.decomposition._objective import joint_objective
from neurospca.solvers.penalties import eq3_pieces

GAUSS_SEIDEL = joint._sweep


def jacobi_sweep(op, sqnorm, U, V, d, Z, info, kw):
    """:func:`joint._sweep` with every refit against the state before the sweep."""
    old = U.copy(), V.copy(), d.copy(), Z.copy()
    caught, new = [], {}
    for k in range(U.shape[1]):
        if not np.any(old[1][:, k]):
            continue
        new[k] = joint._refit(op, sqnorm, *old, k, info["w"][k], kw)
    for k in range(U.shape[1]):
        if k not in new:  # an empty one comes back against the new state
            joint._revive(op, sqnorm, U, V, d, Z, k, info, kw)
            continue
        u, v, res, warned = new[k]
        caught.extend(w for w in warned if "v-step" in str(w.message))
        U[:, k], V[:, k], d[k] = u, v, res["d"][0]
        Z[:, k] = joint._xv(op, v, kw) if np.any(v) else 0.0
        joint._merge_info(info, k, res)
    return caught


def _objective(est, X, op):
    data = validated_data_operator(est, X, reset=True, min_samples=2, n_threads=1)
    data.centre(est.mean_)
    w = est.penalty_weights_
    pieces = eq3_pieces(w["l1"], w["tv"], op, w["l2"])
    return joint_objective(data, est.scores_, est.loadings_, w["l2"], pieces)


def _dice(a, b):
    return 2.0 * np.sum(a & b) / max(1, np.sum(a) + np.sum(b))


def _row(seed, corr, sweep):
    X, patterns, mask = make_paper_simulation(
        150, random_state=seed, shape=(30, 30), correlation=corr
    )
    op = tv_from_mask(mask)
    joint._sweep = sweep
    t = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = SPCATV(3, operator=op, alpha_rel=1.0, random_state=0).fit(X)
    cpu = time.process_time() - t
    joint._sweep = GAUSS_SEIDEL
    order, _, cos = match_components(patterns, est)
    truth = np.asarray(patterns) != 0
    dice = [_dice(truth[i], est.certified_support_[j]) for i, j in enumerate(order)]
    settled = not any("did not settle" in str(w.message) for w in caught)
    return dict(
        cos=cos,
        dice=np.array(dice),
        J=_objective(est, X, op),
        sweeps=est.n_sweeps_,
        settled=settled,
        gap=float(np.nanmax(est.rel_gaps_)),
        cpu=cpu,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", required=True)
    ap.add_argument("--corr", type=float, nargs="+", default=[0.0, 0.7])
    args = ap.parse_args()
    print(
        "| r | seed | sweeps | |cos| GS / Jacobi | certified Dice GS / Jacobi "
        "| J GS / Jacobi (rel. diff) | sweeps GS / Jacobi | settled | max rel gap | CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for corr in args.corr:
        for seed in args.seeds:
            a, b = _row(seed, corr, GAUSS_SEIDEL), _row(seed, corr, jacobi_sweep)
            fmt = "/".join
            print(
                f"| {corr} | {seed} | | {fmt(f'{c:.3f}' for c in a['cos'])} ; "
                f"{fmt(f'{c:.3f}' for c in b['cos'])} | {fmt(f'{c:.2f}' for c in a['dice'])} ; "
                f"{fmt(f'{c:.2f}' for c in b['dice'])} | {a['J']:.6g} / {b['J']:.6g} "
                f"({(b['J'] - a['J']) / abs(a['J']):+.1e}) | {a['sweeps']} / {b['sweeps']} "
                f"| {a['settled']} / {b['settled']} | {a['gap']:.1e} / {b['gap']:.1e} "
                f"| {a['cpu']:.1f} / {b['cpu']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
