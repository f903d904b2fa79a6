"""Two hemispheres as one problem: columns <-> per-hemisphere vertex maps."""

import numpy as np

from ._io import write_surf_data
from ._validation import _HEMIS, _check_mask

__all__ = ["Hemispheres"]


class Hemispheres:
    """Columns of a two-hemisphere problem <-> per-hemisphere vertex maps.

    Columns are the kept vertices of the left hemisphere (in vertex order)
    then those of the right hemisphere.

    Parameters
    ----------
    n_vertices : (int, int)
        Vertices of the left and right meshes.
    masks : (array-like of bool or None, array-like of bool or None), optional
        Kept vertices of each hemisphere (None keeps all).

    Attributes
    ----------
    n_vertices : tuple of int
    vertices : tuple of ndarray of int64
        Kept vertex indices of each hemisphere; column ``j`` of the left block
        is vertex ``vertices[0][j]``.
    slices : tuple of slice
        Columns of each hemisphere.
    n_features : int
    """

    def __init__(self, n_vertices, masks=(None, None)):
        if len(n_vertices) != 2 or len(masks) != 2:
            raise ValueError("n_vertices and masks must each have two entries (left, right).")
        verts = []
        for hemi, n, m in zip(_HEMIS, n_vertices, masks, strict=True):
            m = _check_mask(m, int(n), f"mask_{hemi}", f"coords_{hemi}")
            verts.append(
                np.arange(int(n), dtype=np.int64)
                if m is None
                else np.flatnonzero(m).astype(np.int64)
            )
        self.n_vertices = (int(n_vertices[0]), int(n_vertices[1]))
        self.vertices = tuple(verts)
        n_left = verts[0].size
        self.slices = (slice(0, n_left), slice(n_left, n_left + verts[1].size))
        self.n_features = n_left + verts[1].size

    def __repr__(self):
        return (
            f"Hemispheres(n_vertices={self.n_vertices}, "
            f"kept=({self.vertices[0].size}, {self.vertices[1].size}))"
        )

    def _hemi_matrix(self, values, hemi_index, name):
        n = self.n_vertices[hemi_index]
        arr = np.asarray(values, dtype=np.float64)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != n:
            raise ValueError(
                f"{name} must have shape (n_samples, {n}) or ({n},): one value per "
                f"vertex of the {_HEMIS[hemi_index]} hemisphere, got {np.shape(values)}."
            )
        return arr

    def transform(self, left, right):
        """Data matrix from per-hemisphere maps.

        Parameters
        ----------
        left, right : array-like of shape (n_samples, n_vertices) or (n_vertices,)
            Subject-major (one row per subject).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        lm = self._hemi_matrix(left, 0, "left")
        rm = self._hemi_matrix(right, 1, "right")
        if lm.shape[0] != rm.shape[0]:
            raise ValueError(
                f"left has {lm.shape[0]} samples but right has {rm.shape[0]}; both "
                "hemispheres need one map per subject."
            )
        return np.ascontiguousarray(
            np.concatenate([lm[:, self.vertices[0]], rm[:, self.vertices[1]]], axis=1)
        )

    def inverse_transform(self, V, fill_value=0.0):
        """Per-hemisphere vertex maps of a vector or of the rows of a matrix.

        Parameters
        ----------
        V : array-like of shape (n_features,) or (n_components, n_features)
            E.g. ``SPCATV.components_``.
        fill_value : float, default=0.0
            Value at masked vertices (``np.nan`` hides them in plots).

        Returns
        -------
        dict
            ``{"left": ..., "right": ...}``, each of shape (n_vertices,) or
            (n_vertices, n_components) (vertex-major, as nilearn and GIFTI).
        """
        V = np.asarray(V, dtype=np.float64)
        if V.ndim not in (1, 2) or V.shape[-1] != self.n_features:
            raise ValueError(
                f"V must have shape ({self.n_features},) or (n_components, "
                f"{self.n_features}), got {V.shape}."
            )
        out = {}
        for h, hemi in enumerate(_HEMIS):
            block = V[..., self.slices[h]]
            shape = (self.n_vertices[h],) + ((V.shape[0],) if V.ndim == 2 else ())
            full = np.full(shape, fill_value, dtype=np.float64)
            full[self.vertices[h]] = block.T if V.ndim == 2 else block
            out[hemi] = full
        return out

    def save(self, V, left_path, right_path, *, fill_value=0.0):
        """Write the maps of :meth:`inverse_transform` per hemisphere.

        Parameters
        ----------
        V : array-like of shape (n_features,) or (n_components, n_features)
        left_path, right_path : str or os.PathLike
            ``.gii``/``.gii.gz``, ``.mgh``/``.mgz`` (see :func:`write_surf_data`).
        fill_value : float, default=0.0

        Returns
        -------
        (str, str)
        """
        maps = self.inverse_transform(V, fill_value=fill_value)
        return (
            write_surf_data(maps["left"], left_path),
            write_surf_data(maps["right"], right_path),
        )

    def to_surface_image(self, V, mesh, fill_value=0.0):
        """A nilearn ``SurfaceImage`` of the maps on ``mesh`` (nilearn needed).

        Parameters
        ----------
        V : array-like of shape (n_features,) or (n_components, n_features)
        mesh : nilearn PolyMesh or dict
            E.g. ``nilearn.datasets.load_fsaverage("fsaverage5")["pial"]``.
        fill_value : float, default=0.0

        Returns
        -------
        nilearn.surface.SurfaceImage
            One data column per row of ``V`` on each hemisphere.
        """
        try:
            from nilearn.surface import SurfaceImage
        except ImportError:  # pragma: no cover
            raise ImportError("to_surface_image needs nilearn: pip install nilearn.") from None
        return SurfaceImage(mesh=mesh, data=self.inverse_transform(V, fill_value))
