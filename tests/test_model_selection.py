"""Model selection: held-out error, Dice, matching, MSE, sparsity rule, grids, dask."""

import logging
import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV, KFold

from neurospca import SPCATV, tv_from_mask
from neurospca.datasets import make_paper_simulation
from neurospca.model_selection import (
    dice_index,
    format_grid_table,
    grid_search_cv,
    match_components,
    mse_to_truth,
    neg_reconstruction_error,
    pairwise_dice,
    reconstruction_error,
    sign_permutation_test,
    sparsity_rule,
)


@pytest.fixture(scope="module")
def small_sim():
    X, patterns, mask = make_paper_simulation(60, snr=0.5, random_state=3, shape=(16, 16))
    return X, patterns, mask


# --------------------------------------------------------------------------
# reconstruction error
# --------------------------------------------------------------------------


def test_reconstruction_error_matches_pca_inverse_transform():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 12)) @ rng.standard_normal((12, 12))
    pca = PCA(3).fit(X[:30])
    expected = np.linalg.norm(X[30:] - pca.inverse_transform(pca.transform(X[30:])))
    assert reconstruction_error(X[30:], pca) == pytest.approx(expected, rel=1e-12)
    assert reconstruction_error(X[30:], pca.components_, pca.mean_) == pytest.approx(expected)
    assert neg_reconstruction_error(pca, X[30:]) == pytest.approx(-expected)


def test_reconstruction_error_non_orthogonal_components_is_least_squares():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((15, 9))
    C = rng.standard_normal((3, 9)) * np.array([[1.0], [5.0], [0.01]])  # skewed scales
    mean = rng.standard_normal(9)
    Xc = X - mean
    S = np.linalg.lstsq(C.T, Xc.T, rcond=None)[0].T  # independent: least-squares scores
    expected = np.linalg.norm(Xc - S @ C)
    assert reconstruction_error(X, C, mean) == pytest.approx(expected, rel=1e-10)
    # a zero component changes nothing; no component leaves the centred norm
    C0 = np.vstack([C, np.zeros(9)])
    assert reconstruction_error(X, C0, mean) == pytest.approx(expected, rel=1e-10)
    assert reconstruction_error(X, np.zeros((2, 9)), mean) == pytest.approx(np.linalg.norm(Xc))


def test_reconstruction_error_validation():
    with pytest.raises(ValueError, match="X has 4 features"):
        reconstruction_error(np.ones((3, 4)), np.ones((2, 5)))
    with pytest.raises(ValueError, match="X contains NaN"):
        reconstruction_error(np.full((3, 5), np.nan), np.ones((2, 5)))


def test_scorer_works_in_gridsearchcv():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 4)) @ rng.standard_normal((4, 10)) + 0.1 * rng.standard_normal(
        (50, 10)
    )
    cv = KFold(5)
    gs = GridSearchCV(
        PCA(), {"n_components": [1, 2, 4]}, scoring=neg_reconstruction_error, cv=cv
    ).fit(X)
    assert gs.best_params_ == {"n_components": 4}  # more components, smaller error
    manual = [-reconstruction_error(X[te], PCA(2).fit(X[tr])) for tr, te in cv.split(X)]
    assert gs.cv_results_["mean_test_score"][1] == pytest.approx(np.mean(manual), rel=1e-12)


# --------------------------------------------------------------------------
# Dice, matching, MSE, sparsity rule
# --------------------------------------------------------------------------


def test_dice_index_known_values():
    a = np.array([1.0, -2.0, 3.0, 0.0, 0.0])
    assert dice_index(a, a) == 1.0
    assert dice_index(a, -a) == 1.0  # signs ignored
    assert dice_index(a, np.array([0, 0, 0, 1.0, 1.0])) == 0.0  # disjoint
    assert dice_index(a, np.array([0, 0, 5.0, 1.0, 0])) == pytest.approx(2 * 1 / (3 + 2))
    assert dice_index(np.zeros(5), np.zeros(5)) == 1.0
    assert dice_index(a, np.zeros(5)) == 0.0
    # threshold: |a_j| <= 1 is out of the support -> {1, 2} vs {2}
    assert dice_index(a, np.array([0, 0, 3.0, 0, 0]), threshold=1.0) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="same size"):
        dice_index(a, np.ones(4))


