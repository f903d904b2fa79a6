"""The report's section builders, one by one, and the template partials they fill.

Each builder is checked on a tiny fitted SPCATV and on other estimators
(SSPCA, NonnegativeSparsePCA) that lack the SPCA-TV attributes
(``dual_gaps_``, ``certified_support_``, ``rel_gaps_``, ``stability_``...):
what it returns, and when it returns None.
"""

import inspect
import re
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import nibabel as nib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from neurospca import SPCATV, SSPCA, NonnegativeSparsePCA, VolumeMasker  # noqa: E402
from neurospca.decomposition import STABILITY_THRESHOLD  # noqa: E402
from neurospca.reporting import _component_sections as cs  # noqa: E402
from neurospca.reporting import _inputs, _sections, component_scores, library_versions, make_report  # noqa: E402

SELECTION = SimpleNamespace(
    best_params_={"alpha_rel": 0.5},
    rule="one-standard-error",
    component_stability_=np.array([0.9, 0.2]),
    results_=[{"params": {"alpha_rel": a}, "mean_score": -a} for a in (0.25, 0.5, 1.0)],
)


@pytest.fixture(scope="module")
def tiny():
    """A tiny volume, its data and three fitted estimators on it."""
    mask = np.zeros((9, 10, 7), dtype=bool)
    mask[1:8, 1:9, 1:6] = True
    affine = np.diag([3.0, 3.0, 3.0, 1.0])
    masker = VolumeMasker(nib.Nifti1Image(mask.astype(np.uint8), affine))
    ijk = np.argwhere(mask)
    patterns = [np.exp(-((ijk - c) ** 2).sum(1) / 2.0) for c in ([3, 3, 3], [6, 7, 4])]
    rng = np.random.default_rng(5)
    X = (rng.standard_normal((24, 2)) * [3, 2]) @ np.array(patterns)
    X += 0.2 * rng.standard_normal(X.shape)
    spcatv = SPCATV(2, alpha=0.2, l1_ratio=0.1, tv_ratio=0.3, operator=masker.operator(), tol=1e-2)
    return {
        "masker": masker,
        "X": X,
        "spcatv": spcatv.fit(X),
        "sspca": SSPCA(2, random_state=0, max_iter=5).fit(X),
        "nspca": NonnegativeSparsePCA(2, random_state=0).fit(np.abs(X)),
    }


def _args(**given):
    """make_report's keyword arguments: its defaults, updated with ``given``."""
    params = inspect.signature(make_report).parameters
    args = {k: p.default for k, p in params.items() if p.kind is p.KEYWORD_ONLY}
    args.update(given)
    return args


def _inputs_of(model, space=None, **given):
    args = _args(**given)
    comps, args["command"] = _inputs.check_arguments(model, space, args)
    return _inputs.report_inputs(model, space, comps, args, library_versions())


def _facts(r):
    return [cs.component_facts(r, k) for k in range(r.n_components)]


# --------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------


def test_check_arguments_order_and_command(tiny):
    model, masker = tiny["spcatv"], tiny["masker"]
    with pytest.raises(ValueError, match="must be fitted"):
        _inputs.check_arguments(SPCATV(), masker, _args())
    with pytest.raises(TypeError, match="space must be"):  # before the feature count
        _inputs.check_arguments(model, "mask.nii", _args(title=3))
    with pytest.raises(TypeError, match="data_description"):  # before title
        _inputs.check_arguments(model, masker, _args(title=3, data_description=[1]))
    with pytest.raises(ValueError, match="max_clusters"):
        _inputs.check_arguments(model, masker, _args(max_clusters=True))
    with pytest.raises(ValueError, match="atlas needs a brain space"):
        _inputs.check_arguments(model, None, _args(atlas="a.nii"))
    comps, command = _inputs.check_arguments(model, masker, _args(metadata={"command": "fit x"}))
    np.testing.assert_array_equal(comps, model.components_)
    assert command == "fit x"
    _, command = _inputs.check_arguments(
        model, masker, _args(command="given", metadata={"command": "fit x"})
    )
    assert command == "given"


