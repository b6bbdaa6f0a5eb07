"""Self-enforcing view releases (sqlanon/views.py): after the release, rows are inserted, updated and
deleted in the source, each change aimed at breaking the policy (a small class, a homogeneous class, a
class whose distribution is far from the table's, values unknown to the hierarchies); every read of the
view must still satisfy every model of the policy.

The reference is independent of the view's SQL: pandas generalizes the live source rows with the
hierarchy CSVs (an unknown value goes to '*'), measures every class with its own formulas (k, distinct,
entropy and recursive l-diversity, equal and ordered EMD against the live table) and keeps the rows
of passing classes; the view must return exactly those rows (so it neither leaks nor over-suppresses),
and the models are checked once more on the view's own rows.
"""
from __future__ import annotations

import csv
import json
import math
import re
from collections import Counter
from fractions import Fraction

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon import views
from sqlanon.anonymizer import Anonymization
from sqlanon.errors import PolicyError
from sqlanon.policy import load_policy

from conftest import HOSPITAL
from test_engines import PG_ENV, postgres, spark  # noqa: F401  (session fixtures)

QI = ["zip_code", "age", "nationality"]


def _taxonomy(path) -> dict[str, list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return {r[0]: r for r in rows[1:]}


ZIP = _taxonomy(HOSPITAL / "hierarchies" / "zip_code.csv")
AGE = _taxonomy(HOSPITAL / "hierarchies" / "age.csv")
NATIONALITIES = {"Russian", "American", "Japanese", "Indian"}


def base_frame() -> pd.DataFrame:
    """TKDD Figure 1 with a numeric sensitive column `cost` (for the ordered distance)."""
    df = pd.read_csv(HOSPITAL / "hospital.csv")
    df["cost"] = [(i * 7) % 5 * 100 for i in range(len(df))]
    return df


def generalize(df: pd.DataFrame, levels: dict[str, int]) -> pd.DataFrame:
    out = df.copy()
    for col, table in (("zip_code", ZIP), ("age", AGE)):
        lvl = levels[col]
        # a value missing from the hierarchy: its top '*', or NULL when the level is 0 (the original values)
        out[col] = [table[str(v)][lvl] if str(v) in table else ("*" if lvl else None) for v in df[col]]
    if levels["nationality"]:
        out["nationality"] = "*"
    else:
        out["nationality"] = [v if v in NATIONALITIES else None for v in df["nationality"]]
    return out


def class_ok(g: pd.DataFrame, privacy: dict, source: pd.DataFrame) -> bool:
    """Every model of `privacy` on one class, from its rows; Q of t-closeness is the live source's."""
    n = len(g)
    if n < privacy.get("k", 1):
        return False
    ld = privacy.get("l_diversity")
    if ld:
        counts = sorted(Counter(g["condition"]).values(), reverse=True)
        if ld["variant"] == "distinct" and len(counts) < ld["l"]:
            return False
        if ld["variant"] == "entropy":
            h = -sum(c / n * math.log(c / n) for c in counts)
            if h < math.log(ld["l"]) - 1e-9:
                return False
        if ld["variant"] == "recursive" and ld["l"] > 1 and not counts[0] < ld["c"] * sum(counts[ld["l"] - 1:]):
            return False
    tc = privacy.get("t_closeness")
    if tc:
        col = tc.get("attribute", "condition")
        domain = sorted(source[col].unique())
        q = source[col].value_counts(normalize=True)
        p = g[col].value_counts(normalize=True)
        diff = [p.get(v, 0.0) - q.get(v, 0.0) for v in domain]
        if tc["distance"] == "equal":
            d = sum(abs(x) for x in diff) / 2
        else:
            cum, d = 0.0, 0.0
            for x in diff:
                cum += x
                d += abs(cum)
            d = d / (len(domain) - 1) if len(domain) > 1 else 0.0
        if d > tc["t"] + 1e-9:
            return False
    return True


def judged(source: pd.DataFrame) -> pd.DataFrame:
    """The source rows a view judges: a row without a sensitive value is withheld (costs read back as integers,
    where a NULL had made the column float)."""
    return source.dropna(subset=["condition", "cost"]).astype({"cost": "int64"})


def expected_view(source: pd.DataFrame, levels: dict, privacy: dict) -> pd.DataFrame:
    source = judged(source)
    gen = generalize(source, levels)
    keep = gen.groupby(QI, dropna=False, group_keys=False).filter(lambda g: class_ok(g, privacy, source))
    return keep


def _rows(df: pd.DataFrame) -> Counter:
    return Counter(tuple(None if pd.isna(v) else str(v) for v in r) for r in df[QI + ["condition", "cost"]].itertuples(index=False))


def assert_view_keeps_policy(view_rows: pd.DataFrame, source: pd.DataFrame, levels: dict, privacy: dict) -> None:
    want = expected_view(source, levels, privacy)
    assert _rows(view_rows) == _rows(want)
    for _, g in view_rows.groupby(QI, dropna=False):
        assert class_ok(g, privacy, judged(source)), g


# -- the release -------------------------------------------------------------------------------------

PRIVACIES = {
    "k=4": {"k": 4},
    "k=2 distinct l=2": {"k": 2, "l_diversity": {"variant": "distinct", "l": 2}},
    "k=2 entropy l=1.8": {"k": 2, "l_diversity": {"variant": "entropy", "l": 1.8}},
    "k=2 recursive (3,2)": {"k": 2, "l_diversity": {"variant": "recursive", "l": 2, "c": 3}},
    "k=2 t=0.4 equal": {"k": 2, "t_closeness": {"t": 0.4, "distance": "equal"}},
    "k=2 t=0.3 ordered cost": {"k": 2, "t_closeness": {"t": 0.3, "distance": "ordered", "attribute": "cost"}},
    "k=3 recursive (2,3)": {"k": 3, "l_diversity": {"variant": "recursive", "l": 3, "c": 2}},
    "k=2 distinct l=2 + t=0.3 ordered cost": {"k": 2, "l_diversity": {"variant": "distinct", "l": 2},
                                              "t_closeness": {"t": 0.3, "distance": "ordered", "attribute": "cost"}},
}


def policy(source: dict, privacy: dict, **release) -> dict:
    return {"source": source,
            "quasi_identifiers": {"zip_code": {"hierarchy": str(HOSPITAL / "hierarchies" / "zip_code.csv")},
                                  "age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
                                  "nationality": {"hierarchy": "suppress"}},
            "sensitive": ["condition", "cost"], "privacy": privacy, "utility": "height",
            "release": {"name": "live_rel", "materialize": "view", **release}}


def duckdb_release(tmp_path, privacy: dict) -> tuple[str, dict]:
    db = str(tmp_path / "live.duckdb")
    con = duckdb.connect(db)
    con.register("base", base_frame())
    con.execute("CREATE TABLE live AS SELECT * FROM base")
    con.close()
    with Anonymization(policy({"database": db, "table": "live"}, privacy), db=db) as run:
        run.search()
        run.choose()
        run.materialize()
        levels = dict(run.chosen.levels)
    return db, levels


# Adversarial changes: (SQL, why). Values 13053 / 50 are known to the hierarchies; 99999, 77, 'Martian' not.
CHANGES = [
    ("INSERT INTO {t} VALUES (13053, 50, 'Indian', 'Cancer', 0)", "a class of 1 row (1305*/130**, [40, 60))"),
    ("INSERT INTO {t} VALUES (14853, 21, 'Russian', 'Cancer', 400)", "another class of 1 row"),
    ("INSERT INTO {t} SELECT 14850, 22 + i, 'American', 'Flu', 400 FROM range(4) t(i)",
     "a homogeneous class of 4 with a new condition and the largest cost"),
    ("INSERT INTO {t} VALUES (99999, 77, 'Martian', 'Cancer', 0)", "values unknown to every hierarchy"),
    ("INSERT INTO {t} SELECT 13068, 77 + i, 'Martian', 'Cancer', 0 FROM range(3) t(i)", "unknown ages"),
    ("UPDATE {t} SET condition = 'Cancer', cost = 0 WHERE zip_code = 14853", "a class made homogeneous"),
    ("DELETE FROM {t} WHERE zip_code = 14850 AND age = 47", "a class shrunk below k"),
    ("UPDATE {t} SET age = 55 WHERE zip_code = 13068 AND age = 29", "a row moved to another class"),
    ("INSERT INTO {t} SELECT 13053, 31 + i, 'Japanese', 'Cancer', 0 FROM range(6) t(i)",
     "a class pushed far from the table's distribution"),
    # a NULL counted as a value passed for a second distinct one beside the class's only known value
    ("INSERT INTO {t} SELECT 14850, 61 + i, 'Indian', CASE WHEN i = 0 THEN 'Flu' END, 100 FROM range(4) t(i)",
     "a class of 4 holding one known condition and three NULLs"),
    ("INSERT INTO {t} SELECT 13068, 62 + i, 'Indian', 'Cancer', CASE WHEN i = 0 THEN 300 END FROM range(4) t(i)",
     "a class of 4 holding one known cost and three NULLs"),
]


@pytest.mark.parametrize("case", list(PRIVACIES))
def test_duckdb_view_keeps_policy_through_adversarial_changes(tmp_path, case):
    privacy = PRIVACIES[case]
    db, levels = duckdb_release(tmp_path, privacy)
    con = duckdb.connect(db)
    try:
        source = con.execute("SELECT * FROM live").df()
        assert_view_keeps_policy(con.execute("SELECT * FROM live_rel").df(), source, levels, privacy)
        shown_before = con.execute("SELECT COUNT(*) FROM live_rel").fetchone()[0]
        assert shown_before > 0
        for sql, why in CHANGES:
            con.execute(sql.format(t="live"))
            source = con.execute("SELECT * FROM live").df()
            view = con.execute("SELECT * FROM live_rel").df()
            assert_view_keeps_policy(view, source, levels, privacy), why
    finally:
        con.close()


def test_issue_example_a_known_row_no_longer_shows_a_class_of_one(tmp_path):
    """The issue: hospital, k = 4, one row (13053, 50) inserted; the view showed a class of 1 row
    (here 130**, >=40, *: this hierarchy's labels)."""
    db, _ = duckdb_release(tmp_path, {"k": 4})
    con = duckdb.connect(db)
    try:
        before = con.execute("SELECT COUNT(*) FROM live_rel").fetchone()[0]
        con.execute("INSERT INTO live VALUES (13053, 50, 'Indian', 'Cancer', 0)")
        sizes = con.execute(f"SELECT COUNT(*) FROM live_rel GROUP BY {', '.join(QI)}").fetchall()
        assert before == 12 and min(n for (n,) in sizes) >= 4
        assert con.execute("SELECT COUNT(*) FROM live_rel").fetchone()[0] == 12   # the new row is held back
        # three more rows of that class make it 4-anonymous: now all 4 show
        con.execute("INSERT INTO live VALUES (13068, 47, 'Indian', 'Flu', 0), (13053, 49, 'Japanese', 'Flu', 0), "
                    "(13068, 55, 'Russian', 'Cancer', 200)")
        assert con.execute("SELECT COUNT(*) FROM live_rel").fetchone()[0] == 16
        # an unknown age is not dropped silently: released at '*', counted, held back as a class of 1
        con.execute("INSERT INTO live VALUES (13053, 99, 'Indian', 'Flu', 0)")
        cov = views.coverage(_Duck(con), "live_rel", "live", [(q, f"live_rel__map_{i}") for i, q in enumerate(QI)])
        assert cov == {"source_rows": 17, "view_rows": 16, "suppressed_rows": 1, "unknown_rows": 1,
                       "suppressed_share": 1 / 17, "unknown_share": 1 / 17}
    finally:
        con.close()


class _Duck:
    """The two Backend calls `views.coverage` makes, over a plain DuckDB connection."""

    def __init__(self, con):
        self.con = con

    def fetchrow(self, template, **ctx):
        from sqlanon import templates
        return self.con.execute(templates.render_for(template, **ctx)).fetchone()


OPS = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.sampled_from([13053, 13068, 14850, 14853, 99999]),
              st.sampled_from([21, 28, 35, 47, 50, 55, 60, 77]),
              st.sampled_from(["Russian", "American", "Indian", "Martian"]),
              st.sampled_from(["Cancer", "Flu", "Heart Disease", "Viral Infection"]), st.sampled_from([0, 200, 400])),
    st.tuples(st.just("delete"), st.integers(0, 30))), min_size=1, max_size=12)


