"""Seeded simulations: the paper's split and the cortical-atrophy data."""

import numpy as np
import pytest

from neurospca import tv_from_hemispheres
from neurospca.datasets import (
    make_cortical_atrophy,
    make_paper_simulation,
    make_paper_simulation_split,
    paper_patterns,
)


def test_paper_split_is_the_paper_simulation_cut_in_two():
    X_train, X_test, patterns, mask = make_paper_simulation_split(
        30, 20, random_state=7, shape=(20, 20)
    )
    X, patterns_full, _ = make_paper_simulation(50, random_state=7, shape=(20, 20))
    np.testing.assert_array_equal(X_train, X[:30])
    np.testing.assert_array_equal(X_test, X[30:])
    np.testing.assert_array_equal(patterns, patterns_full)
    np.testing.assert_array_equal(patterns, paper_patterns((20, 20)).reshape(3, -1))
    assert mask.shape == (20, 20) and mask.all()
    # seeded: same seed, same data; another seed, other data
    again = make_paper_simulation_split(30, 20, random_state=7, shape=(20, 20))[0]
    other = make_paper_simulation_split(30, 20, random_state=8, shape=(20, 20))[0]
    np.testing.assert_array_equal(again, X_train)
    assert not np.allclose(other, X_train)


def test_paper_split_defaults_and_validation():
    X_train, X_test, patterns, _ = make_paper_simulation_split()
    assert X_train.shape == (250, 10_000) and X_test.shape == (250, 10_000)
    # the three supports are disjoint dots (two, two, one)
    supports = patterns > 0
    assert not (supports[0] & supports[1]).any() and not (supports[1] & supports[2]).any()
    with pytest.raises(ValueError, match="n_test"):
        make_paper_simulation_split(10, 1)


@pytest.fixture(scope="module")
def atrophy():
    return make_cortical_atrophy(n_samples=12, random_state=0)


def test_cortical_atrophy_shapes_and_generative_model(atrophy):
    d = atrophy
    n = sum(d.n_vertices)
    assert d.n_vertices == (10242, 10242)
    assert d.X.shape == (12, n) and d.patterns.shape == (3, n) and d.scores.shape == (12, 3)
    assert np.all(d.scores >= 0)  # atrophy severities
    np.testing.assert_allclose(d.patterns.max(axis=1), 1.0, atol=0.05)  # peak 1 mm
    assert np.all(d.patterns >= 0)
    # noise-free data are exactly baseline - scores @ patterns
    clean = make_cortical_atrophy(n_samples=12, noise=0.0, random_state=0)
    np.testing.assert_allclose(clean.X, d.baseline - d.scores @ d.patterns)
    # the noise has the requested standard deviation
    assert np.std(d.X - clean.X) == pytest.approx(0.3, rel=0.02)
    # baseline: a plausible mean thickness map (mm)
    assert 1.5 < np.median(d.baseline) < 3.5


def test_cortical_atrophy_patterns_are_local_and_smooth(atrophy):
    d = atrophy
    n_left = d.n_vertices[0]
    support = d.patterns > 0
    # patterns 1 and 2 are bilateral, pattern 3 is in the left hemisphere only
    for k in (0, 1):
        assert support[k, :n_left].any() and support[k, n_left:].any()
    assert support[2, :n_left].any() and not support[2, n_left:].any()
    assert np.all(support.mean(axis=1) < 0.1)  # sparse
    assert not (support[0] & support[1]).any()
    # smooth on the mesh: much smaller TV than the same values shuffled
    op, _ = tv_from_hemispheres(d.mesh_left, d.mesh_right)
    rng = np.random.default_rng(0)
    for k in range(3):
        assert op.value(d.patterns[k]) < 0.2 * op.value(rng.permutation(d.patterns[k]))


def test_cortical_atrophy_seeded_and_validated():
    a = make_cortical_atrophy(n_samples=3, random_state=5)
    b = make_cortical_atrophy(n_samples=3, random_state=5)
    np.testing.assert_array_equal(a.X, b.X)
    with pytest.raises(ValueError, match="n_samples"):
        make_cortical_atrophy(n_samples=1)
    with pytest.raises(ValueError, match="noise"):
        make_cortical_atrophy(noise=-1.0)
    with pytest.raises(ValueError, match="radius"):
        make_cortical_atrophy(radius=0.0)
