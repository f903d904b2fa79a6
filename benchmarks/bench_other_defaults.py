"""Evidence for the other methods' defaults (issue 20, item 5).

Three tables, on seeds used nowhere else (40-49):

* ``sspca``: SSPCA with the paper's half-space groups on
  ``make_structured_images`` (the package's default images, and the harder
  set of docs/sspca.rst: noise 2.5, floor 0.3, overlapping layout). The old
  default ``alpha=1e-3`` against the new ``alpha=None`` (``alpha_rel=0.5`` of
  ``alpha_max_``): components kept (not collapsed), support sizes
  (``supports_``), mean matched Dice (``|v| > 0.05 max|v|``), explained
  variance (of the projection on the components' span). Then mean Dice over
  an ``alpha_rel`` grid with 1 and 5 starts (how 0.5 was chosen).
* ``nspca``: NonnegativeSparsePCA on the tests' nonnegative 3-part model
  (P = 24, supports of 10 overlapping by 3, N = 300) at sparse settings
  ``(alpha, beta)``: its adjusted explained variance against scikit-learn's
  SparsePCA at the same total number of non-zeros (SparsePCA's alpha found by
  bisection), for ``n_init`` = 1, 5 and 10 (the new default).
* ``conesta``: SPCA-TV with ``solver="dual"`` and ``solver="conesta"`` on the
  paper simulation at large ``alpha_rel``: non-zeros per component.

    OMP_NUM_THREADS=1 python benchmarks/bench_other_defaults.py [sspca|nspca|conesta ...]
"""

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neurospca import (  # noqa: E402
    SPCATV,
    SSPCA,
    NonnegativeSparsePCA,
    grid_halfspace_groups,
    make_paper_simulation,
    make_structured_images,
    tv_from_mask,
)
from tests._helpers import sparse_pca_at_cardinality  # noqa: E402

SEEDS = range(40, 50)


def _dice(components, supports, threshold=0.05):
    """Mean matched Dice of thresholded supports (Hungarian matching)."""
    est = np.abs(components) > threshold * np.abs(components).max(axis=1, keepdims=True)
    D = np.array([[2 * (e & s).sum() / max(e.sum() + s.sum(), 1) for s in supports] for e in est])
    r, c = linear_sum_assignment(-D)
    return float(D[r, c].mean())


