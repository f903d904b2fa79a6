"""Shared docstring pieces, as in nilearn's ``_utils/docs.py``.

Write ``%(name)s`` on a line of its own in a docstring, at the indentation of
the surrounding section, and decorate the function with :func:`fill_doc`; the
piece is inserted with that indentation. One text per parameter that recurs
across modules, so a fix lands everywhere at once.
"""

__all__ = ["DOCS", "fill_doc"]

DOCS = {
    "y_ignored": """y : None
    Ignored; present for scikit-learn's API (pipelines, grid searches).""",
    "command_args": """args : argparse.Namespace
    The parsed command line of this command (:mod:`neurospca.cli`).""",
    "exit_code": """int
    The command's exit code: 0 on success (errors are raised and mapped to
    exit codes by :func:`neurospca.cli.main`).""",
}


def _indented(text, indent):
    lines = text.splitlines()
    return "\n".join([lines[0]] + [indent + line if line else line for line in lines[1:]])


def fill_doc(func):
    """Fill the ``%(name)s`` pieces of ``func.__doc__`` from :data:`DOCS`.

    Parameters
    ----------
    func : callable
        A function or class whose docstring names pieces of :data:`DOCS`.

    Returns
    -------
    callable
        ``func`` itself, with its docstring filled.

    Raises
    ------
    KeyError
        When the docstring names a piece that :data:`DOCS` does not have.
    """
    doc = func.__doc__
    if not doc:
        return func
    out = []
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.startswith("%(") and stripped.endswith(")s"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + _indented(DOCS[stripped[2:-2]], indent))
        else:
            out.append(line)
    func.__doc__ = "\n".join(out)
    return func
