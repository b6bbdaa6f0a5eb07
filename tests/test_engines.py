"""The same policy on DuckDB, PostgreSQL and Spark: the same minimal nodes, chosen node, metrics and rows.

The tests start what they need: a throwaway PostgreSQL server from Debian's `postgresql` package
(initdb + pg_ctl on 127.0.0.1, a free port, a temporary data directory, password authentication) and a
local-mode SparkSession (pyspark from PyPI, Java 17). On a machine without them these tests skip with a
message saying how to enable them; with CI=true (as `.ci/run` runs) they fail instead of skipping.
"""
from __future__ import annotations

import collections
import glob
import json
import math
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from sqlanon import checker as checker_module
from sqlanon.anonymizer import Anonymization
from sqlanon.catalog import CATALOG, ReleaseRefused
from sqlanon.cli import main
from sqlanon.engines import dialects
from sqlanon.errors import DataError, PolicyError, UnknownValues
from sqlanon.policy import load_policy
from sqlanon.templates import temporary_relation

from conftest import ADULT, HOSPITAL, HOSPITAL_QIS, adult_policy

pytestmark = pytest.mark.engines     # PostgreSQL and Spark: pytest -m "not engines" leaves them out

IN_CI = os.environ.get("CI", "").strip().lower() == "true"
PG_ENV = "SQLANON_TEST_PG_DSN"
PG_PASSWORD = "s3cr3t-Pw.for-tests"
ADULT_4 = ["age", "sex", "race", "marital_status"]


def unavailable(what: str, how: str):
    """Skip (or, in CI, fail) with a message that says how to enable the tests."""
    message = f"{what} is not available here: {how}"
    if IN_CI:
        pytest.fail(message + " (CI=true: the engine tests must run, not skip)", pytrace=False)
    pytest.skip(message)


# -- a throwaway PostgreSQL server ------------------------------------------------------------------

def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """initdb + pg_ctl in a temporary directory, as the `postgres` user when the tests run as root."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="sqlanon-pg-"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root and there is no 'postgres' user to run the server as") from None
            runuser = shutil.which("runuser")
            if runuser is None:
                raise RuntimeError("running as root and runuser is missing")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.as_user = [runuser, "-u", "postgres", "--"]
            self.uid, self.gid = user.pw_uid, user.pw_gid
        pwfile = self.dir / "pw"
        pwfile.write_text(PG_PASSWORD + "\n")
        if self.as_user:
            os.chown(pwfile, self.uid, self.gid)
        self._cmd([self.bindir / "initdb", "-D", self.dir / "data", "-U", "sqlanon", "-A", "scram-sha-256",
                   "--pwfile", pwfile, "-E", "UTF8", "--locale=C", "--no-sync"])
        pwfile.unlink()
        for attempt in range(3):
            self.port = _free_port()
            options = (f"-h 127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off -c full_page_writes=off "
                       "-c synchronous_commit=off")
            try:
                self._cmd([self.bindir / "pg_ctl", "-D", self.dir / "data", "-l", self.dir / "log", "-o", options,
                           "-w", "-t", "60", "start"])
                break
            except RuntimeError:
                if attempt == 2:
                    raise

    def _cmd(self, args):
        done = subprocess.run(self.as_user + [str(a) for a in args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = (self.dir / "log").read_text()[-2000:] if (self.dir / "log").exists() else ""
            raise RuntimeError(f"{Path(str(args[0])).name} failed: {done.stderr.strip()[-2000:]} {log}")

    def dsn(self, dbname: str = "postgres", password: str = PG_PASSWORD, port: int | None = None) -> str:
        return f"postgresql://sqlanon:{password}@127.0.0.1:{port or self.port}/{dbname}"

    def stop(self):
        try:
            self._cmd([self.bindir / "pg_ctl", "-D", self.dir / "data", "-m", "immediate", "-w", "stop"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def _frames():
    con = duckdb.connect()
    adult = con.execute("SELECT * FROM read_parquet(?)", [str(ADULT / "adult.parquet")]).df()
    hospital = con.execute("SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")]).df()
    con.close()
    return {"adult": adult, "hospital": hospital}


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server with the tables adult and hospital in database `sqlanon`; the DSN in $SQLANON_TEST_PG_DSN."""
    try:
        import psycopg
    except ImportError:
        unavailable("psycopg", "pip install 'psycopg[binary]' (it is in the test extra: pip install '.[test]')")
    bindir = _pg_bin()
    if bindir is None:
        unavailable("a PostgreSQL server", "install Debian's postgresql package (apt-get install postgresql; "
                    ".ci/run does this) so that /usr/lib/postgresql/*/bin/initdb exists")
    try:
        server = PostgresServer(bindir)
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        unavailable("a PostgreSQL server", f"starting one failed: {e}")
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as con:
            con.execute("CREATE DATABASE sqlanon")
        from sqlanon.engines.postgres import PostgresBackend
        with psycopg.connect(server.dsn("sqlanon"), autocommit=True) as con:
            b = PostgresBackend(con, owned=False)
            for name, frame in _frames().items():
                b.create_table_from_frame(name, frame, temp=False)
        server.main_dsn = server.dsn("sqlanon")
        old = os.environ.get(PG_ENV)
        os.environ[PG_ENV] = server.main_dsn
        yield server
        if old is None:
            os.environ.pop(PG_ENV, None)
        else:
            os.environ[PG_ENV] = old
    finally:
        server.stop()


def _pg_tables(server) -> list[str]:
    import psycopg
    with psycopg.connect(server.main_dsn, autocommit=True) as con:
        return sorted(r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'").fetchall())


# -- a local SparkSession -------------------------------------------------------------------------

@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession with the tables adult and hospital, its warehouse in a temporary folder."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        unavailable("pyspark", "pip install pyspark (it is in the test extra: pip install '.[test]'); Spark also "
                    "needs Java 17 (apt-get install openjdk-17-jre-headless)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("Java", "Spark needs Java 17: apt-get install openjdk-17-jre-headless")
    from sqlanon.engines.spark import build_session
    warehouse = tempfile.mkdtemp(prefix="sqlanon-spark-warehouse-")
    try:
        session, created = build_session("local[2]", {"spark.sql.warehouse.dir": warehouse,
                                                      "spark.driver.memory": "1g"})
    except DataError as e:
        shutil.rmtree(warehouse, ignore_errors=True)
        unavailable("Spark", f"a local session did not start: {e}")
    try:
        # other test modules import this fixture, so pytest may set it up once per module on the one session:
        # the tables are then written again, the same data
        session.read.parquet(str(ADULT / "adult.parquet")).write.mode("overwrite").saveAsTable("adult")
        session.createDataFrame(_frames()["hospital"]).write.mode("overwrite").saveAsTable("hospital")
        yield session
    finally:
        if created:
            session.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


# -- running one policy on one engine ----------------------------------------------------------------

def _source(engine: str, table: str) -> dict:
    if engine == "duckdb":
        return ({"parquet": str(ADULT / "adult.parquet"), "table": "adult"} if table == "adult"
                else {"csv": str(HOSPITAL / "hospital.csv"), "table": "hospital"})
    if engine == "postgres":
        return {"engine": "postgres", "dsn_env": PG_ENV, "table": table}
    return {"engine": "spark", "master": "local[2]", "table": table}


def _hospital_policy(engine: str, privacy: dict, **release) -> dict:
    return {"source": _source(engine, "hospital"), "quasi_identifiers": HOSPITAL_QIS, "sensitive": ["condition"],
            "privacy": privacy, "utility": "discernibility", "release": {"name": "hospital_rel", **release}}


def _outcome(policy: dict, base_dir: Path, db=None) -> dict:
    """Everything the engines must agree on, from one full run."""
    with Anonymization(load_policy(policy, base_dir=base_dir), db=db if db is not None else ":memory:") as run:
        result = run.search()
        run.score_minimal()
        run.choose()
        run.materialize()
        name = run.policy.release.name
        rows = run.backend.fetchall("select_all.sql", relation=name)
        return {
            "minimal": sorted(tuple(sorted(c.levels.items())) for c in run.candidates),
            "metrics": {tuple(sorted(c.levels.items())): c.metrics for c in run.candidates},
            "chosen": dict(run.chosen.levels),
            "classes": run.chosen.result.classes,
            "suppressed": run.chosen.result.suppressed_rows,
            "privacy": run.achieved(run.chosen.result),
            "rows": collections.Counter(tuple(str(v) for v in row) for row in rows),
            "evaluated": result.evaluated,
            "columns": [c for c, _ in run.backend.columns(name)],
            "engine": run.backend.engine,
        }


def _close(got: dict, want: dict, what) -> None:
    """Equal dicts, numbers within float tolerance (sums may add up in another order on another engine)."""
    assert got.keys() == want.keys(), what
    for key, value in want.items():
        if isinstance(value, float) and isinstance(got[key], (int, float)):
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-9), (what, key)
        else:
            assert got[key] == value, (what, key)


def _assert_same(got: dict, want: dict):
    assert got["minimal"] == want["minimal"]
    assert got["chosen"] == want["chosen"]
    assert (got["classes"], got["suppressed"]) == (want["classes"], want["suppressed"])
    assert got["evaluated"] == want["evaluated"]
    assert got["metrics"].keys() == want["metrics"].keys()
    for node, metrics in want["metrics"].items():
        _close(got["metrics"][node], metrics, node)
    _close(got["privacy"], want["privacy"], "privacy")
    assert got["columns"] == want["columns"]
    assert got["rows"] == want["rows"]           # the released rows, as a multiset


HOSPITAL_CASES = {"k=4": {"k": 4}, "k=5 with suppression": {"k": 5, "max_suppression": 0.35},
                  "entropy 2-diverse": {"l_diversity": {"variant": "entropy", "l": 2}}}


@pytest.fixture(scope="module")
def duckdb_hospital(tmp_path_factory):
    base = tmp_path_factory.mktemp("hospital")
    return {name: _outcome(_hospital_policy("duckdb", privacy), base) for name, privacy in HOSPITAL_CASES.items()}


@pytest.mark.parametrize("case", list(HOSPITAL_CASES))
def test_hospital_postgres_equals_duckdb(postgres, duckdb_hospital, tmp_path, case):
    want = duckdb_hospital[case]
    got = _outcome(_hospital_policy("postgres", HOSPITAL_CASES[case]), tmp_path)
    assert got["engine"] == "postgres"
    _assert_same(got, want)
    if case == "k=4":     # Figure 2 of the TKDD paper, and its three 4-row blocks
        assert want["chosen"] == {"zip_code": 1, "age": 1, "nationality": 1}
        assert sum(want["rows"].values()) == 12
    if "suppression" in case:
        assert want["suppressed"] > 0, "this case is meant to exercise suppression"


