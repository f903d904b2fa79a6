"""Saved models: exact round trips without pickle, clear errors on bad files, atomic writes."""

import io
import json
import os
import zipfile

import nibabel as nib
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from neurospca import (
    SPCATV,
    Hemispheres,
    VolumeMasker,
    icosphere,
    load_model,
    save_model,
    tv_from_hemispheres,
)
from neurospca.persistence import SavedModel


def _volume_problem(seed=0, n_samples=24):
    rng = np.random.default_rng(seed)
    mask = np.zeros((9, 10, 8), dtype=bool)
    mask[1:8, 1:9, 1:7] = True
    mask[4, 4, 3] = False
    affine = np.diag([2.0, 2.5, 3.0, 1.0])
    affine[:3, 3] = [-10.0, 20.0, 5.5]
    masker = VolumeMasker(nib.Nifti1Image(mask.astype(np.uint8), affine))
    ijk = np.argwhere(mask)
    pattern = np.exp(-((ijk - [3, 3, 3]) ** 2).sum(1) / 4.0)
    X = rng.standard_normal((n_samples, 1)) * 3 * pattern + 0.5 * rng.standard_normal(
        (n_samples, mask.sum())
    )
    return X, masker


def _fitted_volume(solver="dual"):
    X, masker = _volume_problem()
    model = SPCATV(
        2,
        alpha=0.3,
        l1_ratio=0.05,
        tv_ratio=0.2,
        operator=masker.operator(),
        tol=1e-2,
        solver=solver,
        random_state=3,
    ).fit(X)
    return model, masker, X


def _assert_same_estimator(a, b):
    assert type(a) is type(b)
    assert set(vars(a)) == set(vars(b))
    pa, pb = a.get_params(deep=False), b.get_params(deep=False)
    op_a, op_b = pa.pop("operator"), pb.pop("operator")
    assert pa == pb
    if op_a is None:
        assert op_b is None
    else:
        for name in ("data", "indices", "indptr"):
            x, y = getattr(op_a.matrix, name), getattr(op_b.matrix, name)
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
        assert op_a.matrix.shape == op_b.matrix.shape
        assert op_a.group_ptr.tobytes() == op_b.group_ptr.tobytes()
        assert op_a._norm2 == op_b._norm2
        assert op_a.norm2_is_exact == op_b.norm2_is_exact
    for name, value in vars(a).items():
        if name == "operator":
            continue
        other = getattr(b, name)
        if isinstance(value, np.ndarray):
            assert isinstance(other, np.ndarray), name
            assert value.dtype == other.dtype and value.shape == other.shape, name
            assert value.tobytes() == other.tobytes(), name  # bit-identical
        else:
            assert value == other, name
            assert type(value) is type(other), name


@pytest.mark.parametrize("solver", ["dual", "conesta"])
def test_volume_round_trip_is_exact(tmp_path, solver):
    model, masker, X = _fitted_volume(solver)
    path = tmp_path / "model.npz"
    meta = {"title": "study <script>é</script>", "labels": ["a", "b"], "n": 3}
    assert save_model(model, path, space=masker, metadata=meta) == str(path)
    saved = load_model(path)
    assert isinstance(saved, SavedModel)
    _assert_same_estimator(model, saved.estimator)
    if solver == "conesta":  # 3-tuples with an int first column survive as such
        assert any(saved.estimator.mu_history_)
        assert isinstance(saved.estimator.mu_history_[0][0][0], int)
    assert saved.metadata == meta
    assert saved.meshes is None
    assert isinstance(saved.space, VolumeMasker)
    assert np.array_equal(saved.space.mask, masker.mask)
    assert np.array_equal(saved.space.mask_img.affine, masker.mask_img.affine)
    np.testing.assert_array_equal(saved.estimator.transform(X), model.transform(X))
    # saving the loaded model again gives the same arrays
    path2 = tmp_path / "again.npz"
    save_model(saved.estimator, path2, space=saved.space, metadata=saved.metadata)
    with np.load(path, allow_pickle=False) as a, np.load(path2, allow_pickle=False) as b:
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            assert a[key].tobytes() == b[key].tobytes(), key


def test_file_is_plain_npz_without_objects(tmp_path):
    model, masker, _ = _fitted_volume()
    path = tmp_path / "m.npz"
    save_model(model, path, space=masker)
    with np.load(path, allow_pickle=False) as npz:
        for key in npz.files:
            assert not npz[key].dtype.hasobject
        meta = json.loads(npz["meta.json"].tobytes().decode())
    assert meta["format"] == "neurospca-model" and meta["class"] == "SPCATV"


