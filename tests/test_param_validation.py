"""Declarative parameter validation (``_parameter_constraints``) of every estimator.

scikit-learn's own check: each constructor parameter has a constraint, and a
value of the wrong type or out of range makes ``fit`` raise an
``InvalidParameterError`` (a ``ValueError`` and ``TypeError``) that names the
parameter and the estimator.
"""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_param_validation

from neurospca import (
    SPCATV,
    SSPCA,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
)

ESTIMATORS = [
    SPCATV(n_components=1),
    SSPCA(2, max_iter=5),
    NonnegativeSparsePCA(n_components=1, max_iter=5),
    KTraceNormPCA(k=2, n_restarts=1),
    HierarchicalDictionaryLearning([-1, 0, 0], max_iter=2),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_sklearn_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


@pytest.mark.parametrize(
    "estimator, param, value",
    [
        (SPCATV(), "l1_ratio", 1.0),
        (SPCATV(), "solver", "newton"),
        (SSPCA(), "exponent", 1.5),
        (SSPCA(), "code_constraint", "linf"),
        (NonnegativeSparsePCA(), "beta", -0.1),
        (KTraceNormPCA(), "max_blocks", 0),
        (HierarchicalDictionaryLearning(), "mu", 1.5),
        (HierarchicalDictionaryLearning(), "init", "random"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_error_names_the_parameter(estimator, param, value):
    X = np.random.default_rng(0).standard_normal((10, 6))
    estimator.set_params(**{param: value})
    with pytest.raises(
        InvalidParameterError,
        match=f"The '{param}' parameter of {type(estimator).__name__} must be",
    ):
        estimator.fit(X)
