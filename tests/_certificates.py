"""Random v-step instances and a high-precision reference, shared by
tests/test_certificates.py and benchmarks/bench_certificates.py.

A case is a prox problem ``min_v ||v - y||^2/2 + a ||v||_1 + b sum_g ||A_g v||``
on a grid, a chain, a mesh or random (overlapping) groups, with penalties over
six decades and a cold, warm or hostile warm start. The reference optimum is
the exact-prox dual solver run to a relative gap of 1e-12 (its own certificate
bounds its error), cross-checked against cvxpy (Clarabel, tight tolerances)
when ``use_cvxpy``.
"""

import numpy as np

from neurospca import (
    chain_operator,
    group_lasso_operator,
    icosphere,
    stack_operators,
    tv_from_mask,
    tv_from_mesh,
)
from neurospca.solvers import conesta, prox_dual, prox_objective

from ._helpers import random_group_operator

STRUCTURES = ("grid2d", "grid3d", "chain", "mesh", "groups", "tv+groups", "random")
STARTS = ("cold", "warm", "hostile")


def make_operator(kind, rng):
    if kind == "grid2d":
        return tv_from_mask(rng.random((5, 6)) < 0.85)
    if kind == "grid3d":
        return tv_from_mask(np.ones((3, 3, 4), dtype=bool))
    if kind == "chain":
        return chain_operator(int(rng.integers(8, 40)))
    if kind == "mesh":
        coords, faces = icosphere(1)
        return tv_from_mesh(coords, faces)
    if kind == "random":
        return random_group_operator(int(rng.integers(10, 40)), int(rng.integers(5, 30)), rng)
    p = 30
    groups = [
        rng.choice(p, size=int(rng.integers(2, 7)), replace=False).tolist() for _ in range(12)
    ]
    op = group_lasso_operator(groups, p)
    if kind == "groups":
        return op
    return stack_operators([tv_from_mask(np.ones((5, 6), dtype=bool)), op], [1.0, 0.5])


def make_case(i, rng, start=None):
    """One random v-step: ``(y, op, a, b, start, warm)``."""
    kind = STRUCTURES[i % len(STRUCTURES)]
    op = make_operator(kind, rng)
    scale = 10.0 ** rng.uniform(-3, 3)
    y = scale * rng.standard_normal(op.n_features)
    # penalties over six decades relative to the scale of y
    a = scale * 10.0 ** rng.uniform(-4, 0.5) * (rng.random() < 0.85)
    b = scale * 10.0 ** rng.uniform(-4, 1.5)
    start = STARTS[i % len(STARTS)] if start is None else start
    return kind, y, op, a, b, start


def warm_starts(start, y, op, a, b, rng):
    """``(w0, v0)`` for the dual solver and CONESTA."""
    if start == "cold":
        return None, None
    if start == "warm":  # the solution of a nearby problem
        r = prox_dual(
            y * (1 + 0.1 * rng.standard_normal(y.size)),
            op,
            a * 1.3,
            b * 0.7,
            tol=1e-4,
            max_iter=2000,
        )
        return r.w, r.v
    # hostile: far outside the dual balls / far from the solution, wrong signs
    s = float(np.abs(y).max()) + 1.0
    w0 = 1e6 * (b + 1.0) * rng.standard_normal(op.n_rows)
    v0 = -1e3 * s * np.sign(y) * rng.random(y.size)
    return w0, v0


def reference(y, op, a, b, use_cvxpy=False):
    """``(P*, err)``: the optimal value to within ``err`` (absolute).

    The dual solver at relative tolerance 1e-12 gives ``P(v_ref)`` with
    ``P(v_ref) - P* <= gap_ref``; with ``use_cvxpy`` the better of that and
    cvxpy's primal value is used.
    """
    r = prox_dual(y, op, a, b, tol=1e-12, max_iter=400_000, gap_every=50)
    best = prox_objective(r.v, y, op, a, b)
    err = r.gap
    if use_cvxpy:
        v = cvxpy_solution(y, op, a, b)
        if v is not None:
            best = min(best, prox_objective(v, y, op, a, b))
    return best, err


