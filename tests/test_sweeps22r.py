"""Issue 22 round 18: the joint fit's sweeps at large P, their gap evaluations.

* :func:`~neurospca.decomposition._alternation.kernel_gap` gives the exact gap
  of the dual solver's own pair for a moved prox centre from the products its
  kernel formed (``res.objective``, ``res.atw``): the value of
  :meth:`~neurospca.solvers.ProxProblem.gap` to rounding, on the difference
  kernel (in and out of a locality order) and the CSR kernel; no ``A^T w`` is
  kept where it would not be the returned ``w``'s (float32, rescaled solves);
* the joint fit's certify steps take it (:data:`~._alternation.KERNEL_GAPS`):
  the same fit bit for bit, with fewer gap evaluations through the operator.
"""

import warnings

import numpy as np
import pytest

import neurospca.decomposition._alternation as alternation
from neurospca import SPCATV, icosphere, tv_from_mask, tv_from_mesh
from neurospca.solvers import ProxProblem, _problem, get_solver, prox_dual
from neurospca.solvers._base import locality_order
from neurospca.solvers.penalties import L1, GroupNorm

from ._helpers import assert_same_fit, switched_fits
from .test_datapath import _instance


def _pieces(rng, op):
    return [L1(rng.uniform(0.01, 0.3)), GroupNorm(op, rng.uniform(0.05, 0.6))]


def _moved(rng, y0, res):
    """Centres moved by 1e-4 .. 0.3 of ``||y0||``: at random, along ``v``, along ``y0``."""
    for scale in (1e-4, 1e-2, 0.3):
        for d in (rng.standard_normal(y0.size), res.v, y0):
            if np.any(d):
                yield y0 + scale * np.linalg.norm(y0) * d / np.linalg.norm(d)


@pytest.mark.parametrize(
    "structure, kernel_path", [("grid", "difference"), ("mesh", "difference"), ("grid", "csr")]
)
def test_kernel_gap_is_the_exact_gap(structure, kernel_path):
    """The dual solver's pairs on grid TV (an irregular mask; its difference
    kernel or its CSR kernel) and on an icosphere's TV (the difference kernel
    in the features' locality order) at tolerances 1e-2 .. 1e-6: at every
    moved centre :func:`kernel_gap` is the exact gap of ``(v, w)`` to 1e-13 of
    ``P(0)``, and its primal ``P(v)``."""
    rng = np.random.default_rng(3697)
    mesh = tv_from_mesh(*icosphere(3))
    assert locality_order(mesh) is not None
    n = 0
    for _ in range(6):
        op = mesh if structure == "mesh" else tv_from_mask(rng.random((10, 9, 8)) < 0.8)
        y0 = rng.standard_normal(op.n_features) + 2.0 * (rng.random(op.n_features) < 0.1)
        pieces = _pieces(rng, op)
        res = prox_dual(
            y0, op, pieces[0].weight, pieces[1].weight, tol=10.0 ** -rng.uniform(2, 6),
            kernel_path=kernel_path,
        )  # fmt: skip
        assert res.atw is not None
        for y in _moved(rng, y0, res):
            problem = ProxProblem(y, pieces)
            gap, primal = alternation.kernel_gap(problem, res.v, res, y0)
            exact, exact_primal = problem.gap(res.v, res.w)
            scale = 0.5 * float(y @ y)
            assert abs(gap - exact) <= 1e-13 * scale
            assert abs(primal - exact_primal) <= 1e-13 * scale
            n += 1
    assert n >= 50


def test_kernel_gap_only_for_the_solvers_own_pair():
    """No kernel gap for another ``v`` than the solver's, for a float32 solve
    (its certified pair is not the kernel's last) or a rescaled one (its
    ``A^T w`` is at the solved scale)."""
    rng = np.random.default_rng(3698)
    op = tv_from_mask(np.ones((8, 8, 8), bool))
    y0 = rng.standard_normal(op.n_features)
    pieces = _pieces(rng, op)
    problem = ProxProblem(y0, pieces)
    solver = get_solver("dual")
    res = solver.solve(problem, tol=1e-4, max_iter=5000)
    assert alternation.kernel_gap(problem, res.v, res, y0) is not None
    assert alternation.kernel_gap(problem, res.v.copy(), res, y0) is None
    res32 = solver.solve(ProxProblem(y0.astype(np.float32), pieces), tol=1e-4, max_iter=5000)
    assert res32.atw is None
    big = ProxProblem(1e120 * y0, [p.rescaled(1e-120) for p in pieces])
    assert solver.solve(big, tol=1e-4, max_iter=5000).atw is None


class _GapCalls:
    """Gap evaluations through the operator (``prox_gap``) once installed."""

    def __init__(self, monkeypatch):
        self.n = 0
        original = _problem.prox_gap

        def counted(*args, **kw):
            self.n += 1
            return original(*args, **kw)

        monkeypatch.setattr(_problem, "prox_gap", counted)


@pytest.mark.parametrize("seed", [3699, 3700])
def test_joint_fit_with_kernel_gaps_is_the_same_fit(monkeypatch, seed):
    """The joint fit with and without the kernel's gaps in its certify steps:
    the same components, scales, returned gaps, iterations, certified support
    and sweeps bit for bit, with fewer gap evaluations through the operator
    (else the switch did nothing)."""
    X = _instance(n=60, side=12, seed=seed)
    op = tv_from_mask(np.ones((12,) * 3, bool))

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return SPCATV(3, operator=op, tol=1e-3, random_state=0, alpha_rel=1.0).fit(X)

    both = _GapCalls(monkeypatch)  # both fits' calls; ``on``: the second fit's
    before, after, on = switched_fits(monkeypatch, alternation, "KERNEL_GAPS", fit, _GapCalls)
    assert_same_fit(after, before)
    assert after.n_sweeps_ == before.n_sweeps_
    assert on.n < both.n - on.n
