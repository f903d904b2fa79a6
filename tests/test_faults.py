"""Faults users meet at cohort scale: full disks, outputs that are inputs, saves
through links and onto special files, killed runs, forked processes, files
that change under a lazy array, dying dask workers.

Whatever can crash or hang runs in a child process with a timeout (a signal
or a timeout is a failure of the test, not of the runner).
"""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import nibabel as nib
import numpy as np
import pytest

import neurospca
from neurospca._utils.io import STALE_SECONDS, TEMP_PREFIX, remove_stale_temps, temp_name

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_child(code, timeout=60, prefix=()):
    """Run ``code`` in a fresh interpreter (after ``prefix``); its CompletedProcess.

    A timeout or a death by signal fails the test with the child's stderr.
    """
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    try:
        res = subprocess.run(
            [*prefix, sys.executable, "-c", textwrap.dedent(code)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - a hang is a failure
        pytest.fail(f"the child hung for {timeout} s:\n{exc.stderr}")
    if res.returncode < 0:  # pragma: no cover - a crash is a failure
        pytest.fail(
            f"the child died of {signal.Signals(-res.returncode).name}:\n{res.stderr[-4000:]}"
        )
    assert res.returncode == 0, res.stderr[-4000:]
    return res


@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    """A mask and 6 NIfTI images (in-mask: 6 x 280 float32, 6.7 KB)."""
    root = tmp_path_factory.mktemp("vol")
    rng = np.random.default_rng(0)
    mask = np.zeros((8, 9, 7), dtype=np.uint8)
    mask[1:8, 1:9, 1:6] = 1
    nib.Nifti1Image(mask, np.eye(4)).to_filename(root / "mask.nii.gz")
    files = []
    for i in range(6):
        files.append(str(root / f"sub-{i}.nii.gz"))
        nib.Nifti1Image(rng.standard_normal(mask.shape).astype(np.float32), np.eye(4)).to_filename(
            files[-1]
        )
    return root, files


def _listing(folder):
    return sorted(os.listdir(folder))


# ------------------------------------------------------------------ full disk

FULL_DISK = """
    import errno, os, resource, signal, sys
    import numpy as np, nibabel as nib
    import neurospca
    out = sys.argv[1] if len(sys.argv) > 1 else {out!r}
    files = {files!r}
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
    {limit}
    calls = {{
        "images_to_memmap": lambda p: neurospca.images_to_memmap(files, {mask!r}, p),
        "save_model": lambda p: neurospca.save_model(model, p),
    }}
    X = np.random.default_rng(0).standard_normal((10, 40000))
    model = neurospca.SPCATV(n_components=1, max_iter=2, tol=1e-1).fit(X)
    for name, call in calls.items():
        path = os.path.join(out, name + ".bin")
        try:
            call(path)
        except OSError as exc:
            assert exc.errno in (errno.EFBIG, errno.ENOSPC), exc
            print(name, "refused", errno.errorcode[exc.errno])
        else:
            raise AssertionError(name + " wrote past the limit")
        assert not os.path.exists(path)
    assert os.listdir(out) == [], os.listdir(out)
"""


def _big_volumes(root, n=8, shape=(40, 40, 40)):
    """``n`` images whose in-mask rows make a 2 MB ``.npy``."""
    mask = np.ones(shape, dtype=np.uint8)
    nib.Nifti1Image(mask, np.eye(4)).to_filename(root / "bigmask.nii")
    rng = np.random.default_rng(1)
    files = []
    for i in range(n):
        files.append(str(root / f"big-{i}.nii"))
        nib.Nifti1Image(rng.standard_normal(shape).astype(np.float32), np.eye(4)).to_filename(
            files[-1]
        )
    return files, str(root / "bigmask.nii")


def test_full_disk_is_an_oserror_with_nothing_left(tmp_path):
    """A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored): every writer raises
    OSError(EFBIG) and leaves no file, no temporary file."""
    files, mask = _big_volumes(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    limit = "resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))"
    res = run_child(FULL_DISK.format(out=str(out), files=files, mask=mask, limit=limit))
    assert res.stdout.split() == [
        "images_to_memmap",
        "refused",
        "EFBIG",
        "save_model",
        "refused",
        "EFBIG",
    ]


def _can_mount_tmpfs():
    if shutil.which("unshare") is None:
        return False
    res = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True
    )
    return res.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="cannot mount a tmpfs (no user namespaces)")
def test_full_tmpfs_is_an_oserror_with_nothing_left(tmp_path):
    """A real full disk: a 256 KB tmpfs (in a private mount namespace) and a 2 MB
    ``.npy`` (writing it through a memory map was a SIGBUS)."""
    files, mask = _big_volumes(tmp_path)
    out = tmp_path / "tmpfs"
    out.mkdir()
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent(FULL_DISK.format(out=str(out), files=files, mask=mask, limit=""))
    )
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = f"mount -t tmpfs -o size=256k tmpfs {out} && exec {sys.executable} {script}"
    res = subprocess.run(
        ["unshare", "-rm", "sh", "-c", cmd],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    assert res.stdout.split() == [
        "images_to_memmap",
        "refused",
        "ENOSPC",
        "save_model",
        "refused",
        "ENOSPC",
    ]


# ------------------------------------------------------------ outputs, inputs


def test_output_that_is_an_input_is_refused(volumes):
    root, files = volumes
    before = [open(f, "rb").read() for f in files[:2]]
    for target in (files[0], str(root / "mask.nii.gz")):
        with pytest.raises(ValueError, match=r"path: .* is the input"):
            neurospca.images_to_memmap(files, root / "mask.nii.gz", target)
    os.symlink(files[1], root / "link.npy")
    with pytest.raises(ValueError, match=r"imgs\[1\]"):
        neurospca.images_to_memmap(files, root / "mask.nii.gz", root / "link.npy")
    assert [open(f, "rb").read() for f in files[:2]] == before
    X, _ = neurospca.images_to_memmap(files, root / "mask.nii.gz", root / "X.npy")
    assert X.shape == (6, 7 * 8 * 5)


def test_surfaces_to_memmap_refuses_an_input(tmp_path):
    values = np.arange(12, dtype=np.float32)
    paths = []
    for i in range(3):
        paths.append(str(tmp_path / f"s{i}.mgh"))
        neurospca.write_surf_data(values + i, paths[-1])
    with pytest.raises(ValueError, match=r"files\[2\]"):
        neurospca.surfaces_to_memmap(paths, paths[2])
    np.testing.assert_array_equal(neurospca.load_surf_data(paths[2]), values + 2)


# ------------------------------------------------------- links, special files


@pytest.fixture(scope="module")
def small_model():
    X = np.random.default_rng(0).standard_normal((20, 30))
    return neurospca.SPCATV(n_components=1, tol=1e-2).fit(X)


def test_save_writes_through_a_symlink(tmp_path, small_model):
    target = tmp_path / "store" / "model.npz"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "model.npz"
    os.symlink(target, link)
    neurospca.save_model(small_model, link)
    assert os.path.islink(link) and os.readlink(link) == str(target)
    np.testing.assert_array_equal(
        neurospca.load_model(target).estimator.components_, small_model.components_
    )
    assert _listing(tmp_path) == ["model.npz", "store"]
    assert _listing(target.parent) == ["model.npz"]


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_save_refuses_what_is_not_a_regular_file(tmp_path, small_model, volumes, kind):
    if kind == "folder":
        path = tmp_path / "model.npz"
        path.mkdir()
    elif kind == "fifo":
        path = tmp_path / "model.npz"
        os.mkfifo(path)
    else:
        path = "/dev/null"
    mode = os.stat(path).st_mode
    with pytest.raises(ValueError, match="path: .* exists and is a"):
        neurospca.save_model(small_model, path)
    assert os.stat(path).st_mode == mode
    root, files = volumes
    with pytest.raises(ValueError, match="path: .* exists and is a"):
        neurospca.images_to_memmap(files, root / "mask.nii.gz", path)
    assert os.stat(path).st_mode == mode


# ------------------------------------------------------- stale temporary files


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_killed_runs_are_removed(tmp_path, small_model):
    """Temporary files and folders of a dead process, old enough, are removed by
    the next save; those of live processes, recent ones and foreign names stay."""
    old = time.time() - STALE_SECONDS - 60
    dead = temp_name(str(tmp_path), "model.npz").replace(f"-{os.getpid()}-", f"-{_dead_pid()}-")
    dead_dir = dead.replace("model.npz", "out")
    live = temp_name(str(tmp_path), "model.npz").replace(f"-{os.getpid()}-", "-1-")
    recent = dead.replace("model.npz", "recent.npz")
    for p in (dead, live, recent):
        open(p, "wb").close()
    os.mkdir(dead_dir)
    open(os.path.join(dead_dir, "report.html"), "w").close()
    os.symlink("/etc/hostname", os.path.join(dead_dir, "link"))
    foreign = tmp_path / ".tmp-123-model.npz"
    foreign.write_bytes(b"")
    for p in (dead, live, dead_dir, foreign):
        os.utime(p, (old, old))
    neurospca.save_model(small_model, tmp_path / "model.npz")
    names = _listing(tmp_path)
    assert os.path.basename(dead) not in names and os.path.basename(dead_dir) not in names
    assert {os.path.basename(live), os.path.basename(recent), foreign.name, "model.npz"} == set(
        names
    )
    assert os.path.exists("/etc/hostname")
    assert remove_stale_temps(str(tmp_path)) == []


def test_killed_save_leaves_a_recognisable_temporary(tmp_path):
    """A save killed by SIGKILL while writing leaves only a name of the pattern."""
    code = f"""
        import os, signal, numpy as np, neurospca
        from neurospca._utils import io
        def write(tmp):
            open(tmp, "wb").write(b"partial")
            os.kill(os.getpid(), signal.SIGKILL)
        io.atomic_write(write, {str(tmp_path / "x.npz")!r})
    """
    env = dict(os.environ, PYTHONPATH=ROOT)
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, timeout=60)
    assert res.returncode == -signal.SIGKILL
    (name,) = _listing(tmp_path)
    assert name.startswith(TEMP_PREFIX) and name.endswith("-x.npz")
    assert remove_stale_temps(str(tmp_path), max_age=0) == [str(tmp_path / name)]


