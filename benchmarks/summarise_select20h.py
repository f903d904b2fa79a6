"""Tables of ``bench_select20h.py``'s JSON lines (issue 20 round 9).

The ``after`` rows of ``bench_select20h.py`` run without ``--truth-best``
take their truth-best from the ``yardstick`` rows of the same seed, method and
correlation (``--yardstick-only``: every grid point's warm full fit, the
default fit); then ``summarise_select20g.py``'s tables (tags ``before`` and
``after``), and per row the l1 weights ``l1_ratio * alpha_rel`` of the chosen,
MSE-best and Dice-best points and the rows the search judged.

    python benchmarks/summarise_select20h.py before.jsonl after.jsonl yardstick.jsonl
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from summarise_select20g import print_tables, pt, read_args  # noqa: E402


def merge(rows, skip=("before",)):
    """The after rows with the truth-best of their yardstick row (rows tagged
    ``skip`` left as they are)."""
    sticks = {(r["seed"], r["corr"], r["method"]): r for r in rows if r["tag"] == "yardstick"}
    out = [r for r in rows if r["tag"] != "yardstick"]
    for r in out:
        y = sticks.get((r["seed"], r["corr"], r["method"]))
        if r["tag"] in skip or "truth_grid" in r or y is None:
            continue
        grid = y["truth_grid"] + [r["default"]]
        r.update(
            truth_grid=y["truth_grid"],
            mse_best=min(grid, key=lambda g: g[3]),
            dice_best=max(grid, key=lambda g: g[4]),
        )
    return out


def main():
    rows, tie = read_args()
    rows = merge(rows)
    print_tables(rows, tie)
    print("\nl1 weights (l1_ratio * alpha_rel): chosen / MSE-best / Dice-best; rows judged\n")
    for r in sorted(rows, key=lambda r: (r["method"], r["corr"], r["seed"], r["tag"])):
        if "mse_best" not in r:
            continue
        w = [g[0] * g[2] for g in (r["chosen"], r["mse_best"], r["dice_best"])]
        judged = ", ".join(pt(g) for g in r.get("judged", []))
        print(
            f"{r['method']} r={r['corr']:g} {r['seed']} {r['tag']}: "
            f"{w[0]:.3g} / {w[1]:.3g} / {w[2]:.3g}; judged {judged or '-'}"
        )


if __name__ == "__main__":
    main()
