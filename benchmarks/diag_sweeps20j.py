"""Why the cold first point of ``alpha_rel="auto"`` does not settle (issue 20 round 11).

For each instance, the two split halves of the default fit (``split_halves``, seed 0) are
fitted as the walk's first point (``_half_models``: default split (0.05, 0.1), cold, no
search) and every sweep prints the joint objective ``J``, the relative change of each
loading, the non-zero fraction, the largest |u_j . u_k| of the scores and whether pairs were
rotated. At the end: the largest |cos| between the returned loadings and the recovery of the
planted regions. ``--mode J`` replaces, inside the sweeps, the other components' least-squares
scale ``d_j`` by ``J``'s best scales (exact block-coordinate descent of ``J``; an experiment,
not the library's sweeps). ``--copies`` evaluates ``J`` of a full fixed-penalty fit with one
component replaced by a copy of another::

    OMP_NUM_THREADS=1 python benchmarks/diag_sweeps20j.py fs5-0.8:3313 --sweeps 40
    OMP_NUM_THREADS=1 python benchmarks/diag_sweeps20j.py fs5-0.8:3313 --copies
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import recovery  # noqa: E402
from bench_trust_defaults import load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import _joint, _stability  # noqa: E402
from neurospca.decomposition._data import validated_data_operator  # noqa: E402
from neurospca.decomposition._objective import (  # noqa: E402
    _penalty_terms,  # noqa: E402
    best_scales,
    joint_objective,
)
from neurospca.decomposition._split_groups import groups_of  # noqa: E402
from neurospca.solvers.penalties import eq3_pieces  # noqa: E402

LOG, CTX = [], {}


def _instrument(mode):
    """Record each sweep (and, with mode "J", remove the others at J's best scales)."""
    others, sweep, rotate = _joint._others, _joint._sweep, _joint.rotate_pairs

    def j_others(op, sqnorm, U, V, d, Z, k, cache=None):
        kw, norms = CTX["kw"], np.linalg.norm(V, axis=0)
        keep = np.flatnonzero(norms > 0)
        E = V[:, keep] / norms[keep]
        a = np.einsum("ij,ij->j", U[:, keep], Z[:, keep] / norms[keep])
        G = (U[:, keep].T @ U[:, keep]) * (E.T @ E)
        t = np.array([_penalty_terms(kw["pieces"], kw["l2"], E[:, j]) for j in range(keep.size)])
        d = np.array(d, dtype=float)
        d[keep] = best_scales(a, G, t[:, 0], t[:, 1], kw["l2"], op.shape[0])[0] / norms[keep]
        return others(op, sqnorm, U, V, d, Z, k, None)

    def rotated(*args):
        CTX["rot"] = rotate(*args)
        return CTX["rot"]

    def traced(op, sqnorm, U, V, d, Z, info, kw):
        CTX["kw"], CTX["rot"], V0 = kw, 0, V.copy()
        out = sweep(op, sqnorm, U, V, d, Z, info, kw)
        C = np.abs(U.T @ U)
        np.fill_diagonal(C, 0.0)
        change = np.linalg.norm(V - V0, axis=0) / np.maximum(np.linalg.norm(V, axis=0), 1e-300)
        J = _joint._objective(op, U, V, Z, kw)
        LOG.append((J, change, np.mean(V != 0, axis=0), C.max(), CTX["rot"], _max_cos(V.T)))
        return out

    _joint._sweep, _joint.rotate_pairs = traced, rotated
    if mode == "J":
        _joint._others = j_others


def _max_cos(C):
    n = np.linalg.norm(C, axis=1)
    cc = np.abs(C @ C.T) / np.outer(n, n)
    np.fill_diagonal(cc, 0.0)
    return float(cc.max())


def trace(name, seed, alpha_rel, sweeps, mode):
    """The first point's sweeps on both halves of instance ``name`` / ``seed``."""
    X, op, P = load(name, seed)
    est = SPCATV(3, operator=op, random_state=0)
    halves = _stability.split_halves(X, 0, groups_of(est))
    params = dict(alpha=None, alpha_rel=alpha_rel, l1_ratio=0.05, tv_ratio=0.1, max_sweeps=sweeps)
    for h, model in enumerate(_stability._half_models(est)):
        LOG.clear()
        t0 = time.process_time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.set_params(**params).fit(halves[h])
        settled = not any("did not settle" in str(w.message) for w in caught)
        cos, dice = recovery(model.components_, P)
        print(
            f"{name} {seed} half {h} alpha_rel {alpha_rel:g} mode {mode}: {len(LOG)} sweeps, "
            f"settled {settled}, {time.process_time() - t0:.2f} CPU s, largest |cos| between "
            f"loadings {_max_cos(model.components_):.3f}, abs cos {np.round(cos, 2)}, "
            f"Dice {np.round(dice, 2)}"
        )
        for w in caught:
            if "stopped" in str(w.message):
                print("  " + str(w.message)[:160])
        for i, (J, change, nz, col, rot, vcos) in enumerate(LOG):
            print(
                f"  sweep {i + 1:3d} J {J:.9f} change {np.round(change, 3)} "
                f"non-zero {np.round(nz, 2)} max|u.u| {col:.3f} vcos {vcos:.3f} rotated {rot}"
            )


def copies(name, seed, alpha_rel):
    """J of a full fixed-penalty fit, and with one component replaced by a copy of another."""
    X, op, P = load(name, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(3, operator=op, alpha_rel=alpha_rel, random_state=0).fit(X)
    data = validated_data_operator(m, X, reset=True, min_samples=2, n_threads=1)
    data.centre(m.mean_)
    w = m.penalty_weights_
    pieces = eq3_pieces(w["l1"], w["tv"], op, w["l2"])
    U, V = m.scores_, m.loadings_

    def J(cols):
        return joint_objective(data, U[:, cols], V[:, cols], w["l2"], pieces)

    print(f"{name} {seed} alpha_rel {alpha_rel:g}: J of the fit {J([0, 1, 2]):.6f}")
    for j in range(3):
        for k in range(3):
            if j != k:
                cols = [k if i == j else i for i in range(3)]
                print(f"  component {j} replaced by a copy of {k}: J {J(cols):.6f}")
    print(
        f"  component 0 once / twice / three times: {J([0]):.6f} / {J([0, 0]):.6f} / "
        f"{J([0] * 3):.6f}"
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("instances", nargs="+", help="set:seed, e.g. fs5-0.8:3313")
    p.add_argument("--alpha-rel", type=float, default=0.5)
    p.add_argument("--sweeps", type=int, default=15)
    p.add_argument("--mode", choices=("ls", "J"), default="ls")
    p.add_argument("--copies", action="store_true")
    args = p.parse_args()
    if not args.copies:
        _instrument(args.mode)
    for item in args.instances:
        name, seed = item.split(":")
        if args.copies:
            copies(name, int(seed), args.alpha_rel)
        else:
            trace(name, int(seed), args.alpha_rel, args.sweeps, args.mode)


if __name__ == "__main__":
    main()
