"""What the commands share: user errors, checks before work, the estimator of the
command line's penalties, the fit with progress lines and the output folder."""

import csv
import datetime
import glob
import os
import re
import sys
import tempfile
import time

from .. import persistence
from .._utils.io import AtomicFolder, regular_file, same_file
from .._utils.progress import print_warnings, progress_lines
from .._utils.signals import signals_blocked
from .penalties import spcatv_defaults

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
    "support_summary",
    "write_all",
    "run_metadata",
    "format_rel",
    "report_path",
    "OUTPUT_FILE",
]

#: files that neurospca writes into an output folder (stale ones are removed on re-use)
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
        from ..masking import _image_data, _load_image

        try:
            _image_data(_load_image(bg_img, "--bg-img"), "--bg-img")
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


# --------------------------------------------------------------------------
# estimator, data, fit
# --------------------------------------------------------------------------


def estimator_from_args(args, **masking):
    """The unfitted ImageSPCATV of the command line's penalties (and ``masking``).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``alpha``, ``alpha_rel``, ``l1_ratio``,
        ``tv_ratio``, ``max_iter``, ``n_components``, ``tol``, ``solver``).
    **masking
        Passed to :class:`neurospca.image.ImageSPCATV` (``mask``, ``resample``).

    Returns
    -------
    ImageSPCATV
    """
    from ..image import ImageSPCATV

    defaults = spcatv_defaults()
    alpha = getattr(args, "alpha", None)
    alpha_rel = getattr(args, "alpha_rel", None)
    l1_ratio = getattr(args, "l1_ratio", None)
    tv_ratio = getattr(args, "tv_ratio", None)
    if alpha is not None and alpha_rel is not None:
        raise UserError("give --alpha (absolute) or --alpha-rel (relative to l1_max), not both.")
    alpha_rel = defaults["alpha_rel"] if alpha_rel is None else alpha_rel
    l1_ratio = defaults["l1_ratio"] if l1_ratio is None else l1_ratio
    tv_ratio = defaults["tv_ratio"] if tv_ratio is None else tv_ratio
    if l1_ratio + tv_ratio >= 1:
        raise UserError(f"--l1-ratio + --tv-ratio must be < 1, got {l1_ratio} + {tv_ratio}.")
    penalty = (
        f"alpha={alpha:.4g} (absolute)"
        if alpha is not None
        else f"alpha={format_rel(alpha_rel)} x l1_max (relative)"
    )
    say(
        args,
        f"SPCA-TV: {args.n_components} component(s), {penalty}, "
        f"l1_ratio={l1_ratio:.4g}, tv_ratio={tv_ratio:.4g}, tol={args.tol:g}, "
        f"solver={args.solver}",
    )
    return ImageSPCATV(
        args.n_components,
        alpha=alpha,
        alpha_rel=alpha_rel,
        l1_ratio=l1_ratio,
        tv_ratio=tv_ratio,
        tol=args.tol,
        max_iter=getattr(args, "max_iter", None) or defaults["max_iter"],
        solver=args.solver,
        n_threads=getattr(args, "n_threads", None),
        **masking,
    )


def load_maps(args, model, imgs, option):
    """Mask the images with ``model`` (an unfitted ImageSPCATV); returns X.

    Warnings (left-out voxels/vertices) become one-line notes; errors name
    ``option``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    model : ImageSPCATV
        Unfitted; its masking parameters are used.
    imgs : list of str, nibabel image or SurfaceImage
        The maps.
    option : str
        The option named in errors.

    Returns
    -------
    ndarray of shape (n_samples, n_features)
    """
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            X = model._prepare(imgs, None)
    except (ValueError, TypeError) as exc:
        raise UserError(
            f"{option}: {exc}".replace(
                "(pass resample=True, which uses nilearn.image.resample_to_img)",
                "(pass --resample)",
            )
        ) from None
    print_warnings(caught)
    if X.shape[0] < 2:
        raise UserError(f"{option}: need at least 2 maps, got {X.shape[0]}.")
    if not isinstance(model.n_components, str) and model.n_components > min(X.shape):
        raise UserError(
            f"--n-components {model.n_components} is larger than the data allow "
            f"({X.shape[0]} samples x {X.shape[1]} features)."
        )
    return X


def fit_with_progress(args, model, X):
    """Fit SPCA-TV on the masked data of ``model`` with per-component progress lines;
    warnings become one-line notes.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``quiet``, ``verbose``).
    model : ImageSPCATV
        Unfitted.
    X : ndarray
        From :func:`load_maps`.

    Returns
    -------
    ImageSPCATV
        ``model``, fitted.
    """
    quiet = getattr(args, "quiet", False)
    k = model._choose_n_components(X)
    if model.n_components_evidence_ is not None:
        say(args, model.n_components_evidence_["rule"])
    with progress_lines(k, getattr(args, "verbose", 0), quiet):
        if not quiet:
            model.set_params(verbose=1)
        try:
            t0 = time.perf_counter()
            model._fit_matrix(X, k)
            elapsed = time.perf_counter() - t0
        finally:
            model.set_params(verbose=0)
            if hasattr(model, "estimator_"):
                model.estimator_.set_params(verbose=0)
    relative = "" if model.alpha is not None else f" ({model.estimator_.alpha_rel_:g} x l1_max)"
    say(
        args,
        f"fitted {k} component(s) in {elapsed:.2f} s "
        f"(alpha = {model.estimator_.alpha_:.4g}{relative})",
    )
    for line in support_summary(model.estimator_) + stability_summary(model.estimator_):
        say(args, line)
    return model


