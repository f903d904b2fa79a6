"""Validation shared by every public entry point (DESIGN.md section 9).

Validation happens once at the API boundary; solvers and kernels trust their
inputs.
"""

import numbers

import numpy as np
import scipy.sparse as sp

#: What ``np.asarray`` raises on ragged, exotic or overflowing input.
ARRAY_ERRORS = (ValueError, TypeError, OverflowError, RecursionError)


class ComplexDataError(TypeError, ValueError):
    """Complex input: a ``TypeError`` (wrong kind of number), also a
    ``ValueError`` for scikit-learn's estimator checks."""


def check_real(X, name="X"):
    """Raise TypeError unless ``X`` holds real numbers (or booleans).

    Complex numbers are never silently made real; dates, durations, strings
    (numeric strings included: convert them explicitly), records (e.g. RGB
    voxels) and object arrays of non-numbers are refused too, naming ``name``.
    Non-arrays (images, paths) are not checked here.
    """
    dtype = getattr(X, "dtype", None)
    if dtype is None:
        if isinstance(X, complex):
            dtype = np.dtype(complex)
        elif isinstance(X, (list, tuple)):
            try:
                dtype = np.asarray(X).dtype
            except ARRAY_ERRORS:  # ragged, exotic
                return
        elif hasattr(X, "dtypes"):  # data frames
            _check_frame_dtypes(X, name)
            return
        else:  # images, paths, ...: not arrays, nothing to check here
            return
    if not isinstance(dtype, np.dtype):
        return
    if np.issubdtype(dtype, np.complexfloating):
        raise ComplexDataError(
            f"{name} is complex ({dtype}): Complex data not supported; neurospca works "
            "on real data. Pass the "
            f"real part (np.real({name})) or the magnitude (np.abs({name})) explicitly."
        )
    what = _NOT_NUMBERS.get(dtype.kind)
    if what is None and dtype.kind == "O":
        what = _object_kind(X)
    if what is not None:
        raise TypeError(
            f"{name} holds {what} ({dtype}); neurospca works on real numbers. "
            f"Convert {name} explicitly (e.g. np.asarray({name}, dtype=float) "
            "for numbers stored as text)."
        )


_NOT_NUMBERS = {
    "M": "dates",
    "m": "durations",
    "U": "strings",
    "S": "byte strings",
    "V": "records (e.g. RGB values)",
}


def _object_kind(X):
    """``"strings"`` when an object array holds text (numeric or not), else None
    (other objects fail in the caller's conversion to float)."""
    try:
        flat = np.asarray(X, dtype=object).ravel()
    except ARRAY_ERRORS:  # pragma: no cover
        return None
    if any(isinstance(item, (str, bytes, np.str_, np.bytes_)) for item in flat):
        return "strings"
    return None


def _check_frame_dtypes(X, name):
    """A data frame's columns: complex is a ComplexDataError, text, dates,
    categories and other non-numbers a TypeError naming the first such column."""
    dtypes = X.dtypes
    pairs = list(dtypes.items()) if hasattr(dtypes, "items") else [(None, dtypes)]
    for col, d in pairs:
        kind = getattr(d, "kind", "O")
        if kind == "c":
            raise ComplexDataError(
                f"{name} is complex (column {col!r}): Complex data not "
                "supported; neurospca works on real data."
            )
        if kind not in "biuf":
            raise TypeError(
                f"{name} column {col!r} holds {d} values; neurospca works on "
                f"real numbers. Convert it explicitly (e.g. "
                f"{name}.astype(float) for numbers stored as text)."
            )


