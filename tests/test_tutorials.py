"""The tutorials run end to end offline (quick variants, ``NEUROSPCA_QUICK=1``)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import nibabel as nib
import pytest

pytest.importorskip("nilearn")
pytest.importorskip("matplotlib")

TUTORIALS = Path(__file__).resolve().parents[1] / "tutorials"


def _run(name, tmp_path):
    env = dict(
        os.environ,
        NEUROSPCA_QUICK="1",
        MPLBACKEND="Agg",
        TMPDIR=str(tmp_path),
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    proc = subprocess.run(
        [sys.executable, str(TUTORIALS / name)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _number(pattern, text):
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in output:\n{text}"
    return float(match.group(1))


def test_tutorial_fmri(tmp_path):
    out = _run("plot_fmri_spcatv.py", tmp_path)
    mse_spcatv = _number(r"MSE to the truth \(0 = perfect, 2 = orthogonal\): ([0-9.]+)", out)
    mse_pca = _number(r"MSE to the truth of PCA: ([0-9.]+)", out)
    assert mse_spcatv < 0.5 < mse_pca  # SPCA-TV recovers the blobs, PCA mixes them
    err = re.search(r"test reconstruction error: SPCA-TV ([0-9.]+), PCA ([0-9.]+)", out)
    assert err and float(err.group(1)) < float(err.group(2))
    loadings = list(tmp_path.glob("neurospca_fmri_*/spcatv_loadings.nii.gz"))
    assert len(loadings) == 1
    img = nib.load(loadings[0])
    assert img.ndim == 4 and img.shape[-1] == 3
    n_maps = len(list(tmp_path.glob("neurospca_fmri_*/sub-*_stat.nii.gz")))
    assert n_maps == 24


def test_tutorial_cortical_atrophy(tmp_path):
    out = _run("plot_cortical_atrophy.py", tmp_path)
    mse_enet = _number(r"ElasticNet PCA .*MSE ([0-9.]+)", out)
    mse_tv = _number(r"SPCA-TV .*MSE ([0-9.]+)", out)
    assert mse_tv < 0.2 < mse_enet
    assert "20484" in out


def test_tutorial_html_report(tmp_path):
    pytest.importorskip("jinja2")
    out = _run("plot_html_report.py", tmp_path)
    reports = list(tmp_path.glob("neurospca_report_*/report.html"))
    assert len(reports) == 1
    html = reports[0].read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    assert "SPCA-TV on simulated activation maps" in html
    assert "data:image/png;base64," in html  # figures embedded
    assert "certified duality gaps" in out
    assert list(tmp_path.glob("neurospca_report_*/loadings*.nii.gz"))
