"""Issue 20 round 16: half components that agree with each other but not with the
full component do not carry its claim (``capped_stability``)."""

import numpy as np

from neurospca import SPCATV
from neurospca.decomposition._stability import (
    HalfFits,
    capped_stability,
    component_stability,
    halves_stability,
)


def _maps(seed, k=3, p=144):
    """``k`` sparse unrelated maps (rows)."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((k, p)) * (rng.random((k, p)) < 0.2)
    return M / np.linalg.norm(M, axis=1, keepdims=True)


def test_capped_stability_is_the_split_half_value_when_the_halves_hold_the_component():
    C = _maps(3582)
    rng = np.random.default_rng(3582)
    A = C + 0.02 * rng.standard_normal(C.shape)
    B = C[::-1] + 0.02 * rng.standard_normal(C.shape)  # any order
    np.testing.assert_allclose(capped_stability(C, A, B), component_stability(C, A, B))
    assert np.all(capped_stability(C, A, B) > 0.8)


def test_halves_that_agree_on_another_pattern_do_not_carry_the_claim():
    """Both halves hold a pattern the full fit does not have where the full fit
    holds its second component: they agree with each other (main claimed 1.0),
    not with it."""
    C, other = _maps(3581, 2), _maps(3580, 1)
    halves = HalfFits((np.vstack([C[0], other[0]]), np.vstack([other[0], C[0]])))
    halves.refit = tuple(halves)  # the refit from the full fit holds the other pattern too
    np.testing.assert_allclose(component_stability(C, *halves), [1.0, 1.0])
    model = SPCATV(2, random_state=0)
    model.components_ = C
    stab = halves_stability(model, None, {}, halves, series=False)
    assert stab[0] > 0.99 and stab[1] < 0.2, stab
