"""SQL generation: identifiers quoted, statements checked by sqlglot, templates found from the package."""
from __future__ import annotations

import io
import re

import pytest
import sqlglot.errors

from sqlanon import templates
from sqlanon.progress import Progress


@pytest.mark.parametrize("name, quoted", [
    ("age", '"age"'),
    ('a"b', '"a""b"'),
    ('x"; DROP TABLE t; --', '"x""; DROP TABLE t; --"'),
])
def test_ident_quotes_and_escapes(name, quoted):
    assert templates.ident(name) == quoted
    # a quoted identifier is one column reference, whatever it holds
    tree = templates.parse(f"SELECT {templates.ident(name)} FROM t")
    assert [c.name for c in tree.find_all(templates.exp.Column)] == [name]


def test_check_rejects_broken_and_multiple_statements():
    with pytest.raises(sqlglot.errors.ParseError):
        templates.check("SELECT FROM WHERE")
    with pytest.raises(ValueError):
        templates.check("SELECT 1; SELECT 2")


def test_shape_blanks_identifiers_and_numbers_only():
    a = templates.shape('SELECT "q1_2", SUM("cnt") FROM "w" GROUP BY "q1_2" -- 7')
    b = templates.shape('SELECT "q0_0", SUM("cnt") FROM "w" GROUP BY "q0_0" -- 9')
    assert a == b
    assert templates.shape("SELECT 'x'") != templates.shape("SELECT 'y'")   # string literals are kept


def test_every_template_is_found_and_the_node_query_renders():
    names = templates.template_names()
    for expected in ("frequency_set.sql", "wide_frequency_set.sql", "node_counts.sql", "node_counts_branch.sql",
                     "node_kl_terms.sql", "release_select.sql", "union_all.sql"):
        assert expected in names
    sql = templates.render_for("node_counts.sql", table="w", block_cols=["q0_1", "q1_0"], pivots=[("s0", 2)],
                               entity=False)
    assert 'GROUP BY "q0_1", "q1_0"' in sql
    pg = templates.render_for("node_counts.sql", "postgres", table="w", block_cols=["q0_1"], pivots=[("s0", 2)],
                              entity=True)
    assert "CASE WHEN" in pg and "COUNT(DISTINCT" in pg and "\"w\"" in pg


def test_progress_shows_level_and_nodes_and_is_silent_when_disabled(monkeypatch):
    clock = [1000.0]        # a clock the test moves (a loaded machine took 10.3 s to the real one's 10)
    monkeypatch.setattr("sqlanon.progress.time.perf_counter", lambda: clock[0])
    out = io.StringIO()
    p = Progress(enabled=True, stream=out)
    p.update(level=3, evaluated=42, total=100, force=True)
    p.done()
    assert "lattice level 3, 42 of 100 nodes evaluated" in out.getvalue()
    assert "left" not in out.getvalue()                 # nothing to estimate from yet
    clock[0] += 10.0                                     # 10 s in, a quarter of the lattice decided
    p.update(level=8, evaluated=50, total=100, decided=25, force=True)
    assert "about 30 s left" in out.getvalue()
    p.update(level=8, evaluated=60, total=100, left_s=4.0, force=True)
    assert "about 4 s left" in out.getvalue()
    text = out.getvalue()
    assert "5/s, 10." in text and "6/s, 10." in text          # rate = evaluated / elapsed, elapsed shown
    assert "\u2501" in text                                   # rich's bar is drawn beside the counts
    assert text.count("lattice level") >= 3 and "lattice level 0" not in text   # no empty first state
    p.update(level=8, evaluated=61, total=100)               # within 0.1 s of the last one: not redrawn
    assert "61 of 100" not in out.getvalue()
    p.message("lattice of 100 nodes")                        # ends the bar's line, then the message
    assert "about 4 s left\n" in out.getvalue() and out.getvalue().endswith("sqlanon: lattice of 100 nodes\n")
    quiet = io.StringIO()
    Progress(enabled=False, stream=quiet).update(level=1, evaluated=1, force=True)
    assert quiet.getvalue() == ""


def test_exact_sum_is_the_same_at_any_thread_count_and_within_one_ulp_of_fsum():
    # Privacy-MaxEnt's entropies and accuracy are sums of doubles; a parallel SUM adds them in an order that
    # varies from run to run (helper-28 saw mean_entropy differ in its 13th digit between two runs).
    import math

    import duckdb

    sql = templates.environment().from_string(
        "{% from \"_macros.sql\" import exact_sum %}SELECT {{ exact_sum('\"x\" * LN(\"x\")') }} FROM \"t\"").render()
    con = duckdb.connect()
    con.execute("SELECT setseed(0.25)")
    con.execute('CREATE TABLE "t" AS SELECT POW(10, 6 * random()) * random() + 1e-9 AS "x" FROM range(2000000)')
    terms = [x * math.log(x) for (x,) in con.execute('SELECT "x" FROM "t"').fetchall()]
    exact = math.fsum(terms)
    sums = set()
    for threads in (1, 2, 4, 1, 4):
        con.execute(f"SET threads = {threads}")
        sums.add(con.execute(sql).fetchone()[0])
    assert len(sums) == 1
    assert abs(sums.pop() - exact) <= math.ulp(exact)
    for dialect in ("postgres", "spark"):      # the rounding survives transpiling
        assert "DECIMAL(38, 20)" in templates.to_dialect(templates.parse(sql), dialect)


@pytest.mark.parametrize("template", ["maxent_risk_summary.sql", "maxent_risk.sql", "maxent_posterior.sql",
                                      "maxent_accuracy.sql"])
def test_maxent_sums_of_doubles_are_exact(template):
    # every SUM of a double in Privacy-MaxEnt's figures goes through exact_sum; SUMs of integer counts need not
    context = dict(estimate="e", qb="qb", truth="t", records=10, name="out", per_bucket=True, cols=[("a", "m0")],
                   qtable="qt", smap="sm", buckets="bk", sensitive="s")
    sql = templates.render(template, **context)
    sums = re.findall(r"SUM\((.*?)\)(?: AS| /|,|\n)", sql)
    assert sums and all("DECIMAL(38, 20)" in s or re.fullmatch(r'"n"|CASE WHEN "top0?" >= [^"]+ THEN "n" ELSE 0 END', s)
                        for s in sums), sums


def test_cells_xlogx_by_count_is_exact_at_any_thread_count():
    # sum of c ln c over 3 M cells: the engine counts cells per count, Python adds the few terms exactly; a plain
    # SUM of the 3 M doubles was off in its 12th digit
    import math

    import duckdb

    from sqlanon.frequency import xlogx_by_count

    con = duckdb.connect()
    con.execute('CREATE TABLE "w" AS SELECT CAST(1 + (i * 7919) % 11 AS BIGINT) AS "cnt" FROM range(3000000) t(i)')
    sql = templates.render_for("cells_xlogx.sql", table="w", qis=[], sensitives=[], entity=None)
    exact = math.fsum(m * c * math.log(c) for c, m in con.execute('SELECT "cnt", COUNT(*) FROM "w" GROUP BY 1').fetchall())
    sums = set()
    for threads in (1, 2, 4):
        con.execute(f"SET threads = {threads}")
        sums.add(xlogx_by_count(con.execute(sql).fetchall()))
    assert len(sums) == 1 and sums.pop() == pytest.approx(exact, rel=1e-15)
    assert xlogx_by_count([(1, 5), (None, 1), (2, 3)]) == 3 * 2 * math.log(2)

