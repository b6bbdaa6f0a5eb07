"""A sensitive attribute's values are the values of its column's type, not their texts: 0.0 and -0.0 of a float
print apart but are one number, and the privacy models count them once (`FrequencySet._value_classes`). Counted
as two, a class holding only zeros was 2-diverse (distinct l-diversity) and was released. PostgreSQL's numeric,
interval and float8 and Spark's double: tests/test_engines.py (`test_*_equal_sensitive_values_are_one_value`)."""
from __future__ import annotations

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from sqlanon.anonymizer import Anonymization
from sqlanon.attacks import similarity_attack
from sqlanon.cli import main
from sqlanon.engines.duckdb import connect
from sqlanon.errors import DataError
from sqlanon.maxent import MaxEnt, open_release
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


@pytest.mark.parametrize("route", ["direct", "staged"])
def test_duckdb_intervals_equal_but_written_apart_are_one_value(route, tmp_path, monkeypatch):
    """DuckDB calls '1 day' equal to '24 hours' (printed '24:00:00') and '30 days' equal to '1 month': one value
    each, as its COUNT(DISTINCT) says (the reference); counted by text, the decade of ages 20 held two values."""
    if route == "staged":
        force_staged_route(monkeypatch)
    backend = connect(str(tmp_path / "people.duckdb"))
    con = backend.con
    con.execute("CREATE TABLE people (age INTEGER, score INTERVAL)")
    con.executemany("INSERT INTO people VALUES (?, CAST(? AS INTERVAL))", [(20, "1 day"), (21, "24 hours"),
                    (40, "30 days"), (41, "1 month"), (42, "2 days")] * 2)
    assert con.execute("SELECT age // 10, COUNT(DISTINCT score) FROM people GROUP BY ALL ORDER BY ALL").fetchall() == [
        (2, 1), (4, 2)]
    with Anonymization(_policy(tmp_path, {"k": 2, "l_diversity": {"variant": "distinct", "l": 2}}),
                       connection=backend) as run:
        assert run.fs.sensitives[0].domain.size == 3
        run.choose()
        assert run.chosen.levels == {"age": 2}


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


def test_big_numbers_sort_as_the_engine_sorts_them(tmp_path):
    """A numeric domain is read exactly: two integers one apart past 2**53, which a float rounds to one number,
    and a decimal of 38 digits keep the engine's ORDER BY order (the reference)."""
    backend = connect(str(tmp_path / "big.duckdb"))
    con = backend.con
    con.execute("CREATE TABLE people (age INTEGER, score DECIMAL(38, 0))")
    texts = ["-9007199254740992", "-9007199254740993", "12345678901234567890123456789012345678", "0"]
    con.executemany("INSERT INTO people VALUES (?, CAST(? AS DECIMAL(38, 0)))", [(20 + i, t) for i, t in enumerate(texts)])
    reference = [t for (t,) in con.execute("SELECT CAST(score AS VARCHAR) FROM people ORDER BY score").fetchall()]
    assert reference == ["-9007199254740993", "-9007199254740992", "0", "12345678901234567890123456789012345678"]
    with Anonymization(_policy(tmp_path, {"k": 1}), connection=backend) as run:
        assert list(run.fs.sensitives[0].domain.values) == reference


