"""The default fit's walk, instrumented (issue 20 round 11, a diagnostic).

Per path point: the halves' reproducibility and non-zero fractions; per full fit
made by the check: its point, its recovery against the planted patterns (abs cos)
and its components' reproducibility on the walk's halves at that point
(``component_stability``)::

    OMP_NUM_THREADS=1 python benchmarks/diag_walk20j.py fs5-0.8:3316 paper-0.7:3315
"""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trust import certified_dice, recovery  # noqa: E402
from bench_trust_defaults import load  # noqa: E402

from neurospca import SPCATV  # noqa: E402
from neurospca.decomposition import _auto_check  # noqa: E402
from neurospca.decomposition._stability import component_stability  # noqa: E402


def _fmt(a):
    return "/".join(f"{x:.2f}" for x in np.asarray(a, float))


def diagnose(name, seed):
    X, op, P = load(name, seed)
    inner = _auto_check.auto_fit

    def auto_fit(path, run, start):
        def logged(point, u0):
            out = run(point, u0)
            V = np.asarray(out[1], float)
            norms = np.linalg.norm(V, axis=0)
            C = (V / np.where(norms > 0, norms, 1.0)).T
            cos, _ = recovery(C, P)
            stab = component_stability(C, *point["components"]) if "components" in point else []
            print(
                f"  full fit {point['l1_ratio']:g},{point['tv_ratio']:g} a={point['alpha_rel']:g}"
                f" cos {_fmt(cos)} on walk halves {_fmt(stab)} nz {_fmt(np.mean(V != 0, 0))}",
                flush=True,
            )
            return out

        return inner(path, logged, start)

    _auto_check.auto_fit = auto_fit
    try:
        m = SPCATV(3, operator=op, random_state=0).fit(X)
    finally:
        _auto_check.auto_fit = inner
    for p in m.auto_path_:
        print(
            f"  walk {p['l1_ratio']:g},{p['tv_ratio']:g} a={p['alpha_rel']:g} halves "
            f"{_fmt(p['reproducibility'])} nz {_fmt(p['nonzero_fraction'])}"
        )
    cos, _ = recovery(m.components_, P)
    print(
        f"{name} {seed}: chose ({m.l1_ratio_:g}, {m.tv_ratio_:g}) {m.alpha_rel_:g} cos {_fmt(cos)}"
        f" Dice {_fmt(certified_dice(m, P))} stability {_fmt(m.stability_)}",
        flush=True,
    )


def main():
    warnings.simplefilter("ignore")
    for arg in sys.argv[1:]:
        name, seed = arg.split(":")
        diagnose(name, int(seed))


if __name__ == "__main__":
    main()
