"""Issue 20 must-show "no specks", with the current defaults, on fresh instances.

For each evidence set of ``bench_trust_defaults.py`` (the same data as its
``load``; atrophy on fsaverage5 / conte69, age and sex regressed out, N = 133;
the paper's 2-D set-up) and, as a volume activation-map case, nilearn's motor
t-map in the 2 mm MNI152 mask (``tests/_instances.motor_maps``, 40 maps, 5
components) and ``make_fmri_like(83)`` (64,030 voxels, as ``bench_support.py``), and the
rs-fMRI must-show's halves (``rsfmri-a``, ``rsfmri-b``: brainspace's run on
fsaverage5, as ``bench_trust_rsfmri.py``), fit
``SPCATV(k, operator=op, random_state=0)`` with every other setting at its
default and count, per component, the clusters of the model's cluster table
(:func:`neurospca.reporting.cluster_table` on the certified support, as the
report draws it) and the "specks": clusters whose peak is below 1e-3 of the
component's peak. The same count on the raw non-zero loadings is given too.
One JSON line per fit is appended to ``--out``.

    OMP_NUM_THREADS=1 python benchmarks/bench_specks20d.py --sets fs5-0.5 motor \
        --seeds 3001 --out specks.jsonl
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import regress_out  # noqa: E402
from bench_trust_defaults import SETS  # noqa: E402

from neurospca import (  # noqa: E402
    SPCATV,
    make_atrophy_cohort,
    make_fmri_like,
    make_paper_simulation,
    tv_from_hemispheres,
    tv_from_mask,
)
from neurospca.masking import VolumeMasker  # noqa: E402
from neurospca.reporting import cluster_table  # noqa: E402

SPECK = 1e-3


def load_with_space(name, seed):
    """(X, operator, space, meshes, n_components); the data of ``bench_trust_defaults.load``."""
    if name == "motor":
        from _instances import motor_maps

        X, op, mask = motor_maps(seed=seed)
        return X, op, VolumeMasker(mask), None, 5
    if name.startswith("rsfmri"):
        return _rsfmri_half(name)
    if name == "fmri_like":
        X, _, mask = make_fmri_like(83, random_state=seed)
        return X, tv_from_mask(mask), VolumeMasker(mask), None, 3
    mesh, corr = SETS[name]
    if mesh == "paper":
        X, _, mask = make_paper_simulation(250, random_state=seed, correlation=corr)
        return X, tv_from_mask(mask), VolumeMasker(mask[..., None]), None, 3
    d = make_atrophy_cohort(133, mesh=mesh, correlation=corr, random_state=seed)
    n_left = d.n_vertices[0]
    op, hemis = tv_from_hemispheres(d.mesh_left, d.mesh_right, d.cortex[:n_left], d.cortex[n_left:])
    X = regress_out(d.X[:, d.cortex], d.confounds)
    return X, op, hemis, {"left": d.mesh_left, "right": d.mesh_right}, 3


def _rsfmri_half(name):
    """The rs-fMRI must-show's halves: brainspace's run on fsaverage5, vertices
    z-scored, first (``rsfmri-a``) or second (``rsfmri-b``) half, 5 components."""
    from _instances import brainspace_rsfmri

    from neurospca import tv_from_hemispheres
    from tests._instances import _fsaverage5_meshes

    X, op, keep = brainspace_rsfmri()
    X = (X - X.mean(0)) / X.std(0)
    half = len(X) // 2
    X = X[:half] if name == "rsfmri-a" else X[half:]
    (lc, lf), (rc, rf) = _fsaverage5_meshes()
    n_left = lc.shape[0]
    op, hemis = tv_from_hemispheres((lc, lf), (rc, rf), keep[:n_left], keep[n_left:])
    return X, op, hemis, {"left": (lc, lf), "right": (rc, rf)}, 5


def count(comp, support, space, meshes):
    """(clusters, specks) of ``comp`` restricted to ``support``."""
    if not support.any():
        return 0, 0
    clusters = cluster_table(comp, space, meshes=meshes, support=support)
    peak = np.abs(comp[support]).max()
    return len(clusters), int(sum(abs(c.peak.value) < SPECK * peak for c in clusters))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=[*SETS, "motor"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3001])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    for seed in args.seeds:
        for name in args.sets:
            X, op, space, meshes, k = load_with_space(name, seed)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = SPCATV(k, operator=op, random_state=0).fit(X)
            wall = time.perf_counter() - t0
            rec = dict(set=name, seed=seed, shape=list(X.shape), wall=wall)
            rec["alpha_rel"] = float(m.alpha_rel_)
            rec["split"] = [float(m.l1_ratio_), float(m.tv_ratio_)]
            cert, raw = [], []
            for j, comp in enumerate(m.components_):
                cert.append(count(comp, np.asarray(m.certified_support_[j], bool), space, meshes))
                raw.append(count(comp, comp != 0, space, meshes))
            rec.update(certified=cert, nonzero=raw)
            rec["n_certified"] = [int(s.sum()) for s in m.certified_support_]
            rec["n_nonzero"] = [int(np.count_nonzero(c)) for c in m.components_]
            with open(args.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
