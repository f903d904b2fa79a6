"""Issue 20 round 7: ``stability_`` of default fits, before and after.

Per instance (``bench_trust_defaults.load`` sets, or the 12 x 12 ``noise``
and ``planted`` instances of tests/test_joint.py), the default fit
``SPCATV(k, operator=op, random_state=0)`` and per component: its matched
|cos| to a planted pattern, its non-zero fraction, ``stability_`` (this
build: each subsample fitted as the default fit fits its chosen point,
``replicate=True``) and the round-6 measure (cold subsample fits at the
chosen point, ``replicate=False``) on the same subsamples. ``--permuted``
also fits the data with every column's rows permuted (noise only).

    OMP_NUM_THREADS=1 python benchmarks/bench_stability20f.py --sets paper-0.7 \\
        --seeds 3121 3122 [--permuted]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stability20e import fmt, matched_cos  # noqa: E402
from bench_trust_defaults import load  # noqa: E402

from neurospca import SPCATV, tv_from_mask  # noqa: E402
from neurospca.decomposition import subsample_stability  # noqa: E402


def small(name, seed):
    """The 12 x 12 instances of tests/test_joint.py (N = 120, two components)."""
    rng = np.random.default_rng(seed)
    op = tv_from_mask(np.ones((12, 12), dtype=bool))
    if name == "noise":
        return rng.standard_normal((120, 144)), op, None
    pattern = np.zeros((12, 12))
    pattern[2:6, 2:6] = 1.0
    X = 2.0 * rng.standard_normal((120, 1)) * pattern.ravel() + rng.standard_normal((120, 144))
    return X, op, pattern.ravel()[None]


def instance(name, seed, permuted):
    X, op, P = small(name, seed) if name in ("noise", "planted") else load(name, seed)
    if permuted:
        rng = np.random.default_rng(seed)
        X, P = np.array([rng.permutation(col) for col in X.T]).T, None
    return X, op, P, 2 if name in ("noise", "planted") else 3


def row(name, seed, permuted):
    X, op, P, k = instance(name, seed, permuted)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(k, operator=op, random_state=0).fit(X)
        t = time.perf_counter() - t0
        params = dict(
            alpha=None, alpha_rel=m.alpha_rel_, l1_ratio=m.l1_ratio_, tv_ratio=m.tv_ratio_
        )
        t0 = time.perf_counter()
        before = subsample_stability(m, X, params, replicate=False)
        t_before = time.perf_counter() - t0
    cos = matched_cos(m, P) if P is not None else np.full(k, np.nan)
    nz = np.mean(m.components_ != 0, axis=1)
    label = "permuted" if permuted else "data"
    print(
        f"| {name} | {seed} | {label} | {m.alpha_rel_:g} ({m.l1_ratio_:g}, {m.tv_ratio_:g}) | "
        f"{fmt(cos)} | {fmt(nz)} | {fmt(m.stability_)} | {fmt(before)} | {t:.1f} | "
        f"{t_before:.1f} |",
        flush=True,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["paper-0.7"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3121])
    p.add_argument("--permuted", action="store_true", help="also the noise-only copies")
    args = p.parse_args()
    print(
        "| set | seed | data | chosen | abs cos | non-zero | stability_ (new) | "
        "round 6 (cold) | default fit s | cold measure s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets:
        for seed in args.seeds:
            row(name, seed, False)
            if args.permuted:
                row(name, seed, True)


if __name__ == "__main__":
    main()
