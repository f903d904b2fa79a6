"""The alternating minimisation of SPCA-TV (paper Algorithm 3), as a private worker.

:func:`_spca_tv` is called by :func:`neurospca.spca_tv` and
:meth:`neurospca.SPCATV.fit` once they have validated their inputs; it never
re-checks them. The v-steps go through the solver registry of
:mod:`neurospca.solvers` (one interface for every solver) on a
:class:`~neurospca.solvers.ProxProblem` built from the penalty pieces.

Size: 700+ lines, one rank-one alternation in one place (its v-step, u-step,
certify step with the moved-gap bound and the kernel gap, records and warnings), which the joint
fit's sweeps and its one-pass sweep (:mod:`._sweep_pass`) reuse step by step.
"""

import logging
import time
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils.naming import component_names
from .._utils.routed_warnings import recorded
from .._utils.scratch import reused_buffers
from ..solvers import ProxProblem
from ._data import _single_threaded_blas, uses_gram
from ._deflated import _Deflated
from ._start import centred_gram, start_u
from ._subspace import cached_subspace

logger = logging.getLogger("neurospca")


def _say(msg, *args):
    """Progress line: an INFO record on ``"neurospca"``; printed to stdout too
    when nothing is attached to that logger (scikit-learn-style ``verbose``)."""
    logger.info(msg, *args)
    if not logger.handlers:
        print("[SPCATV] " + msg % args, flush=True)


