"""Every kind of source gives the same result, and the source is only read."""
from __future__ import annotations

import hashlib

import duckdb
import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.errors import PolicyError
from sqlanon.policy import load_policy

from conftest import HOSPITAL, force_staged_route

QIS = {"zip_code": {"hierarchy": str(HOSPITAL / "hierarchies" / "zip_code.csv")},
       "age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
       "nationality": {"hierarchy": "suppress"}}


def _policy(source, tmp_path):
    return load_policy({"source": source, "quasi_identifiers": QIS, "sensitive": ["condition"],
                        "privacy": {"k": 4}, "release": {"name": "rel"}}, base_dir=tmp_path)


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _release(run):
    run.choose()
    run.materialize()
    return sorted(run.backend.con.execute("SELECT * FROM rel").fetchall())


@pytest.fixture
def source_db(tmp_path):
    db = tmp_path / "source.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    con.close()
    return db


def test_all_source_kinds_agree(tmp_path, source_db):
    (tmp_path / "h.parquet").write_bytes(b"")
    duckdb.connect().execute("COPY (SELECT * FROM read_csv(?)) TO '" + str(tmp_path / "h.parquet") + "' (FORMAT parquet)",
                             [str(HOSPITAL / "hospital.csv")])
    before = _digest(source_db)
    sources = {
        "csv": {"csv": str(HOSPITAL / "hospital.csv")},
        "parquet": {"parquet": str(tmp_path / "h.parquet")},
        "other duckdb file (attached read-only)": {"database": str(source_db), "table": "hospital"},
        "query": {"query": "SELECT * FROM read_csv('" + str(HOSPITAL / "hospital.csv") + "') WHERE age > 0"},
    }
    results = {}
    for name, src in sources.items():
        with Anonymization(_policy(src, tmp_path), db=tmp_path / f"out_{len(results)}.duckdb") as run:
            results[name] = (_release(run), run.chosen.levels)
    first = next(iter(results.values()))
    assert len(first[0]) == 12
    for name, got in results.items():
        assert got == first, name
    assert _digest(source_db) == before        # the attached source file was not written


def test_in_memory_connection(memdb):
    memdb.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    run = Anonymization(_policy({"table": "hospital"}, HOSPITAL), connection=memdb)
    assert len(_release(run)) == 12
    assert memdb.execute("SELECT COUNT(*) FROM hospital").fetchone()[0] == 12


def test_query_source_must_be_a_select(tmp_path):
    with pytest.raises(PolicyError, match="source.query"):
        Anonymization(_policy({"query": "DROP TABLE hospital"}, tmp_path), db=":memory:")


def test_view_release_of_a_file_source_is_refused(tmp_path):
    pol = load_policy({"source": {"csv": str(HOSPITAL / "hospital.csv")}, "quasi_identifiers": QIS,
                       "sensitive": ["condition"], "privacy": {"k": 4},
                       "release": {"name": "rel", "materialize": "view"}}, base_dir=tmp_path)
    with Anonymization(pol, db=tmp_path / "o.duckdb") as run, pytest.raises(PolicyError, match="materialize"):
        run.materialize()


def _scans(log: list[str]) -> list[str]:
    """The statements that read the source's rows (not its column list, LIMIT 0, nor the view's drop)."""
    return [s for s in log if 'FROM "__sqlanon_source"' in s and not s.rstrip().endswith("LIMIT 0")]


def test_source_is_read_once_before_the_release(tmp_path):
    """A CSV source is scanned by one statement during the preparation (stage_source.sql: profile, distinct
    values, coverage and the bottom frequency set read the staged table), and once more by the release."""
    from sqlanon.engines.duckdb import connect
    backend = connect()
    backend.log = []
    run = Anonymization(_policy({"csv": str(HOSPITAL / "hospital.csv")}, tmp_path), connection=backend)
    reads = _scans(backend.log)
    assert len(reads) == 1 and "GROUP BY" in reads[0]
    assert run.fs.rows == 12
    _release(run)
    reads = _scans(backend.log)
    assert len(reads) == 2 and reads[1].lstrip().upper().startswith("CREATE")
    backend.close()


