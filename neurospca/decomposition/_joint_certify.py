"""Certification of a joint fit's pairs against the returned model (issue 20).

Each ``v_k`` of the joint fit (:mod:`~neurospca.decomposition._joint`) is
certified for its returned ``u_k`` against the residual of the returned OTHER
components (re-solved there when its gap is above ``tol``); after the
certified-support finishing moved loadings, :func:`recheck_support` certifies
every pair again.
"""

from functools import partial

import numpy as np

from ..solvers import ProxProblem, certify_support
from ._alternation import _say
from ._deflated import _Deflated


class ProductCache:
    """Products with the centred data that the sweeps already paid for.

    Each refit of a component in a sweep starts with ``X_k^T u_k`` (a pass)
    for the scores ``u_k`` its last fused pass made (``u = X_k v / ||X_k
    v||``, with ``X_k^T u`` in the same pass), and ends with ``Xc v_k`` (a
    pass) for the loading that pass or the certification's ``X_k v`` was
    computed for. Both are kept here undeflated (``Xc v`` and ``Xc^T u``, by
    the rank-one corrections of the residual they were computed on): a later
    product with the same vector (equal bit for bit) is served from here, with
    the current residual's corrections, instead of a pass over ``X``.
    """

    def __init__(self, size):
        self.size = size
        self.xv, self.xtu, self.av = [], [], []  # av: Xc^T Xc v (the one-pass sweep's)
        self.want_checks, self.ahead = 0.0, {}  # the restart checks' look-ahead (a settle)

    @staticmethod
    def _find(entries, x):
        for key, value in reversed(entries):
            if key[0] == x[0] and np.array_equal(key, x):
                return value
        return None

    def _put(self, entries, key, value):
        entries.append((key.copy(), value))
        del entries[: -self.size]

    def matvec(self, op, v):
        """``Xc v`` (served or one pass)."""
        xv = self._find(self.xv, v)
        return op.matvec(v) if xv is None else xv.copy()

    def rmatvec_unit(self, u, copy=True):
        """``Xc^T u`` for a unit ``u`` normalised from a kept one, or None
        (``copy=False``: the kept array itself when ``u`` is its key; not to be
        written to)."""
        for key, value in reversed(self.xtu):
            if key[0] == u[0] and np.array_equal(key, u):
                return value.copy() if copy else value
            s = float(np.linalg.norm(key))
            if key[0] / s == u[0] and np.array_equal(key / s, u):
                return value / s
        return None


class _CachedDeflated(_Deflated):
    """:class:`_Deflated` that serves and keeps products in a :class:`ProductCache`."""

    def __init__(self, op, cache, sqnorm=None):
        super().__init__(op, sqnorm)
        self.cache = cache

    def _plus_d(self, vecs, coef, x):
        """``x + sum_j coef_j vecs_j`` (the residual's correction undone): the bits
        of ``x - (0 - c_0 w_0 - c_1 w_1 ...)`` (a rounded sum's negation is the
        negated sum's rounding) without the zeros."""
        if not vecs:
            return x - np.zeros_like(x)
        total = coef[0] * vecs[0]
        for w, c in zip(vecs[1:], coef[1:], strict=True):
            total += c * w
        return x + total

    def rmatvec(self, u, exact=False):
        xtu = self.cache.rmatvec_unit(u, copy=False)
        if xtu is None:
            return super().rmatvec(u, exact=exact)
        return self._minus_combination(self.V, self._coef(self.U, u), xtu)

    def dot(self, v):
        z = super().dot(v)
        self.cache._put(self.cache.xv, v, self._plus_d(self.U, self._coef(self.V, v), z))
        return z

    def gram(self, v):
        z, g = super().gram(v)
        nrm = float(np.linalg.norm(z))
        self.cache._put(self.cache.xv, v, self._plus_d(self.U, self._coef(self.V, v), z))
        if nrm > 0.0:  # the u-step's u = z / ||z|| and X_k^T u = g / ||z||
            u = z / nrm
            self.cache._put(self.cache.xtu, u, self._plus_d(self.V, self._coef(self.U, u), g / nrm))
        return z, g


