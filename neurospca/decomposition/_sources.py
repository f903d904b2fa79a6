"""Where a fit's data come from, checked: files under memmaps, dask clusters.

* :func:`file_identity` / :func:`check_unchanged`: the file behind a
  ``numpy.memmap`` is still the mapped one, holds the whole array, and does
  not change between two passes of a fit (DESIGN.md section 9: a lazy array
  refuses a file that changed under it);
* :func:`warn_embedded_memmaps`: a dask array that carries a memmap in its
  task graph;
* :func:`compute` / :func:`gather_watched`: ``dask.compute`` that ends in a
  result or a clear error when a distributed cluster loses its workers.
"""

import os
import time
import warnings

import numpy as np

__all__ = [
    "NO_WORKER_TIMEOUT",
    "check_unchanged",
    "compute",
    "dask_threads",
    "file_identity",
    "gather_watched",
    "warn_embedded_memmaps",
]


def _mapping_of(address):
    """``(inode, path)`` of the file mapped at ``address`` (from /proc/self/maps),
    or ``(None, None)``."""
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                fields = line.split(maxsplit=5)
                lo, hi = (int(a, 16) for a in fields[0].split("-"))
                if lo <= address < hi:
                    return int(fields[4]), (fields[5].strip() if len(fields) > 5 else None)
    except (OSError, ValueError, TypeError, IndexError):
        pass
    return None, None


def _mapped_inode(mm):
    """The inode of the file mapped by the mmap ``mm``, or None."""
    try:
        return _mapping_of(np.frombuffer(mm, dtype=np.uint8).ctypes.data)[0]
    except (TypeError, ValueError):
        return None


def _embedded_memmaps(X):
    """File names of the NumPy memmaps embedded in the task graph of the dask array
    ``X`` (``da.from_array(np.load(path, mmap_mode="r"))``); materialised layers only."""
    graph = X.__dask_graph__()
    layers = graph.layers.values() if hasattr(graph, "layers") else [graph]
    found = set()
    for layer in layers:
        mapping = getattr(layer, "mapping", layer if isinstance(layer, dict) else None)
        if mapping is None:
            continue
        for value in mapping.values():
            value = getattr(value, "value", value)  # a dask DataNode wraps its value
            if isinstance(value, np.memmap):
                path = (
                    getattr(value, "filename", None)
                    or _mapping_of(value.__array_interface__["data"][0])[1]
                )
                found.add(
                    f"of {path!r}" if path and path.startswith("/") else "(here a copy in memory)"
                )
    return sorted(found)


def warn_embedded_memmaps(name, X):
    files = _embedded_memmaps(X)
    if files:
        warnings.warn(
            f"{name} is a dask array that embeds a NumPy memmap {files[0]} in its task "
            "graph (da.from_array(np.load(path, mmap_mode='r'))): a fit through dask then "
            "holds up to the whole array in memory (and pickles it for a distributed "
            "scheduler). Pass the memmap itself (np.load(path, mmap_mode='r'), streamed from "
            "the file by row blocks) or neurospca.npy_to_dask(path) (each task reads its "
            "rows) instead.",
            UserWarning,
            stacklevel=4,
        )


def file_identity(name, X, pos):
    """``(dev, ino, size, mtime_ns)`` of the file behind the memmap ``X`` (read
    from ``pos``), after checking that it is still the mapped file and holds
    all of ``X``; ValueError naming ``name`` otherwise."""
    try:
        st = os.stat(X.filename)
    except OSError as exc:
        raise ValueError(
            f"{name}: the file of this memmap, {X.filename!r}, cannot be read ({exc.strerror})."
        ) from None
    ino = _mapped_inode(X._mmap)
    if ino is not None and ino != st.st_ino:
        raise ValueError(
            f"{name}: the file of this memmap, {X.filename!r}, was replaced "
            "after it was opened; open it again (np.load(path, "
            "mmap_mode='r'))."
        )
    if st.st_size < pos + X.nbytes:
        raise ValueError(
            f"{name}: the file of this memmap, {X.filename!r}, was truncated "
            f"({st.st_size} bytes; the array needs {pos + X.nbytes})."
        )
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def check_unchanged(name, X, fh, identity):
    st = os.fstat(fh.fileno())
    if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != identity:
        raise ValueError(
            f"{name}: the file of this memmap, {X.filename!r}, changed during "
            "the fit (size, modification time or inode differ); the results "
            "would mix two data sets."
        )


#: Seconds a computation on a ``dask.distributed`` cluster waits while the
#: cluster has no worker before it stops with an error (workers killed or lost
#: and not restarted). Change with the environment variable
#: ``NEUROSPCA_DASK_NO_WORKER_TIMEOUT``.
NO_WORKER_TIMEOUT = 60.0


def _distributed_client():
    """The active ``dask.distributed`` client, or None (no import if not loaded)."""
    import sys

    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


def dask_threads():
    """Threads that run dask tasks: those of the distributed cluster's workers,
    or the local scheduler's (``num_workers``, else the CPU count); at least 1."""
    client = _distributed_client()
    if client is not None:
        return max(1, sum(client.nthreads().values()))
    import dask

    return max(1, int(dask.config.get("num_workers", None) or os.cpu_count() or 1))


def compute(name, *values):
    """``dask.compute(*values)``, ending in a result or a clear error in bounded time
    when the distributed cluster loses its workers.

    Without a distributed client this is ``dask.compute``. With one, the
    futures are computed and fetched under watch (:func:`gather_watched`).
    """
    import dask

    client = _distributed_client()
    if client is None:
        return dask.compute(*values)
    return gather_watched(name, client, client.compute(list(values)))


def gather_watched(name, client, futures):
    """The results of ``futures``, fetched one at a time in 1 s waits.

    A task whose workers died ``allowed-failures`` times (dask's setting) is a
    RuntimeError naming ``name``, and so is a cluster without any worker for
    :data:`NO_WORKER_TIMEOUT` seconds: workers lost while a task runs, or after
    it finished but before its result reached the client (a plain ``gather``
    then waits forever for a worker to recompute it).
    """
    from distributed import KilledWorker

    limit = float(os.environ.get("NEUROSPCA_DASK_NO_WORKER_TIMEOUT", NO_WORKER_TIMEOUT))
    results, idle_since = [], None
    while len(results) < len(futures):
        try:
            results.append(futures[len(results)].result(timeout=1.0))
            continue
        except TimeoutError:
            pass
        except KilledWorker as exc:
            raise RuntimeError(
                f"{name}: dask workers died while computing a block ({exc}); the fit was "
                "stopped. Check the workers' memory limits and logs, then fit again."
            ) from None
        if client.scheduler_info().get("workers"):
            idle_since = None
            continue
        idle_since = idle_since or time.monotonic()
        if time.monotonic() - idle_since > limit:
            client.cancel(futures)
            raise RuntimeError(
                f"{name}: the dask cluster has had no worker for {limit:g} s (workers "
                "killed or lost and not restarted); the computation was stopped. Restart "
                "the cluster's workers and fit again."
            )
    return tuple(results)
