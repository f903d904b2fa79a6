"""What every command shares before it works: user errors, progress messages, input
paths (globs, existing files) and the checks before any work (output folder
writable, inputs not among the outputs, plot meshes and background readable)."""

import glob
import os
import re
import sys
import tempfile

from .._utils.io import regular_file, same_file
from .._utils.signals import signals_blocked

__all__ = [
    "OUTPUT_FILE",
    "UserError",
    "say",
    "format_rel",
    "expand",
    "existing",
    "report_path",
    "check_report_dependencies",
    "check_before_work",
]

OUTPUT_FILE = re.compile(
    r"(report\.html|scores\.csv|model\.npz|associations\.tsv|"
    r"loadings[A-Za-z0-9_.-]*\.(nii\.gz|nii|gii|mgh|mgz))\Z"
)


class UserError(Exception):
    """A problem with the command line or the inputs (exit code 2)."""


def say(args, message):
    """Print a progress message on stderr unless ``args.quiet``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    message : str
        One line.

    Returns
    -------
    None
    """
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr, flush=True)


def format_rel(alpha_rel):
    """``alpha_rel`` as the command line shows it (a number or ``'auto'``).

    Parameters
    ----------
    alpha_rel : float or str
        The relative penalty.

    Returns
    -------
    str
    """
    return f"{alpha_rel:g}" if not isinstance(alpha_rel, str) else repr(alpha_rel)


def expand(paths, option):
    """Expand globs (sorted) and check every file exists.

    Parameters
    ----------
    paths : list of str
        Paths or glob patterns.
    option : str
        The option named in errors.

    Returns
    -------
    list of str
    """
    out = []
    for p in paths:
        if glob.has_magic(p):
            matches = sorted(glob.glob(os.path.expanduser(p)))
            if not matches:
                raise UserError(f"{option}: the pattern {p!r} matches no file.")
            out.extend(matches)
        else:
            out.append(existing(p, option))
    return out


def existing(path, option):
    """``path`` if it is None or an existing regular file, else UserError naming
    ``option`` (a folder, FIFO or device that exists is not a file).

    Parameters
    ----------
    path : str or None
        A path given on the command line.
    option : str
        The option named in errors.

    Returns
    -------
    str or None
    """
    if path is not None:
        try:
            regular_file(path, option)
        except (OSError, ValueError) as exc:
            raise UserError(str(exc)) from None
    return path


def report_path(args):
    """Where ``neurospca report`` writes (str): ``args.output`` or report.html next to
    ``args.model``."""
    return args.output or os.path.join(os.path.dirname(os.path.abspath(args.model)), "report.html")


# --------------------------------------------------------------------------
# checks before any work
# --------------------------------------------------------------------------


def check_report_dependencies():
    """Fail before any work when the report's libraries are missing.

    Returns
    -------
    None
    """
    import importlib.util

    missing = [
        m for m in ("jinja2", "matplotlib", "nilearn") if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise UserError(f'the report needs {", ".join(missing)}: pip install "neurospca[report]"')


def _probe_writable(folder, option):
    """Create and remove a folder in ``folder``: fails (UserError) if it is not writable."""
    with signals_blocked():  # the probe is never left behind
        try:
            probe = tempfile.mkdtemp(prefix=".neurospca-probe-", dir=folder)
            os.rmdir(probe)
        except OSError as exc:
            raise UserError(
                f"{option}: cannot write in {folder!r} ({exc.strerror or exc}); "
                "choose a writable folder."
            ) from None


def _input_files(args):
    """``(option, path)`` of every existing file named on the command line."""
    found = []
    for key, value in sorted(vars(args).items()):
        if key in ("output", "command", "title", "func", "argv"):
            continue
        option = "MODEL" if key == "model" else "--" + key.replace("_", "-")
        values = value if isinstance(value, list) else [value]
        for v in values:
            if not isinstance(v, str) or not v:
                continue
            for path in glob.glob(os.path.expanduser(v)) if glob.has_magic(v) else [v]:
                if os.path.isfile(path):
                    found.append((option, path))
    return found


def _check_inputs_not_outputs(args, out):
    """UserError if an input file is one the run would replace or remove in ``out``."""
    real_out = os.path.realpath(out)
    for option, path in _input_files(args):
        real = os.path.realpath(path)
        if os.path.dirname(real) == real_out and OUTPUT_FILE.match(os.path.basename(real)):
            raise UserError(
                f"{option}: {path!r} is in --output and would be replaced by "
                "this run's outputs; move it or choose another --output."
            )


def check_before_work(args):
    """Fail before loading or fitting anything: output writable, plot meshes and the
    background image readable and valid (the report uses them after the fit).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    None
    """
    if args.command in ("fit", "demo"):
        out = os.path.abspath(os.fspath(args.output))
        if os.path.exists(out) and not os.path.isdir(out):
            raise UserError(f"--output: {out!r} exists and is not a folder.")
        parent = os.path.dirname(out)
        if not os.path.isdir(parent):
            raise UserError(f"--output: the parent folder {parent!r} does not exist.")
        _probe_writable(parent, "--output")
        if os.path.isdir(out):
            _probe_writable(out, "--output")
            _check_inputs_not_outputs(args, out)
    elif args.command == "report":
        out = report_path(args)
        folder = os.path.dirname(os.path.abspath(out))
        if os.path.isdir(folder):
            _probe_writable(folder, "--output")
        for option, path in _input_files(args):
            if same_file(out, path):
                raise UserError(
                    f"--output: {out!r} is the input {option}; writing the "
                    "report there would destroy it. Choose another --output."
                )
    bg_img = getattr(args, "bg_img", None)
    if bg_img is not None and os.path.exists(bg_img):  # read now, not after the fit
        from .._utils.images import image_data, load_image

        try:
            image_data(load_image(bg_img, "--bg-img"), "--bg-img")
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
    if args.command == "fit":
        from ..surface import check_plot_mesh, load_surf_mesh

        for hemi in ("left", "right"):
            path = getattr(args, f"{hemi}_plot_mesh", None)
            if path is None:
                continue
            option = f"--{hemi}-plot-mesh"
            existing(path, option)
            try:
                check_plot_mesh(*load_surf_mesh(path, option), name=option)
            except (ValueError, TypeError) as exc:
                raise UserError(str(exc)) from None