def _others(op, sqnorm, U, V, d, Z, k, cache=None, norm=True):
    """``X`` minus every component but ``k``, implicitly, with its exact squared norm.

    ``Z[:, j] = X v_j`` (the centred data, not deflated):
    ``||X - sum_j d_j u_j v_j^T||^2 = ||X||^2 - 2 sum_j d_j u_j^T z_j
    + sum_ij d_i d_j (u_i . u_j)(v_i . v_j)`` over ``j != k``.
    ``norm=False``: no norm (NaN; the P-long Gram of the others' loadings not
    formed), for an alternation of one iteration, which stops after it
    whatever the residual's change.
    """
    keep = [j for j in range(U.shape[1]) if j != k and d[j] != 0.0]
    defl = _Deflated(op, sqnorm) if cache is None else _CachedDeflated(op, cache, sqnorm)
    defl.keep = keep
    for j in keep:
        defl.U.append(U[:, j])
        defl.V.append(V[:, j])
        defl.d.append(d[j])
    if not norm:
        defl.sqnorm = np.nan
        return defl
    dk = np.asarray(d)[keep]
    Uk, Vk = U[:, keep], V[:, keep]  # copies, once each
    cross = (Uk.T @ Uk) * (Vk.T @ Vk)
    fit = 2.0 * float(dk @ np.einsum("ij,ij->j", Uk, Z[:, keep]))
    defl.sqnorm = max(sqnorm - fit + float(dk @ cross @ dk), 0.0)
    return defl


def kept_rmatvecs(U, V, cache):
    """``{k: Xc^T u_k}`` of the live pairs whose product ``cache`` holds
    (:class:`ProductCache`; empty without one)."""
    out = {}
    for k in range(U.shape[1]):
        xtu = None if cache is None or not np.any(V[:, k]) else cache.rmatvec_unit(U[:, k])
        if xtu is not None:
            out[k] = xtu
    return out


def know_products(defl, Z, cache):
    """Give ``defl`` (from :func:`_others`) the products of its removed
    components, ``Xc v_j`` (the fit's ``Z``) and ``Xc^T u_j`` (the sweeps'
    :class:`ProductCache`), when the cache holds every ``Xc^T u_j``: the start
    of a component on that residual is then sought in the data's top singular
    subspace with no pass (:meth:`_Deflated.deflated_basis`). Returns whether
    it did."""
    xtu = [None if cache is None else cache.rmatvec_unit(u_j) for u_j in defl.U]
    if any(x is None for x in xtu):
        return False
    defl.XV = [Z[:, j] for j in defl.keep]
    defl.XtU = xtu
    defl.AV = [None] * len(xtu)
    return True


def _certify_all(op, sqnorm, U, V, d, Z, info, kw, tol, settled, kept=None):
    """Certify each returned ``v_k`` for its returned ``u_k`` against the
    residual of the returned other components (the sweeps certified each one
    against the others as they were then). A pair above ``tol * P(0)`` is
    re-solved there (warm start) and the pass repeated (at most
    :data:`CERTIFY_PASSES` times), until a pass changes nothing: the gaps are
    then those of the model as returned. ``converged[k]``: the sweeps settled
    and the gap is at most ``tol * P(0)``.

    ``kept``: ``{k: Xc^T u_k}`` that the fit's last passes computed
    (:func:`kept_rmatvecs`); when it holds every live pair, no pass here, and
    the operator serves the same products to the support's snapshot."""
    # Xc^T u_k of every pair in one pass (U does not change here; each equal
    # bit for bit to its own pass, issue 22)
    live = [k for k in range(U.shape[1]) if np.any(V[:, k])]
    us = [U[:, k] for k in live]
    if kept is not None and all(k in kept for k in live):
        op.keep_rmatvecs(us, [kept[k] for k in live], exact=True)
    xtu = dict(zip(live, op.rmatvecs(us, exact=True), strict=True))
    for _ in range(CERTIFY_PASSES):
        moved = False
        for k in range(U.shape[1]):
            if np.any(V[:, k]):
                moved |= _certify_one(op, sqnorm, U, V, d, Z, info, kw, tol, k, xtu)
        if not moved:
            break
    else:  # the last pass re-solved: evaluate once more, changing nothing
        for k in range(U.shape[1]):
            if np.any(V[:, k]):
                _certify_one(op, sqnorm, U, V, d, Z, info, dict(kw, solver=None), tol, k, xtu)
    for k in range(U.shape[1]):
        info["converged"][k] = bool(settled and np.any(V[:, k]) and info["rel_gaps"][k] <= tol)


