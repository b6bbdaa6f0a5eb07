"""Privacy-MaxEnt's data side: Anatomy bucketization, association rules mined in SQL (against brute force),
generalized releases as buckets, the `bucketize` / `maxent` commands, and the Adult experiment."""
from __future__ import annotations

import itertools
import json

import duckdb
import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from sqlanon.cli import main
from sqlanon.engine import wrap_connection
from sqlanon.errors import DataError, PolicyError
from sqlanon.maxent import Knowledge, MaxEnt, ReleaseTables, Rules, bucketize, open_release
from sqlanon.maxent.anatomy import max_buckets, plan_buckets, sample_buckets
from sqlanon.maxent.knowledge import parse_knowledge
from sqlanon.maxent.run import bucketized_release
from sqlanon.maxent.tables import check_name

from conftest import ADULT, HOSPITAL

QIS = ["age", "sex", "race", "marital_status", "workclass"]


@pytest.fixture(scope="module")
def adult_con():
    """3,000 seeded Adult rows in a DuckDB connection (table `a`)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE a AS SELECT * FROM read_parquet(?) USING SAMPLE 3000 ROWS (reservoir, 7)",
                [str(ADULT / "adult.parquet")])
    yield con
    con.close()


# --------------------------------------------------------------------------------------------------
# Anatomy

@pytest.mark.parametrize("seed", range(20))
def test_max_buckets_is_the_largest_feasible_count(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 40, size=int(rng.integers(1, 9)))
    l = int(rng.integers(1, 6))
    best = max((m for m in range(0, counts.sum() + 1) if np.minimum(counts, m).sum() >= l * m), default=0)
    assert max_buckets(counts, l) == (best if len(counts) >= l else 0)


def _buckets(con, name, sensitive="education"):
    rows = con.execute(f'SELECT bucket, "{sensitive}", count FROM {name}_st ORDER BY 1, 2').fetchall()
    out = {}
    for b, v, n in rows:
        out.setdefault(b, {})[v] = n
    return out


@pytest.mark.parametrize("exact, not_counted", [(False, ()), (True, ("HS-grad",)), (False, ("HS-grad",))])
def test_bucketize_is_distinct_l_diverse(adult_con, exact, not_counted):
    b = wrap_connection(adult_con)
    rel = bucketize(b, "a", QIS, "education", 4, "an", not_counted=not_counted, exact_size=exact)
    buckets = _buckets(adult_con, "an")
    assert len(buckets) == rel.buckets
    for counts in buckets.values():
        counted = {v: n for v, n in counts.items() if v not in not_counted}
        assert len(counted) >= 4 and max(counted.values()) == 1       # l distinct counted values, none twice
        if exact:
            assert sum(counts.values()) == 4
    # the released records are source records (as a multiset), and the left-out ones are accounted for
    src = adult_con.execute("SELECT COUNT(*) FROM a").fetchone()[0]
    assert rel.rows + sum(rel.left_out.values()) == src == rel.source_rows
    extra = adult_con.execute(f"""
        SELECT COUNT(*) FROM (SELECT {', '.join(QIS)}, education FROM an_qit JOIN an_private USING (pseudonym)
                              EXCEPT ALL SELECT {', '.join(QIS)}, education FROM a)""").fetchone()[0]
    assert extra == 0
    # the quasi-identifier table and the sensitive table agree bucket by bucket
    assert adult_con.execute("SELECT bucket, COUNT(*) FROM an_qit GROUP BY 1 EXCEPT "
                             "SELECT bucket, SUM(count) FROM an_st GROUP BY 1").fetchall() == []
    if not_counted and not exact:
        assert rel.left_out["not_counted"] == 0 and rel.rows > 4 * rel.buckets


@pytest.mark.parametrize("name", ["bucket", "Bucket", "PSEUDONYM", "Count"])
def test_bucketize_refuses_the_names_of_its_columns_in_any_case(name):
    """A quasi-identifier `Bucket` was taken for the bucket column by DuckDB: the sensitive table was grouped by
    it, and a ward of one patient published with that patient's value (only `bucket` was refused)."""
    con = duckdb.connect()
    con.execute(f'CREATE TABLE t AS SELECT i % 9 AS "{name}", i % 5 AS age, [\'a\', \'b\', \'c\'][1 + i % 3] AS s '
                "FROM range(40) r(i)")
    with pytest.raises(PolicyError, match=f"column '{name}' has a name the bucketized tables use"):
        bucketize(wrap_connection(con), "t", [name, "age"], "s", 2, "b")
    assert con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name LIKE 'b\\_%' ESCAPE '\\'").fetchone()[0] == 0
    con.close()


@pytest.mark.parametrize("qi, sensitive", [("start", "s"), ("r", "s"), ("cap", "s"), ("counted", "s"),
                                            ("planned", "s"), ("__value", "s"), ("age", "r"), ("age", "start")])
