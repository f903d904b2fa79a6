"""A model file is untrusted input: tampered files end in a ValueError naming the file.

Each test edits a real file written by :func:`save_model` (its JSON header, its
arrays or the zip directory itself) and checks that :func:`load_model` refuses
it, before building anything, with a message naming the file.
"""

import json
import struct
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile

import nibabel as nib
import numpy as np
import pytest

from neurospca import SPCATV, Hemispheres, VolumeMasker, icosphere, load_model, save_model
from neurospca.persistence import MAX_BYTES, MODEL_CLASSES


def _volume_model(tmp_path):
    rng = np.random.default_rng(0)
    mask = np.zeros((5, 5, 4), dtype=np.uint8)
    mask[1:4, 1:4, 1:3] = 1
    masker = VolumeMasker(nib.Nifti1Image(mask, np.eye(4)))
    X = rng.standard_normal((12, masker.n_features))
    model = SPCATV(2, alpha=0.2, operator=masker.operator(), tol=1e-2, max_iter=5).fit(X)
    path = tmp_path / "model.npz"
    save_model(model, path, space=masker, metadata={"title": "t"})
    return path, model, X


def _surface_model(tmp_path):
    coords, faces = icosphere(1)
    n = coords.shape[0]
    hemis = Hemispheres((n, n))
    X = np.random.default_rng(1).standard_normal((10, 2 * n))
    model = SPCATV(1, alpha=0.2, tol=1e-2, max_iter=5).fit(X)
    path = tmp_path / "surf.npz"
    save_model(model, path, space=hemis, meshes={"left": (coords, faces), "right": (coords, faces)})
    return path


@pytest.fixture(scope="module")
def volume_file(tmp_path_factory):
    return _volume_model(tmp_path_factory.mktemp("vol"))


def _arrays(path):
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _write(path, arrays, meta=None):
    if meta is not None:
        arrays = dict(
            arrays, **{"meta.json": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}
        )
    np.savez_compressed(path, **arrays)
    return path


def _meta(arrays):
    return json.loads(arrays["meta.json"].tobytes().decode())


def _tampered(src, dst, edit_meta=None, edit_arrays=None):
    arrays = _arrays(src)
    meta = _meta(arrays)
    if edit_meta:
        edit_meta(meta)
    if edit_arrays:
        edit_arrays(arrays)
    return _write(dst, arrays, meta)


def _refused(path, match):
    with pytest.raises(ValueError, match=match) as info:
        load_model(path)
    assert str(path) in str(info.value)
    return str(info.value)


def test_round_trip_still_exact(volume_file):
    path, model, X = volume_file
    loaded = load_model(path)
    assert loaded.estimator.components_.tobytes() == model.components_.tobytes()
    np.testing.assert_array_equal(loaded.estimator.transform(X), model.transform(X))


# -------------------------------------------------------------------- classes


@pytest.mark.parametrize(
    "name",
    [
        "GroupOperator",
        "VolumeMasker",
        "load_model",
        "Tree",
        "SavedModel",
        "object",
        "__builtins__",
        3,
    ],
)
def test_only_registered_classes(volume_file, tmp_path, name):
    path = _tampered(
        volume_file[0], tmp_path / "c.npz", edit_meta=lambda m: m.update({"class": name})
    )
    _refused(path, "not a neurospca estimator")


def test_registry_is_explicit():
    import neurospca

    assert set(MODEL_CLASSES) < set(neurospca.__all__)
    assert "GroupOperator" not in MODEL_CLASSES and "Hemispheres" not in MODEL_CLASSES


def test_save_refuses_unregistered_estimators(tmp_path):
    from sklearn.decomposition import PCA

    model = PCA(1).fit(np.random.default_rng(0).standard_normal((5, 3)))
    with pytest.raises(TypeError, match="save_model saves SPCATV"):
        save_model(model, tmp_path / "m.npz")


# -------------------------------------------------------------------- params


@pytest.mark.parametrize(
    "name, desc, match",
    [
        ("max_iter", {"kind": "scalar", "value": -5}, "invalid parameter.*max_iter"),
        ("solver", {"kind": "scalar", "value": "evil"}, "invalid parameter.*solver"),
        ("tol", {"kind": "scalar", "value": "x"}, "invalid parameter.*tol"),
        ("alpha", {"kind": "scalar", "value": 0.5, "dtype": "|O"}, "invalid scalar type"),
        ("alpha", {"kind": "scalar", "value": 1, "dtype": "|V2000000000"}, "invalid scalar type"),
        ("not_a_param", {"kind": "scalar", "value": 1}, "no parameter"),
    ],
)
def test_parameters_are_validated(volume_file, tmp_path, name, desc, match):
    path = _tampered(
        volume_file[0], tmp_path / "p.npz", edit_meta=lambda m: m["params"].update({name: desc})
    )
    _refused(path, match)


# -------------------------------------------------------------------- fitted names


