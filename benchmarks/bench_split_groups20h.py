"""Issue 20 round 9: ``split_groups`` for ``stability_`` (branch ts20h).

``--rsfmri``: brainspace's resting-state run (z-scored vertices, both
hemispheres) is cut into its first and second halves (``bench_trust.halves``
with seed -1, as ``bench_stability20g_rsfmri.py``). Each half is fitted with
``SPCATV(5, operator=op, random_state=0)`` at its defaults, once with random
halves (``split_groups=None``, the default: round 8's fit) and once with
``split_groups="blocks"`` (10 contiguous blocks). Per half and mode: the
chosen point, ``stability_``, the actual reproducibility (matched absolute
correlation of each component with the other half's fit in the same mode),
non-zero % and CPU seconds.

``--sims``: repeated sessions. Each simulated subject of a trust / paper
instance (``bench_trust_defaults.load``) or of the 12 x 12 noise-only and
planted instances (``bench_stability20f.instance``) is observed ``s`` times
(2-4 sessions, drawn per subject): its row plus white session noise of half
the data's own noise sd (the rows of one subject share everything else). Fitted with
defaults, without and with ``split_groups`` = the subject of each row:
``stability_``, the matched |cos| to the planted patterns, the chosen point.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_split_groups20h.py --rsfmri
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_split_groups20h.py --sims \\
        --sets noise planted paper-0.7 fs5-0.5 --seeds 3241 3242
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_stability20g_rsfmri import fmt, half_rows  # noqa: E402
from bench_trust import halves  # noqa: E402

import neurospca  # noqa: E402,F401  (first: the tree on PYTHONPATH)
from neurospca import SPCATV  # noqa: E402


def _fit(X, op, split_groups, k=5):
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(k, operator=op, random_state=0).fit(X, split_groups=split_groups)
    m.cpu = time.process_time() - c0
    return m


def rsfmri():
    from tests._instances import brainspace_rsfmri

    X, op, _ = brainspace_rsfmri()
    X = (X - X.mean(0)) / X.std(0)
    print(f"# rs-fMRI {X.shape}, {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    print(
        "| halves of each half | half | chosen | stability_ (mean) | actual: matched abs corr "
        "with the other half (mean) | non-zero % | CPU s |\n|---|---|---|---|---|---|---|",
        flush=True,
    )
    for mode in ("blocks", None):
        models = [_fit(X[rows], op, mode) for rows in halves(len(X), -1)]
        for half, m in zip("AB", models, strict=True):  # kept for later checks (no pickle)
            np.savez(
                f"/tmp/ts20h-rsfmri-{mode}-{half}.npz",
                components=m.components_,
                singular_values=m.singular_values_,
                stability=m.stability_,
            )
        half_rows(models, lead=f"{models[0].split_groups_} | ")


#: Session noise in units of the data's noise sd (within-subject variation
#: smaller than between-subject variation, as for repeated scans).
SESSION_NOISE = 0.5


def sessions(X, seed, noise):
    """Each row of ``X`` repeated 2-4 times (per subject), plus session noise of sd
    ``noise``; returns the rows and the subject of each."""
    rng = np.random.default_rng(seed)
    reps = rng.integers(2, 5, size=X.shape[0])
    subject = np.repeat(np.arange(X.shape[0]), reps)
    return X[subject] + noise * rng.standard_normal((subject.size, X.shape[1])), subject


def matched_cos(C, truth):
    if truth is None or len(truth) == 0:
        return np.full(C.shape[0], np.nan)
    Cn = C / np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-300)
    T = np.asarray(truth, float)
    T = T / np.linalg.norm(T, axis=1, keepdims=True)
    return np.abs(Cn @ T.T).max(axis=1)


def load(name, seed):
    """``(X, op, truth, k, noise sd)`` of one instance (``bench_stability20f.instance``);
    the noise sd is that of the centred data minus its projection on the patterns."""
    from bench_stability20f import instance

    X, op, truth, k = instance(name, seed, False)
    resid = X - X.mean(0)
    if truth is not None and len(truth):
        Q, _ = np.linalg.qr(np.asarray(truth, float).T)
        resid = resid - (resid @ Q) @ Q.T
    return X, op, truth, k, float(resid.std())


def sims(sets, seeds):
    print(
        "| set | seed | rows (subjects) | split | chosen | abs cos | stability_ | flagged | "
        "CPU s |\n|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    for name in sets:
        for seed in seeds:
            X0, op, truth, k, sd = load(name, seed)
            X, subject = sessions(X0, seed, SESSION_NOISE * sd)
            for groups in (None, subject):
                m = _fit(X, op, groups, k)
                cos = matched_cos(m.components_, truth)
                flagged = int(np.sum(np.asarray(m.stability_) < 0.5))
                print(
                    f"| {name} | {seed} | {len(X)} ({len(X0)}) | {m.split_groups_} | "
                    f"({m.l1_ratio_:g}, {m.tv_ratio_:g}) {m.alpha_rel_:g} | {fmt(cos)} | "
                    f"{fmt(m.stability_)} | {flagged} of {k} | {m.cpu:.1f} |",
                    flush=True,
                )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rsfmri", action="store_true")
    p.add_argument("--sims", action="store_true")
    p.add_argument("--sets", nargs="+", default=["noise", "planted"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3241])
    args = p.parse_args()
    if args.rsfmri:
        rsfmri()
    if args.sims:
        sims(args.sets, args.seeds)


if __name__ == "__main__":
    main()
