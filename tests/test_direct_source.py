"""A source cheap to read again (on DuckDB a Parquet file or a table) is not staged: the profile and the distinct
values read it, and the wide frequency set is grouped straight from it in one statement
(`FrequencySet.reads_source_directly`). Every count, the search, the chosen node and the release equal the
staged route's (tests/test_read_once.py tests that route on its own)."""
from __future__ import annotations

import os
import shutil

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from sqlanon import frequency
from sqlanon.anonymizer import Anonymization
from sqlanon.cli import main
from sqlanon.engines.duckdb import connect
from sqlanon.errors import DataError, UnknownValues
from sqlanon.policy import Source, load_policy

from conftest import HOSPITAL, HOSPITAL_QIS, adult_policy, force_staged_route
from test_read_once import TYPED, TYPED_QIS, _typed_policy


def _policy(kind: str, tmp_path, **extra):
    if kind == "adult parquet":       # taxonomies and intervals, suppression
        return load_policy(adult_policy(4, {"k": 50, "max_suppression": 0.02}, **extra), base_dir=tmp_path)
    if kind == "hospital parquet":    # one more Parquet file, written here from the CSV
        path = tmp_path / "hospital.parquet"
        if not path.exists():
            duckdb.connect().execute(f"COPY (SELECT * FROM read_csv(?)) TO '{path}' (FORMAT parquet)",
                                     [str(HOSPITAL / "hospital.csv")])
        return load_policy({"source": {"parquet": str(path)}, "quasi_identifiers": HOSPITAL_QIS,
                            "sensitive": ["condition"], "privacy": {"k": 3, "l_diversity": {"variant": "entropy",
                                                                                            "l": 1.5}},
                            "release": {"name": "rel"}, **extra}, base_dir=tmp_path)
    # "typed table": INTEGER, VARCHAR and DATE quasi-identifiers (typed joins), a DECIMAL sensitive value, an
    # interval hierarchy built from the data's distinct values
    return _typed_policy(tmp_path, **extra)


def _backend(tmp_path, name: str):
    backend = connect(str(tmp_path / f"{name}.duckdb"))
    backend.con.execute(TYPED)
    backend.log = []
    return backend


def _run(policy, backend) -> dict:
    """Everything the run computed from the source, as plain values."""
    con = backend.con
    with Anonymization(policy, connection=backend) as run:
        fs = run.fs
        wide = con.execute(f'SELECT * FROM "{fs.wide_table}" ORDER BY ALL').fetchall()
        out = {
            "direct": fs.reads_source_directly,
            "rows": fs.rows,
            "bottom": con.execute(f'SELECT * FROM "{fs.fs_table}" ORDER BY ALL').fetchall(),
            "wide": wide,
            "totals": {s.name: s.domain.totals.tolist() for s in fs.sensitives},
            "minimal": sorted(run.search().minimal),
            "chosen": dict(run.choose().levels),
            "suppressed": run.chosen.result.suppressed_rows,
        }
        run.materialize()
        rel = policy.release.name
        out["types"] = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {rel})").fetchall()
        out["release"] = con.execute(f"SELECT *, COUNT(*) FROM {rel} GROUP BY ALL ORDER BY ALL").fetchall()
        out["fs kind"] = con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?",
                                     [fs.fs_table]).fetchone()[0]
    return out


@pytest.mark.parametrize("kind", ["adult parquet", "hospital parquet", "typed table"])
def test_a_source_read_directly_gives_what_the_staged_route_gives(kind, tmp_path, monkeypatch):
    direct_backend = _backend(tmp_path, "direct")
    direct = _run(_policy(kind, tmp_path), direct_backend)
    with monkeypatch.context() as m:
        force_staged_route(m)
        staged_backend = _backend(tmp_path, "staged")
        staged = _run(_policy(kind, tmp_path), staged_backend)
    assert direct.pop("direct") and not staged.pop("direct")
    # the bottom frequency set is a view over the wide set in both: the staged route's table is dropped once
    # the wide set is built, the direct route never writes one
    assert direct.pop("fs kind") == staged.pop("fs kind") == "VIEW"
    assert direct == staged
    # one row per cell, the source's every row counted once
    assert len({row[:-1] for row in direct["bottom"]}) == len(direct["bottom"])
    assert sum(row[-1] for row in direct["bottom"]) == direct["rows"]
    assert direct["minimal"] and sum(row[-1] for row in direct["release"]) == direct["rows"] - direct["suppressed"]
    if kind == "adult parquet":
        assert direct["rows"] == 45222 and direct["suppressed"] > 0
    templates = lambda log: [s for s in log if "__sqlanon_staged" in s]  # noqa: E731
    assert not templates(direct_backend.log) and templates(staged_backend.log)


