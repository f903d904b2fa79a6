"""Each Cython kernel equals its NumPy twin on random inputs."""

import numpy as np
import pytest

from neurospca import tv_from_mask
from neurospca._kernels import _numpy_prox as NK
from neurospca._kernels import _prox as CK
from neurospca.solvers._base import operator_arrays

from ._helpers import random_group_operator


def _operators():
    rng = np.random.default_rng(0)
    return {
        "random": random_group_operator(60, 45, rng),
        "tv3d": tv_from_mask(rng.random((6, 5, 4)) > 0.25),
    }


@pytest.fixture(params=["random", "tv3d"])
def setup(request):
    op = _operators()[request.param]
    rng = np.random.default_rng(1)
    return op, operator_arrays(op), rng


def test_soft_threshold(setup):
    _, _, rng = setup
    x = rng.standard_normal(100)
    a, b = np.empty(100), np.empty(100)
    CK.soft_threshold(x, 0.4, a)
    NK.soft_threshold(x, 0.4, b)
    np.testing.assert_array_equal(a, b)
    assert np.all(a[np.abs(x) <= 0.4] == 0)


def test_csr_matvec_both_ways(setup):
    op, (A_ip, A_ix, A_d, At_ip, At_ix, At_d, _), rng = setup
    v, w = rng.standard_normal(op.n_features), rng.standard_normal(op.n_rows)
    o1, o2 = np.empty(op.n_rows), np.empty(op.n_rows)
    CK.csr_matvec(A_ip, A_ix, A_d, v, o1)
    NK.csr_matvec(A_ip, A_ix, A_d, v, o2)
    np.testing.assert_allclose(o1, o2, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(o1, op.matrix @ v, rtol=1e-13, atol=1e-13)
    p1, p2 = np.empty(op.n_features), np.empty(op.n_features)
    CK.csr_matvec(At_ip, At_ix, At_d, w, p1)
    NK.csr_matvec(At_ip, At_ix, At_d, w, p2)
    np.testing.assert_allclose(p1, p2, rtol=1e-13, atol=1e-13)


def test_project_groups_and_norm_sum(setup):
    op, arrays, rng = setup
    gptr = arrays[-1]
    z = 3 * rng.standard_normal(op.n_rows)
    a, b = z.copy(), z.copy()
    CK.project_groups(a, gptr, 0.7)
    NK.project_groups(b, gptr, 0.7)
    np.testing.assert_allclose(a, b, rtol=1e-14)
    norms = op.group_norms(a)
    assert np.all(norms <= 0.7 + 1e-12)
    assert CK.group_norm_sum(z, gptr) == pytest.approx(NK.group_norm_sum(z, gptr))
    assert CK.group_norm_sum(z, gptr) == pytest.approx(op.group_norms(z).sum())


@pytest.mark.parametrize("restart", [True, False])
def test_dual_iterations(setup, restart):
    op, (A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr), rng = setup
    y = rng.standard_normal(op.n_features)
    states = []
    for K in (CK, NK):
        w = np.linspace(-0.2, 0.2, op.n_rows)
        w_old = w[::-1].copy()
        ATw, ATw_old = op.rmatvec(w), op.rmatvec(w_old)
        vq = np.empty(op.n_features)
        t, nr = K.dual_iterations(
            7,
            A_ip,
            A_ix,
            A_d,
            At_ip,
            At_ix,
            At_d,
            gptr,
            y,
            0.3,
            0.5,
            1.0 / op.norm2,
            w,
            w_old,
            ATw,
            ATw_old,
            vq,
            1.0,
            restart,
        )
        states.append((w, w_old, ATw, ATw_old, vq, t, nr))
    for a, b in zip(*states, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)
    w, _, ATw = states[0][:3]
    np.testing.assert_allclose(ATw, op.rmatvec(w), atol=1e-12)
    assert np.all(op.group_norms(w) <= 0.5 + 1e-12)


def test_dual_gap_terms(setup):
    op, (A_ip, A_ix, A_d, _, _, _, gptr), rng = setup
    y = rng.standard_normal(op.n_features)
    w = rng.standard_normal(op.n_rows)
    NK.project_groups(w, gptr, 0.5)
    ATw = op.rmatvec(w)
    v1, v2 = np.empty_like(y), np.empty_like(y)
    r1 = CK.dual_gap_terms(A_ip, A_ix, A_d, gptr, y, ATw, 0.3, 0.5, v1)
    r2 = NK.dual_gap_terms(A_ip, A_ix, A_d, gptr, y, ATw, 0.3, 0.5, v2)
    np.testing.assert_allclose(r1, r2, rtol=1e-12)
    np.testing.assert_allclose(v1, v2)
    assert r1[0] >= r1[1]  # weak duality: P(v(w)) >= D(w)


def test_smoothed_alpha_and_fista_and_gap_terms(setup):
    op, (A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr), rng = setup
    x = rng.standard_normal(op.n_features)
    a1, a2 = np.empty(op.n_rows), np.empty(op.n_rows)
    r1 = CK.smoothed_alpha(A_ip, A_ix, A_d, gptr, x, 0.3, a1)
    r2 = NK.smoothed_alpha(A_ip, A_ix, A_d, gptr, x, 0.3, a2)
    np.testing.assert_allclose(a1, a2, rtol=1e-13)
    np.testing.assert_allclose(r1, r2, rtol=1e-12)
    assert r1[2] == pytest.approx(op.value(x))
    yp = rng.standard_normal(op.n_features)
    outs = []
    for K in (CK, NK):
        v, v_old = x.copy(), 0.5 * x
        z, alpha = np.empty_like(x), np.empty(op.n_rows)
        k = K.fista_iterations(
            9,
            2,
            A_ip,
            A_ix,
            A_d,
            At_ip,
            At_ix,
            At_d,
            gptr,
            yp,
            0.8,
            0.2,
            0.05,
            0.01,
            v,
            v_old,
            z,
            alpha,
        )
        terms = K.conesta_gap_terms(
            A_ip, A_ix, A_d, At_ip, At_ix, At_d, gptr, yp, 0.8, 0.2, 0.05, v, alpha
        )
        outs.append((v, v_old, z, np.array(terms), k))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert outs[0][-1] == 11
