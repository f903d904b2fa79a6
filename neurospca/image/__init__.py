"""Image-level fitting: NIfTI volumes and cortical surfaces in, images out.

This layer sits above :mod:`neurospca.decomposition`: it masks images into a
data matrix with :mod:`neurospca.masking` or :mod:`neurospca.surface`, builds
the matching operator, fits an estimator and unmasks its loadings:
:class:`ImageSPCATV` (``_spcatv``, with its input checks in ``_inputs``) and
the one-call :func:`fit_images` and :func:`fit_surfaces` (``_fit``).
"""

from ._fit import fit_images, fit_surfaces
from ._spcatv import ImageSPCATV

__all__ = ["ImageSPCATV", "fit_images", "fit_surfaces"]
