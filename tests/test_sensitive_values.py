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


@pytest.mark.parametrize("written", ["0.0", "-0.0"])
def test_a_policy_may_name_a_value_by_any_of_its_texts(written, tmp_path):
    """A value named in the policy (a don't-care value of adjusted entropy l-diversity) is found by either text."""
    backend = connect(str(tmp_path / "people.duckdb"))
    _people(backend.con, "DOUBLE")
    policy = _policy(tmp_path, {"k": 2, "l_diversity": {"variant": "entropy", "l": 1.2, "dont_care": [written]}})
    with Anonymization(policy, connection=backend) as run:
        domain = run.fs.sensitives[0].domain
        assert domain.values == ("0.0", "1.5", "2.5") and domain.code(written) == 0
        with pytest.raises(KeyError):
            domain.code("0")         # a text the column does not hold is not a value, however equal


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


def _ordered_emd(p: list[int], q: list[int]) -> float:
    """The ordered distance of t-closeness (Li et al., ICDE 2007, Sec. 4.2): 1/(m-1) times the sum of the absolute
    cumulative differences of the two distributions over the m ordered values."""
    cp = cq = 0.0
    total = 0.0
    for a, b in zip(p, q):
        cp, cq = cp + a / sum(p), cq + b / sum(q)
        total += abs(cp - cq)
    return total / (len(p) - 1)


def test_nan_sorts_after_every_number_as_the_engine_sorts_it(tmp_path):
    """A numeric sensitive domain is in the engine's order, NaN last, and the ordered distance the run measures is
    the one over that order (the reference: the engine's counts in ORDER BY's order), 11/36 here. Sorted by `float`
    alone, a NaN, which compares false with every number, was left where its text sorts ('-1.0', '-nan', '2.0',
    '3.0'), and the run measured another distance."""
    backend = connect(str(tmp_path / "nan.duckdb"))
    con = backend.con
    con.execute("CREATE TABLE people (age INTEGER, score DOUBLE)")
    # -NaN (the NaN x86 arithmetic gives, inf - inf) prints '-nan', which sorts between '-1.0' and '2.0' as text
    con.execute("INSERT INTO people SELECT age, CASE WHEN s = 'nan' THEN -CAST('nan' AS DOUBLE) ELSE CAST(s AS DOUBLE) "
                "END FROM (VALUES (20, '3'), (20, 'nan'), (20, 'nan'), (21, '-1'), (21, '2'), (21, '3'), (22, '-1'), "
                "(22, 'nan')) AS v(age, s)")
    counts = con.execute("SELECT age, CAST(score AS VARCHAR), COUNT(*) FROM people GROUP BY age, score "
                         "ORDER BY score").fetchall()
    order = list(dict.fromkeys(text for _, text, _ in counts))        # the engine's order of the values

    def distribution(ages):
        return [sum(n for age, text, n in counts if age in ages and text == v) for v in order]

    table = distribution({20, 21, 22})
    reference = max(_ordered_emd(distribution({age}), table) for age in (20, 21, 22))
    assert order == ["-1.0", "2.0", "3.0", "-nan"] and reference == pytest.approx(11 / 36)
    with Anonymization(_policy(tmp_path, {"k": 2, "t_closeness": {"t": 1.0, "distance": "ordered"}}),
                       connection=backend) as run:
        assert run.fs.sensitives[0].domain.values == ("-1.0", "2.0", "3.0", "-nan")
        run.choose()
        assert run.chosen.levels == {"age": 0}
        assert run.achieved(run.chosen.result)["t_ordered"] == pytest.approx(reference, abs=1e-6)
