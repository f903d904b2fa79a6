"""The report's fixed costs, paid ahead in a background thread while a command fits.

A report's first figure pays for importing matplotlib (0.5-0.9 s CPU), jinja2
and the report's own modules, for reading and preparing the default
background (nilearn's 1 mm MNI152 template: 7 M voxels) and for making its
volume canvas (:func:`~neurospca.reporting._canvases.prepare_volume_canvas`). ``neurospca demo`` and
``neurospca fit`` know before fitting that a report follows, so
:func:`start_warm_up` does that work in a daemon thread while the fit runs (the
fit's kernels release the GIL; its data passes run on worker threads), and
:func:`wait_warm_up` joins it before the report is drawn.

Imports in two threads: each module has its own import lock, so a module is
executed once whichever thread asks first; a deadlock needs two threads
importing each other's modules at the same time. The main thread waits for the
warm-up before the report imports any of these modules, and the fit imports
none of them (checked: ``tests/test_report_surface_png.py`` records the modules a fit
imports and those of the warm-up: they meet only in standard-library
modules, which import no third-party package). Anything that fails here
(a missing package, a broken GL stack) is left for the report, which raises
its own error where it always did.

Without a warm-up (a report made from Python after a fit,
``ImageSPCATV.generate_report()``), :func:`prepare_volume_report` overlaps the
two one-off costs of a volume report's first figure: this thread imports
matplotlib while another reads and prepares the background (numpy and gzip,
which release the interpreter's lock, and no import: the caller imported what
it runs).
"""

import importlib
import os
import threading

import numpy as np

__all__ = [
    "start_warm_up",
    "wait_warm_up",
    "prepare_report_worker",
    "prepare_volume_report",
    "WARM_UP_MODULES",
]

#: what a volume report imports (in this order); surfaces add pyvista
WARM_UP_MODULES = (
    "matplotlib",
    "matplotlib.pyplot",
    "matplotlib.backends.backend_agg",
    "PIL.Image",
    "PIL.PngImagePlugin",
    "jinja2",
    "neurospca.reporting",
    "neurospca.reporting._slices",
    "neurospca.reporting._canvases",
    "neurospca.reporting._viewer",
)

_THREAD = []

#: :func:`prepare_volume_report` reads the background in a thread while this thread
#: imports matplotlib; False (the default): the first figure reads it, as before.
#: Off after the lead's quiet pairs (issue 22 round 20, ``bench_front22t.py report``,
#: load 1.1-1.2): the first figure 0.88-1.17 s -> 0.31-0.50 s, but the whole report
#: slower in 4 of 5 pairs (+0.1 to +0.3 s wall, +0.2 CPU s): the cost moved, it
#: did not go (the helper's 12 pairs at load 2.6-4.4: 0.10 s faster, within noise).
PREPARE_IN_THREAD = False


def _warm_up(volume, surface):
    from .plotting import _pyplot, _pyvista_installed

    try:
        _pyplot()  # matplotlib with the Agg backend unless MPLBACKEND says otherwise
        for name in WARM_UP_MODULES:
            importlib.import_module(name)
        if surface and _pyvista_installed():
            importlib.import_module("pyvista")  # importing is safe; rendering is probed
        _first_draw()
        if volume:
            from ._canvases import prepare_volume_canvas
            from ._slices import _background, cold_hot
            from .plotting import CMAP

            cold_hot()
            _background(None)  # the template read, its brain, bounding box and shading
            prepare_volume_canvas(CMAP)  # the first component's canvas, drawn once
    except Exception:  # noqa: BLE001 - the report raises its own error later
        return


