"""A joint fit's back-fitting sweep in one pass over ``X`` (issue 22 round 15).

A sweep (:func:`~neurospca.decomposition._joint._sweep`) refits each component
``k`` on the residual of the others, ``R_k = Xc - sum_{j != k} d_j u_j v_j^T``,
in order (Gauss-Seidel): a v-step from ``R_k^T u_k`` (no pass: ``Xc^T u_k`` is
kept from the last pass), then a u-step ``u_k = R_k v_k / ||R_k v_k||`` with
``R_k^T u_k`` (one fused pass), then the certify step. So a sweep reads ``X``
once per component, one pass after the other: the v-step of ``k + 1`` uses the
new ``d_k u_k``.

It needs ``d_k u_k`` only through the numbers ``d_k (u_k . w)`` for ``w =
u_{k+1}, ...``, and ``d_k u_k = R_k v_k / ||v_k||^2`` (``d_k = ||R_k v_k|| /
||v_k||^2``), so ``d_k (u_k . w) = (v_k . R_k^T w) / ||v_k||^2`` with ``R_k^T
w = Xc^T w - sum_{j != k} v_j d_j (u_j . w)``: known without the pass, since
``Xc^T w`` of the old scores is kept. Here every v-step of the sweep is solved
first, in order, from those numbers; then ONE pass gives ``Xc v_k`` and ``Xc^T
Xc v_k`` of every new loading (:func:`fused_many`, each product bit for bit its
own fused pass); then each component's u-step and certify step run in order on
the true residual, from those products. The iteration is the same as the
sweep's; the numbers differ by rounding (the v-steps' inputs are the same sums
in another order). When a certify step re-solves a loading (its ``Xc v`` is
then a pass of its own) the later components' v-steps are stale: they are
solved again on the new state and share the next pass. When a kept product is
missing or a component is empty the rest of the sweep is one pass per
component, as before.
"""

import time
from functools import partial

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils.routed_warnings import recorded
from ._alternation import (
    _INFO_NOT_COMPUTED,
    _certify_step,
    _deflate_step,
    _finish_info,
    _Pair,
    _record,
    _residual_change,
    _Settings,
    _v_step,
    _vstep_dtype,
    _warn_unsettled,
)
from ._data import uses_gram
from ._joint_certify import _others
from ._joint_starts import checks_ahead
from ._lockstep import in_one_pass

#: Also on the Gram path (small float64 data in memory): measured on 30 trust
#: instances (float64, issue 22 round 15) the components moved by at most
#: 1.5e-7 of their certified radii, in 5-25 % fewer passes; False keeps those
#: fits bit for bit as before. Off (lead, at the merge): a small float64 half
#: fit at alpha_rel 4 of tests/test_split_search_settled.py got 3 non-zero
#: loadings of 900 where it was empty, and on the Gram path the passes are not
#: what the fit waits for (cube124's 54 -> 30 passes cost +2 % CPU).
ON_GRAM_PATH = False

_SETTINGS = ("l2", "pieces", "solver", "weights_msg", "tol", "max_iter", "max_inner_iter")


def fused_many(op, vs):
    """``[op.fused(v) for v in vs]`` in ONE pass over ``X``, each bit for bit its
    own (:func:`~._lockstep.in_one_pass`: each product's block function and
    accumulator on the same row blocks, no thread)."""
    return in_one_pass(op, [partial(op.fused, v) for v in vs])


#: The sweep looks ahead to the restart checks when its v-steps moved the
#: loadings by at most this many times the change that settles the sweeps
#: (``cache.want_checks``): the sweep will likely settle, and the checks follow.
AHEAD_SETTLE = 2.0


def _settles(V, Vn, cache):
    """Whether a whole sweep to ``Vn`` (its v-steps, before its pass) from ``V``
    likely settles (:data:`AHEAD_SETTLE`): only then it looks ahead."""
    settle = getattr(cache, "want_checks", 0.0)
    if settle <= 0.0 or Vn.shape != V.shape:
        return False
    return float(np.linalg.norm(Vn - V)) <= AHEAD_SETTLE * settle * float(np.linalg.norm(Vn))


def _with_ahead(op, vs, ahead, cache):
    """:func:`fused_many` of ``vs``, and in the same pass ``Xc w``, ``Xc^T Xc
    w`` of the restart checks' directions ``ahead = {k: w}``
    (:func:`~._joint_starts.checks_ahead`), kept as ``cache.ahead``."""
    if not ahead:
        return fused_many(op, vs)
    W = np.column_stack(list(ahead.values()))
    calls = [partial(op.fused, v) for v in vs] + [partial(op.gram, W)]
    *products, (XW, AW) = in_one_pass(op, calls)
    cache.ahead = {k: (W[:, i], XW[:, i], AW[:, i]) for i, k in enumerate(ahead)}
    return products


def _settings(op, kw):
    """The :class:`_Settings` of a refit (``max_iter=1``, as :func:`_refit`'s;
    ``moved`` as the joint fit asks: :data:`~._joint.MOVED_GAPS`)."""
    return _Settings(
        *(kw[key] for key in _SETTINGS),
        kw["gap_every"], kw["kernels"], 0, kw["n_threads"],
        scale_y=1.0 / (2.0 * op.shape[0] * kw["l2"]), moved=kw.get("moved", False),
    )  # fmt: skip