def test_report_inputs_of_spcatv_and_of_other_estimators(tiny):
    r = _inputs_of(tiny["spcatv"], tiny["masker"])
    np.testing.assert_allclose(r.scores, component_scores(tiny["spcatv"]))
    assert r.n_samples == 24 and r.n_features == tiny["masker"].n_features and r.unit == "voxels"
    assert r.pen is not None and r.pen["alpha"] == pytest.approx(0.2)
    assert r.tol == pytest.approx(1e-2)
    if r.certified is not None:  # only certified non-zeros are shown
        np.testing.assert_array_equal(r.shown, np.where(r.certified, r.comps, 0.0))
    for name in ("sspca", "nspca"):
        r = _inputs_of(tiny[name], tiny["masker"])
        assert r.pen is None and r.certified is None and r.rel_gaps is None
        assert r.sel is None and r.stability is None
        np.testing.assert_array_equal(r.shown, tiny[name].components_)
    assert _inputs_of(tiny["sspca"]).scores is None  # scores_ without singular_values_


def test_stability_view_sources(tiny):
    model = tiny["sspca"]
    assert _inputs.stability_view(model, None, None) == (None, "mean pairwise Dice")
    sel = {"stability": np.array([0.9, 0.2])}
    values, label = _inputs.stability_view(model, SELECTION, sel)
    np.testing.assert_array_equal(values, [0.9, 0.2])
    assert label == "mean pairwise Dice"
    rule = SimpleNamespace(rule="reproducibility")
    assert _inputs.stability_view(model, rule, sel)[1] == "split-half reproducibility"
    own = SimpleNamespace(stability_=np.array([np.nan, 0.7]))
    values, label = _inputs.stability_view(own, None, None)
    np.testing.assert_array_equal(values, [np.nan, 0.7])
    assert label == "reproducibility across resampled fits"
    assert _inputs.stability_view(SimpleNamespace(stability_=[np.nan]), None, None)[0] is None


# --------------------------------------------------------------------------
# per component
# --------------------------------------------------------------------------


def test_component_facts(tiny):
    r = _inputs_of(tiny["spcatv"], tiny["masker"])
    for f in _facts(r):
        assert f.support == np.count_nonzero(r.shown[f.k])
        assert f.nonzero == np.count_nonzero(r.comps[f.k])
        assert abs(f.peak.value) == pytest.approx(np.abs(r.comps[f.k]).max())
        if f.support:  # the clusters partition the loadings shown
            assert sum(c.size for c in f.clusters) == f.support
        assert f.conv == bool(tiny["spcatv"].converged_[f.k])
        assert f.stab is None
    plain = _facts(_inputs_of(tiny["sspca"]))
    assert all(f.clusters is None and f.conv is None and f.conv_text == "-" for f in plain)


@pytest.mark.parametrize("name", ["spcatv", "sspca", "nspca"])
def test_table_rows_match_their_headers(tiny, name):
    r = _inputs_of(tiny[name], tiny["masker"])
    header, conv_header = cs.components_header(r), cs.convergence_header(r)
    for f in _facts(r):
        assert len(cs.component_row(r, f)) == len(header)
        assert len(cs.convergence_row(r, f)) == len(conv_header)
    if name == "spcatv":
        i = conv_header.index("certified gap")
        gaps = [cs.convergence_row(r, f)[i][0] for f in _facts(r)]
        assert gaps == [f"{g:.2e}" for g in tiny["spcatv"].dual_gaps_]
    else:  # no certificates, no relative gaps: no such columns, "-" for the gap
        assert "support" in header and "certified support" not in header
        assert not any(h.startswith("relative gap") for h in header + conv_header)
        assert all(cs.convergence_row(r, f)[1][0] == "-" for f in _facts(r))


def test_component_warnings(tiny):
    r = _inputs_of(tiny["spcatv"], tiny["masker"], selection=SELECTION)
    facts = _facts(r)
    low = [f.k for f in facts if f.support and f.stab < STABILITY_THRESHOLD]
    assert low == [1]  # the selection's 0.2
    assert "does not reproduce" in " ".join(cs.component_warnings(r, facts[1]))
    zero = SimpleNamespace(**{**vars(facts[0]), "nonzero": 0, "support": 0})
    assert "identically zero" in cs.component_warnings(r, zero)[0]
    stuck = SimpleNamespace(**{**vars(facts[0]), "conv": False, "conv_text": "no"})
    assert cs.component_warnings(r, stuck) == [
        "Component 1 did not reach the requested tolerance (no)."
    ]


