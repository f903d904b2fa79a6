"""Files are written completely or not at all (DESIGN.md section 9)."""

import os
import uuid


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
