"""The exact-prox dual method on the compiled kernels (l1 plus one group norm).

:func:`dual_fast` serves :func:`~neurospca.solvers.prox.solve_dual` when the
problem has that form: the difference kernel (gap fused into the iterations,
threads chosen per block) when every row of the operator is a scaled
difference, the CSR kernel otherwise, and the exact solution when the group
norm vanishes.
"""

import logging
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils.scratch import release, scratch
from .._utils.turns import lend
from ._base import (
    SolverResult,
    ThreadChooser,
    csr_threads_for,
    difference_arrays,
    difference_halos,
    locality_order,
    n_chunks_for,
    operator_arrays,
)
from ._precision import Float64Check
from ._precision import certified as _certified
from ._precision import stop_rule as _stop_rule

logger = logging.getLogger("neurospca.solvers.prox")


def _trivial_solution(K, y, operator, l1, group, tol_abs):
    """The exact solution ``soft(y, l1)`` when the group norm vanishes (no group
    weight, no rows or a zero operator): gap 0, in float64 (float32 ``y``:
    the exact gap of the rounded ``v``)."""
    v = np.empty_like(y)
    K.soft_threshold(y, l1, v)
    if y.dtype != np.float64:  # v rounded to float32: its exact gap, in float64
        return Float64Check(K, y, operator, l1, group, tol_abs, 0).result(
            SolverResult(
                v=v,
                gap=0.0,
                tol_abs=tol_abs,
                n_iter=0,
                converged=True,
                gap_history=[(0, 0.0)],
                w=np.zeros(operator.n_rows, y.dtype),
            )
        )
    obj = 0.5 * float(np.sum((v - y) ** 2)) + l1 * float(np.abs(v).sum())
    if group:
        obj += group * operator.value(v)
    return SolverResult(
        v=v,
        gap=0.0,
        tol_abs=tol_abs,
        n_iter=0,
        converged=True,
        gap_history=[(0, 0.0)],
        w=np.zeros(operator.n_rows),
        objective=obj,
    )


def _difference_form(operator, n_threads, kernel_path):
    """The difference kernel's arrays of ``operator`` (in its locality order), or
    None for the CSR kernel; a ValueError when ``kernel_path="difference"`` is
    asked of an operator without that form."""
    diff = None
    if kernel_path != "csr":
        diff = difference_arrays(operator, n_chunks_for(operator.n_rows, n_threads), reorder=True)
    if diff is None and kernel_path == "difference":
        raise ValueError(
            "kernel_path='difference' needs an operator whose rows are all "
            "c * (v[tail] - v[head]) (operator.difference_form() is None); "
            "use kernel_path='auto' or 'csr'."
        )
    return diff


def dual_fast(
    K, y, operator, l1, group, tol_abs, max_iter, w0, gap_every, restart, n_threads, kernel_path
):
    """The dual method on the compiled kernels (l1 plus one group norm)."""
    if group == 0.0 or operator.n_rows == 0 or operator.norm2 == 0.0:
        return _trivial_solution(K, y, operator, l1, group, tol_abs)
    diff = _difference_form(operator, n_threads, kernel_path)
    if diff is not None:
        return _prox_dual_difference(
            K, y, operator, diff, l1, group, tol_abs, max_iter, w0, gap_every, restart, n_threads
        )
    return _prox_dual_csr(
        K, y, operator, l1, group, tol_abs, max_iter, w0, gap_every, restart, n_threads
    )


