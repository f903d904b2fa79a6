"""Cohort studies end to end on real files: ImageSPCATV.fit(participants=...), the
command line's --participants/--confounds/--harmonize/--groups/--covariates/--atlas,
scores.csv and associations.tsv, the report's section, load_surface_image globs."""

import csv
import glob
import os

import nibabel as nib
import numpy as np
import pandas as pd
import pytest

from neurospca import ImageSPCATV, load_model, load_surface_image, write_surf_data, write_surf_mesh
from neurospca.cli import main

N = 36


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """N subjects on a small grid, 3 sites (offsets), blob A driven by dx, blob B not,
    an age effect everywhere; participants.tsv shuffled with one extra row."""
    root = tmp_path_factory.mktemp("cohort")
    rng = np.random.default_rng(0)
    shape = (12, 12, 10)
    affine = np.diag([4.0, 4.0, 4.0, 1.0])
    mask = np.zeros(shape, dtype=bool)
    mask[1:11, 1:11, 1:9] = True
    nib.Nifti1Image(mask.astype(np.uint8), affine).to_filename(root / "mask.nii.gz")
    grid = np.indices(shape).transpose(1, 2, 3, 0)
    blob_a = np.exp(-((grid - [3, 3, 4]) ** 2).sum(-1) / 3.0)
    blob_b = np.exp(-((grid - [8, 8, 4]) ** 2).sum(-1) / 3.0)
    dx = np.tile(["CN", "AD"], N // 2)
    site = np.repeat(["A", "B", "C"], N // 3)
    age = np.round(rng.uniform(55, 85, N), 1)
    sex = rng.choice(["F", "M"], N)
    offset = {"A": -0.5, "B": 0.0, "C": 0.5}
    for i in range(N):
        data = (
            (2.0 * (dx[i] == "AD") + 0.5 * rng.standard_normal()) * blob_a
            + 1.5 * rng.standard_normal() * blob_b
            + 0.03 * (age[i] - 70)
            + offset[site[i]]
            + 0.2 * rng.standard_normal(shape)
        )
        nib.Nifti1Image(data.astype(np.float32), affine).to_filename(
            root / f"sub-{i:02d}_thickness.nii.gz"
        )
    table = pd.DataFrame(
        {
            "participant_id": [f"sub-{i:02d}" for i in range(N)] + ["sub-99"],
            "age": list(age) + [70.0],
            "sex": list(sex) + ["F"],
            "site": list(site) + ["A"],
            "dx": list(dx) + ["CN"],
            "mmse": list(np.where(dx == "AD", 22, 29) + rng.integers(-2, 2, N)) + [29],
        }
    )
    table.sample(frac=1.0, random_state=3).to_csv(root / "participants.tsv", sep="\t", index=False)
    atlas = np.zeros(shape, dtype=np.int16)
    atlas[:6] = 1
    atlas[6:] = 2
    nib.Nifti1Image(atlas, affine).to_filename(root / "atlas.nii.gz")
    return root, dx, age


def _model():
    return ImageSPCATV(
        2, alpha_rel=1.0, tol=1e-2, stability=False, method="deflation", random_state=0
    )


def test_fit_with_participants(cohort):
    root, dx, age = cohort
    imgs = str(root / "sub-*_thickness.nii.gz")
    model = _model().fit(
        imgs,
        participants=root / "participants.tsv",
        confounds=["age", "sex"],
        harmonize="site",
        groups=["dx"],
        covariates=["mmse"],
        n_permutations=199,
    )
    assert list(model.participant_ids_) == [f"sub-{i:02d}" for i in range(N)]
    table = model.associations_
    assert isinstance(table, pd.DataFrame) and len(table) == 4
    by_dx = table[table.variable == "dx"].set_index("component")
    # blob A (dx-driven) is one component, blob B the other
    assert by_dx.p_corrected.min() == pytest.approx(1 / 200)
    assert by_dx.p_corrected.max() > 0.05
    # age was regressed out: the scores no longer follow it
    scores = model.transform(imgs, participants=root / "participants.tsv")
    assert np.all(np.abs([np.corrcoef(scores[:, k], age)[0, 1] for k in range(2)]) < 0.3)
    html = str(model.generate_report(title="cohort"))
    assert "Scores and participants" in html and "Kruskal-Wallis" in html
    assert "one-hot, reference &#39;F&#39;" in html


def test_transform_of_held_out_subjects_uses_training_parameters(cohort):
    root, _, _ = cohort
    paths = sorted(glob.glob(str(root / "sub-*_thickness.nii.gz")))
    train, test = paths[:30], paths[30:]
    model = _model().fit(
        train, participants=root / "participants.tsv", confounds=["age"], harmonize="site"
    )
    combat = {k: np.array(v, copy=True) for k, v in model.study_.combat_.items()}
    together = model.transform(test, participants=root / "participants.tsv")
    alone = np.vstack([model.transform([p], participants=root / "participants.tsv") for p in test])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-10)
    for k, v in combat.items():
        np.testing.assert_array_equal(model.study_.combat_[k], v)
    with pytest.raises(ValueError, match="participants: this model harmonised sites"):
        model.transform(test)
    # score sees the same adjusted data: better with the adjustments than without
    adjusted = model.score(test, participants=root / "participants.tsv")
    raw = float(model.estimator_.score(model._data(test, None)))
    assert adjusted > raw


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"confounds": ["age", "weight"]}, "confounds: unknown column 'weight'"),
        ({"covariates": ["sex"]}, "covariates: column 'sex' is not numeric"),
        (
            {"groups": ["dx"], "subset": 3},
            r"participants: 1 of 4 image\(s\) have no row .*"
            "'sub-77'",
        ),
        ({"groups": ["dx"], "rename": True}, "participants: no image matches a row"),
        ({"harmonize": "site", "lone": True}, r"harmonize: column 'site': site\(s\) \['Z'\]"),
        ({"harmonize": "site", "memory": True}, "participants: cannot tell which subject"),
    ],
)
def test_fit_bad_participants(cohort, tmp_path, kwargs, message):
    root, _, _ = cohort
    paths = sorted(glob.glob(str(root / "sub-*_thickness.nii.gz")))
    table = pd.read_csv(root / "participants.tsv", sep="\t")
    imgs = paths
    if kwargs.pop("subset", None):
        imgs = paths[:3] + [str(tmp_path / "sub-77_thickness.nii.gz")]
        nib.load(paths[0]).to_filename(imgs[-1])
    if kwargs.pop("rename", False):
        table["participant_id"] = [f"subject{i}" for i in range(len(table))]
    if kwargs.pop("lone", False):
        table.loc[table.participant_id == "sub-00", "site"] = "Z"
    if kwargs.pop("memory", False):
        imgs = nib.concat_images([nib.load(p) for p in paths])
    with pytest.raises(ValueError, match=message):
        _model().fit(imgs, participants=table, **kwargs)
    with pytest.raises(ValueError, match="participants: harmonize, groups"):
        _model().fit(paths, groups=["dx"])


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------


