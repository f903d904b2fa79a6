"""Issue 20 must-show on real data: brainspace's resting-state run, split halves.

The run (652 time points x ~18k fsaverage5 vertices, each vertex z-scored) is
split into its first and second halves (contiguous blocks: random rows of a
time series would put near-copies of each time point in both halves and
overstate reproducibility) and, with ``--split random``, into random rows.
Each half is fitted with 5 components by: ``SPCATV(5, operator=op)`` at its
defaults (``method="joint"``, ``alpha_rel="auto"``, the split of the penalty
searched), the paper's deflation at the same ``alpha_rel`` and split,
scikit-learn PCA and nilearn's DictLearning (its own ``_raw_fit`` on the array,
see ``bench_trust.nilearn_dictlearning``). Printed:
matched |corr| and top-m Dice (m = 10 % of the vertices) per method, support
fractions, times.

    OMP_NUM_THREADS=1 python benchmarks/bench_trust_rsfmri.py [--split contiguous random]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_trust import compare, halves, nilearn_dictlearning  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from tests._instances import brainspace_rsfmri  # noqa: E402


def fits(op):
    chosen = {}

    def default(X):
        m = SPCATV(5, operator=op, random_state=0).fit(X)
        point = {"alpha_rel": m.alpha_rel_}
        if hasattr(m, "l1_ratio_"):  # the split searched too (issue 20 round 3)
            point.update(l1_ratio=m.l1_ratio_, tv_ratio=m.tv_ratio_)
        chosen.setdefault("alpha_rel", []).append(point)
        return m.components_

    def deflation(X):
        point = chosen["alpha_rel"].pop(0)
        return SPCATV(5, operator=op, method="deflation", **point).fit(X).components_

    from sklearn.decomposition import PCA

    return [
        ("SPCA-TV default", default),
        ("deflation, same alpha_rel", deflation),
        ("PCA", lambda X: PCA(5).fit(X).components_),
        ("nilearn DictLearning", lambda X: nilearn_dictlearning(X, 5)),
    ], chosen


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--split", nargs="+", default=["contiguous"])
    args = p.parse_args()
    X, op, _ = brainspace_rsfmri()
    X = (X - X.mean(0)) / X.std(0)
    print(f"# rs-fMRI {X.shape}, {time.strftime('%Y-%m-%d')}")
    print("| halves | method | matched abs corr | top-m Dice | support % (max) | s |")
    print("|---|---|---|---|---|---|")
    for split in args.split:
        a, b = halves(len(X), -1 if split == "contiguous" else 0)
        methods, chosen = fits(op)
        for name, fit in methods:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                A, B = fit(X[a]), fit(X[b])
            corr, dice, supp, _ = compare(A, B)
            extra = f" (chosen {chosen['alpha_rel'][-2:]})" if name.startswith("SPCA") else ""
            print(
                f"| {split} | {name}{extra} | {corr.mean():.2f} "
                f"({' '.join(f'{c:.2f}' for c in corr)}) "
                f"| {dice.mean():.2f} | {100 * supp.mean():.1f} ({100 * supp.max():.0f}) "
                f"| {time.perf_counter() - t0:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
