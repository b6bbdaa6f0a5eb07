"""Releases that can never destroy data: the release catalog `sqlanon_releases` (sqlanon.catalog).

Every refusal is one line naming the object, exit code 2, and leaves the source and every other table and
file exactly as they were (checksums before and after). A release may replace its own earlier release;
`release.replace: false` refuses even that. The catalog row, written in the swap's transaction, holds the
manifest the file holds; a kill after the commit still leaves it. `apply` and `sql MANIFEST` refuse a
manifest whose policy was edited. Ctrl-C exits 130 and writes nothing; a failed run creates no database.
The PostgreSQL and Spark variants are at the end of tests/test_engines.py (they need its server fixtures).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from sqlanon.catalog import CATALOG
from sqlanon.cli import main

from conftest import HOSPITAL, ROOT

QIS = {"zip_code": {"hierarchy": "hierarchies/zip_code.csv"}, "age": {"hierarchy": "hierarchies/age.csv"},
       "nationality": {"hierarchy": "suppress"}}


# -- a workspace: a DuckDB file with the source and a user's table, the CSV, hierarchies, a policy -------

@pytest.fixture
def ws(tmp_path) -> Path:
    shutil.copytree(HOSPITAL / "hierarchies", tmp_path / "hierarchies")
    shutil.copy(HOSPITAL / "hospital.csv", tmp_path / "people.csv")
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    con = duckdb.connect(str(tmp_path / "data.duckdb"))
    con.execute("CREATE TABLE people AS SELECT * FROM read_csv(?)", [str(tmp_path / "people.csv")])
    con.execute("CREATE TABLE other AS SELECT range AS x FROM range(5)")
    con.execute("CREATE TABLE rel__map_0 AS SELECT 'mine' AS y")
    con.execute("CREATE TABLE b_qit AS SELECT 1 AS z")
    con.execute("CREATE VIEW dash AS SELECT 42 AS answer")
    con.close()
    write_policy(tmp_path)
    return tmp_path


def write_policy(ws: Path, source=None, file: str = "policy.yaml", k: int = 4, **release) -> Path:
    policy = {"source": source or {"table": "people", "database": "data.duckdb"}, "quasi_identifiers": QIS,
              "sensitive": ["condition"], "privacy": {"k": k}, "utility": "height",
              "release": {"name": "rel", **release}}
    path = ws / file
    path.write_text(yaml.safe_dump(policy))
    return path


def db_state(db: Path) -> dict:
    """Every table of a DuckDB file and a checksum of its rows (order-independent)."""
    if not db.exists():
        return {}
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
        return {n: con.execute(f'SELECT COUNT(*), SUM(hash(t::VARCHAR)) FROM "{n}" t').fetchone() for n in names}
    finally:
        con.close()


def file_state(ws: Path) -> dict:
    """sha256 of every file but the DuckDB database (compared by its tables), and whether it exists."""
    return {str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(ws.rglob("*")) if p.is_file() and p.name != "data.duckdb" and not p.name.endswith(".wal")}


def state(ws: Path) -> tuple:
    return db_state(ws / "data.duckdb"), file_state(ws)


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def refused(r, needle: str) -> None:
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("sqlanon: error: ") and needle in lines[0], lines[0]


# -- every refusal: exit 2, one line naming the object, nothing changed ------------------------------------

def _policy(ws, **kw):
    return write_policy(ws, **kw)


REFUSALS = [
    # (case, how to make the policy, extra CLI args, the object the line must name)
    ("release named like the source table", lambda ws: _policy(ws, name="people"), [], "people: it is a source"),
    ("the source, another case", lambda ws: _policy(ws, name="PEOPLE"), [], "PEOPLE: it is a source"),
    ("the source, read by a query", lambda ws: write_policy(ws, source={"query": "SELECT * FROM people",
                                                                        "table": "q"}, name="people"),
     ["--db", "{ws}/data.duckdb"], "people: it is a source"),
    ("the source, schema-qualified in a query", lambda ws: write_policy(
        ws, source={"query": "SELECT * FROM main.people", "table": "q"}, name="people"),
     ["--db", "{ws}/data.duckdb"], "people: it is a source"),
    ("the source, the release name schema-qualified", lambda ws: _policy(ws, name="main.people"), [],
     "main.people: it is a source"),
    ("another table of the user", lambda ws: _policy(ws, name="other"), [], "other"),
    ("a view's mapping table the user made", lambda ws: _policy(ws, name="rel", materialize="view"), [],
     "rel__map_0"),
    # DuckDB matches names whatever their case: a release named in another case took the user's objects for new
    # names, replaced the view and the mapping table, and failed on the table only at its rename
    ("another table of the user, another case", lambda ws: _policy(ws, name="OTHER"), [], "table OTHER"),
    ("a view of the user, another case", lambda ws: _policy(ws, name="Dash", materialize="view"), [], "view Dash"),
    ("a view's mapping table the user made, another case", lambda ws: _policy(ws, name="REL", materialize="view"),
     [], "REL__map_0"),
    ("the catalog's own name", lambda ws: _policy(ws, name="sqlanon_releases"), [], "sqlanon_releases"),
    ("export over the source CSV", lambda ws: write_policy(ws, source={"csv": "people.csv", "table": "people"},
                                                           export=["people.csv"]),
     ["--db", "{ws}/data.duckdb"], "people.csv"),
    ("export over a hierarchy file", lambda ws: _policy(ws, export=["hierarchies/age.csv"]), [], "age.csv"),
    ("export over a file sqlanon did not write", lambda ws: _policy(ws, export=["notes.csv"]), [], "notes.csv"),
    ("--db is a CSV file", lambda ws: _policy(ws, source={"csv": "people.csv", "table": "people"}),
     ["--db", "{ws}/notes.csv"], "notes.csv"),
    ("--json over the policy", lambda ws: _policy(ws), ["--json", "{ws}/policy.yaml"], "policy.yaml"),
    ("--json over a hierarchy file", lambda ws: _policy(ws), ["--json", "{ws}/hierarchies/zip_code.csv"],
     "zip_code.csv"),
    ("--json over a file that is not a manifest", lambda ws: _policy(ws), ["--json", "{ws}/notes.csv"],
     "notes.csv"),
]


@pytest.mark.parametrize("case,make,args,needle", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_refusals_name_the_object_and_change_nothing(ws, case, make, args, needle):
    policy = make(ws)
    before = state(ws)
    r = cli("anonymize", policy, "-q", *[a.format(ws=ws) for a in args])
    refused(r, needle)
    assert state(ws) == before
    assert not (ws / "rel.manifest.json").exists()


def test_a_release_is_never_its_own_source(ws):
    """Anonymizing a release again into the same name: the catalog says sqlanon owns it, but it is the source."""
    assert cli("anonymize", write_policy(ws, k=1), "-q").exit_code == 0     # level 0: the values as they are
    policy = write_policy(ws, file="again.yaml", source={"table": "rel", "database": "data.duckdb"}, name="rel")
    before = state(ws)
    refused(cli("anonymize", policy, "-q"), "rel: it is a source this run reads")
    assert state(ws) == before


def test_refusals_of_apply_name_and_bucketize(ws):
    policy = write_policy(ws)
    assert cli("anonymize", policy, "-q").exit_code == 0
    before = state(ws)
    refused(cli("apply", ws / "rel.manifest.json", "--source", "people", "--name", "other", "-q"), "other")
    refused(cli("apply", ws / "rel.manifest.json", "--source", "people", "--name", "people", "-q"), "people")
    refused(cli("apply", ws / "rel.manifest.json", "--source", "people", "--name", "Other", "-q"), "Other")
    refused(cli("bucketize", policy, "--l", "3", "--name", "b", "-q"), "b_qit")
    refused(cli("bucketize", policy, "--l", "3", "--name", "B", "-q"), "B_qit")
    refused(cli("bucketize", policy, "--l", "3", "--name", "b", "-q"), "choose another --name or drop it")
    assert state(ws) == before


def test_a_release_table_is_not_another_writers_earlier_output(ws):
    """`maxent --name rel` took the anonymized release rel for its own earlier output (same owner name) and
    replaced it with raw quasi-identifiers beside inferred sensitive values. The catalog's kind is compared."""
    policy = write_policy(ws)
    assert cli("anonymize", policy, "-q").exit_code == 0
    before = state(ws)
    refused(cli("maxent", policy, "--name", "rel", "-q"), "it is the table of release rel, not a maxent output")
    assert state(ws) == before


