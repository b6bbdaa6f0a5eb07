"""`sqlanon dbt`: a real `dbt build` (dbt-duckdb, and dbt-postgres against the PostgreSQL server of
tests/test_engines.py) builds a model equal to sqlanon's release, and its schema tests pass; with the
model edited to stop generalizing one attribute, the build fails, and each test returns exactly the
classes that sqlanon's own checker (`sqlanon check --node`, one privacy model at a time) finds failing.
"""
from __future__ import annotations

import collections
import csv
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from sqlanon.anonymizer import Anonymization
from sqlanon.cli import main
from sqlanon.dbt import MARKER
from sqlanon.policy import load_policy

from conftest import ADULT, HOSPITAL
from test_engines import HOSPITAL_QIS, PG_PASSWORD, _one_line_error, postgres, unavailable  # noqa: F401

DBT = Path(sys.executable).parent / "dbt"
ADULT_QIS = {"age": {"hierarchy": "intervals", "widths": [5, 10, 20, 40]}, "sex": {"hierarchy": "suppress"},
             "race": {"hierarchy": "suppress"}, "marital_status": {"hierarchy": str(ADULT / "hierarchies" / "marital_status.csv")}}

# name -> (policy; each privacy model as a policy of its own, for the reference failing-class counts)
HOSPITAL_SOURCE = {"csv": str(HOSPITAL / "hospital.csv"), "table": "hospital"}
ADULT_SOURCE = {"parquet": str(ADULT / "adult.parquet"), "table": "adult"}
CASES = {
    # k, recursive (c,l), t-closeness (equal distance)
    "hospital": {"source": HOSPITAL_SOURCE, "quasi_identifiers": HOSPITAL_QIS, "sensitive": ["condition"],
                 "privacy": {"k": 4, "l_diversity": {"variant": "recursive", "l": 2, "c": 3},
                             "t_closeness": {"t": 0.6, "distance": "equal"}},
                 "utility": "discernibility", "release": {"name": "hospital_rel", "materialize": "table"}},
    # entropy l-diversity on occupation, t-closeness (ordered distance) on hours_per_week, a view
    "adult": {"source": ADULT_SOURCE, "quasi_identifiers": ADULT_QIS, "sensitive": ["occupation", "hours_per_week"],
              "privacy": {"k": 10, "l_diversity": {"variant": "entropy", "l": 3, "attribute": "occupation"},
                          "t_closeness": {"t": 0.05, "distance": "ordered", "attribute": "hours_per_week"}},
              "utility": "discernibility", "release": {"name": "adult_rel", "materialize": "view"}},
    # distinct l-diversity, and suppressed classes (the budget test)
    "hospital_suppressed": {"source": HOSPITAL_SOURCE, "quasi_identifiers": HOSPITAL_QIS, "sensitive": ["condition"],
                            "privacy": {"k": 5, "max_suppression": 0.34,
                                        "l_diversity": {"variant": "distinct", "l": 2}},
                            "utility": "discernibility", "release": {"name": "hospital_supp"}},
    # an entity key (a customer's orders count once), released so that the tests can count persons
    "orders": {"source": {"csv": None, "table": "orders"}, "entity_key": "customer",
               "quasi_identifiers": {"zip": {"hierarchy": "mask", "levels": 2},
                                     "age": {"hierarchy": "intervals", "widths": [10, 20]}},
               "sensitive": ["item"], "privacy": {"k": 4, "l_diversity": {"variant": "distinct", "l": 3},
                                                  "t_closeness": {"t": 0.35, "distance": "equal"}},
               "utility": "discernibility", "release": {"name": "orders_rel", "keep": ["customer"]}},
}
TEST_OF = {"k": "sqlanon_k_anonymity", "l_diversity": "sqlanon_l_diversity", "t_closeness": "sqlanon_t_closeness"}


def _rows(rows) -> collections.Counter:
    return collections.Counter(tuple(str(v) for v in row) for row in rows)


