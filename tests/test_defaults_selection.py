"""Issue 12 parts 1-2: default penalties on real maps, selection that selects,
and the scikit-learn contract (score, signs, n_iter_, feature names, verbose)."""

import importlib.util
import logging
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from neurospca import SPCATV, make_paper_simulation, spca_tv, tv_from_mask
from neurospca._utils.naming import component_names
from neurospca.decomposition import choose_point
from neurospca.model_selection import (
    dice_index,
    dice_to_truth,
    match_components,
    mse_to_truth,
    one_se_refit,
    reconstruction_error,
    select_penalty,
)

from ._instances import brainspace_rsfmri, support_regions, thickness_maps


def _check_sparse_regions(model, op, max_regions=40):
    C = model.components_
    nz = np.mean(C != 0, axis=1)
    assert np.all(nz > 0), nz  # non-empty
    assert np.all(nz <= 0.5), nz  # a minority
    # a few smooth regions: the support's regions of >= 10 features are few
    big = [support_regions(c, op, min_size=10) for c in C]
    assert all(1 <= b <= max_regions for b in big), big


def test_default_is_sparse_on_real_fsaverage5_thickness():
    """nilearn's real fsaverage5 thickness, perturbed per subject (seeded)."""
    X, op, _ = thickness_maps(n_samples=40, seed=5)
    model = SPCATV(3, operator=op, random_state=0).fit(X)
    _check_sparse_regions(model, op)
    assert model.alpha_ == pytest.approx(model.alpha_rel_ * model.l1_max_)
    # the chosen point is its split's most reproducible admissible one (the split
    # of the penalty is searched too since issue 20 round 3: choose_point)
    path = model.auto_path_
    chosen = [(p["alpha_rel"], p["l1_ratio"], p["tv_ratio"]) for p in path].index(
        (model.alpha_rel_, model.l1_ratio_, model.tv_ratio_)
    )
    same = [p for p in path if (p["l1_ratio"], p["tv_ratio"]) == (model.l1_ratio_, model.tv_ratio_)]
    best = max(
        np.mean(p["reproducibility"])
        for p in same
        if np.all(p["nonzero_fraction"] > 0) and np.all(p["nonzero_fraction"] <= 0.5)
    )
    assert np.mean(path[chosen]["reproducibility"]) == best
    assert chosen == choose_point(path)
    assert model.stability_.shape == (3,) and np.all(
        (0 <= model.stability_) & (model.stability_ <= 1)
    )


