"""The command implementations of ``neurospca`` (:mod:`neurospca.cli` only parses).

One module per command (``demo``, ``fit``, ``report``, and ``study`` for the
participants options); what they share by job: ``_checks`` (user errors,
messages, input paths, the checks before any work), ``_fitting`` (the image
model of the options, ``--estimator`` included, and the fit with progress
lines), ``_outputs`` (the all-or-nothing output folder); ``penalties`` the
penalty defaults and the reference example penalties that the benchmarks use
too.
"""

from ._checks import UserError, check_before_work, check_report_dependencies, format_rel
from ._fitting import estimator_from_args
from .demo import run_demo
from .fit import run_fit
from .report import run_report

__all__ = [
    "UserError",
    "check_before_work",
    "check_report_dependencies",
    "estimator_from_args",
    "format_rel",
    "run_demo",
    "run_fit",
    "run_report",
]
