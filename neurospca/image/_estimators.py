"""Which estimator :class:`~neurospca.ImageSPCATV` fits, and the structure it gets
from the images.

``ImageSPCATV(estimator=None)`` fits :class:`~neurospca.SPCATV` with the image
model's own penalty parameters (:func:`default_spcatv`, the defaults read once
from SPCATV's signature: :data:`SPCATV_DEFAULTS`). ``estimator=`` takes an
unfitted instance of any of the five estimators; it is cloned at fit and given
what its penalty needs from the images (:func:`with_structure`):

- SPCATV: the total-variation operator of the final mask or meshes;
- SSPCA (when its ``groups`` is None): half-space groups, of the mask's grid
  for volumes (:func:`neurospca.grid_halfspace_groups`), of the vertices'
  positions binned on a coarse grid for surfaces (:func:`surface_groups`);
- HierarchicalDictionaryLearning, NonnegativeSparsePCA, KTraceNormPCA:
  nothing (the dictionary's tree is over its atoms, not over voxels).

The image model's SPCA-TV parameters (``alpha``, ``l1_ratio``, ``tv_ratio``,
``tol``...) describe the default SPCATV; with ``estimator=`` they must be left
at their defaults (or equal the estimator's own value of the same name):
:func:`check_conflicts` raises otherwise, so no setting is silently ignored.
"""

import inspect

import numpy as np
from sklearn.base import clone

from ..decomposition import (
    SPCATV,
    SSPCA,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
)
from ..groups import grid_halfspace_groups

__all__ = [
    "ESTIMATORS",
    "ESTIMATOR_NAMES",
    "SPCATV_DEFAULTS",
    "SPCATV_PARAMS",
    "check_conflicts",
    "check_estimator",
    "default_spcatv",
    "surface_groups",
    "with_structure",
]

#: SPCATV's defaults, read once from its signature: the image model follows them.
SPCATV_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(SPCATV.__init__).parameters.items()
    if p.default is not inspect.Parameter.empty
}

#: ImageSPCATV parameters passed to the default SPCATV (and only to it)
SPCATV_PARAMS = (
    "alpha",
    "alpha_rel",
    "l1_ratio",
    "tv_ratio",
    "tol",
    "max_iter",
    "solver",
    "random_state",
    "verbose",
    "n_threads",
    "method",
    "stability",
)

#: the estimators ImageSPCATV(estimator=...) takes
ESTIMATORS = (SPCATV, SSPCA, NonnegativeSparsePCA, KTraceNormPCA, HierarchicalDictionaryLearning)

#: short names (command line ``--estimator``) -> class
ESTIMATOR_NAMES = {
    "spcatv": SPCATV,
    "sspca": SSPCA,
    "nspca": NonnegativeSparsePCA,
    "ktrace": KTraceNormPCA,
    "dictionary": HierarchicalDictionaryLearning,
}

#: bins per axis of the coarse grid on which surface vertices get half-space groups
SURFACE_GROUP_BINS = 8


def check_estimator(estimator):
    """``estimator`` is None or an unfitted instance of one of :data:`ESTIMATORS`.

    Parameters
    ----------
    estimator : object

    Returns
    -------
    estimator
    """
    if estimator is None or type(estimator) in ESTIMATORS:
        return estimator
    names = ", ".join(cls.__name__ for cls in ESTIMATORS)
    raise TypeError(
        f"estimator must be an unfitted estimator among {names}, or None "
        f"(e.g. neurospca.SSPCA(n_components=3)), got {estimator!r}."
    )


def _same(a, b):
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else np.array_equal(a, b)
    except (TypeError, ValueError):
        return a is b