def test_hospital_spark_equals_duckdb(spark, duckdb_hospital, tmp_path):
    for case in ("k=4", "k=5 with suppression"):
        got = _outcome(_hospital_policy("spark", HOSPITAL_CASES[case]), tmp_path)
        assert got["engine"] == "spark"
        _assert_same(got, duckdb_hospital[case])
    # a view release (its mapping tables and suppressed blocks persisted beside it) has the same rows
    view = _outcome(_hospital_policy("spark", HOSPITAL_CASES["k=5 with suppression"], materialize="view"), tmp_path)
    assert view["rows"] == duckdb_hospital["k=5 with suppression"]["rows"]
    assert spark.catalog.getTable("hospital_rel").tableType == "VIEW"


@pytest.mark.parametrize("limit", [None, "0"], ids=["counts-on-a-driver-copy", "counts-on-spark"])
def test_spark_counts_on_the_driver_or_on_spark_equal_duckdb(spark, duckdb_hospital, tmp_path, limit):
    """A small frequency set is copied once to an in-process DuckDB database for the search and the metrics
    (`SparkBackend.local_counts`); with `spark.sqlanon.localCountsMaxCells` 0 every count query runs on Spark.
    Both give DuckDB's nodes, metrics and rows, suppression and entropy l-diversity included."""
    from sqlanon.engines.spark import LOCAL_COUNTS_SETTING
    if limit is not None:
        spark.conf.set(LOCAL_COUNTS_SETTING, limit)
    try:
        for case in ("k=5 with suppression", "entropy 2-diverse"):
            policy = _hospital_policy("spark", HOSPITAL_CASES[case])
            with Anonymization(load_policy(policy, base_dir=tmp_path)) as run:
                assert run.fs.counts.engine == ("duckdb" if limit is None else "spark")
                assert run.backend.engine == "spark"
            _assert_same(_outcome(policy, tmp_path), duckdb_hospital[case])
    finally:
        spark.conf.unset(LOCAL_COUNTS_SETTING)


def test_spark_node_queries_over_the_wide_set_on_spark_equal_duckdb(spark, tmp_path):
    """With every count query on Spark and no roll-up in memory, the nodes are grouped over the wide frequency
    set on Spark: its table without the constant level columns and a view adding them back
    (`FrequencySet.constant_columns`), as on DuckDB. The same minimal nodes and nodes evaluated."""
    from sqlanon.engines.spark import LOCAL_COUNTS_SETTING

    def search(engine):
        policy = adult_policy(ADULT_4, {"k": 5}, source=_source(engine, "adult"))
        with Anonymization(load_policy(policy, base_dir=tmp_path)) as run:
            run.fs.rollup = False
            assert run.fs.counts.engine == engine
            result = run.search()
            assert run.fs.wide_stored != run.fs.wide_name        # the table under the view
            return sorted(result.minimal), result.evaluated
    spark.conf.set(LOCAL_COUNTS_SETTING, "0")
    try:
        assert search("spark") == search("duckdb")
    finally:
        spark.conf.unset(LOCAL_COUNTS_SETTING)


@pytest.mark.parametrize("engine", ["postgres", "spark"])
def test_class_sizes_of_a_batch_mixing_meets_and_lone_nodes_equal_each_nodes_own(engine, request, tmp_path,
                                                                                   monkeypatch):
    """One statement of class-size passes (`FrequencySet.batch_counts`) with two meets of two nodes each and a
    node alone (`_meets` within 100 blocks): the lone node's branch returns no block keys (NULLs beside the
    meets' keys), and every node's sizes equal its own GROUP BY's on the engine. Each meet's keys alone are
    cast: PostgreSQL raised a TypeError on the NULLs, Spark gave NaN."""
    request.getfixturevalue(engine)
    from sqlanon import frequency
    from sqlanon.engines.spark import LOCAL_COUNTS_SETTING
    nodes = [{"age": 0}, {"sex": 0}, {"age": 0, "sex": 0}, {"marital_status": 0, "race": 0}, {"age": 4}]
    monkeypatch.setattr(frequency, "MEET_ROWS_PER_BLOCK", 1)
    if engine == "spark":
        request.getfixturevalue("spark").conf.set(LOCAL_COUNTS_SETTING, "0")
    try:
        with Anonymization(load_policy(adult_policy(ADULT_4, {"k": 5}, source=_source(engine, "adult")),
                                       base_dir=tmp_path)) as run:
            assert run.fs.counts.engine == engine
            monkeypatch.setattr(frequency, "MEET_BLOCKS", 100)
            assert [members for _meet, members in run.fs._meets(nodes)] == [[0, 4], [1, 3], [2]]
            rolled = run.fs.batch_counts(nodes)
            monkeypatch.setattr(frequency, "MEET_BLOCKS", 0)      # no meets: each node its own GROUP BY
            own = run.fs.batch_counts(nodes)
    finally:
        if engine == "spark":
            request.getfixturevalue("spark").conf.unset(LOCAL_COUNTS_SETTING)
    for levels, r, o in zip(nodes, rolled, own):
        assert sorted(r.sizes.tolist()) == sorted(o.sizes.tolist()), levels
    assert [len(o.sizes) for o in own] == [74, 2, 145, 33, 1]


ADULT_PRIVACY = {"k": 6, "max_suppression": 0.02}
ADULT_PRIVACY = {"k": 6, "max_suppression": 0.02}


@pytest.fixture(scope="module")
def duckdb_adult(tmp_path_factory):
    return _outcome(adult_policy(ADULT_4, ADULT_PRIVACY, source=_source("duckdb", "adult")),
                    tmp_path_factory.mktemp("adult"))


def test_adult_postgres_equals_duckdb(postgres, duckdb_adult, tmp_path):
    got = _outcome(adult_policy(ADULT_4, ADULT_PRIVACY, source=_source("postgres", "adult")), tmp_path)
    _assert_same(got, duckdb_adult)
    assert duckdb_adult["suppressed"] > 0 and sum(got["rows"].values()) == 45222 - got["suppressed"]


def test_adult_spark_equals_duckdb(spark, duckdb_adult, tmp_path):
    got = _outcome(adult_policy(ADULT_4, ADULT_PRIVACY, source=_source("spark", "adult")), tmp_path)
    _assert_same(got, duckdb_adult)


def test_adult_eight_quasi_identifiers_postgres_equals_duckdb(postgres, tmp_path):
    """The full Adult lattice (4,320 nodes), t-closeness: the search, not the scoring, is what is compared."""
    def search(engine):
        policy = adult_policy(8, {"k": 5, "t_closeness": {"t": 0.3, "distance": "equal"}},
                              source=_source(engine, "adult"))
        with Anonymization(load_policy(policy, base_dir=tmp_path)) as run:
            result = run.search()
            return sorted(result.minimal), result.evaluated, run.fs.rows
    assert search("postgres") == search("duckdb")


@pytest.mark.parametrize("value_groups", [16, 2], ids=["values", "groups of values first"])
def test_adult_verdicts_judged_in_postgres_equal_duckdb(postgres, tmp_path, monkeypatch, value_groups):
    """k with entropy l, the counts kept in the database (no in-memory roll-up): every node is judged by the
    verdict query (blocks on one packed key, the size pass skipped where blocks must be few), in PostgreSQL
    as in DuckDB: the same minimal nodes, nodes evaluated and chosen node; also with the blocks judged on
    groups of occupation's values first (`VALUE_GROUPS` lowered: its 14 values are too few for the default
    12 groups)."""
    monkeypatch.setattr(checker_module, "VALUE_GROUPS", value_groups)

    def search(engine):
        policy = adult_policy(ADULT_4, {"k": 5, "l_diversity": {"variant": "entropy", "l": 3}},
                              source=_source(engine, "adult"))
        with Anonymization(load_policy(policy, base_dir=tmp_path)) as run:
            run.fs.rollup = False
            assert run.checker.verdicts_in_database
            log = run.backend.log = []
            result = run.search()
            assert any('AS "keyed"' in q for q in log)
            assert any('"vg"' in q for q in log) == (value_groups == 2)
            return sorted(result.minimal), result.evaluated, dict(run.choose().levels)
    got = search("postgres")
    assert got == search("duckdb") and got[0]


def _engine_backend(request, engine: str):
    """A backend on the test server of `engine` (DuckDB: in memory), and how to close it."""
    if engine == "duckdb":
        from sqlanon.engines.duckdb import DuckDBBackend
        con = duckdb.connect()
        return DuckDBBackend(con), con.close
    if engine == "postgres":
        import psycopg

        from sqlanon.engines.postgres import PostgresBackend
        con = psycopg.connect(request.getfixturevalue("postgres").main_dsn, autocommit=True)
        return PostgresBackend(con, owned=False), con.close
    from sqlanon.engines.spark import SparkBackend
    return SparkBackend(request.getfixturevalue("spark"), owned=False), lambda: None


@pytest.mark.parametrize("radix", [None, [2]], ids=["block columns", "packed key"])
@pytest.mark.parametrize("engine", ["duckdb", "postgres", "spark"])
def test_verdict_queries_sum_squares_past_bigint_on_every_engine(request, engine, radix):
    """`node_verdict_branch.sql` with `wide_squares` (`FrequencySet.wide_squares`) over two blocks of 6e9 and 5e9
    rows: their squares pass 2^63, and every engine sums them exactly. In BIGINT, Spark's SUM of BIGINT stays
    BIGINT and its square overflows (an error under ANSI mode, a wrapped number without)."""
    import numpy as np
    billions = 1_000_000_000
    b, close = _engine_backend(request, engine)
    try:
        b.create_table_from_frame("sq_cells", {"q0_0": np.array([0, 0, 1, 1], dtype=np.int32),
                                               "s0": np.array([0, 1, 0, 1], dtype=np.int32),
                                               "cnt": np.array([3, 3, 1, 4], dtype=np.int64) * billions})
        branch = dict(g=0, table="sq_cells", block_cols=["q0_0"], sens_col="s0", min_size=1, min_distinct=1,
                      entropy=math.log(2) - 1e-9, witness=None, radix=radix, wide_squares=True)
        data = b.fetchnumpy_union("node_verdict_branch.sql", [branch])
        kept, suppressed = 6 * billions, 5 * billions      # values 3:3 have entropy ln 2, 1:4 less
        assert {f: float(data[f][0]) for f in ("classes", "sum_sq", "min_size", "suppressed", "kept_sum_sq")} == {
            "classes": 2, "sum_sq": float(kept ** 2 + suppressed ** 2), "min_size": suppressed,
            "suppressed": suppressed, "kept_sum_sq": float(kept ** 2)}
    finally:
        close()


