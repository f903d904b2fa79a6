"""Issue 20, item 1 (round 3): ``alpha_rel="auto"`` searches the split of the penalty.

``l1_ratio`` and ``tv_ratio`` default to "auto": with ``alpha_rel="auto"`` the
default split (0.05, 0.1) and the sparse split (0.3, 0.3) are each fitted on two
halves along their own path, and the point whose components reproduce best is
kept (the sparse split only when more reproducible by more than
``SPLIT_MARGIN``); a number fixes the split.
"""

import html
import re

import numpy as np
import pytest

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition import (
    AUTO_SPLITS,
    DEFAULT_SPLIT,
    SPLIT_MARGIN,
    choose_alpha_rel,
    choose_least_shrunk,
    choose_point,
    fixed_split,
    split_halves,
)
from neurospca.decomposition._auto import (
    STOP_REPRODUCIBILITY,
    _reproduces,
    _second_kept,
    _settled,
    split_search,
)
from neurospca.decomposition._stability import _half_models
from neurospca.model_selection import match_components
from neurospca.persistence import load_model, save_model

from ._helpers import path_record


def _simulation(seed, correlation, n_samples, snr=0.5):
    """The paper's three patterns on a 30 x 30 grid, scores correlated."""
    X, patterns, mask = make_paper_simulation(
        n_samples, random_state=seed, shape=(30, 30), snr=snr, correlation=correlation
    )
    return X, patterns, tv_from_mask(mask)


def _dice(patterns, model):
    order, _, _ = match_components(patterns, model)
    out = []
    for k, j in enumerate(order):
        a, b = patterns[k] != 0, model.components_[j] != 0
        out.append(2.0 * np.sum(a & b) / (a.sum() + b.sum()))
    return np.array(out)


def _by_split(path):
    groups = {}
    for p in path:
        groups.setdefault((p["l1_ratio"], p["tv_ratio"]), []).append(p)
    return groups


def test_choose_point_keeps_the_default_split_on_near_ties():
    d, s = DEFAULT_SPLIT, (0.3, 0.3)
    path = [
        path_record(d, 0.5, [0.9, 0.9]),
        path_record(d, 1, [0.92, 0.9]),
        path_record(s, 0.25, [0.9, 0.9]),
    ]
    assert choose_point(path) == 1  # the default split's best (0.91)
    # the sparse split wins only by more than SPLIT_MARGIN
    path[2]["reproducibility"] = np.full(2, 0.91 + 0.99 * SPLIT_MARGIN)
    assert choose_point(path) == 1
    path[2]["reproducibility"] = np.full(2, 0.91 + 1.01 * SPLIT_MARGIN)
    assert choose_point(path) == 2
    # an inadmissible point never wins, however reproducible
    path[2]["nonzero_fraction"] = np.array([0.6, 0.1])
    assert choose_point(path) == 1
    # no admissible point on the default split: an admissible sparse one wins
    path[2]["nonzero_fraction"] = np.array([0.1, 0.1])
    path[2]["reproducibility"] = np.full(2, 0.5)
    for p in path[:2]:
        p["nonzero_fraction"] = np.array([0.0, 0.1])
    assert choose_point(path) == 2
    # one split: the rule of choose_alpha_rel
    assert choose_point(path[:2]) == choose_alpha_rel(path[:2])
    # several other splits: the most reproducible admissible one competes
    three = [
        path_record(d, 1, [0.8, 0.8]),
        path_record(s, 0.5, [0.99, 0.99], nonzero=(0.7, 0.1)),  # inadmissible
        path_record((0.5, 0.3), 0.5, [0.9, 0.9]),
    ]
    assert choose_point(three) == 2


