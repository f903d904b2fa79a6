"""FreeSurfer, GIFTI and MGH files: meshes, per-vertex maps and cortex masks."""

import os

import nibabel as nib
import numpy as np

from .._utils.images import READ_ERRORS
from .._utils.io import atomic_write, regular_file
from .._utils.validation import ARRAY_ERRORS
from ._validation import _HEMIS, _check_coords, _check_faces

__all__ = [
    "MEDIAL_WALL_NAMES",
    "load_cortex_mask",
    "load_surf_data",
    "load_surf_mesh",
    "write_surf_data",
    "write_surf_mesh",
]

# Names of annotation labels that are not cortex (FreeSurfer's aparc, a2009s,
# DKT and Yeo atlases use these for the medial wall).
MEDIAL_WALL_NAMES = ("unknown", "medial_wall", "medialwall", "???", "corpuscallosum")

_GIFTI_EXT = (".gii", ".gii.gz")
_MGH_EXT = (".mgh", ".mgz")
# extensions that are clearly not FreeSurfer morphometry (lh.thickness, lh.curv...)
_NOT_MORPH_EXT = (
    ".nii",
    ".nii.gz",
    ".img",
    ".hdr",
    ".npy",
    ".npz",
    ".txt",
    ".csv",
    ".json",
    ".vtk",
    ".ply",
    ".obj",
)


def _ext(path):
    low = path.lower()
    for ext in _GIFTI_EXT[::-1] + _MGH_EXT + (".annot", ".label"):
        if low.endswith(ext):
            return ext
    return ""


