"""``neurospca report MODEL``: the HTML report of a saved model."""

import os

from .. import persistence
from .._utils.docs import fill_doc
from ._checks import UserError, existing, report_path, say

__all__ = ["run_report"]


@fill_doc
def run_report(args):
    """Load ``args.model`` and write its report (a file, written whole or not at all).

    Parameters
    ----------
    %(command_args)s

    Returns
    -------
    %(exit_code)s
    """
    from ..reporting import report

    existing(args.model, "MODEL")
    try:
        saved = persistence.load_model(args.model)
    except ValueError as exc:
        raise UserError(f"MODEL: {exc}") from None
    out = report_path(args)
    if os.path.isdir(out):
        raise UserError(f"--output: {out!r} is a folder; give a file name such as report.html.")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise UserError(f"--output: the folder of {out!r} does not exist.")
    title = args.title or saved.metadata.get("title") or "neurospca report"
    # no path stored in a model file is ever opened: give --bg-img again if needed
    bg_img = existing(args.bg_img, "--bg-img")
    say(args, f"drawing the report of {args.model} ...")
    from .study import atlas_from_args

    if getattr(args, "atlas", None) and saved.space is None:
        raise UserError("--atlas: this model has no brain space (mask or meshes) to label.")
    atlas = atlas_from_args(args, saved.space)
    html = report.make_report(
        saved.estimator,
        saved.space,
        meshes=saved.meshes,
        title=title,
        data_description=saved.metadata.get("data"),
        bg_img=bg_img,
        engine=args.engine,
        metadata=saved.metadata,
        study=saved.study,
        interactive=getattr(args, "interactive", True),
        **({} if atlas is None else {"atlas": atlas}),
    )
    report.save_report(html, out)
    print(f"wrote {out}")
    return 0
