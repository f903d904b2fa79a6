"""Validation shared by every public entry point (DESIGN.md section 9).

Validation happens once at the API boundary; solvers and kernels trust their
inputs.
"""

import numbers

import numpy as np

from .operators import GroupOperator


def check_data(X, name="X", min_samples=2, min_features=1):
    """A finite 2-D float64 array, not constant.

    Raises
    ------
    ValueError
        With a message naming ``name`` for NaN/inf, wrong dimension, too few
        samples or features, and data that is constant across samples.
    """
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError(f"{name} must be a dense array; sparse input is not supported.")
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array: {exc}") from None
    if X.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (n_samples, n_features), got {X.ndim}-D."
        )
    if not np.all(np.isfinite(X)):
        n_bad = int(np.size(X) - np.isfinite(X).sum())
        raise ValueError(
            f"{name} contains {n_bad} NaN or infinite values; remove or impute them."
        )
    if X.shape[0] < min_samples:
        raise ValueError(
            f"{name} has {X.shape[0]} sample(s); at least {min_samples} are required."
        )
    if X.shape[1] < min_features:
        raise ValueError(
            f"{name} has {X.shape[1]} feature(s); at least {min_features} are required."
        )
    return X


def check_not_constant(Xc, name="X"):
    """Raise if centred data ``Xc`` is identically zero (constant data)."""
    if not np.any(Xc):
        raise ValueError(
            f"{name} is constant across samples: every column equals its mean, so "
            "there is no variance to decompose."
        )


def check_n_components(n_components, n_samples, n_features, name="n_components"):
    """An int in [1, min(n_samples, n_features)]."""
    if isinstance(n_components, bool) or not isinstance(n_components, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(n_components).__name__}.")
    limit = min(n_samples, n_features)
    if not 1 <= n_components <= limit:
        raise ValueError(
            f"{name}={n_components} must be between 1 and min(n_samples, n_features)"
            f"={limit}."
        )
    return int(n_components)


def check_nonneg(value, name, strict=False):
    """A finite real number >= 0 (> 0 if ``strict``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    if strict and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}.")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}.")
    return value


def check_operator(operator, n_features, name="operator"):
    """A GroupOperator whose columns match the data's features."""
    if not isinstance(operator, GroupOperator):
        raise TypeError(
            f"{name} must be a neurospca GroupOperator (e.g. from tv_from_mask or "
            f"tv_from_mesh), got {type(operator).__name__}."
        )
    if operator.n_features != n_features:
        raise ValueError(
            f"{name} acts on {operator.n_features} features but the data has "
            f"{n_features} columns; build the operator from the same mask or mesh."
        )
    return operator
