"""Issue 22 round 15: a joint fit's sweep in one pass over ``X``.

:func:`~neurospca.decomposition._sweep_pass.one_pass_sweep` solves every
v-step of a sweep first (from products kept), then reads ``X`` once for all
the new loadings, then runs each component's u-step and certify step in
order. The sweep must be the sweep of one pass per component (the same state
to rounding), in one pass; after a re-solved loading the later components'
v-steps are solved again; small float64 data (the Gram path) too, or bit for
bit as before without ``ON_GRAM_PATH``.
"""

import copy
import warnings

import numpy as np
import pytest

import neurospca.decomposition._alternation as alternation
import neurospca.decomposition._joint as joint
import neurospca.decomposition._lockstep as lockstep
import neurospca.decomposition._start as _start
import neurospca.decomposition._sweep_pass as sweep_pass
from neurospca import SPCATV
from neurospca.decomposition._data import as_data_operator

from .test_datapath import _as_read_from_disk, _fit, _instance, _op, _Reads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_many_is_each_fused_in_one_pass(tmp_path, dtype):
    """Each product bit for bit its own :meth:`DataOperator.fused`, in one pass
    (a memmap of several row blocks)."""
    X = np.random.default_rng(3550).standard_normal((300, 70)).astype(dtype) + 0.5
    np.save(tmp_path / "x.npy", X)
    op = as_data_operator(np.load(tmp_path / "x.npy", mmap_mode="r"), n_threads=2)
    op.centre(op.stats["mean"])
    op._offsets = np.array([0, 100, 170, 300])
    vs = [np.random.default_rng(s).standard_normal(70) for s in (1, 2, 3)]
    alone = [op.fused(v) for v in vs]
    n0 = op.n_passes
    together = sweep_pass.fused_many(op, vs)
    assert op.n_passes - n0 == 1
    for (z, g), (z1, g1) in zip(alone, together, strict=True):
        assert np.array_equal(z, z1) and np.array_equal(g, g1)


@pytest.mark.parametrize("main_thread", [True, False])
def test_one_pass_inside_a_start_shares_the_starts_pass(monkeypatch, main_thread):
    """Inside a start of :func:`run_side_by_side` (the joint fit's starts), the
    one pass of :func:`fused_many` is a pass of that lockstep: shared with the
    other start's, every product bit for bit its own alone."""
    monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", True)
    monkeypatch.setattr(lockstep, "MAIN_THREAD_START", main_thread)
    X = np.random.default_rng(3554).standard_normal((200, 50)) + 0.3
    op = as_data_operator(X, n_threads=1)
    op.centre(op.stats["mean"])
    vs = [np.random.default_rng(s).standard_normal(50) for s in (4, 5, 6)]

    def many():
        return sweep_pass.fused_many(op, vs[:2]) + [op.fused(vs[2])]

    def chain():
        z, _ = op.fused(vs[0])
        g = op.rmatvec(z)
        return [op.fused(g), op.matvec(g)]

    alone = [many(), chain()]
    n0 = op.n_passes
    together = lockstep.run_side_by_side(op, [many, chain])
    assert op.n_passes - n0 == 4  # the longest start's: chain (many: 2)
    for a, b in zip(alone, together, strict=True):
        for x, y in zip(a, b, strict=True):
            for p, q in zip(x, y, strict=True) if isinstance(x, tuple) else [(x, y)]:
                assert np.array_equal(p, q)
    assert "_map" not in op.__dict__


def _first_sweep_state(X):
    """The arguments of a joint fit's first sweep (copied before it ran)."""
    seen = []
    original = joint._sweep

    def record(op, sqnorm, U, V, d, Z, info, kw):
        if not seen:
            kw2 = dict(kw, products=copy.deepcopy(kw["products"]))
            seen.append((op, sqnorm, U.copy(), V.copy(), d.copy(), Z.copy(), info, kw2))
            seen.append(copy.deepcopy(info))
        return original(op, sqnorm, U, V, d, Z, info, kw)

    joint._sweep = record
    try:
        _fit(X, alpha_rel=1.0)
    finally:
        joint._sweep = original
    op, sqnorm, U, V, d, Z, _, kw = seen[0]
    return op, sqnorm, (U, V, d, Z, seen[1]), kw


def _run_sweep(op, sqnorm, state, kw, one_pass, monkeypatch):
    """One sweep from a copy of ``state``: ``(U, V, d, Z, info), passes``."""
    monkeypatch.setattr(joint, "ONE_PASS", one_pass)
    U, V, d, Z = (a.copy() for a in state[:4])
    info = copy.deepcopy(state[4])
    kw = dict(kw, products=copy.deepcopy(kw["products"]))
    n0 = op.n_passes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joint._sweep(op, sqnorm, U, V, d, Z, info, kw)
    return (U, V, d, Z, info), op.n_passes - n0


def _close(a, b, rtol=1e-9):
    for x, y in zip(a[:4], b[:4], strict=True):
        assert np.allclose(x, y, rtol=rtol, atol=rtol * np.abs(y).max()), np.abs(x - y).max()
    for key in ("gaps", "n_inner_iter", "converged"):
        assert np.allclose(np.asarray(a[4][key], float), np.asarray(b[4][key], float), rtol=1e-6)


