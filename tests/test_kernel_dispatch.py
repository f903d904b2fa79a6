"""The one kernel dispatcher, :func:`neurospca._kernels.load`.

It returns the compiled module unless the NumPy twins are forced
(``kernels="numpy"`` or ``NEUROSPCA_KERNELS=numpy``) or the build is missing;
a missing build gives exactly one warning per process and the twins, which
compute the same results.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import neurospca
from neurospca import _kernels
from neurospca._kernels import _numpy_prox, _prox, load
from neurospca.decomposition import nspca
from neurospca.solvers import prox_dual

# the same computations in this process and in a subprocess without the build:
# a difference-operator prox (prox kernel), the l-infinity tree prox (tree
# kernel) and a nonnegative sparse PCA (nspca kernel)
CASES = r"""
import numpy as np
import neurospca
from neurospca.decomposition import nspca, prox_tree
from neurospca.solvers import prox_dual
from neurospca.trees import balanced_tree

def cases():
    rng = np.random.default_rng(0)
    op = neurospca.tv_from_mask(rng.random((7, 6, 5)) > 0.3)
    y = rng.standard_normal(op.n_features)
    v = prox_dual(y, op, 0.2, 0.5, tol=1e-10).v
    parent = balanced_tree((3, 2, 2))
    Z = rng.standard_normal((6, parent.size))
    t = prox_tree(Z, parent, 0.4, norm="linf")
    X = rng.standard_normal((30, 12))
    U = nspca(np.cov(X.T), 2, alpha=1.0, beta=0.05, max_iter=30, n_init=1)
    U = U[0] if isinstance(U, tuple) else U
    return {"prox": v.tolist(), "tree": np.asarray(t).tolist(), "nspca": np.asarray(U).tolist()}
"""
_ns = {}
exec(CASES, _ns)
cases = _ns["cases"]


def _assert_same(a, b):
    for key in ("prox", "tree", "nspca"):
        np.testing.assert_allclose(
            np.asarray(a[key]), np.asarray(b[key]), rtol=1e-9, atol=1e-11, err_msg=key
        )


def test_load_returns_compiled_or_twin():
    assert load("prox") is _prox
    assert load("prox", "numpy") is _numpy_prox
    assert load("tree").__name__ == "neurospca._kernels._tree"
    assert load("nspca").__name__ == "neurospca._kernels._nspca"
    # the tree and NSPCA twins live with their estimators: None means "run yours"
    assert load("tree", "numpy") is None
    assert load("nspca", "numpy") is None
    assert all(_kernels.compiled_available(n) for n in ("prox", "tree", "nspca"))
    # the compiled module and the twin expose the same kernels
    public = {n for n in dir(_numpy_prox) if not n.startswith("_")} - {"np", "sp"}
    assert public <= set(dir(_prox))


def test_environment_forces_numpy(monkeypatch):
    compiled = cases()
    monkeypatch.setenv("NEUROSPCA_KERNELS", "numpy")
    assert load("prox") is _numpy_prox
    assert load("tree") is None and load("nspca", "cython") is None
    forced = cases()
    _assert_same(forced, compiled)
    monkeypatch.setenv("NEUROSPCA_KERNELS", "cython")
    assert load("prox") is _prox


def test_bad_choices_name_the_fix(monkeypatch):
    with pytest.raises(ValueError, match="name must be one of"):
        load("conesta")
    with pytest.raises(ValueError, match="name must be one of"):
        _kernels.compiled_available("conesta")
    with pytest.raises(ValueError, match="kernels must be one of"):
        load("prox", "fortran")
    with pytest.raises(ValueError, match="kernels must be one of"):
        prox_dual(np.zeros(3), neurospca.chain_operator(3), 0.1, 0.1, kernels="fortran")
    with pytest.raises(ValueError, match="kernels must be one of"):
        nspca(np.eye(3), 1, alpha=1.0, kernels="C")
    monkeypatch.setenv("NEUROSPCA_KERNELS", "fast")
    with pytest.raises(ValueError, match="NEUROSPCA_KERNELS"):
        load("prox")


NO_EDITABLE_HOOK = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path
                    if not str(getattr(f, "__module__", "")).startswith("__editable__")]
"""


def test_missing_build_warns_once_and_uses_the_twins(tmp_path):
    """A source tree that was never built: the twins, and one warning that says how to build."""
    src = Path(neurospca.__file__).parent
    shutil.copytree(
        src,
        tmp_path / "neurospca",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__"),
    )
    # an editable install's import hook would find the built modules of the real tree
    # once the copy's own path fails; drop it so the copy stands alone
    code = (
        NO_EDITABLE_HOOK
        + CASES
        + r"""
import json, warnings
from neurospca import _kernels
assert _kernels.__file__.startswith(TREE), _kernels.__file__
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = cases()
    out2 = cases()  # a second round of every kernel: still one warning
out["available"] = [_kernels.compiled_available(n) for n in ("prox", "tree", "nspca")]
out["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
out["twice_same"] = out2["prox"] == out["prox"]
print("RESULT" + json.dumps(out))
""".replace("TREE", repr(str(tmp_path)))
    )
    env = {k: v for k, v in os.environ.items() if k != "NEUROSPCA_KERNELS"}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(tmp_path))
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=300,
    )
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines, res.stderr[-3000:]
    out = json.loads(lines[0][6:])
    assert out["available"] == [False, False, False]
    assert len(out["warnings"]) == 1, out["warnings"]
    msg = out["warnings"][0]
    assert "pip install -e ." in msg and "build_ext --inplace" in msg
    assert "NEUROSPCA_KERNELS=numpy" in msg
    assert out["twice_same"]
    _assert_same(out, cases())
