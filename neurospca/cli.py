"""The ``neurospca`` command line.

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
import csv
import datetime
import glob
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

__all__ = ["main"]



def _spcatv_defaults():
    """SPCATV's penalty defaults, read from its signature (the command follows them)."""
    import inspect

    from .decomposition._spcatv import SPCATV

    params = inspect.signature(SPCATV.__init__).parameters
    return {name: params[name].default
            for name in ("alpha_rel", "l1_ratio", "tv_ratio", "max_iter")}

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


class _Terminated(BaseException):
    """SIGTERM arrived (exit code 143); like KeyboardInterrupt, not an Exception."""


# files that neurospca writes into an output folder (stale ones are removed on re-use)
_OUTPUT_FILE = re.compile(r"(report\.html|scores\.csv|model\.npz|"
                          r"loadings[A-Za-z0-9_.-]*\.(nii\.gz|nii|gii|mgh|mgz))\Z")
# temporary folders of this process, removed on any exit (signals included)
_TEMP_DIRS = set()
_NOT_INSTALLED = object()


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


def _alpha_rel(text):
    if text == "auto":
        return text
    try:
        return _positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'auto', got {text!r}") \
            from None


def _format_rel(alpha_rel):
    return f"{alpha_rel:g}" if not isinstance(alpha_rel, str) else repr(alpha_rel)


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


def _load(args, model, imgs, option):
    """Mask the images with ``model`` (an unfitted ImageSPCATV); returns X.

    Warnings (left-out voxels/vertices) become one-line notes; errors name
    ``option``.
    """
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            X = model._prepare(imgs, None)
    except (ValueError, TypeError) as exc:
        raise UserError(f"{option}: {exc}".replace(
            "(pass resample=True, which uses nilearn.image.resample_to_img)",
            "(pass --resample)")) from None
    _print_warnings(caught)
    if X.shape[0] < 2:
        raise UserError(f"{option}: need at least 2 maps, got {X.shape[0]}.")
    if model.n_components > min(X.shape):
        raise UserError(f"--n-components {model.n_components} is larger than the data allow "
                        f"({X.shape[0]} samples x {X.shape[1]} features).")
    return X


def _fit(args, model, X):
    """Fit SPCA-TV on the masked data of ``model`` with per-component progress lines;
    warnings become one-line notes."""
    logger = logging.getLogger("neurospca")
    handler = _Progress(model.n_components, getattr(args, "verbose", 0))
    old_level = logger.level
    if not getattr(args, "quiet", False):
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        model.set_params(verbose=1)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            model._fit_matrix(X)
            elapsed = time.perf_counter() - t0
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        model.set_params(verbose=0)
        if hasattr(model, "estimator_"):
            model.estimator_.set_params(verbose=0)
    _print_warnings(caught)
    relative = ("" if model.alpha is not None
                else f" ({model.estimator_.alpha_rel_:g} x l1_max)")
    _say(args, f"fitted {model.n_components} component(s) in {elapsed:.2f} s "
               f"(alpha = {model.estimator_.alpha_:.4g}{relative})")
    return model


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
    blocked = _block_signals()  # a signal inside mkdtemp would leave an unknown folder
    try:
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.tmp-", dir=parent)
        _TEMP_DIRS.add(tmp)
    finally:
        _unblock_signals(blocked)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the output folder is not
    return out, tmp


def _commit_output(tmp, out, order):
    """Move the finished files into ``out``: one rename for a new folder; otherwise
    the old report is removed first, then the outputs of an earlier run that this
    run does not write (e.g. ``loadings_lh.mgh`` after a ``.func.gii`` run), and
    the new report is moved in last, so that a report in ``out`` always goes with
    the files next to it and no stale neurospca file stays. Files that neurospca
    does not write are left alone."""
    blocked = _block_signals()  # a signal now would leave a half-replaced folder
    try:
        _move_outputs(tmp, out, order)
    finally:
        _unblock_signals(blocked)  # a pending SIGINT/SIGTERM is delivered here


