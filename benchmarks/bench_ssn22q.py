"""Issue 22 round 17: other solvers for the joint finishing's working-set solves
(branch ssn22q).

``--dump SET --out DIR``: one joint fit (``bench_datapath``'s ``cube86`` /
``cube124``, ``SPCATV(3, alpha_rel=1.0, tol=1e-3, random_state=0)``, its
``joint`` setting) with every working-set solve of the finishing
(``_support._finish_working``'s :func:`solve_dual` call) recorded: the
restricted problem, its warm start and tolerance, the fit's iterations; saved
to ``DIR/ws_SET.npz`` (arrays and a JSON header, no pickle).

``--solvers NPZ [--solves I ...] [--methods ...] [--cap S]``: each recorded
solve again, from the same warm start, by

* ``fista``: the fit's solver (:func:`solve_dual`, compiled kernels, no restart,
  the gap every 10 iterations);
* ``spg``: spectral projected gradient on the dual (Barzilai-Borwein steps,
  non-monotone Armijo search over the last 10 values; NumPy);
* ``newton``: projected Newton-CG on the dual ``f(w) = ||soft(y - A^T w, a)||^2 / 2``
  over the balls ``||w_g|| <= b``: the generalised Hessian ``A diag(S) A^T`` (``S``
  the soft threshold's active set), the groups on their sphere whose gradient
  points out moved in their tangent plane with the sphere's curvature, CG to a
  relative residual ``min(0.1, ||r||^0.5)`` (at most 300 products), an Armijo
  search along the projected arc; NumPy;
* ``hybrid``: ``fista`` to 10x the target, then ``newton``;
* ``edge``: ``fista`` to 10x the target (where 98 % of the gap lives on the
  groups touching loadings below 1e-3 of the peak), then ``fista`` on the groups
  within one hop of those loadings only (the other dual variables fixed, as
  :func:`~neurospca.solvers.support.working_set` does; rounds until the full
  pair gap is below 0.7x the target). Its iterations are counted in full
  iterations (an iteration on ``m`` of the ``n`` rows counts ``m / n``);
* ``edgefull``: ``edge``, then ``fista`` on the whole set from where it stopped.

Every method's gap is the pair gap of :func:`~neurospca.solvers.gap.prox_gap`
(``v = soft(y - A^T w, a)``, ``w`` projected), the fit's certificate; the
target is the finishing's (the working set's tolerance is 0.7 of it). Table:
iterations (FISTA / SPG iterations, CG products for Newton: each one product
with ``A`` and one with ``A^T``, as an iteration) / CPU s to 30x, 10x, 3x, 1x,
0.7x the target.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_ssn22q.py --dump cube86 --out /tmp/ws
    OMP_NUM_THREADS=1 python benchmarks/bench_ssn22q.py --solvers /tmp/ws/ws_cube86.npz
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MULTIPLES = (30, 10, 3, 1, 0.7)


def dump(name, out):
    """One joint fit with its working-set solves recorded (module docstring)."""
    import bench_datapath

    from neurospca import SPCATV
    from neurospca.decomposition import _support

    X, op = bench_datapath._load(name, None)
    solve, calls = _support.solve_dual, []

    def recorded(sub, **kw):
        res = solve(sub, **kw)
        group = sub.composite[0]
        calls.append(dict(y=sub.y.copy(), op=group.operator, a=sub.separable.weight))
        calls[-1].update(b=group.weight, kw=dict(kw), n_iter=res.n_iter, gap=res.gap)
        print(f"solve {len(calls) - 1}: {sub.y.size} features, {res.n_iter} iterations")
        return res

    _support.solve_dual = recorded
    t0 = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SPCATV(3, operator=op, random_state=0, tol=1e-3, alpha_rel=1.0).fit(X)
    finally:
        _support.solve_dual = solve
    print(f"fit: {time.process_time() - t0:.2f} CPU s")
    os.makedirs(out, exist_ok=True)
    save_calls(os.path.join(out, f"ws_{name}.npz"), calls)


def save_calls(path, calls):
    """The recorded solves as arrays plus a JSON header (``np.savez``, no pickle)."""
    arrays, header = {}, []
    for i, c in enumerate(calls):
        m = c["op"].matrix.tocsr()
        arrays.update({f"y{i}": c["y"], f"w0{i}": np.asarray(c["kw"]["w0"])})
        arrays.update({f"data{i}": m.data, f"indices{i}": m.indices, f"indptr{i}": m.indptr})
        arrays.update({f"ptr{i}": c["op"].group_ptr, f"a{i}": c["a"], f"b{i}": c["b"]})
        kw = {k: v for k, v in c["kw"].items() if k != "w0"}
        header.append(dict(kw=kw, n_iter=int(c["n_iter"]), gap=float(c["gap"])))
        header[-1].update(shape=list(m.shape), norm2=float(c["op"].norm2))
    np.savez(path, header=json.dumps(header), **arrays)


def load_calls(path):
    """The solves :func:`save_calls` wrote, each with its :class:`GroupOperator`."""
    import scipy.sparse as sp

    from neurospca.operators import GroupOperator

    with np.load(path, allow_pickle=False) as z:
        calls = []
        for i, h in enumerate(json.loads(str(z["header"]))):
            m = sp.csr_matrix((z[f"data{i}"], z[f"indices{i}"], z[f"indptr{i}"]), h["shape"])
            op = GroupOperator(m, z[f"ptr{i}"], h["norm2"])
            kw = dict(h["kw"], w0=z[f"w0{i}"])
            calls.append(dict(y=z[f"y{i}"], op=op, a=z[f"a{i}"][()], b=z[f"b{i}"][()], kw=kw))
            calls[-1].update(n_iter=h["n_iter"], gap=h["gap"])
    return calls


class Dual:
    """The dual of a recorded working-set v-step: ``v(w)``, the projection, the gap."""

    def __init__(self, call):
        self.y, self.a, self.b, self.op = call["y"], call["a"], call["b"], call["op"]
        self.A, self.AT = self.op.matrix, self.op.matrix_t
        self.rg, self.n_groups = self.op.row_group, self.op.n_groups
        self.tol_abs = call["kw"]["tol"] * 0.5 * float(self.y @ self.y)
        self.w0 = self.project(np.asarray(call["kw"]["w0"], dtype=np.float64))

    def norms(self, w):
        return np.sqrt(np.bincount(self.rg, weights=w * w, minlength=self.n_groups))

    def project(self, w):
        n = self.norms(w)[self.rg]
        return np.where(n > self.b, w * (self.b / np.where(n > 0, n, 1.0)), w)

    def primal(self, w):
        t = self.y - self.AT @ w
        return np.sign(t) * np.maximum(np.abs(t) - self.a, 0.0), t

    def gap(self, w):
        from neurospca.solvers.gap import prox_gap

        return float(prox_gap(self.primal(w)[0], self.y, self.op, self.a, self.b, w)[0])


def fista(d, tol_abs, w0, cap):
    """The fit's solver; ``[(iteration, CPU s, gap)]`` and the dual point."""
    from neurospca.solvers import ProxProblem
    from neurospca.solvers.penalties import L1, GroupNorm
    from neurospca.solvers.prox import solve_dual

    problem = ProxProblem(d.y, [L1(d.a), GroupNorm(d.op, d.b)])
    p0 = 0.5 * float(d.y @ d.y)
    t0 = time.process_time()
    res = solve_dual(problem, tol=tol_abs / p0, max_iter=30000, w0=w0, restart=False, n_threads=1)
    per = (time.process_time() - t0) / max(res.n_iter, 1)
    return [(i, i * per, g) for i, g in res.gap_history], res.w


