"""What the loading-vector estimators share: least-squares scores and back."""

import functools
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.base import _fit_context as _sklearn_fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import (
    _check_feature_names,
    _check_n_features,
    check_is_fitted,
    validate_data,
)

from .._utils.validation import check_components, check_data, check_matrix, check_real

# scikit-learn's declarative parameter validation (``_parameter_constraints``
# checked by ``_fit_context``) is imported here only, the one place that
# depends on these private names.
__all__ = [
    "LoadingsTransformerMixin",
    "Integral",
    "Interval",
    "Real",
    "StrOptions",
    "_fit_context",
    "DEPRECATED",
    "_renamed",
    "_deprecated_alias",
]

# default of a renamed estimator parameter (scikit-learn style): the old name
# stays in __init__ with this value, so get_params/clone keep working
DEPRECATED = "deprecated"
_DEPRECATED_OPTION = Hidden(StrOptions({DEPRECATED}))


def _renamed(old_value, new_value, old, new, owner, unset=None):
    """The value of a renamed argument: the old name still works, with a FutureWarning.

    Parameters
    ----------
    old_value : object
        The value passed under the old name (``unset`` or ``"deprecated"`` when
        it was not given); it wins over ``new_value`` when given.
    new_value : object
        The value passed under the new name.
    old, new : str
        The two names.
    owner : str
        The function or estimator, named in the warning.
    unset : object, default=None
        The default of the old name.

    Returns
    -------
    object
        The value to use.
    """
    if old_value is unset or (isinstance(old_value, str) and old_value == DEPRECATED):
        return new_value
    warnings.warn(
        f"{owner}: `{old}` was renamed `{new}` (one naming scheme across estimators, "
        f"see docs/naming.rst); pass {new}={old_value!r}. `{old}` will be removed in a "
        "future release.",
        FutureWarning,
        stacklevel=3,
    )
    return old_value


def _deprecated_alias(new, old, doc, to_old=None, to_new=None):
    """A property ``old`` reading (and, for old saved models, writing) ``new``.

    Parameters
    ----------
    new, old : str
        The attribute's new and old names.
    doc : str
        What the attribute holds (the property's docstring).
    to_old, to_new : callable, optional
        Convert the new value to the old form (e.g. an array of gaps to a
        float), and the other way.

    Returns
    -------
    property
        Reading warns (FutureWarning).
    """

    def fget(self):
        value = getattr(self, new)  # AttributeError while not fitted, as before
        warnings.warn(
            f"{type(self).__name__}.{old} is deprecated; use {new} (see docs/naming.rst).",
            FutureWarning,
            stacklevel=2,
        )
        return value if to_old is None else to_old(value)

    def fset(self, value):
        setattr(self, new, value if to_new is None else to_new(value))

    return property(fget, fset, doc=f"Deprecated alias of ``{new}``: {doc}")


def _fit_context(prefer_skip_nested_validation):
    """scikit-learn's ``_fit_context`` plus what every neurospca ``fit`` needs.

    * complex ``X`` is a ``TypeError`` naming ``X`` (never silently made real);
    * the fit is atomic: if it raises (or is interrupted, e.g. Ctrl-C), every
      attribute of the estimator is restored to its state before the call, so
      a failed refit never leaves ``mean_`` new and ``components_`` old.

    Parameters
    ----------
    prefer_skip_nested_validation : bool
        As in scikit-learn.

    Returns
    -------
    callable
        The decorator of ``fit``.
    """
    sk_decorator = _sklearn_fit_context(prefer_skip_nested_validation=prefer_skip_nested_validation)

    def decorator(fit):
        validated_fit = sk_decorator(fit)

        @functools.wraps(fit)
        def wrapper(self, X, *args, **kwargs):
            check_real(X, "X")
            saved = dict(self.__dict__)
            try:
                return validated_fit(self, X, *args, **kwargs)
            except BaseException:
                self.__dict__.clear()
                self.__dict__.update(saved)
                raise

        return wrapper

    return decorator


class LoadingsTransformerMixin(TransformerMixin):
    """``transform`` / ``inverse_transform`` for estimators with ``components_``
    (K x P, not necessarily orthogonal) and ``mean_``."""

    def transform(self, X):
        """Least-squares scores ``S`` with ``X - mean_ ~ S components_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        check_real(X, "X")
        from ._data import DataOperator, is_out_of_core

        if is_out_of_core(X):  # a memmap or dask array: products by row blocks
            if X.ndim != 2:
                raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D.")
            _check_feature_names(self, X, reset=False)
            _check_n_features(self, X, reset=False)
        else:
            X = validate_data(
                self, X, dtype=(np.float64, np.float32), reset=False, ensure_all_finite=False
            )
            X = check_data(X, min_samples=1, dtype=(np.float64, np.float32))
        op = DataOperator(X, n_threads=getattr(self, "n_threads", None)).centre(self.mean_)
        C = self.components_
        with np.errstate(invalid="ignore", over="ignore"):
            S = op.matmat(C.T)
        if not np.all(np.isfinite(S)):  # out-of-core input: checked through its products
            raise ValueError("X contains NaN or infinite values; remove or impute them.")
        return S @ np.linalg.pinv(C @ C.T)

    def inverse_transform(self, X):
        """Map scores back to data space: ``S components_ + mean_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        check_real(X, "X")
        S = np.asarray(X, dtype=np.float64)
        if S.ndim != 2 or S.shape[1] != self.components_.shape[0]:
            raise ValueError(
                f"X must have shape (n_samples, {self.components_.shape[0]}), got {S.shape}."
            )
        if not np.all(np.isfinite(S)):
            raise ValueError(
                "X (the scores) contains NaN or infinite values; "
                "inverse_transform needs finite scores."
            )
        return S @ self.components_ + self.mean_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


# --------------------------------------------------------------- held-out fit


def reconstruction_error(X, components, mean=None):
    """Held-out Frobenius reconstruction error of a linear decomposition.

    With ``C`` the components (rows, not necessarily orthogonal or of unit
    norm) and ``m`` the training mean,

    .. math::

        \\mathrm{err}(X) = \\| X - \\hat X \\|_F, \\qquad
        \\hat X = m + (X - m)\\, C^T (C C^T)^{+} C,

    i.e. the centred rows of ``X`` are projected orthogonally on the span of
    the loadings and the mean is added back. This is the criterion of the
    paper's Tables I, II and IV (computed on test data). Zero components are
    ignored (the pseudo-inverse drops them).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Test data.
    components : array-like of shape (n_components, n_features) or estimator
        Loadings as rows, or a fitted estimator with ``components_`` (and
        ``mean_``, used when ``mean`` is None).
    mean : array-like of shape (n_features,), optional
        Training mean; default the estimator's ``mean_``, else zero.

    Returns
    -------
    float
    """
    if mean is None and hasattr(components, "mean_"):
        mean = components.mean_
    C = check_components(components)
    X = check_matrix(X, "X", C.shape[1])
    Xc = X if mean is None else X - check_matrix(mean, "mean", C.shape[1])
    # orthonormal basis of the row span of C (SVD, small K x P problem)
    _, s, Vt = np.linalg.svd(C, full_matrices=False)
    cutoff = s.max(initial=0.0) * max(C.shape) * np.finfo(float).eps
    Q = Vt[s > cutoff]  # drops zero (and numerically dependent) directions
    R = Xc - (Xc @ Q.T) @ Q
    return float(np.linalg.norm(R))