def check_data(X, name="X", min_samples=2, min_features=1, dtype=np.float64):
    """A finite 2-D float array, not constant.

    ``dtype`` is the type returned: one type (the default float64), or a tuple
    of types kept as they are (others are converted to the first), e.g.
    ``(np.float64, np.float32)`` keeps float32 data float32 (no copy).
    Finiteness and scale come from one scan (the minimum and maximum).

    Raises
    ------
    ValueError
        With a message naming ``name`` for NaN/inf, wrong dimension, too few
        samples or features, and data that is constant across samples.
    """
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError(f"{name} must be a dense array; sparse input is not supported.")
    check_real(X, name)
    kept = tuple(np.dtype(d) for d in (dtype if isinstance(dtype, (tuple, list)) else (dtype,)))
    try:
        X = np.asarray(X)
        X = X.astype(X.dtype if X.dtype in kept else kept[0], copy=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array: {exc}") from None
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got {X.ndim}-D.")
    top = _abs_max(X)
    if not np.isfinite(top):
        n_bad = int(np.size(X) - np.count_nonzero(np.isfinite(X)))
        raise ValueError(f"{name} contains {n_bad} NaN or infinite values; remove or impute them.")
    if X.shape[0] < min_samples:
        raise ValueError(f"{name} has {X.shape[0]} sample(s); at least {min_samples} are required.")
    check_scale_value(top, X.size, name)
    if X.shape[1] < min_features:
        raise ValueError(
            f"{name} has {X.shape[1]} feature(s); at least {min_features} are required."
        )
    return X


def _abs_max(X):
    """``max |X|`` from the minimum and maximum (no temporary; NaN propagates)."""
    if X.size == 0:
        return 0.0
    return float(max(abs(float(np.max(X))), abs(float(np.min(X)))))


def check_scale(X, name="X"):
    """Raise if sums of squares of ``X`` would overflow or underflow float64.

    Every estimator forms Gram matrices or norms (``sum x^2``): entries of
    ``|X| >~ 1e154 / sqrt(n_samples n_features)`` overflow them and
    ``0 < max|X| < 1e-150`` underflows them, which would surface as a
    ``LinAlgError`` or NaN deep inside. Rescaling the data is the fix.
    """
    if X.size == 0:
        return
    check_scale_value(_abs_max(X), X.size, name)


def check_scale_value(top, size, name="X"):
    """:func:`check_scale` from ``max |X|`` and the number of entries."""
    limit = np.sqrt(np.finfo(np.float64).max / (4.0 * size)) / 16.0
    if top > limit:
        raise ValueError(
            f"{name} has entries up to {top:.3g}: its sums of squares overflow float64 "
            f"(limit ~{limit:.1e} for this size). Rescale {name}, e.g. {name} / "
            f"np.abs({name}).max(); the components do not depend on the scale."
        )
    if 0.0 < top < 1e-150:
        raise ValueError(
            f"{name} has entries of at most {top:.3g}: its sums of squares underflow "
            f"float64. Rescale {name}, e.g. {name} / np.abs({name}).max()."
        )


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
            f"{name}={n_components} must be between 1 and min(n_samples, n_features)={limit}."
        )
    return int(n_components)