def test_one_release_may_not_take_another_releases_table(ws):
    assert cli("bucketize", write_policy(ws), "--l", "3", "--name", "hb", "-q").exit_code == 0
    assert cli("bucketize", write_policy(ws), "--l", "3", "--name", "hb", "-q").exit_code == 0   # its own
    policy = write_policy(ws, name="hb_qit")
    before = state(ws)
    r = cli("anonymize", policy, "-q")
    refused(r, "hb_qit")
    assert "it belongs to release hb" in r.stderr
    assert state(ws) == before


# -- what a release may replace ---------------------------------------------------------------------------

def _catalog(db: Path) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute("SELECT * FROM sqlanon_releases ORDER BY seq, name")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]
    finally:
        con.close()


def test_a_release_replaces_its_own_earlier_release_and_the_catalog_holds_the_manifest(ws):
    policy = write_policy(ws, export=["out.csv"])
    r = cli("anonymize", policy)
    assert r.exit_code == 0, r.output
    manifest_path = ws / "rel.manifest.json"
    assert f"manifest: {manifest_path}" in r.output and "released table rel in" in r.output
    assert "zip_code     level 1 of 2: e.g. 14850 -> 1485*" in r.output
    assert "nationality  level 1 of 1: all values -> *" in r.output
    first = json.loads(manifest_path.read_text())
    r = cli("anonymize", policy, "-q")       # its own table, its own export, its own manifest: replaced
    assert r.exit_code == 0, r.output
    second = json.loads(manifest_path.read_text())
    assert second["release_id"] != first["release_id"]
    rows = _catalog(ws / "data.duckdb")
    assert [(r["seq"], r["name"], r["kind"]) for r in rows] == [
        (1, str((ws / "out.csv").resolve()), "export"), (1, "rel", "table"),
        (2, str((ws / "out.csv").resolve()), "export"), (2, "rel", "table")]
    main_rows = [r for r in rows if r["kind"] == "table"]
    assert json.loads(main_rows[-1]["manifest"]) == second         # the catalog row equals the manifest file
    assert json.loads(main_rows[0]["manifest"]) == first
    assert all(r["release"] == "rel" and r["rows"] == 12 for r in rows)
    assert json.loads(main_rows[-1]["node"]) == {"zip_code": 1, "age": 1, "nationality": 1}
    assert main_rows[-1]["policy_sha256"] == second["policy_sha256"]
    assert second["outputs"] == [{"kind": "table", "name": "rel", "rows": 12},
                                 {"kind": "csv", "name": str(ws / "out.csv"), "rows": 12}]


def test_replace_false_refuses_even_its_own_release(ws):
    assert cli("anonymize", write_policy(ws), "-q").exit_code == 0
    policy = write_policy(ws, replace=False)
    before = state(ws)
    refused(cli("anonymize", policy, "-q"), "release.replace: false")
    assert state(ws) == before


def test_force_replaces_a_file_sqlanon_did_not_write_but_never_the_source(ws):
    policy = write_policy(ws, export=["notes.csv"])
    r = cli("anonymize", policy, "-q", "--force")
    assert r.exit_code == 0, r.output
    assert (ws / "notes.csv").read_text().splitlines()[0] == "zip_code,age,nationality,condition"
    src = write_policy(ws, file="p2.yaml", source={"csv": "people.csv", "table": "people"}, export=["people.csv"],
                       name="rel2")
    refused(cli("anonymize", src, "-q", "--force", "--db", ws / "data.duckdb"), "it is the source")


