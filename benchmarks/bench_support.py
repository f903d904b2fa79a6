"""Certified support (issue 20, item 3): specks, support sizes, uncertain loadings.

For each data set (seeds not used elsewhere), fit ``SPCATV(3)`` with the
default settings and print, per component: the clusters of the support
(mesh edges on the atrophy meshes, 26-connectivity in volumes) and how many
have their peak below 1e-3 of the component's peak ("specks"), the support
size, the certified non-zeros, zeros and uncertain loadings, the radius and
the time of the finishing step. The support is the certified one when the
model has ``certified_support_`` (this branch), else the non-zero loadings
(run it on the previous code for the "before" columns).

    PYTHONPATH=. python benchmarks/bench_support.py [--seeds 3101 3102] [--only atrophy]
        [--split 0.7 0.2 --alpha-rel 0.5]   # another l1_ratio / tv_ratio (and alpha_rel)
"""

import argparse
import platform
import time
import warnings

import numpy as np

from neurospca import (
    SPCATV,
    make_cortical_atrophy,
    make_fmri_like,
    make_paper_simulation,
    tv_from_hemispheres,
    tv_from_mask,
)
from neurospca.masking import VolumeMasker
from neurospca.reporting import cluster_table

SPECK = 1e-3


def datasets(seed):
    d = make_cortical_atrophy(133, random_state=seed)
    op, hemis = tv_from_hemispheres(d.mesh_left, d.mesh_right)
    yield "atrophy", d.X, op, hemis, {"left": d.mesh_left, "right": d.mesh_right}
    X, _, mask = make_fmri_like(83, random_state=seed)
    yield "fmri_like", X, tv_from_mask(mask), VolumeMasker(mask), None
    X, _, mask = make_paper_simulation(250, random_state=seed)
    mask = mask[..., None]  # a 100 x 100 x 1 volume: the same 2-D TV
    yield "paper", X, tv_from_mask(mask), VolumeMasker(mask), None


def specks(model, k, space, meshes):
    """(clusters, clusters whose peak is below SPECK of the component's peak)."""
    comp = model.components_[k]
    support = getattr(model, "certified_support_", None)
    support = comp != 0 if support is None else support[k]
    if not support.any():
        return 0, 0
    clusters = cluster_table(
        comp,
        space,
        meshes=meshes,
        **({"support": support} if hasattr(model, "certified_support_") else {}),
    )
    peak = np.abs(comp[support]).max()
    return len(clusters), sum(abs(c.peak.value) < SPECK * peak for c in clusters)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", nargs="+", type=int, default=[3101, 3102])
    p.add_argument("--only", default=None)
    p.add_argument(
        "--split", nargs=2, type=float, default=None, help="l1_ratio tv_ratio (default: SPCATV's)"
    )
    p.add_argument("--alpha-rel", default=None, type=float)
    args = p.parse_args()
    kw = {} if args.split is None else {"l1_ratio": args.split[0], "tv_ratio": args.split[1]}
    if args.alpha_rel is not None:
        kw["alpha_rel"] = args.alpha_rel
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor()}, "
        f"python {platform.python_version()}, SPCATV(3, {kw or 'defaults'})"
    )
    print(
        "data       seed  k  clusters  specks  non-zero  certified  zeros  uncertain  "
        "radius/peak  fit(s)  finish(s)"
    )
    for seed in args.seeds:
        for name, X, op, space, meshes in datasets(seed):
            if args.only and args.only not in name:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                m = SPCATV(3, operator=op, **kw).fit(X)
                fit_time = time.perf_counter() - t0
            fin = getattr(m, "support_time_", np.full(3, np.nan))
            for k in range(3):
                n_cl, n_sp = specks(m, k, space, meshes)
                nz = int(np.count_nonzero(m.components_[k]))
                cert = getattr(m, "certified_support_", None)
                zeros = getattr(m, "certified_zeros_", None)
                unc = getattr(m, "n_uncertain_", None)
                rad = getattr(m, "support_radius_", None)
                peak = np.abs(m.components_[k]).max() if nz else np.nan
                print(
                    f"{name:10s} {seed:5d} {k:2d} {n_cl:9d} {n_sp:7d} {nz:9d} "
                    f"{'-' if cert is None else int(cert[k].sum()):>10} "
                    f"{'-' if zeros is None else int(zeros[k].sum()):>6} "
                    f"{'-' if unc is None else int(unc[k]):>10} "
                    f"{'-' if rad is None else format(rad[k] / peak, '.1e'):>12} "
                    f"{fit_time:7.2f} {fin[k]:9.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
