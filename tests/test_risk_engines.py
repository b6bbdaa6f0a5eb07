"""`sqlanon risk` and the risk models on PostgreSQL and Spark: the same figures as DuckDB.

Uses the throwaway PostgreSQL server and local SparkSession of tests/test_engines.py (skipped, or failed
in CI, as there when the engine is missing)."""
from __future__ import annotations

import pytest
import yaml

from sqlanon.cli.risk import risk_of

from conftest import adult_policy
from test_engines import ADULT_4, _assert_same, _outcome, _source, postgres, spark  # noqa: F401  (fixtures)

NODE = "age=2,sex=0,race=1,marital_status=1"


def _census(engine: str, handle) -> None:
    """The population: every Adult person twice, as table census on that engine."""
    sql = "CREATE TABLE census AS SELECT * FROM adult UNION ALL SELECT * FROM adult"
    if engine == "postgres":
        import psycopg
        with psycopg.connect(handle.main_dsn, autocommit=True) as con:
            con.execute("DROP TABLE IF EXISTS census")
            con.execute(sql)
    elif engine == "spark":
        handle.sql("DROP TABLE IF EXISTS census")
        handle.sql(sql)
    else:
        import duckdb
        con = duckdb.connect(str(handle))
        con.execute(f"CREATE OR REPLACE TABLE adult AS SELECT * FROM read_parquet('{_source('duckdb', 'adult')['parquet']}')")
        con.execute("CREATE OR REPLACE TABLE " + sql.removeprefix("CREATE TABLE "))
        con.close()


def _reports(engine: str, tmp_path, handle) -> dict:
    _census(engine, handle)
    source = _source(engine, "adult") if engine != "duckdb" else {"database": str(handle), "table": "adult"}
    path = tmp_path / f"{engine}.yaml"
    path.write_text(yaml.safe_dump(adult_policy(ADULT_4, {"k": 2}, source=source)))
    out = {}
    for name, options in {"source": {"sampling_fraction": 0.05},
                          "node": {"node": NODE, "population_size": 10 ** 6},
                          "population": {"population": "census"},
                          "node with population": {"node": NODE, "population": "census", "threshold": 0.1}}.items():
        report = risk_of(str(path), **options)
        report.pop("source", None)
        out[name] = report
    return out


def _same(got, want, path=""):
    if isinstance(want, dict):
        assert got.keys() == want.keys(), path
        for k in want:
            _same(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{path}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), path
    else:
        assert str(got) == str(want), path


@pytest.fixture(scope="module")
def duckdb_reports(tmp_path_factory):
    base = tmp_path_factory.mktemp("risk")
    return _reports("duckdb", base, base / "adult.duckdb")


def test_risk_postgres_equals_duckdb(postgres, duckdb_reports, tmp_path):  # noqa: F811
    got = _reports("postgres", tmp_path, postgres)
    _same(got, duckdb_reports)
    assert duckdb_reports["population"]["journalist"]["max"] == pytest.approx(
        duckdb_reports["population"]["prosecutor"]["max"] / 2)


def test_risk_spark_equals_duckdb(spark, duckdb_reports, tmp_path):  # noqa: F811
    _same(_reports("spark", tmp_path, spark), duckdb_reports)


RISK_PRIVACY = {"k": 2, "average_risk": 0.004, "beta_likeness": {"beta": 8}, "max_suppression": 0.02}


def test_risk_models_postgres_and_spark_equal_duckdb(postgres, spark, tmp_path):  # noqa: F811
    want = _outcome(adult_policy(ADULT_4, RISK_PRIVACY, source=_source("duckdb", "adult")), tmp_path)
    assert want["minimal"] and want["suppressed"] > 0
    for engine in ("postgres", "spark"):
        got = _outcome(adult_policy(ADULT_4, RISK_PRIVACY, source=_source(engine, "adult")), tmp_path)
        _assert_same(got, want)


POPULATION_PRIVACY = {"k_map": {"k": 4, "population": "census"},
                      "delta_presence": {"delta_max": 0.5, "population": "census"}}


def test_population_models_postgres_equal_duckdb(postgres, tmp_path):  # noqa: F811
    from sqlanon.anonymizer import Anonymization
    from sqlanon.policy import load_policy

    def search(engine, handle):
        _census(engine, handle)
        source = _source(engine, "adult") if engine != "duckdb" else {"database": str(handle), "table": "adult"}
        policy = load_policy(adult_policy(ADULT_4, POPULATION_PRIVACY, source=source), base_dir=tmp_path)
        with Anonymization(policy, db=str(handle) if engine == "duckdb" else None) as run:
            result = run.search()
            return sorted(result.satisfying), sorted(result.minimal)
    want = search("duckdb", tmp_path / "adult.duckdb")
    assert want[1] and len(want[0]) < 60
    assert search("postgres", postgres) == want
