"""`sqlanon sql`: the printed script runs as it is on a database holding only the source table, and its
last statement returns exactly the released rows (a multiset), on DuckDB, PostgreSQL and Spark SQL.

The reference is sqlanon's own release (materialized by DuckDB). The PostgreSQL server and the local
SparkSession are the fixtures of tests/test_engines.py (the tables adult and hospital in each).
"""
from __future__ import annotations

import collections
import csv
import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from sqlanon.anonymizer import Anonymization
from sqlanon.cli import main
from sqlanon.policy import load_policy
from sqlanon.script import release_script

from conftest import ADULT, HOSPITAL, adult_policy
from test_engines import HOSPITAL_QIS, postgres, spark  # noqa: F401  (session fixtures)

QUOTED_AGE_LABELS = {"<30": "it's <30 \\ 'young'", "3*": "3* \"thirties\"", ">=40": "O'Brien's >=40; --"}


def _hospital(privacy: dict, qis: dict | None = None) -> dict:
    return {"source": {"csv": str(HOSPITAL / "hospital.csv"), "table": "hospital"},
            "quasi_identifiers": qis or HOSPITAL_QIS, "sensitive": ["condition"], "privacy": privacy,
            "utility": "discernibility", "release": {"name": "rel"}}


def _quoted_age_hierarchy(folder: Path) -> str:
    """The hospital's age taxonomy with labels holding quotes, a backslash, a semicolon and a comment
    marker: the script must carry them as literals, escaped for each dialect."""
    rows = list(csv.reader((HOSPITAL / "hierarchies" / "age.csv").open()))
    path = folder / "age_quoted.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(rows[0])
        for value, level1, top in rows[1:]:
            w.writerow([value, QUOTED_AGE_LABELS[level1], top])
    return str(path)


# name -> (policy, whether the chosen node suppresses classes)
CASES = {
    "adult_k6": (adult_policy(8, {"k": 6}), False),
    "adult_l2_suppressed": (adult_policy(4, {"k": 20, "max_suppression": 0.05,
                                             "l_diversity": {"variant": "distinct", "l": 2}}), True),
    "hospital_k4": (_hospital({"k": 4}), False),
    "hospital_k5_suppressed": (_hospital({"k": 5, "max_suppression": 0.34}), True),
    "hospital_level0_suppressed": (_hospital({"k": 2, "max_suppression": 0.5,
                                              "l_diversity": {"variant": "distinct", "l": 2}}), True),
    "hospital_quoted_labels": (None, False),
}


def _rows(rows) -> collections.Counter:
    return collections.Counter(tuple(str(v) for v in row) for row in rows)


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """For each case: a manifest of sqlanon's release and the released rows (DuckDB)."""
    out = {}
    folder = tmp_path_factory.mktemp("script")
    for name, (policy, suppressed) in CASES.items():
        if policy is None:
            policy = _hospital({"k": 4}, qis={**HOSPITAL_QIS, "age": {"hierarchy": _quoted_age_hierarchy(folder)}})
        with Anonymization(load_policy(policy, base_dir=folder), db=":memory:") as run:
            run.search()
            run.score_minimal()
            run.choose()
            run.materialize()
            assert bool(run.chosen.result.suppressed_rows) == suppressed, name
            rows = _rows(run.backend.fetchall("select_all.sql", relation=run.policy.release.name))
            manifest = folder / f"{name}.json"
            manifest.write_text(json.dumps(run.manifest(), default=str))
        assert sum(rows.values()) > 0
        out[name] = (manifest, rows)
    return out


def _script(manifest: Path, dialect: str) -> str:
    result = CliRunner().invoke(main, ["sql", str(manifest), "--dialect", dialect])
    assert result.exit_code == 0, result.output
    return result.output


def _table(name: str) -> str:
    return "adult" if name.startswith("adult") else "hospital"


