"""v-step solvers of SPCA-TV: the exact-prox dual method and CONESTA.

The v-step is a :class:`ProxProblem`, ``||v - y||^2 / 2`` plus penalty pieces
(:mod:`neurospca.solvers.penalties`); by default

.. math::

    \\min_v \\tfrac12 \\|v - y\\|_2^2 + l_1 \\|v\\|_1 + \\mathrm{group}
    \\sum_g \\|A_g v\\|_2 .

The solvers of :data:`SOLVERS` solve it to a certified duality gap and return
a :class:`SolverResult`; :func:`prox_dual` and :func:`conesta` are their
front doors for the l1-plus-group-norm problem. :func:`certify_support`
labels the loadings of a solution certified non-zero, certified zero or
uncertain from its gap (:mod:`neurospca.solvers.support`). The pieces live in
:mod:`neurospca.solvers.penalties` (not re-exported here: adding a penalty
touches that module only).
"""

from ._base import SolverResult, resolve_n_threads, set_n_threads
from ._problem import ProxProblem
from ._registry import SOLVERS, get_solver
from .conesta import conesta, fista
from .gap import mu_opt, prox_objective, spca_objective
from .prox import prox_dual
from .support import SupportCertificate, certify_support

__all__ = [
    "ProxProblem",
    "SOLVERS",
    "SolverResult",
    "SupportCertificate",
    "certify_support",
    "conesta",
    "fista",
    "get_solver",
    "mu_opt",
    "prox_dual",
    "prox_objective",
    "resolve_n_threads",
    "set_n_threads",
    "spca_objective",
]
