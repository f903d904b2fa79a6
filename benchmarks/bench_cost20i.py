"""Where a default fit's time goes (issue 20 round 10): ``bench_cost20h.py``
with the noise floor that ``alpha_rel="auto"`` computes at the first split's
choice (``_auto.below_noise``, round 10: it decides whether the other splits
are searched, and ``stability_`` continues from its fits) counted with the
noise floor, not with the rest. Runs on any tree ``bench_cost20h.py`` runs on.

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_cost20i.py \\
        --sets c69-0.6 fs5-0.5 fs5-0.8 paper-0.7 --seeds 3271 3272 --out /tmp/after
    python benchmarks/bench_cost20i.py --summary /tmp/before /tmp/after
"""

import sys
from pathlib import Path

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


if __name__ == "__main__":
    bench_cost20g._instrument = _instrument()
    bench_cost20g.main()
