"""House rules a reader can rely on: ruff clean, functions one can hold in mind.

- ``ruff check`` and ``ruff format --check`` pass on the package, its tests,
  benchmarks, tutorials and docs (configuration: ``[tool.ruff]`` in
  ``pyproject.toml``; the version is pinned in the ``test`` extra because the
  formatter's output changes between releases).
- Function size: no function in ``neurospca/`` has a body (its docstring
  excluded) over :data:`MAX_BODY_LINES` lines unless its docstring has a line
  starting with ``Length:`` that gives the reason. Complexity is ruff's C901
  (mccabe, ``max-complexity`` in ``pyproject.toml``); a ``# noqa: C901`` must
  say why on the same line.
"""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "neurospca"
LINTED = ["neurospca", "tests", "benchmarks", "tutorials", "docs", "setup.py"]
MAX_BODY_LINES = 80
LENGTH_LINE = re.compile(r"^\s*Length:\s*\S")
NOQA_C901 = re.compile(r"#\s*noqa:[^#]*\bC901\b(?P<rest>.*)$")


def _ruff(*args):
    """Run ruff (the module of the test extra, else the one on PATH) from the root."""
    try:
        import ruff  # noqa: F401  (only to find it)

        command = [sys.executable, "-m", "ruff"]
    except ImportError:
        if shutil.which("ruff") is None:
            pytest.skip("ruff is missing (pip install -e '.[test]')")
        command = ["ruff"]
    return subprocess.run(
        command + list(args), cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_ruff_check_is_clean():
    """``ruff check`` reports nothing (rules: ``[tool.ruff.lint]``)."""
    proc = _ruff("check", "--no-cache", "--output-format", "concise", *LINTED)
    assert proc.returncode == 0, f"ruff check:\n{proc.stdout}\n{proc.stderr}"


def test_ruff_format_is_clean():
    """``ruff format --check`` would change no file."""
    proc = _ruff("format", "--check", "--no-cache", *LINTED)
    assert proc.returncode == 0, f"ruff format --check:\n{proc.stdout}\n{proc.stderr}"


def _body_lines(node):
    """Lines of a function's body, its docstring excluded."""
    body = node.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    if not body:
        return 0
    return node.end_lineno - body[0].lineno + 1


def long_functions(source, max_lines=MAX_BODY_LINES):
    """Functions of ``source`` over ``max_lines`` body lines without a ``Length:`` reason.

    Parameters
    ----------
    source : str
        Python source.
    max_lines : int, default=MAX_BODY_LINES
        The longest body accepted without a reason.

    Returns
    -------
    list of (str, int)
        Qualified-ish name (``outer.inner``) and body length of each offender.
    """
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}."
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n_lines = _body_lines(child)
                doc = ast.get_docstring(child) or ""
                reason = any(LENGTH_LINE.match(line) for line in doc.splitlines())
                if n_lines > max_lines and not reason:
                    found.append((name[:-1], n_lines))
            visit(child, name)

    visit(ast.parse(source), "")
    return found


def unexplained_noqa_c901(source):
    """Line numbers of ``# noqa: C901`` comments that give no reason after the codes."""
    bad = []
    for number, line in enumerate(source.splitlines(), 1):
        match = NOQA_C901.search(line)
        if match and not re.search(r"[A-Za-z]{3,}", re.sub(r"\b[A-Z]+\d+\b", "", match["rest"])):
            bad.append(number)
    return bad


def test_function_guard_reads_bodies_and_reasons():
    """The guard counts body lines without the docstring and accepts a stated reason."""
    body = "\n".join(f"    x{i} = {i}" for i in range(5))
    doc = '    """Doc.\n\n    more\n    """\n'
    assert long_functions(f"def f():\n{doc}{body}\n", max_lines=5) == []
    assert long_functions(f"def f():\n{doc}{body}\n    y = 0\n", max_lines=5) == [("f", 6)]
    nested = f"class A:\n    def g(self):\n{body}\n        y = 0\n".replace("    x", "        x")
    assert long_functions(nested, max_lines=5) == [("A.g", 6)]
    reasoned = (
        f'def f():\n    """Doc.\n\n    Length: one table of cases.\n    """\n{body}\n    y = 0\n'
    )
    assert long_functions(reasoned, max_lines=5) == []
    assert unexplained_noqa_c901("def f():  # noqa: C901\n") == [1]
    assert unexplained_noqa_c901("def f():  # noqa: C901  one dispatch table\n") == []


def test_no_function_too_long_to_read():
    """No function in the package has a body over 80 lines without a ``Length:`` reason."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT)
        offenders += [f"{rel}: {name} ({n} lines)" for name, n in long_functions(text)]
        offenders += [f"{rel}:{n}: noqa C901 without a reason" for n in unexplained_noqa_c901(text)]
    assert not offenders, "\n".join(offenders)
