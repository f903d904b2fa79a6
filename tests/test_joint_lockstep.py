"""Issue 22 round 10: the joint fit's starts side by side, sharing each pass.

:func:`~neurospca.decomposition._lockstep.run_side_by_side` runs independent
fits on the same data in lockstep: every product each one asks for is the one
it would compute alone (bit for bit), the passes over ``X`` are those of the
longest one, errors and warnings stay with the start that raised them.
"""

import warnings

import numpy as np
import pytest

import neurospca.decomposition._lockstep as lockstep
from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.decomposition._data import as_data_operator, validated_data_operator

from ._helpers import count_passes, starts_side_by_side_warnings


def _op(X, n_threads=1, offsets=None):
    op = as_data_operator(X, n_threads=n_threads)
    op.centre(op.stats["mean"])
    if offsets is not None:  # several row blocks
        op._offsets = np.asarray(offsets)
    return op


@pytest.fixture
def everywhere(monkeypatch):
    """The side-by-side passes in memory too (by default only from a file)."""
    monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", True)


def _memmap(tmp_path, X):
    np.save(tmp_path / "x.npy", X)
    return np.load(tmp_path / "x.npy", mmap_mode="r")


def _chain(op, seed, steps):
    """A fit-like chain of products of different kinds, each on the last one's result."""
    rng = np.random.default_rng(seed)
    n, p = op.shape
    v, out = rng.standard_normal(p), []
    for i in range(steps):
        kind = (seed + i) % 5
        if kind == 0:
            z, g = op.fused(v, rng.standard_normal(n))
        elif kind == 1:
            z, g = op.matvec(v), op.rmatvec(rng.standard_normal(n), exact=True)
        elif kind == 2:
            Z, G = op.gram(np.column_stack([v, rng.standard_normal(p)]))
            z, g = Z[:, 0], G[:, 1]
        elif kind == 3:
            z = rng.standard_normal(n)
            g = op.rmatvecs([2.0 * z, z], exact=True)[1]
        else:
            ((Z, G),) = op.gram_groups([v[:, None]], [np.zeros((n, 1))])
            z, g = Z[:, 0], G[:, 0]
        out += [z, g]
        v = g / np.linalg.norm(g)
    return out


