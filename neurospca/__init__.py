"""neurospca: structured sparse PCA (SPCA-TV and friends) for brain data.

The public names, by topic. Each comes from its package (``neurospca.decomposition``,
``neurospca.masking``...), never from a private module; ``docs/architecture.rst`` says
which layer does what, and :doc:`naming` how weights and fitted attributes are named.
"""

from . import datasets, model_selection, reporting, solvers, study

# --- the estimators and their functions
from .decomposition import (
    SPCATV,
    SSPCA,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
    ktrace_pca,
    nspca,
    prox_tree,
    psd_threshold,
    ratios_from_weights,
    reconstruction_error,
    sequential_spca_covariance,
    soft_threshold_covariance,
    spca_tv,
    sspca,
    trace_l1_covariance,
    trace_psd_covariance,
    tree_sparse_coding,
    truncated_power_iteration,
    weights_from_ratios,
)

# --- images in, images out
from .image import ImageSPCATV, fit_images, fit_surfaces

# --- structures: operators, groups, trees
from .groups import grid_halfspace_groups, group_lasso_operator
from .operators import GroupOperator, chain_operator, stack_operators
from .trees import balanced_tree, check_tree

# --- volumes
from .masking import (
    VolumeMasker,
    images_to_data,
    load_mask_img,
    load_volume_data,
    tv_from_mask,
    unmask,
)

# --- cortical surfaces
from .surface import (
    Hemispheres,
    icosphere,
    load_cortex_mask,
    load_surf_data,
    load_surf_mesh,
    load_surface_data,  # noqa: F401  (deprecated alias of load_surface_subjects, not in __all__)
    load_surface_image,
    load_surface_subjects,
    tv_from_hemispheres,
    tv_from_mesh,
    write_surf_data,
    write_surf_mesh,
)

# --- cohort-size data on disk
from .cohort import (
    images_to_dask, images_to_memmap, npy_to_dask, surfaces_to_dask, surfaces_to_memmap,
)

# --- cohort studies: participants, ComBat, confounds, associations
from .study import make_multisite_cohort

# --- saved models
from .persistence import SavedModel, load_model, save_model

# --- simulations and model selection
from .datasets import (
    make_cortical_atrophy,
    make_atrophy_cohort,
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
    select_penalty,
    sign_permutation_test,
    sparsity_rule,
)

__version__ = "0.1.0.dev0"

__all__ = [
    # estimators and their functions
    "SPCATV",
    "spca_tv",
    "weights_from_ratios",
    "ratios_from_weights",
    "reconstruction_error",
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
    # images in, images out
    "ImageSPCATV",
    "fit_images",
    "fit_surfaces",
    # structures
    "GroupOperator",
    "chain_operator",
    "stack_operators",
    "grid_halfspace_groups",
    "group_lasso_operator",
    "balanced_tree",
    "check_tree",
    # volumes
    "VolumeMasker",
    "tv_from_mask",
    "images_to_data",
    "load_mask_img",
    "load_volume_data",
    "unmask",
    # cortical surfaces
    "Hemispheres",
    "icosphere",
    "tv_from_mesh",
    "tv_from_hemispheres",
    "load_cortex_mask",
    "load_surf_data",
    "load_surf_mesh",
    "load_surface_subjects",
    "load_surface_image",
    "write_surf_data",
    "write_surf_mesh",
    # cohort-size data on disk
    "images_to_memmap",
    "surfaces_to_memmap",
    "npy_to_dask",
    "images_to_dask",
    "surfaces_to_dask",
    # cohort studies
    "make_multisite_cohort",
    # saved models
    "SavedModel",
    "load_model",
    "save_model",
    # simulations
    "make_paper_simulation",
    "make_paper_simulation_split",
    "make_structured_images",
    "make_fmri_like",
    "make_atrophy_cohort",
    "make_cortical_atrophy",
    "make_tree_patches",
    # model selection
    "select_penalty",
    "one_se_refit",
    "dice_index",
    "pairwise_dice",
    "match_components",
    "mse_to_truth",
    "neg_reconstruction_error",
    "sign_permutation_test",
    "sparsity_rule",
    "grid_search_cv",
    # subpackages
    "datasets",
    "model_selection",
    "reporting",
    "solvers",
    "study",
]
