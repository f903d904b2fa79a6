"""Files and folders are written completely or not at all (DESIGN.md section 9).

Every temporary file or folder is named ``.neurospca-tmp-<host>-<pid>-<hex>-<name>``
beside its destination (:func:`temp_name`); a save or a command-line run that
is killed leaves it behind, and the next write into the same folder removes
it (:func:`remove_stale_temps`) once it is older than :data:`STALE_SECONDS`,
owned by this user and its process, on this host, is gone.
"""

import os
import re
import shutil
import socket
import stat
import time
import uuid

from .signals import signals_blocked

#: Prefix of every temporary file and folder neurospca writes.
TEMP_PREFIX = ".neurospca-tmp-"

#: A temporary file of a dead process is removed once it is this old (seconds).
STALE_SECONDS = 300

_TEMP_RE = re.compile(re.escape(TEMP_PREFIX) + r"(?P<host>.+?)-(?P<pid>[0-9]+)-[0-9a-f]{12}-")


def _host():
    """This host's name as it appears in temporary names (no ``-`` or ``/``)."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:40] or "host"


def temp_name(directory, base):
    """A fresh temporary path in ``directory`` that ends with ``base``.

    Parameters
    ----------
    directory : str
        Where the temporary file or folder goes (beside its destination).
    base : str
        The destination's basename (writers that infer the format from the
        extension see the right one).

    Returns
    -------
    str
    """
    return os.path.join(
        directory, f"{TEMP_PREFIX}{_host()}-{os.getpid()}-{uuid.uuid4().hex[:12]}-{base}"
    )


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def remove_stale_temps(directory, max_age=None):
    """Remove the temporary files and folders of killed neurospca runs in ``directory``.

    A name is removed only when all hold: it matches :func:`temp_name`'s
    pattern, was made on this host by a process that no longer exists, is
    owned by this user, and was last modified more than ``max_age`` seconds
    ago. Symbolic links are never followed (a link is removed, not its target).
    Errors are ignored: this is housekeeping.

    Parameters
    ----------
    directory : str
        The folder to clean.
    max_age : float, optional
        Seconds; default :data:`STALE_SECONDS`.

    Returns
    -------
    list of str
        The paths removed.
    """
    max_age = STALE_SECONDS if max_age is None else max_age
    removed, host, now, uid = [], _host(), time.time(), os.getuid()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        m = _TEMP_RE.match(entry.name)
        if (
            m is None
            or m["host"] != host
            or int(m["pid"]) == os.getpid()
            or _pid_alive(int(m["pid"]))
        ):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if st.st_uid != uid or now - st.st_mtime < max_age:
                continue
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        removed.append(entry.path)
    return removed


def write_target(path, name="path"):
    """The file a save to ``path`` writes: ``path``, or through symbolic links, their target.

    Parameters
    ----------
    path : str or os.PathLike
        Destination given by the user.
    name : str, default="path"
        How errors name ``path``.

    Returns
    -------
    str
        The absolute real path (every symbolic link resolved).

    Raises
    ------
    ValueError
        ``path`` exists and is not a regular file (a folder, device, FIFO, socket).
    FileNotFoundError
        The folder of the target does not exist.
    """
    real = os.path.realpath(os.path.abspath(os.fspath(path)))
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ValueError(f"{name}: cannot use {os.fspath(path)!r} ({exc.strerror}).") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise ValueError(
            f"{name}: {os.fspath(path)!r} exists and is {kind}; neurospca writes "
            "only regular files (give a new file name)."
        )
    directory = os.path.dirname(real)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{name}: the directory {directory!r} does not exist.")
    return real


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
}


def regular_file(path, name="path"):
    """``path`` as a str if it names an existing regular file (links followed).

    Parameters
    ----------
    path : str or os.PathLike
        A file to read.
    name : str, default="path"
        How errors name ``path``.

    Returns
    -------
    str

    Raises
    ------
    FileNotFoundError
        Nothing exists at ``path``.
    ValueError
        ``path`` exists and is a folder, a device, a FIFO or a socket (reading
        one could block forever or never end).
    """
    path = os.fsdecode(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such file {path!r}.") from None
    except OSError as exc:
        raise ValueError(f"{name}: cannot read {path!r} ({exc.strerror}).") from None
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise ValueError(f"{name}: {path!r} exists but is {kind}, not a file.")
    return path


def same_file(a, b):
    """True when paths ``a`` and ``b`` both exist and are the same file (links followed)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, TypeError, ValueError):
        return False


def check_not_input(path, inputs, name="path"):
    """Refuse to write ``path`` when it is one of the ``inputs`` (an output never
    overwrites an input).

    Parameters
    ----------
    path : str or os.PathLike
        The output.
    inputs : iterable of (label, path)
        The inputs; those that are not existing paths are ignored.
    name : str, default="path"
        How errors name ``path``.

    Raises
    ------
    ValueError
        ``path`` is the same file as an input.
    """
    for label, src in inputs:
        if isinstance(src, (str, os.PathLike)) and same_file(path, src):
            raise ValueError(
                f"{name}: {os.fspath(path)!r} is the input {label} "
                f"({os.fspath(src)!r}); writing it would destroy the input. "
                "Choose another output path."
            )