def _as_path(obj, name):
    if not isinstance(obj, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a path, got {type(obj).__name__}.")
    return os.fsdecode(obj)


def _existing(obj, name):
    return regular_file(_as_path(obj, name), name)


def _is_polymesh(obj):
    """A nilearn PolyMesh (duck-typed: ``parts`` dict of meshes, no coordinates)."""
    parts = getattr(obj, "parts", None)
    return (
        isinstance(parts, dict)
        and not hasattr(obj, "coordinates")
        and all(hasattr(m, "coordinates") for m in parts.values())
    )


def _split_polymesh(left_mesh, right_mesh, name="left_mesh"):
    """(left, right) meshes, a PolyMesh given as ``left_mesh`` split in two."""
    if _is_polymesh(left_mesh):
        if right_mesh is not None:
            raise ValueError(f"{name} is a PolyMesh (both hemispheres): leave right_mesh as None.")
        missing = [h for h in _HEMIS if h not in left_mesh.parts]
        if missing:
            raise ValueError(f"{name}: the PolyMesh has no {' and '.join(missing)} part.")
        return left_mesh.parts["left"], left_mesh.parts["right"]
    if right_mesh is None:
        raise TypeError(
            "right_mesh is required unless left_mesh is a nilearn PolyMesh "
            "holding both hemispheres."
        )
    return left_mesh, right_mesh


def _read_file(reader, path, name, what):
    """``reader(path)``; any reader error becomes a ValueError naming ``name`` and the file.

    nibabel raises EOFError, ExpatError, zlib.error, struct.error, OSError,
    IndexError... on truncated or corrupted files; the caller gets one type.
    """
    try:
        return reader(path)
    except MemoryError:
        raise ValueError(
            f"{name}: {path!r} declares data too large to read; the file is "
            f"corrupted or not {what}."
        ) from None
    except READ_ERRORS as exc:
        raise ValueError(
            f"{name}: cannot read {path!r} as {what} (truncated or corrupted "
            f"file?): {type(exc).__name__}: {exc}"
        ) from None


def _read_label(path):
    """Vertex indices of a FreeSurfer ASCII .label; its declared count must match."""
    with open(path, encoding="ascii") as fh:
        fh.readline()
        declared = int(fh.readline().split()[0])
    idx = np.atleast_1d(nib.freesurfer.read_label(path))
    if idx.size != declared:
        raise ValueError(f"it declares {declared} vertices but lists {idx.size}")
    return idx


def _read_morph(path):
    """FreeSurfer "new" curv data; the declared number of values must all be there."""
    with open(path, "rb") as fh:
        fh.read(3)
        declared = int(np.frombuffer(fh.read(4), dtype=">i4")[0])
    values = nib.freesurfer.read_morph_data(path)
    if values.size != declared:
        raise ValueError(f"it declares {declared} values but holds {values.size}")
    return values


def _magic(path):
    with open(path, "rb") as fh:
        return fh.read(3)


def _gifti_arrays(img, intent):
    code = nib.nifti1.intent_codes.code[intent]
    return [d.data for d in img.darrays if d.intent == code]


def load_surf_mesh(surf, name="surf"):
    """Vertices and triangles of a surface.

    Parameters
    ----------
    surf : str, os.PathLike, GiftiImage, (coords, faces) or mesh object
        A FreeSurfer geometry file (``lh.white``, ``lh.pial``,
        ``lh.inflated``, ``lh.sphere``...), a GIFTI surface (``.gii`` or
        ``.gii.gz``), a pair of arrays, or any object with ``coordinates``
        and ``faces`` attributes (nilearn's ``SurfaceMesh``: ``InMemoryMesh``,
        ``FileMesh``). A ``PolyMesh`` (both hemispheres) is a ``TypeError``:
        pass one of its ``parts``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    coords : ndarray of shape (n_vertices, 3), float64
    faces : ndarray of shape (n_faces, 3), int64
        In file order (vertex order is preserved). Not validated here:
        :func:`tv_from_mesh` validates.
    """
    if isinstance(surf, nib.gifti.GiftiImage):
        img = surf
    elif _is_polymesh(surf):
        raise TypeError(
            f"{name} is a nilearn PolyMesh holding {sorted(surf.parts)}; give one "
            f"hemisphere, e.g. mesh.parts['left'] (tv_from_hemispheres and "
            "load_surface_subjects take a PolyMesh as left_mesh with right_mesh=None)."
        )
    elif hasattr(surf, "coordinates") and hasattr(surf, "faces"):
        return (
            np.asarray(surf.coordinates, dtype=np.float64),
            np.asarray(surf.faces).astype(np.int64),
        )
    elif isinstance(surf, (tuple, list)):
        if len(surf) != 2:
            raise ValueError(
                f"{name} as a sequence must be (coords, faces), got {len(surf)} items."
            )
        return np.asarray(surf[0], dtype=np.float64), np.asarray(surf[1]).astype(np.int64)
    else:
        path = _existing(surf, name)
        if _ext(path) in _GIFTI_EXT:
            img = _read_file(nib.load, path, name, "a GIFTI surface")
        else:
            coords, faces = _read_file(
                nib.freesurfer.read_geometry,
                path,
                name,
                "a FreeSurfer surface or GIFTI (.gii) file",
            )
            return coords.astype(np.float64), faces.astype(np.int64)
    if not isinstance(img, nib.gifti.GiftiImage):
        raise ValueError(f"{name}: {path!r} is not a GIFTI image.")
    points = _gifti_arrays(img, "NIFTI_INTENT_POINTSET")
    tris = _gifti_arrays(img, "NIFTI_INTENT_TRIANGLE")
    if len(points) != 1 or len(tris) != 1:
        raise ValueError(
            f"{name}: a GIFTI surface needs one POINTSET and one TRIANGLE array, got "
            f"{len(points)} and {len(tris)}."
        )
    return np.asarray(points[0], dtype=np.float64), np.asarray(tris[0]).astype(np.int64)


def write_surf_mesh(coords, faces, path):
    """Write a surface as GIFTI (``.gii``, ``.gii.gz``) or FreeSurfer geometry.

    Coordinates are stored as float32 (both formats' type), faces as int32.
    The file is written to a temporary name then renamed.

    Parameters
    ----------
    coords : array-like of shape (n_vertices, 3)
    faces : array-like of int, shape (n_faces, 3)
    path : str or os.PathLike
        Any other extension than ``.gii``/``.gii.gz`` writes FreeSurfer
        geometry (e.g. ``lh.white``).

    Returns
    -------
    str
        The path written.
    """
    coords = _check_coords(coords)
    faces = _check_faces(faces, coords.shape[0])
    path = _as_path(path, "path")
    c32, f32 = coords.astype(np.float32), faces.astype(np.int32)
    if _ext(path) in _GIFTI_EXT:
        img = nib.gifti.GiftiImage(
            darrays=[
                nib.gifti.GiftiDataArray(
                    c32, intent="NIFTI_INTENT_POINTSET", datatype="NIFTI_TYPE_FLOAT32"
                ),
                nib.gifti.GiftiDataArray(
                    f32, intent="NIFTI_INTENT_TRIANGLE", datatype="NIFTI_TYPE_INT32"
                ),
            ]
        )
        return atomic_write(img.to_filename, path)
    if _ext(path) or path.lower().endswith(_NOT_MORPH_EXT):
        raise ValueError(
            f"path: cannot write a surface mesh to {os.path.basename(path)!r}; "
            "use .gii or a FreeSurfer name such as lh.white."
        )
    return atomic_write(lambda tmp: nib.freesurfer.write_geometry(tmp, c32, f32), path)


def load_surf_data(data, name="data"):
    """Per-vertex values from a file or an array.

    Parameters
    ----------
    data : str, os.PathLike, GiftiImage, MGHImage or array-like
        FreeSurfer morphometry (``lh.thickness``, ``lh.curv``, ``lh.sulc``,
        ``lh.area``...), MGH/MGZ (``lh.thickness.fsaverage.mgh``), GIFTI data
        (``.func.gii``, ``.shape.gii``; one array per map), or an array.
    name : str
        Argument name used in error messages.

    Returns
    -------
    ndarray of shape (n_vertices,) or (n_vertices, n_maps)
        Vertex-major, as nilearn; the file's dtype is kept (e.g. float32).
    """
    if isinstance(data, nib.gifti.GiftiImage):
        arrays = [d.data for d in data.darrays]
        if not arrays:
            raise ValueError(f"{name}: the GIFTI image holds no data array.")
        return arrays[0] if len(arrays) == 1 else np.stack(arrays, axis=1)
    if isinstance(data, nib.freesurfer.MGHImage):
        return _mgh_values(data, name)
    if not isinstance(data, (str, bytes, os.PathLike)):
        try:
            return np.asarray(data)
        except ARRAY_ERRORS as exc:
            raise TypeError(f"{name} must be a path or a numeric array: {exc}") from None
    path = _existing(data, name)
    ext = _ext(path)
    if ext in _GIFTI_EXT:
        img = _read_file(nib.load, path, name, "GIFTI data")
        if not isinstance(img, nib.gifti.GiftiImage):
            raise ValueError(f"{name}: {path!r} is not a GIFTI image.")
        if _gifti_arrays(img, "NIFTI_INTENT_POINTSET"):
            raise ValueError(
                f"{name}: {path!r} is a surface mesh, not per-vertex data; use load_surf_mesh."
            )
        return load_surf_data(img, name)
    if ext in _MGH_EXT:
        return _mgh_values(_read_file(nib.load, path, name, "MGH (.mgh/.mgz) data"), name)
    if ext in (".annot", ".label"):
        raise ValueError(f"{name}: {path!r} is a {ext} file; use load_cortex_mask.")
    magic = _read_file(_magic, path, name, "a file")
    if magic != b"\xff\xff\xff":  # FreeSurfer's "new" curv format (all since 2000)
        raise ValueError(
            f"{name}: cannot read {path!r}: not FreeSurfer morphometry (curv format), "
            "MGH (.mgh/.mgz) or GIFTI (.gii) data."
        )
    return _read_file(_read_morph, path, name, "FreeSurfer morphometry, MGH or GIFTI data")


def _mgh_values(img, name):
    if not isinstance(img, nib.freesurfer.MGHImage):
        raise ValueError(f"{name}: not an MGH image.")
    filename = img.get_filename()
    arr = _read_file(
        lambda _: np.asanyarray(img.dataobj),
        filename or "<in-memory image>",
        name,
        "MGH (.mgh/.mgz) data",
    )  # nibabel reads the data lazily: now
    spatial = arr.shape[:3]
    n_vertices = int(np.prod(spatial))
    if sum(s > 1 for s in spatial) > 1:
        raise ValueError(
            f"{name}: the MGH volume has shape {arr.shape}, not per-vertex data "
            "(n_vertices, 1, 1[, n_maps])."
        )
    if arr.ndim == 3 or (arr.ndim == 4 and arr.shape[3] == 1):
        return arr.reshape(n_vertices)
    return arr.reshape(n_vertices, -1)


def write_surf_data(values, path, *, dtype=np.float32):
    """Write per-vertex values as GIFTI, MGH/MGZ or FreeSurfer morphometry.

    Parameters
    ----------
    values : array-like of shape (n_vertices,) or (n_vertices, n_maps)
        Vertex-major (one column per map, e.g. per component).
    path : str or os.PathLike
        ``.gii``/``.gii.gz`` writes one GIFTI data array per map; ``.mgh`` or
        ``.mgz`` an MGH image of shape (n_vertices, 1, 1[, n_maps]); any other
        name FreeSurfer morphometry (one map, float32 only).
    dtype : numpy dtype, default=float32
        Stored type for GIFTI and MGH (MGH allows float32, int32, int16,
        uint8; FreeSurfer morphometry is always float32).

    Returns
    -------
    str
        The path written (written to a temporary name, then renamed).
    """
    try:
        arr = np.asarray(values)
    except ARRAY_ERRORS as exc:
        raise TypeError(f"values must be a numeric array: {exc}") from None
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"values must hold numbers, got dtype {arr.dtype}.")
    if arr.ndim not in (1, 2) or arr.shape[0] < 1:
        raise ValueError(
            f"values must have shape (n_vertices,) or (n_vertices, n_maps), got {arr.shape}."
        )
    path = _as_path(path, "path")
    ext = _ext(path)
    dtype = np.dtype(dtype)
    arr = arr.astype(dtype)
    if ext in _GIFTI_EXT:
        cols = [arr] if arr.ndim == 1 else [np.ascontiguousarray(c) for c in arr.T]
        img = nib.gifti.GiftiImage(
            darrays=[
                nib.gifti.GiftiDataArray(c, intent="NIFTI_INTENT_NONE", datatype=dtype)
                for c in cols
            ]
        )
        return atomic_write(img.to_filename, path)
    if ext in _MGH_EXT:
        # MGH drops a trailing singleton frame axis: one map is (n_vertices, 1, 1)
        n_maps = () if arr.ndim == 1 or arr.shape[1] == 1 else (arr.shape[1],)
        shape = (arr.shape[0], 1, 1) + n_maps
        img = nib.freesurfer.MGHImage(arr.reshape(shape), np.eye(4))
        return atomic_write(img.to_filename, path)
    if ext or path.lower().endswith(_NOT_MORPH_EXT):
        raise ValueError(
            f"path: cannot write per-vertex data to {os.path.basename(path)!r}; use .gii, "
            ".mgh/.mgz or a FreeSurfer name such as lh.thickness."
        )
    if arr.ndim != 1:
        raise ValueError(
            "values: FreeSurfer morphometry files hold one map; got "
            f"{arr.shape[1]} columns (use .gii or .mgh for several)."
        )
    values32 = arr.astype(np.float32)
    return atomic_write(lambda tmp: nib.freesurfer.write_morph_data(tmp, values32), path)