def _first_draw():
    """Draw a small log-scale plot with a title, labels and a legend, and close it.

    A process's first matplotlib draw loads the fonts and fills the text-layout
    caches: CPU that the report's first summary figure would pay. The axes are
    linear: the report writes no mathtext (the convergence figure's log axis is
    labelled in plain text), so the mathtext parser is not built.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1.5), dpi=40)
    ax = fig.add_subplot()
    ax.plot([1, 2, 3], [1.0, 1e-2, 1e-4], marker=".", label="component 1")
    ax.set_title("gap")
    ax.set_xlabel("iteration")
    ax.legend(fontsize=8)
    ax.grid(True, which="both")
    FigureCanvasAgg(fig).draw()
    from PIL import Image

    Image.preinit()  # the first save imports Pillow's BMP, GIF, JPEG and PPM plugins


def start_warm_up(volume=True, surface=False):
    """Start importing (and preparing) what a report needs, in a daemon thread.

    Parameters
    ----------
    volume : bool, default=True
        Also read the default background (volume figures).
    surface : bool, default=False
        Also import pyvista (surface figures).

    Returns
    -------
    threading.Thread or None
        Started (a second call while one runs returns the running one); None when
        the environment variable ``NEUROSPCA_NO_WARM_UP`` is set (then nothing runs).
    """
    if os.environ.get("NEUROSPCA_NO_WARM_UP"):
        return None
    if _THREAD and _THREAD[0].is_alive():
        return _THREAD[0]
    thread = threading.Thread(
        target=_warm_up, args=(bool(volume), bool(surface)), name="neurospca-warm-up", daemon=True
    )
    _THREAD[:] = [thread]
    thread.start()
    return thread


def wait_warm_up():
    """Wait for a warm-up started by :func:`start_warm_up` (no-op if none).

    Returns
    -------
    bool
        Whether a warm-up was waited for.
    """
    if not _THREAD:
        return False
    thread = _THREAD.pop()
    thread.join()
    return True


def prepare_report_worker():
    """Make this process a report worker: the warm-up's work done here and now, every
    template compiled, and its component figures drawn by a forked child.

    Only for a fresh interpreter started to draw reports (``neurospca demo``'s
    worker, ``neurospca._commands._report_worker``): it is single-threaded and
    never ran an OpenMP kernel, so forking it is safe
    (:data:`neurospca.reporting._render.FORK_DRAWING`).

    Returns
    -------
    None
    """
    from . import _render
    from .report import jinja_templates

    _render.FORK_DRAWING = True
    _warm_up(volume=True, surface=False)
    jinja_templates()


def _read_background(bg_img, affine, viewer_grid):
    """The volume figures' background (template read, brain, box, shading, the glass
    brain's silhouettes of images on ``affine``) and, with ``viewer_grid`` ``(affine,
    shape)``, the viewer's sampled template: cached where the report looks them up.
    Imports nothing (the caller did)."""
    from ._slices import _background, glass_grids
    from ._viewer import _background as viewer_background

    try:
        bg = _background(bg_img)
        for grid in glass_grids(bg, affine):
            bg.silhouette(grid)
        if viewer_grid is not None:
            viewer_background(None, *viewer_grid)
    except Exception:  # noqa: BLE001 - the report raises its own error later
        return


def prepare_volume_report(masker, bg_img=None, viewer=True):
    """Import matplotlib here while a thread reads the report's background.

    A volume report's first figure paid, one after the other, for importing
    matplotlib (0.5 s CPU here, the interpreter's lock held: pure Python) and
    for reading nilearn's 1 mm template and preparing its brain, box, shading
    and glass-brain silhouettes (0.2 s: gzip and numpy, which release the lock), then the viewer
    sampled the template again on the mask's grid. This runs the numeric part
    in a thread while this thread imports matplotlib, then joins it: the same
    arrays, cached where the figures and the viewer look them up (the figures
    are unchanged). Nothing is done when a warm-up or the report worker
    already prepared them, for a background given as a path (read anew by
    each figure), or with :data:`PREPARE_IN_THREAD` False.

    Parameters
    ----------
    masker : VolumeMasker
        The report's space (the viewer's grid).
    bg_img : nibabel image or None
        The figures' background (None: the template).
    viewer : bool, default=True
        Whether the report has the interactive viewer.

    Returns
    -------
    bool
        Whether the thread ran.
    """
    if not PREPARE_IN_THREAD:
        return False
    import nibabel  # noqa: F401 - imported before the thread: it imports nothing
    import scipy.ndimage  # noqa: F401

    from . import _render, _slices, _viewer

    if _render.FORK_DRAWING:  # the report worker: the warm-up prepared all of it
        return False
    if bg_img is not None and not hasattr(bg_img, "dataobj"):  # a path: read by each figure
        return False
    key = None if bg_img is None else id(bg_img)
    if bg_img is None and _slices._TEMPLATE:
        key = id(_slices._TEMPLATE[0])
    grid = None
    if viewer and bg_img is None:
        ornt, affine, box = _viewer._canonical(masker)
        shape = tuple(s.stop - s.start for s in box)
        if (shape, np.asarray(affine, dtype=np.float64).tobytes()) not in (
            _viewer._DEFAULT_BACKGROUNDS
        ):
            grid = (affine, shape)
    if key in _slices._BRAINS and grid is None:
        return False  # prepared already (a warm-up, an earlier report)
    thread = threading.Thread(
        target=_read_background,
        args=(bg_img, masker.mask_img.affine, grid),
        name="neurospca-background",
        daemon=True,
    )
    thread.start()
    try:
        from .plotting import _pyplot

        _pyplot()
    finally:
        thread.join()
    return True