def spg(d, tol_abs, w0, cap, memory=10):
    """Spectral projected gradient on the dual (module docstring)."""
    w = w0
    v = d.primal(w)[0]
    g, values, step = -(d.A @ v), [0.5 * float(v @ v)], 1.0 / d.op.norm2
    hist, t0 = [], time.process_time()
    for it in range(30000):
        if it % 10 == 0:
            hist.append((it, time.process_time() - t0, d.gap(w)))
            if hist[-1][2] <= tol_abs or hist[-1][1] > cap:
                break
        direction = d.project(w - step * g) - w
        slope, ref, lam = float(g @ direction), max(values[-memory:]), 1.0
        while True:
            w_new = w + lam * direction
            v_new = d.primal(w_new)[0]
            if 0.5 * float(v_new @ v_new) <= ref + 1e-4 * lam * slope or lam < 1e-10:
                break
            lam *= 0.5
        g_new = -(d.A @ v_new)
        s, dg = w_new - w, g_new - g
        sy = float(s @ dg)
        step = min(1e3, max(1e-6, float(s @ s) / sy)) if sy > 0 else 1e3
        w, g = w_new, g_new
        values.append(0.5 * float(v_new @ v_new))
    return hist, w


def _newton_direction(d, w, t, v, cg_max):
    """The projected Newton-CG direction at ``w`` (module docstring) and its CG products."""
    b, g = d.b, -(d.A @ v)
    active = (np.abs(t) > d.a).astype(np.float64)
    norms = d.norms(w)
    radial = np.bincount(d.rg, weights=-g * w, minlength=norms.size)
    on = (norms >= b * (1 - 1e-9)) & (radial > 0)
    unit = np.where(on[d.rg], w / b, 0.0)
    curv = np.where(on, radial / b**2, 0.0)[d.rg] + 1e-8

    def tangent(x):
        return x - np.bincount(d.rg, weights=x * unit, minlength=norms.size)[d.rg] * unit

    def hess(x):
        return tangent(d.A @ (active * (d.AT @ tangent(x)))) + curv * tangent(x)

    x, r = np.zeros_like(w), -tangent(g)
    p, rr = r.copy(), float(r @ r)
    stop = min(0.01, np.sqrt(rr)) * rr
    k = 0
    for k in range(cg_max):  # noqa: B007 (k counts the products)
        hp = hess(p)
        alpha = rr / float(p @ hp)
        x, r = x + alpha * p, r - alpha * hp
        rr, rr_old = float(r @ r), rr
        if rr <= stop:
            break
        p = r + (rr / rr_old) * p
    return x, g, k + 1


