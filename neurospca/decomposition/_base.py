"""What the loading-vector estimators share: least-squares scores and back."""

import functools
from numbers import Integral, Real

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.base import _fit_context as _sklearn_fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_feature_names, _check_n_features, check_is_fitted, validate_data,
)

from .._validation import check_data, check_real

# scikit-learn's declarative parameter validation (``_parameter_constraints``
# checked by ``_fit_context``) is imported here only, the one place that
# depends on these private names.
__all__ = ["LoadingsTransformerMixin", "Integral", "Interval", "Real", "StrOptions",
           "_fit_context"]


def _fit_context(prefer_skip_nested_validation):
    """scikit-learn's ``_fit_context`` plus what every neurospca ``fit`` needs.

    * complex ``X`` is a ``TypeError`` naming ``X`` (never silently made real);
    * the fit is atomic: if it raises (or is interrupted, e.g. Ctrl-C), every
      attribute of the estimator is restored to its state before the call, so
      a failed refit never leaves ``mean_`` new and ``components_`` old.
    """
    sk_decorator = _sklearn_fit_context(
        prefer_skip_nested_validation=prefer_skip_nested_validation)

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
                raise ValueError(
                    f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D."
                )
            _check_feature_names(self, X, reset=False)
            _check_n_features(self, X, reset=False)
        else:
            X = validate_data(self, X, dtype=(np.float64, np.float32), reset=False,
                              ensure_all_finite=False)
            X = check_data(X, min_samples=1, dtype=(np.float64, np.float32))
        op = DataOperator(X).centre(self.mean_)
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
        return S @ self.components_ + self.mean_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
