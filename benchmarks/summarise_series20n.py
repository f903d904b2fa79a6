"""Summary of ``bench_series20n.py``: scoring rules for a series' ``stability_``.

Per rule and data group: the largest claimed - actual over components, how
many components claim more than 0.2 above their actual value, and how many of
the reproducing (actual >= 0.5) and non-reproducing components are flagged
(claimed < 0.5). The noise floor's zeros apply to every rule.

    python benchmarks/summarise_series20n.py /tmp/s20n
"""

import sys
from pathlib import Path

import numpy as np


def sb(r):
    """Spearman-Brown: the correlation at twice the sample size."""
    return 2 * r / (1 + r)


def rules(d, key):
    """Scoring rule -> claimed values of fit ``key`` of record ``d``."""

    def draws(prefix, n):
        return np.array([d[f"{key}|{prefix}:{s}"] for s in range(n)])

    b10, b10g = draws("b10", 8), draws("b10g", 4)
    b4 = np.array([d[f"{key}|b4:{j}"] for j in (1, 2, 3)])
    out = {
        "main: mean b10 x3": b10[:3].mean(0),
        "mean b10 x8": b10.mean(0),
        "median b10 x8": np.median(b10, 0),
        "mean b10 gap x4": b10g.mean(0),
        "mean b4 x3": b4.mean(0),
        "b2": d[f"{key}|b4:1"],
        "sub x3": np.mean([d[f"{key}|sub:{s}"] for s in range(3)], 0),
        "SB mean b10 x3": sb(b10[:3].mean(0)),
        "SB mean b10 x8": sb(b10.mean(0)),
        "SB median b10 x8": sb(np.median(b10, 0)),
        "SB mean b10 gap x4": sb(b10g.mean(0)),
        "SB mean b4 x3": sb(b4.mean(0)),
        "SB b2": sb(d[f"{key}|b4:1"]),
        "SB mean of b4 x3 and b2": sb((b4.sum(0) + d[f"{key}|b4:1"]) / 4),
        "min(SB mean b10 x8, SB mean b4)": np.minimum(sb(b10.mean(0)), sb(b4.mean(0))),
        "SB median b10 x4": sb(np.median(b10[:4], 0)),
        "SB median b10 x6": sb(np.median(b10[:6], 0)),
        "SB median b10 x8 + b4 x3": sb(np.median(np.vstack([b10, b4]), 0)),
        "SB median b10 x8 + gap x4": sb(np.median(np.vstack([b10, b10g]), 0)),
    }
    floor = d[f"{key}|floor"].astype(bool)
    return {k: np.where(floor, 0.0, v) for k, v in out.items()}


def summarise(folder):
    recs = {p.stem: dict(np.load(p)) for p in sorted(Path(folder).glob("*.npz"))}
    table = {}
    for tag, d in recs.items():
        group = "rsfmri" if tag.startswith("rs") else "simulated"
        for key in "AB":
            actual = d[f"{key}|actual"]
            print(
                f"{tag} {key} actual {np.round(actual, 2)} truth "
                f"{np.round(d.get(f'{key}|truth', []), 2)}"
            )
            for rule, claim in rules(d, key).items():
                table.setdefault((group, rule), []).append((claim, actual))
    for (_, rule), pairs in list(table.items()):
        table.setdefault(("all", rule), []).extend(pairs)
    groups = sorted({g for g, _ in table})
    print(
        "| data | rule | max claimed - actual | over +0.2 | reproducing flagged "
        "| non-reproducing flagged |\n|---|---|---|---|---|---|"
    )
    for g in groups:
        for (gg, rule), pairs in table.items():
            if gg != g:
                continue
            c = np.concatenate([p[0] for p in pairs])
            a = np.concatenate([p[1] for p in pairs])
            rep = a >= 0.5
            print(
                f"| {g} | {rule} | {np.max(c - a):.2f} | {np.sum(c - a > 0.2)} of {len(c)} | "
                f"{np.sum(rep & (c < 0.5))} of {rep.sum()} | "
                f"{np.sum(~rep & (c < 0.5))} of {(~rep).sum()} |"
            )


if __name__ == "__main__":
    summarise(sys.argv[1])
