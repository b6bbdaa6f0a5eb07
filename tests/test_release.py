"""The release: k-anonymous, no row lost beyond the suppressed ones, written atomically; metrics."""
from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd
import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.policy import load_policy

from conftest import ADULT_QIS, HOSPITAL, adult_policy


@pytest.mark.parametrize("k, supp", [(6, 0.0), (25, 0.02)])
def test_adult_release_is_k_anonymous_and_keeps_every_unsuppressed_row(tmp_path, k, supp):
    policy = adult_policy(5, {"k": k, "max_suppression": supp},
                          release={"name": "rel", "export": [str(tmp_path / "rel.parquet")]})
    run = Anonymization(policy, db=tmp_path / "out.duckdb")
    run.choose()
    outputs = run.materialize()
    con = run.backend.con
    qis = ", ".join(f'"{q}"' for q in list(ADULT_QIS)[:5])
    sizes = [n for (n,) in con.execute(f"SELECT COUNT(*) FROM rel GROUP BY {qis}").fetchall()]
    assert min(sizes) >= k
    suppressed = run.chosen.result.suppressed_rows
    assert suppressed <= math.floor(supp * 45222)
    assert sum(sizes) == 45222 - suppressed
    assert outputs[0].rows == 45222 - suppressed and len(sizes) == run.chosen.result.classes
    # the sensitive column is released unchanged for the kept rows
    kept = dict(con.execute("SELECT occupation, COUNT(*) FROM rel GROUP BY 1").fetchall())
    assert sum(kept.values()) == 45222 - suppressed
    exported = duckdb.connect().execute("SELECT COUNT(*) FROM read_parquet(?)", [str(tmp_path / "rel.parquet")])
    assert exported.fetchall()[0][0] == sum(sizes)
    if supp:
        assert suppressed > 0, "this case is meant to exercise suppression"


def test_view_release_equals_table_release(tmp_path):
    db = tmp_path / "v.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    con.close()
    raw = load_policy(HOSPITAL / "hospital_k4.yaml").raw
    for kind in ("table", "view"):
        raw = dict(raw, source={"database": str(db), "table": "hospital"},
                   release={"name": f"rel_{kind}", "materialize": kind})
        run = Anonymization(load_policy(raw, base_dir=HOSPITAL), db=db)
        run.choose()
        run.materialize()
        run.close()
    con = duckdb.connect(str(db))      # a new process-like connection: the view must not need temp tables
    t = con.execute("SELECT * FROM rel_table ORDER BY ALL").fetchall()
    v = con.execute("SELECT * FROM rel_view ORDER BY ALL").fetchall()
    con.close()
    assert t == v and len(t) == 12


def test_failed_swap_leaves_the_previous_release(tmp_path, monkeypatch):
    raw = dict(load_policy(HOSPITAL / "hospital_k4.yaml").raw, release={"name": "rel"})
    db = tmp_path / "a.duckdb"
    run = Anonymization(load_policy(raw, base_dir=HOSPITAL), db=db)
    run.choose()
    run.materialize()
    before = run.backend.con.execute("SELECT * FROM rel ORDER BY ALL").fetchall()
    real = run.backend.execute

    def failing(template, params=None, **ctx):
        if template == "rename_table.sql":
            raise RuntimeError("disk full")
        return real(template, params, **ctx)

    monkeypatch.setattr(run.backend, "execute", failing)
    with pytest.raises(RuntimeError):
        run.materialize()
    con = run.backend.con
    assert con.execute("SELECT * FROM rel ORDER BY ALL").fetchall() == before
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert not any("tmp" in t for t in tables), tables


def _kl_reference(frame: pd.DataFrame, qis, hierarchies, levels, sensitive, suppressed=None) -> float:
    """KL-divergence straight from the definition (TKDD Section 6), in pandas, for a small table.

    `suppressed`: a boolean mask of rows whose block is suppressed; they are generalized to '*' everywhere.
    """
    n = len(frame)
    g = frame.copy()
    area = np.ones(n)
    suppressed = np.zeros(n, dtype=bool) if suppressed is None else np.asarray(suppressed)
    for q in qis:
        h = hierarchies[q]
        lab = dict(zip(h.values, h.labels[levels[q]]))
        g[q] = frame[q].astype(str).map(lab)
        covers = pd.Series(h.labels[levels[q]]).value_counts()
        area *= np.where(suppressed, len(h.values), g[q].map(covers).to_numpy())
        g.loc[suppressed, q] = "*"
    gen_counts = g.groupby(qis + [sensitive])[sensitive].transform("size").to_numpy()
    cells = frame.assign(_a=area, _g=gen_counts).groupby([*qis, sensitive]).agg(
        c=(sensitive, "size"), a=("_a", "first"), gc=("_g", "first"))
    f = cells["c"] / n
    fstar = cells["gc"] / (n * cells["a"])
    return float((f * np.log(f / fstar)).sum())


