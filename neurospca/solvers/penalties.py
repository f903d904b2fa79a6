"""The penalty pieces of the v-step prox problem.

The v-step of SPCA-TV (paper eq. 3 with ``u`` fixed) is

.. math::

    \\min_v P(v) = \\tfrac12 \\|v - y\\|_2^2 + \\sum_p h_p(v),

a sum of pieces ``h_p`` (:class:`~neurospca.solvers.ProxProblem`). Each piece
gives what a solver asks for, and nothing else (as skglm's penalties do):

- a *separable* piece (:class:`L1`) gives ``value(v)`` and ``prox(x)``, the
  minimiser of ``||v - x||^2 / 2 + h(v)``;
- a *composite* piece ``h(v) = phi(D v)`` (:class:`GroupNorm`,
  :class:`GraphLaplacian`) gives ``value(v)``, the linear map ``D``
  (``matvec``, ``rmatvec``, ``norm2``, ``n_dual``), the conjugate's value
  ``conjugate(w) = phi*(w)`` and prox ``prox_conjugate(w, step)``, the
  dual-feasibility map ``feasible(w)`` the certificate applies to any dual
  point, and ``dual_candidate(Dv, mu)``, a dual point built from a primal one.

The dual method handles any composite piece as one more block of dual
variables, so adding a penalty is one class here. Every piece also gives
``with_weight(weight)`` (the same piece at another weight: how the weights of
eq. 3 become prox-scale weights, :func:`eq3_pieces`) and ``rescaled(s)``
(the piece of the problem solved at ``y / s``: weights of degree-1 pieces
divide by ``s``, quadratic pieces keep theirs).
"""

import numpy as np

from .._utils.validation import check_nonneg
from ..operators import check_operator

__all__ = ["GraphLaplacian", "GroupNorm", "L1", "check_penalties", "eq3_pieces"]


class _Piece:
    """Weight bookkeeping shared by the pieces."""

    #: "separable" or "composite".
    kind = ""
    #: The key of the piece in ``penalty_weights_`` and in error messages.
    name = ""
    #: A zero-weight piece is dropped from the problem (True only for pieces
    #: whose conjugate is not finite at weight 0 and that no kernel needs).
    drop_when_zero = False
    #: Degree of positive homogeneity of the value in ``v`` (1 or 2).
    degree = 1

    def __init__(self, weight):
        self.weight = check_nonneg(weight, "weight")

    def __repr__(self):
        return f"{type(self).__name__}(weight={self.weight!r})"

    def _copy(self, weight):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.weight = float(weight)
        return new

    def with_weight(self, weight):
        """The same piece with another weight.

        Parameters
        ----------
        weight : float
            The new weight (>= 0, not checked: internal use).

        Returns
        -------
        piece
            A copy of this piece.
        """
        return self._copy(weight)

    def rescaled(self, s):
        """The piece of the problem solved at ``y / s`` (its solution is ``v / s``).

        Parameters
        ----------
        s : float
            The scale (> 0).

        Returns
        -------
        piece
            Degree-1 pieces with weight ``weight / s``; degree-2 pieces unchanged.
        """
        return self._copy(self.weight / s if self.degree == 1 else self.weight)


class L1(_Piece):
    """The l1 norm ``weight * ||v||_1``, a separable piece.

    Parameters
    ----------
    weight : float
        The weight (>= 0).
    """

    kind = "separable"
    name = "l1"

    def value(self, v):
        """``weight * ||v||_1``.

        Parameters
        ----------
        v : ndarray of shape (n_features,)
            A primal point.

        Returns
        -------
        float
        """
        return self.weight * float(np.abs(v).sum())

    def prox(self, x):
        """Soft thresholding: the minimiser of ``||v - x||^2 / 2 + weight ||v||_1``.

        Parameters
        ----------
        x : ndarray of shape (n_features,)
            The point at which the prox is taken.

        Returns
        -------
        ndarray of shape (n_features,)
        """
        return np.sign(x) * np.maximum(np.abs(x) - self.weight, 0.0)


