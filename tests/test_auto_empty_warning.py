"""Issue 20, round 13: the default fit says when its chosen penalty leaves
components empty.

A three-site cortical-thickness cohort (``make_multisite_cohort``, seed 3460)
given without its sites: the first component of every penalty is the site
offset, spread over the whole cortex; the one admissible point of the default
split was alpha_rel 8 (specks in the halves), where all three components were empty, with no
warning before round 13 (since round 14 the site offset is kept as a whole-map
component: tests/test_site20n.py). The same cohort with each site's mean
removed has no such component and no warning.
"""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from neurospca import SPCATV
from neurospca.decomposition._auto import warn_empty_components
from neurospca.study import make_multisite_cohort
from neurospca.surface import tv_from_hemispheres


@pytest.fixture(scope="module")
def cohort():
    b = make_multisite_cohort(None, 133, random_state=3460)
    n_left = b.n_vertices[0]
    op, _ = tv_from_hemispheres(b.mesh_left, b.mesh_right, b.cortex[:n_left], b.cortex[n_left:])
    site = b.participants["site"].to_numpy()
    return b.X[:, b.cortex], site, op


def _fit(X, op):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SPCATV(3, operator=op, random_state=0).fit(X)
    said = [str(w.message) for w in caught]
    return model, [m for m in said if "empty." in m or "whole-map" in m]


def test_empty_components_at_the_chosen_penalty_warn():
    # since round 14 the cohort keeps its components (tests/test_site20n.py):
    # the warning itself, on a fitted model with an empty component
    loadings = np.zeros((50, 3))
    loadings[:5, 0], loadings[10:14, 2] = 1.0, 1.0
    model = SimpleNamespace(loadings_=loadings, alpha_rel_=8.0, l1_ratio_=0.05, tv_ratio_=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_empty_components(model)
    said = [str(w.message) for w in caught]
    assert len(said) == 1
    assert "component 2 of 3 (components_[1]) is empty" in said[0]
    assert "alpha_rel=8" in said[0]
    loadings[:, 1] = 1.0  # whole-map, not empty
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_empty_components(model)
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and "component 2 of 3 (components_[1]) is whole-map" in said[0]


def test_no_warning_when_every_component_is_kept(cohort):
    X, site, op = cohort
    by_site = np.array([X[site == s].mean(axis=0) for s in np.unique(site)])
    X = X - by_site[np.searchsorted(np.unique(site), site)]
    model, said = _fit(X, op)
    assert np.all(np.any(model.components_ != 0, axis=1))
    assert said == []
