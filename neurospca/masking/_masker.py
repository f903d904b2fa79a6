"""``VolumeMasker``: images <-> data matrix for one mask, and ``load_volume_data``."""

import numpy as np

from .._utils.images import mask_array
from ._io import _raw_matrix, images_to_data, load_mask_img, unmask
from ._operators import grid_tv_operator

__all__ = ["VolumeMasker", "load_volume_data"]


class VolumeMasker:
    """Images <-> data matrix for one mask (a small, nilearn-like masker).

    Parameters
    ----------
    mask : nibabel image, path or 3-D ndarray
        See :func:`load_mask_img`.
    threshold : float, optional
        Binarise the mask as ``mask > threshold``.
    resample : bool, default=False
        Resample images onto the mask's grid in :meth:`transform`.

    Attributes
    ----------
    mask_img : nibabel.Nifti1Image
        The binary mask (uint8).
    mask : ndarray of bool
        Its data.
    n_features : int
        Number of in-mask voxels (columns of ``X``).
    """

    def __init__(self, mask, *, threshold=None, resample=False):
        self.mask_img = load_mask_img(mask, threshold=threshold)
        self.mask = mask_array(self.mask_img)
        self.n_features = int(self.mask.sum())
        self.resample = resample

    def __repr__(self):
        return f"VolumeMasker(shape={self.mask.shape}, n_features={self.n_features})"

    def transform(self, imgs):
        """``X`` (N x n_features) of new images on this mask.

        Parameters
        ----------
        imgs : list of images or paths, 4-D image, path or glob pattern
            See :func:`images_to_data`.

        Returns
        -------
        ndarray of shape (n_samples, n_features), float64

        Raises
        ------
        ValueError
            If an in-mask voxel is NaN or infinite (the columns are fixed
            here; use :func:`images_to_data` to drop them).
        """
        X = _raw_matrix(imgs, self.mask_img, self.mask, self.resample)
        n_bad = int(np.sum(~np.all(np.isfinite(X), axis=0)))
        if n_bad:
            raise ValueError(
                f"imgs: {n_bad} voxel(s) of the mask are NaN or infinite in at least one "
                "image; this masker's columns are fixed (use images_to_data or "
                "load_volume_data to drop them)."
            )
        return X

    def inverse_transform(self, V):
        """Image of a vector (3-D) or of the rows of a matrix (4-D); see :func:`unmask`.

        Parameters
        ----------
        V : array-like of shape (n_features,) or (n_components, n_features)

        Returns
        -------
        nibabel.Nifti1Image
        """
        return unmask(V, self.mask_img)

    def operator(self):
        """The TV operator of the mask (:func:`tv_from_mask`).

        Returns
        -------
        GroupOperator
        """
        return grid_tv_operator(self.mask)


def load_volume_data(imgs, mask, *, threshold=None, resample=False):
    """Everything SPCA-TV needs from NIfTI maps and a mask.

    Parameters
    ----------
    imgs : list of images or paths, 4-D image, path or glob pattern
        One map per subject (see :func:`images_to_data`).
    mask : nibabel image, path or 3-D ndarray
        Brain mask (see :func:`load_mask_img`).
    threshold : float, optional
        Binarise the mask as ``mask > threshold``.
    resample : bool, default=False
        Resample images whose grid differs from the mask's (nilearn).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    operator : GroupOperator
        TV operator of the mask actually used (NaN voxels removed).
    masker : VolumeMasker
        ``masker.inverse_transform(estimator.components_)`` gives the loadings
        as a 4-D image.

    Examples
    --------
    >>> X, op, masker = load_volume_data(imgs, mask)           # doctest: +SKIP
    >>> est = neurospca.SPCATV(3, operator=op).fit(X)          # doctest: +SKIP
    >>> masker.inverse_transform(est.components_).shape[-1]    # doctest: +SKIP
    3
    """
    X, mask_img = images_to_data(imgs, mask, threshold=threshold, resample=resample)
    masker = VolumeMasker(mask_img, resample=resample)
    return X, masker.operator(), masker