@pytest.mark.parametrize(
    "name",
    [
        "fit",
        "transform",
        "__class__",
        "_secret_",
        "Upper_",
        "get_params",
        "n_components",
        "1x_",
        "a b_",
    ],
)
def test_fitted_names_cannot_overwrite_the_class(volume_file, tmp_path, name):
    path = _tampered(
        volume_file[0],
        tmp_path / "f.npz",
        edit_meta=lambda m: m["fitted"].update({name: {"kind": "scalar", "value": 1}}),
    )
    _refused(path, "not a fitted attribute name")


def test_save_refuses_bad_fitted_names(tmp_path):
    X = np.random.default_rng(0).standard_normal((8, 5))
    model = SPCATV(1, alpha=0.1, tol=1e-2, max_iter=3).fit(X)
    model.Bad_ = 1.0
    with pytest.raises(TypeError, match="Bad_"):
        save_model(model, tmp_path / "m.npz")


# -------------------------------------------------------------------- JSON header


def test_deeply_nested_json_is_a_value_error(volume_file, tmp_path):
    arrays = _arrays(volume_file[0])
    raw = arrays["meta.json"].tobytes().decode()
    deep = raw[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    arrays["meta.json"] = np.frombuffer(deep.encode(), dtype=np.uint8)
    path = _write(tmp_path / "deep.npz", arrays)
    _refused(path, "nested too deeply")


def test_moderately_nested_json_is_refused(volume_file, tmp_path):
    nested = {}
    for _ in range(60):
        nested = {"a": nested}
    path = _tampered(
        volume_file[0], tmp_path / "nest.npz", edit_meta=lambda m: m.update(metadata=nested)
    )
    _refused(path, "nested deeper than")


def test_huge_header_is_refused(volume_file, tmp_path):
    path = _tampered(
        volume_file[0],
        tmp_path / "big.npz",
        edit_meta=lambda m: m["metadata"].update(pad="x" * (17 * 2**20)),
    )
    _refused(path, "header declares")


# -------------------------------------------------------------------- entries and sizes


def test_undeclared_entries_are_never_decompressed(volume_file, tmp_path):
    """A 64 MB undeclared member (64 KB compressed) costs no memory."""
    arrays = _arrays(volume_file[0])
    arrays["bomb"] = np.zeros(8 * 2**20)  # 64 MB of zeros
    path = _write(tmp_path / "extra.npz", arrays)
    assert path.stat().st_size < 2**20
    tracemalloc.start()
    try:
        load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20


def test_zip_bomb_beyond_max_bytes_is_refused_before_decompressing(volume_file, tmp_path):
    arrays = _arrays(volume_file[0])
    meta = _meta(arrays)
    arrays["attr/bomb_"] = np.zeros(8 * 2**20)
    meta["arrays"].append("attr/bomb_")
    meta["fitted"]["bomb_"] = {"kind": "array"}
    path = _write(tmp_path / "bomb.npz", arrays, meta)
    tracemalloc.start()
    try:
        msg = _refused_kw(path, "more than max_bytes", max_bytes=2**20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "raise max_bytes" in msg
    assert peak < 4 * 2**20
    load_model(path)  # within the default cap it is a (strange but valid) model


def _refused_kw(path, match, **kwargs):
    with pytest.raises(ValueError, match=match) as info:
        load_model(path, **kwargs)
    assert str(path) in str(info.value)
    return str(info.value)


def _patch_central_size(path, member, size):
    """Rewrite the uncompressed size of ``member`` in the zip's central directory."""
    raw = bytearray(path.read_bytes())
    name = member.encode()
    pos = 0
    while True:
        pos = raw.index(b"PK\x01\x02", pos)
        name_len = struct.unpack("<H", raw[pos + 28 : pos + 30])[0]
        if raw[pos + 46 : pos + 46 + name_len] == name:
            raw[pos + 24 : pos + 28] = struct.pack("<I", size)
            break
        pos += 4
    path.write_bytes(bytes(raw))


def test_huge_declared_size_in_zip_directory(volume_file, tmp_path):
    path = tmp_path / "lie.npz"
    path.write_bytes(volume_file[0].read_bytes())
    _patch_central_size(path, "attr/components_.npy", 3_000_000_000)
    assert 3_000_000_000 > MAX_BYTES
    _refused(path, "more than max_bytes")


def test_size_in_zip_directory_disagreeing_with_npy_header(volume_file, tmp_path):
    path = tmp_path / "lie2.npz"
    path.write_bytes(volume_file[0].read_bytes())
    with zipfile.ZipFile(path) as zf:
        size = zf.getinfo("attr/mean_.npy").file_size
    _patch_central_size(path, "attr/mean_.npy", size + 8)
    _refused(path, "archive holds")


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_npy_header_promising_a_huge_array(volume_file, tmp_path):
    """An .npy header claiming 10**12 elements is refused from the header alone."""
    arrays = _arrays(volume_file[0])
    meta = _meta(arrays)
    path = tmp_path / "huge.npz"
    _write(path, arrays, meta)
    hdr = {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
    with zipfile.ZipFile(path, "a") as zf:
        import io

        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, hdr)
        zf.writestr("attr/huge_.npy", buf.getvalue() + b"\0" * 64)
    arrays_meta = meta
    arrays_meta["arrays"].append("attr/huge_")
    arrays_meta["fitted"]["huge_"] = {"kind": "array"}
    # rewrite the header member too (zip allows duplicates: the last one wins)
    with zipfile.ZipFile(path, "a") as zf:
        buf = io.BytesIO()
        np.lib.format.write_array(
            buf, np.frombuffer(json.dumps(arrays_meta).encode(), dtype=np.uint8)
        )
        zf.writestr("meta.json.npy", buf.getvalue())
    _refused(path, "declares shape")


def test_object_arrays_are_never_unpickled(volume_file, tmp_path):
    path = _tampered(
        volume_file[0],
        tmp_path / "obj.npz",
        edit_arrays=lambda a: a.update({"attr/components_": np.array([{"evil": 1}], dtype=object)}),
    )
    _refused(path, "nothing is unpickled")


# -------------------------------------------------------------------- operator and space


def _set(key, fn):
    return lambda a: a.update({key: fn(a[key])})


@pytest.mark.parametrize(
    "key, fn, match",
    [
        ("param/operator/indices", lambda x: x + 1000, "column indices out of range"),
        ("param/operator/indices", lambda x: -x - 1, "column indices out of range"),
        ("param/operator/indptr", lambda x: x[::-1].copy(), "row pointer"),
        ("param/operator/indptr", lambda x: x[:-1].copy(), "row pointer"),
        ("param/operator/indptr", lambda x: x.astype(np.float64), "integer"),
        ("param/operator/group_ptr", lambda x: x + 1, "group_ptr"),
        ("param/operator/data", lambda x: np.where(np.arange(x.size) == 0, np.nan, x), "finite"),
        ("attr/components_", lambda x: np.full_like(x, np.nan), "NaN"),
        ("attr/mean_", lambda x: x[:-1].copy(), "mean_"),
        ("space/affine", lambda x: np.full_like(x, np.inf), "affine"),
        ("space/mask", lambda x: x.astype(np.uint8), "boolean"),
    ],
)
def test_tampered_arrays(volume_file, tmp_path, key, fn, match):
    path = _tampered(volume_file[0], tmp_path / "a.npz", edit_arrays=_set(key, fn))
    _refused(path, match)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda op: op.update(norm2=float("nan")), "norm2"),
        (lambda op: op.update(norm2=-1.0), "norm2"),
        (lambda op: op.update(shape=[10**12, 3]), "invalid shape"),
        (lambda op: op.update(norm2_is_exact="yes"), "norm2_is_exact"),
    ],
)
def test_tampered_operator_header(volume_file, tmp_path, change, match):
    path = _tampered(
        volume_file[0],
        tmp_path / "o.npz",
        edit_meta=lambda m: change(m["params"]["operator"]["operator"]),
    )
    _refused(path, match)