def test_least_shrunk_point_within_one_standard_error():
    """Issue 20 round 5: records measured on the development instances
    (fsaverage5 r = 0.8, paper 2-D r = 0.7). The most reproducible point
    (alpha_rel 4) is where the full fit lost a pattern; the rule takes the
    weakest point within one standard error (of the difference of the means)
    of it, never the cold first point while another is admissible, and the
    strongest only when the others are clearly worse."""
    d = DEFAULT_SPLIT
    three = (0.09, 0.09, 0.1, 0.1, 0.1, 0.06)
    # fsaverage5 r = 0.8 seed 2901: 0.5 too dense; 4 most reproducible (0.61)
    fs5 = [
        path_record(d, 0.5, [0.86, 0.72, 0.01], nonzero=(0.33, 0.37, 0.45, 0.44, 0.6, 0.54)),
        path_record(d, 1, [0.87, 0.85, 0.01], nonzero=three),
        path_record(d, 2, [0.53, 0.51, 0.01], nonzero=three),
        path_record(d, 4, [0.75, 0.99, 0.10], nonzero=three),
    ]
    assert choose_alpha_rel(fs5) == 3 and choose_least_shrunk(fs5) == 1
    assert choose_point(fs5) == 1
    # seed 3002: 1 (0.62 +- 0.31) is within the error of its difference from 4
    # (0.77 +- 0.14); the error of the best alone (0.63) would have taken 2
    fs5[1]["reproducibility"] = np.array([0.98, 0.88, 0.0])
    fs5[2]["reproducibility"] = np.array([0.59, 0.98, 0.38])
    fs5[3]["reproducibility"] = np.array([0.84, 0.98, 0.50])
    assert choose_least_shrunk(fs5) == 1
    # the errors bound the tolerance: consistent points far below the best are not near
    fs5[1]["reproducibility"] = np.array([0.3, 0.3, 0.3])
    fs5[2]["reproducibility"] = np.array([0.4, 0.4, 0.4])
    assert choose_least_shrunk(fs5) == 3
    # paper 2-D r = 0.7 seed 2901: 0.5, 1, 2 within 0.02; the cold first point is skipped
    paper = [
        path_record(d, 0.5, [0.96, 0.94, 0.0]),
        path_record(d, 1, [0.96, 0.98, 0.0]),
        path_record(d, 2, [0.97, 0.98, 0.0]),
    ]
    assert choose_least_shrunk(paper) == 1
    # seed 2902: every component reproducing at 2, and 1 far below it
    paper[1]["reproducibility"] = np.array([0.67, 0.97, 0.14])
    paper[2]["reproducibility"] = np.array([0.98, 0.97, 0.96])
    assert choose_least_shrunk(paper) == 2
    # the first point is taken when it is the only admissible one
    for p in paper[1:]:
        p["nonzero_fraction"] = np.array([0.0, 0.1])
    assert choose_least_shrunk(paper) == 0
    # the sparse split: not chosen for a difference within the default best's error
    # (seed 2903: 0.74 against 0.63 +- 0.26), chosen beyond it
    s = (0.3, 0.3)
    both = [
        path_record(d, 0.5, [0.42, 0.59, 0.07], nonzero=(0.6, 0.1)),
        path_record(d, 1, [0.70, 0.98, 0.01]),
        path_record(d, 4, [0.95, 0.95, 0.0]),
        path_record(s, 0.5, [0.59, 0.96, 0.49]),
        path_record(s, 1, [0.58, 0.67, 0.96]),
    ]
    assert choose_point(both) == 1
    both[2]["reproducibility"] = np.array([0.64, 0.64, 0.64])  # no error: 0.74 wins
    both[1]["reproducibility"] = np.array([0.5, 0.5, 0.5])
    assert choose_point(both) == 4


def test_fixed_split_and_searched_splits():
    assert fixed_split("auto", "auto") == DEFAULT_SPLIT
    assert fixed_split(0.3, "auto") == (0.3, DEFAULT_SPLIT[1])
    assert fixed_split("auto", 0.0) == (DEFAULT_SPLIT[0], 0.0)
    assert [split for split, _ in AUTO_SPLITS] == [DEFAULT_SPLIT, (0.3, 0.3)]
    with pytest.raises(ValueError, match="l1_ratio"):
        SPCATV(l1_ratio="sparse").fit(np.random.default_rng(0).standard_normal((10, 5)))
    with pytest.raises(ValueError, match="l1_ratio"):  # 0.95 + the default 0.1 >= 1
        SPCATV(2, l1_ratio=0.95).fit(np.random.default_rng(0).standard_normal((10, 5)))


