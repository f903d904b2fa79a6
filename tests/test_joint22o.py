"""Issue 22 round 15: the joint fit's certificates at large P.

* :func:`~neurospca.decomposition._alternation.moved_gap` bounds the gap of a
  v-step's pair for a moved prox centre with no product; the joint fit's certify
  steps take it when it certifies (:data:`~neurospca.decomposition._joint.MOVED_GAPS`),
  so its iterates, components and returned gaps must be those of the exact
  certificate's, and a deflation fit must not use it;
* :func:`~neurospca.solvers.gap.prox_gap` and
  :func:`~neurospca.solvers.gap.primal_certificate` with fewer temporaries must
  give the bits of the plain formulas (kept here).
"""

import warnings

import numpy as np
import pytest

import neurospca.decomposition._alternation as alternation
import neurospca.decomposition._joint as joint
from neurospca import SPCATV, tv_from_mask
from neurospca.solvers import ProxProblem, get_solver
from neurospca.solvers import gap as gapmod
from neurospca.solvers.penalties import L1, GroupNorm

from ._helpers import assert_same_fit, switched_fits
from .test_datapath import _instance


def _problem(rng, side=9, a=0.05, b=0.3):
    op = tv_from_mask(rng.random((side,) * 3) < 0.85)
    y = rng.standard_normal(op.n_features) + 2.0 * (rng.random(op.n_features) < 0.1)
    return op, y, [L1(a), GroupNorm(op, b)]


def _primal_of(problem, w):
    """``v_w``: the primal point of the dual point ``w`` (made feasible)."""
    a, op, b = problem.fast_form()
    z = problem.y - op.rmatvec(gapmod.feasible_dual(w, op, b))
    return np.sign(z) * np.maximum(np.abs(z) - a, 0.0)


def test_moved_gap_bounds_the_exact_gap_and_needs_its_cross_term():
    """For pairs ``(v, w)`` near the solution at ``y0`` (the solver's, and its
    ``v`` moved off ``w``'s primal point) and centres moved by 1e-4 .. 0.3 of
    ``||y0||``, at random and along ``v_w - v``, the exact gap at ``y`` is at
    most the bound; without its cross term ``2 ||d|| sqrt(2 G0)`` it fails
    somewhere (the test can fail)."""
    rng = np.random.default_rng(3540)
    solver = get_solver("dual")
    worst, violated = 0.0, 0
    for trial in range(16):
        op, y0, pieces = _problem(rng)
        base = ProxProblem(y0, pieces)
        res = solver.solve(base, tol=10.0 ** -rng.uniform(2, 6), max_iter=5000)
        v = res.v + (trial % 2) * 1e-2 * rng.standard_normal(y0.size)
        gap0 = base.gap(v, res.w)[0]
        off = _primal_of(base, res.w) - v
        for scale in (1e-4, 1e-3, 1e-2, 0.1, 0.3):
            for d in (rng.standard_normal(y0.size), off):
                if not np.any(d):
                    continue
                y = y0 + scale * np.linalg.norm(y0) * d / np.linalg.norm(d)
                exact = ProxProblem(y, pieces).gap(v, res.w)[0]
                worst = max(worst, exact / alternation.moved_gap(y, y0, gap0))
                dist = np.linalg.norm(y - y0)
                violated += exact > gap0 + 0.5 * dist * dist
    assert worst <= 1.0 + 1e-9
    assert violated > 0


