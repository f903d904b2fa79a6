"""Tables of ``bench_speck20q.py``'s records (issue 20 round 17).

``summary(files)``: the series rules per data kind (``--series`` records):
per rule the components claiming more than 0.2 above their actual value, the
largest claim - actual, the reproducing components (actual >= 0.5) flagged
(< 0.5) and the others not flagged. ``specks(files)``: the small-component
rules per instance of the speck records (``--specks``).
"""

import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _match(M):
    rows, cols = linear_sum_assignment(-M)
    out = np.empty(M.shape[0], dtype=int)
    out[rows] = cols
    return out


def draw_value(sims, cap=False):
    """``component_stability`` from one draw's ``[S(C, A), S(C, B), S(A, B)]``;
    ``cap``: capped by the full component's agreement with the two
    (``capped_stability``)."""
    CA, CB, AB = (np.asarray(s, dtype=float) for s in sims)
    k = np.arange(CA.shape[0])
    to_a, a_to_b = _match(CA), _match(AB)
    value = AB[to_a, a_to_b[to_a]]
    if cap:
        value = np.minimum(value, np.minimum(CA[k, to_a], CB[k, a_to_b[to_a]]))
    return value


def _draws(rec, kind, cap=False):
    return np.array([draw_value(rec[f"{kind}{i}"], cap) for i in range(6)])


RULES = {
    "cold median (landed)": ("draw", lambda r: np.median(_draws(r, "draw"), axis=0)),
    "warm median": ("warm", lambda r: np.median(_draws(r, "warm"), axis=0)),
    "warm median, capped": ("warm", lambda r: np.median(_draws(r, "warm", True), axis=0)),
    "cold, warm where < 0.5": ("warm", lambda r: _where_low(r, "warm", False)),
    "cold, warm capped where < 0.5": ("warm", lambda r: _where_low(r, "warm", True)),
    "median of cold and warm (12)": (
        "warm",
        lambda r: np.median(np.vstack([_draws(r, "draw"), _draws(r, "warm", True)]), axis=0),
    ),
    "walked median": ("path", lambda r: np.median(_draws(r, "path"), axis=0)),
    "cold, walked where < 0.5": ("path", lambda r: _where_low(r, "path", False)),
}


def _where_low(rec, kind, cap):
    cold = np.median(_draws(rec, "draw"), axis=0)
    other = np.median(_draws(rec, kind, cap), axis=0)
    return np.where(cold < 0.5, other, cold)


def _kind(tag):
    return tag.split(":")[0].split("-")[0]


def summary(files):
    recs = [json.loads(line) for f in files for line in open(f) if '"draw0"' in line]
    print(
        "| data | fits | components | rule | claim > actual + 0.2 | max claim - actual | "
        "reproducing flagged | not reproducing, not flagged |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind in sorted({_kind(r["tag"]) for r in recs}):
        for name, (needs, rule) in RULES.items():
            group = [r for r in recs if _kind(r["tag"]) == kind and f"{needs}0" in r]
            if not group:
                continue
            actual = np.concatenate([r["actual"] for r in group])
            nonempty = np.concatenate([np.asarray(r["nonzero"]) > 0 for r in group])
            claim = np.concatenate([rule(r) for r in group])
            a, c = actual[nonempty], claim[nonempty]
            rep = a >= 0.5
            print(
                f"| {kind} | {len(group)} | {a.size} | {name} | {int(np.sum(c > a + 0.2))} | "
                f"{np.max(c - a):.2f} | {int(np.sum(rep & (c < 0.5)))} of {int(rep.sum())} | "
                f"{int(np.sum(~rep & (c >= 0.5)))} of {int((~rep).sum())} |"
            )
    for r in recs:
        print(f"\n{r['tag']} {r['half']}: actual {np.round(r['actual'], 2).tolist()}")
        for name, (needs, rule) in RULES.items():
            if f"{needs}0" in r:
                print(f"  {name}: {np.round(rule(r), 2).tolist()}")


def _small(r, rule, small=0.2, share=0.2):
    """Components a small-component rule names in one speck record (a whole-map
    signal seen at weaker points, no component empty or whole-map): ``nz`` below
    ``small`` x the largest's non-zeros; ``var`` also below ``share`` x the
    largest score variance (the landed rule reads ``singular_values_`` squared,
    which matched ``var`` to 0.01 where both were seen)."""
    nz, var = np.asarray(r["nonzero"]), np.asarray(r["var"])
    if not r["dense"] or nz.min() == 0 or nz.max() >= 0.9:
        return []
    hit = nz < small * nz.max()
    if rule == "var":
        hit &= var < share * var.max()
    return np.flatnonzero(hit).tolist()


def specks(files):
    """Per instance: the small-component rules' fires against what was missed."""
    recs = {}
    for f in files:
        for line in open(f):
            r = json.loads(line)
            recs[r["tag"]] = r
    print(
        "| tag | point | non-zero | variance / largest | best abs cos | stability_ | said | "
        "nz < 0.2 x | and variance < 0.2 x |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for tag, r in recs.items():
        from bench_age20p import _kinds

        pt = r["point"]
        print(
            f"| {tag} | ({pt[0]:g}, {pt[1]:g}) {pt[2]:g} | {_fmt(r['nonzero'])} | "
            f"{_fmt(np.divide(r['var'], max(r['var'])))} | {_fmt(r['cos'])} | "
            f"{_fmt(r['stability'])} | {_kinds(r['warnings']) or '-'} | "
            f"{_small(r, 'nz') or '-'} | {_small(r, 'var') or '-'} |"
        )


def _fmt(a):
    return "/".join(f"{x:.2g}" for x in a)


def speck_counts(files):
    """Per group of speck records: instances, those with a missed pattern (best
    abs cos < 0.75) or an empty component, those silent on main (no E, W or S),
    and the fires of the two rules on missed and on other instances."""
    from bench_age20p import _kinds

    recs = {json.loads(line)["tag"]: json.loads(line) for f in files for line in open(f)}
    groups = {}
    for tag, r in recs.items():
        parts = tag.split(":")
        key = ":".join([parts[0], *parts[3:]]) if parts[0] == "cohort" else parts[0]
        groups.setdefault(key, []).append(r)
    print(
        "| data | n | missed or empty | silent on main | nz < 0.2 x fires: missed / other | "
        "and variance < 0.2 x: missed / other |"
    )
    print("|---|---|---|---|---|---|")
    for key, g in sorted(groups.items()):
        truth = key.startswith(("cohort", "set"))  # the run: no planted patterns
        bad = [truth and (min(r["cos"]) < 0.75 or min(r["nonzero"]) == 0) for r in g]
        said = [bool(set(_kinds(r["warnings"])) & set("EWS")) for r in g]
        fire = {rule: [bool(_small(r, rule)) for r in g] for rule in ("nz", "var")}
        cells = [
            f"{sum(f and b for f, b in zip(fire[rule], bad, strict=True))} / "
            f"{sum(f and not b for f, b in zip(fire[rule], bad, strict=True))}"
            for rule in ("nz", "var")
        ]
        silent = sum(b and not s for b, s in zip(bad, said, strict=True))
        print(f"| {key} | {len(g)} | {sum(bad)} | {silent} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__" and sys.argv[1] == "--specks":
    specks(sys.argv[2:])
    speck_counts(sys.argv[2:])
elif __name__ == "__main__":
    summary(sys.argv[1:])
