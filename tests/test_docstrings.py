"""numpydoc validation of the public API (the checks of the docs build).

Every name of ``neurospca.__all__`` and the public names of the subpackages
users import from, with the public methods and properties that neurospca
classes define (methods inherited from scikit-learn are scikit-learn's
business), pass the checks of ``numpydoc_validation_checks`` in
``docs/conf.py``: GL08 (a docstring), PR01 (every parameter documented), PR02
(no unknown parameter), RT01 (a Returns section; not for properties).
"""

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

numpydoc_validate = pytest.importorskip(
    "numpydoc.validate", reason="numpydoc is missing (pip install -e '.[test]')"
)

CONF = Path(__file__).resolve().parents[1] / "docs" / "conf.py"
MODULES = (
    "neurospca",
    "neurospca.solvers",
    "neurospca.reporting",
    "neurospca.model_selection",
    "neurospca.surface",
    "neurospca.masking",
    "neurospca.study",
)


def _conf_setting(name):
    """A literal assignment of docs/conf.py, read without running conf.py."""
    for node in ast.parse(CONF.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise LookupError(f"docs/conf.py sets no {name}")


CHECKS = _conf_setting("numpydoc_validation_checks")
EXCLUDE = [re.compile(p) for p in _conf_setting("numpydoc_validation_exclude")]


def _is_ours(obj):
    return getattr(obj, "__module__", "").split(".")[0] == "neurospca"


def _members(cls):
    """Public methods and properties defined by the neurospca classes of ``cls``'s
    MRO, as ``(qualified name where defined, member)``."""
    seen = set()
    for base in cls.__mro__:
        if not _is_ours(base):
            continue
        for name, member in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            if inspect.isfunction(member) or isinstance(
                member, (property, classmethod, staticmethod)
            ):
                seen.add(name)
                yield f"{base.__module__}.{base.__qualname__}.{name}", member


def public_objects(modname):
    """``(qualified name, object)`` of the public functions, classes, methods."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    out = {}
    for name in names:
        obj = getattr(mod, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not _is_ours(obj):
            continue
        qual = f"{obj.__module__}.{obj.__qualname__}"
        out[qual] = obj
        if inspect.isclass(obj):
            out.update(_members(obj))
    return sorted(out.items())


def problems(qual, obj):
    """The failed checks of one object, as strings."""
    if any(p.search(qual) for p in EXCLUDE):
        return []
    res = numpydoc_validate.validate(qual)
    return [
        f"{qual}: {code} {msg}"
        for code, msg in res["errors"]
        if code in CHECKS and not (code == "RT01" and isinstance(obj, property))
    ]


def test_the_checks_are_the_docs_builds():
    assert CHECKS == {"GL08", "PR01", "PR02", "RT01"}
    assert not any(p.search("neurospca.decomposition._spcatv.SPCATV.fit") for p in EXCLUDE)
    assert any(p.search("neurospca.SPCATV.set_fit_request") for p in EXCLUDE)


def test_validation_catches_an_undocumented_parameter():
    """The checker itself: an object with an undocumented parameter and no
    Returns section fails PR01 and RT01, one documented fully passes."""

    errs = problems(
        "neurospca.model_selection._search.format_grid_table",
        importlib.import_module("neurospca.model_selection").format_grid_table,
    )
    assert errs == []
    res = numpydoc_validate.validate("tests.test_docstrings._undocumented")
    codes = {code for code, _ in res["errors"]}
    assert {"PR01", "RT01"} <= codes


def _undocumented(x, y):
    """Add."""
    return x + y


@pytest.mark.parametrize("modname", MODULES)
def test_public_docstrings_pass_numpydoc_validation(modname):
    objects = public_objects(modname)
    assert objects, modname
    bad = [line for qual, obj in objects for line in problems(qual, obj)]
    assert not bad, f"{len(bad)} numpydoc problems in {modname}:\n" + "\n".join(bad)