def test_postgres_writes_the_wide_frequency_set_clustered(postgres, tmp_path):
    """PostgreSQL writes the wide frequency set in `FrequencySet.cluster_order` too (`Backend.clusters_wide`):
    its rows in physical order (ctid) never go down in that key."""
    policy = adult_policy(ADULT_4, {"k": 5}, source=_source("postgres", "adult"))
    with Anonymization(load_policy(policy, base_dir=tmp_path)) as run:
        run.fs.rollup = False
        key = ", ".join(f'"{c}"' for c in run.fs.cluster_order())
        assert run.fs.wide_table      # built; its rows are in the table under its view (`constant_columns`)
        rows = run.backend.con.execute(f'SELECT ({key}) FROM "{run.fs.wide_stored}" ORDER BY ctid').fetchall()
        assert len(rows) > 1 and all(a <= b for a, b in zip(rows, rows[1:]))


# -- sources, releases and exports on the other engines ---------------------------------------------

def test_postgres_query_source_and_view_release(postgres, tmp_path):
    query = "SELECT * FROM hospital WHERE age > 0"
    table = _outcome(_hospital_policy("postgres", {"k": 4}), tmp_path)
    policy = _hospital_policy("postgres", {"k": 4}, materialize="view")
    view = _outcome(policy, tmp_path)
    assert view["rows"] == table["rows"]
    # a second view release over the first (PostgreSQL tracks the view's dependence on its mapping tables)
    again = _outcome(policy, tmp_path)
    assert again["rows"] == table["rows"]
    by_query = dict(_hospital_policy("postgres", {"k": 4}), source={"engine": "postgres", "dsn_env": PG_ENV,
                                                                     "query": query})
    assert _outcome(by_query, tmp_path)["rows"] == table["rows"]
    assert not [t for t in _pg_tables(postgres) if "__sqlanon_tmp" in t]


@pytest.mark.parametrize("engine", ["postgres", "spark"])
def test_a_source_table_changed_in_place_during_a_run_is_refused(request, engine, tmp_path):
    """Another writer changes one condition of the source table between the search and the release: every row
    count stays, but two cells of (class, condition) now hold other counts than the run judged, so the release
    is refused before the swap (`release.check_as_judged`; a table has no file stamp). Unchanged, the same run
    releases (as every table-sourced test here does)."""
    request.getfixturevalue(engine)
    name = f"{engine}_changing"
    changed = ("SELECT zip_code, age, nationality, CASE WHEN age = 50 THEN 'Heart Disease' ELSE condition END "
               "AS condition FROM hospital")
    if engine == "postgres":
        import psycopg
        with psycopg.connect(request.getfixturevalue("postgres").main_dsn, autocommit=True) as con:
            con.execute(f"DROP TABLE IF EXISTS {name}")
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM hospital")

        def write(sql):
            with psycopg.connect(request.getfixturevalue("postgres").main_dsn, autocommit=True) as con:
                con.execute(sql)
        change = f"UPDATE {name} SET condition = 'Heart Disease' WHERE age = 50"
    else:
        spark = request.getfixturevalue("spark")
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} USING parquet AS SELECT * FROM hospital")
        write, change = spark.sql, f"INSERT OVERWRITE TABLE {name} {changed}"
    policy = dict(_hospital_policy(engine, {"k": 4}, name=f"{name}_rel"),
                  source=dict(_source(engine, "hospital"), table=name))
    with Anonymization(load_policy(policy, base_dir=tmp_path)) as run:
        run.choose()
        write(change)
        with pytest.raises(DataError, match=rf"the source {name} changed while sqlanon read it \(2 cells of the "
                                            r"release differ in count from those the run judged\); nothing was "
                                            r"released"):
            run.materialize()
        assert not run.backend.table_exists(f"{name}_rel")
        assert not run.backend.table_exists(temporary_relation(f"{name}_rel"))


def test_postgres_values_equal_but_written_differently_are_released(postgres, tmp_path):
    """1.23456 and 1.234560 in an unconstrained numeric column, '1 day' and '24:00:00' in an interval column are
    equal in PostgreSQL (the staged source groups them, the run judges one value) but print differently: the
    release, which copies each row's own, is compared with what was judged in the columns' own types and released,
    not refused as a changed source. (Cast to DECIMAL as written, sqlglot's DECIMAL(18, 3), 1.23456 was 1.235.)"""
    import psycopg
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS pg_scales")
        # each hospital row twice, written both ways: the staged source groups the two into one row
        con.execute("CREATE TABLE pg_scales AS SELECT zip_code, age, nationality, score::numeric AS score, "
                    "span::interval AS span FROM hospital, (VALUES ('1.23456', '1 day'), ('1.234560', '24:00:00')) AS w(score, span)")
    policy = dict(_hospital_policy("postgres", {"k": 4}, name="pg_scales_rel"), sensitive=["score", "span"],
                  source=dict(_source("postgres", "hospital"), table="pg_scales"))
    assert _outcome(policy, tmp_path)["rows"].total() == 24


# a sensitive value written two ways at ages 20 and 21, two other values at 40 and 41 (tests/test_sensitive_values.py
# holds DuckDB's cases): with k = 2 and distinct 2-diversity only age's top level is 2-diverse; counted as two
# values, the two texts made the decades 2-diverse. (type, the two texts, the two other values)
EQUAL_SENSITIVE_VALUES = {
    "postgres numeric": ("numeric", "1.5", "1.50", "2", "3"),
    "postgres numeric infinity": ("numeric", "1.5", "1.50", "Infinity", "NaN"),
    "postgres interval": ("interval", "1 day", "24:00:00", "2 days", "3 days"),
    "postgres float8": ("float8", "-0", "0", "1.5", "2.5"),
    "spark double": ("double", "-0.0", "0.0", "1.5", "2.5"),
}


def _equal_values_run(engine: str, table: str, tmp_path) -> tuple[int, dict]:
    """(the size of the sensitive domain, the chosen node) of the run over `table`."""
    policy = {"source": _source(engine, table), "quasi_identifiers": {"age": {"hierarchy": "intervals", "widths": [10]}},
              "sensitive": ["score"], "privacy": {"k": 2, "l_diversity": {"variant": "distinct", "l": 2}},
              "release": {"name": f"{table}_rel"}}
    with Anonymization(load_policy(policy, base_dir=tmp_path), db=":memory:") as run:
        run.choose()
        run.materialize()
        return run.fs.sensitives[0].domain.size, run.chosen.levels


def _equal_values_rows(case: str) -> str:
    ty, one, other, two, three = EQUAL_SENSITIVE_VALUES[case]
    rows = [(20, one), (21, other), (40, two), (41, three)] * 3
    return ", ".join(f"({age}, CAST('{v}' AS {ty}))" for age, v in rows)


@pytest.mark.parametrize("case", [c for c in EQUAL_SENSITIVE_VALUES if c.startswith("postgres")])
def test_postgres_equal_sensitive_values_are_one_value(case, postgres, tmp_path):
    import psycopg
    table = "equal_" + "_".join(case.split()[1:])
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM (VALUES {_equal_values_rows(case)}) AS v(age, score)")
        # PostgreSQL's own count of the decades' values: the reference
        assert con.execute(f"SELECT age / 10, COUNT(DISTINCT score) FROM {table} GROUP BY 1 ORDER BY 1").fetchall() \
            == [(2, 1), (4, 2)]
    assert _equal_values_run("postgres", table, tmp_path) == (3, {"age": 2})


def test_spark_equal_sensitive_values_are_one_value(spark, tmp_path):
    spark.sql("DROP TABLE IF EXISTS equal_double")
    spark.sql("CREATE TABLE equal_double USING parquet AS SELECT * FROM VALUES "
              f"{_equal_values_rows('spark double')} AS v(age, score)")
    assert spark.sql("SELECT age DIV 10, COUNT(DISTINCT score) FROM equal_double GROUP BY 1 ORDER BY 1").collect() \
        == [(2, 1), (4, 2)]
    assert _equal_values_run("spark", "equal_double", tmp_path) == (3, {"age": 2})


@pytest.mark.parametrize("engine", ["postgres", "spark"])
def test_anatomy_and_maxent_count_zero_once_on_each_engine(engine, request, tmp_path):
    """Anatomy's sensitive table and Privacy-MaxEnt on PostgreSQL's float8 and Spark's double, zero written -0 and
    0: one value, written as its least text in every bucket (`anatomy_st.sql` with `written_apart`), and MaxEnt's
    three values estimate the original records without an impossible cell."""
    from sqlanon.maxent import MaxEnt
    from sqlanon.maxent.anatomy import bucketize_policy
    from sqlanon.maxent.run import open_release
    request.getfixturevalue(engine)
    case = "postgres float8" if engine == "postgres" else "spark double"
    table = f"zeros_{engine}"
    if engine == "postgres":
        import psycopg
        with psycopg.connect(request.getfixturevalue("postgres").main_dsn, autocommit=True) as con:
            con.execute(f"DROP TABLE IF EXISTS {table}, zb_qit, zb_st, zb_private")
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM (VALUES {_equal_values_rows(case)}) AS v(age, score)")
    else:
        spark = request.getfixturevalue("spark")
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"CREATE TABLE {table} USING parquet AS SELECT * FROM VALUES {_equal_values_rows(case)} AS v(age, score)")
    policy = load_policy({"source": _source(engine, table), "sensitive": ["score"], "privacy": {"k": 2},
                          "quasi_identifiers": {"age": {"hierarchy": "intervals", "widths": [10]}},
                          "release": {"name": f"{table}_rel"}}, base_dir=tmp_path)
    bucketize_policy(policy, 2, "zb")
    with open_release(policy, buckets="zb") as (backend, release):
        zeros = {str(v) for b, v, n in backend.fetchall("select_all.sql", relation="zb_st") if float(v) == 0}
        assert len(zeros) == 1
        me = MaxEnt(backend, release)
        assert len(me.problem.s_values) == 3 and me.problem.N == 12
    with open_release(policy, node={"age": 1}) as (backend, release):
        me = MaxEnt(backend, release)
        accuracy = me.accuracy(me.solve())
        assert len(me.problem.s_values) == 3 and accuracy["cells_estimated_impossible"] == 0


