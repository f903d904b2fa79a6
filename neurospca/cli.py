"""The ``neurospca`` command line.

Examples
--------
::

    neurospca demo                 # fit SPCA-TV on the paper's simulation, print a summary
    neurospca demo --solver conesta --tol 1e-4
"""

import argparse
import logging
import sys
import time

import numpy as np

__all__ = ["main"]


def _demo(args):
    from . import SPCATV, tv_from_mask
    from .datasets import make_paper_simulation

    X, patterns, mask = make_paper_simulation(random_state=args.seed)
    Xc = X - X.mean(axis=0)
    l1_max = np.sqrt((Xc**2).sum(axis=0)).max() / X.shape[0]
    # the reference implementation's example penalties: l1_max * (0.05, 1, 0.1)
    alpha = 1.15 * l1_max
    model = SPCATV(3, alpha=alpha, l1_ratio=0.05 / 1.15, tv_ratio=0.1 / 1.15,
                   operator=tv_from_mask(mask), tol=args.tol, solver=args.solver,
                   verbose=args.verbose)
    print(f"neurospca demo: SPCA-TV on the paper's simulation "
          f"({X.shape[0]} images of {mask.shape[0]}x{mask.shape[1]} pixels, seed {args.seed})")
    print(f"alpha={alpha:.4g}, l1_ratio={model.l1_ratio:.4g}, tv_ratio={model.tv_ratio:.4g}, "
          f"tol={args.tol:g}, solver={args.solver}")
    t0 = time.perf_counter()
    model.fit(X)
    elapsed = time.perf_counter() - t0
    truth = patterns > 0
    print("\ncomponent  support  explained var.  best Dice vs truth  certified gap  iterations")
    for k, comp in enumerate(model.components_):
        support = comp != 0
        dice = max(2 * np.sum(support & t) / (support.sum() + t.sum()) for t in truth)
        print(f"{k:9d}  {support.sum():7d}  {model.explained_variance_ratio_[k]:14.4f}  "
              f"{dice:18.3f}  {model.dual_gaps_[k]:13.3e}  {model.n_inner_iter_[k]:10d}")
    print(f"\nfitted in {elapsed:.2f} s")
    return 0


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="neurospca",
        description="Structured sparse PCA (SPCA-TV) for brain images and surfaces.",
        epilog="Example: neurospca demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit SPCA-TV on built-in simulated data",
                          description="Fit 3 SPCA-TV components on the paper's 2D "
                          "simulation (generated offline from a seed) and summarise them.")
    demo.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    demo.add_argument("--tol", type=float, default=1e-3, help="precision (default 1e-3)")
    demo.add_argument("--solver", choices=("dual", "conesta"), default="dual")
    demo.add_argument("-v", "--verbose", action="count", default=0)
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None):
    """Entry point of the ``neurospca`` command."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "verbose", 0):
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"neurospca: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
