"""Issue 20 round 10: the other splits wait for a component that ``stability_``
would flag.

When the first split's best point reproduces below ``OTHER_SPLITS_BELOW`` on
the halves, the full data are fitted at the first split's choice first and
its components measured as ``stability_`` measures them (the walk's halves,
refitted from the full fit for a component below ``STABILITY_THRESHOLD``, and
the noise floor); the other splits are searched only when a component is
flagged there (below ``STABILITY_THRESHOLD``). The noise floor's permuted
fits are made once: ``stability_`` continues from them.
"""

import warnings

import numpy as np

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import DEFAULT_SPLIT, _auto_check, _stability
from neurospca.decomposition._auto import OTHER_SPLITS_BELOW
from neurospca.decomposition._auto_check import _flagged
from neurospca.decomposition._stability import (
    STABILITY_THRESHOLD,
    NoiseFloor,
    _chosen_params,
    below_noise,
)

from .test_stability20g import _planted


def test_flagged_is_stability_s_flag():
    # fsaverage5 r = 0.8, fresh seed 3234 of round 9: correct components
    # (|cos| .98-.99) at 0.57/0.73/0.99, mean 0.76: round 9 searched the sparse split
    assert not _flagged(np.array([0.57, 0.73, 0.99]))
    assert np.mean([0.57, 0.73, 0.99]) < OTHER_SPLITS_BELOW
    assert _flagged(np.array([0.99, STABILITY_THRESHOLD - 0.01, 0.99]))
    assert _flagged(np.array([0.0, 0.99]))  # an empty component scores 0
    assert not _flagged(np.array([STABILITY_THRESHOLD, 1.0]))


def _noise_fit():
    X, _ = _planted(3233, strength=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        op = tv_from_mask(np.ones((12, 12), dtype=bool))
        m = SPCATV(2, operator=op, random_state=0, stability=False, alpha_rel=2.0).fit(X)
    return m, X


def test_the_noise_floor_continues_from_its_fits():
    """A first call that stopped early (components far above the floor) and a
    second that needs every permutation: the second continues from the first's
    permuted fits, gives what one call gives, bit for bit, and the two together
    fit as many permuted copies as that one call."""
    m, X = _noise_fit()
    params = _chosen_params(m)
    sv = np.array([11.88, 11.46])  # the default fit's, near the floor (10.9-11.7)
    floor = NoiseFloor(m, X, params)
    far = below_noise(m, X, params, floor, singular_values=100.0 * sv)
    assert not far.any() and floor.n_fits < _stability.NOISE_PERMUTATIONS
    first = floor.n_fits
    got = below_noise(m, X, params, floor, singular_values=sv)
    fresh = NoiseFloor(m, X, params)
    np.testing.assert_array_equal(got, below_noise(m, X, params, fresh, singular_values=sv))
    assert got[1]  # 11.46 is not above the floor
    assert floor.values == fresh.values and floor.n_fits == fresh.n_fits > first
    other = dict(params, alpha_rel=1.0)  # another penalty: its own fits
    assert below_noise(m, X, other, floor, singular_values=sv).shape == (2,)
    assert floor.n_fits == fresh.n_fits


def _default_fit(X, op):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(3, operator=op, random_state=0).fit(X)


def _counting(monkeypatch, module, name):
    calls = []
    inner = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return inner(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_the_other_splits_wait_for_a_flagged_component(monkeypatch):
    """The paper's set-up, weights correlated 0.8, low signal (30 x 30, N = 80,
    seed 3107): the default split's halves reproduce below
    ``OTHER_SPLITS_BELOW``, the full fit at its choice reproduces every
    component (0.86-0.96, none flagged): the sparse split is not walked (no
    half fit of it), and searching it (round 9's rule: the mean below
    ``OTHER_SPLITS_BELOW``) gives the same model, bit for bit. The noise
    floor's permuted copies are fitted once in the default fit."""
    from neurospca.decomposition import _auto

    X, _, mask = make_paper_simulation(
        80, random_state=3107, shape=(30, 30), snr=0.25, correlation=0.8
    )
    op = tv_from_mask(mask)
    points = _counting(monkeypatch, _auto, "_fit_point")
    copies = _counting(monkeypatch, _stability, "_permute_columns")
    after = _default_fit(X, op)
    assert {(p["l1_ratio"], p["tv_ratio"]) for p in after.auto_path_} == {DEFAULT_SPLIT}
    assert len(points) == len(after.auto_path_)
    assert max(np.mean(p["reproducibility"]) for p in after.auto_path_) < OTHER_SPLITS_BELOW
    assert np.all(after.stability_ >= STABILITY_THRESHOLD), after.stability_
    n_copies = len(copies)
    assert 0 < n_copies <= _stability.NOISE_PERMUTATIONS  # one floor, not two
    monkeypatch.setattr(_auto_check, "_flagged", lambda s: bool(np.mean(s) < OTHER_SPLITS_BELOW))
    points.clear()
    before = _default_fit(X, op)
    assert len(points) == len(before.auto_path_) > len(after.auto_path_)
    assert (after.alpha_rel_, after.l1_ratio_) == (before.alpha_rel_, before.l1_ratio_)
    np.testing.assert_array_equal(after.components_, before.components_)
    np.testing.assert_array_equal(after.stability_, before.stability_)


def test_a_component_under_the_noise_floor_searches_the_other_splits(monkeypatch):
    """Seed 3102 of the same set-up: the full fit at the default split's choice
    has a one-pixel component that the halves 'reproduce' (0.98) but the noise
    floor flags: the sparse split is searched, as round 9 did; without the
    noise floor nothing would be flagged and it would not be."""
    from neurospca.decomposition import _auto

    X, _, mask = make_paper_simulation(
        80, random_state=3102, shape=(30, 30), snr=0.25, correlation=0.8
    )
    op = tv_from_mask(mask)
    m = _default_fit(X, op)
    splits = [(p["l1_ratio"], p["tv_ratio"]) for p in m.auto_path_]
    assert splits[0] == DEFAULT_SPLIT and len(set(splits)) == 2
    monkeypatch.setattr(_auto, "has_noise_floor", lambda X: False)
    m = _default_fit(X, op)
    assert {(p["l1_ratio"], p["tv_ratio"]) for p in m.auto_path_} == {DEFAULT_SPLIT}
