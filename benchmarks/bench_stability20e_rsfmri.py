"""Issue 20 round 6: is ``stability_`` optimistic on real data? (brainspace rs-fMRI)

brainspace's resting-state run (z-scored vertices, as
``bench_trust_rsfmri.py``) is cut into its first and second halves
(contiguous). ``SPCATV(5, operator=op, random_state=0)`` is fitted on each
with defaults; printed per component of the first half's fit: its
``stability_`` (what the model claims), the split-half measure at the same
point (two half fits of the first half, the definition before round 6) and
the actual matched absolute correlation with the second half's fit (an
independent replication on as many samples).

    OMP_NUM_THREADS=1 python benchmarks/bench_stability20e_rsfmri.py
"""

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import component_stability, fit_halves, matched_abs_corr  # noqa: E402
from tests._instances import brainspace_rsfmri  # noqa: E402


def fmt(a):
    return " ".join(f"{x:.2f}" for x in a)


def main():
    X, op, _ = brainspace_rsfmri()
    X = (X - X.mean(0)) / X.std(0)
    h = len(X) // 2
    first, second = X[:h], X[h:]
    print(
        f"# rs-fMRI {X.shape}, halves of {h}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    fits = []
    for part in (first, second):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = SPCATV(5, operator=op, random_state=0).fit(part)
        fits.append(m)
        print(
            f"fit: alpha_rel {m.alpha_rel_:g} ({m.l1_ratio_:g}, {m.tv_ratio_:g}), stability_ "
            f"{fmt(m.stability_)}, {time.perf_counter() - t0:.0f} s",
            flush=True,
        )
    m1, m2 = fits
    _, actual = matched_abs_corr(m1.components_, m2.components_)
    params = dict(alpha=None, alpha_rel=m1.alpha_rel_, l1_ratio=m1.l1_ratio_, tv_ratio=m1.tv_ratio_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        halves = fit_halves(m1, first, [params], 0)[0]["components"]
    print(
        "| component | stability_ (first half) | split-half at the same point "
        "| actual |c| with the second half's fit |"
    )
    print("|---|---|---|---|")
    old = component_stability(m1.components_, *halves)
    for k, (s, o, a) in enumerate(zip(m1.stability_, old, actual, strict=True)):
        print(f"| {k + 1} | {s:.2f} | {o:.2f} | {a:.2f} |")
    print(f"mean: {m1.stability_.mean():.2f} / {old.mean():.2f} / {actual.mean():.2f}")


if __name__ == "__main__":
    main()
