"""Table of ``bench_select20h.py``'s JSON lines for issue 20 round 10 (branch select20i).

Per seed: the default fit's and the choice's MSE / Dice to the truth, the
truth-best points (``yardstick`` rows: every grid point's warm full fit and the
default fit), the steps (alpha_rel / split) from the choice to them, strict and
with ties (the nearest point within ``--tie`` of the best), for ElasticNet PCA
also in l1 weight (``l1_ratio * alpha_rel``, its only parameter: steps over the
distinct l1 weights of the grid), never worse than the default (both measures,
strict and within ``--tie``), CPU seconds (one fit at the default's point, the
default fit, ``select_penalty``) and their ratio.

    python benchmarks/summarise_select20i.py after.jsonl yard.jsonl [--tie 0.01] [--tag after]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from summarise_select20g import nearest, pt, read_args, steps, within  # noqa: E402
from summarise_select20h import merge  # noqa: E402


def l1_steps(grid, a, b):
    """Steps between two points over the distinct l1 weights of ``grid``."""
    weights = sorted({round(g[0] * g[2], 9) for g in grid})
    return abs(weights.index(round(a[0] * a[2], 9)) - weights.index(round(b[0] * b[2], 9)))


def never_worse(d, c, tie):
    """``(strict, within tie)``: the choice's MSE not above and Dice not below the default's."""
    strict = c[3] <= d[3] + 1e-9 and c[4] >= d[4] - 1e-9
    return strict, c[3] <= d[3] + tie and c[4] >= d[4] - tie


def row_cells(r, tie):
    """The table cells of one merged row."""
    d, c = r["default"], r["chosen"]
    grid = r["truth_grid"] + [d]
    order = [tuple(x) for x in dict.fromkeys(tuple(g[:2]) for g in r["truth_grid"])]
    mb, db = r["mse_best"], r["dice_best"]
    sm, sd = steps(order, c, mb), steps(order, c, db)
    tm, td = nearest(order, c, grid, 3, mb[3], tie), nearest(order, c, grid, 4, db[4], tie)
    ok = "ok" if within(sm) and within(sd) else "**far**"
    ok_t = "ok" if within(tm) and within(td) else "**far**"
    cells = [
        str(r["seed"]),
        f"{pt(d)}: {d[3]:.3f} / {d[4]:.3f}",
        f"{pt(c)}{' d' if r['kept_default'] else ''}: {c[3]:.3f} / {c[4]:.3f}",
        f"{pt(mb)}: {mb[3]:.3f} / {mb[4]:.3f}",
        f"{pt(db)}: {db[3]:.3f} / {db[4]:.3f}",
        f"{sm[0]}/{sm[1]}; {sd[0]}/{sd[1]} {ok}",
        f"{tm[0]}/{tm[1]}; {td[0]}/{td[1]} {ok_t}",
    ]
    if c[1] == 0:
        wm, wd = l1_steps(grid, c, mb), l1_steps(grid, c, db)
        cells.append(f"{wm}; {wd} {'ok' if max(wm, wd) <= 1 else '**far**'}")
    else:
        cells.append("-")
    strict, loose = never_worse(d, c, tie)
    gain = f"{c[3] - d[3]:+.3f} / {c[4] - d[4]:+.3f}"
    cells.append(f"{'yes' if strict else 'no'} / {'yes' if loose else 'no'} ({gain})")
    ratio = r["cpu_select"] / r["cpu_default"]
    cells.append(
        f"{r['cpu_one_fit']:.1f} / {r['cpu_default']:.1f} / {r['cpu_select']:.0f} ({ratio:.0f}x)"
    )
    return cells


def main():
    rows, tie = read_args()
    rows = [r for r in merge(rows) if r["tag"] != "yardstick" and "mse_best" in r]
    for method, corr in sorted({(r["method"], r["corr"]) for r in rows}):
        print(f"\n{method}, r = {corr:g}\n")
        print(
            "| seed | default: point, MSE / Dice | chosen: point, MSE / Dice | truth-best MSE | "
            "truth-best Dice | steps (MSE; Dice) strict | steps with ties | l1-weight steps "
            "(MSE; Dice) | never worse: strict / ties (MSE / Dice change) | CPU s: one fit / "
            "default / select (ratio) |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(rows, key=lambda r: (r["seed"], r["tag"])):
            if (r["method"], r["corr"]) == (method, corr):
                print("| " + " | ".join(row_cells(r, tie)) + " |")


if __name__ == "__main__":
    main()
