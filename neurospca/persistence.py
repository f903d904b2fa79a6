"""Saved models without pickle: one ``.npz`` file holding arrays and a JSON header.

A fitted estimator is written as a NumPy ``.npz`` archive (read back with
``allow_pickle=False``): every fitted array is stored as is (bit-identical on
reload), scalars, parameters and metadata go into a JSON document stored in
the archive as UTF-8 bytes (key ``"meta.json"``), histories such as
``gap_history_`` are stored one 2-D array per component, and other lists,
tuples and dicts item by item (objects of other types are refused: nothing
is ever pickled).
The structure operator is saved as its CSR arrays plus ``group_ptr`` and
``norm2``, a tree (hierarchical dictionary learning) as its parent array.
The space needed to put loadings back on the brain is saved too: the mask
(data and affine) for volumes, the kept vertices of each hemisphere for
surfaces, and optionally the meshes used to draw them.

Files are written to a temporary name in the target directory and then renamed,
so a saved model is complete or absent.

:func:`load_model` treats a model file as untrusted input: it reads only the
arrays its header declares, with sizes checked before decompressing
(``max_bytes``), instantiates only the classes of ``MODEL_CLASSES``, validates
parameters, restricts fitted names to ``name_``, checks every array before
building objects from it and never opens a path stored in the file.

>>> save_model(model, "model.npz", space=masker)          # doctest: +SKIP
>>> saved = load_model("model.npz")                        # doctest: +SKIP
>>> saved.estimator.components_.shape                      # doctest: +SKIP
(3, 64030)
"""

import json
import logging
import numbers
import os
import re
import zipfile
from typing import NamedTuple

import nibabel as nib
import numpy as np
import scipy.sparse as sp

from ._utils.io import atomic_write
from .masking import VolumeMasker
from .trees import Tree, check_tree
from .operators import GroupOperator
from .surface import Hemispheres, check_plot_mesh

logger = logging.getLogger("neurospca")

__all__ = ["SavedModel", "save_model", "load_model"]

FORMAT_NAME = "neurospca-model"
FORMAT_VERSION = 1
_META_KEY = "meta.json"
_HEMIS = ("left", "right")

# limits of what load_model reads (a model file must never exhaust the reader)
MAX_BYTES = 2**31  # default cap on the total decompressed size of the declared arrays
MAX_HEADER_BYTES = 16 * 2**20  # the JSON header
MAX_DEPTH = 32  # nesting of the JSON header
MAX_ENTRIES = 100_000  # declared arrays
# estimators a model file may hold (explicit registry: nothing else is instantiated)
MODEL_CLASSES = ("SPCATV", "SSPCA", "NonnegativeSparsePCA", "KTraceNormPCA",
                 "HierarchicalDictionaryLearning")
_FITTED_NAME = re.compile(r"[a-z][a-z0-9_]*_\Z")
_SCALAR_KINDS = "biuf"


class SavedModel(NamedTuple):
    """What :func:`load_model` returns.

    Attributes
    ----------
    estimator : estimator
        The fitted estimator (e.g. :class:`neurospca.SPCATV`), with its
        operator.
    space : VolumeMasker, Hemispheres or None
        How columns map to voxels or vertices.
    meshes : dict or None
        ``{"left": (coords, faces), "right": (coords, faces)}`` used to draw
        surface loadings, and optionally ``"bg_left"``/``"bg_right"``
        per-vertex background maps (e.g. sulcal depth).
    metadata : dict
        JSON-compatible user metadata (title, data description, sample
        labels...).
    """

    estimator: object
    space: object
    meshes: object
    metadata: dict


# --------------------------------------------------------------------------
# encoding helpers
# --------------------------------------------------------------------------


def _is_number(x):
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _encode_scalar(value):
    """JSON description of a scalar, keeping its exact type; TypeError otherwise."""
    if value is None or isinstance(value, (bool, str)):
        return {"kind": "scalar", "value": value}
    if isinstance(value, np.generic) and (value.dtype.kind in "biuf"):
        return {"kind": "scalar", "value": value.item(), "dtype": value.dtype.str}
    if isinstance(value, numbers.Integral):
        return {"kind": "scalar", "value": int(value)}
    if isinstance(value, numbers.Real):
        return {"kind": "scalar", "value": float(value)}
    raise TypeError(type(value).__name__)


