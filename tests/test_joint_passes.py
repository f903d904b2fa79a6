"""Issue 22 round 9: the joint fit's passes over ``X``.

The restart checks of a settled state run side by side (one pass per
Davidson step for all components), deflation's start keeps the products its
alternation computed, and the certification takes ``Xc^T u_k`` from the fit's
last passes: the same fit to rounding, with fewer passes.
"""

import warnings

import numpy as np
import pytest

import neurospca.decomposition._joint as joint
from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition._data import as_data_operator
from neurospca.decomposition._deflated import _Deflated, gram_blocks
from neurospca.decomposition._joint_certify import _others, know_products
from neurospca.decomposition._joint_starts import restart_starts, svd_starts
from neurospca.decomposition._start import start_u
from neurospca.decomposition._subspace import cached_subspace

from ._helpers import count_passes

FLAGS = ("BATCH_CHECKS", "CERTIFY_KEPT", "DEFLATION_PRODUCTS")


def _memmap(tmp_path, X):
    np.save(tmp_path / "x.npy", X)
    return np.load(tmp_path / "x.npy", mmap_mode="r")


def _centred_op(X):
    op = as_data_operator(X, n_threads=1)
    op.centre(op.stats["mean"])
    return op


def _fit(X, op, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(3, operator=op, alpha_rel=1.0, random_state=0, **kw).fit(X)


def _state(rng, n, p, K=3):
    """A state ``(U, V, d)`` of K components: unit scores, sparse loadings."""
    U = np.linalg.qr(rng.standard_normal((n, K)))[0]
    V = rng.standard_normal((p, K)) * (rng.random((p, K)) < 0.3)
    return U, V, np.array([5.0, 3.0, 2.0])[:K]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gram_blocks_of_several_deflations_in_one_pass(dtype):
    """Blocks of three different deflations of one operator side by side: one
    pass, each equal bit for bit to its own ``gram_block`` (float64 and float32,
    two threads over several row blocks)."""
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((120, 90)) + 2.0).astype(dtype)
    op = as_data_operator(X, n_threads=2)
    op._offsets = np.linspace(0, 120, 6).astype(int)  # five row blocks
    op.centre(op.stats["mean"])
    U, V, d = _state(rng, 120, 90)
    defls, keeps = [], ([1, 2], [0, 2], [0])
    for keep in keeps:
        defl = _Deflated(op)
        for j in keep:
            defl.deflate(U[:, j], V[:, j], d[j])
        defls.append(defl)
    Ws = [rng.standard_normal((90, b)) for b in (1, 2, 3)]
    passes = op.n_passes
    got = gram_blocks(defls, Ws)
    assert op.n_passes == passes + 1
    for defl, keep, W, (Z, G) in zip(defls, keeps, Ws, got, strict=True):
        Zr, Gr = defl.gram_block(W)
        np.testing.assert_array_equal(Z, Zr)
        np.testing.assert_array_equal(G, Gr)
        # and the explicit deflated matrix
        Xk = X.astype(np.float64) - op.mean - sum(d[j] * np.outer(U[:, j], V[:, j]) for j in keep)
        tol = 1e-10 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(Z, Xk @ W, rtol=tol, atol=tol * np.abs(Z).max())
        np.testing.assert_allclose(G, Xk.T @ Z, rtol=tol, atol=tol * np.abs(G).max())


@pytest.fixture
def kept_state(tmp_path):
    """A float64 memmap (not on the Gram path) and a state whose removed
    products are kept (``Z = Xc V`` and a cache of ``Xc^T u_j``)."""
    rng = np.random.default_rng(3)
    X, _, _ = make_paper_simulation(200, random_state=3251, shape=(12, 12), correlation=0.7)
    op = _centred_op(_memmap(tmp_path, X))
    U, V, d = _state(rng, *op.shape)
    Z = op.matmat(V)

    class Cache:  # the ProductCache interface know_products reads
        def __init__(self):
            self.xtu = {u.tobytes(): g for u, g in zip(U.T, op.rmatvecs(list(U.T)), strict=True)}

        def rmatvec_unit(self, u):
            g = self.xtu.get(u.tobytes())
            return None if g is None else g.copy()

    return op, U, V, d, Z, Cache()