def test_match_components_recovers_permutation_and_signs():
    rng = np.random.default_rng(4)
    R = rng.standard_normal((3, 50))
    C = np.stack([-2.0 * R[2], 0.5 * R[0], R[1]]) + 0.01 * rng.standard_normal((3, 50))
    order, signs, sim = match_components(R, C)
    np.testing.assert_array_equal(order, [1, 2, 0])
    np.testing.assert_array_equal(signs, [1, 1, -1])
    assert np.all(sim > 0.99)


def test_pairwise_dice_with_and_without_matching():
    rng = np.random.default_rng(5)
    base = rng.standard_normal((3, 40)) * (rng.random((3, 40)) < 0.3)
    fits = [base, base[[2, 0, 1]] * -1.0, base[[1, 2, 0]]]
    d = pairwise_dice(fits)
    assert d.shape == (3, 3)
    np.testing.assert_allclose(d, 1.0)
    d_raw = pairwise_dice(fits, match=False)
    assert d_raw.mean() < 0.6  # supports of different components overlap little
    np.testing.assert_allclose(d_raw[0, 0], dice_index(base[0], base[2]))
    with pytest.raises(ValueError, match="at least 2 fits"):
        pairwise_dice([base])


def test_mse_to_truth_invariances_and_value():
    rng = np.random.default_rng(6)
    T = rng.standard_normal((3, 30))
    C = np.stack([5 * T[1], -0.1 * T[2], T[0]])
    assert mse_to_truth(C, T) == pytest.approx(0.0, abs=1e-12)
    # one orthogonal component: 2 (1 - 0) for it, 0 for the others -> 2/3
    q = rng.standard_normal(30)
    q -= T.T @ np.linalg.lstsq(T.T, q, rcond=None)[0]
    assert mse_to_truth(np.stack([T[0], T[1], q]), T) == pytest.approx(2 / 3, rel=1e-8)
    # a single pair at a known angle: 2 (1 - |cos|)
    t = np.array([[1.0, 0.0]])
    c = np.array([[np.cos(0.3), -np.sin(0.3)]])
    assert mse_to_truth(c, t) == pytest.approx(2 * (1 - np.cos(0.3)))
    assert mse_to_truth(np.zeros((1, 2)), t) == pytest.approx(2.0)


def test_sparsity_rule():
    C = np.ones((3, 10))
    assert not sparsity_rule(C)
    C[1, :5] = 0
    C[2, :6] = 0
    assert sparsity_rule(C)  # component 1 (first) need not be sparse
    C[2, :6] = 1
    C[2, :4] = 0
    assert not sparsity_rule(C)
    assert sparsity_rule(C, min_zero_fraction=0.4)
    assert sparsity_rule(np.ones((1, 10)))  # no second/third component to test


def test_sign_permutation_test():
    d = np.full(20, 0.3) + np.linspace(0, 0.01, 20)
    stat, p = sign_permutation_test(d, n_permutations=999)
    assert stat == pytest.approx(d.mean())
    # every sign flip except the identity lowers |mean|: p at its minimum or next to it
    assert p <= 3 / 1000
    _, p_null = sign_permutation_test(np.array([1.0, -1.0, 1.0, -1.0]), 200)
    assert p_null == 1.0  # observed mean 0: every permutation is as extreme
    with pytest.raises(ValueError, match="n_permutations"):
        sign_permutation_test(d, 0)


# --------------------------------------------------------------------------
# grid search
# --------------------------------------------------------------------------


def _l1_max(X):
    Xc = X - X.mean(axis=0)
    return float(np.sqrt((Xc**2).sum(axis=0)).max() / X.shape[0])


