"""Meshes: FreeSurfer/GIFTI/MGH I/O, cortex masks and the mesh TV operator.

Cortical maps live on triangulated surfaces: ``coords`` (V x 3 vertex
positions) and ``faces`` (F x 3 vertex indices). :func:`tv_from_mesh` builds
the structure operator of the SPCA-TV paper (section II-C2) in one of two
kinds:

``kind="edges"`` (default)
    Every undirected edge ``{a, b}`` of the mesh (``a < b``) gives one
    difference row ``v[b] - v[a]``, assigned to its lower vertex ``a``; group
    ``g`` holds the rows assigned to vertex ``g`` (at most its degree, <= 7 on
    FreeSurfer meshes). ``A^T A`` is the graph Laplacian, so
    ``||A||^2 <= 2 * max degree``. On a triangulated grid whose vertices are
    numbered in C order these are the grid's forward differences plus one
    diagonal per square.

``kind="gradient"``
    The gradient of the piecewise-linear interpolant on each triangle ``t``,
    three rows (the x, y, z components) scaled by the triangle's area, so that

    .. math::

        \\sum_t \\|A_t v\\|_2 = \\sum_t \\mathrm{area}_t \\, |\\nabla v_h|_t
        = \\int_S |\\nabla v_h| \\, dA ,

    the exact total variation of the interpolant, which converges to
    :math:`\\int |\\nabla f| dA` as the mesh is refined (second order on
    spheres: ``f = z`` on the unit sphere gives :math:`\\pi^2`). Group =
    triangle. The rows are weighted by the area itself, not its square root:
    ``sqrt(area)`` rows would sum to :math:`\\sum_t \\sqrt{a_t} |\\nabla v_h|_t`,
    which has no continuous limit (it diverges under refinement). ``norm2`` is
    a Gershgorin bound of ``A^T A`` (the area-weighted cotangent Laplacian).

Two hemispheres form one problem through :func:`tv_from_hemispheres`: a
block-diagonal operator whose columns are the kept left vertices then the kept
right vertices, and a :class:`Hemispheres` mapping back to per-hemisphere maps.

Modules (one job each; everything public is re-exported here):

- ``_validation``: checks of meshes and masks (``check_plot_mesh``);
- ``_operators``: ``tv_from_mesh``, ``mesh_edges``, ``block_diag_operators``,
  ``tv_from_hemispheres``;
- ``_icosphere``: ``icosphere`` (test and benchmark meshes);
- ``_io``: FreeSurfer/GIFTI/MGH reading and writing, ``load_cortex_mask``;
- ``_hemispheres``: ``Hemispheres``;
- ``_loading``: per-subject maps of two hemispheres (``load_surface_subjects``,
  ``load_surface_image``).

Fitting images (``fit_surfaces``, ``ImageSPCATV``) lives one layer up, in
:mod:`neurospca.image`. nilearn is never imported at module level.
"""

from ._hemispheres import Hemispheres
from ._icosphere import icosphere
from ._io import (
    MEDIAL_WALL_NAMES,
    load_cortex_mask,
    load_surf_data,
    load_surf_mesh,
    write_surf_data,
    write_surf_mesh,
)
from ._loading import load_surface_data, load_surface_image, load_surface_subjects
from ._operators import block_diag_operators, mesh_edges, tv_from_hemispheres, tv_from_mesh
from ._validation import check_plot_mesh

__all__ = [
    "Hemispheres",
    "MEDIAL_WALL_NAMES",
    "block_diag_operators",
    "check_plot_mesh",
    "icosphere",
    "load_cortex_mask",
    "load_surf_data",
    "load_surf_mesh",
    "load_surface_data",
    "load_surface_image",
    "load_surface_subjects",
    "mesh_edges",
    "tv_from_hemispheres",
    "tv_from_mesh",
    "write_surf_data",
    "write_surf_mesh",
]
