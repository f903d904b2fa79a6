"""The alternating minimisation of SPCA-TV (paper Algorithm 3), as a private worker.

:func:`_spca_tv` is called by :func:`neurospca.spca_tv` and
:meth:`neurospca.SPCATV.fit` once they have validated their inputs; it never
re-checks them. The v-steps go through the solver registry of
:mod:`neurospca.solvers` (one interface for every solver) on a
:class:`~neurospca.solvers.ProxProblem` built from the penalty pieces.
"""

import logging
import time
import warnings
from contextlib import nullcontext
from dataclasses import replace

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..solvers import ProxProblem
from ._data import GRAM_MAX_SAMPLES, _single_threaded_blas, uses_gram  # noqa: F401
from ._deflated import _Deflated
from ._subspace import cached_subspace

logger = logging.getLogger("neurospca")


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
    R, XR = basis[0], basis[1]
    M = XR.copy()
    for u_j, v_j, d_j in zip(defl.U, defl.V, defl.d):
        M -= d_j * np.outer(u_j, v_j @ R)
    w = np.linalg.svd(M, full_matrices=False)[2][0]
    v = R @ w
    j = int(np.argmax(np.abs(v)))
    return -v if v[j] < 0 else v


_uses_gram = uses_gram


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
    XV = defl.XV if defl.known() else [op.matvec(v_j) for v_j in V]
    for u_j, z_j, d_j in zip(U, XV, d):
        G -= d_j * (np.outer(z_j, u_j) + np.outer(u_j, z_j))
    for u_i, v_i, d_i in zip(U, V, d):
        for u_j, v_j, d_j in zip(U, V, d):
            G += d_i * d_j * float(v_i @ v_j) * np.outer(u_i, u_j)
    u = np.linalg.eigh(0.5 * (G + G.T))[1][:, -1]
    g = defl.rmatvec(u)
    j = int(np.argmax(np.abs(g)))
    return (-u, -g) if g[j] < 0 else (u, g)


def _init_svd(defl, basis):
    """``u`` = leading left singular vector of ``X_k`` and ``X_k^T u``.

    Small float64 data in memory (N <= :data:`GRAM_MAX_SAMPLES`): the exact
    eigendecomposition of the N x N Gram matrix (:func:`_init_gram`).
    Otherwise no Gram matrix: Rayleigh-Ritz for ``X_k^T X_k`` on the span of
    the data's top singular subspace and the components already removed
    (:meth:`_Deflated.deflated_basis`: no pass over the data), then, while a
    power step from the Ritz vector ``v`` would move it by
    :data:`START_TOL` or more, the residual direction is added to the span
    (one fused pass each: a Davidson iteration, which converges faster than
    the power steps it replaces).
    """
    if _uses_gram(defl.op):
        return _init_gram(defl)
    start = defl.deflated_basis(basis)
    if start is None:  # products of the removed components unknown: one pass
        v = _ritz_start(defl, basis) if basis is not None else None
        if v is None or not np.any(v):
            v = np.random.RandomState(0).uniform(0.5, 1.5, defl.op.shape[1])
        v = v / np.linalg.norm(v)
        z, g = defl.gram(v)
        start = (v[:, None], z[:, None], g[:, None])
    Q, XQ, AQ = start
    for _ in range(START_MAX_ITER):
        H = Q.T @ AQ
        theta, Wr = np.linalg.eigh(0.5 * (H + H.T))
        Wr = Wr[:, ::-1][:, :START_BLOCK]
        v, z, g = Q @ Wr[:, 0], XQ @ Wr[:, 0], AQ @ Wr[:, 0]
        nz, ng = np.linalg.norm(z), np.linalg.norm(g)
        if nz == 0.0 or ng == 0.0:
            return z, g
        if np.linalg.norm(g / ng - v) < START_TOL:
            break
        # the residuals of the best Ritz pairs, orthogonal to the span: one pass
        Rv = AQ @ Wr - (Q @ Wr) * theta[::-1][: Wr.shape[1]]
        for _ in range(2):
            Rv -= Q @ (Q.T @ Rv)
        Rv, T = np.linalg.qr(Rv)
        Rv = Rv[:, np.abs(np.diag(T)) > 1e-12 * max(np.abs(T).max(), 1e-300)]
        if Rv.shape[1] == 0:
            break
        ZR, GR = defl.gram_block(Rv)
        Q, XQ, AQ = (np.column_stack([M, x]) for M, x in ((Q, Rv), (XQ, ZR), (AQ, GR)))
    j = int(np.argmax(np.abs(v)))  # sign: largest-magnitude entry of v positive
    s = -1.0 if v[j] < 0 else 1.0
    return s * z / nz, s * g / nz


