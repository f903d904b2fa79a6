"""Issue 20 round 8: is ``stability_`` honest on brainspace's resting-state run?

The run (z-scored vertices) is cut into its first and second halves
(contiguous: ``bench_trust_rsfmri.py``'s split). Each half is fitted with
``SPCATV(5, operator=op, random_state=0)`` at its defaults; printed per half:
the chosen point, ``stability_`` (what the model claims for the component),
and the actual reproducibility: the matched absolute correlation of each of
its components with the other half's fit (Hungarian matching), and CPU
seconds. ``stability_`` is honest when it is close to the actual value.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_stability20g_rsfmri.py
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_trust import halves  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import matched_abs_corr  # noqa: E402
from tests._instances import brainspace_rsfmri  # noqa: E402


def fmt(a):
    return "/".join(f"{x:.2f}" for x in a)


def half_rows(models, lead=""):
    """One table row per half: its choice, ``stability_`` and the actual
    matched abs corr with the other half's fit (``lead``: leading cells)."""
    for i, (m, other) in enumerate([(models[0], models[1]), (models[1], models[0])]):
        _, corr = matched_abs_corr(m.components_, other.components_)
        print(
            f"| {lead}{'AB'[i]} | ({m.l1_ratio_:g}, {m.tv_ratio_:g}) {m.alpha_rel_:g} | "
            f"{fmt(m.stability_)} ({np.mean(m.stability_):.2f}) | {fmt(corr)} "
            f"({np.mean(corr):.2f}) | {fmt(100 * np.mean(m.components_ != 0, axis=1))} | "
            f"{m.cpu:.0f} |",
            flush=True,
        )


def main():
    X, op, _ = brainspace_rsfmri()
    X = (X - X.mean(0)) / X.std(0)
    print(f"# rs-fMRI {X.shape}, {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    models = []
    for rows in halves(len(X), -1):
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models.append(SPCATV(5, operator=op, random_state=0).fit(X[rows]))
        models[-1].cpu = time.process_time() - c0
    print(
        "| half | chosen | stability_ (mean) | actual: matched abs corr with the other half (mean) "
        "| non-zero % | CPU s |\n|---|---|---|---|---|---|"
    )
    half_rows(models)


if __name__ == "__main__":
    main()
