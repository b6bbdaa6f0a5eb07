"""The `slow` list in conftest.py names tests that exist (a renamed test would silently leave the quick
path slow), and the markers are registered (pyproject.toml)."""
from __future__ import annotations

import ast

from conftest import ROOT, SLOW


def _test_functions(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_slow_entry_names_a_test():
    missing = [entry for entry in sorted(SLOW)
               if entry.split("::")[1] not in _test_functions(ROOT / entry.split("::")[0])]
    assert missing == []


def test_markers_are_registered(request):
    names = {m.split(":")[0].strip() for m in request.config.getini("markers")}
    assert {"slow", "engines"} <= names