def _fit(X, op, method="joint", seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(
            3, operator=op, tol=1e-3, random_state=seed, alpha_rel=1.0, method=method
        ).fit(X)


def _data(seed, side=12):
    """``test_datapath``'s blobs on a 12^3 cube, 60 rows, and its TV operator."""
    return _instance(n=60, side=side, seed=seed), tv_from_mask(np.ones((side,) * 3, bool))


class _Counted:
    """Counts the calls of ``moved_gap`` and how many certified."""

    def __init__(self, monkeypatch):
        self.calls = self.used = 0
        original = alternation.moved_gap

        def counted(y, y0, gap0):
            out = original(y, y0, gap0)
            self.calls += 1
            self.used += out <= alternation.MOVED_SHARE * 1e-3 * 0.5 * float(y @ y)
            return out

        monkeypatch.setattr(alternation, "moved_gap", counted)


@pytest.mark.parametrize("seed", [3541, 3542])
def test_joint_fit_with_the_moved_bound_is_the_exact_certificates_fit(monkeypatch, seed):
    """The joint fit with and without the bound: the same components, scales,
    returned gaps and iterations, bit for bit; the bound certified some of the
    certify steps (else the test compares a fit with itself)."""
    X, op = _data(seed)
    fit = lambda: _fit(X, op)  # noqa: E731
    exact, moved, counted = switched_fits(monkeypatch, joint, "MOVED_GAPS", fit, _Counted)
    assert counted.used > 0
    assert_same_fit(moved, exact)


def test_deflation_fit_keeps_the_exact_certificate(monkeypatch):
    """A deflation fit's certify step is its returned certificate: the bound is
    never asked for (its gaps feed the support's finishing)."""
    X, op = _data(3543)
    counted = _Counted(monkeypatch)
    _fit(X, op, method="deflation")
    assert counted.calls == 0


def _plain_gap(v, y, operator, l1, group, w):
    """``prox_gap`` as written before round 15."""
    v = np.asarray(v, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    Av = operator.matvec(v)
    primal = (
        0.5 * float(np.sum((v - y) ** 2))
        + l1 * float(np.abs(v).sum())
        + group * float(operator.group_norms(Av).sum())
    )
    w = gapmod.feasible_dual(w, operator, group)
    z = y - operator.rmatvec(w)
    u = np.sign(z) * np.maximum(np.abs(z) - l1, 0.0)
    gap = primal - (0.5 * float(y @ y) - 0.5 * float(u @ u))
    return (max(gap, 0.0) if np.isfinite(gap) else np.inf), primal


def _plain_certificate(v, y, operator, l1, group, mus):
    """``primal_certificate`` as written before round 15."""
    Av = operator.matvec(np.asarray(v, dtype=np.float64))
    nrm = operator.group_norms(Av)
    best, primal = np.inf, np.nan
    for mu in tuple(mus) + (0.0,):
        denom = np.maximum(nrm, mu)
        scale = np.where(denom > 0, group / np.where(denom > 0, denom, 1.0), 0.0)
        gap, primal = _plain_gap(v, y, operator, l1, group, Av * scale[operator.row_group])
        best = min(best, gap)
    return best, primal


def test_gap_and_certificate_are_the_plain_formulas_bits():
    """Feasible and infeasible, float64 and float32 dual points, sparse and
    dense ``v``: ``prox_gap`` and ``primal_certificate`` equal the plain
    formulas exactly."""
    rng = np.random.default_rng(3544)
    for trial in range(30):
        op, y, _ = _problem(rng, side=int(rng.integers(4, 12)))
        op = op.scaled(rng.uniform(0.1, 2.0))
        a, b = rng.uniform(0.0, 1.0), rng.uniform(0.05, 1.0)
        v = rng.standard_normal(op.n_features) * (rng.random(op.n_features) < rng.random())
        w = rng.standard_normal(op.n_rows) * rng.uniform(0.01, 3.0)
        if trial % 3 == 0:
            w = gapmod.feasible_dual(w, op, b)  # feasible: no copy is made
        if trial % 2 == 0:
            w = w.astype(np.float32)
        assert gapmod.prox_gap(v, y, op, a, b, w) == _plain_gap(v, y, op, a, b, w)
        mus = (1e-3, 1e-6)
        assert gapmod.primal_certificate(v, y, op, a, b, mus) == _plain_certificate(
            v, y, op, a, b, mus
        )
