"""The command implementations of ``neurospca`` (:mod:`neurospca.cli` only parses).

One module per command (``demo``, ``fit``, ``report``, and ``study`` for the
participants options); what they share by job: ``_checks`` (user errors,
messages, input paths, the checks before any work), ``_fitting`` (the image
model of the options, ``--estimator`` included, and the fit with progress
lines), ``_outputs`` (the all-or-nothing output folder); ``penalties`` the
penalty defaults and the reference example penalties that the benchmarks use
too.
"""

import importlib

from ._checks import UserError, check_before_work, check_report_dependencies, format_rel
from ._exit import leave_now

#: names resolved when first used (``__getattr__``): the commands import scikit-learn,
#: and ``python -m neurospca._commands._report_worker`` imports this package first
_LAZY = {
    "estimator_from_args": "._fitting",
    "run_demo": ".demo",
    "run_fit": ".fit",
    "run_report": ".report",
}

__all__ = [
    "UserError",
    "check_before_work",
    "check_report_dependencies",
    "estimator_from_args",
    "format_rel",
    "leave_now",
    "run_demo",
    "run_fit",
    "run_report",
]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