def test_component_item(tiny):
    r = _inputs_of(tiny["spcatv"], tiny["masker"], max_clusters=1)
    f = _facts(r)[0]
    item = cs.component_item(r, f, "data:image/png;base64,AA==")
    assert item["label"] == "Component 1" and item["image"].startswith("data:")
    assert len(item["cluster_rows"]) == min(1, len(f.clusters))
    assert len(item["cluster_rows"][0]) == len(item["cluster_header"])
    assert item["caption"].startswith("Peak loading")
    assert cs.component_item(r, f, None)["message"].startswith("No meshes")


# --------------------------------------------------------------------------
# page sections
# --------------------------------------------------------------------------


def test_methods_section(tiny):
    text = _sections.methods_section(_inputs_of(tiny["spcatv"], tiny["masker"]))["text"]
    assert "de Pierrefeu" in text and "alpha = 0.2" in text
    r = _inputs_of(tiny["nspca"], tiny["masker"], command="neurospca fit x")
    section = _sections.methods_section(r)
    assert section["command"] == "neurospca fit x"
    assert "estimated with nonnegative sparse PCA (NSPCA; Zass and Shashua" in section["text"]
    assert "de Pierrefeu" not in section["text"]


def test_data_and_parameters_sections(tiny):
    r = _inputs_of(tiny["spcatv"], tiny["masker"], data_description={"inputs": "24 maps"})
    rows = dict(_sections.data_section(r)["rows"])
    assert rows["samples"] == "24" and rows["inputs"] == "24 maps"
    assert rows["voxels in the mask"] == f"{tiny['masker'].n_features:,}"
    assert "samples" not in dict(_sections.data_section(_inputs_of(tiny["sspca"]))["rows"])
    params = _sections.parameters_section(r)
    assert set(tiny["spcatv"].get_params(deep=False)) <= {k for k, _ in params["rows"]}
    assert "rows x" in dict(params["rows"])["operator"]
    assert params["weights"].startswith("l1 = ")
    assert _sections.parameters_section(_inputs_of(tiny["sspca"]))["weights"] == ""


def test_components_and_loadings_sections(tiny):
    r = _inputs_of(tiny["spcatv"], tiny["masker"])
    facts = _facts(r)
    table = _sections.components_section(r, facts)
    assert len(table["rows"]) == 2 and table["certified"] == (r.certified is not None)
    loadings = _sections.loadings_section(r, facts, ["a", None])
    assert [c["image"] for c in loadings["components"]] == ["a", None]
    assert "glass brain" in loadings["note"]
    with pytest.raises(ValueError):  # one figure per component
        _sections.loadings_section(r, facts, ["a"])


def test_optional_sections_return_none_when_absent(tiny):
    r = _inputs_of(tiny["sspca"])
    assert _sections.selection_section(r) is None
    assert _sections.participants_section(r) is None
    assert _sections.n_components_evidence_section(r) is None
    assert _sections.scores_section(r) is None  # SSPCA stores no singular values
    r = _inputs_of(tiny["spcatv"], selection=SELECTION)
    assert _sections.selection_section(r)["rows"][1][-1] == "yes"
    assert _sections.scores_section(r)["image"].startswith("data:image/png;base64,")


def test_variance_section(tiny):
    model = tiny["spcatv"]
    section = _sections.variance_section(_inputs_of(model))
    total = 100 * np.nansum(model.explained_variance_ratio_)
    assert f"Total: {total:.2f} %" in section["note"]
    pca = "beside plain PCA" in section["note"]
    assert pca == (getattr(model, "pca_explained_variance_ratio_", None) is not None)


def test_participants_and_evidence_sections(tiny):
    scores = component_scores(tiny["spcatv"])
    study = {
        "participant_ids": [f"s{i}" for i in range(24)],
        "groups": {"dx": ["a", "b"] * 12},
        "methods": ["Two groups."],
    }
    section = _sections.participants_section(_inputs_of(tiny["spcatv"], study=study))
    assert section["n_subjects"] == 24 and section["methods"] == ["Two groups."]
    assert len(section["figures"]) == scores.shape[1] and section["rows"] == []
    evidence = {
        "observed": [0.5, 0.2],
        "null": [0.3, None],
        "n_components": 1,
        "quantile": 0.95,
        "rule": "rule text",
    }
    r = _inputs_of(tiny["spcatv"], metadata={"n_components_evidence": evidence})
    assert _sections.n_components_evidence_section(r)["note"] == "rule text"