# a nested sensitive column: the values' texts, as DuckDB writes them (`struct_pack` keeps -0.0 of a double)
NESTED = {
    "DOUBLE[]": ("[CAST('-0.0' AS DOUBLE)]", "[0.0::DOUBLE]", "[1.5::DOUBLE]"),
    "STRUCT(x DOUBLE)": ("struct_pack(x := CAST('-0.0' AS DOUBLE))", "struct_pack(x := 0.0::DOUBLE)",
                         "struct_pack(x := 1.5::DOUBLE)"),
    "INTEGER[]": ("[1]", "[2]", "[3]"),
    "VARCHAR[]": ("['a']", "['b']", "['c']"),
    # a decimal of declared scale has one text per value: [1.5] and [1.50] are both [1.50]
    "DECIMAL(9,2)[]": ("[1.5::DECIMAL(9,2)]", "[1.50::DECIMAL(9,2)]", "[2::DECIMAL(9,2)]"),
    # a label or a field named like a float type is not one
    "ENUM('single', 'double', 'suite')": ("'single'", "'double'", "'suite'"),
    'STRUCT("interval" VARCHAR, dose INTEGER)': ("{'interval': 'a', 'dose': 1}", "{'interval': 'b', 'dose': 1}",
                                                 "{'interval': 'c', 'dose': 2}"),
    # distinct values with one text (1 and '1'): counted by text they would be one value, which t-closeness does
    # not judge on the safe side; refused by the data (value_text_counts.sql)
    "UNION(num INTEGER, txt VARCHAR)": ("1::INTEGER", "'1'::VARCHAR", "2::INTEGER"),
}
RUN = {"INTEGER[]", "VARCHAR[]", "DECIMAL(9,2)[]", "ENUM('single', 'double', 'suite')", 'STRUCT("interval" VARCHAR, dose INTEGER)'}


@pytest.mark.parametrize("column_type", list(NESTED))
def test_nested_sensitive_columns_holding_floats_are_refused(column_type, tmp_path):
    """A list or struct of floats compares by value ([0.0] equals [-0.0]) but sqlanon reads a nested value by its
    text: such a column is refused with one line and exit code 2 (before, [0.0] and [-0.0] counted as two values
    and a DOUBLE[] column stopped the run with a traceback). Lists of integers or texts, an enum with a label
    'double' and a struct with a field "interval" run."""
    db = tmp_path / "nested.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE people (age INTEGER, score {column_type})")
    first, second, third = NESTED[column_type]
    for age, value in ((20, first), (21, second), (22, first), (23, second), (40, third), (41, first)):
        con.execute(f"INSERT INTO people VALUES ({age}, {value})")
    con.close()
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({
        "source": {"database": str(db), "table": "people"},
        "quasi_identifiers": {"age": {"hierarchy": "intervals", "widths": [10]}}, "sensitive": ["score"],
        "privacy": {"k": 2, "l_diversity": {"variant": "distinct", "l": 2}}, "release": {"name": "rel"}}))
    result = CliRunner().invoke(main, ["anonymize", str(policy), "-q"])
    if column_type in RUN:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    expected = ("has 1 more distinct value(s) than texts" if column_type.startswith("UNION") else
                f"column 'score' is of the nested type {column_type}")
    assert len(lines) == 1 and expected in lines[0], result.output


def test_a_hierarchy_may_not_give_one_value_two_ancestries(tmp_path):
    """Listing both texts of zero is fine when they generalize alike, refused when they do not."""
    backend = connect(str(tmp_path / "people.duckdb"))
    _people(backend.con, "DOUBLE")
    hierarchy = tmp_path / "score.csv"
    policy = _policy(tmp_path, {"k": 2, "t_closeness": {"t": 0.9, "distance": "hierarchical"}},
                     sensitive={"score": {"hierarchy": str(hierarchy)}})
    hierarchy.write_text("score,level_1,level_2\n0.0,low,*\n-0.0,low,*\n1.5,low,*\n2.5,high,*\n")
    with Anonymization(policy, connection=backend) as run:
        assert run.fs.sensitives[0].domain.levels.tolist()[1] == [0, 0, 1]
    hierarchy.write_text("score,level_1,level_2\n0.0,low,*\n-0.0,high,*\n1.5,low,*\n2.5,high,*\n")
    with pytest.raises(DataError, match="gives '0.0' and '-0.0' different ancestors"):
        Anonymization(policy, connection=connect(str(tmp_path / "people.duckdb")))


