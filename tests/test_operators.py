"""Operators: adjoint identity, TV against brute force, norm bounds, errors."""

import numpy as np
import pytest
import scipy.sparse as sp

from neurospca import GroupOperator, chain_operator, stack_operators, tv_from_mask
from neurospca.operators import lanczos_norm2

from ._helpers import random_group_operator


def _masks():
    rng = np.random.default_rng(0)
    return {
        "1d": rng.random(40) > 0.2,
        "2d": rng.random((12, 9)) > 0.3,
        "3d": rng.random((7, 6, 5)) > 0.3,
        "3d_full": np.ones((4, 5, 6), dtype=bool),
    }


def _brute_force_tv(mask, v):
    """TV of eq. 6 by looping over voxels: forward differences inside the mask."""
    img = np.zeros(mask.shape)
    img[mask] = v
    total = 0.0
    for idx in np.argwhere(mask):
        sq = 0.0
        for axis in range(mask.ndim):
            nb = idx.copy()
            nb[axis] += 1
            if nb[axis] < mask.shape[axis] and mask[tuple(nb)]:
                sq += (img[tuple(nb)] - img[tuple(idx)]) ** 2
        total += np.sqrt(sq)
    return total


@pytest.mark.parametrize("name", list(_masks()))
def test_tv_matches_brute_force(name):
    mask = _masks()[name]
    op = tv_from_mask(mask)
    v = np.random.default_rng(1).standard_normal(mask.sum())
    assert op.n_features == mask.sum()
    assert op.n_groups == mask.sum()
    np.testing.assert_allclose(op.value(v), _brute_force_tv(mask, v), rtol=1e-12)


@pytest.mark.parametrize("name", list(_masks()))
def test_tv_adjoint_and_norm_bound(name):
    mask = _masks()[name]
    op = tv_from_mask(mask)
    rng = np.random.default_rng(2)
    v, w = rng.standard_normal(op.n_features), rng.standard_normal(op.n_rows)
    np.testing.assert_allclose(op.matvec(v) @ w, v @ op.rmatvec(w), rtol=1e-12)
    exact = np.linalg.norm(op.matrix.toarray(), 2) ** 2
    assert exact <= op.norm2 + 1e-12
    assert op.norm2 == 4.0 * mask.ndim


def test_tv_constant_is_zero_and_dropped_rows():
    mask = np.zeros((5, 5), dtype=bool)
    mask[1:4, 1:4] = True
    mask[2, 2] = False  # a hole
    op = tv_from_mask(mask)
    assert op.value(np.full(op.n_features, 3.7)) == 0.0
    # 8 voxels of a ring: 8 edges, each a row
    assert op.n_rows == 8
    # every row is one forward difference: exactly a -1 and a +1
    A = op.matrix.toarray()
    assert np.all((A == 1).sum(1) == 1) and np.all((A == -1).sum(1) == 1)


def test_chain_operator():
    op = chain_operator(6)
    v = np.array([0.0, 1.0, 3.0, 3.0, 2.0, 5.0])
    assert op.value(v) == pytest.approx(1 + 2 + 0 + 1 + 3)
    assert np.linalg.norm(op.matrix.toarray(), 2) ** 2 <= op.norm2


def test_random_operator_adjoint_and_lanczos():
    rng = np.random.default_rng(3)
    op = random_group_operator(300, 250, rng)
    v, w = rng.standard_normal(op.n_features), rng.standard_normal(op.n_rows)
    np.testing.assert_allclose(op.matvec(v) @ w, v @ op.rmatvec(w), rtol=1e-10)
    exact = np.linalg.norm(op.matrix.toarray(), 2) ** 2
    assert exact <= op.norm2 <= exact * 1.01


def test_lanczos_on_large_grid_is_upper_bound():
    mask = np.ones((30, 30, 30), dtype=bool)
    op = tv_from_mask(mask)
    # exact top eigenvalue of the 3-D grid Laplacian: 3 * (2 - 2 cos(pi * 29 / 30))
    exact = 3 * (2 - 2 * np.cos(np.pi * 29 / 30))
    val = lanczos_norm2(op.matrix)
    assert exact <= val <= exact * 1.002


def test_stack_operators_value_is_weighted_sum():
    rng = np.random.default_rng(4)
    a = tv_from_mask(np.ones((4, 4), dtype=bool))
    b = random_group_operator(16, 5, rng)
    st = stack_operators([a, b], [2.0, 0.5])
    v = rng.standard_normal(16)
    assert st.value(v) == pytest.approx(2.0 * a.value(v) + 0.5 * b.value(v))
    assert st.n_groups == a.n_groups + b.n_groups
    assert np.linalg.norm(st.matrix.toarray(), 2) ** 2 <= st.norm2 + 1e-12


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(matrix=np.eye(3), group_ptr=[0, 3]), "matrix"),
        (dict(matrix=sp.eye(3), group_ptr=[0, 2]), "group_ptr"),
        (dict(matrix=sp.eye(3), group_ptr=[0, 2, 1, 3]), "group_ptr"),
        (dict(matrix=sp.eye(3), group_ptr=[0.0, 3.0]), "group_ptr"),
        (dict(matrix=sp.eye(3), group_ptr=[0, 3], norm2=-1.0), "norm2"),
    ],
)
def test_group_operator_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        GroupOperator(**kwargs)


@pytest.mark.parametrize(
    "mask, match",
    [
        (np.zeros((3, 3), dtype=bool), "empty"),
        (np.ones((2, 2, 2, 2), dtype=bool), "3-D"),
        (np.full((3, 3), 0.5), "binarise"),
        (np.array([["a", "b"]]), "boolean"),
    ],
)
def test_tv_from_mask_bad_input(mask, match):
    with pytest.raises((ValueError, TypeError), match=match):
        tv_from_mask(mask)


def test_value_checks_shape():
    op = chain_operator(5)
    with pytest.raises(ValueError, match="shape"):
        op.value(np.zeros(4))