def test_postgres_nested_sensitive_floats_are_refused(postgres, tmp_path):
    """An array of float8 holds [0] and [-0], equal but written apart: refused as on DuckDB
    (tests/test_sensitive_values.py), by the type name PostgreSQL's driver gives."""
    import psycopg
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS nested_float8")
        con.execute("CREATE TABLE nested_float8 AS SELECT age, ARRAY[CAST(v AS float8)] AS score FROM (VALUES "
                    "(20, '-0'), (21, '0'), (40, '1.5'), (41, '2.5')) AS r(age, v)")
    with pytest.raises(DataError, match=r"column 'score' is of the nested type \S+\[\]"):
        _equal_values_run("postgres", "nested_float8", tmp_path)


POSTGRES_WRITTEN_APART = {
    # (type made for the test, how to write a value, (value one way, the same value the other way, others))
    "composite of float8": ("CREATE TYPE pair_f8 AS (x float8, y text)", "CAST(ROW(CAST({} AS float8), 'a') AS pair_f8)",
                            ("'-0'", "'0'", "'1.5'", "'2.5'")),
    "numrange": (None, "numrange({}, 3)", ("1.5", "1.50", "2", "2.5")),
}


@pytest.mark.parametrize("case", list(POSTGRES_WRITTEN_APART))
def test_postgres_sensitive_values_written_apart_of_other_types_are_refused(case, postgres, tmp_path):
    """A composite or a range holds equal values written apart ((-0,a) and (0,a); [1.5,3) and [1.50,3)): its type
    names no float the way `nested_equal_unlike` reads (a composite comes as its OID), so its distinct texts are
    counted against its values first (`value_text_counts.sql`), and such data is refused. The same type without
    such values runs."""
    import psycopg
    make, write, (one, other, two, three) = POSTGRES_WRITTEN_APART[case]
    table = "apart_" + case.split()[0]
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {table}, {table}_ok")
        if make:
            con.execute(make.replace("CREATE TYPE", "DROP TYPE IF EXISTS").split(" AS ")[0] + " CASCADE")
            con.execute(make)
        rows = [(20, one), (21, other), (40, two), (41, three)] * 3
        values = ", ".join(f"({age}, {write.format(v)})" for age, v in rows)
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM (VALUES {values}) AS v(age, score)")
        ok = ", ".join(f"({age}, {write.format(v)})" for age, v in rows if v != other)
        con.execute(f"CREATE TABLE {table}_ok AS SELECT * FROM (VALUES {ok}) AS v(age, score)")
        # PostgreSQL's own counts: one value fewer than texts
        assert con.execute(f"SELECT COUNT(DISTINCT score), COUNT(DISTINCT CAST(score AS text)) FROM {table}").fetchone() \
            == (3, 4)
    with pytest.raises(DataError, match="column 'score' .* has 1 more distinct text"):
        _equal_values_run("postgres", table, tmp_path)
    assert _equal_values_run("postgres", f"{table}_ok", tmp_path) == (3, {"age": 2})


def test_spark_nested_sensitive_floats_are_refused(spark, tmp_path):
    spark.sql("DROP TABLE IF EXISTS nested_double")
    spark.sql("CREATE TABLE nested_double USING parquet AS SELECT age, array(CAST(v AS double)) AS score FROM VALUES "
              "(20, '-0.0'), (21, '0.0'), (40, '1.5'), (41, '2.5') AS r(age, v)")
    with pytest.raises(DataError, match="column 'score' is of the nested type ARRAY<DOUBLE>"):
        _equal_values_run("spark", "nested_double", tmp_path)


def test_spark_run_frees_its_checkpoint(spark, tmp_path):
    """The staged source is a local checkpoint, which Spark's cache manager does not know: closing the run frees
    its blocks (a session the caller keeps would otherwise hold a copy of every source row read)."""
    jsc = spark.sparkContext._jsc
    before = jsc.getPersistentRDDs().size()
    policy = load_policy(_hospital_policy("spark", {"k": 4}, name="spark_free_rel"), base_dir=tmp_path)
    with Anonymization(policy) as run:
        run.choose()
        run.materialize()
        assert jsc.getPersistentRDDs().size() > before
    assert jsc.getPersistentRDDs().size() == before


def test_postgres_schema_qualified_source_and_release(postgres, tmp_path):
    """schema.table for the source and the release, each part quoted (a schema name that needs quoting): the
    same rows as the unqualified run, the release (table, then view) in that schema and not in the current one."""
    import psycopg
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute('CREATE SCHEMA IF NOT EXISTS "Ward 7"')
        con.execute('CREATE TABLE IF NOT EXISTS "Ward 7".patients AS SELECT * FROM hospital')
    reference = _outcome(_hospital_policy("postgres", {"k": 4}), tmp_path)
    for kind in ("table", "view"):
        policy = dict(_hospital_policy("postgres", {"k": 4}, name='"Ward 7".rel', materialize=kind),
                      source={"engine": "postgres", "dsn_env": PG_ENV, "table": '"Ward 7".patients'})
        out = _outcome(policy, tmp_path)
        assert out["rows"] == reference["rows"]
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            kinds = con.execute("SELECT table_type FROM information_schema.tables WHERE table_schema = 'Ward 7' "
                                "AND table_name = 'rel'").fetchall()
        assert kinds == [("BASE TABLE" if kind == "table" else "VIEW",)]
    assert "rel" not in _pg_tables(postgres)              # nothing in the current schema


def test_postgres_names_longer_than_it_keeps_are_refused(postgres, tmp_path):
    """PostgreSQL cuts identifiers to 63 bytes, silently: a view release named with 57 characters had its maps
    <name>__map_0 and <name>__map_1 cut to one table, and the view joined age against sex's map (exit 0)."""
    name = "people_release_for_the_quarterly_public_health_dashboards"
    before = _pg_tables(postgres)
    policy = _hospital_policy("postgres", {"k": 4}, name=name, materialize="view")
    line = _one_line_error(_cli(["anonymize", _write_policy(tmp_path, policy), "-q"]), "is longer than the 63 bytes")
    assert f"{name}__map_0" in line and _pg_tables(postgres) == before


def test_postgres_names_resolve_through_the_search_path(postgres, tmp_path, monkeypatch):
    """With a schema of its own first on the search_path (the default "$user", public), the ownership check looked
    for the release's names in current_schema() only, and the DROP ... IF EXISTS of a view release's CREATE OR
    REPLACE resolved them through the whole path: a user's public.r and public.r__map_0 were dropped, exit 0; and
    a source table in public was "does not exist (schema sq)". Now both resolve as PostgreSQL resolves them."""
    import psycopg
    monkeypatch.setenv("SQLANON_TEST_PG_DSN_SQ", postgres.main_dsn + "?options=-csearch_path%3Dsq%2Cpublic")
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("CREATE SCHEMA sq")
        con.execute("CREATE VIEW public.r AS SELECT 'dashboard' AS note")
        con.execute("CREATE TABLE public.r__map_0 AS SELECT 'user table' AS note")
    try:
        for name, kind in (("r", "view"), ("r", "table"), ("r__map_0", "table")):
            policy = dict(_hospital_policy("postgres", {"k": 4}, name=name, materialize=kind),
                          source={"engine": "postgres", "dsn_env": "SQLANON_TEST_PG_DSN_SQ", "table": "hospital"})
            _one_line_error(_cli(["anonymize", _write_policy(tmp_path, policy), "-q"]), "refusing to replace")
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            assert con.execute("SELECT note FROM public.r").fetchall() == [("dashboard",)]
            assert con.execute("SELECT note FROM public.r__map_0").fetchall() == [("user table",)]
        # a name free on the whole path: released into sq, the source read from public
        policy = dict(_hospital_policy("postgres", {"k": 4}, name="rel_sq", materialize="view"),
                      source={"engine": "postgres", "dsn_env": "SQLANON_TEST_PG_DSN_SQ", "table": "hospital"})
        assert _cli(["anonymize", _write_policy(tmp_path, policy), "-q"]).exit_code == 0
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            assert con.execute("SELECT COUNT(*) FROM sq.rel_sq").fetchone()[0] > 0
    finally:
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            con.execute("DROP SCHEMA sq CASCADE")
            con.execute("DROP VIEW public.r")
            con.execute("DROP TABLE public.r__map_0")


@pytest.mark.parametrize("engine", ["postgres", "spark"])
def test_source_query_is_one_select(request, engine, tmp_path):
    """A second statement after the SELECT (or no SELECT at all) is refused before anything runs."""
    request.getfixturevalue(engine)
    source = {"engine": "postgres", "dsn_env": PG_ENV} if engine == "postgres" else {"engine": "spark",
                                                                                     "master": "local[2]"}
    for query, needle in [("SELECT * FROM hospital; DROP TABLE hospital", "got 2 statements"),
                          ("DELETE FROM hospital", "must be one SELECT statement"),
                          ("SELECT * FROM WHERE", f"is not valid SQL for {engine}")]:
        policy = dict(_hospital_policy(engine, {"k": 4}), source={**source, "query": query})
        _one_line_error(_cli(["anonymize", _write_policy(tmp_path, policy), "-q"]), needle)
    if engine == "postgres":
        assert "hospital" in _pg_tables(request.getfixturevalue("postgres"))


def test_spark_database_qualified_source_and_release(spark, tmp_path):
    spark.sql("CREATE DATABASE IF NOT EXISTS ward")
    spark.sql("CREATE TABLE IF NOT EXISTS ward.patients USING parquet AS SELECT * FROM hospital")
    reference = _outcome(_hospital_policy("spark", {"k": 4}), tmp_path)
    policy = dict(_hospital_policy("spark", {"k": 4}, name="ward.rel"),
                  source={"engine": "spark", "master": "local[2]", "table": "ward.patients"})
    assert _outcome(policy, tmp_path)["rows"] == reference["rows"]
    assert spark.catalog.tableExists("ward.rel")


def test_spark_failed_view_release_in_a_database_leaves_nothing(spark, tmp_path, monkeypatch):
    """Spark has no transactions: the tables a failed view release created (its mapping tables, persisted
    in the release's database) are dropped again, in that database too."""
    spark.sql("CREATE DATABASE IF NOT EXISTS ward")
    policy = dict(_hospital_policy("spark", {"k": 4}, name="ward.failed", materialize="view"),
                  source={"engine": "spark", "master": "local[2]", "table": "hospital"})
    with Anonymization(load_policy(policy, base_dir=tmp_path)) as run:
        run.search()
        run.score_minimal()
        run.choose()
        real = run.backend.execute

        def failing(template, *args, **kwargs):
            if template == "release_view_enforced.sql":
                raise DataError("the view statement failed")
            return real(template, *args, **kwargs)
        monkeypatch.setattr(run.backend, "execute", failing)
        with pytest.raises(DataError, match="the view statement failed"):
            run.materialize()
    assert [t.name for t in spark.catalog.listTables("ward") if t.name.startswith("failed")] == []


