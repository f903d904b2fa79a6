"""Certified support of a v-step solution: which loadings are surely zero or non-zero.

A v-step is the prox problem (:class:`~neurospca.solvers.ProxProblem`)

.. math::

    P(v) = \\tfrac12 \\|v - y\\|_2^2 + a \\|v\\|_1 + b \\sum_g \\|A_g v\\|_2 ,

which is 1-strongly convex, so a certified gap ``G >= P(v) - P(v*)`` gives
``||v - v*||_2 <= r = sqrt(2 G)``. Hence:

- **certified non-zero**: ``|v_j| > r`` implies ``v*_j != 0`` with the sign of
  ``v_j``;
- **certified zero** (a gap-safe test, after Ndiaye, Fercoq, Gramfort and
  Salmon, extended to the groups): for a set ``R`` of features, let
  ``delta`` be ``v*`` on ``R`` and 0 elsewhere. Strong convexity at the
  optimum, ``P(v* - delta) >= P(v*) + ||delta||^2 / 2``, expands to

  .. math::

      a \\|\\delta\\|_1 \\le \\langle \\delta, y - v^* \\rangle
      - b \\sum_{g \\in \\partial R} \\langle \\xi_g, A_g \\delta \\rangle
      - b \\sum_{g \\subset R} \\|A_g \\delta\\|_2 ,

  with ``xi_g`` a subgradient of ``||.||`` at ``A_g (v* - delta)`` for the
  groups that straddle ``R`` and its complement. Bounding ``y - v*`` by the
  ball of radius ``r`` around ``y - v``, ``b ||A_g delta|| >= <w_g, A_g
  delta>`` for any dual point ``||w_g|| <= b`` (the solver's) on the groups
  inside ``R``, and ``xi_g`` by ``A_g v / ||A_g v||`` within
  ``eps_g = 2 ||A_g||_F r / ||A_g v||`` on the straddling groups (or by 0
  within 1), every term is a multiple of ``|delta_j|``:

  .. math::

      \\sum_{j \\in R} |\\delta_j| \\, (a - |q_j| - r - b\\, p_j) \\le 0,
      \\quad q = y - v - A^T \\tilde w, \\quad
      p_j = \\sum_{g \\in \\partial R} \\varepsilon_g \\|A_g e_j\\|_2 .

  When every coefficient is positive, ``delta = 0``: ``v*`` is zero on all
  of ``R``. Features whose coefficient is not positive are removed from
  ``R`` and the test is repeated on the features that share a group with
  them (the others' coefficients do not change); when ``b ||A_g e_j|| >= a``
  for every entry, the whole connected region of a failing feature is
  removed at once (its failure would spread through it round by round).
  Inside ``R`` the test is the plain l1 one (``|y_j - (A^T w)_j| + r < a``),
  so it also fires where the group term dominates, as long as the solution
  is accurate enough (small ``r``) near the edges of the support.

**A smaller radius from a dual point** (:func:`pair_radius`). For a feasible
dual point ``w`` (``||w_g|| <= b``) let ``v_w = soft(y - A^T w, a)``, the
minimiser of the Lagrangian ``L(v, w) = ||v - y||^2 / 2 + a ||v||_1 + <w, A v>``,
which is 1-strongly convex in ``v`` with ``D(w) = L(v_w, w)``. Then

.. math::

    P^* \\ge L(v^*, w) \\ge D(w) + \\tfrac12 \\|v^* - v_w\\|^2
    \\quad\\text{and}\\quad
    P(v_w) \\ge P^* + \\tfrac12 \\|v_w - v^*\\|^2

(the first because ``<w_g, A_g v*> <= b ||A_g v*||``, the second by strong
convexity of ``P``). Adding them, ``||v_w - v*||^2 <= P(v_w) - D(w)``: the gap
of the pair ``(v_w, w)`` bounds the *squared* distance, not half of it, so the
radius of a dual solver's pair is ``sqrt(G)`` instead of ``sqrt(2 G)``. For
any other ``v``, ``||v - v*|| <= ||v - v_w|| + sqrt(P(v_w) - D(w))``.
:func:`pair_radius` computes ``v_w`` in float64 and adds explicit bounds of
its rounding; :func:`certify_support` uses the smaller of the two radii.

Everything else is **uncertain**. :func:`certify_support` returns the labels
and the radius; certified zeros are set exactly to zero in the returned ``v``.
"""

