"""The start of each component's alternation: ``u`` and ``X_k^T u``.

``init="svd"`` starts from the leading left singular vector of the deflated
data ``X_k`` (exactly from the Gram matrix for small data in memory, else by
Rayleigh-Ritz and Davidson steps on the data's top singular subspace);
``init="random"`` from a random unit ``u``. Used by
:mod:`~neurospca.decomposition._alternation`.
"""

import hashlib
from functools import partial

import numpy as np

from ._data import pass_is_expensive, uses_gram
from ._deflated import _Deflated
from ._lockstep import in_one_pass
from ._subspace import cached_subspace


def _ritz_start(defl, basis):
    """The best right singular vector of ``X_k`` within the span of
    ``basis = (R, Xc R)`` (top singular subspace of the centred data; no pass
    over the data). Sign: largest-magnitude entry positive."""
    R, XR = basis[0], basis[1]
    M = XR.copy()
    for u_j, v_j, d_j in zip(defl.U, defl.V, defl.d, strict=True):
        M -= d_j * np.outer(u_j, v_j @ R)
    w = np.linalg.svd(M, full_matrices=False)[2][0]
    v = R @ w
    j = int(np.argmax(np.abs(v)))
    return -v if v[j] < 0 else v


def centred_gram(op):
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
    return signed_start(defl, gram_direction(defl))


def signed_start(defl, u):
    """``(u, X_k^T u)`` with the sign that makes the largest-magnitude entry of
    ``X_k^T u`` positive (one pass)."""
    g = defl.rmatvec(u)
    j = int(np.argmax(np.abs(g)))
    return (-u, -g) if g[j] < 0 else (u, g)


def gram_direction(defl, XV=None):
    """The leading eigenvector of ``X_k X_k^T`` (:func:`_init_gram`), sign
    not fixed, with no pass over the data when the removed components'
    ``Xc v_j`` are known (kept by ``defl``, or given as ``XV``; else one pass
    each)."""
    op = defl.op
    G = centred_gram(op).copy()
    U, V, d = defl.U, defl.V, defl.d
    if XV is None:
        XV = defl.XV if defl.known() else [matvec_once(op, v_j) for v_j in V]
    for u_j, z_j, d_j in zip(U, XV, d, strict=True):
        G -= d_j * (np.outer(z_j, u_j) + np.outer(u_j, z_j))
    for u_i, v_i, d_i in zip(U, V, d, strict=True):
        for u_j, v_j, d_j in zip(U, V, d, strict=True):
            G += d_i * d_j * float(v_i @ v_j) * np.outer(u_i, u_j)
    return np.linalg.eigh(0.5 * (G + G.T))[1][:, -1]


#: :func:`gram_direction` serves ``Xc v_j`` of a loading it asked for before on
#: the same operator and centring from the kept product (:func:`matvec_once`):
#: the restart checks of a state ask for each loading once per other component
#: (issue 22 round 18: 24 -> 21 passes at N = 100, P = 636,056; the same bits).
MATVEC_ONCE = True
#: Products kept per operator by :func:`matvec_once`.
MATVEC_KEPT = 16


def matvec_once(op, v):
    """``op.matvec(v)``, or the same bits from an earlier call with the same
    ``v`` (its BLAKE2 digest) on the same centring (:data:`MATVEC_ONCE`)."""
    if not MATVEC_ONCE:
        return op.matvec(v)
    key = hashlib.blake2b(np.ascontiguousarray(v, dtype=np.float64), digest_size=32).digest()
    kept = op.__dict__.setdefault("_matvecs_kept", [])
    for centring, k, z in reversed(kept):
        if k == key and centring is op.mean:
            return z.copy()
    z = op.matvec(v)
    kept.append((op.mean, key, z.copy()))
    del kept[:-MATVEC_KEPT]
    return z


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
    if uses_gram(defl.op):
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
    for i in range(START_MAX_ITER):
        done, found, Rv = ritz_step((Q, XQ, AQ), START_TOL)
        if not done and i == 0 and getattr(defl, "ahead", None) and defl.known():  # LookAhead
            Q, XQ, AQ = _with_ahead(defl, basis)
            done, found, Rv = ritz_step((Q, XQ, AQ), START_TOL)
        if done:
            break
        # the residuals of the best Ritz pairs, orthogonal to the span: one pass
        ZR, GR = defl.gram_block(Rv)
        Q, XQ, AQ = (np.column_stack([M, x]) for M, x in ((Q, Rv), (XQ, ZR), (AQ, GR)))
    return found


#: The start's power iterations stop when ``v`` moves by less than this.
START_TOL = 1e-3
#: The same for the restart checks of a joint fit
#: (:func:`~neurospca.decomposition._joint_starts.svd_starts`).
CHECK_TOL = 1e-3
#: Most Davidson iterations (passes) of a start.
START_MAX_ITER = 100
#: Ritz residuals added to the start's span per pass.
START_BLOCK = 1


def start_u(defl, init, rng, basis):
    """Start ``u`` and ``X_k^T u``."""
    if init == "random":
        u = rng.standard_normal(defl.op.shape[0])
        nrm = np.linalg.norm(u)
        u = u / nrm if nrm > 0 else u
        return u, defl.rmatvec(u)
    return _init_svd(defl, basis)