@pytest.mark.parametrize("engine", ["postgres", "spark"])
def test_exports_equal_duckdb_exports(request, engine, tmp_path):
    request.getfixturevalue("postgres" if engine == "postgres" else "spark")
    files = {}
    for e in ("duckdb", engine):
        out = [str(tmp_path / f"{e}.parquet"), str(tmp_path / f"{e}.csv")]
        policy = _hospital_policy(e, HOSPITAL_CASES["k=5 with suppression"], export=out)
        with Anonymization(load_policy(policy, base_dir=tmp_path)) as run:
            run.choose()
            outputs = run.materialize()
        assert [o.kind for o in outputs] == ["table", "parquet", "csv"]
        files[e] = out
    con = duckdb.connect()
    for i, reader in enumerate(("read_parquet", "read_csv")):
        a, b = (sorted(tuple(map(str, r)) for r in con.execute(f"SELECT * FROM {reader}(?)", [files[e][i]]).fetchall())
                for e in ("duckdb", engine))
        assert a == b and len(a) == 8, reader
    assert not list(tmp_path.glob("*.sqlanon_*")), "staging files left behind"


@pytest.mark.parametrize("engine", ["postgres", "spark"])
def test_a_value_missing_from_a_hierarchy_is_named(request, engine, tmp_path):
    """The statement naming the values a hierarchy lacks (an anti-join on the text, `uncovered_texts` in
    _macros.sql) runs on every engine: 13053 and 13068 (2 rows) are not in this zip code hierarchy."""
    request.getfixturevalue(engine)
    rows = (HOSPITAL / "hierarchies" / "zip_code.csv").read_text().splitlines()
    (tmp_path / "zip.csv").write_text("\n".join(r for r in rows if not r.startswith(("13053", "13068"))) + "\n")
    policy = dict(_hospital_policy(engine, {"k": 4}),
                  quasi_identifiers={**HOSPITAL_QIS, "zip_code": {"hierarchy": str(tmp_path / "zip.csv")}})
    with pytest.raises(UnknownValues, match=r"column 'zip_code': value\(s\) '13053', '13068' missing") as e:
        Anonymization(load_policy(policy, base_dir=tmp_path))
    assert e.value.values == ["13053", "13068"]


def test_postgres_parquet_export_writes_other_types_as_the_csv_export_does(postgres, tmp_path):
    """Arrays, uuid, interval, jsonb: the driver returns lists, UUIDs, timedeltas and dicts, which stopped the
    Parquet export with a pyarrow traceback. They are written as PostgreSQL's text of them, as the CSV export
    writes them; the types Parquet has (integers, floats, dates, text) keep their own."""
    import psycopg
    import pyarrow.parquet as pq

    from sqlanon.engines.postgres import PostgresBackend
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS export_types")
        con.execute("CREATE TABLE export_types (a text[], b int[], c numeric(4,2)[], d uuid, e interval, f jsonb, "
                    "g integer, h varchar(9), i float8, j date)")
        con.execute("""INSERT INTO export_types VALUES (ARRAY['x', 'y z'], ARRAY[[1, 2], [3, 4]], ARRAY[1.50],
                       'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', interval '1 day 02:00', '{"k": [1, 2]}', 7, 'text',
                       -0.5, DATE '2020-02-29'), (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)""")
        backend = PostgresBackend(con, owned=False)
        try:
            backend.export("export_types", tmp_path / "t.parquet", "parquet")
            backend.export("export_types", tmp_path / "t.csv", "csv")
        finally:
            con.execute("DROP TABLE export_types")
    table = pq.read_table(tmp_path / "t.parquet")
    assert [str(table.schema.field(c).type) for c in "ghij"] == ["int32", "string", "double", "date32[day]"]
    rows = table.to_pylist()
    assert rows[1] == dict.fromkeys("abcdefghij")
    as_csv = duckdb.connect().execute(f"SELECT * FROM read_csv('{tmp_path / 't.csv'}', all_varchar = true)").fetchall()
    assert [rows[0][c] for c in "abcdef"] == list(as_csv[0][:6]) == [
        '{x,"y z"}', "{{1,2},{3,4}}", "{1.50}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "1 day 02:00:00",
        '{"k": [1, 2]}']


def test_postgres_parquet_export_keeps_numerics_exact_and_instants_in_utc(postgres, tmp_path):
    """A numeric of declared precision is a Parquet decimal of it (it was a float64: numeric(20,2) lost its cents),
    an unconstrained numeric its exact text, a timestamptz an instant in UTC. A NaN no Parquet decimal holds, or a
    timestamp 'infinity' the driver cannot load, is one line naming what to do, and no file is left."""
    import datetime as dt
    from decimal import Decimal

    import psycopg
    import pyarrow.parquet as pq

    from sqlanon.engines.postgres import PostgresBackend
    from sqlanon.release import export
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("SET TIME ZONE 'Europe/Paris'")
        con.execute("DROP TABLE IF EXISTS export_exact")
        con.execute("CREATE TABLE export_exact (a numeric(20,2), b numeric(5,2), c numeric, d numeric(60,30), "
                    "e timestamptz, f timestamp, g numeric(80,2))")
        con.execute("""INSERT INTO export_exact VALUES (123456789012345678.91, -1.50, 3.14159265358979323846264,
                       123456789012345678901234567890.123456789012345678901234567891, '2020-06-01 12:00:00+02',
                       '2020-06-01 12:00:00', 12.5), (NULL, NULL, NULL, NULL, NULL, NULL, NULL)""")
        backend = PostgresBackend(con, owned=False)
        try:
            backend.export("export_exact", tmp_path / "t.parquet", "parquet")
            table = pq.read_table(tmp_path / "t.parquet")
            con.execute("UPDATE export_exact SET b = 'NaN' WHERE a IS NULL")
            with pytest.raises(DataError, match=r"^column 'b' of export_exact holds NaN, which a Parquet "
                                                r"decimal128\(5, 2\) cannot hold .*export it as CSV"):
                export(backend, "export_exact", tmp_path / "nan.parquet")
            con.execute("UPDATE export_exact SET b = NULL, f = 'infinity' WHERE a IS NULL")
            with pytest.raises(DataError, match=r"^export_exact holds a value Parquet cannot hold here .*infinity.*"
                                                r"export it as CSV"):
                export(backend, "export_exact", tmp_path / "inf.parquet")
        finally:
            con.execute("DROP TABLE export_exact")
    # past 76 digits (Parquet's widest decimal) a declared numeric is its exact text too
    assert [str(table.schema.field(c).type) for c in "abcdefg"] == [
        "decimal128(20, 2)", "decimal128(5, 2)", "string", "decimal256(60, 30)", "timestamp[us, tz=UTC]",
        "timestamp[us]", "string"]
    rows = table.to_pylist()
    assert rows[0] == {"a": Decimal("123456789012345678.91"), "b": Decimal("-1.50"), "c": "3.14159265358979323846264",
                       "d": Decimal("123456789012345678901234567890.123456789012345678901234567891"),
                       "e": dt.datetime(2020, 6, 1, 10, tzinfo=dt.timezone.utc), "f": dt.datetime(2020, 6, 1, 12),
                       "g": "12.50"}
    assert rows[1] == dict.fromkeys("abcdefg")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["t.parquet"]


def test_spark_parquet_and_csv_sources(spark, duckdb_hospital, tmp_path):
    parquet = tmp_path / "hospital.parquet"
    duckdb.connect().execute(f"COPY (SELECT * FROM read_csv('{HOSPITAL / 'hospital.csv'}')) TO '{parquet}' "
                             "(FORMAT parquet)")
    for src in ({"parquet": str(parquet)}, {"csv": str(HOSPITAL / "hospital.csv")}):
        policy = dict(_hospital_policy("spark", {"k": 4}), source={"engine": "spark", "master": "local[2]", **src})
        _assert_same(_outcome(policy, tmp_path), duckdb_hospital["k=4"])


def test_duckdb_file_sources_leave_only_the_release_in_the_database(tmp_path):
    for kind in ("csv", "parquet"):
        db = tmp_path / f"{kind}.duckdb"
        policy = (_hospital_policy("duckdb", {"k": 4}) if kind == "csv" else
                  adult_policy(3, {"k": 6}, release={"name": "hospital_rel"}))
        _outcome(policy, tmp_path, db=db)
        con = duckdb.connect(str(db), read_only=True)
        assert sorted(con.execute("SELECT table_name FROM information_schema.tables").fetchall()) == [
            ("hospital_rel",), ("sqlanon_releases",)]
        con.close()


# -- bad input: one line, exit 2, nothing left behind ------------------------------------------------

def _write_policy(tmp_path, policy: dict) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    return path


def _cli(args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, env=env)


def _one_line_error(result, needle: str):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("sqlanon: error:"), result.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in result.output
    return lines[0]


def test_postgres_bad_input_is_one_line_and_leaves_nothing(postgres, tmp_path):
    before = _pg_tables(postgres)
    policy = _write_policy(tmp_path, _hospital_policy("postgres", {"k": 4}))
    closed = _free_port()
    cases = {
        "unreachable server": ({PG_ENV: postgres.dsn("sqlanon", port=closed)}, "cannot connect to PostgreSQL"),
        "wrong credentials": ({PG_ENV: postgres.dsn("sqlanon", password="not-the-password")},
                              "password authentication failed"),
        "missing database": ({PG_ENV: postgres.dsn("nope")}, 'database "nope" does not exist'),
        "variable not set": ({PG_ENV: None}, f"environment variable {PG_ENV} is not set"),
        "not a DSN": ({PG_ENV: "this is = not a dsn"}, "not hold a valid PostgreSQL connection string"),
    }
    for case, (env, needle) in cases.items():
        line = _one_line_error(_cli(["anonymize", policy, "-q"], env=env), needle)
        assert PG_PASSWORD not in line and "not-the-password" not in line, case
    missing = _write_policy(tmp_path, dict(_hospital_policy("postgres", {"k": 4}),
                                           source={"engine": "postgres", "dsn_env": PG_ENV, "table": "nope"}))
    _one_line_error(_cli(["anonymize", missing, "-q"]), "source table 'nope' does not exist")
    column = _write_policy(tmp_path, dict(_hospital_policy("postgres", {"k": 4}),
                                          quasi_identifiers={**HOSPITAL_QIS, "agee": {"hierarchy": "suppress"}}))
    _one_line_error(_cli(["anonymize", column, "-q"]), "agee")
    assert _pg_tables(postgres) == before


