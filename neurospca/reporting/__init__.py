"""Loadings back on the brain: image files, figures and the HTML report.

matplotlib, nilearn, jinja2 and pyvista are imported only when a figure or a
report is made (``pip install "neurospca[report]"``).
"""

from ._png import FigureCache
from ._report_jobs import report_job, stop_worker
from ._warmup import prepare_report_worker, start_warm_up, wait_warm_up
from .anatomy import cluster_table, load_atlas, peak_coordinates
from .export import FIGURE_FORMATS, plot_component, save_figures
from .images import loadings_to_nifti, loadings_to_surface, save_loadings
from .plotting import (
    plot_convergence,
    plot_explained_variance,
    plot_scores,
    plot_surface_component,
    plot_volume_component,
    pyvista_available,
    surface_background,
)
from .report import HTMLReport, component_scores, library_versions, make_report, save_report

__all__ = [
    "FIGURE_FORMATS",
    "FigureCache",
    "HTMLReport",
    "cluster_table",
    "component_scores",
    "library_versions",
    "load_atlas",
    "loadings_to_nifti",
    "loadings_to_surface",
    "make_report",
    "peak_coordinates",
    "plot_convergence",
    "plot_component",
    "plot_explained_variance",
    "plot_scores",
    "plot_surface_component",
    "plot_volume_component",
    "prepare_report_worker",
    "report_job",
    "pyvista_available",
    "save_figures",
    "save_loadings",
    "save_report",
    "start_warm_up",
    "stop_worker",
    "surface_background",
    "wait_warm_up",
]