def test_cli_never_replaces_an_input(volumes, tmp_path, capsys):
    """An input named like an output inside --output, and a report over its model."""
    from neurospca.cli import main

    root, files = volumes
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(files[0], out / "loadings.nii.gz")
    images = [str(out / "loadings.nii.gz")] + files[1:]
    before = (out / "loadings.nii.gz").read_bytes()
    argv = [
        "fit",
        "--images",
        *images,
        "--mask",
        str(root / "mask.nii.gz"),
        "--output",
        str(out),
        "--n-components",
        "1",
        "-q",
    ]
    assert main(argv) == 2
    assert "--images:" in capsys.readouterr().err
    assert (out / "loadings.nii.gz").read_bytes() == before
    assert _listing(out) == ["loadings.nii.gz"]
    model = tmp_path / "m.npz"
    model.write_bytes(b"not a model")
    assert main(["report", str(model), "--output", str(model)]) == 2
    assert model.read_bytes() == b"not a model"


# ------------------------------------------------------------------- fork

FORK = """
    import multiprocessing, os, sys, time
    import numpy as np
    import neurospca
    from neurospca.solvers import _base, prox_dual
    op = neurospca.tv_from_mask(np.ones((48, 48, 40), bool))  # 270,336 rows: 2 chunks
    assert _base.n_chunks_for(op.n_rows, 2) == 2
    y = np.random.default_rng(0).standard_normal(op.matrix.shape[1])
    kw = dict(tol=1e-12, max_iter=40, gap_every=10, n_threads=2)
    ref = prox_dual(y, op, 0.1, 0.5, **kw)  # the first block runs on 2 threads

    def child_vstep(_=None):
        _base._THREAD_TIMES.clear()  # the next block would run on 2 threads
        res = prox_dual(y, op, 0.1, 0.5, **kw)
        assert neurospca._kernels.forked_child()
        return bool(np.array_equal(res.v, ref.v) and res.gap == ref.gap)

    for i in range({repeat}):
        pid = os.fork()
        if pid == 0:
            os._exit(0 if child_vstep() else 3)
        t0 = time.monotonic()
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.monotonic() - t0 > 30:
                os.kill(pid, 9)
                sys.exit(f"fork {{i}}: the child hung in the v-step")
            time.sleep(0.01)
        prox_dual(y, op, 0.1, 0.5, **kw)  # the parent keeps its 2 threads
    with multiprocessing.get_context("fork").Pool(2) as pool:
        out = pool.map_async(child_vstep, range(2)).get(timeout=30)
    assert out == [True, True], out
    assert not neurospca._kernels.forked_child()
    print("forks ok")
"""


