"""save_model / load_model: an estimator, its space and meshes in one model file.

The stored types are encoded by the codec registry (:mod:`._codecs`), the
container is read and written by :mod:`._archive`; this module holds the
estimator registry (:data:`ESTIMATORS`), the checks of a whole model and the
renames of fitted attributes since version-1 files were first written.
"""

import json
import logging
import os
import re
from typing import NamedTuple

import numpy as np

from .._utils.io import check_not_input, regular_file
from .._utils.validation import check_int
from ..decomposition import (
    SPCATV,
    SSPCA,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
)
from ..operators import GroupOperator
from ..surface import Hemispheres, check_plot_mesh
from ._archive import FORMAT_NAME, FORMAT_VERSION, MAX_BYTES, NotAModel, read_archive, write_archive
from ._codecs import HEMIS, SPACE_KINDS, decode_value, encode_value

logger = logging.getLogger("neurospca")

__all__ = ["SavedModel", "save_model", "load_model", "ESTIMATORS", "MODEL_CLASSES"]

#: the estimators a model file may hold (explicit registry: nothing else is instantiated)
ESTIMATORS = {
    cls.__name__: cls
    for cls in (SPCATV, SSPCA, NonnegativeSparsePCA, KTraceNormPCA, HierarchicalDictionaryLearning)
}
MODEL_CLASSES = tuple(ESTIMATORS)
_FITTED_NAME = re.compile(r"[a-z][a-z0-9_]*_\Z")


class SavedModel(NamedTuple):
    """What :func:`load_model` returns.

    Parameters
    ----------
    estimator : estimator
        The fitted estimator (e.g. :class:`neurospca.SPCATV`), with its
        operator.
    space : VolumeMasker, Hemispheres or None
        How columns map to voxels or vertices.
    meshes : dict or None
        ``{"left": (coords, faces), "right": (coords, faces)}`` used to draw
        surface loadings, and optionally ``"bg_left"``/``"bg_right"``
        per-vertex background maps (e.g. sulcal depth) and
        ``"anat_left"``/``"anat_right"`` anatomical (white or pial) vertex
        coordinates when the drawn meshes are inflated.
    metadata : dict
        JSON-compatible user metadata (title, data description, sample
        labels...).
    study : dict or None
        The participants side of a cohort fit (participant IDs, ComBat and
        confound parameters, groups, covariates, associations), as saved.
    """

    estimator: object
    space: object
    meshes: object
    metadata: dict
    study: object = None


# --------------------------------------------------------------------------
# fitted attributes renamed since the first version-1 files (issue 15)
# --------------------------------------------------------------------------

#: old name -> new name; applied when the class now has the old name as a
#: (deprecated) property, i.e. once the rename has happened in the estimator
RENAMED_ATTRIBUTES = {"codes_": "scores_", "dual_gap_": "dual_gaps_"}


def _migrate(cls, fitted):
    """Rename the fitted attributes of an older file to the class's current names.

    ``fitted`` maps names to decoded values. A scalar ``dual_gap_`` becomes a
    one-entry ``dual_gaps_`` array; a list ``objective_`` becomes
    ``objective_history_`` and its last value ``objective_`` when the class
    documents ``objective_history_`` (the float-objective convention).
    """
    out = dict(fitted)
    for old, new in RENAMED_ATTRIBUTES.items():
        if old in out and new not in out and isinstance(getattr(cls, old, None), property):
            value = out.pop(old)
            out[new] = (
                np.atleast_1d(np.asarray(value, dtype=np.float64)) if new == "dual_gaps_" else value
            )
    objective = out.get("objective_")
    if (
        isinstance(objective, list)
        and objective
        and "objective_history_" not in out
        and "objective_history_" in (cls.__doc__ or "")
    ):
        out["objective_history_"] = objective
        out["objective_"] = float(objective[-1])
    return out


def _estimator_class(name):
    """The class named ``name`` in the explicit registry :data:`ESTIMATORS` (or ValueError)."""
    if not isinstance(name, str) or name not in ESTIMATORS:
        raise ValueError(
            f"the file holds a {name!r}, which is not a neurospca estimator "
            f"that model files may hold ({', '.join(MODEL_CLASSES)})."
        )
    return ESTIMATORS[name]


def _encode_space(space, arrays):
    if space is None:
        return None
    try:
        return encode_value("space", space, arrays, kinds=SPACE_KINDS)
    except TypeError:
        raise TypeError(
            f"space must be a VolumeMasker, a Hemispheres or None, got {type(space).__name__}."
        ) from None


