"""Per-subject maps of two hemispheres: a data matrix with its operator, or a
nilearn ``SurfaceImage``."""

import glob
import os
import warnings

import numpy as np

from .._utils.validation import check_tv_kind
from ._io import _split_polymesh, load_cortex_mask, load_surf_data, load_surf_mesh
from ._operators import tv_from_hemispheres
from ._validation import _HEMIS, _check_coords, _check_faces, _check_mask

__all__ = ["load_surface_data", "load_surface_image", "load_surface_subjects"]


def _expand_globs(data, name):
    """``data`` with glob patterns (str, alone or in a list) replaced by their sorted
    matches; a pattern that matches nothing is a ValueError naming ``name``."""
    items = [data] if isinstance(data, str) else data
    if not isinstance(items, (list, tuple)) or not any(
        isinstance(p, str) and glob.has_magic(p) and not os.path.exists(p) for p in items
    ):
        return data
    out = []
    for p in items:
        if isinstance(p, str) and glob.has_magic(p) and not os.path.exists(p):
            matches = sorted(glob.glob(os.path.expanduser(p)))
            if not matches:
                raise ValueError(f"{name}: the pattern {p!r} matches no file.")
            out.extend(matches)
        else:
            out.append(p)
    return out


def _subject_maps(data, n_vertices, name):
    """(n_samples, n_vertices) from a list of files/arrays (or glob patterns), one
    file or an array."""
    data = _expand_globs(data, name)
    if isinstance(data, (list, tuple)):
        if not data:
            raise ValueError(f"{name} is empty: give one map per subject.")
        rows = []
        for i, item in enumerate(data):
            arr = np.asarray(load_surf_data(item, f"{name}[{i}]"), dtype=np.float64)
            if arr.ndim not in (1, 2) or arr.shape[0] != n_vertices:
                raise ValueError(
                    f"{name}[{i}] has shape {arr.shape}, expected ({n_vertices},) or "
                    f"({n_vertices}, n_maps): one value per vertex of the mesh."
                )
            rows.append(arr[None, :] if arr.ndim == 1 else arr.T)  # files: vertex-major
        return np.concatenate(rows, axis=0)
    arr = np.asarray(load_surf_data(data, name), dtype=np.float64)
    if isinstance(data, (str, bytes, os.PathLike)):
        arr = arr[:, None] if arr.ndim == 1 else arr  # files are vertex-major
        if arr.shape[0] != n_vertices:
            raise ValueError(
                f"{name} has {arr.shape[0]} vertices, expected {n_vertices} (the mesh)."
            )
        return arr.T
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != n_vertices:
        raise ValueError(f"{name} must have shape (n_samples, {n_vertices}), got {arr.shape}.")
    return arr


def load_surface_subjects(
    left_data,
    right_data,
    left_mesh,
    right_mesh=None,
    *,
    mask_left=None,
    mask_right=None,
    kind="edges",
):
    """Everything SPCA-TV needs from per-subject maps on two hemispheres.

    The surface counterpart of :func:`neurospca.load_volume_data`: many maps
    (one per subject) in, a data matrix with its TV operator out. To read
    one file of per-vertex values, use :func:`load_surf_data`.

    Parameters
    ----------
    left_data, right_data : list of paths/arrays, path or array-like
        One map per subject: a list of files (``lh.thickness``, ``.mgh``,
        ``.gii``) or of arrays, one multi-map file (vertex-major, e.g. a
        FreeSurfer qcache stack ``lh.thickness.fwhm10.fsaverage.mgh`` with one
        frame per subject), or an array of shape (n_samples, n_vertices).
    left_mesh, right_mesh : path, (coords, faces) or mesh object
        Surfaces defining the neighbourhoods (white or sphere, say); a
        nilearn ``PolyMesh`` as ``left_mesh`` with ``right_mesh=None``.
    mask_left, mask_right : array-like of bool or path, optional
        Cortex masks (medial wall out); see :func:`load_cortex_mask`.
    kind : {"edges", "gradient"}, default="edges"
        See :func:`tv_from_mesh`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Columns: kept left vertices then kept right vertices. Vertices that
        are NaN or infinite in any map are removed (with a warning).
    operator : GroupOperator
    hemispheres : Hemispheres
        ``hemispheres.inverse_transform(est.components_)`` gives the loadings
        per hemisphere; ``hemispheres.save(...)`` writes them.
    """
    kind = check_tv_kind(kind)
    left_mesh, right_mesh = _split_polymesh(left_mesh, right_mesh)
    meshes = []
    for hemi, mesh in (("left", left_mesh), ("right", right_mesh)):
        meshes.append(load_surf_mesh(mesh, f"{hemi}_mesh"))
    maps, masks = [], []
    for h, (hemi, data, mask) in enumerate(
        (("left", left_data, mask_left), ("right", right_data, mask_right))
    ):
        n = meshes[h][0].shape[0]
        maps.append(_subject_maps(data, n, f"{hemi}_data"))
        if isinstance(mask, (str, bytes, os.PathLike)):
            mask = load_cortex_mask(mask, n, name=f"mask_{hemi}")
        masks.append(_check_mask(mask, n, f"mask_{hemi}", f"{hemi}_mesh"))
    if maps[0].shape[0] != maps[1].shape[0]:
        raise ValueError(
            f"left_data has {maps[0].shape[0]} maps but right_data has "
            f"{maps[1].shape[0]}; give one map per subject for each hemisphere."
        )
    n_dropped = 0
    for h in range(2):
        keep = np.ones(maps[h].shape[1], dtype=bool) if masks[h] is None else masks[h].copy()
        bad = keep & ~np.all(np.isfinite(maps[h]), axis=0)
        if bad.any():
            n_dropped += int(bad.sum())
            keep &= ~bad
            masks[h] = keep
    if n_dropped:
        warnings.warn(
            f"{n_dropped} vertex(es) are NaN or infinite in at least one map; they were "
            "removed from the cortex mask.",
            UserWarning,
            stacklevel=2,
        )
    operator, hemis = tv_from_hemispheres(meshes[0], meshes[1], masks[0], masks[1], kind)
    return hemis.transform(maps[0], maps[1]), operator, hemis