class _Composite(_Piece):
    """A piece ``phi(D v)`` with ``D`` the matrix of a :class:`GroupOperator`."""

    kind = "composite"

    def __init__(self, operator, weight):
        super().__init__(weight)
        self.operator = check_operator(operator, getattr(operator, "n_features", -1))

    def __repr__(self):
        return f"{type(self).__name__}({self.operator!r}, weight={self.weight!r})"

    def check(self, n_features):
        """Check that the operator acts on ``n_features`` features.

        Parameters
        ----------
        n_features : int
            The number of features of the data.

        Returns
        -------
        piece
            ``self``.

        Raises
        ------
        ValueError
            The operator acts on another number of features.
        """
        check_operator(self.operator, n_features, name=f"the operator of {self.name}")
        return self

    @property
    def n_dual(self):
        """Number of dual variables of the piece (the rows of ``D``)."""
        return self.operator.n_rows

    @property
    def norm2(self):
        """``||D||_2^2`` (an upper bound)."""
        return self.operator.norm2

    def matvec(self, v):
        """``D v``.

        Parameters
        ----------
        v : ndarray of shape (n_features,)
            A primal point.

        Returns
        -------
        ndarray of shape (n_dual,)
        """
        return self.operator.matvec(v)

    def rmatvec(self, w):
        """``D^T w``.

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            A dual point.

        Returns
        -------
        ndarray of shape (n_features,)
        """
        return self.operator.rmatvec(w)


class GroupNorm(_Composite):
    """The group norm ``weight * sum_g ||A_g v||_2`` of a :class:`GroupOperator`.

    With a TV operator it is the TV penalty of the paper. ``phi`` is a sum of
    scaled Euclidean norms, its conjugate the indicator of the balls
    ``||w_g||_2 <= weight``: the prox of the conjugate and the feasibility map
    are the projection onto them.

    Parameters
    ----------
    operator : GroupOperator
        The linear map ``A`` and its groups.
    weight : float
        The weight (>= 0).
    """

    name = "tv"

    def value(self, v):
        """``weight * sum_g ||A_g v||_2``.

        Parameters
        ----------
        v : ndarray of shape (n_features,)
            A primal point.

        Returns
        -------
        float
        """
        return self.weight * self.operator.value(v) if self.weight else 0.0

    def _project(self, w):
        nrm = self.operator.group_norms(w)
        r = self.weight
        scale = np.where(nrm > r, r / np.where(nrm > 0, nrm, 1.0), 1.0)
        return w * scale[self.operator.row_group]

    def conjugate(self, w):
        """``phi*(w)``: 0 on the balls (``w`` is assumed feasible).

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            A feasible dual point.

        Returns
        -------
        float
        """
        return 0.0

    def prox_conjugate(self, w, step):
        """Projection onto the balls ``||w_g|| <= weight`` (any step).

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            A dual point.
        step : float
            The step (unused: the prox of an indicator is the projection).

        Returns
        -------
        ndarray of shape (n_dual,)
        """
        return self._project(w)

    def feasible(self, w):
        """The projection of ``w`` onto the balls (so ``phi*(w)`` is finite).

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            Any dual point.

        Returns
        -------
        ndarray of shape (n_dual,)
        """
        return self._project(np.asarray(w, dtype=np.float64))

    def dual_candidate(self, Dv, mu):
        """``weight * A_g v / max(||A_g v||, mu)``: the Nesterov dual (eq. 12).

        Parameters
        ----------
        Dv : ndarray of shape (n_dual,)
            ``A v``.
        mu : float
            Smoothing (0: the limit ``mu -> 0``).

        Returns
        -------
        ndarray of shape (n_dual,)
        """
        nrm = np.maximum(self.operator.group_norms(Dv), mu)
        scale = np.where(nrm > 0, self.weight / np.where(nrm > 0, nrm, 1.0), 0.0)
        return Dv * scale[self.operator.row_group]


