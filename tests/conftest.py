"""Shared fixtures: where the shipped datasets are, and small helpers to build policies."""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from sqlanon.experiments.common import ADULT_QIS  # docs/DESIGN.md section 6, in the paper's order

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / "datasets"
ADULT = DATASETS / "adult"
HOSPITAL = DATASETS / "hospital"

def adult_policy(qis: list[str] | int = 8, privacy: dict | None = None, **extra) -> dict:
    """A policy dict over the shipped Adult data: the first `qis` attributes of docs/DESIGN.md section 6."""
    names = list(ADULT_QIS)[:qis] if isinstance(qis, int) else qis
    specs = {n: dict(ADULT_QIS[n]) for n in names}
    for spec in specs.values():
        if spec["hierarchy"].endswith(".csv"):
            spec["hierarchy"] = str(ADULT / spec["hierarchy"])
    policy = {
        "source": {"parquet": str(ADULT / "adult.parquet"), "table": "adult"},
        "quasi_identifiers": specs,
        "sensitive": ["occupation"],
        "privacy": privacy or {"k": 6},
        "utility": "discernibility",
        "release": {"name": "adult_release", "materialize": "table"},
    }
    policy.update(extra)
    return policy


@pytest.fixture
def hospital_dir(tmp_path) -> Path:
    """A private copy of datasets/hospital (tests write databases beside the policy)."""
    dst = tmp_path / "hospital"
    shutil.copytree(HOSPITAL, dst, ignore=shutil.ignore_patterns("__pycache__", "*.duckdb"))
    return dst


@pytest.fixture
def memdb():
    con = duckdb.connect()
    yield con
    con.close()
