"""Where a loading lies: peak coordinates, clusters and atlas labels.

- :func:`peak_coordinates`: the largest-magnitude loading of a component, as
  world coordinates in mm (volumes: voxel index mapped by the mask's affine)
  or as hemisphere, vertex index and xyz (surfaces).
- :func:`cluster_table`: connected components of the non-zero support,
  positive and negative loadings apart (volumes: :func:`scipy.ndimage.label`
  on the mask's grid, 6-, 18- or 26-connectivity; surfaces: connected
  components of the mesh graph restricted to the support), largest first.
- :func:`load_atlas`: an atlas (labelled NIfTI on the mask's grid, or a pair of
  FreeSurfer ``.annot`` / GIFTI label / integer arrays for the hemispheres) as
  one label per feature, to name peaks and clusters.

Everything here needs only numpy, scipy and nibabel.
"""

import numpy as np
import scipy.sparse as sp
from scipy import ndimage
from scipy.sparse.csgraph import connected_components

from ..masking import VolumeMasker
from ..surface import Hemispheres, mesh_edges
from ._atlases import Atlas, load_atlas

__all__ = [
    "Atlas",
    "Cluster",
    "Peak",
    "anatomical_coords",
    "cluster_table",
    "coordinate_source",
    "load_atlas",
    "peak_coordinates",
    "vertex_areas",
]

_HEMIS = ("left", "right")
_CONNECTIVITY = {6: 1, 18: 2, 26: 3}


def _coord(c):
    """A coordinate as an integer when it is one (to 0.05), else with one decimal."""
    c = float(c)
    return f"{c:.0f}" if abs(c - round(c)) < 0.05 else f"{c:.1f}"


class Peak:
    """The largest-magnitude loading of a component.

    Attributes
    ----------
    feature : int
        Column of the model.
    value : float
        The loading there (signed).
    ijk : tuple of int or None
        Voxel index (volumes).
    xyz : tuple of float or None
        World coordinates in mm (volumes) or mesh coordinates (surfaces).
    hemi : {"left", "right"} or None
    vertex : int or None
        Vertex index in its hemisphere's mesh (surfaces).
    """

    def __init__(self, feature, value, ijk=None, xyz=None, hemi=None, vertex=None):
        self.feature = int(feature)
        self.value = float(value)
        self.ijk = ijk
        self.xyz = xyz
        self.hemi = hemi
        self.vertex = vertex

    def describe(self):
        """Short text: ``(x, y, z) mm`` or ``left vertex 123 (x, y, z)``."""
        xyz = None if self.xyz is None else "(" + ", ".join(_coord(c) for c in self.xyz) + ")"
        if self.ijk is not None:
            return f"{xyz} mm"
        if self.hemi is not None:
            return f"{self.hemi} vertex {self.vertex}" + (f" {xyz}" if xyz else "")
        return f"feature {self.feature}"

    def __repr__(self):
        return f"Peak({self.describe()}, value={self.value:.4g})"


class Cluster:
    """One connected set of same-sign non-zero loadings.

    Attributes
    ----------
    sign : {"+", "-"}
    features : ndarray of int
        Columns of the model in the cluster.
    size : int
        Voxels or vertices.
    volume_mm3 : float or None
        Volumes only.
    area_mm2 : float or None
        Surfaces with anatomical ``surface_coords`` only: the summed vertex
        areas (a third of each adjacent triangle's area).
    peak : Peak
        Its largest-magnitude loading.
    mean : float
        Mean loading over the cluster (signed).
    """

    def __init__(self, sign, features, size, volume_mm3, peak, mean, area_mm2=None):
        self.sign = sign
        self.area_mm2 = area_mm2
        self.features = features
        self.size = int(size)
        self.volume_mm3 = volume_mm3
        self.peak = peak
        self.mean = float(mean)

    def __repr__(self):
        return f"Cluster({self.sign}, size={self.size}, peak={self.peak.describe()})"


def _voxel_to_mm(affine, ijk):
    affine = np.asarray(affine, dtype=np.float64)
    return tuple(
        float(c) for c in affine[:3, :3] @ np.asarray(ijk, dtype=np.float64) + affine[:3, 3]
    )


def anatomical_coords(meshes):
    """The ``"anat_left"``/``"anat_right"`` coordinates of a meshes dict, or None.

    Parameters
    ----------
    meshes : dict or None
        Drawn meshes; ``anat_<hemi>`` holds the anatomical (white or pial)
        coordinates of the same vertices when the drawn mesh is inflated.

    Returns
    -------
    (ndarray, ndarray) or None
    """
    if meshes is None or "anat_left" not in meshes or "anat_right" not in meshes:
        return None
    return tuple(np.asarray(meshes[f"anat_{h}"], dtype=np.float64) for h in _HEMIS)


