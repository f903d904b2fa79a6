"""Issue 20 round 10: select_penalty's held-out evidence, the cold-row exception, and
``split_groups``."""

import numpy as np
import pytest

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import reconstruction_error
from neurospca.model_selection import select_penalty
from neurospca.model_selection._heldout import (
    explains_less,
    heldout_variance,
    independent_floor,
    pair_heldout,
)
from neurospca.model_selection._returned import choose_returned, least_shrunk_near, prefers


def test_heldout_variance_is_the_papers_heldout_reconstruction():
    rng = np.random.default_rng(0)
    train, test = rng.normal(size=(40, 30)), rng.normal(size=(35, 30))
    comps = rng.normal(size=(3, 30))
    comps[1, :20] = 0.0
    explained, floor = heldout_variance(comps, train, test)
    mean = train.mean(axis=0)
    total = np.sum((test - mean) ** 2)
    assert explained == pytest.approx(1 - reconstruction_error(test, comps, mean) ** 2 / total)
    assert 0 < floor < 1
    # an empty model explains nothing
    assert heldout_variance(np.zeros((2, 30)), train, test) == (0.0, 0.0)


def test_the_floor_is_the_mean_over_column_permutations():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(60, 1))
    B = scores @ rng.normal(size=(1, 25)) + rng.normal(size=(60, 25)) * np.linspace(0.5, 2, 25)
    B -= B.mean(axis=0)
    Q = np.linalg.qr(rng.normal(size=(25, 2)))[0].T
    total = float(np.sum(B**2))
    perm = []
    for _ in range(3000):
        P = np.column_stack([rng.permutation(B[:, j]) for j in range(B.shape[1])])
        perm.append(np.sum((P @ Q.T) ** 2) / np.sum(P**2))
    assert independent_floor(Q, B, total) == pytest.approx(np.mean(perm), rel=0.03)
    # the data's own co-variation is far above it along its direction
    top = np.linalg.svd(B, full_matrices=False)[2][:1]
    assert np.sum((B @ top.T) ** 2) / total > 3 * independent_floor(top, B, total)


def test_pair_heldout_averages_both_directions():
    rng = np.random.default_rng(2)
    halves = rng.normal(size=(20, 12)), rng.normal(size=(22, 12))
    pair = rng.normal(size=(2, 12)), rng.normal(size=(2, 12))
    ab = heldout_variance(pair[0], halves[0], halves[1])
    ba = heldout_variance(pair[1], halves[1], halves[0])
    np.testing.assert_allclose(pair_heldout(pair, halves), np.mean([ab, ba], axis=0))


def test_explains_less_by_more_than_the_floor():
    assert explains_less((5.5e-3, 0.3e-3), (6.4e-3, 0.33e-3))  # fresh 3225: 0.2 against 0.1
    assert not explains_less((6.2e-3, 0.3e-3), (6.4e-3, 0.33e-3))  # within the floor
    assert not explains_less(None, (6.4e-3, 0.33e-3))
    assert not explains_less((5.5e-3, 0.3e-3), None)


def _row(alpha_rel, split, returned, heldout=None):
    """A judged row of the search (the fields the rule reads)."""
    row = dict(zip(("alpha_rel", "l1_ratio", "tv_ratio"), (alpha_rel, *split), strict=True))
    row.update(returned_per_component=np.asarray(returned, float), returned_heldout=heldout)
    row.update(returned_admissible=True, returned_stability=float(np.mean(returned)))
    return row


def test_a_model_that_explains_less_heldout_variance_is_not_preferred():
    own = (0.05, 0.0)
    # round 9, fresh seed 3225 (ElasticNet PCA): l1 weight 0.1 and 0.2
    rows = [
        _row(2.0, own, [0.60, 0.45, 0.04], (6.42e-3, 0.34e-3)),
        _row(4.0, own, [0.80, 0.62, 0.03], (5.50e-3, 0.34e-3)),
    ]
    assert not prefers(rows, 1, 0)
    rows[1]["returned_heldout"] = (6.40e-3, 0.34e-3)
    assert prefers(rows, 1, 0)
    rows[1]["returned_heldout"] = None  # no evidence: the stability decides
    assert prefers(rows, 1, 0)


def test_only_the_paths_cold_first_row_is_excepted():
    own = (0.05, 0.0)
    rows = [
        _row(0.25, own, [0.10, 0.05, 0.00]),  # the path's first (cold) row, not judged
        _row(2.0, own, [0.76, 0.61, 0.04]),  # the first judged row
        _row(4.0, own, [0.80, 0.62, 0.00]),  # the most reproducible, does not beat it
    ]
    chosen, ref = least_shrunk_near(rows, [1, 2])
    assert (chosen, ref) == (1, 2)
    assert choose_returned(rows, {1: None, 2: None}) == 1
    # the path's first row itself stays excepted while another is near
    chosen, _ = least_shrunk_near(rows[1:], [0, 1])
    assert chosen == 1


@pytest.fixture(scope="module")
def paired_rows():
    """Every row twice (groups of two identical rows), 30 groups."""
    X, _, mask = make_paper_simulation(30, snr=0.5, random_state=4, shape=(12, 12))
    return np.repeat(X, 2, axis=0), np.repeat(np.arange(30), 2), tv_from_mask(mask)


