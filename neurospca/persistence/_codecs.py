"""The codec registry: one encode/decode pair per stored type, in one table.

A value is stored as a JSON description (``{"kind": ..., ...}``) plus arrays
put in the archive under names that start with its key. :data:`CODECS` maps
each ``kind`` to a :class:`Codec`; :func:`encode_value` asks the codecs in
registration order which one accepts a value, :func:`decode_value` dispatches
on the stored ``kind``. Adding a stored type is one :func:`register_codec`
call. Decoders treat the description and the arrays as untrusted: every array
is checked before an object is built from it.
"""

import numbers
from typing import NamedTuple

import nibabel as nib
import numpy as np
import scipy.sparse as sp

from ..masking import VolumeMasker
from ..operators import GroupOperator
from ..surface import Hemispheres
from ..trees import Tree, check_tree

__all__ = [
    "Codec",
    "CODECS",
    "VALUE_KINDS",
    "SPACE_KINDS",
    "register_codec",
    "encode_value",
    "decode_value",
]

_SCALAR_KINDS = "biuf"
HEMIS = ("left", "right")


class Codec(NamedTuple):
    """One stored type: how to recognise, write and read it.

    Parameters
    ----------
    kind : str
        The ``"kind"`` written in the JSON description.
    accepts : callable
        ``accepts(value) -> bool``: whether this codec stores ``value``.
    encode : callable
        ``encode(key, value, arrays) -> dict``: puts arrays in ``arrays``
        (names starting with ``key``) and returns the other JSON fields.
    decode : callable
        ``decode(key, desc, arrays) -> value``: the value back, every array
        checked first (ValueError otherwise).
    """

    kind: str
    accepts: object
    encode: object
    decode: object


#: kind -> Codec, in the order :func:`encode_value` asks them
CODECS = {}


def register_codec(kind, accepts, encode, decode):
    """Add (or replace) the codec of one stored type.

    Parameters
    ----------
    kind : str
        Name written in the file's JSON description.
    accepts : callable
        ``accepts(value) -> bool``.
    encode : callable
        ``encode(key, value, arrays) -> dict`` of JSON fields.
    decode : callable
        ``decode(key, desc, arrays) -> value``.

    Returns
    -------
    Codec
        The registered codec.
    """
    CODECS[kind] = Codec(kind, accepts, encode, decode)
    return CODECS[kind]


def encode_value(key, value, arrays, kinds=None):
    """Store ``value`` under ``key``; return its JSON description.

    Parameters
    ----------
    key : str
        Prefix of the array names.
    value : object
        What to store.
    arrays : dict
        Receives the arrays (name -> ndarray).
    kinds : collection of str, optional
        Codecs allowed (default :data:`VALUE_KINDS`).

    Returns
    -------
    dict
        ``{"kind": ..., ...}`` (JSON values only).

    Raises
    ------
    TypeError
        If no codec stores ``value`` (nothing is ever pickled).
    """
    kinds = VALUE_KINDS if kinds is None else kinds
    for codec in CODECS.values():
        if codec.kind in kinds and codec.accepts(value):
            return {"kind": codec.kind, **codec.encode(key, value, arrays)}
    raise TypeError(type(value).__name__)


def decode_value(key, desc, arrays, kinds=None):
    """The value stored under ``key`` by :func:`encode_value`.

    Parameters
    ----------
    key : str
        Prefix of the array names.
    desc : dict
        The JSON description.
    arrays : dict
        The arrays read from the file.
    kinds : collection of str, optional
        Codecs allowed (default :data:`VALUE_KINDS`).

    Returns
    -------
    object
        The decoded value.

    Raises
    ------
    ValueError
        If the kind is unknown or not allowed here, or an array is invalid.
    """
    kinds = VALUE_KINDS if kinds is None else kinds
    kind = desc.get("kind")
    if kind not in kinds:
        raise ValueError(f"unknown kind {kind!r} for {key}")
    return CODECS[kind].decode(key, desc, arrays)


# --------------------------------------------------------------------------
# checks shared by decoders
# --------------------------------------------------------------------------


