"""The fit of the command line: the image model of its options (SPCA-TV's penalties or
``--estimator``), the masked maps, the fit with progress lines and its summary."""

import time

from .._utils.progress import print_warnings, progress_lines
from ._checks import UserError, format_rel, say
from .penalties import spcatv_defaults

__all__ = [
    "estimator_from_args",
    "load_maps",
    "fit_with_progress",
    "split_groups_from_args",
    "stability_summary",
    "support_summary",
]


def estimator_from_args(args, **masking):
    """The unfitted ImageSPCATV of the command line (and ``masking``).

    ``--estimator spcatv`` (the default) gives SPCA-TV with the command line's
    penalties; another name gives that estimator with ``--n-components``
    (and ``--max-iter``, ``--tol`` when given) and ``random_state=0``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``estimator``, ``alpha``, ``alpha_rel``,
        ``l1_ratio``, ``tv_ratio``, ``max_iter``, ``n_components``, ``tol``,
        ``solver``).
    **masking
        Passed to :class:`neurospca.image.ImageSPCATV` (``mask``, ``resample``).

    Returns
    -------
    ImageSPCATV
    """
    name = getattr(args, "estimator", None) or "spcatv"
    if name != "spcatv":
        return _other_estimator(args, name, masking)
    from ..decomposition import fixed_split
    from ..image import ImageSPCATV

    defaults = spcatv_defaults()
    alpha = getattr(args, "alpha", None)
    alpha_rel = getattr(args, "alpha_rel", None)
    l1_ratio = getattr(args, "l1_ratio", None)
    tv_ratio = getattr(args, "tv_ratio", None)
    if alpha is not None and alpha_rel is not None:
        raise UserError("give --alpha (absolute) or --alpha-rel (relative to l1_max), not both.")
    alpha_rel = defaults["alpha_rel"] if alpha_rel is None else alpha_rel
    l1_ratio = defaults["l1_ratio"] if l1_ratio is None else l1_ratio
    tv_ratio = defaults["tv_ratio"] if tv_ratio is None else tv_ratio
    if sum(fixed_split(l1_ratio, tv_ratio)) >= 1:  # "auto": the default split's ratio
        raise UserError(f"--l1-ratio + --tv-ratio must be < 1, got {l1_ratio} + {tv_ratio}.")
    tol = defaults["tol"] if getattr(args, "tol", None) is None else args.tol
    penalty = (
        f"alpha={alpha:.4g} (absolute)"
        if alpha is not None
        else f"alpha={format_rel(alpha_rel)} x l1_max (relative)"
    )
    say(
        args,
        f"SPCA-TV: {args.n_components} component(s), {penalty}, "
        f"l1_ratio={format_rel(l1_ratio)}, tv_ratio={format_rel(tv_ratio)}, tol={tol:g}, "
        f"solver={args.solver}",
    )
    return ImageSPCATV(
        args.n_components,
        alpha=alpha,
        alpha_rel=alpha_rel,
        l1_ratio=l1_ratio,
        tv_ratio=tv_ratio,
        tol=tol,
        max_iter=getattr(args, "max_iter", None) or defaults["max_iter"],
        solver=args.solver,
        n_threads=getattr(args, "n_threads", None),
        **masking,
    )


#: options of SPCA-TV only (refused with another --estimator), and their defaults
_SPCATV_ONLY = {
    "alpha": None,
    "alpha_rel": None,
    "l1_ratio": None,
    "tv_ratio": None,
    "solver": "dual",
}


def _other_estimator(args, name, masking):
    """ImageSPCATV(estimator=...) of ``--estimator NAME`` (not spcatv)."""
    from ..image import ESTIMATOR_NAMES, ImageSPCATV

    given = [o for o, d in _SPCATV_ONLY.items() if getattr(args, o, d) != d]
    if given:
        options = ", ".join("--" + o.replace("_", "-") for o in given)
        raise UserError(f"{options}: SPCA-TV's option(s), not used by --estimator {name}.")
    cls = ESTIMATOR_NAMES[name]
    k = args.n_components
    params = {"random_state": 0}
    if not isinstance(k, str):
        params["n_components"] = k
    for option in ("max_iter", "tol"):
        if getattr(args, option, None) is not None:
            params[option] = getattr(args, option)
    estimator = cls(**params)
    say(args, f"{cls.__name__}: {k} component(s), {_params_text(params)}")
    return ImageSPCATV(
        "auto" if k == "auto" else ImageSPCATV().n_components, estimator=estimator, **masking
    )


def _params_text(params):
    return ", ".join(f"{k}={v}" for k, v in params.items() if k != "n_components")


def load_maps(args, model, imgs, option):
    """Mask the images with ``model`` (an unfitted ImageSPCATV); returns X.

    Warnings (left-out voxels/vertices) become one-line notes; errors name
    ``option``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    model : ImageSPCATV
        Unfitted; its masking parameters are used.
    imgs : list of str, nibabel image or SurfaceImage
        The maps.
    option : str
        The option named in errors.

    Returns
    -------
    ndarray of shape (n_samples, n_features)
    """
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            X = model._prepare(imgs, None)
    except (ValueError, TypeError) as exc:
        raise UserError(
            f"{option}: {exc}".replace(
                "(pass resample=True, which uses nilearn.image.resample_to_img)",
                "(pass --resample)",
            )
        ) from None
    print_warnings(caught)
    if X.shape[0] < 2:
        raise UserError(f"{option}: need at least 2 maps, got {X.shape[0]}.")
    k = model.n_components if model.estimator is None else model.estimator.n_components
    if isinstance(k, int) and k > min(X.shape):
        raise UserError(
            f"--n-components {k} is larger than the data allow "
            f"({X.shape[0]} samples x {X.shape[1]} features)."
        )
    return X


