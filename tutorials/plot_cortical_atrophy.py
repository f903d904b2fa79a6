"""
Cortical-thickness atrophy patterns on fsaverage5
=================================================

The SPCA-TV paper's third experiment (section III-C) looks for patterns of
cortical atrophy in thickness maps on the FreeSurfer template. This tutorial
runs the same analysis offline on simulated subjects on fsaverage5
(nilearn's bundled meshes, 2 x 10,242 vertices): thickness = fsaverage's mean
thickness minus three smooth atrophy patterns (medial temporal, prefrontal,
precuneus) weighted by subject severities, plus noise.

The TV penalty on a mesh couples each vertex with its neighbours on the
surface: :func:`neurospca.tv_from_hemispheres` builds it for both
hemispheres (block-diagonal, one difference per mesh edge).

Set ``NEUROSPCA_QUICK=1`` for a smaller, faster run.
"""

# %%
# Simulated thickness maps
# ------------------------
import os

import numpy as np

import neurospca
from neurospca.datasets import make_cortical_atrophy

QUICK = os.environ.get("NEUROSPCA_QUICK") == "1"
data = make_cortical_atrophy(n_samples=40 if QUICK else 133, noise=0.3, random_state=0)
n_left, n_right = data.n_vertices
left_maps, right_maps = data.X[:, :n_left], data.X[:, n_left:]
print(f"{data.X.shape[0]} subjects, {n_left} + {n_right} vertices")

# %%
# TV operator of the two hemispheres
# ----------------------------------
# The pial surfaces define the neighbourhoods. ``hemispheres`` maps the
# per-hemisphere maps to the columns of ``X`` and back.
operator, hemispheres = neurospca.tv_from_hemispheres(data.mesh_left, data.mesh_right)
X = hemispheres.transform(left_maps, right_maps)
print("X:", X.shape, "| TV groups:", operator.n_groups)

# %%
# ElasticNet PCA and SPCA-TV
# --------------------------
# Two settings with about the same sparsity (~95 % zero vertices): without the
# TV penalty (ElasticNet PCA, which needs a larger l1 weight to get there) and
# with it.
Xc = X - X.mean(axis=0)
l1_max = np.sqrt((Xc**2).sum(axis=0)).max() / X.shape[0]
common = dict(n_components=3, alpha=l1_max, operator=operator, tol=1e-2 if QUICK else 1e-3)
settings = {
    "ElasticNet PCA": dict(l1_ratio=0.3, tv_ratio=0.0),
    "SPCA-TV": dict(l1_ratio=0.1, tv_ratio=0.3),
}
enet = neurospca.SPCATV(**settings["ElasticNet PCA"], **common).fit(X)
spcatv = neurospca.SPCATV(**settings["SPCA-TV"], **common).fit(X)
for name, est in (("ElasticNet PCA", enet), ("SPCA-TV", spcatv)):
    _, _, cos = neurospca.match_components(data.patterns, est)
    print(
        f"{name:15s} |cos| with the truth {np.round(cos, 2)}, "
        f"MSE {neurospca.mse_to_truth(est, data.patterns):.3f}, "
        f"zeros {np.round((est.components_ == 0).mean(1), 2)}, "
        f"TV of the loadings {[round(operator.value(c), 2) for c in est.components_]}"
    )

# %%
# Stability across halves of the sample
# -------------------------------------
# The paper's stability measure: Dice index of the supports of loadings fitted
# on different subsets of subjects (components matched by absolute cosine).
halves = (np.arange(X.shape[0]) % 2 == 0, np.arange(X.shape[0]) % 2 == 1)
for name, params in settings.items():
    fits = [neurospca.SPCATV(**params, **common).fit(X[h]) for h in halves]
    print(f"{name:15s} Dice between halves: {np.round(neurospca.pairwise_dice(fits)[0], 2)}")

# %%
# Loadings on the inflated surface
# --------------------------------
# ``hemispheres.inverse_transform`` gives one map per hemisphere; nilearn
# draws them on the inflated mesh.
import matplotlib.pyplot as plt  # noqa: E402
from nilearn import plotting  # noqa: E402

maps = hemispheres.inverse_transform(spcatv.components_)
order, signs, _ = neurospca.match_components(data.patterns, spcatv)
k = int(order[0])
fig = plotting.plot_surf_stat_map(
    data.inflated_left,
    signs[0] * maps["left"][:, k],
    hemi="left",
    view="medial",
    title="SPCA-TV: medial temporal",
    colorbar=True,
)
if not QUICK:
    plt.show()