def newton(d, tol_abs, w0, cap, cg_max=300):
    """Projected Newton-CG on the dual (module docstring)."""
    w, products = w0, 0
    hist, t0 = [], time.process_time()
    while True:
        v, t = d.primal(w)
        hist.append((products, time.process_time() - t0, d.gap(w)))
        if hist[-1][2] <= tol_abs or hist[-1][1] > cap:
            break
        x, g, k = _newton_direction(d, w, t, v, cg_max)
        products += k
        f0, lam = 0.5 * float(v @ v), 1.0
        for _ in range(30):
            w_new = d.project(w + lam * x)
            v_new = d.primal(w_new)[0]
            if 0.5 * float(v_new @ v_new) <= f0 + 1e-4 * float(g @ (w_new - w)):
                break
            lam *= 0.5
        w = w_new
    return hist, w


def hybrid(d, tol_abs, w0, cap):
    """``fista`` to 10x the target, then ``newton``."""
    first, w = fista(d, 10.0 * tol_abs / 0.7, w0, cap)
    more, w = newton(d, tol_abs, w, cap)
    n, s = first[-1][0], first[-1][1]
    return first + [(n + i, s + c, g) for i, c, g in more[1:]], w


def _edge_set(d, feats, w):
    """The v-step on the groups within one hop of ``feats``, the others' ``w`` fixed."""
    from neurospca.operators import GroupOperator
    from neurospca.solvers import ProxProblem
    from neurospca.solvers.penalties import L1, GroupNorm
    from neurospca.solvers.support import _ranges, _rows_touching

    A, ptr = d.A, d.op.group_ptr
    feats = feats.copy()
    feats[A.indices[_ranges(A.indptr, _rows_touching(d.op, feats))]] = True
    rows = _rows_touching(d.op, feats)
    feats[A.indices[_ranges(A.indptr, rows)]] = True
    cols = np.flatnonzero(feats)
    counts = np.diff(ptr)[np.unique(d.rg[rows])]
    fixed = w.copy()
    fixed[rows] = 0.0
    y = np.ascontiguousarray(d.y[cols] - (d.AT @ fixed)[cols])
    sub = GroupOperator(A[rows][:, cols], np.concatenate([[0], np.cumsum(counts)]), d.op.norm2)
    return ProxProblem(y, [L1(d.a), GroupNorm(sub, d.b)]), rows


