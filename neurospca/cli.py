"""The ``neurospca`` command line: argument parsing, dispatch and exit codes only.

The commands are implemented in ``neurospca._commands`` (``demo``, ``fit``,
``report``); the all-or-nothing output folder is
``neurospca._utils.io.AtomicFolder``.

Every command that fits writes one output folder holding ``report.html`` (a
self-contained HTML report), the loadings (``loadings.nii.gz`` for volumes,
``loadings_lh.func.gii``/``loadings_rh.func.gii`` for surfaces), the
component scores (``scores.csv``) and the saved model (``model.npz``). All
outputs are written into a temporary folder first and moved into place at
the end: an interrupted or failed run leaves no partial report or model.

The output folder is checked before any work (it must be creatable and
writable, else exit 2). Re-using a folder replaces the outputs of the earlier
run: every file neurospca writes there (``report.html``, ``scores.csv``,
``model.npz``, ``loadings*``) that this run does not write is removed, so the
folder's neurospca files are exactly this run's; other files are left alone.

Exit codes: 0 success, 2 user error (one-line message naming the argument;
unreadable, truncated or corrupted input files included), 130 interrupted
(SIGINT, Ctrl-C), 143 terminated (SIGTERM, e.g. ``kill`` or a job scheduler's
time limit). Interrupted or terminated runs remove their temporary folder and
leave the output folder as it was.
"""

import argparse
import math
import os
import subprocess
import sys

from ._utils.io import remove_temp_folders
from ._utils.signals import Terminated, signal_in, sigterm_raises

# The commands (scikit-learn, scipy.stats, pandas: ~2 s CPU) are imported when the
# parser is built, after ``neurospca demo`` has started its report worker (see
# :func:`_early_report_worker`): nothing heavy is imported with this module.

__all__ = ["main"]

