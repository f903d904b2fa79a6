"""Issue 20 round 13: the refit kept only as a better solution (``_auto_check.BETTER_SOLUTION``).

Runs ``bench_cost20h.py`` (the simulated sets) or ``bench_stability20g_rsfmri.py``
(brainspace's resting-state halves) with the switch off (main's rule) or on
(``--better``), printing each refit's decision: the kept fit's and the new
fit's joint objective and the sum of their certified gaps.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_weak20m.py [--better] \\
        cost --sets fs5-0.8 --seeds 3312 --out /tmp/on
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_weak20m.py [--better] rsfmri
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cost20g  # noqa: E402
import bench_cost20h  # noqa: E402
import bench_stability20g_rsfmri  # noqa: E402

from neurospca.decomposition import _auto_check  # noqa: E402


def _logged(better):
    def wrapped(new, old):
        kept = better(new, old)
        gaps = np.nansum(new[2]["gaps"]) + np.nansum(old[2]["gaps"])
        print(
            f"# refit: J kept {old[2]['objective']:.6f}, new {new[2]['objective']:.6f}, "
            f"gaps {gaps:.2e}: {'kept' if kept else 'not kept'}",
            flush=True,
        )
        return kept

    return wrapped


def main():
    args = sys.argv[1:]
    if args and args[0] == "--better":
        _auto_check.BETTER_SOLUTION = True
        args = args[1:]
    _auto_check._better = _logged(_auto_check._better)
    print(f"# BETTER_SOLUTION = {_auto_check.BETTER_SOLUTION}", flush=True)
    which, sys.argv[1:] = args[0], args[1:]
    if which == "rsfmri":
        bench_stability20g_rsfmri.main()
    else:
        bench_cost20g._instrument = bench_cost20h._instrument()
        bench_cost20g.main()


if __name__ == "__main__":
    main()