def cvxpy_solution(y, op, a, b):
    """cvxpy's (Clarabel, tolerances 1e-12) solution of the prox problem, or None."""
    import warnings

    import cvxpy as cp

    v = cp.Variable(y.size)
    A = op.matrix.tocsr()
    terms = [
        cp.norm(A[op.group_ptr[g] : op.group_ptr[g + 1]] @ v, 2)
        for g in range(op.n_groups)
        if op.group_ptr[g + 1] > op.group_ptr[g]
    ]
    obj = 0.5 * cp.sum_squares(v - y) + a * cp.norm1(v)
    if terms and b > 0:
        obj = obj + b * cp.sum(cp.hstack(terms))
    with warnings.catch_warnings():  # "may be inaccurate": callers bound its error
        warnings.simplefilter("ignore")
        cp.Problem(cp.Minimize(obj)).solve(
            solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
        )
    return None if v.value is None else np.asarray(v.value)


def check_case(i, seed=0, use_cvxpy=False, tols=(1e-2, 1e-4), max_iters=(50, 100_000)):
    """Run both solvers on case ``i``; return a list of result rows.

    Each row: ``dict(case, kind, start, solver, tol, max_iter, gap, tol_abs,
    converged, subopt, slack)`` where ``subopt = P(v) - P(v_ref)`` (a lower
    estimate of the true suboptimality, exact up to ``slack``).
    """
    rng = np.random.default_rng([seed, i])
    kind, y, op, a, b, start = make_case(i, rng)
    w0, v0 = warm_starts(start, y, op, a, b, rng)
    p_ref, err = reference(y, op, a, b, use_cvxpy=use_cvxpy)
    p0 = 0.5 * float(y @ y)
    rows = []
    for tol in tols:
        for max_iter in max_iters:
            for name in ("dual", "conesta"):
                if name == "dual":
                    res = prox_dual(y, op, a, b, tol=tol, w0=w0, max_iter=max_iter)
                else:
                    res = conesta(y, op, a, b, tol=tol, v0=v0, max_iter=max_iter)
                subopt = prox_objective(res.v, y, op, a, b) - p_ref
                rows.append(
                    dict(
                        case=i,
                        kind=kind,
                        start=start,
                        solver=name,
                        tol=tol,
                        max_iter=max_iter,
                        a=a,
                        b=b,
                        gap=res.gap,
                        tol_abs=res.tol_abs,
                        converged=res.converged,
                        subopt=subopt,
                        slack=1e-12 * p0 + 1e-300,
                        ref_err=err,
                    )
                )
    return rows


def assert_pairs_certified(X, U, V, info, op, l1, l2, tv, tol=None):
    """Each returned pair ``(u_k, v_k)`` of ``spca_tv``: ``v_k`` is within its
    reported gap of the exact v-step optimum for ``u_k`` on the deflated data.

    ``X`` is the (centred) data as the fit saw it, taken exactly in float64.
    With ``tol``, also the relative gaps and the ``converged`` flags are checked.
    """
    Xk = np.asarray(X, dtype=np.float64).copy()
    a, b = l1 / (2 * l2), tv / (2 * l2)
    assert np.all(np.any(V != 0, axis=0))
    for k in range(V.shape[1]):
        u, v = U[:, k], V[:, k]
        y = Xk.T @ u / (2 * X.shape[0] * l2)
        p_ref, _ = reference(y, op, a, b)
        subopt = prox_objective(v, y, op, a, b) - p_ref
        gap_prox = info["gaps"][k] / (2 * l2)
        assert subopt <= gap_prox + 1e-10 * float(y @ y)
        if tol is not None:
            assert (
                abs(info["rel_gaps"][k] - gap_prox / (0.5 * float(y @ y)))
                <= 1e-6 * info["rel_gaps"][k]
            )
            if info["converged"][k]:
                assert info["rel_gaps"][k] <= tol
        Xk = Xk - info["d"][k] * np.outer(u, v)