def check_conflicts(model, image_defaults):
    """With ``estimator=``: every SPCA-TV parameter of ``model`` left at its default
    (or equal to the estimator's own value of that name); ValueError otherwise.

    Parameters
    ----------
    model : ImageSPCATV
    image_defaults : dict
        ImageSPCATV's parameter defaults.

    Returns
    -------
    None
    """
    own = model.estimator.get_params(deep=False)
    name = type(model.estimator).__name__
    for param in SPCATV_PARAMS + ("n_components",):
        value = getattr(model, param)
        if _same(value, image_defaults[param]) or (param == "n_components" and value == "auto"):
            continue
        if param in own and _same(own[param], value):
            continue
        where = (
            f"set it on the estimator ({name}({param}=...))"
            if param in own
            else f"{name} has no such parameter"
        )
        raise ValueError(
            f"{param}={value!r} is a parameter of the default SPCATV and conflicts with "
            f"estimator={name}(...): {where}, or leave ImageSPCATV's {param} at its default."
        )


def default_spcatv(model, n_components, operator):
    """The unfitted SPCATV of the image model's own parameters.

    Parameters
    ----------
    model : ImageSPCATV
    n_components : int
    operator : GroupOperator

    Returns
    -------
    SPCATV
    """
    params = {name: getattr(model, name) for name in SPCATV_PARAMS}
    return SPCATV(n_components, operator=operator, **params)


def surface_groups(space, meshes, n_bins=SURFACE_GROUP_BINS):
    """Half-space groups of the kept vertices of both hemispheres.

    Each hemisphere's kept vertices are binned on an ``n_bins`` per axis grid
    of their coordinates; the half-spaces of that grid
    (:func:`neurospca.grid_halfspace_groups`, with diagonals) become groups of
    the vertices in them, and each hemisphere as a whole is one more group
    (so a support may leave out a hemisphere). Columns are the left kept
    vertices then the right ones (the masker's order).

    Parameters
    ----------
    space : Hemispheres
    meshes : dict
        ``{"left": (coords, faces), "right": (coords, faces)}``.
    n_bins : int, default=8

    Returns
    -------
    list of ndarray of int64
    """
    groups, offset = [], 0
    for i, hemi in enumerate(("left", "right")):
        coords = np.asarray(meshes[hemi][0], dtype=np.float64)[space.vertices[i]]
        lo, span = coords.min(axis=0), np.ptp(coords, axis=0)
        cells = np.floor((coords - lo) / np.where(span > 0, span, 1.0) * n_bins).astype(np.int64)
        cells = np.clip(cells, 0, n_bins - 1)
        occupied, inverse = np.unique(cells, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        groups.append(np.arange(offset, offset + coords.shape[0], dtype=np.int64))
        if occupied.shape[0] > 1:
            grid = np.zeros((n_bins,) * 3, dtype=bool)
            grid[tuple(occupied.T)] = True  # argwhere(grid) is occupied, in the same order
            for cell_group in grid_halfspace_groups(mask=grid):
                members = np.flatnonzero(np.isin(inverse, cell_group))
                groups.append(members.astype(np.int64) + offset)
        offset += coords.shape[0]
    return groups


def _groups_of(model):
    """SSPCA's groups of the fitted image space (volume grid or surface vertices)."""
    if model.meshes_ is None:
        return grid_halfspace_groups(mask=model.space_.mask)
    return surface_groups(model.space_, model.meshes_)


def with_structure(model, estimator, n_components):
    """An unfitted clone of ``estimator`` with the structure of ``model``'s images.

    Parameters
    ----------
    model : ImageSPCATV
        Prepared (``space_``, ``operator_``, ``meshes_`` set).
    estimator : one of :data:`ESTIMATORS`
    n_components : int or None
        Set on the clone when not None (``n_components="auto"``).

    Returns
    -------
    estimator
    """
    est = clone(estimator)
    if n_components is not None:
        est.set_params(n_components=int(n_components))
    if isinstance(est, SPCATV):
        est.set_params(operator=model.operator_)
    elif isinstance(est, SSPCA) and est.groups is None:
        est.set_params(groups=_groups_of(model))
    return est