def load_cortex_mask(
    source, n_vertices=None, *, medial_wall_names=MEDIAL_WALL_NAMES, name="source"
):
    """Cortex mask (medial wall out) from a label or annotation file.

    Parameters
    ----------
    source : str, os.PathLike or array-like of bool
        A FreeSurfer ``.label`` listing the cortex vertices (``lh.cortex.label``),
        a ``.annot`` parcellation (vertices with no label or a label named as
        in ``medial_wall_names`` are left out), a GIFTI ``.label.gii``
        (the same rule on its label table; without names, label 0 is left
        out), a GIFTI ``.shape.gii``/``.func.gii`` holding only 0 and 1, or a
        boolean array.
    n_vertices : int, optional
        Number of vertices of the surface. Required for ``.label`` files (they
        list only the kept vertices); checked against the others.
    medial_wall_names : sequence of str
        Annotation names (case-insensitive) that are not cortex.
    name : str, default="source"
        Argument name used in error messages.

    Returns
    -------
    ndarray of bool, shape (n_vertices,)

    Raises
    ------
    ValueError
        If the file is truncated or corrupted, lists vertices out of range,
        or the mask is empty or of the wrong length.
    """
    if n_vertices is not None:
        if (
            isinstance(n_vertices, bool)
            or not isinstance(n_vertices, (int, np.integer))
            or n_vertices < 1
        ):
            raise ValueError(f"n_vertices must be a positive int, got {n_vertices!r}.")
        n_vertices = int(n_vertices)
    if isinstance(source, (str, bytes, os.PathLike)):
        path = _existing(source, name)
        ext = _ext(path)
        if ext == ".label":
            if n_vertices is None:
                raise ValueError(
                    "n_vertices is required for a .label file (it lists only the cortex vertices)."
                )
            idx = np.asarray(
                _read_file(_read_label, path, name, "a FreeSurfer .label file"), dtype=np.int64
            )
            if idx.size and (idx.min() < 0 or idx.max() >= n_vertices):
                raise ValueError(
                    f"{name}: {path!r} lists vertex {int(idx.max())}, out of range for "
                    f"n_vertices={n_vertices}."
                )
            mask = np.zeros(n_vertices, dtype=bool)
            mask[idx] = True
        elif ext in _GIFTI_EXT:
            mask = _gifti_cortex_mask(path, medial_wall_names, name)
        elif ext == ".annot":
            labels, _, names = _read_file(
                nib.freesurfer.read_annot, path, name, "a FreeSurfer .annot file"
            )
            labels = np.asarray(labels)
            if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
                raise ValueError(f"{name}: {path!r} holds no per-vertex labels.")
            labels = np.where(labels >= len(names), -1, labels)
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
            wall = {s.lower() for s in medial_wall_names}
            is_wall = np.array([n.lower() in wall for n in names] + [True])  # [-1] = no label
            mask = ~is_wall[np.where(labels < 0, len(names), labels)]
        else:
            raise ValueError(
                f"{name}: {path!r} is neither a .label nor an .annot file (nor a GIFTI "
                ".label.gii or .shape.gii)."
            )
    else:
        mask = np.asarray(source)
        if mask.dtype != bool:
            raise TypeError(f"{name} must be a path or a boolean array, got dtype {mask.dtype}.")
    if mask.ndim != 1:
        raise ValueError(f"{name} must give a 1-D mask, got shape {mask.shape}.")
    if n_vertices is not None and mask.shape[0] != n_vertices:
        raise ValueError(f"{name} has {mask.shape[0]} vertices but n_vertices={n_vertices}.")
    if not mask.any():
        where = f" ({path!r})" if isinstance(source, (str, bytes, os.PathLike)) else ""
        raise ValueError(f"{name}{where} gives an empty cortex mask.")
    return mask