@pytest.fixture(scope="module")
def dbt_exe() -> Path:
    if not DBT.exists():
        unavailable("dbt", "pip install '.[dbt]' (dbt-core, dbt-duckdb, dbt-postgres; also in the test extra)")
    return DBT


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """Per case: the policy file, a manifest of sqlanon's release, its rows and chosen levels (DuckDB)."""
    folder = tmp_path_factory.mktemp("dbt_release")
    CASES["orders"]["source"]["csv"] = _write_orders(folder / "orders.csv")
    out = {}
    for name, policy in CASES.items():
        with Anonymization(load_policy(policy, base_dir=folder), db=":memory:") as run:
            run.search()
            run.score_minimal()
            run.choose()
            run.policy.release.materialize = "table"      # the reference rows (a file source has no view)
            run.materialize()                              # the manifest keeps the policy's own `materialize`
            assert bool(run.chosen.result.suppressed_rows) == (name == "hospital_suppressed")
            rows = _rows(run.backend.fetchall("select_all.sql", relation=policy["release"]["name"]))
            manifest = folder / f"{name}.json"
            manifest.write_text(json.dumps(run.manifest(), default=str))
            out[name] = {"manifest": manifest, "rows": rows, "levels": dict(run.chosen.levels)}
    return out


def _write_orders(path: Path) -> str:
    """80 customers with 1 to 3 orders each: a zip code and an age per customer, an item per order."""
    rng = random.Random(7)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["customer", "zip", "age", "item"])
        for c in range(80):
            zip_code, age = rng.choice(["13053", "13068", "14850", "14853", "14867"]), rng.randint(20, 69)
            for _ in range(rng.randint(1, 3)):
                w.writerow([f"c{c:02d}", zip_code, age, rng.choice(["shoes", "hat", "coat", "scarf"])])
    return str(path)


def _project(root: Path, profile: dict) -> Path:
    root.mkdir(parents=True)
    (root / "dbt_project.yml").write_text(yaml.safe_dump(
        {"name": "sqlanon_test", "version": "1.0", "config-version": 2, "profile": "sqlanon_test"}))
    (root / "profiles.yml").write_text(yaml.safe_dump(
        {"sqlanon_test": {"target": "dev", "outputs": {"dev": {**profile, "threads": 1}}}}))
    return root


def _dbt(exe: Path, project: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DBT_PROFILES_DIR=str(project), DBT_SEND_ANONYMOUS_USAGE_STATS="false",
               DBT_USE_COLORS="false", SQLANON_TEST_PG_PASSWORD=PG_PASSWORD)
    return subprocess.run([str(exe), *args, "--no-partial-parse"], check=False, cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)


def _generate(manifest: Path, project: Path, dialect: str, *extra: str):
    return CliRunner().invoke(main, ["dbt", str(manifest), "--project", str(project), "--dialect", dialect, *extra])


def _break(model: Path, levels: dict) -> tuple[str, dict]:
    """Edit the model to release one generalized attribute as it is; the node the edited model releases."""
    qi = next(q for q, level in levels.items() if level > 0)
    text = model.read_text()
    edited, n = re.subn(r'm\d+\."l\d+" AS "' + qi + '"', f'src."{qi}"', text)
    assert n == 1, text
    model.write_text(edited)
    return qi, {**levels, qi: 0}


def _reference_failures(name: str, node: dict, tmp_path: Path) -> dict[str, int]:
    """sqlanon's own count of failing classes at `node`, one privacy model at a time."""
    policy = CASES[name]
    out = {}
    for key, value in policy["privacy"].items():
        if key not in TEST_OF:
            continue
        single = tmp_path / f"{name}_{key}.yaml"
        single.write_text(yaml.safe_dump({**policy, "privacy": {key: value}}))
        node_text = ",".join(f"{q}={lvl}" for q, lvl in node.items())
        result = CliRunner().invoke(main, ["check", str(single), "--node", node_text, "--json"])
        assert result.exit_code in (0, 3), result.output
        out[TEST_OF[key]] = json.loads(result.output)["failing_classes"]
    return out


def _failures_by_test(tables: list[tuple[str, int]]) -> dict[str, int]:
    """Rows stored per failing test (dbt --store-failures), keyed by the generic test's name."""
    out = {}
    for table, rows in tables:
        test = next(t for t in (*TEST_OF.values(), "sqlanon_suppression") if table.startswith(t))
        if rows:                          # a test that passes stores an empty table
            out[test] = rows
    return out


