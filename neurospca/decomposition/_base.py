"""What the loading-vector estimators share: least-squares scores and back."""

import functools
import logging
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.base import _fit_context as _sklearn_fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import (
    _check_feature_names,
    _check_n_features,
    check_is_fitted,
    validate_data,
)

from .._utils.validation import check_components, check_data, check_matrix, check_real
from ._split_groups import row_groups

# scikit-learn's declarative parameter validation (``_parameter_constraints``
# checked by ``_fit_context``) is imported here only, the one place that
# depends on these private names.
__all__ = [
    "ComponentsEstimator",
    "LoadingsTransformerMixin",
    "adjusted_variance",
    "progress",
    "Integral",
    "Interval",
    "Real",
    "StrOptions",
    "_fit_context",
    "DEPRECATED",
    "_renamed",
    "_deprecated_alias",
]

logger = logging.getLogger("neurospca")

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


# --------------------------------------------------------------- the contract


def progress(owner, verbose, msg, *args):
    """A progress line of ``verbose`` estimators, as SPCATV writes them.

    An INFO record on the ``"neurospca"`` logger, also printed to stdout
    (prefixed ``[owner]``) when nothing is attached to that logger
    (scikit-learn-style ``verbose``). Nothing when ``verbose`` is 0.

    Parameters
    ----------
    owner : str
        The estimator or function, e.g. ``"SSPCA"``.
    verbose : int or bool
        The estimator's ``verbose``.
    msg : str
        A %-format string.
    *args : object
        Its arguments.
    """
    if not verbose:
        return
    logger.info(msg, *args)
    if not logger.handlers:
        print(f"[{owner}] " + msg % args, flush=True)


def adjusted_variance(C, components):
    """Adjusted variance (Zou et al. 2006) of components, from a covariance.

    The rows of ``components`` are normalised to unit norm (zero rows stay
    zero); ``R`` is the triangular factor of ``W C W^T`` (the Gram matrix of
    the scores per sample) and component k explains ``R_kk^2``, the variance
    of its scores not already explained by the components before it. With
    ``Q`` the orthonormalised scores, ``sum_k R_kk^2 <= ||Xc^T Q||_F^2 <=
    tr C``: the ratios lie in [0, 1] and sum to at most 1.

    Parameters
    ----------
    C : ndarray of shape (n_features, n_features)
        The (centred) covariance, or any PSD matrix.
    components : ndarray of shape (n_components, n_features)
        The loadings or atoms, as rows.

    Returns
    -------
    variance : ndarray of shape (n_components,)
    ratio : ndarray of shape (n_components,)
        ``variance / tr C`` (zeros when ``tr C`` is 0).
    """
    norms = np.linalg.norm(components, axis=1, keepdims=True)
    W = components / np.where(norms > 0, norms, 1.0)
    M = W @ C @ W.T
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    root = (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T
    R = np.linalg.qr(root, mode="r")
    var = np.diag(R) ** 2
    total = float(np.trace(C))
    return var, var / total if total > 0 else np.zeros_like(var)


def data_adjusted_variance(Xc, components):
    """:func:`adjusted_variance` from data: QR of the scores ``Xc W^T``.

    Parameters
    ----------
    Xc : ndarray of shape (n_samples, n_features)
        The data as the estimator models it (centred, or not for a model
        without a mean).
    components : ndarray of shape (n_components, n_features)

    Returns
    -------
    variance, ratio : ndarray of shape (n_components,)
        Per sample (divided by ``n_samples``), and over ``||Xc||_F^2``.
    """
    norms = np.linalg.norm(components, axis=1, keepdims=True)
    W = components / np.where(norms > 0, norms, 1.0)
    n = Xc.shape[0]
    R = np.linalg.qr(Xc @ W.T, mode="r")
    var = np.abs(np.diag(R)) ** 2 / n
    total = float(np.sum(Xc * Xc)) / n
    return var, var / total if total > 0 else np.zeros_like(var)


class ComponentsEstimator(
    ClassNamePrefixFeaturesOutMixin, LoadingsTransformerMixin, BaseEstimator, metaclass=ABCMeta
):
    """The contract of neurospca's five estimators (docs/naming.rst).

    One :meth:`fit`: the parameters are validated once against the merged
    ``_parameter_constraints`` (the shared ones here, each estimator adds
    its own), the fit is atomic (see :func:`_fit_context`), the estimator's
    ``_fit(X)`` validates the data once (``validate_data``: it records
    ``n_features_in_`` and ``feature_names_in_``) and fits, then the shared
    fitted names are set. After ``fit`` every estimator has
    ``components_`` (n_components_ x n_features_in_), ``n_components_``,
    ``explained_variance_ratio_``, ``converged_`` (a bool; per component
    for SPCATV, whose components are fitted one problem each), ``n_iter_``,
    ``n_features_in_``; ``transform``, ``inverse_transform``,
    ``get_feature_names_out`` and ``set_output`` work on all.

    ``_fit(X)`` must set ``components_``, ``explained_variance_ratio_``,
    ``converged_`` and ``n_iter_`` (and ``mean_`` for the least-squares
    ``transform``), and warn with a ``ConvergenceWarning`` when it sets
    ``converged_`` False.
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    #: Whether ``fit`` takes ``split_groups``: the estimator resamples rows
    #: (:class:`~neurospca.SPCATV`'s ``stability_`` and ``alpha_rel="auto"``).
    _resamples_rows = False

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, split_groups=None):
        """Fit the model on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training data. What else an estimator accepts (a covariance
            matrix with ``input="covariance"``; a ``numpy.memmap`` or a
            ``dask.array`` for :class:`~neurospca.SPCATV`) is in its class
            docstring.
        y : None
            Ignored; present for scikit-learn's API (pipelines, grid searches).
        split_groups : None, "blocks", int or array-like of shape (n_samples,), default=None
            Rows that belong together, kept in the same half by every split the
            fit draws (the halves of ``alpha_rel="auto"``, of ``stability_`` and
            its refit, the subsamples at a fixed penalty). None: the rows are
            independent (maps of different participants; random halves).
            ``"blocks"``: one time series, cut in order into 10 contiguous blocks
            (neighbouring time points are near-copies; random halves would
            overstate ``stability_``). An int: that many contiguous blocks. One
            label per row: e.g. the subject of each of several sessions, or the
            run of each volume. Each group must hold at most half the rows. A
            fit argument, not a parameter: the labels belong to these rows (as
            scikit-learn's ``groups`` of ``cross_validate``). Only estimators
            that resample rows (:class:`~neurospca.SPCATV`) take anything but None.

        Returns
        -------
        self
            The fitted estimator; with ``split_groups``, ``split_groups_`` says
            how the halves were drawn.

        Raises
        ------
        ValueError, TypeError
            Bad data, parameters or ``split_groups``; the message names the argument.
        """
        with row_groups(self, X, split_groups):
            self._fit(X)
        self.n_components_ = int(self.components_.shape[0])
        return self

    @abstractmethod
    def _fit(self, X):
        """Validate ``X`` once and fit: the hook every estimator defines.

        An abstract method: a subclass without it cannot be instantiated
        (``TypeError`` naming ``_fit``), so ``fit`` never reaches this body.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training data, as given to :meth:`fit`.

        Returns
        -------
        None
            Sets ``components_``, ``explained_variance_ratio_``, ``converged_``,
            ``n_iter_`` (and ``mean_``) on ``self``.
        """

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


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
