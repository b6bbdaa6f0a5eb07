"""The release catalog on PostgreSQL (a real transaction) and Spark (no transactions): the same refusals as
on DuckDB (tests/test_ownership.py), the same catalog rows. The servers start as tests/test_engines.py starts
them (its session fixtures, imported), and these tests skip when they are unavailable, except under CI=true."""
from __future__ import annotations

import json

import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.catalog import CATALOG, ReleaseRefused
from sqlanon.errors import DataError
from sqlanon.policy import load_policy

from test_engines import (_cli, _hospital_policy, _one_line_error, _pg_tables, _write_policy,  # noqa: F401
                          postgres, spark)


def _pg_checksums(server) -> dict:
    """Every table of the public schema with its row count and an order-independent checksum."""
    import psycopg
    with psycopg.connect(server.main_dsn, autocommit=True) as con:
        out = {}
        for t in _pg_tables(server):
            out[t] = con.execute(f'SELECT COUNT(*), SUM(hashtext(x::text)) FROM "{t}" x').fetchone()
        return out


def _pg_catalog(server) -> list[tuple]:
    import psycopg
    with psycopg.connect(server.main_dsn, autocommit=True) as con:
        return con.execute(f'SELECT seq, name, kind, release, "rows", manifest FROM {CATALOG} ORDER BY seq, name'
                           ).fetchall()


def test_postgres_refuses_the_source_and_other_tables_and_keeps_its_own(postgres, tmp_path):  # noqa: F811
    import psycopg
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("CREATE TABLE IF NOT EXISTS users_table AS SELECT 1 AS v")
    before = _pg_checksums(postgres)
    for name, needle in (("hospital", "it is a source this run reads"), ("users_table", "did not create it")):
        policy = _write_policy(tmp_path, _hospital_policy("postgres", {"k": 4}, name=name))
        line = _one_line_error(_cli(["anonymize", policy, "-q"]), name)
        assert needle in line
        assert _pg_checksums(postgres) == before
    assert not (tmp_path / "hospital.manifest.json").exists()
    policy = _write_policy(tmp_path, _hospital_policy("postgres", {"k": 4}, name="own_rel"))
    for _ in range(2):
        r = _cli(["anonymize", policy, "-q"])
        assert r.exit_code == 0, r.output
    rows = _pg_catalog(postgres)
    own = [r for r in rows if r[1] == "own_rel"]
    assert [(r[2], r[3], r[4]) for r in own] == [("table", "own_rel", 12), ("table", "own_rel", 12)]
    assert json.loads(own[-1][5]) == json.loads((tmp_path / "own_rel.manifest.json").read_text())
    assert _pg_checksums(postgres)["hospital"] == before["hospital"]
    replace_false = _write_policy(tmp_path, _hospital_policy("postgres", {"k": 4}, name="own_rel", replace=False))
    _one_line_error(_cli(["anonymize", replace_false, "-q"]), "release.replace: false")


def test_postgres_catalog_row_rolls_back_with_the_swap(postgres, tmp_path, monkeypatch):  # noqa: F811
    policy = load_policy(_hospital_policy("postgres", {"k": 4}, name="tx_rel"), base_dir=tmp_path)
    with Anonymization(policy) as run:
        run.choose()
        run.materialize()
        rows_before = _pg_catalog(postgres)
        tables_before = _pg_checksums(postgres)
        real = run.backend.execute

        def failing(template, params=None, **ctx):
            if template == "catalog_insert.sql":
                raise DataError("disk full")
            return real(template, params, **ctx)

        monkeypatch.setattr(run.backend, "execute", failing)
        with pytest.raises(DataError):
            run.materialize()
    assert _pg_catalog(postgres) == rows_before
    assert _pg_checksums(postgres) == tables_before       # the old tx_rel, no tx_rel__sqlanon_tmp


def test_spark_refuses_the_source_and_records_its_own(spark, tmp_path):  # noqa: F811
    spark.sql("CREATE TABLE IF NOT EXISTS spark_users_table USING PARQUET AS SELECT 1 AS v")
    before = {t.name for t in spark.catalog.listTables()}
    count = spark.table("hospital").count()
    for name in ("hospital", "spark_users_table"):
        policy = load_policy(_hospital_policy("spark", {"k": 4}, name=name), base_dir=tmp_path)
        with Anonymization(policy) as run:
            run.choose()
            with pytest.raises(ReleaseRefused, match=name):
                run.materialize()
    assert {t.name for t in spark.catalog.listTables()} == before
    assert spark.table("hospital").count() == count
    # table, then view (its mapping tables: rows with NULL manifests), then table again (the maps dropped)
    for kind in ("table", "view", "table"):
        policy = load_policy(_hospital_policy("spark", {"k": 4}, name="spark_own", materialize=kind), base_dir=tmp_path)
        with Anonymization(policy) as run:
            run.choose()
            run.materialize()
            manifest = run.manifest()
    rows = [tuple(r) for r in spark.sql(f"SELECT seq, name, kind, `rows`, manifest FROM {CATALOG} "
                                        "WHERE release = 'spark_own' ORDER BY seq, name").collect()]
    seqs = sorted({r[0] for r in rows})
    assert [(r[1], r[2], r[3]) for r in rows if r[0] == seqs[0]] == [("spark_own", "table", 12)]
    assert [(r[1], r[2]) for r in rows if r[0] == seqs[1]] == [
        ("spark_own", "view"), ("spark_own__map_0", "map"), ("spark_own__map_1", "map"), ("spark_own__map_2", "map")]
    assert [(r[1], r[2]) for r in rows if r[0] == seqs[2]] == [
        ("spark_own", "table"), ("spark_own__map_0", "dropped"), ("spark_own__map_1", "dropped"),
        ("spark_own__map_2", "dropped")]
    assert json.loads(rows[-4][4]) == manifest
    assert not any(spark.catalog.tableExists(f"spark_own__map_{i}") for i in range(3))
    assert spark.table("spark_own").count() == 12