def test_bucketize_whatever_the_columns_are_named(qi, sensitive):
    """The assignment's work columns (start, cap, counted, r, planned, __value) had bare names beside the user's:
    a quasi-identifier named like one of them was read in its place, and buckets of one value were released with
    exit 0 and the word that each held l distinct values (a sensitive column named r: a Binder Error)."""
    con = duckdb.connect()
    con.execute(f'CREATE TABLE t AS SELECT (i * 7919) % 1000 AS "{qi}", '
                f'[\'p\', \'q\', \'r\', \'u\', \'v\'][1 + (i * i) % 5] AS "{sensitive}" FROM range(200) r(i)')
    rel = bucketize(wrap_connection(con), "t", [qi], sensitive, 3, "b")
    buckets = _buckets(con, "b", sensitive)
    assert len(buckets) == rel.buckets > 0
    for counts in buckets.values():
        assert len(counts) >= 3 and max(counts.values()) == 1
    assert rel.rows + sum(rel.left_out.values()) == 200
    assert con.execute(f'SELECT COUNT(*) FROM (SELECT "{qi}", "{sensitive}" FROM b_qit JOIN b_private USING '
                       f'(pseudonym) EXCEPT ALL SELECT "{qi}", "{sensitive}" FROM t)').fetchone()[0] == 0
    con.close()


def test_bucketize_counts_equal_values_written_apart_once():
    """0.0 and -0.0 are one value of the DOUBLE column (the engine's COUNT(DISTINCT) says so): with three values in
    all, no bucket holds 4 distinct values. (Grouped by their text, the zeros were two values, and buckets of
    four were released, each holding a zero twice.) With l = 2 every row finds its bucket, whichever way its zero
    is written, and no bucket holds a value twice."""
    con = duckdb.connect()
    con.execute("CREATE TABLE z AS SELECT i AS age, CASE i % 4 WHEN 0 THEN CAST('-0.0' AS DOUBLE) WHEN 1 THEN 0.0 "
                "WHEN 2 THEN 1.5 ELSE 2.5 END AS score FROM range(40) r(i)")
    assert con.execute("SELECT COUNT(DISTINCT score) FROM z").fetchone()[0] == 3
    b = wrap_connection(con)
    with pytest.raises(DataError, match="no bucket can hold 4 distinct"):
        bucketize(b, "z", ["age"], "score", 4, "zb")
    rel = bucketize(b, "z", ["age"], "score", 2, "zb")
    assert rel.rows + sum(rel.left_out.values()) == 40
    for counts in _buckets(con, "zb", "score").values():
        assert len(counts) >= 2 and max(counts.values()) == 1
    con.close()


def _zeros(con, name: str, reverse: bool = False) -> None:
    """40 rows, ages 0-4 eight times; scores -0.0, 0.0 (one value, two texts), 1.5 and 2.5 in turn: each age holds
    rows alike but for the text of zero."""
    order = "DESC" if reverse else "ASC"
    con.execute(f"CREATE TABLE {name} AS SELECT i % 5 AS age, CASE i % 4 WHEN 0 THEN CAST('-0.0' AS DOUBLE) "
                f"WHEN 1 THEN 0.0 WHEN 2 THEN 1.5 ELSE 2.5 END AS score FROM range(40) r(i) ORDER BY i {order}")


@pytest.mark.parametrize("named", ["0.0", "-0.0"])
def test_bucketize_finds_a_value_not_counted_by_any_text(named):
    """Anatomy names each value by its least text ('-0.0'); a value not counted may be named by any of its texts,
    and the plan is the same (before, '0.0' was refused as no value of the column). A name that is no value of
    the column is still refused."""
    con = duckdb.connect()
    _zeros(con, "z")
    b = wrap_connection(con)
    rel = bucketize(b, "z", ["age"], "score", 2, "zb", not_counted=[named])
    assert rel.not_counted == ["-0.0"] and rel.buckets == 10
    for counts in _buckets(con, "zb", "score").values():      # each bucket: 1.5 and 2.5 once, zeros spread
        assert counts[1.5] == 1 and counts[2.5] == 1
    with pytest.raises(PolicyError, match="value '3.5' does not occur"):
        bucketize(b, "z", ["age"], "score", 2, "zc", not_counted=["3.5"])
    with pytest.raises(PolicyError, match="value 'zero' does not occur"):
        bucketize(b, "z", ["age"], "score", 2, "zc", not_counted=["zero"])
    con.close()


