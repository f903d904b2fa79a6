"""Two choices of the fit's v-steps, each timed as an interleaved A/B (issue 14).

1. ``blas``: the cortical simulation of ``bench_cortex.py`` (N = 133,
   P = 314,790, edge TV), ``spca_tv`` with ``n_threads=2``, BLAS held to one
   thread during the v-steps (the default, ``_alternation._vstep_blas``) or
   left alone.
2. ``float32``: float32 data (the fMRI-sized instance, N = 83, P = 64,030, and
   ``icosphere(7)`` with N = 200), ``SPCATV`` with float32 v-steps (the
   default at ``tol >= 1e-5``) or float64 v-steps.

Each repeat runs A then B, or B then A (alternating), in this process, so a
change of load hits both; medians and their ratio are printed.

Usage::

    python benchmarks/bench_vstep_options.py [--repeat 3] [--parts blas float32]
"""

import argparse
import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this tree's neurospca, not an installed one
sys.path.insert(1, str(HERE))

from bench_float32 import interleaved  # noqa: E402  (medians, order alternating)


def report(label, medians):
    """One table row: the two medians of :func:`interleaved` and their ratio."""
    (_, ta), (_, tb) = medians.items()
    print(f"| {label} | {ta:.2f} | {tb:.2f} | {ta / tb:.2f} |", flush=True)


def part_blas(repeat):
    from bench_cortex import simulate

    import neurospca
    from neurospca._commands.penalties import example_weights
    from neurospca.decomposition import _alternation

    coords, faces, masks, X, _ = simulate(133, 7)
    op, _ = neurospca.tv_from_hemispheres(
        (coords, faces), (coords, faces), masks[0], masks[1], kind="edges"
    )
    Xc = X - X.mean(axis=0)
    l1, l2, tv = example_weights(X)
    held = _alternation._vstep_blas
    print("\n| cortical, n_threads=2 | BLAS held (s) | BLAS free (s) | held / free |")
    print("|---|---:|---:|---:|")
    for tol in (1e-3, 1e-6):

        def fit(hold, tol=tol):
            _alternation._vstep_blas = (
                held if hold else (lambda n_threads: contextlib.nullcontext())
            )
            try:
                neurospca.spca_tv(Xc, 3, l1=l1, l2=l2, tv=tv, operator=op, tol=tol, n_threads=2)
            finally:
                _alternation._vstep_blas = held

        fit(True, 1e-2)  # warm-up: caches of the operator
        report(
            f"tol {tol:g}",
            interleaved({"held": lambda: fit(True), "free": lambda: fit(False)}, repeat),
        )


def part_float32(repeat):
    from neurospca import SPCATV, icosphere, tv_from_mask, tv_from_mesh
    from neurospca.datasets import make_fmri_like
    from neurospca.decomposition import _alternation

    X, _, mask = make_fmri_like(random_state=0)
    cases = [("fmri3d, N = 83", X.astype(np.float32), tv_from_mask(mask))]
    coords, faces = icosphere(7)
    rng = np.random.default_rng(0)
    centres = coords[rng.choice(len(coords), 3, replace=False)]
    patterns = np.exp(-((coords[None] - centres[:, None]) ** 2).sum(-1) / 0.05)
    X = (rng.standard_normal((200, 3)) * [3.0, 2.0, 1.5]) @ patterns
    X += 0.5 * rng.standard_normal(X.shape)
    cases.append(("icosphere(7), N = 200", X.astype(np.float32), tv_from_mesh(coords, faces)))
    default = _alternation.FLOAT32_VSTEP_MIN_TOL
    print("\n| float32 data | float32 v-steps (s) | float64 v-steps (s) | f32 / f64 |")
    print("|---|---:|---:|---:|")
    for name, X, op in cases:
        for tol in (1e-3, 1e-4):
            comps = {}

            def fit(vdtype, X=X, op=op, tol=tol, comps=comps):
                # float64 v-steps: no tol reaches the float32 threshold
                _alternation.FLOAT32_VSTEP_MIN_TOL = default if vdtype == "f32" else np.inf
                try:
                    comps[vdtype] = SPCATV(3, operator=op, tol=tol).fit(X).components_
                finally:
                    _alternation.FLOAT32_VSTEP_MIN_TOL = default

            times = interleaved({"f32": lambda: fit("f32"), "f64": lambda: fit("f64")}, repeat)
            report(f"{name}, tol {tol:g}", times)
            print(f"(max |components f32 - f64| = {np.abs(comps['f32'] - comps['f64']).max():.1e})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--parts", nargs="+", default=["blas", "float32"], choices=["blas", "float32"]
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(
        f"# bench_vstep_options.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    for part in args.parts:
        {"blas": part_blas, "float32": part_float32}[part](args.repeat)
    print(f"(load average after: {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
