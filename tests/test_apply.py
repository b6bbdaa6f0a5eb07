"""`sqlanon apply`: re-applying a manifest to new rows, and refusing when privacy no longer holds."""
from __future__ import annotations

import json

import duckdb
from click.testing import CliRunner

from sqlanon.cli import main

from conftest import HOSPITAL


def _setup(tmp_path):
    db = tmp_path / "h.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    # new rows: the same people twice (still 4-anonymous at Figure 2's node) and a too-small batch
    con.execute("CREATE TABLE doubled AS SELECT * FROM hospital UNION ALL SELECT * FROM hospital")
    con.execute("CREATE TABLE few AS SELECT * FROM hospital WHERE age < 40 AND zip_code <> '13068'")
    con.close()
    policy = tmp_path / "p.yaml"
    policy.write_text(f"""source: {{database: h.duckdb, table: hospital}}
quasi_identifiers:
  zip_code: {{hierarchy: {HOSPITAL / 'hierarchies' / 'zip_code.csv'}}}
  age: {{hierarchy: {HOSPITAL / 'hierarchies' / 'age.csv'}}}
  nationality: {{hierarchy: suppress}}
sensitive: [condition]
privacy: {{k: 4}}
release: {{name: rel}}
""")
    manifest = tmp_path / "m.json"
    r = CliRunner().invoke(main, ["anonymize", str(policy), "--json", str(manifest), "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return db, manifest


def test_apply_to_new_rows_releases_with_the_same_node(tmp_path):
    db, manifest = _setup(tmp_path)
    out = tmp_path / "m2.json"
    r = CliRunner().invoke(main, ["apply", str(manifest), "--source", "doubled", "--name", "rel2", "--json", str(out),
                                  "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    m1, m2 = json.loads(manifest.read_text()), json.loads(out.read_text())
    assert m2["chosen"]["levels"] == m1["chosen"]["levels"]
    assert m2["release_sql_sha256"] == m1["release_sql_sha256"]
    assert m2["privacy"]["k"] == 8
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT COUNT(*) FROM rel2").fetchone()[0] == 24
    con.close()


def test_apply_refuses_rows_that_break_the_models(tmp_path):
    db, manifest = _setup(tmp_path)
    r = CliRunner().invoke(main, ["apply", str(manifest), "--source", "few", "--name", "rel3", "-q"])
    assert r.exit_code == 3
    assert "do not satisfy" in r.stderr and "nothing was released" in r.stderr
    con = duckdb.connect(str(db), read_only=True)
    tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    con.close()
    assert "rel3" not in tables


def test_apply_refuses_a_changed_taxonomy(tmp_path):
    db, manifest = _setup(tmp_path)
    m = json.loads(manifest.read_text())
    m["hierarchies"]["zip_code"]["sha256_16"] = "0" * 16
    manifest.write_text(json.dumps(m))
    r = CliRunner().invoke(main, ["apply", str(manifest), "--source", "doubled", "-q"])
    assert r.exit_code == 2 and "changed since the manifest" in r.stderr


def test_apply_refuses_values_the_manifests_hierarchies_do_not_hold(tmp_path):
    """By choice (sqlanon/applying.py): a view release shows such values at the top, apply releases only the
    recorded transformation; one line naming the column, how many values, which, and what to do."""
    db, manifest = _setup(tmp_path)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE newer AS SELECT * FROM hospital UNION ALL SELECT * FROM hospital "
                "UNION ALL SELECT zip_code, 77, nationality, condition FROM hospital")
    con.close()
    r = CliRunner().invoke(main, ["apply", str(manifest), "--source", "newer", "--name", "rel4", "-q"])
    assert r.exit_code == 2
    line, = r.stderr.splitlines()
    assert line.startswith("sqlanon: error: column 'age': 1 value(s) '77' of the new rows are not in the hierarchy "
                           "of 'age'")
    assert "add them to the hierarchy and run sqlanon anonymize again" in line and "Traceback" not in r.output
    con = duckdb.connect(str(db), read_only=True)
    tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    con.close()
    assert "rel4" not in tables


def test_new_rows_without_a_column_of_the_policy_are_named_as_such(tmp_path):
    """The new rows' schema is at fault, not the policy: the line said "fix the name in the policy"."""
    db, manifest = _setup(tmp_path)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE lacking AS SELECT zip_code, age, condition FROM hospital")
    con.close()
    r = CliRunner().invoke(main, ["apply", str(manifest), "--source", "lacking", "--name", "rel5", "-q"])
    assert r.exit_code == 2
    line, = r.stderr.splitlines()
    assert line == ("sqlanon: error: column 'nationality' (quasi_identifiers of the manifest's policy) is not in the "
                    "new rows lacking (their columns: zip_code, age, condition); apply needs the columns the release "
                    "was made from: give rows of that schema")


def test_apply_prints_its_summary(tmp_path):
    """Without -q, apply stopped with a KeyError traceback after releasing: its summary read the search's keys,
    and apply does not search."""
    db, manifest = _setup(tmp_path)
    r = CliRunner().invoke(main, ["apply", str(manifest), "--source", "doubled", "--name", "rel6", "--json",
                                  str(tmp_path / "m6.json")])
    assert r.exit_code == 0, r.output
    assert "lattice: 18 nodes; the node given, not searched for" in r.output and "released table rel6" in r.output


def test_apply_refuses_a_hierarchy_the_new_rows_give_other_levels(tmp_path):
    """A mask is built from the rows it masks: a longer zip code in the new rows gives it six levels, and the
    manifest's level 5 (its top, '*') became a mask of five of six characters, publishing the first digit."""
    db = tmp_path / "z.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT i AS pid, 20 + i AS age, ['13053', '24850'][1 + i % 2] AS zip, "
                "['flu', 'hiv', 'cold'][1 + i % 3] AS disease FROM range(40) r(i)")
    con.execute("CREATE TABLE longer AS SELECT * FROM t UNION ALL SELECT 100 + pid, age, '130537', disease FROM t")
    con.execute("CREATE TABLE same AS SELECT * FROM t UNION ALL SELECT * FROM t")
    con.close()
    policy = tmp_path / "p.yaml"
    policy.write_text("source: {database: z.duckdb, table: t}\nquasi_identifiers:\n"
                      "  age: {hierarchy: intervals, widths: [50]}\n  zip: {hierarchy: mask, levels: 5}\n"
                      "sensitive: [disease]\nprivacy: {k: 40}\nutility: height\nrelease: {name: rel}\n")
    manifest = tmp_path / "m.json"
    r = CliRunner().invoke(main, ["anonymize", str(policy), "--json", str(manifest), "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(manifest.read_text())["chosen"]["levels"]["zip"] == 5
    r = CliRunner().invoke(main, ["apply", str(manifest), "--source", "longer", "--name", "rel2", "-q"])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == ("sqlanon: error: policy field 'quasi_identifiers.zip.hierarchy': built from these rows, "
                                "the hierarchy of 'zip' (mask 5) has 6 levels where the manifest's had 5, so its "
                                "recorded level would be another generalization; anonymize these rows instead")
    con = duckdb.connect(str(db))
    assert con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name = 'rel2'").fetchone()[0] == 0
    con.close()
    assert CliRunner().invoke(main, ["apply", str(manifest), "--source", "same", "--name", "rel3", "-q"]).exit_code == 0
