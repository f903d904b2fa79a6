"""Hypothesis fuzz cases over the public entry points, run one per process.

``python -m tests._fuzz_cases NAME`` runs the case ``NAME`` (a hypothesis test)
and exits 0 if every example ended in a result or in a ValueError/TypeError
whose message names the argument (or the file); a crash (signal), a hang
(``faulthandler`` kills the process after ``--timeout`` seconds and prints
where it hung), a NaN output or any other exception is a failure.
:mod:`tests.test_fuzz` starts one such process per case.

Examples are derandomized (the same on every run) and few per case, so that
the whole suite runs in about a minute on one core.
"""

import io
import json
import os
import shutil
import struct
import sys
import tempfile
import warnings
import zipfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=int(os.environ.get("NEUROSPCA_FUZZ_EXAMPLES", "30")),
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=False,
    suppress_health_check=list(HealthCheck),
)

_TMP = None


def _tmp():
    global _TMP
    if _TMP is None:
        _TMP = tempfile.mkdtemp(prefix="neurospca-fuzz-")
    return _TMP


class Refused(Exception):
    """An error that is not a clear ValueError/TypeError naming the argument."""


COUNTS = {"result": 0, "error": 0}


def expect(fn, names):
    """``fn()``, or None if it raised a ValueError/TypeError mentioning one of ``names``."""
    try:
        out = fn()
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if not msg or not any(n in msg for n in names):
            raise Refused(f"{type(exc).__name__} does not name any of {names}: {msg!r}") from exc
        COUNTS["error"] += 1
        if os.environ.get("NEUROSPCA_FUZZ_VERBOSE"):
            print(f"  {type(exc).__name__}: {msg[:150]}", file=sys.stderr)
        return None
    COUNTS["result"] += 1
    return out


def finite(*arrays):
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            raise AssertionError(f"non-finite output: {a!r}")


# --------------------------------------------------------------------------
# numeric input
# --------------------------------------------------------------------------

DTYPES = [np.float64, np.float64, np.float32, np.int64, np.int8, bool]
MODERATE = [-12, -3, 0, 3, 12]
EXTREME = [-300, -200, -154, 154, 200, 300]
SPECIALS = [None, None, None, None, np.nan, np.inf, -np.inf]


@st.composite
def matrices(draw, exponents, min_rows=1, max_rows=7, max_cols=9, dtypes=DTYPES):
    n = draw(st.integers(min_rows, max_rows))
    p = draw(st.integers(1, max_cols))
    seed = draw(st.integers(0, 2**16))
    X = np.random.default_rng(seed).standard_normal((n, p)) * 10.0 ** draw(
        st.sampled_from(exponents)
    )
    special = draw(st.sampled_from(SPECIALS))
    if special is not None:
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, p - 1))] = special
    dtype = draw(st.sampled_from(dtypes))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = X.astype(dtype) if dtype is not bool else X > 0
    return X


def _operator(draw, p):
    from neurospca import chain_operator

    choice = draw(st.sampled_from(["none", "chain", "wrong"]))
    if choice == "none" or p < 2:
        return None
    return chain_operator(p if choice == "chain" else p + 1)


NUMBERS = st.sampled_from([1e-8, 1e-3, 0.1, 1.0, 10.0, 1e8])
EXTREME_NUMBERS = st.sampled_from([1e-300, 1e-200, 1e-8, 1.0, 1e200, 1e300])
BAD_NUMBERS = st.sampled_from([0.0, -1.0, np.nan, np.inf, "0.1", None, True])
RATIOS = st.sampled_from([0.0, 0.05, 0.3, 0.6, 0.999, 1.0, -0.1, np.nan])
SPCATV_NAMES = (
    "X",
    "alpha",
    "l1_ratio",
    "tv_ratio",
    "operator",
    "n_components",
    "tol",
    "max_iter",
    "solver",
    "sample",
    "feature",
    "array",
    "NaN",
    "infinite",
)


