"""v-step solvers of SPCA-TV: the exact-prox dual method and CONESTA.

Both solve the proximal problem

.. math::

    \\min_v \\tfrac12 \\|v - y\\|_2^2 + l_1 \\|v\\|_1 + \\mathrm{group}
    \\sum_g \\|A_g v\\|_2

to a certified duality gap and return a :class:`SolverResult`.
"""

from ._base import SolverResult, set_n_threads
from .conesta import conesta, fista
from .gap import mu_opt, prox_objective, spca_objective
from .prox import prox_dual

__all__ = ["SolverResult", "conesta", "fista", "mu_opt", "prox_dual",
           "prox_objective", "set_n_threads", "spca_objective"]