def test_forked_child_after_a_threaded_vstep_does_not_hang():
    """A child forked after a 2-thread v-step on a 2-chunk operator runs its own
    v-step (on one thread: the same iterates, bit for bit), repeatedly; a
    multiprocessing 'fork' pool too. Before, the child hung in GOMP_parallel."""
    res = run_child(FORK.format(repeat=4), timeout=150, prefix=("env", "OMP_NUM_THREADS=2"))
    assert "forks ok" in res.stdout


# ---------------------------------------------------------- files that change


def test_npy_to_dask_refuses_a_file_that_changed(tmp_path):
    pytest.importorskip("dask")
    path = tmp_path / "X.npy"
    rng = np.random.default_rng(0)
    X0 = rng.standard_normal((12, 20))
    np.save(path, X0)
    X = neurospca.npy_to_dask(path, chunk_rows=5)
    np.testing.assert_array_equal(X.compute(), X0)
    np.save(tmp_path / "other.npy", rng.standard_normal((3, 7)))
    os.replace(tmp_path / "other.npy", path)  # replaced: another inode and shape
    with pytest.raises(ValueError, match=r"path: .*X\.npy' changed after npy_to_dask"):
        X.compute()
    np.save(path, X0)
    X = neurospca.npy_to_dask(path, chunk_rows=5)
    with open(path, "r+b") as fh:  # rewritten in place: same inode and size
        fh.seek(-8, os.SEEK_END)
        fh.write(np.float64(7.0).tobytes())
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    with pytest.raises(ValueError, match="changed after npy_to_dask"):
        X[10:].compute()


