"""``neurospca report MODEL``: the HTML report of a saved model, and with ``--figures DIR``
every figure as its own file (SVG, PDF or PNG at ``--dpi``)."""

import os

import numpy as np

from .. import persistence
from .._utils.docs import fill_doc
from ._checks import UserError, existing, report_path, say

__all__ = ["run_report"]


def _check_figures_dir(args):
    """``--figures``: a folder, or a name whose parent folder exists (checked before work)."""
    folder = getattr(args, "figures", None)
    if folder is None:
        return None
    folder = os.path.abspath(folder)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UserError(f"--figures: {folder!r} exists and is not a folder.")
    if not os.path.isdir(os.path.dirname(folder)):
        raise UserError(f"--figures: the folder of {folder!r} does not exist.")
    return folder


def _anatomical_meshes(args, saved):
    """The saved meshes, with ``--anat-mesh`` coordinates as ``anat_left``/``anat_right``."""
    from ..surface import Hemispheres, load_surf_mesh

    paths = getattr(args, "anat_mesh", None)
    if not paths:
        return saved.meshes
    if not isinstance(saved.space, Hemispheres) or saved.meshes is None:
        raise UserError("--anat-mesh: this model has no surfaces (meshes) to draw.")
    meshes = dict(saved.meshes)
    for h, (hemi, path) in enumerate(zip(("left", "right"), paths, strict=True)):
        existing(path, "--anat-mesh")
        try:
            coords, _ = load_surf_mesh(path, f"--anat-mesh ({hemi})")
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
        if coords.shape != (saved.space.n_vertices[h], 3):
            raise UserError(
                f"--anat-mesh: the {hemi} mesh {path!r} has {coords.shape[0]} vertices but "
                f"the model's {hemi} hemisphere has {saved.space.n_vertices[h]}."
            )
        meshes[f"anat_{hemi}"] = np.asarray(coords, dtype=np.float64)
    return meshes


def _write_figures(args, saved, meshes, folder, bg_img, out):
    """``--figures``: every figure into ``folder`` (never over an input)."""
    from ..reporting import save_figures

    say(args, f"writing the figures ({args.figure_format}, {args.dpi:g} dpi) to {folder} ...")
    inputs = [("MODEL", args.model), ("--bg-img", bg_img), ("--output", out)]
    inputs += [("--atlas", p) for p in getattr(args, "atlas", None) or []]
    try:
        paths = save_figures(
            saved,
            folder,
            meshes=meshes,
            format=args.figure_format,
            dpi=args.dpi,
            bg_img=bg_img,
            engine=args.engine,
            inputs=inputs,
        )
    except ValueError as exc:
        raise UserError(f"--figures: {exc}") from None
    print(f"wrote {len(paths)} figure(s) to {folder}")


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
    folder = _check_figures_dir(args)
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
    meshes = _anatomical_meshes(args, saved)
    say(args, f"drawing the report of {args.model} ...")
    from .study import atlas_from_args

    if getattr(args, "atlas", None) and saved.space is None:
        raise UserError("--atlas: this model has no brain space (mask or meshes) to label.")
    atlas = atlas_from_args(args, saved.space)
    html = report.make_report(
        saved.estimator,
        saved.space,
        meshes=meshes,
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
    if folder is not None:
        _write_figures(args, saved, meshes, folder, bg_img, out)
    return 0