def test_surface_round_trip_with_meshes(tmp_path):
    coords, faces = icosphere(2)
    n = coords.shape[0]
    mask_l = np.ones(n, dtype=bool)
    mask_l[:10] = False
    mask_r = np.ones(n, dtype=bool)
    mask_r[5:20] = False
    op, hemis = tv_from_hemispheres((coords, faces), (coords * 2, faces), mask_l, mask_r)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((15, hemis.n_features))
    X[:, :30] += 4 * rng.standard_normal((15, 1))
    model = SPCATV(2, alpha=0.5, operator=op, tol=1e-2).fit(X)
    meshes = {
        "left": (coords, faces),
        "right": (coords * 2, faces),
        "bg_left": rng.standard_normal(n),
    }
    save_model(model, tmp_path / "s.npz", space=hemis, meshes=meshes)
    saved = load_model(tmp_path / "s.npz")
    _assert_same_estimator(model, saved.estimator)
    assert isinstance(saved.space, Hemispheres)
    assert saved.space.n_vertices == hemis.n_vertices
    for h in range(2):
        assert np.array_equal(saved.space.vertices[h], hemis.vertices[h])
    assert np.array_equal(saved.meshes["left"][0], coords)
    assert np.array_equal(saved.meshes["right"][1], faces)
    assert np.array_equal(saved.meshes["bg_left"], meshes["bg_left"])
    assert "bg_right" not in saved.meshes


def test_model_without_space_or_operator(tmp_path):
    X = np.random.default_rng(0).standard_normal((20, 12))
    model = SPCATV(2, alpha=0.1, tol=1e-2).fit(X)
    save_model(model, tmp_path / "plain.npz")
    saved = load_model(tmp_path / "plain.npz")
    _assert_same_estimator(model, saved.estimator)
    assert saved.space is None and saved.metadata == {}


# --------------------------------------------------------------------------
# bad files
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_file(tmp_path_factory):
    model, masker, _ = _fitted_volume()
    path = tmp_path_factory.mktemp("good") / "model.npz"
    save_model(model, path, space=masker, metadata={"title": "t"})
    return path


def _rewrite(src, dst, edit):
    """Copy an npz archive, letting ``edit(arrays)`` change its arrays."""
    with np.load(src, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    edit(arrays)
    np.savez(dst, **arrays)
    return dst


def _set_meta(arrays, change):
    meta = json.loads(arrays["meta.json"].tobytes().decode())
    change(meta)
    arrays["meta.json"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.99])
def test_truncated_file_is_a_clear_error(good_file, tmp_path, fraction):
    raw = good_file.read_bytes()
    bad = tmp_path / "truncated.npz"
    bad.write_bytes(raw[: int(len(raw) * fraction)])
    with pytest.raises(ValueError, match="not a readable neurospca model file"):
        load_model(bad)


def test_corrupted_bytes_are_detected(good_file, tmp_path):
    raw = bytearray(good_file.read_bytes())
    mid = len(raw) // 2
    raw[mid : mid + 64] = bytes(64)
    bad = tmp_path / "corrupt.npz"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="model"):
        load_model(bad)