def _is_ragged_history(value):
    """A list of lists of equal-width numeric tuples (gap_history_, mu_history_)."""
    return (isinstance(value, list) and len(value) > 0 and all(
        isinstance(seq, list) and all(
            isinstance(r, tuple) and all(_is_number(x) for x in r) for r in seq)
        for seq in value))


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
    return {"kind": "ragged", "items": items}


def _encode(key, value, arrays):
    """Store ``value`` under ``key`` (arrays in ``arrays``); return its JSON description.

    Arrays are stored as they are; scalars keep their exact type; lists of numbers
    become one array; histories (lists of lists of tuples) one array per item;
    other lists, tuples and str-keyed dicts are encoded item by item. Anything
    else raises TypeError (nothing is ever pickled).
    """
    if isinstance(value, GroupOperator):
        return {"kind": "operator", "operator": _encode_operator(value, arrays, key)}
    if isinstance(value, Tree):
        # a validated tree is a function of its parent array
        arrays[key] = value.parent
        return {"kind": "tree"}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            if value.size and all(isinstance(x, str) for x in value.ravel()):
                arrays[key] = value.astype(str)
                return {"kind": "array", "object_str": True}
            raise TypeError("object array")
        arrays[key] = value
        return {"kind": "array"}
    if _is_ragged_history(value):
        return _encode_ragged(key, value, arrays)
    if isinstance(value, (list, tuple)):
        container = "list" if isinstance(value, list) else "tuple"
        if value and all(_is_number(x) and not isinstance(x, np.generic) for x in value):
            is_int = [isinstance(x, numbers.Integral) for x in value]
            arr = np.array(value, dtype=np.float64)
            if any(i and abs(x) >= 2**53 for i, x in zip(is_int, value)):
                raise TypeError("integers too large for exact storage")
            arrays[key] = arr
            return {"kind": "numbers", "container": container,
                    "int": is_int if any(is_int) and not all(is_int) else all(is_int)}
        if value and all(isinstance(x, np.generic) and x.dtype.kind in "biuf" for x in value) \
                and len({x.dtype.str for x in value}) == 1:
            arrays[key] = np.array(value)
            return {"kind": "npscalars", "container": container}
        return {"kind": "seq", "container": container,
                "items": [_encode(f"{key}/{i}", x, arrays) for i, x in enumerate(value)]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"kind": "dict",
                "items": {k: _encode(f"{key}/{k}", v, arrays) for k, v in value.items()}}
    return _encode_scalar(value)


def _decode(key, desc, arrays):
    kind = desc.get("kind")
    if kind == "operator":
        return _decode_operator(desc["operator"], arrays, key)
    if kind == "tree":
        return check_tree(arrays[key])
    if kind == "array":
        arr = arrays[key]
        return arr.astype(object) if desc.get("object_str") else arr
    if kind == "scalar":
        value = desc["value"]
        if value is not None and not isinstance(value, (bool, str, int, float)):
            raise ValueError(f"{key} is not a scalar")
        if "dtype" not in desc:
            return value
        dtype = np.dtype(str(desc["dtype"]))
        if dtype.kind not in _SCALAR_KINDS or dtype.itemsize > 16 or \
                isinstance(value, (str, type(None))):
            raise ValueError(f"{key} has an invalid scalar type {desc['dtype']!r}")
        return dtype.type(value)
    if kind == "ragged":
        out = []
        for k, item in enumerate(desc["items"]):
            arr = arrays[f"{key}/{k}"]
            int_cols = item["int_columns"]
            if arr.ndim != 2 or arr.shape[1] != len(int_cols):
                raise ValueError(f"{key}/{k} has shape {arr.shape}")
            cols = [arr[:, j].astype(np.int64).tolist() if is_int else arr[:, j].tolist()
                    for j, is_int in enumerate(int_cols)]
            out.append(list(zip(*cols)) if cols else [() for _ in range(arr.shape[0])])
        return out
    wrap = tuple if desc.get("container") == "tuple" else list
    if kind == "numbers":
        arr = arrays[key]
        flags = desc["int"]
        if isinstance(flags, bool):
            flags = [flags] * arr.size
        if arr.ndim != 1 or len(flags) != arr.size:
            raise ValueError(f"{key} has shape {arr.shape}")
        return wrap(int(x) if i else float(x) for x, i in zip(arr.tolist(), flags))
    if kind == "npscalars":
        return wrap(arrays[key][i] for i in range(arrays[key].shape[0]))
    if kind == "seq":
        return wrap(_decode(f"{key}/{i}", d, arrays) for i, d in enumerate(desc["items"]))
    if kind == "dict":
        return {k: _decode(f"{key}/{k}", d, arrays) for k, d in desc["items"].items()}
    raise ValueError(f"unknown kind {kind!r} for {key}")


