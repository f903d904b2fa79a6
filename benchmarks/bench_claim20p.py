"""Issue 20 round 16: ``stability_``'s claim against the actual agreement, and the rules behind it.

Two independent data sets per tag are fitted with the defaults (``SPCATV(k,
operator=op, random_state=0)``); per component of each fit: its claimed
``stability_`` and its actual value, the matched agreement (``stability_``'s
measure, Hungarian) with the other data set's fit. Recorded inside the fit
(no effect on it), as similarity matrices so that any rule can be scored
afterwards (``--summary``): ``S(C, A)``, ``S(C, B)``, ``S(A, B)`` of the full
fit ``C`` and the half fits ``A``, ``B`` of

- ``walk``: the walk's halves at the chosen point;
- ``warm``: those halves refitted from the full fit's components;
- ``warm1``: halves of another random split (seed + 1), from the full fit (not for a series);
- ``draw0`` ... : a series' block halves (``series_stability``'s draws);

and the noise floor's verdict. Tags: ``cohort:SEED:ORDER:VARIANT`` (bench_site20n's
multi-site cohort, its rows cut into ``split_halves(X, 0)``), ``NAME:SEED`` for an
evidence set or ``rsfmri:-1`` (bench_stab20m's pairs).

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_claim20p.py \\
        cohort:3573:shuffled:raw paper-0.7:3573 --out /tmp/claim.jsonl
    python benchmarks/bench_claim20p.py --summary /tmp/claim.jsonl
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_site20n import load as cohort  # noqa: E402
from bench_stab20m import data_pair, recorded_fit  # noqa: E402

from neurospca.decomposition import _stability as S  # noqa: E402

RECORD = {}


def _sims(C, pair):
    A, B = (np.asarray(p, float) for p in pair)
    return [
        S._similarity(C, A).tolist(),
        S._similarity(C, B).tolist(),
        S._similarity(A, B).tolist(),
    ]


def _instrument():
    inner, floor = S.halves_stability, S.below_noise

    def halves_stability(estimator, X, params, halves, series=None):
        out = inner(estimator, X, params, halves, series)
        C, seed = estimator.components_, S._seed(estimator)
        data = S.split_halves(X, seed, S.groups_of(estimator))
        RECORD.update(
            walk=_sims(C, halves), warm=_sims(C, S.refit_halves(estimator, data, params, C))
        )
        if not RECORD.get("series"):
            other = S.split_halves(X, seed + 1, S.groups_of(estimator))
            RECORD["warm1"] = _sims(C, S.refit_halves(estimator, other, params, C))
        return out

    def series_stability(estimator, X, params):
        RECORD["series"] = True
        seed, X = S._seed(estimator), np.asarray(X, dtype=float)
        if S.serial_correlation(X, seed) <= S.SERIES_CORRELATION:
            X = X[S.series_order(X, seed)]
        stab = []
        for i in range(S.SERIES_DRAWS):
            halves = S.series_halves(X, seed + i)
            comps = S._fit_point(S._half_models(estimator), halves, params)["components"]
            RECORD[f"draw{i}"] = _sims(estimator.components_, comps)
            stab.append(S.component_stability(estimator.components_, *comps))
        return np.median(stab, axis=0)  # series_stability's value (no size correction)

    def below_noise(estimator, X, params):
        out = floor(estimator, X, params)
        RECORD["floor"] = out.astype(int).tolist()
        return out

    S.halves_stability, S.below_noise, S.series_stability = (
        halves_stability,
        below_noise,
        series_stability,
    )


def pair_of(tag):
    """Two independent data sets, the operator and the number of components."""
    parts = tag.split(":")
    if parts[0] == "cohort":
        X, op, _ = cohort(int(parts[1]), parts[2], parts[3])
        XA, XB = S.split_halves(X, 0)
        return XA, XB, op, 3
    XA, XB, op = data_pair(parts[0], int(parts[1]))
    return XA, XB, op, 5 if parts[0] == "rsfmri" else 3


def run(tag, out):
    XA, XB, op, k = pair_of(tag)
    recs, comps = [], []
    for X in (XA, XB):
        m, rec = recorded_fit(X, op, k, RECORD)
        rec.update(tag=tag, cpu=round(rec["cpu"], 1), point=rec.pop("chosen"))
        rec["nonzero"] = np.mean(m.components_ != 0, axis=1).round(4).tolist()
        recs.append(rec)
        comps.append(m.components_)
    for i, rec in enumerate(recs):
        rec["half"] = "AB"[i]
        rec["actual"] = S.matched_abs_corr(comps[i], comps[1 - i], whole_map=True)[1].tolist()
        line = json.dumps(rec)
        print(line, flush=True)
        if out:
            with open(out, "a") as f:
                f.write(line + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tags", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--summary", nargs="+", metavar="JSONL")
    args = ap.parse_args()
    if args.summary:
        from summarise_claim20p import summary

        return summary(args.summary)
    _instrument()
    for tag in args.tags:
        run(tag, args.out)


if __name__ == "__main__":
    main()
