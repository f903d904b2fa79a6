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

import abc

import numpy as np

from .._utils.validation import check_nonneg
from ..operators import check_operator

__all__ = ["GraphLaplacian", "GroupNorm", "L1", "check_penalties", "eq3_pieces"]


class _Piece(abc.ABC):
    """Weight bookkeeping shared by the pieces, and the methods they all give."""

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

    @abc.abstractmethod
    def value(self, v):
        """The value of the penalty at ``v``.

        Parameters
        ----------
        v : ndarray of shape (n_features,)
            A primal point.

        Returns
        -------
        float
        """


class _Composite(_Piece):
    """A piece ``phi(D v)`` with ``D`` the matrix of a :class:`GroupOperator`.

    ``matvec(v) = D v`` and ``rmatvec(w) = D^T w`` are the operator's.
    """

    kind = "composite"

    def __init__(self, operator, weight):
        super().__init__(weight)
        self.operator = check_operator(operator, getattr(operator, "n_features", -1))
        #: ``D v`` and ``D^T w``: the operator's products.
        self.matvec, self.rmatvec = operator.matvec, operator.rmatvec

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

    @abc.abstractmethod
    def conjugate(self, w):
        """``phi*(w)`` at a feasible ``w``.

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            A feasible dual point (see :meth:`feasible`).

        Returns
        -------
        float
        """

    @abc.abstractmethod
    def prox_conjugate(self, w, step):
        """The prox of ``step * phi*`` at ``w``.

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

    @abc.abstractmethod
    def feasible(self, w):
        """A dual point at which ``phi*`` is finite, made from any ``w``.

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            Any dual point.

        Returns
        -------
        ndarray of shape (n_dual,)
        """

    @abc.abstractmethod
    def dual_candidate(self, Dv, mu):
        """A dual point made from a primal one, for certificates.

        Parameters
        ----------
        Dv : ndarray of shape (n_dual,)
            ``D v``.
        mu : float
            Smoothing (0: none).

        Returns
        -------
        ndarray of shape (n_dual,)
        """


def _doc(summary):
    """Give a method of a piece the documentation of the base method, with ``summary``."""

    def document(method):
        base = getattr(_Composite, method.__name__)
        method.__doc__ = summary + "\n\n" + base.__doc__.split("\n\n", 1)[1]
        return method

    return document


class L1(_Piece):
    """The l1 norm ``weight * ||v||_1``, a separable piece.

    Parameters
    ----------
    weight : float
        The weight (>= 0).
    """

    kind = "separable"
    name = "l1"

    @_doc("``weight * ||v||_1``.")
    def value(self, v):
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


class GroupNorm(_Composite):
    """The group norm ``weight * sum_g ||A_g v||_2`` of a :class:`GroupOperator`.

    With a TV operator it is the TV penalty of the paper. ``phi`` is a sum of
    scaled Euclidean norms, its conjugate the indicator of the balls
    ``||w_g||_2 <= weight``: the prox of the conjugate and the feasibility map
    are the projection onto them (``conjugate`` is 0 on them), and the dual
    candidate at ``v`` is the Nesterov dual ``weight * A_g v / max(||A_g v||,
    mu)`` (eq. 12).

    Parameters
    ----------
    operator : GroupOperator
        The linear map ``A`` and its groups.
    weight : float
        The weight (>= 0).
    """

    name = "tv"

    @_doc("``weight * sum_g ||A_g v||_2``.")
    def value(self, v):
        return self.weight * self.operator.value(v) if self.weight else 0.0

    def _project(self, w):
        nrm = self.operator.group_norms(w)
        r = self.weight
        scale = np.where(nrm > r, r / np.where(nrm > 0, nrm, 1.0), 1.0)
        return w * scale[self.operator.row_group]

    @_doc("0: ``w`` is assumed inside the balls.")
    def conjugate(self, w):
        return 0.0

    @_doc("The projection onto the balls ``||w_g|| <= weight`` (for any step).")
    def prox_conjugate(self, w, step):
        return self._project(w)

    @_doc("The projection of ``w`` onto the balls.")
    def feasible(self, w):
        return self._project(np.asarray(w, dtype=np.float64))

    @_doc("``weight * A_g v / max(||A_g v||, mu)``: the Nesterov dual (eq. 12).")
    def dual_candidate(self, Dv, mu):
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

    @_doc("``weight * ||D v||^2``.")
    def value(self, v):
        Dv = self.operator.matvec(v)
        return self.weight * float(Dv @ Dv)

    @_doc("``||w||^2 / (4 weight)``.")
    def conjugate(self, w):
        return float(w @ w) / (4.0 * self.weight)

    @_doc("``w / (1 + step / (2 weight))``.")
    def prox_conjugate(self, w, step):
        return w / (1.0 + step / (2.0 * self.weight))

    @_doc("``w`` itself: ``phi*`` is finite everywhere.")
    def feasible(self, w):
        return np.asarray(w, dtype=np.float64)

    @_doc("``2 weight D v``, the gradient of ``phi`` at ``D v`` (``mu`` unused).")
    def dual_candidate(self, Dv, mu):
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
        and isinstance(getattr(obj, "name", None), str)
        and hasattr(obj, "weight")
    )


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
