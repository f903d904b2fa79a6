"""The ``neurospca`` command on real files: outputs, exit codes, clear errors, atomic runs."""

import csv
import os
import subprocess
import sys

import nibabel as nib
import numpy as np
import pytest

from neurospca import (
    Hemispheres,
    VolumeMasker,
    load_model,
    load_surf_data,
    load_surf_mesh,
    write_surf_data,
)
from neurospca.cli import main

N_VOL = 12
N_SURF = 8


@pytest.fixture(scope="module")
def volume_files(tmp_path_factory):
    """A small mask and N_VOL subject maps with one blob, written with nibabel."""
    root = tmp_path_factory.mktemp("vol")
    rng = np.random.default_rng(0)
    shape = (12, 14, 11)
    affine = np.diag([4.0, 4.0, 4.0, 1.0])
    affine[:3, 3] = [-24, -30, -20]
    mask = np.zeros(shape, dtype=bool)
    mask[2:10, 2:12, 2:9] = True
    nib.Nifti1Image(mask.astype(np.uint8), affine).to_filename(root / "mask.nii.gz")
    grid = np.indices(shape).transpose(1, 2, 3, 0)
    blob = np.exp(-((grid - [5, 6, 5]) ** 2).sum(-1) / 4.0)
    paths = []
    for i in range(N_VOL):
        data = 3 * rng.standard_normal() * blob + 0.3 * rng.standard_normal(shape)
        path = root / f"sub-{i:02d}.nii.gz"
        nib.Nifti1Image(data.astype(np.float32), affine).to_filename(path)
        paths.append(str(path))
    return root, paths


@pytest.fixture(scope="module")
def surface_files(tmp_path_factory):
    """fsaverage5 pial/inflated GIFTI meshes, per-subject .mgh maps, .annot cortex labels."""
    from nilearn.datasets import load_fsaverage

    from neurospca import write_surf_mesh

    root = tmp_path_factory.mktemp("surf")
    fs = load_fsaverage("fsaverage5")
    rng = np.random.default_rng(0)
    for hemi, short in (("left", "lh"), ("right", "rh")):
        for kind in ("pial", "inflated"):
            m = fs[kind].parts[hemi]
            write_surf_mesh(m.coordinates, m.faces, root / f"{short}.{kind}.gii")
        coords = fs["pial"].parts[hemi].coordinates
        n = coords.shape[0]
        blob = np.exp(-((coords - coords[100]) ** 2).sum(1) / (2 * 15.0**2))
        for i in range(N_SURF):
            values = 2.5 + 1.0 * rng.standard_normal() * blob + 0.2 * rng.standard_normal(n)
            write_surf_data(values, root / f"sub-{i:02d}_{short}.thickness.mgh")
        labels = np.where(coords[:, 2] < -40, 0, 1).astype(np.int32)  # a fake medial wall
        ctab = np.array([[25, 5, 25, 0, 0], [220, 20, 10, 0, 0]], dtype=np.int32)
        nib.freesurfer.write_annot(
            str(root / f"{short}.aparc.annot"),
            labels,
            ctab,
            [b"unknown", b"cortex"],
            fill_ctab=True,
        )
        # the same in FreeSurfer's own formats: geometry, curv morphometry, .label
        write_surf_mesh(
            fs["white_matter"].parts[hemi].coordinates,
            fs["white_matter"].parts[hemi].faces,
            root / f"{short}.white",
        )
        for i in range(N_SURF):
            values = np.asarray(load_surf_data(root / f"sub-{i:02d}_{short}.thickness.mgh"))
            (root / f"sub-{i:02d}").mkdir(exist_ok=True)
            write_surf_data(values, root / f"sub-{i:02d}" / f"{short}.thickness")
        kept = np.flatnonzero(labels == 1)
        with open(root / f"{short}.cortex.label", "w") as fh:
            fh.write(f"#!ascii label, from subject fsaverage5\n{kept.size}\n")
            for v in kept:
                x, y, z = coords[v]
                fh.write(f"{v} {x:.3f} {y:.3f} {z:.3f} 0.0000000000\n")
    return root