def _prox_dual_csr(K, y, operator, l1, group, tol_abs, max_iter, w0, gap_every, restart, n_threads):
    """:func:`prox_dual` on the CSR kernel, the gap checked every ``gap_every``
    iterations."""
    v = scratch(y.shape, y.dtype)
    A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr = operator_arrays(operator, y.dtype)
    n_rows = operator.n_rows
    w = start_w(K, w0, n_rows, gptr, group, y.dtype)
    stop = _stop_rule(K, y, operator, l1, group, tol_abs, max_iter)
    ATw = np.empty_like(y)
    K.csr_matvec(At_ip, At_ix, At_d, w, ATw)
    w_old, ATw_old = _copy(w), _copy(ATw)
    vq = scratch(y.shape, y.dtype)
    step = 1.0 / operator.norm2
    t, n_iter, history = 1.0, 0, []
    while True:
        primal, dual, _ = K.dual_gap_terms(A_ip, A_ix, A_d, gptr, y, ATw, l1, group, v)
        gap = record_gap(primal - dual, n_iter, history, 6)
        if gap == np.inf:
            break
        if stop(gap, n_iter, w, history):
            break
        n_run = min(gap_every, max_iter - n_iter)
        t, _ = lend(K.dual_iterations)(
            n_run,
            A_ip,
            A_ix,
            A_d,
            At_ip,
            At_ix,
            At_d,
            gptr,
            y,
            l1,
            group,
            step,
            w,
            w_old,
            ATw,
            ATw_old,
            vq,
            t,
            restart,
            csr_threads_for(n_rows, n_threads),
        )
        n_iter += n_run
    logger.debug("prox_dual: %d iterations, gap %.3e (tol %.3e)", n_iter, gap, tol_abs)
    release(w_old, ATw_old, vq)
    return _certified(
        stop,
        SolverResult(
            v=v,
            gap=gap,
            tol_abs=tol_abs,
            n_iter=n_iter,
            converged=gap <= tol_abs,
            gap_history=history,
            w=w,
            objective=primal,
            atw=(ATw, None) if y.dtype == np.float64 else None,
        ),
    )


def start_w(K, w0, n_rows, gptr, group, dtype=np.float64, rows=None):
    """The starting dual point (of ``dtype``, a scratch array): zeros, or ``w0``
    (``w0[rows]`` when ``rows`` is given: a locality order) projected onto the
    dual balls."""
    if w0 is None:
        return _zeros(n_rows, dtype)
    w0 = np.asarray(w0)
    if w0.shape != (n_rows,):
        raise ValueError(f"w0 must have shape ({n_rows},), got {w0.shape}.")
    w = scratch(n_rows, dtype)
    if rows is None:
        np.copyto(w, w0)
    elif w0.dtype == w.dtype:
        np.take(w0, rows, out=w, mode="clip")
    else:  # cast after the gather: float32 <-> float64 give the same bits either way
        np.copyto(w, w0[rows])
    K.project_groups(w, gptr, group)
    return w