def coordinate_source(meshes, surface_coords):
    """Which coordinates a surface peak's xyz are: "given", "anatomical" or "drawn".

    ``"given"``: ``surface_coords``; ``"anatomical"``: the meshes' ``anat_<hemi>``
    coordinates (the white or pial mesh of the fit, drawn on an inflated one);
    ``"drawn"``: the coordinates of the meshes drawn; None without meshes.
    """
    if surface_coords is not None:
        return "given"
    if anatomical_coords(meshes) is not None:
        return "anatomical"
    return None if meshes is None else "drawn"


def _hemi_coords(space, meshes, surface_coords):
    """Per hemisphere, the coordinates used for xyz (or None): ``surface_coords``, else
    the meshes' anatomical coordinates, else the drawn meshes' coordinates."""
    if surface_coords is None:
        surface_coords = anatomical_coords(meshes)
    if surface_coords is not None:
        if len(surface_coords) != 2:
            raise ValueError(
                "surface_coords must be a pair (left, right) of coordinate "
                "arrays of shape (n_vertices, 3)."
            )
        out = []
        for h, c in enumerate(surface_coords):
            c = np.asarray(c, dtype=np.float64)
            if c.shape != (space.n_vertices[h], 3):
                raise ValueError(
                    f"surface_coords[{h}] ({_HEMIS[h]}) has shape {c.shape}, "
                    f"expected ({space.n_vertices[h]}, 3)."
                )
            out.append(c)
        return out
    if meshes is None:
        return [None, None]
    return [np.asarray(meshes[h][0], dtype=np.float64) for h in _HEMIS]


def _feature_peak(space, g, value, hemi_coords=None):
    if isinstance(space, VolumeMasker):
        ijk = tuple(int(i) for i in np.argwhere(space.mask)[g])
        return Peak(g, value, ijk=ijk, xyz=_voxel_to_mm(space.mask_img.affine, ijk))
    if isinstance(space, Hemispheres):
        h = 0 if g < space.slices[0].stop else 1
        vertex = int(space.vertices[h][g - space.slices[h].start])
        coords = None if hemi_coords is None else hemi_coords[h]
        xyz = None if coords is None else tuple(float(c) for c in coords[vertex])
        return Peak(g, value, xyz=xyz, hemi=_HEMIS[h], vertex=vertex)
    return Peak(g, value)


def peak_coordinates(component, space=None, *, meshes=None, surface_coords=None):
    """Where a component's largest-magnitude loading lies.

    Parameters
    ----------
    component : array-like of shape (n_features,)
    space : VolumeMasker, Hemispheres or None
    meshes : dict, optional
        ``{"left": (coords, faces), "right": (coords, faces)}`` (surfaces): the
        xyz of the peak vertex are read from these coordinates...
    surface_coords : (ndarray, ndarray), optional
        ...unless anatomical coordinates (e.g. pial or white) of each
        hemisphere's vertices are given here.

    Returns
    -------
    Peak or None
        None for an all-zero component.
    """
    comp = np.asarray(component, dtype=np.float64).ravel()
    if not np.any(comp):
        return None
    g = int(np.argmax(np.abs(comp)))
    coords = _hemi_coords(space, meshes, surface_coords) if isinstance(space, Hemispheres) else None
    return _feature_peak(space, g, comp[g], coords)