import weakref
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..operators import GroupOperator
from ._problem import ProxProblem
from .gap import prox_gap
from .penalties import L1, GroupNorm

__all__ = [
    "SupportCertificate",
    "certify_support",
    "pair_radius",
    "restricted_problem",
    "working_set",
    "ROUNDING",
]

#: Allowance for rounding in the certified gap, relative to ``P(0) = ||y||^2 / 2``:
#: the radius is ``sqrt(2 (G + ROUNDING * P(0)))``. A gap is the difference of
#: two sums of ``n_features`` terms of the size of ``P(0)``; ``1e-12`` covers
#: the rounding of such sums in float64 up to millions of features.
ROUNDING = 1e-12

#: At most this many rounds of the zero test (each removes the features that
#: fail it from ``R``); when they are used up, no zero is certified.
MAX_ROUNDS = 5000


@dataclass
class SupportCertificate:
    """What :func:`certify_support` returns.

    Parameters
    ----------
    v : ndarray of shape (n_features,)
        The input ``v`` with its certified zeros set exactly to 0 (every
        other entry unchanged).
    nonzero : ndarray of bool, shape (n_features,)
        ``v*_j != 0`` with the sign of ``v_j`` (``|v_j| > radius``).
    zero : ndarray of bool, shape (n_features,)
        ``v*_j = 0`` (the gap-safe test).
    radius : float
        A bound of ``||v - v*||_2``: the smaller of ``sqrt(2 (gap + ROUNDING *
        P(0)))`` and :func:`pair_radius` of ``(v, state)``.
    rounds : int
        Rounds of the zero test.
    """

    v: np.ndarray
    nonzero: np.ndarray
    zero: np.ndarray
    radius: float
    rounds: int = 0

    @property
    def uncertain(self):
        """Features neither certified zero nor certified non-zero."""
        return ~(self.nonzero | self.zero)

    @property
    def n_uncertain(self):
        """Number of uncertain features."""
        return int(np.count_nonzero(self.uncertain))


