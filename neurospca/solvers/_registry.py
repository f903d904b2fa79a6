"""The registry of v-step solvers: one interface for :func:`neurospca.spca_tv`.

Each solver declares which penalty pieces it supports (by what they provide)
and is asked only for what it uses; callers never switch on its name. The
warm-start state a solver returns (``SolverResult.state``) is opaque to them.
"""

from .conesta import solve_conesta
from .penalties import L1, GroupNorm
from .prox import solve_dual

#: What the dual method asks of a composite piece ``phi(D v)``.
_COMPOSITE_NEEDS = (
    "matvec",
    "rmatvec",
    "norm2",
    "n_dual",
    "conjugate",
    "prox_conjugate",
    "feasible",
    "dual_candidate",
)


class _Solver:
    """The interface of a registered solver."""

    #: The key in :data:`SOLVERS`.
    name = ""
    #: Iteration cap of one v-step when the caller gives none.
    default_max_iter = 0
    #: What the error about an unsupported piece suggests.
    _hint = ""

    def supports(self, piece):
        """Whether the solver can handle ``piece``.

        Parameters
        ----------
        piece : penalty piece
            A piece of :mod:`neurospca.solvers.penalties`.

        Returns
        -------
        bool
        """
        return self._supports(piece)

    def check(self, pieces):
        """Raise unless the solver can handle every piece (and them together).

        Parameters
        ----------
        pieces : sequence of pieces
            The penalties of the v-step.

        Returns
        -------
        list
            The pieces.

        Raises
        ------
        ValueError
            A piece the solver cannot handle, named with the solver.
        """
        for piece in pieces:
            if not self._supports(piece):
                raise ValueError(
                    f"solver {self.name!r} cannot handle the penalty {piece.name!r} "
                    f"({type(piece).__name__}); {self._hint}."
                )
        self._check_together(pieces)
        return list(pieces)

    def solve(
        self,
        problem,
        *,
        tol,
        max_iter,
        gap_every=10,
        kernels="cython",
        v=None,
        state=None,
        n_threads=None,
    ):
        """Solve one v-step to a certified gap.

        Parameters
        ----------
        problem : ProxProblem
            The v-step (validated by the caller).
        tol : float
            Scale-free tolerance of the certified gap.
        max_iter : int
            Iteration cap.
        gap_every : int, default=10
            Gap checks every ``gap_every`` iterations.
        kernels : {"cython", "numpy"}, default="cython"
            The kernels.
        v : ndarray, optional
            The previous v-step's solution (used by solvers that start from a
            primal point).
        state : object, optional
            The ``state`` of a previous result (used by solvers that keep one).
        n_threads : int, optional
            Threads of the compiled kernels (None: the default of
            :func:`neurospca.solvers.set_n_threads`, else the machine's cores);
            solvers with single-threaded kernels (CONESTA) ignore it.

        Returns
        -------
        SolverResult
            With ``state`` for the next call.
        """
        return self._solve(problem, tol, max_iter, gap_every, kernels, v, state, n_threads)

    def _check_together(self, pieces):
        pass


class DualSolver(_Solver):
    """The exact-prox dual method (:func:`neurospca.solvers.prox_dual`).

    Supports an l1 norm and any composite piece: each is one block of dual
    variables. l1 plus one group norm runs the compiled kernels. Its state is
    the dual variables.
    """

    name = "dual"
    default_max_iter = 10_000
    _hint = "a penalty needs the methods of the pieces of neurospca.solvers.penalties"

    def _supports(self, piece):
        if piece.kind == "separable":
            return hasattr(piece, "prox") and hasattr(piece, "value")
        return piece.kind == "composite" and all(hasattr(piece, m) for m in _COMPOSITE_NEEDS)

    def _solve(self, problem, tol, max_iter, gap_every, kernels, v, state, n_threads):
        return solve_dual(
            problem,
            tol=tol,
            max_iter=max_iter,
            w0=state,
            gap_every=gap_every,
            kernels=kernels,
            n_threads=n_threads,
        )


class ConestaSolver(_Solver):
    """CONESTA (:func:`neurospca.solvers.conesta`): an l1 norm and one group norm.

    Warm-started from the previous v-step's solution; the first v-step starts
    from the l1-only prox (``v^0`` of the paper's Algorithm 2). No state.
    """

    name = "conesta"
    default_max_iter = 100_000
    _hint = "use solver='dual'"

    def _supports(self, piece):
        return type(piece) in (L1, GroupNorm)

    def _check_together(self, pieces):
        if sum(type(p) is GroupNorm for p in pieces) > 1:
            raise ValueError(
                "solver 'conesta' cannot handle a second group-norm "
                "penalty 'tv'; use solver='dual'."
            )

    def _solve(self, problem, tol, max_iter, gap_every, kernels, v, state, n_threads):
        if v is None:
            v = problem.primal_of(problem.y)
        return solve_conesta(
            problem, tol=tol, v0=v, max_iter=max_iter, gap_every=gap_every, kernels=kernels
        )


#: The registered v-step solvers, by name.
SOLVERS = {"dual": DualSolver(), "conesta": ConestaSolver()}


def get_solver(name):
    """The registered solver called ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`SOLVERS`.

    Returns
    -------
    DualSolver or ConestaSolver

    Raises
    ------
    ValueError
        An unknown name.
    """
    try:
        return SOLVERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"solver must be one of {tuple(SOLVERS)}, got {name!r}.") from None
