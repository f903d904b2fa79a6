"""Sentences that explain two numbers a reader of the report asks about.

- :func:`variance_explanation`: why sparse components explain less variance
  than PCA's (e.g. 9 % beside 31 %), with the report's own numbers.
- :func:`gap_scale`: the scale that links the relative and the certified
  duality gaps of a component (e.g. 1.6e-4 and 1.1e-2), shown beside them in
  the convergence table (the partial says which gap is which).
"""

import numpy as np

__all__ = ["gap_scale", "variance_explanation"]


def variance_explanation(evr, pca_evr, n_components):
    """Why the components explain less variance than PCA's (None without PCA's numbers).

    Parameters
    ----------
    evr : ndarray
        The components' adjusted explained variance ratios.
    pca_evr : ndarray or None
        PCA's ratios of the same data.
    n_components : int

    Returns
    -------
    str or None
    """
    if pca_evr is None or not np.any(np.isfinite(evr)):
        return None
    total = 100 * float(np.nansum(evr))
    pca = 100 * float(np.nansum(np.asarray(pca_evr)[:n_components]))
    share = f" ({total / pca:.0%} of PCA's)" if pca > 0 else ""
    return (
        f"Why {total:.1f} % beside PCA's {pca:.1f} %{share}: PCA's {n_components} "
        "component(s) are, by construction, the directions of largest variance "
        "(no other set of as many components explains more: Eckart-Young), and each "
        "spreads over every voxel or vertex. A sparse, smooth component is "
        "confined to a few regions, so it explains only the variance of those "
        "regions; and the adjusted variance counts only what each component adds to "
        "the ones before it (the scores are orthogonalised, Zou et al. 2006), since "
        "sparse components are not orthogonal. The lower figure is the price of "
        "maps that can be read region by region: it says how much of the data the "
        "components summarise, not whether they are real (their stability and "
        "certificates say that)."
    )


def gap_scale(certified, relative):
    """``certified / relative`` (the scale of the v-step objective), or None."""
    if certified is None or relative is None:
        return None
    certified, relative = float(certified), float(relative)
    if not (np.isfinite(certified) and np.isfinite(relative)) or relative <= 0:
        return None
    return certified / relative