@pytest.fixture(scope="module")
def surface_file(tmp_path_factory):
    return _surface_model(tmp_path_factory.mktemp("surf"))


@pytest.mark.parametrize(
    "key, fn, match",
    [
        (
            "mesh/left/faces",
            lambda f: np.where(np.arange(f.size).reshape(f.shape) == 0, 10**7, f),
            "out of range",
        ),
        ("mesh/left/faces", lambda f: f.astype(np.float64), "integer"),
        ("mesh/right/coords", lambda c: np.where(c > 0, np.inf, c), "NaN or infinite"),
        ("mesh/right/coords", lambda c: c[:, :2].copy(), "shape"),
        ("space/vertices_left", lambda v: v + 10**6, "out of range"),
    ],
)
def test_tampered_meshes_and_vertices(surface_file, tmp_path, key, fn, match):
    load_model(surface_file)
    path = _tampered(surface_file, tmp_path / "s.npz", edit_arrays=_set(key, fn))
    _refused(path, match)


def test_huge_vertex_count_is_refused(surface_file, tmp_path):
    path = _tampered(
        surface_file,
        tmp_path / "n.npz",
        edit_meta=lambda m: m["space"].update(n_vertices=[10**15, 10]),
    )
    _refused(path, "n_vertices")


# -------------------------------------------------------------------- no paths followed


def test_report_command_does_not_follow_bg_img_from_the_file(volume_file, tmp_path):
    """metadata.bg_img naming a file is plain text: the report never opens it."""
    bad = tmp_path / "secret.nii.gz"
    bad.write_bytes(b"\x1f\x8b not really a NIfTI")
    path = _tampered(
        volume_file[0],
        tmp_path / "bg.npz",
        edit_meta=lambda m: m["metadata"].update(bg_img=str(bad)),
    )
    assert load_model(path).metadata["bg_img"] == str(bad)  # returned as data only
    out = tmp_path / "report.html"
    code = textwrap.dedent(f"""
        import sys
        from neurospca.cli import main
        sys.exit(main(["report", {str(path)!r}, "--output", {str(out)!r}, "-q"]))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert out.exists() and "secret" not in res.stderr
