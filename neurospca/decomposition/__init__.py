"""The estimators of the founding papers, one private module each.

Import from here (or from :mod:`neurospca`), never from the private modules:
``_spcatv`` (SPCA-TV, paper 003), ``_sspca`` (structured sparse PCA, paper 000),
``_tree`` (tree-structured dictionary learning, paper 002), ``_nspca``
(nonnegative sparse PCA, paper 004) and ``_ktrace`` ((k, q)-trace norm PCA,
paper 001). Helpers shared by several estimators live in ``_base``.
"""

from ._base import reconstruction_error
from ._ktrace import (
    KTraceNormPCA,
    ktrace_pca,
    psd_threshold,
    sequential_spca_covariance,
    soft_threshold_covariance,
    trace_l1_covariance,
    trace_psd_covariance,
    truncated_power_iteration,
)
from ._nspca import NonnegativeSparsePCA, nspca
from ._spcatv import SPCATV, ratios_from_weights, spca_tv, weights_from_ratios
from ._sspca import SSPCA, sspca
from ._tree import HierarchicalDictionaryLearning, prox_tree, tree_sparse_coding

__all__ = [
    "SPCATV",
    "spca_tv",
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
]