def _ordered(U, V, info):
    """Components by decreasing singular value ``d_k ||v_k||`` (empty ones last)."""
    s = np.asarray(info["d"]) * np.linalg.norm(V, axis=0)
    order = np.argsort(-s, kind="stable")
    out = {}
    for key, val in info.items():
        if key in ("n_sweeps", "sweep_change"):
            out[key] = val
        elif key in ("gap_history", "rel_gap_history", "mu_history", "w", "y"):
            out[key] = [val[k] for k in order]
        else:
            out[key] = np.asarray(val)[order]
    return U[:, order], V[:, order], out


def _certify_one(op, sqnorm, U, V, d, Z, info, kw, tol, k, xtu):
    """Gap of pair ``k`` against the others; re-solve its v-step above tol (unless
    ``kw["solver"]`` is None). ``xtu[k]``: ``Xc^T u_k`` (as ``op.rmatvec(u_k,
    exact=True)``). Returns whether ``v_k`` moved."""
    l2 = kw["l2"]
    defl = _others(op, sqnorm, U, V, d, Z, k)
    u = U[:, k]  # X_k^T u exactly as defl.rmatvec(u, exact=True) computes it
    g = defl._subtract_combination(defl.V, defl._coef(defl.U, u), xtu[k].copy())
    y = g / (2.0 * op.shape[0] * l2)
    p0 = 0.5 * float(y @ y)
    problem = ProxProblem(y, kw["pieces"])
    gap, _ = problem.certificate(V[:, k], info["w"][k], (1e-3, 1e-6), tol_abs=tol * p0)
    moved = False
    if gap > tol * p0 and kw["solver"] is not None:
        res = kw["solver"].solve(
            problem,
            tol=tol,
            max_iter=kw["max_inner_iter"],
            gap_every=kw["gap_every"],
            kernels=kw["kernels"],
            v=V[:, k],
            state=info["w"][k],
            n_threads=kw["n_threads"],
        )
        if np.any(res.v):
            V[:, k], info["w"][k], gap = res.v, res.state, res.gap
            Z[:, k] = op.matvec(V[:, k])
            # defl.dot(v) from the same product (one pass, not two)
            xkv = defl._subtract_combination(defl.U, defl._coef(defl.V, V[:, k]), Z[:, k].copy())
            nrm = float(U[:, k] @ xkv)
            d[k] = nrm / float(V[:, k] @ V[:, k])
            info["n_inner_iter"][k] += res.n_iter
            moved = True
    info["y"][k] = y  # the v-step of the returned pair (certified support)
    info["gaps"][k] = 2.0 * l2 * gap
    info["rel_gaps"][k] = gap / p0 if p0 > 0 else 0.0
    done = int(info["n_inner_iter"][k])
    info["gap_history"][k] = info["gap_history"][k] + [(done, info["gaps"][k])]
    info["rel_gap_history"][k] = info["rel_gap_history"][k] + [(done, info["rel_gaps"][k])]
    return moved


#: Most certification passes of :func:`_certify_all`.
CERTIFY_PASSES = 3


def certifies_jointly(kw):
    """Whether :func:`recheck_support` certifies by a Jacobi step from a snapshot
    (:func:`certify_joint`): v-steps of l1 plus one group norm, the dual solver."""
    problem = ProxProblem(np.zeros(1), kw["pieces"])
    return JOINT_SUPPORT and problem.fast_form() is not None and kw["solver"].name == "dual"


