"""SPCA-TV: PCA with l1, l2 and total-variation penalties on the loadings.

The math lives in :func:`spca_tv` (the paper's Algorithm 3); :class:`SPCATV`
is a thin scikit-learn estimator around it with the paper's
``(alpha, l1_ratio, tv_ratio)`` parametrisation.
"""

import logging
import numbers
import time
import warnings
from dataclasses import replace

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import (
    _check_feature_names, _check_n_features, check_is_fitted, validate_data,
)

from ._base import (
    Integral, Interval, LoadingsTransformerMixin, Real, StrOptions, _fit_context,
    reconstruction_error,
)
from ._data import DataOperator, cached_subspace, is_out_of_core
from .._utils.validation import (
    check_data,
    check_n_components,
    check_nonneg,
    check_not_constant,
    check_real,
)
from ..operators import GroupOperator, chain_operator, check_operator
from ..solvers import conesta, prox_dual
from ..solvers.gap import primal_certificate, prox_gap

logger = logging.getLogger("neurospca")

__all__ = ["SPCATV", "spca_tv", "weights_from_ratios", "ratios_from_weights"]

_SOLVERS = ("dual", "conesta")


def weights_from_ratios(alpha, l1_ratio, tv_ratio):
    """The paper's parametrisation (section III) to raw weights.

    ``alpha = l1 + l2 + tv``, ``l1_ratio = l1 / alpha``, ``tv_ratio = tv / alpha``.

    Returns
    -------
    l1, l2, tv : float

    Raises
    ------
    ValueError
        If ``alpha <= 0``, a ratio is negative, or ``l1_ratio + tv_ratio >= 1``
        (``l2`` must be > 0 for the duality gap).
    """
    alpha = check_nonneg(alpha, "alpha", strict=True)
    l1_ratio = check_nonneg(l1_ratio, "l1_ratio")
    tv_ratio = check_nonneg(tv_ratio, "tv_ratio")
    if l1_ratio + tv_ratio >= 1.0:
        raise ValueError(
            f"l1_ratio + tv_ratio must be < 1 (got {l1_ratio} + {tv_ratio} = "
            f"{l1_ratio + tv_ratio}): the l2 weight alpha * (1 - l1_ratio - tv_ratio) "
            "must be > 0 for the duality gap to exist."
        )
    return alpha * l1_ratio, alpha * (1.0 - l1_ratio - tv_ratio), alpha * tv_ratio


def ratios_from_weights(l1, l2, tv):
    """Raw ``(l1, l2, tv)`` weights to ``(alpha, l1_ratio, tv_ratio)``."""
    l1 = check_nonneg(l1, "l1")
    l2 = check_nonneg(l2, "l2", strict=True)
    tv = check_nonneg(tv, "tv")
    alpha = l1 + l2 + tv
    return alpha, l1 / alpha, tv / alpha


def _check_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return int(value)


class _Deflated:
    """``X_k = X - sum_j d_j u_j v_j^T`` applied implicitly (memory O(N + P) per
    component) on a :class:`~neurospca.decomposition._data.DataOperator`."""

    def __init__(self, op):
        self.op = op
        self.U, self.V, self.d = [], [], []
        self.sqnorm = op.sqnorm()

    def _coef(self, vecs, x):
        return np.array([d_j * float(w @ x) for w, d_j in zip(vecs, self.d)])

    def _comb(self, vecs, coef, out):
        for w, c in zip(vecs, coef):
            out -= c * w
        return out

    def dot(self, v):
        """``X_k v``."""
        return self._comb(self.U, self._coef(self.V, v), self.op.matvec(v))

    def tdot(self, u, exact=False):
        """``X_k^T u`` (``exact``: float64 accumulation for float32 data)."""
        return self._comb(self.V, self._coef(self.U, u), self.op.rmatvec(u, exact=exact))

    def gram(self, v):
        """``z = X_k v`` and ``X_k^T z`` in one pass over the data."""
        c = self._comb(self.U, self._coef(self.V, v), np.zeros(self.op.shape[0]))
        z, g = self.op.fused(v, -c)
        return z, self._comb(self.V, self._coef(self.U, z), g)

    def deflate(self, u, v, d):
        self.sqnorm = max(self.sqnorm - d * d * float(v @ v), 0.0)
        self.U.append(u)
        self.V.append(v)
        self.d.append(d)


