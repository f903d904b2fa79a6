"""Does held-out variance see a merge that reproduces? (issue 20 round 10, a diagnostic).

For each instance and each alpha_rel of the default split (0.05, 0.1), cold fits of the full
data and of two random halves (seed 0): the full fit's recovery (abs cos per planted region),
the halves' matched abs corr, and the halves' held-out variance with its floor
(``model_selection._heldout.pair_heldout``)::

    OMP_NUM_THREADS=1 python benchmarks/diag_heldout_merge.py fs5-0.8:3316 fs5-0.8:3313
"""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import recovery  # noqa: E402
from bench_trust_defaults import load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition._stability import matched_abs_corr  # noqa: E402
from neurospca.model_selection._heldout import pair_heldout  # noqa: E402


def diagnose(name, seed, alpha_rels=(0.5, 1.0, 2.0)):
    """Print one line per alpha_rel of instance ``name`` / ``seed``."""
    X, op, P = load(name, seed)
    X = np.asarray(X, dtype=np.float64)
    idx = np.random.default_rng(0).permutation(len(X))
    A, B = X[idx[: len(X) // 2]], X[idx[len(X) // 2 :]]
    for a in alpha_rels:
        kw = dict(operator=op, alpha_rel=a, l1_ratio=0.05, tv_ratio=0.1, random_state=0)
        cos, _ = recovery(SPCATV(3, **kw).fit(X).components_, P)
        ha = SPCATV(3, certify_support=False, **kw).fit(A).components_
        hb = SPCATV(3, certify_support=False, **kw).fit(B).components_
        rep = np.atleast_2d(matched_abs_corr(ha, hb))[-1]  # (matches, values): the values
        explained, floor = pair_heldout((ha, hb), (A, B))
        print(
            f"{name} {seed} alpha_rel {a:g}: abs cos {np.round(cos, 2)} "
            f"halves {np.round(rep, 2)} held-out {explained:.4f} (floor {floor:.4f})",
            flush=True,
        )


def main():
    warnings.simplefilter("ignore")
    for arg in sys.argv[1:] or ["fs5-0.8:3316"]:
        name, seed = arg.split(":")
        diagnose(name, int(seed))


if __name__ == "__main__":
    main()