@pytest.mark.parametrize("named", ["nan", "12345", "abc", "1.004"])
def test_bucketize_refuses_a_value_not_counted_its_type_cannot_read(named):
    """A name a DECIMAL(4, 2) cannot hold is no value of the column: the plain refusal, not the database's
    conversion error; nor is one it would round onto a value (1.004 onto 1.00)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE d AS SELECT i % 5 AS age, CAST(i % 3 AS DECIMAL(4, 2)) AS score FROM range(30) r(i)")
    with pytest.raises(PolicyError, match=f"value '{named}' does not occur"):
        bucketize(wrap_connection(con), "d", ["age"], "score", 2, "db", not_counted=[named])
    con.close()


def test_bucketize_writes_the_same_tables_whatever_the_row_order():
    """Rows alike but for the text of one value (age 0 with -0.0 and with 0.0) tie in every seeded order; the
    row's own text breaks the tie, so one seed gives the same tables from the rows in either order (before, the
    engine's scan order decided which text each pseudonym got)."""
    con = duckdb.connect()
    con.execute("SET threads = 1")
    _zeros(con, "up")
    _zeros(con, "down", reverse=True)
    b = wrap_connection(con)
    released = []
    for source in ("up", "down"):
        bucketize(b, source, ["age"], "score", 2, f"{source}_b")
        released.append(con.execute(f"SELECT q.pseudonym, q.age, q.bucket, CAST(p.score AS VARCHAR) FROM {source}_b_qit q "
                                    f"JOIN {source}_b_private p USING (pseudonym) ORDER BY 1").fetchall())
    assert released[0] == released[1]
    assert {text for *_, text in released[0]} == {"-0.0", "0.0", "1.5", "2.5"}
    con.close()


@pytest.mark.parametrize("named", ["0.0", "-0.0", "-0"])
def test_maxent_counts_equal_values_written_apart_once(named):
    """Privacy-MaxEnt reads a sensitive value by its type, as the privacy models and Anatomy count it: 0.0 and
    -0.0 are one value of the solver (before: two, and original records written with the other text were
    lost), knowledge may name it by any text the type calls equal, and the estimate of the original records
    misses none (estimation accuracy finite). A name that is no value is still refused."""
    con = duckdb.connect()
    _zeros(con, "z")
    b = wrap_connection(con)
    bucketize(b, "z", ["age"], "score", 2, "zb")
    # every bucket writes zero as the table's least text, also one whose zero row was 0.0
    assert con.execute("SELECT DISTINCT CAST(score AS VARCHAR) FROM zb_st WHERE score = 0").fetchall() == [("-0.0",)]
    assert con.execute("SELECT COUNT(*) FROM zb_private WHERE CAST(score AS VARCHAR) = '0.0'").fetchone()[0] > 0
    me = MaxEnt(b, bucketized_release(b, "zb", ["age"], "score"))
    p = me.problem
    assert p.s_values == ["-0.0", "1.5", "2.5"] and p.N == 40
    knowledge = parse_knowledge([{"given": {"age": 0}, "sensitive": named, "at_most": 0.4}])
    result = me.solve(knowledge)
    assert result.solution.converged
    assert result.posterior_of({"age": 0})["-0.0"] <= 0.4 + 1e-6 < result.posterior_of({"age": 0}, baseline=True)["-0.0"]
    accuracy = me.accuracy(result)
    assert accuracy["cells_estimated_impossible"] == 0 and np.isfinite(accuracy["estimation_accuracy"])
    for wrong in ("3.5", "zero"):
        with pytest.raises(PolicyError, match=f"value '{wrong}' of score does not occur"):
            me.solve(parse_knowledge([{"given": {"age": 0}, "sensitive": wrong, "at_most": 0.4}]))
    con.close()


def test_bucketize_publishes_one_text_per_value_whatever_the_threads():
    """The sensitive table writes each value by its least text in the whole table, so many threads meeting the rows
    in any order write one table (before, the grouping kept whichever text of zero it met first), and no bucket
    tells which text its rows had (a bucket of only 0.0 rows writes -0.0 too)."""
    tables = set()
    for trial in range(4):
        con = duckdb.connect()
        con.execute("SET threads = 8")
        con.execute(f"CREATE TABLE src AS SELECT i % 97 AS age, CASE WHEN i % 10 < 3 THEN CAST('-0.0' AS DOUBLE) "
                    f"WHEN i % 10 < 6 THEN 0.0 WHEN i % 10 < 8 THEN 1.5 ELSE 2.5 END AS score FROM range(300000) r(i) "
                    f"ORDER BY hash(i + {trial})")
        bucketize(wrap_connection(con), "src", ["age"], "score", 2, "rb", not_counted=["0.0"])
        st = con.execute("SELECT bucket, CAST(score AS VARCHAR), count FROM rb_st ORDER BY 1, 2").fetchall()
        tables.add(tuple(st))
        con.close()
    assert len(tables) == 1 and {text for _, text, _ in next(iter(tables))} == {"-0.0", "1.5", "2.5"}


