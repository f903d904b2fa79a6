"""Issue 20 round 5 / issue 22: the joint fit's work, not its answer.

The sweeps serve repeated products with the data from what they computed
(:class:`~neurospca.decomposition._joint_certify.ProductCache`) and the
rotation's l1 profile is evaluated by sorted breakpoints: the same fit to
rounding, with fewer passes over ``X``.
"""

import warnings

import numpy as np
import pytest

import neurospca.decomposition._joint as joint
import neurospca.decomposition._rotation as rotation
from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition._joint_certify import ProductCache
from neurospca.decomposition._rotation import _l1_profile, _l1_profile_direct, sparsest_pair


@pytest.mark.parametrize("n", [1, 7, 500, 20_000])
def test_l1_profile_by_breakpoints_is_the_direct_sum(n, monkeypatch):
    """Random loadings (some features zero in one or both, some exactly on an
    axis, a pair close to parallel): the breakpoint profile equals the sum of
    absolute values at every angle, and the sparsest pair is the same."""
    rng = np.random.default_rng(n)
    for trial in range(10):
        a = rng.standard_normal(n) * (rng.random(n) < 0.5)
        b = rng.standard_normal(n) * (rng.random(n) < 0.5)
        if trial % 3 == 1:
            b = b + 0.9 * a
        if trial % 4 == 2:
            a[: n // 2], b[n // 3 :] = 0.0, np.where(a[n // 3 :] < 0, 0.0, b[n // 3 :])
        f_fast, f_ref = _l1_profile(a, b)[1], _l1_profile_direct(a, b)[1]
        assert np.max(np.abs(f_fast - f_ref)) <= 1e-12 * max(f_ref.max(), 1e-300)
        if np.any(a) and np.any(b):
            got = sparsest_pair(a, b)
            with monkeypatch.context() as m:
                m.setattr(rotation, "_l1_profile", _l1_profile_direct)
                ref = sparsest_pair(a, b)
            assert (got is None) == (ref is None)
            if got is not None:
                np.testing.assert_allclose(got[0], ref[0], atol=1e-12)
                np.testing.assert_allclose(got[1], ref[1], atol=1e-12)


def test_product_cache_serves_only_equal_vectors():
    """A product is served for the same vector (or the unit vector normalised
    from a kept one), never for a vector one ulp away."""
    rng = np.random.default_rng(0)
    cache = ProductCache(4)
    v, xv = rng.standard_normal(30), rng.standard_normal(10)
    cache._put(cache.xv, v, xv)

    class _Op:
        def matvec(self, x):
            return np.full(10, -1.0)

    np.testing.assert_array_equal(cache.matvec(_Op(), v.copy()), xv)
    w = v.copy()
    w[3] = np.nextafter(w[3], np.inf)
    np.testing.assert_array_equal(cache.matvec(_Op(), w), np.full(10, -1.0))
    u, xtu = 2.0 * rng.standard_normal(10), rng.standard_normal(30)
    cache._put(cache.xtu, u, xtu)
    s = float(np.linalg.norm(u))
    np.testing.assert_array_equal(cache.rmatvec_unit(u / s), xtu / s)
    assert cache.rmatvec_unit(u / s + 1e-9) is None
    for _ in range(5):  # bounded: the oldest entries leave
        cache._put(cache.xv, rng.standard_normal(30), xv)
    assert len(cache.xv) == 4 and cache._find(cache.xv, v) is None


def _fit(X, op, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(3, operator=op, alpha_rel=1.0, random_state=0, **kw).fit(X)


def test_reused_products_give_the_same_joint_fit_in_fewer_passes(monkeypatch):
    """The paper's set-up with weights correlated 0.7 (30 x 30, float64 and
    float32): with the products served from the cache the joint fit returns
    the same components (to rounding), the same number of sweeps, and reads
    the data fewer times; deflation is untouched (bit for bit)."""
    X, _, mask = make_paper_simulation(150, random_state=3301, shape=(30, 30), correlation=0.7)
    op = tv_from_mask(mask)
    passes = {}
    from neurospca.decomposition._data import DataOperator

    reads = []
    inner = DataOperator._blocks

    def blocks(self):
        for lo, hi, B in inner(self):
            reads.append(B.nbytes)
            yield lo, hi, B

    monkeypatch.setattr(DataOperator, "_blocks", blocks)
    for data, atol in ((X, 1e-9), (X.astype(np.float32), 1e-5)):
        fits = {}
        for reuse in (False, True):
            monkeypatch.setattr(joint, "REUSE_PRODUCTS", reuse)
            # the restart check from kept products (round 6) is not a reuse:
            # it starts the check elsewhere (test below)
            monkeypatch.setattr(joint, "RESTART_CHECK_KNOWN", False)
            reads.clear()
            fits[reuse] = _fit(data, op)
            passes[reuse] = sum(reads) / data.nbytes
            fits[reuse, "deflation"] = _fit(data, op, method="deflation")
        np.testing.assert_allclose(fits[True].components_, fits[False].components_, atol=atol)
        assert fits[True].n_sweeps_ == fits[False].n_sweeps_ >= 2
        assert passes[True] < 0.85 * passes[False], passes
        np.testing.assert_array_equal(
            fits[True, "deflation"].components_, fits[False, "deflation"].components_
        )


def test_split_halves_keep_their_operator_and_give_the_same_fits():
    """The half models of ``alpha_rel="auto"`` scan each half once along a
    path (the same operator object at every point) and return the same
    components bit for bit as with a fresh scan at each point; they skip the
    explained-variance diagnostics, which the full fit keeps."""
    from neurospca.decomposition._stability import _half_models

    X, _, mask = make_paper_simulation(80, random_state=3302, shape=(16, 16), correlation=0.7)
    est = SPCATV(3, operator=tv_from_mask(mask), random_state=0, n_threads=1)
    kept, fresh = _half_models(est)[0], _half_models(est)[0]
    ops = []
    for alpha_rel in (0.5, 1.0, 2.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kept.set_params(alpha_rel=alpha_rel).fit(X)
            ops.append(kept._half_op[1])
            fresh.__dict__.pop("_half_op", None)
            fresh.set_params(alpha_rel=alpha_rel).fit(X)
        np.testing.assert_array_equal(kept.components_, fresh.components_)
        assert kept.explained_variance_ is None and fresh.pca_explained_variance_ratio_ is None
    assert ops[0] is ops[1] is ops[2]
    full = _fit(X, tv_from_mask(mask))
    assert (
        np.all(full.explained_variance_ratio_ > 0)
        and full.pca_explained_variance_ratio_ is not None
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["memory", "memmap"])
def test_rmatvecs_are_rmatvec_bit_for_bit(tmp_path, dtype, kind):
    """Several ``Xc^T u`` in one pass equal one pass each, bit for bit
    (centred, two threads over row blocks, float32 with and without float64
    arithmetic), and read the data once."""
    from neurospca.decomposition._data import as_data_operator

    rng = np.random.default_rng(5)
    X = (rng.standard_normal((301, 257)) + 3.0).astype(dtype)
    if kind == "memmap":
        np.save(tmp_path / "x.npy", X)
        X = np.load(tmp_path / "x.npy", mmap_mode="r")
    op = as_data_operator(X, n_threads=2)
    op._offsets = np.linspace(0, 301, 6).astype(int)  # five row blocks
    op.centre(op.stats["mean"])
    us = [rng.standard_normal(301) for _ in range(3)]
    for exact in (False, True):
        passes = op.n_passes
        got = op.rmatvecs(us, exact=exact)
        assert op.n_passes == passes + 1
        for g, u in zip(got, us, strict=True):
            np.testing.assert_array_equal(g, op.rmatvec(u, exact=exact))
    assert op.rmatvecs([]) == []


def test_restart_check_from_kept_products_needs_fewer_passes(monkeypatch):
    """Float32 data (not on the Gram path): the restart check's start (the
    top singular direction of the residual of the others) reads the data
    fewer times when it starts from the data's subspace deflated by the kept
    products than from a fresh pass, and each returned pair is still
    certified for the returned model."""
    from neurospca.decomposition._data import DataOperator

    X, _, mask = make_paper_simulation(150, random_state=3301, shape=(30, 30), correlation=0.7)
    X = X.astype(np.float32)
    op = tv_from_mask(mask)
    counted = []
    inner = DataOperator._blocks

    def blocks(self):
        for lo, hi, B in inner(self):
            counted.append(B.nbytes / X.nbytes)
            yield lo, hi, B

    monkeypatch.setattr(DataOperator, "_blocks", blocks)
    start = joint.start_u
    reads = {}
    monkeypatch.setattr(joint, "BATCH_CHECKS", False)  # one check at a time (start_u)
    for known in (False, True):
        monkeypatch.setattr(joint, "RESTART_CHECK_KNOWN", known)
        reads[known] = []

        def traced(*args, _out=reads[known]):
            before = sum(counted)
            out = start(*args)
            _out.append(sum(counted) - before)
            return out

        monkeypatch.setattr(joint, "start_u", traced)
        m = _fit(X, op)
        assert np.all(m.rel_gaps_[np.any(m.components_ != 0, axis=1)] <= 1e-3)
    assert reads[False] and reads[True]
    assert np.mean(reads[True]) <= np.mean(reads[False]) - 0.5, reads
    assert min(reads[False]) >= 2.0 - 1e-9, reads  # a pass for the Ritz vector, one to check it
