"""Bad input, table-driven: every case is one CLI run that must end in exactly one line
``sqlanon: error: ...`` naming what to fix, exit code 2, no traceback, and leave every file in its folder
and every table of every DuckDB file as it was (no new file either: a failed run writes nothing).

Each case starts from a private copy of a small folder: the hospital table of Machanavajjhala et al.
(TKDD 2007, Figure 1) as a CSV, its two taxonomy files, and `data.duckdb` holding the same rows (with a
customer_id column) as `hospital`, `s.hospital` (another schema), an empty table and one with a NULL.
The cases run in-process through click's CliRunner (which reports the exit code `sys.exit` gave and a
traceback as an exception); `test_bad_input_subprocess` runs the issue's own reports as real processes.
The end of the file checks that what the issue found broken now works (keep + suppression, query with
database, schema-qualified names, a Latin-1 hierarchy with `encoding:`).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from sqlanon.anonymizer import Anonymization
from sqlanon.cli import main
from sqlanon.errors import DataError
from sqlanon.policy import load_policy

from conftest import HOSPITAL, ROOT

ROWS = [(13053, 28, "Russian", "Heart Disease"), (13068, 29, "American", "Heart Disease"),
        (13068, 21, "Japanese", "Viral Infection"), (13053, 23, "American", "Viral Infection"),
        (14853, 50, "Indian", "Cancer"), (14853, 55, "Russian", "Heart Disease"),
        (14850, 47, "American", "Viral Infection"), (14850, 49, "American", "Viral Infection"),
        (13053, 31, "American", "Cancer"), (13053, 37, "Indian", "Cancer"),
        (13068, 36, "Japanese", "Cancer"), (13068, 35, "American", "Cancer")]

BASE_POLICY = {
    "source": {"database": "data.duckdb", "table": "hospital"},
    "quasi_identifiers": {"zip_code": {"hierarchy": "hierarchies/zip_code.csv"},
                          "age": {"hierarchy": "hierarchies/age.csv"},
                          "nationality": {"hierarchy": "suppress"}},
    "sensitive": ["condition"],
    "privacy": {"k": 4},
    "utility": "height",
    "release": {"name": "rel"},
}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The folder every case copies: hospital.csv, hierarchies/, data.duckdb."""
    d = tmp_path_factory.mktemp("bad_input_template")
    shutil.copy(HOSPITAL / "hospital.csv", d / "hospital.csv")
    shutil.copytree(HOSPITAL / "hierarchies", d / "hierarchies")
    con = duckdb.connect(str(d / "data.duckdb"))
    con.execute("CREATE TABLE hospital (customer_id INTEGER, zip_code INTEGER, age INTEGER, nationality VARCHAR, "
                "condition VARCHAR)")
    con.executemany("INSERT INTO hospital VALUES (?, ?, ?, ?, ?)", [(i, *r) for i, r in enumerate(ROWS)])
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE TABLE s.hospital AS SELECT * FROM hospital")
    con.execute("CREATE TABLE empty AS SELECT * FROM hospital LIMIT 0")
    con.execute("CREATE TABLE nulls AS SELECT * FROM hospital")
    con.execute("UPDATE nulls SET age = NULL WHERE customer_id = 3")
    con.execute("CREATE TABLE nan_age AS SELECT customer_id, zip_code, age::DOUBLE AS age, nationality, condition "
                "FROM hospital")
    con.execute("UPDATE nan_age SET age = 'nan'::DOUBLE WHERE customer_id = 2")
    con.execute("CREATE TABLE null_condition AS SELECT * FROM hospital")
    con.execute("UPDATE null_condition SET condition = NULL WHERE customer_id = 5")
    # nationalities in other cases, and compared without case (or, for the condition, without accents) by
    # the table, or by the view over it: one value to DuckDB's GROUP BY and joins, two to the hierarchies
    con.execute("CREATE TABLE nocase (customer_id INTEGER, zip_code INTEGER, age INTEGER, "
                "nationality VARCHAR COLLATE NOCASE, condition VARCHAR)")
    con.execute("INSERT INTO nocase SELECT customer_id, zip_code, age, CASE WHEN customer_id % 2 = 0 THEN "
                "upper(nationality) ELSE nationality END, condition FROM hospital")
    con.execute("CREATE VIEW nocase_view AS SELECT * FROM nocase")
    con.execute("CREATE TABLE noaccent_condition (customer_id INTEGER, zip_code INTEGER, age INTEGER, "
                "nationality VARCHAR, condition VARCHAR COLLATE NOACCENT)")
    con.execute("INSERT INTO noaccent_condition SELECT * FROM hospital")
    con.execute("CREATE TABLE two_collated AS SELECT customer_id, zip_code, age, nationality COLLATE NOCASE AS "
                "nationality, condition COLLATE NFC AS condition FROM hospital")
    con.close()
    # a manifest of a real release (made beside the template, not in it) for the cases that edit one
    made = tmp_path_factory.mktemp("bad_input_manifest")
    shutil.copytree(d, made, dirs_exist_ok=True)
    (made / "p.yaml").write_text(yaml.safe_dump(BASE_POLICY, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["anonymize", str(made / "p.yaml"), "-q", "--json", str(made / "m.json")])
    assert result.exit_code == 0, result.output
    GOOD_MANIFEST.update(json.loads((made / "m.json").read_text(encoding="utf-8")))
    return d


GOOD_MANIFEST: dict = {}


_CONTENT: dict[str, str] = {}     # a DuckDB file's byte hash -> its content hash (opening DuckDB is the slow part)


def _duckdb_content(path: Path, byte_hash: str) -> str:
    """Every relation of a DuckDB file with its kind and its rows (sorted), hashed."""
    if byte_hash not in _CONTENT:
        con = duckdb.connect(str(path), read_only=True)
        try:
            rels = con.execute("SELECT schema_name, table_name, 'TABLE' FROM duckdb_tables() UNION ALL "
                               "SELECT schema_name, view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal "
                               "ORDER BY 1, 2").fetchall()
            content = [(schema, name, kind, sorted(map(repr, con.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall())))
                       for schema, name, kind in rels]
        finally:
            con.close()
        _CONTENT[byte_hash] = hashlib.sha256(repr(content).encode()).hexdigest()
    return _CONTENT[byte_hash]


def snapshot(folder: Path) -> dict:
    """Every file's SHA-256, except DuckDB files, which are compared by content (every relation's kind and
    rows), so a file DuckDB merely reopened compares equal while any change to a table shows."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_dir() or p.name.endswith(".wal"):
            continue
        rel = str(p.relative_to(folder))
        if not p.is_file():
            out[rel] = "special file"
            continue
        digest = hashlib.sha256(p.read_bytes()).hexdigest()
        out[rel] = _duckdb_content(p, digest) if p.suffix == ".duckdb" else digest
    return out


# --- building cases -----------------------------------------------------------------------------------

Setup = Callable[[Path, dict], "dict | str | None"]


@dataclass
class Case:
    id: str
    setup: Setup                     # (folder, policy dict) -> policy (dict to dump, text to write, None: as is)
    expect: str                      # a substring of the one error line
    args: list[str] = field(default_factory=lambda: ["anonymize", "p.yaml", "-q"])
    env: dict = field(default_factory=dict)
    # an unreachable server must not hang the run: seconds it may take at most, generous (a busy machine)
    # because what is checked is a behaviour, no retrying for minutes, not a speed
    within_s: float | None = None


def edit(**changes) -> Setup:
    """The base policy with top-level keys replaced (None removes one)."""
    def setup(folder, pol):
        for k, v in changes.items():
            if v is None:
                pol.pop(k, None)
            else:
                pol[k] = v
        return pol
    return setup


def source(**src) -> Setup:
    return edit(source=src)


def qi(name: str, spec) -> Setup:
    def setup(folder, pol):
        pol["quasi_identifiers"][name] = spec
        return pol
    return setup


def release(**rel) -> Setup:
    return edit(release={"name": "rel", **rel})


def view_of(sensitive: list[str] | None = None, entity_key: str | None = None, **privacy) -> Setup:
    """The base policy released as a view, with this `privacy` (and sensitive attributes, entity key)."""
    extra = {k: v for k, v in {"sensitive": sensitive, "entity_key": entity_key}.items() if v is not None}
    return edit(privacy=privacy, release={"name": "rel", "materialize": "view"}, **extra)


def text(body: str) -> Setup:
    return lambda folder, pol: body


def write(path: str, content: bytes | str, then: Setup | None = None) -> Setup:
    """Write a file into the case folder first (then build the policy with `then`)."""
    def setup(folder, pol):
        f = folder / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(content if isinstance(content, bytes) else content.encode())
        return then(folder, pol) if then else pol
    return setup


def nationality_file(content: bytes | str, **extra) -> Setup:
    return write("nat.csv", content, qi("nationality", {"hierarchy": "nat.csv", **extra}))


def sparse(path: str, size: int, then: Setup | None = None) -> Setup:
    def setup(folder, pol):
        with open(folder / path, "wb") as f:
            f.truncate(size)
        return then(folder, pol) if then else pol
    return setup


def fifo(path: str) -> Setup:
    """A named pipe: reading one would wait for a writer for ever."""
    def setup(folder, pol):
        os.mkfifo(folder / path)
        return pol
    return setup


def edited_manifest(path: str, value) -> Setup:
    """The template's real manifest with one field (dotted path) replaced, written as m.json."""
    def setup(folder, pol):
        data = json.loads(json.dumps(GOOD_MANIFEST))
        cur = data
        keys = path.split(".")
        for k in keys[:-1]:
            cur = cur[k]
        cur[keys[-1]] = value
        (folder / "m.json").write_text(json.dumps(data), encoding="utf-8")
        return pol
    return setup


def good_manifest() -> Setup:
    """The template's real manifest, unchanged, written as m.json."""
    def setup(folder, pol):
        (folder / "m.json").write_text(json.dumps(GOOD_MANIFEST), encoding="utf-8")
        return pol
    return setup


def manifest(content: str) -> Setup:
    return write("m.json", content)


GOOD_MANIFEST_ARGS = ["apply", "m.json", "--source", "hospital.csv", "-q"]
YAML_BASE = yaml.safe_dump(BASE_POLICY, sort_keys=False)

CASES = [
    # -- the policy file ---------------------------------------------------------------------------
    Case("policy-missing", lambda f, p: None, "policy nope.yaml does not exist", ["anonymize", "nope.yaml", "-q"]),
    Case("policy-fifo", fifo("p.fifo"), "p.fifo is not a regular file", ["anonymize", "p.fifo", "-q"]),
    Case("policy-dev-zero", lambda f, p: None, "not a regular file", ["anonymize", "/dev/zero", "-q"]),
    Case("policy-too-big", sparse("big.yaml", 2 * 1024 * 1024), "at most 1 MB", ["anonymize", "big.yaml", "-q"]),
    Case("policy-latin1", write("p.yaml", YAML_BASE.encode() + b"# caf\xe9\n", lambda f, p: None),
         "byte 0xe9 on line 18"),
    Case("policy-bad-yaml", text("source: {table: [\n"), "not valid YAML at line"),
    Case("policy-tab-yaml", text("source:\n\t- x\n"), "not valid YAML"),
    Case("duplicate-top-key", text(YAML_BASE + "privacy: {k: 2}\n"), "key 'privacy' appears twice"),
    Case("duplicate-nested-key", text(YAML_BASE.replace("  k: 4\n", "  k: 4\n  k: 5\n")), "key 'k' appears twice"),
    # on one line (a flow mapping, or any one-line JSON): the check compared lines, and the last value won
    Case("duplicate-key-one-line", text(YAML_BASE.replace("  k: 4\n", "  k: 4\n  t_closeness: {t: 0.5, t: 0.9}\n")),
         "key 't' appears twice in the same mapping (both on line"),
    Case("duplicate-qi", text(YAML_BASE.replace("  nationality:", "  age:\n    hierarchy: suppress\n  nationality:")),
         "key 'age' appears twice"),
    Case("duplicate-l-diversity", text(YAML_BASE.replace(
        "privacy:\n  k: 4\n", "privacy:\n  k: 4\n  l_diversity: {l: 2}\n  l_diversity: {l: 3}\n")),
         "key 'l_diversity' appears twice"),
    Case("policy-a-list", text("- source\n- privacy\n"), "(top level)"),
    Case("policy-empty", text(""), "(top level)"),
    Case("policy-a-scalar", text("hello\n"), "(top level)"),
    Case("unknown-top-key", edit(privcy={"k": 3}), "'privcy': unknown key"),
    # -- source ---------------------------------------------------------------------------------------
    Case("source-missing", edit(source=None), "policy field 'source': missing"),
    Case("source-a-list", edit(source=["hospital"]), "'source': must be a mapping"),
    Case("source-engine-unknown", source(engine="oracle", table="t"), "source.engine"),
    Case("source-unknown-key", source(table="hospital", databse="data.duckdb"), "source.databse"),
    Case("source-csv-and-parquet", source(csv="hospital.csv", parquet="x.parquet"), "give only one of"),
    Case("source-csv-missing", source(csv="nope.csv"), "nope.csv does not exist"),
    Case("source-database-missing", source(database="nope.duckdb", table="hospital"), "nope.duckdb does not exist"),
    Case("source-database-folder", source(database="hierarchies", table="hospital"), "not a regular file"),
    Case("source-database-not-duckdb", source(database="hospital.csv", table="hospital"),
         "hospital.csv is not a DuckDB database file"),
    Case("source-database-with-csv", source(database="data.duckdb", csv="hospital.csv"),
         "source.database': goes with table: or query:"),
    Case("source-no-table", source(database="data.duckdb"), "source.table': missing"),
    Case("source-table-empty-name", source(database="data.duckdb", table=" "), "source.table"),
    Case("source-table-a-number", source(database="data.duckdb", table=5), "source.table"),
    Case("source-table-four-parts", source(table="a.b.c.d"), "4 dotted parts"),
    Case("source-table-empty-part", source(table="s..hospital"), "empty part"),
    Case("source-table-unclosed-quote", source(table='s."hospital'), "unclosed double quote"),
    Case("source-table-not-found", source(database="data.duckdb", table="patients"),
         "source table 'patients' does not exist"),
    Case("source-schema-table-not-found", source(database="data.duckdb", table="t.hospital"),
         "source table 't.hospital' does not exist"),
    Case("source-catalog-with-database", source(database="data.duckdb", table="x.s.hospital"), "names a catalog",
         ["anonymize", "p.yaml", "-q", "--db", "out.duckdb"]),
    Case("source-collated-qi", source(database="data.duckdb", table="nocase"),
         "column(s) 'nationality' of the source nocase compare under a collation (such as NOCASE)"),
    Case("source-collated-through-view", source(database="data.duckdb", table="nocase_view"),
         "column(s) 'nationality' of the source nocase_view compare under a collation"),
    Case("source-collated-sensitive", source(database="data.duckdb", table="noaccent_condition"),
         "column(s) 'condition' of the source noaccent_condition compare under a collation (such as NOCASE) that "
         "may make distinct values equal (or are of a type that does, as PostgreSQL's citext), merging values that "
         "the hierarchies, the sensitive domain or the entity "
         'key keep apart; read it through a query (source.query for the source) selecting "condition" COLLATE "C" AS '
         '"condition"'),
    Case("source-collated-two", source(database="data.duckdb", table="two_collated"),
         "column(s) 'nationality', 'condition' of the source two_collated compare under a collation"),
    Case("query-collated", source(database="data.duckdb", query="SELECT * FROM nocase"),
         "column(s) 'nationality' of the source query compare under a collation"),
    Case("query-two-statements", source(query="SELECT * FROM read_csv('hospital.csv'); DROP TABLE x"),
         "must be one SELECT statement; got 2 statements"),
    Case("query-delete", source(database="data.duckdb", query="DELETE FROM hospital"), "must be one SELECT"),
    Case("query-garbage", source(query="SELECT FROM WHERE ((("), "source.query': is not valid SQL for duckdb (line 1"),
    Case("query-empty", source(query="  "), "source.query"),
    Case("query-unknown-table", source(query="SELECT * FROM patients"),
         "source.query': DuckDB cannot run it: Catalog Error: Table with name patients does not exist"),
    Case("query-with-database-unknown-table", source(database="data.duckdb", query="SELECT * FROM nulls2"),
         "source.query': DuckDB cannot run it against"),
    Case("postgres-no-dsn-env", source(engine="postgres", table="t"), "source.dsn_env': missing"),
    Case("postgres-password-in-policy", source(engine="postgres", dsn_env="X", password="hunter2", table="t"),
         "source.password': connection details do not go in the policy"),
    Case("postgres-dsn-env-unset", source(engine="postgres", dsn_env="SQLANON_TEST_UNSET_DSN", table="t"),
         "SQLANON_TEST_UNSET_DSN is not set"),
    Case("postgres-unreachable", source(engine="postgres", dsn_env="SQLANON_TEST_BAD_DSN", table="t"),
         "cannot connect to PostgreSQL at 127.0.0.1:1/nodb as nobody",
         env={"SQLANON_TEST_BAD_DSN": "postgresql://nobody:pw@127.0.0.1:1/nodb?connect_timeout=2"}),
    # unreachable servers: one line naming the setting, in bounded time (libpq's connect_timeout, 10 s when the
    # connection string sets none; a socket check of the Spark master before any JVM starts)
    Case("postgres-closed-port-default-timeout", source(engine="postgres", dsn_env="SQLANON_TEST_BAD_DSN", table="t"),
         "cannot connect to PostgreSQL at 127.0.0.1:1/nodb as nobody: connection failed",
         env={"SQLANON_TEST_BAD_DSN": "postgresql://nobody:pw@127.0.0.1:1/nodb"}, within_s=60),
    Case("postgres-unresolvable-host", source(engine="postgres", dsn_env="SQLANON_TEST_BAD_DSN", table="t"),
         "cannot connect to PostgreSQL at db.sqlanon.invalid:5432/nodb as nobody",
         env={"SQLANON_TEST_BAD_DSN": "postgresql://nobody:pw@db.sqlanon.invalid/nodb"}, within_s=60),
    Case("spark-master-closed-port", source(engine="spark", master="spark://127.0.0.1:1", table="hospital"),
         "cannot reach the Spark master spark://127.0.0.1:1 (source.master): 127.0.0.1:1: Connection refused; "
         "start the master", within_s=60),
    Case("spark-master-unresolvable-host", source(engine="spark", master="spark://master.sqlanon.invalid:7077",
                                                  table="hospital"),
         "cannot reach the Spark master spark://master.sqlanon.invalid:7077 (source.master)", within_s=60),
    Case("postgres-dsn-garbage", source(engine="postgres", dsn_env="SQLANON_TEST_BAD_DSN", table="t"),
         "does not hold a valid PostgreSQL connection string", env={"SQLANON_TEST_BAD_DSN": "not a dsn"}),
    Case("postgres-table-four-parts", source(engine="postgres", dsn_env="X", table="a.b.c.d"), "at most 3"),
    Case("spark-table-three-parts", source(engine="spark", table="c.db.t"), "engine spark takes at most 2"),
    Case("spark-master-empty", source(engine="spark", master="", table="t"), "source.master"),
    Case("spark-secret-in-conf", source(engine="spark", table="t", conf={"spark.hadoop.fs.s3a.secret.key": "x"}),
         "looks like a secret"),
    Case("duckdb-key-for-spark", source(table="t", master="local[2]"), "that key is for engine spark"),
    # quoted right, but Spark's catalog refused the rename after the whole search
    Case("spark-release-name-backtick", lambda f, p: {**source(engine="spark", table="t")(f, p),
                                                      "release": {"name": "Rel `Q` 1"}},
         "'release.name': 'Rel `Q` 1': Spark's catalog takes no backtick"),
    # DuckDB's engine settings (memory_limit, temp_directory, threads)
    Case("duckdb-memory-limit-no-unit", source(database="data.duckdb", table="hospital", memory_limit="4"),
         "source.memory_limit': must be a size such as 4GB or 512MiB, or a percentage"),
    Case("duckdb-memory-limit-words", source(database="data.duckdb", table="hospital", memory_limit="a lot"),
         "source.memory_limit': must be a size such as 4GB"),
    Case("duckdb-memory-limit-number", source(database="data.duckdb", table="hospital", memory_limit=4096),
         "source.memory_limit': must be a size such as 4GB"),
    Case("duckdb-threads-zero", source(database="data.duckdb", table="hospital", threads=0),
         "source.threads': must be an integer from 1 to 1024; got 0"),
    Case("duckdb-threads-text", source(database="data.duckdb", table="hospital", threads="two"),
         "source.threads': must be an integer from 1 to 1024"),
    Case("duckdb-temp-directory-is-a-file", source(database="data.duckdb", table="hospital",
                                                   temp_directory="hospital.csv"),
         "hospital.csv exists and is not a folder"),
    Case("duckdb-temp-directory-under-a-file", source(database="data.duckdb", table="hospital",
                                                      temp_directory="hospital.csv/spill"),
         "source.temp_directory': cannot create folder"),
    Case("duckdb-memory-limit-for-postgres", source(engine="postgres", dsn_env="X", table="t", memory_limit="1GB"),
         "that key is for engine duckdb"),
    # -- quasi-identifiers and sensitive attributes -------------------------------------------------
    Case("qis-missing", edit(quasi_identifiers=None), "'quasi_identifiers': missing"),
    Case("qis-empty", edit(quasi_identifiers={}), "at least one column"),
    Case("qis-a-number", edit(quasi_identifiers=5), "quasi_identifiers"),
    Case("qi-no-hierarchy", qi("age", None), "quasi_identifiers.age': needs {hierarchy"),
    Case("qi-hierarchy-key-missing", qi("age", {"widths": [10]}), "quasi_identifiers.age.hierarchy': missing"),
    Case("qi-unknown-key", qi("age", {"hierarchy": "suppress", "width": 5}), "quasi_identifiers.age.width"),
    Case("qi-hierarchy-a-number", qi("age", {"hierarchy": 5}), "hierarchy': must be a non-empty text (CSV file"),
    Case("intervals-no-widths", qi("age", {"hierarchy": "intervals"}), "quasi_identifiers.age.widths"),
    Case("intervals-widths-not-nested", qi("age", {"hierarchy": "intervals", "widths": [5, 7]}), "not a multiple"),
    Case("intervals-negative-width", qi("age", {"hierarchy": "intervals", "widths": [-5]}), "quasi_identifiers.age.widths[0]': must be a positive number"),
    Case("intervals-origin-text", qi("age", {"hierarchy": "intervals", "widths": [10], "origin": "x"}),
         "quasi_identifiers.age.origin"),
    Case("intervals-on-text", qi("nationality", {"hierarchy": "intervals", "widths": [10]}),
         "value 'American' is not a number"),
    Case("round-levels-zero", qi("age", {"hierarchy": "round", "levels": 0}), "quasi_identifiers.age.levels"),
    Case("mask-levels-text", qi("zip_code", {"hierarchy": "mask", "levels": "x"}), "quasi_identifiers.zip_code.levels"),
    # one all-'*' level per unit past the longest value: 10^7 took 7 GB, 10^5 never finished
    Case("mask-levels-huge", qi("zip_code", {"hierarchy": "mask", "levels": 10 ** 7}),
         "'quasi_identifiers.zip_code.levels': must be at most 64"),
    Case("dates-on-text", qi("nationality", {"hierarchy": "dates"}), "is not a date"),
    Case("qi-not-in-source", qi("zipcode", {"hierarchy": "suppress"}), "column 'zipcode' is not in the source"),
    Case("qi-also-sensitive", edit(sensitive=["age"]), "column 'age' is also a quasi-identifier"),
    Case("sensitive-missing", edit(sensitive=None), "'sensitive': missing"),
    Case("sensitive-not-in-source", edit(sensitive=["diagnosis"]), "'diagnosis' is not in the source"),
    Case("sensitive-a-number", edit(sensitive=5), "sensitive"),
    Case("entity-key-is-qi", edit(entity_key="age"), "entity_key"),
    Case("entity-key-not-in-source", edit(entity_key="person"), "'person' is not in the source"),
    # -- privacy, utility, release --------------------------------------------------------------------
    Case("privacy-missing", edit(privacy=None), "'privacy': missing"),
    Case("privacy-a-list", edit(privacy=[4]), "'privacy': must be a mapping"),
    # each released the raw rows (k = 1), exit 0: the check ran only on a mapping, never on the loaded model
    Case("privacy-empty", edit(privacy={}), "'privacy': names no privacy model"),
    Case("privacy-k-null", edit(privacy={"k": None}), "'privacy': names no privacy model"),
    Case("privacy-suppression-only", edit(privacy={"max_suppression": 0.1}), "'privacy': names no privacy model"),
    Case("k-zero", edit(privacy={"k": 0}), "privacy.k"),
    Case("k-text", edit(privacy={"k": "five"}), "privacy.k"),
    Case("max-suppression-above-one", edit(privacy={"k": 4, "max_suppression": 2}), "privacy.max_suppression"),
    Case("search-not-a-mapping", edit(search="fast"), "'search'"),
    Case("search-unknown-key", edit(search={"time_limit": 5}), "search.time_limit"),
    Case("search-max-nodes-zero", edit(search={"max_nodes": 0}), "search.max_nodes"),
    Case("search-time-limit-negative", edit(search={"time_limit_s": -1}), "search.time_limit_s"),
    Case("unknown-model", edit(privacy={"k": 4, "m_invariance": 2}), "privacy.m_invariance"),
    Case("l-above-domain", edit(privacy={"k": 4, "l_diversity": {"l": 9}}), "privacy.l_diversity"),
    Case("t-negative", edit(privacy={"k": 4, "t_closeness": {"t": -0.1}}), "privacy.t_closeness"),
    Case("utility-unknown", edit(utility="accuracy"), "'utility': must be one of"),
    Case("release-unknown-key", release(nmae="x"), "release.nmae"),
    Case("release-materialize-bad", release(materialize="copy"), "release.materialize"),
    Case("release-keep-a-string", release(keep="customer_id"), "release.keep"),
    Case("release-keep-not-in-source", release(keep=["customer"]), "release.keep: column 'customer' is not in"),
    Case("release-keep-a-qi", release(keep=["age"]), "release.keep[0]': 'age' is a quasi-identifier"),
    # an unclosed quote stopped the run with a ValueError traceback after its whole search (helper-35)
    Case("marginal-name-unclosed-quote", release(marginals=[{"attributes": {"age": 0}, "name": 'a"b'}]),
         "release.marginals[0].name': unclosed double quote"),
    Case("release-keep-twice", release(keep=["customer_id", "customer_id"]), "release.keep[1]': column 'customer_id' "
         "is listed twice"),
    Case("sensitive-twice", edit(sensitive=["condition", "condition"]), "sensitive[1]': column 'condition' is listed"),
    Case("round-levels-huge", qi("age", {"hierarchy": "round", "levels": 400}), "from 1 to 18"),
    Case("intervals-infinite-width", qi("age", {"hierarchy": "intervals", "widths": [float("inf")]}),
         "quasi_identifiers.age.widths"),
    Case("intervals-nan-origin", qi("age", {"hierarchy": "intervals", "widths": [10], "origin": float("nan")}),
         "quasi_identifiers.age.origin"),
    Case("source-csv-dev-zero", source(csv="/dev/zero"), "/dev/zero is not a regular file"),
    Case("source-parquet-is-csv", source(parquet="hospital.csv"), "cannot read source hospital.csv"),
    Case("release-export-suffix", release(export=["out.xlsx"]), "release.export[0]"),
    Case("release-name-reserved", release(name="__sqlanon_x"), "reserved"),
    # the catalog by another spelling: a Binder Error of the catalog's query
    Case("release-name-catalog-in-a-schema", release(name="main.sqlanon_releases"), "reserved"),
    Case("release-name-catalog-quoted", release(name='"SQLANON_RELEASES"'), "reserved"),
    Case("release-name-reserved-in-a-schema", release(name="main.__sqlanon_x"), "reserved"),
    # DuckDB's name for another release's temporary table: a later run dropped it as a crashed run's leftover
    Case("release-name-reserved-in-capitals", release(name="__SQLANON_TMP_68B076BE5BA97479"), "reserved"),
    Case("release-name-four-parts", release(name="a.b.c.d"), "release.name"),
    Case("release-name-unknown-schema", release(name="nope.rel"), "nope"),
    # -- hierarchy files ------------------------------------------------------------------------------
    Case("hierarchy-missing", qi("age", {"hierarchy": "ages.csv"}), "ages.csv does not exist"),
    Case("hierarchy-dev-zero", qi("age", {"hierarchy": "/dev/zero"}), "/dev/zero is not a regular file"),
    Case("hierarchy-folder", qi("age", {"hierarchy": "hierarchies"}), "is a folder"),
    Case("hierarchy-too-big", sparse("big.csv", 65 * 1024 * 1024, qi("age", {"hierarchy": "big.csv"})),
         "at most 64 MB"),
    Case("hierarchy-latin1", nationality_file(b"nationality,n1\nRussian,Europ\xe9en\nAmerican,Am\xe9ricain\n"
                                              b"Japanese,Asie\nIndian,Asie\n"), "encoding: latin-1"),
    Case("hierarchy-encoding-unknown", nationality_file("nationality,n1\n", encoding="klingon"),
         "unknown text encoding 'klingon'"),
    Case("hierarchy-encoding-on-suppress", qi("age", {"hierarchy": "suppress", "encoding": "latin-1"}),
         "quasi_identifiers.age.encoding"),
    Case("hierarchy-header-only", nationality_file("nationality,n1\n"), "needs a header row"),
    Case("hierarchy-empty", nationality_file(""), "needs a header row"),
    Case("hierarchy-ragged", nationality_file("nationality,n1\nRussian,Europe,x\nAmerican,America\n"),
         "line 2: 3 columns, the header has 2"),
    Case("hierarchy-duplicate-value", nationality_file("nationality,n1\nRussian,Europe\nRussian,Europe\n"
                                                       "American,America\nJapanese,Asia\nIndian,Asia\n"),
         "value 'Russian' appears twice"),
    Case("hierarchy-two-parents", nationality_file("nationality,n1,n2\nRussian,Europe,*\nAmerican,America,*\n"
                                                   "Japanese,Asia,*\nIndian,Asia,East\n"), "has two parents"),
    Case("hierarchy-edge-cycle", nationality_file("child,parent\nRussian,Europe\nEurope,World\nWorld,Europe\n"),
         "cycle"),
    Case("hierarchy-edge-two-roots", nationality_file("child,parent\nRussian,Europe\nAmerican,America\n"
                                                      "Japanese,Asia\nIndian,Asia\n"), "roots"),
    Case("hierarchy-value-missing", nationality_file("nationality,n1\nRussian,Europe\nAmerican,America\n"),
         "missing from the hierarchy of 'nationality'"),
    Case("sensitive-hierarchy-missing", edit(sensitive={"condition": {"hierarchy": "conditions.csv"}}),
         "'sensitive.condition.hierarchy': file"),
    # -- data ---------------------------------------------------------------------------------------------
    Case("data-null-qi", source(database="data.duckdb", table="nulls"), "column 'age' has 1 NULL"),
    Case("data-nan-in-intervals", lambda f, p: {**p, "source": {"database": "data.duckdb", "table": "nan_age"},
                                                 "quasi_identifiers": {**p["quasi_identifiers"],
                                                                       "age": {"hierarchy": "intervals", "widths": [10]}}},
         "column 'age': value 'nan' is not a finite number"),
    Case("data-empty-table", source(database="data.duckdb", table="empty"), "has no rows"),
    Case("data-empty-csv", write("e.csv", "zip_code,age,nationality,condition\n", source(csv="e.csv")),
         "has no rows"),
    Case("data-null-sensitive", source(database="data.duckdb", table="null_condition"), "condition"),
    # -- manifests ----------------------------------------------------------------------------------------
    Case("json-folder-missing", lambda f, p: p, "--json: the folder",
         ["anonymize", "p.yaml", "--json", "nowhere/m.json", "-q"]),
    Case("apply-json-folder-missing", good_manifest(),
         "--json: the folder", ["apply", "m.json", "--source", "hospital.csv", "--json", "nowhere/m2.json", "-q"]),
    Case("manifest-missing", lambda f, p: p, "manifest m.json does not exist", GOOD_MANIFEST_ARGS),
    # reached the database: "Conversion Error: Type INT128 ..."
    Case("maxent-positive-huge", lambda f, p: p, "option '--positive': must be from 0 to",
         ["maxent", "p.yaml", "-q", "--no-write", "--positive", "99999999999999999999"]),
    # checked only once the release was built, after a progress line
    Case("maxent-tolerance-nan", lambda f, p: p, "option '--tolerance'", ["maxent", "p.yaml", "--no-write",
                                                                        "--tolerance", "nan"]),
    Case("attack-show-negative", lambda f, p: p, "--show", ["attack", "p.yaml", "-q", "--show", "-5"]),
    # attacked the policy's chosen node instead, exit 0
    Case("attack-table-blank", lambda f, p: p, "option '--table': give the name", ["attack", "p.yaml", "--table", ""]),
    # wrote a script reading "__sqlanon_source", sqlanon's internal name, exit 0
    Case("sql-source-empty", lambda f, p: p, "option '--source': give the name", ["sql", "p.yaml", "-q", "--source", ""]),
    Case("dbt-source-blank", lambda f, p: p, "option '--source': give the name",
         ["dbt", "p.yaml", "-q", "--project", "proj", "--source", " "]),
    Case("manifest-not-json", manifest("{policy: 1"), "m.json is not JSON", GOOD_MANIFEST_ARGS),
    Case("manifest-a-list", manifest("[1, 2]"), "not a manifest", GOOD_MANIFEST_ARGS),
    Case("manifest-keys-missing", manifest(json.dumps({"policy": {}})), "MANIFEST.chosen", GOOD_MANIFEST_ARGS),
    Case("manifest-dev-zero", lambda f, p: p, "/dev/zero is not a regular file",
         ["apply", "/dev/zero", "--source", "hospital.csv", "-q"]),
    Case("manifest-fifo", fifo("m.json"), "m.json is not a regular file", GOOD_MANIFEST_ARGS),
    Case("manifest-policy-a-list", edited_manifest("policy", []), "MANIFEST.policy'", GOOD_MANIFEST_ARGS),
    Case("manifest-source-a-number", edited_manifest("policy.source", 5), "MANIFEST.policy.source'",
         ["report", "m.json", "-q"]),
    Case("manifest-chosen-empty", edited_manifest("chosen", {}), "MANIFEST.chosen.levels'", GOOD_MANIFEST_ARGS),
    Case("manifest-levels-text", edited_manifest("chosen.levels", {"age": "x"}), "MANIFEST.chosen.levels'",
         ["sql", "m.json"]),
    # its database's catalog records the node released: an edited node is refused before its levels are read
    Case("manifest-level-too-high", edited_manifest("chosen.levels", {"zip_code": 0, "age": 9, "nationality": 0}),
         "it records the node {'zip_code': 0, 'age': 9, 'nationality': 0}, the release was made at",
         GOOD_MANIFEST_ARGS),
    Case("manifest-hierarchies-a-list", edited_manifest("hierarchies", []), "MANIFEST.hierarchies'",
         GOOD_MANIFEST_ARGS),
    Case("manifest-hierarchy-changed", edited_manifest("hierarchies.age.sha256_16", "0" * 16),
         "changed since the manifest was written", GOOD_MANIFEST_ARGS),
    Case("manifest-policy-dir-a-number", edited_manifest("policy_dir", 5), "MANIFEST.policy_dir'",
         GOOD_MANIFEST_ARGS),
    Case("report-manifest-not-json", manifest("nope"), "is not JSON", ["report", "m.json", "-q"]),
    # -- command-line values --------------------------------------------------------------------------
    Case("report-manifest-dev-zero", lambda f, p: p, "manifest /dev/zero is not a regular file",
         ["report", "/dev/zero", "-q"]),
    Case("attack-groups-dev-zero", lambda f, p: p, "'--groups': groups file /dev/zero is not a regular file",
         ["attack", "p.yaml", "--node", "zip_code=1,age=1,nationality=1", "--groups", "/dev/zero", "-q"]),
    # named 'quasi_identifiers.condition.hierarchy' (no such field) and advised an encoding: key
    Case("attack-groups-latin1", write("g.csv", b"condition,group\nCancer,caf\xe9\n"),
         "option '--groups': hierarchy file g.csv is not utf-8 text",
         ["attack", "p.yaml", "--node", "zip_code=1,age=1,nationality=1", "--groups", "g.csv", "-q"]),
    # a policy reads such a file with encoding: latin-1; hierarchy check had no way to
    Case("hierarchy-check-latin1", write("h.csv", b"nationality,l1\ncaf\xe9,*\n"), "name its encoding: --encoding latin-1",
         ["hierarchy", "check", "h.csv", "--data", "hospital.csv"]),
    Case("hierarchy-check-encoding-unknown", write("h.csv", "nationality,l1\nx,*\n"),
         "option '--encoding': 'rot13' is a codec of bytes, not a text encoding",
         ["hierarchy", "check", "h.csv", "--data", "hospital.csv", "--encoding", "rot13"]),
    Case("hierarchy-check-dev-zero", lambda f, p: p, "'FILE': hierarchy file /dev/zero is not a regular file",
         ["hierarchy", "check", "/dev/zero", "--data", "hospital.csv"]),
    Case("check-node-and-table", lambda f, p: p, "give --node or --table, not both",
         ["check", "p.yaml", "--node", "age=1", "--table", "hospital"]),
    Case("check-table-missing", lambda f, p: p, "source table 'patients' does not exist",
         ["check", "p.yaml", "--table", "patients"]),
    # check ignored an unknown name, every command kept the last of a name given twice, and check and attack
    # took --node '' for no node (the source as it is, the chosen node)
    Case("check-node-unknown-name", lambda f, p: p, "'--node foo': not a quasi-identifier of the policy",
         ["check", "p.yaml", "--node", "zip_code=1,age=1,nationality=1,foo=2"]),
    Case("check-node-twice", lambda f, p: p, "'--node age': given twice",
         ["check", "p.yaml", "--node", "zip_code=1,age=1,age=2,nationality=1"]),
    Case("risk-node-twice", lambda f, p: p, "'--node age': given twice",
         ["risk", "p.yaml", "--node", "zip_code=1,age=1,age=2,nationality=1"]),
    Case("check-node-empty", lambda f, p: p, "expected NAME=LEVEL", ["check", "p.yaml", "--node", ""]),
    Case("attack-node-empty", lambda f, p: p, "expected NAME=LEVEL", ["attack", "p.yaml", "--node", "", "-q"]),
    Case("usage-policy-folder", lambda f, p: p, "Invalid value for 'POLICY': File 'hierarchies' is a directory",
         ["anonymize", "hierarchies", "-q"]),
    Case("usage-manifest-folder", lambda f, p: p, "Invalid value for 'MANIFEST'",
         ["apply", "hierarchies", "--source", "hospital.csv"]),
    Case("usage-unknown-command", lambda f, p: p, "No such command 'anonymise'", ["anonymise", "p.yaml"]),
    Case("usage-unknown-option", lambda f, p: p, "No such option '--quiet-please'",
         ["anonymize", "p.yaml", "--quiet-please"]),
    Case("usage-bad-choice", lambda f, p: p, "Invalid value for '--attack'", ["attack", "p.yaml", "--attack", "all-out"]),
    Case("usage-missing-argument", lambda f, p: p, "Missing argument 'FILE'", ["hierarchy", "check"]),
    Case("knowledge-persons-a-number", write("k.yaml", "persons: 5\n"), "policy field 'persons'",
         ["maxent", "p.yaml", "--node", "zip_code=1,age=1,nationality=1", "--knowledge", "k.yaml", "-q"]),
    Case("knowledge-duplicate-key", write("k.yaml", "knowledge: []\nknowledge: []\n"), "key 'knowledge' appears twice",
         ["maxent", "p.yaml", "--node", "zip_code=1,age=1,nationality=1", "--knowledge", "k.yaml", "-q"]),
    # a typo of the key naming the kind was not named (helper-35)
    Case("knowledge-kind-typo", write("k.yaml", "knowledge: [{givne: {age: 30}, sensitive: Flu, probability: 0.5}]\n"),
         "('givne' is none of the keys a knowledge item takes)",
         ["maxent", "p.yaml", "--node", "zip_code=1,age=1,nationality=1", "--knowledge", "k.yaml", "-q"]),
    Case("marginals-max-steps-negative", lambda f, p: p, "'--max-steps': must be >= 0; got -1",
         ["marginals", "p.yaml", "--max-steps", "-1", "-q"]),
    Case("knowledge-empty-file", write("k.yaml", ""), "'--knowledge': k.yaml is empty",
         ["maxent", "p.yaml", "--node", "zip_code=1,age=1,nationality=1", "--knowledge", "k.yaml", "-q"]),
    Case("marginals-start-level", lambda f, p: p, "'--start age': level must be an integer from 0 to",
         ["marginals", "p.yaml", "--start", "zip_code=0,age=9,nationality=0", "-q"]),
    # a misspelt name was reported as the quasi-identifier it left out ("no level given for 'zip_code'")
    Case("marginals-start-unknown", lambda f, p: p, "'--start zz': not a quasi-identifier of the policy",
         ["marginals", "p.yaml", "--start", "zz=1", "-q"]),
    Case("knowledge-dev-zero", lambda f, p: p, "/dev/zero is not a regular file",
         ["maxent", "p.yaml", "--node", "zip_code=1,age=1,nationality=1", "--knowledge", "/dev/zero", "-q"]),
    # a view release that cannot enforce the policy at read time is refused when the policy loads (sqlanon/views.py)
    Case("view-t-hierarchical", view_of(k=4, t_closeness={"t": 0.4, "distance": "hierarchical"}),
         "'privacy.t_closeness.distance': t-closeness with the hierarchical distance cannot be enforced by a view"),
    Case("view-dont-care", view_of(k=4, l_diversity={"variant": "entropy", "l": 2, "dont_care": ["Cancer"]}),
         "'privacy.l_diversity.dont_care': entropy l-diversity with don't-care values cannot be enforced by a view"),
    Case("view-npd-recursive", view_of(k=4, l_diversity={"variant": "recursive", "l": 2, "c": 3,
                                                         "no_negative_disclosure": {"c2": 5, "values": ["Cancer"]}}),
         "'privacy.l_diversity.no_negative_disclosure': npd-recursive diversity cannot be enforced by a view"),
    Case("view-multi-attribute", view_of(sensitive=["condition", "customer_id"], k=4,
                                         l_diversity={"l": 2, "attribute": "all"}),
         "'privacy.l_diversity.attribute': multi-attribute l-diversity (attribute: all) cannot be enforced"),
    Case("view-entity-key", view_of(entity_key="customer_id", k=4),
         "'entity_key': counting persons (an entity key) cannot be enforced by a view at read time; use "
         "release.materialize: table"),
    Case("view-average-risk", view_of(k=4, average_risk=0.2), "'privacy.average_risk': average risk cannot be"),
]


def _prepare(template: Path, tmp_path: Path, case: Case) -> Path:
    folder = tmp_path / "case"
    shutil.copytree(template, folder)
    pol = json.loads(json.dumps(BASE_POLICY))
    out = case.setup(folder, pol)
    if isinstance(out, dict):
        (folder / "p.yaml").write_text(yaml.safe_dump(out, sort_keys=False), encoding="utf-8")
    elif isinstance(out, str):
        (folder / "p.yaml").write_text(out, encoding="utf-8")
    return folder


def _assert_one_line(stderr: str, expect: str, output: str = "") -> None:
    assert "Traceback" not in stderr + output
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("sqlanon: error: "), lines[0]
    assert expect in lines[0], lines[0]


def test_enough_cases():
    assert len(CASES) >= 80
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, template, tmp_path, monkeypatch):
    folder = _prepare(template, tmp_path, case)
    before = snapshot(folder)
    monkeypatch.chdir(folder)
    monkeypatch.delenv("SQLANON_TEST_UNSET_DSN", raising=False)
    for k, v in case.env.items():
        monkeypatch.setenv(k, v)
    started = time.monotonic()
    result = CliRunner().invoke(main, case.args)
    if case.within_s is not None:
        assert time.monotonic() - started < case.within_s, "an unreachable server must fail fast, not hang"
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    _assert_one_line(result.stderr, case.expect, result.output)
    for secret in ("pw@", ":pw"):
        assert secret not in result.stderr                  # a password in a DSN is never shown
    assert snapshot(folder) == before


