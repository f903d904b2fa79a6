"""Tables of ``bench_select20g.py``'s JSON lines (issue 20 round 8).

Per seed: the default fit, main's choice (tag ``before``) and this branch's
(``after``), the truth-best points of the warm full fits (``after``'s
``--truth-best`` run), and the steps (alpha_rel / split) from each choice to
them: strict (the single best point) and with ties (the nearest point whose
value is within ``--tie`` of the best, in MSE and in Dice).

    python benchmarks/summarise_select20g.py before.jsonl after.jsonl [--tie 0.01]
"""

import argparse
import json
import math
from pathlib import Path


def pt(p):
    return f"({p[0]:g}, {p[1]:g}) {p[2]:g}"


def steps(order, a, b):
    da = abs(math.log2(a[2] / b[2]))
    ds = abs(order.index(tuple(a[:2])) - order.index(tuple(b[:2])))
    return int(round(da)), ds


def nearest(order, chosen, grid, col, best, tie):
    """Steps to the nearest grid point within ``tie`` of the best value."""
    near = [g for g in grid if abs(g[col] - best) <= tie]
    return min((steps(order, chosen, g) for g in near), key=lambda s: (max(s), sum(s)))


def within(s):
    return max(s) <= 1


def read_args():
    """The JSON-lines files named on the command line, read: ``(rows, tie)``."""
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--tie", type=float, default=0.01)
    args = p.parse_args()
    rows = [json.loads(line) for f in args.files for line in Path(f).read_text().splitlines()]
    return rows, args.tie


def main():
    print_tables(*read_args())


def print_tables(rows, tie=0.01):
    """The tables of the rows (JSON objects of ``bench_select20g.py``)."""
    keys = sorted({(r["method"], r["corr"]) for r in rows})
    for method, corr in keys:
        sel = [r for r in rows if r["method"] == method and r["corr"] == corr]
        seeds = sorted({r["seed"] for r in sel})
        print(f"\n{method}, r = {corr:g}\n")
        print(
            "| seed | default: point, MSE / Dice | before: point, MSE / Dice | after: point, "
            "MSE / Dice | truth-best MSE (warm) | truth-best Dice (warm) | steps before "
            "(MSE; Dice) strict / ties | steps after strict / ties | CPU s: one fit / "
            "default / before / after |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for seed in seeds:
            b = next((r for r in sel if r["seed"] == seed and r["tag"] == "before"), None)
            a = next((r for r in sel if r["seed"] == seed and r["tag"] == "after"), None)
            if a is None:
                continue
            d = a["default"]
            cells = [str(seed), f"{pt(d)}: {d[3]:.3f} / {d[4]:.3f}"]
            for r in (b, a):
                if r is None:
                    cells.append("-")
                    continue
                c = r["chosen"]
                cells.append(f"{pt(c)}{' d' if r['kept_default'] else ''}: {c[3]:.3f} / {c[4]:.3f}")
            if "mse_best" in a:
                grid = a["truth_grid"] + [a["default"]]
                order = [tuple(x) for x in dict.fromkeys(tuple(g[:2]) for g in a["truth_grid"])]
                mb, db = a["mse_best"], a["dice_best"]
                cells += [
                    f"{pt(mb)}: {mb[3]:.3f} / {mb[4]:.3f}",
                    f"{pt(db)}: {db[3]:.3f} / {db[4]:.3f}",
                ]
                for r in (b, a):
                    if r is None:
                        cells.append("-")
                        continue
                    c = r["chosen"]
                    sm, sd = steps(order, c, mb), steps(order, c, db)
                    tm = nearest(order, c, grid, 3, mb[3], tie)
                    td = nearest(order, c, grid, 4, db[4], tie)
                    mark = "ok" if within(sm) and within(sd) else "**far**"
                    mark_t = "ok" if within(tm) and within(td) else "**far**"
                    cells.append(
                        f"{sm[0]}/{sm[1]}; {sd[0]}/{sd[1]} {mark} / "
                        f"{tm[0]}/{tm[1]}; {td[0]}/{td[1]} {mark_t}"
                    )
            else:
                cells += ["-", "-", "-", "-"]
            cpu = [
                a["cpu_one_fit"],
                a["cpu_default"],
                b["cpu_select"] if b else float("nan"),
                a["cpu_select"],
            ]
            cells.append(" / ".join(f"{x:.1f}" if x < 10 else f"{x:.0f}" for x in cpu))
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