#: The start's power iterations stop when ``v`` moves by less than this.
START_TOL = 1e-3
#: Most Davidson iterations (passes) of a start.
START_MAX_ITER = 100
#: Ritz residuals added to the start's span per pass.
START_BLOCK = 1


def _init_u(defl, init, rng, basis):
    """Start ``u`` and ``X_k^T u``."""
    if init == "random":
        u = rng.standard_normal(defl.op.shape[0])
        nrm = np.linalg.norm(u)
        u = u / nrm if nrm > 0 else u
        return u, defl.rmatvec(u)
    return _init_svd(defl, basis)


def _certify_pair(
    problem, v, state, res, solver, tol, max_inner_iter, gap_every, kernels, n_threads
):
    """Certify the returned pair: the v-step gap of ``v`` for the FINAL ``u``.

    The last v-step was solved for the previous ``u``; the u-step then moved
    ``u``. The exact Fenchel gap of ``v`` for the prox problem of the final
    ``u`` (``problem``) is evaluated (any dual point gives a bound: the
    solver's last state and the candidates of
    :meth:`~neurospca.solvers.ProxProblem.certificate`); if it exceeds
    ``tol * P_u(0)``, the v-step is re-solved for that ``u`` (warm started)
    and its ``v`` replaces the old one. With float32 data the v-steps ran in
    float32: ``state`` is then a float32 dual point, which the float64
    certificate and the float64 re-solve cast to float64.

    Returns
    -------
    v, res, extra_iter
        ``res.gap`` / ``res.converged`` then certify ``(u, v)``.
    """
    y = problem.y
    tol_abs = tol * 0.5 * float(y @ y)
    gap, obj = problem.certificate(v, state, (1e-3, 1e-6), tol_abs=tol_abs)
    if gap <= tol_abs or not np.any(v):
        return (
            v,
            replace(
                res, v=v, gap=gap, tol_abs=tol_abs, converged=bool(gap <= tol_abs), objective=obj
            ),
            0,
        )
    new = solver.solve(
        problem,
        tol=tol,
        max_iter=max_inner_iter,
        gap_every=gap_every,
        kernels=kernels,
        v=v,
        state=state,
        n_threads=n_threads,
    )
    if not np.any(new.v):  # keep a non-zero component; report its own bound
        return (
            v,
            replace(
                res, v=v, gap=gap, tol_abs=tol_abs, converged=False, objective=obj, state=state
            ),
            new.n_iter,
        )
    return new.v, new, new.n_iter


def _vstep_blas(n_threads):
    """BLAS on one thread while a fit runs its kernels on ``n_threads > 1``
    OpenMP threads, so the two pools never both claim the cores; no change
    otherwise. (Measured: an fMRI-sized fit took 0.49 s with the hold around
    the v-steps only and 0.32 s with it around the whole fit, as the BLAS
    threads woken between v-steps spun beside the kernel's:
    benchmarks/RESULTS.md, issue 14.)"""
    return _single_threaded_blas() if n_threads > 1 else nullcontext()


#: Below this tol the v-steps of float32 data run in float64: a float32 solve
#: certifies gaps down to 1e-9 to 1e-6 of ``||y||^2 / 2`` depending on the
#: problem (:func:`neurospca.solvers.prox_dual`), and near that floor its
#: iterations and the alternation's stopping test lose more than they gain.
FLOAT32_VSTEP_MIN_TOL = 1e-5


def _vstep(solver, y, pieces, vdtype, tol, max_inner_iter, gap_every, kernels, v, state, n_threads):
    """One v-step at ``y`` (float64), solved in ``vdtype``; returns ``(res, vdtype)``.

    A float32 v-step that stops short of ``tol`` before ``max_inner_iter``
    met its float32 floor (certified in float64, see
    :func:`neurospca.solvers.prox_dual`): it is continued in float64 from its
    dual point, and the later v-steps of the fit run in float64 too.
    """
    kw = dict(
        tol=tol,
        max_iter=max_inner_iter,
        gap_every=gap_every,
        kernels=kernels,
        v=v,
        n_threads=n_threads,
    )
    if vdtype == np.float64:
        return solver.solve(ProxProblem(y, pieces), state=state, **kw), vdtype
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="prox_dual: a float32 solve stopped", category=ConvergenceWarning
        )
        res = solver.solve(ProxProblem(y.astype(vdtype), pieces), state=state, **kw)
    if res.converged or res.n_iter >= max_inner_iter:
        return res, vdtype
    kw["max_iter"] = max_inner_iter - res.n_iter
    more = solver.solve(ProxProblem(y, pieces), state=res.state, **kw)
    more.gap_history = res.gap_history + [(res.n_iter + i, g) for i, g in more.gap_history]
    more.n_iter += res.n_iter
    return more, np.float64


