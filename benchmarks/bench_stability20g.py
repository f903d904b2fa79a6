"""Issue 20 round 8: ``stability_`` from the walk's split halves, and the noise floor's stop.

Per instance (``bench_trust_defaults.load`` sets, or the 12 x 12 ``noise`` and
``planted`` instances of tests/test_joint.py): the default fit
``SPCATV(k, operator=op, random_state=0, stability=False)`` and per component
its matched |cos| to a planted pattern and

- ``round 7``: ``stability_`` of main at round 7 (two subsample fits of 0.9 N
  sharing 0.8 N started from the full fit, overlap-corrected, and the
  nine-permutation noise floor);
- ``walk``: the split-half measure of the walk's halves at the chosen point
  (no fit);
- ``halves (refit)``: ``halves_stability`` (the walk's halves, refitted from
  the full fit before a component is flagged); ``now`` the same with the noise
  floor and its early stop;

with the floor's permuted fits (all nine), how many the stop used, and CPU
seconds of each measure.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_stability20g.py \\
        --sets noise planted paper-0.7 --seeds 3181 3182
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stability20e import fmt, matched_cos  # noqa: E402
from bench_stability20f import instance  # noqa: E402

import neurospca  # noqa: E402,F401  (first: the tree on PYTHONPATH)
from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import _spcatv, _stability  # noqa: E402
from neurospca.decomposition._stability import (  # noqa: E402
    _chosen_params,
    below_noise,
    component_stability,
    halves_stability,
    subsample_stability,
)

HALVES = {}


def _capture():
    inner = _spcatv.auto_fit

    def auto_fit(path, run, start):
        out = inner(path, run, start)
        HALVES["h"] = [np.array(h) for h in out[1]]
        return out

    _spcatv.auto_fit = auto_fit


def _floors(m, X, params):
    """The nine permuted fits' singular values, in the order of ``below_noise``."""
    seen = []
    first = _stability.NOISE_FIRST
    _stability.NOISE_FIRST = _stability.NOISE_PERMUTATIONS
    try:
        from neurospca.decomposition import SPCATV as _S

        fit0 = _S.fit

        def fit(self, X_, *a, **k):
            out = fit0(self, X_, *a, **k)
            if self.n_components == 1 and self.method == "deflation":
                seen.append(float(self.singular_values_[0]))
            return out

        _S.fit = fit
        full = below_noise(m, X, params)
    finally:
        _S.fit = fit0
        _stability.NOISE_FIRST = first
    return full, seen


def row(name, seed):
    X, op, P, k = instance(name, seed, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(k, operator=op, random_state=0, stability=False).fit(X)
        params = _chosen_params(m)
        c0 = time.process_time()
        full9, seen = _floors(m, X, params)
        old = np.where(full9, 0.0, subsample_stability(m, X, params, start=m.components_))
        c_old = time.process_time() - c0
        walk = component_stability(m.components_, *HALVES["h"])
        c0 = time.process_time()
        raw = halves_stability(m, X, params, HALVES["h"])
        flags = below_noise(m, X, params)
        now = np.where(flags, 0.0, raw)
        c_now = time.process_time() - c0
    sv = np.asarray(m.singular_values_)
    used = next(
        (
            i
            for i in range(_stability.NOISE_FIRST, 10)
            if np.all((sv <= max(seen[:i])) | (sv > _stability.NOISE_MARGIN * max(seen[:i])))
        ),
        9,
    )
    cos = matched_cos(m, P) if P is not None else np.full(k, np.nan)
    print(
        f"| {name} | {seed} | {m.alpha_rel_:g} ({m.l1_ratio_:g}, {m.tv_ratio_:g}) | {fmt(cos)} | "
        f"{fmt(old)} | {fmt(walk)} | {fmt(raw)} | {fmt(now)} | "
        f"{'/'.join(f'{x:.3g}' for x in sv)} | "
        f"{min(seen):.3g}-{max(seen):.3g} | {used} | "
        f"{'same' if np.array_equal(flags, full9) else 'DIFFERENT'} | {c_old:.1f} | {c_now:.1f} |",
        flush=True,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["noise", "planted"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3181])
    args = p.parse_args()
    _capture()
    print(
        "| set | seed | chosen | abs cos | round 7 | walk | halves (refit) | now | "
        "singular values | "
        "permuted fits (9) | used | floor flags vs 9 | CPU s round 7 | CPU s now |\n"
        + "|---" * 14
        + "|",
        flush=True,
    )
    for name in args.sets:
        for seed in args.seeds:
            row(name, seed)


if __name__ == "__main__":
    main()