def test_bucketize_is_deterministic_and_samples_buckets(adult_con):
    b = wrap_connection(adult_con)
    bucketize(b, "a", QIS, "education", 5, "d1", most_frequent_not_counted=True, exact_size=True)
    first = adult_con.execute("SELECT * FROM d1_qit JOIN d1_private USING (pseudonym) ORDER BY pseudonym").fetchall()
    bucketize(b, "a", QIS, "education", 5, "d1", most_frequent_not_counted=True, exact_size=True)
    again = adult_con.execute("SELECT * FROM d1_qit JOIN d1_private USING (pseudonym) ORDER BY pseudonym").fetchall()
    assert first == again
    rel = bucketize(b, "a", QIS, "education", 5, "d2", most_frequent_not_counted=True, exact_size=True, buckets=50)
    assert rel.buckets == 50 and rel.rows == 250 and rel.possible_buckets > 50
    assert sorted(_buckets(adult_con, "d2")) == list(range(1, 51))
    assert rel.left_out["not_sampled"] == 5 * (rel.possible_buckets - 50)
    with pytest.raises(DataError, match="allows"):
        bucketize(b, "a", QIS, "education", 5, "d3", most_frequent_not_counted=True, buckets=10 ** 6)


def test_bucketize_writes_all_tables_or_none(adult_con, monkeypatch):
    b = wrap_connection(adult_con)
    bucketize(b, "a", QIS, "education", 3, "atom")
    before = adult_con.execute("SELECT COUNT(*), SUM(bucket) FROM atom_qit").fetchone()
    real = b.execute

    def failing(template, *args, **kwargs):
        if template == "anatomy_private.sql":
            raise RuntimeError("disk full")
        return real(template, *args, **kwargs)

    monkeypatch.setattr(b, "execute", failing)
    with pytest.raises(RuntimeError):
        bucketize(b, "a", QIS, "education", 5, "atom")
    monkeypatch.undo()
    assert adult_con.execute("SELECT COUNT(*), SUM(bucket) FROM atom_qit").fetchone() == before
    left = [t for (t,) in adult_con.execute("SELECT table_name FROM duckdb_tables()").fetchall() if "sqlanon_tmp" in t]
    assert left == []


def test_plan_refuses_impossible_diversity():
    with pytest.raises(DataError, match="no bucket can hold 4"):
        plan_buckets({"x": 5, "y": 5, "z": 5}, 4)
    with pytest.raises(PolicyError, match="--not-counted"):
        plan_buckets({"x": 5}, 1, not_counted=["nope"])


# --------------------------------------------------------------------------------------------------
# association rules (Section 4.4) against brute force

def _brute_rules(rows, attrs, values, s_values, min_support, negative):
    """Every rule Q_v => s (or not s), ranked as maxent_rules.sql ranks them."""
    k = len(attrs)
    codes = [{v: i for i, v in enumerate(values[a])} for a in attrs]
    out = []
    for size in range(1, k + 1):
        for subset in itertools.combinations(range(k), size):
            groups = {}
            for r in rows:
                groups.setdefault(tuple(r[i] for i in subset), []).append(r[-1])
            g = sum(1 << (k - 1 - i) for i in range(k) if i not in subset)
            for key, ss in groups.items():
                nq = len(ss)
                for s in s_values:
                    n = ss.count(s)
                    sup, conf = (nq - n, 1.0 - n / nq) if negative else (n, n / nq)
                    if sup < min_support:
                        continue
                    full = [-1] * k
                    for i, v in zip(subset, key):
                        full[i] = codes[i][v]
                    given = tuple((attrs[i], v) for i, v in zip(subset, key))
                    out.append(((-conf, -sup, size, -g, *full, s_values.index(s)), given, s, sup, conf))
    out.sort(key=lambda x: x[0])
    return [(given, s, sup, conf) for _, given, s, sup, conf in out]


