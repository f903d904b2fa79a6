"""Cohort-size data matrices on disk: many images to one ``.npy`` memmap.

The images are read one at a time (nibabel proxies: a 4-D image's header is
read, its data only when its rows are written), so memory stays O(one image)
whatever the number of subjects. The result, ``np.load(path, mmap_mode="r")``,
is accepted as ``X`` by :class:`neurospca.SPCATV` (fit and transform), which
streams it by row blocks.
"""

import os

import numpy as np

from ._utils.io import atomic_write
from .masking import _check_grid, _collect_images, _image_data, _mask_array, load_mask_img
from .surface import load_surf_data

__all__ = ["images_to_memmap", "npy_to_dask", "surfaces_to_memmap"]


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}.")
    return dtype


def _write_rows(path, n_rows, n_cols, dtype, rows):
    """Write ``rows`` (an iterator of 2-D blocks) into a new ``.npy`` at
    ``path`` atomically; non-finite values are an error naming the block."""

    def write(tmp):
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(n_rows, n_cols))
        i = 0
        for label, block in rows:
            block = np.asarray(block, dtype=dtype)
            if block.shape[1] != n_cols:
                raise ValueError(f"{label} has {block.shape[1]} values in the mask; "
                                 f"expected {n_cols}.")
            if not np.all(np.isfinite(block)):
                n_bad = int(block.size - np.count_nonzero(np.isfinite(block)))
                raise ValueError(
                    f"{label} has {n_bad} NaN or infinite value(s) in the mask; "
                    "remove those voxels/vertices from the mask (images_to_data "
                    "does it for in-memory data)."
                )
            out[i:i + block.shape[0]] = block
            i += block.shape[0]
        if i != n_rows:  # pragma: no cover - guarded by the row count
            raise ValueError(f"wrote {i} rows, expected {n_rows}.")
        out.flush()
        del out

    atomic_write(write, path)
    return np.load(path, mmap_mode="r")


def images_to_memmap(imgs, mask, path, *, dtype=np.float32, threshold=None,
                     resample=False):
    """Write the in-mask values of many NIfTI images to a ``.npy`` memmap.

    The rows are those of :func:`neurospca.images_to_data` (same order), but
    the images are read one at a time and written to ``path``, never held
    together in memory.

    Parameters
    ----------
    imgs : list of images or paths, 4-D image, path or glob pattern
    mask : nibabel image, path or 3-D ndarray
    path : str or os.PathLike
        The ``.npy`` file to write (atomically: complete or not at all).
    dtype : {np.float32, np.float64}, default=np.float32
    threshold : float, optional
    resample : bool, default=False
        See :func:`neurospca.images_to_data`.

    Returns
    -------
    X : numpy.memmap of shape (n_samples, n_features)
        ``np.load(path, mmap_mode="r")``.
    mask_img : nibabel.Nifti1Image

    Raises
    ------
    ValueError
        An image is not on the mask's grid (and ``resample`` is False) or has
        NaN/inf values inside the mask.
    """
    dtype = _check_dtype(dtype)
    mask_img = load_mask_img(mask, threshold=threshold)
    mask_arr = _mask_array(mask_img)
    items = _collect_images(imgs)  # proxies: headers only
    n_rows = sum(1 if len(img.shape) == 3 else int(img.shape[3]) for _, img in items)
    n_cols = int(mask_arr.sum())

    def rows():
        for label, img in items:
            img = _check_grid(label, img, mask_img, resample)
            values = np.asarray(_image_data(img, label)[mask_arr])
            yield label, values[None, :] if values.ndim == 1 else values.T

    return _write_rows(os.fspath(path), n_rows, n_cols, dtype, rows()), mask_img


def surfaces_to_memmap(files, path, *, mask=None, dtype=np.float32):
    """Write per-vertex maps (one per file) to a ``.npy`` memmap.

    Parameters
    ----------
    files : list of paths
        FreeSurfer morphometry, MGH/MGZ or GIFTI files, one map (subject) each,
        read one at a time with :func:`neurospca.load_surf_data`.
    path : str or os.PathLike
        The ``.npy`` file to write (atomically).
    mask : boolean ndarray of shape (n_vertices,), optional
        Vertices kept (e.g. from :func:`neurospca.load_cortex_mask`).
    dtype : {np.float32, np.float64}, default=np.float32

    Returns
    -------
    numpy.memmap of shape (len(files), n_kept_vertices)

    Raises
    ------
    ValueError
        No files, a file with several maps, a vertex count differing from the
        first file's or the mask's, or NaN/inf values in the mask.
    """
    dtype = _check_dtype(dtype)
    files = list(files) if not isinstance(files, (str, bytes, os.PathLike)) else [files]
    if not files:
        raise ValueError("files is empty: give at least one file.")
    first = np.asarray(load_surf_data(files[0], "files[0]"))
    n_vertices = first.shape[0]
    if mask is None:
        mask = np.ones(n_vertices, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.shape != (n_vertices,):
        raise ValueError(f"mask must be a boolean array of shape ({n_vertices},), got "
                         f"{mask.dtype} {mask.shape}.")

    def rows():
        for i, f in enumerate(files):
            label = f"files[{i}]"
            values = first if i == 0 else np.asarray(load_surf_data(f, label))
            if values.ndim != 1:
                raise ValueError(f"{label} holds {values.shape[1]} maps; give one map "
                                 "per file.")
            if values.shape[0] != n_vertices:
                raise ValueError(f"{label} has {values.shape[0]} vertices; files[0] has "
                                 f"{n_vertices}.")
            yield label, values[mask][None, :]

    return _write_rows(os.fspath(path), len(files), int(mask.sum()), dtype, rows())


def _read_rows(path, lo, hi):
    """Rows ``lo:hi`` of a ``.npy`` file (one dask task)."""
    return np.array(np.load(path, mmap_mode="r")[lo:hi])


def npy_to_dask(path, *, chunk_rows=1000):
    """A dask array over a ``.npy`` file, chunked by rows (subjects).

    Each chunk is read by its own task from the file (``np.load(...,
    mmap_mode="r")`` inside the task), so the task graph holds only the path:
    nothing is loaded on the client and the workers of a ``dask.distributed``
    cluster read their chunks themselves. ``da.from_array(np.load(path,
    mmap_mode="r"))`` instead embeds the memmap in the graph, which is pickled
    (the whole array) whenever the graph is sent to a scheduler.

    Parameters
    ----------
    path : str or os.PathLike
        A 2-D ``.npy`` file, e.g. from :func:`images_to_memmap`.
    chunk_rows : int, default=1000

    Returns
    -------
    dask.array.Array of shape (n_samples, n_features)
    """
    try:
        import dask
        import dask.array as da
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("npy_to_dask needs dask: pip install 'dask[array]'.") from None
    path = os.path.abspath(os.fspath(path))
    head = np.load(path, mmap_mode="r")
    if head.ndim != 2:
        raise ValueError(f"path: {path!r} holds a {head.ndim}-D array; expected 2-D.")
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) \
            or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be an int >= 1, got {chunk_rows!r}.")
    n, p = head.shape
    dtype = head.dtype
    del head
    parts = [da.from_delayed(dask.delayed(_read_rows, pure=True)(path, lo, min(n, lo + chunk_rows)),
                             shape=(min(n, lo + chunk_rows) - lo, p), dtype=dtype)
             for lo in range(0, n, int(chunk_rows))]
    return da.concatenate(parts, axis=0)
