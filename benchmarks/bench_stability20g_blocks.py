"""Issue 20 round 8: split-half ``stability_`` of a time series with halves made of blocks.

brainspace's resting-state run (z-scored vertices) cut into its first and
second halves (contiguous), each fitted with defaults (``SPCATV(5,
operator=op, random_state=0)``); per half, at its chosen point, the split-half
measure (``component_stability``) of two halves of its rows drawn as

- ``random rows`` (the walk's halves, as ``stability_`` under "auto" uses);
- ``blocks``: the rows cut in order into 10 contiguous blocks, 5 random
  blocks in each half (neighbouring time points stay together);
- ``first / second``: the half's own first and second halves;

each fitted cold and from the fit's components (``start_from``), against the
actual matched |corr| with the other half's fit.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_stability20g_blocks.py
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_stability20g_rsfmri import fmt  # noqa: E402
from bench_trust import halves  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import component_stability, matched_abs_corr, split_halves, start_from  # noqa: E402
from neurospca.decomposition._stability import _chosen_params, _fit_point, _half_models  # noqa: E402


def designs(n):
    blocks = np.array_split(np.arange(n), 10)
    order = np.random.default_rng(0).permutation(10)
    a = np.sort(np.concatenate([blocks[i] for i in order[:5]]))
    b = np.sort(np.concatenate([blocks[i] for i in order[5:]]))
    h = n // 2
    return {"blocks": (a, b), "first / second": (np.arange(h), np.arange(h, 2 * h))}


def main():
    from tests._instances import brainspace_rsfmri

    X, op, _ = brainspace_rsfmri()
    X = (X - X.mean(0)) / X.std(0)
    print(f"# rs-fMRI {X.shape}, {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    models, parts = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rows in halves(len(X), -1):
            parts.append(X[rows])
            models.append(SPCATV(5, operator=op, random_state=0, stability=False).fit(X[rows]))
        print("| half | halves of its rows | start | split-half per component (mean) |")
        print("|---|---|---|---|")
        for i, (m, other) in enumerate([(models[0], models[1]), (models[1], models[0])]):
            Xi, params = parts[i], _chosen_params(m)
            _, actual = matched_abs_corr(m.components_, other.components_)
            print(
                f"| {'AB'[i]} | actual (the other half's fit) | - | {fmt(actual)} "
                f"({actual.mean():.2f}) |",
                flush=True,
            )
            rows = {"random rows": None, **designs(len(Xi))}
            for name, idx in rows.items():
                pair = split_halves(Xi, 0) if idx is None else (Xi[idx[0]], Xi[idx[1]])
                for start in ("cold", "full fit"):
                    ms = _half_models(m)
                    if start == "full fit":
                        ms = [start_from(x, m.components_) for x in ms]
                    comps = _fit_point(ms, pair, params)["components"]
                    s = component_stability(m.components_, *comps)
                    print(
                        f"| {'AB'[i]} | {name} | {start} | {fmt(s)} ({s.mean():.2f}) |", flush=True
                    )


if __name__ == "__main__":
    main()