def _argv(root, out, *extra):
    return [
        "fit",
        "--images",
        str(root / "sub-*_thickness.nii.gz"),
        "--mask",
        str(root / "mask.nii.gz"),
        "--output",
        str(out),
        "--alpha-rel",
        "1",
        "--n-components",
        "2",
        "--tol",
        "1e-2",
        "--max-iter",
        "50",
        "-q",
        *extra,
    ]


def test_command_line_cohort(cohort, tmp_path, capsys):
    root, dx, _ = cohort
    out = tmp_path / "out"
    code = main(
        _argv(
            root,
            out,
            "--participants",
            str(root / "participants.tsv"),
            "--confounds",
            "age,sex",
            "--harmonize",
            "site",
            "--groups",
            "dx",
            "--covariates",
            "mmse",
            "--n-permutations",
            "199",
            "--atlas",
            str(root / "atlas.nii.gz"),
        )
    )
    assert code == 0, capsys.readouterr().err
    with open(out / "scores.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0][0] == "participant_id"
    assert [r[0] for r in rows[1:]] == [f"sub-{i:02d}" for i in range(N)]
    table = pd.read_csv(out / "associations.tsv", sep="\t")
    assert list(table.columns)[:4] == ["component", "variable", "test", "statistic"]
    assert set(table.variable) == {"dx", "mmse"} and len(table) == 4
    assert table[table.variable == "dx"].p_corrected.min() == pytest.approx(1 / 200)
    html = (out / "report.html").read_text()
    assert "Scores and participants" in html and "atlas" in html.lower()
    saved = load_model(out / "model.npz")
    assert list(saved.study["participant_ids"])[:2] == ["sub-00", "sub-01"]
    # the report of the saved model shows the groups again, with --atlas
    report = tmp_path / "again.html"
    assert (
        main(
            [
                "report",
                str(out / "model.npz"),
                "--output",
                str(report),
                "-q",
                "--atlas",
                str(root / "atlas.nii.gz"),
            ]
        )
        == 0
    )
    assert "Scores and participants" in report.read_text()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--confounds", "age,weight"], "--confounds: unknown column 'weight'"),
        (["--covariates", "sex"], "--covariates: column 'sex' is not numeric"),
        (
            ["--groups", "dx", "--participant-id", "subject"],
            "--participants: no ID column 'subject'",
        ),
    ],
)
def test_command_line_bad_participants(cohort, tmp_path, capsys, extra, message):
    root, _, _ = cohort
    code = main(
        _argv(root, tmp_path / "o", "--participants", str(root / "participants.tsv"), *extra)
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert not (tmp_path / "o").exists()


def test_command_line_options_need_participants(cohort, tmp_path, capsys):
    root, _, _ = cohort
    assert main(_argv(root, tmp_path / "o", "--groups", "dx")) == 2
    assert "--groups needs --participants" in capsys.readouterr().err
    assert main(_argv(root, tmp_path / "o", "--atlas", "a.nii", "b.nii")) == 2
    assert "--atlas" in capsys.readouterr().err


# --------------------------------------------------------------------------
# load_surface_image takes globs
# --------------------------------------------------------------------------


def test_load_surface_image_globs(tmp_path):
    from neurospca.surface import icosphere

    coords, faces = icosphere(2)
    write_surf_mesh(coords, faces, tmp_path / "lh.surf.gii")
    rng = np.random.default_rng(0)
    for i in range(3):
        for hemi in ("lh", "rh"):
            (tmp_path / f"sub-{i}" / "surf").mkdir(parents=True, exist_ok=True)
            write_surf_data(
                rng.standard_normal(coords.shape[0]) + i,
                tmp_path / f"sub-{i}" / "surf" / f"{hemi}.thickness.mgh",
            )
    img = load_surface_image(
        str(tmp_path / "sub-*/surf/lh.thickness.mgh"),
        [str(tmp_path / "sub-*/surf/rh.thickness.mgh")],
        str(tmp_path / "lh.surf.gii"),
        str(tmp_path / "lh.surf.gii"),
    )
    left = np.asarray(img.data.parts["left"])
    assert left.shape == (coords.shape[0], 3)
    np.testing.assert_allclose(left.mean(0), [0, 1, 2], atol=0.3)  # sorted order
    with pytest.raises(ValueError, match="left_data: the pattern .* matches no file"):
        load_surface_image(
            str(tmp_path / "nope-*/lh.mgh"),
            str(tmp_path / "x"),
            str(tmp_path / "lh.surf.gii"),
            str(tmp_path / "lh.surf.gii"),
        )


# --------------------------------------------------------------------------
# the report's section in a browser
# --------------------------------------------------------------------------

EVIL = "<script>alert('pwned')</script>"


@pytest.mark.browser
def test_participants_section_in_chromium(browser, cohort, tmp_path):
    """The section renders offline: no console error, no request leaving the file, every
    figure decodes, the association table and one figure per component are laid out,
    and a group label holding <script> is text."""
    root, _, _ = cohort
    table = pd.read_csv(root / "participants.tsv", sep="\t")
    table["dx"] = table["dx"].replace({"AD": f"AD {EVIL}"})
    model = _model().fit(
        str(root / "sub-*_thickness.nii.gz"),
        participants=table,
        groups=["dx"],
        covariates=["mmse"],
        n_permutations=99,
    )
    path = tmp_path / "report.html"
    model.generate_report(title="cohort").save_as_html(path)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    console, requests, dialogs = [], [], []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    url = "file://" + str(path)
    page.goto(url)
    page.wait_for_load_state("load")
    parts = page.evaluate("""() => {
        const s = document.querySelector('#participants');
        return {rows: s.querySelectorAll('table.associations tr').length,
                images: Array.from(s.querySelectorAll('img')).map(
                    i => [i.complete && i.naturalWidth > 0, i.getBoundingClientRect().width]),
                text: s.innerText,
                nav: !!document.querySelector('nav a[href="#participants"]')};
    }""")
    page.close()
    assert not [c for c in console if c[0] in ("error", "pageerror", "warning")], console
    assert not [u for u in requests if u != url and not u.startswith("data:")], requests
    assert not dialogs
    assert parts["nav"] and parts["rows"] == 1 + 2 * 2  # header + 2 components x 2 variables
    assert len(parts["images"]) == 2 and all(ok and w > 300 for ok, w in parts["images"])
    assert "Kruskal-Wallis" in parts["text"] and "Westfall-Young" in parts["text"]


def test_text_confounds_without_participants_say_what_to_do(cohort):
    root, _, _ = cohort
    paths = sorted(glob.glob(str(root / "sub-*_thickness.nii.gz")))[:6]
    table = pd.read_csv(root / "participants.tsv", sep="\t").iloc[:6]
    for confounds in (root / "participants.tsv", table[["age", "sex"]]):
        with pytest.raises(
            ValueError, match="confounds: column '(participant_id|sex)' is text.*participants=TABLE"
        ):
            _model().fit(paths, confounds=confounds)


# --------------------------------------------------------------------------
# n_components="auto": parallel analysis
# --------------------------------------------------------------------------


def test_parallel_analysis_counts_planted_components():
    from neurospca.model_selection import parallel_analysis

    rng = np.random.default_rng(0)
    n, p = 80, 1500
    noise = rng.standard_normal((n, p))
    k, evidence = parallel_analysis(noise)
    assert k == 1 and "none of the first" in evidence["rule"]
    for rank in (2, 4):
        signal = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, p))
        k, evidence = parallel_analysis(0.5 * signal + noise)
        assert k == rank, evidence
        assert np.all(np.array(evidence["observed"][:rank]) > evidence["null"][:rank])
    with pytest.raises(ValueError, match="quantile must be in"):
        parallel_analysis(noise, quantile=1.0)
    # spatially smooth noise: Horn's column permutations keep every rank, the null with
    # the effective number of features none
    from scipy.ndimage import gaussian_filter1d

    smooth = gaussian_filter1d(rng.standard_normal((n, p)), 10, axis=1)
    assert parallel_analysis(smooth, null="permutation")[0] >= 20
    k, evidence = parallel_analysis(smooth)
    assert k == 1 and "none of the first" in evidence["rule"], evidence["rule"]
    assert parallel_analysis(noise, null="permutation")[0] == 1


