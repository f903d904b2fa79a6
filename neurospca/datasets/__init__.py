"""Seeded simulations (no downloads).

- :func:`make_paper_simulation`: the SPCA-TV paper's simulation (section III-A):
  100x100 images whose three loading patterns are two upper dots, two lower
  dots and one middle dot; Gaussian scores; Gaussian noise at a given SNR.
- :func:`make_fmri_like`: maps over nilearn's MNI152 brain mask at 3 mm
  (64,030 voxels, the size of the paper's fMRI set) with three smooth sparse
  patterns plus noise; the mask (:func:`mni152_brain_mask`) is stored in the
  package (``voxel_size``: the same mask sampled on a coarser grid; the demo's is 5 mm).
- :func:`make_paper_simulation_split`: the paper's 250 training + 250 test
  images.
- :func:`make_cortical_atrophy`: cortical-thickness maps on fsaverage5 (both
  hemispheres) with three smooth atrophy patterns. Needs nilearn (bundled
  meshes and thickness map, no download).
- :func:`make_atrophy_cohort`: a cohort on a real mesh (fsaverage5 or conte69)
  whose three atrophy patterns co-vary through a shared disease severity, with
  age and sex effects and smooth noise.
"""

from ._cortex import make_atrophy_cohort, make_cortical_atrophy
from ._images import (
    make_fmri_like,
    make_paper_simulation,
    make_paper_simulation_split,
    make_structured_images,
    make_tree_patches,
    mni152_brain_mask,
    paper_patterns,
)

__all__ = [
    "make_paper_simulation",
    "make_paper_simulation_split",
    "make_fmri_like",
    "make_cortical_atrophy",
    "make_atrophy_cohort",
    "paper_patterns",
    "make_structured_images",
    "make_tree_patches",
    "mni152_brain_mask",
]
