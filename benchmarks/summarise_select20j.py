"""Table of ``bench_select20h.py``'s JSON lines for issue 20 round 11 (branch select20j).

"Within one grid step" made precise. The grid is split x scale: a point is
(``s``, ``a``), ``s`` the split's index in the search's order (the splits
sorted by ``l1_ratio``), ``a = log2(alpha_rel)`` (the grid doubles). The
steps between two points are ``(|da|, |ds|)`` and a point is within one step
of another when ``max(|da|, |ds|) <= 1`` (a diagonal move is one step): round
10's count (``summarise_select20g.steps``), here ``names``. Round 11 also
counts between *models*: without TV the l2 term only scales the loadings, so
the grid points of one l1 weight ``l1_ratio * alpha_rel`` are one model
(``_returned.same_model``; identical MSE and Dice to 3 decimals in every
yardstick row), and the steps between two models are the fewest between any
of their names (``models``). The truth-best are the MSE-best and the
Dice-best of every grid point's warm full fit and the default fit
(``yardstick`` rows); "with ties": the nearest point within ``--tie`` of the
best. A choice is within one step when it is for both the MSE-best and the
Dice-best.

Per row (tag ``before`` / ``after``): the default fit and the choice (MSE /
Dice), the truth-best, the steps (names; models; strict and with ties), whether
the MSE-best and the Dice-best models are among the rows whose evidence is
tied with the kept model's (``tied``, issue 20 round 11; the kept model is
tied with itself; ``-``: a row without the field), never
worse than the default (MSE not above, Dice not below; strict / within the
tie) and CPU seconds (one fit, the default fit, ``select_penalty``, ratio to
the default fit).

    python benchmarks/summarise_select20j.py before.jsonl after.jsonl yard.jsonl [--tie 0.01]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from summarise_select20g import pt, read_args, steps  # noqa: E402
from summarise_select20h import merge  # noqa: E402
from summarise_select20i import never_worse  # noqa: E402


def names(grid, p):
    """The grid points that are ``p``'s model (``p`` itself; without TV also
    every point of the same l1 weight)."""
    same = [g for g in grid if g[1] == 0 == p[1] and abs(g[0] * g[2] - p[0] * p[2]) < 1e-9]
    return [p] + same


def model_steps(order, grid, a, b):
    """The fewest steps between any name of ``a``'s model and any of ``b``'s."""
    pairs = [steps(order, x, y) for x in names(grid, a) for y in names(grid, b)]
    return min(pairs, key=lambda s: (max(s), sum(s)))


def nearest_by(count, chosen, grid, col, best, tie):
    """``count``'s steps to the nearest point within ``tie`` of the best."""
    near = [g for g in grid if abs(g[col] - best) <= tie]
    return min((count(chosen, g) for g in near), key=lambda s: (max(s), sum(s)))


def cell(s_mse, s_dice):
    ok = "ok" if max(*s_mse, *s_dice) <= 1 else "**far**"
    return f"{s_mse[0]}/{s_mse[1]}; {s_dice[0]}/{s_dice[1]} {ok}"


def row_cells(r, tie):
    """The table cells of one merged row."""
    d, c, mb, db = r["default"], r["chosen"], r["mse_best"], r["dice_best"]
    grid = r["truth_grid"] + [d]
    order = [tuple(x) for x in dict.fromkeys(tuple(g[:2]) for g in r["truth_grid"])]

    def by_name(x, y):
        return steps(order, x, y)

    def by_model(x, y):
        return model_steps(order, grid, x, y)

    counts = []
    for count in (by_name, by_model):
        counts.append(cell(count(c, mb), count(c, db)))
        counts.append(
            cell(
                nearest_by(count, c, grid, 3, mb[3], tie), nearest_by(count, c, grid, 4, db[4], tie)
            )
        )
    strict, loose = never_worse(d, c, tie)
    tied = [c] + r.get("tied", [])
    in_ties = [
        "yes" if any(model_steps(order, grid, t, b) == (0, 0) for t in tied) else "no"
        for b in (mb, db)
    ]
    ratio = r["cpu_select"] / r["cpu_default"]
    return [
        str(r["seed"]),
        r["tag"],
        f"{pt(d)}: {d[3]:.3f} / {d[4]:.3f}",
        f"{pt(c)}{' d' if r['kept_default'] else ''}: {c[3]:.3f} / {c[4]:.3f}",
        f"{pt(mb)}: {mb[3]:.3f} / {mb[4]:.3f}",
        f"{pt(db)}: {db[3]:.3f} / {db[4]:.3f}",
        *counts,
        "; ".join(in_ties) if r["tag"] != "before" else "-",
        f"{'yes' if strict else 'no'} / {'yes' if loose else 'no'} "
        f"({c[3] - d[3]:+.3f} / {c[4] - d[4]:+.3f})",
        f"{r['cpu_one_fit']:.1f} / {r['cpu_default']:.1f} / {r['cpu_select']:.0f} ({ratio:.0f}x)",
    ]


HEADER = (
    "| seed | rule | default: point, MSE / Dice | chosen | truth-best MSE | truth-best Dice | "
    "names strict (MSE; Dice) | names ties | models strict | models ties | truth-best "
    "tied (MSE; Dice) | never worse: "
    "strict / ties (change) | CPU s: one fit / default / select (ratio) |"
)


def main():
    rows, tie = read_args()
    rows = [r for r in merge(rows, skip=()) if "mse_best" in r]
    for method, corr in sorted({(r["method"], r["corr"]) for r in rows}):
        print(f"\n{method}, r = {corr:g}\n\n{HEADER}\n" + "|---" * 13 + "|")
        for r in sorted(rows, key=lambda r: (r["seed"], r["tag"])):
            if (r["method"], r["corr"]) == (method, corr):
                print("| " + " | ".join(row_cells(r, tie)) + " |")


if __name__ == "__main__":
    main()