def test_convergence_section_and_a_model_without_any_record(tiny):
    r = _inputs_of(tiny["spcatv"])
    section = _sections.convergence_section(r, _facts(r))
    assert len(section["rows"]) == 2 and section["image"].startswith("data:image/png")
    relative = hasattr(tiny["spcatv"], "rel_gap_history_")
    assert section["note"].startswith("Relative" if relative else "Certified")
    model = NonnegativeSparsePCA(2, random_state=0).fit(np.abs(tiny["X"]))
    del model.n_iter_, model.converged_  # e.g. a model saved without them
    r = _inputs_of(model)
    assert _sections.convergence_section(r, _facts(r)) is None
    html = make_report(model)
    assert "This estimator records no convergence" in html
    assert 'id="convergence"' in html  # the section stays, labelled (the nav links to it)


def test_timings_and_versions_sections(tiny):
    import time

    r = _inputs_of(tiny["spcatv"])
    rows = _sections.timings_section(r, time.perf_counter())["rows"]
    names = [name for name, _ in rows]
    assert names[0] == "fit (s)" and names[-1] == "report (s)"
    assert names[1:-1] == ["component 1 (s)", "component 2 (s)"]
    assert _sections.versions_section(r) == library_versions()
    rows = _sections.timings_section(_inputs_of(tiny["sspca"]), time.perf_counter())["rows"]
    assert [name for name, _ in rows][-1] == "report (s)"


@pytest.mark.parametrize("name", ["sspca", "nspca"])
def test_page_of_an_estimator_without_spcatv_attributes(tiny, name):
    html = make_report(tiny[name], tiny["masker"], title=name)
    text = re.sub(r"<[^>]+>", " ", html)
    assert f"neurospca {library_versions()['neurospca']} ({type(tiny[name]).__name__})" in text
    for section in ("methods", "data", "parameters", "summary", "loadings", "variance"):
        assert f'id="{section}"' in html
    assert 'id="selection"' not in html and 'id="participants"' not in html
    assert "certified support" not in text and "relative gap (tol" not in text
    assert html.count('<figure class="component"') == 2


# --------------------------------------------------------------------------
# template partials: shipped and used
# --------------------------------------------------------------------------


def _templates():
    return resources.files("neurospca.reporting").joinpath("templates")


def test_every_partial_is_shipped_and_included_once():
    shipped = sorted(p.name for p in _templates().iterdir() if p.name.endswith(".html"))
    partials = [n for n in shipped if n.startswith("section_")]
    page = _templates().joinpath("report.html").read_text(encoding="utf-8")
    included = re.findall(r'{%\s*include\s+"([^"]+)"\s*%}', page)
    assert sorted(included) == partials  # every partial used, once; every include shipped
    assert [t for _, t in _sections.SECTIONS] == included  # in the page's order
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    data = pyproject.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    globs = re.findall(r'"([^"]+)"', data.split("neurospca =", 1)[1].split("]", 1)[0])
    assert "reporting/templates/*" in globs
    for name in shipped:
        assert any(fnmatch(f"reporting/templates/{name}", g) for g in globs), name


def test_every_section_builder_feeds_its_partial(tiny):
    """Each partial reads the context its builder returns under the section's name."""
    for name, template in _sections.SECTIONS:
        text = _templates().joinpath(template).read_text(encoding="utf-8")
        code = " ".join(re.findall(r"{[{%](.*?)[}%]}", text))
        used = set(re.findall(r"\b([a-z_]+)\.[a-z_]+", code)) - {"comp", "fig", "loop"}
        assert used <= {name, "versions"} or used == {name, "ncomp"}, (template, used)
        assert callable(getattr(_sections, f"{name}_section", None)), name


# --------------------------------------------------------------------------
# the four other estimators through ImageSPCATV(estimator=...): what the page
# says about the method actually fitted
# --------------------------------------------------------------------------

#: per estimator: the header's method and a name its citation holds
OTHER_METHODS = {
    "sspca": ("Structured sparse PCA (Jenatton et al.)", "Jenatton, Obozinski and Bach"),
    "nspca": ("Nonnegative sparse PCA (Zass and Shashua)", "Zass and Shashua"),
    "ktrace": ("Sparse PCA with the (k, PSD) trace norm", "Richard, Obozinski and Vert"),
    "dictionary": ("Hierarchical dictionary learning", "Jenatton, Mairal, Obozinski"),
}


