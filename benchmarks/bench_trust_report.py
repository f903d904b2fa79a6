"""Tables and selection-rule evaluation from bench_trust.py's JSON lines.

    python benchmarks/bench_trust_report.py runs1.jsonl [runs2.jsonl ...]

Per data set: the grid (mean over instances), the peers, then each selection
rule (it sees only split-half scores and supports, never the truth): the
setting it picks per instance, the truth metrics there against the truth-best
setting, whether it is within one grid step, and its cost in half-fits and in
seconds relative to one full fit at the chosen setting.
"""

import json
import sys
from collections import defaultdict

import numpy as np

ALPHAS = (0.5, 1.0, 2.0, 4.0, 8.0)
SPLITS = ((0.05, 0.1), (0.2, 0.2), (0.4, 0.3))


def load(paths):
    recs = []
    for p in paths:
        with open(p) as f:
            recs += [json.loads(line) for line in f if line.strip()]
    for r in recs:  # contiguous halves are another protocol: tabulated apart
        if r.get("split_seed") == -1:
            r["set"] += " (contiguous halves)"
    return recs


def inst_key(r):
    return (r["set"], r["corr"], r["seed"], r.get("split_seed"))


def setting(r):
    return (r["method"], r.get("alpha_rel"), r.get("l1_ratio"), r.get("tv_ratio"))


def f2(x):
    return "—" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.2f}"


def truth_score(r):
    """Truth quality of a full fit: mean over patterns of (|cos| + Dice) / 2."""
    return float(np.mean((np.array(r["cos"]) + np.array(r["dice"])) / 2))


def valid(r, max_support=0.5):
    s = np.array(r["hsupp"])
    return bool(np.all(s > 0) and np.all(s <= max_support))


# --------------------------------------------------------------- rules
# Each rule gets the split-half records of ONE instance and one method (a list
# over grid points) and returns the chosen record.


def _strength(r):
    return (r["alpha_rel"], r["l1_ratio"] + r["tv_ratio"])


def rule_a(rs):  # max mean split-half |corr|
    return max(rs, key=lambda r: (np.mean(r["hcorr"]), -r["alpha_rel"]))


def rule_b(rs):  # 1-SE toward stronger penalties
    best = rule_a(rs)
    c = np.array(best["hcorr"])
    se = c.std(ddof=1) / np.sqrt(len(c)) if len(c) > 1 else 0.0
    ok = [r for r in rs if np.mean(r["hcorr"]) >= np.mean(c) - se]
    ok = [r for r in ok if valid(r)] or ok
    return max(ok, key=lambda r: (_strength(r), np.mean(r["hcorr"])))


def rule_c(rs):  # max mean |corr| x mean top-m Dice
    return max(rs, key=lambda r: (np.mean(r["hcorr"]) * np.mean(r["htopm"]), -r["alpha_rel"]))


def rule_c2(rs):  # max mean |corr| x mean support Dice, valid points only
    ok = [r for r in rs if valid(r)] or rs
    return max(ok, key=lambda r: (np.mean(r["hcorr"]) * np.mean(r["hsdice"]), -r["alpha_rel"]))


def rule_d(rs, tol=0.05):  # weakest alpha within tol of best |corr|, non-empty, <= 50 %
    ok = [r for r in rs if valid(r)]
    if not ok:
        return rule_a(rs)
    best = max(np.mean(r["hcorr"]) for r in ok)
    ok = [r for r in ok if np.mean(r["hcorr"]) >= best - tol]
    return min(ok, key=lambda r: (r["alpha_rel"], -np.mean(r["hcorr"])))


def rule_e(rs):  # max worst-component |corr| among valid points, then stronger
    ok = [r for r in rs if valid(r)] or rs
    return max(
        ok, key=lambda r: (round(np.min(r["hcorr"]), 2), np.mean(r["hsdice"]), r["alpha_rel"])
    )


def rule_f(rs):  # max worst-component |corr| x mean support Dice among valid points
    ok = [r for r in rs if valid(r)] or rs
    return max(ok, key=lambda r: (np.min(r["hcorr"]) * np.mean(r["hsdice"]), r["alpha_rel"]))


def _score_f(r):
    return np.min(r["hcorr"]) * np.mean(r["hsdice"])


