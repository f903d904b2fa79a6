"""Inputs as the field's pipelines write them: BIDS derivatives and FreeSurfer subjects.

- BIDS derivatives (fMRIPrep, FreeSurfer-BIDS, ...): files named by entities,
  ``sub-<label>[_ses-<label>]_hemi-{L,R}_space-<space>[_...]_<suffix>.<ext>``
  (surfaces: ``.shape.gii``, ``.func.gii``, ``.gii``, ``.mgh``) or
  ``..._space-<space>_..._<suffix>.nii[.gz]`` (volumes), anywhere below the
  folder;
- FreeSurfer subjects after ``recon-all -qcache``:
  ``$SUBJECTS_DIR/<subject>/surf/{lh,rh}.<measure>.mgh`` (e.g.
  ``thickness.fwhm10.fsaverage``), the template subjects (``fsaverage*``)
  left out.

Both return the files sorted by subject, one per subject and hemisphere, with
their subject IDs; a subject with a missing hemisphere, or with several
matching files (e.g. two sessions), is an error naming the option.
"""

import glob
import os
import re

__all__ = ["find_bids_derivatives", "find_freesurfer_subjects"]

_SURFACE_EXT = (".shape.gii", ".func.gii", ".gii", ".mgh", ".mgz")
_VOLUME_EXT = (".nii.gz", ".nii")
_ENTITY = re.compile(r"([a-zA-Z]+)-([a-zA-Z0-9]+)")


def _entities(name):
    """(entities dict, suffix, extension) of a BIDS file name, or None."""
    for ext in _SURFACE_EXT + _VOLUME_EXT:
        if name.endswith(ext):
            stem = name[: -len(ext)]
            break
    else:
        return None
    parts = stem.split("_")
    if len(parts) < 2 or not parts[0].startswith("sub-"):
        return None
    entities = {}
    for part in parts[:-1]:
        match = _ENTITY.fullmatch(part)
        if match is None:
            return None
        entities[match.group(1)] = match.group(2)
    return entities, parts[-1], ext


def _one_per_subject(found, option):
    out = {}
    for sid, path in sorted(found):
        if sid in out:
            raise ValueError(
                f"{option}: subject {sid} has several matching files "
                f"({os.path.basename(out[sid])}, {os.path.basename(path)}); "
                "narrow the search (e.g. one session)."
            )
        out[sid] = path
    return out


def find_bids_derivatives(root, space, suffix, option="--bids-derivatives"):
    """Per-subject maps in a BIDS derivatives folder, found by their entities.

    Parameters
    ----------
    root : path
        The derivatives folder (searched recursively).
    space : str
        The ``space-`` entity (e.g. ``fsaverage5``, ``MNI152NLin2009cAsym``).
    suffix : str
        The suffix (e.g. ``thickness``, ``statmap``).
    option : str
        Named in errors.

    Returns
    -------
    kind : {"surface", "volume"}
    files : dict
        Surfaces: ``{"left": [...], "right": [...]}``; volumes:
        ``{"images": [...]}``; sorted by subject, one file per subject.
    ids : list of str
        ``sub-<label>`` of each subject.
    """
    if not os.path.isdir(root):
        raise ValueError(f"{option}: no such folder {os.fspath(root)!r}.")
    hemis = {"L": [], "R": []}
    volumes = []
    for path in glob.glob(os.path.join(os.fspath(root), "**", "sub-*"), recursive=True):
        parsed = _entities(os.path.basename(path))
        if parsed is None or not os.path.isfile(path):
            continue
        entities, found_suffix, ext = parsed
        if found_suffix != suffix or entities.get("space") != space:
            continue
        sid = "sub-" + entities["sub"]
        if ext in _VOLUME_EXT:
            volumes.append((sid, path))
        elif entities.get("hemi") in hemis:
            hemis[entities["hemi"]].append((sid, path))
    if volumes and (hemis["L"] or hemis["R"]):
        raise ValueError(
            f"{option}: both volumes and surface maps match space-{space} "
            f"_{suffix}; keep one kind in the folder."
        )
    if volumes:
        files = _one_per_subject(volumes, option)
        return "volume", {"images": list(files.values())}, list(files)
    if not hemis["L"] and not hemis["R"]:
        raise ValueError(
            f"{option}: no file named sub-*_space-{space}_*{suffix}.<ext> "
            f"below {os.fspath(root)!r} (surfaces need hemi-L/hemi-R; "
            f"extensions {', '.join(_SURFACE_EXT + _VOLUME_EXT)})."
        )
    left, right = (_one_per_subject(hemis[h], option) for h in ("L", "R"))
    return "surface", _pairs(left, right, option), sorted(left)


def _pairs(left, right, option):
    lonely = sorted(set(left) ^ set(right))
    if lonely:
        raise ValueError(
            f"{option}: subject(s) {lonely[:5]} have one hemisphere only; "
            "give both or leave them out."
        )
    return {"left": [left[s] for s in sorted(left)], "right": [right[s] for s in sorted(left)]}


def find_freesurfer_subjects(subjects_dir, measure, option="--freesurfer-subjects"):
    """``<subject>/surf/{lh,rh}.<measure>.mgh`` of every subject of a SUBJECTS_DIR.

    Parameters
    ----------
    subjects_dir : path
        FreeSurfer's ``$SUBJECTS_DIR``.
    measure : str
        E.g. ``thickness.fwhm10.fsaverage`` (qcache) or ``thickness``.
    option : str
        Named in errors.

    Returns
    -------
    files : dict
        ``{"left": [...], "right": [...]}``, sorted by subject.
    ids : list of str
        The subject folders' names (``fsaverage*`` template subjects left out).
    """
    if not os.path.isdir(subjects_dir):
        raise ValueError(f"{option}: no such folder {os.fspath(subjects_dir)!r}.")
    found = {"lh": {}, "rh": {}}
    for hemi in found:
        for ext in (".mgh", ".mgz", ""):
            pattern = os.path.join(os.fspath(subjects_dir), "*", "surf", f"{hemi}.{measure}{ext}")
            for path in glob.glob(pattern):
                subject = os.path.basename(os.path.dirname(os.path.dirname(path)))
                if not subject.startswith("fsaverage") and os.path.isfile(path):
                    found[hemi].setdefault(subject, path)
    if not found["lh"] and not found["rh"]:
        raise ValueError(
            f"{option}: no <subject>/surf/lh.{measure}.mgh below "
            f"{os.fspath(subjects_dir)!r} (run recon-all -qcache, or check "
            "--measure)."
        )
    files = _pairs(found["lh"], found["rh"], option)
    return files, sorted(found["lh"])
