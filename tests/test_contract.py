"""One estimator contract (issue 23): the five estimators alike.

Each contract name on each estimator and what it means, scikit-learn's
estimator checks on all five, and non-convergence reported (``converged_``
False and a ConvergenceWarning naming the tolerance when ``max_iter`` is too
small; True with enough iterations, so each test can fail both ways).
"""

import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import validate_data

from neurospca import (
    SPCATV,
    SSPCA,
    GroupOperator,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
    balanced_tree,
    chain_operator,
    grid_halfspace_groups,
)
from neurospca.decomposition._base import ComponentsEstimator
from neurospca.solvers import prox_dual

#: The contract: fitted names every estimator has after ``fit``.
FITTED = (
    "components_",
    "n_components_",
    "explained_variance_ratio_",
    "converged_",
    "n_iter_",
    "n_features_in_",
)
#: Methods and parameters every estimator has.
METHODS = ("fit", "transform", "inverse_transform", "fit_transform")
METHODS += ("get_feature_names_out", "set_output", "get_params", "set_params")
PARAMS = ("n_components", "tol", "max_iter", "random_state", "verbose")


def _data(n=40, p=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, :4] += 2.0 * rng.standard_normal((n, 1))
    X[:, 8:12] += 1.5 * rng.standard_normal((n, 1))
    return X


def _planted(n=200, p=12, seed=0):
    rng = np.random.default_rng(seed)
    a, b = np.zeros(p), np.zeros(p)
    a[:3], b[5:8] = 1 / np.sqrt(3), 1 / np.sqrt(3)
    return (
        rng.standard_normal((n, 1)) * 2 * a
        + rng.standard_normal((n, 1)) * 1.5 * b
        + 0.1 * rng.standard_normal((n, p))
    )


def _estimators():
    """One fast instance of each of the five, and its training data."""
    return [
        (SPCATV(2, alpha=0.05, method="deflation"), _data()),
        (SSPCA(2, groups=grid_halfspace_groups((4, 4)), max_iter=300, random_state=0), _data()),
        (NonnegativeSparsePCA(2, alpha=1.0, n_init=2, random_state=0), _data()),
        (KTraceNormPCA(2, k=3, alpha=0.1, random_state=0), _planted()),
        (
            HierarchicalDictionaryLearning(
                balanced_tree((2,)), alpha=0.05, tol=1e-2, max_iter=50, random_state=0
            ),
            _data(),
        ),
    ]


ESTIMATORS = _estimators()
IDS = [type(e).__name__ for e, _ in ESTIMATORS]


