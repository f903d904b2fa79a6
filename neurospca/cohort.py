"""Cohort-size data matrices without loading every image at once.

Two routes, both accepted as ``X`` by :class:`neurospca.SPCATV` (fit and
transform), which streams them by row blocks:

* to one ``.npy`` memmap (:func:`images_to_memmap`, :func:`surfaces_to_memmap`):
  the images are read one at a time (nibabel proxies: a 4-D image's header is
  read, its data only when its rows are written), so memory stays O(one image)
  whatever the number of subjects;
* to a lazy dask array (:func:`images_to_dask`, :func:`surfaces_to_dask`,
  :func:`npy_to_dask`): each chunk of rows is one ``dask.delayed`` task that
  reads its own files, so the workers of a ``dask.distributed`` cluster read
  the images themselves and nothing is loaded on the client.
"""

import errno
import functools
import os

import nibabel as nib
import numpy as np

from ._utils.images import check_grid, collect_images, image_data, mask_array
from ._utils.io import atomic_write, check_not_input, regular_file
from .masking import load_mask_img
from .surface import load_surf_data

__all__ = [
    "images_to_dask",
    "images_to_memmap",
    "npy_to_dask",
    "surfaces_to_dask",
    "surfaces_to_memmap",
]


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}.")
    return dtype


def _checked_block(label, block, n_cols, dtype):
    """``block`` (rows of one file) as ``dtype``: the right width, all finite."""
    block = np.asarray(block, dtype=dtype)
    if block.shape[1] != n_cols:
        raise ValueError(f"{label} has {block.shape[1]} values in the mask; expected {n_cols}.")
    if not np.all(np.isfinite(block)):
        n_bad = int(block.size - np.count_nonzero(np.isfinite(block)))
        raise ValueError(
            f"{label} has {n_bad} NaN or infinite value(s) in the mask; "
            "remove those voxels/vertices from the mask (images_to_data "
            "does it for in-memory data)."
        )
    return block


def _npy_header_bytes(n_rows, n_cols, dtype):
    """The bytes of a ``.npy`` header for a C-ordered ``(n_rows, n_cols)`` array."""
    import io

    buf = io.BytesIO()
    header = {
        "descr": np.lib.format.dtype_to_descr(dtype),
        "fortran_order": False,
        "shape": (n_rows, n_cols),
    }
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue()


def _preallocate(fd, size):
    """Reserve ``size`` bytes for ``fd`` now, so a full disk is an OSError here (not
    later); file systems that cannot reserve space are written as they are."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return
        raise


def _write_rows(path, n_rows, n_cols, dtype, rows, inputs=()):
    """Write ``rows`` (an iterator of ``(label, 2-D block)``) into a new ``.npy`` at
    ``path`` atomically; non-finite values are an error naming the block.

    The file is written with ordinary writes after its whole size was
    reserved (``posix_fallocate``): a full disk or a file size limit is an
    ``OSError`` and nothing is left behind (writing through a memory map would
    kill the process with SIGBUS instead). ``path`` may not be one of the
    ``inputs``.
    """
    check_not_input(path, inputs)
    header = _npy_header_bytes(n_rows, n_cols, dtype)

    def write(tmp):
        with open(tmp, "wb") as fh:
            _preallocate(fh.fileno(), len(header) + n_rows * n_cols * dtype.itemsize)
            fh.write(header)
            i = 0
            for label, block in rows:
                block = np.ascontiguousarray(_checked_block(label, block, n_cols, dtype))
                if i + block.shape[0] > n_rows:  # pragma: no cover - guarded by the count
                    raise ValueError(f"{label}: more rows than the {n_rows} counted.")
                fh.write(memoryview(block).cast("B"))
                i += block.shape[0]
            if i != n_rows:  # pragma: no cover - guarded by the row count
                raise ValueError(f"wrote {i} rows, expected {n_rows}.")

    atomic_write(write, path)
    return np.load(path, mmap_mode="r")


def images_to_memmap(imgs, mask, path, *, dtype=np.float32, threshold=None, resample=False):
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
        NaN/inf values inside the mask; ``path`` is one of the inputs or exists
        and is not a regular file.
    OSError
        The disk is full (or the file is over a size limit): nothing is left
        at ``path``.
    """
    dtype = _check_dtype(dtype)
    mask_img = load_mask_img(mask, threshold=threshold)
    mask_arr = mask_array(mask_img)
    items = collect_images(imgs)  # proxies: headers only
    n_rows = sum(_n_frames(img) for _, img in items)
    rows = ((label, _image_rows(label, img, mask_img, mask_arr, resample)) for label, img in items)
    inputs = [(label, img.get_filename()) for label, img in items] + [("mask", mask)]
    return _write_rows(os.fspath(path), n_rows, int(mask_arr.sum()), dtype, rows, inputs), mask_img


