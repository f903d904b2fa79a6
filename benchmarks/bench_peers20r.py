"""Issue 20 round 18: today's defaults side by side with the peers (fresh seeds, real data).

Simulated sets (``--sets``): ``bench_trust_defaults.load`` (c69-0.6, fs5-0.5,
fs5-0.8, paper-0.7) and a multi-site cohort (``make_multisite_cohort``,
fsaverage5, three sites) through the package's own cohort path
(``StudyDesign``: age and sex removed, dx preserved) with ComBat on the site
column (``site-combat``) or without (``site-raw``). Fits (``--fits``): ``ours``
= ``SPCATV(K, operator=op, random_state=0)`` at every default; ``pca``;
``spcaA`` = scikit-learn ``SparsePCA(K, alpha=A, random_state=0)``;
``dictlearning[A]`` / ``canica`` = nilearn's estimators (alpha A) on the array
(``_raw_fit`` after the masker's z-scoring and the rank-K reduction, as their
``fit`` does; the public ``fit`` accepts volumes and ``SurfaceImage``). Peers
get the centred data. Per planted pattern: matched abs cos, support Dice (ours:
also of the certified support); CPU seconds (``time.process_time``).
``--rsfmri``: brainspace's run (z-scored vertices) in contiguous halves, K = 5:
matched abs corr and top-m Dice between the halves' fits (``_trust.compare``);
ours also ``stability_`` against the actual per-component agreement.
One JSON line per fit, appended as it finishes; done fits are skipped.

    OMP_NUM_THREADS=1 python benchmarks/bench_peers20r.py --sets fs5-0.5 site-combat \
        --seeds 3677 3678 --fits ours pca dictlearning canica --out D/sim.jsonl
    OMP_NUM_THREADS=1 python benchmarks/bench_peers20r.py --rsfmri --fits ours pca spca1 \
        --out D/rsfmri.jsonl
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _trust import certified_dice, compare, recovery  # noqa: E402
from bench_trust import _Dummy, halves  # noqa: E402
from bench_trust_defaults import load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import matched_abs_corr  # noqa: E402
from neurospca.study import StudyDesign, make_multisite_cohort  # noqa: E402
from neurospca.surface import tv_from_hemispheres  # noqa: E402


def load_set(name, seed):
    """(X, operator, planted patterns) of a simulated set."""
    if not name.startswith("site-"):
        return load(name, seed)
    b = make_multisite_cohort(None, 133, random_state=seed)
    n_left = b.n_vertices[0]
    op, _ = tv_from_hemispheres(b.mesh_left, b.mesh_right, b.cortex[:n_left], b.cortex[n_left:])
    harmonize = "site" if name == "site-combat" else None
    design = StudyDesign(confounds=["age", "sex"], harmonize=harmonize, groups=["dx"])
    X = design.fit_transform(b.X[:, b.cortex], b.participants)
    return X, op, b.patterns[:, b.cortex]


def nilearn_array(kind, X, K, seed=0, **params):
    """nilearn's CanICA or DictLearning on an array: the masker's z-scoring, the
    rank-K reduction (``U S``) of ``_mask_and_reduce``, then the estimator's own
    ``_raw_fit`` (as ``bench_trust.nilearn_dictlearning``)."""
    from nilearn.decomposition import CanICA, DictLearning
    from nilearn.decomposition._base import _fast_svd

    sd = X.std(0)
    Z = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    U, S, _ = _fast_svd(Z.T, K, random_state=seed)
    est = (CanICA if kind == "canica" else DictLearning)(K, random_state=seed, **params)
    est.masker_ = _Dummy()
    est._raw_fit((U * S).T.copy())
    return est.components_


def fit(name, X, op, K):
    """(components, model or None, CPU s) of one fit on ``X``."""
    from sklearn.decomposition import PCA, SparsePCA

    c0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = None
        if name == "ours":
            model = SPCATV(K, operator=op, random_state=0).fit(X)
            comps = model.components_
            model.said = sorted({str(w.message)[:70] for w in caught})
        elif name == "pca":
            comps = PCA(K).fit(X - X.mean(0)).components_
        elif name.startswith("spca"):
            sp = SparsePCA(K, alpha=float(name[4:]), random_state=0)
            comps = sp.fit(X - X.mean(0)).components_
        elif name == "canica":
            comps = nilearn_array("canica", X, K)
        elif name.startswith("dictlearning"):  # dictlearningA: alpha A (default 10)
            comps = nilearn_array("dl", X, K, alpha=float(name[12:] or 10))
        else:
            raise ValueError(f"fits: unknown fit {name!r}")
    return np.asarray(comps), model, time.process_time() - c0


def ours_fields(m):
    return dict(
        point=[m.l1_ratio_, m.tv_ratio_, m.alpha_rel_],
        stability=np.round(m.stability_, 3).tolist(),
        nonzero=np.mean(m.components_ != 0, axis=1).round(4).tolist(),
        said=m.said,
    )


def emit(out, rec):
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print({k: rec[k] for k in rec if k in ("set", "seed", "fit", "cos", "corr", "cpu")}, flush=True)


def done(out):
    if not Path(out).exists():
        return set()
    recs = [json.loads(line) for line in open(out) if line.strip()]
    return {(r["set"], r.get("seed"), r["fit"]) for r in recs}


def run_sim(args):
    have = done(args.out)
    for name in args.sets:
        for seed in args.seeds:
            todo = [f for f in args.fits if (name, seed, f) not in have]
            if not todo:
                continue
            X, op, P = load_set(name, seed)
            for f in todo:
                comps, m, cpu = fit(f, X, op, len(P))
                cos, dice = recovery(comps, P)
                rec = dict(set=name, seed=seed, fit=f, cos=cos.round(3).tolist())
                rec.update(dice=dice.round(3).tolist(), cpu=round(cpu, 1))
                if m is not None:
                    rec.update(cert_dice=certified_dice(m, P).round(3).tolist(), **ours_fields(m))
                emit(args.out, dict(rec, shape=list(X.shape)))


def run_rsfmri(args):
    from tests._instances import brainspace_rsfmri

    have = done(args.out)
    X, op, _ = brainspace_rsfmri()
    X = (X - X.mean(0)) / X.std(0)
    for f in [f for f in args.fits if ("rsfmri", None, f) not in have]:
        fits = [fit(f, X[rows], op, 5) for rows in halves(len(X), -1)]
        corr, dice, support, _ = compare(fits[0][0], fits[1][0])
        rec = dict(set="rsfmri", seed=None, fit=f, corr=corr.round(3).tolist())
        rec.update(dice=dice.round(3).tolist(), support=support.round(4).tolist())
        rec.update(cpu=[round(c, 1) for _, _, c in fits])
        if fits[0][1] is not None:
            a, b = fits[0][1], fits[1][1]
            rec["halves"] = [
                dict(ours_fields(m), actual=matched_abs_corr(m.components_, o.components_)[1])
                for m, o in ((a, b), (b, a))
            ]
            for h in rec["halves"]:
                h["actual"] = np.round(h["actual"], 3).tolist()
        emit(args.out, rec)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["c69-0.6", "fs5-0.5", "fs5-0.8", "paper-0.7"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3677, 3678])
    p.add_argument("--fits", nargs="+", default=["ours", "pca", "dictlearning", "canica"])
    p.add_argument("--rsfmri", action="store_true")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    run_rsfmri(args) if args.rsfmri else run_sim(args)


if __name__ == "__main__":
    main()
