"""The `slow` list in conftest.py names tests that exist (a renamed test would silently leave the quick
path slow), and the markers are registered (pyproject.toml)."""
from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest

from conftest import ROOT, SLOW, needs_an_engine


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


@pytest.mark.parametrize("fixtures, params, engines", [
    (["tmp_path"], {}, False),
    (["postgres", "tmp_path"], {}, True),                  # asks for the server itself
    (["released", "spark"], {}, True),                     # or through the closure of its fixtures
    (["request", "tmp_path"], {"engine": "spark"}, True),  # parametrized with the fixture it asks for by name
    (["request", "tmp_path"], {"engine": "duckdb"}, False),
    (["request"], {"case": "postgres"}, False),            # another parameter that happens to name an engine
])
def test_tests_that_need_postgres_or_spark_are_engine_tests(fixtures, params, engines):
    item = SimpleNamespace(fixturenames=fixtures, callspec=SimpleNamespace(params=params))
    assert needs_an_engine(item) is engines
