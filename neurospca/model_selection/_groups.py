"""``select_penalty(..., split_groups=...)``: halves that keep groups of rows together (issue 20).

The estimators' ``fit(X, split_groups=...)`` keeps each group of rows (a time
series' blocks, a subject's sessions) in one split half
(``neurospca.decomposition``'s ``_split_groups``). ``select_penalty`` draws its
own halves (the walk, the returned models' stability and held-out variance,
the default fit) and takes the same argument: :func:`search_groups` validates
it once, and the search runs on a clone of the estimator that carries the
groups (``row_groups``), so that every half and subsample it draws keeps them
whole and its choice is the one a fit with ``split_groups`` would judge.
"""

from ..decomposition import check_split_groups


def search_groups(estimator, kind, X, split_groups, n_rows, rule):
    """The validated row groups of the search (None: independent rows).

    Parameters
    ----------
    estimator : SPCATV or ImageSPCATV
        As given to ``select_penalty``.
    kind : {"matrix", "image"}
    X : array-like or images
        As given to ``select_penalty``.
    split_groups : "auto", None, "blocks", int or array-like
        "auto": what the ImageSPCATV's ``fit`` would use for these images
        (``split_groups_for``: contiguous blocks for a single 4-D NIfTI time
        series, else None); None for an array.
    n_rows : int
        Rows of the data matrix.
    rule : str
        ``select_penalty``'s rule: only ``"reproducibility"`` draws halves.

    Returns
    -------
    ndarray of int of shape (n_rows,) or None

    Raises
    ------
    ValueError
        Bad ``split_groups`` (``check_split_groups``), or groups with a
        K-fold rule (pass a group-aware ``cv`` instead).
    """
    if isinstance(split_groups, str) and split_groups == "auto":
        split_groups = estimator.split_groups_for(X) if kind == "image" else None
    groups = check_split_groups(split_groups, n_rows)
    if groups is not None and rule != "reproducibility":
        raise ValueError(
            f"split_groups: rule={rule!r} draws K folds, not halves; pass a group-aware "
            "cv instead (e.g. list(GroupKFold(5).split(X, groups=labels)))."
        )
    return groups