def vertex_areas(coords, faces):
    """Area attributed to each vertex: a third of each adjacent triangle's area.

    Parameters
    ----------
    coords : ndarray of shape (n_vertices, 3)
    faces : ndarray of shape (n_faces, 3)

    Returns
    -------
    ndarray of shape (n_vertices,)
        Sums to the mesh's area.
    """
    coords = np.asarray(coords, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    cross = np.cross(
        coords[faces[:, 1]] - coords[faces[:, 0]], coords[faces[:, 2]] - coords[faces[:, 0]]
    )
    third = np.linalg.norm(cross, axis=1) / 6.0
    return np.bincount(faces.ravel(), weights=np.repeat(third, 3), minlength=coords.shape[0])


def _cluster_from_features(space, comp, feats, sign, hemi_coords, area=None):
    vals = comp[feats]
    j = int(np.argmax(np.abs(vals)))
    peak = _feature_peak(space, int(feats[j]), vals[j], hemi_coords)
    return Cluster(sign, feats, feats.size, None, peak, vals.mean(), area)


def _volume_clusters(comp, masker, connectivity):
    if connectivity not in _CONNECTIVITY:
        raise ValueError(f"connectivity must be 6, 18 or 26 for volumes, got {connectivity!r}.")
    structure = ndimage.generate_binary_structure(3, _CONNECTIVITY[connectivity])
    index = np.full(masker.mask.shape, -1, dtype=np.int64)
    index[masker.mask] = np.arange(masker.n_features)
    values = np.zeros(masker.mask.shape)
    values[masker.mask] = comp
    voxel_mm3 = float(abs(np.linalg.det(np.asarray(masker.mask_img.affine)[:3, :3])))
    ijk_all = np.argwhere(masker.mask)
    out = []
    for sign, on in (("+", values > 0), ("-", values < 0)):
        labels, n = ndimage.label(on, structure=structure)
        if n == 0:
            continue
        feat_labels = labels[masker.mask]
        order = np.argsort(feat_labels, kind="stable")
        bounds = np.searchsorted(feat_labels[order], np.arange(1, n + 2))
        for c in range(n):
            feats = order[bounds[c] : bounds[c + 1]]
            vals = comp[feats]
            j = int(np.argmax(np.abs(vals)))
            ijk = tuple(int(i) for i in ijk_all[feats[j]])
            peak = Peak(
                int(feats[j]), vals[j], ijk=ijk, xyz=_voxel_to_mm(masker.mask_img.affine, ijk)
            )
            out.append(Cluster(sign, feats, feats.size, feats.size * voxel_mm3, peak, vals.mean()))
    return out


def _surface_clusters(comp, space, meshes, hemi_coords, with_area):
    out = []
    for h, hemi in enumerate(_HEMIS):
        faces = np.asarray(meshes[hemi][1], dtype=np.int64)
        n = space.n_vertices[h]
        areas = vertex_areas(hemi_coords[h], faces) if with_area else None
        verts = space.vertices[h]
        full = np.zeros(n)
        full[verts] = comp[space.slices[h]]
        col = np.full(n, -1, dtype=np.int64)
        col[verts] = np.arange(space.slices[h].start, space.slices[h].stop)
        a, b = mesh_edges(faces, n)
        for sign, on in (("+", full > 0), ("-", full < 0)):
            if not on.any():
                continue
            keep = on[a] & on[b]
            graph = sp.coo_matrix((np.ones(int(keep.sum())), (a[keep], b[keep])), shape=(n, n))
            _, labels = connected_components(graph, directed=False)
            sel = np.flatnonzero(on)
            lab = labels[sel]
            for value in np.unique(lab):
                verts = sel[lab == value]
                area = None if areas is None else float(areas[verts].sum())
                out.append(_cluster_from_features(space, comp, col[verts], sign, hemi_coords, area))
    return out


def cluster_table(
    component, space, *, meshes=None, surface_coords=None, connectivity=26, support=None
):
    """Connected clusters of a component's non-zero loadings, largest first.

    Positive and negative loadings form separate clusters. With ``support``
    (e.g. ``SPCATV.certified_support_[k]``), only those loadings are
    clustered: uncertain loadings, which may be zero at the optimum, never
    form a cluster.

    Parameters
    ----------
    component : array-like of shape (n_features,)
    space : VolumeMasker or Hemispheres
    meshes : dict, optional
        ``{"left": (coords, faces), "right": (coords, faces)}``; required for
        surfaces (the faces give the graph).
    surface_coords : (ndarray, ndarray), optional
        Anatomical coordinates (e.g. pial or white) for the peaks' xyz
        (surfaces; default the meshes' ``anat_left``/``anat_right``, else the
        drawn meshes'); with anatomical coordinates, each cluster's area in
        mm^2 is given too (never from the drawn, possibly inflated, meshes).
    connectivity : {6, 18, 26}, default=26
        Voxel neighbourhood (volumes): faces, faces and edges, or faces, edges
        and corners.
    support : array-like of bool, shape (n_features,), optional
        The loadings to cluster (default: every non-zero loading).

    Returns
    -------
    list of Cluster
        Sorted by size (largest first), then by peak magnitude.

    Raises
    ------
    ValueError
        If ``connectivity`` is not 6, 18 or 26, if the component or ``support``
        does not have ``space.n_features`` entries, or (surfaces) if
        ``meshes`` is missing.
    TypeError
        If ``space`` is neither a VolumeMasker nor a Hemispheres.
    """
    comp = np.asarray(component, dtype=np.float64).ravel()
    if not isinstance(space, (VolumeMasker, Hemispheres)):
        raise TypeError(
            f"space must be a VolumeMasker or a Hemispheres, got {type(space).__name__}."
        )
    if comp.size != space.n_features:
        raise ValueError(
            f"component has {comp.size} entries but space has {space.n_features} features."
        )
    if support is not None:
        support = np.asarray(support)
        if support.dtype != bool or support.shape != comp.shape:
            raise ValueError(
                f"support must be a boolean array of shape {comp.shape}, got "
                f"{support.dtype} of shape {support.shape}."
            )
        comp = np.where(support, comp, 0.0)
    if isinstance(space, VolumeMasker):
        clusters = _volume_clusters(comp, space, connectivity)
    else:
        if meshes is None:
            raise ValueError(
                "meshes are needed for the clusters of a surface component "
                "(the mesh edges give the neighbourhoods)."
            )
        clusters = _surface_clusters(
            comp,
            space,
            meshes,
            _hemi_coords(space, meshes, surface_coords),
            with_area=coordinate_source(meshes, surface_coords) in ("given", "anatomical"),
        )
    clusters.sort(key=lambda c: (-c.size, -abs(c.peak.value)))
    return clusters