def _n_frames(img):
    return 1 if len(img.shape) == 3 else int(img.shape[3])


def _image_rows(label, img, mask_img, mask_arr, resample):
    """The in-mask values of one 3-D or 4-D image, one row per frame."""
    img = check_grid(label, img, mask_img, resample)
    values = np.asarray(image_data(img, label)[mask_arr])
    return values[None, :] if values.ndim == 1 else values.T


def _image_chunk(items, mask_img, mask_arr, resample, dtype):
    """Rows of a few images (one dask task); an item is a path or an image."""
    n_cols = int(mask_arr.sum())
    blocks = []
    for label, src in items:
        img = nib.load(src) if isinstance(src, str) else src
        blocks.append(
            _checked_block(
                label, _image_rows(label, img, mask_img, mask_arr, resample), n_cols, dtype
            )
        )
    return np.concatenate(blocks, axis=0)


def _import_dask(func):
    try:
        import dask
        import dask.array as da
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(f"{func} needs dask: pip install 'dask[array]'.") from None
    return dask, da


def _check_chunk(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}.")
    return int(value)


def _delayed_rows(func, tasks, n_cols, dtype, name):
    """One dask array from ``(n_rows, args)`` tasks of ``func(*args)``."""
    dask, da = _import_dask(name)
    parts = [
        da.from_delayed(dask.delayed(func, pure=True)(*args), shape=(n_rows, n_cols), dtype=dtype)
        for n_rows, args in tasks
    ]
    return da.concatenate(parts, axis=0)


def images_to_dask(
    imgs, mask, *, chunk_images=16, dtype=np.float32, threshold=None, resample=False
):
    """A lazy dask array of the in-mask values of many NIfTI images.

    The rows are those of :func:`neurospca.images_to_data` (same order). Each
    chunk of ``chunk_images`` images is one ``dask.delayed`` task that reads
    its files (by path: a task graph of paths, read by the workers of a
    ``dask.distributed`` cluster). Headers are read now, so an image off the
    mask's grid is an error here, not in a worker; NaN/inf values inside the
    mask are an error naming the image when its chunk is computed.

    Parameters
    ----------
    imgs : list of images or paths, 4-D image, path or glob pattern
    mask : nibabel image, path or 3-D ndarray
    chunk_images : int, default=16
        Images per chunk (a 4-D image gives all its frames to its chunk).
    dtype : {np.float32, np.float64}, default=np.float32
    threshold : float, optional
    resample : bool, default=False
        See :func:`neurospca.images_to_data`.

    Returns
    -------
    X : dask.array.Array of shape (n_samples, n_features)
    mask_img : nibabel.Nifti1Image

    Raises
    ------
    ValueError
        Bad ``chunk_images`` or ``dtype``, or an image not on the mask's grid
        (and ``resample`` is False).
    """
    dtype = _check_dtype(dtype)
    chunk_images = _check_chunk(chunk_images, "chunk_images")
    mask_img = load_mask_img(mask, threshold=threshold)
    mask_arr = mask_array(mask_img)
    items = collect_images(imgs)  # proxies: headers only
    if not resample:
        for label, img in items:
            check_grid(label, img, mask_img, resample)
    tasks = []
    for lo in range(0, len(items), chunk_images):
        part = items[lo : lo + chunk_images]
        srcs = [(label, img.get_filename() or img) for label, img in part]
        tasks.append(
            (sum(_n_frames(img) for _, img in part), (srcs, mask_img, mask_arr, resample, dtype))
        )
    return _delayed_rows(
        _image_chunk, tasks, int(mask_arr.sum()), dtype, "images_to_dask"
    ), mask_img


