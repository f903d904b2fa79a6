"""Issue 20 round 12: candidate rules replayed on ``diag_select20l.py``'s evidence.

Each candidate picks a row from the judged rows' evidence (per-component
returned stability, held-out variance and floor) and the default fit's; no
truth is used to choose. The choice is then scored against the yardstick
rows of ``bench_select20h.py --yardstick-only`` (truth-best MSE and Dice of
every grid point's warm full fit and the default fit): within one step
(names, strict / ties) and never worse than the default (strict / ties).

    python benchmarks/replay_select20l.py DIAG.jsonl ... --yard YARD.jsonl ... [--tie 0.01]
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from summarise_select20g import steps  # noqa: E402
from summarise_select20i import never_worse  # noqa: E402

from neurospca.model_selection._heldout import explains_less, explains_more  # noqa: E402
from neurospca.model_selection._returned import MIN_GAIN, beats, paired_gain  # noqa: E402


def weights(p):
    """(l1, tv, l2) weights of a point [l1_ratio, tv_ratio, alpha_rel, ...]."""
    return p[0] * p[2], p[1] * p[2], (1 - p[0] - p[1]) * p[2]


def tied(a, b):
    """The tie of ``_returned.mark_ties`` between two (stability, heldout)."""
    return not (
        beats(a[0], b[0])
        or beats(b[0], a[0])
        or explains_less(a[1], b[1])
        or explains_less(b[1], a[1])
    )


def rule_default(rows, d, ev):
    return d


def rule_least_l2_tie(rows, d, ev):
    """Among admissible rows tied with the default at the default's l1 weight
    and no more TV, the least l2 weight below the default's."""
    w = weights(d)
    ok = [
        r
        for r in rows
        if r[3]
        and tied((r[4], r[5]), ev)
        and abs(weights(r)[0] - w[0]) < 1e-9
        and weights(r)[1] <= w[1] + 1e-12
        and weights(r)[2] < w[2] - 1e-12
    ]
    return min(ok, key=lambda r: weights(r)[2], default=d)


def rule_both(rows, d, ev):
    """:func:`rule_weaker_every_rank`, then :func:`rule_least_l2_tie` from its choice."""
    c = rule_weaker_every_rank(rows, d, ev)
    if c is not d:
        ev = (c[4], c[5])
    return rule_least_l2_tie(rows, c, ev)


def rule_weaker_every_rank(rows, d, ev):
    """The least shrunk row of the default's split, weaker than it, better at
    every rank (paired gain above its error) and explaining more held-out
    variance than the default by more than its floor."""
    ok = []
    for r in rows:
        if not r[3] or r[:2] != d[:2] or r[2] >= d[2]:
            continue
        diff = np.sort(r[4])[::-1] - np.sort(ev[0])[::-1]
        gain, err = paired_gain(r[4], ev[0])
        if diff.min() >= 0 and gain > err and explains_more(r[5], ev[1]):
            ok.append(r)
    return min(ok, key=lambda r: r[2], default=d)


def rule_one_se_sparsest(rows, d, ev):
    """Among admissible rows (and the default) whose held-out variance is
    within the floor of the best, and not beaten by the most reproducible
    (MIN_GAIN), the strongest penalty of the default's split."""
    cands = [r for r in rows if r[3]] + [list(d[:3]) + [True, ev[0], ev[1]]]
    best = max(cands, key=lambda r: r[5][0])
    ref = max(cands, key=lambda r: np.mean(r[4]))
    near = [
        r for r in cands if r[5][0] >= best[5][0] - best[5][1] and not beats(ref[4], r[4], MIN_GAIN)
    ]
    same = [r for r in near if r[:2] == d[:2]] or near
    return max(same, key=lambda r: r[2])


RULES = {
    "current (default kept)": rule_default,
    "least l2 among ties": rule_least_l2_tie,
    "weaker, every rank + held-out": rule_weaker_every_rank,
    "1-floor held-out, sparsest": rule_one_se_sparsest,
    "weaker every rank, then least l2 tie": rule_both,
}


def score(row, choice, yard, tie):
    grid = yard["truth_grid"] + [yard["default"]]
    order = [tuple(x) for x in dict.fromkeys(tuple(g[:2]) for g in yard["truth_grid"])]
    mb, db = min(grid, key=lambda g: g[3]), max(grid, key=lambda g: g[4])
    if choice is row["default"]:
        c = yard["default"]  # the default fit itself, not its grid point's fit
    else:
        c = next((g for g in grid if g[:3] == list(choice[:3])), None)
    if c is None:
        return None
    strict = max(*steps(order, c, mb), *steps(order, c, db)) <= 1

    def near(col, best):
        return min(max(steps(order, c, g)) for g in grid if abs(g[col] - best) <= tie)

    loose = max(near(3, mb[3]), near(4, db[4])) <= 1
    nw = never_worse(yard["default"], c, tie)
    return strict, loose, nw[0], nw[1], c


def main():
    p = argparse.ArgumentParser()
    p.add_argument("diag", nargs="+")
    p.add_argument("--yard", nargs="+", required=True)
    p.add_argument("--tie", type=float, default=0.01)
    p.add_argument(
        "--own-evidence",
        action="store_true",
        help="the default fit's own evidence, not its grid point's (the twin's)",
    )
    a = p.parse_args()
    yards = {}
    for f in a.yard:
        for line in open(f):
            y = json.loads(line)
            if "truth_grid" in y:
                yards.setdefault((y["seed"], y["corr"], y["method"]), y)
    diags = [json.loads(line) for f in a.diag for line in open(f)]
    for name, rule in RULES.items():
        tot = np.zeros(4, int)
        print(f"\n{name}")
        for g in diags:
            y = yards.get((g["seed"], g["corr"], g["method"]))
            if y is None:
                continue
            ev = g["default_evidence"]
            twin = [r for r in g["rows"] if r[:3] == g["default"][:3] and r[3]]
            if twin and not a.own_evidence:
                ev = (twin[0][4], twin[0][5])
            choice = rule(g["rows"], g["default"], ev)
            s = score(g, choice, y, a.tie)
            if s is None:
                print(f"  {g['seed']} r={g['corr']}: {choice[:3]} not in the yardstick")
                continue
            tot += np.array(s[:4], int)
            c = s[4]
            print(
                f"  {g['seed']} r={g['corr']}: {c[:3]} {c[3]:.3f}/{c[4]:.3f} "
                f"step strict/ties {s[0]:d}/{s[1]:d} never-worse {s[2]:d}/{s[3]:d}"
            )
        print(f"  total of {len(diags)}: step {tot[0]}/{tot[1]} never-worse {tot[2]}/{tot[3]}")


if __name__ == "__main__":
    main()
