"""Write the version-1 model files of tests/data/models_v1 (run once with the code of
commit c7223b9; kept so that later code is tested against files it did not write)."""

import sys
import warnings

import nibabel as nib
import numpy as np

from neurospca import (
    SPCATV,
    SSPCA,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
    VolumeMasker,
    icosphere,
    save_model,
    tv_from_hemispheres,
)
from neurospca.datasets import make_tree_patches

out = sys.argv[1]
rng = np.random.default_rng(0)
mask = np.zeros((5, 6, 4), dtype=np.uint8)
mask[1:4, 1:5, 1:3] = 1
affine = np.diag([2.0, 2.5, 3.0, 1.0])
affine[:3, 3] = [-4, 5, 6]
masker = VolumeMasker(nib.Nifti1Image(mask, affine))
X = rng.standard_normal((12, masker.n_features))
m = SPCATV(
    2,
    alpha=0.2,
    l1_ratio=0.1,
    tv_ratio=0.2,
    operator=masker.operator(),
    tol=1e-2,
    max_iter=5,
    random_state=3,
).fit(X)
save_model(
    m,
    f"{out}/spcatv_volume.npz",
    space=masker,
    metadata={"title": "v1 volume", "command": "neurospca fit ...", "n": [1, 2.5]},
)
coords, faces = icosphere(1)
n = coords.shape[0]
op, hemis = tv_from_hemispheres((coords, faces), (coords, faces))
Xs = np.random.default_rng(1).standard_normal((10, 2 * n))
ms = SPCATV(1, alpha_rel=1.0, operator=op, tol=1e-2, max_iter=5).fit(Xs)
save_model(
    ms,
    f"{out}/spcatv_surface.npz",
    space=hemis,
    meshes={
        "left": (coords, faces),
        "right": (coords, faces),
        "bg_left": coords[:, 2],
        "bg_right": coords[:, 1],
    },
)
Xo = np.abs(np.random.default_rng(0).standard_normal((20, 12)))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for cls in (SSPCA, NonnegativeSparsePCA, KTraceNormPCA):
        save_model(cls(n_components=2).fit(Xo), f"{out}/{cls.__name__.lower()}.npz")
    Xt, parent = make_tree_patches(30, random_state=0)
    h = HierarchicalDictionaryLearning(
        parent, n_components=parent.size, lam=0.1, max_iter=3, random_state=0
    ).fit(Xt)
    save_model(h, f"{out}/hierarchicaldictionarylearning.npz")