def _certify_pair(
    problem, v, state, res, solver, tol, max_inner_iter, gap_every, kernels, n_threads, moved=None
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

    ``moved = (y0, gap0)``: ``(v, state)`` has the certified gap ``gap0``
    for the centre ``y0`` (the last v-step's, float64); when
    :func:`moved_gap` bounds its gap for ``y`` by :data:`MOVED_SHARE` of the
    tolerance, that bound is the pair's gap, with no evaluation (the exact
    gap would certify the same pair).

    Returns
    -------
    v, res, extra_iter
        ``res.gap`` / ``res.converged`` then certify ``(u, v)``.
    """
    y = problem.y
    tol_abs = tol * 0.5 * float(y @ y)
    if moved is not None and state is not None:
        bound = moved_gap(y, *moved)
        if OWN_PAIRS and solver.name == "dual" and res is not None and res.v is v:
            bound = min(bound, own_moved_gap(y, *moved))
        if bound <= MOVED_SHARE * tol_abs:  # the exact gap would certify too: same pair
            return (
                v,
                replace(res, v=v, gap=bound, tol_abs=tol_abs, converged=True, objective=np.nan),
                0,
            )
    own = kernel_gap(problem, v, res, moved[0]) if moved is not None and KERNEL_GAPS else None
    if own is not None and own[0] <= tol_abs:  # the state's gap, from the kernel's products
        return (
            v,
            replace(res, v=v, gap=own[0], tol_abs=tol_abs, converged=True, objective=own[1]),
            0,
        )
    gap, obj = problem.certificate(v, None if own else state, (1e-3, 1e-6), tol_abs=tol_abs)
    gap = min(gap, own[0]) if own else gap
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


def moved_gap(y, y0, gap0):
    """A certified gap of a v-step's pair ``(v, w)`` for the prox centre ``y``,
    from its gap ``gap0`` for the centre ``y0``, with no product.

    With ``d = y - y0``: ``P_y(v) = P_y0(v) - d . (v - y0) + ||d||^2 / 2``
    exactly, and ``D(w) = ||y||^2 / 2 - h(y - A^T w)`` with ``h(z) =
    ||soft(z)||^2 / 2`` convex of 1-Lipschitz gradient ``soft``, so
    ``D_y(w) >= D_y0(w) + d . (y0 - v_w)`` (``v_w`` the primal point of
    ``w``) and ``gap <= gap0 + ||d||^2 / 2 + d . (v_w - v)``; both ``v`` and
    ``v_w`` are within ``sqrt(2 gap0)`` of the solution for ``y0`` (the prox
    objective and the Lagrangian are 1-strongly convex), hence

    .. math:: G_y \\le G_0 + \\|d\\|^2 / 2 + 2 \\|d\\| \\sqrt{2 G_0}.
    """
    gap0 = max(float(gap0), 0.0)
    dist = float(np.linalg.norm(y - y0))
    return gap0 + 0.5 * dist * dist + 2.0 * dist * np.sqrt(2.0 * gap0)


def kernel_gap(problem, v, res, y0):
    """The exact gap ``(gap, P(v))`` of the dual solver's own pair ``(v, w)`` (``v``
    is ``res.v``, solved at the centre ``y0``) for the centre ``problem.y``, from
    the products its kernel formed, with no product with the operator: the
    penalties do not depend on the centre, so ``P_y(v) = P_y0(v) - ||v - y0||^2
    / 2 + ||v - y||^2 / 2`` (``P_y0(v)``: ``res.objective``), and ``D_y(w) =
    ||y||^2 / 2 - ||soft(y - A^T w, l1)||^2 / 2`` with the kernel's ``A^T w``
    (``res.atw``; its ``w`` as the kernel certified it). None when the solver
    kept no ``A^T w`` or the problem is not l1 plus one group norm.
    :func:`~neurospca.solvers.gap.prox_gap` gives the same value up to rounding
    (``tests/test_sweeps22r.py``)."""
    fast = problem.fast_form()
    atw = getattr(res, "atw", None)
    if fast is None or atw is None or res.v is not v or not np.isfinite(res.objective):
        return None
    values, order = atw  # A^T w, in the kernel's order of the features
    y = problem.y
    if order is None:
        x = y - values
    else:
        x = np.empty_like(values)
        x[order] = values
        np.subtract(y, x, out=x)
    d = v - y0
    primal = float(res.objective) - 0.5 * float(d @ d)
    np.subtract(v, y, out=d)
    primal += 0.5 * float(d @ d)
    # x = y - A^T w; soft(x, l1) in place
    np.sign(x, out=d)
    np.abs(x, out=x)
    x -= fast[0]
    np.maximum(x, 0.0, out=x)
    x *= d
    gap = primal - (0.5 * float(y @ y) - 0.5 * float(x @ x))
    return (max(gap, 0.0) if np.isfinite(gap) else np.inf), primal


#: The certify step of the dual solver's own pair evaluates its gap for the
#: new centre from the kernel's products (:func:`kernel_gap`) instead of
#: :meth:`~neurospca.solvers.ProxProblem.certificate`'s products with the
#: operator (issue 22 round 18): the same value up to rounding, so the same
#: pairs certify.
KERNEL_GAPS = True


def own_moved_gap(y, y0, gap0):
    """:func:`moved_gap` for the dual solver's own pair: ``v = v_w``, the primal
    point of its dual point ``w`` (``soft(y0 - A^T w)``, as the solver returns
    them), so the cross term ``d . (v_w - v)`` of :func:`moved_gap`'s proof is
    zero and

    .. math:: G_y \\le G_0 + \\|d\\|^2 / 2.

    (Not for another solver's pair: ``tests/test_joint22o.py`` shows it fails
    for a ``v`` moved off ``v_w``.)"""
    dist = float(np.linalg.norm(y - y0))
    return max(float(gap0), 0.0) + 0.5 * dist * dist


#: The certify step takes :func:`own_moved_gap` (no cross term) for the dual
#: solver's own pair (the v-step's ``res.v`` itself): it certifies pairs whose
#: centre moved by up to ~3 % of ``||y||`` instead of ~1.5 % (issue 22 round 17,
#: the sweeps at P = 1,906,624); the exact gap, at most the bound, would
#: certify the same pair, so the iterates are the same.
OWN_PAIRS = True


#: A joint fit's certify step (:func:`_certify_pair` with ``moved``) takes the
#: bound :func:`moved_gap` as the pair's gap when it is at most this share of
#: the tolerance: the exact gap, at most the bound, then certifies the same
#: pair (its rounding is ~1e-14 of ``||y||^2``, far below the 1 % margin), so
#: the iterates are the same; it saves the certificate's products (at N = 100,
#: P = 1,906,624 the sweeps' certificates were 18 of 52 CPU s; issue 22
#: round 15). Only the recorded gaps of the intermediate pairs differ (valid
#: bounds); the joint fit certifies its returned pairs afresh.
MOVED_SHARE = 0.99


@contextmanager
def _vstep_blas(n_threads):
    """BLAS on one thread while a fit runs its kernels on ``n_threads > 1``
    OpenMP threads, so the two pools never both claim the cores; no change
    otherwise. (Measured: an fMRI-sized fit took 0.49 s with the hold around
    the v-steps only and 0.32 s with it around the whole fit, as the BLAS
    threads woken between v-steps spun beside the kernel's:
    benchmarks/RESULTS.md, issue 14.) The solvers' scratch arrays are kept
    from one v-step to the next meanwhile (:func:`~neurospca._utils.scratch.reused_buffers`)."""
    with reused_buffers(), _single_threaded_blas() if n_threads > 1 else nullcontext():
        yield


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
    with recorded("filter", "prox_dual: a float32 solve stopped", ConvergenceWarning):
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


def _spca_tv(op, n_components, *, n_threads, **settings):
    """The alternation and deflation of :func:`neurospca.spca_tv` (validated inputs),
    BLAS held as the v-step kernels need it (:func:`_vstep_blas`).

    Parameters
    ----------
    op : DataOperator
        The scanned data.
    n_components : int
        Number of components.
    n_threads : int
        Threads of the v-step kernels and of the data products.
    **settings
        The other keywords of :func:`_alternate`.

    Returns
    -------
    U, V, info
        As :func:`neurospca.spca_tv`.
    """
    with _vstep_blas(n_threads):
        return _alternate(op, n_components, n_threads=n_threads, **settings)


#: The per-component lists of ``info`` (:func:`neurospca.spca_tv`) and the value
#: each takes for a component not computed (after a component vanished).
_INFO_NOT_COMPUTED = {
    "d": 0.0,
    "gaps": np.nan,
    "rel_gaps": np.nan,
    "n_iter": 0,
    "n_inner_iter": 0,
    "gap_history": [],
    "rel_gap_history": [],
    "mu_history": [],
    "converged": False,
    "time": 0.0,
    "w": None,
    "y": None,
}
#: The entries of ``info`` kept as lists (the others become arrays).
_INFO_LISTS = ("gap_history", "rel_gap_history", "mu_history", "w", "y")


@dataclass
class _Settings:
    """The settings of one alternation, as :func:`_spca_tv` received them."""

    l2: float
    pieces: list
    solver: object
    weights_msg: str
    tol: float
    max_iter: int
    max_inner_iter: int
    gap_every: int
    kernels: str
    verbose: int
    n_threads: int
    scale_y: float  # y = X_k^T u * scale_y, the v-step's prox centre
    moved: bool = False  # the certify step may take moved_gap's bound (a joint fit)


@dataclass
class _Pair:
    """The pair ``(u, v)`` of one component while it alternates, and its record."""

    u: np.ndarray
    g: np.ndarray  # X_k^T u
    state: object  # the v-step solver's last dual point
    resid_prev: float  # ||X_k - u d v^T|| at the previous iteration
    v: np.ndarray = None
    res: object = None  # the last SolverResult
    y: np.ndarray = None  # the prox centre of the certified v-step
    y_step: np.ndarray = None  # the last v-step's centre when it was solved in float64
    Xv: np.ndarray = None
    XtXv: np.ndarray = None
    xtu: np.ndarray = None
    nrm: float = 0.0  # ||X_k v||
    vv: float = 0.0  # ||v||^2
    it: int = 0
    inner: int = 0
    change: float = np.inf
    outer_ok: bool = False
    history: list = field(default_factory=list)
    rel_history: list = field(default_factory=list)
    mu_hist: list = field(default_factory=list)


def _vstep_dtype(op, solver, tol):
    """float32 v-steps (the dual solver's float32 kernels, certified in float64)
    for float32 data when float32 can reach ``tol``; float64 otherwise. (With
    float32 data X v is in float32 and X^T z in float64 arithmetic: the
    certificate's y, with no pass of its own.)"""
    use32 = op.dtype == np.float32 and solver.name == "dual" and tol >= FLOAT32_VSTEP_MIN_TOL
    return np.float32 if use32 else np.float64


def _init_step(defl, op, k, n_components, u0, init, rng, basis):
    """The start ``(u, X_k^T u, basis)`` of component ``k``: the warm start
    ``u0[:, k]`` when it is non-zero, else :func:`start_u` (``basis``, the
    data's top singular subspace, computed on first need)."""
    if u0 is not None and np.any(u0[:, k]):
        u = u0[:, k] / np.linalg.norm(u0[:, k])
        return u, defl.rmatvec(u), basis
    # g = X_k^T u; then X_k^T X_k v / ||X_k v|| from the fused pass
    if init == "svd" and basis is None and not uses_gram(op):
        basis = cached_subspace(op, n_components)[1:]
    u, g = start_u(defl, init, rng, basis)
    return u, g, basis


def _v_step(cfg, pair, vdtype):
    """Solve the v-step for the current ``u`` and record its gaps; returns the
    dtype of the next v-steps."""
    y = pair.g * cfg.scale_y
    solved64 = vdtype == np.float64
    res, vdtype = _vstep(
        cfg.solver,
        y,
        cfg.pieces,
        vdtype,
        cfg.tol,
        cfg.max_inner_iter,
        cfg.gap_every,
        cfg.kernels,
        pair.v,
        pair.state,
        cfg.n_threads,
    )
    inner, scale = pair.inner, 2.0 * cfg.l2
    pair.state = res.state
    pair.mu_hist.extend((inner + i, mu, scale * e) for i, mu, e in res.mu_history)
    pair.history.extend((inner + i, scale * g_) for i, g_ in res.gap_history)
    p0 = 0.5 * float(y @ y)
    pair.rel_history.extend((inner + i, g_ / p0 if p0 > 0 else 0.0) for i, g_ in res.gap_history)
    pair.inner += res.n_iter
    pair.res = res
    pair.v = np.asarray(res.v, dtype=np.float64)  # float32 v-steps: same values
    pair.y_step = y if solved64 else None  # res.gap is the gap of (v, state) for y
    return vdtype


def _u_step(defl, pair):
    """``u = X_k v / ||X_k v||`` and ``X_k^T u`` from one fused pass; False when
    ``v`` or ``X_k v`` vanished (the component is zero)."""
    pair.vv = float(pair.v @ pair.v)
    if pair.vv == 0.0:
        pair.nrm = 0.0
        return False
    pair.Xv, pair.XtXv = defl.gram(pair.v)
    pair.nrm = float(np.linalg.norm(pair.Xv))
    if pair.nrm == 0.0:
        return False
    pair.u = pair.Xv / pair.nrm
    pair.g = pair.XtXv / pair.nrm
    return True


def _residual_change(defl, pair, it):
    """The residual ``||X_k - u d v^T||`` and its relative change (eq. 26),
    stored on ``pair``; returns the residual."""
    resid = np.sqrt(max(defl.sqnorm - pair.nrm * pair.nrm / pair.vv, 0.0))
    # eq. 26 compares two iterates: the first v-step has no predecessor
    # (v^0 = 0 would compare against ||X_k||), so it never stops the loop.
    change = abs(resid - pair.resid_prev) / resid if resid > 0 else 0.0
    pair.change = np.inf if it == 1 else change
    pair.resid_prev = resid
    return resid


def _alternate_pair(cfg, defl, pair, vdtype, k):
    """Alternate v- and u-steps until the relative change of the residual is at
    most ``tol`` (``pair.outer_ok``), ``max_iter`` or a zero component; returns
    the dtype of the next v-steps."""
    for it in range(1, cfg.max_iter + 1):
        pair.it = it
        vdtype = _v_step(cfg, pair, vdtype)
        if not _u_step(defl, pair):
            break
        resid = _residual_change(defl, pair, it)
        if cfg.verbose:
            _say(
                "component %d, iteration %d: residual %.6g, change %.2e, gap %.2e",
                k,
                it,
                resid,
                pair.change,
                pair.res.gap,
            )
        if pair.change <= cfg.tol:
            pair.outer_ok = True
            break
    return vdtype


def _certify_step(cfg, defl, pair):
    """Certify the returned ``(u, v)``, not ``(u_prev, v)`` (:func:`_certify_pair`):
    the v-step gap for the final ``u``, re-solved when above ``tol``."""
    pair.xtu = pair.g  # X_k^T u, in float64 arithmetic (DataOperator.fused)
    y = pair.xtu * cfg.scale_y
    v_new, res, extra = _certify_pair(
        ProxProblem(y, cfg.pieces),
        pair.v,
        pair.state,
        pair.res,
        cfg.solver,
        cfg.tol,
        cfg.max_inner_iter,
        cfg.gap_every,
        cfg.kernels,
        cfg.n_threads,
        moved=(pair.y_step, pair.res.gap) if cfg.moved and pair.y_step is not None else None,
    )
    pair.inner += extra
    pair.state = res.state
    pair.res, pair.y = res, y
    pair.history.append((pair.inner, 2.0 * cfg.l2 * res.gap))
    p0 = 0.5 * float(y @ y)
    pair.rel_history.append((pair.inner, res.gap / p0 if p0 > 0 else 0.0))
    if v_new is not pair.v:
        pair.v, pair.Xv, pair.XtXv = v_new, defl.dot(v_new), None
    pair.vv = float(pair.v @ pair.v)
    pair.nrm = float(pair.u @ pair.Xv)


def _warn_unsettled(cfg, pair, k):
    """A ConvergenceWarning for a v-step or an alternation that did not reach tol."""
    res, tol = pair.res, cfg.tol
    if not res.converged:
        warnings.warn(
            f"{component_names(k, rows=False)}: the v-step reached max_inner_iter="
            f"{cfg.max_inner_iter} with certified gap {res.gap:.3e} > tol * P(0) = "
            f"{res.tol_abs:.3e} (tol={tol}); increase max_inner_iter or tol.",
            ConvergenceWarning,
            stacklevel=4,
        )
    if not pair.outer_ok:
        warnings.warn(
            f"{component_names(k, rows=False)}: the alternating minimisation did not reach "
            f"tol={tol} in max_iter={cfg.max_iter} iterations (last relative change "
            f"{pair.change:.3e}); increase max_iter.",
            ConvergenceWarning,
            stacklevel=4,
        )


def _deflate_step(defl, pair, U, V, k):
    """Remove the component from ``X_k`` with the least-squares scale
    ``d = u^T X_k v / ||v||^2`` (``u = X_k v / ||X_k v||``); returns ``d``."""
    d = pair.nrm / pair.vv
    defl.deflate(pair.u, pair.v, d, xv=pair.Xv, xtu=pair.xtu, xtxv=pair.XtXv)
    U[:, k], V[:, k] = pair.u, pair.v
    return d


def _record(info, cfg, pair, d, seconds, k):
    """Append component ``k``'s entries to ``info``."""
    res, y = pair.res, pair.y
    for key, value in (
        ("d", d),
        ("gaps", 2.0 * cfg.l2 * res.gap),
        ("rel_gaps", res.gap / (0.5 * float(y @ y))),
        ("n_iter", pair.it),
        ("n_inner_iter", pair.inner),
        ("gap_history", pair.history),
        ("rel_gap_history", pair.rel_history),
        ("w", pair.state),
        ("y", y),  # the v-step of the returned pair (certified support)
        ("mu_history", pair.mu_hist),
        ("converged", pair.outer_ok and res.converged),
        ("time", seconds),
    ):
        info[key].append(value)
    if cfg.verbose:
        _say(
            "component %d done: %d alternations, %d solver iterations, gap %.3e, %.2f s",
            k,
            pair.it,
            pair.inner,
            info["gaps"][-1],
            info["time"][-1],
        )


def _finish_info(info, zero_from, n_components):
    """``info`` with the components from ``zero_from`` on marked not computed
    (NaN gaps, no iterations) and its scalar lists as arrays."""
    if zero_from is not None:
        for _ in range(zero_from, n_components):
            for key, value in _INFO_NOT_COMPUTED.items():
                info[key].append(value)
    return {key: (val if key in _INFO_LISTS else np.asarray(val)) for key, val in info.items()}


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
    certify=True,
    moved=False,
):
    """The alternation and deflation of :func:`neurospca.spca_tv`, BLAS already held
    (:func:`_spca_tv`): per component, the init, v-step / u-step alternation,
    certify and deflate steps.

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
    certify : bool, optional
        False: no certify step (a joint fit's start, whose sweeps refit and
        certify every component after it; its recorded gaps are the last
        v-step's, for the previous ``u``).
    moved : bool, optional
        The certify step may take :func:`moved_gap`'s bound as the pair's gap
        (:data:`MOVED_SHARE`; the same iterates, larger recorded gaps): for a
        joint fit, which certifies its returned pairs afresh.

    Returns
    -------
    U, V, info
        As :func:`neurospca.spca_tv`.
    """
    n_samples, n_features = op.shape
    cfg = _Settings(
        l2, pieces, solver, weights_msg, tol, max_iter, max_inner_iter, gap_every, kernels,
        verbose, n_threads, scale_y=1.0 / (2.0 * n_samples * l2), moved=moved,
    )  # fmt: skip
    defl = _Deflated(op) if defl is None else defl
    vdtype = _vstep_dtype(op, solver, tol)
    U = np.zeros((n_samples, n_components))
    V = np.zeros((n_features, n_components))
    info = {key: [] for key in _INFO_NOT_COMPUTED}
    basis, zero_from = None, None
    for k in range(n_components):
        t0 = time.perf_counter()
        u, g, basis = _init_step(defl, op, k, n_components, u0, init, rng, basis)
        state = None if w0 is None else w0[k]
        pair = _Pair(u=u, g=g, state=state, resid_prev=np.sqrt(defl.sqnorm))
        vdtype = _alternate_pair(cfg, defl, pair, vdtype, k)
        if pair.nrm > 0.0 and pair.vv > 0.0 and certify:
            _certify_step(cfg, defl, pair)
        elif pair.nrm > 0.0 and pair.vv > 0.0:  # the record's centre: the final u's
            pair.xtu, pair.y = pair.g, pair.g * cfg.scale_y
        if pair.nrm == 0.0 or pair.vv == 0.0:
            zero_from = k
            warnings.warn(
                f"{component_names(k, rows=False)} is identically zero: the penalties are too "
                f"strong for this data ({weights_msg}); decrease alpha. The "
                "remaining components are set to zero.",
                UserWarning,
                stacklevel=3,
            )
            break
        _warn_unsettled(cfg, pair, k)
        d = _deflate_step(defl, pair, U, V, k)
        _record(info, cfg, pair, d, time.perf_counter() - t0, k)
    return U, V, _finish_info(info, zero_from, n_components)


def _pca_variance_ratio(op, n_components):
    """Plain PCA's top explained variance ratios (exact from the Gram matrix for
    small in-memory data, else randomized SVD with a fixed seed)."""
    total = op.sqnorm()
    if uses_gram(op):
        s2 = np.clip(np.linalg.eigvalsh(centred_gram(op))[::-1][:n_components], 0, None)
    else:
        s2 = cached_subspace(op, n_components)[0] ** 2
    return s2 / total if total > 0 else np.zeros(n_components)


def _adjusted_variance(op, components, Z=None):
    """Adjusted explained variance of non-orthogonal components (Zou et al.).

    The scores ``Z = Xc C^T`` (``Xc`` the centred data of ``op``; one pass,
    unless given) are orthogonalised by QR; component k explains ``R_kk^2 / (N - 1)``.
    """
    n = op.shape[0]
    Z = op.matmat(components.T) if Z is None else Z
    R = np.linalg.qr(Z, mode="r")
    var = np.abs(np.diag(R)) ** 2 / max(n - 1, 1)
    total = op.sqnorm() / max(n - 1, 1)
    return var, var / total if total > 0 else np.zeros_like(var)
