"""Summary figures of a fit: convergence of the duality gaps, explained variance
(beside PCA's), and the component scores (re-exported by
:mod:`neurospca.reporting.plotting`)."""

import numpy as np

__all__ = ["plot_convergence", "plot_explained_variance", "plot_scores", "fixed_margins"]


def _pyplot():
    from .plotting import _pyplot

    return _pyplot()


def fixed_margins(fig, left=1.1, right=0.2, bottom=0.6, top=0.4, gap=1.1):
    """Place a figure's grid of axes with margins in inches, instead of ``tight_layout``.

    ``tight_layout`` lays every text out with the renderer before the figure is
    drawn (0.2-0.4 s CPU per summary figure, as much as the draw itself). The
    margins here hold the labels of these plots (tick labels of up to about
    seven characters, one axis label, a title); the report crops the white
    around the ink when it encodes a figure, so wider margins cost nothing
    there.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    left, right, bottom, top : float
        Margins in inches.
    gap : float
        Horizontal space between two axes of a row, in inches.
    """
    width, height = fig.get_size_inches()
    n_cols = max((ax.get_subplotspec().get_gridspec().ncols for ax in fig.axes), default=1)
    axes_width = (width - left - right - gap * (n_cols - 1)) / n_cols
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        bottom=bottom / height,
        top=1 - top / height,
        wspace=gap / axes_width,
    )


# --------------------------------------------------------------------------
# summaries
# --------------------------------------------------------------------------


def plot_convergence(gap_history, title=None, *, tol=None, relative=None):
    """Duality gap against (cumulative) solver iteration, one line per component.

    Parameters
    ----------
    gap_history : list of list of (int, float)
        Per component, ``(cumulative solver iteration, gap)`` pairs: e.g.
        ``SPCATV.rel_gap_history_`` (gap / P(0), the quantity ``tol`` bounds)
        or ``SPCATV.gap_history_`` (gap in units of the objective).
    title : str, optional
        Default "Relative duality gap" or "Certified duality gap".
    tol : float, optional
        Draw the stopping threshold as a horizontal line (only meaningful
        with the relative gap history).
    relative : bool, optional
        Whether the history holds relative gaps (label of the y axis);
        default True when ``tol`` is given.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    if relative is None:
        relative = tol is not None
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    drawn = False
    for k, hist in enumerate(gap_history):
        arr = np.asarray(hist, dtype=np.float64).reshape(-1, 2) if len(hist) else None
        if arr is None:
            continue
        keep = np.isfinite(arr[:, 1]) & (arr[:, 1] > 0)
        if keep.any():
            ax.semilogy(arr[keep, 0], arr[keep, 1], marker=".", ms=3, label=f"component {k + 1}")
            drawn = True
    if tol is not None:
        ax.axhline(float(tol), color="k", ls="--", lw=1, label=f"tol = {float(tol):g}")
        if not drawn:
            ax.set_yscale("log")
        drawn = True
    ax.set_xlabel("solver iteration (cumulative over alternations)")
    ax.set_ylabel("relative gap (gap / P(0))" if relative else "certified gap")
    if title is None:
        title = "Relative duality gap" if relative else "Certified duality gap"
    ax.set_title(title)
    if ax.get_yscale() == "log":
        _decade_ticks(ax.yaxis)
    ax.grid(True, alpha=0.3)
    if drawn:
        ax.legend(fontsize=8)
    fixed_margins(fig)
    return fig


def _decade_ticks(axis):
    """A log axis with one tick per decade (or fewer), labelled in plain text (``1e-06``),
    and no minor ticks.

    Matplotlib's default log axis adds eight minor ticks (and grid lines) per decade
    and writes its labels as mathtext: for the eight decades a gap history spans,
    0.2-0.25 s CPU of the 0.35-0.45 s this figure took to draw (measured at load
    15); the decades alone read the same.
    """
    from matplotlib import ticker

    axis.set_major_locator(ticker.LogLocator(base=10.0, numticks=10))
    axis.set_major_formatter(ticker.FuncFormatter(_decade_label))
    axis.set_minor_locator(ticker.NullLocator())


def _decade_label(value, _position):
    return f"{value:.0e}"


def plot_explained_variance(ratios, pca_ratios=None):
    """Bar chart of the (adjusted) explained variance ratio of each component.

    Parameters
    ----------
    ratios : array-like of shape (n_components,)
        E.g. ``SPCATV.explained_variance_ratio_``.
    pca_ratios : array-like of shape (n_components,), optional
        Plain PCA's ratios of the same data, drawn beside them.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    ratios = np.asarray(ratios, dtype=np.float64)
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    idx = np.arange(1, ratios.size + 1)
    if pca_ratios is None:
        ax.bar(idx, 100 * ratios, color="#4c72b0", label="component")
        ax.plot(idx, 100 * np.cumsum(ratios), "o-", color="#dd8452", label="cumulative")
    else:
        pca = np.asarray(pca_ratios, dtype=np.float64)[: ratios.size]
        ax.bar(idx - 0.2, 100 * ratios, width=0.4, color="#4c72b0", label="SPCA-TV (adjusted)")
        ax.bar(idx[: pca.size] + 0.2, 100 * pca, width=0.4, color="#aaaaaa", label="PCA")
        ax.plot(
            idx, 100 * np.cumsum(ratios), "o-", color="#4c72b0", lw=1, label="SPCA-TV cumulative"
        )
        ax.plot(
            idx[: pca.size],
            100 * np.cumsum(pca),
            "s--",
            color="#777777",
            lw=1,
            label="PCA cumulative",
        )
    ax.set_xticks(idx)
    ax.set_xlabel("component")
    ax.set_ylabel("explained variance (%)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fixed_margins(fig, right=1.7, top=0.2)  # the legend right of the axes
    return fig


def plot_scores(scores):
    """Scores of each sample on each component (strip plot), and components 1 vs 2.

    Parameters
    ----------
    scores : ndarray of shape (n_samples, n_components)

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    scores = np.asarray(scores, dtype=np.float64)
    n_comp = scores.shape[1]
    fig, axes = plt.subplots(
        1, 2 if n_comp > 1 else 1, figsize=(9 if n_comp > 1 else 5, 3.2), squeeze=False
    )
    ax = axes[0, 0]
    jitter = np.random.default_rng(0).uniform(-0.15, 0.15, size=scores.shape[0])
    for k in range(n_comp):
        ax.scatter(k + 1 + jitter, scores[:, k], s=8, alpha=0.7)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xticks(np.arange(1, n_comp + 1))
    ax.set_xlabel("component")
    ax.set_ylabel("score")
    if n_comp > 1:
        ax = axes[0, 1]
        ax.scatter(scores[:, 0], scores[:, 1], s=10, alpha=0.7)
        ax.set_xlabel("component 1")
        ax.set_ylabel("component 2")
        ax.axhline(0, color="grey", lw=0.5)
        ax.axvline(0, color="grey", lw=0.5)
    fixed_margins(fig, right=0.6, top=0.5)  # room for offset texts (e.g. 1e-3) of the axes
    return fig
