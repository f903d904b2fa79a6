"""Are the v-step certificates true bounds? A sweep of random prox problems.

Each case is a prox problem ``min_v ||v - y||^2/2 + a ||v||_1 + b sum_g ||A_g v||``
on a 2-D or 3-D grid, a chain, an icosphere mesh, random overlapping groups,
TV stacked with groups, or a random operator; ``y`` of scale 1e-3..1e3;
penalties over six decades; cold, warm (the solution of a nearby problem) and
hostile warm starts (dual variables 1e6 outside their balls, ``v0`` of the
wrong sign and 1e3 times too large). Both solvers run at ``tol`` in
{1e-2, 1e-4} with ``max_iter`` in {50, 100000}. The reference optimum is the
dual solver at relative gap 1e-12 (plus cvxpy/Clarabel at 1e-12 with
``--cvxpy``). "subopt" is ``P(v) - P(v_ref)``.

Reports per solver: calls, violations (``subopt > gap`` beyond 1e-12 P(0),
or ``converged`` with ``gap > tol_abs``), the worst ratio subopt / gap over
calls with a measurable suboptimality (``subopt > 1e-9 P(0)``), and the
median of that ratio (how tight the certificate is).

Usage::

    python benchmarks/bench_certificates.py [--cases 400] [--seed 1] [--cvxpy]
"""

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests._certificates import check_case  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cvxpy", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    rows = []
    for i in range(args.cases):
        rows += check_case(i, seed=args.seed, use_cvxpy=args.cvxpy)
    elapsed = time.perf_counter() - t0
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d')}; {args.cases} problems, seed {args.seed}, "
        f"cvxpy={args.cvxpy}, {elapsed:.1f} s"
    )
    print()
    print("| solver | calls | converged | violations | worst subopt/gap | median subopt/gap |")
    print("|---|---|---|---|---|---|")
    for solver in ("dual", "conesta"):
        sel = [r for r in rows if r["solver"] == solver]
        viol = [
            r
            for r in sel
            if r["subopt"] > r["gap"] + r["slack"] or (r["converged"] and r["gap"] > r["tol_abs"])
        ]
        ratios = [
            r["subopt"] / r["gap"] for r in sel if r["gap"] > 0 and r["subopt"] > 1e3 * r["slack"]
        ]
        worst = max(ratios) if ratios else float("nan")
        med = float(np.median(ratios)) if ratios else float("nan")
        print(
            f"| {solver} | {len(sel)} | {sum(r['converged'] for r in sel)} | {len(viol)} | "
            f"{worst:.6f} | {med:.3f} |"
        )
    print()
    print("| structure | start | calls | violations |")
    print("|---|---|---|---|")
    keys = sorted({(r["kind"], r["start"]) for r in rows})
    for kind, start in keys:
        sel = [r for r in rows if r["kind"] == kind and r["start"] == start]
        viol = sum(r["subopt"] > r["gap"] + r["slack"] for r in sel)
        print(f"| {kind} | {start} | {len(sel)} | {viol} |")


if __name__ == "__main__":
    main()
