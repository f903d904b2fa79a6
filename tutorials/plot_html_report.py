"""
An HTML report of a fitted model
================================

:func:`neurospca.reporting.make_report` turns a fitted :class:`neurospca.SPCATV`
into one self-contained HTML page (figures embedded, no external files): the
model and its hyper-parameters, the data, explained variance, the certified
duality gaps and their convergence, the subjects' scores and every loading
drawn on the brain.

Here the model is fitted on simulated fMRI-like maps in the MNI152 mask, so the
loadings are shown as stat maps and glass brains. Set ``NEUROSPCA_QUICK=1``
for a smaller, faster run.
"""

# %%
# Fit SPCA-TV on maps in the MNI mask
# -----------------------------------
import os
import tempfile

import nibabel as nib
import numpy as np
from nilearn.datasets import load_mni152_brain_mask

import neurospca
from neurospca.datasets import make_fmri_like
from neurospca.reporting import make_report, save_loadings, save_report

QUICK = os.environ.get("NEUROSPCA_QUICK") == "1"
X_sim, patterns, mask = make_fmri_like(n_samples=20 if QUICK else 83, random_state=1)
mask_img = nib.Nifti1Image(
    mask.astype(np.uint8), load_mni152_brain_mask(resolution=3, threshold=0.48).affine
)
imgs = neurospca.unmask(X_sim, mask_img)  # a 4-D image, one volume per map
X, operator, masker = neurospca.load_volume_data(imgs, mask_img)

Xc = X - X.mean(axis=0)
l1_max = np.sqrt((Xc**2).sum(axis=0)).max() / X.shape[0]
model = neurospca.SPCATV(
    n_components=3,
    alpha=l1_max,
    l1_ratio=0.05,
    tv_ratio=0.1,
    operator=operator,
    tol=1e-2 if QUICK else 1e-3,
).fit(X)
print("explained variance ratio:", np.round(model.explained_variance_ratio_, 3))

# %%
# Make and save the report
# ------------------------
# ``space=masker`` tells the report that the columns are voxels of this mask.
outdir = tempfile.mkdtemp(prefix="neurospca_report_")
html = make_report(
    model,
    masker,
    title="SPCA-TV on simulated activation maps",
    data_description={"data": "make_fmri_like (seeded simulation)", "maps": str(X.shape[0])},
)
path = save_report(html, os.path.join(outdir, "report.html"))
print(f"report: {path} ({len(html) / 1e6:.1f} MB, self-contained)")

# the loadings as NIfTI files next to it
written = save_loadings(model.components_, masker, outdir)
print("loadings:", written)

# %%
# Open ``report.html`` in a browser. It carries the numbers shown below.
print("certified duality gaps:", np.round(model.dual_gaps_, 6))
assert "SPCA-TV on simulated activation maps" in html

# %%
# The report's convergence figure
# -------------------------------
# Each figure of the report is also available on its own, e.g. the certified
# duality gap of every v-step along the iterations.
from neurospca.reporting import plot_convergence  # noqa: E402

fig = plot_convergence(model.gap_history_)