def test_default_is_sparse_on_real_brainspace_rsfmri():
    """brainspace's real resting-state run on fsaverage5 (every 8th volume)."""
    if importlib.util.find_spec("brainspace") is None:  # its data only (no vtk import)
        pytest.skip("brainspace not installed (pip install 'neurospca[test]')")
    X, op, _ = brainspace_rsfmri(step=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SPCATV(3, operator=op, random_state=0).fit(X)
    _check_sparse_regions(model, op)
    # no empty component, no chain warning, no unsettled fit; the split-half
    # stability is reported, and the components that do not reproduce are named
    low = np.flatnonzero(model.stability_ < 0.5)
    assert [str(w.message) for w in caught] == (
        []
        if not low.size
        else [
            f"{component_names(low)} {'does' if low.size == 1 else 'do'} not reproduce across "
            f"split halves (stability_ {np.round(model.stability_[low], 2).tolist()} < 0.5): "
            f"do not interpret {'it' if low.size == 1 else 'them'} without replication."
        ]
    )
    assert model.stability_.max() >= 0.5, model.stability_


@pytest.mark.parametrize("seed", [2001, 2002])
def test_default_recovers_paper_patterns(seed):
    """Table I set-up (100x100, SNR 0.1, 250 images), seeds used nowhere else."""
    X, patterns, mask = make_paper_simulation(250, random_state=seed)
    model = SPCATV(3, operator=tv_from_mask(mask), random_state=0).fit(X)
    order, _, cos = match_components(patterns, model)
    assert np.all(cos >= 0.93), cos
    # the two stronger patterns' supports (the weakest's is measured in RESULTS.md)
    for k in (0, 1):
        assert dice_index(patterns[k], model.components_[order[k]]) >= 0.8
    assert np.all(model.stability_ >= 0.9), model.stability_


def test_default_is_scale_invariant():
    X, _, mask = make_paper_simulation(120, random_state=2003, shape=(30, 30), snr=0.5)
    op = tv_from_mask(mask)
    ref = SPCATV(3, operator=op).fit(X)
    for s in (1e3, 1e-3):
        m = SPCATV(3, operator=op).fit(X * s)
        assert m.alpha_rel_ == ref.alpha_rel_
        assert m.l1_max_ == pytest.approx(ref.l1_max_ * s)
        # the same solutions up to the solver's certified accuracy (the finishing of
        # the certified support stops at a relative radius, not at a fixed iterate)
        cos = np.abs(np.sum(m.components_ * ref.components_, axis=1))
        assert np.all(cos > 1 - 1e-5), cos


def test_selection_beats_weakest_penalty_on_paper_simulation():
    """The split-half rule (issue 20) on the paper's simulation (Table I patterns
    and SNR on a 50x50 grid, to stay fast): the chosen point is reproducible,
    beats the grid's weakest penalty, and its refit is no worse than the
    estimator's own default fit (MSE and Dice to the truth)."""
    X, patterns, mask = make_paper_simulation(250, random_state=2004, shape=(50, 50))
    op = tv_from_mask(mask)
    est = SPCATV(3, operator=op, random_state=0)
    sel = select_penalty(
        est, X, alpha_rel=(0.25, 0.5, 1.0, 2.0, 8.0), truth=patterns, random_state=0
    )
    res = sel.results_
    weakest, chosen = res[0], res[sel.best_index_]
    assert sel.rule == "reproducibility" and chosen["admissible"] and chosen["n_empty"] == 0
    assert sel.best_params_ == {
        "alpha": None,
        "alpha_rel": chosen["alpha_rel"],
        "l1_ratio": chosen["l1_ratio"],
        "tv_ratio": chosen["tv_ratio"],
    }
    assert not weakest["admissible"]  # dense: never chosen, however reproducible
    assert chosen["mse"] < weakest["mse"] and chosen["dice_truth"] > weakest["dice_truth"]
    # the refit at the chosen point against the default fit (never worse)
    best, default = sel.best_estimator_, clone(est).fit(X)
    assert mse_to_truth(best, patterns) <= mse_to_truth(default, patterns) + 0.02
    assert dice_to_truth(best, patterns) >= dice_to_truth(default, patterns) - 0.02
    # per-component split-half reproducibility of the refit, as the default reports it
    assert sel.component_stability_.shape == (3,)
    np.testing.assert_array_equal(best.stability_, sel.component_stability_)
    assert np.sum(sel.component_stability_ > 0.75) >= 2, sel.component_stability_
    assert res[4]["n_empty"] > 0 and not res[4]["admissible"]  # alpha_rel 8: too strong
    assert "*" in sel.table()


def test_selection_scores_are_the_estimator_score_on_held_out_folds():
    X, _, mask = make_paper_simulation(60, random_state=2005, shape=(12, 12))
    op = tv_from_mask(mask)
    cv = KFold(3, shuffle=True, random_state=1)
    sel = select_penalty(
        SPCATV(2, operator=op), X, alpha_rel=[1.0], cv=cv, refit=False, rule="weakest_stable"
    )
    # select_penalty fits each fold as a continuation along its path
    # (warm_start=True), which runs the joint sweeps without the search over
    # starts of a fit from scratch; the same estimator settings score the same
    direct = cross_val_score(SPCATV(2, operator=op, alpha_rel=1.0, warm_start=True), X, cv=cv)
    np.testing.assert_allclose(sel.results_[0]["fold_scores"], direct, rtol=1e-10)
    assert sel.best_estimator_ is None


def test_score_is_explained_variance_of_the_projection():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 25)) @ np.diag(np.linspace(3, 0.5, 25))
    m = SPCATV(3, alpha=0.05).fit(X[:30])
    Xt = X[30:]
    expected = 1 - reconstruction_error(Xt, m) ** 2 / np.sum((Xt - m.mean_) ** 2)
    assert m.score(Xt) == pytest.approx(expected)
    # nearly unpenalised SPCA-TV scores like PCA's projection
    pca = PCA(3).fit(X[:30])
    near = SPCATV(3, alpha=1e-8, l1_ratio=0.0, tv_ratio=0.0, tol=1e-10).fit(X[:30])
    Rt = Xt - pca.mean_
    pca_score = 1 - np.sum(
        (Rt - pca.inverse_transform(pca.transform(Xt)) + pca.mean_) ** 2
    ) / np.sum(Rt**2)
    assert near.score(Xt) == pytest.approx(pca_score, rel=1e-6)
    np.testing.assert_allclose(
        near.pca_explained_variance_ratio_, pca.explained_variance_ratio_, rtol=1e-6
    )