def _fitted_rows(monkeypatch, X, groups, op, split_groups):
    """Run select_penalty and return the X of every fit it made."""
    seen, fit = [], SPCATV.fit

    def spy(self, data, *args, **kwargs):
        seen.append(np.asarray(data).copy())
        return fit(self, data, *args, **kwargs)

    monkeypatch.setattr(SPCATV, "fit", spy)
    est = SPCATV(3, operator=op, random_state=0, tv_ratio=0.0)
    sel = select_penalty(
        est, X, alpha_rel=(0.5, 1.0, 2.0), random_state=0, split_groups=split_groups
    )
    monkeypatch.undo()
    return seen, sel


def _odd(data):
    _, counts = np.unique(data, axis=0, return_counts=True)
    return bool(np.any(counts % 2))


def test_select_penalty_split_groups_keeps_every_group_in_one_half(monkeypatch, paired_rows):
    X, groups, op = paired_rows
    seen, sel = _fitted_rows(monkeypatch, X, groups, op, groups)
    halves = [d for d in seen if d.shape[0] < X.shape[0]]
    assert len(halves) >= 6  # the walk, the returned models' halves and subsamples
    assert not any(_odd(d) for d in seen)
    assert sel.best_estimator_.split_groups_ == "30 contiguous blocks of rows"
    # without the groups, random halves split the pairs (the check can fail)
    seen, sel = _fitted_rows(monkeypatch, X, groups, op, None)
    assert any(_odd(d) for d in seen if d.shape[0] < X.shape[0])
    assert sel.best_estimator_.split_groups_ == "random rows"


def test_select_penalty_split_groups_errors(paired_rows):
    X, groups, op = paired_rows
    est = SPCATV(3, operator=op, random_state=0, tv_ratio=0.0)
    with pytest.raises(ValueError, match="split_groups"):
        select_penalty(est, X, split_groups=groups[:-1])
    with pytest.raises(ValueError, match="split_groups"):
        select_penalty(est, X, rule="one_se", split_groups=groups)
    with pytest.raises(TypeError, match="split_groups"):
        select_penalty(est, X, split_groups=2.5)


def _time_series(n=24, seed=0):
    """A 4-D NIfTI run (time unit and a TR of 2 s in its header): two blobs."""
    import nibabel as nib

    rng = np.random.default_rng(seed)
    shape = (7, 8, 5)
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    blobs = [np.exp(-((grid - c) ** 2).sum(-1) / 2.0) for c in ([2, 2, 2], [5, 5, 2])]
    data = sum(3 * rng.standard_normal((n, 1, 1, 1)) * b for b in blobs)
    data = data + 0.2 * rng.standard_normal((n,) + shape)
    img = nib.Nifti1Image(np.moveaxis(data, 0, -1).astype(np.float32), np.eye(4))
    img.header.set_xyzt_units("mm", "sec")
    img.header.set_zooms((1.0, 1.0, 1.0, 2.0))
    return img, nib.Nifti1Image(np.ones(shape, np.uint8), np.eye(4))


def test_select_penalty_split_groups_auto_follows_imagespcatv_fit():
    pytest.importorskip("nilearn")
    from neurospca import ImageSPCATV

    img, mask = _time_series()
    est = ImageSPCATV(2, mask=mask, random_state=0)
    assert est.split_groups_for(img) == "blocks"
    kw = dict(alpha_rel=(0.5, 1.0), splits=[(0.05, 0.1)], random_state=0)
    sel = select_penalty(est, img, **kw)  # "auto": a run gets contiguous blocks
    assert sel.best_estimator_.estimator_.split_groups_ == "10 contiguous blocks of rows"
    sel = select_penalty(est, img, split_groups=None, **kw)
    assert sel.best_estimator_.estimator_.split_groups_ == "random rows"


class _Fit:
    def __init__(self, components):
        self.components_ = np.asarray(components, float)


def test_the_default_fit_reuses_the_evidence_of_its_identical_twin_only():
    from neurospca.model_selection._twin import twin_evidence as _twin_evidence

    rows = [_row(1.0, (0.05, 0.0), [0.6, 0.4, 0.1], (5.0e-3, 0.3e-3))]
    comps = np.arange(6.0).reshape(3, 2)
    twin = _twin_evidence(rows, {0: _Fit(comps)}, 0, _Fit(comps.copy()))
    np.testing.assert_array_equal(twin[0], rows[0]["returned_per_component"])
    assert twin[1] == rows[0]["returned_heldout"]
    # a different model, a copy of another point's model, an unscored row: refitted
    # (round 11: a difference in the last digits is the same model, test_select20j)
    assert _twin_evidence(rows, {0: _Fit(comps)}, 0, _Fit(comps[::-1].copy())) is None
    assert _twin_evidence(rows, {}, 0, _Fit(comps)) is None
    rows[0]["same_as"] = 3
    assert _twin_evidence(rows, {0: _Fit(comps)}, 0, _Fit(comps)) is None
    del rows[0]["same_as"]
    rows[0]["returned_admissible"] = False
    assert _twin_evidence(rows, {0: _Fit(comps)}, 0, _Fit(comps)) is None
