"""The participants table: read it, find each image's subject, match, check columns.

A participants table is a BIDS ``participants.tsv`` (tab-separated, ``n/a``
for missing values), a CSV file or a pandas DataFrame, one row per subject,
with an ID column (``participant_id`` by default). Each image's subject comes
from its path: the BIDS entity ``sub-<label>`` in the file name or, failing
that, in a folder name (innermost first), else the FreeSurfer subject folder
(``<subject>/surf/lh.thickness...``). IDs are compared without the ``sub-``
prefix, so ``sub-01`` in a file name matches ``01`` or ``sub-01`` in the
table; the table's spelling is the one kept.

pandas is imported only when a table is read.
"""

import os
import re

import numpy as np

__all__ = [
    "read_participants",
    "subject_id_from_path",
    "match_participants",
    "check_columns",
    "is_categorical",
    "numeric_values",
    "category_values",
]

_SUB = re.compile(r"(?:^|[_./\\-])sub-([A-Za-z0-9]+)")


def _pandas():
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("participants tables need pandas: pip install pandas") from None
    return pd


def read_participants(participants, id_column="participant_id", name="participants"):
    """The participants table as a DataFrame with string IDs.

    Parameters
    ----------
    participants : path or pandas.DataFrame
        A ``.tsv`` (BIDS: tab-separated, ``n/a`` missing) or ``.csv`` file,
        or a DataFrame (copied).
    id_column : str, default="participant_id"
        The column of subject IDs.
    name : str
        The argument named in errors.

    Returns
    -------
    pandas.DataFrame
        IDs as strings (column ``id_column``), unique.

    Raises
    ------
    ValueError
        Unreadable file, no ``id_column``, empty or repeated IDs.
    TypeError
        Neither a path nor a DataFrame.
    """
    pd = _pandas()
    if isinstance(participants, pd.DataFrame):
        table = participants.copy()
    elif isinstance(participants, (str, os.PathLike)):
        path = os.fspath(participants)
        if not os.path.isfile(path):
            raise ValueError(f"{name}: no such file {path!r}.")
        sep = "," if path.lower().endswith(".csv") else "\t"
        try:
            table = pd.read_csv(
                path,
                sep=sep,
                na_values=["n/a", "N/A", "NA", ""],
                keep_default_na=False,
                dtype={id_column: str},
            )
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"{name}: cannot read {path!r} as a "
                f"{'CSV' if sep == ',' else 'tab-separated'} table: {exc}"
            ) from None
    else:
        raise TypeError(
            f"{name} must be a path (participants.tsv or .csv) or a pandas "
            f"DataFrame, got {type(participants).__name__}."
        )
    if not isinstance(id_column, str) or id_column not in table.columns:
        raise ValueError(
            f"{name}: no ID column {id_column!r}; the columns are "
            f"{_list(table.columns)} (give id_column=, or --participant-id)."
        )
    ids = table[id_column]
    if ids.isna().any():
        raise ValueError(
            f"{name}: the ID column {id_column!r} has missing values (rows "
            f"{_list(np.flatnonzero(ids.isna().to_numpy()) + 1)})."
        )
    table[id_column] = ids.astype(str).str.strip()
    keys = table[id_column].map(_bare)
    repeated = table[id_column][keys.duplicated()].unique()
    if repeated.size:
        raise ValueError(
            f"{name}: the ID column {id_column!r} repeats {_list(repeated)}; one row per subject."
        )
    return table.reset_index(drop=True)


def _bare(label):
    label = str(label).strip()
    return label[4:] if label.startswith("sub-") else label


def _list(values, n=5):
    values = [str(v) for v in values]
    return ", ".join(repr(v) for v in values[:n]) + (
        f" ... ({len(values)} in all)" if len(values) > n else ""
    )


def subject_id_from_path(path):
    """The subject of an image path, or None.

    Parameters
    ----------
    path : str or os.PathLike
        E.g. ``sub-01/anat/sub-01_hemi-L_thickness.shape.gii`` or
        ``subjects/bert/surf/lh.thickness.fwhm10.fsaverage.mgh``.

    Returns
    -------
    str or None
        ``sub-<label>`` from the file name, else from the innermost folder
        that has one, else the FreeSurfer subject folder (the one holding
        ``surf``); None if there is none.
    """
    parts = os.path.normpath(os.fspath(path)).split(os.sep)
    for part in reversed(parts):
        match = _SUB.search(part)
        if match:
            return "sub-" + match.group(1)
    folders = parts[:-1]
    if "surf" in folders:
        j = len(folders) - 1 - folders[::-1].index("surf")
        if j >= 1 and folders[j - 1]:
            return folders[j - 1]
    return None


