"""The grid TV operator of a mask (SPCA-TV paper, section II-C1)."""

import nibabel as nib
import numpy as np
import scipy.sparse as sp

from .._utils.images import is_pathlike, mask_array
from ..operators import GroupOperator
from ._io import _binarise, load_mask_img

__all__ = ["grid_tv_operator", "tv_from_mask"]


def _as_bool_mask(mask, name="mask"):
    """Validate an array mask: boolean (or 0/1), 1-D to 3-D, not empty."""
    arr = np.asarray(mask)
    if arr.dtype != bool:
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise TypeError(f"{name} must be a boolean array, got dtype {arr.dtype}.")
        values = np.unique(arr)
        if not np.all(np.isin(values, [0, 1])):
            raise ValueError(
                f"{name} must be boolean or hold only 0 and 1, got values such as "
                f"{values[:5].tolist()}; binarise it explicitly (e.g. mask > 0.5)."
            )
        arr = arr.astype(bool)
    if arr.ndim not in (1, 2, 3):
        raise ValueError(f"{name} must be a 1-D, 2-D or 3-D array, got {arr.ndim}-D.")
    if not arr.any():
        raise ValueError(f"{name} is empty: it selects no voxel.")
    return arr


def grid_tv_operator(mask):
    """TV operator of a boolean array mask (1-D, 2-D or 3-D), vectorised.

    Parameters
    ----------
    mask : ndarray of bool

    Returns
    -------
    GroupOperator
        ``n_features = mask.sum()``; rows ordered group by group (voxel by
        voxel), and within a group by axis.
    """
    mask = _as_bool_mask(mask)
    ndim = mask.ndim
    index = np.full(mask.shape, -1, dtype=np.int64)
    n = int(mask.sum())
    index[mask] = np.arange(n)
    heads, tails, axes = [], [], []
    for axis in range(ndim):
        lo = [slice(None)] * ndim
        hi = [slice(None)] * ndim
        lo[axis] = slice(0, -1)
        hi[axis] = slice(1, None)
        a = index[tuple(lo)]
        b = index[tuple(hi)]
        keep = (a >= 0) & (b >= 0)
        heads.append(a[keep])
        tails.append(b[keep])
        axes.append(np.full(int(keep.sum()), axis, dtype=np.int64))
    head = np.concatenate(heads)
    tail = np.concatenate(tails)
    axis = np.concatenate(axes)
    order = np.lexsort((axis, head))
    head, tail = head[order], tail[order]
    n_rows = head.size
    rows = np.arange(n_rows)
    mat = sp.csr_matrix(
        (
            np.concatenate([-np.ones(n_rows), np.ones(n_rows)]),
            (np.concatenate([rows, rows]), np.concatenate([head, tail])),
        ),
        shape=(n_rows, n),
    )
    counts = np.bincount(head, minlength=n)
    group_ptr = np.concatenate([[0], np.cumsum(counts)])
    # A^T A is the Laplacian of the grid graph restricted to the mask:
    # its eigenvalues are at most 2 * max degree = 4 * ndim.
    return GroupOperator(mat, group_ptr, norm2=4.0 * ndim)


def tv_from_mask(mask, *, threshold=None):
    """Total-variation operator of a brain mask.

    Parameters
    ----------
    mask : ndarray, nibabel image, str or os.PathLike
        A 1-D, 2-D or 3-D boolean array (0/1 integers are accepted), or a 3-D
        mask image / path to one.
    threshold : float, optional
        Binarise the mask as ``mask > threshold`` (for images or arrays that
        do not hold only 0 and 1).

    Returns
    -------
    GroupOperator
        One group per in-mask voxel (C order), holding its forward differences
        to in-mask neighbours; ``norm2 = 4 * ndim``.

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import tv_from_mask
    >>> op = tv_from_mask(np.ones((3, 4), dtype=bool))
    >>> op.n_features, op.n_rows
    (12, 17)
    """
    if isinstance(mask, np.ndarray) or not (
        is_pathlike(mask) or isinstance(mask, nib.spatialimages.SpatialImage)
    ):
        if threshold is not None:
            mask = _binarise(mask, "mask", threshold)
        return grid_tv_operator(mask)
    return grid_tv_operator(mask_array(load_mask_img(mask, threshold=threshold)))
