"""Session-wide test settings.

The suite runs in parallel workers (``pytest -n 2`` on 2 cores): BLAS and
OpenMP pools are limited to one thread per worker, because oversubscribed
OpenBLAS threads spin and slow everything down by an order of magnitude.
The environment variables cover libraries loaded later; ``threadpool_limits``
covers those already loaded, which is why NumPy and SciPy's BLAS are imported
first. Plots use the non-interactive Agg backend.

Markers (registered in pyproject's ``[tool.pytest.ini_options]``, checked by
``--strict-markers``): ``slow`` for the tests listed in :data:`SLOW` (more
than about 5 s on one core) and ``browser`` for every test that uses the
:func:`browser` fixture, both set here at collection. CI runs everything;
locally ``python -m pytest -n 2 -m "not slow"`` is the quick loop.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy  # noqa: E402
import scipy.linalg  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

_LOADED_FIRST = (numpy, scipy.linalg)
_THREAD_LIMITS = threadpool_limits(limits=1)


import shutil  # noqa: E402

import pytest  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium through playwright (skipped when either is missing)."""
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is missing (pip install -e '.[test]')"
    )
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
            ],
        )
        yield b
        b.close()


#: Tests taking more than about 5 s on one core (``--durations``), as
#: ``file`` (every test of the module) or ``file::function`` (every
#: parametrisation). tests/test_architecture.py checks that each entry exists.
SLOW = (
    "tests/test_browser.py",
    "tests/test_fuzz.py",
    "tests/test_tutorials.py",
    "tests/test_docs.py::test_docs_build_without_warnings",
    "tests/test_cli.py::test_demo",
    "tests/test_cli.py::test_error_midway_leaves_nothing",
    "tests/test_cli.py::test_fit_surface_freesurfer_files",
    "tests/test_cli.py::test_fit_surface_writes_everything",
    "tests/test_cli.py::test_fit_volume_writes_everything",
    "tests/test_cli_files.py::test_rerun_removes_stale_outputs_and_keeps_other_files",
    "tests/test_cli_files.py::test_sigterm_keeps_an_existing_output_as_it_was",
    "tests/test_cli_files.py::test_sigterm_leaves_no_temp_folder",
    "tests/test_defaults_selection.py::test_default_is_sparse_on_real_brainspace_rsfmri",
    "tests/test_faults.py::test_fit_on_a_cluster_whose_workers_die_ends",
    "tests/test_image_spcatv.py::test_cli_alpha_options",
    "tests/test_image_spcatv.py::test_cli_surface_qcache_and_gifti_cortex",
    "tests/test_image_spcatv.py::test_generate_report_in_browser",
    "tests/test_model_files.py::test_report_command_does_not_follow_bg_img_from_the_file",
    "tests/test_model_selection.py::test_grid_search_on_dask_equals_serial",
    "tests/test_packaging.py::test_sdist_has_sources_and_no_generated_c",
    "tests/test_packaging.py::test_wheel_has_kernels_templates_license_and_no_c",
    "tests/test_packaging.py::test_wheel_installs_in_a_fresh_venv_and_runs",
    "tests/test_packaging.py::test_install_without_a_compiler_uses_the_numpy_twins",
    "tests/test_reporting.py::test_convergence_against_tol",
    "tests/test_reporting.py::test_old_model_without_new_attributes_degrades",
    "tests/test_reporting.py::test_surface_report_and_plain_report",
    "tests/test_reporting.py::test_volume_report",
    "tests/test_sspca.py::test_sspca_recovers_convex_supports_where_sparse_pca_does_not",
    "tests/test_study_images.py",
    "tests/test_study.py::test_associations_control_the_familywise_error",
)


def _is_slow(nodeid):
    path, _, name = nodeid.partition("::")
    return path in SLOW or f"{path}::{name.split('[')[0]}" in SLOW


def pytest_collection_modifyitems(config, items):
    """Set the ``slow`` and ``browser`` markers (see the module docstring)."""
    for item in items:
        if _is_slow(item.nodeid):
            item.add_marker(pytest.mark.slow)
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