EXAMPLES = """\
examples:
  neurospca demo
      fit 3 components on built-in simulated fMRI maps (MNI152 mask at 5 mm) and
      write ./neurospca_demo/{report.html, loadings.nii.gz, scores.csv, model.npz}

  neurospca fit --images 'maps/sub-*.nii.gz' --mask mask.nii.gz --output results
      volumes: one 3-D map per subject (paths or quoted globs) inside a brain mask

  neurospca fit --left-mesh lh.white --right-mesh rh.white \\
                --left-data sub*/lh.thickness.mgh --right-data sub*/rh.thickness.mgh \\
                --left-cortex lh.cortex.label --right-cortex rh.cortex.label \\
                --left-plot-mesh lh.inflated --right-plot-mesh rh.inflated \\
                --alpha 0.5 --tv-ratio 0.3 --n-components 5 --output results
      surfaces: per-hemisphere meshes and per-subject maps on them

  neurospca fit --left-mesh lh.pial.surf.gii --right-mesh rh.pial.surf.gii \\
                --left-data 'sub-*/anat/*hemi-L_*thickness.shape.gii' \\
                --right-data 'sub-*/anat/*hemi-R_*thickness.shape.gii' \\
                --participants participants.tsv --confounds age,sex --harmonize site \\
                --groups dx --covariates mmse,age --output results
      a cohort study: also writes associations.tsv (scores against dx, mmse, age)

  neurospca report results/model.npz --output report.html
      (re)build the HTML report of a saved model
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def _alpha_rel(text):
    if text == "auto":
        return text
    try:
        return _positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'auto', got {text!r}") from None


def _ratio(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text!r}")
    return value


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _n_components(text):
    return text if text == "auto" else _positive_int(text)


# --------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------


def _add_common(p, output_default):
    p.add_argument(
        "--output",
        "-o",
        default=output_default,
        metavar="DIR",
        help=f"output folder (default {output_default}); created if absent, "
        "files in it are replaced",
    )
    p.add_argument(
        "--n-components",
        type=_n_components,
        default=3,
        metavar="K",
        help="number of components, or 'auto' (parallel analysis of the "
        "explained variance against column-permuted data; default 3)",
    )
    p.add_argument(
        "--tol",
        type=_positive_float,
        default=None,
        help="SPCA-TV: scale-free precision of the certified gaps and of the alternations "
        "(default 1e-3); another --estimator: its tol (default its own)",
    )
    p.add_argument(
        "--solver", choices=("dual", "conesta"), default="dual", help="v-step solver (default dual)"
    )
    p.add_argument(
        "--n-threads",
        type=_positive_int,
        default=None,
        metavar="N",
        help="threads of the solver kernels and data products (default: all cores)",
    )
    p.add_argument(
        "--engine",
        choices=("auto", "pyvista", "matplotlib"),
        default="auto",
        help="surface renderer of the report (default auto)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    p.add_argument("-v", "--verbose", action="count", default=0, help="log every alternation")


def _add_study(p):
    grp = p.add_argument_group(
        "participants (a cohort study: subjects matched to the maps by sub-<label> in the "
        "file or folder names, or the FreeSurfer subject folder)"
    )
    grp.add_argument(
        "--participants",
        metavar="TSV",
        help="participants table: BIDS participants.tsv (tab-separated, n/a "
        "missing) or .csv, one row per subject",
    )
    grp.add_argument(
        "--participant-id",
        default="participant_id",
        metavar="COLUMN",
        help="ID column of --participants (default participant_id)",
    )
    grp.add_argument(
        "--confounds",
        metavar="COLS",
        help="comma-separated columns regressed out of every vertex/voxel "
        "(learnt on these subjects; text columns one-hot encoded)",
    )
    grp.add_argument(
        "--harmonize",
        metavar="COLUMN",
        help="site column: ComBat harmonisation (saved with the model)",
    )
    grp.add_argument(
        "--groups",
        metavar="COLS",
        help="comma-separated categorical columns the scores are compared "
        "between (Kruskal-Wallis, eta^2_H)",
    )
    grp.add_argument(
        "--covariates",
        metavar="COLS",
        help="comma-separated numeric columns the scores are correlated with (Spearman)",
    )
    grp.add_argument(
        "--n-permutations",
        type=_positive_int,
        default=9999,
        metavar="N",
        help="permutations of the association tests (default 9999)",
    )


def _add_atlas(p):
    p.add_argument(
        "--atlas",
        nargs="+",
        metavar="ATLAS",
        help="labels for the peaks and clusters: a labelled NIfTI (volumes) or "
        "left and right .annot/.label.gii files (surfaces)",
    )


def _build_parser():
    parser = _Parser(
        prog="neurospca",
        description="Structured sparse PCA (SPCA-TV) for brain images and cortical surfaces: "
        "sparse, smooth loading maps with certified duality gaps.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_demo_command(sub)
    _add_fit_command(sub)
    _add_report_command(sub)
    return parser


def _add_demo_command(sub):
    demo = sub.add_parser(
        "demo",
        help="fit SPCA-TV on built-in simulated fMRI maps and write a report",
        description="Fit SPCA-TV on 83 simulated fMRI-like maps (three blobs plus noise) in "
        "nilearn's MNI152 brain mask sampled at 5 mm (13,682 voxels), offline, and write "
        "report.html, loadings.nii.gz, scores.csv and model.npz.",
        epilog="example: neurospca demo --output /tmp/demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from ._commands import run_demo

    _add_common(demo, "./neurospca_demo")
    demo.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    demo.set_defaults(func=run_demo)


def _add_fit_command(sub):
    fit = sub.add_parser(
        "fit",
        help="fit SPCA-TV on NIfTI maps in a mask, or on surface maps",
        description="Fit SPCA-TV (or another --estimator) on volumes (--images and --mask) "
        "or on cortical surfaces (--left-mesh, --right-mesh, --left-data, --right-data) and "
        "write report.html, the loadings, scores.csv and model.npz into --output.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from ._commands import run_fit
    from .image import ESTIMATOR_NAMES

    _add_common(fit, "./neurospca_output")
    fit.add_argument(
        "--estimator",
        choices=tuple(ESTIMATOR_NAMES),
        default="spcatv",
        help="the method: spcatv (SPCA-TV, default), sspca (structured sparse PCA with "
        "half-space groups), nspca (nonnegative sparse PCA), ktrace (k-trace-norm sparse "
        "PCA), dictionary (hierarchical dictionary learning, a flat dictionary); the "
        "others take --n-components, --max-iter, --tol and random_state=0",
    )
    _add_penalties(fit)
    fit.add_argument("--title", default="neurospca report", help="title of the report")
    _add_volumes(fit)
    _add_surfaces(fit)
    _add_pipelines(fit)
    _add_study(fit)
    _add_atlas(fit)
    fit.set_defaults(func=run_fit)


def _add_penalties(fit):
    from ._commands import format_rel as _format_rel
    from ._commands.penalties import spcatv_defaults

    defaults = spcatv_defaults()
    pen = fit.add_argument_group(
        "penalties of SPCA-TV (alpha = l1 + l2 + tv; l1 = alpha l1_ratio, tv = alpha tv_ratio)"
    )
    pen.add_argument(
        "--alpha",
        type=_positive_float,
        default=None,
        help="absolute total penalty weight, the paper's parametrisation "
        "(default: relative, see --alpha-rel)",
    )
    pen.add_argument(
        "--alpha-rel",
        type=_alpha_rel,
        default=None,
        help="alpha in units of l1_max = max_j ||Xc_j||_2 / N of the centred "
        f"data, so that maps of any scale work (default "
        f"{_format_rel(defaults['alpha_rel'])}, SPCATV's: 'auto' keeps "
        "the weakest of 0.5, 1, 2, ..., 16 whose components are sparse)",
    )
    pen.add_argument(
        "--l1-ratio",
        type=_ratio,
        default=None,
        help=f"l1 / alpha (default {_format_rel(defaults['l1_ratio'])}, SPCATV's: searched "
        "with --alpha-rel auto when --tv-ratio is auto too, else 0.05)",
    )
    pen.add_argument(
        "--tv-ratio",
        type=_ratio,
        default=None,
        help=f"tv / alpha (default {_format_rel(defaults['tv_ratio'])}, SPCATV's: searched "
        "with --l1-ratio, else 0.1); l1_ratio + tv_ratio < 1",
    )
    pen.add_argument(
        "--split-blocks",
        type=_positive_int,
        default=None,
        metavar="N",
        help="the maps are one time series: split halves (alpha_rel auto, stability) keep "
        "N contiguous blocks (default: 10 blocks for one 4-D NIfTI whose header has a TR, "
        "else independent maps)",
    )
    pen.add_argument(
        "--max-iter",
        type=_positive_int,
        default=None,
        help=f"alternations per component (default {defaults['max_iter']}; another "
        "--estimator: its own)",
    )


def _add_volumes(fit):
    vol = fit.add_argument_group("volumes")
    vol.add_argument(
        "--images",
        nargs="+",
        metavar="IMG",
        help="3-D or 4-D NIfTI maps, one per subject (paths or quoted globs)",
    )
    vol.add_argument("--mask", metavar="MASK", help="brain mask (NIfTI, 0/1)")
    vol.add_argument(
        "--mask-threshold", type=float, default=None, help="binarise the mask as mask > threshold"
    )
    vol.add_argument(
        "--resample", action="store_true", help="resample images onto the mask's grid (nilearn)"
    )
    vol.add_argument(
        "--bg-img", default=None, help="background image of the report's slices (default MNI152)"
    )


def _add_surfaces(fit):
    srf = fit.add_argument_group("surfaces")
    for hemi in ("left", "right"):
        srf.add_argument(
            f"--{hemi}-mesh",
            metavar="SURF",
            help=f"{hemi} mesh defining neighbours (FreeSurfer or GIFTI)",
        )
        srf.add_argument(
            f"--{hemi}-data",
            nargs="+",
            metavar="MAP",
            help=f"{hemi} per-subject maps (curv, .mgh, .gii; paths or globs) "
            "or qcache stacks (one .mgh frame per subject)",
        )
        srf.add_argument(
            f"--{hemi}-cortex",
            metavar="LABEL",
            help=f"{hemi} cortex .label, .annot, .label.gii or 0/1 .shape.gii "
            "(medial wall left out; default: the vertices that vary "
            "across the maps)",
        )
        srf.add_argument(
            f"--{hemi}-plot-mesh",
            metavar="SURF",
            help=f"{hemi} mesh to draw on, e.g. inflated (default --{hemi}-mesh)",
        )
        srf.add_argument(
            f"--{hemi}-bg",
            metavar="MAP",
            help=f"{hemi} background map, e.g. sulc (default: convexity of --{hemi}-mesh)",
        )
    srf.add_argument(
        "--surface-format",
        choices=("gii", "mgh"),
        default="gii",
        help="format of the surface loadings (default gii)",
    )


def _add_pipelines(fit):
    pipe = fit.add_argument_group(
        "inputs as pipelines write them (instead of --images or --left-data/--right-data)"
    )
    pipe.add_argument(
        "--bids-derivatives",
        metavar="DIR",
        help="BIDS derivatives folder: the maps sub-*_[hemi-L|R_]space-SPACE_"
        "*SUFFIX.<ext> below it (needs --space and --suffix)",
    )
    pipe.add_argument("--space", help="space- entity of --bids-derivatives, e.g. fsaverage5")
    pipe.add_argument("--suffix", help="suffix of --bids-derivatives, e.g. thickness")
    pipe.add_argument(
        "--freesurfer-subjects",
        metavar="SUBJECTS_DIR",
        help="FreeSurfer subjects: SUBJECTS_DIR/<subject>/surf/{lh,rh}."
        "MEASURE.mgh of every subject (fsaverage* left out)",
    )
    pipe.add_argument(
        "--measure",
        default="thickness.fwhm10.fsaverage",
        help="measure of --freesurfer-subjects (default thickness.fwhm10.fsaverage, qcache's)",
    )


def _add_report_command(sub):
    from ._commands import run_report

    rep = sub.add_parser(
        "report",
        help="write the HTML report of a saved model",
        description="Write the self-contained HTML report of a model saved by "
        "'neurospca fit' or 'neurospca demo' (model.npz).",
        epilog="example: neurospca report results/model.npz --output results/report.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument("model", metavar="MODEL", help="saved model (model.npz)")
    rep.add_argument(
        "--output", "-o", default=None, help="report file (default: report.html next to MODEL)"
    )
    rep.add_argument("--title", default=None, help="report title (default: the saved one)")
    rep.add_argument("--bg-img", default=None, help="background of volume slices")
    rep.add_argument("--engine", choices=("auto", "pyvista", "matplotlib"), default="auto")
    rep.add_argument(
        "--no-interactive",
        dest="interactive",
        action="store_false",
        help="leave out the interactive viewer (a page without any script)",
    )
    rep.add_argument("-q", "--quiet", action="store_true")
    rep.add_argument(
        "--anat-mesh",
        nargs=2,
        metavar=("LEFT", "RIGHT"),
        help="anatomical (white or pial) meshes of the model's vertices: the peak and "
        "cluster xyz are read from them (default: the model's anatomical or drawn meshes)",
    )
    _add_atlas(rep)
    figs = rep.add_argument_group("figures for a paper, one file each")
    figs.add_argument(
        "--figures",
        metavar="DIR",
        help="also write every figure into DIR (component_01.png, ..., "
        "explained_variance, convergence); made when its parent exists",
    )
    figs.add_argument(
        "--figure-format",
        choices=("png", "svg", "pdf"),
        default="png",
        help="format of the --figures files (default png)",
    )
    figs.add_argument(
        "--dpi",
        type=_positive_float,
        default=300.0,
        help="resolution of the --figures files (PNG pixels per inch, recorded in "
        "the file; default 300)",
    )
    rep.set_defaults(func=run_report)


def _early_report_worker(argv):
    """Start ``neurospca demo``'s report worker before anything heavy is imported.

    The worker (``neurospca._commands._report_worker``, a fresh interpreter: no fork of
    a process that may have used OpenMP) imports the report's stacks and prepares
    the template on the second core while this process imports scikit-learn and
    fits; it then draws the report from the saved model. Only for ``demo`` (known
    from the first argument, before the parser, whose defaults import
    scikit-learn); not with ``-h`` or ``NEUROSPCA_NO_WARM_UP``, and only on POSIX
    systems (select on pipes, process groups, fork). Any failure to start leaves
    the report to this process.

    Returns
    -------
    subprocess.Popen or None
    """
    if argv[:1] != ["demo"] or {"-h", "--help"} & set(argv):
        return None
    if os.environ.get("NEUROSPCA_NO_WARM_UP") or os.name != "posix":  # POSIX: pipes, groups
        return None
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=root if not path else os.pathsep.join([root, path]))
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "neurospca._commands._report_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own group: stopped with its figure child
        )
    except OSError:
        return None


def main(argv=None):
    """Entry point of the ``neurospca`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit code: 0 success, 2 user error, 130 interrupted (SIGINT), 143
        terminated (SIGTERM).
    """
    own = argv is None  # this process's own command line (the console script)
    argv = list(sys.argv[1:] if argv is None else argv)
    worker, code = _early_report_worker(argv), None
    try:
        parser = _build_parser()
        args = parser.parse_args(argv)
        args.argv = argv
        args.report_worker = worker
        code = _run(args)
    finally:
        if worker is not None:
            from .reporting import stop_worker

            stop_worker(worker, kill=code != 0)
    if own:
        from ._commands import leave_now

        leave_now(code)  # returns only when the normal exit must run
    return code


def _run(args):
    """Run the parsed command; exceptions to exit codes."""
    from ._commands import UserError, check_before_work, check_report_dependencies

    with sigterm_raises():
        try:
            check_report_dependencies()
            check_before_work(args)
            return args.func(args)
        except (KeyboardInterrupt, Terminated) as exc:
            return _stopped(exc)
        except (UserError, ValueError, TypeError, OSError, ImportError, EOFError) as exc:
            if signal_in(exc) is not None:  # raised while a signal unwound, e.g. a zip's close
                return _stopped(signal_in(exc))
            print(f"neurospca: error: {_one_line(exc)}", file=sys.stderr)
            return 2
        except MemoryError as exc:
            print(
                f"neurospca: error: out of memory ({_one_line(exc) or 'MemoryError'}); "
                "use fewer or smaller inputs, or a machine with more memory.",
                file=sys.stderr,
            )
            return 2
        finally:
            remove_temp_folders()


def _stopped(exc):
    """Say the command stopped on SIGINT (130) or SIGTERM (143); the exit code."""
    if isinstance(exc, Terminated):
        print("neurospca: terminated (SIGTERM); no report or model was written.", file=sys.stderr)
        return 143
    print("neurospca: interrupted; no report or model was written.", file=sys.stderr)
    return 130


def _one_line(exc):
    return " ".join(str(exc).split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
