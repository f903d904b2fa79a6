"""Issue 20 round 8: replay select_penalty's rules on the rows of ``bench_select20g_rows.py``.

Per JSON (one seed and method): the truth-best rows among the warm full fits
(MSE-best, Dice-best), the steps (alpha_rel / split) from each rule's choice to
them, and the returned model's MSE / Dice against the default fit's.

    python benchmarks/bench_select20g_replay.py /tmp/rows_*.json
"""

import argparse
import json
import math
from pathlib import Path

import numpy as np

from neurospca.decomposition import MAX_NONZERO, choose_point

SE = lambda r: float(np.std(r, ddof=1) / np.sqrt(len(r))) if len(r) > 1 else 0.0  # noqa: E731
PATH_START = {(0.05, 0.1): 0.5, (0.3, 0.3): 0.125, (0.05, 0.0): 0.5}


def split_of(r):
    return (r["l1_ratio"], r["tv_ratio"])


def steps(rows, i, j):
    splits = list(dict.fromkeys(split_of(r) for r in rows))
    a = abs(math.log2(rows[i]["alpha_rel"] / rows[j]["alpha_rel"]))
    s = abs(splits.index(split_of(rows[i])) - splits.index(split_of(rows[j])))
    return int(round(a)), s


def full_ok(r):
    nz = np.asarray(r["nonzero"])
    return bool(np.all(nz > 0) and np.all(nz <= MAX_NONZERO) and nz.min() >= 0.05 * nz.max())


def rule(rows, default, key, full_admissible=True):
    """choose_point over the candidate rows with ``key`` as reproducibility, then
    keep the default unless beaten by more than the SE of the difference."""
    cand = [
        i
        for i, r in enumerate(rows)
        if r["alpha_rel"] >= PATH_START.get(split_of(r), 0.5)
        and r["admissible"]
        and (full_ok(r) or not full_admissible)
    ]
    if not cand:
        return None
    path = [
        {
            "alpha_rel": rows[i]["alpha_rel"],
            "l1_ratio": rows[i]["l1_ratio"],
            "tv_ratio": rows[i]["tv_ratio"],
            "reproducibility": np.asarray(rows[i][key]),
            "nonzero_fraction": np.asarray(rows[i]["nonzero"] * 2),
        }
        for i in cand
    ]
    best = cand[choose_point(path)]
    return best


def prefer(rows, best, drow, default, key):
    if drow is None or best is None or best == drow:
        return drow if best is None else best
    a, b = np.asarray(rows[best][key]), np.asarray(default[key])
    return best if a.mean() - b.mean() > math.hypot(SE(a), SE(b)) else drow


def default_row(rows, d):
    for i, r in enumerate(rows):
        if (
            np.isclose(r["alpha_rel"], d["alpha_rel"])
            and np.isclose(r["l1_ratio"], d["l1_ratio"])
            and np.isclose(r["tv_ratio"], d["tv_ratio"])
        ):
            return i
    return None


def pt(r):
    return f"({r['l1_ratio']:g}, {r['tv_ratio']:g}) {r['alpha_rel']:g}"


def report(data, keys):
    rows, d = data["rows"], data["default"]
    drow = default_row(rows, d)
    mb = min(range(len(rows)), key=lambda i: rows[i]["mse"])
    db = max(range(len(rows)), key=lambda i: rows[i]["dice"])
    out = [
        f"{data['seed']} {data['method']} r={data['corr']:g}: default {pt(d)} "
        f"{d['mse']:.3f}/{d['dice']:.3f}; MSE-best {pt(rows[mb])} {rows[mb]['mse']:.3f}/"
        f"{rows[mb]['dice']:.3f}; Dice-best {pt(rows[db])} {rows[db]['mse']:.3f}/"
        f"{rows[db]['dice']:.3f}"
    ]
    choices = {"round7": prefer_halves(rows, data["round7_choice"], drow, d)}
    for key in keys:
        choices[key] = prefer(rows, rule(rows, d, key), drow, d, key)
        choices[key + "-nodef"] = rule(rows, d, key)
    for name, c in choices.items():
        if c is None:
            out.append(f"   {name}: none")
            continue
        ret = d if c == drow else rows[c]
        sm, sd = steps(rows, c, mb), steps(rows, c, db)
        ok = max(sm) <= 1 and max(sd) <= 1
        worse = ret["mse"] > d["mse"] + 0.01 or ret["dice"] < d["dice"] - 0.01
        out.append(
            f"   {name:12s} {pt(rows[c])}{' (d)' if c == drow else ''}: "
            f"{ret['mse']:.3f}/{ret['dice']:.3f} steps {sm[0]}/{sm[1]}, {sd[0]}/{sd[1]}"
            f" {'ok' if ok else 'FAR'}{' WORSE' if worse else ''}"
        )
    return "\n".join(out)


def prefer_halves(rows, best, drow, d):
    """Round 7's prefer_default (halves' reproducibility; the default's row's halves)."""
    if drow is None or best == drow:
        return best
    a = np.asarray(rows[best]["halves_per_component"]).ravel()
    b = np.asarray(rows[drow]["halves_per_component"]).ravel()
    if rows[drow]["admissible"] and not rows[best]["admissible"]:
        return drow
    return best if a.mean() - b.mean() > math.hypot(SE(a), SE(b)) else drow


def main():
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--keys", nargs="+", default=["sub", "half"])
    args = p.parse_args()
    for f in args.files:
        data = json.loads(Path(f).read_text())
        for r in data["rows"] + [data["default"]]:
            r["min"] = np.minimum(r["sub"], r["half"]).tolist()
            r["mean2"] = ((np.asarray(r["sub"]) + r["half"]) / 2).tolist()
        print(report(data, args.keys))


if __name__ == "__main__":
    main()
