"""Markdown tables of ``bench_peers20d.py``'s JSON lines (one or more files).

Per set and seed: PCA and SparsePCA at every alpha (matched |cos| and support
Dice per planted pattern, wall time), and the best alpha: the highest
worst-pattern |cos|, ties (to 0.005) broken by the worst-pattern Dice.

    python benchmarks/summarise_peers20d.py out/peers_*.jsonl
"""

import json
import sys


def fmt(a):
    return "/".join(f"{x:.2f}" for x in a)


def best(rows):
    spca = [r for r in rows if r["fit"].startswith("SparsePCA")]
    if not spca:
        return None
    return max(spca, key=lambda r: (round(min(r["cos"]) / 0.005), min(r["dice"])))


def by_dice(rows):
    spca = [r for r in rows if r["fit"].startswith("SparsePCA")]
    d = max(spca, key=lambda r: (min(r["dice"]), min(r["cos"])))
    return f"{d['alpha']:g}: {fmt(d['cos'])} / {fmt(d['dice'])}"


def main(paths):
    recs = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    keys = sorted({(r["set"], r["seed"]) for r in recs})
    print(
        "| set | seed | fit | abs cos | Dice | worst cos | wall (s) |\n"
        "|---|---|---|---|---|---|---|"
    )
    for key in keys:
        rows = [r for r in recs if (r["set"], r["seed"]) == key]
        rows.sort(key=lambda r: (r["fit"] != "PCA", r.get("alpha", 0)))
        for r in rows:
            print(
                f"| {key[0]} | {key[1]} | {r['fit']} | {fmt(r['cos'])} | {fmt(r['dice'])} | "
                f"{min(r['cos']):.2f} | {r['wall']:.0f} |"
            )
    print(
        "\n| set | seed | alphas done | best alpha | abs cos | Dice | by worst Dice |"
        "\n|---|---|---|---|---|---|---|"
    )
    for key in keys:
        rows = [r for r in recs if (r["set"], r["seed"]) == key]
        b = best(rows)
        done = sorted(r["alpha"] for r in rows if "alpha" in r)
        if b is not None:
            print(
                f"| {key[0]} | {key[1]} | {', '.join(f'{a:g}' for a in done)} | "
                f"{b['alpha']:g} | {fmt(b['cos'])} | {fmt(b['dice'])} | {by_dice(rows)} |"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