def rule_g(rs):
    """f along the path from strong to weak, stopping at the first valid point whose
    score is below the best so far (coarse path, early stop). Returns the pick; the
    number of points visited is stored in ``rule_g.visited``."""
    path = sorted(rs, key=lambda r: -r["alpha_rel"])
    best, visited = None, 0
    for r in path:
        visited += 1
        if not valid(r):
            if best is not None:
                break
            continue
        if best is None or _score_f(r) >= _score_f(best):
            best = r
        else:
            break
    rule_g.visited = visited
    return best or rule_a(rs)


RULES = {
    "a max mean corr": rule_a,
    "b 1-SE stronger": rule_b,
    "c max corr x topm": rule_c,
    "c2 max corr x suppDice (valid)": rule_c2,
    "d weakest within .05 (valid)": rule_d,
    "e max min corr (valid)": rule_e,
    "f max min corr x suppDice (valid)": rule_f,
    "g f strong-to-weak, early stop": rule_g,
}


def steps(r, s):
    ia, ja = ALPHAS.index(r["alpha_rel"]), SPLITS.index((r["l1_ratio"], r["tv_ratio"]))
    ib, jb = ALPHAS.index(s["alpha_rel"]), SPLITS.index((s["l1_ratio"], s["tv_ratio"]))
    return abs(ia - ib) + abs(ja - jb)


def grid_table(rs, truth):
    """The grid table of one set: a row per method and setting."""
    groups = defaultdict(list)
    for r in rs:
        groups[setting(r)].append(r)
    hdr = "| method | alpha_rel | l1, tv | "
    hdr += "cos per pattern | Dice per pattern | " if truth else ""
    hdr += "half corr | top-m Dice | supp Dice | support % (max) | empty | t full s | t halves s |"
    print(hdr)
    print("|" + "---|" * (hdr.count("|") - 1))
    order = sorted(
        groups, key=lambda k: (k[0] not in ("deflation", "backfit"), k[0], k[2] or 0, k[1] or 0)
    )
    for k in order:
        g = groups[k]
        line = f"| {k[0]} | {k[1] if k[1] is not None else ''} | "
        line += f"{k[2]}, {k[3]} | " if k[2] is not None else " | "
        if truth:
            gf = [r for r in g if "cos" in r]
            if gf:
                line += "/".join(f2(x) for x in np.mean([r["cos"] for r in gf], 0)) + " | "
                line += "/".join(f2(x) for x in np.mean([r["dice"] for r in gf], 0)) + " | "
            else:
                line += " | | "
        gh = [r for r in g if "hcorr" in r]
        if gh:
            line += f"{f2(np.mean([np.mean(r['hcorr']) for r in gh]))} | "
            line += f"{f2(np.mean([np.mean(r['htopm']) for r in gh]))} | "
            line += f"{f2(np.mean([np.mean(r['hsdice']) for r in gh]))} | "
            sup = np.array([r["hsupp"] for r in gh])
            line += f"{100 * sup.mean():.1f} ({100 * sup.max():.0f}) | "
            line += f"{np.mean([np.sum(np.array(r['hsupp']) == 0) for r in gh]):.1f} | "
        else:
            sup = np.array([r["supp"] for r in g])
            line += f"— | — | — | {100 * sup.mean():.1f} ({100 * sup.max():.0f}) | "
            line += f"{np.mean([np.sum(np.array(r['supp']) == 0) for r in g]):.1f} | "
        tf = [r["t_full"] for r in g if "t_full" in r]
        th = [r["t_half"] for r in g if "t_half" in r]
        line += f"{f2(np.mean(tf)) if tf else '—'} | {f2(np.mean(th)) if th else '—'} |"
        print(line)


def sweeps_line(rs):
    """How many back-fitting sweeps hit the cap, per split."""
    bf = [r for r in rs if r["method"] == "backfit" and "half_sweeps" in r]
    if bf:
        print("\nBack-fitting sweeps that hit the 20-sweep cap (non-empty fits only): ", end="")
        parts = []
        for sp in SPLITS:
            g = [r for r in bf if (r["l1_ratio"], r["tv_ratio"]) == sp]
            full = [r["sweeps"] for r in g if "sweeps" in r and max(r["supp"]) > 0]
            half = [
                s
                for r in g
                for s, h in zip(r["half_sweeps"], (0, 1), strict=True)
                if max(r["hsupp"]) > 0
            ]
            if g:
                parts.append(
                    f"split {sp}: full fits {sum(x >= 20 for x in full)}/{len(full)}, "
                    f"half fits {sum(x >= 20 for x in half)}/{len(half)}"
                )
        print("; ".join(parts) + ".")