def test_batched_starts_are_the_one_at_a_time_starts(kept_state):
    """The lockstep Davidson starts of three deflations equal ``start_u`` of
    each bit for bit, with as many passes as the slowest one alone."""
    op, U, V, d, Z, cache = kept_state
    basis = cached_subspace(op, 1)[1:]
    sqnorm = op.sqnorm()
    defls, alone, passes_alone = [], [], []
    for k in range(3):
        defl = _others(op, sqnorm, U, V, d, Z, k)
        assert know_products(defl, Z, cache)
        n0 = op.n_passes
        alone.append(start_u(defl, "svd", None, basis))
        passes_alone.append(op.n_passes - n0)
        defl = _others(op, sqnorm, U, V, d, Z, k)
        know_products(defl, Z, cache)
        defls.append(defl)
    n0 = op.n_passes
    together = svd_starts(defls, basis)
    assert op.n_passes - n0 == max(passes_alone) < sum(passes_alone), passes_alone
    for (u, g), (ur, gr) in zip(together, alone, strict=True):
        np.testing.assert_array_equal(u, ur)
        np.testing.assert_array_equal(g, gr)
    # the check: False where the start is u_k itself, else that start
    same = 0.5
    checks = restart_starts(op, sqnorm, U, V, d, Z, [2, 0, 1], cache, same)
    assert sorted(checks) == [0, 1, 2]
    for k, (u, _) in enumerate(alone):
        if abs(float(u @ U[:, k])) >= same:
            assert checks[k] is False
        else:
            np.testing.assert_array_equal(checks[k][:, 0], u)
    # a component whose others' products are not kept is left out
    assert restart_starts(op, sqnorm, U, V, d, Z, [0], None, same) == {}


def test_rmatvecs_are_served_once_kept_and_forgotten_on_centring():
    """An equal ``rmatvecs`` call is served from the last one (or from
    ``keep_rmatvecs``) with no pass; other vectors, another ``exact`` or a new
    centring make a pass."""
    rng = np.random.default_rng(1)
    X = (rng.standard_normal((50, 40)) + 1.0).astype(np.float32)
    op = _centred_op(X)
    us = [rng.standard_normal(50) for _ in range(2)]
    first = op.rmatvecs(us, exact=True)
    n0 = op.n_passes
    np.testing.assert_array_equal(op.rmatvecs([u.copy() for u in us], exact=True), first)
    assert op.n_passes == n0
    op.rmatvecs(us, exact=False)
    op.rmatvecs([us[0], us[1] + 1e-9], exact=False)
    assert op.n_passes == n0 + 2
    op.keep_rmatvecs(us, [np.ones(40), np.zeros(40)], exact=True)
    np.testing.assert_array_equal(op.rmatvecs(us, exact=True)[0], np.ones(40))
    assert op.n_passes == n0 + 2
    op.centre(op.stats["mean"])
    np.testing.assert_array_equal(op.rmatvecs(us, exact=True), first)
    assert op.n_passes == n0 + 3