def _check_build_then_break(exe, project, name, released, tmp_path, model_rows, stored_failures):
    """Build: the model equals the release and every test passes. Then break the model: the build fails and
    each test's failing classes are the ones sqlanon finds (for policies with no suppression budget)."""
    info = released[name]
    build = _dbt(exe, project, "build")
    assert build.returncode == 0, build.stdout[-4000:]
    n_tests = len([k for k in CASES[name]["privacy"] if k in TEST_OF]) + 1
    assert f"PASS={n_tests + 1} " in build.stdout, build.stdout[-2000:]
    release_name = CASES[name]["release"]["name"]
    assert model_rows(release_name) == info["rows"]

    model = project / "models" / "sqlanon" / f"{release_name}.sql"
    qi, node = _break(model, info["levels"])
    broken = _dbt(exe, project, "build", "--store-failures")
    assert broken.returncode != 0 and "FAIL" in broken.stdout, broken.stdout[-4000:]
    got = _failures_by_test(stored_failures())
    if CASES[name]["privacy"].get("max_suppression", 0) == 0:
        want = _reference_failures(name, node, tmp_path)
        assert {t: n for t, n in want.items() if n} == got, (qi, want, got)
        assert got, "the broken model fails no test"
    else:
        assert "sqlanon_k_anonymity" in got
    return model


@pytest.mark.parametrize("name", list(CASES))
def test_dbt_duckdb_model_is_the_release_and_tests_catch_a_broken_model(dbt_exe, released, tmp_path, name):
    db = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    con.execute("CREATE TABLE adult AS SELECT * FROM read_parquet(?)", [str(ADULT / "adult.parquet")])
    con.execute("CREATE TABLE orders AS SELECT * FROM read_csv(?)", [CASES["orders"]["source"]["csv"]])
    con.close()
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(db)})
    result = _generate(released[name]["manifest"], project, "duckdb")
    assert result.exit_code == 0, result.output

    def model_rows(relation):
        with duckdb.connect(str(db), read_only=True) as c:
            return _rows(c.execute(f'SELECT * FROM main."{relation}"').fetchall())

    def stored_failures():
        with duckdb.connect(str(db), read_only=True) as c:
            tables = [r[0] for r in c.execute("SELECT table_name FROM information_schema.tables "
                                              "WHERE table_schema = 'main_dbt_test__audit'").fetchall()]
            return [(t, c.execute(f'SELECT COUNT(*) FROM main_dbt_test__audit."{t}"').fetchone()[0]) for t in tables]

    _check_build_then_break(dbt_exe, project, name, released, tmp_path, model_rows, stored_failures)
    kind = CASES[name]["release"].get("materialize", "table")
    with duckdb.connect(str(db), read_only=True) as c:
        got_kind = c.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?",
                             [CASES[name]["release"]["name"]]).fetchone()[0]
    assert got_kind == ("VIEW" if kind == "view" else "BASE TABLE")


# (case, the table, the privacy models, the tests that pass at the release, a change of the live source, the
# tests it fails): classes are the labels as the model shows them, compared as text (-0.0 and 0.0 are two to a
# reader and to sqlanon; grouped by value, a published singleton '-0.0' passed), and a NULL is no sensitive value
# (counted, a class of one known value beside NULLs passed distinct 2-diversity; a view release withholds them)
LIVE_CHANGES = [
    ("-0.0 beside 0.0",
     "SELECT CAST(['0.0', '-0.0', '1.0'][1 + i // 5] AS DOUBLE) AS x, ['a', 'b', 'c', 'd', 'e'][1 + i % 5] AS s "
     "FROM range(15) r(i)",
     {"k": 3, "l_diversity": {"variant": "distinct", "l": 3}}, 3,
     "DELETE FROM t WHERE CAST(x AS VARCHAR) = '-0.0' AND s <> 'a'",          # one '-0.0' row left
     {"sqlanon_k_anonymity", "sqlanon_l_diversity"}),
    ("NULL sensitive values",
     "SELECT i // 4 AS x, ['a', 'b'][1 + i % 2] AS s FROM range(12) r(i)",
     {"k": 2, "l_diversity": {"variant": "distinct", "l": 2}, "t_closeness": {"t": 0.5, "distance": "equal"}}, 4,
     "UPDATE t SET s = CASE WHEN s = 'a' THEN 'a' END WHERE x = 2",           # 'a', 'a', NULL, NULL
     {"sqlanon_l_diversity"}),                                                # t: P = (1, 0), Q = (0.6, 0.4): 0.4
]


