"""The estimators of the founding papers, one private module each.

Import from here (or from :mod:`neurospca`), never from the private modules:
``_spcatv`` (SPCA-TV, paper 003), ``_sspca`` (structured sparse PCA, paper 000,
with its penalty scale and collapse test in ``_sspca_scale`` and its argument
helpers in ``_sspca_args``), ``_dictionary`` (tree-structured dictionary
learning, paper 002) on the tree prox of ``_tree``, ``_nspca`` (nonnegative
sparse PCA, paper 004) and ``_ktrace`` ((k, q)-trace norm PCA, paper 001)
with the Table-2 baselines of ``_covariance_baselines``. The five estimators share one contract,
:class:`ComponentsEstimator` in ``_base`` (one ``fit``, the fitted names of
docs/naming.rst), with transform and held-out error; their algorithms live in
``_sspca_solver``, ``_ktrace_solver``, ``_tree_coding`` and
``_spcatv_function`` (``spca_tv``). Other helpers shared by several
estimators live in ``_covariance`` (covariance input, PSD
thresholding, truncated power iteration) and ``_projections`` (ℓ1 ball);
``_joint`` (SPCA-TV's joint fit), ``_stability`` (split-half stability) and
``_auto`` (the automatic penalty) serve SPCATV.
"""

from ._auto import (
    AUTO_ALPHA_REL_PATH,
    AUTO_SPLITS,
    DEFAULT_SPLIT,
    MAX_NONZERO,
    SPLIT_MARGIN,
    choose_alpha_rel,
    choose_least_shrunk,
    choose_point,
    fixed_split,
    name_dense_confound,
)
from ._base import ComponentsEstimator, reconstruction_error
from ._covariance import psd_threshold, truncated_power_iteration
from ._covariance_baselines import (
    sequential_spca_covariance,
    soft_threshold_covariance,
    trace_l1_covariance,
    trace_psd_covariance,
)
from ._dictionary import HierarchicalDictionaryLearning, tree_sparse_coding
from ._joint import joint_starts
from ._ktrace import KTraceNormPCA, ktrace_pca
from ._nspca import NonnegativeSparsePCA, nspca
from ._objective import fitted_objective
from ._spcatv import SPCATV, spca_tv
from ._split_groups import check_split_groups, groups_of, row_groups
from ._sspca import SSPCA, sspca
from ._stability import (
    STABILITY_THRESHOLD,
    below_noise,
    component_stability,
    fit_halves,
    matched_abs_corr,
    overlap_corrected,
    overlapping_subsamples,
    split_halves,
    subsample_stability,
)
from ._support import SUPPORT_RESOLUTION
from ._tree import prox_tree
from ._warm import start_from
from ._weights import ratios_from_weights, weights_from_ratios

__all__ = [
    "check_split_groups",
    "groups_of",
    "row_groups",
    "ComponentsEstimator",
    "SPCATV",
    "spca_tv",
    "SUPPORT_RESOLUTION",
    "weights_from_ratios",
    "ratios_from_weights",
    "SSPCA",
    "sspca",
    "HierarchicalDictionaryLearning",
    "prox_tree",
    "tree_sparse_coding",
    "NonnegativeSparsePCA",
    "nspca",
    "KTraceNormPCA",
    "ktrace_pca",
    "truncated_power_iteration",
    "psd_threshold",
    "soft_threshold_covariance",
    "trace_psd_covariance",
    "trace_l1_covariance",
    "sequential_spca_covariance",
    "reconstruction_error",
    "STABILITY_THRESHOLD",
    "MAX_NONZERO",
    "AUTO_ALPHA_REL_PATH",
    "AUTO_SPLITS",
    "DEFAULT_SPLIT",
    "SPLIT_MARGIN",
    "choose_alpha_rel",
    "choose_least_shrunk",
    "choose_point",
    "component_stability",
    "overlap_corrected",
    "overlapping_subsamples",
    "fit_halves",
    "fixed_split",
    "fitted_objective",
    "joint_starts",
    "name_dense_confound",
    "matched_abs_corr",
    "split_halves",
    "start_from",
    "subsample_stability",
    "below_noise",
]