def _encode_operator(op, arrays, prefix):
    mat = op.matrix
    arrays[f"{prefix}/data"] = mat.data
    arrays[f"{prefix}/indices"] = mat.indices
    arrays[f"{prefix}/indptr"] = mat.indptr
    arrays[f"{prefix}/group_ptr"] = op.group_ptr
    return {"shape": [int(s) for s in mat.shape], "norm2": op._norm2,
            "norm2_is_exact": bool(op.norm2_is_exact)}


def _index_array(arr, name):
    if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a 1-D integer array")
    return arr.astype(np.int64)


def _decode_operator(desc, arrays, prefix):
    """A GroupOperator from its saved CSR arrays, every array checked first."""
    shape = desc["shape"]
    if not (isinstance(shape, list) and len(shape) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**31
                    for n in shape)):
        raise ValueError(f"{prefix} has an invalid shape {shape!r}")
    n_rows, n_cols = shape
    data = arrays[f"{prefix}/data"]
    if data.ndim != 1 or data.dtype.kind != "f" or not np.all(np.isfinite(data)):
        raise ValueError(f"{prefix}/data must be a 1-D finite float array")
    indices = _index_array(arrays[f"{prefix}/indices"], f"{prefix}/indices")
    indptr = _index_array(arrays[f"{prefix}/indptr"], f"{prefix}/indptr")
    group_ptr = _index_array(arrays[f"{prefix}/group_ptr"], f"{prefix}/group_ptr")
    if indptr.size != n_rows + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) \
            or indptr[-1] != data.size or indices.size != data.size:
        raise ValueError(f"{prefix}: indptr is not a valid CSR row pointer for "
                         f"{n_rows} rows and {data.size} stored values")
    if indices.size and (indices.min() < 0 or indices.max() >= n_cols):
        raise ValueError(f"{prefix}: column indices out of range [0, {n_cols})")
    if group_ptr.size < 1 or group_ptr[0] != 0 or group_ptr[-1] != n_rows \
            or np.any(np.diff(group_ptr) < 0):
        raise ValueError(f"{prefix}: group_ptr must rise from 0 to {n_rows}")
    norm2, exact = desc["norm2"], desc["norm2_is_exact"]
    if norm2 is not None and (not _is_number(norm2) or not np.isfinite(norm2) or norm2 < 0):
        raise ValueError(f"{prefix}: norm2 must be a finite number >= 0, got {norm2!r}")
    if not isinstance(exact, bool):
        raise ValueError(f"{prefix}: norm2_is_exact must be a boolean")
    mat = sp.csr_matrix((data.astype(np.float64), indices, indptr), shape=(n_rows, n_cols))
    return GroupOperator(mat, group_ptr, norm2=norm2, norm2_is_exact=exact)


def _encode_space(space, arrays):
    if space is None:
        return None
    if isinstance(space, VolumeMasker):
        arrays["space/mask"] = space.mask
        arrays["space/affine"] = np.asarray(space.mask_img.affine, dtype=np.float64)
        return {"kind": "volume"}
    if isinstance(space, Hemispheres):
        arrays["space/vertices_left"] = space.vertices[0]
        arrays["space/vertices_right"] = space.vertices[1]
        return {"kind": "surface", "n_vertices": list(space.n_vertices)}
    raise TypeError(
        f"space must be a VolumeMasker, a Hemispheres or None, got {type(space).__name__}."
    )


