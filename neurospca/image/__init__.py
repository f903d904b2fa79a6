"""Image-level fitting: NIfTI volumes and cortical surfaces in, images out.

This layer sits above :mod:`neurospca.decomposition`: it masks images into a
data matrix with :mod:`neurospca.masking` or :mod:`neurospca.surface`, builds
the matching operator, fits an estimator and unmasks its loadings.
"""

from ._spcatv import ImageSPCATV

__all__ = ["ImageSPCATV"]
