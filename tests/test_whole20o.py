"""Issue 20, round 15: whole-map components, the choice and their ``stability_``.

1. A whole-map point (a site offset or an age effect over the whole cortex)
   gives way to the most reproducible regional admissible point when the full
   fit there keeps every component regional and reproducing on the halves
   (``_auto_check._regional``): on a harmonised cohort with the age effect
   left in (seed 3478) the age effect was taken whole-map over a regional
   point whose full fit held every planted pattern.
2. ``stability_`` compares two whole-map half components by their uncentred
   cosine: centring a map over the vertices removes the offset they share.
"""

import warnings

import numpy as np
import pytest

from neurospca.decomposition._auto_check import _regional
from neurospca.decomposition._stability import WHOLE_MAP, component_stability, matched_abs_corr


def _offset_maps(rng, n=3000, k=3):
    """A uniform offset (whole-map) and two sparse bumps."""
    C = np.zeros((k, n))
    C[0] = 1.0
    C[1, 100:200] = 1.0
    C[2, 1000:1150] = np.linspace(0.5, 1.0, 150)
    return C


def _noisy(C, rng, scale):
    D = C + scale * rng.standard_normal(C.shape) * (C != 0)
    return D[::-1].copy()  # another order: the matching must pair them


def test_shared_offset_reproduces_by_cosine_not_by_centred_corr():
    rng = np.random.default_rng(3311)
    C = _offset_maps(rng)
    A, B = _noisy(C, rng, 0.05), _noisy(C, rng, 0.05)
    _, corr = matched_abs_corr(A, B)  # centred: the offset is gone, noise is left
    _, whole = matched_abs_corr(A, B, whole_map=True)
    stab = component_stability(C, A, B)
    assert np.mean(A[2] != 0) >= WHOLE_MAP  # A[2] is the offset (reversed order)
    assert corr[2] < 0.2 and whole[2] > 0.99
    assert stab[0] > 0.99
    # sparse components: the same value either way (their mean is near 0)
    np.testing.assert_allclose(whole[:2], corr[:2], atol=0.02)
    np.testing.assert_allclose(stab[1:], corr[:2][::-1], atol=0.02)


def test_unrelated_whole_maps_do_not_reproduce():
    rng = np.random.default_rng(3312)
    C = _offset_maps(rng)
    A, B = C.copy(), C.copy()
    A[0] = rng.standard_normal(C.shape[1])  # dense noise maps, no shared offset
    B[0] = rng.standard_normal(C.shape[1])
    C[0] = A[0]
    assert component_stability(C, A, B)[0] < 0.1
    # a whole-map component against a regional one: the centred correlation
    B[0] = 0.0
    B[0, 2000:2100] = 1.0
    _, whole = matched_abs_corr(A, B, whole_map=True)
    _, corr = matched_abs_corr(A, B)
    assert whole[0] == pytest.approx(corr[0])


class _Check:
    """A stand-in for ``_auto.Others``: ``reproduce`` gives fixed values."""

    def __init__(self, stability):
        self.stability = np.asarray(stability, float)

    def reproduce(self, point, V):
        return self.stability.copy(), None


def _record(split, alpha_rel, corr, nonzero, whole=False):
    rec = {
        "alpha_rel": alpha_rel,
        "l1_ratio": split[0],
        "tv_ratio": split[1],
        "reproducibility": np.array(corr, float),
        "nonzero_fraction": np.array(nonzero, float),
        "components": (None, None),
    }
    if whole:
        rec["whole_map"] = True
    return rec


def _path():
    """Harmonised cohort seed 3478 (rows as simulated): its halves' records."""
    d, s = (0.05, 0.1), (0.3, 0.3)
    return [
        _record(d, 1.0, [0.47, 0.97, 0.99], [0.97, 0.27, 0.14, 0.97, 0.11, 0.24], whole=True),
        _record(d, 2.0, [0.48, 0.02, 0.99], [0.66, 0.90, 0.01, 0.53, 0.05, 0.03]),
        _record(s, 0.5, [0.012, 0.72, 0.006], [0.03, 0.03, 0.01, 0.03, 0.03, 0.02]),
    ]


def _fits(regional_density):
    n = 10000
    whole = np.zeros((n, 3))
    whole[:, 0], whole[:20, 1], whole[50:60, 2] = 1.0, 1.0, 1.0
    regional = np.zeros((n, 3))
    for k, d in enumerate(regional_density):
        regional[100 * k : 100 * k + int(d * n), k] = 1.0
    return {1.0: (None, whole), 0.5: (None, regional)}