@pytest.mark.parametrize("seed", range(3))
def test_rules_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    attrs = ["A", "B", "C"]
    rows = [(f"a{rng.integers(3)}", f"b{rng.integers(2)}", f"c{rng.integers(3)}", f"s{rng.integers(4)}", 0)
            for _ in range(60)]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (A VARCHAR, B VARCHAR, C VARCHAR, s VARCHAR, bucket INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [r[:4] + (i // 4 + 1,) for i, r in enumerate(rows)])
    con.execute("CREATE TABLE t_st AS SELECT bucket, s, COUNT(*) AS count FROM t GROUP BY ALL")
    me = MaxEnt(wrap_connection(con), ReleaseTables("t", "t_st", "t", attrs, "s"))
    values = {a: sorted({r[i] for r in rows}) for i, a in enumerate(attrs)}
    s_values = sorted({r[3] for r in rows})
    data = [r[:4] for r in rows]
    mined = me.mine(Rules(25, 25, 2))
    for negative in (False, True):
        want = _brute_rules([r[:3] + (r[3],) for r in data], attrs, values, s_values, 2, negative)[:25]
        got = [(r.given, r.value, r.support, r.confidence) for r in mined if r.negative == negative]
        assert got == [(g, s, sup, pytest.approx(c)) for g, s, sup, c in want]
    # the top K is a prefix of the top K + more, and rules say what the data says
    assert [r.describe() for r in me.mine(Rules(5, 0, 2))] == [r.describe() for r in mined if not r.negative][:5]
    r = me.solve(Knowledge([Rules(10, 10, 2)]))
    assert r.solution.converged and me.accuracy(r)["cells_estimated_impossible"] == 0
    con.close()


# --------------------------------------------------------------------------------------------------
# releases of a policy: generalized (q*-blocks) and bucketized, through the command line

def _policy(tmp_path, **extra):
    db = tmp_path / "h.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    con.close()
    policy = {"source": {"database": db.name, "table": "hospital"},
              "quasi_identifiers": {"zip_code": {"hierarchy": str(HOSPITAL / "hierarchies" / "zip_code.csv")},
                                    "age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
                                    "nationality": {"hierarchy": "suppress"}},
              "sensitive": ["condition"], "privacy": {"k": 4}, "utility": "height",
              "release": {"name": "hosp"}, **extra}
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path, db


def test_generalized_release_makes_each_block_a_bucket(tmp_path):
    """TKDD Figure 2 (zip 3 digits, age in decades, nationality suppressed): three 4-record blocks; the
    third is all Cancer, so without knowledge its records are certain to have cancer (homogeneity)."""
    path, db = _policy(tmp_path)
    with open_release(str(path), db=str(db)) as (backend, release):
        me = MaxEnt(backend, release)
        p = me.problem
        assert release.kind == "generalized" and p.N == 12 and p.buckets == 3
        assert sorted(p.bucket_n.tolist()) == [4, 4, 4]
        r = me.solve()
        risk = me.risk(r)
        assert risk["records_certain"] == 4 and risk["baseline_records_certain"] == 4
        assert me.accuracy(r)["estimation_accuracy"] == pytest.approx(me.accuracy(r)["baseline_estimation_accuracy"])
    r = _run(["maxent", path, "--node", "zip_code=1,age=1,nationality=1", "--manifest", tmp_path / "m.json", "-q"])
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "m.json").read_text())
    assert manifest["chosen"]["levels"] == {"age": 1, "nationality": 1, "zip_code": 1}
    assert manifest["maxent"]["release"]["levels"] == manifest["chosen"]["levels"]
    assert manifest["maxent"]["risk"]["records_certain"] == 4
    with pytest.raises(PolicyError, match="no level given"), \
            open_release(str(path), db=str(db), node={"zip_code": 1}):
        pass


def _run(args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_cli_bucketize_then_maxent(tmp_path):
    path, db = _policy(tmp_path)
    r = _run(["bucketize", path, "--l", "3", "--name", "hb", "--json", "-"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    # 3 Heart Disease, 4 Viral Infection, 5 Cancer: three buckets of one of each; 3 rows over capacity
    assert info["buckets"] == 3 and info["rows"] == 9 and info["left_out"]["over_capacity"] == 3
    assert info["tables"]["qit"] == "hb_qit"
    know = tmp_path / "k.yaml"
    know.write_text(yaml.safe_dump({"persons": {"Ann": {"zip_code": 13053, "age": 28, "nationality": "Russian"}},
                                    "knowledge": [{"given": {"nationality": "American"}, "sensitive": "Cancer",
                                                   "at_most": 0.5},
                                                  {"person": "Ann", "sensitive": "Heart Disease",
                                                   "probability": 0.9}]}))
    r = _run(["maxent", path, "--buckets", "hb", "--knowledge", know, "--positive", "2", "--negative", "2",
              "--name", "hb_me", "--json", "-"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["release"]["buckets"] == 3 and rep["solver"]["converged"]
    assert len(rep["knowledge"]) == 2 + len(rep["rules"]) and rep["persons"]["Ann"]["Heart Disease"] == \
        pytest.approx(0.9, abs=1e-6)
    assert rep["accuracy"]["estimation_accuracy"] < rep["accuracy"]["baseline_estimation_accuracy"]
    con = duckdb.connect(str(db))
    names = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert {"hb_me", "hb_me_qi", "hb_me_individuals", "hb_me_persons"} <= names
    # P*(S | Q) sums to 1 for every quasi-identifier; the per-record table covers every record
    assert con.execute("SELECT MAX(ABS(t - 1)) FROM (SELECT SUM(probability) t FROM hb_me "
                       "GROUP BY zip_code, age, nationality)").fetchone()[0] < 1e-6
    assert con.execute("SELECT SUM(records) FROM hb_me_individuals").fetchone()[0] == 9
    con.close()
    # text output, quiet
    r = _run(["maxent", path, "--buckets", "hb", "--positive", "3", "--no-write"])
    assert r.exit_code == 0 and "estimation accuracy" in r.output


@pytest.mark.parametrize("args, names", [
    (["bucketize", "{policy}", "--l", "3", "--name", "hb", "--json", "{out}"], {"hb_qit", "hb_st", "hb_private"}),
    (["maxent", "{policy}", "--name", "me", "--json", "{out}"], {"me", "me_qi", "me_individuals"}),
    (["maxent", "{policy}", "--name", "me", "--manifest", "{out}"], {"me", "me_qi", "me_individuals"}),
])
def test_a_json_file_that_cannot_be_written_rolls_the_tables_back(tmp_path, monkeypatch, args, names):
    """The report (or manifest) is written inside the tables' transaction, as a release's manifest is: a file
    that cannot be written leaves no table, no file and no temporary file, exit 2 in one line."""
    import sqlanon.files
    from sqlanon.errors import DataError
    path, db = _policy(tmp_path)
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()

    def full_disk(target, text):
        raise DataError(f"cannot write {target}: No space left on device; choose another path")

    monkeypatch.setattr(sqlanon.files, "write_temporary", full_disk)
    r = CliRunner().invoke(main, [a.format(policy=path, out=out) for a in args])
    assert r.exit_code == 2 and "No space left" in r.output and "Traceback" not in r.output, r.output
    con = duckdb.connect(str(db))
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    assert not names & tables and not any(t.startswith("__sqlanon_tmp") for t in tables), tables
    assert list(out.parent.iterdir()) == []
    monkeypatch.undo()          # and with a disk that has room: the tables and the file
    r = CliRunner().invoke(main, [a.format(policy=path, out=out) for a in args])
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(db))
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    assert names <= tables and [f.name for f in out.parent.iterdir()] == ["report.json"]
    assert json.loads(out.read_text())


def test_maxent_refuses_what_it_cannot_measure_or_write(tmp_path):
    """A node that fails the policy (its failing classes were dropped beyond the budget: a release that cannot
    exist, its riskiest classes left out), --json and --manifest at one place (the second replaced the first; on
    stdout two JSON documents), and a column named like an output column (DuckDB renamed ours probability_1)."""
    path, db = _policy(tmp_path)
    cases = [(["--node", "zip_code=0,age=2,nationality=1", "--no-write"],
              "zip_code=0,age=2,nationality=1 does not satisfy the policy"),
             (["--json", tmp_path / "same.json", "--manifest", tmp_path / "same.json"], "both name"),
             (["--json", "-", "--manifest", "-", "--no-write"], "both print on stdout")]
    for args, needle in cases:
        r = CliRunner().invoke(main, ["maxent", str(path), *[str(a) for a in args]])
        assert r.exit_code == 2 and needle in r.output and len(r.output.strip().splitlines()) == 1, r.output
    r = CliRunner().invoke(main, ["attack", str(path), "--json", "-", "--manifest", "-"])
    assert r.exit_code == 2 and "both print on stdout" in r.output, r.output
    assert not (tmp_path / "same.json").exists()
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE hospital RENAME COLUMN condition TO Probability")
    con.close()
    policy = yaml.safe_load(path.read_text())
    policy["sensitive"] = ["Probability"]
    path.write_text(yaml.safe_dump(policy))
    r = CliRunner().invoke(main, ["maxent", str(path), "--name", "pm"])
    assert r.exit_code == 2 and "column 'Probability' has the name of a column of maxent's output" in r.output
    assert CliRunner().invoke(main, ["maxent", str(path), "--no-write", "-q"]).exit_code == 0


def test_a_table_an_earlier_write_made_and_this_one_does_not_is_dropped(tmp_path):
    """bucketize --no-private after a bucketize with its private table left the old NAME_private, which maxent then
    joined to the new buckets as their original records (a wrong estimation accuracy)."""
    path, db = _policy(tmp_path)
    assert _run(["bucketize", path, "--l", "3", "--name", "hz", "-q"]).exit_code == 0
    assert _run(["bucketize", path, "--l", "3", "--name", "hz", "--no-private", "--seed", "other", "-q"]).exit_code == 0
    con = duckdb.connect(str(db))
    names = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    dropped = con.execute("SELECT name FROM sqlanon_releases WHERE kind = 'dropped'").fetchall()
    con.close()
    assert {"hz_qit", "hz_st"} <= names and "hz_private" not in names and dropped == [("hz_private",)]
    r = _run(["maxent", path, "--buckets", "hz", "--no-write", "--json", "-"])
    assert r.exit_code == 0 and json.loads(r.output)["accuracy"] is None


def test_the_first_json_file_is_not_left_when_the_second_cannot_be_written(tmp_path, monkeypatch):
    """--manifest staged, then --json refused: the staged manifest stayed as a .sqlanon_tmp_ file."""
    import sqlanon.files
    from sqlanon.errors import DataError
    path, db = _policy(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    real = sqlanon.files.write_temporary

    def second_fails(target, text):
        if target.name == "report.json":
            raise DataError(f"cannot write {target}: No space left on device; choose another path")
        return real(target, text)
    monkeypatch.setattr(sqlanon.files, "write_temporary", second_fails)
    r = CliRunner().invoke(main, ["maxent", str(path), "--name", "me", "--manifest", str(out / "m.json"),
                                  "--json", str(out / "report.json")])
    assert r.exit_code == 2 and "No space left" in r.output, r.output
    assert list(out.iterdir()) == []


def test_cli_infeasible_knowledge_is_one_line_and_exit_2(tmp_path):
    path, db = _policy(tmp_path)
    know = tmp_path / "bad.yaml"
    # in Figure 2's first block (zip 130**, age < 30) nobody has cancer
    know.write_text(yaml.safe_dump([{"given": {"age": 28}, "sensitive": "Cancer", "probability": 1}]))
    r = CliRunner().invoke(main, ["maxent", str(path), "--knowledge", str(know), "--name", "never"])
    assert r.exit_code == 2
    assert "infeasible" in r.output and "Traceback" not in r.output and len(r.output.strip().splitlines()) >= 1
    con = duckdb.connect(str(db))
    assert not con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name LIKE 'never%'").fetchone()[0]
    con.close()
    for bad, field in (([{"given": {"age": 28}, "sensitive": "Cancer"}], "needs probability"),
                       ({"knowledge": [{"rules": {"positive": -1}}]}, "positive"),
                       # reached the database: "Conversion Error: Type INT128 ... can't be cast"
                       ({"knowledge": [{"rules": {"positive": 10 ** 20}}]}, "rules.positive': must be an integer from 0"),
                       ("knowledge: [", "not valid YAML")):
        know.write_text(bad if isinstance(bad, str) else yaml.safe_dump(bad))
        r = CliRunner().invoke(main, ["maxent", str(path), "--knowledge", str(know)])
        assert r.exit_code == 2 and field in r.output, r.output
    r = CliRunner().invoke(main, ["maxent", str(path), "--buckets", "nothing"])
    assert r.exit_code == 2 and "sqlanon bucketize" in r.output


def test_rules_need_the_original(tmp_path):
    path, db = _policy(tmp_path)
    assert _run(["bucketize", path, "--l", "3", "--name", "np", "--no-private"]).exit_code == 0
    r = CliRunner().invoke(main, ["maxent", str(path), "--buckets", "np", "--positive", "3"])
    assert r.exit_code == 2 and "original records" in r.output
    r = _run(["maxent", path, "--buckets", "np", "--json", "-", "-q"])
    assert json.loads(r.output)["accuracy"] is None


# --------------------------------------------------------------------------------------------------
# the experiment (smoke scale) and its report section

def test_experiment_on_a_sample(tmp_path):
    from sqlanon.experiments import maxent as exp
    from sqlanon.experiments.common import Context
    ctx = Context(tmp_path, sample_rows=1500, repeat=1)
    try:
        res = exp.run(ctx)
    finally:
        ctx.close()
    toy = res["toy"]
    cathy = next(r for r in toy["P(Breast Cancer | male) = 0"]["records"] if r["name"] == "Cathy")
    assert cathy["posterior"] == {"Breast Cancer": 1.0}
    david = next(r for r in toy["P(s1 | q2) = 0, P(s1 or s2 | q3) = 0"]["records"] if r["name"] == "David")
    assert david["posterior"] == {"Pneumonia": 1.0}
    s = res["setting"]
    assert s["rows"] == 5 * s["buckets"] and s["not_counted"] == ["HS-grad"] and s["sensitive_values"] == 15
    assert [r["k"] for r in res["fig5"]] == [0, 10, 20]
    k0 = res["fig5"][0]
    # no knowledge: every curve starts at the uniform estimate (DuckDB's parallel sums may differ in the last bits)
    for kind in ("positive", "negative", "mixed"):
        assert k0[kind]["accuracy"] == pytest.approx(k0["mixed"]["baseline_accuracy"], rel=1e-12)
    assert res["checks"]["all_converged"]
    # Figure 6: T = 1..8 attributes; the verdict is computed from the effects by the rule printed beside it
    assert [r["t"] for r in res["fig6"]] == list(range(1, 9))
    f6 = res["checks"]["fig6"]
    for r in res["fig6"]:
        assert f6["effect"][r["t"]] == pytest.approx(r["baseline_accuracy"] - r["accuracy"])
        assert r["converged"] and r["constraints"] <= exp.FIG6_K
    assert f6["holds"] == (f6["effect"][4] < f6["effect"][1] and f6["effect"][8] > f6["effect"][4])
    text = exp.markdown(res)
    assert "Figure 5" in text and "Figure 7(b)" in text and "| Cathy | 1 |" in text
    assert "Figure 6" in text and ("| holds |" in text) == f6["holds"]
    assert exp.plots(res, tmp_path) == ["maxent.png"]
    assert (tmp_path / "maxent.png").read_bytes()[:4] == b"\x89PNG"


def test_entity_key_is_refused_with_one_line(tmp_path):
    """Anatomy's buckets and Privacy-MaxEnt's P(q, s, b) count records; with entity_key (several rows a person)
    both commands refuse, exit 2, one line naming the field, and write nothing."""
    path, db = _policy(tmp_path, entity_key="person")
    con = duckdb.connect(str(db))
    con.execute("CREATE OR REPLACE TABLE hospital AS SELECT *, (row_number() OVER ()) % 5 AS person FROM hospital")
    con.close()
    for args in (["bucketize", path, "--l", "3", "--name", "ek"], ["maxent", path, "--name", "ek2"]):
        r = CliRunner().invoke(main, [str(a) for a in args])
        assert r.exit_code == 2, r.output
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and "entity_key" in lines[0] and "Traceback" not in r.output
        assert "count records" in lines[0] and "remove entity_key" in lines[0]
    con = duckdb.connect(str(db))
    assert not con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name LIKE 'ek%'").fetchone()[0]
    con.close()


def test_two_releases_open_on_one_connection_keep_their_own_tables(tmp_path):
    """`open_release` wrote its work tables under fixed names (__sqlanon_maxent_released, _blocks, _suppressed):
    a second release opened on the same connection replaced the first one's, and MaxEnt on the first then read the
    second's rows (helper-31). Each takes a free prefix now, and so does each MaxEnt's own work."""
    from sqlanon.policy import load_policy
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.execute("CREATE TABLE a AS SELECT (i % 5)::VARCHAR AS zip, 'x' || (i % 3) AS dis FROM range(200) t(i)")
    con.execute("CREATE TABLE b AS SELECT 'B' || (i % 4) AS zip, 'y' || (i % 3) AS dis FROM range(60) t(i)")
    policy = {"quasi_identifiers": {"zip": {"hierarchy": "suppress"}}, "sensitive": ["dis"], "privacy": {"k": 2}}
    pa, pb = (load_policy({**policy, "source": {"table": t}, "release": {"name": f"rel_{t}"}}, base_dir=tmp_path)
              for t in ("a", "b"))
    with open_release(pa, connection=con) as (ba, ra):
        first = MaxEnt(ba, ra)
        with open_release(pb, connection=con) as (bb, rb):
            second = MaxEnt(bb, rb)
            assert {ra.qit, ra.st}.isdisjoint({rb.qit, rb.st}) and first.prefix != second.prefix
            assert con.execute(f'SELECT COUNT(*), MIN(dis) FROM "{ra.qit}"').fetchone() == (200, "x0")
            assert second.problem.N == 60 and first.problem.N == 200
        assert con.execute(f'SELECT COUNT(*), MIN(dis) FROM "{ra.qit}"').fetchone() == (200, "x0")
    con.close()


@pytest.mark.parametrize("call, text", [
    (lambda: plan_buckets({"x": 5}, 0), "option '--l': must be a positive integer; got 0"),
    (lambda: plan_buckets({"x": 5}, 1, not_counted=["zz"]), "option '--not-counted': value 'zz' does not occur"),
    (lambda: sample_buckets(5, 0, "s"), "option '--buckets': must be a positive number of buckets; got 0"),
    (lambda: check_name("9abc", "--name"), "option '--name': must be a table name"),
    (lambda: check_name("__SQLANON_x", "--name"), "option '--name': names starting with __sqlanon (in any case)"),
])
def test_bucketize_names_its_options_as_options(call, text):
    """They were named as policy fields ("policy field 'l'"), which the user never wrote."""
    with pytest.raises(PolicyError) as e:
        call()
    assert str(e.value).startswith(text)


@pytest.mark.parametrize("release_name", ["Rel Mixed", "main.rel"])
def test_a_default_name_that_is_no_table_name_asks_for_name(tmp_path, release_name):
    """bucketize and maxent name their tables after release.name; when that is no plain table name, the refusal
    named '--name', which the user had not given, as the culprit."""
    db = tmp_path / "d.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT i % 7 AS age, ['a', 'b', 'c'][1 + i % 3] AS s FROM range(60) r(i)")
    con.close()
    policy = tmp_path / "p.yaml"
    policy.write_text(yaml.safe_dump({"source": {"table": "t", "database": str(db)},
                                      "quasi_identifiers": {"age": {"hierarchy": "suppress"}}, "sensitive": ["s"],
                                      "privacy": {"k": 2}, "release": {"name": release_name}}))
    default = {"bucketize": release_name, "maxent": f"{release_name}_maxent"}
    for command, extra in (("bucketize", ["--l", "2"]), ("maxent", [])):
        r = CliRunner().invoke(main, [command, str(policy), *extra, "-q"])
        assert r.exit_code == 2, r.output
        assert r.stderr.strip() == (f"sqlanon: error: option '--name': the default name {default[command]!r}, made "
                                    "from release.name, is not a table name of letters, digits and _; give --name")
        r = CliRunner().invoke(main, [command, str(policy), *extra, "--name", "mine", "-q"])
        assert r.exit_code == 0, r.output
