"""Messages name components as the report does: numbered from 1, with their
row of ``components_`` (lead, round 20). Before, fit warnings counted from 0
("components [1] of 3 are empty") while the report and the methods paragraph
counted from 1 ("Component 2")."""

import warnings

import numpy as np
import pytest

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca._utils.naming import component_names
from neurospca.decomposition import _auto


@pytest.mark.parametrize(
    ("ks", "n", "rows", "text"),
    [
        (0, None, True, "component 1 (components_[0])"),
        (np.int64(4), 5, True, "component 5 of 5 (components_[4])"),
        (np.array([1]), 3, True, "component 2 of 3 (components_[1])"),
        ([0, 2], 4, True, "components 1 and 3 of 4 (components_ rows [0, 2])"),
        ([0, 1, 2], None, True, "components 1, 2 and 3 (components_ rows [0, 1, 2])"),
        (2, None, False, "component 3"),
        ([3, 4], 6, False, "components 4 and 5 of 6"),
    ],
)
def test_component_names(ks, n, rows, text):
    assert component_names(ks, n, rows=rows) == text


class _Fitted:
    """The attributes ``warn_empty_components`` reads, of a fitted model whose
    second component is empty."""

    alpha_rel_, l1_ratio_, tv_ratio_ = 0.5, 0.5, 0.5
    loadings_ = np.array([[1.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    components_ = loadings_.T
    explained_variance_ = np.array([3.0, 0.0, 1.0])


def test_the_empty_component_is_named_as_the_report_numbers_it(monkeypatch):
    """Row 1 of ``components_`` is the report's "Component 2"."""
    monkeypatch.setattr(_auto, "_dense_text", lambda estimator: "")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _auto.warn_empty_components(_Fitted())
    said = [str(w.message) for w in caught]
    assert len(said) == 1
    assert "component 2 of 3 (components_[1]) is empty." in said[0]


def test_a_zero_component_is_numbered_from_one():
    """Deflation at a penalty that empties the components: the first one is
    "component 1", the report's number (the engine's index is 0)."""
    X, _, mask = make_paper_simulation(40, random_state=3798)
    model = SPCATV(2, operator=tv_from_mask(mask), alpha=1e6, method="deflation")
    with pytest.warns(UserWarning, match=r"^component 1 is identically zero"):
        model.fit(X)
    assert not np.any(model.components_)
