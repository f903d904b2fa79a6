"""Does back-fitting's erratic behaviour go away with more sweeps? (issue 20; 20 vs 100 sweeps)"""

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np

warnings.simplefilter("ignore")
from _trust import recovery  # noqa: E402  after the sys.path line
from bench_trust import fit_both, load  # noqa: E402  after the sys.path line

for corr, seed, a in [(0.8, 2003, 4.0), (0.8, 2003, 2.0), (0.8, 2001, 2.0)]:
    X, op, pat, K = load("atrophy-fs5", corr, seed)
    for sw in (20, 100):
        t = time.perf_counter()
        Vs, n, td, tb = fit_both(X, op, K, a, 0.05, 0.1, sweeps=sw)
        c, d = recovery(Vs["backfit"], pat)
        print(
            f"r={corr} seed={seed} a={a} max_sweeps={sw}: sweeps={n} t={tb:.1f}s "
            f"cos {np.round(c, 2)} Dice {np.round(d, 2)}",
            flush=True,
        )