def _fit(estimator, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return clone(estimator).fit(X)


# ------------------------------------------------------------------ the names


@pytest.mark.parametrize("estimator, X", ESTIMATORS, ids=IDS)
def test_contract_names(estimator, X):
    """Every contract name on every estimator, one base class, one ``fit``."""
    assert isinstance(estimator, ComponentsEstimator)
    assert type(estimator).fit is ComponentsEstimator.fit
    for name in METHODS:
        assert callable(getattr(estimator, name, None)), name
    params = estimator.get_params()
    for name in PARAMS:
        assert name in params, name
    for name, constraint in ComponentsEstimator._parameter_constraints.items():
        assert name in type(estimator)._parameter_constraints, name
        if name != "n_components" and name != "tol":
            assert type(estimator)._parameter_constraints[name] == constraint, name
    model = _fit(estimator, X)
    missing = [name for name in FITTED if not hasattr(model, name)]
    assert not missing, missing


@pytest.mark.parametrize("estimator, X", ESTIMATORS, ids=IDS)
def test_contract_meaning(estimator, X):
    """What the names mean: shapes, explained variance, transform, feature names."""
    model = _fit(estimator, X)
    n, p = X.shape
    K = model.n_components_
    assert isinstance(K, int) and K >= 1
    assert model.n_features_in_ == p
    assert model.components_.shape == (K, p)
    assert isinstance(model.n_iter_, (int, np.integer)) and model.n_iter_ >= 1
    assert np.asarray(model.converged_).dtype == bool
    evr = np.asarray(model.explained_variance_ratio_)
    assert evr.shape == (K,)
    assert np.all(evr >= 0) and np.all(evr <= 1) and evr.sum() <= 1 + 1e-12
    assert evr.sum() > 0.05  # the components explain something of these data
    S = model.transform(X)
    assert S.shape == (n, K)
    assert model.inverse_transform(S).shape == (n, p)
    prefix = type(model).__name__.lower()
    np.testing.assert_array_equal(model.get_feature_names_out(), [f"{prefix}{k}" for k in range(K)])


@pytest.mark.parametrize("estimator, X", ESTIMATORS, ids=IDS)
def test_contract_pandas_and_clone(estimator, X):
    """``set_output("pandas")`` gives a DataFrame named by the components;
    feature names are recorded; ``clone`` keeps every parameter."""
    pd = pytest.importorskip("pandas")
    columns = [f"f{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=columns)
    model = _fit(estimator, frame).set_output(transform="pandas")
    np.testing.assert_array_equal(model.feature_names_in_, columns)
    out = model.transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(model.get_feature_names_out())
    assert out.shape == (X.shape[0], model.n_components_)
    twin = clone(estimator)
    assert twin is not estimator
    assert twin.get_params().keys() == estimator.get_params().keys()
    for key, value in estimator.get_params().items():  # equal values (arrays too)
        assert joblib.hash(twin.get_params()[key]) == joblib.hash(value), key


def test_explained_variance_ratio_is_the_projection_for_orthonormal_loadings():
    """With orthonormal components the definition reduces to the variance of
    the projection on them over the total variance (PCA's ratios for the PCA
    directions), for the covariance form and the data form alike."""
    from neurospca.decomposition._base import adjusted_variance, data_adjusted_variance

    X = _data()
    Xc = X - X.mean(0)
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    pca = s**2 / np.sum(s**2)
    np.testing.assert_allclose(data_adjusted_variance(Xc, Vt[:3])[1], pca[:3], rtol=1e-10)
    C = Xc.T @ Xc / len(Xc)
    np.testing.assert_allclose(adjusted_variance(C, Vt[:3])[1], pca[:3], rtol=1e-8)
    # a repeated direction explains nothing new
    twice = np.vstack([Vt[0], Vt[0]])
    np.testing.assert_allclose(data_adjusted_variance(Xc, twice)[1], [pca[0], 0.0], atol=1e-12)


# ------------------------------------------------------------------ sklearn's checks


@parametrize_with_checks(
    [
        SPCATV(n_components=1, alpha=0.05),
        SSPCA(1, max_iter=20),
        NonnegativeSparsePCA(n_components=1, max_iter=50, n_init=2),
        KTraceNormPCA(n_components=1),  # the default k (was 3: failed on 2 features)
        HierarchicalDictionaryLearning(n_components=2, max_iter=5),
    ]
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


# ------------------------------------------------------------------ convergence


def _fits_short_and_long(short, long, X, match):
    """``short`` reports non-convergence (warning matching ``match``),
    ``long`` converges without a ConvergenceWarning."""
    with pytest.warns(ConvergenceWarning, match=match):
        bad = short.fit(X)
    assert not np.all(bad.converged_)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        good = long.fit(X)
    assert np.all(good.converged_)
    return bad, good


def test_spcatv_reports_non_convergence():
    X = _data()
    kw = dict(alpha=0.05, method="deflation", tol=1e-6)
    bad, good = _fits_short_and_long(
        SPCATV(2, max_iter=1, **kw), SPCATV(2, max_iter=200, **kw), X, r"did not reach tol=1e-06"
    )
    assert bad.converged_.shape == (2,) and not bad.converged_.any()
    assert good.converged_.dtype == bool and good.converged_.all()


def test_spcatv_reports_an_uncertified_vstep():
    """A v-step cut short: its certified gap is above tol, converged_ says so
    (the mutation "converged_ always True" fails here and above)."""
    X = _data()
    with pytest.warns(ConvergenceWarning, match="gap"):
        model = SPCATV(
            1, alpha=0.05, tv_ratio=0.6, max_inner_iter=1, method="deflation", tol=1e-8
        ).fit(X)
    assert not model.converged_[0]
    assert model.rel_gaps_[0] > 1e-8


def test_sspca_reports_non_convergence():
    X = _data()
    kw = dict(groups=grid_halfspace_groups((4, 4)), random_state=0)
    bad, good = _fits_short_and_long(
        SSPCA(2, max_iter=2, **kw), SSPCA(2, max_iter=2000, **kw), X, r"> tol=0.0001"
    )
    assert bad.n_iter_ == 2 and good.n_iter_ < 2000


def test_nspca_reports_non_convergence():
    X = _data()
    kw = dict(alpha=1.0, n_init=1, random_state=0)
    bad, good = _fits_short_and_long(
        NonnegativeSparsePCA(2, max_iter=1, **kw),
        NonnegativeSparsePCA(2, max_iter=500, **kw),
        X,
        r"did not reach tol=1e-06 in max_iter=1",
    )
    assert bad.n_iter_ == 1 and good.n_iter_ < 500


def test_ktrace_reports_non_convergence():
    """Two planted supports need two blocks: with one allowed the polar stays
    above alpha (the gap's criterion), with enough the fit is certified."""
    X = _planted()
    kw = dict(k=3, alpha=0.1, random_state=0)
    bad, good = _fits_short_and_long(
        KTraceNormPCA(max_blocks=1, **kw), KTraceNormPCA(**kw), X, r"alpha \* \(1 \+ tol\)"
    )
    assert bad.converged_ is False and good.converged_ is True
    assert good.dual_gaps_[0] <= good.tol * 0.5 * np.sum(np.cov(X.T, bias=True) ** 2)


def test_dictionary_reports_non_convergence():
    X = _data()
    kw = dict(alpha=0.05, random_state=0)
    bad, good = _fits_short_and_long(
        HierarchicalDictionaryLearning(balanced_tree((2,)), max_iter=2, tol=1e-12, **kw),
        HierarchicalDictionaryLearning(balanced_tree((2,)), max_iter=200, tol=1e-2, **kw),
        X,
        r"relative decrease .* > tol=1e-12",
    )
    assert bad.n_iter_ == 2 and good.n_iter_ < 200


@pytest.mark.parametrize("path", ["csr", "auto"])
@pytest.mark.parametrize("kernels", ["cython", "numpy"])
def test_prox_dual_csr_reports_non_convergence(path, kernels):
    """The CSR path of ``prox_dual`` (a general sparse operator, and a chain
    forced onto it): two iterations leave a gap above ``tol_abs`` and
    ``converged`` False; enough iterations reach it."""
    rng = np.random.default_rng(0)
    p = 50
    if path == "csr":
        operator = chain_operator(p)
    else:  # not a difference operator: "auto" takes the CSR kernel
        matrix = sp.random(80, p, density=0.1, random_state=0, format="csr")
        operator = GroupOperator(matrix, np.arange(0, 81, 2))
    y = rng.standard_normal(p)
    short = prox_dual(
        y, operator, 0.1, 0.5, tol=1e-8, max_iter=2, kernel_path=path, kernels=kernels
    )
    assert short.gap > short.tol_abs
    assert short.converged is False
    long = prox_dual(
        y, operator, 0.1, 0.5, tol=1e-8, max_iter=100_000, kernel_path=path, kernels=kernels
    )
    assert long.gap <= long.tol_abs
    assert long.converged is True


# ------------------------------------------------------------------ verbose


@pytest.mark.parametrize("estimator, X", ESTIMATORS, ids=IDS)
def test_verbose_logs_progress(estimator, X, caplog):
    """``verbose`` on all five: INFO records on the "neurospca" logger while
    fitting, none without it."""
    import logging

    with caplog.at_level(logging.INFO, logger="neurospca"):
        _fit(clone(estimator).set_params(verbose=0), X)
        assert not [r for r in caplog.records if r.name == "neurospca"]
        _fit(clone(estimator).set_params(verbose=1), X)
    assert [r for r in caplog.records if r.name == "neurospca"]


def test_an_estimator_without_the_fit_hook_cannot_be_made():
    """``_fit`` is abstract: a subclass that forgets it fails at construction,
    naming the hook; one that defines it fits through the shared ``fit``."""

    class Forgetful(ComponentsEstimator):
        pass

    with pytest.raises(TypeError, match="_fit"):
        Forgetful()

    class Mean(ComponentsEstimator):
        def __init__(self, n_components=1):
            self.n_components = n_components

        def _fit(self, X):
            X = validate_data(self, X)
            self.mean_ = X.mean(axis=0)
            self.components_ = np.ones((1, X.shape[1])) / np.sqrt(X.shape[1])
            self.explained_variance_ratio_ = np.array([0.0])
            self.converged_, self.n_iter_ = True, 0

    model = Mean().fit(np.arange(12.0).reshape(4, 3))
    assert model.n_components_ == 1
    assert model.transform(np.zeros((2, 3))).shape == (2, 1)