def certify_support(problem, v, gap, state=None):
    """Label each feature of a v-step solution: certified non-zero, zero or uncertain.

    Parameters
    ----------
    problem : ProxProblem
        The v-step, ``P(v) = ||v - y||^2 / 2 + a ||v||_1 + b sum_g ||A_g v||``
        (l1 plus at most one group norm; with other pieces only the non-zeros
        are certified).
    v : array_like of shape (n_features,)
        Any point.
    gap : float
        A certified bound of ``P(v) - P(v*)`` (prox units, e.g.
        ``SolverResult.gap``).
    state : ndarray of shape (problem.n_dual,), optional
        A dual point of the group norm (e.g. ``SolverResult.w``): the flows
        inside the zero regions. It is projected onto the balls
        ``||w_g|| <= b`` first, so any finite array is safe; None uses the
        dual candidate of ``v`` (weaker inside flat regions).

    Returns
    -------
    SupportCertificate

    Raises
    ------
    ValueError
        ``v`` of the wrong shape or not finite, ``gap`` negative or not finite.
    """
    y = np.asarray(problem.y, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if v.shape != y.shape or not np.all(np.isfinite(v)):
        raise ValueError(f"v must be a finite array of shape {y.shape}, got {v.shape}.")
    gap = float(gap)
    if not (np.isfinite(gap) and gap >= 0.0):
        raise ValueError(f"gap must be a finite number >= 0, got {gap!r}.")
    radius = float(np.sqrt(2.0 * (gap + ROUNDING * 0.5 * float(y @ y))))
    w = _pair_dual(problem, v, state)  # projected once, for the radius and the zero test
    radius = min(radius, _pair_radius(problem, v, w))
    nonzero = np.abs(v) > radius
    zero, rounds = _zero_test(problem, y, v, radius, nonzero, state, w)
    return SupportCertificate(
        v=np.where(zero, 0.0, v), nonzero=nonzero, zero=zero, radius=radius, rounds=rounds
    )


def pair_radius(problem, v, state):
    """A bound of ``||v - v*||_2`` from a dual point (module docstring).

    With ``w`` the projection of ``state`` onto the balls ``||w_g|| <= b`` and
    ``v_w = soft(y - A^T w, a)`` evaluated in float64, the bound is

    .. math::

        \\|v - v_w\\| + \\|\\delta\\| + \\sqrt{G + \\mathrm{ROUNDING}\\, P(0) + E},

    where ``G`` is the computed gap ``P(v_w) - D(w)``, ``delta_j = 2 (m_j + 3)
    eps (|y_j| + b c_j + a)`` bounds the rounding of ``v_w`` (``m_j`` entries
    and absolute column sum ``c_j`` of column ``j`` of ``A``, ``eps`` the float64
    unit roundoff; ``|(A^T w)_j| <= b c_j``), and ``E = (||v_w - y|| + ||v_w|| +
    2 ||delta||) ||delta|| + a ||delta||_1 + b c . delta`` bounds what that
    rounding changes in ``P(v_w)`` and ``D(w) = ||y||^2/2 - ||v_w||^2/2`` (``sum_g
    ||A_g delta|| <= c . |delta|``). For a dual solver's pair (``v = v_w``) it
    is about ``sqrt(G)``, ``1/sqrt(2)`` of the radius of the gap alone.

    Parameters
    ----------
    problem : ProxProblem
        l1 plus one group norm (any other form: ``inf``).
    v : ndarray of shape (n_features,)
        Any point.
    state : ndarray of shape (problem.n_dual,) or None
        A dual point (None: ``inf``).

    Returns
    -------
    float
        The bound (``inf`` when it does not apply or is not finite).
    """
    return _pair_radius(problem, v, _pair_dual(problem, v, state))


def _pair_dual(problem, v, state):
    """``state`` projected onto the balls ``||w_g|| <= b`` (:func:`_feasible_dual`),
    or None where :func:`pair_radius` does not apply (it is then ``inf``)."""
    form = _screenable(problem)
    if form is None or form[1] is None or form[2] == 0.0 or state is None or not form[1].n_rows:
        return None
    return _feasible_dual(form[1], form[2], v, state)


def _pair_radius(problem, v, w):
    """:func:`pair_radius` from the projected dual point ``w`` (:func:`_pair_dual`;
    None: ``inf``)."""
    if w is None:
        return np.inf
    a, op, b = _screenable(problem)
    y = np.asarray(problem.y, dtype=np.float64)
    t = y - op.matrix_t @ w
    vw = np.sign(t) * np.maximum(np.abs(t) - a, 0.0)
    gap = float(prox_gap(vw, y, op, a, b, w)[0])
    cols = _columns(op)
    delta = 2.0 * (cols.nnz + 3.0) * np.finfo(np.float64).eps * (np.abs(y) + b * cols.abs_sum + a)
    dn = float(np.linalg.norm(delta))
    rounding = (float(np.linalg.norm(vw - y)) + float(np.linalg.norm(vw)) + 2.0 * dn) * dn
    rounding += a * float(delta.sum()) + b * float(cols.abs_sum @ delta)
    bound = gap + ROUNDING * 0.5 * float(y @ y) + rounding
    r = float(np.linalg.norm(np.asarray(v, dtype=np.float64) - vw)) + dn + np.sqrt(bound)
    return r if np.isfinite(r) else np.inf


def restricted_problem(problem, keep):
    """The v-step on the features ``keep``, the others fixed at 0.

    When the others are certified zero (:func:`certify_support`), its
    solution is the full solution on ``keep`` and its gaps bound the full
    problem's suboptimality of a point that is 0 off ``keep``. Rows of the
    operator without an entry in ``keep`` are dropped (they vanish there).

    Parameters
    ----------
    problem : ProxProblem
        l1 plus at most one group norm.
    keep : ndarray of bool, shape (n_features,)
        The features left free.

    Returns
    -------
    sub : ProxProblem or None
        None for other pieces.
    rows : ndarray of int
        The rows of the full operator that ``sub``'s dual variables stand
        for (``w_full[rows]``); empty without a group norm.
    """
    form = _screenable(problem)
    if form is None:
        return None, np.zeros(0, np.int64)
    a, operator, b = form
    y = np.ascontiguousarray(np.asarray(problem.y, dtype=np.float64)[keep])
    if operator is None or b == 0.0:
        return ProxProblem(y, [L1(a)]), np.zeros(0, np.int64)
    A = operator.matrix[:, keep].tocsr()
    rows = np.flatnonzero(np.diff(A.indptr) > 0)
    counts = np.bincount(operator.row_group[rows], minlength=operator.n_groups)
    group_ptr = np.concatenate([[0], np.cumsum(counts)])
    sub = GroupOperator(A[rows], group_ptr, norm2=operator.norm2)
    return ProxProblem(y, [L1(a), GroupNorm(sub, b)]), rows


def working_set(problem, v, state, margin=3):
    """The v-step on the groups near the support of ``v``, the other dual variables fixed.

    The gap of a primal point ``v = soft(y - A^T w, a)`` and a dual point ``w``
    is ``sum_g (b ||A_g v|| - <w_g, A_g v>)``: it lives on the groups that
    touch the support of ``v``. Holding ``w`` fixed on every other group, the
    dual problem in the remaining groups' variables is the v-step on the
    features those groups touch, with ``y`` shifted by the fixed groups' part
    of ``A^T w``. Its solution, put back into ``w`` (and ``v``), is a point
    pair of the full problem: its certified gap is then that of the full
    problem (:meth:`ProxProblem.certificate`), whatever the working set.

    Parameters
    ----------
    problem : ProxProblem
        l1 plus one group norm.
    v : ndarray of shape (n_features,)
        The current point (its support seeds the working set).
    state : ndarray of shape (n_rows,)
        The current dual point (its groups' rows off the working set are kept).
    margin : int, default=3
        Group hops by which the support is grown; the features where ``w``
        leaves a zero loading infeasible (``|y_j - (A^T w)_j| > a``) are added,
        then every group touching one of them is taken.

    Returns
    -------
    sub : ProxProblem or None
        The working-set v-step; None for other pieces, no state or an empty
        support.
    rows : ndarray of int
        The rows of the full operator in ``sub`` (whole groups, in order).
    cols : ndarray of int
        The features of ``sub`` (every column those rows touch).
    """
    form = _screenable(problem)
    if form is None or form[1] is None or form[2] == 0.0 or state is None or not np.any(v):
        return None, np.zeros(0, np.int64), np.zeros(0, np.int64)
    a, op, b = form
    A, AT, ptr = op.matrix, op.matrix_t, op.group_ptr
    w = np.array(state, dtype=np.float64)
    y = np.asarray(problem.y, dtype=np.float64)
    feats = v != 0
    for _ in range(margin):
        feats[A.indices[_ranges(A.indptr, _rows_touching(op, feats))]] = True
    # and where w leaves the zero loadings infeasible (|y - A^T w| > a): their
    # terms of the gap would stay
    feats |= np.abs(y - AT @ w) > a
    rows = _rows_touching(op, feats)
    feats[A.indices[_ranges(A.indptr, rows)]] = True
    cols = np.flatnonzero(feats)
    counts = np.diff(ptr)[np.flatnonzero(np.bincount(op.row_group[rows]))]
    w[rows] = 0.0
    y = y[cols] - (AT @ w)[cols]
    sub_op = GroupOperator(
        A[rows][:, cols], np.concatenate([[0], np.cumsum(counts)]), norm2=op.norm2
    )
    sub = ProxProblem(np.ascontiguousarray(y), [L1(a), GroupNorm(sub_op, b)])
    return sub, rows, cols


def _rows_touching(op, feats):
    """The rows of the groups that touch one of ``feats`` (bool mask), in order."""
    AT = op.matrix_t
    touched = op.row_group[AT.indices[_ranges(AT.indptr, np.flatnonzero(feats))]]
    groups = np.flatnonzero(np.bincount(touched))  # np.unique's values, by counts
    return _ranges(op.group_ptr, groups)


def _screenable(problem):
    """``(a, operator or None, b)`` when the zero test applies, else None."""
    if any(type(p) is not GroupNorm for p in problem.composite) or len(problem.composite) > 1:
        return None
    if problem.separable is None or type(problem.separable) is not L1:
        return None
    if not problem.composite:
        return problem.separable.weight, None, 0.0
    group = problem.composite[0]
    return problem.separable.weight, group.operator, group.weight


_COLUMNS = weakref.WeakKeyDictionary()


def _columns(operator):
    """The :class:`_Columns` of an operator, built once per operator."""
    cols = _COLUMNS.get(operator)
    if cols is None:
        cols = _COLUMNS[operator] = _Columns(operator)
    return cols


class _Columns:
    """``M[g, j] = ||A_g e_j||_2``, ``||A_g||_F``, and the entries (``nnz``) and
    absolute sums (``abs_sum``) of the columns of an operator."""

    def __init__(self, operator):
        A = operator.matrix.tocoo()
        P = A.shape[1]
        self.nnz = np.bincount(A.col, minlength=P).astype(np.float64)
        self.abs_sum = np.bincount(A.col, weights=np.abs(A.data), minlength=P)
        rg = operator.row_group[A.row]
        M = sp.csr_matrix((A.data**2, (rg, A.col)), shape=(operator.n_groups, A.shape[1]))
        M.sum_duplicates()
        self.fro = np.sqrt(np.asarray(M.sum(axis=1)).ravel())
        M.data = np.sqrt(M.data)
        self.smallest = float(M.data.min()) if M.nnz else np.inf
        self.M, self.MT = M, M.T.tocsr()


def _zero_test(problem, y, v, r, nonzero, state, w=None):
    """``(zero, rounds)``: the features certified zero (module docstring); ``w``:
    ``state`` projected already (:func:`_pair_dual`), or None."""
    form = _screenable(problem)
    P = y.size
    if form is None:
        return np.zeros(P, bool), 0
    a, operator, b = form
    slack = 1e-12 * (a + float(np.max(np.abs(y), initial=0.0)))  # rounding of q
    if operator is None or b == 0.0 or operator.n_rows == 0:
        return (~nonzero) & (np.abs(y - v) + r + slack < a), 1
    if r + slack >= a:  # every coefficient a - |q_j| - r - b p_j - slack is negative
        _checked_state(operator, state)
        return np.zeros(P, bool), 0
    if w is None:  # no state: the dual candidate of v
        w = _feasible_dual(operator, b, v, state)
    test = _RegionTest(operator, y, v, r, a, b, w, slack)
    R = ~nonzero
    if b * test.cols.smallest >= a:  # a failure spreads through its whole region
        return _zero_regions(test, R), 1
    ok = test.passes(R)
    for rounds in range(1, MAX_ROUNDS + 1):
        failed = R & ~ok
        if not failed.any():
            return R, rounds
        R = R & ~failed
        # only the features sharing a group with a removed one can change
        near = test.neighbours(failed) & R
        ok[near] = test.passes_local(R, np.flatnonzero(near))
    return np.zeros(P, bool), MAX_ROUNDS


def _zero_regions(test, R):
    """``R`` without its connected regions (through shared groups, within ``R``)
    that hold a feature failing the test for ``R``.

    When ``b ||A_g e_j|| >= a`` for every entry, removing a feature from ``R``
    makes each feature of ``R`` that shares a group with it fail the next
    round (that group straddles ``R`` and a loading below the radius, so it is
    not pinned): the failure spreads through its whole region, which is
    therefore removed at once; the regions left share no group with the
    removed ones, so they pass as they did. A region is removed as soon as one
    of its features fails: the features with ``0 < |v_j| <= r`` are tested
    first (they fail where their groups keep the solver's dual point, ``|q_j| =
    a``), then every feature of the regions none of them failed.
    """
    labels, idx = _region_labels(test.cols, R)
    bad = np.zeros(labels.max(initial=-1) + 1, bool)
    first = np.flatnonzero(test.v[idx] != 0.0)
    for pos in (first, None):
        pos = np.flatnonzero(~bad[labels]) if pos is None else pos
        if pos.size:
            fails = ~test.passes_local(R, idx[pos])
            bad[labels[pos[fails]]] = True
    out = np.zeros(R.size, bool)
    out[idx[~bad[labels]]] = True
    return out


def _region_labels(cols, R):
    """``(labels, idx)``: the connected region of each feature ``idx = flatnonzero(R)``
    (through shared groups, within ``R``)."""
    from scipy.sparse.csgraph import connected_components

    M = cols.M
    n_groups, n_features = M.shape
    # bipartite graph: the groups, then every feature; a group's edges go to its
    # features in R (built from M's rows as they are: no column slicing, no sort)
    keep = R[M.indices]
    ends = np.concatenate([[0], np.cumsum(keep)])
    ptr = np.concatenate([ends[M.indptr], np.full(n_features, ends[-1])])
    n = n_groups + n_features
    graph = sp.csr_matrix((np.ones(int(ends[-1])), M.indices[keep] + n_groups, ptr), shape=(n, n))
    idx = np.flatnonzero(R)
    return connected_components(graph, directed=False)[1][n_groups + idx], idx


def _feasible_dual(operator, b, v, state):
    """The dual point ``w`` projected onto ``||w_g|| <= b`` (the candidate of ``v`` if None)."""
    if state is None:
        z = operator.matvec(v)
        n = operator.group_norms(z)[operator.row_group]
        return np.where(n > 0, b * z / np.where(n > 0, n, 1.0), 0.0)
    w = _checked_state(operator, state)
    n = operator.group_norms(w)[operator.row_group]
    return np.where(n > b, w * (b / np.where(n > 0, n, 1.0)), w)


def _checked_state(operator, state):
    """``state`` as a float64 vector (None stays None); a ValueError if it has the
    wrong shape or is not finite."""
    if state is None:
        return None
    w = np.array(state, dtype=np.float64).ravel()
    if w.shape != (operator.n_rows,) or not np.all(np.isfinite(w)):
        raise ValueError(f"state must be a finite array of shape ({operator.n_rows},).")
    return w


class _RegionTest:
    """The coefficients ``a - |q_j| - r - b p_j`` of the zero test (module docstring)."""

    def __init__(self, operator, y, v, r, a, b, w, slack):
        self.op, self.cols = operator, _columns(operator)
        self.y, self.v, self.r, self.a, self.b, self.w, self.slack = y, v, r, a, b, w, slack
        # buffers of passes_local: only the entries written in a call are read in it
        self._w_buf, self._eps_buf = np.zeros(operator.n_rows), np.zeros(operator.n_groups)

    def neighbours(self, feats):
        """Features sharing a group with one of ``feats`` (bool mask)."""
        M, MT = self.cols.M, self.cols.MT
        groups = np.flatnonzero(np.bincount(MT.indices[_ranges(MT.indptr, np.flatnonzero(feats))]))
        out = np.zeros(feats.size, bool)
        out[M.indices[_ranges(M.indptr, groups)]] = True
        return out

    def passes_local(self, R, feats):
        """:meth:`passes` for the features ``feats`` only, by gathers (no sparse slicing)."""
        op, M, MT = self.op, self.cols.M, self.cols.MT
        A, AT = op.matrix, op.matrix_t
        groups = np.flatnonzero(np.bincount(MT.indices[_ranges(MT.indptr, feats)]))
        gm = _ranges(M.indptr, groups)  # the entries of M in those groups
        g_of = np.repeat(np.arange(groups.size), np.diff(M.indptr)[groups])
        in_R = R[M.indices[gm]]
        inside = np.bincount(g_of, weights=in_R, minlength=groups.size) > 0
        outside = np.bincount(g_of, weights=~in_R, minlength=groups.size) > 0
        edge = inside & outside
        rows = _ranges(op.group_ptr, groups)
        local = np.repeat(np.arange(groups.size), np.diff(op.group_ptr)[groups])
        ar = _ranges(A.indptr, rows)
        cols_ar = A.indices[ar]
        vhat = np.where(R[cols_ar], 0.0, self.v[cols_ar])
        r_of = np.repeat(np.arange(rows.size), np.diff(A.indptr)[rows])
        z = np.bincount(r_of, weights=A.data[ar] * vhat, minlength=rows.size)
        zn = np.sqrt(np.bincount(local, weights=z * z, minlength=groups.size))
        safe = np.where(zn > 0, zn, 1.0)
        eps = np.where(zn > 0, 2.0 * self.cols.fro[groups] * self.r / safe, np.inf)
        pinned = edge & (eps < 1.0)
        eps_full, w_full = self._eps_buf, self._w_buf
        eps_full[groups] = np.where(pinned, eps, np.where(edge, 1.0, 0.0))
        w_t = np.where(edge[local], 0.0, self.w[rows])
        w_full[rows] = np.where(pinned[local], self.b * z / safe[local], w_t)
        at = _ranges(AT.indptr, feats)
        f_of = np.repeat(np.arange(feats.size), np.diff(AT.indptr)[feats])
        atw = np.bincount(f_of, weights=AT.data[at] * w_full[AT.indices[at]], minlength=feats.size)
        mt = _ranges(MT.indptr, feats)
        f_of = np.repeat(np.arange(feats.size), np.diff(MT.indptr)[feats])
        pen = np.bincount(
            f_of, weights=MT.data[mt] * eps_full[MT.indices[mt]], minlength=feats.size
        )
        q = self.y[feats] - self.v[feats] - atw
        return np.abs(q) + self.r + self.b * pen + self.slack < self.a

    def passes(self, R, feats=None):
        """Whether each feature (of ``feats``, default all) has a positive coefficient for ``R``."""
        op, cols = self.op, self.cols
        if feats is None:
            groups, rows = np.arange(op.n_groups), np.arange(op.n_rows)
            feats = np.arange(R.size)
        else:
            groups = np.unique(cols.MT[feats].indices)
            rows = _ranges(op.group_ptr, groups)
        M = cols.M[groups] if groups.size < op.n_groups else cols.M
        A = op.matrix[rows] if rows.size < op.n_rows else op.matrix
        inside = np.asarray(M @ R.astype(np.float64)).ravel() > 0
        outside = np.asarray(M @ (~R).astype(np.float64)).ravel() > 0
        edge = inside & outside  # groups straddling R and the rest
        z = A @ np.where(R, 0.0, self.v)
        local = np.repeat(np.arange(groups.size), np.diff(op.group_ptr)[groups])
        zn = np.sqrt(np.bincount(local, weights=z * z, minlength=groups.size))
        safe = np.where(zn > 0, zn, 1.0)
        eps = np.where(zn > 0, 2.0 * cols.fro[groups] * self.r / safe, np.inf)
        pinned = edge & (eps < 1.0)
        eps_edge = np.where(pinned, eps, np.where(edge, 1.0, 0.0))
        w_t = np.where(edge[local], 0.0, self.w[rows])
        w_t = np.where(pinned[local], self.b * z / safe[local], w_t)
        if feats.size == R.size:  # all features: no column slicing
            q = self.y - self.v - A.T @ w_t
            pen = M.T @ eps_edge
        else:
            q = self.y[feats] - self.v[feats] - A[:, feats].T @ w_t
            pen = M[:, feats].T @ eps_edge
        return np.abs(q) + self.r + self.b * pen + self.slack < self.a


def _ranges(ptr, idx):
    """``concatenate([arange(ptr[i], ptr[i + 1]) for i in idx])``, vectorised."""
    idx = np.asarray(idx, dtype=np.int64)
    starts, lens = ptr[idx], ptr[idx + 1] - ptr[idx]
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    return (offsets + np.arange(int(lens.sum()))).astype(np.int64)