@pytest.mark.parametrize("case, table, privacy, tests, change, failing", LIVE_CHANGES, ids=[c[0] for c in LIVE_CHANGES])
def test_dbt_tests_judge_the_live_source_as_sqlanon_does(dbt_exe, tmp_path, case, table, privacy, tests, change,
                                                         failing):
    db = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE t AS {table}")
    con.close()
    policy = {"source": {"table": "t", "database": str(db)}, "quasi_identifiers": {"x": {"hierarchy": "suppress"}},
              "sensitive": ["s"], "privacy": privacy, "release": {"name": "rel", "materialize": "none"}}
    with Anonymization(policy, db=":memory:") as run:
        assert run.choose().levels == {"x": 0}
        manifest = tmp_path / "m.json"
        manifest.write_text(json.dumps(run.manifest(), default=str))
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(db)})
    assert _generate(manifest, project, "duckdb").exit_code == 0
    build = _dbt(dbt_exe, project, "build")
    assert build.returncode == 0 and f"PASS={tests + 1} " in build.stdout, build.stdout[-3000:]   # and the model
    con = duckdb.connect(str(db))
    con.execute(change)
    con.close()
    broken = _dbt(dbt_exe, project, "build")
    assert broken.returncode != 0, broken.stdout[-3000:]
    assert set(re.findall(r" FAIL \d+ (sqlanon_[a-z_]+?)_rel", broken.stdout)) == failing, broken.stdout[-3000:]


@pytest.mark.parametrize("name", ["hospital", "adult"])
def test_dbt_postgres_model_is_the_release_and_tests_catch_a_broken_model(dbt_exe, postgres, released,  # noqa: F811
                                                                         tmp_path, name):
    import psycopg
    schema = f"dbt_{name}"
    project = _project(tmp_path / "project", {
        "type": "postgres", "host": "127.0.0.1", "port": postgres.port, "user": "sqlanon",
        "password": "{{ env_var('SQLANON_TEST_PG_PASSWORD') }}", "dbname": "sqlanon", "schema": schema})
    # the source tables stay in public (the fixture's); the model and the test failures go to the target schema
    result = _generate(released[name]["manifest"], project, "postgres", "--source-schema", "public")
    assert result.exit_code == 0, result.output

    def model_rows(relation):
        with psycopg.connect(postgres.main_dsn) as c:
            return _rows(c.execute(f'SELECT * FROM {schema}."{relation}"').fetchall())

    def stored_failures():
        audit = f"{schema}_dbt_test__audit"
        with psycopg.connect(postgres.main_dsn) as c:
            tables = [r[0] for r in c.execute("SELECT table_name FROM information_schema.tables "
                                              "WHERE table_schema = %s", [audit]).fetchall()]
            return [(t, c.execute(f'SELECT COUNT(*) FROM "{audit}"."{t}"').fetchone()[0]) for t in tables]

    _check_build_then_break(dbt_exe, project, name, released, tmp_path, model_rows, stored_failures)


# -- never overwrite a file sqlanon did not write ---------------------------------------------------------

def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_regenerating_rewrites_only_its_own_files(released, tmp_path):
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(tmp_path / "w.duckdb")})
    manifest = released["hospital"]["manifest"]
    assert _generate(manifest, project, "duckdb").exit_code == 0
    written = json.loads((project / MARKER).read_text())["files"]
    assert sorted(written) == ["macros/sqlanon_tests.sql", "models/sqlanon/hospital_rel.sql",
                               "models/sqlanon/hospital_rel.yml"]
    before = _files(project)
    assert _generate(manifest, project, "duckdb").exit_code == 0       # unchanged files: rewritten, same text
    assert _files(project) == before

    model = project / "models" / "sqlanon" / "hospital_rel.sql"
    model.write_text(model.read_text() + "\n-- my change\n")          # edited since sqlanon wrote it
    edited = _files(project)
    result = CliRunner().invoke(main, ["dbt", str(manifest), "--project", str(project)])
    _one_line_error(result, "hospital_rel.sql was edited since sqlanon dbt wrote it")
    assert _files(project) == edited


