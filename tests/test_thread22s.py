"""Issue 22 round 19: the dual kernels' scratch arrays kept between the v-steps of a fit.

* :mod:`neurospca._utils.scratch`: an array handed back inside
  :func:`reused_buffers` is the next one of its shape and dtype, only there,
  only until the outermost scope ends, never twice;
* the dual solver inside the scope: the same results bit for bit (difference
  kernel in and out of a locality order, the CSR kernel, float32), results
  that later solves do not overwrite, and less fresh memory per solve;
* the joint fit keeps its answer bit for bit and its solves take kept arrays.
"""

import tracemalloc
from contextlib import nullcontext
from functools import partial

import numpy as np
import pytest

import neurospca._utils.scratch as scratch_mod
import neurospca.decomposition._alternation as alternation
from neurospca import icosphere, tv_from_mask, tv_from_mesh
from neurospca._utils.scratch import release, reused_buffers, scratch
from neurospca.solvers import prox_dual
from neurospca.solvers._base import locality_order

from ._helpers import assert_same_fit
from .test_datapath import _instance
from .test_joint_lockstep import _joint_fit


def test_scratch_arrays_are_kept_only_inside_the_scope():
    """Outside the scope ``release`` keeps nothing; inside, the released array
    is the next ``scratch`` of its shape and dtype (not of another), each one
    is handed out once, and nothing is kept after the outermost exit."""
    a = scratch(7)
    release(a)
    assert scratch(7) is not a
    with reused_buffers():
        a, b = scratch(7), scratch((2, 3), np.float32)
        release(a, b, None)
        assert scratch(7, np.float32) is not a
        assert scratch((3, 2), np.float32) is not b
        with reused_buffers():
            assert scratch(7) is a
            assert scratch(7) is not a  # handed out once
            release(a)
        assert scratch(7) is a  # the inner exit keeps them
        release(a)
    with reused_buffers():
        assert scratch(7) is not a
        assert scratch((2, 3), np.float32) is not b


def test_views_and_empty_arrays_are_not_kept(monkeypatch):
    """A view (its memory is another array's), a non-contiguous array or an
    empty one is not kept; at most ``KEPT_SIZES`` sizes, the oldest dropped."""
    monkeypatch.setattr(scratch_mod, "KEPT_SIZES", 2)
    with reused_buffers():
        base = scratch((4, 6))
        release(base[1], base[:, ::2], np.empty((0, 6)))
        assert scratch(6) is not base[1]
        assert not scratch_mod._KEPT["free"]
        a, b, c = scratch(3), scratch(4), scratch(5)
        release(a, b, c)
        assert scratch(3) is not a
        assert scratch(4) is b and scratch(5) is c


def _problems(kind, rng):
    """Warm-started v-steps of one operator: ``(op, [y, ...], l1, group, kw)``."""
    if kind == "mesh":
        op = tv_from_mesh(*icosphere(3))
        assert locality_order(op) is not None
    else:
        op = tv_from_mask(rng.random((14, 13, 12)) < 0.85)
    y0 = rng.standard_normal(op.n_features) + 2.0 * (rng.random(op.n_features) < 0.1)
    ys = [y0 + 0.1 * k * rng.standard_normal(op.n_features) for k in range(4)]
    kw = dict(kernel_path="csr") if kind == "csr" else {}
    return op, ys, 0.1, 0.4, kw


def _solve_chain(op, ys, l1, group, kw, dtype):
    """Each v-step warm-started from the last one's dual point."""
    out, w0 = [], None
    for y in ys:
        res = prox_dual(y.astype(dtype), op, l1, group, tol=1e-6, w0=w0, **kw)
        out.append(res)
        w0 = res.w
    return out


@pytest.mark.parametrize("kind", ["grid", "mesh", "csr"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_solves_in_the_scope_are_the_same_bits(kind, dtype):
    """Warm-started chains of solves with and without kept arrays: ``v``,
    ``w``, ``A^T w``, gaps and iterations bit for bit; the results of the
    first solves are unchanged after the later ones ran (no result shares
    memory with a kept array)."""
    rng = np.random.default_rng(3737)
    op, ys, l1, group, kw = _problems(kind, rng)
    plain = _solve_chain(op, ys, l1, group, kw, dtype)
    with reused_buffers():
        kept = _solve_chain(op, ys, l1, group, kw, dtype)
        frozen = [(r.v.copy(), r.w.copy()) for r in kept]
        _solve_chain(op, ys[::-1], l1, group, kw, dtype)  # more solves reuse the arrays
    for a, b, (v, w) in zip(plain, kept, frozen, strict=True):
        np.testing.assert_array_equal(a.v, b.v)
        np.testing.assert_array_equal(a.w, b.w)
        np.testing.assert_array_equal(b.v, v)
        np.testing.assert_array_equal(b.w, w)
        assert (a.gap, a.n_iter) == (b.gap, b.n_iter)
        assert (a.atw is None) == (b.atw is None)
        if a.atw is not None:
            np.testing.assert_array_equal(a.atw[0], b.atw[0])


def _fresh_bytes(solve):
    """The most memory ``solve()`` held at once beyond what it returned (bytes)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        res = solve()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - before, res


@pytest.mark.parametrize("kind", ["grid", "mesh"])
def test_a_warm_solve_in_the_scope_allocates_less(kind):
    """The same warm solve holds at least one dual-sized array fewer at its
    peak when the arrays of an earlier solve are kept (tracemalloc)."""
    rng = np.random.default_rng(3738)
    op, ys, l1, group, kw = _problems(kind, rng)
    w0 = prox_dual(ys[0], op, l1, group, tol=1e-6).w

    def solve():
        return prox_dual(ys[1], op, l1, group, tol=1e-6, w0=w0)

    fresh, _ = _fresh_bytes(solve)
    with reused_buffers():
        solve()  # leaves its scratch arrays
        kept, _ = _fresh_bytes(solve)
    assert kept <= fresh - w0.nbytes


@pytest.mark.parametrize("seed", [3739, 3740])
def test_joint_fit_with_kept_arrays_is_the_same_fit(monkeypatch, seed):
    """The joint fit with the v-steps' arrays kept and without (the scope
    replaced by a null context): the same fit bit for bit; with them, a third
    or more of its solves' scratch arrays are kept ones (the returned ones are
    new)."""
    X = _instance(n=60, side=12, seed=seed)
    op = tv_from_mask(np.ones((12,) * 3, bool))
    fit = partial(_joint_fit, X, op, tol=1e-3)
    monkeypatch.setattr(alternation, "reused_buffers", nullcontext)
    without = fit()
    monkeypatch.undo()
    taken, original = [], scratch_mod.scratch
    free = scratch_mod._KEPT["free"]

    def counted(shape, dtype=np.float64):
        key = scratch_mod._key(shape, dtype)
        taken.append(bool(scratch_mod._KEPT["depth"] and free.get(key)))
        return original(shape, dtype)

    import neurospca.solvers._dual_kernels as dual_kernels

    monkeypatch.setattr(dual_kernels, "scratch", counted)
    with_kept = fit()
    assert_same_fit(with_kept, without)
    assert with_kept.n_sweeps_ == without.n_sweeps_
    assert len(taken) > 100 and np.mean(taken) > 0.3
