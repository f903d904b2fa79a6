"""Issue 22 round 13: the joint fit's starts and the passes after them.

A start's own side-by-side jobs share the enclosing lockstep's passes (nested
:func:`~neurospca.decomposition._lockstep.run_side_by_side`); the subspace
start's components fitted side by side (:data:`PCA_START_SIDE_BY_SIDE`); the
returned scores' ``Xc^T u`` kept in the returned order and signs, so that the
certified support's snapshot needs no pass.
"""

import warnings

import numpy as np
import pytest

import neurospca.decomposition._joint as joint
import neurospca.decomposition._lockstep as lockstep
import neurospca.decomposition._spcatv as spcatv
from neurospca import SPCATV, tv_from_mask
from neurospca.decomposition._data import as_data_operator

from ._helpers import count_passes
from .test_datapath import SIDE, _instance
from .test_joint_lockstep import _chain, _memmap, _op


@pytest.mark.parametrize("kind", ["array64", "memmap32"])
def test_nested_side_by_side_is_each_chain_alone_in_the_longest_passes(tmp_path, kind, monkeypatch):
    """Two outer jobs, one of which runs two inner chains side by side, then a
    chain of its own: every product bit for bit its own, the passes those of
    the longest outer job (the inner chains counted as their longest), and
    the operator's own passes again afterwards."""
    monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", True)
    rng = np.random.default_rng(3453)
    X = rng.standard_normal((180, 47)) + 0.5
    X = _memmap(tmp_path, X.astype(np.float32)) if kind == "memmap32" else X
    offsets = [0, 60, 125, 180]

    def nested(op):
        inner = lockstep.run_side_by_side(op, [lambda: _chain(op, 1, 4), lambda: _chain(op, 2, 6)])
        return inner + [_chain(op, 3, 2)]

    def outer(op):
        return [lambda: nested(op), lambda: _chain(op, 4, 5)]

    op = _op(X, 1, offsets)
    alone = [job() for job in outer(op)]
    own = {}
    for seed, steps in ((1, 4), (2, 6), (3, 2), (4, 5)):
        n0 = op.n_passes
        _chain(op, seed, steps)
        own[seed] = op.n_passes - n0
    op = _op(X, 1, offsets)
    n0 = op.n_passes
    got = lockstep.run_side_by_side(op, outer(op))
    longest = max(max(own[1], own[2]) + own[3], own[4])
    assert op.n_passes - n0 == longest < sum(own.values())
    assert "_map" not in vars(op)
    flat = lambda res: [x for part in res for x in (part if isinstance(part[0], list) else [part])]  # noqa: E731
    for a, b in zip(flat(alone[0]) + [alone[1]], flat(got[0]) + [got[1]], strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        op = tv_from_mask(np.ones((SIDE,) * 3, bool))
        return SPCATV(3, operator=op, tol=1e-3, random_state=0, alpha_rel=1.0, **kw).fit(X)


def test_side_by_side_subspace_start_one_pass_same_numbers(tmp_path, monkeypatch):
    """The subspace start's components side by side: on a memmap (shared) and
    in memory (one after the other) the same start bit for bit; one pass for
    all on the memmap, one per non-empty component in memory."""
    X = _instance(n=600, seed=3454).astype(np.float32)
    got, passes = {}, {}
    inner = joint._start_side_by_side
    counted = count_passes(monkeypatch)

    def spy(op, sqnorm, u0, kw):
        n0 = len(counted)
        out = inner(op, sqnorm, u0, kw)
        got.setdefault(op.kind, tuple(np.array(a) for a in out[:4]))
        passes.setdefault(op.kind, len(counted) - n0)
        return out

    monkeypatch.setattr(joint, "_start_side_by_side", spy)
    monkeypatch.setattr(joint, "PCA_START_SIDE_BY_SIDE", True)
    monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", "memmap")  # in memory one after the other
    for data in (X, _memmap(tmp_path, X)):
        m = _fit(data)
        live = np.any(m.components_ != 0, axis=1)
        assert np.all(m.rel_gaps_[live] <= 1e-3)
    live = int(np.count_nonzero(np.any(got["array"][1], axis=0)))  # a u-step (pass) each
    assert passes == {"array": live, "memmap": 1} and live >= 2
    for a, b in zip(got["array"], got["memmap"], strict=True):
        assert np.array_equal(a, b)


def test_returned_scores_products_kept_in_returned_order_and_signs():
    """``keep_returned``: the products of the returned (reordered, sign-flipped)
    scores served with no pass, equal to a pass's to rounding; a score whose
    product is not kept leaves the operator's kept products as they were."""
    rng = np.random.default_rng(3455)
    X = rng.standard_normal((90, 40)) + 1.0
    op = as_data_operator(X, n_threads=1)
    op.centre(op.stats["mean"])
    U = np.linalg.qr(rng.standard_normal((90, 3)))[0]
    V = rng.standard_normal((40, 3))
    V[np.argmax(np.abs(V[:, 1])), 1] = -10.0  # returned with the other sign
    kept = list(zip(list(U.T), op.rmatvecs(list(U.T), exact=True), strict=True))
    order = [2, 0, 1]
    Ur, Vr = U[:, order], V[:, order]
    signs = joint.returned_signs(Vr)
    assert list(signs) == [1.0, 1.0, -1.0] or signs[order.index(1)] == -1.0
    joint.keep_returned(op, Ur, Vr, kept)
    n0 = op.n_passes
    us = [s * Ur[:, k] for k, s in enumerate(signs)]
    served = op.rmatvecs(us, exact=True)
    assert op.n_passes == n0
    op.keep_rmatvecs([np.zeros(90)], [np.zeros(40)])  # forget them
    for g, ref in zip(served, op.rmatvecs(us, exact=True), strict=True):
        np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    before = op._kept_rmatvecs
    joint.keep_returned(op, Ur, Vr, kept[:2])
    assert op._kept_rmatvecs is before


def test_flipped_joint_fit_support_snapshot_needs_no_pass(tmp_path, monkeypatch):
    """A joint fit on a float32 memmap whose returned signs differ from the
    fit's (deflation's fit a candidate as it is, :data:`DEFLATION_SWEEPS`, on
    the pass-count test's instance): the certified support makes no pass, and
    the signs are the estimator's (largest |loading| positive)."""
    monkeypatch.setattr(joint, "DEFLATION_SWEEPS", False)
    monkeypatch.setattr(joint, "KEEP_RETURNED", True)
    flipped, inner = [], spcatv._flip_signs

    def spy(U, V, info):
        flipped.append(bool(np.any(joint.returned_signs(V) < 0)))
        inner(U, V, info)

    monkeypatch.setattr(spcatv, "_flip_signs", spy)
    counted = count_passes(monkeypatch)
    certify, in_certify = spcatv.certify_fit, []

    def counting(*args, **kw):
        n0 = len(counted)
        out = certify(*args, **kw)
        in_certify.append(len(counted) - n0)
        return out

    monkeypatch.setattr(spcatv, "certify_fit", counting)
    m = _fit(_memmap(tmp_path, _instance(n=3000).astype(np.float32)))
    assert flipped == [True] and in_certify == [0]
    C = m.components_
    assert np.all(C[np.arange(3), np.argmax(np.abs(C), axis=1)] > 0)
