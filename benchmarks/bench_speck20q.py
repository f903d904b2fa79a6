"""Issue 20 round 17: a reproducing speck is said; the series path's stability_.

Two modes, one JSON line per fit (``--out``, appended):

- ``speck`` (default): the default fit ``SPCATV(k, operator=op, random_state=0)``
  of ``cohort:SEED:ORDER:VARIANT:K`` (:mod:`bench_age20p`'s cohorts: ``harm``
  age left in, ``regr`` age and sex regressed, ``raw``), ``set:NAME:SEED``
  (bench_cost20g's evidence sets, K = 3), ``rsfmri:0`` / ``rsfmri:1``
  (brainspace's run's contiguous halves, z-scored, K = 5) or ``rstest``
  (``test_default_is_sparse_on_real_brainspace_rsfmri``'s fit: every 8th
  volume, K = 3). Besides bench_age20p's keys, per component the features a
  small-component rule may read (:func:`features`); the components and the
  kept whole-map map are saved (``--out``'s stem + ``_TAG.npz``).
- ``--series``: :mod:`bench_series20n`'s pairs (``rsfmri:0`` the run's
  contiguous halves, ``ar-0.9:SEED``, ``nonstat-0.9:SEED``), K = 5; per fit
  the similarity matrices ``S(C, A)``, ``S(C, B)``, ``S(A, B)`` of the series
  path's six draws of block halves fitted cold (``draw0`` ...: the landed
  value) and fitted from the full fit's components (``warm0`` ...), and the
  actual agreement with the other data set's fit (and the truth, simulated).
  ``--summary FILE`` scores the series rules.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_speck20q.py \\
        cohort:3647:site:harm:3 set:paper-0.7:3647 rstest --out /tmp/speck.jsonl
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_speck20q.py --series \\
        rsfmri:0 ar-0.9:3650 --out /tmp/series.jsonl
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_age20p import _write, confounds, fit_record  # noqa: E402
from bench_claim20p import _sims  # noqa: E402
from bench_site20n import load as cohort  # noqa: E402
from bench_stab20m import recorded_fit  # noqa: E402

from neurospca.decomposition import _stability as S  # noqa: E402

RECORD = {}


def speck_data(tag):
    """``(X, op, patterns, age, k)`` of a speck-mode tag."""
    parts = tag.split(":")
    if parts[0] == "cohort":
        seed, order, variant, k = int(parts[1]), parts[2], parts[3], int(parts[4])
        X, op, P = cohort(seed, order, "raw" if variant == "raw" else "harm")
        age, sex = confounds(seed, order)
        if variant == "regr":
            Z = np.column_stack([np.ones(age.size), age, sex])
            X = X - Z @ np.linalg.lstsq(Z, X, rcond=None)[0]
        return X, op, P, age, k
    from tests._instances import brainspace_rsfmri

    if parts[0] == "set":
        from bench_cost20g import load as load_set

        X, op, P = load_set(parts[1], int(parts[2]))
        return X, op, P, np.arange(len(X), dtype=float), 3
    if parts[0] == "rstest":
        X, op, _ = brainspace_rsfmri(step=8)
        return X, op, np.ones((1, X.shape[1])), np.arange(len(X), dtype=float), 3
    X, op, _ = brainspace_rsfmri()
    X = (X - X.mean(0)) / X.std(0)
    h = len(X) // 2
    X = X[:h] if parts[1] == "0" else X[h : 2 * h]
    return X, op, np.ones((1, X.shape[1])), np.arange(len(X), dtype=float), 5


def features(m, X):
    """Per component: the share of the data's variance its scores carry
    (``var``), the model's ``explained_variance_ratio_`` (``evr``) and, where
    a whole-map signal was kept (``_dense_map``), the abs correlation of its
    scores with the signal's (``sig``), its uncentred abs cosine with the map
    (``dcos``) and the map's mean magnitude on its support over the map's mean
    (``peak``)."""
    C = m.components_
    Xc = np.asarray(X, float) - np.asarray(X, float).mean(0)
    T = Xc @ C.T
    out = {
        "var": (T.var(0) / Xc.var(0).sum()).round(5).tolist(),
        "evr": np.round(m.explained_variance_ratio_, 5).tolist(),
    }
    d = getattr(m, "_dense_map", None)
    if d is None:
        return out
    s, norms = Xc @ d, np.maximum(np.linalg.norm(C, axis=1), 1e-300)
    with np.errstate(invalid="ignore", divide="ignore"):
        sig = [abs(np.corrcoef(s, t)[0, 1]) if np.std(t) > 0 else 0.0 for t in T.T]
    peak = [np.abs(d)[c != 0].mean() / np.abs(d).mean() if np.any(c) else 0.0 for c in C]
    out.update(
        sig=np.round(sig, 3).tolist(),
        dcos=(np.abs(C @ d) / norms).round(3).tolist(),
        peak=np.round(peak, 3).tolist(),
    )
    return out


def speck(tag, out):
    X, op, P, age, k = speck_data(tag)
    rec, m = fit_record(X, op, P, age, k, {"tag": tag})
    rec.update(features(m, X))
    _write(out, rec)
    if out:
        stem = f"{out.rsplit('.', 1)[0]}_{tag.replace(':', '_')}.npz"
        np.savez(stem, C=m.components_, dense=getattr(m, "_dense_map", np.zeros(0)))


def _path_fit(estimator, halves, params):
    """Both block halves walked along the chosen split's path (its recorded
    weaker points, then the chosen one), each warm-started from its previous fit."""
    models, split = S._half_models(estimator), (params["l1_ratio"], params["tv_ratio"])
    path = [p["alpha_rel"] for p in estimator.auto_path_ if (p["l1_ratio"], p["tv_ratio"]) == split]
    for a in sorted({x for x in path if x < params["alpha_rel"]}) + [params["alpha_rel"]]:
        comps = S._fit_point(models, halves, dict(params, alpha_rel=a))["components"]
    return comps


def _instrument(path=False):
    """``series_stability`` records its cold draws and the same block halves
    fitted from the full fit's components (``warm``), or walked along the
    chosen split's path (``path``: ``--path``); its value unchanged."""
    from neurospca.decomposition._warm import start_from

    def series_stability(estimator, X, params):
        seed, X = S._seed(estimator), np.asarray(X, dtype=float)
        if S.serial_correlation(X, seed) <= S.SERIES_CORRELATION:
            X = X[S.series_order(X, seed)]
        C, stab = estimator.components_, []
        for i in range(S.SERIES_DRAWS):
            halves = S.series_halves(X, seed + i)
            cold = S._fit_point(S._half_models(estimator), halves, params)["components"]
            RECORD[f"draw{i}"] = _sims(C, cold)
            if path:
                RECORD[f"path{i}"] = _sims(C, _path_fit(estimator, halves, params))
            else:
                warm = [start_from(h, C) for h in S._half_models(estimator)]
                RECORD[f"warm{i}"] = _sims(C, S._fit_point(warm, halves, params)["components"])
            stab.append(S.component_stability(C, *cold))
        return np.median(stab, axis=0)

    S.series_stability = series_stability


