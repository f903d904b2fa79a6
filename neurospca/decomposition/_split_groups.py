"""Rows that belong together: the groups every split half keeps whole (issue 20).

``stability_`` and ``alpha_rel="auto"`` compare fits on two halves of the
rows. Random rows are right for maps of different participants; they are not
for the time points of one fMRI run (neighbouring volumes are near-copies, so
each half holds a copy of the other: measured on brainspace's resting-state
run, ``stability_`` 0.94 and 0.79 against 0.43 actual between the run's first
and second halves; benchmarks/RESULTS.md, issue 20 rounds 8-9), nor for
repeated sessions of one subject. ``SPCATV.fit(X, split_groups=...)`` names
them, and every split the fit draws (the walk's halves, the refit of
``stability_``, the subsamples at a fixed penalty) keeps each group in one
half (:func:`group_halves`, :func:`group_blocks`).

Why an argument of ``fit`` and not of the constructor: the labels are one per
row of *this* ``X`` (sample-aligned metadata, as ``groups`` of
scikit-learn's ``cross_validate`` and ``GroupKFold.split``, or
``sample_weight``), so they belong with the data; a parameter would be lost or
wrong on a refit with other rows, and ``clone``, ``get_params`` and grid
searches would carry an array the size of the data. The one-series
convenience (``"blocks"`` or a number of contiguous blocks) is a property of
the rows too, so it is given in the same place.

The fit stores the validated labels on the estimator for its own duration
(``_split_groups``, removed when ``fit`` returns, as :func:`._warm.start_from`
hands a start to the next fit); :func:`groups_of` reads them where halves are
drawn.
"""

import contextlib
import numbers

import numpy as np
from sklearn.utils import check_random_state

#: ``split_groups="blocks"``: the rows are cut, in order, into this many
#: contiguous blocks (each half five of them; measured on brainspace's
#: resting-state run, issue 20 round 8: halves of 10 blocks fitted cold gave
#: 0.43 and 0.37 against 0.43 actual).
SPLIT_BLOCKS = 10


def check_split_groups(split_groups, n_samples):
    """Validated row groups: integer codes in order of first appearance, or None.

    Parameters
    ----------
    split_groups : None, "blocks", int or array-like of shape (n_samples,)
        None: rows are independent (random halves, unchanged). ``"blocks"``:
        :data:`SPLIT_BLOCKS` contiguous blocks of rows in order (one time
        series). An int ``b >= 2``: ``b`` contiguous blocks. Labels: one
        per row (numbers or strings; rows with the same label stay in the
        same half).
    n_samples : int
        Rows of ``X``.

    Returns
    -------
    ndarray of int of shape (n_samples,) or None

    Raises
    ------
    TypeError
        ``split_groups`` of another type (e.g. a bool or a float).
    ValueError
        An unknown string, fewer than 2 or more than ``n_samples`` blocks,
        labels not 1-D or not one per row, a missing (NaN/None) label, a
        single group, or a group holding more than half the rows (each
        message names ``split_groups``).
    """
    if split_groups is None:
        return None
    if isinstance(split_groups, str):
        if split_groups != "blocks":
            raise ValueError(
                f"split_groups must be None, 'blocks', a number of blocks or one label per "
                f"row, got {split_groups!r}."
            )
        split_groups = SPLIT_BLOCKS
    if isinstance(split_groups, bool | np.bool_) or isinstance(split_groups, float):
        raise TypeError(
            f"split_groups must be None, 'blocks', an int number of blocks or one label "
            f"per row, got {split_groups!r}."
        )
    if isinstance(split_groups, numbers.Integral):
        codes, names = _blocks(int(split_groups), n_samples), None
    else:
        codes, names = _labels(split_groups, n_samples)
    _check_sizes(codes, names)
    return codes


def _blocks(n_blocks, n_samples):
    """Codes of ``n_blocks`` contiguous blocks (``np.array_split``'s sizes)."""
    if not 2 <= n_blocks <= n_samples:
        raise ValueError(
            f"split_groups: {n_blocks} blocks of {n_samples} rows; give between 2 and "
            f"{n_samples} blocks."
        )
    sizes = [len(b) for b in np.array_split(np.arange(n_samples), n_blocks)]
    return np.repeat(np.arange(n_blocks), sizes)


