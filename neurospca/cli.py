"""The ``neurospca`` command line.

Every command that fits writes one output folder holding ``report.html`` (a
self-contained HTML report), the loadings (``loadings.nii.gz`` for volumes,
``loadings_lh.func.gii``/``loadings_rh.func.gii`` for surfaces), the
component scores (``scores.csv``) and the saved model (``model.npz``). All
outputs are written into a temporary folder first and moved into place at
the end: an interrupted or failed run leaves no partial report or model.

Exit codes: 0 success, 2 user error (one-line message naming the argument),
130 interrupted.
"""

import argparse
import csv
import datetime
import glob
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

__all__ = ["main"]

# the reference implementation's example penalties, relative to l1_max:
# l1 = 0.05, l2 = 1, tv = 0.1 (times l1_max = max_j ||X_j||_2 / N)
DEFAULT_L1_RATIO = 0.05 / 1.15
DEFAULT_TV_RATIO = 0.1 / 1.15
DEFAULT_ALPHA_SCALE = 1.15

EXAMPLES = """\
examples:
  neurospca demo
      fit 3 components on built-in simulated fMRI maps (MNI152 3 mm mask) and
      write ./neurospca_demo/{report.html, loadings.nii.gz, scores.csv, model.npz}

  neurospca fit --images 'maps/sub-*.nii.gz' --mask mask.nii.gz --output results
      volumes: one 3-D map per subject (paths or quoted globs) inside a brain mask

  neurospca fit --left-mesh lh.white --right-mesh rh.white \\
                --left-data sub*/lh.thickness.mgh --right-data sub*/rh.thickness.mgh \\
                --left-cortex lh.cortex.label --right-cortex rh.cortex.label \\
                --left-plot-mesh lh.inflated --right-plot-mesh rh.inflated \\
                --alpha 0.5 --tv-ratio 0.3 --n-components 5 --output results
      surfaces: per-hemisphere meshes and per-subject maps on them

  neurospca report results/model.npz --output report.html
      (re)build the HTML report of a saved model
"""


class UserError(Exception):
    """A problem with the command line or the inputs (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not np.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


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


# --------------------------------------------------------------------------
# feedback
# --------------------------------------------------------------------------


class _Progress(logging.Handler):
    """Print the estimator's per-component log lines to stderr.

    Every finished component gives one line; alternations are shown with
    ``-v``, or every ``heartbeat`` seconds on long components.
    """

    def __init__(self, n_components, verbose, heartbeat=10.0):
        super().__init__(logging.INFO)
        self.n_components = n_components
        self.verbose = verbose
        self.heartbeat = heartbeat
        self.last = time.perf_counter()

    def emit(self, record):
        msg = record.getMessage()
        now = time.perf_counter()
        match = re.match(r"component (\d+)(.*)$", msg)
        if match:  # the engine counts from 0; people count from 1
            msg = f"component {int(match.group(1)) + 1}/{self.n_components}{match.group(2)}"
        if " done:" in msg or self.verbose or now - self.last > self.heartbeat:
            print(f"  {msg}", file=sys.stderr, flush=True)
            self.last = now


def _print_warnings(caught):
    for w in caught:
        if not issubclass(w.category, (ResourceWarning, DeprecationWarning,
                                       PendingDeprecationWarning)):
            print(f"neurospca: warning: {w.message}", file=sys.stderr)


def _say(args, message):
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr, flush=True)


def _fit(args, estimator, X):
    """Fit with per-component progress lines; warnings become one-line notes."""
    logger = logging.getLogger("neurospca")
    handler = _Progress(estimator.n_components, getattr(args, "verbose", 0))
    old_level = logger.level
    if not getattr(args, "quiet", False):
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        estimator.set_params(verbose=1)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            estimator.fit(X)
            elapsed = time.perf_counter() - t0
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        estimator.set_params(verbose=0)
    _print_warnings(caught)
    _say(args, f"fitted {estimator.n_components} component(s) in {elapsed:.2f} s")
    return estimator


# --------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------


def _check_report_dependencies():
    """Fail before any work when the report's libraries are missing."""
    import importlib.util

    missing = [m for m in ("jinja2", "matplotlib", "nilearn")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise UserError(f"the report needs {', '.join(missing)}: pip install "
                        '"neurospca[report]"')


def _prepare_output(path):
    """Absolute output folder path and a fresh temporary folder next to it."""
    out = os.path.abspath(os.fspath(path))
    if os.path.exists(out) and not os.path.isdir(out):
        raise UserError(f"--output: {out!r} exists and is not a folder.")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise UserError(f"--output: the parent folder {parent!r} does not exist.")
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.tmp-", dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the output folder is not
    return out, tmp


def _commit_output(tmp, out, order):
    """Move the finished files into ``out``: one rename for a new folder; otherwise
    the old report is removed first and the new one moved in last, so that a
    report in ``out`` always goes with the files next to it."""
    if not os.path.exists(out):
        os.replace(tmp, out)
        return
    old_report = os.path.join(out, "report.html")
    if os.path.exists(old_report):
        os.remove(old_report)
    for name in order:
        src = os.path.join(tmp, name)
        if os.path.exists(src):
            os.replace(src, os.path.join(out, name))
    shutil.rmtree(tmp, ignore_errors=True)


def _write_scores(path, scores, labels):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["sample"] + [f"component_{k + 1}" for k in range(scores.shape[1])])
        for label, row in zip(labels, scores):
            writer.writerow([label] + [f"{x:.10g}" for x in row])