def test_postgres_column_under_a_nondeterministic_collation_is_refused(postgres, tmp_path):
    """A case-insensitive ICU collation makes 'RUSSIAN' and 'Russian' one value to PostgreSQL's GROUP BYs and
    joins, two to the hierarchies: the column is refused with one line naming it, declared on the table or
    inherited through a query, and the query the line suggests (the column as text COLLATE "C") is read and
    released."""
    import psycopg
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("CREATE COLLATION IF NOT EXISTS ci (provider = icu, locale = 'und-u-ks-level2', "
                    "deterministic = false)")
        con.execute("CREATE TABLE hospital_ci AS SELECT * FROM hospital")
        con.execute("ALTER TABLE hospital_ci ALTER COLUMN nationality TYPE text COLLATE ci")
        con.execute("UPDATE hospital_ci SET nationality = upper(nationality) WHERE age % 2 = 0")
    try:
        source = {"engine": "postgres", "dsn_env": PG_ENV}
        for src, label in (({"table": "hospital_ci"}, "hospital_ci"), ({"query": "SELECT * FROM hospital_ci"}, "query")):
            policy = _write_policy(tmp_path, dict(_hospital_policy("postgres", {"k": 4}), source={**source, **src}))
            _one_line_error(_cli(["anonymize", policy, "-q"]),
                            f"column(s) 'nationality' of the source {label} compare under a collation")
        # the select the line suggests, word for word (an unquoted COLLATE C names no collation here)
        suggested = _cli(["anonymize", policy, "-q"]).stderr.strip().rsplit("selecting ", 1)[1]
        assert suggested == 'CAST("nationality" AS text) COLLATE "C" AS "nationality"'
        exact = f'SELECT zip_code, age, {suggested}, condition FROM hospital_ci'
        out = _outcome(dict(_hospital_policy("postgres", {"k": 4}, name="hospital_ci_rel"),
                            source={**source, "query": exact}), tmp_path)
        assert sum(out["rows"].values()) == len(_frames()["hospital"]) - out["suppressed"]
    finally:
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            con.execute("DROP TABLE IF EXISTS hospital_ci_rel")
            con.execute("DROP TABLE IF EXISTS hospital_ci")


@pytest.mark.parametrize("fails", ["rename_table.sql", "catalog_insert.sql"])
def test_postgres_failed_swap_keeps_the_previous_release(postgres, tmp_path, monkeypatch, fails):
    """A failure inside the swap's transaction, at the rename or at the catalog row written with it: the old
    release, no temporary table, and the catalog as it was."""
    policy = load_policy(_hospital_policy("postgres", {"k": 4}, name="swap_rel"), base_dir=tmp_path)
    with Anonymization(policy) as run:
        run.choose()
        run.materialize()
        before = sorted(run.backend.fetchall("select_all.sql", relation="swap_rel"))
        catalog_before = _pg_catalog(postgres)
        real = run.backend.execute

        def failing(template, params=None, **ctx):
            if template == fails:
                raise DataError("disk full")
            return real(template, params, **ctx)

        monkeypatch.setattr(run.backend, "execute", failing)
        with pytest.raises(DataError):
            run.materialize()
        assert sorted(run.backend.fetchall("select_all.sql", relation="swap_rel")) == before
    assert "swap_rel" in _pg_tables(postgres) and not [t for t in _pg_tables(postgres) if "__sqlanon_tmp" in t]
    assert _pg_catalog(postgres) == catalog_before


def test_manifest_names_the_variable_not_the_secret(postgres, tmp_path):
    policy = _write_policy(tmp_path, _hospital_policy("postgres", {"k": 4}, name="manifest_rel"))
    out = tmp_path / "m.json"
    result = _cli(["anonymize", policy, "--json", out])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    for secret in (PG_PASSWORD, postgres.main_dsn):
        assert secret not in text and secret not in result.output
    assert f":{postgres.port}" not in text           # not even where the server is
    assert f"in PostgreSQL 127.0.0.1:{postgres.port}/sqlanon as sqlanon" in result.output   # the summary says
    manifest = json.loads(text)
    assert manifest["policy"]["source"] == {"engine": "postgres", "dsn_env": PG_ENV, "table": "hospital"}
    assert manifest["outputs"] == [{"kind": "table", "name": "manifest_rel", "rows": 12}]
    assert manifest["chosen"]["levels"] == {"zip_code": 1, "age": 1, "nationality": 1}


