"""Inpainting with tree-structured versus flat dictionaries (Jenatton et al. 2010, Table 1).

The paper learns dictionaries on 8 x 8 natural-image patches and inpaints test
patches with 50-90% of the pixels missing. The tree-structured dictionary beats
a flat dictionary of the same size at every rate (MSE x 100, flat / tree):
19.3/18.6, 26.8/25.7, 36.7/35.0, 50.6/48.0, 72.1/65.9.

There are no natural images offline, so this benchmark uses seeded synthetic
8 x 8 patches drawn from a tree-structured dictionary (``--branching``, default
(10, 3, 2): a depth-4 tree with 101 atoms for 64 pixels, overcomplete like the
paper's dictionaries). Each atom is correlated with its parent, as in the paper's
learned trees. Each patch uses the atoms on ``--n-paths`` random root-to-node
paths plus noise (``--noise``), so its support is closed under ancestors.

The tree dictionary is initialised coarse to fine (``--init hierarchical``,
``HierarchicalDictionaryLearning(init="hierarchical")``): with random-sample
atoms at every node (``--init data``) the alternations stop in a local minimum
whose objective is above that of the generating dictionary, and the tree then
loses to flat at 50-60% missing pixels. The flat dictionary always starts from
random samples (the option does not change it).

The protocol follows the paper's. Dictionaries are learned on a clean training
set with unit-ℓ2 atoms (mu = 0), for lam_tr in a grid. A patch is coded from its
known pixels on the dictionary restricted to those pixels, and ``D alpha`` is
the reconstruction. lam_tr and lam_te are chosen per rate on a validation set,
and the MSE on the missing pixels of the test set is reported. Each of
``--runs`` runs uses a different initialisation and a different noise draw.
The flat dictionary has the same number of atoms and an ℓ1 penalty (a forest of
singletons).

Run:  python benchmarks/bench_hierarchical.py [--norm linf] [--runs 4] [--init data]
"""

import os

# The products here are small (patches x atoms); on a loaded 2-core machine
# OpenBLAS threads made them ~40x slower (measured 22 ms vs 0.5 ms for a
# 500 x 101 by 101 x 101 product), so BLAS runs single-threaded.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from neurospca import HierarchicalDictionaryLearning, balanced_tree  # noqa: E402
from neurospca.datasets import make_tree_patches  # noqa: E402

RATES = (0.5, 0.6, 0.7, 0.8, 0.9)


def inpainting_mse(model, X, mask, lam_te):
    model.set_params(transform_alpha=lam_te)
    A = model.transform(np.where(mask, X, 0.0), mask=mask)
    return float(np.mean((A @ model.components_ - X)[~mask] ** 2))


def one_run(run, args):
    X, parent = make_tree_patches(
        args.n_train + 2 * args.n_test,
        tuple(args.branching),
        side=args.side,
        noise=args.noise,
        random_state=100 + run,
        dictionary_state=0,
        n_paths=args.n_paths,
        codes=args.codes,
    )
    ntr, nte = args.n_train, args.n_test
    Xtr, Xva, Xte = X[:ntr], X[ntr : ntr + nte], X[ntr + nte :]
    mrng = np.random.default_rng(1000 + run)
    masks = {r: (mrng.random(Xva.shape) >= r, mrng.random(Xte.shape) >= r) for r in RATES}
    out = {}
    for name, tree in (("flat", None), ("tree", parent)):
        best = {r: (np.inf, None) for r in RATES}
        for lam_tr in args.lam_train:
            model = HierarchicalDictionaryLearning(
                tree,
                n_components=parent.size,
                alpha=lam_tr,
                norm=args.norm,
                max_iter=args.max_iter,
                init=args.init,
                random_state=run,
            ).fit(Xtr)
            for r in RATES:
                for lam_te in args.lam_test:
                    val = inpainting_mse(model, Xva, masks[r][0], lam_te)
                    if val < best[r][0]:
                        best[r] = (
                            val,
                            inpainting_mse(model, Xte, masks[r][1], lam_te),
                            lam_tr,
                            lam_te,
                        )
        out[name] = best
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--branching", type=int, nargs="+", default=[10, 3, 2])
    ap.add_argument("--side", type=int, default=8, help="patch side (8: 8 x 8 patches)")
    ap.add_argument(
        "--n-paths", type=int, default=1, help="root-to-node paths per patch (make_tree_patches)"
    )
    ap.add_argument("--codes", choices=("gaussian", "laplace"), default="gaussian")
    ap.add_argument("--noise", type=float, default=0.2)
    ap.add_argument("--norm", choices=("l2", "linf"), default="l2")
    ap.add_argument(
        "--init",
        choices=("data", "hierarchical"),
        default="hierarchical",
        help="initialisation of the tree dictionary (flat: always data)",
    )
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--max-iter", type=int, default=30)
    ap.add_argument("--lam-train", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.4, 0.8])
    ap.add_argument(
        "--lam-test", type=float, nargs="+", default=[0.0125, 0.025, 0.05, 0.1, 0.2, 0.4]
    )
    args = ap.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    t0 = time.perf_counter()
    runs = [one_run(run, args) for run in range(args.runs)]
    elapsed = time.perf_counter() - t0
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(
                line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    p = balanced_tree(tuple(args.branching)).size
    print(
        f"Machine: {os.cpu_count()} CPUs ({cpu}), {platform.platform()}; "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"{elapsed:.0f} s"
    )
    print(
        f"{args.side}x{args.side} synthetic patches, tree {tuple(args.branching)} "
        f"({p} atoms), norm {args.norm}, {args.n_train} train / {args.n_test} val / "
        f"{args.n_test} test, {args.runs} runs; MSE x 100 on missing pixels, mean ± sd"
    )
    print()
    print("| missing pixels | " + " | ".join(f"{int(100 * r)}%" for r in RATES) + " |")
    print("|---|" + "---|" * len(RATES))
    for name in ("flat", "tree"):
        cells = []
        for r in RATES:
            v = 100 * np.array([res[name][r][1] for res in runs])
            cells.append(f"{v.mean():.2f} ± {v.std():.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    wins = [all(res["tree"][r][1] < res["flat"][r][1] for res in runs) for r in RATES]
    print()
    print(
        "tree < flat in every run at rate: "
        + ", ".join(f"{int(100 * r)}%: {w}" for r, w in zip(RATES, wins, strict=True))
    )
    margins = [min(100 * (res["flat"][r][1] - res["tree"][r][1]) for res in runs) for r in RATES]
    print(
        "smallest flat - tree over the runs (MSE x 100): "
        + ", ".join(f"{int(100 * r)}%: {m:+.3f}" for r, m in zip(RATES, margins, strict=True))
    )
    chosen = [(res[n][r][2], res[n][r][3]) for res in runs for n in res for r in RATES]
    print(f"(lam_tr, lam_te) chosen on validation: {sorted(set(chosen))}")


if __name__ == "__main__":
    main()
