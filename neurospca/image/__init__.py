"""Image-level fitting: NIfTI volumes and cortical surfaces in, images out.

This layer sits above :mod:`neurospca.decomposition`: it masks images into a
data matrix with :mod:`neurospca.masking` or :mod:`neurospca.surface`, builds
the matching operator, fits an estimator and unmasks its loadings:
:class:`ImageSPCATV` (``_spcatv``, with its input checks in ``_inputs``) and
the one-call :func:`fit_images` and :func:`fit_surfaces` (``_fit``).
``ImageSPCATV(estimator=...)`` fits any of the five estimators
(:data:`ESTIMATORS`; short names for the command line in
:data:`ESTIMATOR_NAMES`), each given the structure it needs from the images
(``_estimators``); the masking is in ``_masking``.
"""

from ._estimators import ESTIMATOR_NAMES, ESTIMATORS, SPCATV_DEFAULTS
from ._fit import fit_images, fit_surfaces
from ._spcatv import ImageSPCATV
from ._time_series import image_split_groups

__all__ = [
    "ImageSPCATV",
    "image_split_groups",
    "fit_images",
    "fit_surfaces",
    "ESTIMATORS",
    "ESTIMATOR_NAMES",
    "SPCATV_DEFAULTS",
]