def _copy(a):
    """A copy of ``a`` in a scratch array."""
    out = scratch(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def record_gap(gap, n_iter, history, stacklevel):
    """Append ``(n_iter, gap)``; a non-finite gap is never certified (inf, warning)."""
    if not np.isfinite(gap):  # overflow or a corrupt state
        history.append((n_iter, np.inf))
        warnings.warn(
            f"prox_dual: the duality gap became non-finite after {n_iter} "
            "iterations (overflow); the result is not certified.",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )
        return np.inf
    gap = max(gap, 0.0)
    history.append((n_iter, gap))
    return gap


def _to_locality_order(y, order):
    """``y`` permuted into the operator's locality order (a scratch array)."""
    out = scratch(y.shape, y.dtype)
    np.take(y, order.features, out=out, mode="clip")
    return out


def _scatter_buffers(operator, chunk_ptr, n_features, dtype):
    """Where the chunks of the difference kernel scatter ``A^T w``: full buffers
    for chunks ``c > 0``, or halos near the chunk boundaries when the operator
    has them; returns ``(bufs, halo_args)``."""
    halo = difference_halos(operator, chunk_ptr.size - 1, reorder=True)
    if halo is None:  # chunk c > 0 scatters into a full buffer of its own
        return _zeros((chunk_ptr.size - 2, n_features), dtype), ()
    # into A^T w, and near its boundaries into halos
    return np.zeros((0, n_features), dtype), (halo[0], halo[1], _zeros(halo[2], dtype))


def _zeros(shape, dtype):
    """Zeros in a scratch array."""
    out = scratch(shape, dtype)
    out.fill(0)
    return out


def _prox_dual_difference(
    K, y, operator, diff, l1, group, tol_abs, max_iter, w0, gap_every, restart, n_threads
):
    """:func:`prox_dual` on the difference kernel, gap fused into the iterations.

    The kernel computes the gap at the ``w`` an iteration starts from during
    that iteration, so the state runs one iteration ahead of the certified
    pair ``(w_old, vw)``; gaps are checked at the same iterations as the CSR
    path (0, ``gap_every``, ...) and the same pair is returned.

    ``diff`` holds the arrays of the operator in its locality order
    (:func:`~neurospca.solvers._base.locality_order`) when it has one: ``y``
    and ``w0`` are permuted into it here, and ``v`` and ``w`` back into the
    user's order on return. Its scratch arrays come from and go back to
    :func:`~neurospca._utils.scratch.scratch` (kept between the solves of a fit).

    Length: one loop around one kernel call whose 25 arguments take a line each.
    """
    heads, tails, scale, heads_are_groups, gptr, chunk_ptr = diff
    n_rows, P = operator.n_rows, y.size
    stop = _stop_rule(K, y, operator, l1, group, tol_abs, max_iter)  # in the user's order
    order = locality_order(operator)  # diff is in it (difference_arrays(reorder=True))
    if order is not None:
        y = _to_locality_order(y, order)
    w = start_w(K, w0, n_rows, gptr, group, y.dtype, None if order is None else order.rows)
    ATw = scratch(y.shape, y.dtype)
    K.diff_rmatvec(heads, tails, scale, w, ATw)
    w_old, ATw_old = _copy(w), _copy(ATw)
    bufs, halo_args = _scatter_buffers(operator, chunk_ptr, P, y.dtype)
    vq, vw = scratch(y.shape, y.dtype), scratch(y.shape, y.dtype)
    step = 1.0 / operator.norm2
    t, n_iter, history = 1.0, 0, []
    n_run, first = 1, True  # the first call certifies the starting w
    chooser = ThreadChooser(
        (n_rows, P, chunk_ptr.size - 1, y.dtype.char), min(n_threads, chunk_ptr.size - 1)
    )
    while True:
        threads = chooser.choose_threads()
        start = time.perf_counter()
        t, _, swapped, primal, dual, _ = lend(K.diff_dual_iterations)(
            n_run,
            heads,
            tails,
            scale,
            heads_are_groups,
            gptr,
            chunk_ptr,
            y,
            l1,
            group,
            step,
            w,
            w_old,
            ATw,
            ATw_old,
            bufs,
            vq,
            vw,
            t,
            restart,
            True,
            threads,
            *halo_args,
        )
        chooser.record(threads, time.perf_counter() - start, n_run)
        if swapped:
            ATw, ATw_old = ATw_old, ATw
            w, w_old = w_old, w
        n_iter += 0 if first else n_run
        first = False
        gap = record_gap(primal - dual, n_iter, history, 6)
        if gap == np.inf:
            break
        w_check = w_old
        if order is not None and y.dtype != np.float64:  # checked in the user's order
            w_check = _user_order(w_old, order.rows)
        if stop(gap, n_iter, w_check, history):
            break
        n_run = min(gap_every, max_iter - n_iter)
    logger.debug("prox_dual: %d iterations, gap %.3e (tol %.3e)", n_iter, gap, tol_abs)
    atw = (ATw_old, None if order is None else order.features)  # A^T w_old, kept
    left = [w, ATw, vq, bufs, *halo_args[2:]]  # not returned: kept for the next solve
    if order is not None:
        left += [y, vw, w_old]
        vw, w_old = _user_order(vw, order.features), _user_order(w_old, order.rows)
    release(*left)
    return _certified(
        stop,
        SolverResult(
            v=vw,
            gap=gap,
            tol_abs=tol_abs,
            n_iter=n_iter,
            converged=gap <= tol_abs,
            gap_history=history,
            w=w_old,
            objective=primal,
            atw=atw if y.dtype == np.float64 else None,
        ),
    )


def _user_order(a, order):
    """``a`` (in a locality order) back in the user's order: ``out[order] = a``."""
    out = scratch(a.shape, a.dtype)
    out[order] = a
    return out