def test_deflation_start_keeps_its_products(monkeypatch):
    """Deflation's start as the sweeps' state: ``Z`` equals ``Xc V`` and the
    cache's ``Xc^T u_k`` equal exact products (float32 data: to float32
    rounding of ``Xc v``), one pass fewer than with ``Z`` from a pass."""
    X, _, mask = make_paper_simulation(150, random_state=3252, shape=(20, 20), correlation=0.7)
    X = X.astype(np.float32)
    est = SPCATV(3, operator=tv_from_mask(mask), alpha_rel=1.0, random_state=0)
    got = {}
    inner = joint._deflation_start

    def spy(op, n_components, u0, w0, tol, kw, cache=None):
        n0 = op.n_passes
        out = inner(op, n_components, u0, w0, tol, kw, cache)
        kept = [cache.rmatvec_unit(out[0][:, k]) for k in range(n_components)]
        out_copy = tuple(np.array(a) for a in out[:4])  # the sweeps change the state in place
        got.setdefault(joint.DEFLATION_PRODUCTS, (op, out_copy, kept, op.n_passes - n0))
        return out

    monkeypatch.setattr(joint, "_deflation_start", spy)
    for on in (False, True):
        monkeypatch.setattr(joint, "DEFLATION_PRODUCTS", on)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)
    assert got[False][3] == got[True][3] + 1
    op, (U, V, d, Z), kept, _ = got[True]
    ref = op.matmat(V)
    np.testing.assert_allclose(Z, ref, rtol=0, atol=1e-5 * np.abs(ref).max())
    live = [k for k in range(3) if np.any(V[:, k])]
    assert len(live) >= 2
    for k in live:
        xtu = kept[k]
        exact = op.rmatvec(U[:, k], exact=True)
        np.testing.assert_allclose(xtu, exact, rtol=0, atol=1e-5 * np.abs(exact).max())


def test_fewer_passes_same_joint_fit(tmp_path, monkeypatch):
    """The three levers on and off, float32 memmap (restart checks not on the
    Gram path): the same components (to float32 rounding), the same sweeps,
    every gap certified, and at least 8 passes fewer (the checks and the
    certification give the same numbers; deflation's ``Z`` and ``Xc^T u_k``
    from its fused passes round differently from a pass of their own)."""
    X, _, mask = make_paper_simulation(150, random_state=3253, shape=(30, 30), correlation=0.7)
    Xm = _memmap(tmp_path, X.astype(np.float32))
    op = tv_from_mask(mask)
    counted = count_passes(monkeypatch)
    fits, passes = {}, {}
    for on in (False, True):
        for flag in FLAGS:
            monkeypatch.setattr(joint, flag, on)
        counted.clear()
        fits[on] = _fit(Xm, op)
        passes[on] = len(counted)
    assert np.abs(fits[True].components_ - fits[False].components_).max() <= 1e-6
    assert fits[True].n_sweeps_ == fits[False].n_sweeps_
    live = np.any(fits[True].components_ != 0, axis=1)
    assert np.all(fits[True].rel_gaps_[live] <= 1e-3)
    assert passes[True] <= passes[False] - 8, passes


def test_unsettled_warning_says_why():
    """The ConvergenceWarning of sweeps that did not settle names the scores'
    collinearity, and, when deflation's fit is returned because the sweeps
    went to a higher joint objective, says so with both objectives."""
    from neurospca.decomposition._joint_starts import unsettled_message

    U = np.linalg.qr(np.random.default_rng(0).standard_normal((20, 3)))[0]
    U[:, 2] = 0.6 * U[:, 0] + 0.8 * U[:, 1]  # |u_0 . u_2| = 0.6, |u_1 . u_2| = 0.8
    msg = unsettled_message(50, 0.09, 0.01, U, None)
    assert "max_sweeps=50" in msg and "9.000e-02 > 0.01" in msg and "0.80" in msg
    msg = unsettled_message(50, 0.09, 0.01, np.eye(20, 3), (U, 203985.77, 199749.72))
    assert "0.80" in msg and "203986" in msg and "199750" in msg and "deflation's fit" in msg


def test_a_fit_stopped_by_max_sweeps_warns_with_its_collinearity():
    X, _, mask = make_paper_simulation(100, random_state=3254, shape=(16, 16), correlation=0.8)
    est = SPCATV(3, operator=tv_from_mask(mask), alpha_rel=1.0, random_state=0, max_sweeps=1)
    with pytest.warns(Warning) as caught:
        est.fit(X)
    msgs = [str(w.message) for w in caught if "did not settle" in str(w.message)]
    assert msgs and "largest |u_j . u_k|" in msgs[0], [str(w.message) for w in caught]