@pytest.mark.parametrize(("direct", "limit"), [(True, "80MB"), (False, "50MB")], ids=["read directly", "staged"])
def test_memory_limit_with_temp_directory_spills_and_completes(direct, limit, tmp_path, monkeypatch):
    """A memory_limit below what the work tables need (about 100 MB for these 1,000,000 rows), with a
    temp_directory: the run gives exactly the result of a run without limits: minimal nodes, chosen node,
    released rows. On both routes of the preparation (`FrequencySet.reads_source_directly`), each at a limit it
    completes under. The staged route needs about 50 MB here (DuckDB 2.0.1 runs out of memory at 40 MB in the
    staging GROUP BY, 2.0.0 did not), and DuckDB spills there (its temporary files are listed after the
    search). The wide set grouped straight from the table needs 75 MB: under 70 MB one of its allocations of 16
    MiB fails, and at 80 MB its tables fit. At 10,000,000 rows it was the other way round: under 80 MB the
    direct route completed and the staging GROUP BY ran out of memory. (The direct route spilling at 100 M
    rows: benchmarks/RESULTS-rows.md.)"""
    if not direct:
        force_staged_route(monkeypatch)
    db = tmp_path / "big.duckdb"
    con = duckdb.connect(str(db))
    # every row a distinct (a, b, c, s), so the frequency sets are as large as the table
    con.execute("CREATE TABLE t AS SELECT (i % 97) AS a, (i // 97) % 101 AS b, (i // 9797) AS c, "
                "CAST(hash(i) % 7 AS INTEGER) AS s FROM range(1000000) r(i)")
    con.close()
    qis = {"a": {"hierarchy": "intervals", "widths": [10, 50]}, "b": {"hierarchy": "intervals", "widths": [10, 50]},
           "c": {"hierarchy": "intervals", "widths": [8, 16]}}
    results = []
    for limits in ({}, {"memory_limit": limit, "temp_directory": "spill", "threads": 1}):
        pol = load_policy({"source": {"database": str(db), "table": "t", **limits}, "quasi_identifiers": qis,
                           "sensitive": ["s"], "privacy": {"k": 5, "l_diversity": {"variant": "distinct", "l": 3}},
                           "release": {"name": "rel"}}, base_dir=tmp_path)
        with Anonymization(pol, db=str(db)) as run:
            con = run.backend.con
            if limits:
                assert con.execute("SELECT current_setting('memory_limit'), current_setting('threads'), "
                                   "current_setting('temp_directory')").fetchone() == (
                                       {"50MB": "47.6 MiB", "80MB": "76.2 MiB"}[limit], 1, str(tmp_path / "spill"))
            assert run.fs.reads_source_directly is direct
            # the search's work tables in the database (no roll-up in memory: the wide frequency set, about
            # 100 MB here, is built on first use)
            run.fs.rollup = False
            run.search()
            if limits and not direct:
                assert con.execute("SELECT COUNT(*) FROM duckdb_temporary_files()").fetchone()[0] > 0
            run.choose()
            run.materialize()
            rel = con.execute("SELECT a, b, c, s, COUNT(*) FROM rel GROUP BY ALL ORDER BY ALL").fetchall()
            results.append((sorted(map(str, run.result.minimal)), run.chosen.levels, rel))
    assert results[0] == results[1]
    assert results[0][1] == {"a": 2, "b": 0, "c": 0}
    assert sum(r[-1] for r in results[1][2]) == 1_000_000


def test_a_folder_of_csv_files_is_read_by_each_files_header(tmp_path, source_db):
    """The files of a folder were read by the position of their columns: one written in another column order
    released its ages as zip codes (and judged them so)."""
    con = duckdb.connect(str(source_db))
    folder = tmp_path / "parts"
    folder.mkdir()
    con.execute(f"COPY (SELECT * FROM hospital WHERE rowid < 6) TO '{folder / 'a.csv'}' (HEADER)")
    con.execute(f"COPY (SELECT condition, nationality, age, zip_code FROM hospital WHERE rowid >= 6) "
                f"TO '{folder / 'b.csv'}' (HEADER)")
    con.close()
    with Anonymization(_policy({"csv": str(folder), "table": "hospital"}, tmp_path), db=":memory:") as from_folder, \
            Anonymization(_policy({"table": "hospital", "database": str(source_db)}, tmp_path),
                          db=":memory:") as from_table:
        assert _release(from_folder) == _release(from_table)


def test_a_query_naming_a_cte_after_the_table_it_reads(tmp_path, source_db):
    """`WITH hospital AS (SELECT * FROM hospital ...)` with --db: the table inside the CTE was left to the output
    database, whose own table of that name was released instead of the source's rows."""
    out = tmp_path / "out.duckdb"
    con = duckdb.connect(str(out))
    con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?) WHERE false", [str(HOSPITAL / "hospital.csv")])
    con.execute("INSERT INTO hospital SELECT * FROM read_csv(?) LIMIT 1", [str(HOSPITAL / "hospital.csv")])
    con.close()
    query = "WITH hospital AS (SELECT * FROM hospital WHERE age > 0) SELECT * FROM hospital"
    with Anonymization(_policy({"query": query, "database": str(source_db)}, tmp_path), db=str(out)) as run:
        assert run.fs.rows == 12


@pytest.mark.parametrize("setting, value, needle", [
    ("temp_directory", "spill\x00x", "embedded null byte"),           # a traceback (ValueError)
])
def test_bad_settings_are_one_line(tmp_path, setting, value, needle):
    with pytest.raises(PolicyError, match=needle) as e:
        Anonymization(_policy({"csv": str(HOSPITAL / "hospital.csv"), setting: value}, tmp_path), db=":memory:")
    assert e.value.field == f"source.{setting}"


def test_a_memory_limit_too_small_for_anything_leaves_no_database(tmp_path):
    """The check that the database it created is empty failed under the same limit, and the file stayed."""
    from sqlanon.errors import DataError
    db = tmp_path / "new.duckdb"
    with pytest.raises(DataError):
        Anonymization(_policy({"csv": str(HOSPITAL / "hospital.csv"), "memory_limit": "1KB"}, tmp_path), db=str(db))
    assert not db.exists()


def test_an_empty_csv_file_is_named_as_such(tmp_path):
    """It was refused as "column 'zip_code' is not in the source (its columns: column0)"."""
    from sqlanon.errors import DataError
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match=r"^source file .*empty.csv is empty: a CSV source needs a header row and rows"):
        Anonymization(_policy({"csv": str(tmp_path / "empty.csv")}, tmp_path), db=":memory:")


def test_a_failed_run_leaves_no_temp_directory_it_made(tmp_path):
    """A run stopped by its source left the temp_directory folders it had made (spill/deep/er)."""
    from sqlanon.errors import DataError
    spill = tmp_path / "spill" / "deep" / "er"
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError):
        Anonymization(_policy({"csv": str(tmp_path / "empty.csv"), "temp_directory": str(spill)}, tmp_path),
                      db=str(tmp_path / "out.duckdb"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.csv"]
