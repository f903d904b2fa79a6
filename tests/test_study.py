"""Participants tables, ComBat, confound removal and association tests (neurospca.study)."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from neurospca import SPCATV, load_model, save_model
from neurospca.study import (
    StudyDesign,
    associations,
    combat_apply,
    combat_fit,
    match_participants,
    read_participants,
    subject_id_from_path,
)


def _table(n=30, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "participant_id": [f"sub-{i:02d}" for i in range(n)],
            "age": np.round(rng.uniform(55, 85, n), 1),
            "sex": rng.choice(["F", "M"], n),
            "site": np.repeat(["A", "B", "C"], n // 3),
            "dx": np.tile(["CN", "AD"], n // 2),
            "mmse": rng.integers(15, 30, n),
        }
    )


# --------------------------------------------------------------------------
# the table and the subjects
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        ("data/sub-01/anat/sub-01_hemi-L_thickness.shape.gii", "sub-01"),
        ("data/sub-ab12/surf/lh.thickness.mgh", "sub-ab12"),
        ("maps/sub-007.nii.gz", "sub-007"),
        ("subjects/bert/surf/lh.thickness.fwhm10.fsaverage.mgh", "bert"),
        ("maps/subject7.nii.gz", None),
    ],
)
def test_subject_id_from_path(path, expected):
    assert subject_id_from_path(path) == expected


def test_read_participants_tsv_csv_dataframe(tmp_path):
    table = _table()
    table.loc[3, "mmse"] = np.nan
    table.to_csv(tmp_path / "participants.tsv", sep="\t", index=False, na_rep="n/a")
    table.to_csv(tmp_path / "participants.csv", index=False)
    for source in (tmp_path / "participants.tsv", tmp_path / "participants.csv", table):
        read = read_participants(source)
        assert list(read["participant_id"]) == list(table["participant_id"])
        assert np.isnan(read.loc[3, "mmse"]) and read["age"].dtype.kind == "f"
    with pytest.raises(ValueError, match="participants: no ID column 'subject'"):
        read_participants(table, id_column="subject")
    twice = pd.concat([table, table.iloc[:1]])
    with pytest.raises(ValueError, match="repeats 'sub-00'"):
        read_participants(twice)
    with pytest.raises(TypeError, match="participants must be a path"):
        read_participants(3)


def test_match_participants_order_extra_rows_and_errors():
    table = read_participants(_table().sample(frac=1.0, random_state=1))  # shuffled rows
    ids = ["sub-05", "sub-01", "02"]  # the sub- prefix is optional on either side
    rows = match_participants(table, ids)
    assert list(rows["participant_id"]) == ["sub-05", "sub-01", "sub-02"]
    with pytest.raises(
        ValueError,
        match=r"participants: 1 of 3 image\(s\) have no row .*"
        r"'sub-99'",
    ):
        match_participants(table, ["sub-01", "sub-02", "sub-99"])
    with pytest.raises(
        ValueError, match="participants: no image matches a row of the ID column 'participant_id'"
    ):
        match_participants(table, ["bert", "ernie"])
    with pytest.raises(ValueError, match="imgs: subject.*'01'.*several images"):
        match_participants(table, ["sub-01", "01"])


# --------------------------------------------------------------------------
# ComBat
# --------------------------------------------------------------------------


def _site_data(seed=0, n=60, p=80):
    rng = np.random.default_rng(seed)
    site = np.repeat(["s1", "s2", "s3"], n // 3)
    age = rng.uniform(50, 80, n).astype(np.float32).astype(float)  # neuroCombat uses float32
    dx = rng.integers(0, 2, n).astype(float)
    scale = np.select([site == "s1", site == "s2"], [0.8, 1.0], 1.3)
    offset = np.select([site == "s1", site == "s2"], [-0.2, 0.0], 0.2)
    X = (
        2.5
        + 0.01 * age[:, None] * rng.uniform(0.5, 1.5, p)
        + 0.4 * dx[:, None]
        + offset[:, None]
        + scale[:, None] * 0.3 * rng.standard_normal((n, p))
    )
    return X, site, np.column_stack([age, dx])


def test_combat_matches_neuroharmonize():
    nh = pytest.importorskip("neuroHarmonize")
    X, site, cov = _site_data()
    covars = pd.DataFrame({"SITE": site, "age": cov[:, 0], "dx": cov[:, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, ref = nh.harmonizationLearn(X, covars)
    params = combat_fit(X, site, cov)
    np.testing.assert_allclose(combat_apply(X, site, cov, params), ref, rtol=0, atol=1e-6)
    np.testing.assert_allclose(params["gamma"], model["gamma_star"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(params["delta"], model["delta_star"], rtol=0, atol=1e-6)
    # held-out subjects of the same sites: harmonizationApply with the training model
    train = np.r_[0:14, 20:34, 40:54]
    test = np.setdiff1d(np.arange(60), train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = nh.harmonizationLearn(X[train], covars.iloc[train].reset_index(drop=True))
        ref = nh.harmonizationApply(X[test], covars.iloc[test].reset_index(drop=True), model)
    params = combat_fit(X[train], site[train], cov[train])
    np.testing.assert_allclose(
        combat_apply(X[test], site[test], cov[test], params), ref, rtol=0, atol=1e-6
    )


def test_combat_transform_uses_training_parameters_only():
    X, site, cov = _site_data(seed=3)
    train = np.r_[0:14, 20:34, 40:54]
    test = np.setdiff1d(np.arange(60), train)
    params = combat_fit(X[train], site[train], cov[train])
    before = {k: np.array(v, copy=True) for k, v in params.items()}
    batch = combat_apply(X[test], site[test], cov[test], params)
    # each held-out subject alone gives the same result as in the batch: no statistic of
    # the held-out data is used
    for j, i in enumerate(test):
        one = combat_apply(X[[i]], site[[i]], cov[[i]], params)
        np.testing.assert_allclose(one[0], batch[j], rtol=0, atol=1e-12)
    # changing the other held-out subjects changes nothing for subject 0
    X2 = X[test].copy()
    X2[1:] += 5.0
    np.testing.assert_allclose(
        combat_apply(X2, site[test], cov[test], params)[0], batch[0], rtol=0, atol=1e-12
    )
    for k in before:
        np.testing.assert_array_equal(before[k], params[k])
    # and the site effect is removed: held-out site means agree after harmonisation
    raw = [X[test][site[test] == s].mean() for s in ("s1", "s3")]
    out = [batch[site[test] == s].mean() for s in ("s1", "s3")]
    assert abs(raw[0] - raw[1]) > 0.3 and abs(out[0] - out[1]) < 0.1


def test_combat_bad_input():
    X, site, cov = _site_data()
    lone = site.copy()
    lone[0] = "s9"
    with pytest.raises(
        ValueError,
        match=r"harmonize: site\(s\) \['s9'\] have a single "
        "subject",
    ):
        combat_fit(X, lone, cov)
    params = combat_fit(X, site, cov)
    with pytest.raises(ValueError, match="harmonize: site.*'s4'.*not in the training"):
        combat_apply(X[:2], ["s4", "s1"], cov[:2], params)


# --------------------------------------------------------------------------
# the design: encoding, confounds, bad input
# --------------------------------------------------------------------------


def test_design_removes_confounds_and_keeps_groups():
    rows = _table(n=60, seed=2)
    rng = np.random.default_rng(0)
    p = 40
    sex = (rows["sex"] == "M").to_numpy(float)
    dx = (rows["dx"] == "AD").to_numpy(float)
    age = rows["age"].to_numpy()
    X = (
        np.outer(age, rng.normal(0, 0.02, p))
        + np.outer(sex, rng.normal(0, 0.5, p))
        + np.outer(dx, np.r_[np.ones(10), np.zeros(p - 10)])
        + 0.1 * rng.standard_normal((60, p))
    )
    design = StudyDesign(["age", "sex"], None, ["dx"], [])
    Y = design.fit_transform(X, rows)
    assert "sex: one-hot, reference 'F' (indicator columns sex[M])" in design.encoding_
    # least squares of the adjusted data on [1, confounds, dx]: no confound part left
    D = np.column_stack([np.ones(60), age - age.mean(), sex, dx])
    coef = np.linalg.lstsq(D, Y, rcond=None)[0]
    np.testing.assert_allclose(coef[1:3], 0, atol=1e-10)
    np.testing.assert_allclose(coef[3], np.linalg.lstsq(D, X, rcond=None)[0][3], atol=1e-10)
    # transform of the same rows gives the same data; the state survives to_dict/from_dict
    again = StudyDesign.from_dict(design.to_dict())
    np.testing.assert_allclose(again.transform(X, rows), Y, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"confounds": ["agee"]}, "confounds: unknown column 'agee'"),
        ({"covariates": ["sex"]}, "covariates: column 'sex' is not numeric"),
        ({"groups": ["diagnosis"]}, "groups: unknown column 'diagnosis'"),
        (
            {"harmonize": "site", "lone": True},
            r"harmonize: column 'site': site\(s\) \['D'\] have a single",
        ),
        ({"covariates": ["mmse"], "missing": True}, "covariates: column 'mmse' is missing"),
    ],
)
def test_design_bad_input_names_argument_and_column(kwargs, message):
    rows = _table()
    if kwargs.pop("lone", False):
        rows.loc[0, "site"] = "D"
    if kwargs.pop("missing", False):
        rows["mmse"] = rows["mmse"].astype(float)
        rows.loc[4, "mmse"] = np.nan
    X = np.random.default_rng(0).standard_normal((30, 5))
    with pytest.raises(ValueError, match=message):
        StudyDesign(**kwargs).fit_transform(X, rows)


# --------------------------------------------------------------------------
# associations
# --------------------------------------------------------------------------


def test_associations_statistics_match_scipy():
    rng = np.random.default_rng(1)
    n = 45
    dx = np.array(["CN", "MCI", "AD"])[rng.integers(0, 3, n)]
    age = rng.uniform(50, 80, n)
    S = rng.standard_normal((n, 2))
    S[:, 0] += 4.0 * (dx == "AD")
    table = associations(S, {"dx": dx}, {"age": age}, n_permutations=199)
    assert list(table.columns) == [
        "component",
        "variable",
        "test",
        "statistic",
        "effect_size",
        "effect_size_measure",
        "n",
        "p_asymptotic",
        "p",
        "p_corrected",
    ]
    for k in range(2):
        row = table[(table.component == k + 1) & (table.variable == "dx")].iloc[0]
        h, p = stats.kruskal(*[S[dx == g, k] for g in np.unique(dx)])
        assert row.statistic == pytest.approx(h) and row.p_asymptotic == pytest.approx(p)
        assert row.effect_size == pytest.approx((h - 2) / (n - 3))
        row = table[(table.component == k + 1) & (table.variable == "age")].iloc[0]
        rho, p = stats.spearmanr(S[:, k], age)
        assert row.statistic == pytest.approx(rho) and row.p_asymptotic == pytest.approx(p)
    assert np.all(table.p_corrected >= table.p - 1e-12)
    assert table.p.min() >= 1 / 200
    strong = table[(table.component == 1) & (table.variable == "dx")].iloc[0]
    assert strong.p == pytest.approx(1 / 200) and strong.p_corrected == pytest.approx(1 / 200)


def test_associations_control_the_familywise_error():
    """Under the null, P(min corrected p <= 0.1) is about 0.1 (min-P over 3 x 3 tests)."""
    rng = np.random.default_rng(7)
    hits = 0
    n_rep = 150
    for r in range(n_rep):
        n = 24
        S = rng.standard_normal((n, 3))
        groups = {"g": rng.permutation(np.repeat(["a", "b", "c"], 8))}
        covs = {"x": rng.standard_normal(n), "y": rng.standard_normal(n)}
        table = associations(S, groups, covs, n_permutations=99, random_state=r)
        hits += table.p_corrected.min() <= 0.1
    # binomial(150, 0.1): mean 15, sd 3.7; uncorrected over 9 tests would give ~ 50
    assert 4 <= hits <= 27, hits


def test_associations_bad_input():
    S = np.zeros((10, 2)) + np.arange(10)[:, None]
    with pytest.raises(ValueError, match="groups: column 'g' has a single value"):
        associations(S, {"g": ["a"] * 10})
    with pytest.raises(ValueError, match="n_permutations must be an int >= 99"):
        associations(S, {"g": ["a", "b"] * 5}, n_permutations=10)
    with pytest.raises(ValueError, match="covariates: 'x' has shape"):
        associations(S, covariates={"x": np.arange(9)})


# --------------------------------------------------------------------------
# saved with the model
# --------------------------------------------------------------------------


def test_study_saved_with_the_model_without_pickle(tmp_path):
    X, site, cov = _site_data(n=30, p=12)
    rows = pd.DataFrame(
        {
            "participant_id": [f"sub-{i}" for i in range(30)],
            "site": site,
            "age": cov[:, 0],
            "dx": np.where(cov[:, 1] > 0, "AD", "CN"),
        }
    )
    design = StudyDesign(["age"], "site", ["dx"], [])
    Y = design.fit_transform(X, rows)
    model = SPCATV(2, random_state=0, alpha_rel=1.0, stability=False, method="deflation").fit(Y)
    study = {
        "participant_ids": rows["participant_id"].to_numpy().astype(str),
        "design": design.to_dict(),
        "methods": design.describe(),
    }
    path = save_model(model, tmp_path / "m.npz", study=study)
    with np.load(path, allow_pickle=False) as archive:
        assert "study/design/combat/gamma" in archive.files
    saved = load_model(path)
    again = StudyDesign.from_dict(saved.study["design"])
    np.testing.assert_allclose(again.transform(X, rows), Y, atol=1e-12)
    assert list(saved.study["participant_ids"]) == list(rows["participant_id"])
    assert load_model(save_model(model, tmp_path / "plain.npz")).study is None
