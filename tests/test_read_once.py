"""The release built from the staged source (each staged row repeated by its count) holds exactly the rows
and column types of the release read from the source, and the source is then read once in the whole run.

Every test here takes the staged route, also for the DuckDB tables and Parquet files that a run reads directly
(`FrequencySet.reads_source_directly`, tests/test_direct_source.py compares the two routes)."""
from __future__ import annotations

import duckdb
import pytest

from sqlanon import frequency
from sqlanon.anonymizer import Anonymization
from sqlanon.engines.duckdb import connect
from sqlanon.errors import UnknownValues
from sqlanon.policy import load_policy

from conftest import HOSPITAL, HOSPITAL_QIS, adult_policy, force_staged_route

# 2,000 rows of typed columns: (i % 40, i % 3, i % 5, i % 7) repeats every 840 rows, so the staged source has
# 840 rows (42 % of the source: kept by the automatic rule too)
TYPED = """CREATE TABLE people AS SELECT
    CAST(20 + i % 40 AS INTEGER) AS age,
    ['f', 'm', 'x'][i % 3 + 1] AS sex,
    DATE '2024-01-01' + CAST(i % 5 AS INTEGER) AS visit,
    CAST((i % 7) / 4 AS DECIMAL(6, 2)) AS score,
    CAST(i % 11 AS SMALLINT) AS customer,
    i AS row_id
FROM range(2000) AS r(i)"""

TYPED_QIS = {"age": {"hierarchy": "intervals", "widths": [10, 20]}, "sex": {"hierarchy": "suppress"},
             "visit": {"hierarchy": "suppress"}}


@pytest.fixture(autouse=True)
def staged_route(monkeypatch):
    force_staged_route(monkeypatch)


def _typed_policy(tmp_path, **extra):
    policy = {"source": {"table": "people"}, "quasi_identifiers": TYPED_QIS, "sensitive": ["score"],
              "privacy": {"k": 30}, "release": {"name": "rel"}}
    policy.update(extra)
    return load_policy(policy, base_dir=tmp_path)


def _release(policy, levels, share, monkeypatch, connection):
    """(column types, rows with their multiplicity, row count, staged source used?, suppressed rows) of the
    release of `levels` (or of the chosen node), the staged source kept when it has at most `share` of the
    source's rows."""
    monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", share)
    with Anonymization(policy, connection=connection) as run:
        if levels is None:
            run.choose()
        else:
            run.use_node(levels)
        run.materialize()
        con, rel = run.backend.con, policy.release.name
        types = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {rel})").fetchall()
        rows = con.execute(f"SELECT *, COUNT(*) FROM {rel} GROUP BY ALL ORDER BY ALL").fetchall()
        n = con.execute(f"SELECT COUNT(*) FROM {rel}").fetchone()[0]
        return types, rows, n, run.fs.staged is not None, run.chosen.result.suppressed_rows


CASES = {
    # every QI generalized, one left at level 0 (copied with its type), a DATE QI suppressed
    "typed table, age 1 sex 0 visit 1": ("typed", {"age": 1, "sex": 0, "visit": 1}, {}),
    # every QI at level 0: every column copied, INTEGER, VARCHAR, DATE and DECIMAL as in the source
    "typed table, bottom node": ("typed", {"age": 0, "sex": 0, "visit": 0}, {"privacy": {"k": 2}}),
    # the entity key kept in the release (it is in the staged source), counts of distinct persons
    "typed table, entity key kept": ("typed", {"age": 2, "sex": 1, "visit": 0},
                                     {"entity_key": "customer", "release": {"name": "rel", "keep": ["customer"]},
                                      "privacy": {"k": 3}}),
    # suppressed blocks left out (max_suppression), the suppression anti-join over the staged source
    "adult parquet, suppression": ("adult", None, {}),
    "hospital csv": ("hospital", None, {}),
}


def _case_policy(kind, extra, tmp_path):
    if kind == "typed":
        return _typed_policy(tmp_path, **extra)
    if kind == "adult":
        return load_policy(adult_policy(4, {"k": 50, "max_suppression": 0.02}), base_dir=tmp_path)
    return load_policy({"source": {"csv": str(HOSPITAL / "hospital.csv")}, "quasi_identifiers": HOSPITAL_QIS,
                        "sensitive": ["condition"], "privacy": {"k": 4}, "release": {"name": "rel"}}, base_dir=tmp_path)


