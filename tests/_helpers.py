"""Test helpers: random operators and an independent cvxpy solver."""

import warnings

import numpy as np
import scipy.sparse as sp

from neurospca import GroupOperator


def random_group_operator(n_features, n_groups, rng, max_rows=4, density=0.3):
    """A random (non-TV) GroupOperator: random group sizes (some empty), random data."""
    sizes = rng.integers(0, max_rows + 1, size=n_groups)
    n_rows = int(sizes.sum())
    mat = sp.random(
        n_rows,
        n_features,
        density=density,
        random_state=rng,
        data_rvs=rng.standard_normal,
        format="csr",
    )
    return GroupOperator(mat, np.concatenate([[0], np.cumsum(sizes)]))


def cvxpy_prox(y, operator, l1, group):
    """Solve min 0.5||v-y||^2 + l1||v||_1 + group sum_g ||A_g v|| with cvxpy.

    Returns (v*, P(v*)) with P evaluated in NumPy at cvxpy's solution.
    """
    import cvxpy as cp

    A = operator.matrix.tocsr()
    v = cp.Variable(y.size)
    Av = A @ v
    sizes = np.diff(operator.group_ptr)
    # group norms: stack the s-th row of each group into a (max_size, n_groups) matrix
    n_groups = operator.n_groups
    cols = []
    for s in range(int(sizes.max(initial=0))):
        sel = sp.csr_matrix(
            (
                np.ones(int((sizes > s).sum())),
                (np.flatnonzero(sizes > s), operator.group_ptr[:-1][sizes > s] + s),
            ),
            shape=(n_groups, A.shape[0]),
        )
        cols.append(sel @ Av)
    obj = 0.5 * cp.sum_squares(v - y) + l1 * cp.norm1(v)
    if cols and group > 0:
        obj = obj + group * cp.sum(cp.norm(cp.vstack(cols), 2, axis=0))
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL)
    vs = np.asarray(v.value).ravel()
    from neurospca.solvers import prox_objective

    return vs, prox_objective(vs, y, operator, l1, group)


def sparse_pca_at_cardinality(X, card, n_components=3, lo=0.1, hi=100.0, **params):
    """scikit-learn's SparsePCA with (nearly) ``card`` non-zeros in all, by bisection
    on alpha in ``[lo, hi]``; ``params`` go to SparsePCA (``method="cd"``,
    ``random_state=0`` by default). Returns ``(components, number of non-zeros)``."""
    import warnings

    from sklearn.decomposition import SparsePCA

    params = {"method": "cd", "random_state": 0, **params}
    best = None
    while hi / lo > 1.001:
        a = np.sqrt(lo * hi)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            comps = SparsePCA(n_components, alpha=a, **params).fit(X).components_
        c = np.count_nonzero(comps)
        if best is None or abs(c - card) < abs(best[1] - card):
            best = (comps, c)
        if c == card:
            break
        lo, hi = (a, hi) if c > card else (lo, a)
    return best


def path_record(split, alpha_rel, corr, nonzero=(0.1, 0.1)):
    """One point of an ``alpha_rel="auto"`` path record, as the split search
    writes it: its split, scale, per-component reproducibility and non-zero
    fractions."""
    return {
        "alpha_rel": alpha_rel,
        "l1_ratio": split[0],
        "tv_ratio": split[1],
        "reproducibility": np.array(corr, dtype=float),
        "nonzero_fraction": np.array(nonzero, dtype=float),
    }


def count_passes(monkeypatch):
    """Count every pass over ``X`` (``DataOperator._map``) from now on: a list
    that gets one item per pass (clear it to start again)."""
    from neurospca.decomposition._data import DataOperator

    counted = []
    inner = DataOperator._map

    def counting(self, *args, **kw):
        counted.append(1)
        return inner(self, *args, **kw)

    monkeypatch.setattr(DataOperator, "_map", counting)
    return counted


def assert_same_fit(a, b):
    """Two fitted estimators give the same fit bit for bit: components, gaps,
    iterations per component and certified supports."""
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.dual_gaps_, b.dual_gaps_)
    np.testing.assert_array_equal(a.n_iter_per_component_, b.n_iter_per_component_)
    np.testing.assert_array_equal(a.certified_support_, b.certified_support_)


def switched_fits(monkeypatch, module, name, fit, watch):
    """``fit()`` with ``module.name`` False, then with it True and ``watch(monkeypatch)``
    installed (e.g. a counter of the calls the switch turns on).

    Returns
    -------
    off, on : estimator
        The two fits.
    watcher : object
        What ``watch`` returned.
    """
    monkeypatch.setattr(module, name, False)
    off = fit()
    watcher = watch(monkeypatch)
    monkeypatch.setattr(module, name, True)
    return off, fit(), watcher


def drop_from_page_cache(path):
    """Ask the kernel to drop ``path``'s pages from the page cache (the next
    read of the file goes to storage; a no-op on file systems that keep none)."""
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def starts_side_by_side_warnings(run, op, start):
    """``run(op, jobs)`` on the starts ``start("a", "always")`` and ``start("b",
    "ignore")`` (each filters its own warnings) inside a recording
    ``catch_warnings``, the caller warning "caller" after them: ``(what run
    returned, the messages the caller recorded)``."""
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        got = run(op, [lambda: start("a", "always"), lambda: start("b", "ignore")])
        warnings.warn("caller", UserWarning, stacklevel=1)
    return got, [str(w.message) for w in outer]


def assert_same_fits(a, b, names):
    """Two fitted models equal bit for bit: the attributes ``names``, the
    certified supports and the iterations per component."""
    assert np.any(a.components_)
    for name in names:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert np.array_equal(a.certified_support_, b.certified_support_)
    assert np.array_equal(a.n_iter_per_component_, b.n_iter_per_component_)