def ritz_step(start, tol):
    """One Rayleigh-Ritz step of :func:`_init_svd` on ``start = (Q, X_k Q, X_k^T X_k Q)``.

    Returns ``(done, (u, X_k^T u), Rv)``: ``Rv`` the residual directions to add
    to the span (one pass) when not done, orthogonal to ``Q``.
    """
    Q, XQ, AQ = start
    H = Q.T @ AQ
    theta, Wr = np.linalg.eigh(0.5 * (H + H.T))
    Wr = Wr[:, ::-1][:, :START_BLOCK]
    v, z, g = Q @ Wr[:, 0], XQ @ Wr[:, 0], AQ @ Wr[:, 0]
    nz, ng = np.linalg.norm(z), np.linalg.norm(g)
    if nz == 0.0 or ng == 0.0:
        return True, (z, g), None
    j = int(np.argmax(np.abs(v)))  # sign: largest-magnitude entry of v positive
    s = -1.0 if v[j] < 0 else 1.0
    found = (s * z / nz, s * g / nz)
    if np.linalg.norm(g / ng - v) < tol:
        return True, found, None
    Rv = AQ @ Wr - (Q @ Wr) * theta[::-1][: Wr.shape[1]]
    for _ in range(2):
        Rv -= Q @ (Q.T @ Rv)
    Rv, T = np.linalg.qr(Rv)
    Rv = Rv[:, np.abs(np.diag(T)) > 1e-12 * max(np.abs(T).max(), 1e-300)]
    return Rv.shape[1] == 0, found, Rv


def _with_ahead(defl, basis):
    """The start's span (:meth:`_Deflated.deflated_basis`) with the directions
    :class:`LookAhead` computed for it added (then dropped: used once)."""
    seen = defl.seen
    defl.seen = seen + defl.ahead
    try:
        return defl.deflated_basis(basis)
    finally:
        defl.seen, defl.ahead = seen, []


#: Where a deflation fit's u-steps look ahead (:class:`LookAhead`, issue 22
#: round 16): ``"expensive"`` (round 17), where the passes this fit made say
#: a pass is expensive (:func:`~._data.pass_is_expensive`: a memmap whose last
#: pass was read from storage, a dask array); ``"memmap"``, when a pass reads
#: the data from a file (a memmap or a dask array; the memmap test 14 -> 12
#: passes); True, everywhere; False, nowhere. Not in memory (lead, round 16):
#: there a pass is cheap, the look-ahead cost 2-3 % CPU on 30 trust instances,
#: and a start moved within its tolerance sent one fragile instance
#: (paper-0.7, seed 3611) to another settled answer; in memory fits stay bit
#: for bit. Nor on a memmap in the page cache (round 17): there it cost 7-20 %
#: more CPU than the two passes it saves.
LOOK_AHEAD = "expensive"


def where_passes_cost(flag, op):
    """Whether ``flag`` (:data:`LOOK_AHEAD`, ``_joint_starts.CHECKS_WHERE``:
    True, False, ``"memmap"`` or ``"expensive"``) says to save passes on ``op``."""
    if flag == "expensive":
        return pass_is_expensive(op)
    if flag == "memmap":
        return op.kind in ("memmap", "dask")
    return flag is True


def look_ahead_here(op):
    """Whether deflation's u-steps on ``op`` look ahead (:data:`LOOK_AHEAD`)."""
    return where_passes_cost(LOOK_AHEAD, op)


class LookAhead(_Deflated):
    """:class:`_Deflated` whose u-step passes also compute the direction the
    next component's start will want (a Davidson step ahead, no pass of its own).

    The start of component ``k + 1`` (:func:`_init_svd`, data not on the Gram
    path) is a Ritz vector of ``X_{k+1}`` on the data's top singular subspace,
    then Davidson steps of one pass each, one after the other behind the last
    u-step of component ``k``. From its second u-step on (the first never ends
    the alternation) each u-step pass of component ``k`` here also computes
    ``Xc w`` and ``Xc^T Xc w`` for ``w``, the Davidson direction of the next
    start as if ``k`` ended at its previous iterate (known products, no pass).
    The next start tries its span with ``w`` added before its first Davidson
    step: when the Ritz vector there passes :data:`START_TOL`, that step's pass
    is saved. A start that needs no Davidson step is unchanged (bit for bit);
    one that does is a Ritz vector within the same tolerance in a larger span.
    """

    def __init__(self, op, n_components):
        super().__init__(op)
        self.n_components, self.ahead, self._last = n_components, [], None

    def deflate(self, u, v, d, xv=None, xtu=None, xtxv=None):
        super().deflate(u, v, d, xv=xv, xtu=xtu, xtxv=xtxv)
        self._last = None

    def gram(self, v):
        w = self._direction()
        if w is None:
            z, g = super().gram(v)
        else:
            op = self.op
            (z, g), (Zw, Gw) = in_one_pass(
                op, [partial(op.fused, v, -self._shift(v)), partial(op.gram, w)]
            )
            z, g = self._gram_done(v, z, g)
            self.ahead = [(w[:, 0], Zw[:, 0], Gw[:, 0])]
        self._last = (v, z, g)
        return z, g

    def _direction(self):
        """The next start's first Davidson direction (a column) if component
        ``k`` ended at its last iterate ``self._last``; None when there is no
        next component, no iterate, or that start would need no step."""
        if not (look_ahead_here(self.op) and self._last is not None and self.known()):
            return None
        if len(self.U) + 1 >= self.n_components or uses_gram(self.op):
            return None
        v, z, g = self._last
        nz, vv = float(np.linalg.norm(z)), float(v @ v)
        if nz == 0.0 or vv == 0.0:
            return None
        then = _Deflated(self.op)
        for name in ("U", "V", "d", "XV", "XtU", "AV", "seen"):
            setattr(then, name, list(getattr(self, name)))
        then.sqnorm = self.sqnorm
        then.deflate(z / nz, v, nz / vv, xv=z, xtu=g / nz, xtxv=g)
        start = then.deflated_basis(cached_subspace(self.op, self.n_components)[1:])
        done, _, Rv = ritz_step(start, START_TOL)
        return None if done or Rv is None or not Rv.shape[1] else Rv