def _spcatv_case(data, exponents, solvers, numbers=NUMBERS):
    from neurospca import SPCATV

    X = data.draw(matrices(exponents, min_rows=data.draw(st.sampled_from([2, 2, 2, 1]))))
    p = X.shape[1]
    kwargs = dict(
        n_components=data.draw(st.integers(1, 2)),
        alpha=data.draw(st.one_of(st.none(), numbers)),
        l1_ratio=data.draw(st.sampled_from([0.0, 0.05, 0.3, 0.6])),
        tv_ratio=data.draw(st.sampled_from([0.0, 0.1, 0.3])),
        operator=_operator(data.draw, p),
        solver=data.draw(st.sampled_from(solvers)),
        max_iter=data.draw(st.integers(1, 4)),
        tol=data.draw(st.sampled_from([1e-6, 1e-3, 0.5])),
        random_state=0,
    )
    if data.draw(st.integers(0, 3)) == 0:  # one invalid parameter
        name = data.draw(
            st.sampled_from(
                ["n_components", "alpha", "l1_ratio", "tv_ratio", "tol", "max_iter", "solver"]
            )
        )
        kwargs[name] = data.draw(st.one_of(BAD_NUMBERS, RATIOS, st.just("x"), st.just(10**6)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = expect(lambda: SPCATV(**kwargs).fit(X), SPCATV_NAMES)
        if est is None:
            return
        finite(est.components_, est.mean_)
        assert est.components_.shape[1] == p
        X2 = data.draw(matrices(exponents, max_cols=p))
        if X2.shape[1] != p:
            X2 = np.resize(X2, (X2.shape[0], p))
        scores = expect(lambda: est.transform(X2), SPCATV_NAMES)
        if scores is not None:
            finite(scores)


@FUZZ
@given(st.data())
def spcatv(data):
    """SPCATV.fit/transform on moderate scales, both solvers, valid and invalid params."""
    _spcatv_case(data, MODERATE, ["dual", "conesta"])


@FUZZ
@given(st.data())
def spcatv_extreme(data):
    """Scales up to 1e300 and tiny penalties (LinAlgError, CONESTA spinning: cert fixes)."""
    _spcatv_case(data, EXTREME, ["dual", "conesta"], EXTREME_NUMBERS)


@FUZZ
@given(st.data())
def spca_tv_function(data):
    from neurospca import spca_tv

    X = data.draw(matrices(MODERATE, min_rows=2))
    kwargs = dict(
        l1=data.draw(NUMBERS),
        l2=data.draw(st.sampled_from([1e-3, 1.0, 10.0])),
        tv=data.draw(NUMBERS),
        operator=_operator(data.draw, X.shape[1]),
        max_iter=3,
        solver=data.draw(st.sampled_from(["dual", "conesta"])),
    )
    k = 1
    if data.draw(st.integers(0, 3)) == 0:  # one invalid argument
        name = data.draw(st.sampled_from(["l1", "l2", "tv", "k"]))
        value = data.draw(st.one_of(BAD_NUMBERS, st.sampled_from([-1, 0, 10**6])))
        if name == "k":
            k = value
        else:
            kwargs[name] = value
    names = SPCATV_NAMES + ("l1", "l2", "tv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = expect(lambda: spca_tv(X, k, **kwargs), names)
    if out is not None:
        finite(*[o for o in out if isinstance(o, np.ndarray)])


@FUZZ
@given(st.data())
def tv_from_mask(data):
    from neurospca import tv_from_mask as build

    ndim = data.draw(st.integers(0, 4))
    shape = tuple(data.draw(st.integers(0, 4)) for _ in range(ndim))
    seed = data.draw(st.integers(0, 2**16))
    values = np.random.default_rng(seed).integers(
        0, 3 if data.draw(st.booleans()) else 2, size=shape
    )
    dtype = data.draw(st.sampled_from([bool, np.uint8, np.int64, np.float64, np.complex128]))
    mask = values.astype(dtype) if dtype is not bool else values > 0
    if dtype is np.float64 and mask.size and data.draw(st.booleans()):
        mask.flat[0] = np.nan
    threshold = data.draw(st.sampled_from([None, None, 0.5, np.nan, "x", -1e300]))
    op = expect(lambda: build(mask, threshold=threshold), ("mask", "threshold"))
    if op is not None:
        kept = int(np.sum(np.asarray(mask) > (0 if threshold is None else threshold)))
        assert op.n_features == kept, (op.n_features, kept)
        v = np.random.default_rng(seed).standard_normal(op.n_features)
        finite(op.value(v), op.matvec(v))


@st.composite
def meshes(draw):
    """A real icosphere, scaled, then (often) damaged in one way."""
    from neurospca import icosphere

    coords, faces = icosphere(draw(st.integers(0, 1)))
    coords = coords * 10.0 ** draw(st.sampled_from([-100, -3, 0, 3, 100]))
    faces = faces.copy()
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n, m = coords.shape[0], faces.shape[0]
    mask = None
    damage = draw(
        st.sampled_from(
            [
                "none",
                "none",
                "mask",
                "nan",
                "inf",
                "face_high",
                "face_negative",
                "face_1e7",
                "float_faces",
                "repeat",
                "duplicate",
                "flat",
                "isolated",
                "coords_2d",
                "faces_4",
                "empty",
                "bad_mask",
                "uint16",
            ]
        )
    )
    if damage == "mask":
        mask = rng.random(n) > 0.3
    elif damage in ("nan", "inf"):
        coords[rng.integers(n), rng.integers(3)] = np.nan if damage == "nan" else np.inf
    elif damage == "face_high":
        faces[rng.integers(m), rng.integers(3)] = n
    elif damage == "face_negative":
        faces[rng.integers(m), rng.integers(3)] = -1
    elif damage == "face_1e7":
        faces[rng.integers(m), rng.integers(3)] = 10**7
    elif damage == "float_faces":
        faces = faces.astype(np.float64)
    elif damage == "repeat":
        faces[0, 1] = faces[0, 0]
    elif damage == "duplicate":
        faces = np.vstack([faces, faces[:1]])
    elif damage == "flat":
        coords[faces[0, 2]] = 2 * coords[faces[0, 1]] - coords[faces[0, 0]]
    elif damage == "isolated":
        coords = np.vstack([coords, [[5.0, 5.0, 5.0]]])
    elif damage == "coords_2d":
        coords = coords[:, :2]
    elif damage == "faces_4":
        faces = np.hstack([faces, faces[:, :1]])
    elif damage == "empty":
        faces = faces[:0]
    elif damage == "bad_mask":
        mask = rng.random(n + 1) > 0.5
    elif damage == "uint16":
        faces = faces.astype(np.uint16)
    return coords, faces, mask


@FUZZ
@given(meshes(), st.sampled_from(["edges", "gradient", "other"]))
def tv_from_mesh(mesh, kind):
    from neurospca import tv_from_mesh as build

    coords, faces, mask = mesh
    op = expect(lambda: build(coords, faces, mask, kind=kind), ("coords", "faces", "mask", "kind"))
    if op is not None:
        v = np.random.default_rng(0).standard_normal(op.n_features)
        finite(op.value(v), op.matvec(v), op.norm2)


# --------------------------------------------------------------------------
# operators and solvers
# --------------------------------------------------------------------------

OPERATOR_NAMES = (
    "matrix",
    "group_ptr",
    "norm2",
    "indices",
    "indptr",
    "operator",
    "shape",
    "column",
    "row",
)


@st.composite
def raw_operators(draw):
    """CSR arrays that may be inconsistent: indices out of range, indptr not monotone..."""
    import scipy.sparse as sp

    rows = draw(st.integers(1, 6))
    cols = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    mat = sp.random(rows, cols, density=0.5, format="csr", random_state=seed)
    data, indices, indptr = mat.data.copy(), mat.indices.copy(), mat.indptr.copy()
    damage = draw(
        st.sampled_from(
            [
                "none",
                "index_high",
                "index_negative",
                "indptr",
                "nan",
                "norm2_zero",
                "group_ptr",
                "huge",
            ]
        )
    )
    if damage == "index_high" and indices.size:
        indices[rng.integers(indices.size)] = cols + draw(st.sampled_from([0, 5, 10**6]))
    elif damage == "index_negative" and indices.size:
        indices[rng.integers(indices.size)] = -draw(st.sampled_from([1, 10**6]))
    elif damage == "indptr" and rows > 1:
        indptr[1] = indptr[-1] + 3
    elif damage == "nan" and data.size:
        data[0] = np.nan
    elif damage == "huge":
        data *= 1e300
    group_ptr = np.arange(rows + 1)
    if damage == "group_ptr":
        group_ptr = np.array([0, rows + 2])
    norm2 = 0.0 if damage == "norm2_zero" else draw(st.sampled_from([None, 1.0, 1e6]))
    return data, indices, indptr, (rows, cols), group_ptr, norm2


@FUZZ
@given(raw_operators(), st.sampled_from(["dual", "conesta"]))
def group_operator(raw, solver):
    import scipy.sparse as sp

    from neurospca import GroupOperator
    from neurospca.solvers import conesta, prox_dual

    data, indices, indptr, shape, group_ptr, norm2 = raw

    def build():
        mat = sp.csr_matrix((data, indices, indptr), shape=shape)
        return GroupOperator(mat, group_ptr, norm2=norm2)

    op = expect(build, OPERATOR_NAMES)
    if op is None:
        return
    v = np.random.default_rng(1).standard_normal(op.n_features)
    with np.errstate(all="ignore"):
        finite(op.value(v), op.matvec(v), op.rmatvec(op.matvec(v)), op.norm2)
        solve = prox_dual if solver == "dual" else conesta
        res = solve(v, op, 0.1, 0.5, max_iter=200)
    finite(res.v, res.gap)


@st.composite
def warm_starts(draw, n):
    kind = draw(st.sampled_from(["none", "ok", "short", "long", "nan", "inf", "huge", "2d", "int"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if kind == "none":
        return None
    if kind == "short":
        return rng.standard_normal(max(n - 1, 0))
    if kind == "long":
        return rng.standard_normal(n + 3)
    w = rng.standard_normal(n)
    if kind == "nan":
        w[0] = np.nan
    elif kind == "inf":
        w[-1] = np.inf
    elif kind == "huge":
        w *= 1e300
    elif kind == "2d":
        w = w[:, None]
    elif kind == "int":
        w = np.ones(n, dtype=np.int64)
    return w


def _solver_case(data, hostile):
    from neurospca import chain_operator, tv_from_mask
    from neurospca.solvers import conesta, prox_dual, prox_objective

    if data.draw(st.booleans()):
        op = chain_operator(data.draw(st.integers(2, 12)))
    else:
        op = tv_from_mask(np.ones((3, 3, data.draw(st.integers(1, 3))), dtype=bool))
    y = np.random.default_rng(data.draw(st.integers(0, 2**16))).standard_normal(
        op.n_features
    ) * 10.0 ** data.draw(st.sampled_from(MODERATE))
    l1 = data.draw(st.sampled_from([0.0, 1e-300, 1e-3, 0.1, 1.0, 1e6]))
    group = data.draw(st.sampled_from([0.0, 1e-300, 1e-3, 0.1, 1.0, 1e6]))
    tol = data.draw(st.sampled_from([1e-8, 1e-3, 0.1]))
    kernels = data.draw(st.sampled_from(["cython", "numpy"]))
    names = ("y", "operator", "l1", "group", "tol", "w0", "v0", "max_iter", "kernels")
    if data.draw(st.booleans()):
        start = data.draw(warm_starts(op.n_rows)) if hostile else None
        res = expect(
            lambda: prox_dual(y, op, l1, group, tol=tol, max_iter=300, w0=start, kernels=kernels),
            names,
        )
    else:
        start = data.draw(warm_starts(op.n_features)) if hostile else None
        res = expect(
            lambda: conesta(y, op, l1, group, tol=tol, max_iter=300, v0=start, kernels=kernels),
            names,
        )
    if res is not None:
        finite(res.v, res.gap)
        # the certificate is a lower bound of the optimum (weak duality):
        # P(v) - gap <= P* <= P(z) for the feasible z = 0 and z = y
        p_v = prox_objective(res.v, y, op, l1, group)
        p_z = min(
            prox_objective(np.zeros_like(y), y, op, l1, group), prox_objective(y, y, op, l1, group)
        )
        slack = 1e-9 * (abs(p_v) + res.gap + p_z) + 1e-300
        assert p_v - res.gap <= p_z + slack, (p_v, res.gap, p_z)


@FUZZ
@given(st.data())
def solvers(data):
    """prox_dual and conesta on valid problems over 24 decades of scale, cold starts."""
    _solver_case(data, hostile=False)


@FUZZ
@given(st.data())
def solvers_warm_starts(data):
    """Hostile warm starts: wrong length, NaN, inf, 2-D, huge (validated on cert branch)."""
    _solver_case(data, hostile=True)


# --------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------


def _reader_files():
    """Real files of every format, written once per process with nibabel."""
    import nibabel as nib

    from neurospca import icosphere, write_surf_data, write_surf_mesh

    root = os.path.join(_tmp(), "readers")
    if os.path.isdir(root):
        return root
    os.makedirs(root)
    coords, faces = icosphere(1)
    rng = np.random.default_rng(0)
    write_surf_mesh(coords, faces, os.path.join(root, "m.surf.gii"))
    write_surf_mesh(coords, faces, os.path.join(root, "lh.white"))
    values = rng.standard_normal((coords.shape[0], 2))
    write_surf_data(values, os.path.join(root, "d.func.gii"))
    write_surf_data(values, os.path.join(root, "d.mgz"))
    write_surf_data(values, os.path.join(root, "d.mgh"))
    write_surf_data(values[:, 0], os.path.join(root, "lh.thickness"))
    labels = (coords[:, 2] > -0.5).astype(np.int32)
    ctab = np.array([[25, 5, 25, 0, 0], [220, 20, 10, 0, 0]], dtype=np.int32)
    nib.freesurfer.write_annot(
        os.path.join(root, "lh.aparc.annot"), labels, ctab, [b"unknown", b"cortex"], fill_ctab=True
    )
    with open(os.path.join(root, "lh.cortex.label"), "w") as fh:
        kept = np.flatnonzero(labels)
        fh.write(f"#!ascii label\n{kept.size}\n")
        fh.writelines(f"{v} 0.0 0.0 0.0 0.0\n" for v in kept)
    mask = np.zeros((5, 6, 4), dtype=np.uint8)
    mask[1:4, 1:5, 1:3] = 1
    for ext in (".nii.gz", ".nii"):
        nib.Nifti1Image(mask, np.eye(4)).to_filename(os.path.join(root, "mask" + ext))
        nib.Nifti1Image(
            rng.standard_normal((5, 6, 4, 3)).astype(np.float32), np.eye(4)
        ).to_filename(os.path.join(root, "img" + ext))
    nib.MGHImage(rng.standard_normal((5, 6, 4)).astype(np.float32), np.eye(4)).to_filename(
        os.path.join(root, "vol.mgz")
    )
    return root


READERS = {
    "m.surf.gii": ("load_surf_mesh", "surf"),
    "lh.white": ("load_surf_mesh", "surf"),
    "d.func.gii": ("load_surf_data", "data"),
    "d.mgz": ("load_surf_data", "data"),
    "d.mgh": ("load_surf_data", "data"),
    "lh.thickness": ("load_surf_data", "data"),
    "lh.aparc.annot": ("load_cortex_mask", "source"),
    "lh.cortex.label": ("load_cortex_mask", "source"),
    "mask.nii.gz": ("load_mask_img", "mask"),
    "mask.nii": ("load_mask_img", "mask"),
    "img.nii.gz": ("images_to_data", "imgs"),
    "img.nii": ("images_to_data", "imgs"),
    "vol.mgz": ("images_to_data", "imgs"),
}


@st.composite
def damaged(draw, raw):
    how = draw(st.sampled_from(["truncate", "flip", "zero", "append", "header"]))
    b = bytearray(raw)
    if how == "truncate":
        return bytes(b[: draw(st.integers(0, len(b) - 1))])
    if how == "append":
        return bytes(b) + draw(st.binary(min_size=1, max_size=64))
    if how == "header":  # the first bytes hold the sizes and dtypes of most formats
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, min(len(b), 400) - 1))
            b[i] = draw(st.integers(0, 255))
        return bytes(b)
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(b) - 1))
        b[i] = 0 if how == "zero" else b[i] ^ (1 << draw(st.integers(0, 7)))
    return bytes(b)


@FUZZ
@given(st.data())
def readers(data):
    import neurospca

    root = _reader_files()
    name = data.draw(st.sampled_from(sorted(READERS)))
    func, arg = READERS[name]
    with open(os.path.join(root, name), "rb") as fh:
        raw = fh.read()
    bad = data.draw(damaged(raw))
    path = os.path.join(_tmp(), "damaged-" + name)
    with open(path, "wb") as fh:
        fh.write(bad)
    fn = getattr(neurospca, func)
    if func == "images_to_data":
        call = lambda: fn(path, os.path.join(root, "mask.nii.gz"))  # noqa: E731
    elif name.endswith(".label"):
        call = lambda: fn(path, 42)  # noqa: E731
    else:
        call = lambda: fn(path)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = expect(call, (path, arg))
    if out is None:
        return
    if func == "images_to_data":
        finite(out[0])
    elif func == "load_surf_mesh":
        assert out[0].ndim == 2 and out[1].ndim == 2


def _model_files():
    """A volume model (operator, mask) and a surface model (meshes), saved once."""
    import nibabel as nib

    from neurospca import SPCATV, Hemispheres, VolumeMasker, icosphere, save_model

    root = os.path.join(_tmp(), "models")
    if os.path.isdir(root):
        return root
    os.makedirs(root)
    rng = np.random.default_rng(0)
    mask = np.zeros((4, 4, 3), dtype=np.uint8)
    mask[1:3, 1:4, :2] = 1
    masker = VolumeMasker(nib.Nifti1Image(mask, np.eye(4)))
    X = rng.standard_normal((8, masker.n_features))
    model = SPCATV(2, alpha=0.2, operator=masker.operator(), tol=1e-2, max_iter=3).fit(X)
    save_model(
        model,
        os.path.join(root, "volume.npz"),
        space=masker,
        metadata={"title": "t", "labels": ["a", "b"]},
    )
    coords, faces = icosphere(1)
    n = coords.shape[0]
    model = SPCATV(1, alpha=0.2, tol=1e-2, max_iter=3).fit(rng.standard_normal((6, 2 * n)))
    save_model(
        model,
        os.path.join(root, "surface.npz"),
        space=Hemispheres((n, n)),
        meshes={"left": (coords, faces), "right": (coords, faces)},
    )
    return root


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=8)
    | st.sampled_from(
        ["array", "scalar", "operator", "seq", "dict", "|O", "<f8", "SPCATV", "volume", "surface"]
    ),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["kind", "value", "dtype", "items", "shape", "norm2", "x"]),
            children,
            max_size=3,
        )
    ),
    max_leaves=6,
)


