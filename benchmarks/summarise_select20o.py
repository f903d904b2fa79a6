"""Issue 20 round 15 (branch select20o): before / after ``select_penalty`` per instance.

One line per instance of ``bench_select20h.py``'s rows (tags ``before``,
``after``, and ``yardstick`` for the truth-best): the default fit's point and
MSE / Dice, the chosen point before and after (``d``: the default kept), the
truth-best points, the steps to them (``summarise_select20j.row_cells``: models,
strict / ties of 0.01), never worse than the default (strict / ties), the rows
judged before / after and ``select_penalty``'s CPU in default-fit units (each
tree's own default fit measured in its run).

    python benchmarks/summarise_select20o.py benchmarks/out_select20o/fresh_*.jsonl
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from summarise_select20g import read_args  # noqa: E402
from summarise_select20h import merge  # noqa: E402
from summarise_select20j import row_cells  # noqa: E402


def _pt(p):
    return f"({p[0]:g}, {p[1]:g}) {p[2]:g}"


def main():
    rows, tie = read_args()
    rows = [r for r in merge(rows, skip=()) if "mse_best" in r]
    pairs = {}
    for r in rows:
        pairs.setdefault((r["method"], r["corr"], r["seed"]), {})[r["tag"]] = r
    print(
        "| set | seed | default: point, MSE / Dice | chosen before -> after | MSE-best | Dice-best "
        "| within one step (models): strict / ties | never worse: strict / ties "
        "| judged before -> after | CPU x default fit before -> after |\n" + "|---" * 10 + "|"
    )
    ratios = {"before": [], "after": []}
    for key in sorted(pairs):
        p = pairs[key]
        if not {"before", "after"} <= set(p):
            continue
        b, a = p["before"], p["after"]
        cells = row_cells(a, tie)
        strict = "ok" in cells[8]
        ties = "ok" in cells[9]
        worse = cells[11].split(" (")[0]
        x = {t: p[t]["cpu_select"] / p[t]["cpu_default"] for t in ("before", "after")}
        for t in x:
            ratios[t].append(x[t])
        same = "same" if b["chosen"][:3] == a["chosen"][:3] else "**moved**"
        kept = " d" if a["kept_default"] else ""
        print(
            f"| {key[0]} r = {key[1]:g} | {key[2]} | {_pt(a['default'])}: {a['default'][3]:.3f} / "
            f"{a['default'][4]:.3f} | {_pt(b['chosen'])} -> {_pt(a['chosen'])}{kept} ({same}) | "
            f"{_pt(a['mse_best'])}: {a['mse_best'][3]:.3f} | {_pt(a['dice_best'])}: "
            f"{a['dice_best'][4]:.3f} | {'ok' if strict else 'far'} / {'ok' if ties else 'far'} | "
            f"{worse} | {len(b['judged'])} -> {len(a['judged'])} | "
            f"{x['before']:.1f}x -> {x['after']:.1f}x |"
        )
    for t, v in ratios.items():
        if v:
            lo, hi = min(v), max(v)
            print(f"\n{t}: n {len(v)}, median {np.median(v):.1f}x, range {lo:.1f}-{hi:.1f}x")


if __name__ == "__main__":
    main()
