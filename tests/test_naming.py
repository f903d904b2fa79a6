"""One naming scheme across the estimators (issue 15, docs/naming.rst).

``alpha`` is the main penalty weight everywhere; the old names (``lam``,
``transform_lam``, SSPCA's exponent ``alpha``, ``codes_``, ``dual_gap_``)
keep working with a FutureWarning and give identical results.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from neurospca import (
    SSPCA,
    HierarchicalDictionaryLearning,
    KTraceNormPCA,
    NonnegativeSparsePCA,
    balanced_tree,
    grid_halfspace_groups,
    prox_tree,
    sspca,
    tree_sparse_coding,
)
from neurospca._utils.validation import check_int
from neurospca.decomposition._sspca import structured_norm


def _data(n=30, p=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, :5] += 2 * rng.standard_normal((n, 1))
    return X


def _quiet(fn):
    """Run ``fn`` with ConvergenceWarnings silenced, FutureWarnings kept."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn()


# ------------------------------------------------------------------ check_int


def test_check_int():
    assert check_int(3, "n") == 3 and type(check_int(np.int64(3), "n")) is int
    assert check_int(0, "n", minimum=0, maximum=0) == 0
    for bad in (True, 2.0, "2", None):
        with pytest.raises(TypeError, match="max_iter must be an int"):
            check_int(bad, "max_iter")
    with pytest.raises(ValueError, match="n_init must be an int >= 1, got 0"):
        check_int(0, "n_init", minimum=1)
    with pytest.raises(ValueError, match="k must be an int between 1 and 4, got 5"):
        check_int(5, "k", minimum=1, maximum=4)
    with pytest.raises(ValueError, match="k must be an int <= 4, got 5"):
        check_int(5, "k", maximum=4)


# ------------------------------------------------------------------ SSPCA


def test_sspca_lam_is_alpha_with_a_future_warning():
    X = _data()
    groups = grid_halfspace_groups((4, 4))
    new = _quiet(lambda: SSPCA(2, alpha=1e-4, groups=groups, max_iter=15, random_state=0).fit(X))
    with pytest.warns(FutureWarning, match="`lam` was renamed `alpha`"):
        old = _quiet(lambda: SSPCA(2, lam=1e-4, groups=groups, max_iter=15, random_state=0).fit(X))
    np.testing.assert_array_equal(old.components_, new.components_)
    assert old.objective_ == new.objective_
    # with lam given, alpha keeps its old meaning: the exponent
    new1 = _quiet(
        lambda: SSPCA(2, alpha=1e-4, exponent=1.0, groups=groups, max_iter=15, random_state=0).fit(
            X
        )
    )
    with pytest.warns(FutureWarning) as record:
        old1 = _quiet(
            lambda: SSPCA(2, lam=1e-4, alpha=1.0, groups=groups, max_iter=15, random_state=0).fit(X)
        )
    messages = " ".join(str(w.message) for w in record)
    assert "keeps its old meaning" in messages and "`lam` was renamed" in messages
    np.testing.assert_array_equal(old1.components_, new1.components_)
    assert not np.array_equal(new1.components_, new.components_)  # the exponent matters
    with pytest.raises(ValueError, match="lam .deprecated. was given with both"):
        SSPCA(2, lam=1e-4, alpha=1.0, exponent=0.8).fit(X)
    # clone and get_params keep the deprecated parameter
    assert clone(SSPCA(2, lam=1e-4)).get_params()["lam"] == 1e-4
    assert SSPCA(2).get_params()["lam"] == "deprecated"


def test_sspca_function_lam_and_exponent():
    X = _data()
    X -= X.mean(0)
    U0, V0, i0 = _quiet(lambda: sspca(X, 2, alpha=1e-4, exponent=1.0, max_iter=15, random_state=0))
    with pytest.warns(FutureWarning) as record:
        U1, V1, i1 = _quiet(lambda: sspca(X, 2, lam=1e-4, alpha=1.0, max_iter=15, random_state=0))
    messages = " ".join(str(w.message) for w in record)
    assert "keeps its old meaning" in messages and "sspca: `lam` was renamed" in messages
    np.testing.assert_array_equal(V0, V1)
    np.testing.assert_array_equal(U0, U1)
    v = np.arange(5.0) - 2
    groups = [[0, 1], [1, 2, 3], [4]]
    with pytest.warns(FutureWarning, match="`alpha` was renamed `exponent`"):
        old = structured_norm(v, groups, alpha=0.5)
    assert old == structured_norm(v, groups, exponent=0.5)
    # groups' l2 norms sqrt(5), sqrt(2), 2: (sum of their square roots)^2
    assert old == pytest.approx((5**0.25 + 2**0.25 + 2**0.5) ** 2)


