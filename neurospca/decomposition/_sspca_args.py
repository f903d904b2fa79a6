"""SSPCA's argument helpers: the deprecated ``lam`` and the ``partition``.

Kept apart from :mod:`neurospca.decomposition._sspca` (the model and its
algorithm) so that module stays under the house size.
"""

import warnings

import numpy as np

from ._base import DEPRECATED, _renamed

#: The group quasi-norm exponent (the paper's alpha).
DEFAULT_EXPONENT = 0.5


def _weight_and_exponent(lam, alpha, exponent, owner):
    """``(alpha, exponent)`` when the deprecated ``lam`` may be given.

    Before the rename, ``lam`` was the weight and ``alpha`` the exponent: a call
    that still passes ``lam`` is read with the old meaning, so an ``alpha``
    other than its default is the old exponent (FutureWarning either way).
    """
    if lam is None or (isinstance(lam, str) and lam == DEPRECATED):
        return alpha, exponent
    if alpha is not None:
        if exponent != DEFAULT_EXPONENT:
            raise ValueError(
                f"{owner}: lam (deprecated) was given with both alpha={alpha!r} and "
                f"exponent={exponent!r}; pass alpha (the penalty weight) and exponent "
                "(the group-norm exponent) without lam."
            )
        warnings.warn(
            f"{owner}: with the deprecated `lam`, `alpha` keeps its old meaning (the "
            f"exponent): pass alpha={lam!r} (penalty weight) and exponent={alpha!r}.",
            FutureWarning,
            stacklevel=3,
        )
        exponent = alpha
    return _renamed(lam, alpha, "lam", "alpha", owner), exponent


def _check_partition(partition, r):
    """The (r, n_classes) 0/1 matrix and the class of each component, or Nones."""
    if partition is None:
        return None, None
    if isinstance(partition, (str, bytes)) or not hasattr(partition, "__iter__"):
        raise TypeError(
            "partition must be a sequence of sequences of component indices, e.g. "
            f"[[0, 1], [2]], got {type(partition).__name__}."
        )
    label = np.full(r, -1)
    for m, block in enumerate(partition):
        block = np.atleast_1d(np.asarray(block))
        if block.size == 0 or block.ndim != 1 or not np.issubdtype(block.dtype, np.integer):
            raise ValueError(
                f"partition[{m}] must be a non-empty 1-D sequence of int component "
                f"indices, got {block.tolist()!r}."
            )
        if block.min() < 0 or block.max() >= r:
            raise ValueError(
                f"partition[{m}] holds {block.tolist()}; component indices must be in "
                f"[0, n_components={r})."
            )
        if np.any(label[block] >= 0) or np.unique(block).size != block.size:
            raise ValueError(f"partition[{m}] repeats a component; the blocks must be disjoint.")
        label[block] = m
    if np.any(label < 0):
        raise ValueError(
            f"partition must cover every component; missing {np.flatnonzero(label < 0).tolist()}."
        )
    classes = np.zeros((r, label.max() + 1))
    classes[np.arange(r), label] = 1.0
    return classes, label