def _block_signals():
    if not hasattr(signal, "pthread_sigmask") or \
            threading.current_thread() is not threading.main_thread():
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _unblock_signals(previous):
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _move_outputs(tmp, out, order):
    if not os.path.exists(out):
        os.replace(tmp, out)
        _TEMP_DIRS.discard(tmp)
        return
    old_report = os.path.join(out, "report.html")
    if os.path.exists(old_report):
        os.remove(old_report)
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if _OUTPUT_FILE.match(name) and name not in order and os.path.isfile(path):
            os.remove(path)
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


def _estimator(args, **masking):
    """The unfitted ImageSPCATV of the command line's penalties (and ``masking``)."""
    from .image import ImageSPCATV

    defaults = _spcatv_defaults()
    alpha = getattr(args, "alpha", None)
    alpha_rel = getattr(args, "alpha_rel", None)
    l1_ratio = getattr(args, "l1_ratio", None)
    tv_ratio = getattr(args, "tv_ratio", None)
    if alpha is not None and alpha_rel is not None:
        raise UserError("give --alpha (absolute) or --alpha-rel (relative to l1_max), not "
                        "both.")
    alpha_rel = defaults["alpha_rel"] if alpha_rel is None else alpha_rel
    l1_ratio = defaults["l1_ratio"] if l1_ratio is None else l1_ratio
    tv_ratio = defaults["tv_ratio"] if tv_ratio is None else tv_ratio
    if l1_ratio + tv_ratio >= 1:
        raise UserError(f"--l1-ratio + --tv-ratio must be < 1, got {l1_ratio} + "
                        f"{tv_ratio}.")
    penalty = (f"alpha={alpha:.4g} (absolute)" if alpha is not None
               else f"alpha={_format_rel(alpha_rel)} x l1_max (relative)")
    _say(args, f"SPCA-TV: {args.n_components} component(s), {penalty}, "
               f"l1_ratio={l1_ratio:.4g}, tv_ratio={tv_ratio:.4g}, tol={args.tol:g}, "
               f"solver={args.solver}")
    return ImageSPCATV(args.n_components, alpha=alpha, alpha_rel=alpha_rel,
                       l1_ratio=l1_ratio, tv_ratio=tv_ratio, tol=args.tol,
                       max_iter=getattr(args, "max_iter", None) or defaults["max_iter"],
                       solver=args.solver,
                       **masking)


# --------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------


