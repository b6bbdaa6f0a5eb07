"""The examples in the public API's docstrings run, and print what they show (doctest).

The modules of the public API: `sqlanon` (its `__all__`), the Python API (`anonymizer`), the errors, the
lattice and its searches, the utility metrics, the hierarchies, the privacy models, the dialects' rules
(how values join and compare) and the frequency sets (how values are ordered). Each has at least
one example, so a module whose examples were all deleted fails here too."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "sqlanon",
    "sqlanon.anonymizer",
    "sqlanon.errors",
    "sqlanon.examples",
    "sqlanon.lattice",
    "sqlanon.metrics",
    "sqlanon.hierarchy",
    "sqlanon.models",
    "sqlanon.models.kanonymity",
    "sqlanon.models.ldiversity",
    "sqlanon.models.tcloseness",
    "sqlanon.models.likeness",
    "sqlanon.models.risk",
    "sqlanon.models.profile",
    "sqlanon.engines.base",
    "sqlanon.engines.dialects",
    "sqlanon.engines.postgres",
    "sqlanon.frequency",
    "sqlanon.checker",
    "sqlanon.templates",
    "sqlanon.marginals.release",
    "sqlanon.risk.report_section",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see the output above)"


def test_every_public_name_of_sqlanon_has_a_docstring_with_its_args():
    import sqlanon
    for name in sqlanon.__all__:
        if name in ("__version__", "connect"):      # connect: the deprecated alias of search_and_choose
            continue
        obj = getattr(sqlanon, name)
        doc = getattr(obj, "__doc__", None) or ""
        assert doc.strip(), f"sqlanon.{name} has no docstring"
        if callable(obj) and not isinstance(obj, type):
            assert "Args:" in doc and "Returns:" in doc, f"sqlanon.{name}: give its Args and Returns"