def test_view_release_switching_to_table_drops_its_own_mapping_tables(ws):
    con = duckdb.connect(str(ws / "data.duckdb"))
    con.execute("DROP TABLE rel__map_0")
    con.close()
    assert cli("anonymize", write_policy(ws, materialize="view"), "-q").exit_code == 0
    assert {"rel", "rel__map_0", "rel__map_1", "rel__map_2"} <= set(db_state(ws / "data.duckdb"))
    assert cli("anonymize", write_policy(ws, materialize="table"), "-q").exit_code == 0
    names = set(db_state(ws / "data.duckdb"))
    assert "rel" in names and not any(n.startswith("rel__map") for n in names)
    dropped = [r["name"] for r in _catalog(ws / "data.duckdb") if r["kind"] == "dropped"]
    assert sorted(dropped) == ["rel__map_0", "rel__map_1", "rel__map_2"]


def test_a_view_release_records_no_table_of_suppressed_blocks_it_never_writes(ws):
    """A view release with suppressed classes recorded `<name>__suppressed` as its own, though only a table release
    writes such a table (a temporary one): a user's table of that name was then refused as a target, or dropped
    as the view's leftover by the next release. Catalogs written before keep such rows: the table they name is
    still left alone."""
    con = duckdb.connect(str(ws / "data.duckdb"))
    con.execute("DROP TABLE rel__map_0")
    con.close()
    path = write_policy(ws, materialize="view", k=5)
    policy = yaml.safe_load(path.read_text())
    policy["privacy"]["max_suppression"] = 0.34
    path.write_text(yaml.safe_dump(policy))
    assert cli("anonymize", path, "--json", ws / "m.json", "-q").exit_code == 0
    assert json.loads((ws / "m.json").read_text())["chosen"]["suppressed_rows"] > 0
    assert "suppressed" not in {r["kind"] for r in _catalog(ws / "data.duckdb")}
    # a catalog of the earlier code: the view's row copied as kind `suppressed`; then the user's table
    con = duckdb.connect(str(ws / "data.duckdb"))
    con.execute(f"INSERT INTO {CATALOG} SELECT seq, 'rel__suppressed', 'suppressed', release, release_id, "
                f"policy_sha256, node, rows, created, NULL FROM {CATALOG} WHERE name = 'rel'")
    con.execute("CREATE TABLE rel__suppressed AS SELECT 42 AS precious")
    con.close()
    policy["release"]["materialize"] = "table"
    path.write_text(yaml.safe_dump(policy))
    assert cli("anonymize", path, "-q").exit_code == 0
    assert db_state(ws / "data.duckdb")["rel__suppressed"][0] == 1
    # a view release of older code wrote the table of its suppressed blocks' codes (q<i>_<level>): that one is its
    # leftover, and dropped
    con = duckdb.connect(str(ws / "data.duckdb"))
    con.execute("DROP TABLE rel__suppressed")
    con.execute("CREATE TABLE rel__suppressed AS SELECT 1::BIGINT AS q0_1, 0::BIGINT AS q1_2")
    con.execute(f"INSERT INTO {CATALOG} SELECT seq, 'rel__suppressed', 'suppressed', release, release_id, "
                f"policy_sha256, node, rows, created, NULL FROM {CATALOG} WHERE name = 'rel' AND kind = 'table'")
    con.close()
    assert cli("anonymize", path, "-q").exit_code == 0
    assert "rel__suppressed" not in db_state(ws / "data.duckdb")


def test_names_like_a_temporary_name_are_never_touched(ws):
    """Tables and files were built under the target's name plus a suffix (`rel__sqlanon_tmp`,
    `rel.manifest.json.sqlanon_tmp`, `out.json.tmp`), dropped or overwritten first: a user's table or file of that
    name was lost. They are now built under sqlanon's own names (`__sqlanon_tmp_...`, a new hidden file)."""
    con = duckdb.connect(str(ws / "data.duckdb"))
    for t in ("rel__sqlanon_tmp", "bk_qit__sqlanon_tmp", "rel__marginal_1__sqlanon_tmp"):
        con.execute(f'CREATE TABLE "{t}" AS SELECT 42 AS precious')
    con.close()
    files = ["rel.manifest.json.sqlanon_tmp", "out.json.tmp", "rel.csv.sqlanon_tmp", "rel.csv.tmp"]
    for f in files:
        (ws / f).write_text("mine")
    path = write_policy(ws, export=["rel.csv"], marginals=[{"attributes": {"age": 1}}])
    assert cli("anonymize", path, "-q").exit_code == 0
    assert cli("bucketize", path, "--l", "2", "--name", "bk", "-q").exit_code == 0
    assert cli("risk", path, "--json", ws / "out.json").exit_code == 0
    state_after = db_state(ws / "data.duckdb")
    assert all(state_after[t][0] == 1 for t in ("rel__sqlanon_tmp", "bk_qit__sqlanon_tmp",
                                                 "rel__marginal_1__sqlanon_tmp"))
    assert not [t for t in state_after if t.startswith("__sqlanon_tmp")]
    assert [(ws / f).read_text() for f in files] == ["mine"] * 4
    assert (ws / "rel.csv").exists() and (ws / "rel.manifest.json").exists() and (ws / "out.json").exists()
    assert not [p for p in ws.iterdir() if p.name.startswith(".") and "sqlanon_tmp" in p.name]
    mask = os.umask(0o022)
    os.umask(mask)
    for written in ("rel.manifest.json", "out.json", "rel.csv"):      # the mode of any new file, not mkstemp's 0600
        assert (ws / written).stat().st_mode & 0o777 == 0o666 & ~mask, written
    # a file replaced keeps its own mode: a private one stays private
    for written in ("rel.manifest.json", "out.json"):
        (ws / written).chmod(0o600)
    assert cli("anonymize", path, "-q").exit_code == 0 and cli("risk", path, "--json", ws / "out.json").exit_code == 0
    assert [(ws / w).stat().st_mode & 0o777 for w in ("rel.manifest.json", "out.json")] == [0o600, 0o600]