def test_npy_to_dask_chunks_are_read_only_views_of_the_file(tmp_path):
    """A chunk of npy_to_dask is a read-only view of its rows of the file (no
    copy): its values are the file's, and it cannot write them."""
    pytest.importorskip("dask")
    path = tmp_path / "X.npy"
    X0 = np.random.default_rng(3406).standard_normal((12, 20)).astype(np.float32)
    np.save(path, X0)
    X = neurospca.npy_to_dask(path, chunk_rows=5)
    chunk = X.to_delayed()[1, 0].compute(scheduler="sync")
    np.testing.assert_array_equal(chunk, X0[5:10])
    assert not chunk.flags.writeable and not chunk.flags.owndata
    base = chunk
    while not isinstance(base, np.memmap):
        base = base.base
    assert os.path.samefile(base.filename, path)
    with pytest.raises(ValueError, match="read-only"):
        chunk[0, 0] = 1.0
    np.testing.assert_array_equal(np.load(path), X0)


def _npy_bytes(descr, shape, payload=b""):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return buf.getvalue() + payload


@pytest.mark.parametrize(
    "content, match",
    [
        (b"", "not a readable .npy file"),
        (_npy_bytes("|O", (2, 2)), "holds Python objects"),
        (_npy_bytes("<f8", (200, 2), b"\0" * 64), "truncated"),
        (_npy_bytes("<c16", (2, 2), b"\0" * 64), "expected real numbers"),
        (b"PK\x03\x04 a zip", "not a readable .npy file"),
    ],
)
def test_npy_to_dask_errors_name_path(tmp_path, content, match):
    pytest.importorskip("dask")
    path = tmp_path / "bad.npy"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match) as info:
        neurospca.npy_to_dask(path)
    assert str(info.value).startswith("path: ") and "pickle" not in str(info.value)
    os.remove(path)
    os.mkfifo(path)
    with pytest.raises(ValueError, match=r"path: .* exists but is a FIFO"):
        neurospca.npy_to_dask(path)  # opening a FIFO would block forever
    with pytest.raises(ValueError, match=r"path: .* exists but is a folder"):
        neurospca.npy_to_dask(tmp_path)
    with pytest.raises(FileNotFoundError, match="path: no such file"):
        neurospca.npy_to_dask(tmp_path / "missing.npy")