def match_participants(table, subject_ids, id_column="participant_id", name="participants"):
    """The rows of ``table`` in the order of ``subject_ids`` (one per image).

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`read_participants`.
    subject_ids : sequence of str
        One per image, in the data's row order.
    id_column : str, default="participant_id"
    name : str
        The argument named in errors.

    Returns
    -------
    pandas.DataFrame
        One row per image, in order (index 0..N-1).

    Raises
    ------
    ValueError
        No image matches any row, some images have no row, or one subject
        has several images.
    """
    images = [_bare(s) for s in subject_ids]
    seen, repeated = set(), []
    for s in images:
        (repeated.append(s) if s in seen else seen.add(s))
    if repeated:
        raise ValueError(
            f"imgs: subject(s) {_list(sorted(set(repeated)))} have several images; "
            "give one image per subject."
        )
    keys = {k: i for i, k in enumerate(table[id_column].map(_bare))}
    missing = [s for s, b in zip(subject_ids, images, strict=True) if b not in keys]
    if len(missing) == len(images):
        raise ValueError(
            f"{name}: no image matches a row of the ID column {id_column!r}: the images' "
            f"subjects are {_list(subject_ids)}, the table's IDs {_list(table[id_column])}."
        )
    if missing:
        raise ValueError(
            f"{name}: {len(missing)} of {len(images)} image(s) have no row in the "
            f"ID column {id_column!r}: {_list(missing)}."
        )
    rows = table.iloc[[keys[b] for b in images]].reset_index(drop=True)
    return rows


def check_columns(table, columns, argument, id_column="participant_id"):
    """``columns`` as a list of str, each a column of ``table`` with no missing value.

    Parameters
    ----------
    table : pandas.DataFrame
        The matched rows.
    columns : str, sequence of str or None
        Column names (a comma-separated string is split).
    argument : str
        The argument named in errors (``confounds``, ``groups``...).
    id_column : str

    Returns
    -------
    list of str
    """
    if columns is None:
        return []
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
        raise TypeError(f"{argument} must be column names (str or list of str), got {columns!r}.")
    out = []
    for col in columns:
        if col not in table.columns or col == id_column:
            raise ValueError(
                f"{argument}: unknown column {col!r}; the participants columns "
                f"are {_list([c for c in table.columns if c != id_column], 20)}."
            )
        missing = table[col].isna().to_numpy()
        if missing.any():
            raise ValueError(
                f"{argument}: column {col!r} is missing (n/a) for {int(missing.sum())} "
                f"subject(s): {_list(table.loc[missing, id_column])}; fill them in or leave "
                "those subjects out."
            )
        if col not in out:
            out.append(col)
    return out


def is_categorical(series):
    """Whether a column holds categories (text, booleans, categoricals), not numbers.

    Parameters
    ----------
    series : pandas.Series

    Returns
    -------
    bool
    """
    pd = _pandas()
    return not (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def numeric_values(table, column, argument):
    """A numeric column as float64.

    Parameters
    ----------
    table : pandas.DataFrame
    column : str
    argument : str
        Named in errors (a text column is a ValueError naming it and the column).

    Returns
    -------
    ndarray of float64
    """
    series = table[column]
    if is_categorical(series):
        levels = sorted({str(v) for v in series})
        raise ValueError(
            f"{argument}: column {column!r} is not numeric (values {_list(levels)}); give "
            "it as groups (categories compared between) or as a confound (one-hot encoded)."
        )
    values = series.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{argument}: column {column!r} has NaN or infinite values.")
    return values


def category_values(table, column):
    """A column as strings (whole numbers as written, e.g. site ``1`` -> ``'1'``).

    Parameters
    ----------
    table : pandas.DataFrame
    column : str

    Returns
    -------
    ndarray of str
    """
    series = table[column]
    pd = _pandas()
    if pd.api.types.is_float_dtype(series) and np.all(np.mod(series.to_numpy(), 1) == 0):
        series = series.astype(np.int64)
    return np.array([str(v) for v in series], dtype=str)