def _decode_space(desc, arrays):
    if desc is None:
        return None
    if desc.get("kind") not in SPACE_KINDS:
        raise ValueError(f"unknown space kind {desc['kind']!r}")
    return decode_value("space", desc, arrays, kinds=SPACE_KINDS)


def _check_meshes(meshes, space):
    if meshes is None:
        return None
    if not isinstance(meshes, dict) or not set(HEMIS) <= set(meshes):
        raise TypeError("meshes must be a dict with 'left' and 'right' (coords, faces) pairs.")
    if not isinstance(space, Hemispheres):
        raise ValueError("meshes are only meaningful with a Hemispheres space.")
    extra = sorted(
        set(meshes) - {"left", "right", "bg_left", "bg_right", "anat_left", "anat_right"}
    )
    if extra:
        raise ValueError(
            f"meshes has unknown keys {extra[:3]}; use 'left', 'right', 'bg_left', 'bg_right', "
            "'anat_left', 'anat_right'."
        )
    out = {}
    for h, hemi in enumerate(HEMIS):
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
                raise ValueError(
                    f"meshes['bg_{hemi}'] must have shape ({space.n_vertices[h]},), got {bg.shape}."
                )
            if not np.all(np.isfinite(bg)):
                raise ValueError(f"meshes['bg_{hemi}'] contains NaN or infinite values.")
            out[f"bg_{hemi}"] = bg
        anat = meshes.get(f"anat_{hemi}")
        if anat is not None:  # anatomical (white/pial) coordinates of the drawn vertices
            anat = np.asarray(anat, dtype=np.float64)
            if anat.shape != (space.n_vertices[h], 3) or not np.all(np.isfinite(anat)):
                raise ValueError(
                    f"meshes['anat_{hemi}'] must be finite coordinates of shape "
                    f"({space.n_vertices[h]}, 3), got {anat.shape}."
                )
            out[f"anat_{hemi}"] = anat
    return out


# --------------------------------------------------------------------------
# public functions
# --------------------------------------------------------------------------


def _fitted_attributes(estimator):
    return sorted(k for k in vars(estimator) if k.endswith("_") and not k.startswith("_"))


def save_model(estimator, path, *, space=None, meshes=None, metadata=None, study=None):
    """Save a fitted estimator (and how to map it to the brain) without pickle.

    Parameters
    ----------
    estimator : fitted neurospca estimator or ImageSPCATV
        One of ``MODEL_CLASSES`` (:class:`neurospca.SPCATV`, SSPCA,
        NonnegativeSparsePCA, KTraceNormPCA, HierarchicalDictionaryLearning):
        its class name and parameters go into the JSON header, its fitted
        arrays into the archive. Its parameters must be JSON values, arrays
        or lists of arrays (e.g. SSPCA's ``groups``), except ``operator``
        (saved as CSR arrays, ``group_ptr`` and ``norm2``), ``tree`` (its
        parent array) and ``random_state`` (a RandomState/Generator is saved
        as None). A fitted :class:`neurospca.ImageSPCATV` is saved as its
        ``estimator_`` with its ``space_``, ``meshes_`` and participants side
        (unless given here).
    path : str or os.PathLike
        Target file, conventionally ``*.npz``. Written to a temporary name in
        the same directory then renamed: the file is complete or absent.
    space : VolumeMasker or Hemispheres, optional
        The column -> voxel/vertex mapping (mask and affine, or kept vertices).
    meshes : dict, optional
        ``{"left": (coords, faces), "right": (coords, faces)}`` to draw
        surface loadings (e.g. inflated meshes), plus optional
        ``"bg_left"``/``"bg_right"`` background maps and
        ``"anat_left"``/``"anat_right"`` anatomical vertex coordinates (the
        report's peak and cluster xyz). Needs a Hemispheres ``space``.
    metadata : dict, optional
        JSON-compatible values (str, numbers, lists, dicts): title, data
        description, sample labels...
    study : dict, optional
        The participants side of a cohort fit (arrays, strings, numbers and
        dicts/lists of those; arrays go into the archive as arrays).

    Returns
    -------
    str
        The path written.

    Raises
    ------
    ValueError
        ``path`` exists and is not a regular file (a symbolic link is written
        through: its target is replaced), or is one of the files the model was
        made from (the mask of ``space``, a path in ``metadata``).
    OSError
        Writing failed (e.g. a full disk); nothing is left behind.
    """
    estimator, space, meshes, study = _unwrap_image_model(estimator, space, meshes, study)
    _check_savable(estimator, path)
    metadata_json = _metadata_json(metadata)
    arrays = {}
    params = _encode_params(estimator, arrays)
    fitted = _encode_fitted(estimator, arrays)
    space_desc = _encode_space(space, arrays)
    study_desc = _encode_study(study, arrays)
    meshes = _check_meshes(meshes, space)
    _mesh_arrays(meshes, arrays)
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
        **({} if study_desc is None else {"study": study_desc}),
    }
    check_not_input(path, _input_files(space, metadata_json))
    return write_archive(path, meta, arrays)