def test_check_of_a_postgres_release_reads_the_same_server(postgres, tmp_path):
    policy = _write_policy(tmp_path, _hospital_policy("postgres", {"k": 4}, name="checked_rel"))
    assert _cli(["anonymize", policy, "-q"]).exit_code == 0
    result = _cli(["check", policy, "--table", "checked_rel", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["rows"], report["classes"], report["achieved"]["k"]) == (12, 3, 4)
    assert _cli(["check", policy]).exit_code == 3          # the source itself is not 4-anonymous
    sql = _cli(["sql", policy, "--dialect", "postgres", "-q", "--steps"])
    assert 'CREATE TEMPORARY TABLE "__sqlanon_fs"' in sql.output and "CREATE OR REPLACE TEMPORARY" not in sql.output


def test_a_psycopg_connection_can_be_handed_in(postgres, tmp_path):
    import psycopg

    import sqlanon
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        policy = dict(_hospital_policy("postgres", {"k": 4}), source={"table": "hospital"})
        run = sqlanon.search_and_choose(con, policy)
        assert run.backend.engine == "postgres" and run.chosen.levels == {"zip_code": 1, "age": 1, "nationality": 1}
        run.close()                                          # the caller's connection stays open
        assert con.execute("SELECT COUNT(*) FROM hospital").fetchone() == (12,)


def test_spark_bad_input_is_one_line(spark, tmp_path):
    missing = _write_policy(tmp_path, dict(_hospital_policy("spark", {"k": 4}),
                                           source={"engine": "spark", "master": "local[2]", "table": "nope"}))
    _one_line_error(_cli(["anonymize", missing, "-q"]), "source table 'nope' does not exist")
    before = {t.name for t in spark.catalog.listTables()}
    column = _write_policy(tmp_path, dict(_hospital_policy("spark", {"k": 4}),
                                          quasi_identifiers={**HOSPITAL_QIS, "agee": {"hierarchy": "suppress"}}))
    _one_line_error(_cli(["anonymize", column, "-q"]), "agee")
    assert {t.name for t in spark.catalog.listTables()} == before     # no work table or release left


@pytest.mark.parametrize("column, way_out", [
    ("`condition` COLLATE UTF8_LCASE", "`condition` COLLATE UTF8_BINARY"),
    ("array(`condition` COLLATE UTF8_LCASE)", "CAST(`condition` AS ARRAY<STRING>)"),
    ("named_struct('Name', `condition` COLLATE UTF8_LCASE)", "CAST(`condition` AS STRUCT<`Name`: STRING>)"),
    ("named_struct('a b:c', array(`condition` COLLATE UTF8_LCASE))",     # a name Spark's simpleString cannot write
     "CAST(`condition` AS STRUCT<`a b:c`: ARRAY<STRING>>)"),
    ("map('k', `condition` COLLATE UTF8_LCASE)", "CAST(`condition` AS MAP<STRING, STRING>)"),
])
def test_spark_collated_columns_are_refused(column, way_out, spark, tmp_path):
    """Spark 4's collations: under UTF8_LCASE a GROUP BY groups 'A' with 'a' (and ['A'] with ['a'], {'A'} with
    {'a'}), merging values the hierarchies and the sensitive domain keep apart. A source column declared so, or an
    array or struct of such texts, is refused with one line naming it and the way out, a query reading it under
    UTF8_BINARY (a nested one cast to its binary type), which then runs."""
    from pyspark.sql.types import StringType
    if not hasattr(StringType(), "collation"):
        unavailable("Spark collations", "pyspark 4 or later")
    assert spark.sql("SELECT COUNT(DISTINCT c COLLATE UTF8_LCASE) FROM VALUES ('A'), ('a') AS v(c)").first()[0] == 1
    assert spark.sql("SELECT COUNT(*) FROM (SELECT c FROM VALUES (array('A' COLLATE UTF8_LCASE)), "
                     "(array('a' COLLATE UTF8_LCASE)) AS v(c) GROUP BY c)").first()[0] == 1
    columns = [c for c in spark.table("hospital").columns if c != "condition"]
    spark.sql(f"CREATE TABLE hospital_lcase USING parquet AS SELECT {', '.join(columns)}, "
              f"{column} AS `condition` FROM hospital")
    try:
        collated = _write_policy(tmp_path, dict(_hospital_policy("spark", {"k": 4}, name="lcase_rel"), source={
            "engine": "spark", "master": "local[2]", "table": "hospital_lcase"}))
        line = _one_line_error(_cli(["anonymize", collated, "-q"]), "column(s) 'condition' of the source "
                               "hospital_lcase compare under a collation")
        assert line.split("selecting ")[-1] == f"{way_out} AS `condition`", line
        read = _write_policy(tmp_path, dict(_hospital_policy("spark", {"k": 4}, name="lcase_rel"), source={
            "engine": "spark", "master": "local[2]",
            "query": f"SELECT {', '.join(columns)}, {way_out} AS `condition` FROM hospital_lcase"}))
        result = _cli(["anonymize", read, "-q"])
        assert result.exit_code == 0, result.output
        assert spark.table("lcase_rel").count() == spark.table("hospital").count()
        assert spark.table("lcase_rel").schema["condition"].dataType.simpleString() == \
            spark.table("hospital_lcase").schema["condition"].dataType.simpleString().replace(" collate UTF8_LCASE", "")
    finally:
        spark.sql("DROP TABLE IF EXISTS hospital_lcase")
        spark.sql("DROP TABLE IF EXISTS lcase_rel")


def test_spark_source_files_are_the_files_spark_reads(spark, tmp_path):
    """`SparkBackend.source_files` (whose stamps tell whether a folder source was written during a run) lists the
    files Spark's own listing reads: in partition folders '_name=value' too, not its _SUCCESS marker, its .crc
    checksums or another hidden file."""
    from urllib.parse import unquote, urlparse

    from sqlanon.engines.spark import SparkBackend
    folder = tmp_path / "parts"
    spark.table("hospital").withColumnRenamed("nationality", "_nat").write.partitionBy("_nat").parquet(str(folder))
    (folder / ".notes.parquet").write_text("x")
    names = {p.name for p in folder.rglob("*")}
    assert "_SUCCESS" in names and any(n.endswith(".crc") for n in names)
    read = sorted(Path(unquote(urlparse(f).path)) for f in spark.read.parquet(str(folder)).inputFiles())
    assert read and all("_nat=" in str(p) for p in read)
    assert SparkBackend.source_files(None, folder, "parquet") == read     # type: ignore[arg-type]


def test_unreachable_spark_master_is_one_line(tmp_path):
    try:
        import pyspark  # noqa: F401
    except ImportError:
        unavailable("pyspark", "pip install pyspark")
    policy = _write_policy(tmp_path, dict(_hospital_policy("spark", {"k": 4}),
                                          source={"engine": "spark", "master": f"spark://127.0.0.1:{_free_port()}",
                                                  "table": "hospital"}))
    t = time.perf_counter()
    _one_line_error(_cli(["anonymize", policy, "-q"]), "cannot reach the Spark master")
    assert time.perf_counter() - t < 30


# -- the policy's source: parsing needs no server -----------------------------------------------------

@pytest.mark.parametrize("source, field, needle", [
    ({"engine": "oracle", "table": "t"}, "source.engine", "duckdb, postgres, spark"),
    ({"engine": "postgres", "table": "t"}, "source.dsn_env", "environment variable"),
    ({"engine": "postgres", "dsn_env": "X", "dsn": "postgresql://u:pw@h/db", "table": "t"}, "source.dsn",
     "environment variable"),
    ({"engine": "postgres", "dsn_env": "X", "password": "pw", "table": "t"}, "source.password", "password_env"),
    ({"engine": "postgres", "dsn_env": "not a name", "table": "t"}, "source.dsn_env", "environment variable"),
    ({"engine": "postgres", "dsn_env": "X", "csv": "a.csv"}, "source.csv", "unknown key for engine postgres"),
    ({"engine": "spark", "dsn_env": "X", "table": "t"}, "source.dsn_env", "that key is for engine postgres"),
    ({"engine": "spark", "master": "", "table": "t"}, "source.master", "master URL"),
    ({"engine": "spark", "conf": {"spark.x": [1]}, "table": "t"}, "source.conf.spark.x",
     "must be a text, an integer, a number, true or false or a mapping"),
    ({"engine": "duckdb", "master": "local", "table": "t"}, "source.master", "engine spark"),
    ({"engine": "spark", "conf": {"spark.hadoop.fs.s3a.secret.key": "abc"}, "table": "t"},
     "source.conf.spark.hadoop.fs.s3a.secret.key", "{env: VARIABLE}"),
    ({"engine": "spark", "conf": {"spark.x": {"env": "A", "b": 1}}, "table": "t"}, "source.conf.spark.x.b",
     "the keys of source.conf.spark.x are env"),
])
def test_source_policy_errors_name_the_field(tmp_path, source, field, needle):
    with pytest.raises(PolicyError) as err:
        load_policy({"source": source, "quasi_identifiers": {"a": {"hierarchy": "suppress"}}, "sensitive": ["s"],
                     "privacy": {"k": 2}}, base_dir=tmp_path)
    assert err.value.field == field and needle in str(err.value)


def test_source_keys_per_engine(tmp_path):
    def src(raw):
        return load_policy({"source": raw, "quasi_identifiers": {"a": {"hierarchy": "suppress"}},
                            "sensitive": ["s"], "privacy": {"k": 2}}, base_dir=tmp_path).source
    pg = src({"engine": "postgres", "dsn_env": "PG", "password_env": "PGPW", "table": "t",
              "settings": {"work_mem": "64MB"}})
    assert (pg.engine, pg.kind, pg.table, pg.dsn_env, pg.password_env, pg.settings) == \
        ("postgres", "table", "t", "PG", "PGPW", {"work_mem": "64MB"})
    sp = src({"engine": "spark", "master": "spark://h:7077", "parquet": "s3a://bucket/sales/",
              "conf": {"a": 1, "spark.hadoop.fs.s3a.secret.key": {"env": "S3_SECRET"}}})
    assert (sp.kind, sp.url, sp.path, sp.label, sp.master, sp.conf) == \
        ("parquet", "s3a://bucket/sales/", None, "sales", "spark://h:7077",
         {"a": 1, "spark.hadoop.fs.s3a.secret.key": {"env": "S3_SECRET"}})
    assert src({"table": "t"}).engine == "duckdb"


def test_templates_become_statements_each_engine_has():
    ctx = dict(name="t", map_table="m")
    assert dialects.statements("persist_map.sql", "duckdb", **ctx) == [
        'CREATE OR REPLACE TABLE "t" AS SELECT * FROM "m"']
    assert dialects.statements("persist_map.sql", "postgres", **ctx) == [
        'DROP TABLE IF EXISTS "t"', 'CREATE TABLE "t" AS SELECT * FROM "m"', 'ANALYZE "t"']
    assert dialects.statements("persist_map.sql", "spark", **ctx) == [
        "DROP TABLE IF EXISTS `t`", "CREATE TABLE `t` USING PARQUET AS SELECT * FROM `m`"]
    temp = dict(name="w", relation="r", temp=True, replace=True)
    assert dialects.statements("create_table_as_relation.sql", "spark", **temp) == [
        "DROP VIEW IF EXISTS `w`", "CACHE TABLE `w` AS SELECT * FROM `r`"]
    assert dialects.statements("create_table_as_relation.sql", "postgres", **temp)[:2] == [
        'DROP TABLE IF EXISTS "w"', 'CREATE TEMPORARY TABLE "w" AS SELECT * FROM "r"']
    # a value never enters the text: placeholders are the driver's
    assert dialects.statements("relation_kind.sql", "postgres")[0].endswith("table_name = %s")
    # PostgreSQL's numeric of any scale is the bare numeric there, which holds 'Infinity'; other decimals keep
    # their digits
    for ty, pg in ((dialects.compared_type("NUMERIC"), "DECIMAL"), ("DECIMAL(10,2)", "DECIMAL(10, 2)")):
        classes = dialects.statements("sensitive_value_classes.sql", "postgres", map="m", type=ty)[0]
        assert classes.count(f'CAST("value" AS {pg})') == 2 and classes.count(f'CAST(m."value" AS {pg})') == 1


# -- the release catalog (sqlanon.catalog) on PostgreSQL and Spark: the refusals of tests/test_ownership.py ---

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


def test_postgres_refuses_the_source_and_other_tables_and_keeps_its_own(postgres, tmp_path):
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


def test_spark_closing_one_run_keeps_the_other_runs_views(spark, tmp_path):
    """Two runs on one session, and a view of the caller's named like sqlanon's. Closing a run dropped every
    temporary view of the session whose name starts with __sqlanon: the other run's source, mapping tables and
    frequency sets, which then failed, and the caller's view. Now a run drops the views it made, only."""
    def temporary() -> set[str]:
        return {t.name for t in spark.catalog.listTables() if t.isTemporary}

    spark.sql("CREATE OR REPLACE TEMPORARY VIEW __sqlanon_callers AS SELECT 1 AS v")
    before = temporary()
    policy = load_policy(_hospital_policy("spark", {"k": 4}), base_dir=tmp_path)
    try:
        first = Anonymization(policy)
        first_views = temporary() - before
        with Anonymization(policy) as second:
            second_views = temporary() - before - first_views
            # the caller's view takes the prefix __sqlanon (`free_prefix`)
            assert "__sqlanon2_source" in first_views and "__sqlanon3_source" in second_views
            assert any(v.startswith("__sqlanon3_map_") for v in second_views)
            first.choose()
            first.close()
            assert temporary() == before | second_views
            assert second.choose().levels == first.chosen.levels == {"zip_code": 1, "age": 1, "nationality": 1}
        assert temporary() == before
    finally:
        spark.catalog.dropTempView("__sqlanon_callers")


def test_spark_refuses_the_source_and_records_its_own(spark, tmp_path):
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


def _spark_anonymize_in_a_new_session(tmp_path: Path, warehouse: Path) -> subprocess.CompletedProcess:
    """`sqlanon anonymize` of the hospital policy (release hospital_rel) in a process of its own, so in a new Spark
    session whose in-memory catalog knows nothing of the warehouse's files."""
    policy = {"source": {"engine": "spark", "master": "local[2]", "csv": str(HOSPITAL / "hospital.csv"),
                         "table": "hospital", "conf": {"spark.sql.warehouse.dir": str(warehouse),
                                                       "spark.driver.memory": "1g"}},
              "quasi_identifiers": HOSPITAL_QIS, "sensitive": ["condition"], "privacy": {"k": 4},
              "release": {"name": "hospital_rel"}}
    path = _write_policy(tmp_path, policy)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "sqlanon.cli", "anonymize", path, "-q"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def test_spark_runs_in_new_sessions_share_one_release_catalog(spark, tmp_path):
    """Each `sqlanon anonymize` on Spark is a new session; with the default in-memory catalog the second one
    does not know the catalog table the first one wrote into the warehouse. It registers it again over its
    files (creating it anew would fail: Spark refuses a table over an existing location), so the second run
    succeeds, replaces the release the first one wrote, and appends to the same history."""
    warehouse = tmp_path / "warehouse"
    for _ in range(2):
        done = _spark_anonymize_in_a_new_session(tmp_path, warehouse)
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = duckdb.sql(f"SELECT seq, name, kind, release_id FROM read_parquet('{warehouse / CATALOG}/*.parquet') "
                      "ORDER BY seq").fetchall()
    assert [(seq, name, kind) for seq, name, kind, _ in rows] == [(1, "hospital_rel", "table"),
                                                                  (2, "hospital_rel", "table")]
    assert rows[0][3] != rows[1][3]                  # two runs, two release ids, one history
    released = duckdb.sql(f"SELECT COUNT(*) FROM read_parquet('{warehouse / 'hospital_rel'}/*.parquet')")
    assert released.fetchall() == [(12,)]            # the second run's release only, not both


def test_spark_files_under_the_catalog_name_that_are_not_a_catalog_are_left_alone(spark, tmp_path):
    """Files in the warehouse where the release catalog would live, with other columns, are not sqlanon's: the
    run stops with one line and exit code 2 before writing anything, and the files stay as they were."""
    warehouse = tmp_path / "warehouse"
    (warehouse / CATALOG).mkdir(parents=True)
    foreign = warehouse / CATALOG / "part-0.parquet"
    duckdb.sql(f"COPY (SELECT 1 AS id, 'x' AS note) TO '{foreign}' (FORMAT parquet)")
    before = foreign.read_bytes()
    done = _spark_anonymize_in_a_new_session(tmp_path, warehouse)
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    # one line of sqlanon's (pyspark prints its own warnings about the pandas version on stderr too)
    lines = [line for line in done.stderr.splitlines() if line.startswith("sqlanon")]
    assert len(lines) == 1 and lines[0].startswith("sqlanon: error:"), done.stderr
    assert "not a sqlanon release catalog" in lines[0] and "Traceback" not in done.stderr
    assert sorted(p.name for p in (warehouse / CATALOG).iterdir()) == ["part-0.parquet"]
    assert foreign.read_bytes() == before
    assert not (warehouse / "hospital_rel").exists()


def test_spark_files_of_a_table_an_earlier_session_wrote_are_not_replaced(spark, tmp_path):
    """With the in-memory catalog a user's table from an earlier session is forgotten, its files kept in the
    warehouse: the ownership check saw no relation, and the swap deleted those files to write the release there
    (exit 0). They count as a table now: refused, one line, the files as they were."""
    warehouse = tmp_path / "warehouse"
    (warehouse / "hospital_rel").mkdir(parents=True)
    theirs = warehouse / "hospital_rel" / "part-0.parquet"
    duckdb.sql(f"COPY (SELECT 1 AS id, 'important user data' AS note) TO '{theirs}' (FORMAT parquet)")
    before = theirs.read_bytes()
    done = _spark_anonymize_in_a_new_session(tmp_path, warehouse)
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("sqlanon")]
    assert len(lines) == 1 and "refusing to replace table hospital_rel" in lines[0], done.stderr
    assert sorted(p.name for p in (warehouse / "hospital_rel").iterdir()) == ["part-0.parquet"]
    assert theirs.read_bytes() == before