def test_a_file_it_did_not_write_is_never_overwritten(released, tmp_path):
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(tmp_path / "w.duckdb")})
    mine = project / "macros" / "sqlanon_tests.sql"
    mine.parent.mkdir()
    mine.write_text("{% macro mine() %}1{% endmacro %}\n")
    before = _files(project)
    result = CliRunner().invoke(main, ["dbt", str(released["hospital"]["manifest"]), "--project", str(project)])
    _one_line_error(result, "sqlanon_tests.sql exists and was not written by sqlanon dbt")
    assert _files(project) == before                                   # nothing written, no marker


def _set_conf(project: Path, **conf) -> None:
    (project / "dbt_project.yml").write_text(yaml.safe_dump({**yaml.safe_load(
        (project / "dbt_project.yml").read_text()), **conf}))


# (case, how to spoil the project, the line's words): each stopped with a traceback, wrote outside the project or
# into a folder named by the first letter of a string, or left files behind it no longer owned
BAD_PROJECTS = [
    ("macros is a file", lambda p: (p / "macros").write_text("x"), "macros is a file, not a folder"),
    ("models/sqlanon is a file", lambda p: ((p / "models").mkdir(), (p / "models" / "sqlanon").write_text("x")),
     "sqlanon is a file, not a folder"),
    ("model-paths absolute", lambda p: _set_conf(p, **{"model-paths": ["/tmp/sqlanon_dbt_abs"]}),
     "model-paths '/tmp/sqlanon_dbt_abs' in"),
    ("model-paths outside", lambda p: _set_conf(p, **{"model-paths": ["../outside"]}), "is not inside the project"),
    ("model-paths a string", lambda p: _set_conf(p, **{"model-paths": "models"}),
     "model-paths in"),
    ("macro-paths a list of lists", lambda p: _set_conf(p, **{"macro-paths": [["m"]]}), "must be a list of folders"),
    ("dbt_project.yml a list", lambda p: (p / "dbt_project.yml").write_text("- a\n"), "holds a YAML list"),
]


@pytest.mark.parametrize("case, spoil, needle", BAD_PROJECTS, ids=[c[0] for c in BAD_PROJECTS])
def test_a_project_it_cannot_write_into_is_one_line_and_nothing_written(released, tmp_path, case, spoil, needle):
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(tmp_path / "w.duckdb")})
    spoil(project)
    before = _files(project)
    result = CliRunner().invoke(main, ["dbt", str(released["hospital"]["manifest"]), "--project", str(project)])
    _one_line_error(result, needle)
    assert _files(project) == before
    assert not (tmp_path / "outside").exists() and not Path("/tmp/sqlanon_dbt_abs").exists()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_files_named_like_a_temporary_file_are_left_alone(released, tmp_path):
    """Each file is written to a temporary file of its own beside it, then renamed: `X.sqlanon_tmp`, the fixed
    name it used, was overwritten and removed when it was a file of the user's."""
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(tmp_path / "w.duckdb")})
    folder = project / "models" / "sqlanon"
    folder.mkdir(parents=True)
    mine = [folder / "hospital_rel.sql.sqlanon_tmp", project / ".sqlanon-dbt.json.sqlanon_tmp",
            folder / "hospital_rel.sql.tmp"]
    for path in mine:
        path.write_text("mine")
    result = CliRunner().invoke(main, ["dbt", str(released["hospital"]["manifest"]), "--project", str(project)])
    assert result.exit_code == 0, result.output
    assert [p.read_text() for p in mine] == ["mine"] * 3
    assert (folder / "hospital_rel.sql").exists()
    assert not [p for p in project.rglob("*") if "sqlanon_tmp" in p.name and p not in mine]
    assert [oct(p.stat().st_mode & 0o777) for p in (folder / "hospital_rel.sql", project / ".sqlanon-dbt.json")] == \
        [oct(0o666 & ~_umask())] * 2      # as any new file (mkstemp's are 0600)