def test_gridsearchcv_over_pipeline_default_scoring_is_finite():
    X, _, mask = make_paper_simulation(60, random_state=2006, shape=(10, 10))
    pipe = Pipeline(
        [("scale", StandardScaler()), ("spcatv", SPCATV(2, operator=tv_from_mask(mask)))]
    )
    gs = GridSearchCV(pipe, {"spcatv__alpha_rel": [0.5, 1.0, 2.0]}, cv=3).fit(X)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    assert np.all(np.isfinite(cross_val_score(pipe, X, cv=3)))
    from functools import partial

    gs1 = GridSearchCV(
        pipe,
        {"spcatv__alpha_rel": [0.5, 1.0, 2.0]},
        cv=3,
        refit=partial(one_se_refit, param="param_spcatv__alpha_rel"),
    ).fit(X)
    assert gs1.best_index_ == one_se_refit(gs1.cv_results_, "param_spcatv__alpha_rel")


def test_one_se_refit_picks_strongest_within_one_standard_error():
    base = np.array([0.50, 0.52, 0.48, 0.51, 0.49])
    noise = np.array([0.01, -0.01, 0.0, 0.02, -0.02])
    splits = np.stack([base, base - 0.01 + noise, base - 0.02 + 0.1 * noise, base - 0.2])
    res = {
        "param_alpha_rel": np.array([0.5, 1.0, 2.0, 4.0]),
        "mean_test_score": splits.mean(axis=1),
        "std_test_score": splits.std(axis=1),
    }
    res.update({f"split{f}_test_score": splits[:, f] for f in range(5)})
    # paired SE of setting 1 vs 0: std(noise - 0.01, ddof=1) / sqrt(5) = 0.0071 < 0.01
    # -> not within; setting 2: mean difference 0.02 > its paired SE 0.0007
    assert one_se_refit(res) == 0
    splits[1] = base - 0.005 + noise  # now within one paired SE
    res["mean_test_score"] = splits.mean(axis=1)
    res.update({f"split{f}_test_score": splits[:, f] for f in range(5)})
    assert one_se_refit(res) == 1
    with pytest.raises(ValueError, match="param_spcatv__alpha_rel"):
        one_se_refit(res, "param_spcatv__alpha_rel")


def test_signs_are_deterministic():
    X, _, mask = make_paper_simulation(80, random_state=2007, shape=(12, 12))
    op = tv_from_mask(mask)
    a = SPCATV(3, operator=op, alpha_rel=0.5, method="deflation").fit(X)
    b = SPCATV(3, operator=op, alpha_rel=0.5, method="deflation").fit(-X)  # same up to sign
    for C in (a.components_, b.components_):
        peak = C[np.arange(3), np.argmax(np.abs(C), axis=1)]
        assert np.all(peak > 0)
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-6)
    # scores flipped with the loadings: u_k points along X_c v_k (the returned
    # v_k is certified for u_k, so they agree to the outer tolerance, not exactly)
    Xc = X - a.mean_
    for k in range(3):
        z = Xc @ a.loadings_[:, k]
        assert a.scores_[:, k] @ z / np.linalg.norm(z) > 0.99
    assert np.all(np.sign(a.loadings_) == np.sign(a.components_.T))


def test_chain_warning_when_operator_is_missing():
    X = np.random.default_rng(0).standard_normal((10, 600))
    with pytest.warns(UserWarning, match="1-D chain.*tv_from_mask"):
        SPCATV(1, alpha=0.5).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        SPCATV(1, alpha=0.5).fit(X[:, :400])  # few features: no warning