def _decode_space(desc, arrays):
    if desc is None:
        return None
    if desc["kind"] == "volume":
        mask = arrays["space/mask"]
        affine = arrays["space/affine"]
        if mask.dtype != bool or mask.ndim != 3 or affine.shape != (4, 4) \
                or affine.dtype.kind != "f" or not np.all(np.isfinite(affine)):
            raise ValueError("the saved mask must be a 3-D boolean array with a finite 4x4 "
                             "affine")
        return VolumeMasker(nib.Nifti1Image(mask.astype(np.uint8), affine))
    if desc["kind"] == "surface":
        n_vertices = desc["n_vertices"]
        if not (isinstance(n_vertices, list) and len(n_vertices) == 2 and all(
                isinstance(n, int) and not isinstance(n, bool) and 0 < n < 2**31
                for n in n_vertices)):
            raise ValueError(f"the saved n_vertices {n_vertices!r} are not two positive ints")
        masks = []
        for h, hemi in enumerate(_HEMIS):
            idx = _index_array(arrays[f"space/vertices_{hemi}"], f"space/vertices_{hemi}")
            if idx.size and (idx.min() < 0 or idx.max() >= n_vertices[h]
                             or np.any(np.diff(idx) <= 0)):
                raise ValueError(f"the saved {hemi} vertices are out of range or not "
                                 "increasing")
            m = np.zeros(n_vertices[h], dtype=bool)
            m[idx] = True
            masks.append(m)
        return Hemispheres(n_vertices, masks)
    raise ValueError(f"unknown space kind {desc['kind']!r}")


def _check_meshes(meshes, space):
    if meshes is None:
        return None
    if not isinstance(meshes, dict) or not set(_HEMIS) <= set(meshes):
        raise TypeError("meshes must be a dict with 'left' and 'right' (coords, faces) pairs.")
    if not isinstance(space, Hemispheres):
        raise ValueError("meshes are only meaningful with a Hemispheres space.")
    extra = sorted(set(meshes) - {"left", "right", "bg_left", "bg_right"})
    if extra:
        raise ValueError(f"meshes has unknown keys {extra[:3]}; use 'left', 'right', "
                         "'bg_left', 'bg_right'.")
    out = {}
    for h, hemi in enumerate(_HEMIS):
        try:
            coords, faces = meshes[hemi]
        except (TypeError, ValueError):
            raise TypeError(f"meshes['{hemi}'] must be a (coords, faces) pair.") from None
        coords, faces = check_plot_mesh(coords, faces, f"meshes['{hemi}']")
        if coords.ndim != 2 or coords.shape != (space.n_vertices[h], 3):
            raise ValueError(
                f"meshes['{hemi}'] has coords of shape {coords.shape}, expected "
                f"({space.n_vertices[h]}, 3) (the {hemi} hemisphere's vertices)."
            )
        if faces.ndim != 2 or faces.shape[1] != 3:
            raise ValueError(f"meshes['{hemi}'] faces must have shape (n_faces, 3).")
        out[hemi] = (coords, faces)
        bg = meshes.get(f"bg_{hemi}")
        if bg is not None:
            bg = np.asarray(bg, dtype=np.float64)
            if bg.shape != (space.n_vertices[h],):
                raise ValueError(f"meshes['bg_{hemi}'] must have shape "
                                 f"({space.n_vertices[h]},), got {bg.shape}.")
            if not np.all(np.isfinite(bg)):
                raise ValueError(f"meshes['bg_{hemi}'] contains NaN or infinite values.")
            out[f"bg_{hemi}"] = bg
    return out


# --------------------------------------------------------------------------
# public functions
# --------------------------------------------------------------------------


def _fitted_attributes(estimator):
    return sorted(k for k in vars(estimator) if k.endswith("_") and not k.startswith("_"))