def _surface_header(files, mask):
    """``files`` as a list, the first file's values and the checked mask."""
    files = list(files) if not isinstance(files, (str, bytes, os.PathLike)) else [files]
    if not files:
        raise ValueError("files is empty: give at least one file.")
    first = np.asarray(load_surf_data(files[0], "files[0]"))
    n_vertices = first.shape[0]
    if mask is None:
        mask = np.ones(n_vertices, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.shape != (n_vertices,):
        raise ValueError(
            f"mask must be a boolean array of shape ({n_vertices},), got {mask.dtype} {mask.shape}."
        )
    return files, first, mask


def _surface_row(label, values, mask):
    """One file's map, checked (one map, the first file's vertex count), masked."""
    if values.ndim != 1:
        raise ValueError(f"{label} holds {values.shape[1]} maps; give one map per file.")
    if values.shape[0] != mask.shape[0]:
        raise ValueError(f"{label} has {values.shape[0]} vertices; files[0] has {mask.shape[0]}.")
    return values[mask][None, :]


def _surface_chunk(items, mask, dtype):
    """Rows of a few surface files (one dask task)."""
    n_cols = int(mask.sum())
    return np.concatenate(
        [
            _checked_block(
                label,
                _surface_row(label, np.asarray(load_surf_data(f, label)), mask),
                n_cols,
                dtype,
            )
            for label, f in items
        ],
        axis=0,
    )


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
        first file's or the mask's, or NaN/inf values in the mask; ``path`` is
        one of the ``files`` or exists and is not a regular file.
    OSError
        The disk is full: nothing is left at ``path``.
    """
    dtype = _check_dtype(dtype)
    files, first, mask = _surface_header(files, mask)
    rows = (
        (
            f"files[{i}]",
            _surface_row(
                f"files[{i}]",
                first if i == 0 else np.asarray(load_surf_data(f, f"files[{i}]")),
                mask,
            ),
        )
        for i, f in enumerate(files)
    )
    inputs = [(f"files[{i}]", f) for i, f in enumerate(files)]
    return _write_rows(os.fspath(path), len(files), int(mask.sum()), dtype, rows, inputs)


def surfaces_to_dask(files, *, mask=None, chunk_files=64, dtype=np.float32):
    """A lazy dask array of per-vertex maps (one file per subject).

    Each chunk of ``chunk_files`` files is one ``dask.delayed`` task that reads
    them (a task graph of paths: the workers of a ``dask.distributed`` cluster
    read the files). The first file is read now for the vertex count; the
    checks of :func:`surfaces_to_memmap` on the others run in their tasks and
    name the file.

    Parameters
    ----------
    files : list of paths
        FreeSurfer morphometry, MGH/MGZ or GIFTI files, one map each.
    mask : boolean ndarray of shape (n_vertices,), optional
        Vertices kept.
    chunk_files : int, default=64
        Files (rows) per chunk.
    dtype : {np.float32, np.float64}, default=np.float32

    Returns
    -------
    dask.array.Array of shape (len(files), n_kept_vertices)

    Raises
    ------
    ValueError
        No files, bad ``chunk_files``, ``dtype`` or mask, or a first file with
        several maps.
    """
    dtype = _check_dtype(dtype)
    chunk_files = _check_chunk(chunk_files, "chunk_files")
    files, first, mask = _surface_header(files, mask)
    _surface_row("files[0]", first, mask)
    items = [(f"files[{i}]", os.path.abspath(os.fspath(f))) for i, f in enumerate(files)]
    tasks = [
        (len(items[lo : lo + chunk_files]), (items[lo : lo + chunk_files], mask, dtype))
        for lo in range(0, len(items), chunk_files)
    ]
    return _delayed_rows(_surface_chunk, tasks, int(mask.sum()), dtype, "surfaces_to_dask")


def _npy_header(fh, path):
    """``(shape, fortran_order, dtype, offset)`` of the ``.npy`` file open as ``fh``."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = reader(fh, max_header_size=10_000)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise ValueError(f"path: {path!r} is not a readable .npy file ({exc}).") from None
    if dtype.hasobject:
        raise ValueError(
            f"path: {path!r} holds Python objects ({dtype}); neurospca reads "
            "numeric .npy files only."
        )
    if not np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"path: {path!r} holds {dtype} values; expected real numbers.")
    return shape, fortran, dtype, fh.tell()


