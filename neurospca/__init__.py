"""neurospca: structured sparse PCA (SPCA-TV and friends) for brain data.

The public names, by topic. Each comes from its package (``neurospca.decomposition``,
``neurospca.masking``...), never from a private module; ``docs/architecture.rst`` says
which layer does what, and :doc:`naming` how weights and fitted attributes are named.

``import neurospca`` imports none of them: each name (and each subpackage) is
imported from where it lives the first time it is used (module ``__getattr__``,
PEP 562, as scipy and scikit-image do), so the package itself loads in
milliseconds and scikit-learn, scipy.optimize, pandas, nibabel, matplotlib,
nilearn, pyvista, jinja2 and dask are loaded only by what needs them.
``from neurospca import SPCATV`` and ``neurospca.SPCATV`` work as before.
"""

import importlib

# __version__: read from the installed metadata on first use (__getattr__); written only
# in pyproject.toml

#: public name -> the subpackage (or module) it lives in, by topic
_LAZY_NAMES = {
    # the estimators and their functions
    **dict.fromkeys(
        (
            "SPCATV",
            "SSPCA",
            "HierarchicalDictionaryLearning",
            "KTraceNormPCA",
            "NonnegativeSparsePCA",
            "ktrace_pca",
            "nspca",
            "prox_tree",
            "psd_threshold",
            "ratios_from_weights",
            "reconstruction_error",
            "sequential_spca_covariance",
            "soft_threshold_covariance",
            "spca_tv",
            "sspca",
            "trace_l1_covariance",
            "trace_psd_covariance",
            "tree_sparse_coding",
            "truncated_power_iteration",
            "weights_from_ratios",
        ),
        "decomposition",
    ),
    # images in, images out
    **dict.fromkeys(("ImageSPCATV", "fit_images", "fit_surfaces"), "image"),
    # structures: operators, groups, trees
    **dict.fromkeys(("grid_halfspace_groups", "group_lasso_operator"), "groups"),
    **dict.fromkeys(("GroupOperator", "chain_operator", "stack_operators"), "operators"),
    **dict.fromkeys(("balanced_tree", "check_tree"), "trees"),
    # volumes
    **dict.fromkeys(
        (
            "VolumeMasker",
            "images_to_data",
            "load_mask_img",
            "load_volume_data",
            "tv_from_mask",
            "unmask",
        ),
        "masking",
    ),
    # cortical surfaces (load_surface_data: deprecated alias, not in __all__)
    **dict.fromkeys(
        (
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
        ),
        "surface",
    ),
    # cohort-size data on disk
    **dict.fromkeys(
        (
            "images_to_dask",
            "images_to_memmap",
            "npy_to_dask",
            "surfaces_to_dask",
            "surfaces_to_memmap",
        ),
        "cohort",
    ),
    # cohort studies: participants, ComBat, confounds, associations
    "make_multisite_cohort": "study",
    # saved models
    **dict.fromkeys(("SavedModel", "load_model", "save_model"), "persistence"),
    # simulations and model selection
    **dict.fromkeys(
        (
            "make_cortical_atrophy",
            "make_atrophy_cohort",
            "make_fmri_like",
            "make_paper_simulation",
            "make_paper_simulation_split",
            "make_structured_images",
            "make_tree_patches",
        ),
        "datasets",
    ),
    **dict.fromkeys(
        (
            "dice_index",
            "grid_search_cv",
            "match_components",
            "mse_to_truth",
            "neg_reconstruction_error",
            "one_se_refit",
            "pairwise_dice",
            "select_penalty",
            "sign_permutation_test",
            "sparsity_rule",
        ),
        "model_selection",
    ),
}

#: subpackages and public modules reachable as attributes (``neurospca.surface.icosphere``)
_SUBMODULES = frozenset(
    (
        "cli",
        "cohort",
        "datasets",
        "decomposition",
        "groups",
        "image",
        "masking",
        "model_selection",
        "operators",
        "persistence",
        "reporting",
        "solvers",
        "study",
        "surface",
        "trees",
    )
)

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


def _installed_version():
    """The installed distribution's version (pyproject.toml's), or ``"0+unknown"``.

    ``"0+unknown"`` when neurospca runs from a source tree that was never
    installed. importlib.metadata is imported here, not at ``import neurospca``
    (it costs ~30 ms, ten times the package's own import).
    """
    from importlib import metadata

    try:
        return metadata.version(__name__)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name):
    """Import a public name (or subpackage) the first time it is used (PEP 562)."""
    if name == "__version__":
        globals()[name] = _installed_version()
        return globals()[name]
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    where = _LAZY_NAMES.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    """The module's names: what is loaded plus every public name, loaded or not."""
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)
