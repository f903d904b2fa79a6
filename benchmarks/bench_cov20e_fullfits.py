"""Full fits at every admissible point of ``alpha_rel="auto"``'s walked path (issue 20 round 6).

Diagnosis for the rule of :mod:`neurospca.decomposition._auto`: for each evidence
set and seed the default fit ``SPCATV(3, operator=op, random_state=0)`` is run;
its full fit is wrapped so that, besides the point it chooses, the full data are
fitted at every admissible point of the walked path, each started from that
point's half fit as the default fit starts. Per point: the halves' matched
|corr| (what the rule sees), the full fit's matched |cos| and Dice to the
planted patterns (the truth), and the full fit's components are saved
(``--out DIR/<set>-<seed>.npz``) for truth-free checks on full fits.

    OMP_NUM_THREADS=1 python benchmarks/bench_cov20e_fullfits.py --sets fs5-0.8 --seeds 2905 \
        --out DIR
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import recovery  # noqa: E402
from bench_trust_defaults import fmt, load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import _auto, _spcatv  # noqa: E402


def recording_fit(store):
    """``auto_fit`` that also fits the full data at every admissible point."""
    original = _auto.auto_fit

    def fit(path, run, start):
        for i, p in enumerate(path):
            if _auto._admissible(p):
                U, V = run(p, start(p["components"]))[:2]
                store.append(
                    {
                        "index": i,
                        "alpha_rel": p["alpha_rel"],
                        "split": [p["l1_ratio"], p["tv_ratio"]],
                        "repro": np.asarray(p["reproducibility"]).tolist(),
                        "nonzero": np.asarray(p["nonzero_fraction"]).tolist(),
                        "V": V,
                    }
                )
        return original(path, run, start)

    return fit


def run(name, seed, out):
    X, op, P = load(name, seed)
    store = []
    _spcatv.auto_fit = recording_fit(store)
    try:
        m = SPCATV(3, operator=op, random_state=0).fit(X)
    finally:
        _spcatv.auto_fit = _auto.auto_fit
    arrays = {}
    for r in store:
        V = r.pop("V")
        cos, dice = recovery(V.T, P)
        r.update(cos=cos.tolist(), dice=dice.tolist())
        arrays[f"V{r['index']}"] = V
        print(
            f"| {name} | {seed} | ({r['split'][0]:g}, {r['split'][1]:g}) {r['alpha_rel']:g} | "
            f"{fmt(r['repro'])} ({np.mean(r['repro']):.2f}) | {fmt(cos)} | {fmt(dice)} |",
            flush=True,
        )
    chosen = (m.l1_ratio_, m.tv_ratio_, m.alpha_rel_)
    print(f"| {name} | {seed} | chosen {chosen} | | {fmt(recovery(m.components_, P)[0])} | |")
    if out:
        meta = {"set": name, "seed": seed, "chosen": chosen, "points": store}
        np.savez(Path(out) / f"{name}-{seed}.npz", P=P, meta=json.dumps(meta), **arrays)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=["fs5-0.8"])
    p.add_argument("--seeds", nargs="+", type=int, default=[2905])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    print("| set | seed | (l1, tv) alpha_rel | halves (mean) | full abs cos | full Dice |")
    print("|---|---|---|---|---|---|")
    for name, seed in ((n, s) for n in args.sets for s in args.seeds):
        run(name, seed, args.out)


if __name__ == "__main__":
    main()