def _unwrap_image_model(model, space, meshes, study):
    """A fitted image model (``estimator_``, ``space_``, ``meshes_``) as its estimator, space,
    meshes and study; anything else unchanged."""
    inner = getattr(model, "estimator_", None)
    if inner is None or not hasattr(model, "space_") or not hasattr(model, "generate_report"):
        return model, space, meshes, study
    if space is None:
        space = model.space_
    if meshes is None and getattr(model, "meshes_", None) is not None:
        meshes = dict(model.meshes_)
    if study is None and getattr(model, "study_", None) is not None:
        study = model._study_state()
    return inner, space, meshes, study


def _check_savable(estimator, path):
    """TypeError/ValueError unless ``estimator`` is a fitted registered estimator with
    savable fitted names and ``path`` a path."""
    from sklearn.base import BaseEstimator

    if not isinstance(estimator, BaseEstimator):
        raise TypeError(
            f"estimator must be a scikit-learn style estimator, got {type(estimator).__name__}."
        )
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}.")
    if ESTIMATORS.get(type(estimator).__name__) is not type(estimator):
        raise TypeError(
            f"estimator: save_model saves {', '.join(MODEL_CLASSES)}; got "
            f"{type(estimator).__name__}."
        )
    attrs = _fitted_attributes(estimator)
    bad = [a for a in attrs if not _FITTED_NAME.match(a)]
    if bad:
        raise TypeError(
            f"estimator attribute {bad[0]} cannot be saved: fitted names are "
            "lowercase and end with '_'."
        )
    if not attrs:
        raise ValueError(
            f"estimator: this {type(estimator).__name__} is not fitted; call fit before save_model."
        )


def _metadata_json(metadata):
    """``metadata`` as plain JSON values (a dict; None gives {})."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}.")
    try:
        return json.loads(json.dumps(metadata, allow_nan=True))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"metadata must hold JSON values only: {exc}") from None


def _encode_params(estimator, arrays):
    """The estimator's parameters as JSON descriptions (arrays into ``arrays``)."""
    params = {}
    for name, value in estimator.get_params(deep=False).items():
        if isinstance(value, (np.random.RandomState, np.random.Generator)):
            logger.warning("save_model: %s=%r is not saved (saved as None).", name, value)
            value = None
        try:
            params[name] = encode_value(f"param/{name}", value, arrays)
        except TypeError as exc:
            raise TypeError(
                f"estimator parameter {name}={value!r} cannot be saved without pickle "
                f"({exc}): only arrays, numbers, strings, booleans, None, lists/dicts of "
                "those and GroupOperator are."
            ) from None
    return params


def _encode_fitted(estimator, arrays):
    """The fitted attributes (``name_``) as JSON descriptions (arrays into ``arrays``)."""
    fitted = {}
    for name in _fitted_attributes(estimator):
        try:
            fitted[name] = encode_value(f"attr/{name}", getattr(estimator, name), arrays)
        except TypeError as exc:
            raise TypeError(
                f"estimator attribute {name} cannot be saved without pickle ({exc})."
            ) from None
    return fitted


def _encode_study(study, arrays):
    if study is not None and not isinstance(study, dict):
        raise TypeError(f"study must be a dict or None, got {type(study).__name__}.")
    try:
        return None if study is None else encode_value("study", study, arrays)
    except TypeError as exc:
        raise TypeError(f"study cannot be saved without pickle ({exc}).") from None


def _mesh_arrays(meshes, arrays):
    """The checked meshes' arrays into ``arrays`` (``mesh/<name>[/coords|/faces]``)."""
    for key, value in (meshes or {}).items():
        if key.startswith(("bg_", "anat_")):
            arrays[f"mesh/{key}"] = value
        else:
            arrays[f"mesh/{key}/coords"], arrays[f"mesh/{key}/faces"] = value


