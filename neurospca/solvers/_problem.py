"""The v-step problem type: ``min_v ||v - y||^2 / 2`` plus a sum of penalty pieces."""

import numpy as np

from .gap import primal_certificate, prox_gap
from .penalties import L1, GroupNorm


class ProxProblem:
    """The prox problem ``P(v) = ||v - y||^2 / 2 + sum_p h_p(v)`` of one v-step.

    The pieces are those of :mod:`neurospca.solvers.penalties`: at most one
    separable piece (the l1 norm) and any number of composite pieces
    ``phi(D v)``. Pieces that vanish at weight 0 and ask to be dropped then
    (:class:`~neurospca.solvers.penalties.GraphLaplacian`) are dropped, so a
    zero weight gives exactly the problem without the piece.

    Parameters
    ----------
    y : ndarray of shape (n_features,)
        The point at which the prox is taken (float64, or float32 for the
        float32 kernels of :func:`~neurospca.solvers.prox.solve_dual`;
        finite; not checked: the public solvers and estimators validate
        their inputs).
    pieces : sequence of pieces
        The penalties, with prox-scale weights.

    Raises
    ------
    ValueError
        More than one separable piece.
    """

    def __init__(self, y, pieces):
        self.y = y
        self.pieces = [p for p in pieces if not (p.drop_when_zero and p.weight == 0.0)]
        separable = [p for p in self.pieces if p.kind == "separable"]
        if len(separable) > 1:
            raise ValueError(
                "a v-step takes at most one separable penalty, got "
                f"{[p.name for p in separable]}; add their weights instead."
            )
        self.separable = separable[0] if separable else None
        self.composite = [p for p in self.pieces if p.kind == "composite"]

    @property
    def n_dual(self):
        """Number of dual variables: the rows of all composite pieces."""
        return int(sum(p.n_dual for p in self.composite))

    def fast_form(self):
        """``(l1, operator, group)`` when the problem is l1 plus one group norm.

        That is the problem of the compiled kernels (the fused difference
        kernel when the operator has a difference form, else the CSR one).

        Returns
        -------
        tuple or None
            ``(l1 weight, GroupOperator, group weight)``, or None for any other
            set of pieces.
        """
        if len(self.composite) != 1 or type(self.composite[0]) is not GroupNorm:
            return None
        if self.separable is not None and type(self.separable) is not L1:
            return None
        l1 = self.separable.weight if self.separable is not None else 0.0
        group = self.composite[0]
        return l1, group.operator, group.weight

    def objective(self, v):
        """``P(v)``.

        Parameters
        ----------
        v : array_like of shape (n_features,)
            Any point.

        Returns
        -------
        float
            ``||v - y||^2 / 2`` plus the value of every piece.
        """
        v = np.asarray(v, dtype=np.float64)
        return 0.5 * float(np.sum((v - self.y) ** 2)) + sum(p.value(v) for p in self.pieces)

    def rescaled(self, s):
        """The problem at ``y / s``, whose solution is ``v* / s``.

        Parameters
        ----------
        s : float
            Divides ``y``; each piece is rescaled to match.

        Returns
        -------
        ProxProblem
            The problem at unit scale when ``s`` is the size of ``y``.
        """
        return ProxProblem(self.y / s, [p.rescaled(s) for p in self.pieces])

    def split(self, w):
        """The blocks of ``w``, one per composite piece.

        Parameters
        ----------
        w : ndarray of shape (n_dual,)
            The dual variables of all composite pieces, concatenated.

        Returns
        -------
        list of ndarray
            Views of ``w``.
        """
        bounds = np.cumsum([0] + [p.n_dual for p in self.composite])
        return [w[i:j] for i, j in zip(bounds[:-1], bounds[1:], strict=True)]

    def primal_of(self, x):
        """The prox of the separable piece at ``x`` (``x`` itself without one).

        Parameters
        ----------
        x : ndarray of shape (n_features,)
            A point.

        Returns
        -------
        ndarray of shape (n_features,)
        """
        return self.separable.prox(x) if self.separable is not None else x.copy()

    def dual_value(self, x, v, w_blocks):
        """``D(w)`` given ``x = y - D^T w``, ``v = v(w)`` and the feasible blocks.

        ``D(w) = ||y||^2/2 - ||x||^2/2 + ||v - x||^2/2 + h_sep(v) - sum_p phi_p*(w_p)``.

        Parameters
        ----------
        x : ndarray of shape (n_features,)
            ``y - sum_p D_p^T w_p``.
        v : ndarray of shape (n_features,)
            ``primal_of(x)``.
        w_blocks : list of ndarray
            Feasible dual blocks.

        Returns
        -------
        float
        """
        y = self.y
        value = 0.5 * float(y @ y) - 0.5 * float(x @ x) + 0.5 * float(np.sum((v - x) ** 2))
        if self.separable is not None:
            value += self.separable.value(v)
        return value - sum(p.conjugate(b) for p, b in zip(self.composite, w_blocks, strict=True))

    def gap(self, v, w):
        """Exact Fenchel gap ``P(v) - D(w)`` after making ``w`` feasible.

        For ANY finite ``w`` (each block is first mapped by its piece's
        ``feasible``) the result bounds ``P(v) - P(v*)`` (weak duality).

        Parameters
        ----------
        v : ndarray of shape (n_features,)
            Any primal point.
        w : ndarray of shape (n_dual,)
            Any dual point.

        Returns
        -------
        gap : float
            ``inf`` when not finite.
        primal : float
            ``P(v)``.
        """
        fast = self.fast_form()
        if fast is not None:
            return prox_gap(v, self.y, fast[1], fast[0], fast[2], w)
        with np.errstate(over="ignore", invalid="ignore"):
            w = np.asarray(w, dtype=np.float64)
            blocks = [p.feasible(b) for p, b in zip(self.composite, self.split(w), strict=True)]
            x = self.y.copy()
            for p, b in zip(self.composite, blocks, strict=True):
                x -= p.rmatvec(b)
            primal = self.objective(v)
            gap = primal - self.dual_value(x, self.primal_of(x), blocks)
        if not np.isfinite(gap):
            return np.inf, primal
        return max(gap, 0.0), primal

    def certificate(self, v, state=None, mus=(), tol_abs=None):
        """The best exact gap at ``v`` over a few dual points.

        The candidates are ``state`` (a dual point from a solver) if given,
        tried first, and each piece's ``dual_candidate(D v, mu)`` for ``mu`` in
        ``mus`` and 0. Each gives a valid bound (:meth:`gap`), so does their
        minimum.

        Parameters
        ----------
        v : ndarray of shape (n_features,)
            Any primal point.
        state : ndarray of shape (n_dual,), optional
            A dual point, e.g. the last state of the dual solver.
        mus : sequence of float
            Smoothing levels of the candidates.
        tol_abs : float, optional
            When ``state`` alone certifies a gap of at most ``tol_abs``, that
            gap is returned without evaluating the other candidates (a valid
            bound, not always the smallest; it saves their products).

        Returns
        -------
        gap : float
        primal : float
            ``P(v)``.
        """
        best = np.inf
        if state is not None:
            best, primal = self.gap(v, state)
            if tol_abs is not None and best <= tol_abs:
                return best, primal
        fast = self.fast_form()
        if fast is not None:
            l1, operator, group = fast
            gap, primal = primal_certificate(v, self.y, operator, l1, group, mus)
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                Dv = [p.matvec(np.asarray(v, dtype=np.float64)) for p in self.composite]
            gap, primal = np.inf, self.objective(v)
            for mu in tuple(mus) + (0.0,):
                w = np.concatenate(
                    [np.zeros(0)]
                    + [p.dual_candidate(z, mu) for p, z in zip(self.composite, Dv, strict=True)]
                )
                gap = min(gap, self.gap(v, w)[0])
        return min(best, gap), primal
