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
    assert label == "split-half reproducibility"
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
    assert "estimated with NonnegativeSparsePCA" in section["text"]
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
    assert f"Components were estimated with {type(tiny[name]).__name__}" in text
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