def test_auto_picks_the_sparse_split_where_only_it_reproduces():
    """Scores correlated 0.9: the default split's halves reproduce at about 0.64
    at best, the sparse split's at 0.99; auto takes the sparse split, whose
    supports are the planted ones (Dice >= 0.85), while the default split fixed
    (``l1_ratio=0.05``: only its path is searched) leaves the weakest pattern's
    support lower (0.71 before issue 20 round 4's search in the joint fit, 0.83 with it)."""
    X, patterns, op = _simulation(3102, 0.9, 150)
    model = SPCATV(3, operator=op, random_state=0).fit(X)
    assert (model.l1_ratio_, model.tv_ratio_) == (0.3, 0.3)
    assert model.penalty_weights_["l1"] == pytest.approx(0.3 * model.alpha_)
    assert model.penalty_weights_["tv"] == pytest.approx(0.3 * model.alpha_)
    groups = _by_split(model.auto_path_)
    assert set(groups) == {DEFAULT_SPLIT, (0.3, 0.3)}
    best = {s: max(np.mean(p["reproducibility"]) for p in g) for s, g in groups.items()}
    assert best[(0.3, 0.3)] > best[DEFAULT_SPLIT] + SPLIT_MARGIN, best
    cos = match_components(patterns, model)[2]
    dice = _dice(patterns, model)
    assert np.all(cos >= 0.95) and np.all(dice >= 0.85), (cos, dice)

    fixed = SPCATV(3, operator=op, random_state=0, l1_ratio=0.05).fit(X)
    assert {(p["l1_ratio"], p["tv_ratio"]) for p in fixed.auto_path_} == {DEFAULT_SPLIT}
    assert (fixed.l1_ratio_, fixed.tv_ratio_) == DEFAULT_SPLIT
    assert _dice(patterns, fixed).min() < dice.min() - 0.03


def test_auto_keeps_the_default_split_where_it_reproduces_best():
    """Scores correlated 0.8 (seed 3100): the default split's halves reproduce
    at 0.99; no split can beat that by SPLIT_MARGIN, so the sparse split is not
    searched (checked here by searching it on the same halves: it reproduces
    worse) and the default split is kept."""
    X, patterns, op = _simulation(3100, 0.8, 120)
    model = SPCATV(3, operator=op, random_state=0).fit(X)
    assert (model.l1_ratio_, model.tv_ratio_) == DEFAULT_SPLIT
    assert {(p["l1_ratio"], p["tv_ratio"]) for p in model.auto_path_} == {DEFAULT_SPLIT}
    assert np.all(match_components(patterns, model)[2] >= 0.95)
    default_best = max(np.mean(p["reproducibility"]) for p in model.auto_path_)
    assert default_best >= 1 - SPLIT_MARGIN
    halves = split_halves(X, 0)
    est = SPCATV(3, operator=op)
    sparse = split_search(_half_models(est), halves, (0.3, 0.3), AUTO_SPLITS[1][1])
    assert max(np.mean(p["reproducibility"]) for p in sparse) < default_best


def test_each_split_path_is_walked_weakest_first_and_stops():
    """Every split's records are a prefix of its path; a path ends at its last
    point, after a point with an empty half component, after the first point
    less reproducible than an earlier admissible point at >= 0.9, once the
    split's choice has settled, or after a point past the first whose every
    pair reproduces at >= 0.9 (issue 20 round 7), or after a second point that
    is the split's choice (round 13)."""
    X, _, op = _simulation(3103, 0.8, 120)
    model = SPCATV(3, operator=op, random_state=0).fit(X)
    paths = dict(AUTO_SPLITS)
    for split, points in _by_split(model.auto_path_).items():
        alphas = [p["alpha_rel"] for p in points]
        assert alphas == list(paths[split][: len(alphas)])
        if len(alphas) == len(paths[split]):
            continue
        last, before = points[-1], points[:-1]
        score = [np.mean(p["reproducibility"]) for p in points]
        good = [
            score[i]
            for i, p in enumerate(before)
            if np.all(p["nonzero_fraction"] > 0) and np.all(p["nonzero_fraction"] <= 0.5)
        ]
        empty = np.any(last["nonzero_fraction"] == 0)
        past = bool(good) and max(good) >= STOP_REPRODUCIBILITY and score[-1] < max(good)
        stopped = _settled(points) or _reproduces(points) or _second_kept(points)
        assert empty or past or stopped, (split, alphas, score)
        for i in range(1, len(points) - 1):  # no earlier point would have stopped it
            assert not np.any(points[i - 1]["nonzero_fraction"] == 0)