def test_n_components_auto_python_and_command_line(cohort, tmp_path, capsys):
    root, _, _ = cohort
    imgs = str(root / "sub-*_thickness.nii.gz")
    model = ImageSPCATV(
        "auto", alpha_rel=1.0, tol=1e-2, stability=False, method="deflation", random_state=0
    )
    model.fit(
        imgs, participants=root / "participants.tsv", confounds=["age", "sex"], harmonize="site"
    )
    # two planted blobs (A driven by dx, B random) once sites and confounds are removed
    assert model.n_components_ == 2 and model.components_.shape[0] == 2
    assert "parallel analysis" in model.n_components_evidence_["rule"]
    assert "Number of components" in str(model.generate_report())
    out = tmp_path / "auto"
    argv = _argv(
        root,
        out,
        "--participants",
        str(root / "participants.tsv"),
        "--confounds",
        "age,sex",
        "--harmonize",
        "site",
    )
    argv[argv.index("--n-components") + 1] = "auto"
    assert main(argv) == 0, capsys.readouterr().err
    assert "Number of components" in (out / "report.html").read_text()
    saved = load_model(out / "model.npz")
    assert saved.estimator.n_components == 2
    assert saved.metadata["n_components_evidence"]["n_components"] == 2


# --------------------------------------------------------------------------
# inputs as pipelines write them
# --------------------------------------------------------------------------


