"""Issue 20 round 15: whole-map components, the choice and their ``stability_``.

:mod:`bench_site20n`'s cohort and fit (one JSON line per instance, the same
keys, so ``bench_site20n.py --summary`` compares two runs), plus per
component its abs cos with the uniform map (a site offset's truth) and, with
``--halves VARIANT ...``, the actual agreement: the default fit of each of the
two disjoint halves of the rows (``split_halves``, seed 0), the halves'
components matched (Hungarian) by centred abs corr and, between two whole-map
components (>= 90 % non-zero), by the uncentred abs cosine (``stability_``'s
measure); ``actual`` is that agreement of the half components matched to each
full-fit component, and each half's own ``stability_`` claim beside it:

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_whole20o.py \\
        --seeds 3520 3521 --halves raw --out /tmp/after.jsonl
    python benchmarks/bench_site20n.py --summary /tmp/before.jsonl /tmp/after.jsonl
"""

import argparse
import time
import warnings

import numpy as np
from bench_site20n import fit_one, load, run_all
from scipy.optimize import linear_sum_assignment

from neurospca import SPCATV
from neurospca.decomposition import split_halves


def similarity(A, B, whole_map):
    """abs corr between rows (abs cosine between two >= 90 % non-zero rows if ``whole_map``)."""
    S = []
    for cen in (True, False):
        a = A - A.mean(1, keepdims=True) if cen else A
        b = B - B.mean(1, keepdims=True) if cen else B
        na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
        S.append(np.abs(a @ b.T) / np.maximum(np.outer(na, nb), 1e-300))
    both = np.outer(np.mean(A != 0, 1) >= 0.9, np.mean(B != 0, 1) >= 0.9)
    return np.where(both & whole_map, S[1], S[0])


def matched(A, B, whole_map):
    S = similarity(A, B, whole_map)
    r, c = linear_sum_assignment(-S)
    return c[np.argsort(r)], S[r, c][np.argsort(r)]


def halves_agreement(seed, order, variant, C):
    """The default fits of the two halves: actual agreement per full component."""
    X, op, _ = load(seed, order, variant)
    fits = []
    for half in split_halves(X, 0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(SPCATV(3, operator=op, random_state=0).fit(half))
    A, B = (f.components_ for f in fits)
    out = {}
    for name, whole in (("corr", False), ("whole", True)):
        to_a, _ = matched(C, A, whole)
        a_to_b, ab = matched(A, B, whole)
        out[f"actual_{name}"] = np.round(ab[to_a], 2).tolist()
    out["half_claims"] = [np.round(f.stability_, 2).tolist() for f in fits]
    out["half_actual"] = [np.round(matched(A, B, True)[1], 2).tolist()]
    out["half_actual"].append(np.round(matched(B, A, True)[1], 2).tolist())
    out["half_nonzero"] = [np.mean(f.components_ != 0, 1).round(3).tolist() for f in fits]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", required=True)
    ap.add_argument("--orders", nargs="+", default=["shuffled", "site"])
    ap.add_argument("--variants", nargs="+", default=["raw", "harm"])
    ap.add_argument("--halves", nargs="*", default=[], help="variants whose halves are fitted")
    ap.add_argument("--out", help="JSON lines, appended")
    args = ap.parse_args()

    def one(seed, order, variant):
        t = time.process_time()
        r, m = fit_one(seed, order, variant)
        C = m.components_
        u = np.abs(C.sum(1)) / np.maximum(np.linalg.norm(C, axis=1), 1e-300)
        r["uniform_cos"] = np.round(u / np.sqrt(C.shape[1]), 2).tolist()
        if variant in args.halves:
            r.update(halves_agreement(seed, order, variant, C))
        r["bench_cpu"] = round(time.process_time() - t, 1)
        return r

    run_all(args, one)


if __name__ == "__main__":
    main()
