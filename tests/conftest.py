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


def assert_same_search(found, reference) -> None:
    """`found` (Incognito) agrees with `reference` (brute force, every node checked).

    The minimal nodes are equal. With a non-monotone predicate the search leaves `undecided` the nodes that
    lie above a satisfying one (none of them can be minimal): the nodes it says satisfy do, and every
    satisfying node is either found or undecided, and every undecided node lies above a found one.
    """
    assert found.minimal == reference.minimal
    assert found.satisfying <= reference.satisfying
    assert reference.satisfying <= found.satisfying | found.undecided
    assert not (found.satisfying & found.undecided)
    for node in found.undecided:
        assert any(all(a <= b for a, b in zip(s, node)) and s != node for s in found.satisfying), node
    assert reference.undecided == set()