def _ico_study(root, layout, n=12):
    """Per-subject maps on an icosphere in a BIDS-derivatives or FreeSurfer layout, and
    participants.tsv (sites, dx driving one patch)."""
    from neurospca.surface import icosphere

    coords, faces = icosphere(3)
    rng = np.random.default_rng(1)
    patch = np.exp(-((coords - coords[0]) ** 2).sum(1) / 0.1)
    ids, dx = [f"sub-{i:02d}" for i in range(n)], np.tile(["CN", "AD"], n // 2)
    for i, sid in enumerate(ids):
        for hemi, letter in (("lh", "L"), ("rh", "R")):
            values = (
                (dx[i] == "AD") * 1.0 + 0.3 * rng.standard_normal()
            ) * patch + 0.1 * rng.standard_normal(coords.shape[0])
            if layout == "bids":
                path = (
                    root
                    / sid
                    / "ses-1"
                    / "anat"
                    / f"{sid}_ses-1_hemi-{letter}_space-ico3_thickness.shape.gii"
                )
            else:
                path = root / sid / "surf" / f"{hemi}.thickness.fwhm10.ico3.mgh"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_surf_data(values, path)
    if layout == "bids":
        (
            root / "sub-00" / "ses-1" / "anat" / "sub-00_ses-1_hemi-L_space-other_"
            "thickness.shape.gii"
        ).write_bytes(b"")  # another space: not picked up
    (root / "ico3" / "surf").mkdir(parents=True)
    (root / "fsaverage" / "surf").mkdir(parents=True)  # a template subject: left out
    for hemi in ("lh", "rh"):
        write_surf_mesh(coords, faces, root / "ico3" / "surf" / f"{hemi}.pial")
    pd.DataFrame({"participant_id": ids, "dx": dx}).to_csv(
        root / "participants.tsv", sep="\t", index=False
    )
    return ids


def test_find_bids_derivatives_and_freesurfer_subjects(tmp_path):
    from neurospca.study import find_bids_derivatives, find_freesurfer_subjects

    ids = _ico_study(tmp_path / "bids", "bids")
    kind, files, found = find_bids_derivatives(tmp_path / "bids", "ico3", "thickness")
    assert kind == "surface" and found == ids and len(files["right"]) == len(ids)
    assert all("hemi-L" in p and "space-ico3" in p for p in files["left"])
    with pytest.raises(ValueError, match="--bids-derivatives: no file named"):
        find_bids_derivatives(tmp_path / "bids", "fsaverage5", "thickness")
    os.remove(files["right"][3])
    with pytest.raises(ValueError, match=r"subject\(s\) \['sub-03'\] have one hemisphere"):
        find_bids_derivatives(tmp_path / "bids", "ico3", "thickness")
    ids = _ico_study(tmp_path / "fs", "fs")
    files, found = find_freesurfer_subjects(tmp_path / "fs", "thickness.fwhm10.ico3")
    assert found == ids and files["left"][0].endswith("lh.thickness.fwhm10.ico3.mgh")


@pytest.mark.parametrize("layout", ["bids", "fs"])
def test_command_line_pipeline_layouts(tmp_path, capsys, layout):
    root = tmp_path / layout
    ids = _ico_study(root, layout)
    source = (
        [
            "--bids-derivatives",
            str(root),
            "--space",
            "ico3",
            "--suffix",
            "thickness",
            "--left-mesh",
            str(root / "ico3" / "surf" / "lh.pial"),
            "--right-mesh",
            str(root / "ico3" / "surf" / "rh.pial"),
        ]
        if layout == "bids"
        else ["--freesurfer-subjects", str(root), "--measure", "thickness.fwhm10.ico3"]
    )
    out = tmp_path / "out"
    code = main(
        [
            "fit",
            *source,
            "--participants",
            str(root / "participants.tsv"),
            "--groups",
            "dx",
            "--n-permutations",
            "99",
            "--output",
            str(out),
            "--n-components",
            "1",
            "--alpha-rel",
            "1",
            "--tol",
            "1e-2",
            "-q",
            "--engine",
            "matplotlib",
        ]
    )
    assert code == 0, capsys.readouterr().err
    with open(out / "scores.csv") as fh:
        assert [r[0] for r in csv.reader(fh)] == ["participant_id"] + ids
    table = pd.read_csv(out / "associations.tsv", sep="\t")
    assert table.p_corrected.iloc[0] <= 0.05  # the dx-driven patch (6 vs 6 subjects)