def _as_operator(X, name="X", min_samples=2):
    """``X`` as a scanned :class:`DataOperator` (an in-memory array, a
    ``numpy.memmap`` or a ``dask.array``; float32 kept float32)."""
    if isinstance(X, DataOperator):
        return X
    if is_out_of_core(X):
        check_real(X, name)
        op = DataOperator(X, name=name)
    else:
        if hasattr(X, "toarray") or hasattr(X, "tocsr"):
            raise TypeError(f"{name} must be a dense array; sparse input is not supported.")
        check_real(X, name)
        try:
            X = np.asarray(X)
            X = X.astype(X.dtype if X.dtype in (np.float32, np.float64) else np.float64,
                         copy=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric array: {exc}") from None
        op = DataOperator(X, name=name)
    return op.scan(min_samples=min_samples)


def _say(msg, *args):
    """Progress line: an INFO record on ``"neurospca"``; printed to stdout too
    when nothing is attached to that logger (scikit-learn-style ``verbose``)."""
    logger.info(msg, *args)
    if not logger.handlers:
        print("[SPCATV] " + msg % args, flush=True)


def _ritz_start(defl, basis):
    """The best right singular vector of ``X_k`` within the span of
    ``basis = (R, Xc R)`` (top singular subspace of the centred data; no pass
    over the data). Sign: largest-magnitude entry positive."""
    R, XR = basis
    M = XR.copy()
    for u_j, v_j, d_j in zip(defl.U, defl.V, defl.d):
        M -= d_j * np.outer(u_j, v_j @ R)
    w = np.linalg.svd(M, full_matrices=False)[2][0]
    v = R @ w
    j = int(np.argmax(np.abs(v)))
    return -v if v[j] < 0 else v


#: Up to this many samples (float64, in memory) the start ``u`` comes from the
#: exact eigendecomposition of the small N x N Gram matrix (at most 8 MB and a
#: fraction of a second): cheaper than Lanczos passes over the data there.
GRAM_MAX_SAMPLES = 1000


def _uses_gram(op):
    return op.dtype == np.float64 and op.kind == "array" and op.shape[0] <= GRAM_MAX_SAMPLES


def _centred_gram(op):
    """``Xc Xc^T`` of a small in-memory operator (cached on it)."""
    if getattr(op, "_gram0", None) is None:
        X = op.X
        m = np.zeros(op.shape[1]) if op.mean is None else op.mean
        Xm = X @ m
        G = X @ X.T
        G -= Xm[:, None]
        G -= Xm[None, :]
        G += float(m @ m)
        op._gram0 = G
    return op._gram0


def _init_gram(defl):
    """``u`` = leading eigenvector of ``X_k X_k^T`` for small N, and ``X_k^T u``.

    ``X_k X_k^T = G0 - sum_j d_j (z_j u_j^T + u_j z_j^T)
    + sum_ij d_i d_j (v_i . v_j) u_i u_j^T`` with ``G0 = Xc Xc^T`` (computed
    once, centring applied as rank-one corrections) and ``z_j = Xc v_j``.
    """
    op = defl.op
    G = _centred_gram(op).copy()
    U, V, d = defl.U, defl.V, defl.d
    for u_j, v_j, d_j in zip(U, V, d):
        z_j = op.matvec(v_j)
        G -= d_j * (np.outer(z_j, u_j) + np.outer(u_j, z_j))
    for u_i, v_i, d_i in zip(U, V, d):
        for u_j, v_j, d_j in zip(U, V, d):
            G += d_i * d_j * float(v_i @ v_j) * np.outer(u_i, u_j)
    u = np.linalg.eigh(0.5 * (G + G.T))[1][:, -1]
    g = defl.tdot(u)
    j = int(np.argmax(np.abs(g)))
    return (-u, -g) if g[j] < 0 else (u, g)


def _init_svd(defl, basis):
    """``u`` = leading left singular vector of ``X_k`` and ``X_k^T u``.

    Small float64 data in memory (N <= :data:`GRAM_MAX_SAMPLES`): the exact
    eigendecomposition of the N x N Gram matrix (:func:`_init_gram`). Otherwise
    no Gram matrix: from the Ritz vector of the data's top singular subspace,
    float64 data run a Lanczos iteration (ARPACK ``eigsh`` on ``v -> X_k^T X_k
    v``, one pass over the data per product) to 1e-10; float32 data run power
    iterations (one fused pass each) until ``v`` moves by less than 1e-4.
    """
    from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

    if _uses_gram(defl.op):
        return _init_gram(defl)
    p = defl.op.shape[1]
    v0 = _ritz_start(defl, basis)
    if not np.any(v0):
        v0 = np.random.RandomState(0).uniform(0.5, 1.5, p)
    if defl.op.dtype == np.float64:
        if p < 3:
            G = np.column_stack([defl.gram(e)[1] for e in np.eye(p)])
            v = np.linalg.eigh(0.5 * (G + G.T))[1][:, -1]
        else:
            lin = LinearOperator((p, p), matvec=lambda x: defl.gram(np.ravel(x))[1],
                                 dtype=np.float64)
            try:
                v = eigsh(lin, k=1, which="LA", v0=v0, tol=1e-10,
                          maxiter=max(300, p))[1][:, 0]
            except ArpackNoConvergence as exc:
                vecs = exc.eigenvectors
                v = vecs[:, -1] if vecs is not None and vecs.size else v0
            except ArpackError:
                v = v0
        j = int(np.argmax(np.abs(v)))
        v = -v if v[j] < 0 else v
        u = defl.dot(v)
        nrm = np.linalg.norm(u)
        u = u / nrm if nrm > 0 else u
        return u, defl.tdot(u)
    v = v0 / np.linalg.norm(v0)
    for _ in range(100):
        z, g = defl.gram(v)
        nz, ng = np.linalg.norm(z), np.linalg.norm(g)
        if nz == 0.0 or ng == 0.0:
            return z, g
        v_new = g / ng
        done = np.linalg.norm(v_new - v) < 1e-4
        if done:
            break
        v = v_new
    return z / nz, g / nz


def _init_u(defl, init, rng, basis):
    """Start ``u`` and ``X_k^T u``."""
    if init == "random":
        u = rng.standard_normal(defl.op.shape[0])
        nrm = np.linalg.norm(u)
        u = u / nrm if nrm > 0 else u
        return u, defl.tdot(u)
    return _init_svd(defl, basis)


def _certify_pair(y, v, w, res, operator, a, b, tol, solver, max_inner_iter,
                  gap_every, kernels):
    """Certify the returned pair: the v-step gap of ``v`` for the FINAL ``u``.

    The last v-step was solved for the previous ``u``; the u-step then moved
    ``u``. The exact Fenchel gap of ``v`` for the prox problem of the final
    ``u`` is evaluated (any dual point gives a bound: the last ``w`` and the
    candidates of :func:`neurospca.solvers.gap.primal_certificate`); if it
    exceeds ``tol * P_u(0)``, the v-step is re-solved for that ``u`` (warm
    started) and its ``v`` replaces the old one.

    Returns
    -------
    v, res, y, extra_iter
        ``res.gap`` / ``res.converged`` then certify ``(u, v)``; ``y`` is
        ``X_k^T u / (2 N l2)`` computed in float64 by the caller.
    """
    tol_abs = tol * 0.5 * float(y @ y)
    gap, obj = primal_certificate(v, y, operator, a, b, (1e-3, 1e-6))
    if w is not None:
        gap = min(gap, prox_gap(v, y, operator, a, b, w)[0])
    if gap <= tol_abs or not np.any(v):
        return v, replace(res, v=v, gap=gap, tol_abs=tol_abs, converged=bool(gap <= tol_abs),
                          objective=obj), y, 0
    if solver == "dual":
        new = prox_dual(y, operator, a, b, tol=tol, max_iter=max_inner_iter, w0=w,
                        gap_every=gap_every, kernels=kernels, check_input=False)
    else:
        new = conesta(y, operator, a, b, tol=tol, v0=v, max_iter=max_inner_iter,
                      gap_every=gap_every, kernels=kernels, check_input=False)
    if not np.any(new.v):  # keep a non-zero component; report its own bound
        return v, replace(res, v=v, gap=gap, tol_abs=tol_abs, converged=False,
                          objective=obj), y, new.n_iter
    return new.v, new, y, new.n_iter


def spca_tv(X, n_components, *, l1, l2, tv, operator=None, tol=1e-3, max_iter=100,
            solver="dual", max_inner_iter=None, init="svd", random_state=None,
            gap_every=10, kernels="cython", verbose=0, u0=None, w0=None):
    """SPCA-TV by alternating minimisation and deflation (paper Algorithm 3).

    Component ``k`` solves, on the deflated matrix ``X_k`` (``X_0 = X``),

    .. math::

        \\min_{\\|u\\|_2 \\le 1, v} -\\frac1N u^T X_k v + \\lambda_2 \\|v\\|_2^2
        + \\lambda_1 \\|v\\|_1 + \\lambda \\sum_g \\|A_g v\\|_2

    alternating ``u = X_k v / ||X_k v||`` (eq. 5) with the v-step, until the
    relative change of ``||X_k - d u v^T||_F`` (eq. 26, least-squares ``d``) is
    at most ``tol``; then ``X_{k+1} = X_k - d u v^T`` with
    ``d = u^T X_k v / ||v||^2``.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask.array of shape (n_samples, n_features)
        Data, used as given (centre it first; :class:`SPCATV` does, implicitly).
        float32 is kept float32 (products in float32, sums, v-steps and
        certificates in float64); a memmap is streamed from disk by row
        blocks and a dask array is reduced block by block as dask tasks,
        never materialised.
    n_components : int
    l1, l2, tv : float
        The weights ``lambda_1 >= 0``, ``lambda_2 > 0``, ``lambda >= 0``.
    operator : GroupOperator, optional
        The structure ``A``; default a 1-D chain over the features.
    tol : float, default=1e-3
        Scale-free tolerance of the v-steps (certified gap at most ``tol``
        times the prox objective at 0) and of the outer loop (eq. 26).
    max_iter : int, default=100
        Maximum alternations per component.
    solver : {"dual", "conesta"}, default="dual"
        The v-step solver: the exact-prox dual method, or the paper's CONESTA.
    max_inner_iter : int, optional
        Iteration cap of one v-step (default 10,000 for "dual", 100,000 for
        "conesta").
    init : {"svd", "random"}, default="svd"
        Initial ``u``: leading left singular vector of ``X_k``, or random.
    random_state : int, RandomState or None
        Used by ``init="random"``.
    gap_every : int, default=10
        Evaluate the certified gap every ``gap_every`` inner iterations.
    kernels : {"cython", "numpy"}, default="cython"
    verbose : int, default=0
        When > 0, log progress at INFO level (logger ``"neurospca"``); the
        lines are also printed to stdout unless a handler is attached to that
        logger.
    u0 : ndarray of shape (n_samples, n_components), optional
        Warm start: initial ``u`` of each component (a zero column falls back
        to ``init``), e.g. the ``U`` of a fit at neighbouring penalties.
    w0 : list of ndarray of shape (operator.n_rows,) or None, optional
        Warm start of the dual variables of each component's v-steps
        (``solver="dual"``), e.g. ``info["w"]`` of a neighbouring fit.

    Returns
    -------
    U : ndarray of shape (n_samples, n_components)
        Unit-norm components ``u_k``.
    V : ndarray of shape (n_features, n_components)
        The raw loadings ``v_k`` of eq. 3 (not renormalised).
    info : dict
        ``d`` (rank-one scales), ``gaps`` (certified v-step gaps of the
        RETURNED pairs, in units of ``f``, eq. 3: ``f_{u_k}(v_k) - min_v
        f_{u_k}(v) <= gaps[k]`` with ``X_k^T u_k`` from the returned ``u_k``;
        the last v-step is re-solved for the final ``u_k`` when needed; see
        docs/certificates.rst), ``rel_gaps`` (gap over the prox objective at 0),
        ``n_iter`` (alternations), ``n_inner_iter`` (solver iterations),
        ``gap_history`` (per component, ``(cumulative inner iteration, gap in f
        units)``), ``rel_gap_history`` (the same gaps over the prox objective
        at 0 of their v-step, the quantity compared with ``tol``),
        ``mu_history`` (CONESTA), ``converged``, ``time``, ``w`` (final dual
        variables per component, None for CONESTA; see ``w0``).
    """
    op = _as_operator(X)
    n_samples, n_features = op.shape
    n_components = check_n_components(n_components, n_samples, n_features)
    l1 = check_nonneg(l1, "l1")
    l2 = check_nonneg(l2, "l2", strict=True)
    tv = check_nonneg(tv, "tv")
    tol = check_nonneg(tol, "tol", strict=True)
    max_iter = _check_int(max_iter, "max_iter")
    gap_every = _check_int(gap_every, "gap_every")
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}.")
    if init not in ("svd", "random"):
        raise ValueError(f"init must be 'svd' or 'random', got {init!r}.")
    if max_inner_iter is None:
        max_inner_iter = 10_000 if solver == "dual" else 100_000
    max_inner_iter = _check_int(max_inner_iter, "max_inner_iter")
    if operator is None:
        operator = chain_operator(n_features)
    check_operator(operator, n_features)
    if (op.is_constant() if op.mean is not None else op.is_zero()):
        check_not_constant(np.zeros(1))  # raises the constant-data error
    rng = check_random_state(random_state)
    if u0 is not None:
        u0 = np.asarray(u0, dtype=np.float64)
        if u0.shape != (n_samples, n_components) or not np.all(np.isfinite(u0)):
            raise ValueError(f"u0 must be a finite array of shape ({n_samples}, "
                             f"{n_components}), got shape {u0.shape}.")
    if w0 is not None and len(w0) != n_components:
        raise ValueError(f"w0 must hold one dual vector (or None) per component "
                         f"({n_components}), got {len(w0)}.")

    a, b = l1 / (2.0 * l2), tv / (2.0 * l2)
    scale_y = 1.0 / (2.0 * n_samples * l2)
    # |y_j| = |X_j^T u| / (2 N l2) <= ||X_j|| / (2 N l2): the loadings' scale
    y_bound = float(np.sqrt(op.col_sqnorms().max())) * scale_y
    if not y_bound < 1e150:
        raise ValueError(
            f"l2={l2:.3g} (alpha * (1 - l1_ratio - tv_ratio) in SPCATV) is too small for "
            f"data of this scale: the loadings ||X_j|| / (2 N l2) reach {y_bound:.1e} "
            "and their squares overflow. Increase alpha (or use SPCATV(alpha=None) "
            "for penalties relative to the data)."
        )
    defl = _Deflated(op)
    basis = None
    # float32 data: products in float32, the certificate's y in float64
    exact_y = op.dtype != np.float64
    U = np.zeros((n_samples, n_components))
    V = np.zeros((n_features, n_components))
    info = {key: [] for key in ("d", "gaps", "rel_gaps", "n_iter", "n_inner_iter",
                                "gap_history", "rel_gap_history", "mu_history",
                                "converged", "time", "w")}
    zero_from = None
    for k in range(n_components):
        t0 = time.perf_counter()
        if u0 is not None and np.any(u0[:, k]):
            u = u0[:, k] / np.linalg.norm(u0[:, k])
            g = defl.tdot(u)
        else:  # g = X_k^T u; then X_k^T X_k v / ||X_k v|| from the fused pass
            if init == "svd" and basis is None and not _uses_gram(op):
                basis = cached_subspace(op, n_components)[1:]
            u, g = _init_u(defl, init, rng, basis)
        v = np.zeros(n_features)
        w = None if w0 is None else w0[k]
        Xv = None
        resid_prev, change = np.sqrt(defl.sqnorm), np.inf
        history, rel_history, mu_hist, inner, outer_ok = [], [], [], 0, False
        for it in range(1, max_iter + 1):
            y = g * scale_y
            if solver == "dual":
                res = prox_dual(y, operator, a, b, tol=tol, max_iter=max_inner_iter,
                                w0=w, gap_every=gap_every, kernels=kernels,
                                check_input=False)
                w = res.w
            else:
                if it == 1:  # v^0 of Algorithm 2: the l1-only prox, not the trivial 0
                    v = np.sign(y) * np.maximum(np.abs(y) - a, 0.0)
                res = conesta(y, operator, a, b, tol=tol, v0=v, max_iter=max_inner_iter,
                              gap_every=gap_every, kernels=kernels, check_input=False)
                mu_hist.extend((inner + i, mu, 2.0 * l2 * e) for i, mu, e in res.mu_history)
            history.extend((inner + i, 2.0 * l2 * g_) for i, g_ in res.gap_history)
            p0 = 0.5 * float(y @ y)
            rel_history.extend((inner + i, g_ / p0 if p0 > 0 else 0.0)
                               for i, g_ in res.gap_history)
            inner += res.n_iter
            vstep_ok = res.converged
            v = res.v
            vv = float(v @ v)
            if vv == 0.0:
                nrm = 0.0
                break
            Xv, XtXv = defl.gram(v)
            nrm = float(np.linalg.norm(Xv))
            if nrm == 0.0:
                break
            u = Xv / nrm
            g = XtXv / nrm
            resid = np.sqrt(max(defl.sqnorm - nrm * nrm / vv, 0.0))
            # eq. 26 compares two iterates: the first v-step has no predecessor
            # (v^0 = 0 would compare against ||X_k||), so it never stops the loop.
            change = abs(resid - resid_prev) / resid if resid > 0 else 0.0
            if it == 1:
                change = np.inf
            resid_prev = resid
            if verbose:
                _say("component %d, iteration %d: residual %.6g, change %.2e, "
                     "gap %.2e", k, it, resid, change, res.gap)
            if change <= tol:
                outer_ok = True
                break
        if nrm > 0.0 and vv > 0.0:  # certify the returned (u, v), not (u_prev, v)
            y = (defl.tdot(u, exact=True) if exact_y else g) * scale_y
            v_new, res, y, extra = _certify_pair(y, v, w, res, operator, a, b, tol, solver,
                                                 max_inner_iter, gap_every, kernels)
            inner += extra
            vstep_ok = res.converged
            if solver == "dual":
                w = res.w
            history.append((inner, 2.0 * l2 * res.gap))
            p0 = 0.5 * float(y @ y)
            rel_history.append((inner, res.gap / p0 if p0 > 0 else 0.0))
            if v_new is not v:
                v, Xv = v_new, defl.dot(v_new)
            vv = float(v @ v)
            nrm = float(u @ Xv)
        if nrm == 0.0 or vv == 0.0:
            zero_from = k
            warnings.warn(
                f"component {k} is identically zero: the penalties are too strong "
                f"for this data (l1={l1:.3g}, tv={tv:.3g}); decrease alpha. The "
                "remaining components are set to zero.",
                UserWarning,
            )
            break
        if not vstep_ok:
            warnings.warn(
                f"component {k}: the v-step reached max_inner_iter={max_inner_iter} "
                f"with certified gap {res.gap:.3e} > tol * P(0) = {res.tol_abs:.3e} "
                f"(tol={tol}); increase max_inner_iter or tol.",
                ConvergenceWarning,
            )
        if not outer_ok:
            warnings.warn(
                f"component {k}: the alternating minimisation did not reach "
                f"tol={tol} in max_iter={max_iter} iterations (last relative change "
                f"{change:.3e}); increase max_iter.",
                ConvergenceWarning,
            )
        # least-squares scale: d = u^T X_k v / ||v||^2 with u = X_k v / ||X_k v||
        d = nrm / vv
        defl.deflate(u, v, d)
        U[:, k], V[:, k] = u, v
        info["d"].append(d)
        info["gaps"].append(2.0 * l2 * res.gap)
        info["rel_gaps"].append(res.gap / (0.5 * float(y @ y)))
        info["n_iter"].append(it)
        info["n_inner_iter"].append(inner)
        info["gap_history"].append(history)
        info["rel_gap_history"].append(rel_history)
        info["w"].append(w if solver == "dual" else None)
        info["mu_history"].append(mu_hist)
        info["converged"].append(outer_ok and res.converged)
        info["time"].append(time.perf_counter() - t0)
        if verbose:
            _say("component %d done: %d alternations, %d solver iterations, "
                 "gap %.3e, %.2f s", k, it, inner, info["gaps"][-1], info["time"][-1])
    if zero_from is not None:  # not computed: NaN gaps, no iterations
        for k in range(zero_from, n_components):
            for key, value in (("d", 0.0), ("gaps", np.nan), ("rel_gaps", np.nan),
                               ("n_iter", 0), ("n_inner_iter", 0), ("gap_history", []),
                               ("rel_gap_history", []), ("mu_history", []),
                               ("converged", False), ("time", 0.0), ("w", None)):
                info[key].append(value)
    info = {key: (val if key in ("gap_history", "rel_gap_history", "mu_history", "w")
                  else np.asarray(val)) for key, val in info.items()}
    return U, V, info