MEMMAP_CHANGES = """
    import os, numpy as np, neurospca
    from neurospca.decomposition._data import as_data_operator
    rng = np.random.default_rng(0)
    path = {path!r}
    np.save(path, rng.standard_normal((30, 50)))
    model = neurospca.SPCATV(n_components=1, tol=1e-2, stability=False)
    X = np.load(path, mmap_mode="r")
    np.save(path + ".new.npy", rng.standard_normal((30, 50)))
    os.replace(path + ".new.npy", path)  # the memmap still maps the old file
    try:
        model.fit(X)
    except ValueError as exc:
        assert str(exc).startswith("X: ") and "was replaced" in str(exc), exc
        print("replaced: refused")
    X = np.load(path, mmap_mode="r")
    op = as_data_operator(X)
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 2)  # reading the map now: SIGBUS
    try:
        op.scan()
    except ValueError as exc:
        assert "changed during the fit" in str(exc), exc
        print("truncated during the fit: refused")
    try:
        model.fit(X)
    except ValueError as exc:
        assert "was truncated" in str(exc), exc
        print("truncated: refused")
"""


def test_memmap_whose_file_changed_is_refused(tmp_path):
    """Replaced (another inode) or truncated under a memmap: ValueError naming X,
    never numbers of another file, never a SIGBUS."""
    res = run_child(MEMMAP_CHANGES.format(path=str(tmp_path / "X.npy")))
    assert res.stdout.splitlines() == [
        "replaced: refused",
        "truncated during the fit: refused",
        "truncated: refused",
    ]