def recheck_support(estimator, op, U, V, info, kw, tol):
    """The certified support of a joint fit: one Jacobi step from a snapshot of
    the fit (:func:`certify_joint`) when every v-step is l1 plus one group norm
    solved by the dual solver, else each pair
    certified again against the returned others (:func:`_recheck_pairs`).
    Updates ``V``, ``info`` and the ``certified_*`` attributes in place."""
    if certifies_jointly(kw):
        certify_joint(estimator, op, U, V, info, kw, tol)
    else:
        _recheck_pairs(estimator, op, U, V, info, kw, tol)


def _recheck_pairs(estimator, op, U, V, info, kw, tol):
    """After the certified-support finishing moved some ``v_k``, the others'
    residuals moved with them: every pair is certified again against the
    returned model (:func:`_certify_all`: re-solved there when above ``tol``),
    and the support labels of a pair whose loading or gap changed are
    recomputed with its final (valid) gap. Updates ``V``, ``info`` and the
    ``certified_*`` attributes of ``estimator`` in place."""
    from ..solvers import certify_support

    d = np.asarray(info["d"], dtype=np.float64)
    Z = op.matmat(V)  # one pass for all K columns
    V_before, gaps_before = V.copy(), np.asarray(info["gaps"], dtype=np.float64).copy()
    settled = [bool(c) for c in info["converged"]]
    _certify_all(op, op.sqnorm(), U, V, d, Z, info, kw, tol, True)
    info["d"] = d
    info["converged"] = np.array([c and s for c, s in zip(info["converged"], settled, strict=True)])
    for k in range(V.shape[1]):
        same = np.array_equal(V[:, k], V_before[:, k]) and info["gaps"][k] <= gaps_before[k]
        if same or not np.any(V[:, k]):
            continue
        gap = info["gaps"][k] / (2.0 * kw["l2"])
        problem = ProxProblem(info["y"][k], kw["pieces"])
        cert = certify_support(problem, V[:, k], gap, info["w"][k])
        if not np.array_equal(cert.v, V[:, k]):  # certified zeros set to 0: its own gap
            V[:, k] = cert.v
            gap = problem.certificate(V[:, k], info["w"][k], (1e-3, 1e-6))[0]
            info["gaps"][k] = 2.0 * kw["l2"] * gap
            info["rel_gaps"][k] = gap / (0.5 * float(problem.y @ problem.y))
        estimator.certified_support_[k] = cert.nonzero
        estimator.certified_zeros_[k] = cert.zero
        estimator.n_uncertain_[k] = int(np.count_nonzero(~(cert.nonzero | cert.zero)))
        norm = float(np.linalg.norm(V[:, k]))
        estimator.support_radius_[k] = cert.radius / norm if norm > 0 else np.nan


#: A joint fit's certified support comes from one Jacobi step from a snapshot
#: (:func:`certify_joint`); False: each pair certified and finished against the
#: returned others (:func:`_recheck_pairs`, round 6).
JOINT_SUPPORT = True

#: A joint fit's v-steps against the snapshot are finished until their radius
#: is at most this fraction of the component's peak loading.
JOINT_RESOLUTION = 3e-3


class Snapshot:
    """The v-steps of a joint fit against a fixed snapshot of its components.

    With the scores ``U``, scales ``d`` and loadings ``V0`` of the snapshot,
    component ``k``'s v-step on the data minus the others has

    .. math::

        y_k(V) = \\frac{X^T u_k - \\sum_{j \\ne k} d_j (u_j \\cdot u_k) v_j}{2 N l_2},

    computed here from ``X^T U`` (one pass over the data) for any ``V``
    (:meth:`y`): the snapshot's problems are ``y_k(V0)``, the returned model's
    ``y_k(V)`` for the returned ``V``.
    """

    def __init__(self, op, U, d, V0, l2):
        n = op.shape[0]
        self.n = n
        self.live = [k for k in range(V0.shape[1]) if np.any(V0[:, k])]
        self.B = np.zeros_like(V0)
        cols = op.rmatvecs([U[:, k] for k in self.live], exact=True)
        for k, g in zip(self.live, cols, strict=True):
            self.B[:, k] = g / (2.0 * n * l2)
        self.C = (U.T @ U) * (np.asarray(d, dtype=np.float64) / (2.0 * n * l2))[:, None]
        np.fill_diagonal(self.C, 0.0)  # C[j, k] = d_j (u_j . u_k) / (2 N l2), j != k
        self.V0 = V0.copy()

    def y(self, V, k):
        """``y_k(V)``: component ``k``'s v-step on the data minus the others ``V``."""
        return self.B[:, k] - V @ self.C[:, k]


