"""A smoke subset run against an INSTALLED neurospca (a wheel or an sdist install).

Run as a script by tests/test_packaging.py (in a fresh venv, from outside the
source tree) and by cibuildwheel's ``test-command`` (pyproject.toml); pytest
does not collect it. It checks what an install can break, and prints one JSON
line for the caller to compare across installs:

* ``import neurospca`` comes from the installed copy (``file``) and reports
  the version of the installed metadata;
* the four kernels are compiled, or, with ``--kernels numpy``, are missing and
  the NumPy twins run with exactly one RuntimeWarning;
* a small SPCA-TV fit is certified (``rel_gaps_ <= tol``, every component
  converged) and its components are written to ``--save`` (``.npy``) for the
  caller to compare between builds;
* the ``neurospca`` console script answers ``--help``.

Usage: ``python smoke_installed.py [--kernels {compiled,numpy}] [--save FILE]``.
"""

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np

KERNEL_NAMES = ("prox", "tree", "nspca", "products")


def _fit():
    """A small certified SPCA-TV fit on the paper's simulation (20 x 20 images)."""
    from neurospca import SPCATV, make_paper_simulation, tv_from_mask

    X = make_paper_simulation(n_samples=60, snr=0.5, random_state=0, shape=(20, 20))[0]
    model = SPCATV(
        n_components=2,
        alpha_rel=0.1,
        operator=tv_from_mask(np.ones((20, 20), bool)),
        tol=1e-6,
        random_state=0,
        method="deflation",
        stability=False,
    )
    return model.fit(X)


def _console_script():
    """The ``neurospca`` script installed next to this interpreter; its --help exit code."""
    scripts = Path(sysconfig.get_path("scripts"))
    exe = scripts / ("neurospca.exe" if os.name == "nt" else "neurospca")
    assert exe.is_file(), f"no console script at {exe}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed copy
    res = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0 and "usage" in res.stdout.lower(), res.stderr
    return str(exe)


def main(argv=None):
    """Run the smoke subset; print its findings as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", choices=("compiled", "numpy"), default="compiled")
    parser.add_argument("--save", help="write the fitted components_ here (.npy)")
    args = parser.parse_args(argv)

    import neurospca
    from neurospca import _kernels

    assert neurospca.__version__ == metadata.version("neurospca"), neurospca.__version__
    compiled = {name: _kernels.compiled_available(name) for name in KERNEL_NAMES}
    expected = args.kernels == "compiled"
    assert all(v is expected for v in compiled.values()), compiled
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _fit()
    missing = [w for w in caught if "compiled kernels" in str(w.message)]
    assert len(missing) == (0 if expected else 1), [str(w.message) for w in missing]
    assert np.all(model.converged_) and np.all(model.rel_gaps_ <= model.tol), model.rel_gaps_
    if args.save:
        np.save(args.save, model.components_)
    out = {
        "file": neurospca.__file__,
        "version": neurospca.__version__,
        "compiled": compiled,
        "kernel_warnings": len(missing),
        "rel_gaps": model.rel_gaps_.tolist(),
        "script": _console_script(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
