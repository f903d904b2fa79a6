"""The component figures of a report, drawn in this process or in worker processes.

Figures are drawn on reused canvases (:mod:`._canvases`), encoded quickly
(:mod:`._png`) and looked up by content hash in a :class:`FigureCache` first.
"""

import logging
import os

import numpy as np

from ._canvases import ReportCanvases
from ._png import png_data_uri

logger = logging.getLogger("neurospca")

__all__ = ["component_figure", "component_images", "PARALLEL_MIN_FIGURES"]

#: with ``n_jobs=None``, worker processes draw the component figures only from
#: this many figures on (starting a worker imports matplotlib and nilearn: ~2 s)
PARALLEL_MIN_FIGURES = 8

#: set in the report worker (:func:`._warmup.prepare_report_worker`), a fresh
#: interpreter that never ran an OpenMP kernel: with ``n_jobs=None`` its component
#: figures are drawn by a forked child while the report's other sections are built
FORK_DRAWING = False

#: the longest wait (s) for the forked child's figures before it is killed
FORK_TIMEOUT = 900.0


def component_figure(comp, k, space, meshes, surface_maps, bg_maps, bg_img, engine, canvases):
    """Data URI of component ``k``'s figure (None for surfaces without meshes)."""
    from ..masking import VolumeMasker, unmask
    from ..surface import Hemispheres
    from . import plotting
    from ._summary_plots import fixed_margins

    key = canvases.key("component", comp)
    uri = None if key is None else canvases.cache.get(key)
    if uri is not None:
        return uri
    if isinstance(space, VolumeMasker):
        fig = plotting.plot_volume_component(
            unmask(comp, space.mask_img), None, bg_img=bg_img, canvas=canvases.volume(plotting.CMAP)
        )
    elif surface_maps is not None:
        maps = {h: surface_maps[h][:, k] for h in ("left", "right")}
        canvas = canvases.surface(meshes)
        label = canvases.labels.get("cbar_label", "loading")
        png = None
        if canvas is not None:  # pyvista: the figure composed without matplotlib
            png = plotting.surface_component_png(
                maps, meshes, canvas, bg_maps=bg_maps, cbar_label=label, dpi=canvases.dpi
            )
        if png is not None:
            uri = png_data_uri(png)
            if key is not None:
                canvases.cache.put(key, uri)
            return uri
        fig = plotting.plot_surface_component(
            maps, meshes, None, bg_maps=bg_maps, engine=engine, canvas=canvas, cbar_label=label
        )
    elif isinstance(space, Hemispheres):
        return None
    else:
        plt = plotting._pyplot()
        fig, ax = plt.subplots(figsize=(8, 2.2))
        ax.plot(comp, lw=0.8)
        ax.set_xlabel("feature")
        ax.set_ylabel(canvases.labels.get("cbar_label", "loading"))
        fixed_margins(fig, top=0.2)
    uri = canvases.encode(fig)
    if key is not None:
        canvases.cache.put(key, uri)
    return uri


def _draw_chunk(ks, comps, space, meshes, surface_maps, bg_maps, bg_img, engine, dpi, labels=None):
    """Figures of components ``ks`` (one canvas for all of them): list of data URIs."""
    import time

    canvases = ReportCanvases(space, meshes, bg_img, engine, dpi, labels=labels)
    out = []
    try:
        for k, comp in zip(ks, comps, strict=True):
            t0, c0 = time.perf_counter(), time.process_time()
            out.append(
                component_figure(
                    comp, k, space, meshes, surface_maps, bg_maps, bg_img, engine, canvases
                )
            )
            logger.info(
                "report: component %d drawn in %.2f s (CPU %.2f s)",
                k + 1,
                time.perf_counter() - t0,
                time.process_time() - c0,
            )
    finally:
        canvases.close()
    return out


def _n_workers(n_jobs, n_figures):
    if n_jobs is None:
        if n_figures < PARALLEL_MIN_FIGURES:
            return 1
        n_jobs = os.cpu_count() or 1
    if (
        isinstance(n_jobs, bool)
        or not isinstance(n_jobs, (int, np.integer))
        or n_jobs == 0
        or n_jobs < -1
    ):
        raise ValueError(
            f"n_jobs must be a positive int, -1 (one per core) or None, got {n_jobs!r}."
        )
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    return max(1, min(int(n_jobs), n_figures))


