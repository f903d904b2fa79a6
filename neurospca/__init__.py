"""neurospca: structured sparse PCA (SPCA-TV and friends) for brain data."""

# --- operators and volumes
from .masking import tv_from_mask
from .operators import GroupOperator, chain_operator, stack_operators

# --- engine: SPCA-TV (issue 2)
from .decomposition._spcatv import SPCATV, ratios_from_weights, spca_tv, weights_from_ratios

# --- meshes and image front ends (issue 3)
from .masking import (
    VolumeMasker,
    images_to_data,
    load_mask_img,
    load_volume_data,
    unmask,
)
from .surface import (
    Hemispheres,
    icosphere,
    load_cortex_mask,
    load_surf_data,
    load_surf_mesh,
    load_surface_data,
    load_surface_image,
    load_surface_subjects,
    tv_from_hemispheres,
    tv_from_mesh,
    write_surf_data,
    write_surf_mesh,
)

# --- cohort-size data on disk (issue 14)
from .cohort import images_to_memmap, npy_to_dask, surfaces_to_memmap

# --- images in, images out (issue 12)
from .image import ImageSPCATV, fit_images, fit_surfaces

# --- structured sparse PCA and tree-structured dictionary learning (issue 6)
from .decomposition._sspca import SSPCA, sspca
from .decomposition._tree import (
    HierarchicalDictionaryLearning,
    balanced_tree,
    check_tree,
    prox_tree,
    tree_sparse_coding,
)
from .groups import grid_halfspace_groups, group_lasso_operator

# --- nonnegative sparse PCA and (k, q)-trace norm PCA (issue 7)
from .decomposition._ktrace import (
    KTraceNormPCA,
    ktrace_pca,
    psd_threshold,
    sequential_spca_covariance,
    soft_threshold_covariance,
    trace_l1_covariance,
    trace_psd_covariance,
    truncated_power_iteration,
)
from .decomposition._nspca import NonnegativeSparsePCA, nspca

# --- reporting, saved models (issue 4)
from .persistence import SavedModel, load_model, save_model

# --- model selection and datasets (issue 5)
from .datasets import (
    make_cortical_atrophy,
    make_fmri_like,
    make_paper_simulation,
    make_paper_simulation_split,
    make_structured_images,
    make_tree_patches,
)
from .model_selection import (
    dice_index,
    grid_search_cv,
    match_components,
    mse_to_truth,
    neg_reconstruction_error,
    one_se_refit,
    pairwise_dice,
    reconstruction_error,
    select_penalty,
    sign_permutation_test,
    sparsity_rule,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "GroupOperator",
    "chain_operator",
    "stack_operators",
    "tv_from_mask",
    # --- issue 2
    "SPCATV",
    "spca_tv",
    "weights_from_ratios",
    "ratios_from_weights",
    # --- issue 3
    "VolumeMasker",
    "fit_images",
    "fit_surfaces",
    "images_to_data",
    "load_mask_img",
    "load_volume_data",
    "unmask",
    # --- issue 14
    "images_to_memmap",
    "npy_to_dask",
    "surfaces_to_memmap",
    "Hemispheres",
    "icosphere",
    "load_cortex_mask",
    "load_surf_data",
    "load_surf_mesh",
    "load_surface_data",
    "load_surface_image",
    "load_surface_subjects",
    "tv_from_hemispheres",
    "tv_from_mesh",
    "write_surf_data",
    "write_surf_mesh",
    # --- issue 12
    "ImageSPCATV",
    # --- issue 6
    "SSPCA",
    "sspca",
    "grid_halfspace_groups",
    "group_lasso_operator",
    "HierarchicalDictionaryLearning",
    "prox_tree",
    "tree_sparse_coding",
    "balanced_tree",
    "check_tree",
    # --- issue 7
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
    # --- issue 4
    "SavedModel",
    "load_model",
    "save_model",
    # --- issue 5
    "make_cortical_atrophy",
    "make_fmri_like",
    "make_paper_simulation",
    "make_paper_simulation_split",
    "make_structured_images",
    "make_tree_patches",
    "dice_index",
    "grid_search_cv",
    "match_components",
    "mse_to_truth",
    "neg_reconstruction_error",
    "pairwise_dice",
    "reconstruction_error",
    "sign_permutation_test",
    "sparsity_rule",
    # --- issue 12
    "select_penalty",
    "one_se_refit",
]
