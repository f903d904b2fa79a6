"""Fuzz the public entry points with hypothesis, one subprocess per case.

Each case of :mod:`tests._fuzz_cases` runs a bounded number of derandomized
examples in its own Python process, so that a crash (SIGSEGV, abort) fails
one test instead of killing the test runner, and a hang is stopped by a
timeout. Every example must end in a result or in a ValueError/TypeError
naming the argument (or file); outputs must be finite.
"""

import os
import signal
import subprocess
import sys

import pytest

pytest.importorskip("hypothesis")  # the test extra: pip install -e ".[test]"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 150  # seconds per case: each takes 5-20 s on a quiet core, up to ~50 s on a loaded one

CASES = [
    "spcatv",
    "spcatv_extreme",
    "spca_tv_function",
    "tv_from_mask",
    "tv_from_mesh",
    "group_operator",
    "solvers",
    "solvers_warm_starts",
    "readers",
    "load_model",
    "cli",
]


@pytest.mark.parametrize("case", CASES)
def test_fuzz(case):
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        MPLBACKEND="Agg",
    )
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    try:
        res = subprocess.run(
            [sys.executable, "-m", "tests._fuzz_cases", case, str(TIMEOUT - 10)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - a hang is a failure
        pytest.fail(f"fuzz case {case} hung for {TIMEOUT} s:\n{exc.stderr}")
    if res.returncode < 0:
        name = signal.Signals(-res.returncode).name
        pytest.fail(f"fuzz case {case} crashed the interpreter with {name}:\n{res.stderr[-6000:]}")
    assert res.returncode == 0, f"fuzz case {case} failed:\n{res.stderr[-6000:]}"
    assert f"fuzz case {case}: ok" in res.stdout