@pytest.mark.parametrize("dtype, n", [(np.float32, 600), (np.float64, 1200)])
def test_one_pass_sweep_is_the_sweep(monkeypatch, dtype, n):
    """The first sweep of a joint fit (float32 data, and float64 data too large
    for the Gram path): the state of one pass per component to rounding
    (1e-9), in one pass instead of three (float32), in 4 instead of 5 when two
    certify steps re-solved their loadings (float64)."""
    X = _instance(n=n, seed=3551).astype(dtype)
    op, sqnorm, state, kw = _first_sweep_state(X)
    assert not sweep_pass.uses_gram(op)
    seq, seq_passes = _run_sweep(op, sqnorm, state, kw, False, monkeypatch)
    one, one_passes = _run_sweep(op, sqnorm, state, kw, True, monkeypatch)
    # float64 v-steps: a certify step may re-solve a loading (its own pass);
    # the later components then share the next pass
    assert (seq_passes, one_passes) == ((3, 1) if dtype == np.float32 else (5, 4))
    _close(one, seq)
    assert not np.array_equal(state[1], seq[1])  # the sweep moved the loadings


def test_a_resolved_loading_refits_the_later_components(monkeypatch):
    """When a certify step re-solves a loading (forced here: every certified
    loading shrunk by 10 %, in the sweep of one pass per component too), the
    later v-steps are stale: they are solved again for the new state and share
    the next pass. The state is the sweep's (it would not be with the stale
    v-steps)."""
    X = _instance(n=600, seed=3552).astype(np.float32)
    op, sqnorm, state, kw = _first_sweep_state(X)
    certify = alternation._certify_step

    def shrunk(cfg, defl, pair):
        certify(cfg, defl, pair)
        pair.v = 0.9 * pair.v
        pair.Xv = defl.dot(pair.v)
        pair.vv, pair.nrm = float(pair.v @ pair.v), float(pair.u @ pair.Xv)

    monkeypatch.setattr(alternation, "_certify_step", shrunk)
    monkeypatch.setattr(sweep_pass, "_certify_step", shrunk)
    seq, seq_passes = _run_sweep(op, sqnorm, state, kw, False, monkeypatch)
    one, passes = _run_sweep(op, sqnorm, state, kw, True, monkeypatch)
    # every loading re-solved: a u-step pass and an Xc v pass per component either way
    assert (seq_passes, passes) == (6, 6)
    _close(one, seq)


@pytest.mark.parametrize("on_gram", [True, False])
def test_small_float64_data(monkeypatch, on_gram):
    """On the Gram path (float64 in memory, N <= 1000): with
    :data:`~neurospca.decomposition._sweep_pass.ON_GRAM_PATH` (the default) the
    fit is the one of one pass per component to 1e-8 in fewer passes; without
    it, bit for bit that fit."""
    monkeypatch.setattr(sweep_pass, "ON_GRAM_PATH", on_gram)
    X = _instance(n=400, seed=3553)
    reads = _Reads(monkeypatch)
    a = _fit(X, alpha_rel=1.0)
    one = reads.bytes / X.nbytes
    monkeypatch.setattr(joint, "ONE_PASS", False)
    reads.bytes = 0
    b = _fit(X, alpha_rel=1.0)
    per_component = reads.bytes / X.nbytes
    if on_gram:
        assert one < per_component
        assert np.abs(a.components_ - b.components_).max() < 1e-8
    else:
        assert one == per_component
        assert np.array_equal(a.components_, b.components_)


def test_memmap_fit_passes_and_components(tmp_path, monkeypatch):
    """The memmap of ``test_datapath``'s pass count: 12 passes with one pass per
    sweep (18 with one per component, whose passes do not look ahead to the
    restart checks; 16 and 20 before issue 22 round 16), the components within
    1e-8. Each pass read from storage (the look-ahead's case, round 17)."""
    X = _instance(n=3000).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    Xm = np.load(tmp_path / "x.npy", mmap_mode="r")
    reads = _Reads(monkeypatch)
    _as_read_from_disk(monkeypatch)
    got = {}
    for one_pass in (True, False):
        monkeypatch.setattr(joint, "ONE_PASS", one_pass)
        reads.bytes = 0
        m = SPCATV(3, operator=_op(), tol=1e-3, random_state=0, alpha_rel=1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit(Xm)
        got[one_pass] = (reads.bytes / X.nbytes, m)
    assert got[True][0] == 12 and got[False][0] == 18
    assert got[True][1].n_sweeps_ == got[False][1].n_sweeps_
    assert np.abs(got[True][1].components_ - got[False][1].components_).max() < 1e-8


def test_gram_restart_checks_take_the_kept_products(monkeypatch):
    """On the Gram path a restart check (the top eigenvector of the residual's
    N x N Gram matrix) takes the other components' ``Xc v_j`` from the fit's
    ``Z`` (``_joint.KNOWN_XV``): no pass for them, the fit the same to 1e-8."""
    X = _instance(n=400, seed=3555)
    reads = _Reads(monkeypatch)
    got = {}
    # its own passes, not those that _start.matvec_once saves either way (round 18)
    monkeypatch.setattr(_start, "MATVEC_ONCE", False)
    for known in (True, False):
        monkeypatch.setattr(joint, "KNOWN_XV", known)
        reads.bytes = 0
        got[known] = (_fit(X, alpha_rel=1.0), reads.bytes / X.nbytes)
    assert got[True][1] < got[False][1]
    assert np.abs(got[True][0].components_ - got[False][0].components_).max() < 1e-8
