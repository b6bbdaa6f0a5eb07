"""Every kind of source gives the same result, and the source is only read."""
from __future__ import annotations

import hashlib

import duckdb
import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.errors import PolicyError
from sqlanon.policy import load_policy

from conftest import HOSPITAL

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
    with Anonymization(pol, db=tmp_path / "o.duckdb") as run:
        with pytest.raises(PolicyError, match="materialize"):
            run.materialize()
