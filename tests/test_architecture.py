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
    import tomllib

    n_contracts = len(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
            "importlinter"
        ]["contracts"]
    )
    assert f"Contracts: {n_contracts} kept, 0 broken." in proc.stdout, proc.stdout


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
    assert not too_long, (
        f"modules over {MAX_LINES} lines without a 'Size:' reason at the top:\n"
        + "\n".join(too_long)
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


def _module_name(path):
    """``neurospca.x.y`` of a file under ``neurospca/`` (``__init__``: the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path):
    """``(line, imported module, names or None)`` of every import in a module
    (inside functions too), relative imports made absolute."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            yield node.lineno, base, [alias.name for alias in node.names]


def _private(part):
    return part.startswith("_") and not part.startswith("__")


def _top(module):
    """The package of ``neurospca`` a module belongs to (``""``: the root itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def private_imports_across_packages(path):
    """The imports in ``path`` of another package's private module or name.

    A package is a child of ``neurospca`` (``masking``, ``solvers``, ``cohort``...).
    Offences: ``import neurospca.x._m`` or ``from neurospca.x._m import ...``
    (a private module below another package's top) and ``from neurospca.x import
    _name`` (a private name of another package). ``neurospca._utils`` and
    ``neurospca._kernels`` are internal packages of the root, importable from
    every package; their own private modules are not.
    """
    importer = _top(_module_name(path))
    offences = []
    for line, module, names in _imports(path):
        if module != "neurospca" and not module.startswith("neurospca."):
            continue
        top = _top(module)
        if top in ("", importer):
            continue
        if any(_private(p) for p in module.split(".")[2:]):
            offences.append(f"{path.relative_to(ROOT)}:{line}: imports the module {module}")
        for name in names or ():
            if _private(name):
                offences.append(f"{path.relative_to(ROOT)}:{line}: imports {module}.{name}")
    return offences


def test_private_import_checker_finds_each_kind(tmp_path):
    """The checker's cases: a private module or name of another package is an
    offence; the same inside its own package, public names and the root's
    internal packages are not."""
    pkg = tmp_path / "neurospca" / "cohortx"
    pkg.mkdir(parents=True)
    cases = {
        "from ..masking import _mask_array\n": 1,
        "from ..solvers._base import resolve_n_threads\n": 1,
        "import neurospca.surface._validation\n": 1,
        "from .._kernels import _numpy_products\n": 1,
        "from ..masking import load_mask_img\n": 0,
        "from .._utils.images import mask_array\n": 0,
        "from .. import _kernels\n": 0,
        "from ._sibling import _helper\n": 0,
        "def f():\n    from ..masking._io import unmask\n": 1,
    }
    for text, expected in cases.items():
        path = pkg / "mod.py"
        path.write_text(text)
        global ROOT
        saved, ROOT = ROOT, tmp_path
        try:
            found = private_imports_across_packages(path)
        finally:
            ROOT = saved
        assert len(found) == expected, (text, found)


def test_no_private_module_or_name_imported_across_packages():
    """No module imports another package's private module or private name
    (DESIGN.md section 4): names come from a package, shared helpers from
    ``neurospca._utils``. Private modules are also checked by the
    ``private_modules`` contract of import-linter; private names only here."""
    offences = [
        o
        for path in _modules()
        if path.suffix == ".py"
        for o in private_imports_across_packages(path)
    ]
    assert not offences, "\n".join(offences)


def test_pyproject_has_the_private_modules_contract():
    """``pyproject.toml`` holds the import-linter contract that forbids importing
    a private module from outside its parent package (the text of
    ``IMPORTLINTER_CONTRACT.txt``, issue 23), so ``lint-imports`` checks it."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    private = [c for c in contracts if c.get("type") == "private_modules"]
    assert private, "no import-linter contract of type 'private_modules' in pyproject.toml"
    assert private[0].get("packages_with_private_modules") == ["neurospca"]
