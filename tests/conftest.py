"""Session-wide test settings.

The suite runs in parallel workers (``pytest -n 2`` on 2 cores): BLAS and
OpenMP pools are limited to one thread per worker, because oversubscribed
OpenBLAS threads spin and slow everything down by an order of magnitude.
The environment variables cover libraries loaded later; ``threadpool_limits``
covers those already loaded, which is why NumPy and SciPy's BLAS are imported
first. Plots use the non-interactive Agg backend.
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
        pytest.skip("Chromium is not installed (apt-get install -y chromium; .ci/run "
                    "installs it)")
    sync_api = pytest.importorskip(
        "playwright.sync_api",
        reason="the playwright package is missing (pip install -e '.[test]')")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM,
                               args=["--no-sandbox", "--disable-gpu",
                                     "--disable-background-networking",
                                     "--disable-component-update", "--disable-sync",
                                     "--no-first-run", "--disable-quic"])
        yield b
        b.close()