def _run(fits, calls):
    def run(point, u0):
        calls.append(point["alpha_rel"])
        return fits[point["alpha_rel"]]

    return run


def test_whole_map_point_gives_way_to_a_regional_full_fit_that_reproduces():
    path, calls = _path(), []
    fits = _fits([0.022, 0.016, 0.012])  # seed 3478: every pattern at 0.95-0.97
    i, result = _regional(path, 0, fits[1.0], _run(fits, calls), lambda h: None, _Check([0.9] * 3))
    assert (i, calls) == (2, [0.5]) and result is fits[0.5]


@pytest.mark.parametrize(
    "density, stability",
    [
        ([0.003, 0.001, 0.0], [0.9, 0.9, 0.0]),  # specks, one empty (raw cohort seed 3470)
        ([0.02, 0.02, 0.0005], [0.9, 0.9, 0.9]),  # one component collapsed
        ([0.02, 0.6, 0.02], [0.9, 0.9, 0.9]),  # one too dense
        ([0.02, 0.02, 0.02], [0.9, 0.3, 0.9]),  # one flagged on the halves
    ],
)
def test_whole_map_point_is_kept_when_the_regional_full_fit_fails(density, stability):
    path, calls = _path(), []
    fits = _fits(density)
    i, result = _regional(path, 0, fits[1.0], _run(fits, calls), lambda h: None, _Check(stability))
    assert (i, calls) == (0, [0.5]) and result is fits[1.0]


def test_the_regional_point_fitted_is_the_least_shrunk_near_the_best():
    # harmonised seed 3521 (rows as simulated): the sparse split's 1 is the
    # most reproducible regional point, its full fit collapses; 0.5 (the
    # split's first regional point) is within one standard error and holds
    d, s = (0.05, 0.1), (0.3, 0.3)
    path = [
        _record(d, 1.0, [0.53, 0.75, 0.025], [0.94, 0.10, 0.19, 0.96, 0.16, 0.21], whole=True),
        _record(d, 4.0, [0.95, 0.009, 0.001], [0.014, 0.013, 0.007, 0.02, 0.024, 0.005]),
        _record(s, 0.25, [0.45, 0.76, 0.013], [0.77, 0.06, 0.06, 0.81, 0.07, 0.09]),
        _record(s, 0.5, [0.82, 0.977, 0.014], [0.031, 0.012, 0.041, 0.032, 0.033, 0.015]),
        _record(s, 1.0, [0.94, 0.96, 0.004], [0.009, 0.006, 0.002, 0.015, 0.008, 0.008]),
    ]
    calls, fits = [], _fits([0.035, 0.013, 0.014])
    run = _run(fits, calls)
    i, result = _regional(path, 0, fits[1.0], run, lambda h: None, _Check([0.9] * 3))
    assert calls == [0.5] and i == 3


def test_a_regional_choice_is_not_checked():
    path, calls = _path(), []
    path[0].pop("whole_map")
    fits = _fits([0.02] * 3)
    assert _regional(path, 0, fits[1.0], _run(fits, calls), None, _Check([0.9] * 3))[0] == 0
    assert calls == []


def test_harmonised_cohort_with_age_left_in_keeps_its_regional_patterns():
    # seed 3478, site means removed, age and sex left in, rows as simulated:
    # round 14 took the age effect whole-map (0.64 / 0.75 / 0.99), main before
    # it the sparse split's regional point (0.95 / 0.96 / 0.97)
    from neurospca import SPCATV
    from neurospca.study import make_multisite_cohort
    from neurospca.surface import tv_from_hemispheres

    b = make_multisite_cohort(None, 133, random_state=3478)
    n_left = b.n_vertices[0]
    op, _ = tv_from_hemispheres(b.mesh_left, b.mesh_right, b.cortex[:n_left], b.cortex[n_left:])
    X, site = b.X[:, b.cortex], b.participants["site"].to_numpy()
    for s in np.unique(site):
        X[site == s] -= X[site == s].mean(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SPCATV(3, operator=op, random_state=0).fit(X - X.mean(axis=0))
    C = model.components_
    assert np.all(np.mean(C != 0, axis=1) <= 0.1)  # no whole-map component
    P = b.patterns[:, b.cortex]
    cos = np.abs(P @ C.T) / np.outer(np.linalg.norm(P, axis=1), np.linalg.norm(C, axis=1))
    assert np.all(cos.max(axis=1) >= 0.9)
