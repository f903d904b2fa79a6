"""Issue 21, item 4: the number of components from evidence, rules side by side.

Each rule is given the data matrix ``ImageSPCATV(n_components="auto")`` would
see (after masking, confound regression and, for the multi-site cohort,
ComBat) and returns a count; the planted count is printed beside it.

Rules:

- ``edge``: :func:`neurospca.model_selection.parallel_analysis` at its default
  (``null="edge"``: the residual spectrum's own top edge), the ``"auto"`` rule.
- ``effective``: the same function, ``null="effective"`` (the former default:
  a Gaussian null with the residual's effective number of features).
- ``horn``: ``null="permutation"`` (Horn 1965, columns permuted independently).
- ``split-half``: PCA on two random halves (5 splits), components matched by
  the Hungarian algorithm on |corr| of the loadings; the leading components
  whose matched |corr| exceeds 0.5 (and 0.2), median over the splits.
- ``press-1se``: held-out reconstruction by subject folds (5) with the
  "eigenvector" PRESS (each held-out value predicted from the others through
  the training loadings: the leave-one-feature-out residual ``e_j / (1 -
  h_jj)``, exact for a least-squares projection); the smallest k within one
  standard error of the minimum (and the minimum itself).
- ``minka``: Minka's Laplace evidence (scikit-learn's ``_assess_dimension``
  formula, vectorised; ``PCA(n_components="mle")`` itself raises for
  n_samples < n_features) on the P-long covariance spectrum, ranks 1-60.
- ``onatski``: Onatski's (2010) edge-distribution estimator (gaps larger
  than twice the slope of the eigenvalues against j^(2/3), k_max = 20).

A subject-wise sign-flip or rotation null of the residual is not a rule here:
``D R`` (D diagonal of signs, or orthogonal) has the singular values of R, so
its null distribution of the spectrum is a point mass at the observed value.

Cost: seconds, and as a multiple of one default ``SPCATV(3)`` fit
(``alpha_rel="auto"``) on the same data (``--fit-cost``, first seed only).

    OMP_NUM_THREADS=1 python benchmarks/bench_n_components.py --seeds 2701 2702 2703 \\
        [--sets multisite atrophy_fs5 ...] [--fit-cost]
"""

import argparse
import sys
import time
import warnings
from math import lgamma, log
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import neurospca  # noqa: E402
from neurospca.model_selection import parallel_analysis  # noqa: E402

# --------------------------------------------------------------------------
# data sets: (X, planted count or None, operator for the fit-cost)
# --------------------------------------------------------------------------


def _regress(X, confounds):
    C = np.column_stack([np.ones(len(X)), confounds])
    return X - C @ np.linalg.lstsq(C, X, rcond=None)[0]


def _surface_operator(b):
    n_left = b.n_vertices[0]
    op, _ = neurospca.tv_from_hemispheres(
        b.mesh_left, b.mesh_right, b.cortex[:n_left], b.cortex[n_left:]
    )
    return op


def multisite(seed, site_scales=(0.8, 1.0, 1.3)):
    """make_multisite_cohort after ComBat (site) and age, sex removed, as ImageSPCATV does."""
    from neurospca.study import StudyDesign

    b = neurospca.make_multisite_cohort(None, random_state=seed, site_scales=site_scales)
    rows = b.participants.reset_index(drop=True)
    X = StudyDesign(["age", "sex"], "site", ["dx"], ()).fit_transform(b.X[:, b.cortex], rows)
    return X, 3, lambda: _surface_operator(b)


def multisite_equal_scales(seed):
    """The same cohort with every site's scale 1 (offsets only): what ComBat's model assumes
    for the age and sex effects (the simulation's scales multiply them too)."""
    return multisite(seed, site_scales=(1.0, 1.0, 1.0))


def _atrophy(seed, mesh, correlation=0.6, signal=True):
    b = neurospca.make_atrophy_cohort(133, mesh=mesh, correlation=correlation, random_state=seed)
    X = b.X if signal else b.X + b.scores @ b.patterns  # the planted atrophy put back
    return _regress(X[:, b.cortex], b.confounds), (3 if signal else 0), lambda: _surface_operator(b)


def atrophy_fs5(seed):
    return _atrophy(seed, "fsaverage5")


def atrophy_fs5_r08(seed):
    return _atrophy(seed, "fsaverage5", correlation=0.8)


