"""Files and folders are written completely or not at all (DESIGN.md section 9)."""

import os
import shutil
import tempfile
import uuid

from .signals import signals_blocked


def atomic_write(write, path):
    """Call ``write(tmp)`` on a temporary name beside ``path``, then rename.

    The temporary name keeps ``path``'s basename at its end, so writers that
    infer the format from the extension (nibabel) see the right one. On any
    error the temporary file is removed and ``path`` is left untouched.

    Parameters
    ----------
    write : callable
        Writes a complete file at the path it is given.
    path : str or os.PathLike
        Destination; its directory must exist.

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    FileNotFoundError
        If the directory of ``path`` does not exist.
    """
    path = os.fspath(path)
    directory, base = os.path.split(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"path: the directory {directory!r} does not exist.")
    tmp = os.path.join(directory, f".tmp-{uuid.uuid4().hex[:12]}-{base}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


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
            raise FileNotFoundError(f"{name}: the parent folder {self.parent!r} does not "
                                    "exist.")
        self.owned = owned
        self.tmp = None

    def __enter__(self):
        with signals_blocked():  # a signal inside mkdtemp would leave an unknown folder
            self.tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(self.path)}.tmp-",
                                        dir=self.parent)
            _TEMP_FOLDERS.add(self.tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.tmp, 0o777 & ~umask)  # mkdtemp makes it private; the output is not
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
            if self.owned is not None and self.owned.match(name) and name not in order \
                    and os.path.isfile(path):
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