@pytest.fixture(scope="module")
def hypothesis_releases(tmp_path_factory):
    out = {}
    for case in ("k=4", "k=2 entropy l=1.8", "k=2 t=0.3 ordered cost", "k=3 recursive (2,3)"):
        out[case] = duckdb_release(tmp_path_factory.mktemp(case.replace(" ", "_").replace("=", "")), PRIVACIES[case])
    buckets = views.ORDERED_BUCKETS
    views.ORDERED_BUCKETS = 0           # the ordered EMD computed exactly for every class, without bounds first
    try:
        out["k=2 t=0.3 ordered cost, exact"] = duckdb_release(tmp_path_factory.mktemp("ordered_exact"),
                                                              PRIVACIES["k=2 t=0.3 ordered cost"])
    finally:
        views.ORDERED_BUCKETS = buckets
    return out


@pytest.mark.parametrize("case", ["k=4", "k=2 entropy l=1.8", "k=2 t=0.3 ordered cost", "k=3 recursive (2,3)"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_duckdb_view_random_inserts_and_deletes(hypothesis_releases, case, ops):
    db, levels = hypothesis_releases[case]
    con = duckdb.connect(db)
    try:
        con.execute("BEGIN")
        for op in ops:
            if op[0] == "insert":
                con.execute("INSERT INTO live VALUES (?, ?, ?, ?, ?)", list(op[1:]))
            else:
                con.execute("DELETE FROM live WHERE rowid = (SELECT rowid FROM live ORDER BY rowid LIMIT 1 OFFSET ?)",
                            [op[1]])
            source = con.execute("SELECT * FROM live").df()
            assert_view_keeps_policy(con.execute("SELECT * FROM live_rel").df(), source, levels, PRIVACIES[case])
    finally:
        con.execute("ROLLBACK")
        con.close()


@pytest.mark.parametrize("privacy, field", [
    ({"k": 2, "t_closeness": {"t": 0.4, "distance": "hierarchical"}}, "privacy.t_closeness.distance"),
    ({"k": 2, "l_diversity": {"variant": "recursive", "l": 2, "c": 3, "dont_care": ["Flu"]}},
     "privacy.l_diversity.dont_care"),
    ({"k": 2, "l_diversity": {"variant": "recursive", "l": 2, "c": 3,
                              "no_negative_disclosure": {"c2": 2, "values": ["Flu"]}}},
     "privacy.l_diversity.no_negative_disclosure"),
    ({"k": 2, "l_diversity": {"variant": "distinct", "l": 2, "attribute": "all"}}, "privacy.l_diversity.attribute"),
])
def test_view_refuses_what_it_cannot_enforce(tmp_path, privacy, field):
    db = str(tmp_path / "r.duckdb")
    con = duckdb.connect(db)
    frame = base_frame()
    frame.loc[0, "condition"] = "Flu"
    con.register("base", frame)
    con.execute("CREATE TABLE live AS SELECT * FROM base")
    con.close()
    pol = policy({"database": db, "table": "live"}, privacy)
    pol["sensitive"] = {"condition": {"hierarchy": "suppress"}, "cost": None}
    # refused when the policy loads: before the search, not after it
    with pytest.raises(PolicyError, match=f"'{field}'.*use release.materialize: table"):
        Anonymization(pol, db=db)
    # the same refusal from the criteria, for a caller that builds a view of an already-loaded policy
    table_pol = load_policy({**pol, "release": {"name": "live_rel", "materialize": "table"}})
    with Anonymization(table_pol, db=db) as run, \
            pytest.raises(PolicyError, match=f"'{field}'.*use release.materialize: table"):
        views.enforcement(run.policy, views.view_criteria(run.policy, run.fs))
    con = duckdb.connect(db)
    assert con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'live_rel%'").fetchone()[0] == 0
    con.close()


def test_num_filter_renders_only_numbers():
    from sqlanon.templates import _num
    assert _num(0.3) == "0.3" and _num(4) == "4.0" and _num(-1.5) == "(-1.5)"
    for bad in ("1; DROP TABLE x", float("nan"), float("inf"), True):
        with pytest.raises(ValueError):
            _num(bad)


# -- PostgreSQL and Spark -------------------------------------------------------------------------

ENGINE_CASES = ["k=2 recursive (3,2)", "k=2 t=0.4 equal", "k=2 t=0.3 ordered cost", "k=3 recursive (2,3)",
                "k=2 distinct l=2 + t=0.3 ordered cost"]


def _engine_changes(engine: str, table: str) -> list[str]:
    rng = "generate_series(0, {n}) AS t(i)" if engine == "postgres" else "range(0, {m}) AS t(i)"
    out = []
    for sql, _ in CHANGES:
        sql = sql.format(t=table)
        if "range(" in sql:
            n = int(sql.split("range(")[1].split(")")[0])
            sql = sql.split("FROM range(")[0] + "FROM " + rng.format(n=n - 1, m=n)
        out.append(sql)
    return out


@pytest.mark.parametrize("case", ENGINE_CASES)
def test_postgres_view_keeps_policy(postgres, tmp_path, case):  # noqa: F811
    import psycopg

    from sqlanon.engines.postgres import PostgresBackend
    table = "live_" + str(ENGINE_CASES.index(case))
    privacy = PRIVACIES[case]
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        con.execute(f'DROP VIEW IF EXISTS "{table}_rel"')
        con.execute(f'DROP TABLE IF EXISTS "{table}"')
        PostgresBackend(con, owned=False).create_table_from_frame(table, base_frame(), temp=False)
    pol = policy({"engine": "postgres", "dsn_env": PG_ENV, "table": table}, privacy, name=f"{table}_rel")
    with Anonymization(pol, db=tmp_path / "x.duckdb") as run:
        run.search()
        run.choose()
        run.materialize()
        levels = dict(run.chosen.levels)
    with psycopg.connect(postgres.main_dsn, autocommit=True) as con:
        def frame(rel):
            cur = con.execute(f'SELECT * FROM "{rel}"')
            return pd.DataFrame(cur.fetchall(), columns=[d.name for d in cur.description])
        assert_view_keeps_policy(frame(f"{table}_rel"), frame(table), levels, privacy)
        for sql in _engine_changes("postgres", table):
            con.execute(sql)
            assert_view_keeps_policy(frame(f"{table}_rel"), frame(table), levels, privacy)


def test_spark_view_keeps_policy(spark, tmp_path):  # noqa: F811
    case = "k=2 t=0.3 ordered cost"
    privacy = PRIVACIES[case]
    table = "live_spark"
    spark.sql(f"DROP VIEW IF EXISTS {table}_rel")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.createDataFrame(base_frame()).write.saveAsTable(table)
    pol = policy({"engine": "spark", "master": "local[2]", "table": table}, privacy, name=f"{table}_rel")
    with Anonymization(pol, db=tmp_path / "x.duckdb") as run:
        run.search()
        run.choose()
        run.materialize()
        levels = dict(run.chosen.levels)
    assert spark.catalog.getTable(f"{table}_rel").tableType == "VIEW"
    assert_view_keeps_policy(spark.table(f"{table}_rel").toPandas(), spark.table(table).toPandas(), levels, privacy)
    # Spark tables take INSERT (UPDATE / DELETE need Delta): the inserting changes, then an overwrite that deletes
    for sql in _engine_changes("spark", table):
        if sql.startswith("INSERT"):
            spark.sql(sql)
            assert_view_keeps_policy(spark.table(f"{table}_rel").toPandas(), spark.table(table).toPandas(),
                                     levels, privacy)
    kept = spark.table(table).toPandas()
    kept = kept[~((kept.zip_code == 14850) & (kept.age == 47))]
    spark.createDataFrame(kept).write.mode("overwrite").saveAsTable(table + "_tmp")
    spark.sql(f"INSERT OVERWRITE TABLE {table} SELECT * FROM {table}_tmp")
    assert_view_keeps_policy(spark.table(f"{table}_rel").toPandas(), spark.table(table).toPandas(), levels, privacy)


# -- coverage and drift: `sqlanon check --table VIEW` and `sqlanon status MANIFEST` ---------------------

def _cli_release(tmp_path, drift: dict, schema: str | None = None) -> tuple:
    """A view release of the table live (in `schema`, and the release there too, when given)."""
    import yaml
    from click.testing import CliRunner

    from sqlanon.cli import main
    db = tmp_path / "h.duckdb"
    con = duckdb.connect(str(db))
    con.register("base", base_frame())
    at = f"{schema}." if schema else ""
    if schema:
        con.execute(f"CREATE SCHEMA {schema}")
    con.execute(f"CREATE TABLE {at}live AS SELECT * FROM base")
    con.close()
    pol = policy({"database": str(db), "table": f"{at}live"}, {"k": 4}, drift=drift, name=f"{at}live_rel")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(pol, sort_keys=False))
    runner = CliRunner()
    r = runner.invoke(main, ["anonymize", str(tmp_path / "p.yaml"), "--json", str(tmp_path / "m.json"), "-q"])
    assert r.exit_code == 0, r.output

    def run(*args):
        return runner.invoke(main, list(args))

    def sql(text):
        c = duckdb.connect(str(db))
        c.execute(text)
        c.close()
    return run, sql, str(tmp_path / "p.yaml"), str(tmp_path / "m.json")


def test_status_refuses_a_view_replaced_since_the_release(tmp_path):
    """A user's view made under the release's name: status measured it as the release (its 1 row against the
    source's 12: "11 rows suppressed at read time", drifted, exit 3)."""
    run, sql, pol, manifest = _cli_release(tmp_path, {"max_suppressed": 0.1})
    sql("CREATE OR REPLACE VIEW live_rel AS SELECT 1 AS x")
    r = run("status", manifest, "--json")
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == ("sqlanon: error: the view live_rel is not the view sqlanon released (it has no column "
                                "'zip_code'): it was replaced since; release again, or give the release's database "
                                "with --db")


@pytest.mark.parametrize("schema", [None, "s"])
def test_status_and_check_report_rows_suppressed_at_read_time_and_unknown_values(tmp_path, schema):
    """Also with the source and the release in another schema (s.live, s.live_rel): the coverage query quoted
    each name as one identifier ("s.live"), and status and check --table stopped with a catalog error."""
    run, sql, pol, manifest = _cli_release(tmp_path, {"max_suppressed": 0.1, "max_unknown": 0.2}, schema)
    at = f"{schema}." if schema else ""
    r = run("status", manifest, "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert (got["source_rows"], got["view_rows"], got["suppressed_rows"], got["unknown_rows"]) == (12, 12, 0, 0)
    assert got["drifted"] is False and "new_levels" not in got
    # one known row (a class of 1, held back) and one with an unknown age (released at '*', held back)
    sql(f"INSERT INTO {at}live VALUES (13053, 50, 'Indian', 'Cancer', 0), (13053, 77, 'Indian', 'Flu', 0)")
    r = run("status", manifest, "--json")
    got = json.loads(r.output)
    assert (got["source_rows"], got["view_rows"], got["suppressed_rows"], got["unknown_rows"]) == (14, 12, 2, 1)
    assert r.exit_code == 3 and got["drifted"] and len(got["reasons"]) == 1 and "max_suppressed" in got["reasons"][0]
    r = run("check", pol, "--table", f"{at}live_rel")
    assert r.exit_code == 3
    assert "suppressed at read time: 2 rows (14.29%" in r.output and "unknown to the mapping tables: 1 source rows" in r.output
    assert "satisfies the policy" in r.output   # what the view shows does; the drift makes the exit code 3


@pytest.mark.parametrize("release", ["s.live_rel", "s.live"])
def test_a_view_in_another_schema_reads_the_source_the_run_judged(tmp_path, release):
    """The view named its source as the policy wrote it, `live`, which a view resolves in its own schema first:
    a release `s.live_rel` read the user's `s.live` (other rows, never judged) instead of `main.live`, and a
    release `s.live` read itself. The view names the table the bare name resolves to when it is released."""
    import yaml
    from click.testing import CliRunner

    from sqlanon.cli import main
    db = tmp_path / "h.duckdb"
    con = duckdb.connect(str(db))
    con.register("base", base_frame())
    con.execute("CREATE TABLE live AS SELECT * FROM base")
    con.execute("CREATE SCHEMA s")
    if release != "s.live":
        con.execute("CREATE TABLE s.live AS SELECT * FROM base LIMIT 3")
    con.close()
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy({"database": str(db), "table": "live"}, {"k": 4},
                                                           name=release), sort_keys=False))
    r = CliRunner().invoke(main, ["anonymize", str(tmp_path / "p.yaml"), "-q"])
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(db))
    assert con.execute(f"SELECT COUNT(*) FROM {release}").fetchone()[0] == len(base_frame())
    con.execute("INSERT INTO s.live SELECT * FROM main.live" if release != "s.live" else "SELECT 1")
    assert con.execute(f"SELECT COUNT(*) FROM {release}").fetchone()[0] == len(base_frame())
    con.close()


