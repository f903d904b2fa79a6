"""The deflated data ``X_k = Xc - sum_j d_j u_j v_j^T``, applied implicitly.

:class:`_Deflated` serves the alternation of :mod:`._alternation` and the
joint fit of :mod:`._joint`: products with ``X_k`` are products with the
centred data (:class:`~neurospca.decomposition._data.DataOperator`, one pass
over ``X`` each) plus rank-one corrections (memory O(N + P) per component).

It also keeps, for each component removed, ``Xc v_j``, ``Xc^T u_j`` and
``Xc^T Xc v_j`` when the alternation had them (from its last fused pass):
the start of the next component is then found in the span of the data's top
singular subspace, of the components already removed and of the vectors of
the last passes, with no pass over the data (:meth:`_Deflated.start_basis`,
:meth:`_Deflated.deflated_basis`).
"""

import numpy as np

from ._subspace import is_tall

#: Vectors of the last fused passes kept for the starts (``2 P + N`` floats each).
SEEN_MAX = 12


#: A vector joins the start's span when what is left of it out of the span is
#: at least this fraction of the largest such norm (else it adds nothing).
SPAN_RTOL = 1e-8


def _extended(basis, Et, XEt, AEt):
    """``basis = (R, Xc R, A R)`` (``R`` orthonormal) extended by the columns
    of ``E`` (with ``Xc E`` and ``A E``), given as the rows of ``Et``,
    ``XEt`` and ``AEt`` (contiguous P-long vectors): block Gram-Schmidt
    against ``R`` (twice; BLAS-3), then Gram-Schmidt among the few new
    vectors (twice, each against all the kept ones at once), each kept when
    its norm left is above :data:`SPAN_RTOL` x the largest (1 for ``R``'s
    columns). The images follow the same combinations: no pass over the data
    and no QR of a P-long block (LAPACK's took seconds at P = 327,684)."""
    R, XR, AR = basis
    Ct = Et @ R
    Et = Et - Ct @ R.T
    C2t = Et @ R
    Et -= C2t @ R.T
    Ct += C2t
    XEt, AEt = XEt - Ct @ XR.T, AEt - Ct @ AR.T
    norms = np.linalg.norm(Et, axis=1)
    scale = max(1.0 if R.shape[1] else 0.0, float(norms.max()))
    j = 0  # the kept vectors: rows :j, in place
    for i in range(Et.shape[0]):
        e, xe, ae = Et[i].copy(), XEt[i].copy(), AEt[i].copy()
        for _ in range(2 if j else 0):
            c = Et[:j] @ e
            e -= c @ Et[:j]
            xe -= c @ XEt[:j]
            ae -= c @ AEt[:j]
        nrm = float(np.linalg.norm(e))
        if nrm > SPAN_RTOL * scale:
            Et[j], XEt[j], AEt[j] = e / nrm, xe / nrm, ae / nrm
            j += 1
    if not j:
        return basis
    return tuple(np.hstack([M, N[:j].T]) for M, N in ((R, Et), (XR, XEt), (AR, AEt)))