@pytest.mark.parametrize("case", list(CASES))
def test_release_from_the_staged_source_equals_the_release_from_the_source(case, tmp_path, monkeypatch):
    kind, levels, extra = CASES[case]
    got = {}
    for share in (0.0, 1.0):          # never kept (the release reads the source), always kept
        con = duckdb.connect(str(tmp_path / f"out{share}.duckdb"))
        if kind == "typed":
            con.execute(TYPED)
        got[share] = _release(_case_policy(kind, extra, tmp_path), levels, share, monkeypatch, connection=con)
    (types0, rows0, n0, staged0, supp0), (types1, rows1, n1, staged1, supp1) = got[0.0], got[1.0]
    assert not staged0 and staged1
    assert types1 == types0                      # the same columns in the same order, of the same types
    assert rows1 == rows0                        # the same rows, each as many times
    assert n1 == n0 == sum(r[-1] for r in rows0)
    assert supp1 == supp0
    if kind == "typed":
        assert dict(types0)["age"] == ("INTEGER" if levels["age"] == 0 else "VARCHAR")
        assert dict(types0)["visit"] == ("DATE" if levels["visit"] == 0 else "VARCHAR")
        assert dict(types0)["score"] == "DECIMAL(6,2)"
        assert n0 == 2000
    if kind == "adult":
        assert supp0 > 0 and n0 == 45222 - supp0
    if kind == "hospital":
        assert n0 == 12


def test_typed_bottom_node_copies_every_value(tmp_path, monkeypatch):
    """At the bottom node the release built from the staged source is the source's own columns, row for row
    (as a multiset): compared with the source table itself."""
    con = duckdb.connect(str(tmp_path / "o.duckdb"))
    con.execute(TYPED)
    _release(_typed_policy(tmp_path, privacy={"k": 1}), {"age": 0, "sex": 0, "visit": 0}, 1.0, monkeypatch,
             connection=con)
    # the run left the connection it was given open
    source = con.execute("SELECT age, sex, visit, score, COUNT(*) FROM people GROUP BY ALL ORDER BY ALL").fetchall()
    release = con.execute("SELECT age, sex, visit, score, COUNT(*) FROM rel GROUP BY ALL ORDER BY ALL").fetchall()
    assert release == source and len(source) == 840
    assert con.execute("SELECT COUNT(*) FROM (SELECT age, sex, visit, score FROM people EXCEPT ALL "
                       "SELECT age, sex, visit, score FROM rel)").fetchone()[0] == 0
    con.close()


def _scans(log: list[str]) -> list[str]:
    """The statements that read the source's rows (not its column list, LIMIT 0, nor the view's drop)."""
    return [s for s in log if 'FROM "__sqlanon_source"' in s and not s.rstrip().endswith("LIMIT 0")]


def test_a_repetitive_csv_is_read_once_in_the_whole_run(tmp_path):
    """The hospital table 25 times over (300 rows, 12 distinct): the staged source (12 rows, 4 % of the
    source) is kept by the automatic rule, and the release repeats its rows: one read of the CSV file."""
    csv = tmp_path / "h25.csv"
    duckdb.connect().execute(f"COPY (SELECT h.* FROM read_csv(?) AS h, range(25)) TO '{csv}' (HEADER)",
                             [str(HOSPITAL / "hospital.csv")])
    policy = load_policy({"source": {"csv": str(csv)}, "quasi_identifiers": HOSPITAL_QIS, "sensitive": ["condition"],
                          "privacy": {"k": 100}, "release": {"name": "rel"}}, base_dir=tmp_path)
    backend = connect()
    backend.log = []
    with Anonymization(policy, connection=backend) as run:
        run.choose()
        run.materialize()
        assert run.fs.staged is not None
        assert len(_scans(backend.log)) == 1
        release = [s for s in backend.log if s.lstrip().startswith("CREATE OR REPLACE TABLE")]
        assert len(release) == 1 and 'range(g."__sqlanon_rows")' in release[0]
        assert backend.con.execute("SELECT COUNT(*) FROM rel").fetchone()[0] == 300
        # every release row stands for 25 source rows of one original record: counts are multiples of 25
        counts = [c for (c,) in backend.con.execute("SELECT COUNT(*) FROM rel GROUP BY ALL").fetchall()]
        assert sum(counts) == 300 and all(c % 25 == 0 for c in counts)


@pytest.mark.parametrize(("keep", "share", "kept"), [
    ([], 0.5, True),                 # 840 staged rows of 2,000 source rows: kept
    ([], 0.4, False),                # above this share: dropped, the release reads the source
    (["row_id"], 1.0, False),        # a released column the staged source does not hold: read the source
])
def test_when_the_staged_source_is_kept(keep, share, kept, tmp_path, monkeypatch):
    con = duckdb.connect(str(tmp_path / "o.duckdb"))
    con.execute(TYPED)
    policy = _typed_policy(tmp_path, release={"name": "rel", "keep": keep})
    types, rows, n, staged, _ = _release(policy, {"age": 1, "sex": 0, "visit": 1}, share, monkeypatch,
                                            connection=con)
    assert staged is kept
    assert n == 2000
    assert [c for c, _ in types] == ["age", "sex", "visit", "score"] + keep
    # kept or not, the staged table is gone once the run has closed its connection (a temporary table)
    con = duckdb.connect(str(tmp_path / "o.duckdb"))
    assert con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name LIKE '%staged%'").fetchone()[0] == 0
    con.close()