def atrophy_conte69(seed):
    return _atrophy(seed, "conte69")


def smooth_noise_fs5(seed):
    """make_atrophy_cohort without its atrophy: smooth + white noise, confounds removed."""
    return _atrophy(seed, "fsaverage5", signal=False)


def smooth_noise_conte69(seed):
    return _atrophy(seed, "conte69", signal=False)


def white_noise(seed):
    X = np.random.default_rng(seed).standard_normal((133, 20000))
    return X, 0, lambda: neurospca.tv_from_mask(np.ones((100, 200), bool))


def paper(seed):
    X, _, mask = neurospca.make_paper_simulation(random_state=seed)
    return X, 3, lambda: neurospca.tv_from_mask(mask)


def fmri_like(seed):
    X, _, mask = neurospca.make_fmri_like(random_state=seed)
    return X, 3, lambda: neurospca.tv_from_mask(mask)


def rsfmri(seed):
    """brainspace's resting-state run (652 x ~18.7k fsaverage5 vertices), z-scored; no truth."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests._instances import brainspace_rsfmri

    X, op, _ = brainspace_rsfmri()
    return (X - X.mean(0)) / X.std(0), None, lambda: op


SETS = {
    f.__name__: f
    for f in (
        multisite,
        multisite_equal_scales,
        atrophy_fs5,
        atrophy_conte69,
        atrophy_fs5_r08,
        paper,
        fmri_like,
        smooth_noise_fs5,
        smooth_noise_conte69,
        white_noise,
        rsfmri,
    )
}

# --------------------------------------------------------------------------
# rules: X, seed -> (count, detail)
# --------------------------------------------------------------------------


def _gram(X):
    Xc = X - X.mean(0)
    w, U = np.linalg.eigh(Xc @ Xc.T)
    w, U = w[::-1], U[:, ::-1]
    keep = w > 1e-10 * w[0]
    return Xc, w[keep], U[:, keep]


def _loadings(X, m):
    Xc, w, U = _gram(X)
    return (U[:, :m].T @ Xc) / np.sqrt(w[:m])[:, None]


def _pa(null):
    def rule(X, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, ev = parallel_analysis(X, null=null, random_state=seed)
        return ev["n_above"], ""

    return rule


def split_half(X, seed, m=10, n_splits=5):
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    counts = {0.5: [], 0.2: []}
    corrs = []
    for _ in range(n_splits):
        p = rng.permutation(n)
        C = np.abs(_loadings(X[p[: n // 2]], m) @ _loadings(X[p[n // 2 :]], m).T)
        r, c = linear_sum_assignment(-C)
        cc = C[r, c]
        corrs.append(cc)
        for t in counts:
            above = cc > t
            counts[t].append(int(np.argmin(above)) if not above.all() else m)
    med = np.median(corrs, axis=0)
    k5, k2 = int(np.median(counts[0.5])), int(np.median(counts[0.2]))
    return k5, f"0.2: {k2}; corr {' '.join(f'{v:.2f}' for v in med[:5])}"


def press_1se(X, seed, m=10, n_folds=5):
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    press = np.zeros((n_folds, m + 1))
    for f, test in enumerate(np.array_split(rng.permutation(n), n_folds)):
        train = np.setdiff1d(np.arange(n), test)
        V = _loadings(X[train], m)
        Y = X[test] - X[train].mean(0)
        press[f, 0] = np.sum(Y**2)
        for k in range(1, m + 1):
            h = np.sum(V[:k] ** 2, axis=0)
            E = Y - (Y @ V[:k].T) @ V[:k]
            press[f, k] = np.sum((E / (1 - h)) ** 2)
    total, se = press.sum(0), press.std(0) * np.sqrt(n_folds)
    best = int(np.argmin(total))
    return int(np.nonzero(total <= total[best] + se[best])[0][0]), f"min: {best}"


def _minka_ll(s, rank, n):
    """sklearn.decomposition._pca._assess_dimension, vectorised over j (same formula)."""
    p = s.size
    pu = -rank * log(2.0) + sum(
        lgamma((p - i + 1) / 2.0) - log(np.pi) * (p - i + 1) / 2.0 for i in range(1, rank + 1)
    )
    pl = -np.sum(np.log(s[:rank])) * n / 2.0
    v = max(1e-15, np.sum(s[rank:]) / (p - rank))
    pv = -log(v) * n * (p - rank) / 2.0
    mm = p * rank - rank * (rank + 1.0) / 2.0
    pp = log(2.0 * np.pi) * (mm + rank) / 2.0
    s_ = s.copy()
    s_[rank:] = v
    pa = 0.0
    for i in range(rank):
        j = np.arange(i + 1, p)
        pa += np.sum(np.log((s[i] - s[j]) * (1.0 / s_[j] - 1.0 / s_[i])) + log(n))
    return pu + pl + pv + pp - pa / 2.0 - rank * log(n) / 2.0


def minka(X, seed, max_rank=60):
    n, p = X.shape
    _, w, _ = _gram(X)
    s = np.zeros(p)
    s[: w.size] = w / (n - 1)
    ranks = range(1, min(max_rank, w.size - 1) + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = np.array([_minka_ll(s, r, n) for r in ranks])
    return int(np.nanargmax(ll) + 1), ""


def onatski(X, seed, k_max=20):
    _, w, _ = _gram(X)
    k_max = min(k_max, w.size - 6)
    j, count = k_max + 1, 0
    for _ in range(20):
        slope = np.polyfit(np.arange(j - 1, j + 4) ** (2 / 3), w[j - 1 : j + 4], 1)[0]
        big = np.nonzero(w[:k_max] - w[1 : k_max + 1] >= 2 * abs(slope))[0]
        count = int(big[-1] + 1) if big.size else 0
        if count + 1 == j:
            break
        j = count + 1
    return count, ""


RULES = {
    "edge": _pa("edge"),
    "effective": _pa("effective"),
    "horn": _pa("permutation"),
    "split-half": split_half,
    "press-1se": press_1se,
    "minka": minka,
    "onatski": onatski,
}


def _fit_seconds(X, operator):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        neurospca.SPCATV(3, operator=operator(), random_state=0).fit(X)
    return time.perf_counter() - t0


def explain_multisite(seeds):
    """What the components beyond the planted three are on the multi-site cohort: the
    correlation of their subject scores with age within each site, and with the severities."""
    from neurospca.study import StudyDesign

    print("| seed | edge count | component | r(age) within site A / B / C | max r(severity) |")
    print("|---|---|---|---|---|")
    for seed in seeds:
        b = neurospca.make_multisite_cohort(None, random_state=seed)
        rows = b.participants.reset_index(drop=True)
        X = StudyDesign(["age", "sex"], "site", ["dx"], ()).fit_transform(b.X[:, b.cortex], rows)
        k = parallel_analysis(X, random_state=seed)[0]
        _, _, U = _gram(X)
        age, site = rows["age"].to_numpy(float), rows["site"].to_numpy()
        for j in range(3, max(k, 4)):
            r = [np.corrcoef(U[site == s, j], age[site == s])[0, 1] for s in sorted(set(site))]
            sev = max(abs(np.corrcoef(U[:, j], b.severities[:, i])[0, 1]) for i in range(3))
            print(f"| {seed} | {k} | {j + 1} | {' / '.join(f'{v:+.2f}' for v in r)} | {sev:.2f} |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", nargs="+", type=int, default=[2701, 2702, 2703])
    p.add_argument("--sets", nargs="+", default=list(SETS))
    p.add_argument("--rules", nargs="+", default=list(RULES))
    p.add_argument("--fit-cost", action="store_true")
    p.add_argument("--explain-multisite", action="store_true")
    args = p.parse_args()
    if args.explain_multisite:
        return explain_multisite(args.seeds)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, seeds {args.seeds}")
    print("| data | seed | N x P | planted | " + " | ".join(args.rules) + " | fit (s) |")
    print("|---" * (len(args.rules) + 5) + "|")
    for name in args.sets:
        for i, seed in enumerate(args.seeds if name != "rsfmri" else args.seeds[:1]):
            X, planted, operator = SETS[name](seed)
            cells = []
            for rule in args.rules:
                t0 = time.perf_counter()
                k, detail = RULES[rule](X, seed)
                dt = time.perf_counter() - t0
                cells.append(f"{k}" + (f" ({detail})" if detail else "") + f" [{dt:.1f} s]")
            fit = f"{_fit_seconds(X, operator):.0f}" if args.fit_cost and i == 0 else "-"
            truth = "-" if planted is None else planted
            print(
                f"| {name} | {seed} | {X.shape[0]} x {X.shape[1]:,} | {truth} | "
                + " | ".join(cells)
                + f" | {fit} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
