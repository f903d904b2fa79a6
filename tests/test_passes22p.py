"""Issue 22 round 16: 12 passes over ``X`` for a 3-component joint fit.

Deflation's u-steps look ahead to the next component's start
(:class:`~neurospca.decomposition._start.LookAhead`); the restart checks are
decided "no restart" in a span that holds the kept loadings and a direction
the last sweep's pass computed (:func:`~neurospca.decomposition._joint_starts.
restart_starts`), any other check as before; ``explained_variance_`` takes the
fit's kept ``Xc v`` when the finishing did not move the loadings
(:func:`~neurospca.decomposition._joint.kept_scores`).
"""

import warnings

import numpy as np
import pytest

import neurospca.decomposition._joint as joint
import neurospca.decomposition._joint_starts as joint_starts
import neurospca.decomposition._start as start
import neurospca.decomposition._sweep_pass as sweep_pass
from neurospca import SPCATV
from neurospca.decomposition._alternation import _adjusted_variance
from neurospca.decomposition._data import as_data_operator
from neurospca.decomposition._subspace import cached_subspace

from .test_datapath import _as_read_from_disk, _fit, _instance, _op, _Reads


def _memmap(tmp_path, seed=7):
    X = _instance(n=3000, seed=seed).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    return np.load(tmp_path / "x.npy", mmap_mode="r")


def _counted_fit(Xm, reads, **kw):
    reads.bytes = 0
    m = _fit(Xm, alpha_rel=1.0, **kw)
    return m, reads.bytes / Xm.nbytes


def test_look_ahead_products_are_the_direction_s_exact_products(monkeypatch):
    """The look-ahead's kept ``(w, Xc w, Xc^T Xc w)`` are the products of
    ``w`` (a pass of its own would give them to rounding), computed in the
    u-step's pass: the pass count is that of the u-steps alone. In memory the
    u-steps look ahead only when asked (``LOOK_AHEAD`` True; by default only
    where a pass reads a file)."""
    X = _instance(n=300, seed=3603).astype(np.float32)
    op = as_data_operator(X, n_threads=1)
    op.centre(op.stats["mean"])
    cached_subspace(op, 3)  # the fit's Krylov passes, before its starts
    rng = np.random.default_rng(3604)
    v1, v2 = (rng.standard_normal(X.shape[1]) * (rng.random(X.shape[1]) < 0.3) for _ in range(2))
    defl = start.LookAhead(op, 3)
    defl.gram(v1)
    defl.gram(v2)
    assert defl.ahead == []  # in memory, by default
    monkeypatch.setattr(start, "LOOK_AHEAD", True)
    defl = start.LookAhead(op, 3)
    n0 = op.n_passes
    defl.gram(v1)
    assert defl.ahead == []  # a first u-step never ends the alternation: nothing ahead
    defl.gram(v2)
    assert op.n_passes - n0 == 2
    (w, xw, aw) = defl.ahead[0]
    Xc = X.astype(np.float64) - op.stats["mean"]
    np.testing.assert_allclose(xw, Xc @ w, rtol=1e-5, atol=1e-5 * np.abs(Xc @ w).max())
    np.testing.assert_allclose(aw, Xc.T @ (Xc @ w), rtol=1e-4, atol=1e-4 * np.abs(aw).max())
    # w: the next start's Davidson direction, orthogonal to that start's span
    assert abs(np.linalg.norm(w) - 1.0) < 1e-10


def test_memmap_fit_takes_12_passes_each_change_its_share(tmp_path, monkeypatch):
    """The memmap of ``test_datapath``'s count: 12 passes; without the look-ahead
    of deflation's start 14 (its two Davidson passes), without the checks' span
    14 (each start's chain two check passes more). The checks leave the answer
    bit for bit; the look-ahead moves the start within its tolerance (the fit
    within 1e-6 here). The kept scores save the diagnostics' pass only when the
    finishing did not move the loadings (here: ``certify_support=False``)."""
    Xm = _memmap(tmp_path)
    reads = _Reads(monkeypatch)
    _as_read_from_disk(monkeypatch)  # where a pass is expensive (round 17)
    m, passes = _counted_fit(Xm, reads)
    assert passes == 12
    got = {}
    for flag, module in (("LOOK_AHEAD", start), ("CHECK_LOADINGS", joint_starts)):
        with monkeypatch.context() as mp:
            mp.setattr(module, flag, False)
            got[flag] = _counted_fit(Xm, reads)
    assert got["LOOK_AHEAD"][1] == 14 and got["CHECK_LOADINGS"][1] == 14
    assert np.array_equal(got["CHECK_LOADINGS"][0].components_, m.components_)
    assert np.abs(got["LOOK_AHEAD"][0].components_ - m.components_).max() < 1e-6
    for kept in (True, False):
        monkeypatch.setattr(joint, "KEPT_SCORES", kept)
        got[kept] = _counted_fit(Xm, reads, certify_support=False)
    assert got[True][1] == got[False][1] - 1
    np.testing.assert_allclose(
        got[True][0].explained_variance_, got[False][0].explained_variance_, rtol=1e-6
    )
    assert np.array_equal(got[True][0].components_, got[False][0].components_)


