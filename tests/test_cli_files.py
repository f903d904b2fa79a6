"""Hostile files and output folders on the command line.

Truncated or corrupted inputs of every format end in one line and exit code 2;
bad plot meshes and unwritable outputs are found before the fit; SIGTERM
cleans up like Ctrl-C; a re-used output folder holds only this run's outputs.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from neurospca import icosphere, write_surf_data, write_surf_mesh
from neurospca.cli import main

N = 10


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small volume and surface inputs written with nibabel."""
    root = tmp_path_factory.mktemp("in")
    rng = np.random.default_rng(0)
    mask = np.zeros((7, 8, 6), dtype=np.uint8)
    mask[1:6, 1:7, 1:5] = 1
    nib.Nifti1Image(mask, np.eye(4)).to_filename(root / "mask.nii.gz")
    for i in range(N):
        data = rng.standard_normal(mask.shape).astype(np.float32)
        data[2:4, 2:5, 2:4] += 3 * rng.standard_normal()
        nib.Nifti1Image(data, np.eye(4)).to_filename(root / f"sub-{i:02d}.nii.gz")
    coords, faces = icosphere(2)
    for short in ("lh", "rh"):
        write_surf_mesh(coords, faces, root / f"{short}.surf.gii")
        write_surf_mesh(coords, faces, root / f"{short}.white")
        for i in range(N):
            values = rng.standard_normal(coords.shape[0]) + (coords[:, 2] > 0.5) * rng.normal()
            write_surf_data(values, root / f"sub-{i:02d}_{short}.mgz")
            write_surf_data(values, root / f"sub-{i:02d}_{short}.func.gii")
        labels = (coords[:, 2] > -0.8).astype(np.int32)
        ctab = np.array([[25, 5, 25, 0, 0], [220, 20, 10, 0, 0]], dtype=np.int32)
        nib.freesurfer.write_annot(
            str(root / f"{short}.aparc.annot"),
            labels,
            ctab,
            [b"unknown", b"cortex"],
            fill_ctab=True,
        )
        kept = np.flatnonzero(labels)
        with open(root / f"{short}.cortex.label", "w") as fh:
            fh.write(f"#!ascii label\n{kept.size}\n")
            for v in kept:
                fh.write(f"{v} 0 0 0 0\n")
    return root


def _volume(root, out, images=None, mask=None):
    images = images or [str(root / f"sub-{i:02d}.nii.gz") for i in range(N)]
    return [
        "fit",
        "--images",
        *images,
        "--mask",
        str(mask or root / "mask.nii.gz"),
        "--output",
        str(out),
        "--n-components",
        "1",
        "--tol",
        "1e-2",
        "-q",
    ]


def _surface(root, out, ext="mgz", **override):
    args = ["fit"]
    for hemi, short in (("left", "lh"), ("right", "rh")):
        args += [f"--{hemi}-mesh", override.get(f"{hemi}_mesh", str(root / f"{short}.surf.gii"))]
        if f"{hemi}_plot_mesh" in override:
            args += [f"--{hemi}-plot-mesh", override[f"{hemi}_plot_mesh"]]
        if f"{hemi}_cortex" in override:
            args += [f"--{hemi}-cortex", override[f"{hemi}_cortex"]]
        args += [f"--{hemi}-data"] + override.get(
            f"{hemi}_data", [str(root / f"sub-{i:02d}_{short}.{ext}") for i in range(N)]
        )
    return args + [
        "--output",
        str(out),
        "--n-components",
        "1",
        "--tol",
        "1e-2",
        "--engine",
        "matplotlib",
        "-q",
    ]