def test_which_sources_are_read_directly(tmp_path):
    """Parquet files and tables are read where needed; a CSV file (parsed again), a view or a query (run
    again) is staged, and so is any source with an entity key (its counts are of distinct persons)."""
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute(TYPED)
    con.execute("CREATE VIEW people_view AS SELECT * FROM people")
    con.execute(f"COPY people TO '{tmp_path / 'people.csv'}' (HEADER)")
    con.execute(f"COPY people TO '{tmp_path / 'people.parquet'}' (FORMAT parquet)")
    sources = {
        "table": ({"table": "people"}, True),
        "parquet": ({"parquet": "people.parquet"}, True),
        "view": ({"table": "people_view"}, False),
        "csv": ({"csv": "people.csv"}, False),
        "query": ({"query": "SELECT * FROM people"}, False),
    }
    for name, (source, direct) in sources.items():
        for entity in (None, "customer"):
            extra = {"entity_key": entity, "privacy": {"k": 3}} if entity else {}
            with Anonymization(_typed_policy(tmp_path, source=source, **extra), connection=con) as run:
                assert run.fs.reads_source_directly is (direct and entity is None), (name, entity)
                assert run.fs.rows == (11 if entity else 2000)
    con.close()




def test_read_directly_a_value_missing_from_a_taxonomy_is_named(tmp_path):
    """The wide set's inner joins drop the rows of a value its taxonomy lacks ('x', 667 of the 2,000 rows):
    the coverage check sees fewer rows than the profile counted and names the value."""
    (tmp_path / "sex.csv").write_text("sex,level_1\nf,*\nm,*\n")
    con = duckdb.connect()
    con.execute(TYPED)
    policy = _typed_policy(tmp_path, quasi_identifiers={**TYPED_QIS, "sex": {"hierarchy": "sex.csv"}})
    with pytest.raises(UnknownValues, match=r"column 'sex': value\(s\) 'x' missing from the hierarchy") as e:
        Anonymization(policy, connection=con)
    assert e.value.values == ["x"]


@pytest.mark.parametrize("source", ["table", "parquet"])
def test_read_directly_the_other_text_of_a_listed_float_is_named(source, tmp_path):
    """A DOUBLE quasi-identifier holding 0.0 and -0.0 under a hierarchy that lists 0.0 only: the wide set's join
    on the text drops the rows of -0.0, and the statement naming the values not covered must name it. It named
    none (DuckDB decorrelated its NOT EXISTS by grouping the column's values, 0.0 and -0.0 as one), and the run
    stopped with a RuntimeError traceback."""
    (tmp_path / "x.csv").write_text("x,level_1\n0.0,*\n1.5,*\n")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("CREATE TABLE t AS SELECT CASE WHEN i % 3 = 0 THEN 1.5 WHEN i % 3 = 1 THEN CAST('-0.0' AS DOUBLE) "
                "ELSE 0.0 END :: DOUBLE AS x, (i % 2)::VARCHAR AS s FROM range(30) r(i)")
    con.execute(f"COPY t TO '{tmp_path / 't.parquet'}' (FORMAT parquet)")
    policy = load_policy({"source": {"table": "t"} if source == "table" else {"parquet": "t.parquet"},
                          "quasi_identifiers": {"x": {"hierarchy": "x.csv"}}, "sensitive": ["s"],
                          "privacy": {"k": 2}, "release": {"name": "rel"}}, base_dir=tmp_path)
    with pytest.raises(UnknownValues, match=r"column 'x': value\(s\) '-0.0' missing from the hierarchy") as e:
        Anonymization(policy, connection=con)
    assert e.value.values == ["-0.0"]


def test_read_directly_a_null_is_refused(tmp_path):
    con = duckdb.connect()
    con.execute(TYPED)
    con.execute("UPDATE people SET visit = NULL WHERE row_id < 3")
    with pytest.raises(DataError, match=r"column 'visit' has 3 NULL value\(s\)"):
        Anonymization(_typed_policy(tmp_path), connection=con)


def test_sql_steps_show_the_route_the_run_took(tmp_path):
    """`sqlanon sql --steps` prints, in the run's own dialect, the route the run took: a source read directly is
    not staged and the wide frequency set is grouped from it (the bottom set a view over it); in another
    dialect, and for a staged source, the staged route."""
    from sqlanon.sqlgen import policy_sql
    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    con.execute(TYPED)
    con.execute(f"COPY people TO '{tmp_path / 'people.csv'}' (HEADER)")
    said = {}
    for name, source in (("table", {"table": "people"}), ("csv", {"csv": "people.csv"})):
        with Anonymization(_typed_policy(tmp_path, source=source), connection=con) as run:
            run.choose()
            said[name] = [("the source read directly" in policy_sql(run, d)) for d in ("duckdb", "postgres")]
            if name == "table":
                text = policy_sql(run, "duckdb")
                wide = text.split("-- the wide frequency set")[1].split("-- the bottom frequency set")[0]
                assert '"__sqlanon_staged"' not in text and "stage" not in wide
                assert 'FROM "people" AS src' in wide and "GROUP BY" in wide and "ORDER BY" in wide
                assert 'CREATE OR REPLACE TEMPORARY VIEW "__sqlanon_fs"' in text.split("-- the bottom frequency")[1]
    assert said == {"table": [True, False], "csv": [False, False]}