def _other_estimator(name):
    from neurospca import HierarchicalDictionaryLearning, KTraceNormPCA, balanced_tree

    return {
        "sspca": lambda: SSPCA(2, max_iter=20, random_state=0),
        "nspca": lambda: NonnegativeSparsePCA(2, n_init=1, max_iter=30, random_state=0),
        "ktrace": lambda: KTraceNormPCA(
            n_components=2, k=2, n_restarts=1, max_iter=20, random_state=0
        ),
        "dictionary": lambda: HierarchicalDictionaryLearning(
            balanced_tree((2,)), max_iter=3, random_state=0
        ),
    }[name]()


@pytest.fixture(scope="module")
def image_fits():
    """A tiny 4-D NIfTI (12 maps, two blobs) and ImageSPCATV fits of the four
    other estimators on it, with each one's masked data and page."""
    import warnings

    from neurospca import ImageSPCATV

    rng = np.random.default_rng(3)
    shape, affine = (7, 8, 6), np.diag([2.0, 2.5, 3.0, 1.0])
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    mask = ((grid - [3, 3.5, 2.5]) ** 2 / [10, 14, 8]).sum(-1) < 1
    blobs = [np.exp(-((grid - c) ** 2).sum(-1) / 2.0) for c in ([2, 2, 2], [4, 5, 3])]
    data = (
        2 * rng.standard_normal((12, 1, 1, 1)) * blobs[0]
        + rng.standard_normal((12, 1, 1, 1)) * blobs[1]
        + 0.2 * rng.standard_normal((12,) + shape)
    )
    img = nib.Nifti1Image(np.moveaxis(data, 0, -1).astype(np.float32), affine)
    mask_img = nib.Nifti1Image(mask.astype(np.uint8), affine)
    out = {}
    for name in OTHER_METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence notes of the short fits
            model = ImageSPCATV(mask=mask_img, estimator=_other_estimator(name)).fit(img)
        X = model._data(img, None)
        out[name] = SimpleNamespace(
            model=model, X=X, scores=model.transform(img), html=model.generate_report().html
        )
    return out


def _page_text(html):
    html = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#39;", "'")


def _section_text(html, section):
    return _page_text(re.search(rf'<section id="{section}">.*?</section>', html, re.S).group(0))


@pytest.mark.parametrize("name", list(OTHER_METHODS))
def test_header_and_methods_name_the_method_fitted(image_fits, name):
    fit = image_fits[name]
    title, authors = OTHER_METHODS[name]
    header = re.search(r"<header>.*?</header>", fit.html, re.S).group(0)
    assert f"<p>{title} &middot; {type(fit.model.estimator_).__name__} &middot;" in header
    assert "SPCA-TV" not in _page_text(fit.html)
    methods = _section_text(fit.html, "methods")
    assert authors in methods and "as implemented in neurospca" in methods
    for spcatv_word in ("de Pierrefeu", "TV-elastic", "l1_max", "v-step", "deflation"):
        assert spcatv_word not in methods, spcatv_word
    assert "The data held 12 samples" in methods


def test_spcatv_header_and_methods_keep_their_wording(tiny):
    html = make_report(tiny["spcatv"], tiny["masker"])
    assert "<p>Structured sparse PCA (SPCA-TV) &middot; SPCATV &middot;" in html
    assert "de Pierrefeu" in _section_text(html, "methods")


def test_long_parameters_are_summarised(image_fits, tiny):
    fit = image_fits["sspca"]
    groups = fit.model.estimator_.groups
    assert len(groups) > 8
    rows = dict(_sections.parameters_section(_inputs_of(fit.model.estimator_))["rows"])
    assert rows["groups"] == f"{len(groups):,} groups"
    assert f"groups {len(groups):,} groups" in _section_text(fit.html, "parameters")
    assert str(list(groups[0])) not in fit.html  # the groups themselves are not printed
    tree = image_fits["dictionary"].model.estimator_.tree
    rows = dict(
        _sections.parameters_section(_inputs_of(image_fits["dictionary"].model.estimator_))["rows"]
    )
    assert rows["tree"] == f"tree of {np.asarray(tree).size} nodes"
    text = _sections._parameter_text
    model = tiny["spcatv"]
    assert text(model, "group_weights", np.ones((4, 3))) == "array of shape (4, 3)"
    assert text(model, "x", list(range(9))) == "9 items"
    assert text(model, "x", [1, 2.5, "a"]) == [1, 2.5, "a"]  # short lists as they are
    assert text(model, "x", [[1], [2]]) == "2 items"