def test_sspca_scores_and_objective():
    X = _data()
    m = _quiet(lambda: SSPCA(2, alpha=1e-4, max_iter=10, random_state=0).fit(X))
    assert m.scores_.shape == (30, 2)
    with pytest.warns(FutureWarning, match="codes_ is deprecated; use scores_"):
        codes = m.codes_
    np.testing.assert_array_equal(codes, m.scores_)
    m.codes_ = codes + 1.0  # old saved models set it: it lands in scores_
    np.testing.assert_array_equal(m.scores_, codes + 1.0)
    assert isinstance(m.objective_, float) and isinstance(m.n_iter_, int)
    assert m.objective_ == m.objective_history_[-1]
    assert len(m.objective_history_) == m.n_iter_ + 1
    assert not hasattr(SSPCA(2), "codes_")  # unfitted: no attribute, no warning


# ------------------------------------------------------------------ trees


def test_prox_tree_and_coding_lam():
    rng = np.random.default_rng(0)
    parent = balanced_tree((2, 2))
    u = rng.standard_normal((4, parent.size))
    with pytest.warns(FutureWarning, match="prox_tree: `lam` was renamed `alpha`"):
        old = prox_tree(u, parent, lam=0.3)
    np.testing.assert_array_equal(old, prox_tree(u, parent, alpha=0.3))
    np.testing.assert_array_equal(old, prox_tree(u, parent, 0.3))
    D = rng.standard_normal((parent.size, 6))
    X = rng.standard_normal((5, 6))
    with pytest.warns(FutureWarning, match="tree_sparse_coding"):
        old = tree_sparse_coding(X, D, parent, lam=0.2)
    np.testing.assert_array_equal(old, tree_sparse_coding(X, D, parent, 0.2))
    with pytest.raises(TypeError, match="missing the argument alpha"):
        tree_sparse_coding(X, D, parent)


def test_dictionary_learning_lam_and_transform_lam():
    X = _data(40, 9)
    parent = balanced_tree((2, 2))
    kw = dict(max_iter=3, random_state=0)
    new = _quiet(
        lambda: HierarchicalDictionaryLearning(parent, alpha=0.2, transform_alpha=0.05, **kw).fit(X)
    )
    with pytest.warns(FutureWarning) as record:
        old = _quiet(
            lambda: HierarchicalDictionaryLearning(parent, lam=0.2, transform_lam=0.05, **kw).fit(X)
        )
        codes_old = old.transform(X)
    messages = " ".join(str(w.message) for w in record)
    assert "`transform_lam` was renamed" in messages and "`lam` was renamed" in messages
    np.testing.assert_array_equal(old.components_, new.components_)
    np.testing.assert_array_equal(codes_old, new.transform(X))
    assert not np.array_equal(new.transform(X), new.scores_)  # transform_alpha is used
    assert new.scores_.shape == (40, parent.size)
    assert isinstance(new.objective_, float)
    assert new.objective_ == new.objective_history_[-1]
    assert len(new.objective_history_) == new.n_iter_


# ------------------------------------------------------------------ covariance


def test_ktrace_dual_gaps_and_deprecated_dual_gap():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 8))
    X[:, :3] += 2 * rng.standard_normal((60, 1))
    m = _quiet(lambda: KTraceNormPCA(k=3, alpha=0.3, random_state=0).fit(X))
    assert m.dual_gaps_.shape == (1,)
    with pytest.warns(FutureWarning, match="dual_gap_ is deprecated; use dual_gaps_"):
        gap = m.dual_gap_
    assert isinstance(gap, float) and gap == m.dual_gaps_[0]
    assert m.objective_ == m.objective_history_[-1] and isinstance(m.n_iter_, int)


def test_nspca_objective_is_a_float():
    X = _data(40, 8)
    m = NonnegativeSparsePCA(2, alpha=1.0).fit(X)
    assert isinstance(m.objective_, float) and m.objective_ == m.objective_history_[-1]