def test_not_an_npz(tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_text("hello, I am not a model")
    with pytest.raises(ValueError, match="not a readable neurospca model"):
        load_model(bad)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_model(tmp_path / "missing.npz")


def test_plain_npz_is_not_a_model(tmp_path):
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    with pytest.raises(ValueError, match="not a neurospca model"):
        load_model(tmp_path / "other.npz")


def test_pickled_object_arrays_are_refused(good_file, tmp_path):
    def edit(arrays):
        arrays["attr/components_"] = np.array([{"evil": 1}], dtype=object)

    bad = _rewrite(good_file, tmp_path / "obj.npz", edit)
    with pytest.raises(ValueError, match="not a readable neurospca model"):
        load_model(bad)


@pytest.mark.parametrize(
    "case, match",
    [
        ("format", "not a neurospca model"),
        ("version", "format version"),
        ("class", "not a neurospca estimator"),
        ("missing_array", "malformed"),
        ("bad_json", "malformed header"),
        ("shape", "malformed"),
        ("no_params", "malformed"),
    ],
)
def test_malformed_contents(good_file, tmp_path, case, match):
    def edit(arrays):
        if case == "format":
            _set_meta(arrays, lambda m: m.update(format="something-else"))
        elif case == "version":
            _set_meta(arrays, lambda m: m.update(version=99))
        elif case == "class":
            _set_meta(arrays, lambda m: m.update({"class": "load_model"}))
        elif case == "missing_array":
            del arrays["attr/components_"]
        elif case == "bad_json":
            arrays["meta.json"] = np.frombuffer(b"{not json", dtype=np.uint8)
        elif case == "shape":
            arrays["attr/components_"] = arrays["attr/components_"][:, :-3]
        elif case == "no_params":
            _set_meta(arrays, lambda m: m.pop("params"))

    bad = _rewrite(good_file, tmp_path / f"{case}.npz", edit)
    with pytest.raises(ValueError, match=match):
        load_model(bad)


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    model, masker, _ = _fitted_volume()
    path = tmp_path / "model.npz"
    save_model(model, path, space=masker, metadata={"v": 1})
    before = path.read_bytes()

    def boom(fh, **arrays):
        fh.write(b"partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(np, "savez_compressed", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        save_model(model, path, space=masker, metadata={"v": 2})
    assert path.read_bytes() == before  # old file intact
    with pytest.raises(RuntimeError):
        save_model(model, tmp_path / "new.npz")
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]  # no new file, no temp file


def test_save_errors(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        save_model(SPCATV(), tmp_path / "m.npz")
    model, masker, _ = _fitted_volume()
    with pytest.raises(TypeError, match="metadata must hold JSON"):
        save_model(model, tmp_path / "m.npz", metadata={"x": object()})
    with pytest.raises(TypeError, match="space must be"):
        save_model(model, tmp_path / "m.npz", space="mask.nii")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save_model(model, tmp_path / "nodir" / "m.npz")
    weird = SPCATV(2, alpha=0.3, operator=masker.operator(), tol=1e-2)
    weird.fit(_volume_problem()[0])
    weird.max_iter = object()  # not storable without pickle
    with pytest.raises(TypeError, match="max_iter"):
        save_model(weird, tmp_path / "m.npz")
    assert not os.listdir(tmp_path)


def test_random_state_instance_is_saved_as_none(tmp_path):
    X = np.random.default_rng(0).standard_normal((15, 10))
    model = SPCATV(1, alpha=0.1, tol=1e-2, random_state=np.random.RandomState(0)).fit(X)
    save_model(model, tmp_path / "m.npz")
    assert load_model(tmp_path / "m.npz").estimator.random_state is None


def test_npz_written_in_memory_matches(good_file):
    # the archive is a standard zip: every member has a CRC checked on read
    with zipfile.ZipFile(io.BytesIO(good_file.read_bytes())) as zf:
        assert zf.testzip() is None


@pytest.mark.parametrize("name", ["SSPCA", "NonnegativeSparsePCA", "KTraceNormPCA"])
def test_other_estimators_round_trip(tmp_path, name):
    """Lists of floats, numpy scalars and lists of (indices, matrix) blocks survive too."""
    import warnings

    import neurospca

    cls = getattr(neurospca, name, None)
    if cls is None:
        pytest.skip(f"{name} is not available")
    X = np.abs(np.random.default_rng(0).standard_normal((20, 12)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cls(n_components=2).fit(X)
    save_model(model, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz").estimator
    for attr, value in vars(model).items():
        other = getattr(loaded, attr)
        if attr == "blocks_":  # list of tuples of arrays
            assert type(other) is type(value) and len(other) == len(value)
            for a, b in zip(value, other, strict=True):
                assert type(a) is type(b)
                for x, y in zip(a, b, strict=True):
                    assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
        elif isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and value.tobytes() == other.tobytes(), attr
        else:
            assert value == other and type(value) is type(other), attr
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


def test_hierarchical_dictionary_learning_round_trip(tmp_path):
    """The fitted tree is stored as its parent array and validated again on load."""
    from neurospca import HierarchicalDictionaryLearning
    from neurospca.datasets import make_tree_patches

    X, parent = make_tree_patches(60, random_state=0)
    mask = np.random.default_rng(1).random(X.shape) > 0.5
    model = HierarchicalDictionaryLearning(
        parent, n_components=parent.size, lam=0.1, max_iter=3, random_state=0
    )
    with pytest.warns(ConvergenceWarning):
        model.fit(X)
    save_model(model, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz").estimator
    for name in ("parent", "order", "end", "depth"):
        np.testing.assert_array_equal(getattr(loaded.tree_, name), getattr(model.tree_, name))
    assert loaded.components_.tobytes() == model.components_.tobytes()
    assert loaded.objective_ == model.objective_
    np.testing.assert_array_equal(
        loaded.transform(X * mask, mask=mask), model.transform(X * mask, mask=mask)
    )


def test_unsupported_attribute_is_a_clear_error(tmp_path):
    X = np.random.default_rng(0).standard_normal((15, 10))
    model = SPCATV(1, alpha=0.1, tol=1e-2).fit(X)
    model.extra_ = object()
    with pytest.raises(TypeError, match="attribute extra_ cannot be saved without pickle"):
        save_model(model, tmp_path / "m.npz")
    assert not os.listdir(tmp_path)


# --------------------------------------------------------------------------
# files written by an earlier neurospca still load (same on-disk format)
# --------------------------------------------------------------------------

_V1 = os.path.join(os.path.dirname(__file__), "data", "models_v1")


def _npz(path):
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return json.loads(arrays.pop("meta.json").tobytes().decode()), arrays


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(_V1) if f.endswith(".npz")))
def test_version1_files_load_and_are_rewritten_identically(tmp_path, name):
    """Files written before the codec registry (tests/data/models_v1, by make_files.py)
    load, and saving what was loaded writes the same header and the same arrays."""
    from neurospca.persistence._model import RENAMED_ATTRIBUTES

    old_meta, old_arrays = _npz(os.path.join(_V1, name))
    saved = load_model(os.path.join(_V1, name))
    est = saved.estimator
    assert type(est).__name__ == old_meta["class"]
    assert est.components_.tobytes() == old_arrays["attr/components_"].tobytes()
    if "attr/mean_" in old_arrays:
        assert est.mean_.tobytes() == old_arrays["attr/mean_"].tobytes()
    save_model(
        est, tmp_path / "again.npz", space=saved.space, meshes=saved.meshes, metadata=saved.metadata
    )
    new_meta, new_arrays = _npz(tmp_path / "again.npz")
    for key in ("format", "version", "class", "space", "meshes", "metadata"):
        assert new_meta[key] == old_meta[key], key
    for key, desc in old_meta["params"].items():  # parameters added since take defaults
        assert new_meta["params"][key] == desc, key
    # a list objective_ of an old file became objective_history_ and a float objective_
    split = (
        "objective_history_" in new_meta["fitted"]
        and "objective_history_" not in old_meta["fitted"]
    )
    if split:
        history = est.objective_history_
        old_history = old_arrays["attr/objective_"]
        assert np.array_equal(np.asarray(history), old_history)
        assert isinstance(est.objective_, float) and est.objective_ == old_history[-1]
    kept = [
        n
        for n in old_meta["fitted"]
        if n in new_meta["fitted"] and not (split and n == "objective_")
    ]
    # fitted names renamed since (a codes_ now stored as scores_) are the only difference
    assert set(old_meta["fitted"]) - set(kept) <= set(RENAMED_ATTRIBUTES) | {"objective_"}
    for attr in kept:
        assert new_meta["fitted"][attr] == old_meta["fitted"][attr], attr
    for key, value in old_arrays.items():
        if key.startswith("attr/") and key.split("/")[1] not in kept:
            continue
        assert (
            new_arrays[key].dtype == value.dtype and new_arrays[key].tobytes() == value.tobytes()
        ), key
    if saved.space is not None:
        assert saved.space.n_features == est.components_.shape[1]


def test_renamed_attributes_of_old_files_are_migrated():
    """An old file's ``codes_``/``dual_gap_``/list ``objective_`` land in the current names
    once an estimator has renamed them (deprecated properties keep the old names)."""
    from neurospca.persistence._model import _migrate

    class Renamed:
        """Attributes: scores_, dual_gaps_, objective_, objective_history_."""

        codes_ = property(lambda self: self.scores_)
        dual_gap_ = property(lambda self: self.dual_gaps_[0])

    class Current:
        """Attributes: codes_, objective_."""

    fitted = {"codes_": np.ones((3, 2)), "dual_gap_": 0.5, "objective_": [3.0, 2.0, 1.5]}
    out = _migrate(Renamed, fitted)
    assert set(out) == {"scores_", "dual_gaps_", "objective_", "objective_history_"}
    assert out["scores_"] is fitted["codes_"]
    np.testing.assert_array_equal(out["dual_gaps_"], [0.5])
    assert out["objective_"] == 1.5 and out["objective_history_"] == [3.0, 2.0, 1.5]
    assert _migrate(Current, fitted) == fitted  # nothing renamed yet: untouched
