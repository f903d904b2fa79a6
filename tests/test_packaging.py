"""The release as a user gets it: the sdist, the wheel, and installs of both.

One sdist and one wheel are built (``python -m build --no-isolation``) from a
copy of the tracked files (``git ls-files``), so the checkout is never written
to; pytest-xdist workers share them (a file lock in the session's temporary
folder). Then:

* their contents: no generated C in either, the ``.pyx`` in the sdist, the
  compiled kernels and the report template in the wheel, the license in both,
  the SPDX license and pyproject's version in the metadata;
* the wheel installed in a fresh venv (``--system-site-packages`` for the
  dependencies, ``--no-index``: no network) runs ``tests/smoke_installed.py``
  with ``python -I``, with ``PYTHONPATH`` pointing at this checkout: the
  neurospca it imports is the venv's copy (not the checkout, nor the editable
  install a developer machine may have), with compiled kernels;
* the sdist installed with ``CC=/bin/false``: the install succeeds with one
  warning, the kernels are missing, the NumPy twins run with one warning and
  the fit's components equal the compiled wheel's to 1e-10.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("build", reason="the build package is missing (pip install -e '.[test]')")
fcntl = pytest.importorskip("fcntl", reason="POSIX only (the build is shared with a file lock)")

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "smoke_installed.py"
BUILD_WARNING = "WARNING: neurospca: the compiled kernels could not be built"
TIMEOUT = 900


def _pyproject():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _clean_env(**extra):
    """The environment without this checkout on the path nor a forced kernel choice."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NEUROSPCA_KERNELS")}
    env.update(extra)
    return env


def _run(cmd, cwd, env=None):
    res = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=env or _clean_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert res.returncode == 0, f"{cmd} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


def _tracked_files():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the build copies the tracked files")
    res = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT)
    return [f for f in res.stdout.split("\0") if f and (ROOT / f).is_file()]


def _build(out):
    """Copy the tracked files into ``out/src`` and build the sdist and wheel into ``out``."""
    src = out / "src"
    for rel in _tracked_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src], out)
    shutil.rmtree(src)


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """(sdist, wheel) paths, built once per test session (shared by xdist workers)."""
    import setuptools

    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("setuptools >= 77 is needed to build (pip install -e '.[test]')")
    if shutil.which((os.environ.get("CC") or "cc").split()[0]) is None:
        pytest.skip("no C compiler: the wheel would have no compiled kernels")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "neurospca_dists"
    with open(shared / "neurospca_dists.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "done").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            _build(out)
            (out / "done").write_text("")
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def _venv(path):
    """A fresh venv that sees this interpreter's packages (the dependencies, pip).

    ``--system-site-packages`` reaches the base interpreter's; when the tests run
    in a venv themselves, a ``.pth`` file adds that venv's site-packages too.
    """
    cmd = [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", path]
    _run(cmd, path.parent)
    python = path / ("Scripts" if os.name == "nt" else "bin") / "python"
    if sys.prefix != sys.base_prefix:
        code = "import sysconfig; print(sysconfig.get_path('purelib'))"
        purelib = Path(_run([python, "-c", code], path).stdout.strip())
        outer = sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})
        (purelib / "_outer_venv.pth").write_text("\n".join(outer) + "\n")
    return python


def _pip_install(python, target, cwd, env=None):
    cmd = [python, "-m", "pip", "install", "-v", "--no-deps", "--no-index"]
    return _run(cmd + ["--no-build-isolation", target], cwd, env)


def _smoke(python, cwd, *args):
    """Run the smoke subset isolated (``-I``) with this checkout on PYTHONPATH anyway."""
    res = _run([python, "-I", SMOKE, *args], cwd, _clean_env(PYTHONPATH=str(ROOT)))
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def wheel_install(dists, tmp_path_factory):
    """The wheel installed in a fresh venv: (venv folder, smoke findings, components)."""
    tmp = tmp_path_factory.mktemp("wheel_venv")
    python = _venv(tmp / "venv")
    _pip_install(python, dists[1], tmp)
    found = _smoke(python, tmp, "--save", tmp / "components.npy")
    return tmp / "venv", found, np.load(tmp / "components.npy")


