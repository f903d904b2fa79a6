"""Former home of what the commands share, kept so that imports keep working.

The code now lives by job: :mod:`._checks` (user errors, messages, paths, the
checks before any work), :mod:`._fitting` (the image model of the options and
the fit with progress lines) and :mod:`._outputs` (the output folder).
"""

from ._checks import (
    OUTPUT_FILE,
    UserError,
    check_before_work,
    check_report_dependencies,
    existing,
    expand,
    format_rel,
    report_path,
    say,
)
from ._fitting import (
    estimator_from_args,
    fit_with_progress,
    load_maps,
    stability_summary,
    support_summary,
)
from ._outputs import run_metadata, write_all

__all__ = [
    "UserError",
    "say",
    "expand",
    "existing",
    "check_report_dependencies",
    "check_before_work",
    "estimator_from_args",
    "load_maps",
    "fit_with_progress",
    "stability_summary",
    "support_summary",
    "write_all",
    "run_metadata",
    "format_rel",
    "report_path",
    "OUTPUT_FILE",
]