def series(tag, out):
    from bench_series20n import data_pair

    XA, XB, op, pats = data_pair(tag)
    recs, comps = [], []
    for X in (XA, XB):
        m, rec = recorded_fit(X, op, 5, RECORD)
        rec.update(tag=tag, cpu=round(rec["cpu"], 1), point=rec.pop("chosen"))
        rec["nonzero"] = np.mean(m.components_ != 0, axis=1).round(4).tolist()
        if pats is not None:
            rec["truth"] = S.matched_abs_corr(m.components_, pats)[1].tolist()
        recs.append(rec)
        comps.append(m.components_)
    for i, rec in enumerate(recs):
        rec["half"] = "AB"[i]
        rec["actual"] = S.matched_abs_corr(comps[i], comps[1 - i], whole_map=True)[1].tolist()
        _write(out, rec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tags", nargs="*")
    ap.add_argument("--series", action="store_true", help="the series path's draws")
    ap.add_argument("--path", action="store_true", help="with --series: walked, not warm")
    ap.add_argument("--out", help="JSON lines, appended")
    ap.add_argument("--summary", nargs="+", metavar="JSONL", help="score the series rules")
    args = ap.parse_args()
    if args.summary:
        from summarise_speck20q import summary

        return summary(args.summary)
    if args.series:
        _instrument(args.path)
    for tag in args.tags:
        (series if args.series else speck)(tag, args.out)


if __name__ == "__main__":
    main()
