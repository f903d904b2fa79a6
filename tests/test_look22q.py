"""Issue 22 round 17: the look-ahead only where a pass is expensive.

Deflation's look-ahead (:class:`~neurospca.decomposition._start.LookAhead`) and
the restart checks' larger span (:func:`~neurospca.decomposition._joint_starts.
checks_ahead`) save two passes each and cost Ritz steps and products of their
own: they run only where the passes this fit already made say a pass is
expensive (:func:`~neurospca.decomposition._data.pass_is_expensive`: a memmap
whose last pass was read from storage, a dask array); elsewhere the fit is
bit for bit the fit with both off.
"""

import os
import warnings

import numpy as np
import pytest

import neurospca.decomposition._joint_starts as joint_starts
import neurospca.decomposition._start as start
from neurospca.decomposition import _data
from neurospca.decomposition._data import DataOperator, as_data_operator, pass_is_expensive

from ._helpers import drop_from_page_cache
from .test_datapath import _as_read_from_disk, _fit, _instance, _Reads


def _memmap(tmp_path, n=3000, seed=7):
    X = _instance(n=n, seed=seed).astype(np.float32)
    path = tmp_path / "x.npy"
    with open(path, "wb") as fh:
        np.save(fh, X)
        fh.flush()
        os.fsync(fh.fileno())  # clean pages: the page cache may drop them
    return np.load(path, mmap_mode="r")


def _counted_fit(Xm, reads):
    reads.bytes = 0
    m = _fit(Xm, alpha_rel=1.0)
    return m, reads.bytes / Xm.nbytes


def _both_off(mp):
    mp.setattr(start, "LOOK_AHEAD", False)
    mp.setattr(joint_starts, "CHECK_LOADINGS", False)


def test_a_pass_is_expensive_only_where_it_was_read_from_storage(tmp_path, monkeypatch):
    """In memory never; a memmap when its last pass read at least half its
    bytes from storage (unknown: yes, as before round 17); the reads of each
    pass are those of the process during the pass."""
    X = _instance(n=200, seed=3627).astype(np.float32)
    op = as_data_operator(X, n_threads=1)
    assert op.kind == "array" and not pass_is_expensive(op)
    np.save(tmp_path / "x.npy", X)
    Xm = np.load(tmp_path / "x.npy", mmap_mode="r")
    op = DataOperator(Xm, n_threads=1)
    assert op.last_pass_reads is None and pass_is_expensive(op)  # no pass yet
    op.matvec(np.ones(X.shape[1]))
    assert op.last_pass_reads is not None
    reads = iter([0, Xm.nbytes // 2 - 1, 10, 10 + Xm.nbytes // 2])
    monkeypatch.setattr(_data, "storage_reads", lambda: next(reads))
    op.matvec(np.ones(X.shape[1]))
    assert op.last_pass_reads == Xm.nbytes // 2 - 1 and not pass_is_expensive(op)
    op.matvec(np.ones(X.shape[1]))
    assert op.last_pass_reads == Xm.nbytes // 2 and pass_is_expensive(op)
    monkeypatch.setattr(_data, "storage_reads", lambda: None)  # not Linux
    op.last_pass_reads = None
    op.matvec(np.ones(X.shape[1]))
    assert op.last_pass_reads is None and pass_is_expensive(op)


def test_flags_say_where_passes_cost():
    """``"expensive"`` follows the rule, ``"memmap"`` the kind of data (round
    16's rule), True and False everywhere / nowhere."""
    op = as_data_operator(_instance(n=100).astype(np.float32), n_threads=1)
    got = [start.where_passes_cost(f, op) for f in ("expensive", "memmap", True, False)]
    assert got == [False, False, True, False]
    op.kind, op.last_pass_reads = "memmap", 0  # a memmap in the page cache
    op.X = np.empty(10, np.float32)
    got = [start.where_passes_cost(f, op) for f in ("expensive", "memmap", True, False)]
    assert got == [False, True, True, False]


def test_in_the_page_cache_the_fit_is_the_fit_with_both_off(tmp_path, monkeypatch):
    """A memmap whose passes read nothing from storage: 16 passes (no
    look-ahead, no checks' span), components bit for bit those of the fit with
    both off; where every pass is read from storage: 12, within 1e-6."""
    Xm = _memmap(tmp_path)
    reads = _Reads(monkeypatch)
    monkeypatch.setattr(_data, "storage_reads", lambda: 0)  # all in the page cache
    m, passes = _counted_fit(Xm, reads)
    with monkeypatch.context() as mp:
        _both_off(mp)
        off, off_passes = _counted_fit(Xm, reads)
    assert passes == off_passes == 16
    assert np.array_equal(m.components_, off.components_)
    _as_read_from_disk(monkeypatch)
    ahead, ahead_passes = _counted_fit(Xm, reads)
    assert ahead_passes == 12
    assert np.abs(ahead.components_ - m.components_).max() < 1e-6


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise")
def test_a_file_dropped_from_the_page_cache_before_every_pass(tmp_path, monkeypatch):
    """The real reads: the file dropped from the page cache before every pass
    (as a file larger than memory) makes every pass expensive: 12 passes; the
    file dropped once, before the fit, only its first pass: the fit with both
    off (16, bit for bit). Skipped where the system does not count the reads
    or keeps the file (e.g. tmpfs)."""
    Xm = _memmap(tmp_path)
    path = str(tmp_path / "x.npy")
    drop_from_page_cache(path)
    before = _data.storage_reads()
    np.asarray(Xm[-1]).sum()
    if before is None or _data.storage_reads() == before:
        pytest.skip("the page cache is not dropped or reads are not counted here")
    reads = _Reads(monkeypatch)
    with warnings.catch_warnings(), monkeypatch.context() as mp:
        _both_off(mp)
        off, off_passes = _counted_fit(Xm, reads)
    drop_from_page_cache(path)
    once, once_passes = _counted_fit(Xm, reads)
    original = DataOperator._map

    def dropped(op, *args, **kw):
        drop_from_page_cache(path)
        return original(op, *args, **kw)

    monkeypatch.setattr(DataOperator, "_map", dropped)
    every, every_passes = _counted_fit(Xm, reads)
    assert (off_passes, once_passes, every_passes) == (16, 16, 12)
    assert np.array_equal(once.components_, off.components_)
    assert np.abs(every.components_ - off.components_).max() < 1e-6
