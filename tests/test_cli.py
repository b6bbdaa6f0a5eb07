"""The command line: the demo, anonymize/check/lattice/sql, and bad input giving one line and exit 2."""
from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pytest
import yaml
from click.testing import CliRunner

import sqlanon
from sqlanon.cli import main

from conftest import HOSPITAL


def _db_with_hospital(tmp_path, rows_sql="SELECT * FROM read_csv(?)"):
    db = tmp_path / "data.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE hospital AS {rows_sql}", [str(HOSPITAL / "hospital.csv")])
    con.close()
    return db


def _policy(tmp_path, db, **changes):
    policy = {
        "source": {"database": db.name, "table": "hospital"},
        "quasi_identifiers": {
            "zip_code": {"hierarchy": str(HOSPITAL / "hierarchies" / "zip_code.csv")},
            "age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
            "nationality": {"hierarchy": "suppress"},
        },
        "sensitive": ["condition"],
        "privacy": {"k": 4},
        "utility": "height",
        "release": {"name": "hospital_release"},
    }
    for key, value in changes.items():
        if value is None:
            policy.pop(key)
        else:
            policy[key] = value
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    return path


def _checksum(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
        return tables, con.execute("SELECT COUNT(*), SUM(hash(zip_code || age || nationality || condition)) "
                                   "FROM hospital").fetchone()
    finally:
        con.close()


def _invoke(args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_anonymize_writes_release_and_manifest(tmp_path):
    db = _db_with_hospital(tmp_path)
    before = _checksum(db)
    out = tmp_path / "manifest.json"
    result = _invoke(["anonymize", _policy(tmp_path, db), "--json", out, "-q"])
    assert result.exit_code == 0, result.output
    m = json.loads(out.read_text())
    for key in ("sqlanon_version", "policy", "source", "lattice", "chosen", "privacy", "outputs", "timings_s"):
        assert key in m
    assert m["source"] == {"table": "hospital", "rows": 12}
    assert m["chosen"]["levels"] == {"zip_code": 1, "age": 1, "nationality": 1}
    assert m["privacy"]["k"] == 4
    assert m["outputs"] == [{"kind": "table", "name": "hospital_release", "rows": 12}]
    con = duckdb.connect(str(db), read_only=True)
    sizes = con.execute("SELECT COUNT(*) FROM hospital_release GROUP BY zip_code, age, nationality").fetchall()
    con.close()
    assert sorted(s for (s,) in sizes) == [4, 4, 4]
    assert _checksum(db)[1] == before[1]      # the source table is unchanged


def test_check_exit_codes(tmp_path):
    db = _db_with_hospital(tmp_path)
    policy = _policy(tmp_path, db)
    source = _invoke(["check", policy])
    assert source.exit_code == 3 and "does NOT satisfy" in source.output
    node = _invoke(["check", policy, "--node", "zip_code=1,age=1,nationality=1", "--json"])
    assert node.exit_code == 0
    assert json.loads(node.output)["achieved"]["k"] == 4
    _invoke(["anonymize", policy, "-q"])
    release = _invoke(["check", policy, "--table", "hospital_release", "--json"])
    assert release.exit_code == 0, release.output
    assert json.loads(release.output)["classes"] == 3


def test_check_node_reports_what_its_release_achieves(tmp_path):
    """A node that satisfies by suppressing a class: `achieved` is what its release achieves, as that node's
    manifest says (it was every class's, k = 4 beside "satisfies k = 5"); every class's is reported beside."""
    db = _db_with_hospital(tmp_path)
    policy = _policy(tmp_path, db, privacy={"k": 5, "max_suppression": 0.4})
    node = "zip_code=1,age=2,nationality=1"
    got = json.loads(_invoke(["check", policy, "--node", node, "--json"]).output)
    assert got["satisfied"] and got["suppressed_rows"] == 4
    assert (got["achieved"]["k"], got["achieved"]["classes"]) == (8, 1)
    assert (got["achieved_by_every_class"]["k"], got["achieved_by_every_class"]["classes"]) == (4, 2)
    assert _invoke(["anonymize", policy, "--json", tmp_path / "m.json", "-q"]).exit_code == 0
    manifest = json.loads((tmp_path / "m.json").read_text())
    assert manifest["chosen"]["levels"] == {"zip_code": 1, "age": 2, "nationality": 1}
    assert got["achieved"] == manifest["privacy"]


def test_check_table_judges_a_published_table_without_a_suppression_budget(tmp_path):
    """A table is checked as it is published: nothing more can be suppressed from it. With the policy's budget
    (50 %) a hand-made table holding classes of 2 and 3 rows "satisfied" k = 4, those rows counted as if
    suppressed; the documented gate `sqlanon check --table ... || block` let it through."""
    db = _db_with_hospital(tmp_path)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hand AS SELECT '*' AS zip_code, '*' AS age, '*' AS nationality, condition FROM hospital "
                "UNION ALL (SELECT '130**', '[20, 40)', '*', 'Flu' FROM range(2))")
    sizes = sorted(n for (n,) in con.execute("SELECT COUNT(*) FROM hand GROUP BY zip_code, age").fetchall())
    con.close()
    assert min(sizes) < 4 and sum(n for n in sizes if n < 4) <= 6
    policy = _policy(tmp_path, db, privacy={"k": 4, "max_suppression": 0.5})
    r = _invoke(["check", policy, "--table", "hand", "--json"])
    assert r.exit_code == 3, r.output
    got = json.loads(r.output)
    assert got["satisfied"] is False and got["achieved"]["k"] == min(sizes)


def test_lattice_and_sql(tmp_path):
    db = _db_with_hospital(tmp_path)
    policy = _policy(tmp_path, db)
    out = _invoke(["lattice", policy, "--json", "-q"])
    data = json.loads(out.output)
    # Figure 2 of the TKDD paper is the only minimal 4-anonymous node (see test_hospital.py)
    assert [m["levels"] for m in data["minimal"]] == [{"zip_code": 1, "age": 1, "nationality": 1}]
    for dialect in ("postgres", "spark", "trino", "bigquery", "snowflake"):
        sql = _invoke(["sql", policy, "--dialect", dialect, "-q", "--steps"])
        assert sql.exit_code == 0, sql.output
        assert "GROUP BY" in sql.output.upper() and "hospital" in sql.output


@pytest.mark.parametrize("entity", [False, True])
def test_sql_steps_run_as_printed(tmp_path, entity):
    """Each statement of `sql --steps`, run in order on a copy of the database: the sensitive attribute's mapping
    table was never printed (every statement after the frequency set failed), and a schema-qualified source was
    quoted as one identifier on the staged route (taken with an entity key)."""
    db = _db_with_hospital(tmp_path, "SELECT *, row_number() OVER () AS person FROM read_csv(?)")
    con = duckdb.connect(str(db))
    con.execute('CREATE SCHEMA "My Schema"; CREATE TABLE "My Schema".hospital AS SELECT * FROM hospital; '
                "DROP TABLE hospital")
    con.close()
    policy = yaml.safe_load(_policy(tmp_path, db).read_text())
    policy["source"]["table"] = '"My Schema".hospital'
    if entity:
        policy["entity_key"] = "person"
    path = tmp_path / "steps.yaml"
    path.write_text(yaml.safe_dump(policy))
    printed = _invoke(["sql", str(path), "--steps", "-q"])
    assert printed.exit_code == 0, printed.output
    con = duckdb.connect(str(db))
    statements = [s for s in printed.output.split(";\n")
                  if "\n".join(line for line in s.splitlines() if not line.startswith("--")).strip()]
    assert len(statements) > 5
    for statement in statements:
        rows = con.execute(statement).fetchall()
    assert len(rows) == 12          # the last: the release's SELECT, every row of Figure 2's node
    con.close()


def test_sql_from_a_manifest_is_the_released_transformation_without_a_search(tmp_path):
    db = _db_with_hospital(tmp_path)
    policy = _policy(tmp_path, db)
    manifest = tmp_path / "m.json"
    assert _invoke(["anonymize", policy, "--json", str(manifest), "-q"]).exit_code == 0
    from_policy = _invoke(["sql", policy, "--dialect", "postgres", "-q", "--steps"])
    from_manifest = _invoke(["sql", str(manifest), "--dialect", "postgres", "--steps"])
    assert from_manifest.exit_code == 0, from_manifest.output
    release = lambda out: out.split("-- the release: the generalizing SELECT")[1]  # noqa: E731
    assert release(from_manifest.output) == release(from_policy.output)
    assert "-- the chosen node's per-block counts (zip_code=1, age=1, nationality=1)" in from_manifest.output
    assert from_manifest.output.startswith(f"-- sqlanon: SQL for the policy of the manifest {manifest} in the postgres")
    bad = _invoke(["sql", str(tmp_path / "missing.json")])
    assert bad.exit_code == 2 and "MANIFEST" in bad.output and "Traceback" not in bad.output


# -- bad input: one line, exit 2, nothing changed -------------------------------------------------------

def _bad_policies(tmp_path, db):
    qis = {"zip_code": {"hierarchy": str(HOSPITAL / "hierarchies" / "zip_code.csv")},
           "age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
           "nationality": {"hierarchy": "suppress"}}
    short = tmp_path / "short_zip.csv"
    short.write_text("zip_code,l1,l2\n13053,130**,*\n13068,130**,*\n14850,1485*,*\n")
    return {
        "unknown column": ({"quasi_identifiers": {**qis, "agee": {"hierarchy": "suppress"}}}, "agee"),
        "value missing from hierarchy": ({"quasi_identifiers": {**qis, "zip_code": {"hierarchy": str(short)}}},
                                         "14853"),
        "k larger than the table": ({"privacy": {"k": 13}}, "privacy.k"),
        "negative k": ({"privacy": {"k": -1}}, "privacy.k"),
        "column name carrying SQL": ({"quasi_identifiers": {**qis, 'age"; DROP TABLE hospital; --':
                                                            {"hierarchy": "suppress"}}}, "DROP TABLE"),
        "unknown utility": ({"utility": "fastest"}, "utility"),
        "missing source": ({"source": None}, "source"),
        "missing hierarchy file": ({"quasi_identifiers": {**qis, "age": {"hierarchy": "nope.csv"}}}, "nope.csv"),
        "unknown top-level key": ({"privacyy": {"k": 2}}, "privacyy"),
        "missing table": ({"source": {"database": db.name, "table": "nope"}}, "nope"),
    }


@pytest.mark.parametrize("case", ["unknown column", "value missing from hierarchy", "k larger than the table",
                                  "negative k", "column name carrying SQL", "unknown utility", "missing source",
                                  "missing hierarchy file", "unknown top-level key", "missing table"])
def test_bad_policy_gives_one_line_and_exit_2(tmp_path, case):
    db = _db_with_hospital(tmp_path)
    before = _checksum(db)
    changes, needle = _bad_policies(tmp_path, db)[case]
    result = _invoke(["anonymize", _policy(tmp_path, db, **changes), "-q"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("sqlanon: error:"), result.stderr
    assert needle in lines[0]
    assert "Traceback" not in result.output
    assert _checksum(db) == before          # no table added, source rows unchanged


@pytest.mark.parametrize("case, rows_sql, needle", [
    ("NULLs in a quasi-identifier", "SELECT zip_code, CASE WHEN age = 28 THEN NULL ELSE age END AS age, "
                                    "nationality, condition FROM read_csv(?)", "NULL"),
    ("an empty table", "SELECT * FROM read_csv(?) WHERE false", "no rows"),
])
def test_bad_data_gives_one_line_and_exit_2(tmp_path, case, rows_sql, needle):
    db = _db_with_hospital(tmp_path, rows_sql)
    before = _checksum(db)
    result = _invoke(["anonymize", _policy(tmp_path, db), "-q"])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0]
    assert _checksum(db) == before


def test_malformed_yaml_is_one_line(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("source: {table: [unclosed\n")
    result = _invoke(["anonymize", path])
    assert result.exit_code == 2
    assert "not valid YAML" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_demo_runs_from_the_installed_entry_point(tmp_path):
    """The README's demo: the console script, no arguments, embedded data."""
    exe = [sys.executable, "-m", "sqlanon.cli", "demo"]
    done = subprocess.run(exe, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "released table adult_demo" in done.stdout
    manifest = json.loads((tmp_path / "sqlanon_demo.json").read_text())
    assert manifest["source"]["rows"] == 45222
    assert manifest["privacy"]["k"] >= 5
    con = duckdb.connect(str(tmp_path / "sqlanon_demo.duckdb"), read_only=True)
    assert con.execute("SELECT COUNT(*) FROM adult_demo").fetchone()[0] == 45222 - manifest["chosen"]["suppressed_rows"]
    con.close()


@pytest.mark.parametrize("error, code", [
    (sqlanon.UserError("bad value"), 2),
    (sqlanon.PolicyError("privacy.k", "must be a positive integer"), 2),
    (sqlanon.DataError("column 'age' has NULLs"), 2),
    (sqlanon.PrivacyNotMet("k = 3 < 5"), 3),
])
def test_every_error_derives_from_sqlanon_error_with_its_exit_code(error, code):
    assert isinstance(error, sqlanon.SqlanonError) and error.exit_code == code
    assert set(sqlanon.__all__) >= {"Anonymization", "search_and_choose", "connect", "SqlanonError", "UserError", "PolicyError",
                                    "DataError", "PrivacyNotMet"}
    assert all(getattr(sqlanon, name) is not None for name in sqlanon.__all__)


def test_connect_is_a_deprecated_alias_of_search_and_choose():
    policy = {"source": {"csv": str(HOSPITAL / "hospital.csv"), "table": "hospital"},
              "quasi_identifiers": {"age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
                                    "nationality": {"hierarchy": "suppress"}},
              "sensitive": ["condition"], "privacy": {"k": 2}, "release": {"materialize": "none"}}
    with sqlanon.search_and_choose(policy) as new:
        expected = (dict(new.chosen.levels), [c.levels for c in new.candidates])
    with pytest.warns(DeprecationWarning, match="search_and_choose"), sqlanon.connect(policy) as old:
        assert (dict(old.chosen.levels), [c.levels for c in old.candidates]) == expected
    # ages in three ranges, nationality suppressed: classes of 4, 4 and 4 (kept, <30 holds a lone Japanese)
    assert expected[0] == {"age": 1, "nationality": 1}


def test_search_and_choose_releases_where_anonymize_does(tmp_path):
    """`sqlanon.search_and_choose(policy)` opened an in-memory DuckDB by default: `materialize()` wrote the release
    and its catalog row there, lost at close(), while the manifest it wrote described a release that existed
    nowhere. By default the release goes where `sqlanon anonymize` puts it: the source's database file."""
    import duckdb
    db = tmp_path / "data.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    con.close()
    policy = tmp_path / "k.yaml"
    policy.write_text(yaml.safe_dump({
        "source": {"database": "data.duckdb", "table": "hospital"}, "sensitive": ["condition"],
        "quasi_identifiers": {"age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
                              "nationality": {"hierarchy": "suppress"}},
        "privacy": {"k": 2}, "release": {"name": "kpy"}}))
    with sqlanon.search_and_choose(str(policy)) as run:
        outputs = run.materialize()
        manifest = run.write_manifest()
    assert outputs[0].name == "kpy" and json.loads(manifest.read_text())["database"] == str(db)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT COUNT(*) FROM kpy").fetchone() == (12,)
    con.close()


@pytest.mark.parametrize("args, command", [([], "  anonymize "), (["hierarchy"], "  check ")])
def test_a_bare_group_prints_its_help(args, command):
    """`sqlanon` (or `sqlanon hierarchy`) alone printed its whole help as an error on stderr, exit 2."""
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0 and r.stdout.startswith("Usage: ") and command in r.stdout and not r.stderr


@pytest.mark.parametrize("setup, needle", [
    ({"sqlanon_demo.json": '{"mine": 1}'}, "give --json another path, or remove it"),
    ({"sqlanon_demo.json": '{"sqlanon_version": "0", "outputs": [{"kind": "table", "name": "other"}]}'},
     "a sqlanon manifest of another release; give --json another path"),
])
def test_a_refused_demo_names_its_own_ways_out(tmp_path, monkeypatch, setup, needle):
    """demo's refusals said "pass --force" (demo has no --force) or "choose another release.name" (its policy is
    built in)."""
    monkeypatch.chdir(tmp_path)
    for name, text in setup.items():
        (tmp_path / name).write_text(text)
    r = CliRunner().invoke(main, ["demo", "-q", "--report", ""])
    assert r.exit_code == 2 and needle in r.stderr and "--force" not in r.stderr, r.stderr


@pytest.mark.parametrize("args, where", [
    (["anonymize", "p.yaml", "--json"], "(see main anonymize --help)"),      # it said "see main --help"
    (["anonymize", "p.yaml", "--bogus"], "(see main anonymize --help)"),
    (["bogus"], "(see main --help)"),
])
def test_a_usage_error_points_at_the_commands_own_help(args, where):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and r.stderr.strip().endswith(where), r.stderr


def test_hierarchy_check_reads_a_file_in_the_encoding_given(tmp_path):
    """A hierarchy a policy reads with `encoding: latin-1` could not be checked: hierarchy check read UTF-8 only."""
    (tmp_path / "h.csv").write_bytes(b"region,l1\ncaf\xe9,*\nbar,*\n")
    (tmp_path / "d.csv").write_text("region\ncaf\u00e9\nbar\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["hierarchy", "check", str(tmp_path / "h.csv"), "--data", str(tmp_path / "d.csv"),
                                  "--encoding", "latin-1", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["clean"] is True