@pytest.mark.parametrize("kind", ["array32", "array64", "memmap32", "dask32", "npy_to_dask32"])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.usefixtures("everywhere")
def test_side_by_side_products_are_each_chain_alone_bit_for_bit(
    tmp_path, kind, n_threads, monkeypatch
):
    """Each chain's products bit for bit its own, in the longest chain's passes
    (dask: the requests' rows come back side by side from the tasks)."""
    rng = np.random.default_rng(3291)
    X = rng.standard_normal((230, 61)) + 0.3
    X = X.astype(np.float32) if kind.endswith("32") else X
    X = _memmap(tmp_path, X) if kind.startswith("memmap") else X
    steps = (7, 3, 5)
    offsets = [0, 50, 97, 180, 230]
    if "dask" in kind:
        dask = pytest.importorskip("dask")
        da = pytest.importorskip("dask.array")
        from neurospca import npy_to_dask

        monkeypatch.setitem(dask.config.config, "scheduler", "sync")
        if kind == "dask32":
            X, offsets = da.from_array(X, chunks=((50, 47, 83, 50), (61,))), None
        else:
            np.save(tmp_path / "x.npy", X)
            X, offsets = npy_to_dask(tmp_path / "x.npy", chunk_rows=40), None
    alone, own = [], []
    for seed, s in enumerate(steps):
        op = _op(X, n_threads, offsets)
        alone.append(_chain(op, seed, s))
        own.append(op.n_passes - 1)  # after the scan
    op = _op(X, n_threads, offsets)
    passes = op.n_passes
    got = lockstep.run_side_by_side(
        op, [lambda seed=seed, s=s: _chain(op, seed, s) for seed, s in enumerate(steps)]
    )
    assert op.n_passes - passes == max(own) < sum(own)  # the longest chain's passes
    assert "_map" not in vars(op)  # the operator's own passes again
    for a, b in zip(alone, got, strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


@pytest.mark.usefixtures("everywhere")
def test_an_error_of_one_start_is_raised_and_stops_the_others():
    op = _op(np.random.default_rng(3292).standard_normal((40, 9)))
    ran = []

    def failing():
        op.matvec(np.ones(9))
        raise ValueError("start 1 failed")

    def long():
        for _ in range(5):
            op.matvec(np.ones(9))
            ran.append(1)
        return "done"

    with pytest.raises(ValueError, match="start 1 failed"):
        lockstep.run_side_by_side(op, [long, failing])
    assert len(ran) <= 2 and "_map" not in vars(op)
    assert lockstep.run_side_by_side(op, [long, long]) == ["done", "done"]


@pytest.mark.usefixtures("everywhere")
def test_each_start_records_its_own_warnings(monkeypatch):
    """A start's ``catch_warnings`` blocks span passes while the other start
    runs its own: each records only its warnings, and the caller's state is
    unchanged (the starts taking turns; free starts use
    ``routed_warnings.recorded``, tests/test_par22t.py)."""
    monkeypatch.setattr(lockstep, "FREE_STARTS", False)
    op = _op(np.random.default_rng(3293).standard_normal((40, 9)))

    def start(name, action):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            for i in range(3):
                op.matvec(np.ones(9))
                warnings.warn(f"{name} {i}", UserWarning, stacklevel=1)
        return [str(w.message) for w in caught]

    filters = warnings.filters
    got, outer = starts_side_by_side_warnings(lockstep.run_side_by_side, op, start)
    assert got == [["a 0", "a 1", "a 2"], []]
    assert outer == ["caller"]
    assert warnings.filters is filters


def _joint_fit(X, op, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(3, operator=op, alpha_rel=1.0, random_state=0, **kw).fit(X)


@pytest.mark.parametrize(
    "dtype, memmap", [(np.float32, True), (np.float64, True), (np.float64, False)]
)
def test_joint_fit_side_by_side_is_the_one_by_one_fit_with_fewer_passes(
    tmp_path, monkeypatch, dtype, memmap
):
    """The joint fit's starts (deflation's and the top singular subspace's,
    with their sweeps, restart checks and restart fits) side by side or one
    after the other, from a memmap or in memory (float64: the Gram path): the
    same model bit for bit, and the passes of the longest start only."""
    X, _, mask = make_paper_simulation(150, random_state=3294, shape=(30, 30), correlation=0.7)
    Xm = _memmap(tmp_path, X.astype(dtype)) if memmap else X
    op = tv_from_mask(mask)
    counted = count_passes(monkeypatch)
    fits, passes = {}, {}
    for on in (False, True):
        monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", on)
        counted.clear()
        fits[on] = _joint_fit(Xm, op)
        passes[on] = len(counted)
    for name in ("components_", "scores_", "dual_gaps_", "rel_gaps_", "certified_support_"):
        assert np.array_equal(getattr(fits[True], name), getattr(fits[False], name)), name
    assert fits[True].n_sweeps_ == fits[False].n_sweeps_
    assert passes[True] <= passes[False] - 10, passes


def test_joint_fit_from_scores_side_by_side(monkeypatch):
    """The full fit of ``alpha_rel="auto"`` starts from given scores; its
    three starts (the scores', deflation's, the subspace's) side by side give
    the fit of one after the other."""
    X, _, mask = make_paper_simulation(120, random_state=3295, shape=(20, 20), correlation=0.7)
    X = X.astype(np.float32)
    u0 = np.random.default_rng(3295).standard_normal((120, 3))
    got = {}
    for on in (False, True):
        monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", on)
        est = SPCATV(3, operator=tv_from_mask(mask), alpha_rel=1.0)
        data = validated_data_operator(est, X, reset=True, min_samples=2, n_threads=1)
        est._centre(data)
        settings = est._settings(data.shape[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            U, V, info, _, _ = est._run(data, 3, est.l1_max_, u0, None, settings, from_scores=True)
        got[on] = (U, V, info["n_sweeps"], data.n_passes)
    assert np.array_equal(got[True][0], got[False][0])
    assert np.array_equal(got[True][1], got[False][1])
    assert got[True][2] == got[False][2]
    assert got[True][3] < got[False][3]


def test_by_default_the_starts_share_passes_everywhere(tmp_path, monkeypatch):
    """The default (``True`` since issue 22 round 14, with one start in the
    calling thread) shares the starts' passes in memory and from a file;
    ``"memmap"`` shares them when the data are read from a file, as ``True``
    does, and runs them one after the other in memory, as ``False`` does (same
    model either way)."""
    assert lockstep.SIDE_BY_SIDE is True and lockstep.MAIN_THREAD_START is True
    X, _, mask = make_paper_simulation(150, random_state=3294, shape=(30, 30), correlation=0.7)
    op = tv_from_mask(mask)
    counted = count_passes(monkeypatch)
    passes, models = {}, {}
    for data in ("array", "memmap"):
        Xd = _memmap(tmp_path, X) if data == "memmap" else X
        for on in (False, True, "memmap"):
            monkeypatch.setattr(lockstep, "SIDE_BY_SIDE", on)
            counted.clear()
            models[data, on] = _joint_fit(Xd, op).components_
            passes[data, on] = len(counted)
    assert passes["array", "memmap"] == passes["array", False] > passes["array", True]
    assert passes["memmap", "memmap"] == passes["memmap", True] < passes["memmap", False]
    for data, on in models:  # (row blocks differ in memory and from a file)
        assert np.array_equal(models[data, on], models[data, False]), (data, on)