def _projected_variance(Xc, components):
    """Fraction of ``||Xc||^2`` in the span of the (non-zero) components."""
    C = components[np.any(components, axis=1)]
    if C.size == 0:
        return 0.0
    Q = np.linalg.qr(C.T)[0]
    return float(np.sum((Xc @ Q) ** 2) / np.sum(Xc * Xc))


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def bench_sspca():
    groups = grid_halfspace_groups((16, 16))
    sets = {"default images": {}, "hard images": dict(noise=2.5, floor=0.3, layout="overlapping")}
    print("\n## SSPCA, half-space groups, 16 x 16, N = 100, seeds 40-49")
    print(
        "| images | alpha | kept (of 3) | support sizes (mean, min-max) | mean Dice | "
        "explained variance | alpha_rel_ | what the old code listed: supports, EV |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, kw in sets.items():
        for label, params in (("1e-3 (old default)", {"alpha": 1e-3}), ("None (new default)", {})):
            rows = []
            for seed in SEEDS:
                X, supports, _ = make_structured_images(seed, **kw)
                m = _quiet(
                    lambda X=X, params=params: SSPCA(
                        3, groups=groups, random_state=0, **params
                    ).fit(X)
                )
                sizes = m.supports_.sum(axis=1)
                # before issue 20: every column renormalised, supports from the raw loadings
                V = np.abs(m.loadings_)
                old = (V > m.support_threshold * V.max(axis=0)).sum(axis=0)
                rows.append(
                    (
                        np.sum(~m.collapsed_),
                        sizes.mean(),
                        sizes.min(),
                        sizes.max(),
                        _dice(m.components_, supports) if m.components_.any() else 0.0,
                        _projected_variance(X - m.mean_, m.components_),
                        m.alpha_rel_,
                        old.mean(),
                        old.min(),
                        old.max(),
                        _projected_variance(X - m.mean_, m.loadings_.T),
                    )
                )
            r = np.array(rows)
            print(
                f"| {name} | {label} | {r[:, 0].mean():.1f} ({int(r[:, 0].min())}-"
                f"{int(r[:, 0].max())}) | {r[:, 1].mean():.0f} ({int(r[:, 2].min())}-"
                f"{int(r[:, 3].max())}) | {r[:, 4].mean():.3f} | {r[:, 5].mean():.3f} | "
                f"{np.median(r[:, 6]):.3g} | {r[:, 7].mean():.0f} ({int(r[:, 8].min())}-"
                f"{int(r[:, 9].max())}), {r[:, 10].mean():.3f} |"
            )
    rels = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
    print(
        "\nMean Dice over alpha_rel (seeds 40-49; the old default alpha=1e-3 is "
        "1e3-1e4 x alpha_max_):"
    )
    print("| images | n_init | " + " | ".join(str(r) for r in rels) + " |")
    print("|---|---|" + "---|" * len(rels))
    for name, kw in sets.items():
        for n_init in (1, 5):
            means = []
            for rel in rels:
                d = []
                for seed in SEEDS:
                    X, supports, _ = make_structured_images(seed, **kw)
                    m = _quiet(
                        lambda X=X, n_init=n_init, rel=rel: SSPCA(
                            3, alpha_rel=rel, groups=groups, n_init=n_init, random_state=0
                        ).fit(X)
                    )
                    d.append(_dice(m.components_, supports) if m.components_.any() else 0.0)
                means.append(np.mean(d))
            print(f"| {name} | {n_init} | " + " | ".join(f"{x:.3f}" for x in means) + " |")


def _parts_data(seed, n=300, p=24, noise=0.3):
    """tests/test_nspca.py's nonnegative 3-part model."""
    rng = np.random.default_rng(seed)
    W = np.zeros((3, p))
    for i in range(3):
        W[i, 7 * i : 7 * i + 10] = rng.uniform(0.5, 1.5, 10)
    X = rng.standard_normal((n, 3)) * np.array([3.0, 2.5, 2.0]) @ W
    return X + noise * rng.standard_normal((n, p))


def bench_nspca():
    from neurospca.decomposition._base import adjusted_variance

    print(
        "\n## NonnegativeSparsePCA vs SparsePCA at matched cardinality, 3-part model, seeds 40-49"
    )
    print(
        "| alpha, beta | n_init | NSPCA EV (mean +- sd) | SparsePCA EV | ratio mean | "
        "ratio min | seeds < 0.9 | time per fit |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for alpha, beta in ((2.0, 10.0), (10.0, 10.0), (1.0, 20.0)):
        for n_init in (1, 5, 10):
            rows = []
            for seed in SEEDS:
                X = _parts_data(seed)
                Xc = X - X.mean(0)
                C = Xc.T @ Xc / X.shape[0]
                t0 = time.perf_counter()
                m = _quiet(
                    lambda X=X, alpha=alpha, beta=beta, n_init=n_init: NonnegativeSparsePCA(
                        3, alpha=alpha, beta=beta, n_init=n_init, random_state=0
                    ).fit(X)
                )
                dt = time.perf_counter() - t0
                sp, _ = sparse_pca_at_cardinality(
                    X, int(m.cardinality_.sum()), lo=1e-2, max_iter=200
                )
                ev = adjusted_variance(C, m.components_)[1].sum()
                ev_sp = adjusted_variance(C, sp)[1].sum()
                rows.append((ev, ev_sp, ev / ev_sp, dt))
            r = np.array(rows)
            print(
                f"| {alpha:g}, {beta:g} | {n_init} | {r[:, 0].mean():.3f} +- "
                f"{r[:, 0].std():.3f} | {r[:, 1].mean():.3f} | {r[:, 2].mean():.2f} | "
                f"{r[:, 2].min():.2f} | {int(np.sum(r[:, 2] < 0.9))} | "
                f"{1e3 * r[:, 3].mean():.0f} ms |"
            )


def bench_conesta():
    print("\n## SPCA-TV, dual solver vs CONESTA, paper simulation: non-zeros per component")
    print("| data | alpha_rel | dual | conesta | time dual / conesta |")
    print("|---|---|---|---|---|")
    for shape, n in (((30, 30), 100), ((100, 100), 250)):
        X, _, mask = make_paper_simulation(random_state=0, shape=shape, n_samples=n)
        op = tv_from_mask(mask)
        for rel in (3.0, 4.0, 6.0, 8.0):
            out, times = [], []
            for solver in ("dual", "conesta"):
                t0 = time.perf_counter()
                m = _quiet(
                    lambda X=X, op=op, rel=rel, solver=solver: SPCATV(
                        3, alpha=None, alpha_rel=rel, operator=op, solver=solver, random_state=0
                    ).fit(X)
                )
                times.append(time.perf_counter() - t0)
                out.append(np.count_nonzero(m.components_, axis=1).tolist())
            print(
                f"| {shape[0]}x{shape[1]}, N={n} | {rel:g} | {out[0]} | {out[1]} | "
                f"{times[0]:.2f} / {times[1]:.2f} s |"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "parts",
        nargs="*",
        default=["sspca", "nspca", "conesta"],
        choices=["sspca", "nspca", "conesta"],
    )
    args = parser.parse_args()
    print(
        f"{platform.machine()}, {platform.python_version()}, numpy {np.__version__}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    for part in args.parts:
        t0 = time.perf_counter()
        {"sspca": bench_sspca, "nspca": bench_nspca, "conesta": bench_conesta}[part]()
        print(f"({part}: {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