def _paths(value, prefix=()):
    """Every path into a JSON value (for picking one to replace)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _replace(value, path, new):
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


def _rezip(members, path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)


def _npy(arr):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


@st.composite
def tampered_models(draw, src):
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = json.loads(np.load(io.BytesIO(members["meta.json.npy"])).tobytes())
    how = draw(
        st.sampled_from(["json", "json", "array", "undeclared", "bomb", "bytes", "size", "deep"])
    )
    if how == "json":
        paths = list(_paths(meta))
        target = draw(st.sampled_from(paths[1:]))
        meta = _replace(meta, target, draw(JSON_VALUES))
    elif how == "array":
        name = draw(st.sampled_from(sorted(n for n in members if n != "meta.json.npy")))
        rng = np.random.default_rng(draw(st.integers(0, 2**16)))
        shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
        dtype = draw(st.sampled_from(["<f8", "<i4", "|b1", "<U3", "<c16", ">f8", "<f2"]))
        arr = (rng.standard_normal(shape) * 10).astype(dtype)
        if arr.dtype.kind == "f" and arr.size and draw(st.booleans()):
            arr.flat[0] = np.nan
        members[name] = _npy(arr)
    elif how == "undeclared":
        members["extra.npy"] = _npy(np.zeros(2**20))
    elif how == "bomb":
        name = draw(st.sampled_from(["attr/components_.npy", "attr/mean_.npy"]))
        members[name] = _npy(np.zeros(2**22))  # 32 MB, about 32 KB compressed
    text = json.dumps(meta)
    if how == "deep":  # nesting deeper than Python's recursion limit
        depth = draw(st.sampled_from([40, 5000, 100_000]))
        text = text[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
    members["meta.json.npy"] = _npy(np.frombuffer(text.encode(), dtype=np.uint8))
    dst = os.path.join(_tmp(), "tampered.npz")
    _rezip(members, dst)
    if how in ("bytes", "size"):
        with open(dst, "rb") as fh:
            raw = bytearray(fh.read())
        if how == "bytes":
            raw = bytearray(draw(damaged(bytes(raw))))
        else:  # lie about an uncompressed size in the central directory
            pos = raw.find(b"PK\x01\x02")
            if pos >= 0:
                raw[pos + 24 : pos + 28] = struct.pack(
                    "<I", draw(st.sampled_from([0, 1, 2**31, 2**32 - 1]))
                )
        with open(dst, "wb") as fh:
            fh.write(bytes(raw))
    return dst


@FUZZ
@given(st.data())
def load_model(data):
    from neurospca import load_model as load

    src = os.path.join(_model_files(), data.draw(st.sampled_from(["volume.npz", "surface.npz"])))
    path = data.draw(tampered_models(src))
    saved = expect(lambda: load(path, max_bytes=2**24), (path,))
    if saved is None:
        return
    est = saved.estimator
    p = est.components_.shape[1]
    X = np.random.default_rng(0).standard_normal((3, p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = expect(lambda: est.transform(X), SPCATV_NAMES)
    if scores is not None:
        finite(scores)
    if saved.space is not None:
        assert saved.space.n_features == p


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------

OPTION_VALUES = st.sampled_from(
    ["1", "2", "0", "-1", "nan", "inf", "1e400", "abc", "0.5", "1e-300", ""]
)


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 12))
@given(st.data())
def cli(data):
    from contextlib import redirect_stderr, redirect_stdout

    from neurospca.cli import main

    root = _reader_files()
    work = tempfile.mkdtemp(dir=_tmp())
    try:
        images = os.path.join(root, "img.nii.gz")
        if data.draw(st.booleans()):
            with open(images, "rb") as fh:
                raw = fh.read()
            images = os.path.join(work, "img.nii.gz")
            with open(images, "wb") as fh:
                fh.write(data.draw(damaged(raw)))
        argv = [
            "fit",
            "--images",
            images,
            "--mask",
            os.path.join(root, "mask.nii.gz"),
            "--output",
            os.path.join(work, "out"),
            "--engine",
            "matplotlib",
        ]
        for option in data.draw(
            st.lists(
                st.sampled_from(
                    [
                        "--alpha",
                        "--l1-ratio",
                        "--tv-ratio",
                        "--tol",
                        "--n-components",
                        "--max-iter",
                        "--mask-threshold",
                    ]
                ),
                max_size=3,
                unique=True,
            )
        ):
            value = data.draw(OPTION_VALUES)
            if option == "--max-iter" and value not in ("0", "-1", "abc", ""):
                value = "2"  # keep runs short
            argv += [option, value]
        if "--max-iter" not in argv:
            argv += ["--max-iter", "2"]
        if "--n-components" not in argv:
            argv += ["--n-components", "1"]
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse
                code = exc.code
        text = err.getvalue()
        assert "Traceback" not in text, text
        assert code in (0, 2), (code, text)
        if code == 2:
            errors = [line for line in text.splitlines() if "error:" in line]
            assert len(errors) == 1, text
        else:
            out = os.path.join(work, "out")
            assert sorted(os.listdir(out)) == [
                "loadings.nii.gz",
                "model.npz",
                "report.html",
                "scores.csv",
            ]
        assert [f for f in os.listdir(work) if ".tmp-" in f or "neurospca-tmp" in f] == []
    finally:
        shutil.rmtree(work, ignore_errors=True)


CASES = {
    f.__name__: f
    for f in (
        spcatv,
        spcatv_extreme,
        spca_tv_function,
        tv_from_mask,
        tv_from_mesh,
        group_operator,
        solvers,
        solvers_warm_starts,
        readers,
        load_model,
        cli,
    )
}


def _main():
    import faulthandler

    name = sys.argv[1]
    timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 120.0
    faulthandler.enable()
    faulthandler.dump_traceback_later(timeout, exit=True)  # a hang prints where, then exits
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        CASES[name]()
    finally:
        if _TMP is not None:
            shutil.rmtree(_TMP, ignore_errors=True)
    print(f"fuzz case {name}: ok ({COUNTS['result']} results, {COUNTS['error']} clear errors)")


if __name__ == "__main__":
    _main()
