"""The paper's penalty parametrisation (section III): ``alpha = l1 + l2 + tv``,
``l1_ratio = l1 / alpha``, ``tv_ratio = tv / alpha``, both ways."""

from .._utils.validation import check_nonneg

__all__ = ["weights_from_ratios", "ratios_from_weights"]


def weights_from_ratios(alpha, l1_ratio, tv_ratio):
    """The paper's parametrisation (section III) to raw weights.

    ``alpha = l1 + l2 + tv``, ``l1_ratio = l1 / alpha``, ``tv_ratio = tv / alpha``.

    Parameters
    ----------
    alpha : float
        The total weight (> 0).
    l1_ratio : float
        ``l1 / alpha`` (>= 0).
    tv_ratio : float
        ``tv / alpha`` (>= 0, ``l1_ratio + tv_ratio < 1``).

    Returns
    -------
    l1, l2, tv : float

    Raises
    ------
    ValueError
        If ``alpha <= 0``, a ratio is negative, or ``l1_ratio + tv_ratio >= 1``
        (``l2`` must be > 0 for the duality gap).
    """
    alpha = check_nonneg(alpha, "alpha", strict=True)
    l1_ratio = check_nonneg(l1_ratio, "l1_ratio")
    tv_ratio = check_nonneg(tv_ratio, "tv_ratio")
    if l1_ratio + tv_ratio >= 1.0:
        raise ValueError(
            f"l1_ratio + tv_ratio must be < 1 (got {l1_ratio} + {tv_ratio} = "
            f"{l1_ratio + tv_ratio}): the l2 weight alpha * (1 - l1_ratio - tv_ratio) "
            "must be > 0 for the duality gap to exist."
        )
    return alpha * l1_ratio, alpha * (1.0 - l1_ratio - tv_ratio), alpha * tv_ratio


def ratios_from_weights(l1, l2, tv):
    """Raw ``(l1, l2, tv)`` weights to ``(alpha, l1_ratio, tv_ratio)``.

    Parameters
    ----------
    l1 : float
        ``lambda_1 >= 0``.
    l2 : float
        ``lambda_2 > 0``.
    tv : float
        ``lambda >= 0``.

    Returns
    -------
    alpha, l1_ratio, tv_ratio : float

    Raises
    ------
    ValueError, TypeError
        A negative or non-finite weight, or ``l2 <= 0``.
    """
    l1 = check_nonneg(l1, "l1")
    l2 = check_nonneg(l2, "l2", strict=True)
    tv = check_nonneg(tv, "tv")
    alpha = l1 + l2 + tv
    return alpha, l1 / alpha, tv / alpha


def _weights(alpha, l1_ratio, tv_ratio):
    """:func:`weights_from_ratios` on validated values (no checks)."""
    return alpha * l1_ratio, alpha * (1.0 - l1_ratio - tv_ratio), alpha * tv_ratio
