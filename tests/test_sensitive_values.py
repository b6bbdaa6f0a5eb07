"""A sensitive attribute's values are the values of its column's type, not their texts: 0.0 and -0.0 of a float
print apart but are one number, and the privacy models count them once (`FrequencySet._value_classes`). Counted
as two, a class holding only zeros was 2-diverse (distinct l-diversity) and was released. PostgreSQL's numeric,
interval and float8 and Spark's double: tests/test_engines.py (`test_*_equal_sensitive_values_are_one_value`)."""
from __future__ import annotations

import duckdb
import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.engines.duckdb import connect
from sqlanon.errors import DataError
from sqlanon.policy import load_policy

from conftest import force_staged_route

# ages 20 to 29 hold only zeros, written one way at 20 and the other at 21 (so that a staged source, which groups
# equal values within an age, keeps both); ages 40 to 49 two other numbers; three rows of each
ROWS = [(20, "-0.0")] * 3 + [(21, "0.0")] * 3 + [(40, "1.5")] * 3 + [(41, "2.5")] * 3

# (column type, route) with k = 2 and distinct 2-diversity: the decades hold one value and two, so only age's top
# level (level 2) is 2-diverse; counted as two values, the zeros made the decades (level 1) 2-diverse.
CASES = {
    "DOUBLE read directly": ("DOUBLE", "direct"),
    "DOUBLE staged": ("DOUBLE", "staged"),
    "FLOAT read directly": ("FLOAT", "direct"),
    "FLOAT staged": ("FLOAT", "staged"),
}


def _people(con, column_type: str) -> None:
    con.execute(f"CREATE TABLE people (age INTEGER, score {column_type})")
    con.executemany(f"INSERT INTO people VALUES (?, CAST(? AS {column_type}))", ROWS)


def _policy(tmp_path, privacy: dict, sensitive=None):
    return load_policy({"source": {"table": "people"}, "quasi_identifiers": {"age": {"hierarchy": "intervals", "widths": [10]}},
                        "sensitive": sensitive or ["score"], "privacy": privacy, "release": {"name": "rel"}},
                       base_dir=tmp_path)


@pytest.mark.parametrize("case", list(CASES))
def test_equal_values_written_apart_are_one_sensitive_value(case, tmp_path, monkeypatch):
    column_type, route = CASES[case]
    if route == "staged":
        force_staged_route(monkeypatch)
    backend = connect(str(tmp_path / "people.duckdb"))
    con = backend.con
    _people(con, column_type)
    # the engine's own count of each class's values: the reference
    assert con.execute("SELECT age // 10, COUNT(DISTINCT score) FROM people GROUP BY ALL ORDER BY ALL").fetchall() == [
        (2, 1), (4, 2)]
    with Anonymization(_policy(tmp_path, {"k": 2, "l_diversity": {"variant": "distinct", "l": 2}}),
                       connection=backend) as run:
        assert run.fs.reads_source_directly == (route == "direct")
        # one text per value: which of the two zeros a staged source kept is the engine's choice
        assert [float(v) for v in run.fs.sensitives[0].domain.values] == [0.0, 1.5, 2.5]
        run.choose()
        assert run.chosen.levels == {"age": 2}
        run.materialize()
        # the source's rows (Python's -0.0 == 0.0: a release built from the staged source writes one zero twice)
        assert sorted(con.execute("SELECT age, score FROM rel").fetchall()) == sorted(("*", float(v)) for _, v in ROWS)


@pytest.mark.parametrize("listed", ["0.0", "-0.0"])
def test_a_hierarchy_listing_one_text_of_a_value_covers_it(listed, tmp_path):
    """A sensitive hierarchy that lists zero once, either way, covers both texts; one lacking 2.5 is refused."""
    backend = connect(str(tmp_path / "people.duckdb"))
    _people(backend.con, "DOUBLE")
    hierarchy = tmp_path / "score.csv"
    hierarchy.write_text(f"score,level_1,level_2\n{listed},low,*\n1.5,low,*\n2.5,high,*\n")
    policy = _policy(tmp_path, {"k": 2, "t_closeness": {"t": 0.9, "distance": "hierarchical"}},
                     sensitive={"score": {"hierarchy": str(hierarchy)}})
    with Anonymization(policy, connection=backend) as run:
        domain = run.fs.sensitives[0].domain
        assert domain.values == ("0.0", "1.5", "2.5") and domain.levels.tolist()[:2] == [[0, 1, 2], [0, 0, 1]]
    hierarchy.write_text(f"score,level_1,level_2\n{listed},low,*\n1.5,low,*\n")
    with pytest.raises(DataError, match=r"value\(s\) '2.5' missing from the hierarchy of 'score'"):
        Anonymization(policy, connection=connect(str(tmp_path / "people.duckdb")))


def test_texts_of_other_types_are_their_values(tmp_path):
    """Only types whose equal values may print apart are grouped: 'a' and 'A' of a text column stay two values
    (a case-insensitive collation is refused instead: `Backend.refuse_collated`)."""
    con = duckdb.connect(str(tmp_path / "t.duckdb"))
    con.execute("CREATE TABLE people AS SELECT * FROM (VALUES (20, 'a'), (21, 'A'), (40, 'b'), (41, 'c')) "
                "AS v(age, score)")
    con.close()
    backend = connect(str(tmp_path / "t.duckdb"))
    with Anonymization(_policy(tmp_path, {"k": 2}), connection=backend) as run:
        assert run.fs.sensitives[0].domain.values == ("A", "a", "b", "c")

