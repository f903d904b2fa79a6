"""The ``.npz`` container of a model file: written whole or not at all, read defensively.

Reading treats the file as untrusted: sizes come from the zip's central
directory and each member's ``.npy`` header and are checked before anything
is decompressed; only the members the JSON header declares are read, each up
to its declared size; nothing is unpickled.
"""

import json
import os
import zipfile

import numpy as np

from .._utils.io import atomic_write

FORMAT_NAME = "neurospca-model"
FORMAT_VERSION = 1
META_KEY = "meta.json"

# limits of what load_model reads (a model file must never exhaust the reader)
MAX_BYTES = 2**31  # default cap on the total decompressed size of the declared arrays
MAX_HEADER_BYTES = 16 * 2**20  # the JSON header
MAX_DEPTH = 32  # nesting of the JSON header
MAX_ENTRIES = 100_000  # declared arrays


class NotAModel(ValueError):
    """The file is readable but is not a neurospca model (of this version)."""


def write_archive(path, meta, arrays):
    """Write ``arrays`` and the JSON header ``meta`` as one ``.npz`` (complete or absent).

    Parameters
    ----------
    path : str or os.PathLike
        Target file.
    meta : dict
        JSON header (stored as UTF-8 bytes under ``meta.json``).
    arrays : dict
        Name -> ndarray; none may hold Python objects.

    Returns
    -------
    str
        The path written.

    Raises
    ------
    TypeError
        If an array holds Python objects (it would need pickle).
    """
    arrays = dict(arrays)
    arrays[META_KEY] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    for key, value in arrays.items():
        if value.dtype.hasobject:  # never write anything that would need pickle
            raise TypeError(f"{key} is an object array and cannot be saved without pickle.")

    def _write(tmp):
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    return atomic_write(_write, path)


def _json_depth(value):
    """Nesting depth of a parsed JSON value, without recursion."""
    depth, stack = 0, [(value, 1)]
    while stack:
        item, d = stack.pop()
        depth = max(depth, d)
        if depth > MAX_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return depth


