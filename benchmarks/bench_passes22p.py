"""Issue 22 round 16: 12 passes over X for a 3-component fit (branch passes22p).

``bench_passes22o.py`` (its ``--phases``, ``--sets`` and ``--recovery``) with
this round's flags as variants: ``off`` is this tree with main's settings (bit
for bit main's answer), ``branch`` its defaults, and one variant per change:

- ``ahead``: deflation's u-steps look ahead (``_start.LOOK_AHEAD``);
- ``chkspan``: a restart check decided "no restart" with no pass in a span
  that holds the kept loadings (``_joint_starts.CHECK_LOADINGS``);
  ``checks``: also a sweep's pass computes the checks' first Davidson
  directions (``_joint_starts.CHECKS_AHEAD``); ``inmemory``: the defaults
  with those two in memory too (``CHECKS_WHERE = True``);
- ``xv``: ``explained_variance_`` from the kept ``Xc v`` (``KEPT_SCORES``).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_passes22p.py --phases
    OMP_NUM_THREADS=1 python benchmarks/bench_passes22p.py --sets test memmap24 \\
        --variants off branch
    OMP_NUM_THREADS=1 python benchmarks/bench_passes22p.py --recovery paper-0.7 \\
        --seeds 3603 --variants off branch
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_passes22o  # noqa: E402
import bench_sweeps22m  # noqa: E402

#: This round's flags at main's values (added to ``bench_passes22o.MAIN``: ``off``).
OFF = {
    "_start.LOOK_AHEAD": False,
    "_joint_starts.CHECK_LOADINGS": False,
    "_joint_starts.CHECKS_AHEAD": False,
    "_joint_starts.CHECKS_WHERE": "memmap",
    "KEPT_SCORES": False,
}
bench_passes22o.MAIN.update(OFF)  # restored between the variants of --recovery
bench_sweeps22m.FLAGS.update(
    off=OFF,
    ahead=dict(OFF, **{"_start.LOOK_AHEAD": True}),
    chkspan=dict(OFF, **{"_joint_starts.CHECK_LOADINGS": True}),
    checks=dict(OFF, **{"_joint_starts.CHECK_LOADINGS": True, "_joint_starts.CHECKS_AHEAD": True}),
    xv=dict(OFF, KEPT_SCORES=True),
    inmemory={"_joint_starts.CHECKS_WHERE": True},  # the checks' look-ahead in memory too
)

if __name__ == "__main__":
    if "--child" not in sys.argv and "--phases" not in sys.argv and "--recovery" not in sys.argv:
        bench_sweeps22m.__file__ = os.path.abspath(__file__)  # its children run this script
        bench_sweeps22m.main()
    else:
        bench_passes22o.main()
