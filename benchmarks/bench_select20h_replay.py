"""Issue 20 round 9: replay candidate rules on the rows of ``bench_select20g_rows.py``.

Each row of the rows JSON is a grid point's warm full fit with its returned
stability (``min(sub, half)``, as ``criterion="returned"``); the rules compare
rows with the unpaired standard error of round 8 (``unpaired``) or with the
paired one of round 9 (the k-th most reproducible component of one model
against the k-th of the other), within the estimator's own split first
(``own``) or over every split with the least l2 weight among the near-best
(``global``).

    python benchmarks/bench_select20h_replay.py /tmp/rows_*.json [--margin 0.02 0.05]
"""

import argparse
import json
import math
from pathlib import Path

import numpy as np

from neurospca.decomposition import MAX_NONZERO

PATH_START = {(0.05, 0.1): 0.5, (0.3, 0.3): 0.125, (0.05, 0.0): 0.5}


def split_of(r):
    return (r["l1_ratio"], r["tv_ratio"])


def se(x):
    x = np.asarray(x, float)
    return float(np.std(x, ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0


def gain(a, b, paired):
    """(mean gain of a over b, its standard error)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if paired:
        d = np.sort(a)[::-1] - np.sort(b)[::-1]
        return float(d.mean()), se(d)
    return float(a.mean() - b.mean()), math.hypot(se(a), se(b))


def beats(a, b, paired, margin):
    g, e = gain(a, b, paired)
    return g > max(margin, e)


def full_ok(r):
    nz = np.asarray(r["nonzero"])
    return bool(np.all(nz > 0) and np.all(nz <= MAX_NONZERO) and nz.min() >= 0.05 * nz.max())


def candidates(rows):
    out, stopped = [], set()
    for i, r in enumerate(rows):
        hz = np.asarray(r["halves_nonzero"])
        if split_of(r) in stopped:
            continue
        if r["alpha_rel"] < PATH_START.get(split_of(r), 0.0):
            continue
        if not (np.all(hz <= MAX_NONZERO) and np.any(hz > 0)):
            continue
        out.append(i)
        if np.any(np.asarray(r["nonzero"]) == 0):
            stopped.add(split_of(r))
    return [i for i in out if full_ok(rows[i])]


def least_near(rows, idx, paired, margin, key):
    ref = max(idx, key=lambda i: np.mean(rows[i]["score"]))
    near = [i for i in idx if i == ref or not beats(rows[ref]["score"], rows[i]["score"], paired, margin)]
    return min(near, key=key), ref


def l2_weight(r):
    return (1 - r["l1_ratio"] - r["tv_ratio"]) * r["alpha_rel"]


def choose(rows, paired, margin, scope):
    idx = candidates(rows)
    if not idx:
        return None
    if scope == "global":
        return least_near(rows, idx, paired, margin, lambda i: (l2_weight(rows[i]), i))[0]
    groups = {}
    for i in idx:
        groups.setdefault(split_of(rows[i]), []).append(i)
    order = list(dict.fromkeys(split_of(r) for r in rows))
    own = order[0]
    per = {s: least_near(rows, g, paired, margin, lambda i: rows[i]["alpha_rel"]) for s, g in groups.items()}
    if own not in per:
        chosen = max(per.values(), key=lambda cr: np.mean(rows[cr[1]]["score"]))[0]
        return chosen
    ref0 = per[own][1]
    others = [per[s] for s in per if s != own]
    others.sort(key=lambda cr: -np.mean(rows[cr[1]]["score"]))
    m = max(margin, 0.02)
    for c, ref in others[:1]:
        if beats(rows[ref]["score"], rows[ref0]["score"], paired, m):
            return c
    return per[own][0]


def steps(rows, i, j):
    splits = list(dict.fromkeys(split_of(r) for r in rows))
    a = abs(math.log2(rows[i]["alpha_rel"] / rows[j]["alpha_rel"]))
    s = abs(splits.index(split_of(rows[i])) - splits.index(split_of(rows[j])))
    return int(round(a)), s


def pt(r):
    return f"({r['l1_ratio']:g}, {r['tv_ratio']:g}) {r['alpha_rel']:g}"


def default_row(rows, d):
    for i, r in enumerate(rows):
        if all(np.isclose(r[k], d[k]) for k in ("alpha_rel", "l1_ratio", "tv_ratio")):
            return i
    return None


def report(data, margins):
    rows, d = data["rows"], data["default"]
    for r in rows + [d]:
        r["score"] = np.minimum(r["sub"], r["half"]).tolist()
    drow = default_row(rows, d)
    mb = min(range(len(rows)), key=lambda i: rows[i]["mse"])
    db = max(range(len(rows)), key=lambda i: rows[i]["dice"])
    print(
        f"{data['seed']} {data['method']} r={data['corr']:g}: default {pt(d)} "
        f"{d['mse']:.3f}/{d['dice']:.3f} score {np.round(d['score'], 2)}; MSE-best {pt(rows[mb])} "
        f"{rows[mb]['mse']:.3f}/{rows[mb]['dice']:.3f}; Dice-best {pt(rows[db])} "
        f"{rows[db]['mse']:.3f}/{rows[db]['dice']:.3f}"
    )
    for r in rows:
        print(
            f"     {pt(r):18s} {r['mse']:.3f}/{r['dice']:.3f} nz {np.round(r['nonzero'], 3)} "
            f"score {np.round(r['score'], 2)} mean {np.mean(r['score']):.3f}"
        )
    for paired in (False, True):
        for margin in margins:
            for scope in ("own", "global"):
                c = choose(rows, paired, margin, scope)
                if c is None:
                    print("   none")
                    continue
                keep = drow is not None and not beats(rows[c]["score"], d["score"], paired, margin)
                ret = d if keep else rows[c]
                sm, sd = steps(rows, drow if keep else c, mb), steps(rows, drow if keep else c, db)
                ok = max(sm) <= 1 and max(sd) <= 1
                worse = ret["mse"] > d["mse"] + 0.01 or ret["dice"] < d["dice"] - 0.01
                name = f"{'paired' if paired else 'unpaired'} m={margin:g} {scope}"
                print(
                    f"   {name:24s} {pt(rows[c])}{' -> default' if keep else ''}: "
                    f"{ret['mse']:.3f}/{ret['dice']:.3f} steps {sm[0]}/{sm[1]}, {sd[0]}/{sd[1]} "
                    f"{'ok' if ok else 'FAR'}{' WORSE' if worse else ''}"
                )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--margin", type=float, nargs="+", default=[0.0, 0.02, 0.05])
    args = p.parse_args()
    for f in args.files:
        report(json.loads(Path(f).read_text()), args.margin)


if __name__ == "__main__":
    main()
