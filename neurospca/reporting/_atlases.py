"""Atlases as one label per feature of a model, to name peaks and clusters.

:func:`load_atlas` reads a labelled NIfTI on the mask's grid, or a pair of
FreeSurfer ``.annot`` / GIFTI label / integer arrays for the hemispheres
(re-exported by :mod:`neurospca.reporting.anatomy`).
"""

import os
from collections import Counter

import nibabel as nib
import numpy as np

from ..masking import VolumeMasker
from ..surface import MEDIAL_WALL_NAMES, Hemispheres, load_surf_data

__all__ = ["Atlas", "load_atlas"]

_HEMIS = ("left", "right")


# --------------------------------------------------------------------------
# atlases
# --------------------------------------------------------------------------


class Atlas:
    """One atlas label per feature (column of the model).

    Attributes
    ----------
    codes : ndarray of int64, shape (n_features,)
        Index into ``names`` per feature; -1 where the atlas has no label
        (background, medial wall, unknown).
    names : list of str
    """

    def __init__(self, codes, names):
        self.codes = np.asarray(codes, dtype=np.int64)
        self.names = list(names)

    def label(self, feature):
        """Name of one feature's label, or None."""
        c = int(self.codes[int(feature)])
        return None if c < 0 else self.names[c]

    def majority(self, features):
        """Most frequent label over some features and its share of them.

        Unlabelled features count in the denominator, not as a label.

        Returns
        -------
        (str or None, float)
        """
        codes = self.codes[np.asarray(features, dtype=np.int64)]
        labelled = codes[codes >= 0]
        if labelled.size == 0:
            return None, 0.0
        code, count = Counter(labelled.tolist()).most_common(1)[0]
        return self.names[code], count / codes.size


def _names_lookup(atlas_labels, name="atlas_labels"):
    if atlas_labels is None:
        return {}
    if isinstance(atlas_labels, dict):
        out = {}
        for k, v in atlas_labels.items():
            try:
                out[int(k)] = str(v)
            except (TypeError, ValueError):
                raise TypeError(f"{name} keys must be integer label values, got {k!r}.") from None
        return out
    if isinstance(atlas_labels, (list, tuple, np.ndarray)):
        return {i: str(v) for i, v in enumerate(atlas_labels)}
    raise TypeError(
        f"{name} must be a list of names (index = label value) or a dict "
        f"int -> name, got {type(atlas_labels).__name__}."
    )


def _integer_labels(data, name):
    arr = np.asarray(data)
    if arr.dtype.kind not in "iub":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold integer labels, got dtype {arr.dtype}.") from None
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(
                f"{name} must hold integer labels (a parcellation), not "
                "continuous values; pass a labelled atlas."
            )
    return arr.astype(np.int64)


def _encode(values, lookup, background, names, index):
    """Per-feature codes into the shared ``names`` list (extended in place)."""
    codes = np.full(values.size, -1, dtype=np.int64)
    for v in np.unique(values):
        v = int(v)
        label = lookup.get(v, f"label {v}")
        if (
            v in background
            or label.strip().lower() in MEDIAL_WALL_NAMES
            or label.strip().lower() in ("background", "bg")
        ):
            continue
        if label not in index:
            index[label] = len(names)
            names.append(label)
        codes[values == v] = index[label]
    return codes


def _volume_atlas(atlas, masker, atlas_labels):
    if isinstance(atlas, (str, os.PathLike)):
        if not os.path.exists(atlas):
            raise ValueError(f"atlas: {os.fspath(atlas)!r} does not exist.")
        try:
            atlas = nib.load(atlas)
        except Exception as exc:  # noqa: BLE001  any reader failure: bad input, named
            raise ValueError(
                f"atlas: cannot read {os.fspath(atlas)!r} as an image: {exc}"
            ) from None
    if not hasattr(atlas, "affine") or not hasattr(atlas, "dataobj"):
        raise TypeError(
            f"atlas must be a labelled NIfTI image or its path for a volume "
            f"report, got {type(atlas).__name__}."
        )
    data = np.asanyarray(atlas.dataobj)
    if data.ndim == 4 and data.shape[3] == 1:
        data = data[..., 0]
    if data.shape != masker.mask.shape:
        raise ValueError(
            f"atlas has shape {data.shape} but the mask grid is "
            f"{masker.mask.shape}; resample the atlas to the mask first "
            "(nilearn.image.resample_to_img(atlas, mask, "
            "interpolation='nearest'))."
        )
    if not np.allclose(np.asarray(atlas.affine), np.asarray(masker.mask_img.affine), atol=1e-3):
        raise ValueError(
            "atlas has a different affine from the mask (another grid or "
            "orientation); resample the atlas to the mask first "
            "(nilearn.image.resample_to_img(atlas, mask, "
            "interpolation='nearest'))."
        )
    values = _integer_labels(data[masker.mask], "atlas")
    names, index = [], {}
    codes = _encode(values, _names_lookup(atlas_labels), {0}, names, index)
    return Atlas(codes, names)