def _finish_block(problem, v, state, kw, budget, resolution):
    """A v-step finished until its radius is ``resolution`` of its peak
    (:func:`~neurospca.decomposition._support._finish`); ``(v, gap, state, iterations)``."""
    from ._support import _finish, _target

    gap = problem.certificate(v, state)[0]
    target = _target(problem, v, resolution)
    if kw["solver"].name != "dual":  # _finish returns at once when the radius is met
        return v, gap, state, 0
    v, gap, state, n_iter, _ = _finish(  # state: the sweeps' last v-step's (settle)
        problem, kw["solver"], v, gap, state, target, budget, kw["n_threads"], settle=True
    )
    return v, gap, state, n_iter


def certify_joint(estimator, op, U, V, info, kw, tol, *, resolution=None):
    """The certified support of a joint fit: one Jacobi step from a snapshot.

    The sweeps' components are coupled (each one's v-step is on the data minus
    the others), so finishing one moves the others' problems: re-certifying
    every pair against the returned others in turn need not settle (issue 20
    round 6: nilearn's motor maps, scores at ``|u_j . u_k|`` 0.8-0.96, 40
    passes). Instead every live component's v-step against one SNAPSHOT of the
    others (the fit's ``U``, ``d`` and ``V``; a component whose own v-step's
    answer there is 0 is removed from the snapshot and the step repeated) is
    finished until its radius is :data:`JOINT_RESOLUTION` of its peak, its
    certified zeros set to 0 (:func:`~neurospca.solvers.certify_support`). The
    labels are those of these v-steps; ``estimator.support_others_`` holds the
    snapshot's ``d_j v_j`` (the loadings the v-step of ``k`` subtracts, ``R_k =
    Xc - sum_{j != k} u_j support_others_[:, j]^T``). The returned loadings are
    these finished ``v_k`` with the fit's ``U`` and ``d``; each pair's gap
    (``dual_gaps_``) is that of its v-step on the data minus the other RETURNED
    components. Updates ``V``, ``info`` (``info["snapshot_gaps"]``, eq. 3
    units) and the ``certified_*`` attributes of ``estimator``.
    """
    from ._support import each_component

    resolution = JOINT_RESOLUTION if resolution is None else resolution
    K, P = V.shape[1], V.shape[0]
    snap = Snapshot(op, U, info["d"], V, kw["l2"])
    fitted = list(snap.live)  # the vanished ones' gaps too (their v_k = 0 is returned)
    labels = [None] * K
    seconds = np.zeros(K)
    info["snapshot_gaps"], info["jacobi_rounds"] = np.full(K, np.nan), 0
    while True:  # a component whose v-step's answer is 0 leaves the snapshot too
        info["jacobi_rounds"] += 1
        step = partial(_jacobi_step, snap, V, info, kw, resolution=resolution)  # side by side
        for k, (labels[k], took) in each_component(step, snap.live, kw["n_threads"]).items():
            seconds[k] += took
        gone = [k for k in snap.live if not np.any(V[:, k])]
        if not gone:
            break
        snap.V0[:, gone] = 0.0
        snap.live = [k for k in snap.live if k not in gone]
    _set_labels(estimator, labels, V, P)
    if estimator.verbose:
        _say(
            "joint support: %d Jacobi rounds, %.2f s, certified non-zeros %s",
            info["jacobi_rounds"],
            float(seconds.sum()),
            estimator.certified_support_.sum(axis=1).tolist(),
        )
    estimator.support_time_ = seconds
    estimator.support_others_ = snap.V0 * np.asarray(info["d"], dtype=np.float64)
    _returned_pairs(snap, fitted, V, info, kw, tol)