def _surface_args(root, out, n_subjects=N_SURF):
    args = ["fit"]
    for hemi, short in (("left", "lh"), ("right", "rh")):
        args += [
            f"--{hemi}-mesh",
            str(root / f"{short}.pial.gii"),
            f"--{hemi}-plot-mesh",
            str(root / f"{short}.inflated.gii"),
            f"--{hemi}-data",
        ]
        args += [str(root / f"sub-{i:02d}_{short}.thickness.mgh") for i in range(n_subjects)]
    # explicit penalties: one blob, so the second component is weak (not a test of defaults)
    return args + [
        "--output",
        str(out),
        "--n-components",
        "2",
        "--tol",
        "1e-2",
        "--engine",
        "matplotlib",
        "--alpha-rel",
        "0.5",
    ]


def _volume_args(root, paths, out):
    # explicit penalties: one blob, so the second component is weak (not a test of defaults)
    return [
        "fit",
        "--images",
        *paths,
        "--mask",
        str(root / "mask.nii.gz"),
        "--bg-img",
        str(root / "mask.nii.gz"),
        "--output",
        str(out),
        "--alpha-rel",
        "0.5",
        "--n-components",
        "2",
        "--tol",
        "1e-2",
    ]


def _error(capsys, argv):
    """Run main, expect exit code 2 and a single clear line on stderr."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and err.splitlines()[-1] == errors[0], err
    return errors[0]


# --------------------------------------------------------------------------
# help
# --------------------------------------------------------------------------


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "neurospca demo" in out and "neurospca report" in out
    for command, flags in (
        (
            "fit",
            (
                "--images",
                "--left-mesh",
                "--alpha",
                "--l1-ratio",
                "--tv-ratio",
                "--n-components",
                "--tol",
                "--solver",
                "--left-cortex",
            ),
        ),
        ("demo", ("--output",)),
        ("report", ("MODEL",)),
    ):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = capsys.readouterr().out
        for flag in flags:
            assert flag in out, (command, flag)


def test_n_threads_option_reaches_the_estimator(capsys):
    from neurospca._commands import estimator_from_args
    from neurospca.cli import _build_parser

    args = _build_parser().parse_args(
        ["fit", "--images", "a.nii", "--mask", "m.nii", "--n-threads", "1", "-q"]
    )
    assert estimator_from_args(args).n_threads == 1
    args = _build_parser().parse_args(["fit", "--images", "a.nii", "--mask", "m.nii", "-q"])
    assert estimator_from_args(args).n_threads is None
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--images", "a.nii", "--mask", "m.nii", "--n-threads", "0"])
    assert exc.value.code == 2 and "--n-threads" in capsys.readouterr().err


# --------------------------------------------------------------------------
# volumes
# --------------------------------------------------------------------------


def test_fit_volume_writes_everything(volume_files, tmp_path, capsys):
    root, paths = volume_files
    out = tmp_path / "results"
    assert main(_volume_args(root, paths, out) + ["--title", "Vol <i>study</i>"]) == 0
    captured = capsys.readouterr()
    assert "component 1/2 done" in captured.err and "component 2/2 done" in captured.err
    # the fitted penalty, its split included ("auto" at a fixed alpha_rel: the default split)
    assert "(0.5 x l1_max), l1_ratio = 0.05, tv_ratio = 0.1)" in captured.out + captured.err
    assert sorted(os.listdir(out)) == ["loadings.nii.gz", "model.npz", "report.html", "scores.csv"]
    saved = load_model(out / "model.npz")
    assert isinstance(saved.space, VolumeMasker)
    assert saved.metadata["title"] == "Vol <i>study</i>"
    assert saved.metadata["sample_labels"] == [os.path.basename(p) for p in paths]
    img = nib.load(out / "loadings.nii.gz")
    assert img.shape == (12, 14, 11, 2)
    np.testing.assert_array_equal(img.get_fdata()[saved.space.mask], saved.estimator.components_.T)
    with open(out / "scores.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["sample", "component_1", "component_2"]
    assert [r[0] for r in rows[1:]] == [os.path.basename(p) for p in paths]
    scores = np.array([[float(x) for x in r[1:]] for r in rows[1:]])
    np.testing.assert_allclose(
        scores, saved.estimator.scores_ * saved.estimator.singular_values_, rtol=1e-9
    )
    html = (out / "report.html").read_text()
    assert "Vol &lt;i&gt;study&lt;/i&gt;" in html and "<i>study" not in html
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no temp folder left

    # the report command rebuilds the report from the saved model
    # (the fit's --bg-img is kept in the metadata as text only: never opened again)
    assert saved.metadata["bg_img"] == str(root / "mask.nii.gz")
    assert (
        main(["report", str(out / "model.npz"), "--output", str(tmp_path / "again.html"), "-q"])
        == 0
    )
    again = (tmp_path / "again.html").read_text()
    assert "Vol &lt;i&gt;study&lt;/i&gt;" in again and again.count('alt="Component ') == 2


def test_fit_volume_with_glob_and_existing_output(volume_files, tmp_path):
    root, _ = volume_files
    out = tmp_path / "existing"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    args = [
        "fit",
        "--images",
        str(root / "sub-*.nii.gz"),
        "--mask",
        str(root / "mask.nii.gz"),
        "--bg-img",
        str(root / "mask.nii.gz"),
        "--output",
        str(out),
        "--n-components",
        "1",
        "--tol",
        "1e-2",
        "--alpha",
        "0.3",
        "--l1-ratio",
        "0.1",
        "--tv-ratio",
        "0.3",
        "-q",
    ]
    assert main(args) == 0
    assert sorted(os.listdir(out)) == [
        "loadings.nii.gz",
        "model.npz",
        "notes.txt",
        "report.html",
        "scores.csv",
    ]
    saved = load_model(out / "model.npz")
    assert saved.estimator.alpha == 0.3 and saved.estimator.l1_ratio == 0.1
    assert len(saved.metadata["sample_labels"]) == N_VOL


def test_volume_errors(volume_files, tmp_path, capsys):
    root, paths = volume_files
    mask = str(root / "mask.nii.gz")
    out = str(tmp_path / "o")
    err = _error(capsys, ["fit", "--images", str(tmp_path / "nope.nii.gz"), "--mask", mask])
    assert "--images" in err and "no such file" in err
    err = _error(capsys, ["fit", "--images", str(tmp_path / "x*.nii.gz"), "--mask", mask])
    assert "--images" in err and "matches no file" in err
    err = _error(capsys, ["fit", "--images", *paths, "--mask", str(tmp_path / "m.nii")])
    assert "--mask" in err and "no such file" in err
    err = _error(capsys, ["fit", "--images", *paths, "--mask", mask, "--bg-img", "t1.nii"])
    assert "--bg-img" in err and "no such file" in err
    err = _error(capsys, ["fit", "--images", *paths])
    assert "--mask is required" in err
    err = _error(capsys, ["fit", "--mask", mask])
    assert "--images is required" in err
    err = _error(capsys, ["fit"])
    assert "--images" in err and "--left-mesh" in err
    # an image on another grid than the mask
    odd = tmp_path / "odd.nii.gz"
    nib.Nifti1Image(np.zeros((5, 5, 5), np.float32), np.eye(4)).to_filename(odd)
    err = _error(capsys, ["fit", "--images", *paths[:3], str(odd), "--mask", mask, "--output", out])
    assert "--images/--mask" in err and "shape (5, 5, 5)" in err and "resample" in err
    # penalties and sizes
    err = _error(capsys, _volume_args(root, paths, out) + ["--alpha", "-1"])
    assert "--alpha" in err and "> 0" in err
    err = _error(
        capsys, _volume_args(root, paths, out) + ["--l1-ratio", "0.6", "--tv-ratio", "0.5"]
    )
    assert "--l1-ratio + --tv-ratio must be < 1" in err
    err = _error(capsys, _volume_args(root, paths, out) + ["--l1-ratio", "1.5"])
    assert "--l1-ratio" in err
    err = _error(capsys, _volume_args(root, paths, out)[:-4] + ["--n-components", "50"])
    assert "--n-components" in err
    err = _error(capsys, _volume_args(root, paths, out) + ["--solver", "magic"])
    assert "--solver" in err
    # the output is a file
    (tmp_path / "file").write_text("x")
    err = _error(capsys, _volume_args(root, paths, tmp_path / "file"))
    assert "--output" in err and "not a folder" in err
    assert not os.path.exists(out)


def test_report_errors(tmp_path, capsys):
    err = _error(capsys, ["report", str(tmp_path / "model.npz")])
    assert "MODEL" in err and "no such file" in err
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 truncated")
    err = _error(capsys, ["report", str(bad)])
    assert "MODEL" in err and "not a readable neurospca model" in err
    assert not (tmp_path / "report.html").exists()


def test_command_line_process_exit_code(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "neurospca.cli",
            "fit",
            "--images",
            str(tmp_path / "missing.nii.gz"),
            "--mask",
            "mask.nii.gz",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"neurospca: error: --images: no such file '{tmp_path / 'missing.nii.gz'}'."
    ]


# --------------------------------------------------------------------------
# interrupted runs leave no partial report or model
# --------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["fit", "save_model", "plot"])
def test_interrupted_run_leaves_nothing(volume_files, tmp_path, monkeypatch, capsys, where):
    import neurospca.persistence as persistence
    import neurospca.reporting.report as report_mod
    from neurospca import SPCATV

    root, paths = volume_files

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    if where == "fit":
        monkeypatch.setattr(SPCATV, "fit", interrupt)
    elif where == "plot":
        monkeypatch.setattr(report_mod.plotting, "plot_volume_component", interrupt)
    else:
        monkeypatch.setattr(persistence, "save_model", interrupt)
    out = tmp_path / "fresh"
    assert main(_volume_args(root, paths, out)) == 130
    assert "interrupted" in capsys.readouterr().err
    assert not out.exists()
    assert os.listdir(tmp_path) == []  # no temp folder either

    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "old.txt").write_text("old")
    assert main(_volume_args(root, paths, existing)) == 130
    assert os.listdir(existing) == ["old.txt"]
    assert sorted(os.listdir(tmp_path)) == ["existing"]


def test_error_midway_leaves_nothing(volume_files, tmp_path, monkeypatch):
    import neurospca.reporting.report as report_mod

    root, paths = volume_files

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    # everything is drawn and saved in the temporary folder; writing the report fails
    monkeypatch.setattr(report_mod, "save_report", broken)
    out = tmp_path / "o"
    with pytest.raises(RuntimeError, match="disk on fire"):
        main(_volume_args(root, paths, out) + ["--n-components", "1"])
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------
# surfaces
# --------------------------------------------------------------------------


def test_fit_surface_writes_everything(surface_files, tmp_path, capsys):
    root = surface_files
    out = tmp_path / "surf"
    args = _surface_args(root, out) + [
        "--left-cortex",
        str(root / "lh.aparc.annot"),
        "--right-cortex",
        str(root / "rh.aparc.annot"),
    ]
    assert main(args) == 0
    assert "component 2/2 done" in capsys.readouterr().err
    assert sorted(os.listdir(out)) == [
        "loadings_lh.func.gii",
        "loadings_rh.func.gii",
        "model.npz",
        "report.html",
        "scores.csv",
    ]
    saved = load_model(out / "model.npz")
    assert isinstance(saved.space, Hemispheres)
    assert saved.space.n_vertices == (10242, 10242)
    wall = ~np.isin(np.arange(10242), saved.space.vertices[0])
    assert 0 < wall.sum() < 10242  # the annotation's "unknown" label is left out
    left = np.asarray(load_surf_data(out / "loadings_lh.func.gii"))
    assert left.shape == (10242, 2)
    assert not np.any(left[wall])
    # the drawn (--left-plot-mesh) meshes, and the anatomical coordinates of --left-mesh
    assert set(saved.meshes) == {"left", "right", "bg_left", "bg_right", "anat_left", "anat_right"}
    assert saved.meshes["left"][0].shape == (10242, 3)
    pial = load_surf_mesh(str(root / "lh.pial.gii"))[0]
    np.testing.assert_allclose(saved.meshes["anat_left"], pial)
    assert not np.allclose(saved.meshes["left"][0], pial)  # the inflated one is drawn
    html = (out / "report.html").read_text()
    assert html.count('alt="Component ') == 2 and "left lateral" not in html  # drawn, not text


def test_fit_surface_freesurfer_files(surface_files, tmp_path, capsys):
    """FreeSurfer geometry, curv-format maps in subject folders, .label cortex, MGH output."""
    root = surface_files
    out = tmp_path / "fs"
    args = [
        "fit",
        "--n-components",
        "1",
        "--tol",
        "1e-2",
        "--engine",
        "matplotlib",
        "--surface-format",
        "mgh",
        "--output",
        str(out),
        "-q",
    ]
    for hemi, short in (("left", "lh"), ("right", "rh")):
        args += [
            f"--{hemi}-mesh",
            str(root / f"{short}.white"),
            f"--{hemi}-cortex",
            str(root / f"{short}.cortex.label"),
            f"--{hemi}-data",
            str(root / "sub-*" / f"{short}.thickness"),
        ]
    assert main(args) == 0
    assert sorted(os.listdir(out)) == [
        "loadings_lh.mgh",
        "loadings_rh.mgh",
        "model.npz",
        "report.html",
        "scores.csv",
    ]
    saved = load_model(out / "model.npz")
    assert saved.metadata["sample_labels"][0] == "sub-00/lh.thickness"
    kept = saved.space.vertices[0]
    left = np.asarray(load_surf_data(out / "loadings_lh.mgh"))
    np.testing.assert_allclose(
        left[kept], saved.estimator.components_[0, : kept.size], rtol=1e-6, atol=1e-8
    )


def test_surface_errors(surface_files, tmp_path, capsys):
    root = surface_files
    out = tmp_path / "o"
    args = _surface_args(root, out)
    i = args.index("--right-data")
    err = _error(capsys, args[: i + 1] + args[i + 1 : i + 3] + args[i + 1 + N_SURF :])
    assert "--left-data has 8 file(s) but --right-data has 2" in err
    err = _error(
        capsys, [a if a != str(root / "lh.pial.gii") else str(tmp_path / "lh.x") for a in args]
    )
    assert "--left-mesh" in err and "no such file" in err
    err = _error(capsys, args + ["--left-cortex", str(tmp_path / "lh.cortex.label")])
    assert "--left-cortex" in err
    # a map with the wrong number of vertices
    short = tmp_path / "short.mgh"
    write_surf_data(np.zeros(100), short)
    bad = list(args)
    bad[bad.index("--left-data") + 1] = str(short)
    err = _error(capsys, bad)
    assert "left_data[0]" in err and "10242" in err
    # a plot mesh that does not match the fitting mesh
    bad = list(args)
    bad[bad.index("--left-plot-mesh") + 1] = str(root / "sub-00_lh.thickness.mgh")
    err = _error(capsys, bad)
    assert "--left-plot-mesh" in err
    err = _error(capsys, ["fit", "--images", "a.nii", "--mask", "m.nii", "--left-mesh", "lh.white"])
    assert "not both" in err
    err = _error(capsys, ["fit", "--left-mesh", str(root / "lh.pial.gii")])
    assert "--right-mesh is required" in err
    assert not out.exists()


# --------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------


def test_demo(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--output", str(out), "--n-components", "1"]) == 0
    captured = capsys.readouterr()
    assert "best Dice vs truth" in captured.out
    assert "component 1/1 done" in captured.err
    assert (
        "reproducibility of the components across resampled fits: " in captured.out + captured.err
    )
    assert sorted(os.listdir(out)) == ["loadings.nii.gz", "model.npz", "report.html", "scores.csv"]
    saved = load_model(out / "model.npz")
    assert saved.estimator.components_.shape == (1, 13682)  # the MNI152 mask at 5 mm
    loadings = nib.load(out / "loadings.nii.gz")
    assert loadings.shape == (40, 47, 38, 1) and np.allclose(np.diag(loadings.affine), [5, 5, 5, 1])
    assert "neurospca demo" in (out / "report.html").read_text()


def test_missing_report_libraries_fail_first(tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jinja2" else real(name, *a)
    )
    err = _error(capsys, ["demo", "--output", str(tmp_path / "d")])
    assert 'jinja2: pip install "neurospca[report]"' in err
    assert not os.listdir(tmp_path)


def test_progress_lines(capsys):
    import logging

    from neurospca._utils.progress import ProgressHandler as _Progress

    logger = logging.getLogger("neurospca.test_progress")
    logger.setLevel(logging.INFO)
    quiet, chatty = _Progress(3, verbose=0, heartbeat=3600), _Progress(3, verbose=0, heartbeat=0)
    for handler in (quiet, chatty):
        logger.addHandler(handler)
        logger.info("component %d, iteration %d: residual %.6g", 0, 1, 3.0)
        logger.info("component %d done: %d alternations", 2, 2)
        logger.removeHandler(handler)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "  component 3/3 done: 2 alternations",  # quiet: finished components only
        "  component 1/3, iteration 1: residual 3",  # long fit: heartbeat
        "  component 3/3 done: 2 alternations",
    ]
