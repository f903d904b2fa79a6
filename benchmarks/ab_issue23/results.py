"""Issue 23: fit each estimator (and each public function) on fixed inputs; save the arrays.

PYTHONPATH=/work/wt-base python results.py old.npz
PYTHONPATH=. python results.py new.npz
python compare.py old.npz new.npz
"""

import sys
import warnings

import numpy as np

import neurospca as ns
from neurospca import (
    SPCATV,
    SSPCA,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
    balanced_tree,
    grid_halfspace_groups,
)
from neurospca.decomposition import ktrace_pca, nspca, spca_tv, sspca, tree_sparse_coding

warnings.simplefilter("ignore")
out = {}
rng = np.random.default_rng(0)
X1 = rng.standard_normal((40, 60))
X1[:, 10:20] += 2 * rng.standard_normal((40, 1))
X2 = rng.standard_normal((40, 36))
X2[:, :9] += 2 * rng.standard_normal((40, 1))
X3 = np.abs(rng.standard_normal((60, 15))) @ np.abs(rng.standard_normal((15, 15)))
a = np.zeros(12)
a[:3] = 1 / np.sqrt(3)
X4 = rng.standard_normal((200, 1)) * 2 * a + 0.1 * rng.standard_normal((200, 12))
X5 = rng.standard_normal((50, 16))


def put(name, est, X):
    est.fit(X)
    out[name + ".components"] = est.components_
    out[name + ".transform"] = est.transform(X)
    for attr in (
        "scores_",
        "explained_variance_ratio_",
        "dual_gaps_",
        "objective_history_",
        "mean_",
    ):
        v = getattr(est, attr, None)
        if v is not None:
            out[name + "." + attr] = np.asarray(v, dtype=float)
    out[name + ".n_iter"] = np.asarray(est.n_iter_)


put("spcatv_fixed", SPCATV(3, alpha=0.1), X1)
put("spcatv_defl", SPCATV(2, alpha=0.05, method="deflation", tv_ratio=0.3), X1)
put("spcatv_auto", SPCATV(2, random_state=0), X1)
put("sspca", SSPCA(3, groups=grid_halfspace_groups((6, 6)), random_state=0), X2)
put(
    "sspca_l1",
    SSPCA(2, exponent=1.0, code_constraint="l1", init="svd", n_init=2, random_state=1),
    X2,
)
put("nspca", NonnegativeSparsePCA(2, alpha=1.0, random_state=0), X3)
put("nspca_beta", NonnegativeSparsePCA(3, alpha=0.5, beta=0.1, n_init=3, random_state=2), X3)
put("ktrace", KTraceNormPCA(k=3, alpha=0.1, random_state=0), X4)
put("ktrace_n2", KTraceNormPCA(2, k=4, alpha=0.05, random_state=0), X4)
put(
    "hdl_tree",
    HierarchicalDictionaryLearning(balanced_tree((2, 2)), alpha=0.1, tol=1e-2, random_state=0),
    X5,
)
put(
    "hdl_flat",
    HierarchicalDictionaryLearning(n_components=4, alpha=0.2, max_iter=10, random_state=0),
    X5,
)
Xc = X1 - X1.mean(0)
U, V, info = spca_tv(Xc, 2, l1=0.01, l2=0.1, tv=0.02)
out["fn_spca_tv.U"], out["fn_spca_tv.V"] = U, V
Xc2 = X2 - X2.mean(0)
U, V, info = sspca(Xc2, 2, groups=grid_halfspace_groups((6, 6)), random_state=0)
out["fn_sspca.U"], out["fn_sspca.V"] = U, V
C = np.cov(X3.T)
U, info = nspca(C, 2, alpha=1.0, random_state=0)
out["fn_nspca.U"] = U
S = np.cov(X4.T)
Z, blocks, info = ktrace_pca(S, 3, 0.1, random_state=0)
out["fn_ktrace.Z"] = Z
out["fn_ktrace.gap"] = np.asarray(info["dual_gap"])
D = rng.standard_normal((7, 16))
out["fn_tsc.A"] = tree_sparse_coding(X5, D, balanced_tree((2, 2)), alpha=0.1)
np.savez(sys.argv[1], **out)
print(ns.__file__, len(out))
