"""Issue 21's must-show: a simulated multi-site atrophy study fitted with the command line
alone.

For each seed: :func:`neurospca.study.make_multisite_cohort` writes 133 subjects
(per-subject GIFTI or MGH thickness maps on fsaverage5, participants.tsv with
participant_id, age, sex, site, dx, mmse; three sites with offsets -0.2/+0.05/+0.2 mm and
scales 0.8/1.0/1.3; two regions driven by the diagnosis, one not), then runs::

    neurospca fit --left-mesh lh.pial.surf.gii --right-mesh rh.pial.surf.gii \\
        --left-data 'sub-*/anat/*hemi-L_*thickness.shape.gii' --right-data ... \\
        --participants participants.tsv --confounds age,sex --harmonize site --groups dx

in a subprocess (and, for comparison, the same without --harmonize, and without any
participants option), and scores the outputs: Dice of each planted region's support
with its best-matching component's certified support (model.npz, what the report counts,
draws and clusters) and with its non-zero loadings (the written loadings files),
|cos|, the dx p-values of associations.tsv, whether scores.csv starts with the
participant IDs and whether the report shows the groups.

    python benchmarks/bench_cohort_study.py --seeds 0 1 2 --format gii
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.optimize import linear_sum_assignment

from neurospca import load_model, load_surf_data
from neurospca.study import make_multisite_cohort

REGIONS = ("medial temporal (dx)", "prefrontal (dx)", "precuneus (unrelated)")


def _loadings(out):
    maps = [
        np.asarray(load_surf_data(os.path.join(out, f"loadings_{h}.func.gii")), float)
        for h in ("lh", "rh")
    ]
    return np.concatenate(maps, axis=0).T  # (K, n_vertices)


def _match(patterns, comps):
    cos = np.abs(patterns @ comps.T) / np.outer(
        np.linalg.norm(patterns, axis=1), np.maximum(np.linalg.norm(comps, axis=1), 1e-300)
    )
    rows, cols = linear_sum_assignment(-cos)
    return cos[rows, cols], cols


def _dice(a, b):
    return 2 * np.sum(a & b) / max(a.sum() + b.sum(), 1)


def run(seed, file_format, root, variant):
    folder = os.path.join(root, f"cohort{seed}")
    if not os.path.isdir(folder):
        make_multisite_cohort(folder, random_state=seed, file_format=file_format)
    out = os.path.join(root, f"out{seed}_{variant}")
    if file_format == "gii":
        data = [
            "sub-*/anat/*hemi-L_*thickness.shape.gii",
            "sub-*/anat/*hemi-R_*thickness.shape.gii",
        ]
    else:
        data = ["sub-*/surf/lh.thickness.mgh", "sub-*/surf/rh.thickness.mgh"]
    argv = [
        "neurospca",
        "fit",
        "--left-mesh",
        "lh.pial.surf.gii",
        "--right-mesh",
        "rh.pial.surf.gii",
        "--left-data",
        data[0],
        "--right-data",
        data[1],
        "--output",
        out,
        "-q",
    ]
    if variant != "plain":
        argv += ["--participants", "participants.tsv", "--confounds", "age,sex", "--groups", "dx"]
    if variant == "full":
        argv += ["--harmonize", "site"]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "neurospca.cli", *argv[1:]],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    truth = np.load(os.path.join(folder, "truth.npz"))
    patterns = truth["patterns"]
    comps = _loadings(out)
    cos, cols = _match(patterns, comps)
    dice = [_dice(patterns[r] != 0, comps[c] != 0) for r, c in enumerate(cols)]
    saved = load_model(os.path.join(out, "model.npz"))
    support = saved.space.inverse_transform(saved.estimator.certified_support_.astype(float))
    support = np.concatenate([support["left"], support["right"]], axis=0).T > 0
    cdice = [_dice(patterns[r] != 0, support[c]) for r, c in enumerate(cols)]
    p = [(np.nan, np.nan)] * 3
    assoc = os.path.join(out, "associations.tsv")
    if os.path.exists(assoc):
        with open(assoc) as fh:
            rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["variable"] == "dx"]
        byk = {int(r["component"]): (float(r["p"]), float(r["p_corrected"])) for r in rows}
        p = [byk[c + 1] for c in cols]
    with open(os.path.join(out, "scores.csv")) as fh:
        first = [r[0] for r in csv.reader(fh)][:3]
    html = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    return {
        "seed": seed,
        "variant": variant,
        "cos": cos,
        "dice": np.array(dice),
        "cdice": np.array(cdice),
        "p": p,
        "nnz": [int(np.count_nonzero(comps[c])) for c in cols],
        "ids": first,
        "groups_shown": "Scores and participants" in html and "Kruskal-Wallis" in html,
        "time": elapsed,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--format", choices=("gii", "mgh"), default="gii")
    parser.add_argument(
        "--variants", nargs="+", default=["full"], choices=("full", "noharm", "plain")
    )
    parser.add_argument("--root", default=None)
    args = parser.parse_args()
    root = args.root or tempfile.mkdtemp(prefix="neurospca-cohort-")
    print(f"outputs in {root}")
    print(
        "| seed | command | |cos| (MTL/PFC/precuneus) | Dice (certified support) | "
        "Dice (non-zero) | non-zero | dx p (corrected) | scores.csv starts | report shows "
        "groups | time (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        for variant in args.variants:
            r = run(seed, args.format, root, variant)
            print(
                f"| {seed} | {variant} | {'/'.join(f'{c:.2f}' for c in r['cos'])} | "
                f"{'/'.join(f'{d:.2f}' for d in r['cdice'])} | "
                f"{'/'.join(f'{d:.2f}' for d in r['dice'])} | "
                f"{'/'.join(str(n) for n in r['nnz'])} | "
                f"{'/'.join(f'{p:.2g} ({q:.2g})' for p, q in r['p'])} | {', '.join(r['ids'])} | "
                f"{r['groups_shown']} | {r['time']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