def test_relative_alpha_is_worded_per_estimator(image_fits, tiny):
    est = image_fits["sspca"].model.estimator_
    assert est.alpha is None
    rows = dict(_sections.parameters_section(_inputs_of(est))["rows"])
    assert rows["alpha"] == "None (data-relative: alpha_rel x alpha_max_)"
    assert rows["alpha_max_ (fitted)"] == f"{est.alpha_max_:.4g}"
    assert "l1_max" not in _section_text(image_fits["sspca"].html, "parameters")
    # the methods paragraph's numbers: alpha_ = alpha_rel x alpha_max_
    assert est.alpha_ == pytest.approx(est.alpha_rel * est.alpha_max_)
    methods = _section_text(image_fits["sspca"].html, "methods")
    assert f"alpha = {est.alpha_:.4g}" in methods
    assert f"{est.alpha_rel:.4g} x {est.alpha_max_:.4g}" in methods
    spcatv = SPCATV(2, alpha=None, alpha_rel=0.5, tol=1e-2).fit(tiny["X"][:, :30])
    rows = dict(_sections.parameters_section(_inputs_of(spcatv))["rows"])
    assert rows["alpha"] == "None (data-relative: alpha_rel x l1_max_)"


@pytest.mark.parametrize("name", list(OTHER_METHODS))
def test_convergence_shows_the_fit_without_a_certificate_claim(image_fits, name):
    fit = image_fits[name]
    est = fit.model.estimator_
    r = _inputs_of(est, fit.model.space_)
    section = _sections.convergence_section(r, _facts(r))
    rows = dict(section["fit_rows"])
    assert rows["iterations (n_iter_)"] == f"{int(est.n_iter_):,}"
    conv = getattr(est, "converged_", None)
    assert rows["converged (converged_)"] == (
        "not recorded" if conv is None else ("yes" if conv else "no")
    )
    text = _section_text(fit.html, "convergence")
    assert "v-step" not in text and "relative gap" not in text
    assert f"iterations (n_iter_) {int(est.n_iter_):,}" in text
    if name == "ktrace":  # the one convex problem: its gap is certified
        assert rows["certified duality gap"] == f"{float(est.dual_gaps_[0]):.2e}"
    else:
        assert "no certified duality gap" in text and "certified duality gap" not in rows
    assert "Relative gap: final certified" not in _section_text(fit.html, "summary")


def _direct_ratio(X, components):
    """Zou et al.'s adjusted explained variance ratio, from the centred data."""
    Xc = X - X.mean(axis=0)
    norms = np.linalg.norm(components, axis=1, keepdims=True)
    W = components / np.where(norms > 0, norms, 1.0)
    R = np.linalg.qr(Xc @ W.T, mode="r")
    return np.diag(R) ** 2 / np.sum(Xc * Xc)


def _components_column(html, column=1):
    section = re.search(r'<section id="summary">.*?</section>', html, re.S).group(0)
    rows = re.findall(r"<tr>(<td.*?)</tr>", section)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row)[column] for row in rows]


@pytest.mark.parametrize("name", list(OTHER_METHODS))
def test_scores_and_explained_variance(image_fits, name):
    fit = image_fits[name]
    est = fit.model.estimator_
    # scores: the estimator's transform of the training data
    r = _inputs_of(est, fit.model.space_, scores=fit.scores)
    np.testing.assert_allclose(r.scores, est.transform(fit.X), rtol=1e-12, atol=1e-12)
    assert r.n_samples == 12 and r.scores_transformed
    assert "transform of the training data" in _section_text(fit.html, "scores")
    assert _page_text(fit.html).count("samples 12") >= 1
    # explained variance: the estimator's ratio, itself Zou's adjusted variance
    cells = _components_column(fit.html)
    evr = getattr(est, "explained_variance_ratio_", None)
    note = _section_text(fit.html, "variance")
    assert "models fitted by a current SPCATV" not in note
    if evr is None:
        assert cells == ["nan"] * len(cells) and "stores no explained variance" in note
        return
    assert cells == [f"{100 * v:.2f}" for v in evr]
    assert f"Total: {100 * np.sum(evr):.2f} %" in note
    centred = "the total variance of the centred data" in note
    assert centred == (name != "dictionary")
    if centred:
        direct = _direct_ratio(fit.X, est.components_)
        np.testing.assert_allclose(evr, direct, rtol=1e-6, atol=1e-12)