@pytest.mark.parametrize("listed", ["0.0", "-0.0"])
def test_the_similarity_attack_finds_a_value_by_any_listed_text(listed, tmp_path):
    """The similarity attack reads the groups of the policy's hierarchy file by any text of a value, as the run
    does (before, a file listing only -0.0 ran, but the attack said '0.0' had no group); a groups mapping too,
    and texts of one value in two groups are refused."""
    backend = connect(str(tmp_path / "people.duckdb"))
    _people(backend.con, "DOUBLE")
    hierarchy = tmp_path / "score.csv"
    hierarchy.write_text(f"score,level_1,level_2\n{listed},low,*\n1.5,low,*\n2.5,high,*\n")
    policy = _policy(tmp_path, {"k": 2}, sensitive={"score": {"hierarchy": str(hierarchy)}})
    with Anonymization(policy, connection=backend) as run:
        report = similarity_attack(run, {"age": 1})
        # ages 20-29 hold only zeros (group low), 40-49 hold 1.5 (low) and 2.5 (high)
        assert (report.affected_blocks, report.exposed_rows) == (1, 6)
        assert [(e.block, e.rows) for e in report.examples] == [({"age": "[20, 30)"}, 6)]
        by_mapping = similarity_attack(run, {"age": 1}, groups={listed: "low", "1.5": "low", "2.5": "high"})
        assert (by_mapping.affected_blocks, by_mapping.exposed_rows) == (1, 6)
        with pytest.raises(DataError, match="'0.0' and '-0.0' are one value of 'score'"):
            similarity_attack(run, {"age": 1}, groups={"0.0": "low", "-0.0": "high", "1.5": "low", "2.5": "high"})


def test_maxent_on_a_generalized_release_counts_zero_once(tmp_path):
    """Privacy-MaxEnt over the generalized release (each released block a bucket): the original records find
    their value whichever text of zero they hold, so none is estimated impossible and the estimation accuracy is
    finite (before, the blocks named zero by one text, the records by both, and the accuracy was infinite)."""
    backend = connect(str(tmp_path / "people.duckdb"))
    _people(backend.con, "DOUBLE")
    with open_release(_policy(tmp_path, {"k": 2}), node={"age": 1}, connection=backend) as (b, release):
        me = MaxEnt(b, release)
        assert me.problem.N == 12 and sorted(map(float, me.problem.s_values)) == [0.0, 1.5, 2.5]
        accuracy = me.accuracy(me.solve())
        assert accuracy["cells_estimated_impossible"] == 0 and accuracy["estimation_accuracy"] < float("inf")


@pytest.mark.parametrize("named", [1.5, "1.50", 1.50])
def test_a_decimal_value_is_named_by_its_number(tmp_path, named):
    """YAML reads 1.50 as the float 1.5, which did not match the text DuckDB writes, 1.50: the value the error
    listed could not be named unquoted ("value 1.5 is not a value of sensitive attribute 's' (values: 1.00, 1.50,
    ...)"). A number names the value equal to it (a text still has to be one the column holds)."""
    import duckdb
    import yaml
    from click.testing import CliRunner

    from sqlanon.cli import main
    db = tmp_path / "dec.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE p AS SELECT (i % 3)::INTEGER AS q, CAST((i % 4) / 2 + 1 AS DECIMAL(10, 2)) AS s "
                "FROM range(24) t(i)")
    con.close()
    policy = {"source": {"database": str(db), "table": "p"}, "quasi_identifiers": {"q": {"hierarchy": "suppress"}},
              "sensitive": ["s"], "privacy": {"k": 2, "l_diversity": {"variant": "recursive", "l": 2, "c": 3,
                                                                      "dont_care": [named]}}}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(policy))
    r = CliRunner().invoke(main, ["check", str(path), "--node", "q=0", "--db", str(tmp_path / "o.duckdb")])
    assert r.exit_code in (0, 3) and "not a value of sensitive attribute" not in r.output, r.output
    policy["privacy"]["l_diversity"]["dont_care"] = [1.25]          # no such value: still refused
    path.write_text(yaml.safe_dump(policy))
    r = CliRunner().invoke(main, ["check", str(path), "--node", "q=0", "--db", str(tmp_path / "o.duckdb")])
    assert r.exit_code == 2 and "value 1.25 is not a value of sensitive attribute 's'" in r.output, r.output
