"""The participants options of ``neurospca fit`` (``--participants --confounds
--harmonize --groups --covariates``) and ``--atlas`` of ``fit`` and ``report``."""

import csv
import os

from ._checks import UserError, existing, say

__all__ = [
    "study_options_given",
    "prepare_study",
    "finish_study",
    "atlas_from_args",
    "write_associations",
]

_OPTIONS = ("confounds", "harmonize", "groups", "covariates")


def study_options_given(args):
    """Whether any participants option was given (they all need --participants)."""
    given = [o for o in _OPTIONS if getattr(args, o, None)]
    if given and not getattr(args, "participants", None):
        raise UserError(f"--{given[0]} needs --participants (the participants table).")
    return bool(getattr(args, "participants", None))


def _columns(text):
    return None if text is None else [c.strip() for c in text.split(",") if c.strip()]


def _subject_ids(paths, option):
    from ..study import subject_id_from_path

    ids = []
    for p in paths:
        sid = subject_id_from_path(p)
        if sid is None:
            raise UserError(
                f"{option}: no subject ID in {p!r} (expected sub-<label> in the "
                "file or folder name, or a FreeSurfer folder <subject>/surf/...)."
            )
        ids.append(sid)
    return ids


def prepare_study(args, model, X, paths, option):
    """Match the participants to the maps, harmonise and remove confounds (learnt on
    these subjects); returns the adjusted X.

    Parameters
    ----------
    args : argparse.Namespace
    model : ImageSPCATV
        Prepared (masked), not fitted.
    X : ndarray
        The masked data, one row per path.
    paths : list of str
        One map per subject (the left maps for surfaces).
    option : str
        The option named when a path holds no subject ID.

    Returns
    -------
    ndarray
    """
    existing(args.participants, "--participants")
    if len(paths) != X.shape[0]:
        raise UserError(
            f"{option}: {X.shape[0]} maps from {len(paths)} file(s); "
            "--participants needs one file per subject."
        )
    ids = _subject_ids(paths, option)
    try:
        X = model._study_prepare(
            X,
            ids,
            args.participants,
            _columns(args.confounds),
            args.harmonize,
            _columns(args.groups),
            _columns(args.covariates),
            args.participant_id,
        )
    except (ValueError, TypeError) as exc:
        text = str(exc)
        for arg in (
            "participants",
            "confounds",
            "harmonize",
            "groups",
            "covariates",
            "subject_ids",
        ):
            if text.startswith(arg + ":"):
                text = "--" + arg.replace("_", "-") + text[len(arg) :]
                break
        raise UserError(text) from None
    design = model.study_
    say(args, f"participants: {len(ids)} subjects matched in {args.participants}")
    for line in design.describe():
        say(args, line)
    return X


def finish_study(args, model):
    """The association tests after the fit; returns (study dict, DataFrame or None)."""
    table = model._study_findings(args.n_permutations)
    if table is not None:
        best = table.sort_values("p_corrected").head(5)
        for _, r in best.iterrows():
            say(
                args,
                f"component {r['component']} ~ {r['variable']}: {r['test']} "
                f"{r['statistic']:.3g}, {r['effect_size_measure']} "
                f"{r['effect_size']:.2f}, p corrected {r['p_corrected']:.2g}",
            )
    return model._study_state(), table


def atlas_from_args(args, space):
    """``--atlas`` as make_report takes it (None when not given), checked against the
    model's ``space`` before any fitting."""
    from ..reporting import load_atlas
    from ..surface import Hemispheres

    atlas = getattr(args, "atlas", None)
    if not atlas:
        return None
    for path in atlas:
        existing(path, "--atlas")
    atlas = _atlas_value(atlas, isinstance(space, Hemispheres))
    try:
        load_atlas(atlas, space)
    except (ValueError, TypeError, OSError) as exc:
        raise UserError(f"--atlas: {exc}") from None
    return atlas


def _atlas_value(atlas, surfaces):
    if surfaces:
        if len(atlas) != 2:
            raise UserError(
                "--atlas: give the left and right atlas files (.annot or "
                f".label.gii) for surfaces, got {len(atlas)} file(s)."
            )
        return tuple(atlas)
    if len(atlas) != 1:
        raise UserError(f"--atlas: give one labelled NIfTI for volumes, got {len(atlas)}.")
    return atlas[0]


def write_associations(path, table):
    """``associations.tsv``: one row per component and variable (tab-separated).

    Parameters
    ----------
    path : str
    table : pandas.DataFrame
        From :func:`neurospca.study.associations`.

    Returns
    -------
    str
    """
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(list(table.columns))
        for row in table.itertuples(index=False):
            writer.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in row])
    return os.fspath(path)
