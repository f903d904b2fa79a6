"""Issue 20, round 14: a default fit that does not return nothing.

A three-site cortical-thickness cohort given without its sites (seed 3460):
every penalty's first component is the site offset, over the whole cortex.
Before round 14 the only admissible point was alpha_rel 8, whose halves held
specks reproducing at 0.001-0.006, and all three components were empty. Now
specks below ``REPRODUCE_FLOOR`` are not admissible, and a *whole-map*
component is allowed where no point of the split is admissible without one:
the site offset is kept (and named in a warning) beside sparse atrophy
components.
"""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV
from neurospca._utils.naming import component_names
from neurospca.decomposition._auto import (
    REPRODUCE_FLOOR,
    WHOLE_MAP,
    _admissible,
    choose_least_shrunk,
    mark_whole_map,
    whole_map_count,
)
from neurospca.study import make_multisite_cohort
from neurospca.surface import tv_from_hemispheres


def _record(alpha_rel, corr, nonzero):
    return {
        "alpha_rel": alpha_rel,
        "l1_ratio": 0.05,
        "tv_ratio": 0.1,
        "reproducibility": np.array(corr, float),
        "nonzero_fraction": np.array(nonzero, float),
    }


def test_specks_below_the_floor_are_not_admissible():
    specks = _record(8.0, [0.001, 0.001, 0.006], [0.009, 0.002, 0.009, 0.025, 0.008, 0.013])
    assert not _admissible(specks)
    above = _record(8.0, [REPRODUCE_FLOOR] * 3, specks["nonzero_fraction"])
    assert _admissible(above)


def _site_split():
    """The site cohort's default split (seed 3460): a whole-map first component."""
    return [
        _record(0.5, [0.05, 0.70, 0.21], [1.0, 0.45, 0.76, 1.0, 0.55, 0.77]),
        _record(1.0, [0.35, 0.81, 0.04], [1.0, 0.08, 0.27, 0.99, 0.21, 0.14]),
        _record(2.0, [0.14, 0.88, 0.09], [1.0, 0.04, 0.03, 1.0, 0.02, 0.04]),
        _record(4.0, [0.50, 0.96, 0.01], [1.0, 0.01, 0.02, 1.0, 0.01, 0.01]),
        _record(8.0, [0.001, 0.001, 0.006], [0.009, 0.002, 0.009, 0.025, 0.008, 0.013]),
    ]


def test_whole_map_points_only_where_no_point_is_regional():
    site = _site_split()
    assert [whole_map_count(p) for p in site] == [0, 1, 1, 1, 0]  # 0.5: 76 % is neither
    assert not any(_admissible(p) for p in site)
    mark_whole_map(site)
    assert [_admissible(p) for p in site] == [False, True, True, True, False]
    assert site[choose_least_shrunk(site)]["alpha_rel"] == 1.0
    # with one regional admissible point, no whole-map point is admissible
    regional = _record(4.0, [0.97, 0.97, 0.99], [0.02, 0.02, 0.02, 0.01, 0.02, 0.01])
    path = mark_whole_map(_site_split()[:3] + [regional])
    assert [_admissible(p) for p in path] == [False, False, False, True]


def test_whole_map_needs_both_halves_a_regional_component_and_reproduction():
    assert whole_map_count(_record(1, [0.4, 0.8], [0.95, 0.1, 0.3, 0.1])) == 0  # B not whole
    assert whole_map_count(_record(1, [0.4, 0.8], [0.95, 0.96, 0.97, 0.99])) == 0  # no region
    assert whole_map_count(_record(1, [0.05, 0.8], [0.95, 0.1, 0.97, 0.1])) == 0  # A's 0.05
    assert whole_map_count(_record(1, [0.4, 0.8], [0.95, 0.1, 0.97, 0.1])) == 1
    assert WHOLE_MAP > 0.5


@pytest.fixture(scope="module")
def cohort():
    b = make_multisite_cohort(None, 133, random_state=3460)
    n_left = b.n_vertices[0]
    op, _ = tv_from_hemispheres(b.mesh_left, b.mesh_right, b.cortex[:n_left], b.cortex[n_left:])
    X = b.X[:, b.cortex]
    return X - X.mean(axis=0), op, b.patterns[:, b.cortex]


def test_site_offset_is_kept_whole_map_beside_sparse_atrophy(cohort):
    X, op, P = cohort
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SPCATV(3, operator=op, random_state=0).fit(X)
    said = [str(w.message) for w in caught if "whole-map" in str(w.message)]
    density = np.mean(model.components_ != 0, axis=1)
    assert np.all(density > 0)  # main: alpha_rel 8, all three empty
    whole = np.flatnonzero(density >= WHOLE_MAP)
    assert whole.size == 1 and np.all(np.delete(density, whole) <= 0.1)
    assert len(said) == 1 and f"{component_names(whole, 3)} is whole-map" in said[0]
    assert not any(" empty." in str(w.message) for w in caught)
    C = model.components_ / np.linalg.norm(model.components_, axis=1, keepdims=True)
    cos = np.abs(P / np.linalg.norm(P, axis=1, keepdims=True) @ C.T)
    assert cos.max() >= 0.95  # a planted atrophy pattern recovered by a sparse component


def test_methods_text_says_when_whole_map_points_were_allowed():
    from neurospca.reporting._methods import _auto_text

    pen = {"auto_path": _site_split(), "l1_ratio": 0.05, "tv_ratio": 0.1}
    assert "whole map" not in _auto_text(pen)
    mark_whole_map(pen["auto_path"])
    assert "at least 90 % non-zero in both halves" in _auto_text(pen)


def test_a_regional_point_with_specks_does_not_shut_out_whole_map_points():
    # the site cohort sorted by site (seed 3470): alpha_rel 8 was regional and
    # admissible (mean 0.25) with two of its three components specks
    site = _site_split()
    site[4] = _record(8.0, [0.007, 0.741, 0.003], [0.07, 0.06, 0.01, 0.09, 0.06, 0.02])
    assert _admissible(site[4])
    mark_whole_map(site)
    assert [_admissible(p) for p in site] == [False, True, True, True, True]
    assert site[choose_least_shrunk(site)]["alpha_rel"] == 1.0
    # marks are recomputed over the records given (another split's regional point)
    regional = _record(0.5, [0.95, 0.96, 0.97], [0.02, 0.02, 0.01, 0.02, 0.02, 0.01])
    regional.update(l1_ratio=0.3, tv_ratio=0.3)
    path = mark_whole_map(site + [regional])
    assert [_admissible(p) for p in path] == [False, False, False, False, True, True]