def _demo(args):
    import nibabel as nib

    from .datasets import make_fmri_like

    try:
        from nilearn.datasets import load_mni152_brain_mask
    except ImportError:
        raise ImportError('the demo needs nilearn: pip install "neurospca[report]"') from None
    _say(args, "neurospca demo: simulated fMRI-like maps in the MNI152 3 mm brain mask "
               f"(seed {args.seed})")
    t0 = time.perf_counter()
    X, patterns, mask = make_fmri_like(random_state=args.seed)
    mni = load_mni152_brain_mask(resolution=3, threshold=0.48)
    if tuple(mni.shape) != tuple(mask.shape):  # pragma: no cover - consistency guard
        raise RuntimeError("the demo mask and nilearn's MNI152 mask disagree.")
    mask_img = nib.Nifti1Image(mask.astype(np.uint8), mni.affine)
    data = np.zeros(mask.shape + (X.shape[0],), dtype=np.float32)
    data[mask] = X.T
    imgs = nib.Nifti1Image(data, mni.affine)  # the maps as a 4-D image, as users have them
    del data
    _say(args, f"{X.shape[0]} maps x {X.shape[1]:,} voxels generated in "
               f"{time.perf_counter() - t0:.1f} s")
    model = _estimator(args, mask=mask_img)
    model = _fit(args, model, _load(args, model, imgs, "demo"))
    estimator = model.estimator_
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
    _write_all(args, estimator, model.space_, meshes=None,
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
    from .masking import load_mask_img

    images = _expand(args.images, "--images")
    _existing(args.mask, "--mask")
    _existing(args.bg_img, "--bg-img")
    try:
        mask_img = load_mask_img(args.mask, threshold=args.mask_threshold)
    except (ValueError, TypeError) as exc:
        raise UserError(f"--mask: {exc}") from None
    model = _estimator(args, mask=mask_img, resample=args.resample)
    _say(args, f"loading {len(images)} image(s) in the mask {args.mask} ...")
    X = _load(args, model, images, "--images/--mask")
    _say(args, f"data: {X.shape[0]} maps x {X.shape[1]:,} voxels")
    model = _fit(args, model, X)
    base = [os.path.basename(p) for p in images]
    labels = base if len(base) == X.shape[0] else [f"sample_{i:04d}" for i in range(X.shape[0])]
    data = {"images": f"{len(images)} file(s): " + ", ".join(base[:5])
                      + (" ..." if len(base) > 5 else ""),
            "mask": os.path.abspath(args.mask)}
    metadata = _metadata(args, args.title, data)
    if args.bg_img:
        metadata["bg_img"] = os.path.abspath(args.bg_img)
    _write_all(args, model.estimator_, model.space_, meshes=None, metadata=metadata,
               sample_labels=labels, bg_img=args.bg_img)
    return 0


def _fit_surface(args):
    from .reporting.plotting import surface_background
    from .surface import load_surf_data, load_surf_mesh, load_surface_image

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
    _say(args, f"loading {len(data['left'])} file(s) per hemisphere ...")
    option = "--left-data/--right-data/--left-mesh/--right-mesh"
    try:
        img = load_surface_image(data["left"], data["right"], meshes_fit["left"],
                                 meshes_fit["right"])
    except (ValueError, TypeError) as exc:
        raise UserError(f"{option}: {exc}") from None
    cortex = (args.left_cortex, args.right_cortex)
    model = _estimator(args, mask=None if cortex == (None, None) else cortex)
    X = _load(args, model, img, option)
    hemis = model.space_
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
    model = _fit(args, model, X)
    base = [os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p)
            if len({os.path.basename(q) for q in data["left"]}) < len(data["left"])
            else os.path.basename(p) for p in data["left"]]
    labels = base if len(base) == X.shape[0] else [f"sample_{i:04d}" for i in range(X.shape[0])]
    desc = {"left maps": f"{len(data['left'])} file(s): " + ", ".join(base[:5])
                         + (" ..." if len(base) > 5 else ""),
            "meshes": f"{args.left_mesh}, {args.right_mesh}"}
    if args.left_cortex or args.right_cortex:
        desc["cortex labels"] = f"{args.left_cortex}, {args.right_cortex}"
    _write_all(args, model.estimator_, hemis, meshes=meshes,
               metadata=_metadata(args, args.title, desc), sample_labels=labels)
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
    # no path stored in a model file is ever opened: give --bg-img again if needed
    bg_img = _existing(args.bg_img, "--bg-img")
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
    defaults = _spcatv_defaults()
    pen = fit.add_argument_group(
        "penalties (alpha = l1 + l2 + tv; l1 = alpha l1_ratio, tv = alpha tv_ratio)")
    pen.add_argument("--alpha", type=_positive_float, default=None,
                     help="absolute total penalty weight, the paper's parametrisation "
                          "(default: relative, see --alpha-rel)")
    pen.add_argument("--alpha-rel", type=_alpha_rel, default=None,
                     help="alpha in units of l1_max = max_j ||Xc_j||_2 / N of the centred "
                          f"data, so that maps of any scale work (default "
                          f"{_format_rel(defaults['alpha_rel'])}, SPCATV's: 'auto' keeps "
                          "the weakest of 0.5, 1, 2, ..., 16 whose components are sparse)")
    pen.add_argument("--l1-ratio", type=_ratio, default=None,
                     help=f"l1 / alpha (default {defaults['l1_ratio']:.4g}, SPCATV's)")
    pen.add_argument("--tv-ratio", type=_ratio, default=None,
                     help=f"tv / alpha (default {defaults['tv_ratio']:.4g}, SPCATV's); "
                          "l1_ratio + tv_ratio < 1")
    pen.add_argument("--max-iter", type=_positive_int, default=defaults["max_iter"],
                     help=f"alternations per component (default {defaults['max_iter']})")
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
                         help=f"{hemi} per-subject maps (curv, .mgh, .gii; paths or globs) "
                              "or qcache stacks (one .mgh frame per subject)")
        srf.add_argument(f"--{hemi}-cortex", metavar="LABEL",
                         help=f"{hemi} cortex .label, .annot, .label.gii or 0/1 .shape.gii "
                              "(medial wall left out; default: the vertices that vary "
                              "across the maps)")
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
        Exit code: 0 success, 2 user error, 130 interrupted (SIGINT), 143
        terminated (SIGTERM).
    """
    parser = _build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv
    previous = _catch_sigterm()
    try:
        _check_report_dependencies()
        _check_before_work(args)
        return args.func(args)
    except KeyboardInterrupt:
        print("neurospca: interrupted; no report or model was written.", file=sys.stderr)
        return 130
    except _Terminated:
        print("neurospca: terminated (SIGTERM); no report or model was written.",
              file=sys.stderr)
        return 143
    except UserError as exc:
        print(f"neurospca: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, ImportError, EOFError) as exc:
        print(f"neurospca: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        _remove_temp_dirs()
        if previous is not _NOT_INSTALLED:  # None: installed outside Python
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _one_line(exc):
    return " ".join(str(exc).split())


def _on_sigterm(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not stop cleanup
    raise _Terminated()


def _catch_sigterm():
    """Handle SIGTERM like SIGINT (clean up, exit 143); returns the previous handler."""
    if threading.current_thread() is not threading.main_thread():
        return _NOT_INSTALLED
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # pragma: no cover - no signals here
        return _NOT_INSTALLED


def _remove_temp_dirs():
    for tmp in list(_TEMP_DIRS):
        shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.exists(tmp):
            _TEMP_DIRS.discard(tmp)


def _probe_writable(folder, option):
    """Create and remove a folder in ``folder``: fails (UserError) if it is not writable."""
    blocked = _block_signals()  # the probe is never left behind
    try:
        probe = tempfile.mkdtemp(prefix=".neurospca-probe-", dir=folder)
        os.rmdir(probe)
    except OSError as exc:
        raise UserError(f"{option}: cannot write in {folder!r} ({exc.strerror or exc}); "
                        "choose a writable folder.") from None
    finally:
        _unblock_signals(blocked)


def _check_before_work(args):
    """Fail before loading or fitting anything: output writable, plot meshes and the
    background image readable and valid (the report uses them after the fit)."""
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
    elif args.command == "report":
        out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.model)),
                                          "report.html")
        folder = os.path.dirname(os.path.abspath(out))
        if os.path.isdir(folder):
            _probe_writable(folder, "--output")
    bg_img = getattr(args, "bg_img", None)
    if bg_img is not None and os.path.exists(bg_img):  # read now, not after the fit
        from .masking import _image_data, _load_image

        try:
            _image_data(_load_image(bg_img, "--bg-img"), "--bg-img")
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
    if args.command == "fit":
        from .surface import check_plot_mesh, load_surf_mesh

        for hemi in ("left", "right"):
            path = getattr(args, f"{hemi}_plot_mesh", None)
            if path is None:
                continue
            option = f"--{hemi}-plot-mesh"
            if not os.path.exists(path):
                raise UserError(f"{option}: no such file {path!r}.")
            try:
                check_plot_mesh(*load_surf_mesh(path, option), name=option)
            except (ValueError, TypeError) as exc:
                raise UserError(str(exc)) from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