def test_given_scores_are_checked(tiny):
    model = tiny["sspca"]
    X = tiny["X"]
    with pytest.raises(ValueError, match="scores must have shape"):
        make_report(model, scores=np.zeros((24, 3)))
    with pytest.raises(ValueError, match="finite"):
        make_report(model, scores=np.full((24, 2), np.nan))
    with pytest.raises(TypeError, match="scores must be an array"):
        make_report(model, scores=[["a", "b"]])
    r = _inputs_of(model, scores=model.transform(X))
    assert r.n_samples == 24 and _sections.scores_section(r) is not None
    r = _inputs_of(tiny["spcatv"], scores=np.ones((24, 2)))  # SPCA-TV's own scores win
    np.testing.assert_allclose(r.scores, component_scores(tiny["spcatv"]))


def test_pca_variance_note_is_spcatv_only(tiny):
    import copy

    old = copy.copy(tiny["spcatv"])
    del old.pca_explained_variance_ratio_  # a model saved before it existed
    note = _sections.variance_section(_inputs_of(old))["note"]
    assert "models fitted by a current SPCATV do" in note
    note = _sections.variance_section(_inputs_of(tiny["nspca"]))["note"]
    assert "SPCATV" not in note and "not computed by NonnegativeSparsePCA" in note


def test_surface_page_of_another_estimator():
    import warnings

    from neurospca import ImageSPCATV
    from neurospca.surface import icosphere

    nilearn_surface = pytest.importorskip("nilearn.surface")
    rng = np.random.default_rng(4)
    coords, faces = icosphere(2)
    mesh = nilearn_surface.PolyMesh(
        left=nilearn_surface.InMemoryMesh(coords, faces),
        right=nilearn_surface.InMemoryMesh(coords + [3.0, 0, 0], faces),
    )
    pattern = np.exp(-((coords - coords[0]) ** 2).sum(1))
    data = {
        h: np.outer(pattern, rng.standard_normal(12)) + 0.1 * rng.standard_normal((162, 12))
        for h in ("left", "right")
    }
    img = nilearn_surface.SurfaceImage(mesh=mesh, data=data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ImageSPCATV(
            estimator=NonnegativeSparsePCA(2, n_init=1, max_iter=30, random_state=0)
        ).fit(img)
    html = model.generate_report().html
    assert "<p>Nonnegative sparse PCA (Zass and Shashua) &middot;" in html
    assert "The data held 12 samples and 324 vertices" in _section_text(html, "methods")
    cells = _components_column(html)
    assert cells == [f"{100 * v:.2f}" for v in model.estimator_.explained_variance_ratio_]
    np.testing.assert_allclose(
        model.estimator_.explained_variance_ratio_,
        _direct_ratio(np.concatenate([data["left"], data["right"]]).T, model.components_),
        rtol=1e-6,
    )


@pytest.mark.parametrize("name", list(OTHER_METHODS))
def test_whole_fit_warning_and_loadings_note(image_fits, name):
    est = image_fits[name].model.estimator_
    r = _inputs_of(est)
    warned = any(
        "The fit did not converge" in w
        for w in _sections.components_section(r, _facts(r))["warnings"]
    )
    conv = getattr(est, "converged_", None)
    assert warned == (conv is not None and not bool(conv))
    norms = np.linalg.norm(est.components_, axis=1)
    unit = np.allclose(norms[norms > 0], 1.0, rtol=1e-6)
    note = _sections.loadings_section(r, _facts(r), [None] * r.n_components)["note"]
    assert note.startswith("Unit-norm loadings" if unit else "Loadings as fitted (not unit-norm)")


def test_whole_fit_warning_of_a_fit_that_did_not_converge(image_fits):
    from sklearn.exceptions import ConvergenceWarning

    model = NonnegativeSparsePCA(2, n_init=1, max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning):  # two sweeps: not converged
        model.fit(np.abs(image_fits["nspca"].X))
    assert not model.converged_
    r = _inputs_of(model)
    warnings_ = _sections.components_section(r, _facts(r))["warnings"]
    assert "The fit did not converge (its stopping rule was not met in 2 iterations)" in " ".join(
        warnings_
    )