def test_dask_array_embedding_a_memmap_warns(tmp_path):
    """The data operator every fit and transform builds warns about a dask array
    that embeds a memmap, not about npy_to_dask or a plain memmap."""
    da = pytest.importorskip("dask.array")
    from neurospca.decomposition._data import as_data_operator

    path = tmp_path / "X.npy"
    X0 = np.random.default_rng(0).standard_normal((40, 30))
    np.save(path, X0)
    embedded = da.from_array(np.load(path, mmap_mode="r"), chunks=(10, 30)) * 1.0
    with pytest.warns(UserWarning, match=r"X is a dask array that embeds a NumPy memmap"):
        op = as_data_operator(embedded)
    np.testing.assert_allclose(op.stats["mean"], X0.mean(axis=0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for X in (neurospca.npy_to_dask(path, chunk_rows=10), np.load(path, mmap_mode="r")):
            np.testing.assert_allclose(as_data_operator(X).stats["mean"], X0.mean(axis=0))
    assert not [w for w in caught if "memmap" in str(w.message)]


# ------------------------------------------------------------ model loader


def _with_member(path, name, descr, shape, desc):
    """Add the array ``name`` (an .npy header of ``shape`` and ``descr``, no data) to
    the model file ``path`` and declare it as the fitted attribute of ``desc``."""
    import io
    import json
    import zipfile

    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = json.loads(np.load(io.BytesIO(members["meta.json.npy"])).tobytes())
    meta["arrays"].append(name)
    meta["fitted"][desc[0]] = desc[1]
    raw = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.save(buf, raw)
    members["meta.json.npy"] = buf.getvalue()
    members[name + ".npy"] = _npy_bytes(descr, shape)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    return path


@pytest.mark.parametrize("case", ["n_vertices", "string", "rows_of_nothing", "operator"])
def test_model_loader_bounds_declared_sizes_before_allocating(tmp_path, case, capsys):
    """Small files that declare huge sizes: a ValueError naming the file, with
    almost nothing allocated; `neurospca report` exits 2 with one line."""
    import tracemalloc

    from neurospca.cli import main
    from tests.test_model_files import _surface_model, _tampered, _volume_model

    if case == "n_vertices":
        path = _tampered(
            _surface_model(tmp_path),
            tmp_path / "bad.npz",
            edit_meta=lambda m: m["space"].update(n_vertices=[2**31 - 1, 2**31 - 1]),
        )
    elif case == "operator":

        def edit(m):
            m["params"]["operator"]["operator"]["shape"][1] = 2**31 - 1

        path = _tampered(_volume_model(tmp_path)[0], tmp_path / "bad.npz", edit_meta=edit)
    elif case == "string":
        path = _with_member(
            _volume_model(tmp_path)[0],
            "attr/names_",
            "<U0",
            (2**40,),
            ("names_", {"kind": "array", "object_str": True}),
        )
    else:
        path = _with_member(
            _volume_model(tmp_path)[0],
            "attr/hist_/0",
            "<f8",
            (2**40, 0),
            ("hist_", {"kind": "ragged", "items": [{"int_columns": []}]}),
        )
    assert os.path.getsize(path) < 30_000
    tracemalloc.start()
    with pytest.raises(ValueError, match="max_bytes") as info:
        neurospca.load_model(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert str(path) in str(info.value) and peak < 20 * 2**20
    assert main(["report", str(path), "--output", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "max_bytes" in err


# ------------------------------------------- silent acceptances, unclear errors


def _fit(X):
    return neurospca.SPCATV(n_components=1, tol=1e-1, max_iter=3, stability=False).fit(X)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda X: X.astype("datetime64[s]"), TypeError, r"X holds dates"),
        (lambda X: X.astype("timedelta64[s]"), TypeError, r"X holds durations"),
        (lambda X: X.astype(str), TypeError, r"X holds strings"),
        (lambda X: X.astype(str).astype(object), TypeError, r"X holds strings"),
        (lambda X: X.reshape(20, 5, 2), ValueError, r"X must be a 2-D array .* got 3-D"),
        (lambda X: __import__("pandas").DataFrame(X.astype(str)), TypeError, r"X column 0"),
    ],
)
def test_bad_kinds_of_x_are_refused(make, error, match):
    X = np.arange(200, dtype=np.int64).reshape(20, 10) % 7
    with pytest.raises(error, match=match):
        _fit(make(X))


def test_inverse_transform_refuses_non_finite_scores():
    model = _fit(np.random.default_rng(0).standard_normal((20, 10)))
    S = np.ones((2, 1))
    np.testing.assert_allclose(model.inverse_transform(S), S @ model.components_ + model.mean_)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match=r"X \(the scores\) contains NaN or infinite"):
            model.inverse_transform(np.full((2, 1), bad))


def _raw_singular(data, path):
    """A NIfTI file whose sform (the only transform) is singular (nibabel
    refuses to write one)."""
    import struct

    nib.Nifti1Image(data, np.eye(4)).to_filename(path)
    raw = bytearray(open(path, "rb").read())
    struct.pack_into("<hh", raw, 252, 0, 1)  # qform_code 0, sform_code 1
    struct.pack_into("<4f", raw, 280, 0, 0, 0, 0)  # srow_x = 0
    open(path, "wb").write(bytes(raw))
    return path


@pytest.fixture(scope="module")
def odd_images(tmp_path_factory):
    root = tmp_path_factory.mktemp("odd")
    rng = np.random.default_rng(0)
    shape = (5, 5, 5)
    mask = np.zeros(shape, np.uint8)
    mask[1:4, 1:4, 1:4] = 1
    nib.Nifti1Image(mask, np.eye(4)).to_filename(root / "mask.nii.gz")
    ok = rng.standard_normal(shape).astype(np.float32)
    nib.Nifti1Image(ok, np.eye(4)).to_filename(root / "ok.nii.gz")
    nib.Nifti1Image(ok + 1j, np.eye(4)).to_filename(root / "complex.nii.gz")
    nib.Nifti1Image(np.zeros(shape + (0,), np.float32), np.eye(4)).to_filename(
        root / "empty.nii.gz"
    )
    rgb = np.zeros(shape, dtype=[("R", "u1"), ("G", "u1"), ("B", "u1")])
    nib.Nifti1Image(rgb, np.eye(4)).to_filename(root / "rgb.nii.gz")
    _raw_singular(ok, root / "singular.nii")
    _raw_singular(mask, root / "singular_mask.nii")
    raw = (root / "ok.nii.gz").read_bytes()
    (root / "truncated.nii.gz").write_bytes(raw[: len(raw) // 2])
    return root


@pytest.mark.parametrize(
    "name, error, match",
    [
        ("complex.nii.gz", TypeError, r"imgs\[1\]: .* holds complex values"),
        ("empty.nii.gz", ValueError, r"imgs\[1\]: .* 4-D image with no frame"),
        ("rgb.nii.gz", TypeError, r"imgs\[1\]: .* holds .* values \(e.g. RGB"),
        ("singular.nii", ValueError, r"imgs\[1\]: .* singular or non-finite affine"),
        ("truncated.nii.gz", ValueError, r"imgs\[1\]: .* truncated gzip file"),
    ],
)
def test_odd_images_are_refused_naming_the_image(odd_images, name, error, match, tmp_path):
    imgs = [str(odd_images / "ok.nii.gz"), str(odd_images / name)]
    for call in (
        lambda: neurospca.images_to_data(imgs, odd_images / "mask.nii.gz"),
        lambda: neurospca.images_to_data(imgs, odd_images / "mask.nii.gz", resample=True),
        lambda: neurospca.images_to_memmap(imgs, odd_images / "mask.nii.gz", tmp_path / "X.npy"),
    ):
        with pytest.raises(error, match=match):
            call()
    assert not os.path.exists(tmp_path / "X.npy")


def test_singular_affine_in_masks_and_model_files(odd_images, tmp_path):
    from tests.test_model_files import _tampered, _volume_model

    with pytest.raises(ValueError, match=r"mask: .* singular or non-finite affine"):
        neurospca.tv_from_mask(odd_images / "singular_mask.nii")

    def edit(arrays):
        arrays["space/affine"] = np.diag([0.0, 1.0, 1.0, 1.0])

    path = _tampered(_volume_model(tmp_path)[0], tmp_path / "bad.npz", edit_arrays=edit)
    with pytest.raises(
        ValueError,
        match=r"bad\.npz' is malformed: the saved affine is "
        "singular",
    ):
        neurospca.load_model(path)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"min_zero_fraction": 2.0}, r"min_zero_fraction must be in \[0, 1\]"),
        ({"min_zero_fraction": float("nan")}, r"min_zero_fraction must be in \[0, 1\]"),
        ({"sparse_indices": ()}, r"sparse_indices must be a (non-empty )?sequence"),
        ({"sparse_indices": (-1,)}, r"sparse_indices must be a (non-empty )?sequence"),
        ({"sparse_indices": (1, 5)}, r"sparse_indices \(1, 5\) name components past the last"),
    ],
)
def test_impossible_sparsity_settings_are_refused(kw, match):
    from neurospca.model_selection import select_penalty

    X = np.random.default_rng(0).standard_normal((20, 10))
    est = neurospca.SPCATV(n_components=2, tol=1e-1, max_iter=3, stability=False)
    with pytest.raises(ValueError, match=match):
        select_penalty(est, X, rule="sparsity", alpha_rel=[1.0], cv=2, refit=False, **kw)