def test_fitted_split_round_trips_and_old_models_still_load(tmp_path):
    X, _, op = _simulation(3100, 0.8, 120)
    model = SPCATV(3, operator=op, random_state=0).fit(X)
    save_model(model, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz").estimator
    assert back.get_params()["l1_ratio"] == "auto" and back.get_params()["tv_ratio"] == "auto"
    for name in ("l1_ratio_", "tv_ratio_", "alpha_rel_", "alpha_"):
        value = getattr(back, name)
        assert type(value) is float and value == getattr(model, name), name
    assert [(p["l1_ratio"], p["tv_ratio"], p["alpha_rel"]) for p in back.auto_path_] == [
        (p["l1_ratio"], p["tv_ratio"], p["alpha_rel"]) for p in model.auto_path_
    ]
    # a model saved before the split was fitted (no l1_ratio_): loads, and the
    # report reads the split from its parameters
    from neurospca.reporting import make_report

    old = SPCATV(2, operator=op, alpha_rel=1.0, l1_ratio=0.1, tv_ratio=0.2, tol=1e-2).fit(X)
    del old.l1_ratio_, old.tv_ratio_
    save_model(old, tmp_path / "old.npz")
    loaded = load_model(tmp_path / "old.npz").estimator
    assert not hasattr(loaded, "l1_ratio_")
    text = html.unescape(re.sub(r"<[^>]+>", " ", make_report(loaded)))
    assert "l1_ratio = 0.1, tv_ratio = 0.2" in text
    # a fitted model: the chosen split in the methods paragraph and the parameters table
    text = html.unescape(re.sub(r"<[^>]+>", " ", make_report(model)))
    assert f"l1_ratio = {model.l1_ratio_:.4g}, tv_ratio = {model.tv_ratio_:.4g}" in text
    assert "l1_ratio_ (fitted)" in text and "for each split of the penalty" not in text


def test_select_penalty_searches_the_splits_of_the_default_fit():
    """An estimator with l1_ratio = tv_ratio = "auto": select_penalty searches the
    splits the default fit searches (and the sparser ones), the table shows the
    split of every row; a fixed split is searched with the sparser ones only."""
    from neurospca.model_selection import select_penalty

    X, _, op = _simulation(3104, 0.5, 60)
    sel = select_penalty(
        SPCATV(2, operator=op, tol=1e-2), X, alpha_rel=(0.5, 1.0), n_splits=1, refit=False
    )
    splits = list(dict.fromkeys((r["l1_ratio"], r["tv_ratio"]) for r in sel.results_))
    assert splits == [DEFAULT_SPLIT, (0.2, 0.2), (0.3, 0.3), (0.5, 0.3)]
    assert all(isinstance(r["params"]["l1_ratio"], float) for r in sel.results_)
    rows = sel.table().splitlines()
    assert rows[0].split()[:3] == ["alpha_rel", "l1_ratio", "tv_ratio"]
    cells = [line.lstrip("*d ").split()[:3] for line in rows[1:]]  # chosen, default marks
    assert ["0.5", "0.3", "0.3"] in cells and ["1", "0.05", "0.1"] in cells, rows
    fixed = select_penalty(
        SPCATV(2, operator=op, tol=1e-2, l1_ratio=0.3, tv_ratio=0.3),
        X,
        alpha_rel=(1.0,),
        n_splits=1,
        refit=False,
    )
    assert [(r["l1_ratio"], r["tv_ratio"]) for r in fixed.results_] == [(0.3, 0.3), (0.5, 0.3)]
