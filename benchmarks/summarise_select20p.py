"""Issue 20 round 16 (branch select20p): counts per set, before and after.

``bench_select20h.py``'s rows (tags ``before``, ``after``, ``yardstick``), as
``summarise_select20o.py`` reads them (its per-instance table is printed
first), and per set and tree: within one grid step of the truth-best (models,
strict / ties of 0.01), never worse than the default (strict / ties), the
same returned model as the other tree (point, MSE and Dice to 1e-6) and the
CPU of ``select_penalty`` in default-fit units, median (range).

    python benchmarks/summarise_select20p.py benchmarks/out_select20p/fresh_*_*.jsonl
    python benchmarks/summarise_select20p.py --evidence \\
        benchmarks/out_select20p/fresh_evidence.jsonl

With ``--evidence``: ``bench_select20p.py``'s rows, one line per instance
(round 15's evidence fits against guarded continuations in one process).
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import summarise_select20o  # noqa: E402
from summarise_select20g import read_args  # noqa: E402
from summarise_select20h import merge  # noqa: E402
from summarise_select20j import row_cells  # noqa: E402


def _same(a, b):
    return a["chosen"][:3] == b["chosen"][:3] and np.allclose(a["chosen"][3:], b["chosen"][3:])


def _ratio(v):
    return f"{np.median(v):.1f}x ({min(v):.1f}-{max(v):.1f})"


def evidence_table(paths):
    """One line per ``bench_select20p.py`` row."""
    print(
        "| set | seed | chosen cold -> warm | same model | largest evidence difference: "
        "judged rows / default's row | continuations kept / refitted | CPU x default fit: "
        "cold -> warm |\n" + "|---" * 7 + "|"
    )
    rows = [json.loads(x) for p in paths for x in Path(p).read_text().splitlines()]
    for r in sorted(rows, key=lambda r: (r["method"], r["corr"], r["seed"])):
        c, w = r["cold"], r["warm"]
        d = r.get("default_diff")
        print(
            f"| {r['method']} r = {r['corr']:g} | {r['seed']} | {c['chosen'][:3]} -> "
            f"{w['chosen'][:3]} | {'yes' if r['same_choice'] else '**no**'} | "
            f"{r['max_diff']:.4f} / {'-' if d is None else f'{d:.4f}'} | "
            f"{w['kept']} / {w['refitted']} | {c['ratio']:.1f}x -> {w['ratio']:.1f}x |"
        )


def main():
    if sys.argv[1] == "--evidence":
        evidence_table(sys.argv[2:])
        return
    summarise_select20o.main()
    rows, tie = read_args()
    every = merge(rows, skip=())
    rows = [r for r in every if "mse_best" in r]
    sets = {}
    for r in rows:
        sets.setdefault((r["method"], r["corr"]), {}).setdefault(r["tag"], {})[r["seed"]] = r
    print(
        "\n| set | tree | n | within one step (models): strict / ties | never worse: strict / "
        "ties | same model as the other tree | CPU x default fit: median (range) |\n"
        + "|---" * 7
        + "|"
    )
    for key in sorted(sets):
        for tag, by_seed in sorted(sets[key].items(), reverse=True):
            other = sets[key].get("after" if tag == "before" else "before", {})
            cells = [row_cells(r, tie) for r in by_seed.values()]
            same = sum(_same(r, other[s]) for s, r in by_seed.items() if s in other)
            both = sum(s in other for s in by_seed)
            print(
                f"| {key[0]} r = {key[1]:g} | {tag} | {len(cells)} | "
                f"{sum('ok' in c[8] for c in cells)} / {sum('ok' in c[9] for c in cells)} | "
                f"{sum(c[11].startswith('yes /') for c in cells)} / "
                f"{sum('/ yes' in c[11] for c in cells)} | {same} of {both} | "
                f"{_ratio([r['cpu_select'] / r['cpu_default'] for r in by_seed.values()])} |"
            )
    for method in sorted({r["method"] for r in every}):
        for tag in ("before", "after"):
            v = [
                r["cpu_select"] / r["cpu_default"]
                for r in every
                if r["method"] == method and r["tag"] == tag
            ]
            if v:
                print(
                    f"\n{method} {tag} (every row, with or without a yardstick): n {len(v)}, "
                    f"{_ratio(v)}"
                )


if __name__ == "__main__":
    main()