# ------------------------------------------------------------ dask workers die

#: Shared by the scripts below: a LocalCluster on 127.0.0.1 with two real
#: worker processes and no nanny to restart them.
START_CLUSTER = """
    import subprocess, sys, warnings
    warnings.simplefilter("ignore")
    import faulthandler
    faulthandler.dump_traceback_later(200)  # where it hangs, if it does
    from distributed import Client, LocalCluster

    def start_cluster():
        cluster = LocalCluster(n_workers=0, processes=True, host="127.0.0.1",
                               dashboard_address=None, silence_logs=50)
        client = Client(cluster)
        workers = [subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
             "--no-nanny", "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
        client.wait_for_workers(2, timeout=120)
        return client, workers
"""

WORKERS_DIE = """
    import os, signal, threading, time
    import numpy as np
    import neurospca

    def fit(X):
        try:
            neurospca.SPCATV(n_components=2, alpha=0.05, tol=1e-9, max_iter=400,
                             stability=False).fit(X)
            return "result"
        except RuntimeError as exc:
            assert str(exc).startswith("X: ") and "dask" in str(exc), exc
            return "error"

    if __name__ == "__main__":
        path = sys.argv[1]
        np.save(path, np.random.default_rng(0).standard_normal((200, 400)))
        client, workers = start_cluster()
        X = neurospca.npy_to_dask(path, chunk_rows=100)

        def kill():
            time.sleep(2.0)
            for w in workers:
                w.send_signal(signal.SIGKILL)
        threading.Thread(target=kill, daemon=True).start()
        t0 = time.monotonic()
        print("workers killed:", fit(X), flush=True)
        print(f"ended after {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
        os._exit(0)
"""