def test_postgres_citext_column_is_refused(postgres, tmp_path):
    """A citext column makes 'RUSSIAN' and 'Russian' one value to PostgreSQL's GROUP BYs and joins whatever the
    collation, two to the release and to the comparison with what was judged (which refused the run as "the source
    changed"). It is refused up front with one line naming it, as a table, through a query and as a domain over
    citext, and the select the line suggests (the column cast to text) is read and released, keeping the two
    spellings apart."""
    import psycopg
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("CREATE EXTENSION IF NOT EXISTS citext")
        con.execute("CREATE TABLE hospital_citext AS SELECT * FROM hospital")
        con.execute("ALTER TABLE hospital_citext ALTER COLUMN nationality TYPE citext")
        con.execute("UPDATE hospital_citext SET nationality = upper(nationality) WHERE age % 2 = 0")
        con.execute("DROP DOMAIN IF EXISTS nation_name")
        con.execute("CREATE DOMAIN nation_name AS citext")
    try:
        source = {"engine": "postgres", "dsn_env": PG_ENV}
        qis = {"nationality": {"hierarchy": "suppress"}}
        for src, label in (({"table": "hospital_citext"}, "hospital_citext"),
                           ({"query": "SELECT CAST(nationality AS nation_name) AS nationality, condition "
                                      "FROM hospital_citext"}, "query"),
                           ({"query": "SELECT * FROM hospital_citext"}, "query")):
            policy = _write_policy(tmp_path, dict(_hospital_policy("postgres", {"k": 2}), quasi_identifiers=qis,
                                                  source={**source, **src}))
            _one_line_error(_cli(["anonymize", policy, "-q"]),
                            f"column(s) 'nationality' of the source {label} compare under a collation")
        suggested = _cli(["anonymize", policy, "-q"]).stderr.strip().rsplit("selecting ", 1)[1]
        assert suggested == 'CAST("nationality" AS text) COLLATE "C" AS "nationality"'
        exact = f"SELECT {suggested}, condition FROM hospital_citext"
        out = _outcome(dict(_hospital_policy("postgres", {"k": 1}, name="hospital_citext_rel"), quasi_identifiers=qis,
                            source={**source, "query": exact}), tmp_path)
        assert sum(out["rows"].values()) == len(_frames()["hospital"]) - out["suppressed"]
        assert {"RUSSIAN", "Russian"} <= {row[0] for row in out["rows"]}
    finally:
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            con.execute("DROP TABLE IF EXISTS hospital_citext_rel")
            con.execute("DROP TABLE IF EXISTS hospital_citext")
            con.execute("DROP DOMAIN IF EXISTS nation_name")


@pytest.mark.parametrize("array_type, collate, named", [
    ("text[]", "COLLATE ci", "VARCHAR[]"), ("char(20)[]", "COLLATE ci", "VARCHAR[]"), ("citext[]", "", "CITEXT[]"),
    ("ci_text[]", "", "VARCHAR[]"),         # an array of a domain over text COLLATE ci: the driver shows its OID
    ("ci_citext[]", "", "CITEXT[]"),        # an array of a domain over a domain over citext
])
def test_postgres_arrays_of_caseless_texts_are_refused(array_type, collate, named, postgres, tmp_path):
    """An array's GROUP BY compares its texts under their collation, or as citext does: {FLU} and {Flu} are one
    value to PostgreSQL, two to the release. Refused as the scalar column is (before, text[] was not asked about,
    citext[] and arrays of domains came as OIDs nobody read, and varchar(n)[] was named VARCHAR as if scalar,
    char(n)[] BPCHAR(n)), with the way out for an array (cast to text[]), which is read and released keeping the
    two spellings apart."""
    import psycopg
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("CREATE EXTENSION IF NOT EXISTS citext")
        con.execute("CREATE COLLATION IF NOT EXISTS ci (provider = icu, locale = 'und-u-ks-level2', "
                    "deterministic = false)")
        con.execute("DROP TABLE IF EXISTS hospital_arrays")
        for domain, over in (("ci_text", "text COLLATE ci"), ("ci_citext_1", "citext"), ("ci_citext", "ci_citext_1")):
            if not con.execute("SELECT 1 FROM pg_type WHERE typname = %s", [domain]).fetchone():
                con.execute(f"CREATE DOMAIN {domain} AS {over}")
        con.execute(f"CREATE TABLE hospital_arrays AS SELECT zip_code, age, nationality, "
                    f"CAST(ARRAY[CASE WHEN age % 2 = 0 THEN upper(condition) ELSE condition END] AS {array_type}) "
                    f"{collate} AS condition, CAST(ARRAY[condition] AS varchar(40)[]) AS plain FROM hospital")
    try:
        source = {"engine": "postgres", "dsn_env": PG_ENV}
        from sqlanon.engines.postgres import PostgresBackend
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            types = dict(PostgresBackend(con, owned=False).columns("hospital_arrays"))
        assert (types["condition"], types["plain"]) == (named, "VARCHAR[]")
        policy = _write_policy(tmp_path, dict(_hospital_policy("postgres", {"k": 4}),
                                              source={**source, "table": "hospital_arrays"}))
        line = _one_line_error(_cli(["anonymize", policy, "-q"]),
                               "column(s) 'condition' of the source hospital_arrays compare under a collation")
        suggested = line.rsplit("selecting ", 1)[1]
        assert suggested == 'CAST("condition" AS text[]) COLLATE "C" AS "condition"'
        exact = f"SELECT zip_code, age, nationality, {suggested} FROM hospital_arrays"
        out = _outcome(dict(_hospital_policy("postgres", {"k": 4}, name="hospital_arrays_rel"),
                            source={**source, "query": exact}), tmp_path)
        released = {row[-1] for row in out["rows"]}
        assert any("HEART DISEASE" in r for r in released) and any("Heart Disease" in r for r in released), released
        # the plain varchar(40)[] column, sensitive, runs: a list of texts under the default collation
        plain = dict(_hospital_policy("postgres", {"k": 4}, name="hospital_arrays_rel"), sensitive=["plain"],
                     source={**source, "query": "SELECT zip_code, age, nationality, plain FROM hospital_arrays"})
        assert sum(_outcome(plain, tmp_path)["rows"].values()) > 0
    finally:
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            con.execute("DROP TABLE IF EXISTS hospital_arrays_rel")
            con.execute("DROP TABLE IF EXISTS hospital_arrays")


@pytest.mark.parametrize("band_type, kind_type", [("integer_band", "varchar_kind"), ("public.int4", "public.text")])
def test_postgres_enum_types_named_like_built_in_types_are_read_as_before(band_type, kind_type, postgres, tmp_path):
    """A type the driver does not know keeps its OID as its name, except citext and arrays of built-in types'
    domains: an ENUM named from the catalog would be read as a built-in type by its prefix (integer_band as an
    integer sensitive value, varchar_kind as a text column asked for its collation, which PostgreSQL refuses for an
    ENUM), or by its very name in another schema than pg_catalog (public.int4, public.text: helper-30). Released as
    before, and so are arrays of them."""
    import psycopg
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS hospital_enums")
        con.execute(f"DROP TYPE IF EXISTS {band_type}")
        con.execute(f"DROP TYPE IF EXISTS {kind_type}")
        con.execute(f"CREATE TYPE {band_type} AS ENUM ('low', 'high')")
        con.execute(f"CREATE TYPE {kind_type} AS ENUM ('Russian', 'American', 'Japanese', 'Indian')")
        con.execute(f"CREATE TABLE hospital_enums AS SELECT zip_code, age, CAST(nationality AS {kind_type}) AS "
                    f"nationality, CAST(CASE WHEN condition = 'Cancer' THEN 'high' ELSE 'low' END AS {band_type}) "
                    f"AS band, ARRAY[CAST(nationality AS {kind_type})] AS kinds FROM hospital")
    try:
        for qi, sensitive in (("nationality", "band"), ("kinds", "band")):
            policy = dict(_hospital_policy("postgres", {"k": 2}, name="hospital_enums_rel"), sensitive=[sensitive],
                          quasi_identifiers={"zip_code": HOSPITAL_QIS["zip_code"], qi: {"hierarchy": "suppress"}},
                          source={"engine": "postgres", "dsn_env": PG_ENV, "table": "hospital_enums"})
            out = _outcome(policy, tmp_path)
            assert sum(out["rows"].values()) == len(_frames()["hospital"]) - out["suppressed"]
    finally:
        with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
            con.execute("DROP TABLE IF EXISTS hospital_enums_rel")
            con.execute("DROP TABLE IF EXISTS hospital_enums")
            con.execute(f"DROP TYPE IF EXISTS {band_type}")
            con.execute(f"DROP TYPE IF EXISTS {kind_type}")
