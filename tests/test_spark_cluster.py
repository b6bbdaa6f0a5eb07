"""Adult and hospital on a real Spark standalone cluster (a master and two workers on this machine, started
by `tests/spark_cluster.py`): the same minimal nodes, chosen node and released rows as DuckDB.

Each cluster run is a real `sqlanon anonymize` process whose policy names the master
(``source: {engine: spark, master: spark://127.0.0.1:PORT, parquet: ...}``): a driver in that process, two
executors in the workers' JVMs. The release table goes to a warehouse folder the executors write and the
release's Parquet export (`release.export`) is what the test reads back; the reference is the same policy
on DuckDB. The master's status shows that the application ran there (not in local mode).
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from sqlanon.cli import main

from conftest import ADULT, HOSPITAL, HOSPITAL_QIS, ROOT, adult_policy
from spark_cluster import spark_cluster  # noqa: F401  (the fixture)

pytestmark = pytest.mark.engines



def _hospital(source: dict) -> dict:
    return {"source": source, "quasi_identifiers": HOSPITAL_QIS, "sensitive": ["condition"],
            "privacy": {"k": 5, "max_suppression": 0.35}, "utility": "discernibility",
            "release": {"name": "hospital_rel"}}


def _adult(source: dict) -> dict:
    # average class size: with suppression the release comes from the full minimal-node search and the branch
    # and bound, so the manifests list the minimal nodes to compare; the hospital policy (discernibility) takes
    # the bounded optimum search, which lists none
    policy = adult_policy(["age", "sex", "race", "marital_status"], {"k": 6, "max_suppression": 0.02}, source=source)
    return {**policy, "utility": "avg_class_size"}


def _outcome(folder: Path, manifest: Path, export: Path) -> dict:
    m = json.loads(manifest.read_text(encoding="utf-8"))
    rows = duckdb.connect().execute("SELECT * FROM read_parquet(?)", [str(export)]).fetchall()
    minimal = m["lattice"]["minimal"]
    return {"minimal": None if minimal is None else sorted(tuple(sorted(c["levels"].items())) for c in minimal),
            "search": {k: v for k, v in m["search"].items() if k != "seconds"},
            "chosen": m["chosen"]["levels"], "classes": m["chosen"]["classes"],
            "rows": collections.Counter(tuple(str(v) for v in r) for r in rows)}


def _write(folder: Path, name: str, policy: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    policy["release"] = {**policy.get("release", {}), "export": [str(folder / f"{name}.parquet")]}
    path.write_text(yaml.safe_dump(policy, sort_keys=False), encoding="utf-8")
    return path


def _on_duckdb(folder: Path, name: str, policy: dict) -> dict:
    path = _write(folder, name, policy)
    result = CliRunner().invoke(main, ["anonymize", str(path), "-q", "--json", str(folder / f"{name}.json")])
    assert result.exit_code == 0, result.output
    return _outcome(folder, folder / f"{name}.json", folder / f"{name}.parquet")


def _on_cluster(cluster, folder: Path, name: str, policy: dict) -> dict:
    path = _write(folder, name, policy)
    env = {**cluster.env, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "sqlanon.cli", "anonymize", str(path), "-q", "--json",
                           str(folder / f"{name}.json")], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, f"{done.stderr[-3000:]}\ncluster logs: {cluster.logs()}"
    return _outcome(folder, folder / f"{name}.json", folder / f"{name}.parquet")


def _spark_source(cluster, warehouse: Path, **src) -> dict:
    # the warehouse (release tables) and the exports are folders every executor writes: shared storage on a
    # real cluster, one machine here. One warehouse per run: with Spark's default in-memory catalog a new
    # session does not know the tables an earlier one left there, and refuses to create one over their files
    return {"engine": "spark", "master": cluster.master, **src,
            "conf": {"spark.sql.warehouse.dir": str(warehouse), "spark.executor.memory": "768m",
                     "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": 4,
                     "spark.pyspark.python": sys.executable}}


def test_adult_and_hospital_on_a_standalone_cluster_equal_duckdb(spark_cluster, tmp_path):  # noqa: F811
    cluster = spark_cluster
    hospital_parquet = tmp_path / "hospital.parquet"
    duckdb.connect().execute("COPY (SELECT * FROM read_csv(?)) TO '" + str(hospital_parquet) + "' (FORMAT parquet)",
                             [str(HOSPITAL / "hospital.csv")])
    before = len([a for a in cluster.status().get("completedapps", []) if a.get("name") == "sqlanon"])
    cases = {"adult": (_adult, str(ADULT / "adult.parquet"), "adult"),
             "hospital": (_hospital, str(hospital_parquet), "hospital")}
    for name, (make, parquet, table) in cases.items():
        want = _on_duckdb(tmp_path / "duckdb", name, make({"parquet": parquet, "table": table}))
        got = _on_cluster(cluster, tmp_path / "cluster", name,
                          make(_spark_source(cluster, tmp_path / f"warehouse-{name}", parquet=parquet, table=table)))
        assert got["minimal"] == want["minimal"], name
        assert got["chosen"] == want["chosen"], name
        assert got["classes"] == want["classes"], name
        assert got["rows"] == want["rows"], name
        assert got["search"] == want["search"], name              # the same search, node for node
        assert sum(want["rows"].values()) > 0
    # the known answers, so that two engines agreeing on something wrong would still fail
    hospital = _outcome(tmp_path, tmp_path / "duckdb" / "hospital.json", tmp_path / "duckdb" / "hospital.parquet")
    assert sum(hospital["rows"].values()) < 12                       # this case suppresses rows
    assert hospital["minimal"] is None and "searched_nodes_with_at_most_suppressed_rows" in hospital["search"]
    adult = _outcome(tmp_path, tmp_path / "duckdb" / "adult.json", tmp_path / "duckdb" / "adult.parquet")
    assert 45222 * 0.98 <= sum(adult["rows"].values()) <= 45222
    assert adult["minimal"]                                          # the full search listed them
    # both applications ran on the cluster's master, with executors on its workers
    apps = [a for a in cluster.status().get("completedapps", []) if a.get("name") == "sqlanon"]
    assert len(apps) - before == 2, cluster.status()