RESULTS_LOST = """
    import os, signal, time
    import numpy as np
    import dask
    from distributed import wait
    from neurospca.decomposition._sources import gather_watched

    if __name__ == "__main__":
        client, workers = start_cluster()
        futures = client.compute([dask.delayed(np.ones)(1000)])
        wait(futures)  # the result now lives on a worker only
        for w in workers:
            w.send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        try:
            gather_watched("X", client, futures)
            print("result")
        except RuntimeError as exc:
            print("error" if str(exc).startswith("X: the dask cluster has had no worker")
                  else exc)
        print(f"{time.monotonic() - t0:.1f}", flush=True)
        os._exit(0)
"""


def _run_on_a_cluster(tmp_path, source, args, timeout, what):
    """Run ``source`` (after :data:`START_CLUSTER`) in a child process with a 5 s
    no-worker timeout; a hang past ``timeout`` fails the test naming ``what``."""
    pytest.importorskip("distributed")
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(START_CLUSTER) + textwrap.dedent(source))
    env = dict(
        os.environ,
        NEUROSPCA_DASK_NO_WORKER_TIMEOUT="5",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    try:
        res = subprocess.run(
            [sys.executable, str(script), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - a hang is a failure
        pytest.fail(f"{what} hung after its workers died:\n{exc.stdout}\n{exc.stderr}")
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    return res


def test_fit_on_a_cluster_whose_workers_die_ends(tmp_path):
    """A fit on a LocalCluster (127.0.0.1) whose two worker processes are killed
    (SIGKILL, no nanny to restart them) ends with a RuntimeError naming X after
    the no-worker timeout (5 s here), where it used to wait forever."""
    res = _run_on_a_cluster(tmp_path, WORKERS_DIE, [str(tmp_path / "X.npy")], 240, "the fit")
    assert res.stdout.splitlines() == ["workers killed: error"], res.stderr[-3000:]


def test_results_lost_before_they_are_fetched_end_in_an_error(tmp_path):
    """Workers killed after a task finished but before its result reached the
    client: the fetch ends in the no-worker RuntimeError (5 s here) where a plain
    ``client.gather`` waits forever for a worker to recompute the result (the
    hang CI met once in test_fit_on_a_cluster_whose_workers_die_ends)."""
    res = _run_on_a_cluster(tmp_path, RESULTS_LOST, [], 120, "the fetch")
    verdict, seconds = res.stdout.splitlines()
    assert verdict == "error", res.stderr[-3000:]
    assert 5.0 <= float(seconds) < 60.0