def _one_line_exit_2(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("neurospca: error: ")
    return err


def _damaged(src, dst, how):
    raw = src.read_bytes()
    if how == "truncated":
        raw = raw[: len(raw) // 2]
    elif how == "empty":
        raw = b""
    else:  # flip bytes in the middle
        b = bytearray(raw)
        mid = len(b) // 2
        b[mid : mid + 16] = bytes(x ^ 0xFF for x in b[mid : mid + 16])
        raw = bytes(b)
    dst.write_bytes(raw)
    return str(dst)


@pytest.mark.parametrize("how", ["truncated", "flipped", "empty"])
@pytest.mark.parametrize("which", ["image", "mask"])
def test_damaged_volume_inputs(files, tmp_path, capsys, which, how):
    name = "sub-00.nii.gz" if which == "image" else "mask.nii.gz"
    bad = _damaged(files / name, tmp_path / name, how)
    images = (
        [bad] + [str(files / f"sub-{i:02d}.nii.gz") for i in range(1, N)]
        if which == "image"
        else None
    )
    argv = _volume(files, tmp_path / "out", images=images, mask=bad if which == "mask" else None)
    if how == "flipped" and which == "image":
        code = main(argv)  # flipped float values may still be a valid image
        err = capsys.readouterr().err.strip()
        assert code in (0, 2) and "Traceback" not in err, err
        return
    err = _one_line_exit_2(capsys, argv)
    assert bad in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("how", ["truncated", "flipped", "empty"])
@pytest.mark.parametrize(
    "which", ["mesh.gii", "mesh.fs", "data.mgz", "data.gii", "annot", "label", "plot_mesh"]
)
def test_damaged_surface_inputs(files, tmp_path, capsys, which, how):
    override, ext = {}, "mgz"
    if which == "mesh.gii":
        override["left_mesh"] = bad = _damaged(files / "lh.surf.gii", tmp_path / "lh.surf.gii", how)
    elif which == "mesh.fs":
        override["left_mesh"] = bad = _damaged(files / "lh.white", tmp_path / "lh.white", how)
    elif which in ("data.mgz", "data.gii"):
        ext = "mgz" if which == "data.mgz" else "func.gii"
        name = f"sub-03_lh.{ext}"
        bad = _damaged(files / name, tmp_path / name, how)
        override["left_data"] = [
            bad if i == 3 else str(files / f"sub-{i:02d}_lh.{ext}") for i in range(N)
        ]
    elif which == "annot":
        override["left_cortex"] = bad = _damaged(
            files / "lh.aparc.annot", tmp_path / "lh.aparc.annot", how
        )
    elif which == "label":
        override["left_cortex"] = bad = _damaged(
            files / "lh.cortex.label", tmp_path / "lh.cortex.label", how
        )
    else:
        override["left_plot_mesh"] = bad = _damaged(
            files / "lh.surf.gii", tmp_path / "lh.inflated.gii", how
        )
    argv = _surface(files, tmp_path / "out", ext=ext, **override)
    if how == "flipped":
        # flipped bytes in raw values (no checksum read) can still be a valid file: a
        # result or one clear line, never a traceback
        code = main(argv)
        err = capsys.readouterr().err.strip()
        assert code in (0, 2) and "Traceback" not in err, err
        assert code == 0 or len(err.splitlines()) == 1, err
    else:
        err = _one_line_exit_2(capsys, argv)
        assert bad in err or os.path.basename(bad) in err
        assert not (tmp_path / "out").exists()
    assert [f for f in os.listdir(tmp_path) if f.startswith(".")] == []


def _write_gifti_mesh(path, coords, faces):
    img = nib.gifti.GiftiImage(
        darrays=[
            nib.gifti.GiftiDataArray(
                coords.astype(np.float32),
                intent="NIFTI_INTENT_POINTSET",
                datatype="NIFTI_TYPE_FLOAT32",
            ),
            nib.gifti.GiftiDataArray(
                faces.astype(np.int32), intent="NIFTI_INTENT_TRIANGLE", datatype="NIFTI_TYPE_INT32"
            ),
        ]
    )
    img.to_filename(str(path))
    return str(path)


@pytest.mark.parametrize("case", ["face_1e7", "negative_face", "nan_coords", "repeated_vertex"])
def test_bad_plot_mesh_fails_before_the_fit(files, tmp_path, capsys, monkeypatch, case):
    from neurospca import SPCATV

    def no_fit(*args, **kwargs):
        raise AssertionError("the fit must not start")

    monkeypatch.setattr(SPCATV, "fit", no_fit)
    coords, faces = icosphere(2)
    coords, faces = coords.copy(), faces.copy()
    if case == "face_1e7":
        faces[5, 1] = 10**7
    elif case == "negative_face":
        faces[0, 0] = -1
    elif case == "nan_coords":
        coords[3, 2] = np.nan
    else:
        faces[7, 2] = faces[7, 0]
    bad = _write_gifti_mesh(tmp_path / "rh.inflated.gii", coords, faces)
    err = _one_line_exit_2(capsys, _surface(files, tmp_path / "out", right_plot_mesh=bad))
    assert "--right-plot-mesh" in err
    assert os.listdir(tmp_path) == ["rh.inflated.gii"]  # no output, no temp folder


def test_bad_meshes_refused_by_report_and_save_model(tmp_path):
    from neurospca import SPCATV, Hemispheres, save_model
    from neurospca.reporting.plotting import plot_surface_component

    coords, faces = icosphere(1)
    bad = faces.copy()
    bad[0, 0] = 10**7
    n = coords.shape[0]
    X = np.random.default_rng(0).standard_normal((8, 2 * n))
    model = SPCATV(1, alpha=0.2, tol=1e-2, max_iter=3).fit(X)
    with pytest.raises(ValueError, match=r"meshes\['left'\] faces .*out of range"):
        save_model(
            model,
            tmp_path / "m.npz",
            space=Hemispheres((n, n)),
            meshes={"left": (coords, bad), "right": (coords, faces)},
        )
    assert os.listdir(tmp_path) == []
    maps = {"left": np.ones(n), "right": np.ones(n)}
    with pytest.raises(ValueError, match=r"meshes\['left'\] faces .*out of range"):
        plot_surface_component(
            maps, {"left": (coords, bad), "right": (coords, faces)}, engine="pyvista"
        )
    with pytest.raises(ValueError, match=r"maps\['right'\]"):
        plot_surface_component(
            {"left": np.ones(n), "right": np.ones(n + 1)},
            {"left": (coords, faces), "right": (coords, faces)},
        )


@pytest.mark.parametrize("how", ["truncated", "empty"])
def test_damaged_bg_img_fails_before_the_fit(files, tmp_path, capsys, monkeypatch, how):
    from neurospca import SPCATV

    def no_fit(*args, **kwargs):
        raise AssertionError("the fit must not start")

    monkeypatch.setattr(SPCATV, "fit", no_fit)
    nib.Nifti1Image(
        np.random.default_rng(0).random((30, 30, 30)).astype(np.float32), np.eye(4)
    ).to_filename(tmp_path / "t1.nii.gz")
    bad = _damaged(tmp_path / "t1.nii.gz", tmp_path / "bad_t1.nii.gz", how)
    err = _one_line_exit_2(capsys, _volume(files, tmp_path / "out") + ["--bg-img", bad])
    assert "--bg-img" in err and bad in err


# -------------------------------------------------------------------- output folders


def test_rerun_removes_stale_outputs_and_keeps_other_files(files, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    for stale in (
        "loadings_lh.func.gii",
        "loadings_rh.func.gii",
        "loadings.nii.gz",
        "report.html",
        "scores.csv",
    ):
        (out / stale).write_text("from an earlier run")
    (out / "notes.txt").write_text("mine")
    (out / "loadings_notes.md").write_text("mine too")  # not a neurospca output name
    assert main(_volume(files, out)) == 0
    assert sorted(os.listdir(out)) == [
        "loadings.nii.gz",
        "loadings_notes.md",
        "model.npz",
        "notes.txt",
        "report.html",
        "scores.csv",
    ]
    assert nib.load(out / "loadings.nii.gz").shape[:3] == (7, 8, 6)
    assert "from an earlier run" not in (out / "scores.csv").read_text()
    assert [f for f in os.listdir(tmp_path) if f.startswith(".")] == []
    # a surface run into the same folder leaves no volume loadings behind
    assert main(_surface(files, out)) == 0
    assert sorted(os.listdir(out)) == [
        "loadings_lh.func.gii",
        "loadings_notes.md",
        "loadings_rh.func.gii",
        "model.npz",
        "notes.txt",
        "report.html",
        "scores.csv",
    ]
    capsys.readouterr()


def _unwritable_cases(tmp_path):
    """(output, why) pairs that cannot be written, for this user."""
    cases = []
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        os.chmod(ro, 0o555)
        cases += [(ro / "new", "parent"), (ro, "folder")]
    # root ignores permission bits; sysfs refuses new entries even to root
    if os.path.isdir("/sys/kernel"):
        try:
            os.mkdir("/sys/neurospca-probe")
            os.rmdir("/sys/neurospca-probe")
        except OSError:
            cases += [("/sys/neurospca-out", "parent"), ("/sys/kernel", "folder")]
    return cases


def test_unwritable_output_fails_before_the_fit(files, tmp_path, capsys, monkeypatch):
    from neurospca import SPCATV

    def no_fit(*args, **kwargs):
        raise AssertionError("the fit must not start")

    monkeypatch.setattr(SPCATV, "fit", no_fit)
    cases = _unwritable_cases(tmp_path)
    if not cases:
        pytest.skip("no unwritable folder available to this user")
    for out, _ in cases:
        err = _one_line_exit_2(capsys, _volume(files, out))
        assert "--output" in err and "cannot write" in err


def test_output_that_is_a_file_fails_first(files, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    err = _one_line_exit_2(capsys, _volume(files, tmp_path / "f"))
    assert "not a folder" in err


# -------------------------------------------------------------------- SIGTERM


def _run_and_terminate(argv, when):
    """Start the command in a process; SIGTERM it once ``when(stderr_lines)`` is true."""
    import threading

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "neurospca.cli", *argv],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    reader = threading.Thread(
        target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True
    )
    reader.start()
    deadline = time.time() + 120
    sent = False
    while proc.poll() is None and time.time() < deadline:
        if when(lines):
            proc.send_signal(signal.SIGTERM)
            sent = True
            break
        time.sleep(0.005)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:  # pragma: no cover - a hang is a failure
        proc.kill()
        raise
    reader.join(timeout=10)
    return sent, proc.returncode, "".join(lines)


@pytest.mark.parametrize("stage", ["report", "fit"])
def test_sigterm_leaves_no_temp_folder(files, tmp_path, stage):
    work = tmp_path / "work"
    work.mkdir()
    out = work / "out"
    argv = [a for a in _volume(files, out) if a != "-q"]
    argv[argv.index("1")] = "3"  # 3 components: drawing takes a while
    if stage == "fit":
        argv += ["--max-iter", "100000", "--tol", "1e-12", "--alpha", "1e-3"]

    def when(lines):
        if stage == "fit":
            return any(line.startswith("SPCA-TV:") for line in lines)
        return any("neurospca-tmp-" in f for f in os.listdir(work))

    for _ in range(3):  # the report may finish before the signal lands: try again
        sent, code, err = _run_and_terminate(argv, when)
        if code != 0:
            break
        for f in os.listdir(out):
            os.remove(out / f)
        os.rmdir(out)
    assert sent
    assert code == 143, err
    assert "terminated" in err and "Traceback" not in err
    assert os.listdir(work) == []  # no output, no temp folder


def test_sigterm_keeps_an_existing_output_as_it_was(files, tmp_path):
    work = tmp_path / "work"
    out = work / "out"
    out.mkdir(parents=True)
    (out / "report.html").write_text("old report")
    (out / "keep.txt").write_text("mine")
    argv = _volume(files, out)
    argv[argv.index("1")] = "3"
    sent, code, err = _run_and_terminate(
        argv, lambda lines: any(".tmp-" in f for f in os.listdir(work))
    )
    if code == 0:
        pytest.skip("the run finished before the signal arrived")
    assert code == 143, err
    assert sorted(os.listdir(work)) == ["out"]
    assert sorted(os.listdir(out)) == ["keep.txt", "report.html"]
    assert (out / "report.html").read_text() == "old report"


def test_sigterm_handler_is_restored_after_main(tmp_path, capsys):
    before = signal.getsignal(signal.SIGTERM)
    assert main(["report", str(tmp_path / "missing.npz")]) == 2
    assert signal.getsignal(signal.SIGTERM) == before
    capsys.readouterr()


# -------------------------------------------------------------------- building blocks


def test_atomic_folder_commits_whole_or_nothing(tmp_path):
    """The output-folder writer: a new folder is one rename; re-use replaces the owned
    files (stale ones removed, others kept); an error leaves the folder as it was."""
    import re

    from neurospca._utils.io import AtomicFolder

    owned = re.compile(r"(a\.txt|b\.txt|report\.html)\Z")
    out = tmp_path / "out"
    with AtomicFolder(out, owned=owned) as folder:
        for name in ("a.txt", "report.html"):
            (Path(folder.tmp) / name).write_text("1")
        assert not out.exists()
        assert folder.commit(["a.txt", "report.html"]) == str(out)
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert sorted(os.listdir(out)) == ["a.txt", "report.html"]
    (out / "b.txt").write_text("stale")
    (out / "notes.txt").write_text("mine")
    with AtomicFolder(out, owned=owned) as folder:
        (Path(folder.tmp) / "report.html").write_text("2")
        folder.commit(["report.html"])
    assert sorted(os.listdir(out)) == ["notes.txt", "report.html"]
    assert (out / "report.html").read_text() == "2"
    with pytest.raises(RuntimeError, match="midway"):
        with AtomicFolder(out, owned=owned) as folder:
            (Path(folder.tmp) / "report.html").write_text("3")
            raise RuntimeError("midway")
    assert (out / "report.html").read_text() == "2"
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no temporary folder left
    with pytest.raises(FileNotFoundError, match="--output: the parent folder"):
        AtomicFolder(tmp_path / "no" / "out", name="--output")
    with pytest.raises(ValueError, match="exists and is not a folder"):
        AtomicFolder(out / "notes.txt")


def test_example_penalties_are_spcatv_l1_max():
    """The benchmarks' example penalties use SPCATV's own l1_max_ (one definition)."""
    from neurospca import SPCATV
    from neurospca._commands.penalties import example_weights, l1_max, spcatv_defaults

    X = np.random.default_rng(0).standard_normal((15, 40)) * np.linspace(0.5, 3, 40)
    model = SPCATV(1, alpha_rel=1.0, tol=1e-2, max_iter=2).fit(X)
    assert l1_max(X) == pytest.approx(model.l1_max_, rel=1e-12)
    np.testing.assert_allclose(example_weights(X), np.array([0.05, 1.0, 0.1]) * l1_max(X))
    assert spcatv_defaults()["l1_ratio"] == SPCATV().l1_ratio
