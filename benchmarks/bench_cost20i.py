"""Where a default fit's time goes (issue 20 round 10): ``bench_cost20h.py``,
plus a noise floor computed by ``alpha_rel="auto"`` itself (``_auto.below_noise``,
where a tree has one: this branch's first version, 65152d3) counted with the
noise floor, not with the rest. Runs on any tree ``bench_cost20h.py`` runs on.

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_cost20i.py \\
        --sets c69-0.6 fs5-0.5 fs5-0.8 paper-0.7 --seeds 3271 3272 --out /tmp/after
    python benchmarks/bench_cost20i.py --summary /tmp/before /tmp/after

``--summary`` adds, per set, the median and largest CPU ratio and how many
instances are at most 5x one fit, per tree.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cost20f  # noqa: E402
import bench_cost20g  # noqa: E402
import bench_cost20h  # noqa: E402
from bench_cost20f import _cpu_wrapped  # noqa: E402

from neurospca.decomposition import _auto  # noqa: E402


def _instrument():
    """bench_cost20h's timers, plus the round-10 noise floor of ``_auto``."""
    inner = bench_cost20h._instrument()

    def instrument():
        inner()
        if hasattr(_auto, "below_noise"):

            def noise(args, out, cpu):
                bench_cost20g.EXTRA["noise"] += cpu
                bench_cost20f.LOG["stability"] += cpu  # resampled = stability - noise

            _auto.below_noise = _cpu_wrapped(_auto.below_noise, noise)

    return instrument


def per_set(dirs):
    """Per set and tree: median, largest, and count at most 5x of the CPU ratio."""
    runs = [bench_cost20g._records(d) for d in dirs]
    both = [k for k in runs[0] if all(k in r for r in runs)]
    print("\n| set | n | " + " | ".join(f"{d}: median / max / <= 5x" for d in dirs) + " |")
    print("|---" * (2 + len(dirs)) + "|")
    names = sorted({runs[0][k]["set"] for k in both}) + ["all"]
    for name in names:
        keys = [k for k in both if name in ("all", runs[0][k]["set"])]
        cells = []
        for recs in runs:
            r = np.array([recs[k]["cpu"] / recs[k]["one_cpu"] for k in keys])
            cells.append(f"{np.median(r):.2f}x / {r.max():.2f}x / {np.sum(r <= 5)} of {r.size}")
        print(f"| {name} | {len(keys)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    bench_cost20g._instrument = _instrument()
    bench_cost20g.main()
    if "--summary" in sys.argv:
        per_set(sys.argv[sys.argv.index("--summary") + 1 :])