def _write_all(args, estimator, space, *, meshes, metadata, sample_labels, bg_img=None):
    """Loadings, scores, model and report into ``args.output`` (all or nothing)."""
    from . import persistence
    from .reporting import images, report

    out, tmp = _prepare_output(args.output)
    try:
        _say(args, "writing loadings, scores and model ...")
        names = [os.path.basename(p) for p in images.save_loadings(
            estimator.components_, space, tmp,
            surface_format=getattr(args, "surface_format", "gii"))]
        _write_scores(os.path.join(tmp, "scores.csv"), report.component_scores(estimator),
                      sample_labels)
        metadata = dict(metadata, sample_labels=list(sample_labels))
        persistence.save_model(estimator, os.path.join(tmp, "model.npz"), space=space,
                               meshes=meshes, metadata=metadata)
        _say(args, "drawing the report ...")
        t0 = time.perf_counter()
        html = report.make_report(estimator, space, meshes=meshes, title=metadata["title"],
                                  data_description=metadata.get("data"), bg_img=bg_img,
                                  engine=getattr(args, "engine", "auto"), metadata=metadata)
        report.save_report(html, os.path.join(tmp, "report.html"))
        _say(args, f"report drawn in {time.perf_counter() - t0:.1f} s")
        _commit_output(tmp, out, names + ["scores.csv", "model.npz", "report.html"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    written = names + ["scores.csv", "model.npz", "report.html"]
    print(f"wrote {', '.join(written)} to {out}")
    print(f"open the report: file://{os.path.join(out, 'report.html')}")
    return out


def _metadata(args, title, data):
    return {"title": title, "data": data, "command": " ".join(["neurospca"] + args.argv),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


def _auto_alpha(X):
    Xc = X - X.mean(axis=0)
    l1_max = float(np.sqrt((Xc**2).sum(axis=0)).max()) / X.shape[0]
    if l1_max <= 0:
        raise UserError("the data are constant across samples: nothing to analyse.")
    return DEFAULT_ALPHA_SCALE * l1_max


def _estimator(args, X, operator):
    from . import SPCATV

    alpha = args.alpha if args.alpha is not None else _auto_alpha(X)
    if args.l1_ratio + args.tv_ratio >= 1:
        raise UserError(f"--l1-ratio + --tv-ratio must be < 1, got {args.l1_ratio} + "
                        f"{args.tv_ratio}.")
    if args.n_components > min(X.shape):
        raise UserError(f"--n-components {args.n_components} is larger than the data allow "
                        f"({X.shape[0]} samples x {X.shape[1]} features).")
    _say(args, f"SPCA-TV: {args.n_components} component(s), alpha={alpha:.4g}"
         f"{'' if args.alpha is not None else ' (auto)'}, l1_ratio={args.l1_ratio:.4g}, "
         f"tv_ratio={args.tv_ratio:.4g}, tol={args.tol:g}, solver={args.solver}")
    return SPCATV(args.n_components, alpha=alpha, l1_ratio=args.l1_ratio,
                  tv_ratio=args.tv_ratio, operator=operator, tol=args.tol,
                  max_iter=args.max_iter, solver=args.solver)


# --------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------


def _demo(args):
    import nibabel as nib

    from .datasets import make_fmri_like
    from .masking import VolumeMasker

    try:
        from nilearn.datasets import load_mni152_brain_mask
    except ImportError:
        raise ImportError('the demo needs nilearn: pip install "neurospca[report]"') from None
    _say(args, "neurospca demo: simulated fMRI-like maps in the MNI152 3 mm brain mask "
               f"(seed {args.seed})")
    t0 = time.perf_counter()
    X, patterns, mask = make_fmri_like(random_state=args.seed)
    mask_img = load_mni152_brain_mask(resolution=3, threshold=0.48)
    if tuple(mask_img.shape) != tuple(mask.shape):  # pragma: no cover - consistency guard
        raise RuntimeError("the demo mask and nilearn's MNI152 mask disagree.")
    masker = VolumeMasker(nib.Nifti1Image(mask.astype(np.uint8), mask_img.affine))
    _say(args, f"{X.shape[0]} maps x {X.shape[1]:,} voxels generated in "
               f"{time.perf_counter() - t0:.1f} s")
    args.alpha, args.l1_ratio, args.tv_ratio, args.max_iter = None, DEFAULT_L1_RATIO, \
        DEFAULT_TV_RATIO, 100
    estimator = _fit(args, _estimator(args, X, masker.operator()), X)
    truth = patterns > 0.05
    support = estimator.components_ != 0
    print("component  support  explained var.  best Dice vs truth  certified gap")
    for k in range(estimator.n_components):
        s = support[k]
        dice = max(2 * np.sum(s & t) / max(s.sum() + t.sum(), 1) for t in truth)
        print(f"{k + 1:9d}  {s.sum():7d}  {estimator.explained_variance_ratio_[k]:14.4f}  "
              f"{dice:18.3f}  {estimator.dual_gaps_[k]:13.3e}")
    labels = [f"sim_{i:03d}" for i in range(X.shape[0])]
    data = {"data set": "simulated fMRI-like maps (neurospca.datasets.make_fmri_like, "
                        f"seed {args.seed}): three Gaussian blobs plus noise",
            "mask": "nilearn MNI152 brain mask, 3 mm"}
    _write_all(args, estimator, masker, meshes=None,
               metadata=_metadata(args, "neurospca demo: SPCA-TV on simulated fMRI maps", data),
               sample_labels=labels)
    _say(args, f"total {time.perf_counter() - t0:.1f} s")
    return 0


def _expand(paths, option):
    """Expand globs (sorted) and check every file exists."""
    out = []
    for p in paths:
        if glob.has_magic(p):
            matches = sorted(glob.glob(os.path.expanduser(p)))
            if not matches:
                raise UserError(f"{option}: the pattern {p!r} matches no file.")
            out.extend(matches)
        else:
            if not os.path.exists(p):
                raise UserError(f"{option}: no such file {p!r}.")
            out.append(p)
    return out


def _existing(path, option):
    if path is not None and not os.path.exists(path):
        raise UserError(f"{option}: no such file {path!r}.")
    return path


def _fit_volume(args):
    from .masking import load_volume_data

    images = _expand(args.images, "--images")
    _existing(args.mask, "--mask")
    _existing(args.bg_img, "--bg-img")
    _say(args, f"loading {len(images)} image(s) in the mask {args.mask} ...")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            X, operator, masker = load_volume_data(images, args.mask,
                                                   threshold=args.mask_threshold,
                                                   resample=args.resample)
    except (ValueError, TypeError) as exc:
        raise UserError(f"--images/--mask: {exc}".replace("(pass resample=True, which uses "
                                                          "nilearn.image.resample_to_img)",
                                                          "(pass --resample)")) from None
    _print_warnings(caught)
    if X.shape[0] < 2:
        raise UserError(f"--images: need at least 2 maps, got {X.shape[0]}.")
    _say(args, f"data: {X.shape[0]} maps x {X.shape[1]:,} voxels")
    estimator = _fit(args, _estimator(args, X, operator), X)
    base = [os.path.basename(p) for p in images]
    labels = base if len(base) == X.shape[0] else [f"sample_{i:04d}" for i in range(X.shape[0])]
    data = {"images": f"{len(images)} file(s): " + ", ".join(base[:5])
                      + (" ..." if len(base) > 5 else ""),
            "mask": os.path.abspath(args.mask)}
    metadata = _metadata(args, args.title, data)
    if args.bg_img:
        metadata["bg_img"] = os.path.abspath(args.bg_img)
    _write_all(args, estimator, masker, meshes=None, metadata=metadata, sample_labels=labels,
               bg_img=args.bg_img)
    return 0


def _fit_surface(args):
    from .reporting.plotting import surface_background
    from .surface import load_surf_data, load_surf_mesh, load_surface_data

    for opt in ("left_mesh", "right_mesh", "left_data", "right_data"):
        if getattr(args, opt) is None:
            raise UserError(f"--{opt.replace('_', '-')} is required for a surface fit.")
    meshes_fit = {}
    for hemi in ("left", "right"):
        _existing(getattr(args, f"{hemi}_mesh"), f"--{hemi}-mesh")
        _existing(getattr(args, f"{hemi}_cortex"), f"--{hemi}-cortex")
        _existing(getattr(args, f"{hemi}_plot_mesh"), f"--{hemi}-plot-mesh")
        _existing(getattr(args, f"{hemi}_bg"), f"--{hemi}-bg")
    data = {h: _expand(getattr(args, f"{h}_data"), f"--{h}-data") for h in ("left", "right")}
    if len(data["left"]) != len(data["right"]):
        raise UserError(f"--left-data has {len(data['left'])} file(s) but --right-data has "
                        f"{len(data['right'])}: give one map per subject for each hemisphere.")
    for hemi in ("left", "right"):
        try:
            meshes_fit[hemi] = load_surf_mesh(getattr(args, f"{hemi}_mesh"), f"--{hemi}-mesh")
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
    _say(args, f"loading {len(data['left'])} map(s) per hemisphere ...")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            X, operator, hemis = load_surface_data(
                data["left"] if len(data["left"]) > 1 else data["left"][0],
                data["right"] if len(data["right"]) > 1 else data["right"][0],
                meshes_fit["left"], meshes_fit["right"],
                mask_left=args.left_cortex, mask_right=args.right_cortex)
    except (ValueError, TypeError) as exc:
        raise UserError(f"--left-data/--right-data/--left-mesh/--right-mesh: {exc}") from None
    _print_warnings(caught)
    if X.shape[0] < 2:
        raise UserError(f"--left-data/--right-data: need at least 2 maps per hemisphere, got "
                        f"{X.shape[0]}.")
    _say(args, f"data: {X.shape[0]} maps x {X.shape[1]:,} vertices (both hemispheres)")
    meshes = {}
    for h, hemi in enumerate(("left", "right")):
        plot_mesh = getattr(args, f"{hemi}_plot_mesh")
        try:
            coords, faces = (load_surf_mesh(plot_mesh, f"--{hemi}-plot-mesh")
                             if plot_mesh else meshes_fit[hemi])
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
        if coords.shape[0] != hemis.n_vertices[h]:
            raise UserError(f"--{hemi}-plot-mesh has {coords.shape[0]} vertices but "
                            f"--{hemi}-mesh has {hemis.n_vertices[h]}.")
        meshes[hemi] = (coords, faces)
        bg_path = getattr(args, f"{hemi}_bg")
        if bg_path:
            bg = np.asarray(load_surf_data(bg_path, f"--{hemi}-bg"), dtype=np.float64)
            if bg.shape != (hemis.n_vertices[h],):
                raise UserError(f"--{hemi}-bg has shape {bg.shape}, expected "
                                f"({hemis.n_vertices[h]},).")
            scale = np.percentile(np.abs(bg), 95)
            bg = np.clip(bg / scale, -1, 1) if scale > 0 else bg
        else:
            bg = surface_background(*meshes_fit[hemi])
        meshes[f"bg_{hemi}"] = bg
    estimator = _fit(args, _estimator(args, X, operator), X)
    base = [os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p)
            if len({os.path.basename(q) for q in data["left"]}) < len(data["left"])
            else os.path.basename(p) for p in data["left"]]
    labels = base if len(base) == X.shape[0] else [f"sample_{i:04d}" for i in range(X.shape[0])]
    desc = {"left maps": f"{len(data['left'])} file(s): " + ", ".join(base[:5])
                         + (" ..." if len(base) > 5 else ""),
            "meshes": f"{args.left_mesh}, {args.right_mesh}"}
    if args.left_cortex or args.right_cortex:
        desc["cortex labels"] = f"{args.left_cortex}, {args.right_cortex}"
    _write_all(args, estimator, hemis, meshes=meshes, metadata=_metadata(args, args.title, desc),
               sample_labels=labels)
    return 0


def _fit_command(args):
    volume = args.images is not None or args.mask is not None
    surface = any(getattr(args, f"{h}_{w}") is not None
                  for h in ("left", "right") for w in ("mesh", "data"))
    if volume and surface:
        raise UserError("give either volumes (--images and --mask) or surfaces (--left-mesh, "
                        "--right-mesh, --left-data, --right-data), not both.")
    if volume:
        if args.images is None:
            raise UserError("--images is required with --mask.")
        if args.mask is None:
            raise UserError("--mask is required with --images.")
        return _fit_volume(args)
    if surface:
        return _fit_surface(args)
    raise UserError("give volumes (--images and --mask) or surfaces (--left-mesh, "
                    "--right-mesh, --left-data, --right-data).")


def _report_command(args):
    from . import persistence
    from .reporting import report

    _existing(args.model, "MODEL")
    try:
        saved = persistence.load_model(args.model)
    except ValueError as exc:
        raise UserError(f"MODEL: {exc}") from None
    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.model)),
                                      "report.html")
    if os.path.isdir(out):
        raise UserError(f"--output: {out!r} is a folder; give a file name such as report.html.")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise UserError(f"--output: the folder of {out!r} does not exist.")
    title = args.title or saved.metadata.get("title") or "neurospca report"
    bg_img = _existing(args.bg_img, "--bg-img")
    if bg_img is None and os.path.exists(str(saved.metadata.get("bg_img"))):
        bg_img = saved.metadata["bg_img"]  # the background the fit's report used
    _say(args, f"drawing the report of {args.model} ...")
    html = report.make_report(saved.estimator, saved.space, meshes=saved.meshes, title=title,
                              data_description=saved.metadata.get("data"),
                              bg_img=bg_img, engine=args.engine, metadata=saved.metadata)
    report.save_report(html, out)
    print(f"wrote {out}")
    return 0