def _fresh_duckdb(table: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    if table == "adult":
        con.execute("CREATE TABLE adult AS SELECT * FROM read_parquet(?)", [str(ADULT / "adult.parquet")])
    else:
        con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    return con


@pytest.mark.parametrize("name", list(CASES))
def test_duckdb_runs_the_script_as_it_is(released, name):
    manifest, want = released[name]
    script = _script(manifest, "duckdb")
    con = _fresh_duckdb(_table(name))
    before = sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
    got = _rows(con.execute(script).fetchall())      # the whole text, comments included; the last statement's rows
    assert got == want
    after = sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
    assert after == before == [_table(name)]        # it created nothing


def test_the_script_from_a_policy_is_the_manifests(released, tmp_path):
    policy = tmp_path / "p.yaml"          # JSON is YAML; a .json argument would be read as a manifest
    policy.write_text(json.dumps(_hospital({"k": 5, "max_suppression": 0.34})))
    from_policy = CliRunner().invoke(main, ["sql", str(policy), "--dialect", "postgres", "-q"])
    assert from_policy.exit_code == 0, from_policy.output
    def body(text: str) -> str:
        return text[text.index("\nWITH"):]

    assert body(from_policy.output) == body(_script(released["hospital_k5_suppressed"][0], "postgres"))
    # the header names where each came from (a manifest's said "policy (dict)")
    assert from_policy.output.startswith(f"-- sqlanon: the release of policy {policy} at ")
    manifest = released["hospital_k5_suppressed"][0]
    assert _script(manifest, "postgres").startswith(f"-- sqlanon: the release of the policy of the manifest {manifest} at ")


def test_labels_are_escaped_literals(released):
    script = _script(released["hospital_quoted_labels"][0], "duckdb")
    assert "'O''Brien''s >=40; --'" in script and "'it''s <30 \\ ''young'''" in script
    con = _fresh_duckdb("hospital")
    labels = {row[1] for row in con.execute(script).fetchall()}
    assert labels == set(QUOTED_AGE_LABELS.values())


def test_source_option_names_the_table_read(released):
    manifest, want = released["hospital_k4"]
    result = CliRunner().invoke(main, ["sql", str(manifest), "--source", "patients_2026"])
    assert result.exit_code == 0, result.output
    con = duckdb.connect()
    con.execute("CREATE TABLE patients_2026 AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    assert _rows(con.execute(result.output).fetchall()) == want


@pytest.mark.parametrize("name", list(CASES))
def test_postgres_runs_the_script_as_it_is(postgres, released, name):  # noqa: F811
    import psycopg
    manifest, want = released[name]
    script = _script(manifest, "postgres")
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        schema = f"script_{name}"                         # a schema holding only the source table
        con.execute(f"CREATE SCHEMA {schema}")
        con.execute(f"CREATE TABLE {schema}.{_table(name)} AS SELECT * FROM public.{_table(name)}")
        con.execute(f"SET search_path TO {schema}")
        cur = con.cursor()
        cur.execute(script)                               # the whole text as one simple query
        while cur.nextset():                              # the last statement's result
            pass
        got = _rows(cur.fetchall())
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = %s", [schema]).fetchall()]
    assert got == want
    assert tables == [_table(name)]


@pytest.mark.parametrize("name", list(CASES))
def test_spark_runs_the_script_as_it_is(spark, released, name):  # noqa: F811
    manifest, want = released[name]
    script = _script(manifest, "spark")
    # spark.sql takes one statement: the script is comments and one statement ending in ';'
    statement = "\n".join(line for line in script.splitlines() if not line.startswith("--")).strip()
    assert statement.endswith(";")
    got = _rows(spark.sql(statement[:-1]).collect())
    assert got == want


def test_a_query_source_becomes_a_cte(tmp_path):
    query = f"SELECT * FROM read_csv('{HOSPITAL / 'hospital.csv'}') WHERE condition <> 'Cancer'"
    policy = dict(_hospital({"k": 2}), source={"query": query})
    with Anonymization(load_policy(policy, base_dir=tmp_path), db=":memory:") as run:
        run.choose()
        run.materialize()
        want = _rows(run.backend.fetchall("select_all.sql", relation="rel"))
        script = release_script(run, "duckdb")
    assert '"__sqlanon_source" AS (' in script and sum(want.values()) == 7
    assert _rows(duckdb.connect().execute(script).fetchall()) == want     # an empty database: the query reads the file