class GraphLaplacian(_Composite):
    """Graph-Laplacian smoothness ``weight * v^T L v`` with ``L = D^T D``.

    ``D`` is the matrix of any :class:`GroupOperator` (a TV operator gives the
    Laplacian of its graph), so the piece is ``phi(D v)`` with
    ``phi(z) = weight ||z||^2``, whose conjugate ``||w||^2 / (4 weight)`` has
    the prox ``w / (1 + step / (2 weight))``: one more block of dual
    variables for the dual method, with no constraint. A zero weight drops
    the piece.

    Parameters
    ----------
    operator : GroupOperator
        The matrix ``D`` (its groups are not used).
    weight : float
        The weight (>= 0); in :func:`neurospca.spca_tv` and
        :class:`neurospca.SPCATV`, in the units of the paper's eq. 3, as
        ``l1``, ``l2`` and ``tv``.

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import SPCATV, chain_operator
    >>> from neurospca.solvers.penalties import GraphLaplacian
    >>> X = np.random.default_rng(0).standard_normal((20, 30))
    >>> op = chain_operator(30)
    >>> model = SPCATV(2, alpha=0.1, operator=op,
    ...                penalties=[GraphLaplacian(op, 0.05)]).fit(X)
    >>> model.penalty_weights_["l2_graph"]
    0.05
    """

    name = "l2_graph"
    drop_when_zero = True
    degree = 2

    def value(self, v):
        """``weight * ||D v||^2``.

        Parameters
        ----------
        v : ndarray of shape (n_features,)
            A primal point.

        Returns
        -------
        float
        """
        Dv = self.operator.matvec(v)
        return self.weight * float(Dv @ Dv)

    def conjugate(self, w):
        """``phi*(w) = ||w||^2 / (4 weight)``.

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            A dual point.

        Returns
        -------
        float
        """
        return float(w @ w) / (4.0 * self.weight)

    def prox_conjugate(self, w, step):
        """The prox of ``step * phi*``: ``w / (1 + step / (2 weight))``.

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            A dual point.
        step : float
            The step (> 0).

        Returns
        -------
        ndarray of shape (n_dual,)
        """
        return w / (1.0 + step / (2.0 * self.weight))

    def feasible(self, w):
        """``w`` itself: ``phi*`` is finite everywhere.

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            Any dual point.

        Returns
        -------
        ndarray of shape (n_dual,)
        """
        return np.asarray(w, dtype=np.float64)

    def dual_candidate(self, Dv, mu):
        """``grad phi(D v) = 2 weight D v``, the optimal dual point at ``v``.

        Parameters
        ----------
        Dv : ndarray of shape (n_dual,)
            ``D v``.
        mu : float
            Unused (the piece is smooth).

        Returns
        -------
        ndarray of shape (n_dual,)
        """
        return 2.0 * self.weight * Dv


def eq3_pieces(l1, tv, operator, l2, extra=()):
    """The prox-scale pieces of the v-step of paper eq. 3: the one conversion.

    ``f(v) = -X^T u . v / N + l2 ||v||^2 + l1 ||v||_1 + tv sum_g ||A_g v|| +
    sum_p h_p(v)`` is ``2 l2 (P(v) - ||y||^2 / 2)`` with
    ``y = X^T u / (2 N l2)`` and every weight divided by ``2 l2``.

    Parameters
    ----------
    l1, tv : float
        The weights of eq. 3 (>= 0).
    operator : GroupOperator
        The TV operator.
    l2 : float
        The ridge weight (> 0).
    extra : sequence of pieces
        Further penalties, weights in the units of eq. 3.

    Returns
    -------
    list
        ``[L1, GroupNorm, *extra]`` with prox-scale weights.
    """
    c = 2.0 * l2
    pieces = [L1(l1 / c), GroupNorm(operator, tv / c)]
    return pieces + [p.with_weight(p.weight / c) for p in extra]


def is_piece(obj):
    """Whether ``obj`` is a penalty piece of this module (or follows its interface).

    Parameters
    ----------
    obj : object
        Anything.

    Returns
    -------
    bool
    """
    return isinstance(obj, _Piece) or (
        getattr(obj, "kind", None) in ("separable", "composite")
        and isinstance(getattr(obj, "name", None), str) and hasattr(obj, "weight"))


def check_penalties(penalties, n_features, solver):
    """Extra penalty pieces of :func:`neurospca.spca_tv`, checked once.

    Parameters
    ----------
    penalties : list of pieces or None
        The extra penalties (composite pieces, one per name).
    n_features : int
        The number of features of the data.
    solver : DualSolver or ConestaSolver
        The registered solver that will solve the v-steps.

    Returns
    -------
    tuple
        The pieces (empty for None).

    Raises
    ------
    TypeError
        Not a list of composite pieces.
    ValueError
        A repeated name, an operator of another size, or a piece the solver
        cannot handle (the message names both).
    """
    if penalties is None:
        return ()
    if not isinstance(penalties, (list, tuple)):
        raise TypeError(
            "penalties must be a list of penalty pieces (e.g. "
            "[neurospca.solvers.penalties.GraphLaplacian(operator, weight)]), got "
            f"{type(penalties).__name__}."
        )
    names = {"l1", "l2", "tv"}
    for piece in penalties:
        if not is_piece(piece) or piece.kind != "composite":
            raise TypeError(
                "penalties must hold penalty pieces phi(D v) of "
                "neurospca.solvers.penalties (l1 and tv have their own weights), got "
                f"{piece!r}."
            )
        if piece.name in names:
            raise ValueError(
                f"penalties: the penalty name {piece.name!r} is used twice (l1, l2 and "
                "tv are set by their own weights); pass each extra penalty once."
            )
        names.add(piece.name)
        piece.check(n_features)
    return tuple(solver.check(penalties))
