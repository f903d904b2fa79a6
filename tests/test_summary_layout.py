"""The summary figures are laid out with fixed margins (no ``tight_layout``): every label,
tick label, title and legend lies inside the figure and outside the other axes."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from neurospca.reporting.plotting import plot_convergence, plot_explained_variance, plot_scores  # noqa: E402


def _drawn_tick_labels(axis):
    """The labels of the major ticks inside the view (those the draw shows)."""
    lo, hi = sorted(axis.get_view_interval())
    pad = 1e-9 * max(abs(lo), abs(hi), 1e-300)
    pairs = zip(axis.get_majorticklocs(), axis.get_majorticklabels(), strict=True)
    return [t for loc, t in pairs if lo - pad <= loc <= hi + pad and t.get_text()]


def _texts(fig):
    """(axes, bbox) of every visible text and legend of the figure, after a draw."""
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        texts = [ax.title, ax.xaxis.label, ax.yaxis.label]
        texts += _drawn_tick_labels(ax.xaxis) + _drawn_tick_labels(ax.yaxis)
        texts += [ax.yaxis.get_offset_text(), ax.xaxis.get_offset_text()]
        if ax.get_legend() is not None:
            texts.append(ax.get_legend())
        out += [(ax, t.get_window_extent(renderer)) for t in texts if t.get_visible()]
    return [(ax, b) for ax, b in out if b.width > 0 and b.height > 0]


def _check_inside(fig):
    fig.canvas.draw()
    box = fig.bbox
    texts = _texts(fig)
    assert len(texts) >= 6
    for ax, b in texts:
        assert b.x0 >= box.x0 - 0.5 and b.x1 <= box.x1 + 0.5, b
        assert b.y0 >= box.y0 - 0.5 and b.y1 <= box.y1 + 0.5, b
        for other in fig.axes:  # a label never runs into another panel
            if other is not ax:
                assert not b.overlaps(other.bbox), (b, other.bbox)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e5])
def test_scores_labels_inside_the_figure(scale):
    rng = np.random.default_rng(0)
    for k in (1, 3):
        fig = plot_scores(scale * rng.standard_normal((40, k)))
        assert not fig.get_layout_engine()  # no tight layout pass
        _check_inside(fig)


def test_variance_legend_right_of_the_axes_inside_the_figure():
    fig = plot_explained_variance([0.05, 0.016, 0.009], [0.065, 0.03, 0.021])
    _check_inside(fig)
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert legend.x0 > ax.bbox.x1  # outside the bars, right of them


def test_convergence_labels_inside_the_figure():
    hist = [[(i, 10.0 ** (-i / 3)) for i in range(1, 20)] for _ in range(3)]
    fig = plot_convergence(hist, tol=1e-3)
    _check_inside(fig)
    assert fig.axes[0].get_yscale() == "log"


def test_convergence_log_axis_one_plain_label_per_decade_no_minor_ticks():
    hist = [[(i, 10.0 ** (-i / 2)) for i in range(1, 18)]]
    fig = plot_convergence(hist, tol=1e-3)
    fig.canvas.draw()
    axis = fig.axes[0].yaxis
    labels = [t.get_text() for t in _drawn_tick_labels(axis)]
    assert labels and all("$" not in t for t in labels)  # plain text, no mathtext
    values = [float(t) for t in labels]
    steps = np.diff(np.log10(values))
    assert np.allclose(steps, steps[0]) and steps[0] >= 1  # whole decades
    assert len(axis.get_minorticklocs()) == 0