def _labels(labels, n_samples):
    """Codes of per-row labels (missing ones refused) and the label of each code."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] != n_samples:
        raise ValueError(
            f"split_groups: got labels of shape {labels.shape} for {n_samples} rows of X; "
            "give one label per row."
        )
    missing = _missing(labels)
    if missing.any():
        raise ValueError(
            f"split_groups: missing label (NaN/None) at row {int(np.flatnonzero(missing)[0])}; "
            "give every row a group."
        )
    first = {}
    codes = np.array([first.setdefault(x, len(first)) for x in labels.tolist()], dtype=np.intp)
    return codes, list(first)


def _check_sizes(codes, names=None):
    """At least two groups, none holding more than half the rows."""
    sizes = np.bincount(codes)
    if sizes.size < 2:
        raise ValueError(
            "split_groups: every row is in the same group; split halves need at least two groups."
        )
    big = int(np.argmax(sizes))
    if 2 * sizes[big] > codes.size:
        name = f"{names[big]!r}" if names is not None else f"block {big}"
        raise ValueError(
            f"split_groups: group {name} holds {sizes[big]} of {codes.size} rows, more than "
            "half: no split keeps it whole with comparable halves."
        )


def _missing(labels):
    """True where a label is NaN or None."""
    if labels.dtype.kind == "f":
        return np.isnan(labels)
    if labels.dtype.kind == "O":
        return np.array([x is None or (isinstance(x, float) and x != x) for x in labels])
    return np.zeros(labels.shape, dtype=bool)


def groups_of(estimator):
    """The validated row groups of the fit under way (None: independent rows)."""
    return getattr(estimator, "_split_groups", None)


def half_rows(groups, random_state=None):
    """Rows of two halves that keep every group whole.

    The groups are taken in a random order (``random_state``) and each is put
    in the half with fewer rows so far (the first in half A): halves as equal as
    the groups allow (five blocks each for :data:`SPLIT_BLOCKS` blocks).

    Parameters
    ----------
    groups : ndarray of int of shape (n_samples,)
        From :func:`check_split_groups`.
    random_state : int, RandomState or None

    Returns
    -------
    rows_a, rows_b : ndarray of int
        Sorted row indices, disjoint, covering every row.
    """
    sizes = np.bincount(groups)
    in_a = np.zeros(sizes.size, dtype=bool)
    n_a = n_b = 0
    for g in check_random_state(random_state).permutation(sizes.size):
        if n_a <= n_b:
            in_a[g], n_a = True, n_a + sizes[g]
        else:
            n_b += sizes[g]
    mask = in_a[groups]
    return np.flatnonzero(mask), np.flatnonzero(~mask)


def group_halves(X, groups, random_state=None):
    """The two halves of ``X`` of :func:`half_rows` (copies of their rows; a
    dask array stays lazy, a memmap's halves are read into memory)."""
    rows_a, rows_b = half_rows(groups, random_state)
    if isinstance(X, np.memmap):
        return np.asarray(X[rows_a]), np.asarray(X[rows_b])
    if not hasattr(X, "dask"):
        X = np.asarray(X)
    return X[rows_a], X[rows_b]


def group_blocks(groups, n_blocks):
    """``n_blocks`` blocks of rows made of whole groups, or None if there are fewer groups.

    The groups, in order of first appearance, are cut into ``n_blocks`` runs
    of about equal row counts (a group goes to the block holding its middle
    row); with exactly ``n_blocks`` groups each is a block (``"blocks"``
    then gives the subsamples' own contiguous blocks). None when a block
    would be empty.

    Parameters
    ----------
    groups : ndarray of int of shape (n_samples,)
    n_blocks : int

    Returns
    -------
    list of ndarray of int or None
    """
    sizes = np.bincount(groups)
    if sizes.size < n_blocks:
        return None
    middle = np.cumsum(sizes) - sizes / 2.0
    block_of = np.minimum((n_blocks * middle / groups.size).astype(int), n_blocks - 1)
    if sizes.size == n_blocks:
        block_of = np.arange(n_blocks)
    rows = block_of[groups]
    blocks = [np.flatnonzero(rows == b) for b in range(n_blocks)]
    return None if any(b.size == 0 for b in blocks) else blocks


def describe(groups):
    """A short phrase for messages and reports: how the halves were drawn."""
    if groups is None:
        return "random rows"
    if np.all(np.diff(groups) >= 0):
        return f"{np.bincount(groups).size} contiguous blocks of rows"
    return f"{np.bincount(groups).size} groups of rows kept whole"


@contextlib.contextmanager
def row_groups(estimator, X, split_groups):
    """The validated ``split_groups`` on ``estimator`` for the fit under way.

    Sets ``_split_groups`` (read by :func:`groups_of`) for the duration of the
    fit and ``split_groups_`` when it succeeds. An estimator that does not
    resample rows (``_resamples_rows`` False) takes only None.
    """
    if not estimator._resamples_rows:
        if split_groups is not None:
            raise ValueError(
                f"split_groups: {type(estimator).__name__} draws no split halves; "
                "pass None (SPCATV takes row groups)."
            )
        yield
        return
    n = None if split_groups is None else (X.shape[0] if hasattr(X, "shape") else len(X))
    estimator._split_groups = check_split_groups(split_groups, n)
    try:
        yield
        estimator.split_groups_ = describe(estimator._split_groups)
    finally:
        estimator.__dict__.pop("_split_groups", None)


def permute_groups(X, groups, gen, out, width=4096):
    """``out[:, j]`` = column ``j`` of ``X`` with whole groups of rows moved: each
    column's groups are put in an independent random order among the groups of the
    same size, each group's rows kept in their order (the noise floor of
    ``stability_`` with ``split_groups``).

    Permuting single rows would break the groups apart: the permuted copies of
    data whose groups are near-copies (a subject's sessions, neighbouring time
    points) have more independent rows than the data, so their rank-one fits
    are weaker and noise components of the data pass the floor (measured:
    noise-only 12 x 12 data with two sessions per subject, issue 20 round 9).
    Moving whole groups keeps what the rows of a group share and removes the
    co-variation between columns (up to the chance that two columns keep a
    group in place). A group whose size no other group has stays in place.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    groups : ndarray of int of shape (n_samples,)
    gen : numpy.random.Generator
    out : ndarray like ``X``
    width : int
        Columns at a time.

    Returns
    -------
    out
    """
    sizes = np.bincount(groups)
    order = np.argsort(groups, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    classes = []
    for size in np.unique(sizes):
        members = np.flatnonzero(sizes == size)
        classes.append(np.stack([order[starts[g] : starts[g] + size] for g in members]))
    for s in range(0, X.shape[1], width):
        cols = np.arange(s, min(s + width, X.shape[1]))
        for rows in classes:  # (groups of this size, size)
            perm = np.argsort(gen.random((rows.shape[0], cols.size)), axis=0)
            src = rows[perm]  # (groups, columns, size)
            dst = np.broadcast_to(rows[:, None, :], src.shape)
            out[dst, cols[None, :, None]] = X[src, cols[None, :, None]]
    return out