def save_model(estimator, path, *, space=None, meshes=None, metadata=None):
    """Save a fitted estimator (and how to map it to the brain) without pickle.

    Parameters
    ----------
    estimator : fitted neurospca estimator
        E.g. :class:`neurospca.SPCATV`. Its parameters must be JSON values,
        except ``operator`` (saved as CSR arrays, ``group_ptr`` and ``norm2``)
        and ``random_state`` (a RandomState/Generator is saved as None).
    path : str or os.PathLike
        Target file, conventionally ``*.npz``. Written to a temporary name in
        the same directory then renamed: the file is complete or absent.
    space : VolumeMasker or Hemispheres, optional
        The column -> voxel/vertex mapping (mask and affine, or kept vertices).
    meshes : dict, optional
        ``{"left": (coords, faces), "right": (coords, faces)}`` to draw
        surface loadings (e.g. inflated meshes), plus optional
        ``"bg_left"``/``"bg_right"`` background maps. Needs a Hemispheres
        ``space``.
    metadata : dict, optional
        JSON-compatible values (str, numbers, lists, dicts): title, data
        description, sample labels...

    Returns
    -------
    str
        The path written.
    """
    from sklearn.base import BaseEstimator

    if not isinstance(estimator, BaseEstimator):
        raise TypeError(f"estimator must be a scikit-learn style estimator, got "
                        f"{type(estimator).__name__}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}.")
    import neurospca

    if type(estimator).__name__ not in MODEL_CLASSES \
            or type(estimator) is not getattr(neurospca, type(estimator).__name__):
        raise TypeError(f"estimator: save_model saves {', '.join(MODEL_CLASSES)}; got "
                        f"{type(estimator).__name__}.")
    bad = [a for a in _fitted_attributes(estimator) if not _FITTED_NAME.match(a)]
    if bad:
        raise TypeError(f"estimator attribute {bad[0]} cannot be saved: fitted names are "
                        "lowercase and end with '_'.")
    attrs = _fitted_attributes(estimator)
    if not attrs:
        raise ValueError(f"estimator: this {type(estimator).__name__} is not fitted; call "
                         "fit before save_model.")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}.")
    try:
        metadata_json = json.loads(json.dumps(metadata, allow_nan=True))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"metadata must hold JSON values only: {exc}") from None

    arrays = {}
    params = {}
    for name, value in estimator.get_params(deep=False).items():
        if isinstance(value, (np.random.RandomState, np.random.Generator)):
            logger.warning("save_model: %s=%r is not saved (saved as None).", name, value)
            value = None
        try:
            params[name] = _encode(f"param/{name}", value, arrays)
        except TypeError as exc:
            raise TypeError(
                f"estimator parameter {name}={value!r} cannot be saved without pickle "
                f"({exc}): only arrays, numbers, strings, booleans, None, lists/dicts of "
                "those and GroupOperator are."
            ) from None
    fitted = {}
    for name in attrs:
        try:
            fitted[name] = _encode(f"attr/{name}", getattr(estimator, name), arrays)
        except TypeError as exc:
            raise TypeError(f"estimator attribute {name} cannot be saved without pickle "
                            f"({exc}).") from None
    space_desc = _encode_space(space, arrays)
    meshes = _check_meshes(meshes, space)
    if meshes is not None:
        for key, value in meshes.items():
            if key.startswith("bg_"):
                arrays[f"mesh/{key}"] = value
            else:
                arrays[f"mesh/{key}/coords"], arrays[f"mesh/{key}/faces"] = value
    meta = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "class": type(estimator).__name__,
        "params": params,
        "fitted": fitted,
        "space": space_desc,
        "meshes": None if meshes is None else sorted(meshes),
        "metadata": metadata_json,
        "arrays": sorted(arrays),
    }
    arrays[_META_KEY] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    for key, value in arrays.items():
        if value.dtype.hasobject:  # never write anything that would need pickle
            raise TypeError(f"{key} is an object array and cannot be saved without pickle.")

    def _write(tmp):
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    return atomic_write(_write, path)


def _estimator_class(name):
    """The class named ``name`` from the explicit registry ``MODEL_CLASSES`` (or ValueError)."""
    import neurospca

    if not isinstance(name, str) or name not in MODEL_CLASSES:
        raise ValueError(f"the file holds a {name!r}, which is not a neurospca estimator "
                         f"that model files may hold ({', '.join(MODEL_CLASSES)}).")
    return getattr(neurospca, name)


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
    if dtype.hasobject or dtype.kind not in "biufcU" or dtype.fields is not None \
            or dtype.subdtype is not None:
        raise ValueError(f"{key} holds {dtype} values (only numbers, booleans and strings "
                         "are read; nothing is unpickled)")
    return shape, fortran, dtype, fh.tell()


