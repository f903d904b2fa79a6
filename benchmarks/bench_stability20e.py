"""Issue 20 round 6: candidate definitions of ``stability_``, measured.

For each instance (benchmarks/_trust.py sets) fit ``SPCATV(3, operator=op,
random_state=0)`` at its defaults and compute, per component, several
candidate stability measures at the chosen penalty and split:

- ``halves``: the default ``stability_`` (disjoint halves from the automatic
  path at the chosen point, matched to each other);
- ``warm``: the two disjoint halves re-fitted at the chosen point, each
  started from the full fit's loadings (scores ``X_h v_k``);
- ``proj``: ``|corr(C_A v_k, C_B v_k)|``, the halves' covariances applied to the
  full loadings (no fit);
- ``sub80``: two random subsamples of 0.8 N fitted cold at the chosen point,
  matched to each other through the full fit (they overlap on 0.6 N).

The same measures are computed on a noise-only copy of the data (every
column's rows permuted independently: no co-variation left) fitted at the
same penalty: what a noise component scores. Printed per component: matched
|cos| to its planted pattern (recovered when >= 0.95) and each measure.

    OMP_NUM_THREADS=1 python benchmarks/bench_stability20e.py --sets paper-0.7 \
        --seeds 3121 3122
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trust_defaults import load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import component_stability, matched_abs_corr, split_halves  # noqa: E402


def point(m):
    return dict(alpha_rel=m.alpha_rel_, l1_ratio=m.l1_ratio_, tv_ratio=m.tv_ratio_)


def fit_quiet(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X)


def warm_halves(m, X, op, k):
    V = m.components_
    comps = []
    for Xh in split_halves(X, 0):
        Xc = Xh - Xh.mean(axis=0)
        U = Xc @ V.T
        U /= np.maximum(np.linalg.norm(U, axis=0), 1e-300)
        h = SPCATV(
            k,
            operator=op,
            warm_start=True,
            stability=False,
            certify_support=False,
            random_state=0,
            **point(m),
        )
        h.scores_, h.n_features_in_ = U, X.shape[1]
        comps.append(fit_quiet(h, Xh).components_)
    return component_stability(V, *comps)


def proj(m, X):
    V = m.components_
    out = []
    for Xh in split_halves(X, 0):
        Xc = Xh - Xh.mean(axis=0)
        out.append((Xc.T @ (Xc @ V.T)).T)
    _, c = matched_abs_corr(out[0], out[0])
    a, b = out
    r = np.array(
        [abs(np.corrcoef(a[i], b[i])[0, 1]) if np.any(V[i]) else 0.0 for i in range(len(V))]
    )
    return np.nan_to_num(r)


def overlapping(m, X, op, k, shared, seed=0):
    """Two subsamples sharing ``shared`` of the rows, each with ``(1 - shared) / 2``
    of its own: raw matched |corr| and the overlap-corrected value."""
    idx = np.random.default_rng(seed).permutation(X.shape[0])
    n = X.shape[0]
    s = int(round(shared * n))
    own = (n - s) // 2
    comps = []
    for part in (idx[s : s + own], idx[s + own : s + 2 * own]):
        rows = np.sort(np.concatenate([idx[:s], part]))
        h = SPCATV(
            k, operator=op, stability=False, certify_support=False, random_state=0, **point(m)
        )
        comps.append(fit_quiet(h, X[rows]).components_)
    raw = component_stability(m.components_, *comps)
    c = s / (s + own)
    return raw, np.clip((raw - c) / (1 - c), 0, 1)


def measures(m, X, op, k):
    t = {}
    out = {"halves": m.stability_}
    for name, f in (
        ("warm", lambda: warm_halves(m, X, op, k)),
        ("proj", lambda: proj(m, X)),
        ("thirds", lambda: overlapping(m, X, op, k, 1 / 3)),
        ("sub80", lambda: overlapping(m, X, op, k, 0.6)),
    ):
        t0 = time.perf_counter()
        out[name] = f()
        t[name] = time.perf_counter() - t0
    return out, t


COLS = ("halves", "warm", "proj", "thirds", "sub80")


def cells(res):
    return " | ".join(
        fmt(res[k]) if not isinstance(res[k], tuple) else f"{fmt(res[k][0])} -> {fmt(res[k][1])}"
        for k in COLS
    )


def fmt(a):
    return "/".join(f"{x:.2f}" for x in a)


def matched_cos(m, P):
    """Per component: |cos| to the planted pattern matched to it (0 if none)."""
    from _trust import _cos
    from scipy.optimize import linear_sum_assignment

    sim = _cos(P, m.components_)
    r, c = linear_sum_assignment(-sim)
    out = np.zeros(len(m.components_))
    out[c] = sim[r, c]
    return out


def fit_default(name, seed):
    """The instance, its default fit, the fit's seconds and each component's |cos|."""
    X, op, P = load(name, seed)
    t0 = time.perf_counter()
    m = fit_quiet(SPCATV(3, operator=op, random_state=0), X)
    return X, op, m, time.perf_counter() - t0, matched_cos(m, P)


def default_only(args):
    """Per instance: each component's |cos| to its pattern and the default stability_;
    then flags (< 0.5) on recovered (|cos| >= 0.95) and unrecovered components."""
    print("| set | seed | abs cos per component | stability_ | alpha_rel (l1, tv) | fit s |")
    print("|---|---|---|---|---|---|")
    counts = np.zeros((2, 2), int)  # [recovered?, flagged?]
    for name in args.sets:
        for seed in args.seeds:
            _, _, m, t, cos = fit_default(name, seed)
            for c, s in zip(cos, m.stability_, strict=True):
                counts[int(c >= 0.95), int(s < 0.5)] += 1
            print(
                f"| {name} | {seed} | {fmt(cos)} | {fmt(m.stability_)} | {m.alpha_rel_:g} "
                f"({m.l1_ratio_:g}, {m.tv_ratio_:g}) | {t:.1f} |",
                flush=True,
            )
    print(
        f"recovered (|cos| >= 0.95): {counts[1].sum()}, flagged {counts[1, 1]}; "
        f"not recovered: {counts[0].sum()}, flagged {counts[0, 1]}"
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["paper-0.7"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3121])
    p.add_argument(
        "--mode",
        choices=["candidates", "default"],
        default="candidates",
        help="default: only the default fit's stability_ (whatever the build defines)",
    )
    args = p.parse_args()
    if args.mode == "default":
        return default_only(args)
    print("| set | seed | data | abs cos | " + " | ".join(COLS) + " | times (fit; others) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets:
        for seed in args.seeds:
            X, op, m, tf, ccos = fit_default(name, seed)
            res, t = measures(m, X, op, 3)
            print(
                f"| {name} | {seed} | data | {fmt(ccos)} | "
                + cells(res)
                + f" | {tf:.0f}; "
                + ", ".join(f"{t[k]:.1f}" for k in COLS[1:])
                + " |",
                flush=True,
            )
            rng = np.random.default_rng(seed)
            Xn = np.array([rng.permutation(col) for col in X.T]).T
            # the permuted data at a penalty weak enough for non-empty noise components
            weak = dict(point(m), alpha_rel=m.alpha_rel_ / 4)
            mn = fit_quiet(SPCATV(3, operator=op, random_state=0, stability=True, **weak), Xn)
            mn.l1_ratio_, mn.tv_ratio_ = weak["l1_ratio"], weak["tv_ratio"]
            res, t = measures(mn, Xn, op, 3)
            print(
                f"| {name} | {seed} | permuted | - | "
                + cells(res)
                + f" | nonzero {fmt(np.mean(mn.components_ != 0, axis=1))} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