def _npy_header(fh, key):
    """(shape, fortran_order, dtype, header length) of an .npy member, without its data."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise ValueError(f"{key} has .npy format version {version}")
    if (
        dtype.hasobject
        or dtype.kind not in "biufcU"
        or dtype.fields is not None
        or dtype.subdtype is not None
    ):
        raise ValueError(
            f"{key} holds {dtype} values (only numbers, booleans and strings "
            "are read; nothing is unpickled)"
        )
    return shape, fortran, dtype, fh.tell()


def footprint(shape, itemsize):
    """Bytes that an array of ``shape`` may cost once used: every dimension counts at
    least 1 and every element at least 4 bytes (a ``(2**40, 0)`` array or a
    zero-size string dtype holds no bytes in the file but can make a reader
    allocate for each of its elements)."""
    count = 1
    for n in shape:
        count *= max(int(n), 1)
    return count * max(int(itemsize), 4)


def _read_member(zf, info, key, limit):
    """One .npy member, its size checked against the zip directory before reading."""
    with zf.open(info) as fh:
        shape, fortran, dtype, header_len = _npy_header(fh, key)
    count = 1
    for n in shape:
        count *= n
    nbytes = count * dtype.itemsize
    if footprint(shape, dtype.itemsize) > limit:
        raise ValueError(
            f"{key} declares shape {shape} of {dtype}, more than max_bytes={limit} allows once used"
        )
    if nbytes > limit or header_len + nbytes != info.file_size:
        raise ValueError(
            f"{key} declares shape {shape} of {dtype} ({nbytes} bytes) but the "
            f"archive holds {info.file_size - header_len} bytes for it"
        )
    with zf.open(info) as fh:
        arr = np.lib.format.read_array(fh, allow_pickle=False)
        if fh.read(1):  # also makes zipfile check the member's CRC at its end
            raise ValueError(f"{key} has trailing data")
    return arr


def _read_meta(zf, infos):
    """The checked JSON header of an open archive."""
    info = infos.get(META_KEY + ".npy")
    if info is None:
        raise NotAModel(f"an .npz archive but not a neurospca model (no {META_KEY})")
    if info.file_size > MAX_HEADER_BYTES:
        raise ValueError(f"its header declares {info.file_size} bytes (limit {MAX_HEADER_BYTES})")
    raw = _read_member(zf, info, META_KEY, MAX_HEADER_BYTES)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ValueError("its header is not a byte string")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except RecursionError:
        raise ValueError("malformed header: JSON nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"malformed header: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise NotAModel("not a neurospca model file")
    if meta.get("version") != FORMAT_VERSION:
        raise NotAModel(
            f"format version {meta.get('version')!r}; this neurospca reads version {FORMAT_VERSION}"
        )
    if _json_depth(meta) > MAX_DEPTH:
        raise ValueError(f"malformed header: nested deeper than {MAX_DEPTH} levels")
    return meta


def read_archive(path, max_bytes):
    """The JSON header and the arrays it declares, reading nothing else.

    Parameters
    ----------
    path : str
        An existing file.
    max_bytes : int
        Cap on the total decompressed size of the declared arrays.

    Returns
    -------
    meta : dict
        The JSON header.
    arrays : dict
        Name -> ndarray, the declared arrays only.

    Raises
    ------
    NotAModel
        If the file is an archive but not a model of this version.
    ValueError
        If a size, the header or a member is invalid.
    """
    size = os.path.getsize(path)
    if size > max_bytes + MAX_HEADER_BYTES:  # the zip directory alone would be read whole
        raise ValueError(
            f"the file holds {size} bytes, more than max_bytes={max_bytes} "
            "(raise max_bytes to read a larger model)"
        )
    with zipfile.ZipFile(path) as zf:
        infos = {info.filename: info for info in zf.infolist()}
        meta = _read_meta(zf, infos)
        names = meta.get("arrays")
        if (
            not isinstance(names, list)
            or not all(isinstance(n, str) for n in names)
            or len(names) > MAX_ENTRIES
            or len(set(names)) != len(names)
        ):
            raise ValueError("malformed header: 'arrays' must list distinct array names")
        names = [n for n in names if n != META_KEY]
        missing = [n for n in names if n + ".npy" not in infos]
        if missing:
            raise ValueError(f"malformed: arrays missing: {missing[:5]}")
        total = sum(infos[n + ".npy"].file_size for n in names)
        if total > max_bytes:
            raise ValueError(
                f"its declared arrays hold {total} bytes, more than max_bytes="
                f"{max_bytes} (raise max_bytes to read a larger model)"
            )
        arrays, used = {}, 0
        for n in names:
            arrays[n] = _read_member(zf, infos[n + ".npy"], n, max_bytes - used)
            used += footprint(arrays[n].shape, arrays[n].dtype.itemsize)
        check_declared_sizes(meta, max_bytes - used)
    return meta, arrays


#: Bytes per vertex a surface space costs when built (masks, index maps, maps
#: drawn by the report), and per row or column of a saved operator (its row
#: pointers and those of its transpose).
BYTES_PER_VERTEX = 64
BYTES_PER_OPERATOR_DIM = 16


def check_declared_sizes(meta, limit):
    """Refuse sizes that the JSON header declares (not arrays: vertex counts of a
    surface space, operator shapes) when building them could exceed ``limit``
    bytes; nothing is allocated before.

    Raises
    ------
    ValueError
        A declared size, multiplied by its cost per element, is over ``limit``.
    """
    total, stack = 0, [meta]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        for key, value in item.items():
            if key == "n_vertices" and isinstance(value, list):
                total += BYTES_PER_VERTEX * sum(_declared_int(v) for v in value)
            elif (
                key == "operator"
                and isinstance(value, dict)
                and isinstance(value.get("shape"), list)
            ):
                total += BYTES_PER_OPERATOR_DIM * sum(_declared_int(v) for v in value["shape"])
            else:
                stack.append(value)
    if total > limit:
        raise ValueError(
            f"its header declares sizes (vertex counts, operator shapes) that "
            f"would take {total} bytes to build, more than max_bytes allows "
            "(raise max_bytes to read a larger model)"
        )


def _declared_int(value):
    """``value`` if it is a plausible size; 0 otherwise (the decoder refuses it
    with its own message)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        return 0
    return value
