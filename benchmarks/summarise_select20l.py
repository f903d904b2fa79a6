"""Counts of ``bench_select20h.py``'s rows for issue 20 round 12 (branch select20l).

The tables of ``summarise_select20j.py`` (both step counts, never worse than
the default, CPU) for ``before`` and ``after`` rows merged with their
``yardstick`` rows (before rows too: both trees' choices are scored against
the same yardstick), then per set and tag the counts: within one step
(names and models, strict / with ties of ``--tie``), never worse than the
default (strict / ties), the choice the same as before, and the CPU of
``select_penalty`` as a multiple of the default fit (median, range).

    python benchmarks/summarise_select20l.py out_select20l/fresh_*.jsonl [--tie 0.01]
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from summarise_select20g import read_args  # noqa: E402
from summarise_select20h import merge  # noqa: E402
from summarise_select20j import HEADER, row_cells  # noqa: E402


def counts(rows, tie):
    """``[names strict, names ties, models strict, models ties, never worse strict, ties]``."""
    out = np.zeros(6, int)
    for r in rows:
        c = row_cells(r, tie)
        out[:4] += ["ok" in x for x in c[6:10]]
        strict, loose = c[11].split(" (")[0].split(" / ")
        out[4:] += [strict == "yes", loose == "yes"]
    return out


def main():
    rows, tie = read_args()
    rows = [r for r in merge(rows, skip=()) if "mse_best" in r]
    sets = sorted({(r["method"], r["corr"]) for r in rows})
    for method, corr in sets:
        print(f"\n{method}, r = {corr:g}\n\n{HEADER}\n" + "|---" * 13 + "|")
        for r in sorted(rows, key=lambda r: (r["seed"], r["tag"])):
            if (r["method"], r["corr"]) == (method, corr):
                print("| " + " | ".join(row_cells(r, tie)) + " |")
    print(
        "\n| set | tag | n | names strict / ties | models strict / ties | never worse strict"
        " / ties | same choice as before | CPU x default fit: median (range) |\n" + "|---" * 8 + "|"
    )
    before = {
        (r["method"], r["corr"], r["seed"]): r["chosen"][:3] for r in rows if r["tag"] == "before"
    }
    for method, corr in sets:
        for tag in ("before", "after"):
            sub = [r for r in rows if (r["method"], r["corr"], r["tag"]) == (method, corr, tag)]
            if not sub:
                continue
            n = counts(sub, tie)
            same = sum(
                before.get((r["method"], r["corr"], r["seed"])) == r["chosen"][:3] for r in sub
            )
            x = [r["cpu_select"] / r["cpu_default"] for r in sub]
            print(
                f"| {method} r = {corr:g} | {tag} | {len(sub)} | {n[0]} / {n[1]} | "
                f"{n[2]} / {n[3]} | {n[4]} / {n[5]} | {same} | "
                f"{np.median(x):.0f}x ({min(x):.0f}-{max(x):.0f}x) |"
            )


if __name__ == "__main__":
    main()
