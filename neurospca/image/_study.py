"""The participants side of :class:`~neurospca.ImageSPCATV`: subjects, adjustments,
findings.

``fit(imgs, participants=..., confounds=[...], harmonize=..., groups=...,
covariates=...)`` matches every image to its row of the participants table,
harmonises the sites and removes the confounds with parameters learnt on
these subjects (:class:`neurospca.study.StudyDesign`), fits, then tests every
component's scores against the groups and covariates
(:func:`neurospca.study.associations`). ``transform`` applies the same
learnt parameters to new subjects.
"""

import glob
import os

import numpy as np

from ..study import (
    StudyDesign,
    associations,
    category_values,
    match_participants,
    numeric_values,
    read_participants,
    subject_id_from_path,
)

__all__ = [
    "image_subject_ids",
    "participant_rows",
    "fit_study",
    "transform_study",
    "study_findings",
    "study_state",
]


def _paths(imgs):
    """The file paths of ``imgs`` in sample order, or None (images in memory, 4-D)."""
    if isinstance(imgs, (str, os.PathLike)):
        text = os.fspath(imgs)
        if glob.has_magic(text):
            return sorted(glob.glob(os.path.expanduser(text)))
        return None  # one file: a 4-D image (one path, many samples)
    if (
        isinstance(imgs, (list, tuple))
        and imgs
        and all(isinstance(i, (str, os.PathLike)) for i in imgs)
    ):
        return [os.fspath(i) for i in imgs]
    return None


def image_subject_ids(imgs, subject_ids, n_samples):
    """One subject ID per sample: from ``subject_ids`` (IDs or paths) or the image paths.

    Parameters
    ----------
    imgs : images as given to fit
    subject_ids : sequence of str or None
        IDs, or paths from which ``sub-<label>`` is read.
    n_samples : int

    Returns
    -------
    list of str
    """
    source = subject_ids
    if source is None:
        source = _paths(imgs)
        if source is None:
            raise ValueError(
                "participants: cannot tell which subject each image is (images in memory, "
                "a SurfaceImage or a 4-D file carry no per-subject file name); give "
                "subject_ids= (the IDs, or the file names holding sub-<label>)."
            )
    if isinstance(source, str) or len(source) != n_samples:
        raise ValueError(
            f"subject_ids: expected {n_samples} IDs or paths (one per image), "
            f"got {1 if isinstance(source, str) else len(source)}."
        )
    ids = []
    for item in source:
        found = subject_id_from_path(item)
        if found is None and (subject_ids is None or os.sep in os.fspath(item)):
            raise ValueError(
                f"{'imgs' if subject_ids is None else 'subject_ids'}: no subject "
                f"ID in {os.fspath(item)!r} (expected sub-<label> in the file or "
                "folder name, or a FreeSurfer folder <subject>/surf/...); give "
                "subject_ids=."
            )
        ids.append(found if found is not None else str(item))
    return ids


def participant_rows(participants, ids, id_column):
    """The participants' rows in the order of ``ids`` (ValueError naming participants)."""
    table = read_participants(participants, id_column)
    return match_participants(table, ids, id_column)


def fit_study(model, X, rows, confounds, harmonize, groups, covariates):
    """Learn the adjustments on the training subjects; sets ``study_`` and
    ``participant_ids_`` on ``model``; returns the adjusted X."""
    design = StudyDesign(
        confounds or (), harmonize, groups or (), covariates or (), model._id_column
    )
    X = design.fit_transform(X, rows)
    model.study_ = design
    model.participant_ids_ = np.asarray(rows[design.id_column].astype(str), dtype=str)
    model._study_rows = rows
    return X


def transform_study(model, X, imgs, participants, subject_ids):
    """Apply the training adjustments to new subjects (their rows are needed when the
    fit harmonised sites or removed confounds)."""
    design = model.study_
    needs_rows = design.combat_ is not None or design.confounds
    if not needs_rows:
        return X
    if participants is None:
        raise ValueError(
            "participants: this model harmonised sites or removed confounds "
            "at fit; give the new subjects' participants table (site and "
            "confound columns) to transform them the same way."
        )
    ids = image_subject_ids(imgs, subject_ids, X.shape[0])
    rows = participant_rows(participants, ids, design.id_column)
    return design.transform(X, rows)


def _variables(design, rows):
    groups = {g: category_values(rows, g) for g in design.groups}
    covariates = {c: numeric_values(rows, c, "covariates") for c in design.covariates}
    return groups, covariates


def study_findings(model, scores, n_permutations, random_state):
    """``associations_`` of the fitted model (None without groups and covariates)."""
    design = model.study_
    if not design.groups and not design.covariates:
        return None
    groups, covariates = _variables(design, model._study_rows)
    seed = random_state if isinstance(random_state, (int, np.integer)) else 0
    return associations(
        scores, groups, covariates, n_permutations=n_permutations, random_state=seed
    )


def _column(series):
    values = np.asarray(series.to_numpy())
    return values if values.dtype.kind in "biuf" else values.astype(str)


def study_state(model):
    """Everything the report and a saved model need about the participants (a dict of
    arrays, strings and lists; no pickle)."""
    design = model.study_
    groups, covariates = _variables(design, model._study_rows)
    table = getattr(model, "associations_", None)
    return {
        "participant_ids": np.asarray(model.participant_ids_, dtype=str),
        "design": design.to_dict(),
        "groups": {k: np.asarray(v, dtype=str) for k, v in groups.items()},
        "covariates": covariates,
        "associations": None if table is None else {c: _column(table[c]) for c in table.columns},
        "n_permutations": int(getattr(model, "_n_permutations", 0)),
        "methods": design.describe(),
    }
