"""Issue 20 must-shows with DEFAULT settings: co-varying patterns and cost.

For each evidence set (benchmarks/_trust.py: severity-correlated atrophy on
fsaverage5 and conte69 with age/sex regressed out; the paper's 2-D set-up
with correlated scores) fit ``SPCATV(3, operator=op, random_state=0)`` with
every other setting at its default (``method="joint"``, ``alpha_rel="auto"``)
and print, per planted pattern, the matched |cos| and support Dice, the
chosen ``alpha_rel_`` (and split ``l1_ratio_``, ``tv_ratio_``), ``stability_``,
the fit time, and the time of one fit at the chosen penalty and split, in the
same process (the cost ratio of the automatic choice). Optional
peers on the same data: the paper's deflation at the same penalty, and
scikit-learn SparsePCA at alpha in --sparsepca.

    OMP_NUM_THREADS=1 python benchmarks/bench_trust_defaults.py \
        [--sets fs5-0.5 fs5-0.8 c69-0.6 paper-0.0 paper-0.7] [--seeds 2201 2202] \
        [--sparsepca 0.5 1]
"""

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import atrophy, certified_dice, joint_objective_of, paper2d, path_text, recovery  # noqa: E402

from neurospca import SPCATV  # noqa: E402

SETS = {
    "fs5-0.5": ("fsaverage5", 0.5),
    "fs5-0.8": ("fsaverage5", 0.8),
    "c69-0.6": ("conte69", 0.6),
    "paper-0.0": ("paper", 0.0),
    "paper-0.7": ("paper", 0.7),
}


def load(name, seed):
    mesh, corr = SETS[name]
    if mesh == "paper":
        return paper2d(corr, seed=seed)
    return atrophy(mesh, corr, seed=seed)


def timed(fit):
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = fit()
    return model, time.perf_counter() - t0, caught


def fmt(a):
    return "/".join(f"{x:.2f}" for x in a)


def chosen_penalty(m):
    """The chosen point of a default fit (the split too, where the model has one)."""
    out = {"alpha_rel": m.alpha_rel_}
    if hasattr(m, "l1_ratio_"):
        out.update(l1_ratio=m.l1_ratio_, tv_ratio=m.tv_ratio_)
    return out


def split_text(m):
    return (
        f" (l1_ratio {m.l1_ratio_:g}, tv_ratio {m.tv_ratio_:g})" if hasattr(m, "l1_ratio_") else ""
    )


def row(name, seed, label, comps, patterns, extra="", model=None):
    """One table row: matched |cos|, Dice of the non-zero loadings and, for an
    SPCATV model, Dice of its certified support (the support it reports)."""
    cos, dice = recovery(comps, patterns)
    cert = None if model is None else certified_dice(model, patterns)
    cert = "-" if cert is None else fmt(cert)
    print(
        f"| {name} | {seed} | {label} | {fmt(cos)} | {fmt(dice)} | {cert} | {extra} |", flush=True
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", nargs="+", default=list(SETS))
    p.add_argument("--seeds", nargs="+", type=int, default=[2201, 2202])
    p.add_argument("--sparsepca", nargs="*", type=float, default=[])
    args = p.parse_args()
    print(f"# {platform.node()} {platform.processor()} {time.strftime('%Y-%m-%d')}")
    print(
        "| set | seed | fit | abs cos | Dice (non-zero) | Dice (certified support) | notes |\n"
        "|---|---|---|---|---|---|---|"
    )
    for name in args.sets:
        for seed in args.seeds:
            X, op, P = load(name, seed)
            m, t, caught = timed(lambda X=X, op=op: SPCATV(3, operator=op, random_state=0).fit(X))
            chosen = chosen_penalty(m)
            _, t1, _ = timed(lambda X=X, op=op, c=chosen: SPCATV(3, operator=op, **c).fit(X))
            warned = "; ".join(sorted({str(w.message)[:40] for w in caught}))
            row(
                name,
                seed,
                "default",
                m.components_,
                P,
                f"alpha_rel {m.alpha_rel_:g}{split_text(m)}, stability {fmt(m.stability_)}, "
                f"sweeps {m.n_sweeps_}, {t:.1f} s = {t / t1:.1f}x one fit, "
                f"J {joint_objective_of(m, X, op):.10g}; path {path_text(m.auto_path_)}; {warned}",
                m,
            )
            d, td, _ = timed(
                lambda X=X, op=op, c=chosen: SPCATV(3, operator=op, method="deflation", **c).fit(X)
            )
            row(
                name,
                seed,
                f"deflation {m.alpha_rel_:g}",
                d.components_,
                P,
                f"{td:.1f} s, J {joint_objective_of(d, X, op):.10g}",
                d,
            )
            for a in args.sparsepca:
                from sklearn.decomposition import SparsePCA

                s, ts, _ = timed(
                    lambda X=X, a=a: SparsePCA(3, alpha=a, random_state=0).fit(X - X.mean(axis=0))
                )
                row(name, seed, f"SparsePCA {a:g}", s.components_, P, f"{ts:.1f} s")


if __name__ == "__main__":
    main()