@pytest.mark.parametrize("failing", ["sqlanon_tests.sql", "hospital_rel.yml"])
def test_a_file_that_cannot_be_written_leaves_the_project_as_it_was(released, tmp_path, monkeypatch, failing):
    """The files were written one by one and the marker in a `finally`: a macros folder that could not be written
    left the model and its schema tests (which call the missing macros), recorded as sqlanon's. Every file is
    staged first, then all renamed in."""
    import sqlanon.dbt
    from sqlanon.errors import DataError
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(tmp_path / "w.duckdb")})
    before = _files(project)
    real = sqlanon.dbt.write_temporary

    def refused(path, text):
        if path.name == failing:
            raise DataError(f"cannot write {path}: Permission denied; choose another path")
        return real(path, text)
    monkeypatch.setattr(sqlanon.dbt, "write_temporary", refused)
    result = CliRunner().invoke(main, ["dbt", str(released["hospital"]["manifest"]), "--project", str(project)])
    assert result.exit_code == 2 and "Permission denied" in result.output, result.output
    assert _files(project) == before and not (project / "models" / "sqlanon").exists()
    monkeypatch.undo()
    result = CliRunner().invoke(main, ["dbt", str(released["hospital"]["manifest"]), "--project", str(project)])
    assert result.exit_code == 0 and (project / "macros" / "sqlanon_tests.sql").exists(), result.output


def test_a_models_folder_linked_elsewhere_is_written_through(released, tmp_path):
    """The paths of dbt_project.yml are read as written: a models folder the user links to a shared one is
    theirs (refused by the first check of paths, which resolved links)."""
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(tmp_path / "w.duckdb")})
    (tmp_path / "shared").mkdir()
    (project / "models").symlink_to(tmp_path / "shared")
    result = CliRunner().invoke(main, ["dbt", str(released["hospital"]["manifest"]), "--project", str(project), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "shared" / "sqlanon" / "hospital_rel.sql").is_file()


def test_not_a_dbt_project_and_untested_models_are_one_line(released, tmp_path):
    result = CliRunner().invoke(main, ["dbt", str(released["hospital"]["manifest"]), "--project", str(tmp_path)])
    _one_line_error(result, "has no dbt_project.yml")
    project = _project(tmp_path / "project", {"type": "duckdb", "path": str(tmp_path / "w.duckdb")})
    policy = tmp_path / "hier.yaml"
    policy.write_text(yaml.safe_dump({**CASES["hospital"], "privacy": {
        "k": 2, "l_diversity": {"variant": "entropy", "l": 1.5, "dont_care": ["Cancer"]}}}))
    result = CliRunner().invoke(main, ["dbt", str(policy), "--project", str(project), "-q"])
    _one_line_error(result, "privacy.l_diversity")
    hidden_key = tmp_path / "hidden_key.yaml"      # persons cannot be counted in a model without their key
    hidden_key.write_text(yaml.safe_dump({**CASES["orders"], "release": {"name": "orders_rel"}}))
    result = CliRunner().invoke(main, ["dbt", str(hidden_key), "--project", str(project), "-q"])
    _one_line_error(result, "add it to release.keep")
    quoted = tmp_path / "quoted.yaml"    # a name adapter.quote cannot quote: the tests would not parse
    quoted.write_text(yaml.safe_dump({**CASES["hospital"], "source": {
        "query": f"SELECT *, nationality AS \"na\"\"t\" FROM read_csv('{HOSPITAL / 'hospital.csv'}')"},
        "quasi_identifiers": {**HOSPITAL_QIS, 'na"t': {"hierarchy": "suppress"}}}))
    result = CliRunner().invoke(main, ["dbt", str(quoted), "--project", str(project), "--source", "hospital", "-q"])
    _one_line_error(result, "policy field 'quasi_identifiers': column 'na\"t' holds a quote")
    risky = tmp_path / "risk.yaml"      # named by its own field (it was said to be privacy.l_diversity)
    risky.write_text(yaml.safe_dump({**CASES["hospital"], "privacy": {"k": 2, "average_risk": 0.4}}))
    result = CliRunner().invoke(main, ["dbt", str(risky), "--project", str(project), "-q"])
    _one_line_error(result, "policy field 'privacy.average_risk': average_risk has no dbt test yet")
    assert not (project / MARKER).exists() and not (project / "models").exists()
