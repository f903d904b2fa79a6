"""Cohort studies: participants, site harmonisation, confounds and findings.

- :func:`read_participants`, :func:`subject_id_from_path`,
  :func:`match_participants`: a BIDS ``participants.tsv`` (or CSV, or
  DataFrame) matched to the images by subject ID.
- :func:`combat_fit` / :func:`combat_apply`: ComBat with fit/apply semantics.
- :class:`StudyDesign`: what a fit learns from the participants (one-hot
  encoding, ComBat, confound effects), applied unchanged to new subjects.
- :func:`associations`: every component's scores against groups
  (Kruskal-Wallis) and covariates (Spearman), permutation p-values corrected
  over components x variables (Westfall-Young min-P).
- :func:`find_bids_derivatives`, :func:`find_freesurfer_subjects`: the maps
  of BIDS derivatives (by entities) and of a FreeSurfer SUBJECTS_DIR.
- :func:`make_multisite_cohort`: a simulated multi-site atrophy study written
  to disk as FreeSurfer/BIDS users have it.

pandas is imported only when a table is read or a result is returned.
"""

from ._associations import ASSOCIATION_COLUMNS, associations
from ._combat import combat_apply, combat_fit
from ._design import StudyDesign
from ._layouts import find_bids_derivatives, find_freesurfer_subjects
from ._participants import (
    category_values,
    check_columns,
    is_categorical,
    match_participants,
    numeric_values,
    read_participants,
    subject_id_from_path,
)
from ._simulate import make_multisite_cohort

__all__ = [
    "ASSOCIATION_COLUMNS",
    "StudyDesign",
    "associations",
    "category_values",
    "check_columns",
    "combat_apply",
    "combat_fit",
    "find_bids_derivatives",
    "find_freesurfer_subjects",
    "is_categorical",
    "make_multisite_cohort",
    "match_participants",
    "numeric_values",
    "read_participants",
    "subject_id_from_path",
]
