"""Issue 20 peers: scikit-learn SparsePCA over an alpha grid, and plain PCA.

On the evidence sets of ``bench_trust_defaults.py`` (its ``load``: atrophy on
fsaverage5 / conte69 with age and sex regressed out, N = 133; the paper's 2-D
set-up with correlated scores), fit ``SparsePCA(3, alpha=a, random_state=0)``
on the centred data for every alpha, and ``PCA(3)`` as a floor. One JSON line
per fit is appended to ``--out`` as soon as it finishes (matched |cos| and
support Dice per planted pattern, wall time), so nothing is lost if the run
is stopped.

    OMP_NUM_THREADS=1 python benchmarks/bench_peers20d.py --sets fs5-0.5 \
        --seeds 3001 --alphas 0.25 0.5 1 2 --out peers.jsonl
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import recovery  # noqa: E402
from bench_trust_defaults import SETS, load  # noqa: E402
from sklearn.decomposition import PCA, SparsePCA  # noqa: E402


def record(out, **fields):
    with open(out, "a") as f:
        f.write(json.dumps(fields) + "\n")


def fit_one(label, make, X, P):
    t0 = time.perf_counter()
    model = make().fit(X)
    wall = time.perf_counter() - t0
    cos, dice = recovery(model.components_, P)
    n_iter = int(getattr(model, "n_iter_", 0))
    return dict(fit=label, cos=cos.tolist(), dice=dice.tolist(), wall=wall, n_iter=n_iter)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=list(SETS))
    p.add_argument("--seeds", nargs="+", type=int, default=[3001])
    p.add_argument("--alphas", nargs="+", type=float, default=[0.25, 0.5, 1.0, 2.0])
    p.add_argument("--no-pca", action="store_true")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    for seed in args.seeds:
        for name in args.sets:
            X, _, P = load(name, seed)
            Xc = X - X.mean(axis=0)
            base = dict(set=name, seed=seed, shape=list(X.shape))
            if not args.no_pca:
                r = fit_one("PCA", lambda: PCA(3), Xc, P)
                record(args.out, **base, **r)
            for a in args.alphas:
                r = fit_one(
                    f"SparsePCA {a:g}", lambda a=a: SparsePCA(3, alpha=a, random_state=0), Xc, P
                )
                record(args.out, **base, alpha=a, **r)
                print(name, seed, a, np.round(r["cos"], 2), f"{r['wall']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