def edge(d, tol_abs, w0, cap, below=1e-3):
    """``fista`` to 10x the target, then the edge's groups only (module docstring)."""
    from neurospca.solvers.prox import solve_dual

    hist, w = fista(d, 10.0 * tol_abs / 0.7, w0, cap)
    n, t0 = float(hist[-1][0]), time.process_time() - hist[-1][1]
    for _ in range(5):
        v = d.primal(w)[0]
        sub, rows = _edge_set(d, (v != 0) & (np.abs(v) < below * np.abs(v).max()), w)
        p0 = 0.5 * float(sub.y @ sub.y)
        res = solve_dual(
            sub, tol=tol_abs / p0, max_iter=30000, w0=w[rows], restart=False, n_threads=1
        )
        w = w.copy()
        w[rows] = res.w
        n += res.n_iter * rows.size / d.op.n_rows
        hist.append((round(n), time.process_time() - t0, d.gap(w)))
        if hist[-1][2] <= tol_abs:
            break
    return hist, w


def edgefull(d, tol_abs, w0, cap):
    """``edge``, then ``fista`` on the whole set from where it stopped."""
    hist, w = edge(d, tol_abs, w0, cap)
    if hist[-1][2] > tol_abs:
        more, w = fista(d, tol_abs, w, cap)
        n, s = hist[-1][0], hist[-1][1]
        hist += [(n + i, s + c, g) for i, c, g in more[1:]]
    return hist, w


def _firsts(hist, target):
    out = []
    for m in MULTIPLES:
        hit = next(((i, c) for i, c, g in hist if g <= m * target), None)
        out.append("-" if hit is None else f"{hit[0]:,} / {hit[1]:.2f}")
    return out


def solvers(path, which, methods, cap):
    """The table of the module docstring."""
    calls = load_calls(path)
    which = which or [i for i, c in enumerate(calls) if c["n_iter"] > 100]
    print(
        "| solve | features | fit's iterations | method | "
        + " | ".join(f"{m}x" for m in MULTIPLES)
        + " | last (gap / target) |"
    )
    print("|---|---:|---:|---|" + "---:|" * (len(MULTIPLES) + 1))
    for i in which:
        d = Dual(calls[i])
        target = d.tol_abs / 0.7  # the working set's tolerance is 0.7 of the target
        for name in methods:
            hist, _ = globals()[name](d, d.tol_abs, d.w0, cap)
            last = f"{hist[-1][0]:,} / {hist[-1][1]:.2f} ({hist[-1][2] / target:.2g})"
            print(
                f"| {i} | {d.y.size:,} | {calls[i]['n_iter']:,} | {name} | "
                + " | ".join(_firsts(hist, target))
                + f" | {last} |",
                flush=True,
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump")
    ap.add_argument("--out", default=".")
    ap.add_argument("--solvers")
    ap.add_argument("--solves", nargs="+", type=int)
    ap.add_argument("--methods", nargs="+", default=["fista", "spg", "newton", "hybrid", "edge"])
    ap.add_argument("--cap", type=float, default=30.0, help="CPU s per NumPy solve")
    args = ap.parse_args()
    if args.dump:
        dump(args.dump, args.out)
    if args.solvers:
        solvers(args.solvers, args.solves, args.methods, args.cap)


if __name__ == "__main__":
    main()