@pytest.mark.parametrize("levels", [{"zip_code": 1, "age": 1, "nationality": 1},
                                    {"zip_code": 0, "age": 2, "nationality": 1},
                                    {"zip_code": 2, "age": 2, "nationality": 1},
                                    {"zip_code": 0, "age": 0, "nationality": 0}])
def test_metrics_of_hospital_nodes_match_their_definitions(tmp_path, levels):
    from sqlanon.metrics import all_metrics
    raw = dict(load_policy(HOSPITAL / "hospital_k4.yaml").raw, privacy={"k": 1})   # no block fails: none suppressed
    run = Anonymization(load_policy(raw, base_dir=HOSPITAL), db=tmp_path / "m.duckdb")
    res = run.evaluate(levels)
    m = all_metrics(run.fs, res)
    frame = pd.read_csv(HOSPITAL / "hospital.csv", dtype=str)
    hier = {q.name: q.hierarchy for q in run.fs.qis}
    qis = list(levels)
    expected_kl = _kl_reference(frame, qis, hier, levels, "condition")
    assert m["kl_divergence"] == pytest.approx(expected_kl, abs=1e-9)
    sizes = res.counts.sizes
    assert m["discernibility"] == float((sizes ** 2).sum())
    assert m["avg_class_size"] == pytest.approx(12 / len(sizes))
    assert m["height"] == sum(levels.values())


def test_kl_is_zero_at_the_bottom_and_largest_at_the_top(tmp_path):
    from sqlanon.metrics import kl_divergence
    raw = dict(load_policy(HOSPITAL / "hospital_k4.yaml").raw, privacy={"k": 1})   # no block fails: none suppressed
    run = Anonymization(load_policy(raw, base_dir=HOSPITAL), db=tmp_path / "m.duckdb")
    bottom = kl_divergence(run.fs, run.evaluate({"zip_code": 0, "age": 0, "nationality": 0}))
    top = kl_divergence(run.fs, run.evaluate({"zip_code": 2, "age": 2, "nationality": 1}))
    assert bottom == pytest.approx(0.0, abs=1e-12)
    assert top > kl_divergence(run.fs, run.evaluate({"zip_code": 1, "age": 1, "nationality": 1})) > 0


def test_discernibility_charges_suppressed_rows_the_table_size(tmp_path):
    from sqlanon.metrics import discernibility, kl_divergence
    raw = dict(load_policy(HOSPITAL / "hospital_k4.yaml").raw, privacy={"k": 4, "max_suppression": 0.5})
    run = Anonymization(load_policy(raw, base_dir=HOSPITAL), db=tmp_path / "d.duckdb")
    res = run.evaluate({"zip_code": 0, "age": 2, "nationality": 1})
    # zip level 0, ages all: 13053 (4), 13068 (4), 14850 (2), 14853 (2): 4 rows suppressed
    assert res.suppressed_rows == 4 and res.satisfied
    assert discernibility(res, 12) == 4 ** 2 + 4 ** 2 + 12 * 4
    # KL with the suppressed rows generalized to the root of every hierarchy
    frame = pd.read_csv(HOSPITAL / "hospital.csv", dtype=str)
    hier = {q.name: q.hierarchy for q in run.fs.qis}
    expected = _kl_reference(frame, list(res.levels), hier, res.levels, "condition",
                             suppressed=frame["zip_code"].isin(["14850", "14853"]).to_numpy())
    assert kl_divergence(run.fs, res) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("k, supp", [(6, 0.0), (25, 0.02)])
def test_printed_select_gives_exactly_the_released_rows(tmp_path, k, supp):
    """`run.sql()` (and `sqlanon sql`) is one self-contained SELECT: run on its own, it returns the release,
    suppressed blocks left out by their codes listed inline, in every dialect sqlglot can read back."""
    import sqlglot
    run = Anonymization(adult_policy(5, {"k": k, "max_suppression": supp}, release={"name": "rel"}),
                        db=tmp_path / "out.duckdb")
    run.choose()
    run.materialize()
    con = run.backend.con
    text = run.sql()
    assert ("VALUES" in text) == bool(run.chosen.result.suppressed_rows) == bool(supp)
    assert sorted(con.execute(text).fetchall()) == sorted(con.execute("SELECT * FROM rel").fetchall())
    for dialect in ("postgres", "spark", "snowflake"):
        assert len(sqlglot.parse(run.sql(dialect), read=dialect)) == 1
    run.close()
