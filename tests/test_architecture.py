"""The package's shape: layers point down, modules stay small.

- The import-linter contract in ``pyproject.toml`` (``[tool.importlinter]``:
  the layers of docs/architecture.rst, lazy imports inside functions
  included) passes: ``lint-imports`` is run from the repository root.
- Size convention: no module under ``neurospca/`` (``.py`` or ``.pyx``) has
  more than :data:`MAX_LINES` lines unless its top docstring (or, for a file
  without one, its leading ``#`` comment block) has a line starting with
  ``Size:`` that gives the reason, e.g.::

      Size: one solver loop with its gap check; splitting it would separate
      the iteration from its certificate.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "neurospca"
MAX_LINES = 600
SIZE_LINE = re.compile(r"^\s*(#\s*)?Size:\s*\S")


def test_import_layers_contract_is_kept():
    """``lint-imports`` (import-linter, the test extra) passes from the repository root."""
    pytest.importorskip(
        "importlinter", reason="import-linter is missing (pip install -e '.[test]')"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; "
            "sys.exit(lint_imports_command())",
            "--no-cache",
            "--no-logo",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"lint-imports failed:\n{proc.stdout}\n{proc.stderr}"
    assert "Contracts: 1 kept, 0 broken." in proc.stdout, proc.stdout


def _header(text):
    """The top of a module: its leading comment block and its docstring.

    A ``.py`` module's docstring is read with :mod:`ast`; for ``.pyx`` (not
    Python syntax) the first triple-quoted string before any code is taken.
    """
    lines = text.splitlines()
    head = []
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
        head.append(lines[i])
        i += 1
    rest = "\n".join(lines[i:]).lstrip()
    for quote in ('"""', "'''"):
        for prefix in ("", "r", "R"):
            if rest.startswith(prefix + quote):
                end = rest.find(quote, len(prefix) + 3)
                if end > 0:
                    head += rest[len(prefix) + 3 : end].splitlines()
                return head
    return head


def _size_reason(path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        doc = ast.get_docstring(ast.parse(text)) or ""
        # the leading comment block counts too (e.g. a licence or directive header)
        head = [ln for ln in _header(text) if ln.lstrip().startswith("#")] + doc.splitlines()
    else:
        head = _header(text)
    return any(SIZE_LINE.match(line) for line in head)


def _modules():
    return sorted(
        p
        for p in PACKAGE.rglob("*")
        if p.suffix in (".py", ".pyx") and "build" not in p.relative_to(PACKAGE).parts
    )


def test_size_convention_reads_docstrings_and_comments(tmp_path):
    """The convention's reader: a ``Size:`` line counts in the top docstring or
    the leading comment block, nowhere else."""
    cases = {
        "doc.py": ('"""Solver.\n\nSize: one loop.\n"""\nx = 1\n', True),
        "comment.pyx": (
            "# cython: boundscheck=False\n# Size: the kernels share "
            "inline helpers.\ncdef int x = 1\n",
            True,
        ),
        "pyxdoc.pyx": ('# cython: language_level=3\n"""Kernels.\n\nSize: one unit.\n"""\n', True),
        "late.py": ('"""Solver."""\n# Size: not at the top\nx = 1\n', False),
        "empty_reason.py": ('"""Solver.\n\nSize:\n"""\n', False),
        "nothing.py": ("x = 1\n", False),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        assert _size_reason(path) is expected, name


def test_no_module_over_600_lines_without_a_reason():
    """Modules do one job: > 600 lines needs a ``Size:`` line at the top saying why."""
    modules = _modules()
    assert len(modules) > 20  # the walk found the package
    too_long = []
    for path in modules:
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES and not _size_reason(path):
            too_long.append(f"{path.relative_to(ROOT)}: {n} lines")
    assert not too_long, "modules over %d lines without a 'Size:' reason at the top:\n%s" % (
        MAX_LINES,
        "\n".join(too_long),
    )


def test_tests_do_not_import_from_benchmarks():
    """Tests import their helpers from tests/ (``tests/_instances.py``), never
    from the benchmark scripts through ``sys.path``."""
    offenders = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"sys\.path\.(insert|append)\(.*benchmarks", line):
                offenders.append(f"{path.name}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_slow_marker_list_names_existing_tests():
    """Every entry of conftest's SLOW names a test module, or a test function
    defined in it (a renamed test would silently lose its marker)."""
    from .conftest import SLOW

    missing = []
    for entry in SLOW:
        path, _, name = entry.partition("::")
        file = ROOT / path
        if not file.is_file():
            missing.append(entry)
            continue
        if name:
            defined = {
                node.name
                for node in ast.walk(ast.parse(file.read_text()))
                if isinstance(node, ast.FunctionDef)
            }
            if name not in defined:
                missing.append(entry)
    assert not missing, missing