# the issue's own reports, as real processes: what a user sees on a terminal
SUBPROCESS = ["query-two-statements", "hierarchy-dev-zero", "duplicate-l-diversity", "hierarchy-latin1",
              "policy-bad-yaml", "data-null-qi", "spark-master-closed-port"]


@pytest.mark.parametrize("case_id", SUBPROCESS)
def test_bad_input_subprocess(case_id, template, tmp_path):
    case = next(c for c in CASES if c.id == case_id)
    folder = _prepare(template, tmp_path, case)
    before = snapshot(folder)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "sqlanon.cli", *case.args], cwd=folder, env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2, r.stderr
    _assert_one_line(r.stderr, case.expect)
    assert snapshot(folder) == before


# --- what the issue found broken now works --------------------------------------------------------------

def _run_ok(folder: Path, policy: dict, *extra: str) -> None:
    (folder / "p.yaml").write_text(yaml.safe_dump(policy, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["anonymize", str(folder / "p.yaml"), "-q", *extra])
    assert result.exit_code == 0, result.output + result.stderr


def _rows(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_collated_column_through_a_query(template, tmp_path):
    """The way out the refusal of a collated column names: a query selecting it with COLLATE "C". Its values are
    then compared exactly: 'RUSSIAN' and 'Russian' are two values (two distinct values where NOCASE saw one),
    and every source row is released once (under NOCASE the joins to the mapping table doubled them)."""
    folder = tmp_path / "d"
    shutil.copytree(template, folder)
    query = 'SELECT * REPLACE ("nationality" COLLATE "C" AS "nationality") FROM nocase'
    pol = {**BASE_POLICY, "source": {"database": "data.duckdb", "query": query},
           "quasi_identifiers": {**BASE_POLICY["quasi_identifiers"], "nationality": {"hierarchy": "suppress"}},
           "privacy": {"k": 2}, "release": {"name": "rel", "keep": ["customer_id"]}}
    _run_ok(folder, pol, "--db", str(folder / "out.duckdb"))
    assert _rows(folder / "out.duckdb", "SELECT COUNT(*), COUNT(DISTINCT customer_id) FROM rel") == [(12, 12)]
    with Anonymization(load_policy(pol, base_dir=folder), db=":memory:") as run:
        values = set(run.fs.qi("nationality").hierarchy.values)
    assert values == {n.upper() if i % 2 == 0 else n for i, (_, _, n, _) in enumerate(ROWS)}
    assert {"RUSSIAN", "Russian"} <= values


def _folder_with_table(template: Path, tmp_path: Path, create: str) -> Path:
    """A copy of the template's folder whose data.duckdb also holds the table `create` makes."""
    folder = tmp_path / "d"
    shutil.copytree(template, folder)
    con = duckdb.connect(str(folder / "data.duckdb"))
    con.execute(create)
    con.close()
    return folder


def test_columns_declared_with_a_binary_collation_are_read(template, tmp_path):
    """C, POSIX and binary are the names of DuckDB's binary collation: such columns compare exactly, are read, and
    give the release of the plain table."""
    folder = _folder_with_table(template, tmp_path, 'CREATE TABLE binary_named AS SELECT customer_id, zip_code, age, '
                                'nationality COLLATE POSIX AS nationality, condition COLLATE "binary" AS condition '
                                'FROM hospital')
    _run_ok(folder, {**BASE_POLICY, "source": {"database": "data.duckdb", "table": "binary_named"},
                     "release": {"name": "rel"}})
    _run_ok(folder, {**BASE_POLICY, "release": {"name": "rel_plain"}})
    assert _rows(folder / "data.duckdb", "SELECT * FROM rel ORDER BY ALL") == \
        _rows(folder / "data.duckdb", "SELECT * FROM rel_plain ORDER BY ALL")


@pytest.mark.parametrize("nested, type_name", [
    ("[c]", "VARCHAR[]"),
    ("{'the name': c}", 'STRUCT("the name" VARCHAR)'),
    ("[[{'z': c}]]", "STRUCT(z VARCHAR)[][]"),
    ("row(1, c)", "TUPLE(INTEGER, VARCHAR)"),         # an unnamed struct: its fields by position
])
def test_nested_columns_built_from_a_collated_text_are_refused(nested, type_name, template, tmp_path):
    """A list or struct built from a NOCASE text keeps the collation, though DESCRIBE shows a plain VARCHAR[]: its
    GROUP BY makes ['RUSSIAN'] and ['Russian'] one value (helper-29 found it not refused). Refused with the way out
    for a nested column (through its text, read under the binary collation), which runs and keeps the two
    spellings apart. (A map of such texts groups by its binary form: it runs.)"""
    from sqlanon.engines.duckdb import DuckDBBackend
    if not DuckDBBackend(duckdb.connect(), owned=False)._nested_texts_collate():
        pytest.skip("this DuckDB (before 2) groups nested texts exactly: nothing to refuse "
                    "(test_nested_texts_are_asked_about_only_where_duckdb_groups_them_under_their_collation)")
    folder = _folder_with_table(template, tmp_path, f"CREATE TABLE nested_nocase AS SELECT customer_id, zip_code, "
                                f"age, nationality, {nested} AS condition FROM (SELECT *, CASE WHEN customer_id % 2 = 0 "
                                "THEN upper(condition) ELSE condition END COLLATE NOCASE AS c FROM hospital)")
    con = duckdb.connect(str(folder / "data.duckdb"))
    assert con.execute("SELECT COUNT(DISTINCT condition) < COUNT(DISTINCT CAST(condition AS VARCHAR)) "
                       "FROM nested_nocase").fetchone() == (True,)      # DuckDB itself merges the spellings
    assert {r[0]: r[1] for r in con.execute("DESCRIBE nested_nocase").fetchall()}["condition"] == type_name
    con.close()
    pol = {**BASE_POLICY, "source": {"database": "data.duckdb", "table": "nested_nocase"}, "release": {"name": "rel"}}
    (folder / "p.yaml").write_text(yaml.safe_dump(pol, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["anonymize", str(folder / "p.yaml"), "-q"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.output
    assert "column(s) 'condition' of the source nested_nocase compare under a collation" in result.stderr
    way_out = result.stderr.strip().rsplit("selecting ", 1)[1]
    assert way_out == f'CAST(CAST("condition" AS VARCHAR) COLLATE "C" AS {type_name}) AS "condition"'
    _run_ok(folder, {**pol, "source": {"database": "data.duckdb",
                                       "query": f"SELECT * REPLACE ({way_out}) FROM nested_nocase"}},
            "--db", str(folder / "out.duckdb"))
    released = {t for (t,) in _rows(folder / "out.duckdb", "SELECT DISTINCT CAST(condition AS VARCHAR) FROM rel")}
    assert any("Heart Disease" in t for t in released) and any("HEART DISEASE" in t for t in released), released


def test_nested_texts_are_asked_about_only_where_duckdb_groups_them_under_their_collation():
    """DuckDB 1.4 and 1.5 group a list built from NOCASE texts exactly, DuckDB 2 under NOCASE: the probe says which
    this DuckDB does (the installed one, checked against a table's GROUP BY), and only then is a list asked about
    (a list from such a source was refused on 1.4 and 1.5 though it grouped exactly: helper-30)."""
    from sqlanon.engines.duckdb import DuckDBBackend
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT [v] AS l FROM (SELECT 'A' COLLATE NOCASE AS v UNION ALL SELECT 'a')")
    merges = con.execute("SELECT COUNT(*) FROM (SELECT l FROM t GROUP BY l)").fetchone() == (1,)
    backend = DuckDBBackend(con, owned=False)
    assert backend._nested_texts_collate() is merges
    assert backend.may_collate("VARCHAR[]") is merges and backend.may_collate("VARCHAR")
    backend._nested_collate = False                 # as on DuckDB 1.5
    assert not backend.may_collate("STRUCT(x VARCHAR)") and backend.may_collate("VARCHAR")


def test_bucketize_refuses_a_collated_column(template, tmp_path):
    """Anatomy's buckets group the sensitive values: under NOCASE 'Heart Disease' and 'HEART DISEASE' would be one
    value to its GROUP BY and two in the published tables. Refused as `anonymize` refuses it (it was not)."""
    folder = _folder_with_table(template, tmp_path, "CREATE TABLE nocase_condition AS SELECT customer_id, zip_code, "
                                "age, nationality, CASE WHEN customer_id % 2 = 0 THEN upper(condition) ELSE condition "
                                "END COLLATE NOCASE AS condition FROM hospital")
    (folder / "p.yaml").write_text(yaml.safe_dump({**BASE_POLICY, "source": {"database": "data.duckdb",
                                                                            "table": "nocase_condition"}}))
    tables = "SELECT table_name FROM duckdb_tables() ORDER BY ALL"
    before = _rows(folder / "data.duckdb", tables)
    result = CliRunner().invoke(main, ["bucketize", str(folder / "p.yaml"), "--l", "2", "-q"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.output
    assert "column(s) 'condition' of the source nocase_condition compare under a collation" in result.stderr
    assert _rows(folder / "data.duckdb", tables) == before       # nothing written


def test_a_connection_default_collation_is_refused(template):
    """A collation set as the connection's default applies to every text column that has none of its own, the
    mapping tables' too: the column probe cannot see it, the setting is read instead."""
    con = duckdb.connect()
    con.execute("SET default_collation = 'nocase'")
    con.execute(f"CREATE TABLE hospital AS SELECT * FROM read_csv('{template / 'hospital.csv'}')")
    policy = load_policy({**BASE_POLICY, "source": {"table": "hospital"}}, base_dir=template)
    with pytest.raises(DataError, match="the DuckDB connection's default_collation is 'nocase', under which distinct "
                                        "values may compare equal; sqlanon compares values exactly: RESET "
                                        "default_collation first"):
        Anonymization(policy, connection=con)
    con.close()


def test_keep_with_suppression(template, tmp_path):
    """release.keep (a column before the quasi-identifiers) with max_suppression: the release keeps the
    customer ids of the rows it releases. At k = 4 with 4 of 12 rows suppressible, the minimal node of least
    height suppresses ages 50, 55, 47, 49 (the 1485* rows, whose ages span two age groups) and releases the
    other 8 rows with zip codes as they are (height 2: age and nationality to '*')."""
    folder = tmp_path / "d"
    shutil.copytree(template, folder)
    pol = {**BASE_POLICY, "privacy": {"k": 4, "max_suppression": 0.34}, "release": {"name": "rel", "keep": ["customer_id"]}}
    _run_ok(folder, pol)
    rows = _rows(folder / "data.duckdb", "SELECT * FROM rel ORDER BY customer_id")
    assert [r[0] for r in rows] == [0, 1, 2, 3, 8, 9, 10, 11]
    assert rows[0] == (0, 13053, "*", "*", "Heart Disease")
    assert {r[2] for r in rows} == {"*"} and {r[3] for r in rows} == {"*"}


def test_query_reads_the_database(template, tmp_path):
    """query: with database: runs against that file (attached read-only): the release has its 8 rows."""
    folder = tmp_path / "d"
    shutil.copytree(template, folder)
    pol = {**BASE_POLICY, "source": {"database": "data.duckdb",
                                     "query": "WITH h AS (SELECT * FROM s.hospital) SELECT * FROM h WHERE age < 40"},
           "privacy": {"k": 2}}
    (folder / "p.yaml").write_text(yaml.safe_dump(pol, sort_keys=False), encoding="utf-8")
    before = snapshot(folder)
    _run_ok(folder, pol, "--db", str(folder / "out.duckdb"))
    assert _rows(folder / "out.duckdb", "SELECT COUNT(*) FROM rel") == [(8,)]
    after = snapshot(folder)
    assert after.pop("out.duckdb") and after.pop("rel.manifest.json") and after == before   # the source unchanged


@pytest.mark.parametrize("table, name, where", [
    ("s.hospital", "s.rel", ("s", "rel")),
    ('"s"."hospital"', "s.rel", ("s", "rel")),
    ("data.s.hospital", "data.s.rel", ("s", "rel")),
    ("hospital", "s.rel", ("s", "rel")),
])
def test_schema_qualified_names(template, tmp_path, table, name, where):
    folder = tmp_path / "d"
    shutil.copytree(template, folder)
    pol = {**BASE_POLICY, "source": {"table": table}}
    for kind in ("table", "view"):
        _run_ok(folder, {**pol, "release": {"name": name, "materialize": kind}}, "--db", str(folder / "data.duckdb"))
        kinds = _rows(folder / "data.duckdb", "SELECT table_type FROM information_schema.tables WHERE "
                      f"table_schema = '{where[0]}' AND table_name = '{where[1]}'")
        assert kinds == [("BASE TABLE" if kind == "table" else "VIEW",)]
        assert _rows(folder / "data.duckdb", f"SELECT COUNT(*) FROM {where[0]}.{where[1]}") == [(12,)]


def test_default_release_name_stays_in_the_source_schema(template, tmp_path):
    folder = tmp_path / "d"
    shutil.copytree(template, folder)
    pol = {k: v for k, v in BASE_POLICY.items() if k != "release"}
    _run_ok(folder, {**pol, "source": {"database": "data.duckdb", "table": "s.hospital"}})
    assert _rows(folder / "data.duckdb", "SELECT COUNT(*) FROM s.hospital_release") == [(12,)]


def test_latin1_hierarchy_with_encoding(template, tmp_path):
    folder = tmp_path / "d"
    shutil.copytree(template, folder)
    (folder / "nat.csv").write_bytes(b"nationality,n1\nRussian,Europ\xe9en\nAmerican,Am\xe9ricain\n"
                                     b"Japanese,Europ\xe9en\nIndian,Europ\xe9en\n")
    pol = json.loads(json.dumps(BASE_POLICY))
    pol["quasi_identifiers"]["nationality"] = {"hierarchy": "nat.csv", "encoding": "latin-1"}
    pol["quasi_identifiers"]["age"] = {"hierarchy": "suppress"}
    pol["quasi_identifiers"]["zip_code"] = {"hierarchy": "suppress"}
    pol["privacy"] = {"k": 3}
    _run_ok(folder, pol)
    # level 0 fails (2 Russians), so nationality goes up to its region (6 rows each) with age and zip at level 0
    # or '*': either way the released nationality labels are the regions, decoded from Latin-1
    labels = {r[0] for r in _rows(folder / "data.duckdb", "SELECT DISTINCT nationality FROM rel")}
    assert labels == {"Européen", "Américain"}


def test_yaml_duplicate_keys_and_merges():
    """A key written twice is refused with both lines; a key overriding a merged one (<<: *base) is not a
    duplicate, and keeps YAML's meaning (the written value wins)."""
    from sqlanon.errors import PolicyError
    from sqlanon.files import load_yaml
    assert load_yaml("base: &b {k: 4, l: 2}\nprivacy:\n  <<: *b\n  k: 5\n", "p.yaml", "(file)") == \
        {"base": {"k": 4, "l": 2}, "privacy": {"k": 5, "l": 2}}
    with pytest.raises(PolicyError, match=r"key 'c' appears twice in the same mapping \(lines 3 and 5\)"):
        load_yaml("a: 1\nb:\n  c: 1\n  d: 0\n  c: 2\n", "p.yaml", "(file)")
    assert load_yaml("1: a\n'1': b\n", "p.yaml", "(file)") == {1: "a", "1": "b"}     # different keys


@pytest.mark.parametrize("kind", ["table", "view"])
def test_marginals_beside_a_schema_qualified_release(template, tmp_path, kind):
    """Marginals released with s.rel go into schema s beside it (<release>__marginal_<i>)."""
    folder = tmp_path / "d"
    shutil.copytree(template, folder)
    pol = {**BASE_POLICY, "release": {"name": "s.rel", "materialize": kind,
                                      "marginals": [{"attributes": {"age": 1, "condition": 0}}]}}
    (folder / "p.yaml").write_text(yaml.safe_dump(pol, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["marginals", str(folder / "p.yaml"), "--search", "none", "-q"])
    assert result.exit_code == 0, result.output + result.stderr
    names = _rows(folder / "data.duckdb", "SELECT table_schema, table_name FROM information_schema.tables "
                  "WHERE table_name LIKE 'rel%' AND table_name NOT LIKE '%map%' ORDER BY 2")
    assert names == [("s", "rel"), ("s", "rel__marginal_1")]
    counts = _rows(folder / "data.duckdb", "SELECT SUM(count) FROM s.rel__marginal_1")
    assert counts == [(12,)]


@pytest.mark.parametrize("name, parts, sql", [
    ("t", ["t"], '"t"'),
    ("s.t", ["s", "t"], '"s"."t"'),
    ("c.s.t", ["c", "s", "t"], '"c"."s"."t"'),
    ('"Ward 7".patients', ["Ward 7", "patients"], '"Ward 7"."patients"'),
    ('sales."2024.q1"', ["sales", "2024.q1"], '"sales"."2024.q1"'),
    ('"a""b".t', ['a"b', "t"], '"a""b"."t"'),
    ('s."t"__sqlanon_tmp', ["s", "t__sqlanon_tmp"], '"s"."t__sqlanon_tmp"'),   # the release's temporary name
])
def test_relation_names(name, parts, sql):
    from sqlanon import templates
    assert templates.split_name(name) == parts
    assert templates.relation(name) == sql
    assert templates.split_name(templates.join_name(parts)) == parts


def test_relation_names_round_trip():
    from hypothesis import given
    from hypothesis import strategies as st

    from sqlanon import templates
    part = st.text(alphabet=st.sampled_from('ab.Z "_7'), min_size=1, max_size=6).filter(str.strip)

    @given(st.lists(part, min_size=1, max_size=3))
    def check(parts):
        assert templates.split_name(templates.join_name(parts)) == parts
    check()