def _set_labels(estimator, labels, V, P):
    """The ``certified_*`` attributes from each live component's certificate
    (None: a vanished component, every loading uncertain)."""
    K = len(labels)
    support, zeros = np.zeros((K, P), dtype=bool), np.zeros((K, P), dtype=bool)
    radius = np.full(K, np.nan)
    for k, cert in enumerate(labels):
        norm = float(np.linalg.norm(V[:, k]))
        if cert is None or norm == 0.0:
            continue
        support[k], zeros[k], radius[k] = cert.nonzero, cert.zero, cert.radius / norm
    estimator.certified_support_, estimator.certified_zeros_ = support, zeros
    estimator.n_uncertain_ = np.count_nonzero(~(support | zeros), axis=1)
    estimator.support_radius_ = radius


def _jacobi_step(snap, V, info, kw, k, resolution):
    """Component ``k``'s v-step against the snapshot, finished (from ``V[:, k]``)
    and certified; its certified zeros set to 0. Returns the certificate."""
    from ._support import FINISH_BUDGET, FINISH_MIN_ITER

    problem = ProxProblem(snap.y(snap.V0, k), kw["pieces"])
    budget = min(
        kw["max_inner_iter"], max(FINISH_MIN_ITER, FINISH_BUDGET * int(info["n_inner_iter"][k]))
    )
    v, gap, info["w"][k], n_iter = _finish_block(
        problem, V[:, k], info["w"][k], kw, budget, resolution
    )
    cert = certify_support(problem, v, gap, info["w"][k])
    V[:, k] = cert.v  # zeros of v_k* set to 0: no farther from it
    info["n_inner_iter"][k] += n_iter
    info["snapshot_gaps"][k] = 2.0 * kw["l2"] * gap
    return cert


def _returned_pairs(snap, fitted, V, info, kw, tol):
    """Each fitted pair's record for the returned model: the gap of its v-step
    on the data minus the other returned components (the snapshot's ``d``).
    With :data:`PARALLEL_PAIRS`, the pairs side by side on the fit's threads
    (:func:`~neurospca.decomposition._support.each_component`; each reads the
    returned ``V`` and writes only its own entries of ``info``)."""
    from ._support import each_component

    step = partial(_returned_pair, snap, V, info, kw, tol)
    if PARALLEL_PAIRS:
        each_component(step, fitted, kw["n_threads"])
    else:
        for k in fitted:
            step(k)


#: The returned pairs' gaps (:func:`_returned_pairs`) side by side; False (the
#: default): one after the other. Not the default: no gain measured on the
#: 2-core VM (issue 22 round 20: 0.49-1.25 s against 0.57-1.03 s for cube86's
#: three pairs; their group norms hold the GIL, the rest is memory-bound).
PARALLEL_PAIRS = False


def _returned_pair(snap, V, info, kw, tol, k):
    """Pair ``k``'s gap on the data minus the other returned components, in ``info``."""
    l2 = kw["l2"]
    problem = ProxProblem(snap.y(V, k), kw["pieces"])
    gap = problem.certificate(V[:, k], info["w"][k], (1e-3, 1e-6))[0]
    p0 = 0.5 * float(problem.y @ problem.y)
    info["y"][k] = problem.y
    info["gaps"][k] = 2.0 * l2 * gap
    info["rel_gaps"][k] = gap / p0 if p0 > 0 else 0.0
    info["converged"][k] = bool(info["converged"][k] and info["rel_gaps"][k] <= tol)
    done = int(info["n_inner_iter"][k])
    info["gap_history"][k] = list(info["gap_history"][k]) + [(done, info["gaps"][k])]
    info["rel_gap_history"][k] = list(info["rel_gap_history"][k]) + [(done, info["rel_gaps"][k])]
