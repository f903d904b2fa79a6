"""
SPCA-TV on fMRI activation maps
===============================

The SPCA-TV paper's second experiment (section III-B) extracts three components
from 83 activation maps of 63,966 voxels. This tutorial runs the same pipeline
offline on simulated maps in nilearn's MNI152 3 mm brain mask (64,030 voxels):

1. write the maps and the mask as NIfTI files (as they would come from a
   first-level analysis),
2. load them with :func:`neurospca.load_volume_data`, which returns the data
   matrix ``X``, the TV operator of the mask and a masker,
3. fit :class:`neurospca.SPCATV`, check the loadings against the truth and
   the held-out reconstruction error,
4. write the loadings back to a 4-D NIfTI image and plot them.

Set ``NEUROSPCA_QUICK=1`` for a smaller, faster run.
"""

# %%
# Simulated activation maps, written as NIfTI files
# -------------------------------------------------
import os
import tempfile

import nibabel as nib
import numpy as np

import neurospca
from neurospca.datasets import make_fmri_like

QUICK = os.environ.get("NEUROSPCA_QUICK") == "1"
n_samples = 24 if QUICK else 83

X_sim, patterns, mask = make_fmri_like(n_samples=n_samples, noise=1.0, random_state=0)
print(f"{X_sim.shape[0]} maps, {X_sim.shape[1]} voxels in the mask")

# the MNI 3 mm grid: same affine as nilearn's template
from nilearn.datasets import load_mni152_brain_mask  # noqa: E402

mask_img = load_mni152_brain_mask(resolution=3, threshold=0.48)
affine = mask_img.affine
workdir = tempfile.mkdtemp(prefix="neurospca_fmri_")
mask_path = os.path.join(workdir, "mask.nii.gz")
nib.save(nib.Nifti1Image(mask.astype(np.uint8), affine), mask_path)
map_paths = []
for i, row in enumerate(X_sim):
    path = os.path.join(workdir, f"sub-{i:02d}_stat.nii.gz")
    nib.save(neurospca.unmask(row, mask_path), path)  # a 3-D image on the mask's grid
    map_paths.append(path)
print(f"wrote {len(map_paths)} maps and the mask to {workdir}")

# %%
# From NIfTI files to a data matrix and a TV operator
# ---------------------------------------------------
# :func:`neurospca.load_volume_data` checks that every map lies on the mask's
# grid, extracts the in-mask voxels (one row per map) and builds the TV
# operator of the mask (forward differences between neighbouring voxels).
X, operator, masker = neurospca.load_volume_data(map_paths, mask_path)
print("X:", X.shape, "| TV operator:", operator.matrix.shape, "rows x columns")

# hold out a quarter of the maps to measure the reconstruction error
n_test = n_samples // 4
X_train, X_test = X[:-n_test], X[-n_test:]

# %%
# Fitting SPCA-TV
# ---------------
# ``alpha`` is absolute: it is set relative to ``l1_max = max_j ||X_j|| / N``,
# the smallest l1 weight that zeroes every loading of ElasticNet PCA.
Xc = X_train - X_train.mean(axis=0)
l1_max = np.sqrt((Xc**2).sum(axis=0)).max() / X_train.shape[0]
model = neurospca.SPCATV(
    n_components=3,
    alpha=l1_max,
    l1_ratio=0.05,
    tv_ratio=0.1,
    operator=operator,
    tol=1e-2 if QUICK else 1e-3,
)
model.fit(X_train)
print(f"fitted in {model.fit_time_:.1f} s; certified gaps {np.round(model.dual_gaps_, 6)}")
print("explained variance ratio:", np.round(model.explained_variance_ratio_, 3))
print("fraction of zero voxels per loading:", np.round((model.components_ == 0).mean(1), 3))

# %%
# How good are the loadings?
# --------------------------
# Components come in any order and sign: they are matched to the true
# patterns by absolute cosine. The held-out reconstruction error is compared
# with that of plain PCA.
from sklearn.decomposition import PCA  # noqa: E402

order, signs, cosines = neurospca.match_components(patterns, model)
print("|cos| with the true patterns:", np.round(cosines, 3))
print(
    "MSE to the truth (0 = perfect, 2 = orthogonal):",
    round(neurospca.mse_to_truth(model, patterns), 3),
)
pca = PCA(3).fit(X_train)
print("MSE to the truth of PCA:", round(neurospca.mse_to_truth(pca, patterns), 3))
error_spcatv = neurospca.reconstruction_error(X_test, model)
error_pca = neurospca.reconstruction_error(X_test, pca)
print(f"test reconstruction error: SPCA-TV {error_spcatv:.1f}, PCA {error_pca:.1f}")

# %%
# Loadings back to NIfTI
# ----------------------
loadings_img = masker.inverse_transform(model.components_)
loadings_path = os.path.join(workdir, "spcatv_loadings.nii.gz")
nib.save(loadings_img, loadings_path)
print("loadings image:", loadings_img.shape, "->", loadings_path)

# %%
# Plot the first loading
# ----------------------
from nilearn import image, plotting  # noqa: E402

first = image.index_img(loadings_img, int(order[0]))
display = plotting.plot_stat_map(
    first, title="SPCA-TV loading matched to pattern 1", display_mode="ortho", colorbar=True
)
if not QUICK:
    plotting.show()