def test_an_export_that_cannot_be_written_leaves_no_release(ws, monkeypatch):
    """Exports were written after the release committed: a file where the export's folder must be was a
    FileExistsError traceback, and a failed write left the release table and a catalog row for a file that did not
    exist (and no manifest). The folder is checked first; the files are written inside the transaction."""
    (ws / "out").write_text("mine")
    path = write_policy(ws, export=["out/rel.csv"])
    before = state(ws)
    refused(cli("anonymize", path, "-q"), "out is a file, not a folder")
    assert state(ws) == before
    from sqlanon.engines.duckdb import DuckDBBackend

    written = DuckDBBackend.export

    def failing(self, relation, path, fmt):      # the CSV is written, then the Parquet file fails
        if fmt == "csv":
            return written(self, relation, path, fmt)
        Path(path).write_text("half")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(DuckDBBackend, "export", failing)
    r = cli("anonymize", write_policy(ws, export=["fresh/sub/rel.csv", "rel.parquet"]), "-q")
    assert r.exit_code == 2 and "cannot write" in r.stderr and "No space left on device" in r.stderr, r.output
    after = state(ws)
    assert after[0] == before[0] and set(after[1]) == set(before[1]) | {"policy.yaml"}
    assert not (ws / "fresh").exists()          # the folders made for an export that failed
    monkeypatch.undo()
    long_name = "r" * 240 + ".parquet"         # near the file system's 255: the temporary name must fit too
    assert cli("anonymize", write_policy(ws, export=[f"new/{long_name}"]), "-q").exit_code == 0
    assert [p.name for p in (ws / "new").iterdir()] == [long_name]
    # past it: refused before anything is built (it failed in the rename after the release's commit)
    path = write_policy(ws, export=["other/" + "r" * 260 + ".csv"])
    before = state(ws)
    refused(cli("anonymize", path, "-q"), "the file name is longer than the 255 bytes the file system allows")
    assert state(ws) == before and not (ws / "other").exists()


def test_marginal_companions_follow_the_same_rule(ws):
    from sqlanon.anonymizer import Anonymization
    from sqlanon.catalog import ReleaseRefused
    from sqlanon.marginals.session import Marginals
    policy = write_policy(ws, marginals=[{"attributes": {"age": 1}, "name": "other"}])
    before = state(ws)
    with Anonymization(str(policy)) as run:
        run.choose()
        ms = Marginals(run)
        coll = ms.collection([ms.table(run.chosen.levels), *ms.policy_marginals()])
        with pytest.raises(ReleaseRefused, match="refusing to replace table other .*did not create it"):
            run.materialize([ms.companion(coll, skip=ms.table(run.chosen.levels))])
    assert state(ws) == before
    policy = write_policy(ws, marginals=[{"attributes": {"age": 1}, "name": "ages"}])
    for _ in range(2):   # its own marginal: replaced the second time
        with Anonymization(str(policy)) as run:
            run.choose()
            ms = Marginals(run)
            table = ms.table(run.chosen.levels)
            coll = ms.collection([table, *ms.policy_marginals()])
            outs = run.materialize([ms.companion(coll, skip=table)])
            assert [(o.kind, o.name) for o in outs] == [("table", "rel"), ("marginal", "ages")]
    kinds = [(r["seq"], r["name"], r["kind"]) for r in _catalog(ws / "data.duckdb")]
    assert kinds == [(1, "ages", "marginal"), (1, "rel", "table"), (2, "ages", "marginal"), (2, "rel", "table")]


# -- always a record --------------------------------------------------------------------------------------

def test_json_dash_prints_and_still_writes_the_default_manifest(ws):
    r = cli("anonymize", write_policy(ws), "--json", "-", "-q")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == json.loads((ws / "rel.manifest.json").read_text())


