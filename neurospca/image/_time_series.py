"""Which rows of an image fit belong together: ``ImageSPCATV.fit(split_groups=...)``.

SPCA-TV's split halves (``alpha_rel="auto"``, ``stability_``) assume
independent rows. The volumes of one fMRI run are not: neighbouring time
points are near-copies, and random halves overstate ``stability_``
(brainspace's resting-state run: 0.94 and 0.79 against 0.43 actual;
benchmarks/RESULTS.md, issue 20 rounds 8-9). ``split_groups="auto"`` (the
default of :meth:`ImageSPCATV.fit`) keeps contiguous blocks of a single 4-D
NIfTI whose header says it is a time series (:func:`is_time_series`) and
says so in one line; everything else (lists or globs of maps, a
SurfaceImage, a participants table) keeps random halves unless told.

Stacked subject maps are not mistaken for a run: nilearn's ``concat_imgs``
and nibabel's ``concat_images`` keep the first map's header, whose time unit
is "unknown" (then no guess) or, from SPM and FSL, seconds with
``pixdim[4] = 1`` (3-D maps have no TR; 1 is the header's filler), so a TR
of exactly 1 s is not taken as evidence (checked with nilearn 0.11 and
nibabel 5, issue 20 round 9). A run with a TR of 1 s then needs
``split_groups="blocks"``.
"""

import logging
import os

from ..decomposition import SPCATV

logger = logging.getLogger("neurospca")

#: Time units of the NIfTI header that make a 4-D image a time series.
TIME_UNITS = ("sec", "msec", "usec")
#: Fewest volumes for the guess (two blocks per half at least).
MIN_VOLUMES = 20


def is_time_series(img):
    """True when a 4-D NIfTI header says its 4th axis is time: a time unit
    (:data:`TIME_UNITS`), a TR (``pixdim[4]``) that is positive and not exactly
    1 s (the filler of stacked 3-D maps), and at least :data:`MIN_VOLUMES` volumes.

    Parameters
    ----------
    img : nibabel image

    Returns
    -------
    bool
    """
    header = getattr(img, "header", None)
    if len(img.shape) != 4 or img.shape[3] < MIN_VOLUMES or header is None:
        return False
    if not hasattr(header, "get_xyzt_units"):
        return False
    unit = header.get_xyzt_units()[1]
    tr = float(header["pixdim"][4])
    if unit not in TIME_UNITS or not tr > 0:
        return False
    return not (unit == "sec" and tr == 1.0) and not (unit == "msec" and tr == 1000.0)


def _single_image(imgs):
    """The one 4-D NIfTI given (an image, a path, or a list of one), else None."""
    import nibabel as nib

    if isinstance(imgs, (list, tuple)) and len(imgs) == 1:
        imgs = imgs[0]
    if isinstance(imgs, nib.spatialimages.SpatialImage):
        return imgs
    if isinstance(imgs, (str, os.PathLike)) and os.path.isfile(imgs):
        try:
            return nib.load(imgs)  # the header only: the data are read later
        except Exception:  # noqa: BLE001 - not an image: the masking names the error
            return None
    return None


def image_split_groups(model, imgs, split_groups="auto", participants=None):
    """The ``split_groups`` to give the estimator's ``fit`` (None: none).

    Parameters
    ----------
    model : ImageSPCATV
    imgs : the images given to ``fit``
    split_groups : "auto", None, "blocks", int or array-like
        "auto": ``"blocks"`` for a single 4-D NIfTI time series
        (:func:`is_time_series`; one line logged, and printed when nothing
        handles the ``"neurospca"`` logger), else None. None: independent
        rows. Otherwise passed on (checked by the estimator's ``fit``).
    participants : optional
        A participants table: the rows are participants, no guess.

    Returns
    -------
    None, "blocks", int or array-like

    Raises
    ------
    ValueError
        ``split_groups`` given for an estimator that draws no split halves.
    """
    uses = model.estimator is None or isinstance(model.estimator, SPCATV)
    if isinstance(split_groups, str) and split_groups == "auto":
        if not uses or participants is not None:
            return None
        img = _single_image(imgs)
        if img is None or not is_time_series(img):
            return None
        msg = (
            f"imgs is a time series ({img.shape[3]} volumes, TR {float(img.header['pixdim'][4]):g} "
            f"{img.header.get_xyzt_units()[1]}): split halves keep contiguous blocks "
            "(split_groups='blocks'; pass split_groups=None for independent volumes)."
        )
        logger.info(msg)
        if not logger.handlers:
            print("[ImageSPCATV] " + msg, flush=True)
        return "blocks"
    if split_groups is not None and not uses:
        raise ValueError(
            f"split_groups: {type(model.estimator).__name__} draws no split halves; "
            "only SPCATV (stability_, alpha_rel='auto') uses split_groups."
        )
    return split_groups