def component_images(
    comps,
    space,
    meshes,
    surface_maps,
    bg_maps,
    bg_img,
    engine,
    dpi,
    *,
    cache=None,
    n_jobs=None,
    labels=None,
    deferred=False,
):
    """Data URIs of every component's figure (None where nothing is drawn).

    Parameters
    ----------
    comps : ndarray of shape (n_components, n_features)
        The loadings drawn (certified view).
    space, meshes, surface_maps, bg_maps, bg_img, engine, dpi
        As :func:`neurospca.reporting.make_report` has them.
    cache : FigureCache, optional
        Figures found there are not redrawn; new ones are added.
    n_jobs : int, optional
        Worker processes (see :func:`_n_workers`); each draws a contiguous
        block of components on one canvas.
    labels : dict, optional
        ``cbar_label`` and ``support_label`` of the figures (see
        :class:`~neurospca.reporting._canvases.ReportCanvases`).
    deferred : bool, default=False
        Return a function that returns the list; in the report worker
        (:data:`FORK_DRAWING`, ``n_jobs=None``) a forked child draws the figures
        until it is called.

    Returns
    -------
    list of str or None, or a function returning it (``deferred``)
    """
    canvases = ReportCanvases(space, meshes, bg_img, engine, dpi, cache, labels=labels)
    keys = [canvases.key("component", comp) for comp in comps]
    images = [None if key is None else cache.get(key) for key in keys]
    todo = [k for k, image in enumerate(images) if image is None]
    args = (space, meshes, surface_maps, bg_maps, bg_img, engine, dpi, labels)
    if deferred and FORK_DRAWING and n_jobs is None and todo:
        collect = _forked_drawing(todo, comps, args)
    else:
        drawn = _draw_blocks(todo, comps, args, n_jobs)
        collect = lambda: drawn  # noqa: E731

    def finish():
        for block, uris in zip(*collect(), strict=True):
            for k, uri in zip(block, uris, strict=True):
                images[k] = uri
                if keys[k] is not None and uri is not None:
                    cache.put(keys[k], uri)
        return images

    return finish if deferred else finish()


def _forked_drawing(todo, comps, args):
    """Draw components ``todo`` in a forked child; a function returning (blocks, URIs).

    Only in the report worker (see :data:`FORK_DRAWING`). The child sends the
    data URIs as JSON through a pipe and leaves with ``os._exit``; if it fails or
    does not finish within ``FORK_TIMEOUT`` seconds, it is killed and the figures
    are drawn in this process (raising their own error, if any).
    """
    import json
    import signal

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            os.close(read_fd)
            data = json.dumps(_draw_chunk(todo, comps[todo], *args)).encode()
            with os.fdopen(write_fd, "wb") as fh:
                fh.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)

    def collect():
        data, complete = _read_all(read_fd, FORK_TIMEOUT)
        if not complete:
            os.kill(pid, signal.SIGKILL)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        try:
            uris = json.loads(data) if complete and code == 0 else None
        except ValueError:
            uris = None
        if not isinstance(uris, list) or len(uris) != len(todo):
            logger.warning("report: the figure child failed (exit %s); drawing here", code)
            uris = _draw_chunk(todo, comps[todo], *args)
        return [todo], [uris]

    return collect


def _read_all(fd, timeout):
    """Bytes of ``fd`` up to its end, and whether the end came before ``timeout`` s."""
    import select
    import time

    deadline, chunks = time.monotonic() + timeout, []
    with os.fdopen(fd, "rb", buffering=0) as fh:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fh], [], [], left)[0]:
                return b"".join(chunks), False
            chunk = fh.read(1 << 20)
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)


def _draw_blocks(todo, comps, args, n_jobs):
    """(blocks, data URIs per block) of components ``todo``, in workers when it pays."""
    workers = _n_workers(n_jobs, len(todo)) if todo else 1
    blocks = [list(b) for b in np.array_split(np.asarray(todo, dtype=int), workers) if b.size]
    if workers == 1:
        return blocks, [_draw_chunk(b, comps[b], *args) for b in blocks]
    from joblib import Parallel, delayed

    drawn = Parallel(n_jobs=workers, backend="loky")(
        delayed(_draw_chunk)(b, comps[b], *args) for b in blocks
    )
    return blocks, drawn