def _read_hemi_atlas(source, n_vertices, hemi):
    """(integer labels, names dict or None) of one hemisphere."""
    name = f"atlas[{0 if hemi == 'left' else 1}] ({hemi})"
    if isinstance(source, (str, os.PathLike)):
        values, lookup = _read_hemi_file(os.fspath(source), name)
    else:
        values, lookup = _integer_labels(source, name), None
    values = np.asarray(values).ravel() if np.ndim(values) == 1 else np.asarray(values)
    if values.shape != (n_vertices,):
        raise ValueError(
            f"{name} has {values.shape} labels but the {hemi} hemisphere has "
            f"{n_vertices} vertices; give one label per vertex of the mesh "
            "the model was fitted on."
        )
    return values, lookup


def _read_hemi_file(path, name):
    """(labels, names dict or None) of a .annot, GIFTI label or other surface data file."""
    if not os.path.exists(path):
        raise ValueError(f"{name}: {path!r} does not exist.")
    if path.endswith(".annot"):
        try:
            labels, _, names = nib.freesurfer.read_annot(path)
        except Exception as exc:  # noqa: BLE001  any reader failure: bad input, named
            raise ValueError(
                f"{name}: cannot read {path!r} as a FreeSurfer .annot: {exc}"
            ) from None
        lookup = {i: (n.decode() if isinstance(n, bytes) else str(n)) for i, n in enumerate(names)}
        return np.asarray(labels, dtype=np.int64), lookup
    if path.endswith((".gii", ".gii.gz")):
        img = nib.load(path)
        values = _integer_labels(load_surf_data(img, name), name)
        table = img.labeltable.get_labels_as_dict() if img.labeltable is not None else {}
        return values, {int(k): str(v) for k, v in table.items()} or None
    return _integer_labels(load_surf_data(path, name), name), None


def _surface_atlas(atlas, space, atlas_labels):
    if isinstance(atlas, (str, os.PathLike)) or not hasattr(atlas, "__len__") or len(atlas) != 2:
        raise TypeError(
            "atlas must be a pair (left, right) of FreeSurfer .annot / GIFTI "
            "label paths or integer label arrays for a surface report."
        )
    if isinstance(atlas_labels, tuple) and len(atlas_labels) == 2:
        per_hemi = atlas_labels
    else:
        per_hemi = (atlas_labels, atlas_labels)
    names, index, codes = [], {}, []
    for h, hemi in enumerate(_HEMIS):
        values, lookup = _read_hemi_atlas(atlas[h], space.n_vertices[h], hemi)
        if lookup is None:
            lookup = _names_lookup(per_hemi[h])
        kept = values[space.vertices[h]]
        background = {int(v) for v in np.unique(kept) if v < 0}
        codes.append(_encode(kept, lookup, background, names, index))
    return Atlas(np.concatenate(codes), names)


def load_atlas(atlas, space, atlas_labels=None):
    """An atlas as one label per feature of the model.

    Parameters
    ----------
    atlas : image, path, or pair
        Volumes: a labelled NIfTI image or path on the mask's grid (same shape
        and affine; integer labels, 0 = background). Surfaces: a pair
        ``(left, right)`` of FreeSurfer ``.annot`` paths, GIFTI label paths or
        integer arrays with one label per vertex (negative = no label;
        "unknown"/"medial_wall" names are not labels).
    space : VolumeMasker or Hemispheres
    atlas_labels : list or dict, optional
        Names of the label values (a list indexed by value, or a dict
        value -> name); for surfaces also a pair of those. ``.annot`` and
        GIFTI label tables carry their own names.

    Returns
    -------
    Atlas

    Raises
    ------
    ValueError
        If the atlas does not match the space (shape, affine, vertex count) or
        does not hold integer labels; the message names ``atlas``.
    TypeError
        If ``atlas`` or ``atlas_labels`` has the wrong type.
    """
    if isinstance(space, VolumeMasker):
        return _volume_atlas(atlas, space, atlas_labels)
    if isinstance(space, Hemispheres):
        return _surface_atlas(atlas, space, atlas_labels)
    raise ValueError(
        "atlas needs a brain space: pass space= (a VolumeMasker or a Hemispheres) with atlas=."
    )