def test_status_renode_sees_that_a_new_search_would_choose_another_node(tmp_path):
    run, sql, _, manifest = _cli_release(tmp_path, {"max_suppressed": 0.5, "renode": True})
    r = run("status", manifest, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["new_levels"] == {"zip_code": 1, "age": 1, "nationality": 1}
    sql("INSERT INTO live SELECT l.* FROM live AS l, range(4)")   # every row 5 times: the original table is 4-anonymous
    r = run("status", manifest, "--json")
    got = json.loads(r.output)
    assert r.exit_code == 3 and got["new_levels"] == {"zip_code": 0, "age": 0, "nationality": 0}
    assert got["suppressed_rows"] == 0 and got["reasons"] == [
        ("a new search chooses another node ({'zip_code': 0, 'age': 0, 'nationality': 0}, released "
         "{'zip_code': 1, 'age': 1, 'nationality': 1})")]
    assert run("status", manifest, "--no-renode").exit_code == 0


@pytest.mark.parametrize("drift, message", [
    ({"max_suppressed": 2}, "release.drift.max_suppressed"),
    ({"renode": "yes"}, "release.drift.renode"),
    ({"max_rows": 1}, "release.drift.max_rows"),
])
def test_bad_drift_limits_are_refused(drift, message):
    with pytest.raises(PolicyError, match=message):
        views.parse_drift(drift)


def test_report_says_what_the_view_suppresses_at_read_time(tmp_path):
    run, sql, _, manifest = _cli_release(tmp_path, {"max_suppressed": 0.1})
    sql("INSERT INTO live VALUES (13053, 50, 'Indian', 'Cancer', 0)")
    out = tmp_path / "r.html"
    r = run("report", manifest, "--out", str(out), "-q")
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert 'id="view-coverage"' in page
    import re
    text = " ".join(re.sub(r"<[^>]+>", "", page.split("id=\"view-coverage\">")[1].split("</p>")[0]).split())
    assert "(13 rows now): 1 rows are suppressed at read time" in text and "0 rows hold values unknown" in text


@pytest.mark.parametrize("case", ["k=2 recursive (3,2)", "k=2 t=0.3 ordered cost", "k=2 t=0.4 equal"])
def test_duckdb_view_with_one_key_column_per_quasi_identifier(tmp_path, monkeypatch, case):
    """Classes keyed by one column per quasi-identifier (when the packed BIGINT key would overflow)."""
    monkeypatch.setattr(views, "packed_key", lambda fs, qis: None)
    privacy = PRIVACIES[case]
    db, levels = duckdb_release(tmp_path, privacy)
    con = duckdb.connect(db)
    try:
        assert "__sqlanon_k2" in con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'live_rel'").fetchone()[0]
        for sql, _ in CHANGES:
            con.execute(sql.format(t="live"))
            assert_view_keeps_policy(con.execute("SELECT * FROM live_rel").df(), con.execute("SELECT * FROM live").df(),
                                     levels, privacy)
    finally:
        con.close()


# -- `sqlanon sql` of a view release: the CREATE VIEW the release runs ---------------------------------

@pytest.mark.parametrize("case", ["k=4", "k=2 recursive (3,2)", "k=2 t=0.3 ordered cost"])
def test_sql_prints_the_enforcing_view_the_release_creates(tmp_path, case):
    """`sqlanon sql POLICY` of a view release prints CREATE VIEW of the self-enforcing view (mapping tables
    inline): run on a database holding only the source table, it shows what the released view shows, after
    every adversarial change too; the PostgreSQL and Spark dialects are what sqlglot makes of the same view."""
    import sqlglot
    import yaml
    from click.testing import CliRunner

    from sqlanon.cli import main
    privacy = PRIVACIES[case]
    db, levels = duckdb_release(tmp_path, privacy)
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy({"database": db, "table": "live"}, privacy), sort_keys=False))
    r = CliRunner().invoke(main, ["sql", str(tmp_path / "p.yaml"), "-q"])
    assert r.exit_code == 0, r.output
    script = r.output
    assert "in the duckdb dialect" in script and 'CREATE OR REPLACE VIEW "live_rel"' in script
    assert "live_rel__map" not in script                     # self-contained: the mapping tables are inline
    for dialect in ("postgres", "spark"):
        r = CliRunner().invoke(main, ["sql", str(tmp_path / "p.yaml"), "--dialect", dialect, "-q"])
        assert r.exit_code == 0 and f"in the {dialect} dialect" in r.output
        body = "\n".join(line for line in r.output.splitlines() if not line.startswith("--"))
        assert isinstance(sqlglot.parse_one(body.rstrip().rstrip(";"), read=dialect), sqlglot.exp.Create)
        if "ordered" in case:
            # the ordered EMD bounded from buckets first, except on Spark (its views inline every CTE reference)
            assert ("__sqlanon_cb" in body) == (dialect != "spark") and ("__sqlanon_cb" in script)
    other = duckdb.connect(str(tmp_path / "only_source.duckdb"))
    con = duckdb.connect(db)
    try:
        other.register("base", base_frame())
        other.execute("CREATE TABLE live AS SELECT * FROM base")
        other.execute(script)

        def same() -> None:
            assert _rows(other.execute("SELECT * FROM live_rel").df()) == _rows(con.execute("SELECT * FROM live_rel").df())
        same()
        for sql, _ in CHANGES:
            con.execute(sql.format(t="live"))
            other.execute(sql.format(t="live"))
            same()
        assert_view_keeps_policy(other.execute("SELECT * FROM live_rel").df(),
                                 other.execute("SELECT * FROM live").df(), levels, privacy)
    finally:
        con.close()
        other.close()