def split_groups_from_args(args, model, imgs, study=False):
    """``split_groups`` of the fit: ``--split-blocks N``, else contiguous blocks for
    a single 4-D NIfTI time series (``neurospca.image.image_split_groups``; none
    with ``--participants``)."""
    from ..image import image_split_groups

    blocks = getattr(args, "split_blocks", None)
    if blocks is not None and blocks < 2:
        raise UserError(f"--split-blocks: give at least 2 blocks, got {blocks}.")
    try:
        groups = "auto" if blocks is None else blocks
        return image_split_groups(model, imgs, groups, participants=True if study else None)
    except ValueError as exc:
        raise UserError(f"--split-blocks: {exc}") from None


def fit_with_progress(args, model, X, split_groups=None):
    """Fit the estimator of ``model`` on its masked data (SPCA-TV with per-component
    progress lines); warnings become one-line notes.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``quiet``, ``verbose``).
    model : ImageSPCATV
        Unfitted.
    X : ndarray
        From :func:`load_maps`.
    split_groups : optional
        From :func:`split_groups_from_args`.

    Returns
    -------
    ImageSPCATV
        ``model``, fitted.
    """
    k = model._choose_n_components(X)
    if model.n_components_evidence_ is not None:
        say(args, model.n_components_evidence_["rule"])
    t0 = time.perf_counter()
    if model.estimator is None:
        _fit_spcatv(args, model, X, k, split_groups)
    else:
        model._fit_matrix(X, k, split_groups)
    elapsed = time.perf_counter() - t0
    say(args, f"fitted {model.n_components_} component(s) in {elapsed:.2f} s{_penalty(model)}")
    for line in support_summary(model.estimator_) + stability_summary(model.estimator_):
        say(args, line)
    return model


def _fit_spcatv(args, model, X, k, split_groups=None):
    """The default SPCA-TV fit, with one progress line per component."""
    quiet = getattr(args, "quiet", False)
    with progress_lines(k, getattr(args, "verbose", 0), quiet):
        if not quiet:
            model.set_params(verbose=1)
        try:
            model._fit_matrix(X, k, split_groups)
        finally:
            model.set_params(verbose=0)
            if hasattr(model, "estimator_"):
                model.estimator_.set_params(verbose=0)


def _penalty(model):
    """`` (alpha = ...)`` of the fitted model, when it has a fitted ``alpha_``."""
    est = model.estimator_
    if getattr(est, "alpha_", None) is None:
        return ""
    default = model.estimator is None and model.alpha is None  # SPCA-TV's relative alpha
    relative = f" ({est.alpha_rel_:g} x l1_max)" if default else ""
    split = (
        f", l1_ratio = {est.l1_ratio_:g}, tv_ratio = {est.tv_ratio_:g}"
        if getattr(est, "l1_ratio_", None) is not None
        else ""
    )
    return f" (alpha = {est.alpha_:.4g}{relative}{split})"


def stability_summary(estimator):
    """The reproducibility of the components across resampled fits (``stability_``), one
    line (none if not computed).

    Parameters
    ----------
    estimator : fitted SPCATV
        Read: ``stability_``.

    Returns
    -------
    list of str
    """
    import numpy as np

    stab = getattr(estimator, "stability_", None)
    if stab is None or not np.any(np.isfinite(stab)):
        return []
    low = [str(k + 1) for k, s in enumerate(stab) if np.isfinite(s) and s < 0.5]
    line = "reproducibility of the components across resampled fits: " + ", ".join(
        f"{s:.2f}" for s in stab
    )
    if low:
        line += f" (component(s) {', '.join(low)} do not reproduce: below 0.5)"
    return [line]


def support_summary(estimator):
    """One line per component: certified non-zero, certified zero and uncertain loadings.

    Parameters
    ----------
    estimator : fitted SPCATV
        Read: ``certified_support_``, ``certified_zeros_``, ``n_uncertain_``,
        ``support_radius_`` (nothing is said without them).

    Returns
    -------
    list of str
    """
    import numpy as np

    support = getattr(estimator, "certified_support_", None)
    if support is None:
        return []
    lines = []
    for k, comp in enumerate(np.asarray(estimator.components_)):
        peak = float(np.max(np.abs(comp)))
        radius = float(estimator.support_radius_[k])
        hidden = int(np.count_nonzero((comp != 0) & ~support[k]))
        bound = (
            f", |loading| <= {100 * radius / peak:.2g} % of the peak"
            if peak > 0 and np.isfinite(radius)
            else ""
        )
        lines.append(
            f"component {k + 1}: {int(support[k].sum()):,} loadings certified "
            f"non-zero, {int(estimator.certified_zeros_[k].sum()):,} certified zero, "
            f"{int(estimator.n_uncertain_[k]):,} uncertain ({hidden:,} of them "
            f"non-zero{bound}; not counted, drawn or clustered)"
        )
    return lines