def test_sdist_has_sources_and_no_generated_c(dists):
    sdist = dists[0]
    with tarfile.open(sdist) as tar:
        names = [Path(*Path(m.name).parts[1:]).as_posix() for m in tar.getmembers() if m.isfile()]
        top = Path(tar.getmembers()[0].name).parts[0]
        pkg_info = tar.extractfile(f"{top}/PKG-INFO").read().decode()
    pyx = {p.relative_to(ROOT).as_posix() for p in (ROOT / "neurospca").rglob("*.pyx")}
    assert pyx and pyx <= set(names)
    assert "neurospca/_kernels/_helpers.pxd" in names
    assert "neurospca/reporting/assets/viewer.js" in names
    assert not [n for n in names if n.endswith((".c", ".so", ".pyd", ".o"))]
    assert {"LICENSE", "CHANGELOG.md", "CITATION.cff", "setup.py", "pyproject.toml"} <= set(names)
    _check_metadata(pkg_info)


def test_wheel_has_kernels_templates_license_and_no_c(dists):
    with zipfile.ZipFile(dists[1]) as whl:
        names = whl.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = whl.read(meta).decode()
    for pyx in (ROOT / "neurospca").rglob("*.pyx"):
        stem = pyx.relative_to(ROOT).with_suffix("").as_posix()
        assert [n for n in names if n.startswith(stem + ".") and n.endswith((".so", ".pyd"))], stem
    assert "neurospca/reporting/templates/report.html" in names
    assert {"neurospca/reporting/assets/viewer.js", "neurospca/reporting/assets/LICENSE"} <= set(
        names
    )
    assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    junk = (".c", ".o", ".egg-info", "SOURCES.txt", ".pyc")
    assert not [n for n in names if n.endswith(junk) or n.startswith(("build/", "tests/"))]
    assert all(n.startswith(("neurospca/", "neurospca-")) for n in names)
    _check_metadata(metadata)


def _check_metadata(text):
    """The core metadata: SPDX license, pyproject's version and Python range, the script."""
    fields = [line.split(": ", 1) for line in text.split("\n\n")[0].splitlines() if ": " in line]
    project = _pyproject()["project"]
    assert ["License-Expression", "BSD-3-Clause"] in fields
    assert ["License-File", "LICENSE"] in fields
    assert ["Version", project["version"]] in fields
    assert ["Requires-Python", ">=3.10"] in fields
    assert ["Classifier", "Programming Language :: Python :: 3.13"] in fields
    assert not [f for f in fields if f[0] == "License"]  # the deprecated field is gone


def test_wheel_installs_in_a_fresh_venv_and_runs(wheel_install):
    venv, found, components = wheel_install
    # the venv's copy, although PYTHONPATH pointed at the checkout
    assert Path(found["file"]).resolve().is_relative_to(venv.resolve()), found["file"]
    assert not Path(found["file"]).resolve().is_relative_to(ROOT)
    assert Path(found["script"]).resolve().is_relative_to(venv.resolve())
    assert found["version"] == _pyproject()["project"]["version"]
    assert all(found["compiled"].values()) and found["kernel_warnings"] == 0
    assert max(found["rel_gaps"]) <= 1e-6
    assert components.shape == (2, 400) and np.all(np.isfinite(components))


def test_install_without_a_compiler_uses_the_numpy_twins(dists, wheel_install, tmp_path):
    python = _venv(tmp_path / "venv")
    env = _clean_env(CC="/bin/false", CXX="/bin/false")
    res = _pip_install(python, dists[0], tmp_path, env)
    assert (res.stdout + res.stderr).count(BUILD_WARNING) == 1
    found = _smoke(python, tmp_path, "--kernels", "numpy", "--save", tmp_path / "twins.npy")
    assert Path(found["file"]).resolve().is_relative_to((tmp_path / "venv").resolve())
    assert not list(Path(found["file"]).parent.joinpath("_kernels").glob("*.so"))
    assert not any(found["compiled"].values()) and found["kernel_warnings"] == 1
    np.testing.assert_allclose(
        np.load(tmp_path / "twins.npy"), wheel_install[2], rtol=0, atol=1e-10
    )


def test_citation_license_and_changelog_say_what_they_must():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["license"] == _pyproject()["project"]["license"] == "BSD-3-Clause"
    assert "version" not in cff  # written only in pyproject.toml
    paper = cff["preferred-citation"]
    assert paper["doi"] == "10.1109/TMI.2017.2749140" and paper["year"] == 2018
    assert paper["authors"][0]["family-names"] == "de Pierrefeu"
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{_pyproject()['project']['version'].split('.dev')[0]}]" in changelog
    for section in ("### Added", "### Changed", "### Fixed"):
        assert section in changelog