def test_a_kill_after_the_commit_leaves_the_catalog_record(ws):
    """The process dies (os._exit, like kill -9) after materialize committed, before the file is written."""
    script = ("import os, sys\nfrom sqlanon.anonymizer import Anonymization\n"
              "run = Anonymization(sys.argv[1])\nrun.choose()\nrun.materialize()\nos._exit(137)\n")
    done = subprocess.run([sys.executable, "-c", script, str(write_policy(ws))], cwd=ws, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 137, done.stderr
    assert not (ws / "rel.manifest.json").exists()
    rows = _catalog(ws / "data.duckdb")
    assert [(r["name"], r["kind"], r["rows"]) for r in rows] == [("rel", "table", 12)]
    manifest = json.loads(rows[0]["manifest"])
    assert manifest["chosen"]["levels"] == {"zip_code": 1, "age": 1, "nationality": 1}
    assert manifest["outputs"] == [{"kind": "table", "name": "rel", "rows": 12}]
    assert manifest["release_id"] == rows[0]["release_id"]
    assert db_state(ws / "data.duckdb")["rel"][0] == 12


def test_interrupt_exits_130_and_writes_nothing(ws, monkeypatch):
    assert cli("anonymize", write_policy(ws), "-q").exit_code == 0
    before = state(ws)
    import sqlanon.catalog

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    # inside the swap's transaction, after the drop and the rename: all of it must roll back
    monkeypatch.setattr(sqlanon.catalog.Catalog, "record", interrupted)
    policy = write_policy(ws, export=["out.csv"])
    before = state(ws)
    r = cli("anonymize", policy, "-q")
    assert r.exit_code == 130 and r.stderr.strip() == "sqlanon: interrupted"
    assert state(ws) == before          # the previous release and manifest, no tmp table, no catalog row, no export
    # a new database: not even the file is left
    r = cli("anonymize", write_policy(ws, file="p2.yaml", source={"csv": "people.csv", "table": "people"}),
            "--db", ws / "new.duckdb", "-q")
    assert r.exit_code == 130 and not (ws / "new.duckdb").exists()


def test_a_failed_run_creates_no_database(ws):
    policy = write_policy(ws, source={"csv": "people.csv", "table": "people"})
    raw = yaml.safe_load(policy.read_text())
    raw["privacy"]["k"] = 100
    policy.write_text(yaml.safe_dump(raw))
    r = cli("anonymize", policy, "-q")
    refused(r, "privacy.k")
    assert not (ws / "policy.duckdb").exists()
    assert cli("lattice", write_policy(ws, source={"csv": "people.csv", "table": "people"}), "-q").exit_code == 0
    assert not (ws / "policy.duckdb").exists()          # nothing released: nothing left
    r = cli("bucketize", write_policy(ws, source={"csv": "people.csv", "table": "people"}), "--l", "50", "-q")
    assert r.exit_code == 2, r.output
    assert not (ws / "policy.duckdb").exists()


# -- an edited manifest ------------------------------------------------------------------------------------

def _edited(ws, drop: tuple = ()) -> Path:
    m = json.loads((ws / "rel.manifest.json").read_text())
    m["policy"]["privacy"]["k"] = 2
    for key in drop:
        m.pop(key)
    path = ws / "edited.json"
    path.write_text(json.dumps(m))
    return path


@pytest.mark.parametrize("drop,needle", [((), "was edited after sqlanon wrote it"),
                                         (("policy_sha256",), "does not match release rel in sqlanon_releases"),
                                         (("policy_sha256", "release_id"), "does not match release rel")])
def test_apply_and_sql_refuse_an_edited_manifest(ws, drop, needle):
    assert cli("anonymize", write_policy(ws), "-q").exit_code == 0
    edited = _edited(ws, drop)
    before = state(ws)
    refused(cli("apply", edited, "--source", "people", "--name", "rel_new", "-q"), needle)
    refused(cli("sql", edited), needle)
    assert state(ws) == before
    # the manifest sqlanon wrote is accepted
    r = cli("apply", ws / "rel.manifest.json", "--source", "people", "--name", "rel_new", "--json",
            ws / "new.json", "-q")
    assert r.exit_code == 0, r.output
    assert cli("sql", ws / "rel.manifest.json").exit_code == 0


def test_an_edited_node_or_drift_limit_is_refused_too(ws):
    """The policy's hash does not cover the chosen node: `sql MANIFEST` printed an edited node as the release's,
    and `status` and `report` checked no hash at all (raising release.drift in the file turned a drifted view
    into exit 0). The catalog row's node is compared, and every reader of a manifest checks its hash."""
    assert cli("anonymize", write_policy(ws, name="vrel", materialize="view"), "-q").exit_code == 0
    m = json.loads((ws / "vrel.manifest.json").read_text())
    levels = m["chosen"]["levels"]
    (ws / "node.json").write_text(json.dumps({**m, "chosen": {**m["chosen"], "levels": dict.fromkeys(levels, 0)}}))
    needle = f"it records the node {dict.fromkeys(levels, 0)}, the release was made at {levels}"
    refused(cli("sql", ws / "node.json"), needle)
    refused(cli("apply", ws / "node.json", "--source", "people", "--name", "rel_new", "-q"), needle)
    refused(cli("status", ws / "node.json"), needle)
    m["policy"]["release"]["drift"] = {"max_suppressed": 1.0, "max_unknown": 1.0, "renode": False}
    (ws / "drift.json").write_text(json.dumps(m))
    for command in (["status"], ["report", "--out", ws / "r.html"]):
        refused(cli(*command, ws / "drift.json"), "was edited after sqlanon wrote it")
    assert not (ws / "r.html").exists()
    assert cli("status", ws / "vrel.manifest.json", "-q").exit_code == 0     # -q accepted, as by the others


def test_the_catalog_check_holds_from_any_folder_with_any_release_id(ws, monkeypatch, tmp_path_factory):
    """helper-34 got past the catalog check of a manifest: with a release_id the catalog never recorded; from
    another working folder (the manifest's relative database was looked for there: sql even opened another
    file); by `status` with the manifest of an earlier release of the view; by `risk --manifest`, which checked
    nothing. And `report --out --force` from another folder replaced the database it was to protect."""
    policy = write_policy(ws, name="vrel", source={"csv": "people.csv", "table": "people"})
    monkeypatch.chdir(ws)
    assert cli("anonymize", "policy.yaml", "--db", "out.duckdb", "--json", "old.json", "-q").exit_code == 0
    m = json.loads((ws / "old.json").read_text())
    assert m["database"] and not Path(m["database"]).is_absolute()      # written as given, relative
    edited = {**m, "chosen": {**m["chosen"], "levels": dict.fromkeys(m["chosen"]["levels"], 0)}}
    (ws / "forged.json").write_text(json.dumps({**edited, "release_id": "0" * 16}))
    (ws / "node.json").write_text(json.dumps(edited))
    refused(cli("sql", "forged.json"), "its release_id 0000000000000000 is not in that catalog")
    refused(cli("report", "forged.json", "--out", "f.html", "-q"), "is not in that catalog")
    refused(cli("risk", policy, "--manifest", "node.json"), "it was edited after sqlanon wrote it")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    before = state(ws)
    refused(cli("sql", ws / "node.json"), "it was edited after sqlanon wrote it")
    refused(cli("report", ws / "node.json", "--out", ws / "n.html", "-q"), "it was edited after sqlanon wrote it")
    refused(cli("report", ws / "old.json", "--out", ws / "out.duckdb", "--force", "-q"), "the release's database")
    assert state(ws) == before and list(elsewhere.iterdir()) == []          # no database made here
    monkeypatch.chdir(ws)
    view = write_policy(ws, file="view.yaml", name="vview", materialize="view")
    assert cli("anonymize", view, "--json", "v1.json", "-q").exit_code == 0
    assert cli("anonymize", write_policy(ws, file="view.yaml", name="vview", materialize="view", k=3), "--json",
               "v2.json", "-q").exit_code == 0
    refused(cli("status", "v1.json"), "is of an earlier release of the view vview")
    assert cli("status", "v2.json").exit_code == 0


def test_a_real_sigint_inside_the_swap_exits_130_and_writes_nothing(ws, tmp_path_factory):
    """SIGINT to a running `sqlanon anonymize`, delivered while its swap transaction is open (the catalog
    insert is made to wait for it): exit 130, one line, the previous release and everything else unchanged."""
    import signal
    import time
    assert cli("anonymize", write_policy(ws), "-q").exit_code == 0
    policy = write_policy(ws, export=["out.csv"])
    before = state(ws)
    marker = tmp_path_factory.mktemp("sigint") / "in_transaction"
    script = ("import sys, time, pathlib\nimport sqlanon.catalog as c\nmarker = pathlib.Path(sys.argv[2])\n"
              "def slow(self, *a, **k):\n    marker.write_text('in')\n    time.sleep(120)\n"
              "c.Catalog.record = slow\nfrom sqlanon.cli import main\n"
              "sys.argv = ['sqlanon', 'anonymize', sys.argv[1], '-q']\nmain()\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(policy), str(marker)], cwd=ws, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 240
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[1]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["sqlanon: interrupted"]
    assert state(ws) == before


def test_json_outputs_never_overwrite_a_file_that_is_not_json(ws):
    """`--json PATH` of the other commands (lattice, bucketize, attack...) shares one writer; bucketize checks
    the path before it writes its tables."""
    policy = write_policy(ws)
    before = state(ws)
    refused(cli("bucketize", policy, "--l", "3", "--name", "hb", "--json", ws / "people.csv", "-q"), "people.csv")
    assert state(ws) == before
    r = cli("bucketize", policy, "--l", "3", "--name", "hb", "--json", ws / "hb.json", "-q")
    assert r.exit_code == 0 and json.loads((ws / "hb.json").read_text())["tables"]["qit"] == "hb_qit"
    assert cli("bucketize", policy, "--l", "3", "--name", "hb", "--json", ws / "hb.json", "-q").exit_code == 0


def test_a_table_created_while_the_release_was_building_is_not_replaced(ws, monkeypatch):
    """Another writer creates the target name between the first check and the swap: the check is made again
    inside the transaction, so the release is refused and that table stays."""
    from sqlanon.anonymizer import Anonymization
    from sqlanon.catalog import ReleaseRefused
    with Anonymization(str(write_policy(ws, name="late"))) as run:
        run.choose()
        real = run.backend.execute

        def concurrent(template, params=None, **ctx):
            real(template, params, **ctx)
            if template == "release_table.sql":
                run.backend.con.execute("CREATE TABLE late AS SELECT 'theirs' AS owner")

        monkeypatch.setattr(run.backend, "execute", concurrent)
        with pytest.raises(ReleaseRefused, match="refusing to replace table late"):
            run.materialize()
    state_after = db_state(ws / "data.duckdb")
    assert state_after["late"][0] == 1 and not [t for t in state_after if "__sqlanon_tmp" in t] and CATALOG not in state_after


@pytest.mark.parametrize("name, file", [("sub/rel", "sub%2Frel.manifest.json"), ("/rel", "%2Frel.manifest.json"),
                                        ("a\\b%c", "a%5Cb%25c.manifest.json")])
def test_a_release_name_is_no_path_for_its_manifest(ws, name, file):
    """The default manifest is `<release>.manifest.json` beside the database. A name holding '/' made it a file
    in a folder that did not exist: the release was written, then the manifest failed with a traceback (or, for
    /rel, went to the root). Such characters are written %2F, %5C and %25 in the file's name."""
    r = cli("anonymize", write_policy(ws, name=name), "-q")
    assert r.exit_code == 0, r.output
    manifest = json.loads((ws / file).read_text())
    assert manifest["outputs"][0]["name"] == name
    con = duckdb.connect(str(ws / "data.duckdb"), read_only=True)
    assert con.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone() == (12,)
    con.close()


def test_duckdb_folds_the_case_of_ascii_letters_only(ws):
    """DuckDB holds "été" and "ÉTÉ" apart (it folds ASCII letters only): a release ÉTÉ beside the user's table
    été is a new name, and été stays as it was (lower() took them for one and refused the release)."""
    con = duckdb.connect(str(ws / "data.duckdb"))
    con.execute('CREATE TABLE "été" AS SELECT 1 AS x')
    con.close()
    before = db_state(ws / "data.duckdb")["été"]
    r = cli("anonymize", write_policy(ws, name="ÉTÉ"), "-q")
    assert r.exit_code == 0, r.output
    after = db_state(ws / "data.duckdb")
    assert after["été"] == before and after["ÉTÉ"][0] == 12


@pytest.mark.parametrize("args, needle", [
    (["bucketize", "{policy}", "--l", "3", "--name", "bb", "--json", "{ws}/no/such/r.json", "-q"],
     "--json: the folder"),
    (["maxent", "{policy}", "--name", "mm", "--json", "{policy}", "-q"], "the command reads it"),
    (["maxent", "{policy}", "--name", "mm", "--json", "{ws}/no/such/r.json", "-q"], "--json: the folder"),
    (["maxent", "{policy}", "--name", "mm", "--manifest", "{ws}/no/such/m.json", "-q"], "--manifest: the folder"),
])
def test_output_files_are_checked_before_any_table_is_written(ws, args, needle):
    """maxent checked its --json and --manifest only after writing its tables (a refusal, or a FileNotFoundError
    traceback, left them behind), and bucketize checked no folder."""
    policy = write_policy(ws)
    before = state(ws)
    refused(cli(*[a.format(ws=ws, policy=policy) for a in args]), needle)
    assert state(ws) == before


# -- JSON outputs never replace what a command reads, nor a release's manifest -----------------------------

JSON_OUTPUTS = [
    # (command and arguments; {target} is the file it must not replace)
    ["risk", "{policy}", "--json", "{target}"],
    ["attack", "{policy}", "-q", "--json", "{target}"],
    ["attack", "{policy}", "-q", "--manifest", "{target}"],
    ["bucketize", "{policy}", "--l", "2", "--name", "bj", "-q", "--json", "{target}"],
    ["maxent", "{policy}", "--no-write", "-q", "--json", "{target}"],
    ["maxent", "{policy}", "--no-write", "-q", "--manifest", "{target}"],
    ["marginals", "{policy}", "--no-release", "-q", "--json", "{target}"],
    ["schema", "--out", "{target}"],
]


@pytest.mark.parametrize("target", ["policy", "manifest", "user"])
@pytest.mark.parametrize("args", JSON_OUTPUTS, ids=lambda a: "-".join(x.strip("-{}") for x in a if x != "{policy}"))
def test_json_outputs_never_replace_the_policy_or_a_release_manifest(ws, args, target):
    """`--json`, `--manifest` and `schema --out` checked only that an existing file began with '{': a policy
    written in JSON (the loader reads one), the manifest of a release and any JSON file of the user's (a
    package.json) were replaced, exit 0, and `report` or `risk --manifest` then failed on the release. Refused
    before any work, exit 2, nothing changed."""
    policy = ws / "policy.json"
    policy.write_text(json.dumps(yaml.safe_load(write_policy(ws).read_text())))
    assert cli("anonymize", policy, "-q").exit_code == 0
    (ws / "package.json").write_text('{"name": "mine", "version": "1.0.0"}\n')
    path = {"policy": policy, "manifest": ws / "rel.manifest.json", "user": ws / "package.json"}[target]
    assert json.loads(path.read_text())       # a JSON file either way
    before = state(ws)
    r = cli(*[a.format(policy=policy, target=path) for a in args])
    refused(r, "choose another path")
    assert state(ws) == before


def test_attack_and_maxent_manifests_replace_their_own_but_json_to_stdout_is_json_alone(ws):
    """A manifest `attack --manifest` (or `maxent --manifest`) wrote records no outputs: a second run may replace it.
    `attack --json -` printed its text report on stdout before the JSON."""
    policy = write_policy(ws)
    for _ in range(2):
        r = cli("attack", policy, "-q", "--manifest", ws / "attacked.json")
        assert r.exit_code == 0, r.output
        r = cli("maxent", policy, "--no-write", "-q", "--manifest", ws / "maxent.json")
        assert r.exit_code == 0, r.output
    assert "attacks" in json.loads((ws / "attacked.json").read_text())
    assert "maxent" in json.loads((ws / "maxent.json").read_text())
    for args in (["--json", "-"], ["--minimal", "--json", "-"], ["--manifest", "-"]):
        r = cli("attack", policy, *args)
        assert r.exit_code == 0, r.output
        assert isinstance(json.loads(r.stdout), dict), r.stdout
    # a report sqlanon wrote says so first, and a later run replaces it
    for _ in range(2):
        assert cli("risk", policy, "--json", ws / "risk.json").exit_code == 0
    assert next(iter(json.loads((ws / "risk.json").read_text()))) == "sqlanon_report"


# what DuckDB raises when Ctrl-C lands: 2.0 a plain RuntimeError during a query (seen with a real SIGINT; when it
# lands is up to DuckDB, so no test sends one into a query), InterruptException for `interrupt()`, and an error
# whose text begins "KeyboardInterrupt" when it lands in a Python scan inside a query
INTERRUPTS = [RuntimeError("Query interrupted"), duckdb.InterruptException("INTERRUPT Error: Interrupted!"),
              duckdb.InvalidInputException("KeyboardInterrupt: "), KeyboardInterrupt()]


@pytest.mark.parametrize("error", INTERRUPTS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("wrapped", [False, True])
def test_ctrl_c_during_a_duckdb_query_is_an_interrupt(error, wrapped):
    """DuckDB 2.0 reports Ctrl-C during a query as RuntimeError "Query interrupted", not
    duckdb.InterruptException: a 40-line traceback and exit 1 (or, wrapped by a refused query or an export, exit 2
    "the database refused a query ...: KeyboardInterrupt" / "cannot write ...: Query interrupted"). Exit 130 and
    one line, whether the query ran under the backend's `_refused` or bare inside a command."""
    from sqlanon.cli.common import user_errors
    from sqlanon.engines.duckdb import _refused
    from sqlanon.errors import is_interrupt

    @user_errors
    def command():
        if wrapped:
            with _refused("x.sql"):
                raise error
        raise error
    with pytest.raises(SystemExit) as e:
        command()
    assert e.value.code == 130 and is_interrupt(error)
    assert not is_interrupt(RuntimeError("Query interrupted by the user's own UDF")) and not is_interrupt(
        duckdb.InvalidInputException("Invalid Input Error: no"))


@pytest.mark.parametrize("args", [
    ["anonymize", "{policy}", "-q", "--json", "{long}"],
    ["bucketize", "{policy}", "--l", "2", "--name", "bk", "-q", "--json", "{long}"],
    ["risk", "{policy}", "--json", "{long}"],
    ["schema", "--out", "{long}"],
])
def test_an_output_file_that_cannot_be_written_is_refused_before_the_release(ws, args, monkeypatch):
    """A manifest or report whose name the file system refuses (or in a folder that is not writable) failed with
    an OSError traceback after the release and its catalog row were committed. Refused first: one line, exit 2,
    nothing written."""
    policy = write_policy(ws)
    before = state(ws)
    long = ws / ("a" * 300 + ".json")
    refused(cli(*[a.format(policy=policy, long=long) for a in args]), "the file name is longer than")
    assert state(ws) == before
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != ws)     # as for a read-only folder
    refused(cli(*[a.format(policy=policy, long=ws / "out.json") for a in args]), "cannot write in the folder")
    assert state(ws) == before


def test_write_atomically_turns_a_refused_write_into_one_line(tmp_path):
    from sqlanon.errors import DataError
    from sqlanon.files import write_atomically
    with pytest.raises(DataError, match="cannot write .*: File name too long; choose another path"):
        write_atomically(tmp_path / ("a" * 300), "x")
    assert list(tmp_path.iterdir()) == []


def test_an_export_listed_twice_is_refused(ws):
    """`release.export: [same.csv, same.csv]` wrote the file twice, the second replacing the first."""
    policy = write_policy(ws, export=["same.csv", "./same.csv"])
    before = state(ws)
    refused(cli("anonymize", policy, "-q"), "release.export[1]")
    assert state(ws) == before


@pytest.mark.parametrize("json_path", ["same.csv", "sub/../same.csv"])
def test_a_manifest_at_an_export_path_is_refused(ws, json_path):
    """`--json out.csv` with `release.export: [out.csv]`: both were renamed into place after the commit, the
    manifest over the export, while the catalog recorded a 300-row CSV. Refused before the release."""
    (ws / "sub").mkdir(exist_ok=True)
    policy = write_policy(ws, export=["same.csv"])
    before = state(ws)
    refused(cli("anonymize", policy, "-q", "--json", ws / json_path), "is release.export[0]")
    assert state(ws) == before
    assert cli("anonymize", policy, "-q", "--json", ws / "m.json").exit_code == 0
    assert (ws / "same.csv").read_text().count("\n") > 1 and json.loads((ws / "m.json").read_text())


@pytest.mark.parametrize("where", ["NodeChecker", "Lattice"])
def test_an_interrupt_while_the_run_is_set_up_leaves_no_database_file(ws, monkeypatch, where):
    """The database was closed (and a new file removed) only when the frequency set failed: Ctrl-C while the
    node checker or the lattice was built left an empty DuckDB file, with "sqlanon: interrupted"."""
    import sqlanon.anonymizer

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(sqlanon.anonymizer, where, interrupted)
    policy = write_policy(ws, file="p2.yaml", source={"csv": "people.csv", "table": "people"})
    before = state(ws)
    r = cli("anonymize", policy, "--db", ws / "new.duckdb", "-q")
    assert r.exit_code == 130 and not (ws / "new.duckdb").exists()
    assert state(ws) == before


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_manifest_that_cannot_be_written_rolls_the_release_back(ws, monkeypatch, error):
    """The manifest file was written after the release committed: a full disk (or Ctrl-C) there left the release
    and its catalog row without the file. It is written inside the transaction, like the exports."""
    import sqlanon.files
    policy = write_policy(ws)
    before = state(ws)
    real = sqlanon.files.temporary_file

    def failing(path):
        if str(path).endswith(".manifest.json"):
            raise error
        return real(path)
    monkeypatch.setattr(sqlanon.files, "temporary_file", failing)
    r = cli("anonymize", policy, "-q")
    assert r.exit_code == (130 if isinstance(error, KeyboardInterrupt) else 2), r.output
    assert state(ws) == before            # no release table, no catalog row, no file
    monkeypatch.undo()
    assert cli("anonymize", policy, "-q").exit_code == 0 and (ws / "rel.manifest.json").exists()


def test_a_json_target_that_is_no_readable_regular_file_is_refused(ws):
    """`refuse_non_json` opens an existing target to see what it is: a named pipe blocked it for ever, and a file
    it may not read was an OSError traceback. Refused, one line."""
    import signal
    policy = write_policy(ws)
    os.mkfifo(ws / "pipe.json")
    before = state(ws)

    def blocked(*_):
        raise TimeoutError("blocked opening the pipe")
    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(30)            # a regression fails here instead of hanging the run
    try:
        refused(cli("risk", policy, "--json", ws / "pipe.json"), "it is not a regular file")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert state(ws) == before


def test_a_file_that_cannot_be_renamed_after_the_commit_says_where_its_text_is(tmp_path):
    """After the tables or the release commit, a JSON file that cannot be renamed into place is one line naming
    what is written, the path and the temporary file that holds the text (which is kept, not lost)."""
    from sqlanon.errors import DataError
    from sqlanon.files import remove_temporaries, rename_temporaries, write_temporary
    ok, blocked = tmp_path / "a.json", tmp_path / "b.json"
    blocked.mkdir()             # a folder of that name: the rename fails
    (blocked / "x").write_text("")
    staged = [(write_temporary(blocked, '{"b": 1}\n'), blocked), (write_temporary(ok, "{}\n"), ok)]
    with pytest.raises(DataError) as e:
        rename_temporaries(staged, "the tables of t are written")
    assert str(e.value).startswith(f"the tables of t are written, but {blocked} is not: ")
    assert str(e.value).endswith(f"it is in {staged[0][0]}")
    # the one after the failure renamed too, not left as a temporary file
    assert ok.read_text() == "{}\n" and staged[0][0].read_text() == '{"b": 1}\n'
    remove_temporaries([staged[0][0], tmp_path / "never-written"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


@pytest.mark.parametrize("error, raised", [
    (duckdb.TransactionException('Failed to commit: Could not write file "x.wal": File too large'), "DataError"),
    (KeyboardInterrupt(), "KeyboardInterrupt"),
    (duckdb.InterruptException("INTERRUPT Error: Interrupted!"), "KeyboardInterrupt"),
    (duckdb.FatalException("FATAL Error: Transaction COMMIT succeeded and is durable, but the autocheckpoint "
                           "failed"), None),
])
def test_a_commit_that_fails_rolls_back_and_is_one_line(error, raised):
    """A COMMIT refused (a full disk) was a TransactionException traceback; one interrupted (Ctrl-C) left the
    transaction open, so the cleanup's DROPs were rolled back at close and a __sqlanon_tmp table stayed; one DuckDB
    reports durable though its checkpoint failed was taken for a failure, and the manifest and exports the release
    had just recorded were deleted."""
    from sqlanon.engines.duckdb import _Transaction
    from sqlanon.errors import DataError
    sent = []

    class Connection:
        def execute(self, sql):
            sent.append(sql)
            if sql == "COMMIT":
                raise error
    if raised is None:
        with _Transaction(Connection()):
            pass
        assert sent == ["BEGIN TRANSACTION", "COMMIT"]
        return
    with pytest.raises(DataError if raised == "DataError" else KeyboardInterrupt) as e, _Transaction(Connection()):
        pass
    assert sent == ["BEGIN TRANSACTION", "COMMIT", "ROLLBACK"]
    if raised == "DataError":
        assert str(e.value).startswith("the database could not commit the change, so nothing of it was written: ")