def _npy_identity(path):
    """What identifies the ``.npy`` file at ``path`` now: ``(stat, header)``."""
    regular_file(path, "path")
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        header = _npy_header(fh, path)
    shape, _, dtype, offset = header
    if st.st_size < offset + int(np.prod(shape)) * dtype.itemsize:
        raise ValueError(
            f"path: {path!r} is truncated: its header promises {shape} "
            f"{dtype} values, more than its {st.st_size} bytes hold."
        )
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), header


def _read_rows(path, lo, hi, identity):
    """Rows ``lo:hi`` of the ``.npy`` file ``path`` (one dask task), after checking
    the file is the one the array was made from: a read-only view of the rows
    mapped from the file (no copy; the page cache serves them), or, for a
    Fortran-ordered file, a copy of them."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        now = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if now != identity[0] or _npy_header(fh, path) != identity[1]:
            raise ValueError(
                f"path: {path!r} changed after npy_to_dask read it (size, modification "
                "time, inode or header differ): the array would not be the one promised. "
                "Call npy_to_dask again on the new file."
            )
        shape, fortran, dtype, offset = identity[1]
        if fortran:
            mm = np.memmap(fh, dtype=dtype, mode="r", shape=shape, order="F", offset=offset)
            return np.array(mm[lo:hi])
        if hi == lo or shape[1] == 0:
            return np.empty((hi - lo, shape[1]), dtype=dtype)
        start = offset + lo * shape[1] * dtype.itemsize
        rows = np.memmap(fh, dtype=dtype, mode="r", shape=(hi - lo, shape[1]), offset=start)
    return rows.view(np.ndarray)


def npy_to_dask(path, *, chunk_rows=1000):
    """A dask array over a ``.npy`` file, chunked by rows (subjects).

    Each chunk is read by its own task from the file (a read-only view of its
    rows mapped from the file, no copy), so the task graph holds only the
    path: nothing is loaded on the client and the workers of a
    ``dask.distributed`` cluster read their chunks themselves. A fit of
    :class:`neurospca.SPCATV` on the array does not use the chunks: each of
    its tasks (one per thread of the cluster) views its own rows of the file,
    block by block, checking the file before each block.
    ``da.from_array(np.load(path, mmap_mode="r"))`` instead embeds the memmap
    in the graph, which is pickled (the whole array) whenever the
    graph is sent to a scheduler, and a fit then holds the whole array in
    memory (:class:`neurospca.SPCATV` warns about it).

    The file's identity (device, inode, size, modification time and header)
    is recorded now; a task that finds the file changed (replaced, rewritten,
    truncated) raises a ValueError naming ``path`` instead of computing other
    numbers than the array promised.

    Parameters
    ----------
    path : str or os.PathLike
        A 2-D ``.npy`` file of real numbers, e.g. from :func:`images_to_memmap`.
    chunk_rows : int, default=1000

    Returns
    -------
    dask.array.Array of shape (n_samples, n_features)

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        ``path`` is not a regular file (a folder, FIFO or device), not a
        readable ``.npy`` file, truncated, not 2-D or not numeric; bad
        ``chunk_rows``; when computed, the file changed.
    """
    _import_dask("npy_to_dask")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}.")
    path = os.path.abspath(os.fspath(path))
    chunk_rows = _check_chunk(chunk_rows, "chunk_rows")
    identity = _npy_identity(path)
    shape, _, dtype, _ = identity[1]
    if len(shape) != 2:
        raise ValueError(f"path: {path!r} holds a {len(shape)}-D array; expected 2-D.")
    n, p = shape
    tasks = [
        (min(n, lo + chunk_rows) - lo, (path, lo, min(n, lo + chunk_rows), identity))
        for lo in range(0, n, chunk_rows)
    ]
    X = _delayed_rows(_read_rows, tasks, p, dtype, "npy_to_dask")
    # a fit's tasks read their own rows with this (DataOperator's ROW_READER)
    X._neurospca_row_reader = functools.partial(_read_rows, path, identity=identity)
    return X