class _Deflated:
    """``X_k = X - sum_j d_j u_j v_j^T`` applied implicitly (memory O(N + P) per
    component) on a :class:`~neurospca.decomposition._data.DataOperator`."""

    def __init__(self, op, sqnorm=None):
        self.op = op
        self.U, self.V, self.d = [], [], []
        # Xc v_j, Xc^T u_j and Xc^T Xc v_j of the removed components, when known
        self.XV, self.XtU, self.AV = [], [], []
        # (x, Xc x, Xc^T Xc x) of the last vectors passed through gram():
        # every fused pass enriches the span the next starts are sought in
        self.seen = []
        self.sqnorm = op.sqnorm() if sqnorm is None else sqnorm  # ||Xc||^2 when given

    def _coef(self, vecs, x):
        return np.array([d_j * float(w @ x) for w, d_j in zip(vecs, self.d, strict=True)])

    def _subtract_combination(self, vecs, coef, out):
        for w, c in zip(vecs, coef, strict=True):
            out -= c * w
        return out

    def _minus_combination(self, vecs, coef, x):
        """:meth:`_subtract_combination` on a copy of ``x`` (its bits), with no copy."""
        if not vecs:
            return x.copy()
        return self._subtract_combination(vecs[1:], coef[1:], x - coef[0] * vecs[0])

    def dot(self, v):
        """``X_k v``."""
        return self._subtract_combination(self.U, self._coef(self.V, v), self.op.matvec(v))

    def rmatvec(self, u, exact=False):
        """``X_k^T u`` (``exact``: float64 accumulation for float32 data)."""
        return self._subtract_combination(
            self.V, self._coef(self.U, u), self.op.rmatvec(u, exact=exact)
        )

    def gram(self, v):
        """``z = X_k v`` and ``X_k^T z`` in one pass over the data."""
        return self._gram_done(v, *self.op.fused(v, -self._shift(v)))

    def _shift(self, v):
        """``D v`` (``D = sum_j d_j u_j v_j^T``): ``X_k v = Xc v - D v``."""
        return self._subtract_combination(self.U, self._coef(self.V, v), np.zeros(self.op.shape[0]))

    def _gram_done(self, v, z, g):
        """:meth:`gram` from the fused pass's ``z`` and ``Xc^T z``: ``X_k^T z``,
        and ``(v, Xc v, Xc^T Xc v)`` kept for the next starts."""
        g = self._subtract_combination(self.V, self._coef(self.U, z), g)
        if self.known():
            self.seen = self.seen[-(SEEN_MAX - 1) :] + [
                (v,) + self._undeflated(None, v, z, None, g)[::2]
            ]
        return z, g

    def gram_block(self, W):
        """``Z = X_k W`` and ``X_k^T Z`` for a block ``W`` (n_features, b) in one
        pass over the data (products in the data's type)."""
        Z, G = self.op.gram(W, self._block_shift(W))
        return Z, self._block_unshift(Z, G)

    def _block_shift(self, W):
        """``D W`` (``D = sum_j d_j u_j v_j^T``): ``X_k W = Xc W - D W``."""
        C = np.zeros((self.op.shape[0], W.shape[1]))
        for u_j, v_j, d_j in zip(self.U, self.V, self.d, strict=True):
            C += np.outer(u_j, d_j * (v_j @ W))
        return C

    def _block_unshift(self, Z, G):
        """``X_k^T Z`` from ``G = Xc^T Z`` (in place)."""
        for u_j, v_j, d_j in zip(self.U, self.V, self.d, strict=True):
            G -= np.outer(v_j, d_j * (u_j @ Z))
        return G

    def known(self):
        """True when ``Xc v_j`` and ``Xc^T u_j`` are kept for every component removed."""
        return self.XV is not None and len(self.XV) == len(self.U)

    def _undeflated(self, u, v, xv, xtu, xtxv):
        """``Xc v``, ``Xc^T u`` and ``Xc^T Xc v`` from ``X_k v``, ``X_k^T u`` and
        ``X_k^T X_k v`` (``X_k = Xc - D``, ``D = sum_j d_j u_j v_j^T``):
        ``A v = X_k^T X_k v + Xc^T D v + D^T Xc v - D^T D v``."""
        cv = self._coef(self.V, v)  # d_j (v_j . v): D v = sum_j cv_j u_j
        xcv = xv - self._subtract_combination(self.U, cv, np.zeros_like(xv))
        xcu = (
            None
            if xtu is None
            else xtu - self._subtract_combination(self.V, self._coef(self.U, u), np.zeros_like(xtu))
        )
        if xtxv is None:
            return xcv, xcu, None
        dv = -self._subtract_combination(self.U, cv, np.zeros_like(xv))
        av = (
            xtxv
            - self._subtract_combination(self.XtU, cv, np.zeros_like(xtxv))
            - self._subtract_combination(self.V, self._coef(self.U, xcv), np.zeros_like(xtxv))
            + self._subtract_combination(self.V, self._coef(self.U, dv), np.zeros_like(xtxv))
        )
        return xcv, xcu, av

    def deflate(self, u, v, d, xv=None, xtu=None, xtxv=None):
        """Remove ``d u v^T``. ``xv = X_k v``, ``xtu = X_k^T u`` and ``xtxv =
        X_k^T X_k v`` (this component's own deflated products, when known) are
        kept as ``Xc v``, ``Xc^T u`` and ``Xc^T Xc v``."""
        if xv is not None and xtu is not None and self.known():
            xcv, xcu, av = self._undeflated(u, v, xv, xtu, xtxv)
            self.XV.append(xcv)
            self.XtU.append(xcu)
            self.AV.append(av)
        else:
            self.XV = self.XtU = self.AV = None
        self.sqnorm = max(self.sqnorm - d * d * float(v @ v), 0.0)
        self.U.append(u)
        self.V.append(v)
        self.d.append(d)

    def start_basis(self, basis):
        """``basis = (R, Xc R, Xc^T Xc R)`` with the removed components' ``v_j``
        added (orthonormalised) when their products are known: the leftover of
        a direction that a sparse ``v_j`` took only in part lies in that span."""
        if basis is None or not self.known():
            return basis
        extra = [
            (self.V[j], self.XV[j], av) for j, av in enumerate(self.AV) if av is not None
        ] + self.seen
        if not extra:
            return basis
        if is_tall(len(extra[0][0]), len(extra) + basis[0].shape[1]):
            return _extended(basis, *(np.array([e[i] for e in extra]) for i in range(3)))
        E, XE, AE = (np.column_stack([e[i] for e in extra]) for i in range(3))
        R, XR, AR = basis  # small: Householder QR of the whole block
        B, XB, AB = (np.column_stack([M, N]) for M, N in ((R, E), (XR, XE), (AR, AE)))
        Q, T = np.linalg.qr(B)
        diag = np.abs(np.diag(T))
        ok = diag > SPAN_RTOL * diag.max()  # a v_j (almost) in the span adds nothing
        if not ok.all():
            B, XB, AB = B[:, ok], XB[:, ok], AB[:, ok]
            Q, T = np.linalg.qr(B)
        # B = Q T: Xc Q = Xc B T^-1, A Q = A B T^-1
        return Q, np.linalg.solve(T.T, XB.T).T, np.linalg.solve(T.T, AB.T).T

    def deflated_basis(self, basis):
        """``(Q, X_k Q, X_k^T X_k Q)`` for the orthonormal ``Q`` of
        :meth:`start_basis` with no pass over the data, or None when the
        removed components' products are not known.

        With ``basis = (Q, Xc Q, A Q)``: ``X_k Q = Xc Q - sum_j d_j u_j
        (v_j^T Q)`` and ``X_k^T Z = Xc^T Z - sum_j d_j v_j (u_j^T Z)`` with
        ``Xc^T X_k Q = A Q - sum_j d_j (Xc^T u_j) (v_j^T Q)``.
        """
        if basis is None or not self.known():
            return None
        Q, XQ, AQ = self.start_basis(basis)
        if not self.U:
            return Q, XQ.copy(), AQ.copy()
        # the rank-k corrections as two BLAS-3 products (k = components removed)
        d = np.asarray(self.d)[:, None]
        C = d * (np.array(self.V) @ Q)  # row j: d_j v_j^T Q
        XkQ = XQ - np.array(self.U).T @ C
        D = d * (np.array(self.U) @ XkQ)  # row j: d_j u_j^T X_k Q
        AkQ = AQ - np.array(self.XtU + self.V).T @ np.vstack([C, D])
        return Q, XkQ, AkQ


def gram_blocks(defls, Ws):
    """``[defl.gram_block(W) for defl, W in zip(defls, Ws)]`` in ONE pass over
    the data (deflations of the same operator), each equal bit for bit to its
    own ``gram_block`` (:meth:`DataOperator.gram_groups`)."""
    shifts = [defl._block_shift(W) for defl, W in zip(defls, Ws, strict=True)]
    got = defls[0].op.gram_groups(Ws, shifts)
    return [(Z, defl._block_unshift(Z, G)) for defl, (Z, G) in zip(defls, got, strict=True)]
