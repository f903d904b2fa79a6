"""Where a default fit's time goes (issue 20 round 9): ``bench_cost20g.py``
with the halves' refit that decides whether to search the other splits
(``_auto.refit_halves``, round 9) counted with ``stability_``'s resampled fits
(it replaces the refit ``stability_`` made before), not with the rest. Runs on
any tree ``bench_cost20g.py`` runs on (the refit is timed where it exists).

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_cost20h.py \\
        --sets c69-0.6 fs5-0.5 fs5-0.8 paper-0.7 --seeds 3231 3232 --out /tmp/after
    python benchmarks/bench_cost20h.py --summary /tmp/before /tmp/after
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cost20f  # noqa: E402
import bench_cost20g  # noqa: E402
from bench_cost20f import _cpu_wrapped  # noqa: E402

from neurospca.decomposition import _auto  # noqa: E402

LOG = bench_cost20f.LOG


def _instrument():
    """bench_cost20g's timers, plus the round-9 refit of the halves as resampled."""
    inner = bench_cost20g._instrument

    def instrument():
        inner()
        if hasattr(_auto, "refit_halves"):

            def refit(args, out, cpu):
                LOG["stability"] += cpu

            _auto.refit_halves = _cpu_wrapped(_auto.refit_halves, refit)

    return instrument


if __name__ == "__main__":
    bench_cost20g._instrument = _instrument()
    bench_cost20g.main()