def stability_summary(estimator):
    """The split-half reproducibility of the components, one line (none if not computed).

    Parameters
    ----------
    estimator : fitted SPCATV
        Read: ``stability_``.

    Returns
    -------
    list of str
    """
    import numpy as np

    stab = getattr(estimator, "stability_", None)
    if stab is None or not np.any(np.isfinite(stab)):
        return []
    low = [str(k + 1) for k, s in enumerate(stab) if np.isfinite(s) and s < 0.5]
    line = "split-half reproducibility of the components: " + ", ".join(f"{s:.2f}" for s in stab)
    if low:
        line += f" (component(s) {', '.join(low)} do not reproduce: below 0.5)"
    return [line]


def support_summary(estimator):
    """One line per component: certified non-zero, certified zero and uncertain loadings.

    Parameters
    ----------
    estimator : fitted SPCATV
        Read: ``certified_support_``, ``certified_zeros_``, ``n_uncertain_``,
        ``support_radius_`` (nothing is said without them).

    Returns
    -------
    list of str
    """
    import numpy as np

    support = getattr(estimator, "certified_support_", None)
    if support is None:
        return []
    lines = []
    for k, comp in enumerate(np.asarray(estimator.components_)):
        peak = float(np.max(np.abs(comp)))
        radius = float(estimator.support_radius_[k])
        hidden = int(np.count_nonzero((comp != 0) & ~support[k]))
        bound = (
            f", |loading| <= {100 * radius / peak:.2g} % of the peak"
            if peak > 0 and np.isfinite(radius)
            else ""
        )
        lines.append(
            f"component {k + 1}: {int(support[k].sum()):,} loadings certified "
            f"non-zero, {int(estimator.certified_zeros_[k].sum()):,} certified zero, "
            f"{int(estimator.n_uncertain_[k]):,} uncertain ({hidden:,} of them "
            f"non-zero{bound}; not counted, drawn or clustered)"
        )
    return lines


# --------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------


def run_metadata(args, title, data):
    """Metadata saved with the model: title, data description, command, time.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``argv``).
    title : str
        Report title.
    data : dict
        Data description (label -> value).

    Returns
    -------
    dict
    """
    return {
        "title": title,
        "data": data,
        "command": " ".join(["neurospca"] + args.argv),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _write_scores(path, scores, labels, first="sample"):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([first] + [f"component_{k + 1}" for k in range(scores.shape[1])])
        for label, row in zip(labels, scores):
            writer.writerow([label] + [f"{x:.10g}" for x in row])


def write_all(
    args,
    estimator,
    space,
    *,
    meshes,
    metadata,
    sample_labels,
    bg_img=None,
    study=None,
    associations=None,
    atlas=None,
):
    """Loadings, scores, model and report into ``args.output`` (all or nothing).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``output``, ``surface_format``, ``engine``).
    estimator : fitted SPCATV
        The model.
    space : VolumeMasker or Hemispheres
        Where its columns live.
    meshes : dict or None
        Surface meshes to draw on.
    metadata : dict
        From :func:`run_metadata`.
    sample_labels : list of str
        One per sample (rows of scores.csv).
    bg_img : str, optional
        Background of the report's volume slices.
    study : dict, optional
        The participants side of a cohort fit: its participant IDs label the
        rows of scores.csv (first column ``participant_id``); saved with the
        model and shown in the report.
    associations : pandas.DataFrame, optional
        Written as associations.tsv.
    atlas : path or pair of paths, optional
        Labels of the report's peaks and clusters.

    Returns
    -------
    str
        The output folder.
    """
    from ..reporting import images, report

    with AtomicFolder(args.output, owned=OUTPUT_FILE, name="--output") as folder:
        tmp = folder.tmp
        say(args, "writing loadings, scores and model ...")
        names = [
            os.path.basename(p)
            for p in images.save_loadings(
                estimator.components_,
                space,
                tmp,
                surface_format=getattr(args, "surface_format", "gii"),
            )
        ]
        first = "sample"
        if study is not None:
            sample_labels, first = [str(i) for i in study["participant_ids"]], "participant_id"
        _write_scores(
            os.path.join(tmp, "scores.csv"),
            report.component_scores(estimator),
            sample_labels,
            first,
        )
        extra = []
        if associations is not None:
            from .study import write_associations

            write_associations(os.path.join(tmp, "associations.tsv"), associations)
            extra.append("associations.tsv")
        metadata = dict(metadata, sample_labels=list(sample_labels))
        persistence.save_model(
            estimator,
            os.path.join(tmp, "model.npz"),
            space=space,
            meshes=meshes,
            metadata=metadata,
            study=study,
        )
        say(args, "drawing the report ...")
        t0 = time.perf_counter()
        html = report.make_report(
            estimator,
            space,
            meshes=meshes,
            title=metadata["title"],
            data_description=metadata.get("data"),
            bg_img=bg_img,
            engine=getattr(args, "engine", "auto"),
            metadata=metadata,
            study=study,
            **({} if atlas is None else {"atlas": atlas}),
        )
        report.save_report(html, os.path.join(tmp, "report.html"))
        say(args, f"report drawn in {time.perf_counter() - t0:.1f} s")
        written = names + ["scores.csv"] + extra + ["model.npz", "report.html"]
        out = folder.commit(written)
    print(f"wrote {', '.join(written)} to {out}")
    print(f"open the report: file://{os.path.join(out, 'report.html')}")
    return out