def _gifti_cortex_mask(path, medial_wall_names, name="source"):
    """Cortex mask from a GIFTI label (.label.gii) or 0/1 shape (.shape.gii) file."""
    img = _read_file(nib.load, path, name, "a GIFTI cortex mask")
    if _gifti_arrays(img, "NIFTI_INTENT_POINTSET"):
        raise ValueError(f"{name}: {path!r} is a surface mesh, not a cortex mask.")
    if len(img.darrays) != 1:
        raise ValueError(
            f"{name}: {path!r} holds {len(img.darrays)} data arrays; a cortex mask needs one."
        )
    data = np.asarray(_read_file(lambda _: img.darrays[0].data, path, name, "a GIFTI cortex mask"))
    if data.ndim == 2 and data.shape[1] == 1:
        data = data[:, 0]
    is_label = img.darrays[0].intent == nib.nifti1.intent_codes.code[
        "NIFTI_INTENT_LABEL"
    ] or path.lower().endswith((".label.gii", ".label.gii.gz"))
    if is_label:
        labels = np.asarray(data).astype(np.int64)
        names = {int(lab.key): (getattr(lab, "label", None) or "") for lab in img.labeltable.labels}
        if any(names.values()):
            wall = {w.lower() for w in medial_wall_names}
            wall_keys = [k for k, n in names.items() if n.strip().lower() in wall]
            known = np.isin(labels, list(names))
            return known & ~np.isin(labels, wall_keys)
        return labels != 0
    values = np.unique(data)
    if not np.all(np.isin(values, [0, 1])):
        raise ValueError(
            f"{name}: {path!r} holds values other than 0 and 1 (e.g. "
            f"{values[:5].tolist()}); a .shape.gii cortex mask must be binary: binarise it "
            "(e.g. load_surf_data(path) > 0.5) and pass the array."
        )
    return data.astype(bool)