def _read_entries(path, max_bytes):
    """The JSON header and the arrays it declares, reading nothing else.

    Sizes come from the zip's central directory and each member's .npy header
    and are checked before anything is decompressed; a member is read up to
    its declared size only (zip bombs and undeclared members cost nothing).
    """
    size = os.path.getsize(path)
    if size > max_bytes + MAX_HEADER_BYTES:  # the zip directory alone would be read whole
        raise ValueError(f"the file holds {size} bytes, more than max_bytes={max_bytes} "
                         "(raise max_bytes to read a larger model)")
    with zipfile.ZipFile(path) as zf:
        infos = {info.filename: info for info in zf.infolist()}
        info = infos.get(_META_KEY + ".npy")
        if info is None:
            raise _NotAModel(f"an .npz archive but not a neurospca model (no {_META_KEY})")
        if info.file_size > MAX_HEADER_BYTES:
            raise ValueError(f"its header declares {info.file_size} bytes (limit "
                             f"{MAX_HEADER_BYTES})")
        raw = _read_member(zf, info, _META_KEY, MAX_HEADER_BYTES)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise ValueError("its header is not a byte string")
        try:
            meta = json.loads(raw.tobytes().decode("utf-8"))
        except RecursionError:
            raise ValueError("malformed header: JSON nested too deeply") from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"malformed header: {exc}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
            raise _NotAModel("not a neurospca model file")
        if meta.get("version") != FORMAT_VERSION:
            raise _NotAModel(f"format version {meta.get('version')!r}; this neurospca reads "
                             f"version {FORMAT_VERSION}")
        if _json_depth(meta) > MAX_DEPTH:
            raise ValueError(f"malformed header: nested deeper than {MAX_DEPTH} levels")
        names = meta.get("arrays")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names) \
                or len(names) > MAX_ENTRIES or len(set(names)) != len(names):
            raise ValueError("malformed header: 'arrays' must list distinct array names")
        names = [n for n in names if n != _META_KEY]
        missing = [n for n in names if n + ".npy" not in infos]
        if missing:
            raise ValueError(f"malformed: arrays missing: {missing[:5]}")
        total = sum(infos[n + ".npy"].file_size for n in names)
        if total > max_bytes:
            raise ValueError(f"its declared arrays hold {total} bytes, more than max_bytes="
                             f"{max_bytes} (raise max_bytes to read a larger model)")
        arrays = {n: _read_member(zf, infos[n + ".npy"], n, max_bytes) for n in names}
    return meta, arrays


class _NotAModel(ValueError):
    pass


def _read_member(zf, info, key, limit):
    """One .npy member, its size checked against the zip directory before reading."""
    with zf.open(info) as fh:
        shape, fortran, dtype, header_len = _npy_header(fh, key)
    count = 1
    for n in shape:
        count *= n
    nbytes = count * dtype.itemsize
    if nbytes > limit or header_len + nbytes != info.file_size:
        raise ValueError(f"{key} declares shape {shape} of {dtype} ({nbytes} bytes) but the "
                         f"archive holds {info.file_size - header_len} bytes for it")
    with zf.open(info) as fh:
        arr = np.lib.format.read_array(fh, allow_pickle=False)
        if fh.read(1):  # also makes zipfile check the member's CRC at its end
            raise ValueError(f"{key} has trailing data")
    return arr


