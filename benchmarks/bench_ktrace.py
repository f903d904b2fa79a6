"""Table 2 of Richard, Obozinski and Vert (2014): covariance estimation.

Relative error ||Sigma_hat - Sigma*||_F / ||Sigma*||_F of six estimators on
the paper's simulation (p = 200, n = 80, three k = 10 atoms with nonzeros
1/sqrt(k), consecutive supports overlapping by 3, N(0, Sigma* + sigma^2 I)),
over seeded runs.

Usage::

    python benchmarks/bench_ktrace.py [--runs 10] [--sigma 0.8] [--tuning holdout]

``--check`` first asserts the simulation design and, on one seeded sample
of the paper's size (oracle tuning, coarse grids, sigma = 0.5), the paper's
ordering with Omega_{k,PSD} best (these were unit tests; they are a
paper-claim reproduction, so they live here).

``--tuning holdout`` is the paper's protocol (hyper-parameters chosen to
approximate a held-out quarter's empirical covariance, then refitted on all
data); ``--tuning holdout-offdiag`` scores only the off-diagonal entries
of the validation covariance (whose diagonal carries the noise sigma^2 I,
absent from Sigma*); ``--tuning oracle`` gives each method its best grid value against
Sigma* (its best case). The paper's sigma = 0.8 gives a sample-covariance
error of ~9.3, not its 4.20 (see papers/DIGEST.md, P2 caveats);
sigma = 0.5 reproduces the 4.20 scale (3.7).
"""

import argparse
import platform
import subprocess
import time
import warnings

import numpy as np
from _ktrace_protocol import (  # benchmarks/_ktrace_protocol.py, next to this script
    TABLE2_METHODS,
    covariance_estimation_errors,
    make_sparse_covariance_problem,
)
from threadpoolctl import threadpool_limits

PAPER = {
    "sample": (4.20, 0.02),
    "trace": (0.98, 0.01),
    "l1": (2.07, 0.01),
    "trace+l1": (0.96, 0.01),
    "sequential": (0.93, 0.08),
    "ktrace": (0.59, 0.03),
}
NAMES = {
    "sample": "Sample cov.",
    "trace": "Trace (PSD)",
    "l1": "l1 (soft-thr.)",
    "trace+l1": "Trace + l1",
    "sequential": "Sequential SPCA",
    "ktrace": "Omega_{k,PSD}",
}


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def check_protocol():
    """The simulation design and the paper's ordering on one seeded sample."""
    X, sigma_star, atoms = make_sparse_covariance_problem(random_state=0)
    assert X.shape == (80, 200)
    assert np.all(np.count_nonzero(atoms, axis=1) == 10)
    np.testing.assert_allclose(np.linalg.norm(atoms, axis=1), 1.0)
    s = [set(np.flatnonzero(a)) for a in atoms]  # consecutive supports overlap by 3
    assert len(s[0] & s[1]) == 3 and len(s[1] & s[2]) == 3 and not s[0] & s[2]
    np.testing.assert_allclose(sigma_star, atoms.T @ atoms)
    X, sigma_star, _ = make_sparse_covariance_problem(80, 200, sigma=0.5, random_state=0)
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        e, _ = covariance_estimation_errors(
            X,
            sigma_star,
            10,
            tuning="oracle",
            n_alphas=6,
            alpha_range=(0.2, 1.0),
            mus=(0.5,),
            max_components=4,
            random_state=0,
        )
    order = sorted(e, key=e.get)
    # paper: sample 4.20 > l1 2.07 > trace 0.98 > trace+l1 0.96 > sequential 0.93 > ours 0.59
    assert order == ["ktrace", "sequential", "trace+l1", "trace", "l1", "sample"], e
    assert e["ktrace"] < 0.9 * e["sequential"], e
    assert 3.0 < e["sample"] < 5.0, e
    print(
        "check: simulation design and paper ordering (one seed, oracle) hold: "
        + ", ".join(f"{m} {e[m]:.3f}" for m in order),
        flush=True,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--sigma", type=float, default=0.8)
    ap.add_argument("--tuning", default="holdout", choices=["holdout", "holdout-offdiag", "oracle"])
    ap.add_argument("--p", type=int, default=200)
    ap.add_argument("--n", type=int, default=80)
    ap.add_argument(
        "--check",
        action="store_true",
        help="first assert the simulation design and the paper's ordering",
    )
    args = ap.parse_args()
    if args.check:
        check_protocol()
    errs = {m: [] for m in TABLE2_METHODS}
    t0 = time.perf_counter()
    for run in range(args.runs):
        X, sigma_star, _ = make_sparse_covariance_problem(
            args.n, args.p, k=10, n_atoms=3, overlap=3, sigma=args.sigma, random_state=run
        )
        # one BLAS thread: the problems are small, and oversubscribed threads
        # on a shared machine slowed the 200 x 200 eigendecompositions 20-fold
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore")
            e, _ = covariance_estimation_errors(
                X,
                sigma_star,
                10,
                tuning=args.tuning,
                alpha_range=(0.1, 1.0),
                n_alphas=8,
                mus=(0.25, 0.5, 0.75),
                random_state=run,
            )
        for m in TABLE2_METHODS:
            errs[m].append(e[m])
        print(f"run {run}: " + ", ".join(f"{m} {e[m]:.3f}" for m in TABLE2_METHODS), flush=True)
    elapsed = time.perf_counter() - t0
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    print()
    print(
        f"p = {args.p}, n = {args.n}, k = 10, sigma = {args.sigma}, tuning = "
        f"{args.tuning}, {args.runs} runs, {elapsed:.0f} s; nproc {nproc}, {cpu_model()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print()
    print("| method | ours (mean ± sd) | paper |")
    print("|---|---|---|")
    for m in TABLE2_METHODS:
        v = np.asarray(errs[m])
        print(
            f"| {NAMES[m]} | {v.mean():.2f} ± {v.std(ddof=1) if v.size > 1 else 0:.2f} | "
            f"{PAPER[m][0]:.2f} ± {PAPER[m][1]:.2f} |"
        )
    order = sorted(TABLE2_METHODS, key=lambda m: np.mean(errs[m]))
    print()
    print("ordering (best first): " + " < ".join(NAMES[m] for m in order))
    print(
        "paper ordering:        "
        + " < ".join(NAMES[m] for m in sorted(PAPER, key=lambda m: PAPER[m][0]))
    )


if __name__ == "__main__":
    main()