def rules_table(rs, insts, truth):
    """The table of the selection rules: what each picks and how good it is."""
    print()
    hdr = "| rule | method | scope | picks (alpha_rel; l1,tv) per instance | "
    if truth:
        hdr += "truth score at pick | truth-best score (setting) | steps from best | "
    hdr += "half corr | top-m Dice | supp Dice | half-fits | cost / 1 full fit |"
    print(hdr)
    print("|" + "---|" * (hdr.count("|") - 1))
    for method in ("deflation", "backfit", "both"):
        for scope in ("grid", "default split", "default split, alpha_rel >= 1", "split 0.2,0.2"):
            if method == "both" and scope != "grid":
                continue
            for rname, rule in RULES.items():
                picks, ts, bests, stp, hc, ht, hs, costs, nh = ([], [], [], [], [], [], [], [], [])
                for ik in insts:
                    cand = [
                        r
                        for r in rs
                        if inst_key(r) == ik
                        and "hcorr" in r
                        and r["method"]
                        in (("deflation", "backfit") if method == "both" else (method,))
                    ]
                    if scope.startswith("default split"):
                        cand = [r for r in cand if (r["l1_ratio"], r["tv_ratio"]) == SPLITS[0]]
                    if scope.endswith(">= 1"):
                        cand = [r for r in cand if r["alpha_rel"] >= 1]
                    elif scope == "split 0.2,0.2":
                        cand = [r for r in cand if (r["l1_ratio"], r["tv_ratio"]) == SPLITS[1]]
                    if not cand:
                        continue
                    if rule is rule_g and (method == "both" or scope == "grid"):
                        continue
                    ch = rule(cand)
                    if rule is rule_g:  # cost of the visited points only
                        vis = sorted(cand, key=lambda r: -r["alpha_rel"])[: rule_g.visited]
                    else:
                        vis = cand
                    tag = ("B" if ch["method"] == "backfit" else "D") if method == "both" else ""
                    picks.append(f"{tag}{ch['alpha_rel']:g};{ch['l1_ratio']:g},{ch['tv_ratio']:g}")
                    hc.append(np.mean(ch["hcorr"]))
                    ht.append(np.mean(ch["htopm"]))
                    hs.append(np.mean(ch["hsdice"]))
                    nh.append(2 * len(vis))
                    if "t_full" in ch and ch["t_full"] > 0:
                        costs.append((sum(r["t_half"] for r in vis) + ch["t_full"]) / ch["t_full"])
                    if truth and "cos" in ch:
                        best = max(cand, key=truth_score)
                        ts.append(truth_score(ch))
                        bests.append(
                            (
                                truth_score(best),
                                f"{best['alpha_rel']:g};{best['l1_ratio']:g},{best['tv_ratio']:g}",
                            )
                        )
                        stp.append(steps(ch, best) if ch["method"] == best["method"] else 9)
                if not picks:
                    continue
                line = f"| {rname} | {method} | {scope} | {' '.join(picks)} | "
                if truth:
                    line += (
                        f"{f2(np.mean(ts))} | {f2(np.mean([b[0] for b in bests]))} "
                        f"({' '.join(b[1] for b in bests)}) | {'/'.join(map(str, stp))} | "
                    )
                line += (
                    f"{f2(np.mean(hc))} | {f2(np.mean(ht))} | {f2(np.mean(hs))} | "
                    f"{int(np.mean(nh))} | {f2(np.mean(costs)) if costs else '—'} |"
                )
                print(line)


def main():
    recs = load(sys.argv[1:])
    sets = sorted({(r["set"], r["corr"]) for r in recs})
    for st in sets:
        rs = [r for r in recs if (r["set"], r["corr"]) == st]
        insts = sorted({inst_key(r) for r in rs}, key=str)
        truth = "cos" in next((r for r in rs if r["method"] in ("deflation", "backfit")), {})
        print(
            f"\n### {st[0]} correlation {st[1]} — instances (seed, split seed): "
            + ", ".join(f"({k[2]}, {k[3]})" for k in insts)
            + "\n"
        )
        grid_table(rs, truth)
        sweeps_line(rs)
        rules_table(rs, insts, truth)


if __name__ == "__main__":
    main()