def _vsteps(op, U, V, d, xtu, w, kw, first):
    """Phase 1: the v-step of every component from ``first`` on, in order, each
    on the residual of the others as the sweep leaves them, with no pass
    (``U``, ``V``, ``d``: the state, refitted before ``first``; ``xtu[k] =
    Xc^T u_k``). Returns the :class:`_Pair` of each and the loadings, or None
    when a loading vanished."""
    K, cfg = U.shape[1], _settings(op, kw)
    Vn, pairs = V.copy(), []
    for k in range(first, K):
        u = U[:, k] / np.linalg.norm(U[:, k])
        c = {j: d[j] * float(U[:, j] @ u) for j in range(K) if d[j] != 0.0}
        for j in range(first, k):  # refitted here: d_j u_j = R_j v_j / ||v_j||^2
            zu = float(Vn[:, j] @ xtu[k])
            zu -= sum(float((Vn if i < j else V)[:, i] @ Vn[:, j]) * c[i] for i in c if i != j)
            c[j] = zu / float(Vn[:, j] @ Vn[:, j])
        g = xtu[k].copy()
        for j in sorted(c):
            if j != k:
                g -= c[j] * Vn[:, j]
        pair = _Pair(u=u, g=g, state=w[k], resid_prev=0.0)
        with recorded() as pair.caught:
            _v_step(cfg, pair, _vstep_dtype(op, kw["solver"], kw["tol"]))
        pair.it = 1
        if not np.any(pair.v):
            return None
        Vn[:, k] = pair.v
        pairs.append(pair)
    return pairs, Vn


def _u_step_served(defl, pair, products, cache):
    """The u-step of ``pair`` (:func:`~._alternation._u_step`) on ``defl`` from
    ``products = (Xc v, Xc^T Xc v)`` of its loading, with no pass; the products
    kept in ``cache`` as the fused pass keeps them. False when it cannot."""
    xtus = [cache.rmatvec_unit(u_j) for u_j in defl.U]
    if any(x is None for x in xtus):
        return False
    v, (z0, g0) = pair.v, products
    cv = defl._coef(defl.V, v)
    z = defl._subtract_combination(defl.U, cv, z0.copy())
    xtz = defl._subtract_combination(xtus, cv, g0.copy())
    pair.vv, pair.nrm = float(v @ v), float(np.linalg.norm(z))
    if pair.vv == 0.0 or pair.nrm == 0.0:
        return False
    pair.Xv, pair.XtXv = z, defl._subtract_combination(defl.V, defl._coef(defl.U, z), xtz.copy())
    pair.u, pair.g = z / pair.nrm, pair.XtXv / pair.nrm
    cache._put(cache.xv, v, z0)
    cache._put(cache.av, v, g0)
    cache._put(cache.xtu, pair.u, xtz / pair.nrm)
    return True


def _finish(op, defl, pair, kw):
    """The rest of a refit after its u-step (as :func:`~._alternation._alternate`
    with one component and ``max_iter=1``): certify step, warnings, record.
    Returns ``(u, v, info, warnings, re-solved)``."""
    cfg, v = _settings(op, kw), pair.v
    t0 = time.perf_counter()
    with recorded() as caught:
        _residual_change(defl, pair, 1)
        _certify_step(cfg, defl, pair)
        _warn_unsettled(cfg, pair, 0)
    U1, V1 = np.zeros((op.shape[0], 1)), np.zeros((op.shape[1], 1))
    d = _deflate_step(defl, pair, U1, V1, 0)
    info = {key: [] for key in _INFO_NOT_COMPUTED}
    _record(info, cfg, pair, d, time.perf_counter() - t0, 0)
    return U1[:, 0], V1[:, 0], _finish_info(info, None, 1), pair.caught + caught, pair.v is not v


def one_pass_sweep(op, sqnorm, U, V, d, Z, info, kw, merge):
    """A sweep (:func:`~._joint._sweep`) with one pass over ``X`` for all its
    u-steps; ``U``, ``V``, ``d``, ``Z``, ``info`` updated in place as the
    sweep updates them (``merge``: its ``_merge_info``). After a certify step
    that re-solved a loading, the later components' v-steps are solved again
    and share the next pass.

    Returns ``(n, warnings)``: the components ``:n`` refitted (the sweep refits
    the others one pass each; 0 when the one pass does not apply) and their
    v-step warnings.
    """
    cache, K = kw.get("products"), U.shape[1]
    gram = uses_gram(op) and not ON_GRAM_PATH
    if cache is None or gram or K < 2 or not np.all(np.any(V, axis=0)):
        return 0, []
    caught, first = [], 0
    while first < K:
        xtu = {k: cache.rmatvec_unit(U[:, k] / np.linalg.norm(U[:, k])) for k in range(first, K)}
        got = (
            None
            if any(x is None for x in xtu.values())
            else _vsteps(op, U, V, d, xtu, info["w"], kw, first)
        )
        if got is None:
            return first, caught
        pairs, Vn = got
        ahead = checks_ahead(op, sqnorm, U, V, d, Z, cache) if _settles(V, Vn, cache) else {}
        products = _with_ahead(op, [Vn[:, k] for k in range(first, K)], ahead, cache)
        for k, pair, prod in zip(range(first, K), pairs, products, strict=True):
            defl = _others(op, sqnorm, U, V, d, Z, k, cache)
            if not _u_step_served(defl, pair, prod, cache):
                return k, caught
            u, v, new, warned, resolved = _finish(op, defl, pair, kw)
            caught.extend(w for w in warned if _vstep_warning(w))
            U[:, k], V[:, k], d[k] = u, v, new["d"][0]
            Z[:, k] = cache.matvec(op, v)
            merge(info, k, new)
            first = k + 1
            if resolved:  # the later v-steps used the loading before its re-solve
                break
    return K, caught


def _vstep_warning(w):
    """A v-step's ConvergenceWarning (the ones a sweep passes on)."""
    return issubclass(w.category, ConvergenceWarning) and "v-step" in str(w.message)