def check_int(value, name, *, minimum=None, maximum=None):
    """An int (not a bool) in ``[minimum, maximum]`` (either bound optional).

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        The argument's name, used in the error message.
    minimum, maximum : int, optional
        Inclusive bounds.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``value`` is not an integer (bools are rejected).
    ValueError
        If ``value`` is out of range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r}).")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if maximum is None:
            rng = f">= {minimum}"
        elif minimum is None:
            rng = f"<= {maximum}"
        else:
            rng = f"between {minimum} and {maximum}"
        raise ValueError(f"{name} must be an int {rng}, got {value}.")
    return value


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


# ---------------------------------------------------------------------------
# Arrays that enter compiled kernels: operators, prox inputs and warm starts.
# Everything below is checked once at the public boundary; the nogil kernels
# of neurospca.solvers trust it (an index out of range there is a segfault).
# ---------------------------------------------------------------------------

_INT32_MAX = np.iinfo(np.int32).max


def _check_index_array(arr, name, size_name):
    arr = np.asarray(arr)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got {arr.ndim}-D.")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(
            f"{name} must hold integers, got dtype {arr.dtype}; build the matrix "
            f"with integer {size_name}."
        )
    return arr.astype(np.int64, copy=False)


def _check_sparse_header(matrix, name):
    """Shape and data type of a sparse ``matrix``; returns its shape and data."""
    if not sp.issparse(matrix):
        raise TypeError(
            f"{name} must be a scipy.sparse matrix, got {type(matrix).__name__}; "
            "operators are never dense."
        )
    shape = matrix.shape
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError(f"{name} must be 2-D, got shape {shape}.")
    if max(int(n) for n in shape) >= _INT32_MAX:
        raise ValueError(f"{name} of shape {shape} is too large for the int32 kernels.")
    data = np.asarray(matrix.data)
    if np.issubdtype(data.dtype, np.complexfloating):
        raise TypeError(f"{name} is complex ({data.dtype}); operators must be real.")
    if not (np.issubdtype(data.dtype, np.number) or data.dtype == bool):
        raise TypeError(f"{name} must hold numbers, got dtype {data.dtype}.")
    return shape, data


def _compressed_sizes(matrix, fmt, shape, data, name):
    """``(n_major, n_minor)`` of a CSR, CSC or BSR matrix (BSR: in blocks)."""
    n_rows, n_cols = (int(n) for n in shape)
    if fmt != "bsr":
        return (n_rows, n_cols) if fmt == "csr" else (n_cols, n_rows)
    br, bc = matrix.blocksize
    if br < 1 or bc < 1 or n_rows % br or n_cols % bc:
        raise ValueError(f"{name}: blocksize {matrix.blocksize} does not divide shape {shape}.")
    if data.ndim != 3 or data.shape[1:] != (br, bc):
        raise ValueError(
            f"{name}: BSR data of shape {data.shape} does not match blocksize {matrix.blocksize}."
        )
    return n_rows // br, n_cols // bc


def _check_index_range(arr, n, label):
    """Every entry of the index array ``arr`` in ``[0, n)``."""
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{label} must lie in [0, {n}), got values in [{arr.min()}, {arr.max()}].")


def _check_compressed(matrix, fmt, shape, data, name):
    """The raw arrays of a CSR, CSC or BSR matrix: ``indptr`` from 0,
    non-decreasing and consistent with ``indices`` and ``data``, indices in
    range, finite data."""
    n_major, n_minor = _compressed_sizes(matrix, fmt, shape, data, name)
    indptr = _check_index_array(matrix.indptr, f"{name}.indptr", "indptr")
    indices = _check_index_array(matrix.indices, f"{name}.indices", "indices")
    if indptr.size != n_major + 1:
        raise ValueError(
            f"{name}.indptr has {indptr.size} entries; a {fmt.upper()} matrix of "
            f"shape {shape} needs {n_major + 1}."
        )
    if indptr[0] != 0:
        raise ValueError(f"{name}.indptr must start at 0, got {indptr[0]}.")
    if np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name}.indptr must be non-decreasing (monotone).")
    nnz = int(indptr[-1])
    if nnz > indices.size or nnz > data.shape[0]:
        raise ValueError(
            f"{name}.indptr ends at {nnz} but {name} has only {indices.size} "
            f"indices and {data.shape[0]} values."
        )
    _check_index_range(indices[:nnz], n_minor, f"{name}.indices")
    if not np.all(np.isfinite(data[:nnz])):
        raise ValueError(f"{name} contains NaN or infinite entries.")


def _check_coo(matrix, shape, data, name):
    """The raw arrays of a COO matrix: row, col and data of one length, indices
    in range, finite data."""
    coords = getattr(matrix, "coords", None)
    if coords is None:
        coords = (matrix.row, matrix.col)
    if len(coords) != 2:
        raise ValueError(f"{name} must be 2-D.")
    row = _check_index_array(coords[0], f"{name}.row", "row indices")
    col = _check_index_array(coords[1], f"{name}.col", "column indices")
    if not row.size == col.size == data.size:
        raise ValueError(f"{name}: row, col and data have different lengths.")
    _check_index_range(row, int(shape[0]), f"{name}.row indices")
    _check_index_range(col, int(shape[1]), f"{name}.col indices")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} contains NaN or infinite entries.")


def _canonical_csr(matrix, name):
    """A float64 copy of a checked ``matrix`` as CSR with summed duplicates,
    sorted int32 indices and entries whose squares do not overflow."""
    try:  # always a copy: the caller's matrix is never modified or frozen
        out = sp.csr_matrix(matrix, dtype=np.float64, copy=True)
    except (TypeError, ValueError, IndexError, OverflowError) as exc:
        raise ValueError(f"{name} is not a valid sparse matrix: {exc}") from None
    out.sum_duplicates()
    out.sort_indices()
    if not np.all(np.isfinite(out.data)):
        raise ValueError(
            f"{name} contains NaN or infinite entries (or entries that "
            "overflow when duplicates are summed)."
        )
    if out.nnz and float(np.abs(out.data).max()) > 1e150:
        raise ValueError(
            f"{name} has entries up to {float(np.abs(out.data).max()):.1e}: "
            "their squares (the operator's norm) overflow; rescale the "
            "operator (a penalty weight can absorb the scale)."
        )
    if out.nnz >= _INT32_MAX:
        raise ValueError(f"{name} has {out.nnz} non-zeros, too many for the int32 kernels.")
    out.indices = out.indices.astype(np.int32, copy=False)
    out.indptr = out.indptr.astype(np.int32, copy=False)
    return out


def check_sparse_matrix(matrix, name="matrix"):
    """A valid real sparse matrix, returned as canonical CSR (float64, int32).

    Checks the raw arrays *before* any SciPy conversion (SciPy's own C++
    routines trust them too): index dtypes, ``indptr`` starting at 0,
    non-decreasing and consistent with ``indices``/``data``, every column (row)
    index in ``[0, n)``, real and finite data. Then sums duplicates and sorts
    the indices.

    Raises
    ------
    TypeError
        Not a SciPy sparse matrix, complex data or non-integer indices.
    ValueError
        Inconsistent or out-of-range indices, NaN/inf entries, or a size that
        does not fit the int32 kernels. The message names ``name``.
    """
    shape, data = _check_sparse_header(matrix, name)
    if matrix.format in ("csr", "csc", "bsr"):
        _check_compressed(matrix, matrix.format, shape, data, name)
    elif matrix.format == "coo":
        _check_coo(matrix, shape, data, name)
    # lil, dok and dia are converted by SciPy in Python code, which checks them.
    return _canonical_csr(matrix, name)


def check_group_ptr(group_ptr, n_rows, name="group_ptr"):
    """int64 group pointers: 1-D, start 0, non-decreasing, end at ``n_rows``."""
    group_ptr = np.asarray(group_ptr)
    if group_ptr.ndim != 1 or group_ptr.size < 1:
        raise ValueError(f"{name} must be a 1-D array of length n_groups + 1.")
    if not np.issubdtype(group_ptr.dtype, np.integer):
        raise TypeError(f"{name} must hold integers, got dtype {group_ptr.dtype}.")
    group_ptr = group_ptr.astype(np.int64)
    if group_ptr[0] != 0 or group_ptr[-1] != n_rows:
        raise ValueError(
            f"{name} must start at 0 and end at the number of rows "
            f"({n_rows}), got {group_ptr[0]} and {group_ptr[-1]}."
        )
    if np.any(np.diff(group_ptr) < 0):
        raise ValueError(f"{name} must be non-decreasing.")
    return group_ptr


def norm2_lower_bound(matrix):
    """A cheap lower bound of ``||A||_2^2``: the largest squared row or column norm."""
    if matrix.nnz == 0:
        return 0.0
    sq = matrix.multiply(matrix)
    rows = np.asarray(sq.sum(axis=1)).ravel()
    cols = np.asarray(sq.sum(axis=0)).ravel()
    return float(max(rows.max(), cols.max()))


def check_norm2(norm2, matrix, name="norm2"):
    """A finite upper bound of ``||A||_2^2``, at least the cheap lower bound.

    A ``norm2`` below the true squared norm makes the dual step too long and the
    certified gaps meaningless, so a value smaller than the largest squared row
    or column norm (a lower bound of ``||A||^2``) is rejected, as is 0 for a
    non-zero matrix.
    """
    if isinstance(norm2, bool) or not isinstance(norm2, numbers.Real):
        raise TypeError(f"{name} must be a real number or None, got {type(norm2).__name__}.")
    norm2 = float(norm2)
    if not np.isfinite(norm2) or norm2 < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {norm2!r}.")
    low = norm2_lower_bound(matrix)
    if norm2 < low * (1.0 - 1e-9):
        raise ValueError(
            f"{name}={norm2!r} is smaller than a lower bound of ||A||_2^2 "
            f"({low!r}, the largest squared row or column norm of the matrix); "
            f"{name} must be an upper bound of the squared spectral norm. Pass "
            "norm2=None to compute it."
        )
    return norm2


def check_vector(x, size, name, dtype=np.float64):
    """A finite real 1-D float64 array of length ``size`` (a fresh copy)."""
    check_real(x, name)
    try:
        arr = np.array(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array: {exc}") from None
    if arr.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return np.ascontiguousarray(arr)


def check_finite_array(x, name):
    """A real, finite float64 array (any shape; a fresh copy)."""
    check_real(x, name)
    try:
        arr = np.array(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array: {exc}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return arr


def check_matrix(arr, name, n_features=None):
    """A finite float64 2-D array (a 1-D array is one row), optionally with
    ``n_features`` columns."""
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values; remove them first.")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} features (columns), expected {n_features}.")
    return arr


def check_components(components, name="components"):
    """Loadings as a finite (n_components, n_features) float64 array, from an
    array or from a fitted estimator's ``components_``."""
    if hasattr(components, "components_"):
        return check_matrix(components.components_, f"{name}.components_")
    return check_matrix(components, name)


def check_warm_start(x, size, name):
    """Validate a solver warm start (``v0`` or ``w0``): shape, real, finite."""
    return check_vector(x, size, name)


def check_tv_kind(kind):
    """``kind`` of a surface TV operator: ``"edges"`` or ``"gradient"``, else a
    ValueError naming ``kind``."""
    if kind not in ("edges", "gradient"):
        raise ValueError(f"kind must be 'edges' or 'gradient', got {kind!r}.")
    return kind