def load_model(path, *, max_bytes=MAX_BYTES):
    """Load a model written by :func:`save_model`.

    A model file is untrusted input: only the arrays its header declares are
    read, with their sizes checked from the zip directory before anything is
    decompressed; the estimator class comes from a fixed registry
    (``MODEL_CLASSES``); its parameters are validated as by ``fit``; fitted
    attribute names must look like ``name_`` and may not shadow anything of
    the class; operator, space and mesh arrays are checked (shapes, dtypes,
    index ranges, finiteness) before any object is built; nothing is
    unpickled and no path stored in the file is ever opened (``metadata`` is
    returned as plain data).

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int, default=2**31
        Cap on the total decompressed size of the declared arrays.

    Returns
    -------
    SavedModel
        ``(estimator, space, meshes, metadata)``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a neurospca model, is truncated, corrupted,
        tampered with or larger than ``max_bytes``; the message names the
        file.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}.")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, numbers.Integral) \
            or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}.")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"model: no such file {path!r}.")
    try:
        meta, arrays = _read_entries(path, int(max_bytes))
    except _NotAModel as exc:
        raise ValueError(f"model: {path!r} is {exc}.") from None
    except ValueError as exc:
        raise ValueError(f"model: {path!r} is not a readable neurospca model file: {exc}") \
            from None
    except MemoryError:
        raise ValueError(f"model: {path!r} is not a readable neurospca model file: its "
                         "arrays do not fit in memory") from None
    except Exception as exc:  # zipfile, zlib, OSError, EOFError: all mean "unreadable"
        raise ValueError(
            f"model: {path!r} is not a readable neurospca model file (truncated, corrupted "
            f"or not an .npz archive): {type(exc).__name__}: {exc}"
        ) from None
    try:
        estimator, space, meshes, metadata = _build(meta, arrays)
    except ValueError as exc:
        raise ValueError(f"model: {path!r} is malformed: {exc}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"model: {path!r} is malformed: missing or invalid entry "
                         f"{type(exc).__name__}: {exc}") from None
    except RecursionError:
        raise ValueError(f"model: {path!r} is malformed: nested too deeply") from None
    _check_consistency(estimator, space, path)
    return SavedModel(estimator, space, meshes, metadata)


def _build(meta, arrays):
    """Estimator, space, meshes and metadata from a checked header and its arrays."""
    cls = _estimator_class(meta["class"])
    if not isinstance(meta["params"], dict) or not isinstance(meta["fitted"], dict):
        raise ValueError("'params' and 'fitted' must be objects")
    valid = cls().get_params(deep=False)
    unknown = sorted(set(meta["params"]) - set(valid))
    if unknown:
        raise ValueError(f"{cls.__name__} has no parameter(s) {unknown[:5]}")
    params = {name: _decode(f"param/{name}", desc, arrays)
              for name, desc in meta["params"].items()}
    estimator = cls(**params)
    try:
        estimator._validate_params()  # the constraints fit checks (sklearn)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"invalid parameter: {exc}") from None
    for name, desc in meta["fitted"].items():
        if not isinstance(name, str) or not _FITTED_NAME.match(name) or hasattr(cls, name):
            raise ValueError(f"{name!r} is not a fitted attribute name (lowercase, ending "
                             "with '_', not a name of the class)")
        setattr(estimator, name, _decode(f"attr/{name}", desc, arrays))
    space = _decode_space(meta["space"], arrays)
    meshes = None
    if meta["meshes"] is not None:
        keys = meta["meshes"]
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ValueError("'meshes' must list mesh names")
        meshes = {}
        for key in keys:
            if key.startswith("bg_"):
                meshes[key] = arrays[f"mesh/{key}"]
            else:
                meshes[key] = (arrays[f"mesh/{key}/coords"], arrays[f"mesh/{key}/faces"])
        try:
            meshes = _check_meshes(meshes, space)
        except TypeError as exc:
            raise ValueError(str(exc)) from None
    metadata = meta["metadata"]
    if not isinstance(metadata, dict):
        raise ValueError("'metadata' must be an object")
    return estimator, space, meshes, metadata


def _check_consistency(estimator, space, path):
    comps = getattr(estimator, "components_", None)
    if comps is None:
        return
    if not isinstance(comps, np.ndarray) or comps.ndim != 2 or comps.dtype.kind != "f":
        raise ValueError(f"model: {path!r} is malformed: components_ is not a 2-D float "
                         "array.")
    if not np.all(np.isfinite(comps)):
        raise ValueError(f"model: {path!r} is malformed: components_ holds NaN or infinite "
                         "values.")
    n_features = comps.shape[1]
    mean = getattr(estimator, "mean_", None)
    if mean is not None and (not isinstance(mean, np.ndarray) or mean.shape != (n_features,)
                             or mean.dtype.kind != "f" or not np.all(np.isfinite(mean))):
        raise ValueError(f"model: {path!r} is malformed: mean_ is not a finite float array "
                         f"of shape ({n_features},).")
    op = getattr(estimator, "operator", None)
    if isinstance(op, GroupOperator) and op.n_features != n_features:
        raise ValueError(f"model: {path!r} is malformed: the operator has {op.n_features} "
                         f"columns but components_ has {n_features}.")
    if space is not None and space.n_features != n_features:
        raise ValueError(f"model: {path!r} is malformed: the saved space has "
                         f"{space.n_features} voxels/vertices but components_ has "
                         f"{n_features} columns.")
