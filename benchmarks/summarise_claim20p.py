"""Score ``stability_`` rules on ``bench_claim20p.py``'s records (claim against actual).

Per rule and group of tags: the components (non-empty), the largest claim -
actual, how many claim more than 0.2 above their actual value, reproducing
components (actual >= 0.5) flagged (claim < 0.5) and non-reproducing ones
not flagged. The noise floor's verdict (0) applies to every rule.

    python benchmarks/summarise_claim20p.py /tmp/claim.jsonl [--rows]
"""

import json
import sys

import numpy as np
from scipy.optimize import linear_sum_assignment


def _match(M):
    r, c = linear_sum_assignment(-np.asarray(M))
    out = np.empty(len(r), dtype=int)
    out[r] = c
    return out


def scores(sims):
    """Per component of C: ab (the halves' agreement), ca, cb (C with each half's match)."""
    CA, CB, AB = (np.asarray(s) for s in sims)
    to_a, a_to_b = _match(CA), _match(AB)
    k = np.arange(CA.shape[0])
    ab = AB[to_a, a_to_b[to_a]]
    return ab, CA[k, to_a], CB[k, a_to_b[to_a]]


def plain(sims):
    return scores(sims)[0]


def tri(sims):
    """The halves' agreement, capped by the full component's with each half."""
    return np.min(scores(sims), axis=0)


def with_refit(rule, first="walk"):
    def claim(r):
        s = rule(r[first])
        low = s < 0.5
        s[low] = rule(r["warm"])[low]
        return s

    return claim


def refit_if_lost(rule, lost_below=0.5):
    """The refit from the full fit replaces a low walk value only where neither
    walk half holds the component (both matched below ``lost_below``): where one
    half holds it and the other holds something else there, the walk's value stays."""

    def claim(r):
        s = rule(r["walk"])
        _, ca, cb = scores(r["walk"])
        use = (s < 0.5) & (np.maximum(ca, cb) < lost_below)
        s[use] = rule(r["warm"])[use]
        return s

    return claim


def series(rule):
    def claim(r):
        return np.median([rule(r[f"draw{i}"]) for i in range(6)], axis=0)

    return claim


def either(nonseries, onseries):
    def claim(r):
        if r.get("series"):
            return onseries(r) if onseries else np.asarray(r["claimed"])
        return nonseries(r)

    return claim


def site_not_series(r):
    """Round 16: rows sorted by site are not a series (the walk's halves and the refit)."""
    if r.get("series") and ":site:" in r["tag"] and "walk" in r:
        return with_refit(plain)(r)
    return np.asarray(r["claimed"])


def round16(r):
    """This branch: rows sorted by site not a series, the triangle cap on the walk and refit."""
    if r.get("series") and not (":site:" in r["tag"] and "walk" in r):
        return np.asarray(r["claimed"])
    return with_refit(tri)(r)


RULES = {
    "main (recorded)": lambda r: np.asarray(r["claimed"]),
    "main (recomputed)": either(with_refit(plain), series(plain)),
    "walk only (no refit)": either(lambda r: plain(r["walk"]), None),
    "triangle, walk + refit": either(with_refit(tri), series(plain)),
    "triangle everywhere (series too)": either(with_refit(tri), series(tri)),
    "refit from full, another split": either(lambda r: plain(r["warm1"]), None),
    "triangle, refit, another split": either(lambda r: tri(r["warm1"]), None),
    "cold, another split (first records only)": either(
        lambda r: plain(r["cold1"]) if "cold1" in r else np.asarray(r["claimed"]), None
    ),
    "round 16: rows sorted by site not a series": site_not_series,
    "round 16: both (site order, triangle)": round16,
    "refit only where both walk halves lost it": either(refit_if_lost(plain), series(plain)),
    "same, triangle": either(refit_if_lost(tri), series(plain)),
    "same, lost below 0.7": either(refit_if_lost(plain, 0.7), series(plain)),
    "min(main, triangle another split)": either(
        lambda r: np.minimum(with_refit(tri)(r), tri(r["warm1"])), None
    ),
}


def claims(rule, r):
    c = np.asarray(rule(r), dtype=float).copy()
    if "floor" in r:
        c[np.asarray(r["floor"], bool)] = 0.0
    c[np.asarray(r["nonzero"]) == 0] = 0.0
    return c


def table(recs, title):
    print(f"\n{title} ({len(recs)} fits)\n")
    print(
        "| rule | components | max claim - actual | over +0.2 | reproducing flagged | "
        "non-reproducing not flagged |"
    )
    print("|---|---|---|---|---|---|")
    for name, rule in RULES.items():
        over, rep, nrep, n, worst = 0, [0, 0], [0, 0], 0, -1.0
        for r in recs:
            keep = np.asarray(r["nonzero"]) > 0
            c, a = claims(rule, r)[keep], np.asarray(r["actual"])[keep]
            n += keep.sum()
            worst = max(worst, float(np.max(c - a, initial=-1)))
            over += int(np.sum(c - a > 0.2))
            rep[0] += int(np.sum((a >= 0.5) & (c < 0.5)))
            rep[1] += int(np.sum(a >= 0.5))
            nrep[0] += int(np.sum((a < 0.5) & (c >= 0.5)))
            nrep[1] += int(np.sum(a < 0.5))
        print(
            f"| {name} | {n} | {worst:.2f} | {over} | {rep[0]} of {rep[1]} | "
            f"{nrep[0]} of {nrep[1]} |"
        )


def rows(recs):
    f = lambda a: "/".join(f"{x:.2f}" for x in a)  # noqa: E731
    for r in recs:
        line = [
            r["tag"],
            r["half"],
            str(r["point"]),
            "S" if r.get("series") else "",
            f(r["claimed"]),
            f(r["actual"]),
            f(r["nonzero"]),
        ]
        for name in ("triangle, walk + refit", "refit from full, another split"):
            line.append(f(claims(RULES[name], r)))
        print("| " + " | ".join(line) + " |")


def summary(paths, show_rows=False):
    last = {}
    for p in paths:  # the last record of a tag and half wins
        for x in open(p):
            r = json.loads(x)
            last[(r["tag"], r["half"])] = r
    recs = list(last.values())
    groups = {}
    for r in recs:
        kind = r["tag"].split(":")
        key = f"cohort {kind[3]}" if kind[0] == "cohort" else kind[0]
        groups.setdefault(key, []).append(r)
    table(recs, "all")
    for key, g in sorted(groups.items()):
        table(g, key)
    if show_rows:
        rows(recs)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--rows"]
    summary(args, "--rows" in sys.argv)