def test_n_iter_is_int_and_set_output_pandas():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(1).standard_normal((20, 30))
    m = SPCATV(2, alpha=0.1).set_output(transform="pandas")
    out = m.fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["spcatv0", "spcatv1"]
    assert isinstance(m.n_iter_, int) and m.n_iter_ == max(m.n_iter_per_component_)
    assert list(m.get_feature_names_out()) == ["spcatv0", "spcatv1"]


def test_rel_gaps_are_what_tol_is_compared_with():
    X, _, mask = make_paper_simulation(60, random_state=2008, shape=(12, 12))
    m = SPCATV(2, operator=tv_from_mask(mask), alpha_rel=0.5, tol=1e-4, method="deflation").fit(X)
    assert np.all(m.converged_)
    assert np.all(m.rel_gaps_ <= 1e-4)
    for k in range(2):
        hist = m.rel_gap_history_[k]
        assert hist[-1][1] == pytest.approx(m.rel_gaps_[k])
        # same iterations as gap_history_, gaps rescaled by a positive factor
        assert [i for i, _ in hist] == [i for i, _ in m.gap_history_[k]]


def test_verbose_prints_unless_a_handler_listens(capsys):
    X = np.random.default_rng(2).standard_normal((15, 20))
    SPCATV(1, alpha=0.1, verbose=1).fit(X)
    out = capsys.readouterr().out
    assert "component 0 done" in out
    logger = logging.getLogger("neurospca")
    records = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        SPCATV(1, alpha=0.1, verbose=1).fit(X)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert capsys.readouterr().out == ""
    assert any("done" in r.getMessage() for r in records)
    SPCATV(1, alpha=0.1).fit(X)
    assert capsys.readouterr().out == ""


def test_warm_start_reuses_scores_and_duals():
    X, _, mask = make_paper_simulation(80, snr=0.5, random_state=2009, shape=(20, 20))
    Xc = X - X.mean(0)
    op = tv_from_mask(mask)
    l1m = np.sqrt((Xc**2).sum(0)).max() / len(X)
    kw = dict(l1=0.05 * l1m, l2=l1m, tv=0.1 * l1m, operator=op, tol=1e-6)
    U, V, info = spca_tv(Xc, 2, **kw)
    U2, V2, info2 = spca_tv(Xc, 2, u0=U, w0=info["w"], **kw)
    cos = np.abs(np.sum(V * V2, axis=0)) / np.linalg.norm(V, axis=0) / np.linalg.norm(V2, axis=0)
    assert np.all(cos > 0.999), cos
    assert info2["n_inner_iter"].sum() < info["n_inner_iter"].sum()
    # through the estimator, along two neighbouring penalties
    est = SPCATV(2, operator=op, alpha_rel=1.0, warm_start=True).fit(X)
    assert hasattr(est, "_duals")
    cold = SPCATV(2, operator=op, alpha_rel=1.2).fit(X)
    warm = est.set_params(alpha_rel=1.2).fit(X)
    _, _, cos = match_components(cold, warm)
    assert np.all(cos > 0.999)
    with pytest.raises(ValueError, match="u0"):
        spca_tv(Xc, 2, u0=U[:, :1], **kw)


def test_select_penalty_bad_input():
    X = np.random.default_rng(0).standard_normal((20, 16))
    est = SPCATV(2, operator=tv_from_mask(np.ones((4, 4), bool)))
    with pytest.raises(ValueError, match="rule"):
        select_penalty(est, X, rule="best")
    with pytest.raises(ValueError, match="alpha_rel"):
        select_penalty(est, X, alpha_rel=[1.0, -1.0])
    with pytest.raises(TypeError, match="alpha_rel"):
        select_penalty(PCA(2), X)


def test_corrected_stability_removes_chance_overlap():
    from neurospca.model_selection import corrected_stability, pairwise_dice

    rng = np.random.default_rng(0)
    dense = [(rng.random((1, 1000)) < 0.95).astype(float) for _ in range(2)]
    sparse = np.zeros((1, 1000))
    sparse[0, :50] = 1.0
    # two independent 95 % supports: raw Dice ~0.95, corrected ~0
    assert pairwise_dice(dense).mean() > 0.9
    assert abs(corrected_stability(dense).mean()) < 0.1
    # identical sparse supports: both 1
    assert corrected_stability([sparse, sparse.copy()]).mean() == pytest.approx(1.0)
