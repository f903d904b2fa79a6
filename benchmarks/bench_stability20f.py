"""Issue 20 round 7: ``stability_`` of default fits and the starts of its subsample fits.

Per instance (``bench_trust_defaults.load`` sets, or the 12 x 12 ``noise``
and ``planted`` instances of tests/test_joint.py), the default fit
``SPCATV(k, operator=op, random_state=0)`` and per component: its matched
|cos| to a planted pattern, its non-zero fraction, ``stability_`` (cold
subsample fits at the chosen point, round 6) and, on the same two subsamples
(0.9 N sharing 0.8 N, overlap-corrected), the subsample fits started

- ``full``: from the full fit's components (``start_from``, the fit's other
  starts competing on the objective);
- ``replica``: as the default fit fits its point: the subsample's rows in the
  first split half walk the chosen split's path to the point (the halves'
  settings), and the subsample is fitted from that half fit.

``before`` is the round-6 ``stability_`` (cold subsample fits at the chosen
point), ``cold + floor`` the same with 0 where ``below_noise`` (the
component is not above the rank-one fits of column-permuted data), ``now``
``stability_`` as it now is (subsample fits started from the full fit, and
the floor); the other start designs with ``--variants``. ``--permuted`` also fits the data with
every column's rows permuted.

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
from sklearn.base import clone  # noqa: E402
from sklearn.utils import check_random_state  # noqa: E402

from neurospca import SPCATV, tv_from_mask  # noqa: E402
from neurospca.decomposition import (  # noqa: E402
    AUTO_SPLITS,
    below_noise,
    component_stability,
    overlap_corrected,
    overlapping_subsamples,
    start_from,
    subsample_stability,
)

HALF = dict(warm_start=True, max_sweeps=15, stability=False, certify_support=False, verbose=0)
KEEP = dict(stability=False, warm_start=False, verbose=0, certify_support=False)


def walked(params):
    """The chosen split's path of alpha_rel="auto" up to the chosen point."""
    split = (params["l1_ratio"], params["tv_ratio"])
    path = next((p for s, p in AUTO_SPLITS if np.allclose(s, split)), ())
    return [a for a in path if a < params["alpha_rel"] * (1 - 1e-9)] + [params["alpha_rel"]]


def replica(m, Xs, half_rows, params):
    half = clone(m).set_params(**HALF, **params)
    half._half_fit = True
    for a in walked(params):
        half.set_params(alpha_rel=a).fit(Xs[half_rows])
    return start_from(clone(m).set_params(**KEEP, **params), half.components_).fit(Xs)


def variants(m, X, params):
    """Per start design: the overlap-corrected stability of each component."""
    rows = overlapping_subsamples(X.shape[0], 0)
    subs, shared = (X[rows[0]], X[rows[1]]), rows[2]
    first = check_random_state(0).permutation(X.shape[0])[: X.shape[0] // 2]
    halves = [np.flatnonzero(np.isin(r, first)) for r in rows[:2]]
    out = {}
    for name, fit in (
        ("full", lambda i: start_from(clone(m).set_params(**KEEP, **params), m.components_)),
        ("replica", None),
    ):
        if fit is None:
            comps = [replica(m, subs[i], halves[i], params).components_ for i in range(2)]
        else:
            comps = [fit(i).fit(subs[i]).components_ for i in range(2)]
        out[name] = overlap_corrected(component_stability(m.components_, *comps), shared)
    return out


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


def row(name, seed, permuted, with_variants):
    """One instance: the default fit, stability_ before (cold subsamples) and
    now (zero where not above the permuted-data fit), the variants' values."""
    X, op, P, k = instance(name, seed, permuted)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(k, operator=op, random_state=0, stability=False).fit(X)
        t = time.perf_counter() - t0
        params = dict(
            alpha=None, alpha_rel=m.alpha_rel_, l1_ratio=m.l1_ratio_, tv_ratio=m.tv_ratio_
        )
        t0 = time.perf_counter()
        before = subsample_stability(m, X, params)
        warm = subsample_stability(m, X, params, start=m.components_)
        t_before = time.perf_counter() - t0
        t0 = time.perf_counter()
        noise = below_noise(m, X, params)
        t_null = time.perf_counter() - t0
        other = variants(m, X, params) if with_variants else None
    floor, now = np.where(noise, 0.0, before), np.where(noise, 0.0, warm)
    cos = matched_cos(m, P) if P is not None else np.full(k, np.nan)
    nz = np.mean(m.components_ != 0, axis=1)
    extra = ""
    if other:  # each start design, then the same with the noise floor
        floor = {k: np.where(noise, 0.0, v) for k, v in other.items()}
        extra = (
            f" {fmt(other['full'])} -> {fmt(floor['full'])} | "
            f"{fmt(other['replica'])} -> {fmt(floor['replica'])} |"
        )
    print(
        f"| {name} | {seed} | {'permuted' if permuted else 'data'} | {m.alpha_rel_:g} "
        f"({m.l1_ratio_:g}, {m.tv_ratio_:g}) | {fmt(cos)} | {fmt(nz)} | {fmt(before)} | "
        f"{fmt(floor)} | {fmt(now)} | {'/'.join(f'{x:.3g}' for x in m.singular_values_)} |{extra} "
        f"{t:.1f} | {t_before:.1f} | {t_null:.1f} |",
        flush=True,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["paper-0.7"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3121])
    p.add_argument("--permuted", action="store_true", help="also the noise-only copies")
    p.add_argument("--variants", action="store_true", help="also the start designs")
    args = p.parse_args()
    head = (
        "| set | seed | data | chosen | abs cos | non-zero | before | cold + floor | now |"
        " singular values |"
    )
    if args.variants:
        head += " from full fit -> with floor | replica -> with floor |"
    print(head + " fit s | subsamples s | null s |")
    print("|---" * (head.count("|") + 2) + "|")
    for name in args.sets:
        for seed in args.seeds:
            row(name, seed, False, args.variants)
            if args.permuted:
                row(name, seed, True, args.variants)


if __name__ == "__main__":
    main()
