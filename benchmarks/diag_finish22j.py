"""Where the certified finishing of the support spends its CPU seconds (issue 22 item 4).

Fits ``bench_datapath``'s data sets (``cube86``: P = 636,056; ``cube124``: P =
1,906,624) at a fixed penalty and times, in CPU seconds (``time.process_time``),
the parts of ``_support``'s finishing: the working-set solves (rows, iterations
and budget of each), building the working sets, the certificates of the support
(``certify_support``: the zero test) and the returned pairs' gaps.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/diag_finish22j.py cube86 joint [--margin 1]
"""

import argparse
import os
import sys
import time
import warnings
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_datapath import SETTINGS, _load  # noqa: E402

import neurospca.decomposition._support as S  # noqa: E402
from neurospca import SPCATV  # noqa: E402

SECONDS = defaultdict(float)


def _timed(name):
    """Wrap ``S.<name>`` to add its CPU seconds to ``SECONDS[name]``."""
    func = getattr(S, name)

    def wrapped(*args, **kwargs):
        t0 = time.process_time()
        out = func(*args, **kwargs)
        SECONDS[name] += time.process_time() - t0
        if name == "solve_dual":
            rows = args[0].composite[0].operator.n_rows
            print(f"  working set: {rows} rows, {out.n_iter} of {kwargs['max_iter']} iterations")
        return out

    setattr(S, name, wrapped)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="cube86 or cube124")
    ap.add_argument("setting", choices=["fixed", "joint"])
    ap.add_argument("--margin", type=int, default=None, help="WORKING_MARGIN to try")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.margin is not None:
        S.WORKING_MARGIN = args.margin
    for name in ("solve_dual", "working_set", "certify_support", "_returned_gap"):
        _timed(name)
    X, operator = _load(args.data, None)
    model = SPCATV(3, operator=operator, tol=1e-3, random_state=0, **SETTINGS[args.setting])
    t0 = time.process_time()
    model.fit(X)
    print(f"fit CPU {time.process_time() - t0:.1f} s; finishing parts (CPU s): {dict(SECONDS)}")
    norms = np.linalg.norm(model.components_, axis=1)
    print("non-zero", model.certified_support_.sum(axis=1).tolist())
    print("zero", model.certified_zeros_.sum(axis=1).tolist())
    print("uncertain", model.n_uncertain_.tolist())
    peak = np.abs(model.components_).max(axis=1) / norms
    print("radius / peak", np.round(model.support_radius_ / peak, 4).tolist())


if __name__ == "__main__":
    main()
