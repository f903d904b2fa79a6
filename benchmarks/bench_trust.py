"""Which default penalty rule for SPCA-TV: deflation vs back-fitting, over a grid (issue 20).

For every data set of the evidence module (``_trust.py``, ``tests/_instances.py``)
and every grid point (method x alpha_rel x split), records

- truth metrics of the fit on all rows (matched |cos|, support Dice per planted
  pattern) where there is a truth,
- split-half reproducibility of the same setting (the halves of
  ``_trust.split_half``: matched |corr|, top-m Dice, support fractions),
- support fraction per component and empty components,

and the same for the peers (PCA, SparsePCA, nilearn's DictLearning mimicked on
the array). One JSON line per (data set, instance, method, setting) goes to
``--out``; ``bench_trust_report.py`` turns the lines into tables and evaluates
selection rules that see only the data.

"backfit" is the prototype of the joint fit (/tmp/joint_proto.py): deflation's
fit followed by back-fitting sweeps in which each component is re-fitted with
the same certified v-step on the residual of the others. Its first stage IS
the deflation fit, so both methods come from one run (the deflation loadings
are recorded before the sweeps).

Usage (one process, one thread; each call well under 10 minutes)::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_trust.py \
        --set atrophy-fs5 --corr 0.5 --seeds 2001 2002 2003 --out runs.jsonl
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from _trust import atrophy, compare, paper2d, recovery  # noqa: E402

from neurospca import spca_tv  # noqa: E402
from neurospca.decomposition._weights import _weights  # noqa: E402

ALPHAS = (0.5, 1.0, 2.0, 4.0, 8.0)
SPLITS = ((0.05, 0.1), (0.2, 0.2), (0.4, 0.3))


# ----------------------------------------------------------------- fitting


def l1_max(Xc):
    return np.sqrt((Xc**2).sum(0)).max() / len(Xc)


def backfit_sweeps(Xc, op, K, U, V, d, W, l1, l2, tv, max_sweeps=20, tol=1e-3):
    """The prototype's back-fitting: each component refitted with ``spca_tv`` on
    the residual of the others, until V moves by less than ``tol`` (relative).
    Returns ``U, V, d, W`` (updated in place too) and the number of sweeps."""
    s = 0
    for s in range(max_sweeps):  # noqa: B007  s is returned: the sweeps run
        old = V.copy()
        for k in range(K):
            R = Xc - (U * d) @ V.T + d[k] * np.outer(U[:, k], V[:, k])
            u0 = U[:, [k]] if np.any(U[:, k]) else None
            u, v, inf = spca_tv(R, 1, l1=l1, l2=l2, tv=tv, operator=op, u0=u0, w0=[W[k]], tol=tol)
            U[:, k], V[:, k], d[k], W[k] = u[:, 0], v[:, 0], inf["d"][0], inf["w"][0]
        if np.linalg.norm(V - old) / max(np.linalg.norm(V), 1e-300) < tol:
            break
    return U, V, d, W, s + 1


def fit_both(X, op, K, alpha_rel, l1r, tvr, sweeps=20, tol=1e-3):
    """Deflation (SPCATV as is, fixed alpha_rel) then back-fitting sweeps.

    Returns {"deflation": V0, "backfit": V} (P x K raw loadings), the number of
    sweeps and the times of both stages.
    """
    Xc = X - X.mean(0)
    l1, l2, tv = _weights(alpha_rel * l1_max(Xc), l1r, tvr)
    t0 = time.perf_counter()
    U, V, info = spca_tv(Xc, K, l1=l1, l2=l2, tv=tv, operator=op, tol=tol)
    t_defl = time.perf_counter() - t0
    V0 = V.copy()
    d = np.array(info["d"], float)
    U, V, d, W, n = backfit_sweeps(
        Xc, op, K, U, V, d, list(info["w"]), l1, l2, tv, max_sweeps=sweeps, tol=tol
    )
    t_back = time.perf_counter() - t0
    return {"deflation": V0.T, "backfit": V.T}, n, t_defl, t_back


def halves(n, seed):
    """The halves of ``_trust.split_half(..., seed)``; seed -1: first and second half
    of the rows in order (contiguous blocks of a time series)."""
    if seed == -1:
        h = n // 2
        return np.arange(h), np.arange(h, 2 * h)
    idx = np.random.default_rng(seed).permutation(n)
    h = n // 2
    return idx[:h], idx[h : 2 * h]


# ------------------------------------------------------------------- peers


class _Dummy:
    def inverse_transform(self, x):
        return None


def nilearn_dictlearning(X, K, seed=0):
    """nilearn's DictLearning on an array (nilearn 0.14, default parameters).

    What ``DictLearning.fit`` does after masking, step by step: the masker
    z-scores each feature over samples (``standardize=True``); with
    ``reduction_ratio="auto"`` ``_mask_and_reduce_single`` keeps
    ``U S`` of the rank-K ``_fast_svd`` of the data's transpose (K x P); then
    ``DictLearning._raw_fit`` on that: CanICA initial maps, ridge loadings,
    ``dict_learning_online(data.T, K, alpha=10, batch_size=20, method="cd",
    max_iter=one epoch)``, unit-norm maps. We call ``_raw_fit`` itself (a
    stand-in masker only for ``components_img_``).
    """
    from nilearn.decomposition import DictLearning
    from nilearn.decomposition._base import _fast_svd

    sd = X.std(0)
    Z = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    U, S, _ = _fast_svd(Z.T, K, random_state=seed)
    red = (U * S).T.copy()
    dl = DictLearning(n_components=K, random_state=seed)
    dl.masker_ = _Dummy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dl._raw_fit(red)
    return dl.components_


def peer_fits(name, K, seed=0):
    from sklearn.decomposition import PCA, MiniBatchSparsePCA, SparsePCA

    if name == "pca":
        return lambda X: PCA(K).fit(X).components_
    if name.startswith("sparsepca"):
        a = float(name[len("sparsepca") :])
        return lambda X: SparsePCA(K, alpha=a, random_state=seed).fit(X).components_
    if name.startswith("mbsparsepca"):
        a = float(name[len("mbsparsepca") :])
        return lambda X: (
            MiniBatchSparsePCA(K, alpha=a, random_state=seed, max_iter=50, batch_size=10)
            .fit(X)
            .components_
        )
    if name == "dictlearning":
        return lambda X: nilearn_dictlearning(X, K, seed)
    raise ValueError(name)


# ------------------------------------------------------------------- data


def load(name, corr, seed):
    """(X, operator, patterns or None, K) of an evidence set."""
    if name == "atrophy-fs5":
        X, op, pat = atrophy("fsaverage5", corr, seed=seed)
        return X, op, pat, 3
    if name == "atrophy-conte69":
        X, op, pat = atrophy("conte69", corr, seed=seed)
        return X, op, pat, 3
    if name == "paper2d":
        X, op, pat = paper2d(corr, seed=seed)
        return X, op, pat, 3
    if name == "rsfmri":
        from tests._instances import brainspace_rsfmri

        X, op, _ = brainspace_rsfmri()
        X = (X - X.mean(0)) / X.std(0)
        return X, op, None, 5
    if name == "motor":
        from tests._instances import motor_maps

        X, op, _ = motor_maps(seed=seed)
        return X, op, None, 5
    raise ValueError(name)


# ------------------------------------------------------------------- main


def emit(out, rec):
    line = json.dumps(rec)
    with open(out, "a") as f:
        f.write(line + "\n")
    short = {
        k: rec[k]
        for k in (
            "set",
            "corr",
            "seed",
            "split_seed",
            "method",
            "alpha_rel",
            "l1_ratio",
            "tv_ratio",
        )
        if k in rec
    }
    msg = " ".join(f"{k}={v}" for k, v in short.items())
    for key in ("cos", "dice", "hcorr", "htopm", "hsdice", "supp"):
        if key in rec:
            msg += f" {key}=" + "/".join(f"{x:.2f}" for x in rec[key])
    for key in ("t_full", "t_half", "sweeps"):
        if key in rec:
            msg += f" {key}={rec[key]}"
    print(msg, flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--set", required=True)
    p.add_argument("--corr", type=float, default=0.0)
    p.add_argument("--seeds", type=int, nargs="+", default=[2001])
    p.add_argument(
        "--split-seeds",
        type=int,
        nargs="+",
        default=None,
        help="split seeds per instance (default: the i-th instance gets seed i)",
    )
    p.add_argument("--alphas", type=float, nargs="+", default=list(ALPHAS))
    p.add_argument("--splits", type=str, nargs="+", default=None, help="l1_ratio,tv_ratio pairs")
    p.add_argument(
        "--peers",
        type=str,
        nargs="*",
        default=["pca", "sparsepca0.5", "sparsepca1", "sparsepca2", "dictlearning"],
    )
    p.add_argument(
        "--full-only",
        type=str,
        nargs="*",
        default=[],
        help="peers fitted on all rows only (no split halves)",
    )
    p.add_argument("--no-grid", action="store_true")
    p.add_argument("--no-full", action="store_true", help="skip the all-rows fit")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    splits = (
        SPLITS if args.splits is None else [tuple(map(float, s.split(","))) for s in args.splits]
    )
    for i, seed in enumerate(args.seeds):
        X, op, pat, K = load(args.set, args.corr, seed)
        sseeds = args.split_seeds if args.split_seeds is not None else [i]
        print(
            f"# {args.set} corr={args.corr} seed={seed} X={X.shape} K={K} split seeds={sseeds}",
            flush=True,
        )
        base = {"set": args.set, "corr": args.corr, "seed": seed, "K": K, "P": X.shape[1]}
        for peer in args.peers:
            fit = peer_fits(peer, K)
            rec = dict(base, method=peer)
            if pat is not None and not args.no_full:
                t0 = time.perf_counter()
                C = fit(X)
                rec["t_full"] = round(time.perf_counter() - t0, 2)
                cos, dice = recovery(C, pat)
                rec.update(
                    cos=cos.tolist(), dice=dice.tolist(), supp=np.mean(C != 0, axis=1).tolist()
                )
            if peer in args.full_only:
                emit(args.out, rec)
                continue
            for ss in sseeds:
                a, b = halves(len(X), ss)
                t0 = time.perf_counter()
                A, B = fit(X[a]), fit(X[b])
                corr, dice, sup, sd = compare(A, B)
                emit(
                    args.out,
                    dict(
                        rec,
                        split_seed=ss,
                        hcorr=corr.tolist(),
                        htopm=dice.tolist(),
                        hsupp=sup.tolist(),
                        hsdice=sd.tolist(),
                        t_half=round(time.perf_counter() - t0, 2),
                    ),
                )
        if args.no_grid:
            continue
        for l1r, tvr in splits:
            for alpha in args.alphas:
                recs = {
                    m: dict(base, method=m, alpha_rel=alpha, l1_ratio=l1r, tv_ratio=tvr)
                    for m in ("deflation", "backfit")
                }
                if not args.no_full:
                    Vs, sw, td, tb = fit_both(X, op, K, alpha, l1r, tvr)
                    for m in recs:
                        C = Vs[m]
                        recs[m].update(
                            supp=np.mean(C != 0, axis=1).tolist(),
                            t_full=round(td if m == "deflation" else tb, 2),
                        )
                        if pat is not None:
                            cos, dice = recovery(C, pat)
                            recs[m].update(cos=cos.tolist(), dice=dice.tolist())
                    recs["backfit"]["sweeps"] = sw
                for ss in sseeds:
                    a, b = halves(len(X), ss)
                    VA, swa, tda, tba = fit_both(X[a], op, K, alpha, l1r, tvr)
                    VB, swb, tdb, tbb = fit_both(X[b], op, K, alpha, l1r, tvr)
                    for m in recs:
                        corr, dice, sup, sd = compare(VA[m], VB[m])
                        t = tda + tdb if m == "deflation" else tba + tbb
                        rec = dict(
                            recs[m],
                            split_seed=ss,
                            hcorr=corr.tolist(),
                            htopm=dice.tolist(),
                            hsupp=sup.tolist(),
                            hsdice=sd.tolist(),
                            t_half=round(t, 2),
                        )
                        if m == "backfit":
                            rec["half_sweeps"] = [swa, swb]
                        emit(args.out, rec)


if __name__ == "__main__":
    main()