def _check_l2_scale(op, l2):
    """Raise when ``l2`` is too small for the data: the loadings would overflow.

    A check of the public boundary (:func:`neurospca.spca_tv`, ``SPCATV.fit``)
    that :func:`_spca_tv` relies on.
    """
    # |y_j| = |X_j^T u| / (2 N l2) <= ||X_j|| / (2 N l2): the loadings' scale
    y_bound = float(np.sqrt(op.col_sqnorms().max())) / (2.0 * op.shape[0] * l2)
    if not y_bound < 1e150:
        raise ValueError(
            f"l2={l2:.3g} (alpha * (1 - l1_ratio - tv_ratio) in SPCATV) is too small for "
            f"data of this scale: the loadings ||X_j|| / (2 N l2) reach {y_bound:.1e} "
            "and their squares overflow. Increase alpha (or use SPCATV(alpha=None) "
            "for penalties relative to the data)."
        )


def _spca_tv(
    op,
    n_components,
    *,
    l2,
    pieces,
    solver,
    weights_msg,
    tol,
    max_iter,
    max_inner_iter,
    init,
    rng,
    gap_every,
    kernels,
    verbose,
    u0,
    w0,
    n_threads,
    defl=None,
):
    """The alternation and deflation of :func:`neurospca.spca_tv` (validated inputs).

    Parameters
    ----------
    op : DataOperator
        The scanned data (centred or not, as given).
    n_components : int
        Number of components.
    l2 : float
        The ridge weight of eq. 3 (> 0): gaps in ``f`` units are ``2 l2`` times
        the prox gaps.
    pieces : list
        The prox-scale penalty pieces of the v-step
        (:func:`neurospca.solvers.penalties.eq3_pieces`).
    solver : DualSolver or ConestaSolver
        A registered solver (:data:`neurospca.solvers.SOLVERS`).
    weights_msg : str
        The weights, as the warning about a vanished component names them.
    tol, max_iter, max_inner_iter, gap_every, kernels, verbose
        As in :func:`neurospca.spca_tv`.
    init : {"svd", "random"}
        Start of ``u``.
    rng : RandomState
        Used by ``init="random"``.
    u0 : ndarray of shape (n_samples, n_components) or None
        Warm start of the scores.
    w0 : list or None
        Per component, a solver state to start the first v-step from.
    n_threads : int
        Threads of the v-step kernels and of the data products (resolved: a
        positive int). When it is above 1, BLAS runs on one thread for the
        whole fit: the products run one BLAS thread per row block already,
        and BLAS threads woken by anything else (a dot product of two
        ``P``-vectors) keep spinning into the next v-step beside its kernel
        threads.
    defl : _Deflated, optional
        Start from this implicitly deflated data (the other components of a
        joint fit, :mod:`~neurospca.decomposition._joint`) instead of ``op``.

    Returns
    -------
    U, V, info
        As :func:`neurospca.spca_tv`.
    """
    with _vstep_blas(n_threads):
        return _alternate(
            op,
            n_components,
            l2=l2,
            pieces=pieces,
            solver=solver,
            weights_msg=weights_msg,
            tol=tol,
            max_iter=max_iter,
            max_inner_iter=max_inner_iter,
            init=init,
            rng=rng,
            gap_every=gap_every,
            kernels=kernels,
            verbose=verbose,
            u0=u0,
            w0=w0,
            n_threads=n_threads,
            defl=defl,
        )


