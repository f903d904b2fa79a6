"""Issue 20, round 13: the default fit says when its chosen penalty leaves
components empty.

A three-site cortical-thickness cohort (``make_multisite_cohort``, seed 3460)
given without its sites: the first component of every penalty is the site
offset, spread over the whole cortex; the one admissible point of the default
split was alpha_rel 8 (specks in the halves), where all three components are empty, with no
warning before round 13. The same cohort with each site's mean removed has no
such component and no warning.
"""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV
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
    return model, [str(w.message) for w in caught if "are empty" in str(w.message)]


def test_empty_components_at_the_chosen_penalty_warn(cohort):
    X, _, op = cohort
    model, said = _fit(X, op)
    empty = np.flatnonzero(~np.any(model.components_ != 0, axis=1))
    assert empty.size > 0  # the case this test is about
    assert len(said) == 1
    assert f"components {empty.tolist()} of 3 are empty" in said[0]
    assert f"alpha_rel={model.alpha_rel_:.3g}" in said[0]


def test_no_warning_when_every_component_is_kept(cohort):
    X, site, op = cohort
    by_site = np.array([X[site == s].mean(axis=0) for s in np.unique(site)])
    X = X - by_site[np.searchsorted(np.unique(site), site)]
    model, said = _fit(X, op)
    assert np.all(np.any(model.components_ != 0, axis=1))
    assert said == []