@pytest.mark.parametrize("direct", [True, False], ids=["read directly", "staged, not kept"])
def test_a_run_releases_its_own_source_when_another_run_shares_the_connection(direct, tmp_path, monkeypatch):
    """Each run attaches its source under its own view (`{prefix}_source`): a second run on the connection,
    built before the first one releases, cannot re-point the first run's source to its own. (Both runs here
    read the source for their release: directly, or from a staged source too large to keep.)"""
    if not direct:
        force_staged_route(monkeypatch)
        monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", 0.0)
    backend = _backend(tmp_path, "two")     # one backend object for both runs: its state is shared too
    con = backend.con
    con.execute(f"COPY people TO '{tmp_path / 'people.parquet'}' (FORMAT parquet)")
    con.execute(f"COPY (SELECT * FROM people WHERE age >= 50 LIMIT 300) TO '{tmp_path / 'few.csv'}' (HEADER)")
    first = Anonymization(_typed_policy(tmp_path, source={"parquet": "people.parquet"}), connection=backend)
    second = Anonymization(load_policy({"source": {"csv": "few.csv"}, "quasi_identifiers": TYPED_QIS,
                                        "sensitive": ["score"], "privacy": {"k": 30}, "release": {"name": "rel2"}},
                                       base_dir=tmp_path), connection=backend)
    assert first.source != second.source and first.fs.prefix != second.fs.prefix
    assert first.fs.reads_source_directly is direct      # decided for its own source, not the last one attached
    first.choose()
    first.materialize()
    assert con.execute("SELECT COUNT(*) FROM rel").fetchone()[0] == 2000
    scores = "SELECT score, COUNT(*) FROM {} GROUP BY ALL ORDER BY ALL"    # released as they are
    assert con.execute(scores.format("rel")).fetchall() == con.execute(scores.format("people")).fetchall()
    assert first.fs.staged is None and second.fs.rows == 300
    second.close()
    first.close()
    backend.close()


def test_a_run_takes_a_prefix_no_work_relation_of_the_connection_starts_with(tmp_path):
    """A run's first work relation is its view of the source, its frequency set comes later: the prefix of a run
    that has only attached its source (or whose frequency set a failed build dropped) is taken too."""
    backend = _backend(tmp_path, "prefix")
    assert frequency.free_prefix(backend) == "__sqlanon"
    for taken, free in (("__sqlanon_source", "__sqlanon2"), ("__sqlanon2_map_0", "__sqlanon3"),
                        ("__sqlanon30_fs", "__sqlanon3")):      # __sqlanon30 is not __sqlanon3
        backend.con.execute(f'CREATE TEMPORARY VIEW "{taken}" AS SELECT 1 AS one')
        assert frequency.free_prefix(backend) == free
    backend.close()


def test_bucketize_beside_an_open_run_leaves_the_run_its_source(tmp_path):
    """`bucketize_policy` on a connection a run has open attaches its source under a free prefix: it replaced the
    run's `__sqlanon_source`, and the run's release then read the other policy's table (helper-30)."""
    from sqlanon.maxent.anatomy import bucketize_policy
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.execute("CREATE TABLE a AS SELECT (i % 5)::VARCHAR AS zip, 'x' || (i % 3) AS dis FROM range(200) t(i)")
    con.execute("CREATE TABLE b AS SELECT 'B' || (i % 4) AS zip, 'y' || (i % 3) AS dis FROM range(60) t(i)")
    policy = {"quasi_identifiers": {"zip": {"hierarchy": "suppress"}}, "sensitive": ["dis"], "privacy": {"k": 2}}
    run = Anonymization(load_policy({**policy, "source": {"table": "a"}, "release": {"name": "rel_a"}},
                                    base_dir=tmp_path), connection=con)
    bucketize_policy(load_policy({**policy, "source": {"table": "b"}, "release": {"name": "rel_b"}},
                                 base_dir=tmp_path), 2, "bk", connection=con)
    assert con.execute(f'SELECT COUNT(*) FROM "{run.source}"').fetchone() == (200,)
    run.choose()
    run.materialize()
    assert con.execute("SELECT COUNT(*) FROM rel_a").fetchone() == (200,)
    run.close()
    con.close()