#: The path of relative penalties tried by ``alpha_rel="auto"`` (weakest first).
AUTO_ALPHA_REL_PATH = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
#: ``alpha_rel="auto"`` stops at the first path point where every component has
#: at most this fraction of non-zero loadings.
AUTO_MAX_NONZERO = 0.25
#: Above this many features, ``operator=None`` (a 1-D chain) warns.
CHAIN_WARNING_FEATURES = 500


class SPCATV(ClassNamePrefixFeaturesOutMixin, LoadingsTransformerMixin, BaseEstimator):
    """Sparse and structured PCA with the TV-elastic-net penalty (SPCA-TV).

    Each component solves (de Pierrefeu et al., eq. 3), on the deflated data,

    .. math::

        \\min_{\\|u\\|_2 \\le 1, v} -\\frac1N u^T X v + \\lambda_2 \\|v\\|_2^2
        + \\lambda_1 \\|v\\|_1 + \\lambda \\sum_g \\|A_g v\\|_2

    with ``alpha = lambda_1 + lambda_2 + lambda``,
    ``l1_ratio = lambda_1 / alpha`` and ``tv_ratio = lambda / alpha``.
    ``tv_ratio = 0`` gives ElasticNet PCA; ``l1_ratio = tv_ratio = 0`` the PCA
    directions.

    Parameters
    ----------
    n_components : int, default=3
    alpha : float or None, default=None
        Absolute total penalty weight (> 0), the paper's parametrisation. None
        (the default) makes the penalties relative to the data:
        ``alpha_ = alpha_rel_ * l1_max_`` with ``l1_max_ = max_j ||Xc_j||_2 / N``
        of the centred training data, so the same settings suit maps of any
        scale (``lambda_1 / l1_max_`` is a threshold on the correlation of a
        feature with the component's scores, for features of the largest
        norm). For fixed scores the normalised loadings depend only on
        ``lambda_1`` and ``lambda``; ``lambda_2`` scales them.
    l1_ratio : float, default=0.05
    tv_ratio : float, default=0.1
        ``l1_ratio + tv_ratio < 1``.
    alpha_rel : "auto" or float, default="auto"
        ``alpha`` in units of ``l1_max_``, used when ``alpha`` is None. "auto"
        walks the path :data:`AUTO_ALPHA_REL_PATH` (0.5, 1, 2, ..., 16;
        warm-started) and keeps the weakest penalty for which every component
        has at most a quarter of its loadings non-zero (without emptying a
        component; if a component vanishes first, the last fit with all
        components non-empty is kept). The value used is ``alpha_rel_``.
    operator : GroupOperator, optional
        The structure, e.g. from :func:`neurospca.tv_from_mask` or
        :func:`neurospca.tv_from_mesh`. Default: a 1-D chain over the features
        in column order (warns above 500 features).
    tol : float, default=1e-3
        Scale-free tolerance of the certified v-step gaps (``rel_gaps_``) and
        of the outer loop.
    max_iter : int, default=100
        Maximum alternations per component.
    solver : {"dual", "conesta"}, default="dual"
    max_inner_iter : int, optional
    init : {"svd", "random"}, default="svd"
    random_state : int, RandomState or None
    verbose : int, default=0
        Print progress when > 0 (also INFO records on the ``"neurospca"``
        logger; when a handler is attached there, nothing is printed).
    warm_start : bool, default=False
        Start from the previous fit's scores and dual variables (same data
        shape), e.g. along a grid of penalties.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Unit-norm loading vectors (zero rows for vanished components); each
        component's largest-magnitude loading is positive.
    loadings_ : ndarray of shape (n_features, n_components)
        The raw ``v_k`` of eq. 3 (same signs as ``components_``).
    scores_ : ndarray of shape (n_samples, n_components)
        The unit-norm ``u_k`` (signs flipped with the loadings).
    alpha_ : float
        The absolute ``alpha`` used (``alpha``, or ``alpha_rel_ * l1_max_``).
    alpha_rel_ : float
        ``alpha_ / l1_max_``.
    auto_path_ : list of dict
        With ``alpha_rel="auto"``: the path points tried (``alpha_rel``,
        ``nonzero_fraction`` per component); else empty.
    l1_max_ : float
        ``max_j ||Xc_j||_2 / N`` of the centred training data.
    mean_ : ndarray of shape (n_features,)
    singular_values_ : ndarray of shape (n_components,)
        ``d_k ||v_k||``, the rank-one scales for unit loadings.
    dual_gaps_ : ndarray of shape (n_components,)
        Certified v-step gaps of the returned pairs ``(u_k, v_k)`` (``u_k`` =
        ``scores_[:, k]``, ``v_k`` = ``loadings_[:, k]``), in units of the
        objective of eq. 3: ``v_k`` is within ``dual_gaps_[k]`` of the best
        ``v`` for that ``u_k``. The alternation itself is non-convex and not
        certified.
    rel_gaps_ : ndarray of shape (n_components,)
        The same gaps over the v-step's prox objective at 0: compared with
        ``tol``.
    rel_gap_history_ : list of list of (int, float)
        Per component, ``(cumulative inner iteration, relative gap)``.
    n_iter_ : int
        Largest number of alternations over the components.
    n_iter_per_component_ : ndarray of shape (n_components,)
    n_inner_iter_ : ndarray of shape (n_components,)
    gap_history_ : list of list of (int, float)
    explained_variance_ : ndarray of shape (n_components,)
        Adjusted variance (QR of the scores, Zou et al. 2006).
    explained_variance_ratio_ : ndarray of shape (n_components,)
    pca_explained_variance_ratio_ : ndarray of shape (n_components,)
        Plain PCA's explained variance ratios of the same centred data (top
        ``n_components``), for comparison.
    n_features_in_ : int
    fit_time_ : float

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import SPCATV
    >>> X = np.random.default_rng(0).standard_normal((20, 30))
    >>> model = SPCATV(n_components=2, alpha=0.1).fit(X)
    >>> model.components_.shape
    (2, 30)
    """

    def __init__(self, n_components=3, *, alpha=None, l1_ratio=0.05, tv_ratio=0.1,
                 alpha_rel="auto", operator=None, tol=1e-3, max_iter=100, solver="dual",
                 max_inner_iter=None, init="svd", random_state=None, verbose=0,
                 warm_start=False):
        self.n_components = n_components
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.tv_ratio = tv_ratio
        self.alpha_rel = alpha_rel
        self.operator = operator
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.max_inner_iter = max_inner_iter
        self.init = init
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="neither"), None],
        "alpha_rel": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "l1_ratio": [Interval(Real, 0, 1, closed="left")],
        "tv_ratio": [Interval(Real, 0, 1, closed="left")],
        "operator": [GroupOperator, None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions(set(_SOLVERS))],
        "max_inner_iter": [Interval(Integral, 1, None, closed="left"), None],
        "init": [StrOptions({"svd", "random"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
    }

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _run(self, Xc, n_components, alpha, u0, w0):
        """One spca_tv fit at absolute ``alpha``; warnings recorded, not shown."""
        l1, l2, tv = weights_from_ratios(alpha, self.l1_ratio, self.tv_ratio)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            U, V, info = spca_tv(
                Xc, n_components, l1=l1, l2=l2, tv=tv, operator=self.operator,
                tol=self.tol, max_iter=self.max_iter, solver=self.solver,
                max_inner_iter=self.max_inner_iter, init=self.init,
                random_state=self.random_state, verbose=self.verbose, u0=u0, w0=w0,
            )
        return U, V, info, caught

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model on ``X`` (n_samples, n_features). ``y`` is ignored.

        ``X`` may be an array (float32 kept), a ``numpy.memmap`` or a
        ``dask.array`` chunked by rows: it is never copied, centred or
        converted as a whole (see :func:`spca_tv`).
        """
        warm = (self.warm_start and hasattr(self, "scores_")
                and getattr(self, "n_features_in_", None) == np.shape(X)[-1])
        op = _validated_operator(self, X, reset=True, min_samples=2)
        X = op
        n_components = check_n_components(self.n_components, *X.shape)
        if self.operator is None and X.shape[1] > CHAIN_WARNING_FEATURES:
            warnings.warn(
                f"operator is None: the TV penalty is a 1-D chain linking feature j to "
                f"feature j+1 in column order, which is spatial structure only if the "
                f"{X.shape[1]} columns are ordered along a line. For brain maps pass "
                "operator=neurospca.tv_from_mask(mask) (volumes) or "
                "neurospca.tv_from_mesh(coords, faces) / tv_from_hemispheres (surfaces).",
                UserWarning,
            )
        t0 = time.perf_counter()
        # implicit centring: X - 1 mean_^T inside the products, never a copy
        self.mean_ = op.stats["mean"].copy()
        op.centre(self.mean_)
        if op.is_constant():
            check_not_constant(np.zeros(1))  # raises the constant-data error
        self.l1_max_ = float(np.sqrt(op.col_sqnorms().max())) / X.shape[0]
        Xc = op
        u0 = w0 = None
        if warm and self.scores_.shape == (X.shape[0], n_components):
            u0 = self.scores_
            w0 = getattr(self, "_duals", None)
            if w0 is not None and (self.solver != "dual" or len(w0) != n_components):
                w0 = None
        self.auto_path_ = []
        if self.alpha is not None:
            alphas = [float(self.alpha)]
        elif isinstance(self.alpha_rel, str):  # "auto"
            alphas = [a * self.l1_max_ for a in AUTO_ALPHA_REL_PATH]
        else:
            alphas = [float(self.alpha_rel) * self.l1_max_]
        chosen = None
        for alpha in alphas:
            U, V, info, caught = self._run(Xc, n_components, alpha, u0, w0)
            if len(alphas) == 1:
                chosen = (alpha, U, V, info, caught)
                break
            nz = np.mean(V != 0, axis=0)
            self.auto_path_.append({"alpha_rel": alpha / self.l1_max_,
                                    "nonzero_fraction": nz})
            if self.verbose:
                _say("alpha_rel=%g: non-zero fractions %s", alpha / self.l1_max_,
                     np.array2string(nz, precision=3))
            if np.any(nz == 0):  # too strong: keep the last fit with no empty component
                chosen = chosen or (alpha, U, V, info, caught)
                break
            chosen = (alpha, U, V, info, caught)
            if np.all(nz <= AUTO_MAX_NONZERO):
                break
            u0, w0 = U, info["w"] if self.solver == "dual" else None
        alpha, U, V, info, caught = chosen
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self.alpha_ = float(alpha)
        self.alpha_rel_ = self.alpha_ / self.l1_max_
        # deterministic signs: each component's largest-|loading| positive
        for k in range(V.shape[1]):
            j = int(np.argmax(np.abs(V[:, k])))
            if V[j, k] < 0:
                V[:, k], U[:, k] = -V[:, k], -U[:, k]
                if info["w"][k] is not None:
                    info["w"][k] = -info["w"][k]
        norms = np.linalg.norm(V, axis=0)
        safe = np.where(norms > 0, norms, 1.0)
        self.loadings_ = V
        self.components_ = (V / safe).T
        self.scores_ = U
        if self.warm_start:  # dual variables for the next warm start (not saved)
            self._duals = info["w"]
        elif hasattr(self, "_duals"):
            del self._duals
        self.singular_values_ = info["d"] * norms
        self.dual_gaps_ = info["gaps"]
        self.rel_gaps_ = info["rel_gaps"]
        self.rel_gap_history_ = info["rel_gap_history"]
        self.n_iter_per_component_ = info["n_iter"]
        self.n_iter_ = int(np.max(info["n_iter"]))
        self.n_inner_iter_ = info["n_inner_iter"]
        self.gap_history_ = info["gap_history"]
        self.mu_history_ = info["mu_history"]
        self.converged_ = info["converged"]
        self.component_times_ = info["time"]
        self.explained_variance_, self.explained_variance_ratio_ = _adjusted_variance(
            Xc, self.components_
        )
        self.pca_explained_variance_ratio_ = _pca_variance_ratio(Xc, n_components)
        self.fit_time_ = time.perf_counter() - t0
        return self

    def score(self, X, y=None):
        """Fraction of the variance of ``X`` explained by the components.

        ``1 - ||Xc - Xc Q^T Q||_F^2 / ||Xc||_F^2`` with ``Xc = X - mean_``
        (training mean) and ``Q`` an orthonormal basis of the loadings' span:
        the held-out criterion of :func:`neurospca.model_selection.select_penalty`
        and the default score of ``GridSearchCV`` / ``cross_val_score``
        (higher is better; compare settings with it together with stability,
        since it alone always prefers the weakest penalty).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        float
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=False)
        X = check_data(X, min_samples=1)
        total = float(np.sum((X - self.mean_) ** 2))
        err = reconstruction_error(X, self.components_, self.mean_) ** 2
        if total == 0.0:
            return 1.0
        return 1.0 - err / total


def _validated_operator(estimator, X, reset, min_samples):
    """scikit-learn's input bookkeeping, then a scanned :class:`DataOperator`.

    NumPy arrays go through ``validate_data`` (float32 kept); memmaps and dask
    arrays are never converted: their shape and feature names are recorded
    and they are validated block by block during the one scan.
    """
    if is_out_of_core(X):
        check_real(X, "X")
        if X.ndim != 2:
            raise ValueError(
                f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D."
            )
        _check_feature_names(estimator, X, reset=reset)
        _check_n_features(estimator, X, reset=reset)
        return _as_operator(X, min_samples=min_samples)
    X = validate_data(estimator, X, reset=reset, dtype=(np.float64, np.float32),
                      ensure_min_samples=min_samples, ensure_all_finite=False)
    return _as_operator(X, min_samples=min_samples)


def _pca_variance_ratio(op, n_components):
    """Plain PCA's top explained variance ratios (exact from the Gram matrix for
    small in-memory data, else randomized SVD with a fixed seed)."""
    total = op.sqnorm()
    if _uses_gram(op):
        s2 = np.clip(np.linalg.eigvalsh(_centred_gram(op))[::-1][:n_components], 0, None)
    else:
        s2 = cached_subspace(op, n_components)[0] ** 2
    return s2 / total if total > 0 else np.zeros(n_components)


def _adjusted_variance(op, components):
    """Adjusted explained variance of non-orthogonal components (Zou et al.).

    The scores ``Z = Xc C^T`` (``Xc`` the centred data of ``op``) are
    orthogonalised by QR; component k explains ``R_kk^2 / (N - 1)``.
    """
    n = op.shape[0]
    Z = op.matmat(components.T)
    R = np.linalg.qr(Z, mode="r")
    var = np.abs(np.diag(R)) ** 2 / max(n - 1, 1)
    total = op.sqnorm() / max(n - 1, 1)
    return var, var / total if total > 0 else np.zeros_like(var)