def test_check_table_counts_a_views_null_level0_values_as_one_unknown_class(tmp_path):
    """At level 0 the view shows a value unknown to its mapping table as NULL (the hierarchy's top):
    `check --table VIEW` takes those rows as one class of their own (not a refusal for missing values)."""
    import yaml
    from click.testing import CliRunner

    from sqlanon.cli import main
    db, levels = duckdb_release(tmp_path, {"k": 2})
    assert levels == {"zip_code": 0, "age": 1, "nationality": 1}
    pol = policy({"database": db, "table": "live"}, {"k": 2}, drift={"max_suppressed": 0.5, "max_unknown": 0.5})
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(pol, sort_keys=False))
    con = duckdb.connect(db)
    # three unknown zips: (21, Russian) and (23, American) share class (NULL, <30, *); age 22 is unknown
    # too, so its row is (NULL, *, *), a class of one, held back
    con.execute("INSERT INTO live VALUES (99999, 21, 'Russian', 'Cancer', 0), (99999, 22, 'Russian', 'Flu', 0), "
                "(99998, 23, 'American', 'Flu', 0)")
    shown = con.execute("SELECT zip_code, age, COUNT(*) FROM live_rel WHERE zip_code IS NULL GROUP BY ALL").fetchall()
    con.close()
    assert shown == [(None, "<30", 2)]
    r = CliRunner().invoke(main, ["check", str(tmp_path / "p.yaml"), "--table", "live_rel", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    # 12 + 2 rows shown; the 6 classes of the release plus the class of unknown zips
    assert (got["rows"], got["classes"], got["failing_classes"], got["satisfied"]) == (14, 7, 0, True)
    assert got["achieved"]["k"] == 2
    assert (got["view"]["source_rows"], got["view"]["view_rows"], got["view"]["unknown_rows"]) == (15, 14, 3)
    # a class of one unknown zip, were the view to show it, fails the check: the unknowns are counted, not waved through
    con = duckdb.connect(db)
    con.execute("CREATE TABLE other AS SELECT * FROM live_rel UNION ALL SELECT NULL, '>=40', '*', 'Flu', 0")
    con.close()
    (tmp_path / "q.yaml").write_text(yaml.safe_dump({**pol, "release": {"name": "other", "materialize": "view"}},
                                                    sort_keys=False))
    r = CliRunner().invoke(main, ["check", str(tmp_path / "q.yaml"), "--table", "other", "--json"])
    assert r.exit_code == 3 and json.loads(r.output)["failing_classes"] == 1


def test_typed_mapping_join_matches_exactly_what_the_text_join_matches(tmp_path):
    """An integer quasi-identifier joins the mapping values cast to its type, keeping only values that are
    their own canonical text: a hierarchy spelling '013053' or '021' beside '13053' / '21' neither
    duplicates a row nor gives a source value a generalization the text join (CAST(value AS VARCHAR))
    would not."""
    zips = (HOSPITAL / "hierarchies" / "zip_code.csv").read_text()
    ages = (HOSPITAL / "hierarchies" / "age.csv").read_text()
    # the non-canonical spellings map to other labels: a row picking them up would show a wrong class
    (tmp_path / "zip.csv").write_text(zips.rstrip("\n") + "\n013053,999**,*\n")
    (tmp_path / "age.csv").write_text(ages.rstrip("\n") + "\n021,>=40,*\n")
    db = str(tmp_path / "t.duckdb")
    con = duckdb.connect(db)
    con.register("base", base_frame())
    con.execute("CREATE TABLE live AS SELECT * FROM base")
    con.close()
    pol = policy({"database": db, "table": "live"}, {"k": 2})
    pol["quasi_identifiers"]["zip_code"] = {"hierarchy": str(tmp_path / "zip.csv")}
    pol["quasi_identifiers"]["age"] = {"hierarchy": str(tmp_path / "age.csv")}
    with Anonymization(pol, db=db) as run:
        run.search()
        run.choose()
        run.materialize()
        levels = dict(run.chosen.levels)
    con = duckdb.connect(db)
    try:
        sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'live_rel'").fetchone()[0]
        assert "TRY_CAST" in sql                         # the typed join is the one under test
        for change, _ in [("SELECT 1", "as released")] + CHANGES:
            con.execute(change.format(t="live"))
            assert_view_keeps_policy(con.execute("SELECT * FROM live_rel").df(), con.execute("SELECT * FROM live").df(),
                                     levels, {"k": 2})
    finally:
        con.close()


# -- the ordered EMD the view measures, class by class -------------------------------------------------

def _view_sql_with_final_select(con, view: str, select: str) -> str:
    """The view's own SQL (its CTEs) with `select` in place of its final SELECT."""
    sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [view]).fetchone()[0]
    sql = re.sub(r"^CREATE VIEW \S+ AS ", "", sql).rstrip().rstrip(";")
    return sql[:sql.rindex(" SELECT g.")] + " " + select


def _ordered_emd(class_values: list[int], domain_values: list[int]) -> Fraction:
    """t-closeness (Li, Li, Venkatasubramanian; ICDE 2007) Sec. 4.2, ordered distance, exactly:
    1/(m-1) sum_{i<m} |P(1..i) - Q(1..i)| over the m distinct values of the table, in order."""
    domain = sorted(set(domain_values))
    if len(domain) == 1:
        return Fraction(0)
    p, q = Counter(class_values), Counter(domain_values)
    cum, d = Fraction(0), Fraction(0)
    for v in domain[:-1]:
        cum += Fraction(p[v], len(class_values)) - Fraction(q[v], len(domain_values))
        d += abs(cum)
    return d / (len(domain) - 1)


# (case, buckets): the ordered EMD alone is bounded from per-bucket counts first (views.ORDERED_BUCKETS, here
# substituted in the view's SQL: 1 bucket leaves every class to the exact path, 3 and 6 decide some classes by
# their bounds and compute the others, 16 buckets of one value each are exact); with ORDERED_BUCKETS = 0
# (and whenever another model reads the same attribute's counts) every class is computed exactly (None)
EMD_CASES = [("k=2 t=0.3 ordered cost", 1), ("k=2 t=0.3 ordered cost", 3), ("k=2 t=0.3 ordered cost", 6),
             ("k=2 t=0.3 ordered cost", 16), ("k=2 t=0.3 ordered cost, exact", None)]


@pytest.mark.parametrize("case, buckets", EMD_CASES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(0, 11), st.sampled_from(list(range(0, 1001, 100)))), min_size=1, max_size=30))
def test_duckdb_view_ordered_emd_equals_the_exact_distance_of_every_class(hypothesis_releases, case, buckets, rows):
    """The ordered EMD the view measures per class (its "__sqlanon_o<j>" work table, before the threshold)
    against the definition's sum computed exactly, on live tables built from few cost values: cumulative
    shares of a class equal to the table's (|P - Q| = 0 at a tie), classes of one value, values the class
    lacks before its first and after its last value, and a table of one distinct value (m = 1: 0). Where the
    view bounds the distance first, every class's exact distance lies within its bounds, a class computed
    exactly has the exact distance, and every class gets the exact distance's verdict against t."""
    db, levels = hypothesis_releases[case]
    base = base_frame()
    con = duckdb.connect(db)
    try:
        con.execute("BEGIN")
        con.execute("DELETE FROM live")
        for i, cost in rows:
            r = base.iloc[i]
            con.execute("INSERT INTO live VALUES (?, ?, ?, ?, ?)",
                        [int(r["zip_code"]), int(r["age"]), r["nationality"], r["condition"], cost])
        (o,) = set(re.findall(r"(__sqlanon_o\d+) AS \(", _view_sql_with_final_select(con, "live_rel", "")))
        columns = ', o."lb", o."ub", o."exact"' if buckets else ""
        sql = _view_sql_with_final_select(
            con, "live_rel", f'SELECT g."__sqlanon_key", g."cost", o.emd_ordered{columns} FROM "__sqlanon_g" AS g '
                             f'JOIN {o} AS o ON o."__sqlanon_key" = g."__sqlanon_key"')
        if buckets:
            assert sql.count(f"{views.ORDERED_BUCKETS} AS buckets") == 1
            sql = sql.replace(f"{views.ORDERED_BUCKETS} AS buckets", f"{buckets} AS buckets")
        else:
            assert "AS buckets" not in sql
        measured = con.execute(sql).df()
        assert len(measured) == len(rows)
        domain = [cost for _, cost in rows]
        t = 0.3 + views.SQL_TOL
        for _, g in measured.groupby("__sqlanon_key"):
            exact = float(_ordered_emd(list(g["cost"]), domain))
            got = g.iloc[0]
            if not buckets:
                assert got["emd_ordered"] == pytest.approx(exact, abs=1e-12)
                continue
            assert got["lb"] - 1e-12 <= exact <= got["ub"] + 1e-12
            if not pd.isna(got["exact"]):
                assert got["exact"] == pytest.approx(exact, abs=1e-12)
            assert (got["emd_ordered"] <= t) == (exact <= t)
            if buckets == 1 and len(set(domain)) > 1:
                assert not pd.isna(got["exact"])          # one bucket decides nothing
    finally:
        con.execute("ROLLBACK")
        con.close()