def test_grid_search_picks_known_best_and_scores_match(small_sim):
    X, patterns, mask = small_sim
    op = tv_from_mask(mask)
    scale = _l1_max(X)
    # tiny alpha: dense loadings (fail the rule); huge alpha: everything zero
    # (the held-out error is that of no component); middle: sparse and good.
    grid = {
        "alpha": [1e-3 * scale, 0.5 * scale, 50.0 * scale],
        "l1_ratio": [0.1],
        "tv_ratio": [0.3],
    }
    est = SPCATV(3, operator=op, tol=1e-4)
    with pytest.warns(UserWarning, match="identically zero"):
        res = grid_search_cv(est, X, grid, cv=3, truth=patterns, n_jobs=1)
    assert not res["passes_sparsity"][0]
    assert res["passes_sparsity"][2]
    assert res["best_index"] == 1 and res["best_passes_sparsity"]
    assert res["best_params"]["alpha"] == pytest.approx(0.5 * scale)
    # the table agrees with independent fits
    folds = list(KFold(3).split(X))
    tr, te = folds[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # its third component vanishes
        fit = SPCATV(3, operator=op, tol=1e-4, alpha=0.5 * scale, l1_ratio=0.1, tv_ratio=0.3).fit(
            X[tr]
        )
    Xc = X[te] - X[tr].mean(axis=0)
    all_zero_err = np.linalg.norm(X[te] - X[tr].mean(axis=0))
    assert res["fold_test_error"][1, 1] == pytest.approx(reconstruction_error(X[te], fit))
    assert res["fold_test_error"][2, 1] == pytest.approx(all_zero_err)
    assert res["fold_test_error"][1, 1] < np.linalg.norm(Xc)
    assert res["mean_mse"][1] < 0.5 < res["mean_mse"][2]
    # the stability column is the mean pairwise Dice of that setting's fold fits
    assert res["mean_dice"][1] == pytest.approx(pairwise_dice(res["components"][1]).mean())
    assert res["mean_dice"][2] == pytest.approx(pairwise_dice(res["components"][2]).mean())
    table = format_grid_table(res)
    assert table.splitlines()[2].startswith("*")  # the selected (second) setting


def test_grid_search_validation(small_sim):
    X, _, _ = small_sim
    with pytest.raises(ValueError, match="alpah"):
        grid_search_cv(SPCATV(2), X, {"alpah": [1.0]})
    with pytest.raises(ValueError, match="param_grid is empty"):
        grid_search_cv(SPCATV(2), X, [])
    with pytest.raises(TypeError, match="estimator"):
        grid_search_cv("pca", X, {"alpha": [1.0]})


def test_grid_search_logs_each_fit(small_sim, caplog):
    X, _, _ = small_sim
    with caplog.at_level(logging.INFO, logger="neurospca"):
        grid_search_cv(PCA(), X, {"n_components": [2, 3]}, cv=2, sparse_indices=())
    done = [r for r in caplog.records if "fits done" in r.getMessage()]
    assert len(done) == 4 and done[-1].getMessage().endswith("4/4 fits done")


@pytest.mark.parametrize("processes", [False, True])
def test_grid_search_on_dask_equals_serial(small_sim, processes):
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    X, patterns, mask = small_sim
    op = tv_from_mask(mask)
    scale = _l1_max(X)
    grid = {"alpha": [0.1 * scale, 0.2 * scale], "l1_ratio": [0.1], "tv_ratio": [0.0, 0.3]}
    est = SPCATV(3, operator=op, tol=1e-4)
    serial = grid_search_cv(est, X, grid, cv=3, truth=patterns, n_jobs=1)
    # in-process workers need an explicit tcp protocol to bind to 127.0.0.1
    protocol = {} if processes else {"protocol": "tcp://"}
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=processes,
            host="127.0.0.1",
            dashboard_address=None,
            **protocol,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        with parallel_config(backend="dask"):
            remote = grid_search_cv(est, X, grid, cv=3, truth=patterns)
        assert len(client.scheduler_info()["workers"]) == 2
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    for key in ("fold_test_error", "mean_dice", "mean_mse", "min_zero_fraction"):
        np.testing.assert_allclose(remote[key], serial[key], rtol=1e-12, atol=1e-12)
    assert remote["best_index"] == serial["best_index"]
    for cs, cr in zip(serial["components"], remote["components"], strict=True):
        for a, b in zip(cs, cr, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_gridsearchcv_with_spcatv_agrees_with_grid_search_cv(small_sim):
    X, _, mask = small_sim
    op = tv_from_mask(mask)
    scale = _l1_max(X)
    grid = {"alpha": [0.1 * scale, 0.2 * scale], "l1_ratio": [0.1], "tv_ratio": [0.3]}
    est = SPCATV(2, operator=op, tol=1e-4)
    gs = GridSearchCV(est, grid, scoring=neg_reconstruction_error, cv=KFold(3)).fit(X)
    ours = grid_search_cv(est, X, grid, cv=3, sparse_indices=())
    np.testing.assert_allclose(
        -gs.cv_results_["mean_test_score"], ours["mean_test_error"], rtol=1e-12
    )
    assert gs.best_index_ == ours["best_index"]


# --------------------------------------------------------------------------
# select_penalty: the split-half rule, its inputs (issue 20)
# --------------------------------------------------------------------------


def test_select_penalty_searches_scale_and_split(small_sim, capsys):
    from neurospca.model_selection import REPRODUCIBILITY_TOLERANCE, select_penalty

    X, patterns, mask = small_sim
    est = SPCATV(2, operator=tv_from_mask(mask), random_state=0)
    sel = select_penalty(
        est,
        X,
        alpha_rel=(0.5, 1.0, 2.0),
        n_splits=2,
        truth=patterns[:2],
        random_state=0,
        verbose=1,
        criterion="halves",  # every split walked (round 9's returned search stops early)
    )
    res = sel.results_
    # the estimator's own splits first ("auto": the default fit's, (0.05, 0.1) and
    # (0.3, 0.3), since issue 20 round 3), with the sparser defaults, each along alpha_rel
    splits = list(dict.fromkeys((r["l1_ratio"], r["tv_ratio"]) for r in res))
    assert splits[0] == (0.05, 0.1)
    assert set(splits) <= {(0.05, 0.1), (0.2, 0.2), (0.3, 0.3), (0.5, 0.3)}
    assert len(splits) >= 2
    # one progress line per grid point
    out = capsys.readouterr().out
    assert out.count("[select_penalty]") == len(res)
    assert sel.table() in out  # and the table at the end
    # the chosen point: the default fit's rule (issue 20 round 6): admissible, the
    # least shrunk of the near-best points of its split, the first point excepted
    chosen = res[sel.best_index_]
    assert chosen["admissible"] and chosen["near_best"]
    same = [
        r for r in res if (r["l1_ratio"], r["tv_ratio"]) == (chosen["l1_ratio"], chosen["tv_ratio"])
    ]
    near = [r["alpha_rel"] for r in same[1:] if r["near_best"]] or [same[0]["alpha_rel"]]
    assert chosen["alpha_rel"] == min(near)
    top = max(r["reproducibility"] for r in res if r["admissible"])
    assert chosen["reproducibility_per_component"].shape == (2, 2)  # n_splits x components
    assert chosen["reproducibility"] == pytest.approx(
        chosen["reproducibility_per_component"].mean()
    )
    assert set(sel.best_params_) == {"alpha", "alpha_rel", "l1_ratio", "tv_ratio"}
    best = sel.best_estimator_
    assert (best.alpha_rel_, best.l1_ratio, best.tv_ratio) == (
        chosen["alpha_rel"],
        chosen["l1_ratio"],
        chosen["tv_ratio"],
    )
    np.testing.assert_array_equal(best.stability_, sel.component_stability_)
    assert np.all((0 <= best.stability_) & (best.stability_ <= 1))
    table = sel.table()
    for name in (
        "alpha_rel",
        "l1_ratio",
        "tv_ratio",
        "repro",
        "repro_min",
        "support",
        "empty",
        "score",
        "mse",
        "dice_truth",
    ):
        assert name in table.splitlines()[0]
    assert len(table.splitlines()) == len(res) + 1 and table.count("*") == 1
    # tolerance=0: the most reproducible admissible point (the rule before round 6);
    # a tolerance: the best held-out score among the points within it
    strict = select_penalty(
        est, X, alpha_rel=(0.5, 1.0, 2.0), n_splits=2, random_state=0, tolerance=0.0, refit=False
    )
    assert strict.results_[strict.best_index_]["reproducibility"] == pytest.approx(top)
    loose = select_penalty(
        est,
        X,
        alpha_rel=(0.5, 1.0, 2.0),
        n_splits=2,
        random_state=0,
        tolerance=REPRODUCIBILITY_TOLERANCE,
        refit=False,
    )
    lres = loose.results_
    within = [
        i
        for i, r in enumerate(lres)
        if r["admissible"] and r["reproducibility"] >= top - REPRODUCIBILITY_TOLERANCE
    ]
    assert loose.best_index_ == max(within, key=lambda i: lres[i]["mean_score"])


def test_select_penalty_elasticnet_keeps_its_method(small_sim):
    """Without TV (ElasticNet PCA) the searched splits keep tv_ratio = 0."""
    from neurospca.model_selection import select_penalty

    X, _, mask = small_sim
    sel = select_penalty(
        SPCATV(2, operator=tv_from_mask(mask), tv_ratio=0.0),
        X,
        alpha_rel=(1.0, 2.0),
        random_state=0,
        refit=False,
    )
    assert {r["tv_ratio"] for r in sel.results_} == {0.0}
    assert sel.best_params_["tv_ratio"] == 0.0 and sel.best_estimator_ is None


def test_select_penalty_old_rules_by_name(small_sim, capsys):
    from neurospca.model_selection import select_penalty

    X, _, mask = small_sim
    est = SPCATV(2, operator=tv_from_mask(mask))
    sel = select_penalty(
        est,
        X,
        alpha_rel=(0.5, 1.0),
        rule="weakest_stable",
        cv=3,
        random_state=0,
        refit=False,
        verbose=1,
    )
    assert capsys.readouterr().out.count("[select_penalty]") == 2
    # the K-fold rules search the estimator's own split, as before
    assert [(r["l1_ratio"], r["tv_ratio"]) for r in sel.results_] == [(0.05, 0.1)] * 2
    assert {"fold_scores", "stability_corrected", "within_one_se"} <= set(sel.results_[0])
    assert "corrected" in sel.table() and sel.rule == "weakest_stable"


def _tiny_volumes(n=24, seed=0):
    """A 4-D NIfTI with two blobs inside an ellipsoid mask, and a confound."""
    import nibabel as nib

    rng = np.random.default_rng(seed)
    shape = (9, 10, 7)
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    mask = ((grid - [4, 4.5, 3]) ** 2 / [16, 20, 9]).sum(-1) < 1.0
    blobs = [np.exp(-((grid - c) ** 2).sum(-1) / 2.0) for c in ([2, 3, 3], [6, 6, 3])]
    confound = rng.standard_normal(n)
    data = (
        3 * rng.standard_normal((n, 1, 1, 1)) * blobs[0]
        + 2 * rng.standard_normal((n, 1, 1, 1)) * blobs[1]
        + 2 * confound[:, None, None, None] * mask
        + 0.2 * rng.standard_normal((n,) + shape)
    )
    affine = np.diag([2.0, 2.0, 2.0, 1.0])
    img = nib.Nifti1Image(np.moveaxis(data, 0, -1).astype(np.float32), affine)
    return img, nib.Nifti1Image(mask.astype(np.uint8), affine), confound[:, None]


def test_select_penalty_takes_nifti_glob_mask_and_confounds(tmp_path):
    pytest.importorskip("nilearn")
    import nibabel as nib

    from neurospca import ImageSPCATV
    from neurospca.model_selection import select_penalty

    img, mask_img, confounds = _tiny_volumes()
    for i in range(img.shape[-1]):
        nib.save(
            nib.Nifti1Image(img.get_fdata()[..., i], img.affine), tmp_path / f"sub-{i:02d}.nii.gz"
        )
    pattern = str(tmp_path / "sub-*.nii.gz")
    est = ImageSPCATV(2, mask=mask_img, random_state=0)
    kw = dict(alpha_rel=(0.5, 1.0), splits=[(0.05, 0.1), (0.2, 0.2)], random_state=0)
    sel = select_penalty(est, pattern, confounds=confounds, **kw)
    best = sel.best_estimator_
    assert isinstance(best, ImageSPCATV) and best.components_img_.shape == mask_img.shape + (2,)
    assert best.alpha_rel_ == sel.best_params_["alpha_rel"]
    np.testing.assert_array_equal(best.stability_, sel.component_stability_)
    assert not hasattr(est, "masker_")  # the estimator given is left unfitted
    # the same search as on the matrix ImageSPCATV masks, with the SPCATV it fits
    X, inner = ImageSPCATV(2, mask=mask_img, random_state=0).prepare(pattern, confounds)
    assert isinstance(inner, SPCATV) and inner.operator.shape[1] == X.shape[1]
    direct = select_penalty(inner, X, refit=False, **kw)
    for a, b in zip(sel.results_, direct.results_, strict=True):
        np.testing.assert_allclose(
            a["reproducibility_per_component"], b["reproducibility_per_component"], atol=1e-12
        )
    # the confound was regressed out of what was searched
    c = confounds[:, 0] - confounds[:, 0].mean()
    assert np.abs(c @ (X - X.mean(axis=0))).max() < 1e-6 * np.abs(X).max() * len(c)


def test_select_penalty_takes_a_surface_image():
    pytest.importorskip("nilearn")
    from nilearn.datasets import load_fsaverage
    from nilearn.surface import SurfaceImage

    from neurospca import ImageSPCATV
    from neurospca.model_selection import select_penalty

    mesh = load_fsaverage("fsaverage5")["pial"]
    rng = np.random.default_rng(4)
    n = 16
    amp = 3 * rng.standard_normal(n)  # one pattern across both hemispheres
    data = {}
    for hemi, centre in (("left", 4321), ("right", 777)):
        xyz = mesh.parts[hemi].coordinates
        blob = np.exp(-((xyz - xyz[centre]) ** 2).sum(1) / (2 * 8.0**2))
        data[hemi] = np.where(blob > 0.05, blob, 0.0)[:, None] * amp + 0.1 * rng.standard_normal(
            (xyz.shape[0], n)
        )
    img = SurfaceImage(mesh=mesh, data=data)
    est = ImageSPCATV(1, mask=(np.ones(10242, bool), np.ones(10242, bool)), random_state=0)
    sel = select_penalty(est, img, alpha_rel=(1.0, 2.0), splits=[(0.05, 0.1)], random_state=0)
    best = sel.best_estimator_
    assert isinstance(best.components_img_, SurfaceImage)
    assert best.alpha_rel_ == sel.best_params_["alpha_rel"]
    assert sel.results_[sel.best_index_]["reproducibility"] > 0.9
    # an SPCATV cannot take images: the error names X and the fix
    with pytest.raises(TypeError, match="X must be a numeric .* ImageSPCATV"):
        select_penalty(SPCATV(1), img)


def test_select_penalty_bad_arguments_are_named(small_sim):
    from neurospca.model_selection import select_penalty

    X, _, mask = small_sim
    est = SPCATV(2, operator=tv_from_mask(mask))
    for kw, match in (
        ({"splits": [(0.6, 0.5)]}, "splits"),
        ({"splits": [1.0, 2.0]}, "splits"),
        ({"splits": []}, "splits"),
        ({"n_splits": 0}, "n_splits"),
        ({"tolerance": -0.1}, "tolerance"),
        ({"alpha_rel": []}, "alpha_rel"),
        ({"confounds": np.ones((60, 1))}, "confounds"),
        ({"rule": "x"}, "rule"),
    ):
        with pytest.raises(ValueError, match=match):
            select_penalty(est, X, **kw)
    with pytest.raises(TypeError, match="estimator"):
        select_penalty(PCA(2), X)
    with pytest.raises(TypeError, match="n_splits"):
        select_penalty(est, X, n_splits=1.5)
