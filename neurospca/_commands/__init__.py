"""The command implementations of ``neurospca`` (:mod:`neurospca.cli` only parses).

One module per command (``demo``, ``fit``, ``report``); ``common`` holds what
they share (user errors, checks before work, the estimator of the command
line's penalties, the fit with progress lines, the all-or-nothing output
folder); ``penalties`` the penalty defaults and the reference example
penalties that the benchmarks use too.
"""

from .common import UserError, check_before_work, check_report_dependencies, estimator_from_args
from .demo import run_demo
from .fit import run_fit
from .report import run_report

__all__ = [
    "UserError",
    "check_before_work",
    "check_report_dependencies",
    "estimator_from_args",
    "run_demo",
    "run_fit",
    "run_report",
]