def test_checks_decided_with_no_pass_agree_with_the_checks_as_before(tmp_path, monkeypatch):
    """On a settled state and on one with a component replaced by noise, the
    restart checks give the same decisions as before in fewer passes (the
    settled one), and a restart the same start bit for bit (a check saying
    "restart" in the larger span is made again as before)."""
    Xm = _memmap(tmp_path)
    _as_read_from_disk(monkeypatch)  # where a pass is expensive (round 17)
    m = _fit(Xm, alpha_rel=1.0)
    op = as_data_operator(Xm, n_threads=1)
    op.centre(m.mean_)
    U, V = m.scores_.copy(), m.loadings_.copy()
    d = m.singular_values_ / np.linalg.norm(V, axis=0)
    Z = op.matmat(V)
    cached_subspace(op, 3)
    noise = np.random.default_rng(3606).standard_normal(V.shape[0]) * 1e-3
    for replaced in (None, 2):
        U1, V1, Z1 = U.copy(), V.copy(), Z.copy()
        if replaced is not None:
            V1[:, replaced] = noise
            Z1[:, replaced] = op.matvec(noise)
            U1[:, replaced] = Z1[:, replaced] / np.linalg.norm(Z1[:, replaced])
        cache = joint.ProductCache(12)
        for k in range(3):
            u = U1[:, k]
            cache._put(cache.xtu, u, op.rmatvec(u, exact=True))
            cache._put(cache.xv, V1[:, k], Z1[:, k])
            cache._put(cache.av, V1[:, k], op.rmatvec(Z1[:, k], exact=True))
        sqnorm = op.sqnorm()
        cache.want_checks = 0.01  # as a sweep before the checks: the directions ahead
        ahead = joint_starts.checks_ahead(op, sqnorm, U1, V1, d, Z1, cache)
        sweep_pass._with_ahead(op, [], ahead, cache)
        args = (op, sqnorm, U1, V1, d, Z1, [0, 1, 2], cache, joint.RESTART_SAME)
        n0 = op.n_passes
        new = joint_starts.restart_starts(*args)
        n1 = op.n_passes
        with monkeypatch.context() as mp:
            mp.setattr(joint_starts, "CHECK_LOADINGS", False)
            old = joint_starts.restart_starts(*args)
        if replaced is None:
            assert n1 - n0 < op.n_passes - n1
        assert new.keys() == old.keys() == {0, 1, 2}
        for k in range(3):
            if old[k] is False:
                assert new[k] is False
            else:
                assert np.array_equal(new[k], old[k])
        if replaced is not None:
            assert old[replaced] is not False  # the noise component is restarted


def test_kept_scores_only_for_loadings_as_returned():
    """``kept_scores`` gives ``Xc C^T`` of the unit loadings from the kept
    ``Xc v`` (signs too), and None when one loading is not a kept one."""
    rng = np.random.default_rng(3607)
    X = rng.standard_normal((40, 30))
    V = rng.standard_normal((30, 3)) * (rng.random((30, 3)) < 0.5)
    xv = [(V[:, k].copy(), X @ V[:, k]) for k in range(3)]
    W = V * np.array([1.0, -1.0, 1.0])
    Z = joint.kept_scores(W, xv)
    np.testing.assert_allclose(Z, X @ (W / np.linalg.norm(W, axis=0)), atol=1e-12)
    W[0, 1] += 1e-9
    assert joint.kept_scores(W, xv) is None
    assert joint.kept_scores(V, None) is None


@pytest.mark.parametrize("certify", [True, False])
def test_explained_variance_as_from_a_pass(certify):
    """``explained_variance_`` equals the pass's (``_adjusted_variance`` with
    ``Xc C^T`` computed), with and without the finishing (which moves the
    loadings: then a pass)."""
    X = _instance(n=300, seed=3608).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SPCATV(3, operator=_op(), tol=1e-3, random_state=0, alpha_rel=1.0)
        m.set_params(certify_support=certify).fit(X)
    op = as_data_operator(X, n_threads=1)
    op.centre(m.mean_)
    var, ratio = _adjusted_variance(op, m.components_)
    np.testing.assert_allclose(m.explained_variance_, var, rtol=1e-6)
    np.testing.assert_allclose(m.explained_variance_ratio_, ratio, rtol=1e-6)