CHANGES = {     # what another writer does to `people` (2,000 rows) while a run reads it, and the rows it then holds
    "rows inserted": ("INSERT INTO people SELECT * FROM people WHERE row_id < 7", 2007),
    "rows deleted": ("DELETE FROM people WHERE row_id < 4", 1996),
    # age is released at level 1, through its mapping table, which lacks 99
    "a value outside its hierarchy": ("UPDATE people SET age = 99 WHERE row_id < 5", 1995),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_source_changed_before_the_release_is_refused(change, tmp_path):
    """The release reads the source again: rows written, deleted or given a value its hierarchy lacks since the
    preparation read it would be released unjudged (or silently left out by the joins). Their number differs
    from the rows judged, so the release is refused before it is swapped in: no table is left, not even the
    temporary one, and an earlier release stays."""
    backend = _backend(tmp_path, "changed")
    con = backend.con
    sql, rows = CHANGES[change]
    with Anonymization(_typed_policy(tmp_path), connection=backend) as run:
        assert run.choose().levels["age"] == 1
        run.materialize()                           # the earlier release: 2,000 rows
        con.execute(sql)
        with pytest.raises(DataError, match=rf"the source people changed while sqlanon read it \(2,000 rows "
                                            rf"judged for release, {rows:,} read now\); nothing was released"):
            run.materialize()
        assert con.execute("SELECT COUNT(*) FROM rel").fetchone()[0] == 2000
        assert con.execute("SELECT COUNT(*) FROM people").fetchone()[0] == (2000 if "value" in change else rows)
        assert not con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '%tmp%'").fetchall()


# rows changed in place by another writer while a run reads `people`: the 2,000 rows stay, so only the cells of
# (class, sensitive value) tell; how many differ from those judged (one row leaves a cell and joins another)
CHANGED_IN_PLACE = {
    "a sensitive value changed": ("UPDATE people SET score = 0.25 WHERE row_id = 0", 2),
    "a sensitive value no row had": ("UPDATE people SET score = 9.99 WHERE row_id = 0", 2),
    "a row moved to another class": ("UPDATE people SET age = 35 WHERE row_id = 0", 2),
    "two rows swapped their scores": ("UPDATE people SET score = CASE row_id WHEN 0 THEN 0.25 ELSE 0 END "
                                      "WHERE row_id IN (0, 1)", 4),
    "rewritten unchanged": ("UPDATE people SET score = score", 0),
}


@pytest.mark.parametrize("route", ["read directly", "staged, not kept"])
@pytest.mark.parametrize("change", list(CHANGED_IN_PLACE))
def test_a_table_changed_in_place_before_the_release_is_refused(change, route, tmp_path, monkeypatch):
    """A table has no file stamp: the release read from it again is compared, cell by cell, with what the run
    judged (`release.check_as_judged`). A change that keeps every row count is refused before the swap (the
    earlier release stays, no temporary table is left); a table rewritten with the same rows is released."""
    if route != "read directly":
        force_staged_route(monkeypatch)
    monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", 0.0)
    backend = _backend(tmp_path, "in_place")
    con = backend.con
    sql, differ = CHANGED_IN_PLACE[change]
    with Anonymization(_typed_policy(tmp_path), connection=backend) as run:
        assert run.choose().levels["age"] == 1 and run.fs.staged is None
        assert run.fs.reads_source_directly is (route == "read directly")
        run.materialize()
        before = con.execute("SELECT *, COUNT(*) FROM rel GROUP BY ALL ORDER BY ALL").fetchall()
        con.execute(sql)
        if not differ:
            run.materialize()
            assert con.execute("SELECT *, COUNT(*) FROM rel GROUP BY ALL ORDER BY ALL").fetchall() == before
            return
        with pytest.raises(DataError, match=rf"the source people changed while sqlanon read it \({differ} cells of "
                                            r"the release differ in count from those the run judged\); nothing was "
                                            r"released"):
            run.materialize()
        assert con.execute("SELECT *, COUNT(*) FROM rel GROUP BY ALL ORDER BY ALL").fetchall() == before
        assert not con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '%tmp%'").fetchall()


# numbers in a source compared with what was judged: (the score column, an UPDATE changing one row, how many cells
# that makes differ). Equal values written differently are one value of a staged source; a float widened to a
# DOUBLE is another number than its text read as a DOUBLE; two decimals 1e-20 apart are one DOUBLE.
NUMBERS = {
    "0.0 and -0.0": ("CASE WHEN i % 3 = 0 THEN CAST('-0.0' AS DOUBLE) ELSE CAST(i % 5 AS DOUBLE) END",
                     "UPDATE t SET score = 4 WHERE row_id = 3", 2),
    "a FLOAT": ("CAST((i % 5) / 10 AS FLOAT)", "UPDATE t SET score = 0.4 WHERE row_id = 0", 2),
    "decimals 1e-20 apart": ("CASE WHEN i % 2 = 0 THEN CAST(0.1 AS DECIMAL(38, 20)) "
                             "ELSE CAST('0.10000000000000000001' AS DECIMAL(38, 20)) END",
                             "UPDATE t SET score = 0.1 WHERE row_id = 1", 2),
}


@pytest.mark.parametrize("case", list(NUMBERS))
def test_numbers_are_compared_in_their_own_type(case, tmp_path, monkeypatch):
    """An unchanged query source of numbers is released (0.0 and -0.0 compared by their text differed in 16
    cells; a FLOAT's 0.1 widened to a DOUBLE differed from '0.1' read as one), and one number changed in place
    is refused (two decimals 1e-20 apart were one DOUBLE, so a change between them was released)."""
    force_staged_route(monkeypatch)
    monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", 0.0)
    score, change, differ = NUMBERS[case]
    backend = connect(str(tmp_path / "numbers.duckdb"))
    con = backend.con
    con.execute(f"CREATE TABLE t AS SELECT CAST(20 + i % 40 AS INTEGER) AS age, {score} AS score, i AS row_id "
                "FROM range(2000) r(i)")
    policy = load_policy({"source": {"query": "SELECT * FROM t"}, "quasi_identifiers": {"age": TYPED_QIS["age"]},
                          "sensitive": ["score"], "privacy": {"k": 30}, "release": {"name": "rel"}}, base_dir=tmp_path)
    with Anonymization(policy, connection=backend) as run:
        run.choose()
        assert run.fs.staged is None and not run.fs.reads_source_directly
        run.materialize()
        assert con.execute("SELECT COUNT(*) FROM rel").fetchone()[0] == 2000
        con.execute(change)
        with pytest.raises(DataError, match=rf"{differ} cells of the release differ in count"):
            run.materialize()
    backend.close()


def test_a_table_release_with_suppressed_blocks_is_compared_without_them(tmp_path):
    """The judged cells leave the suppressed blocks out, as the release does: a table rewritten with the same rows
    is released again (were they counted, every run with suppression would be refused), and occupations
    changed in released rows are refused."""
    from conftest import ADULT, adult_policy
    backend = connect(str(tmp_path / "adult.duckdb"))
    con = backend.con
    con.execute(f"CREATE TABLE adult AS SELECT * FROM read_parquet('{ADULT / 'adult.parquet'}')")
    policy = load_policy(adult_policy(4, {"k": 50, "max_suppression": 0.02}, source={"table": "adult"}),
                         base_dir=tmp_path)
    with Anonymization(policy, connection=backend) as run:
        assert run.choose().result.suppressed_rows > 0 and run.fs.staged is None
        con.execute("UPDATE adult SET occupation = occupation")
        run.materialize()
        # the first 1,000 rows' 'Sales' become 'Tech-support': some are released, in classes holding both values
        con.execute("UPDATE adult SET occupation = 'Tech-support' WHERE occupation = 'Sales' AND rowid < 1000")
        with pytest.raises(DataError, match=r"\d+ cells of the release differ in count from those the run judged"):
            run.materialize()
    backend.close()


def test_a_parquet_file_rewritten_before_the_release_is_refused(tmp_path):
    backend = _backend(tmp_path, "parquet")
    path = tmp_path / "people.parquet"
    backend.con.execute(f"COPY people TO '{path}' (FORMAT parquet)")
    with Anonymization(_typed_policy(tmp_path, source={"parquet": "people.parquet"}), connection=backend) as run:
        run.choose()
        backend.con.execute(f"COPY (SELECT * FROM people WHERE row_id >= 10) TO '{path}' (FORMAT parquet)")
        with pytest.raises(DataError, match=r"people.parquet changed while sqlanon read it \(2,000 rows judged "
                                            r"for release, 1,990 read now\)"):
            run.materialize()
        assert not backend.con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'rel%'").fetchall()


# a writer rewriting a source file while a run reads it: the same 2,000 rows, one score (one of the values) changed
ONE_SCORE_CHANGED = "COPY (SELECT * REPLACE (CASE WHEN row_id = 0 THEN 1.5 ELSE score END AS score) FROM people) " \
                    "TO '{path}' ({fmt})"
WRITTEN = r"changed while sqlanon read it \(its files were written, or their status changed, since this run began " \
          r"to read them\); nothing was released: run again when nothing writes to it$"


def _people_file(backend, tmp_path, kind: str):
    path, fmt = tmp_path / f"people.{kind}", ("FORMAT parquet" if kind == "parquet" else "HEADER")
    backend.con.execute(f"COPY people TO '{path}' ({fmt})")
    return path, fmt


@pytest.mark.parametrize("kind", ["parquet", "csv"], ids=["parquet read directly", "csv staged, not kept"])
def test_a_source_file_rewritten_with_as_many_rows_is_refused(kind, tmp_path, monkeypatch):
    """A file rewritten between the preparation and the release with as many rows: the count cannot tell, the
    file's stamp can. Refused before the swap, no table left; without the stamp the release held a score the
    run never judged."""
    monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", 0.0)     # a staged CSV is read again for the release
    backend = _backend(tmp_path, kind)
    path, fmt = _people_file(backend, tmp_path, kind)
    with Anonymization(_typed_policy(tmp_path, source={kind: path.name}), connection=backend) as run:
        run.choose()
        assert run.fs.staged is None and run.fs.reads_source_directly is (kind == "parquet")
        backend.con.execute(ONE_SCORE_CHANGED.format(path=path, fmt=fmt))
        with pytest.raises(DataError, match=rf"people.{kind} {WRITTEN}"):
            run.materialize()
        assert not backend.con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'rel%'").fetchall()
    backend.close()


def test_a_source_file_rewritten_after_its_kept_staged_copy_is_not_refused(tmp_path, monkeypatch):
    """The release repeats the staged copy's rows: the file is not read again, and its change is not released."""
    monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", 1.0)
    backend = _backend(tmp_path, "kept_csv")
    path, fmt = _people_file(backend, tmp_path, "csv")
    with Anonymization(_typed_policy(tmp_path, source={"csv": path.name}), connection=backend) as run:
        run.choose()
        assert run.fs.staged is not None
        backend.con.execute(ONE_SCORE_CHANGED.format(path=path, fmt=fmt))
        run.materialize()
        scores = "SELECT CAST(score AS DOUBLE), COUNT(*) FROM {} GROUP BY ALL ORDER BY ALL"
        released = backend.con.execute(scores.format("rel")).fetchall()
        assert released == backend.con.execute(scores.format("people")).fetchall()
    backend.close()


def test_a_source_file_rewritten_during_the_preparation_is_refused(tmp_path, monkeypatch):
    """Read directly, a Parquet file is read by the profile, the distinct values and the wide set: rewritten
    between them with as many rows, the run stops when the preparation ends."""
    backend = _backend(tmp_path, "prepare_file")
    path, fmt = _people_file(backend, tmp_path, "parquet")
    build = frequency.FrequencySet._build_wide

    def build_after_a_write(self, bottom=None):
        backend.con.execute(ONE_SCORE_CHANGED.format(path=path, fmt=fmt))
        return build(self, bottom)

    monkeypatch.setattr(frequency.FrequencySet, "_build_wide", build_after_a_write)
    with pytest.raises(DataError, match=rf"people.parquet {WRITTEN}"):
        Anonymization(_typed_policy(tmp_path, source={"parquet": path.name}), connection=backend)
    backend.close()


def test_a_source_file_rewritten_once_its_reader_is_attached_is_refused(tmp_path, monkeypatch):
    """The stamp is taken before the source is attached (DuckDB's reader may sniff the file then): a rewrite just
    after it, before any row is counted, is caught when the preparation ends."""
    from sqlanon import anonymizer
    backend = _backend(tmp_path, "attached")
    path, fmt = _people_file(backend, tmp_path, "parquet")
    attach = anonymizer.attach_source

    def attach_then_write(*args, **kwargs):
        view = attach(*args, **kwargs)
        backend.con.execute(ONE_SCORE_CHANGED.format(path=path, fmt=fmt))
        return view

    monkeypatch.setattr(anonymizer, "attach_source", attach_then_write)
    with pytest.raises(DataError, match=rf"people.parquet {WRITTEN}"):
        Anonymization(_typed_policy(tmp_path, source={"parquet": path.name}), connection=backend)
    backend.close()


def _rewrite(path):
    path.write_bytes(path.read_bytes()[::-1])


def _replace(path):
    new = path.with_name("new")
    new.write_bytes(path.read_bytes())
    new.replace(path)


def _restore_mtime(path):
    st = path.stat()
    _rewrite(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _write_database(folder):
    """What a run writes beside a policy kept in its source's folder: its database and write-ahead log."""
    (folder / "policy.duckdb").write_bytes(b"db")
    (folder / "policy.duckdb.wal").write_bytes(b"wal")


FILE_CHANGES = [      # (what is done to a folder holding a.parquet and sub/b.parquet after its stamp, stamp changed?)
    ("nothing", lambda d: None, False),
    ("read", lambda d: (d / "a.parquet").read_bytes(), False),
    ("rewritten in place, same size", lambda d: _rewrite(d / "a.parquet"), True),
    ("rewritten, modification time restored", lambda d: _restore_mtime(d / "sub" / "b.parquet"), True),
    ("replaced by a rename", lambda d: _replace(d / "a.parquet"), True),
    ("a data file added", lambda d: (d / "sub" / "c.parquet").write_bytes(b"c"), True),
    ("a data file removed", lambda d: (d / "a.parquet").unlink(), True),
    ("the folder removed", lambda d: shutil.rmtree(d), True),
    ("the run's database written beside a policy kept there", _write_database, False),
    ("another file written", lambda d: (d / "notes.txt").write_text("n"), False),
]


@pytest.mark.parametrize("change, stamp_changed", [c[1:] for c in FILE_CHANGES], ids=[c[0] for c in FILE_CHANGES])
def test_source_stamp(change, stamp_changed, tmp_path):
    """A Parquet folder's stamp on DuckDB (`frequency.source_stamp`): its data files' inodes, sizes and times."""
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    for f in (folder / "a.parquet", folder / "sub" / "b.parquet"):
        f.write_bytes(b"abc")
        os.utime(f, ns=(10**18, 10**18))     # in the past: a write now has another time, however coarse the clock
    backend, source = connect(), Source("parquet", path=folder)
    before = frequency.source_stamp(backend, source)
    change(folder)
    assert (frequency.source_stamp(backend, source) != before) is stamp_changed
    assert frequency.source_stamp(backend, Source("table", table="t")) is None
    backend.close()


def test_the_files_stamped_are_those_the_engine_reads(tmp_path):
    """`Backend.source_files` of a folder: on DuckDB exactly the files its reader reads (every *.parquet at any
    depth, hidden or not); on Spark every file but those in or named after a '_' or '.' (its _SUCCESS markers and
    .crc checksums), a superset of what it reads."""
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    con = duckdb.connect()
    for name in ("a.parquet", "sub/b.parquet", "_c.parquet", ".d.parquet", "e.parq"):
        con.execute(f"COPY (SELECT '{name}' AS f) TO '{folder / name}' (FORMAT parquet)")
    for name in ("_SUCCESS", "sub/.b.parquet.crc", "notes.txt"):
        (folder / name).write_text("x")
    read = sorted(f for (f,) in con.execute(f"SELECT filename FROM read_parquet('{folder}', filename = true)"
                                            ).fetchall())
    backend = connect()
    assert [str(p) for p in backend.source_files(folder, "parquet")] == read == \
        [str(folder / n) for n in (".d.parquet", "_c.parquet", "a.parquet", "sub/b.parquet")]
    assert backend.source_files(folder / "a.parquet", "parquet") == [folder / "a.parquet"]
    backend.close()
    from sqlanon.engines.spark import SparkBackend
    assert SparkBackend.source_files(None, folder, "parquet") == \
        [folder / n for n in ("a.parquet", "e.parq", "notes.txt", "sub/b.parquet")]    # type: ignore[arg-type]


def test_a_policy_kept_in_its_source_folder_releases(tmp_path):
    """The run's database goes beside the policy, here in the Parquet folder it reads: not a data file, so not a
    change of the source (stamping every file of the folder refused this run)."""
    folder = tmp_path / "data"
    folder.mkdir()
    duckdb.connect().execute(f"COPY (SELECT * FROM read_csv(?)) TO '{folder / 'hospital.parquet'}' (FORMAT parquet)",
                             [str(HOSPITAL / "hospital.csv")])
    (folder / "policy.yaml").write_text(yaml.safe_dump({
        "source": {"parquet": ".", "table": "hospital"}, "quasi_identifiers": HOSPITAL_QIS,
        "sensitive": ["condition"], "privacy": {"k": 3}, "release": {"name": "rel"}}))
    r = CliRunner().invoke(main, ["anonymize", str(folder / "policy.yaml"), "-q"])
    assert r.exit_code == 0, r.output
    assert (folder / "policy.duckdb").exists()


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_a_folder_of_files_is_one_source(kind, tmp_path):
    """A folder of Parquet or CSV files (a partitioned data set, files at any depth) is read as one source: the
    same release as the one file holding all its rows, and its files are what the stamp lists."""
    con = duckdb.connect()
    con.execute(TYPED)
    fmt = "FORMAT parquet" if kind == "parquet" else "HEADER"
    folder = tmp_path / "people"
    (folder / "2024").mkdir(parents=True)
    con.execute(f"COPY people TO '{tmp_path / f'all.{kind}'}' ({fmt})")
    con.execute(f"COPY (SELECT * FROM people WHERE row_id < 700) TO '{folder / f'a.{kind}'}' ({fmt})")
    con.execute(f"COPY (SELECT * FROM people WHERE row_id >= 700) TO '{folder / '2024' / f'b.{kind}'}' ({fmt})")
    (folder / "notes.txt").write_text("not data")
    released = {}
    for name in ("all", "people"):
        source = {kind: f"{name}.{kind}" if name == "all" else name, "table": "people"}
        with Anonymization(_typed_policy(tmp_path, source=source, release={"name": f"rel_{name}"}),
                           connection=connect(str(tmp_path / f"{name}.duckdb"))) as run:
            run.choose()
            run.materialize()
            released[name] = run.backend.con.execute(f"SELECT * FROM rel_{name} ORDER BY ALL").fetchall()
            if name == "people":
                assert [str(p.relative_to(folder)) for p in run.backend.source_files(folder, kind)] == \
                    [f"2024/b.{kind}", f"a.{kind}"]
    assert len(released["all"]) == 2000 and released["people"] == released["all"]


def test_a_source_changed_during_the_preparation_is_one_error_line(tmp_path, monkeypatch):
    """Rows written between the profile's count and the wide frequency set's statement: the coverage check sees
    more rows than the profile counted, every value covered; the source, counted again, has changed. One
    DataError, not the RuntimeError of a frequency set that lost or gained rows in its joins (a bug)."""
    backend = _backend(tmp_path, "prepare")
    (tmp_path / "sex.csv").write_text("sex,level_1\nf,*\nm,*\nx,*\n")   # a taxonomy: its coverage is checked
    build = frequency.FrequencySet._build_wide

    def build_after_a_write(self, bottom=None):
        backend.con.execute("INSERT INTO people SELECT * FROM people WHERE row_id < 3")
        return build(self, bottom)

    monkeypatch.setattr(frequency.FrequencySet, "_build_wide", build_after_a_write)
    with pytest.raises(DataError, match=r"the source people changed while sqlanon read it \(2,000 rows when first "
                                        r"read, 2,003 now\)"):
        Anonymization(_typed_policy(tmp_path, quasi_identifiers={**TYPED_QIS, "sex": {"hierarchy": "sex.csv"}}),
                      connection=backend)
    backend.close()


def test_a_release_from_the_staged_source_is_what_was_judged(tmp_path, monkeypatch):
    """Where the release repeats the rows of the staged source kept for it, it does not read the source again:
    a change made since is not released, and nothing is refused."""
    force_staged_route(monkeypatch)
    monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", 1.0)
    backend = _backend(tmp_path, "kept")
    with Anonymization(_typed_policy(tmp_path), connection=backend) as run:
        run.choose()
        assert run.fs.staged is not None
        backend.con.execute(CHANGES["rows inserted"][0])
        run.materialize()
        assert backend.con.execute("SELECT COUNT(*) FROM rel").fetchone()[0] == 2000


def test_a_table_changed_in_place_is_refused_on_the_command_line(tmp_path, monkeypatch):
    """What a user of `sqlanon anonymize` sees when another writer changes the source table in place between the
    search and the release: one line, exit code 2, no traceback; the earlier release is still the one in the
    database, and no temporary table is left."""
    db = tmp_path / "people.duckdb"
    con = duckdb.connect(str(db))
    con.execute(TYPED)
    con.close()
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"source": {"table": "people"}, "quasi_identifiers": TYPED_QIS,
                                      "sensitive": ["score"], "privacy": {"k": 30}, "release": {"name": "rel"}}))
    first = CliRunner().invoke(main, ["anonymize", str(policy), "--db", str(db), "-q"])
    assert first.exit_code == 0, first.output
    con = duckdb.connect(str(db))
    before = con.execute("SELECT *, COUNT(*) FROM rel GROUP BY ALL ORDER BY ALL").fetchall()
    con.close()
    materialize = Anonymization.materialize

    def written_before_the_release(self, *args, **kwargs):
        self.backend.con.execute("UPDATE people SET score = 0.25 WHERE row_id = 0")
        return materialize(self, *args, **kwargs)

    monkeypatch.setattr(Anonymization, "materialize", written_before_the_release)
    r = CliRunner().invoke(main, ["anonymize", str(policy), "--db", str(db), "-q"])
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert "Traceback" not in r.stderr + r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sqlanon: error: "), r.stderr
    assert "the source people changed while sqlanon read it (2 cells of the release differ in count from those the " \
           "run judged); nothing was released" in lines[0]
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT *, COUNT(*) FROM rel GROUP BY ALL ORDER BY ALL").fetchall() == before
    assert not con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '%tmp%'").fetchall()
    con.close()
