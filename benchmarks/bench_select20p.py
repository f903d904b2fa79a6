"""Issue 20 round 16: ``select_penalty``'s evidence, round 15's fits against guarded continuations.

One process per instance of the paper simulation (``bench_select20g.default_fit``):
the default fit, then ``select_penalty`` with ``_continuation.CONTINUATION``
off (every evidence fit with the joint fit's competing starts, as round 15)
and on (guarded continuations), in that order. Per run: the chosen point and
its MSE / Dice, CPU seconds in default-fit units, and every judged row's
evidence (stability per component, held-out variance and floor x 1e-3); per
instance the largest difference of the per-component evidence over the rows
judged by both runs and at the default's row, and how many continuations were
kept or refitted. One JSON line per instance appended to ``--out``.

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_select20p.py --seed 3563 \\
        --corr 0.7 --method spcatv --out rows.jsonl
"""

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_enet20q import judged_rows  # noqa: E402
from bench_select20g import base_parser, default_fit, point, quiet  # noqa: E402

from neurospca import model_selection as ms  # noqa: E402
from neurospca.model_selection import _continuation, _returned  # noqa: E402

COUNTS = {"kept": 0, "refitted": 0}


def _counted(fit):
    def wrapped(*args, **kw):
        out = fit(*args, **kw)
        COUNTS["kept" if out[1] else "refitted"] += 1
        return out

    return wrapped


_continuation.guarded_fit = _returned.guarded_fit = _counted(_continuation.guarded_fit)


def run(est, X, P, seed, cpu_default, continuation):
    """One ``select_penalty`` call: its summary and judged rows' evidence."""
    _continuation.CONTINUATION = continuation
    COUNTS.update(kept=0, refitted=0)
    t0 = time.process_time()
    sel = quiet(ms.select_penalty, est, X, random_state=seed)
    cpu = time.process_time() - t0
    b = sel.best_estimator_
    judged = judged_rows(sel)
    return {
        "chosen": point(sel.best_params_) + [ms.mse_to_truth(b, P), ms.dice_to_truth(b, P)],
        "kept_default": bool(sel.best_index_ == getattr(sel, "default_index_", None)),
        "ratio": cpu / cpu_default,
        "cpu": cpu,
        "judged": judged,
        **COUNTS,
    }


def main():
    args = base_parser().parse_args()
    X, P, est, d, cpu_default = default_fit(args.seed, args.corr, args.method)
    cold, warm = (run(est, X, P, args.seed, cpu_default, c) for c in (False, True))
    both = [k for k in cold["judged"] if k in warm["judged"]]
    diffs = {
        k: float(np.max(np.abs(np.subtract(cold["judged"][k][0], warm["judged"][k][0]))))
        for k in both
    }
    default = str([float(d.l1_ratio_), float(d.tv_ratio_), float(d.alpha_rel_)])
    row = {
        "seed": args.seed,
        "corr": args.corr,
        "method": args.method,
        "cpu_default": cpu_default,
        "default": default,
        "cold": cold,
        "warm": warm,
        "max_diff": max(diffs.values(), default=None),
        "default_diff": diffs.get(default),
        "same_choice": cold["chosen"][:3] == warm["chosen"][:3]
        and bool(np.allclose(cold["chosen"][3:], warm["chosen"][3:])),
    }
    with open(args.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row)[:600], flush=True)


if __name__ == "__main__":
    main()