def _alternate(
    op,
    n_components,
    *,
    l2,
    pieces,
    solver,
    weights_msg,
    tol,
    max_iter,
    max_inner_iter,
    init,
    rng,
    gap_every,
    kernels,
    verbose,
    u0,
    w0,
    n_threads,
    defl=None,
):
    """The body of :func:`_spca_tv`, BLAS already held."""
    n_samples, n_features = op.shape
    scale_y = 1.0 / (2.0 * n_samples * l2)
    defl = _Deflated(op) if defl is None else defl
    basis = None
    # float32 data: X v in float32, X^T z in float64 arithmetic (the
    # certificate's y, with no pass of its own); float32 v-steps (the dual solver's float32 kernels, certified in float64)
    # when float32 can reach tol
    vdtype = (
        np.float32
        if op.dtype == np.float32 and solver.name == "dual" and tol >= FLOAT32_VSTEP_MIN_TOL
        else np.float64
    )
    U = np.zeros((n_samples, n_components))
    V = np.zeros((n_features, n_components))
    info = {
        key: []
        for key in (
            "d",
            "gaps",
            "rel_gaps",
            "n_iter",
            "n_inner_iter",
            "gap_history",
            "rel_gap_history",
            "mu_history",
            "converged",
            "time",
            "w",
            "y",
        )
    }
    zero_from = None
    for k in range(n_components):
        t0 = time.perf_counter()
        if u0 is not None and np.any(u0[:, k]):
            u = u0[:, k] / np.linalg.norm(u0[:, k])
            g = defl.rmatvec(u)
        else:  # g = X_k^T u; then X_k^T X_k v / ||X_k v|| from the fused pass
            if init == "svd" and basis is None and not _uses_gram(op):
                basis = cached_subspace(op, n_components)[1:]
            u, g = _init_u(defl, init, rng, basis)
        v = None
        state = None if w0 is None else w0[k]
        Xv = None
        resid_prev, change = np.sqrt(defl.sqnorm), np.inf
        history, rel_history, mu_hist, inner, outer_ok = [], [], [], 0, False
        for it in range(1, max_iter + 1):
            y = g * scale_y
            res, vdtype = _vstep(
                solver,
                y,
                pieces,
                vdtype,
                tol,
                max_inner_iter,
                gap_every,
                kernels,
                v,
                state,
                n_threads,
            )
            state = res.state
            mu_hist.extend((inner + i, mu, 2.0 * l2 * e) for i, mu, e in res.mu_history)
            history.extend((inner + i, 2.0 * l2 * g_) for i, g_ in res.gap_history)
            p0 = 0.5 * float(y @ y)
            rel_history.extend((inner + i, g_ / p0 if p0 > 0 else 0.0) for i, g_ in res.gap_history)
            inner += res.n_iter
            vstep_ok = res.converged
            v = np.asarray(res.v, dtype=np.float64)  # float32 v-steps: same values
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
                _say(
                    "component %d, iteration %d: residual %.6g, change %.2e, gap %.2e",
                    k,
                    it,
                    resid,
                    change,
                    res.gap,
                )
            if change <= tol:
                outer_ok = True
                break
        if nrm > 0.0 and vv > 0.0:  # certify the returned (u, v), not (u_prev, v)
            xtu = g  # X_k^T u, in float64 arithmetic (DataOperator.fused)
            y = xtu * scale_y
            v_new, res, extra = _certify_pair(
                ProxProblem(y, pieces),
                v,
                state,
                res,
                solver,
                tol,
                max_inner_iter,
                gap_every,
                kernels,
                n_threads,
            )
            inner += extra
            vstep_ok = res.converged
            state = res.state
            history.append((inner, 2.0 * l2 * res.gap))
            p0 = 0.5 * float(y @ y)
            rel_history.append((inner, res.gap / p0 if p0 > 0 else 0.0))
            if v_new is not v:
                v, Xv, XtXv = v_new, defl.dot(v_new), None
            vv = float(v @ v)
            nrm = float(u @ Xv)
        if nrm == 0.0 or vv == 0.0:
            zero_from = k
            warnings.warn(
                f"component {k} is identically zero: the penalties are too strong "
                f"for this data ({weights_msg}); decrease alpha. The "
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
        defl.deflate(u, v, d, xv=Xv, xtu=xtu, xtxv=XtXv)
        U[:, k], V[:, k] = u, v
        info["d"].append(d)
        info["gaps"].append(2.0 * l2 * res.gap)
        info["rel_gaps"].append(res.gap / (0.5 * float(y @ y)))
        info["n_iter"].append(it)
        info["n_inner_iter"].append(inner)
        info["gap_history"].append(history)
        info["rel_gap_history"].append(rel_history)
        info["w"].append(state)
        info["y"].append(y)  # the v-step of the returned pair (certified support)
        info["mu_history"].append(mu_hist)
        info["converged"].append(outer_ok and res.converged)
        info["time"].append(time.perf_counter() - t0)
        if verbose:
            _say(
                "component %d done: %d alternations, %d solver iterations, gap %.3e, %.2f s",
                k,
                it,
                inner,
                info["gaps"][-1],
                info["time"][-1],
            )
    if zero_from is not None:  # not computed: NaN gaps, no iterations
        for k in range(zero_from, n_components):
            for key, value in (
                ("d", 0.0),
                ("gaps", np.nan),
                ("rel_gaps", np.nan),
                ("n_iter", 0),
                ("n_inner_iter", 0),
                ("gap_history", []),
                ("rel_gap_history", []),
                ("mu_history", []),
                ("converged", False),
                ("time", 0.0),
                ("w", None),
                ("y", None),
            ):
                info[key].append(value)
    info = {
        key: (
            val
            if key in ("gap_history", "rel_gap_history", "mu_history", "w", "y")
            else np.asarray(val)
        )
        for key, val in info.items()
    }
    return U, V, info


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