# --------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------


def _add_common(p, output_default):
    p.add_argument("--output", "-o", default=output_default, metavar="DIR",
                   help=f"output folder (default {output_default}); created if absent, "
                        "files in it are replaced")
    p.add_argument("--n-components", type=_positive_int, default=3, metavar="K",
                   help="number of components (default 3)")
    p.add_argument("--tol", type=_positive_float, default=1e-3,
                   help="scale-free precision of the certified gaps and of the "
                        "alternations (default 1e-3)")
    p.add_argument("--solver", choices=("dual", "conesta"), default="dual",
                   help="v-step solver (default dual)")
    p.add_argument("--engine", choices=("auto", "pyvista", "matplotlib"), default="auto",
                   help="surface renderer of the report (default auto)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="log every alternation")


def _build_parser():
    parser = _Parser(
        prog="neurospca",
        description="Structured sparse PCA (SPCA-TV) for brain images and cortical surfaces: "
                    "sparse, smooth loading maps with certified duality gaps.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = sub.add_parser(
        "demo", help="fit SPCA-TV on built-in simulated fMRI maps and write a report",
        description="Fit SPCA-TV on 83 simulated fMRI-like maps (three blobs plus noise) in "
                    "nilearn's MNI152 3 mm brain mask (64,030 voxels), offline, and write "
                    "report.html, loadings.nii.gz, scores.csv and model.npz.",
        epilog="example: neurospca demo --output /tmp/demo",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(demo, "./neurospca_demo")
    demo.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    demo.set_defaults(func=_demo)

    fit = sub.add_parser(
        "fit", help="fit SPCA-TV on NIfTI maps in a mask, or on surface maps",
        description="Fit SPCA-TV on volumes (--images and --mask) or on cortical surfaces "
                    "(--left-mesh, --right-mesh, --left-data, --right-data) and write "
                    "report.html, the loadings, scores.csv and model.npz into --output.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(fit, "./neurospca_output")
    pen = fit.add_argument_group("penalties (alpha = l1 + l2 + tv)")
    pen.add_argument("--alpha", type=_positive_float, default=None,
                     help="total penalty weight (default: 1.15 x max_j ||X_j||_2 / N, the "
                          "reference implementation's scale)")
    pen.add_argument("--l1-ratio", type=_ratio, default=DEFAULT_L1_RATIO,
                     help=f"l1 / alpha (default {DEFAULT_L1_RATIO:.4g})")
    pen.add_argument("--tv-ratio", type=_ratio, default=DEFAULT_TV_RATIO,
                     help=f"tv / alpha (default {DEFAULT_TV_RATIO:.4g}); l1_ratio + "
                          "tv_ratio < 1")
    pen.add_argument("--max-iter", type=_positive_int, default=100,
                     help="alternations per component (default 100)")
    fit.add_argument("--title", default="neurospca report", help="title of the report")
    vol = fit.add_argument_group("volumes")
    vol.add_argument("--images", nargs="+", metavar="IMG",
                     help="3-D or 4-D NIfTI maps, one per subject (paths or quoted globs)")
    vol.add_argument("--mask", metavar="MASK", help="brain mask (NIfTI, 0/1)")
    vol.add_argument("--mask-threshold", type=float, default=None,
                     help="binarise the mask as mask > threshold")
    vol.add_argument("--resample", action="store_true",
                     help="resample images onto the mask's grid (nilearn)")
    vol.add_argument("--bg-img", default=None,
                     help="background image of the report's slices (default MNI152)")
    srf = fit.add_argument_group("surfaces")
    for hemi in ("left", "right"):
        srf.add_argument(f"--{hemi}-mesh", metavar="SURF",
                         help=f"{hemi} mesh defining neighbours (FreeSurfer or GIFTI)")
        srf.add_argument(f"--{hemi}-data", nargs="+", metavar="MAP",
                         help=f"{hemi} per-subject maps (curv, .mgh, .gii; paths or globs)")
        srf.add_argument(f"--{hemi}-cortex", metavar="LABEL",
                         help=f"{hemi} cortex .label or .annot (medial wall left out)")
        srf.add_argument(f"--{hemi}-plot-mesh", metavar="SURF",
                         help=f"{hemi} mesh to draw on, e.g. inflated (default --{hemi}-mesh)")
        srf.add_argument(f"--{hemi}-bg", metavar="MAP",
                         help=f"{hemi} background map, e.g. sulc (default: convexity of "
                              f"--{hemi}-mesh)")
    srf.add_argument("--surface-format", choices=("gii", "mgh"), default="gii",
                     help="format of the surface loadings (default gii)")
    fit.set_defaults(func=_fit_command)

    rep = sub.add_parser(
        "report", help="write the HTML report of a saved model",
        description="Write the self-contained HTML report of a model saved by "
                    "'neurospca fit' or 'neurospca demo' (model.npz).",
        epilog="example: neurospca report results/model.npz --output results/report.html",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("model", metavar="MODEL", help="saved model (model.npz)")
    rep.add_argument("--output", "-o", default=None,
                     help="report file (default: report.html next to MODEL)")
    rep.add_argument("--title", default=None, help="report title (default: the saved one)")
    rep.add_argument("--bg-img", default=None, help="background of volume slices")
    rep.add_argument("--engine", choices=("auto", "pyvista", "matplotlib"), default="auto")
    rep.add_argument("-q", "--quiet", action="store_true")
    rep.set_defaults(func=_report_command)
    return parser


def main(argv=None):
    """Entry point of the ``neurospca`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit code: 0 success, 2 user error, 130 interrupted.
    """
    parser = _build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        _check_report_dependencies()
        return args.func(args)
    except KeyboardInterrupt:
        print("neurospca: interrupted; no report or model was written.", file=sys.stderr)
        return 130
    except UserError as exc:
        print(f"neurospca: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"neurospca: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