def load_surface_data(
    left_data,
    right_data,
    left_mesh,
    right_mesh=None,
    *,
    mask_left=None,
    mask_right=None,
    kind="edges",
):
    """Deprecated alias of :func:`load_surface_subjects` (the name was too close to
    :func:`load_surf_data`, which reads one file).

    Parameters
    ----------
    left_data, right_data : list of paths/arrays, path or array-like
        See :func:`load_surface_subjects`.
    left_mesh, right_mesh : path, (coords, faces) or mesh object
        See :func:`load_surface_subjects`.
    mask_left, mask_right : array-like of bool or path, optional
        See :func:`load_surface_subjects`.
    kind : {"edges", "gradient"}, default="edges"
        See :func:`tv_from_mesh`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    operator : GroupOperator
    hemispheres : Hemispheres
    """
    warnings.warn(
        "load_surface_data is deprecated and will be removed in a future "
        "release; use load_surface_subjects (same arguments and results).",
        FutureWarning,
        stacklevel=2,
    )
    return load_surface_subjects(
        left_data,
        right_data,
        left_mesh,
        right_mesh,
        mask_left=mask_left,
        mask_right=mask_right,
        kind=kind,
    )


def load_surface_image(left_data, right_data, left_mesh, right_mesh=None):
    """A nilearn ``SurfaceImage`` of per-subject maps on two hemispheres.

    What users have on disk (FreeSurfer or GIFTI meshes, per-subject
    ``lh.thickness``/``.mgh``/``.gii`` files, FreeSurfer qcache stacks with one
    frame per subject) becomes the input of :class:`neurospca.ImageSPCATV`.
    Vertex order is the files' order; nothing is masked here.

    Parameters
    ----------
    left_data, right_data : list of paths/arrays, path, glob or array-like
        One map per subject (see :func:`load_surface_subjects`): a list of files
        or glob patterns (``"sub-*/lh.thickness.mgh"``, matches sorted),
        one multi-frame file (``lh.thickness.fwhm10.fsaverage.mgh`` holding N
        frames gives N samples), or an array (n_samples, n_vertices).
    left_mesh, right_mesh : path, (coords, faces) or mesh object
        See :func:`load_surf_mesh`; a nilearn ``PolyMesh`` as ``left_mesh``
        with ``right_mesh=None``. nilearn meshes are kept as they are.

    Returns
    -------
    nilearn.surface.SurfaceImage
        Data of shape (n_vertices, n_samples) per hemisphere.

    Raises
    ------
    ValueError
        Maps whose number of vertices differs from the mesh's, or a different
        number of maps per hemisphere.
    """
    try:
        from nilearn.surface import InMemoryMesh, PolyMesh, SurfaceImage
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            'load_surface_image needs nilearn: pip install "neurospca[report]" '
            "(or pip install nilearn)."
        ) from None
    left_mesh, right_mesh = _split_polymesh(left_mesh, right_mesh)
    meshes, maps = {}, {}
    for hemi, mesh, data in (("left", left_mesh, left_data), ("right", right_mesh, right_data)):
        coords, faces = load_surf_mesh(mesh, f"{hemi}_mesh")
        coords = _check_coords(coords, f"{hemi}_mesh coords")
        if hasattr(mesh, "coordinates") and hasattr(mesh, "n_vertices"):
            meshes[hemi] = mesh  # a nilearn mesh: keep it (and its file, if any)
        else:
            meshes[hemi] = InMemoryMesh(
                coords, _check_faces(faces, coords.shape[0], f"{hemi}_mesh faces")
            )
        maps[hemi] = _subject_maps(data, coords.shape[0], f"{hemi}_data")
    if maps["left"].shape[0] != maps["right"].shape[0]:
        raise ValueError(
            f"left_data has {maps['left'].shape[0]} maps but right_data has "
            f"{maps['right'].shape[0]}; give one map per subject for each hemisphere."
        )
    return SurfaceImage(
        mesh=PolyMesh(left=meshes["left"], right=meshes["right"]),
        data={h: np.ascontiguousarray(maps[h].T) for h in _HEMIS},
    )
