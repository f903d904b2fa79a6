"""Seeded instances shared by the tests and the benchmark scripts.

The tests import them from here (``from ._instances import ...``); the
scripts of benchmarks/ through ``benchmarks/_instances.py``, which re-exports
this module (the tests never import from benchmarks/).
"""

import numpy as np

from neurospca._commands import penalties
from neurospca.datasets import make_fmri_like, make_paper_simulation


def simulation_2d(seed=0):
    """The paper's 2D simulation: X (250, 10000), true patterns (3, 10000), mask."""
    return make_paper_simulation(random_state=seed)


def fmri_like(seed=0):
    """fMRI-sized instance: X (83, 64030), patterns (3, 64030), MNI 3 mm mask."""
    return make_fmri_like(random_state=seed)


def example_weights(X):
    """The reference implementation's example penalties:
    ``(l1, l2, tv) = l1_max * (0.05, 1, 0.1)`` with ``l1_max = max_j ||X_j|| / N``
    (one definition, in neurospca._commands.penalties)."""
    return penalties.example_weights(X)


# --------------------------------------------------------------------------
# real maps nobody here made (shipped offline in nilearn / brainspace wheels)
# --------------------------------------------------------------------------


def _fsaverage5_meshes():
    from nilearn.datasets import load_fsaverage

    fs = load_fsaverage("fsaverage5")
    return [
        (
            np.asarray(fs["pial"].parts[h].coordinates, float),
            np.asarray(fs["pial"].parts[h].faces, np.int64),
        )
        for h in ("left", "right")
    ]


def _mesh_smoother(meshes, keep=None):
    """Row-normalised (vertex + neighbours) averaging matrix of both hemispheres."""
    import scipy.sparse as sp

    blocks = []
    for coords, faces in meshes:
        n = coords.shape[0]
        e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
        A = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n)).tocsr()
        A = ((A + A.T) > 0).astype(float) + sp.identity(n, format="csr")
        blocks.append(sp.diags(1.0 / np.asarray(A.sum(1)).ravel()) @ A)
    S = sp.block_diag(blocks, format="csr")
    if keep is not None:
        S = S[keep][:, keep]
    return S


def brainspace_rsfmri(n_samples=None, step=1):
    """brainspace's real resting-state run on fsaverage5 (652 volumes).

    Returns ``X`` (time points x kept vertices), the TV operator of both
    hemispheres (constant, i.e. medial-wall, vertices dropped) and the kept mask.
    ``step`` keeps every ``step``-th time point, ``n_samples`` the first ones.
    """
    import importlib.util
    import os

    import nibabel as nib

    from neurospca import tv_from_hemispheres

    # brainspace.datasets.fetch_timeseries_preprocessing() reads these two files
    # shipped in the wheel; reading them directly avoids importing vtk.
    spec = importlib.util.find_spec("brainspace")
    if spec is None:
        raise ImportError("brainspace is not installed (pip install brainspace)")
    root = os.path.join(os.path.dirname(spec.origin), "datasets", "preprocessing")
    fname = "sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.{}.mgz"
    ts = np.vstack(
        [
            np.asarray(
                nib.load(os.path.join(root, fname.format(h))).get_fdata(), dtype=np.float64
            ).squeeze()
            for h in ("lh", "rh")
        ]
    )
    keep = ts.std(axis=1) > 0
    X = ts[keep].T[::step]
    if n_samples is not None:
        X = X[:n_samples]
    (lc, lf), (rc, rf) = _fsaverage5_meshes()
    n_left = lc.shape[0]
    op, _ = tv_from_hemispheres((lc, lf), (rc, rf), keep[:n_left], keep[n_left:])
    return X, op, keep


def thickness_maps(n_samples=60, seed=0, smooth_steps=20):
    """fsaverage5 real mean thickness map perturbed per subject.

    ``X[i] = thickness * (1 + 0.1 g_i) + 0.05 e_i`` with ``g_i`` an i.i.d.
    Gaussian field averaged ``smooth_steps`` times over mesh neighbourhoods
    (rescaled to sd 1) and ``e_i`` white noise (mm). Vertices of zero
    thickness (medial wall) are dropped.
    """
    from nilearn.datasets import load_fsaverage_data

    from neurospca import tv_from_hemispheres

    thick = load_fsaverage_data(mesh="fsaverage5", mesh_type="pial", data_type="thickness")
    base = np.concatenate(
        [np.asarray(thick.data.parts[h], float).ravel() for h in ("left", "right")]
    )
    keep = base > 0
    meshes = _fsaverage5_meshes()
    S = _mesh_smoother(meshes, keep)
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((int(keep.sum()), n_samples))
    for _ in range(smooth_steps):
        g = S @ g
    g = g.T / g.std()
    X = base[keep] * (1.0 + 0.1 * g) + 0.05 * rng.standard_normal(g.shape)
    n_left = meshes[0][0].shape[0]
    op, _ = tv_from_hemispheres(meshes[0], meshes[1], keep[:n_left], keep[n_left:])
    return X, op, keep


def motor_maps(n_samples=40, seed=0, resolution=2, smooth_sigma=2.0):
    """nilearn's real motor t-map in the MNI152 brain mask, one map per subject.

    ``X[i] = a_i * tmap + smooth noise_i`` with ``a_i ~ N(1, 0.5^2)`` and the
    noise an i.i.d. Gaussian volume smoothed with a Gaussian kernel of
    ``smooth_sigma`` voxels, rescaled to sd 1. Returns ``X``, the TV operator of
    the mask and the mask (bool array).
    """
    import nibabel as nib
    from nilearn.datasets import load_mni152_brain_mask, load_sample_motor_activation_image
    from nilearn.image import resample_to_img
    from scipy.ndimage import gaussian_filter

    from neurospca import tv_from_mask

    mask_img = load_mni152_brain_mask(resolution=resolution)
    tmap = resample_to_img(
        nib.load(load_sample_motor_activation_image()),
        mask_img,
        interpolation="continuous",
        force_resample=True,
        copy_header=True,
    )
    mask = mask_img.get_fdata() > 0
    t = np.nan_to_num(tmap.get_fdata())[mask]
    rng = np.random.default_rng(seed)
    X = np.empty((n_samples, int(mask.sum())))
    amp = 1.0 + 0.5 * rng.standard_normal(n_samples)
    for i in range(n_samples):
        e = gaussian_filter(rng.standard_normal(mask.shape), smooth_sigma)[mask]
        X[i] = amp[i] * t + e / e.std()
    return X, tv_from_mask(mask), mask


def support_regions(component, operator, min_size=1):
    """Number of connected regions of a component's support.

    Two features are neighbours when a row of the operator couples them (TV
    rows are differences of two features). Regions smaller than ``min_size``
    features are not counted.
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    on = np.flatnonzero(component != 0)
    if on.size == 0:
        return 0
    A = operator.matrix
    G = (abs(A).T @ abs(A)).tocsr()[on][:, on]
    G = sp.csr_matrix(G)
    _, labels = connected_components(G, directed=False)
    sizes = np.bincount(labels)
    return int(np.sum(sizes >= min_size))