def is_number(x):
    """Whether ``x`` is a real number and not a boolean."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def index_array(arr, name):
    """``arr`` as int64 if it is a 1-D integer array, else ValueError."""
    if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a 1-D integer array")
    return arr.astype(np.int64)


def _wrap(desc):
    return tuple if desc.get("container") == "tuple" else list


def _is_seq(value):
    return isinstance(value, (list, tuple))


# --------------------------------------------------------------------------
# structure types: GroupOperator, Tree
# --------------------------------------------------------------------------


def _encode_operator(key, op, arrays):
    mat = op.matrix
    arrays[f"{key}/data"] = mat.data
    arrays[f"{key}/indices"] = mat.indices
    arrays[f"{key}/indptr"] = mat.indptr
    arrays[f"{key}/group_ptr"] = op.group_ptr
    return {
        "operator": {
            "shape": [int(s) for s in mat.shape],
            "norm2": op._norm2,
            "norm2_is_exact": bool(op.norm2_is_exact),
        }
    }


def _operator_shape(key, shape):
    """``(n_rows, n_cols)`` from a saved shape, checked."""
    if not (
        isinstance(shape, list)
        and len(shape) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**31 for n in shape)
    ):
        raise ValueError(f"{key} has an invalid shape {shape!r}")
    return shape


def _check_csr(key, data, indices, indptr, n_rows, n_cols):
    """ValueError unless ``data, indices, indptr`` are a valid CSR matrix of that shape."""
    if data.ndim != 1 or data.dtype.kind != "f" or not np.all(np.isfinite(data)):
        raise ValueError(f"{key}/data must be a 1-D finite float array")
    if (
        indptr.size != n_rows + 1
        or indptr[0] != 0
        or np.any(np.diff(indptr) < 0)
        or indptr[-1] != data.size
        or indices.size != data.size
    ):
        raise ValueError(
            f"{key}: indptr is not a valid CSR row pointer for "
            f"{n_rows} rows and {data.size} stored values"
        )
    if indices.size and (indices.min() < 0 or indices.max() >= n_cols):
        raise ValueError(f"{key}: column indices out of range [0, {n_cols})")


def _check_norm2(key, norm2, exact):
    """ValueError unless ``norm2`` is None or a finite number >= 0 and ``exact`` a bool."""
    if norm2 is not None and (not is_number(norm2) or not np.isfinite(norm2) or norm2 < 0):
        raise ValueError(f"{key}: norm2 must be a finite number >= 0, got {norm2!r}")
    if not isinstance(exact, bool):
        raise ValueError(f"{key}: norm2_is_exact must be a boolean")


def _decode_operator(key, desc, arrays):
    """A GroupOperator from its saved CSR arrays, every array checked first."""
    desc = desc["operator"]
    n_rows, n_cols = _operator_shape(key, desc["shape"])
    data = arrays[f"{key}/data"]
    indices = index_array(arrays[f"{key}/indices"], f"{key}/indices")
    indptr = index_array(arrays[f"{key}/indptr"], f"{key}/indptr")
    group_ptr = index_array(arrays[f"{key}/group_ptr"], f"{key}/group_ptr")
    _check_csr(key, data, indices, indptr, n_rows, n_cols)
    if (
        group_ptr.size < 1
        or group_ptr[0] != 0
        or group_ptr[-1] != n_rows
        or np.any(np.diff(group_ptr) < 0)
    ):
        raise ValueError(f"{key}: group_ptr must rise from 0 to {n_rows}")
    norm2, exact = desc["norm2"], desc["norm2_is_exact"]
    _check_norm2(key, norm2, exact)
    mat = sp.csr_matrix((data.astype(np.float64), indices, indptr), shape=(n_rows, n_cols))
    return GroupOperator(mat, group_ptr, norm2=norm2, norm2_is_exact=exact)


def _encode_tree(key, tree, arrays):
    arrays[key] = tree.parent  # a validated tree is a function of its parent array
    return {}


# --------------------------------------------------------------------------
# arrays and histories
# --------------------------------------------------------------------------


def _encode_array(key, value, arrays):
    if value.dtype.hasobject:
        if value.size and all(isinstance(x, str) for x in value.ravel()):
            arrays[key] = value.astype(str)
            return {"object_str": True}
        raise TypeError("object array")
    arrays[key] = value
    return {}


def _decode_array(key, desc, arrays):
    arr = arrays[key]
    return arr.astype(object) if desc.get("object_str") else arr


def _is_ragged_history(value):
    """A list of lists of equal-width numeric tuples (gap_history_, mu_history_)."""
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(
            isinstance(seq, list)
            and all(isinstance(r, tuple) and all(is_number(x) for x in r) for r in seq)
            for seq in value
        )
    )


def _encode_ragged(key, value, arrays):
    """A list of lists of numeric tuples -> one 2-D float64 array per item."""
    items = []
    for k, seq in enumerate(value):
        width = len(seq[0]) if seq else 0
        if any(len(r) != width for r in seq):
            raise TypeError(f"{key}[{k}] has rows of different lengths")
        int_cols = [all(isinstance(r[j], numbers.Integral) for r in seq) for j in range(width)]
        arr = np.array(seq, dtype=np.float64).reshape(len(seq), width)
        if any(int_cols[j] and np.any(np.abs(arr[:, j]) >= 2**53) for j in range(width)):
            raise TypeError(f"{key}[{k}] holds integers too large for exact storage")
        arrays[f"{key}/{k}"] = arr
        items.append({"int_columns": int_cols})
    return {"items": items}


def _decode_ragged(key, desc, arrays):
    out = []
    for k, item in enumerate(desc["items"]):
        arr = arrays[f"{key}/{k}"]
        int_cols = item["int_columns"]
        if arr.ndim != 2 or arr.shape[1] != len(int_cols):
            raise ValueError(f"{key}/{k} has shape {arr.shape}")
        cols = [
            arr[:, j].astype(np.int64).tolist() if is_int else arr[:, j].tolist()
            for j, is_int in enumerate(int_cols)
        ]
        out.append(list(zip(*cols, strict=True)) if cols else [() for _ in range(arr.shape[0])])
    return out


# --------------------------------------------------------------------------
# containers: lists of numbers, of numpy scalars, of anything; dicts
# --------------------------------------------------------------------------


def _is_numbers(value):
    return (
        _is_seq(value)
        and bool(value)
        and all(is_number(x) and not isinstance(x, np.generic) for x in value)
    )


def _encode_numbers(key, value, arrays):
    is_int = [isinstance(x, numbers.Integral) for x in value]
    arr = np.array(value, dtype=np.float64)
    if any(i and abs(x) >= 2**53 for i, x in zip(is_int, value, strict=True)):
        raise TypeError("integers too large for exact storage")
    arrays[key] = arr
    return {
        "container": "list" if isinstance(value, list) else "tuple",
        "int": is_int if any(is_int) and not all(is_int) else all(is_int),
    }


def _decode_numbers(key, desc, arrays):
    arr = arrays[key]
    flags = desc["int"]
    if isinstance(flags, bool):
        flags = [flags] * arr.size
    if arr.ndim != 1 or len(flags) != arr.size:
        raise ValueError(f"{key} has shape {arr.shape}")
    return _wrap(desc)(int(x) if i else float(x) for x, i in zip(arr.tolist(), flags, strict=True))


def _is_npscalars(value):
    return (
        _is_seq(value)
        and bool(value)
        and all(isinstance(x, np.generic) and x.dtype.kind in _SCALAR_KINDS for x in value)
        and len({x.dtype.str for x in value}) == 1
    )


def _encode_npscalars(key, value, arrays):
    arrays[key] = np.array(value)
    return {"container": "list" if isinstance(value, list) else "tuple"}


def _decode_npscalars(key, desc, arrays):
    return _wrap(desc)(arrays[key][i] for i in range(arrays[key].shape[0]))


def _encode_seq(key, value, arrays):
    return {
        "container": "list" if isinstance(value, list) else "tuple",
        "items": [encode_value(f"{key}/{i}", x, arrays) for i, x in enumerate(value)],
    }


def _decode_seq(key, desc, arrays):
    return _wrap(desc)(decode_value(f"{key}/{i}", d, arrays) for i, d in enumerate(desc["items"]))


def _is_str_dict(value):
    return isinstance(value, dict) and all(isinstance(k, str) for k in value)


def _encode_dict(key, value, arrays):
    return {"items": {k: encode_value(f"{key}/{k}", v, arrays) for k, v in value.items()}}


def _decode_dict(key, desc, arrays):
    return {k: decode_value(f"{key}/{k}", d, arrays) for k, d in desc["items"].items()}


# --------------------------------------------------------------------------
# scalars (exact type kept)
# --------------------------------------------------------------------------


def _is_scalar(value):
    return (
        value is None
        or isinstance(value, (bool, str, numbers.Real))
        or (isinstance(value, np.generic) and value.dtype.kind in _SCALAR_KINDS)
    )


def _encode_scalar(key, value, arrays):
    if value is None or isinstance(value, (bool, str)):
        return {"value": value}
    if isinstance(value, np.generic):
        return {"value": value.item(), "dtype": value.dtype.str}
    if isinstance(value, numbers.Integral):
        return {"value": int(value)}
    return {"value": float(value)}


def _decode_scalar(key, desc, arrays):
    value = desc["value"]
    if value is not None and not isinstance(value, (bool, str, int, float)):
        raise ValueError(f"{key} is not a scalar")
    if "dtype" not in desc:
        return value
    dtype = np.dtype(str(desc["dtype"]))
    if (
        dtype.kind not in _SCALAR_KINDS
        or dtype.itemsize > 16
        or isinstance(value, (str, type(None)))
    ):
        raise ValueError(f"{key} has an invalid scalar type {desc['dtype']!r}")
    return dtype.type(value)


# --------------------------------------------------------------------------
# spaces: VolumeMasker (mask and affine), Hemispheres (kept vertices)
# --------------------------------------------------------------------------


def _encode_volume(key, space, arrays):
    arrays[f"{key}/mask"] = space.mask
    arrays[f"{key}/affine"] = np.asarray(space.mask_img.affine, dtype=np.float64)
    return {}


def _decode_volume(key, desc, arrays):
    mask = arrays[f"{key}/mask"]
    affine = arrays[f"{key}/affine"]
    if (
        mask.dtype != bool
        or mask.ndim != 3
        or affine.shape != (4, 4)
        or affine.dtype.kind != "f"
        or not np.all(np.isfinite(affine))
    ):
        raise ValueError("the saved mask must be a 3-D boolean array with a finite 4x4 affine")
    if abs(np.linalg.det(affine[:3, :3])) < 1e-12:
        raise ValueError("the saved affine is singular (its voxel axes do not span space)")
    return VolumeMasker(nib.Nifti1Image(mask.astype(np.uint8), affine))


def _encode_surface(key, space, arrays):
    for h, hemi in enumerate(HEMIS):
        arrays[f"{key}/vertices_{hemi}"] = space.vertices[h]
    return {"n_vertices": list(space.n_vertices)}


def _decode_surface(key, desc, arrays):
    n_vertices = desc["n_vertices"]
    if not (
        isinstance(n_vertices, list)
        and len(n_vertices) == 2
        and all(
            isinstance(n, int) and not isinstance(n, bool) and 0 < n < 2**31 for n in n_vertices
        )
    ):
        raise ValueError(f"the saved n_vertices {n_vertices!r} are not two positive ints")
    masks = []
    for h, hemi in enumerate(HEMIS):
        idx = index_array(arrays[f"{key}/vertices_{hemi}"], f"{key}/vertices_{hemi}")
        if idx.size and (idx.min() < 0 or idx.max() >= n_vertices[h] or np.any(np.diff(idx) <= 0)):
            raise ValueError(f"the saved {hemi} vertices are out of range or not increasing")
        m = np.zeros(n_vertices[h], dtype=bool)
        m[idx] = True
        masks.append(m)
    return Hemispheres(n_vertices, masks)


# --------------------------------------------------------------------------
# the table (order = the order encode_value asks)
# --------------------------------------------------------------------------

register_codec(
    "operator", lambda v: isinstance(v, GroupOperator), _encode_operator, _decode_operator
)
register_codec(
    "tree",
    lambda v: isinstance(v, Tree),
    _encode_tree,
    lambda key, desc, arrays: check_tree(arrays[key]),
)
register_codec("array", lambda v: isinstance(v, np.ndarray), _encode_array, _decode_array)
register_codec("ragged", _is_ragged_history, _encode_ragged, _decode_ragged)
register_codec("numbers", _is_numbers, _encode_numbers, _decode_numbers)
register_codec("npscalars", _is_npscalars, _encode_npscalars, _decode_npscalars)
register_codec("seq", _is_seq, _encode_seq, _decode_seq)
register_codec("dict", _is_str_dict, _encode_dict, _decode_dict)
register_codec("scalar", _is_scalar, _encode_scalar, _decode_scalar)
register_codec("volume", lambda v: isinstance(v, VolumeMasker), _encode_volume, _decode_volume)
register_codec("surface", lambda v: isinstance(v, Hemispheres), _encode_surface, _decode_surface)

#: what parameters and fitted attributes may hold
VALUE_KINDS = frozenset(
    {"operator", "tree", "array", "ragged", "numbers", "npscalars", "seq", "dict", "scalar"}
)
#: what the ``space`` of a model file may hold
SPACE_KINDS = frozenset({"volume", "surface"})
