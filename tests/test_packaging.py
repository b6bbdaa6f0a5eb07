"""The wheel ships every subpackage: pyproject.toml lists packages by hand (sql_templates/ and datasets/ are
mapped into the package), so a new subpackage must be added there or the installed sqlanon cannot import it."""
from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "sqlanon").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_every_template_folder_is_shipped():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = data["sqlanon.sql_templates"]
    shipped = {p for pattern in patterns for p in (ROOT / "sql_templates").glob(pattern)}
    assert set((ROOT / "sql_templates").rglob("*.sql")) == shipped


def test_the_report_templates_are_shipped():
    """sqlanon/html_templates/ (the HTML release report's jinja2 templates) is package data of `sqlanon`."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["sqlanon"]
    package = ROOT / "sqlanon"
    shipped = {p for pattern in patterns for p in package.glob(pattern)}
    templates = set((package / "html_templates").rglob("*"))
    assert {"report.html", "risk_section.html"} <= {p.name for p in templates}
    assert templates - shipped == set(), "add these to [tool.setuptools.package-data] \"sqlanon\" in pyproject.toml"


def test_py_typed_is_shipped():
    """sqlanon/py.typed (PEP 561: the package's type hints are for its users' type checkers) is package data."""
    assert (ROOT / "sqlanon" / "py.typed").is_file()
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["sqlanon"]
    assert "py.typed" in patterns


def test_ci_lints_and_type_checks_before_the_tests():
    """.ci/run runs ruff on sqlanon/, tests/ and benchmarks/ and mypy on sqlanon/ before pytest; both come with the
    test extra."""
    run = (ROOT / ".ci" / "run").read_text()
    assert run.index(".venv/bin/ruff check sqlanon tests benchmarks && .venv/bin/mypy sqlanon") < \
        run.index(".venv/bin/pytest")
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert {r.split(">")[0] for r in test_extra} >= {"ruff", "mypy"}