@pytest.mark.parametrize("entity", [None, "customer"])
def test_a_value_missing_from_a_taxonomy_is_named(entity, tmp_path):
    """The coverage check compares the bottom frequency set's total with the source's rows; when a taxonomy
    lacks a value ('x' here, 667 of the 2,000 rows), the statement that names the missing values runs."""
    (tmp_path / "sex.csv").write_text("sex,level_1\nf,*\nm,*\n")
    con = duckdb.connect()
    con.execute(TYPED)
    extra = {"entity_key": entity} if entity else {}
    policy = _typed_policy(tmp_path, quasi_identifiers={**TYPED_QIS, "sex": {"hierarchy": "sex.csv"}}, **extra)
    with pytest.raises(UnknownValues, match=r"column 'sex': value\(s\) 'x' missing from the hierarchy") as e:
        Anonymization(policy, connection=con)
    assert e.value.values == ["x"]


def _frequency_set_and_search(policy, connection, group: bool, monkeypatch):
    """(the bottom frequency set's rows, the staged table's row count, the minimal nodes, the chosen node,
    the release's rows) with the source staged grouped (DuckDB's way) or as it is (Spark's way,
    `Backend.stage_groups` False)."""
    from sqlanon.engines.duckdb import DuckDBBackend
    monkeypatch.setattr(DuckDBBackend, "stage_groups", group)
    monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", 0.0)
    staged, bottom = [], []
    execute = DuckDBBackend.execute

    def spy(self, template, params=None, **context):
        if template in ("stage_source.sql", "frequency_set.sql"):
            (staged if template == "stage_source.sql" else bottom).append(self.sql(template, **context))
        return execute(self, template, params, **context)
    monkeypatch.setattr(DuckDBBackend, "execute", spy)
    with Anonymization(policy, connection=connection) as run:
        assert len(staged) == 1 and ("GROUP BY" in staged[0]) == group
        # grouped without an entity key, the staged rows are the cells already: the bottom set maps, not groups
        assert len(bottom) == 1 and ("GROUP BY" in bottom[0]) == (not group or bool(policy.entity_key))
        con, fs = run.backend.con, run.fs
        cells = con.execute(f'SELECT * FROM "{fs.fs_table}" ORDER BY ALL').fetchall()
        rows = run.fs.rows
        minimal = sorted(run.search().minimal)
        run.choose()
        run.materialize()
        release = con.execute(f"SELECT *, COUNT(*) FROM {policy.release.name} GROUP BY ALL ORDER BY ALL").fetchall()
        return cells, rows, minimal, dict(run.chosen.levels), release


@pytest.mark.parametrize("kind", ["typed", "typed entity", "hospital"])
def test_an_ungrouped_staged_source_gives_the_same_counts_and_release(kind, tmp_path, monkeypatch):
    """Spark stages the source's rows as they are, each of weight 1 (`Backend.stage_groups`); every count
    read from it (rows, the frequency set, with an entity key distinct persons) and the search and release
    are those of the grouped staged source."""
    got = {}
    for group in (True, False):
        con = duckdb.connect(str(tmp_path / f"g{group}.duckdb"))
        if kind.startswith("typed"):
            con.execute(TYPED)
            policy = _typed_policy(tmp_path, **({"entity_key": "customer", "privacy": {"k": 3}}
                                                if kind == "typed entity" else {}))
        else:
            policy = _case_policy("hospital", {}, tmp_path)
        got[group] = _frequency_set_and_search(policy, con, group, monkeypatch)
    assert got[False] == got[True]
    cells, rows, minimal, chosen, release = got[True]
    assert rows == {"typed": 2000, "typed entity": 11, "hospital": 12}[kind]
    assert minimal and sum(r[-1] for r in release) > 0


def test_an_ungrouped_staged_source_names_a_missing_value(tmp_path, monkeypatch):
    from sqlanon.engines.duckdb import DuckDBBackend
    monkeypatch.setattr(DuckDBBackend, "stage_groups", False)
    (tmp_path / "sex.csv").write_text("sex,level_1\nf,*\nm,*\n")
    con = duckdb.connect()
    con.execute(TYPED)
    policy = _typed_policy(tmp_path, quasi_identifiers={**TYPED_QIS, "sex": {"hierarchy": "sex.csv"}})
    with pytest.raises(UnknownValues, match=r"column 'sex': value\(s\) 'x' missing from the hierarchy"):
        Anonymization(policy, connection=con)


