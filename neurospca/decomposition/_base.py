"""What the loading-vector estimators share: least-squares scores and back."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_data

# scikit-learn's declarative parameter validation (``_parameter_constraints``
# checked by ``_fit_context``) is imported here only, the one place that
# depends on these private names.
__all__ = ["LoadingsTransformerMixin", "Integral", "Interval", "Real", "StrOptions",
           "_fit_context"]


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
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=False)
        X = check_data(X, min_samples=1)
        C = self.components_
        return (X - self.mean_) @ C.T @ np.linalg.pinv(C @ C.T)

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