def _input_files(space, metadata):
    """``(label, path)`` of the files a model was made from: the mask of ``space``
    and every string of ``metadata`` (a model is never saved over one of them)."""
    mask_img = getattr(space, "mask_img", None)
    found = (
        [("the mask of space", mask_img.get_filename())]
        if mask_img is not None and hasattr(mask_img, "get_filename") and mask_img.get_filename()
        else []
    )
    stack = [("metadata", metadata)]
    while stack:
        label, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{label}[{k!r}]", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{label}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, str) and 0 < len(value) < 4096 and "\0" not in value:
            found.append((label, value))
    return found


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
    check_int(max_bytes, "max_bytes", minimum=1)
    path = regular_file(path, "model")
    try:
        meta, arrays = read_archive(path, int(max_bytes))
    except NotAModel as exc:
        raise ValueError(f"model: {path!r} is {exc}.") from None
    except ValueError as exc:
        raise ValueError(f"model: {path!r} is not a readable neurospca model file: {exc}") from None
    except MemoryError:
        raise ValueError(
            f"model: {path!r} is not a readable neurospca model file: its "
            "arrays do not fit in memory"
        ) from None
    except Exception as exc:  # noqa: BLE001  any failure of zipfile/zlib on untrusted bytes: "unreadable"
        raise ValueError(
            f"model: {path!r} is not a readable neurospca model file (truncated, corrupted "
            f"or not an .npz archive): {type(exc).__name__}: {exc}"
        ) from None
    try:
        estimator, space, meshes, metadata = _build(meta, arrays)
        study = meta.get("study")
        study = None if study is None else decode_value("study", study, arrays)
        if study is not None and not isinstance(study, dict):
            raise ValueError("'study' must be an object")
    except ValueError as exc:
        raise ValueError(f"model: {path!r} is malformed: {exc}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(
            f"model: {path!r} is malformed: missing or invalid entry {type(exc).__name__}: {exc}"
        ) from None
    except RecursionError:
        raise ValueError(f"model: {path!r} is malformed: nested too deeply") from None
    _check_consistency(estimator, space, path)
    return SavedModel(estimator, space, meshes, metadata, study)


def _build(meta, arrays):
    """Estimator, space, meshes and metadata from a checked header and its arrays."""
    cls = _estimator_class(meta["class"])
    if not isinstance(meta["params"], dict) or not isinstance(meta["fitted"], dict):
        raise ValueError("'params' and 'fitted' must be objects")
    valid = cls().get_params(deep=False)
    unknown = sorted(set(meta["params"]) - set(valid))
    if unknown:
        raise ValueError(f"{cls.__name__} has no parameter(s) {unknown[:5]}")
    params = {
        name: decode_value(f"param/{name}", desc, arrays) for name, desc in meta["params"].items()
    }
    estimator = cls(**params)
    try:
        estimator._validate_params()  # the constraints fit checks (sklearn)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"invalid parameter: {exc}") from None
    fitted = {}
    for name, desc in meta["fitted"].items():
        if not isinstance(name, str) or not _FITTED_NAME.match(name):
            raise ValueError(
                f"{name!r} is not a fitted attribute name (lowercase, ending "
                "with '_', not a name of the class)"
            )
        fitted[name] = decode_value(f"attr/{name}", desc, arrays)
    for name, value in _migrate(cls, fitted).items():
        if hasattr(cls, name):
            raise ValueError(
                f"{name!r} is not a fitted attribute name (lowercase, ending "
                "with '_', not a name of the class)"
            )
        setattr(estimator, name, value)
    space = _decode_space(meta["space"], arrays)
    meshes = None
    if meta["meshes"] is not None:
        keys = meta["meshes"]
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ValueError("'meshes' must list mesh names")
        meshes = {}
        for key in keys:
            if key.startswith(("bg_", "anat_")):
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
        raise ValueError(f"model: {path!r} is malformed: components_ is not a 2-D float array.")
    if not np.all(np.isfinite(comps)):
        raise ValueError(f"model: {path!r} is malformed: components_ holds NaN or infinite values.")
    n_features = comps.shape[1]
    mean = getattr(estimator, "mean_", None)
    if mean is not None and (
        not isinstance(mean, np.ndarray)
        or mean.shape != (n_features,)
        or mean.dtype.kind != "f"
        or not np.all(np.isfinite(mean))
    ):
        raise ValueError(
            f"model: {path!r} is malformed: mean_ is not a finite float array "
            f"of shape ({n_features},)."
        )
    op = getattr(estimator, "operator", None)
    if isinstance(op, GroupOperator) and op.n_features != n_features:
        raise ValueError(
            f"model: {path!r} is malformed: the operator has {op.n_features} "
            f"columns but components_ has {n_features}."
        )
    if space is not None and space.n_features != n_features:
        raise ValueError(
            f"model: {path!r} is malformed: the saved space has "
            f"{space.n_features} voxels/vertices but components_ has "
            f"{n_features} columns."
        )