def test_sql_steps_show_the_staged_source_and_where_the_release_is_built_from(tmp_path):
    """`sqlanon sql --steps` prints the staging statement (grouped, or as it is for Spark), the frequency set
    read from it, and says when the run builds the release table from the staged source."""
    from sqlanon.sqlgen import policy_sql
    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    con.execute(TYPED)
    with Anonymization(_typed_policy(tmp_path), connection=con) as run:     # 840 staged rows of 2,000: kept
        run.choose()
        assert run.fs.staged is not None
        duck, spark, pg = policy_sql(run, "duckdb"), policy_sql(run, "spark"), policy_sql(run, "postgres")
    stage = lambda text: text.split("-- the source read once")[1].split("-- mapping tables")[0]  # noqa: E731
    assert "GROUP BY" in stage(duck) and "GROUP BY" not in stage(spark) and "CACHE TABLE" in stage(spark)
    assert '"__sqlanon_staged"' in duck.split("-- the bottom frequency set")[1].split("-- the wide")[0]
    wide = lambda text: text.split("-- the wide frequency set")[1].split("-- ")[0]  # noqa: E731
    assert "ORDER BY" in wide(duck) and "ORDER BY" in wide(pg)
    assert "ORDER BY" not in wide(spark)        # clustered where the engine does it
    assert "builds the release table from the staged source" in duck
    assert "builds the release table from the staged source" not in spark


# A taxonomy of an INTEGER column and one of a DATE column whose files also list spellings of the same
# values that are not their canonical text ('013', '+7', '2024-1-2'): the text join never matches those
# rows, and a typed join must not either (each would cast to a value of the data, doubling its rows).
TAXONOMY_CASES = [
    # (column, its SQL type and values, taxonomy rows: value -> level-1 label)
    ("code", "INTEGER", "[13, 7, -2, 7, 13, 13]",
     {"13": "odd", "7": "odd", "-2": "even", "013": "decoy", "+7": "decoy"}),
    ("day", "DATE", "[DATE '2024-01-02', DATE '2024-12-31', DATE '2024-01-02', DATE '2024-12-31']",
     {"2024-01-02": "jan", "2024-12-31": "dec", "2024-1-2": "decoy"}),
    ("size", "SMALLINT", "[1, 2, 2, 3]", {"1": "small", "2": "small", "3": "large", "03": "decoy"}),
]


@pytest.mark.parametrize("column, sql_type, values, taxonomy", TAXONOMY_CASES, ids=[c[0] for c in TAXONOMY_CASES])
def test_typed_map_joins_match_exactly_the_text_join(column, sql_type, values, taxonomy, tmp_path, monkeypatch):
    """On DuckDB an integer or date quasi-identifier joins its mapping table on the typed value
    (`Backend.typed_map_joins`, macro `map_join`), keeping only mapping rows whose value is its own canonical
    text: the bottom frequency set and the release are those of the text join, decoy spellings included."""
    from sqlanon.engines.duckdb import DuckDBBackend
    rows = f"SELECT CAST(v AS {sql_type}) AS {column}, i % 2 AS flag FROM (SELECT unnest({values}) AS v, " \
           f"generate_subscripts({values}, 1) AS i)"
    path = tmp_path / f"{column}.csv"
    path.write_text(f"{column},level_1,level_2\n" + "".join(f'"{v}",{lab},*\n' for v, lab in taxonomy.items()))
    policy = load_policy({"source": {"table": "t"}, "quasi_identifiers": {column: {"hierarchy": str(path)}},
                          "sensitive": ["flag"], "privacy": {"k": 1}, "release": {"name": "rel"}},
                         base_dir=tmp_path)
    got = {}
    for typed in (True, False):
        monkeypatch.setattr(DuckDBBackend, "typed_map_joins", typed)
        con = duckdb.connect()
        con.execute(f"CREATE TABLE t AS {rows}")
        log = []
        with Anonymization(policy, connection=con) as run:
            run.backend.log = log
            cells = con.execute(f'SELECT * FROM "{run.fs.fs_table}" ORDER BY ALL').fetchall()
            run.use_node({column: 1})
            run.materialize()
            release = con.execute("SELECT *, COUNT(*) FROM rel GROUP BY ALL ORDER BY ALL").fetchall()
        assert typed == any('"__sqlanon_tv"' in sql for sql in log)       # the release's join was typed
        got[typed] = (run.fs.joins, cells, release)
        con.close()
    assert got[True][0] == {column: "INTEGER" if sql_type == "SMALLINT" else sql_type, "flag": "BIGINT"}
    assert got[False][0] == {}
    assert got[True][1:] == got[False][1:]
    assert sum(n for *_, n in got[True][2]) == values.count(",") + 1     # every source row once