def atomic_write(write, path, name="path"):
    """Call ``write(tmp)`` on a temporary name beside the target, then rename.

    ``path`` may be a symbolic link: the link is kept and its target is
    replaced (the temporary file is written in the target's folder). A path
    that exists and is not a regular file (a folder, ``/dev/full``, a FIFO) is
    refused. The temporary name (:func:`temp_name`) keeps the target's
    basename at its end, so writers that infer the format from the extension
    (nibabel) see the right one. On any error (a full disk included) the
    temporary file is removed and the target is left untouched.

    Parameters
    ----------
    write : callable
        Writes a complete file at the path it is given.
    path : str or os.PathLike
        Destination; its directory must exist.
    name : str, default="path"
        How errors name ``path``.

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    FileNotFoundError
        If the directory of the target does not exist.
    ValueError
        If the target exists and is not a regular file.
    OSError
        If writing fails (e.g. no space left on the device).
    """
    real = write_target(path, name)
    directory = os.path.dirname(real)
    remove_stale_temps(directory)
    tmp = temp_name(directory, os.path.basename(real))
    try:
        write(tmp)
        os.replace(tmp, real)
    finally:
        if os.path.lexists(tmp):
            os.remove(tmp)
    return os.fspath(path)


# temporary folders of this process not yet committed or removed (removed on any exit)
_TEMP_FOLDERS = set()


class AtomicFolder:
    """Write the files of one output folder completely or not at all.

    Files are written into :attr:`tmp`, a fresh folder beside ``path``;
    :meth:`commit` moves them in with SIGINT/SIGTERM held, so that an
    interrupted or failed run leaves ``path`` as it was. Use as a context
    manager: leaving the block removes the temporary folder (committed or not).

    Parameters
    ----------
    path : str or os.PathLike
        The output folder (created by :meth:`commit` if absent); its parent must
        exist.
    owned : re.Pattern, optional
        Names of the files this writer owns in ``path``: on commit, owned files
        that this run does not write are removed (the folder's owned files are
        exactly this run's); other files are left alone.
    name : str, default="path"
        How error messages name ``path`` (e.g. ``"--output"``).

    Raises
    ------
    ValueError
        If ``path`` exists and is not a folder.
    FileNotFoundError
        If the parent folder of ``path`` does not exist.

    Examples
    --------
    >>> with AtomicFolder("results") as folder:                   # doctest: +SKIP
    ...     write_files(folder.tmp)
    ...     folder.commit(["scores.csv", "report.html"])
    """

    def __init__(self, path, *, owned=None, name="path"):
        self.path = os.path.abspath(os.fspath(path))
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise ValueError(f"{name}: {self.path!r} exists and is not a folder.")
        self.parent = os.path.dirname(self.path)
        if not os.path.isdir(self.parent):
            raise FileNotFoundError(f"{name}: the parent folder {self.parent!r} does not exist.")
        self.owned = owned
        self.tmp = None

    def __enter__(self):
        remove_stale_temps(self.parent)
        with signals_blocked():  # a signal inside mkdir would leave an unknown folder
            self.tmp = temp_name(self.parent, os.path.basename(self.path))
            os.mkdir(self.tmp)
            _TEMP_FOLDERS.add(self.tmp)
        return self

    def __exit__(self, *exc_info):
        remove_temp_folders([self.tmp])
        return False

    def commit(self, order):
        """Move the files named in ``order`` from :attr:`tmp` into the folder.

        A new folder is one rename. Otherwise the last name of ``order`` (e.g.
        the report) is removed first, then the owned files that this run does
        not write, and the new files are moved in order, the last one last: the
        last file always goes with the files next to it.

        Parameters
        ----------
        order : list of str
            File names in :attr:`tmp`, in the order they are moved.

        Returns
        -------
        str
            The output folder.
        """
        with signals_blocked():  # a signal now would leave a half-replaced folder
            self._move(order)
        return self.path  # a pending SIGINT/SIGTERM was delivered on leaving the block

    def _move(self, order):
        if not os.path.exists(self.path):
            os.replace(self.tmp, self.path)
            _TEMP_FOLDERS.discard(self.tmp)
            return
        last = os.path.join(self.path, order[-1]) if order else None
        if last is not None and os.path.exists(last):
            os.remove(last)
        for name in sorted(os.listdir(self.path)):
            path = os.path.join(self.path, name)
            if (
                self.owned is not None
                and self.owned.match(name)
                and name not in order
                and os.path.isfile(path)
            ):
                os.remove(path)
        for name in order:
            src = os.path.join(self.tmp, name)
            if os.path.exists(src):
                os.replace(src, os.path.join(self.path, name))


def remove_temp_folders(folders=None):
    """Remove temporary folders of :class:`AtomicFolder` (default: all of this process).

    Parameters
    ----------
    folders : iterable of str, optional
        The folders to remove; those that could not be removed stay registered.

    Returns
    -------
    None
    """
    for tmp in list(_TEMP_FOLDERS if folders is None else folders):
        if tmp is None:
            continue
        shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.exists(tmp):
            _TEMP_FOLDERS.discard(tmp)
