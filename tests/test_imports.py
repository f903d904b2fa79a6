"""``import neurospca`` is cheap: public names are imported where they live on first use.

Each check runs in a fresh interpreter (``sys.modules`` of the test process
already holds everything the suite imported).
"""

import json
import os
import subprocess
import sys

import pytest

import neurospca

#: the stacks that ``import neurospca`` must not load (issue 22, item 1)
HEAVY = (
    "matplotlib",
    "nilearn",
    "pyvista",
    "jinja2",
    "pandas",
    "dask",
    "scipy.optimize",
    "sklearn",
    "nibabel",
    "scipy.stats",
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(neurospca.__file__)))


def _fresh(code):
    """Run ``code`` in a new interpreter that imports this checkout; its stdout as JSON."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_import_loads_no_heavy_stack():
    loaded = _fresh(
        "import json, sys\n"
        "import neurospca\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    assert loaded == []


def test_first_use_imports_where_the_name_lives():
    # the mapping is right: an estimator brings scikit-learn, a simulation does not
    out = _fresh(
        "import json, sys\n"
        "import neurospca\n"
        "f = neurospca.make_paper_simulation\n"
        "before = 'sklearn.base' in sys.modules\n"
        "from neurospca import SPCATV\n"
        "print(json.dumps([before, 'sklearn.base' in sys.modules, SPCATV.__module__,\n"
        "                  f.__module__]))\n"
    )
    assert out == [False, True, "neurospca.decomposition._spcatv", "neurospca.datasets._images"]


def test_every_public_name_resolves_to_its_package_object():
    import importlib

    for name, where in neurospca._LAZY_NAMES.items():
        package = importlib.import_module(f"neurospca.{where}")
        assert getattr(neurospca, name) is getattr(package, name), name
    assert set(neurospca.__all__) - set(neurospca._LAZY_NAMES) == {
        "datasets",
        "model_selection",
        "reporting",
        "solvers",
        "study",
    }


def test_dir_all_and_star_import():
    names = dir(neurospca)
    assert set(neurospca.__all__) <= set(names)
    assert "surface" in names and "load_surface_data" not in neurospca.__all__
    assert names == sorted(names)
    namespace = {}
    exec("from neurospca import *", namespace)  # noqa: S102 - the star import itself
    assert {n for n in namespace if not n.startswith("__")} == set(neurospca.__all__)


def test_subpackages_are_attributes():
    assert neurospca.surface.icosphere is neurospca.icosphere
    assert neurospca.solvers.prox_dual.__name__ == "prox_dual"


def test_unknown_name_is_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        neurospca.no_such_name  # noqa: B018
    assert not hasattr(neurospca, "_private_helper")


def test_volume_masking_with_a_mask_image_imports_no_nilearn_masker():
    # a plain volume model on a given mask image: X is the in-mask values (no
    # nilearn.maskers, no nilearn.surface); masker_ is nilearn's, made when first read,
    # and gives the same matrix
    pytest.importorskip("nilearn")
    out = _fresh(
        "import json, sys\n"
        "import numpy as np, nibabel as nib\n"
        "from neurospca import ImageSPCATV\n"
        "rng = np.random.default_rng(0)\n"
        "mask = np.zeros((8, 7, 6), bool); mask[1:7, 2:6, 1:5] = True\n"
        "data = rng.standard_normal(mask.shape + (5,)).astype(np.float32)\n"
        "m = ImageSPCATV(2, mask=nib.Nifti1Image(mask.astype(np.uint8), np.eye(4)))\n"
        "X = m._prepare(nib.Nifti1Image(data, np.eye(4)), None)\n"
        "loaded = [k for k in ('nilearn.maskers', 'nilearn.surface') if k in sys.modules]\n"
        "masker = m.masker_\n"
        "same = bool(np.array_equal(masker.transform(nib.Nifti1Image(data, np.eye(4))), X))\n"
        "print(json.dumps([loaded, type(masker).__name__, masker is m.masker_, same,\n"
        "    bool(np.array_equal(X, data[mask].T)), 'nilearn.maskers' in sys.modules]))\n"
    )
    assert out == [[], "NiftiMasker", True, True, True, True]


def test_a_computed_mask_is_nilearns_and_imports_no_nilearn_masker():
    # mask=None: the mask is NiftiMasker()'s (its default "background" strategy,
    # nilearn.masking called directly: nilearn.maskers, scikit-learn's estimator
    # checks and pytest are not imported by the fit); the same mask and the same X
    # as a NiftiMasker fitted on the images (round 20)
    pytest.importorskip("nilearn")
    out = _fresh(
        "import json, sys\n"
        "import numpy as np, nibabel as nib\n"
        "from neurospca import ImageSPCATV\n"
        "rng = np.random.default_rng(3799)\n"
        "data = np.zeros((9, 8, 7, 6), np.float32)\n"
        "data[1:8, 2:7, 1:6] = rng.standard_normal((7, 5, 5, 6)) + 3.0\n"
        "data[4, 4, 3] = 0.0  # a background-valued voxel inside: left out by the strategy\n"
        "img = nib.Nifti1Image(data, np.diag([2.0, 2.0, 2.0, 1.0]))\n"
        "m = ImageSPCATV(2)\n"
        "X = m._prepare(img, None)\n"
        "loaded = [k for k in ('nilearn.maskers', 'pytest') if k in sys.modules]\n"
        "from nilearn.maskers import NiftiMasker\n"
        "ref = NiftiMasker().fit(img)\n"
        "same_mask = bool(np.array_equal(m.mask_img_.get_fdata(), ref.mask_img_.get_fdata()))\n"
        "same_affine = bool(np.array_equal(m.mask_img_.affine, ref.mask_img_.affine))\n"
        "same_X = bool(np.array_equal(X, ref.transform(img)))\n"
        "print(json.dumps([loaded, same_mask, same_affine, same_X, int(X.shape[1])]))\n"
    )
    assert out[:4] == [[], True, True, True]
    assert 0 < out[4] < 7 * 5 * 5  # the background voxel is out of the mask
