"""Anonymized marginals end to end: the policy's `release.marginals`, the greedy search and the one-attribute
path, the release (tables, views, manifest, atomicity) and `sqlanon marginals`."""
from __future__ import annotations

import json
import re

import duckdb
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from sqlanon.anonymizer import Anonymization
from sqlanon.cli import main
from sqlanon.errors import DataError, PolicyError
from sqlanon.marginals import search as msearch
from sqlanon.marginals.estimate import kl_divergence
from sqlanon.marginals.privacy import maxent_l_diversity_brute
from sqlanon.marginals.session import Marginals
from sqlanon.policy import load_policy

from conftest import adult_policy
from test_marginals import FIG1_QIS, FIGURE1, QIS, random_frame

ADULT4 = ["race", "sex", "age", "marital_status"]


# --------------------------------------------------------------------------------------------------
# policy

def _policy(marginals) -> dict:
    return {"source": {"table": "t"}, "quasi_identifiers": {"a": {"hierarchy": "suppress"}}, "sensitive": ["s"],
            "privacy": {"k": 2}, "release": {"name": "r", "marginals": marginals}}


def test_policy_marginals_are_normalized():
    p = load_policy(_policy([{"attributes": {"a": 0, "s": 0}, "name": "a_s"}, {"attributes": ["a"]}]))
    assert p.release.marginals == [{"attributes": {"a": 0, "s": 0}, "name": "a_s"},
                                   {"attributes": {"a": 0}, "name": None}]
    assert load_policy(_policy(None)).release.marginals == []


@pytest.mark.parametrize("marginals, field", [
    ({"a": 0}, "release.marginals"),
    ([{"attributes": {"a": -1}}], "release.marginals[0].attributes.a"),
    ([{"attributes": {"a": True}}], "release.marginals[0].attributes.a"),
    ([{"attributes": {}}], "release.marginals[0].attributes"),
    ([{"attrs": {"a": 0}}], "release.marginals[0].attrs"),
    (["a"], "release.marginals[0]"),
])
def test_bad_policy_marginals_name_the_field(marginals, field):
    with pytest.raises(PolicyError) as e:
        load_policy(_policy(marginals))
    assert e.value.field == field


def _hospital_like(privacy=None, **release):
    frame = random_frame(1, 80)
    con = duckdb.connect()
    con.register("f", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM f")
    policy = {"source": {"table": "t"}, "quasi_identifiers": QIS, "sensitive": ["s"],
              "privacy": privacy or {"k": 3, "l_diversity": {"variant": "distinct", "l": 2}},
              "release": {"name": "rel", **release}}
    return con, policy


@pytest.mark.parametrize("change, field", [
    ({"entity_key": "c"}, "entity_key"),
    ({"privacy": {"k": 2, "max_suppression": 0.1}}, "privacy.max_suppression"),
    ({"privacy": {"k": 2, "t_closeness": {"t": 0.3}}}, "privacy.t_closeness"),
    # every other model named as the policy names it (each was reported as privacy.t_closeness), and k-map's k,
    # of the population, never taken for the k of k-link anonymity (it silently lowered the policy's k: 4 -> 3)
    ({"privacy": {"k": 4, "k_map": {"k": 3, "sampling_fraction": 0.5}}}, "privacy.k_map"),
    ({"privacy": {"k": 2, "average_risk": 0.5}}, "privacy.average_risk"),
    ({"privacy": {"k": 2, "records_at_risk": {"threshold": 0.5, "max_fraction": 0.1}}}, "privacy.records_at_risk"),
    ({"privacy": {"k": 2, "beta_likeness": {"beta": 1.0}}}, "privacy.beta_likeness"),
    ({"privacy": {"k": 2, "delta_disclosure": {"delta": 1.5}}}, "privacy.delta_disclosure"),
    ({"privacy": {"k": 2, "l_diversity": {"variant": "recursive", "l": 2, "c": 3, "dont_care": ["p"]}}},
     "privacy.l_diversity"),
])
def test_unsupported_policies_are_refused(change, field):
    con, policy = _hospital_like()
    policy.update(change)
    if "entity_key" in change:
        policy["quasi_identifiers"] = {k: v for k, v in QIS.items() if k != "c"}
    run = Anonymization(policy, connection=con)
    with pytest.raises(PolicyError) as e:
        Marginals(run)
    assert e.value.field == field


def test_unknown_attribute_or_level_in_policy_marginals():
    for entry, field in (({"zz": 0}, "release.marginals[0].attributes.zz"),
                         ({"a": 4}, "release.marginals[0].attributes.a"),
                         ({"s": 1, "a": 1}, None), ({"a": 3}, "release.marginals[0].attributes")):
        con, policy = _hospital_like(marginals=[{"attributes": entry}])
        ms = Marginals(Anonymization(policy, connection=con))
        if field is None:      # the sensitive attribute at level 1 = left out
            assert ms.policy_marginals()[0].as_dict() == {"a": 1}
            continue
        with pytest.raises(PolicyError) as e:
            ms.policy_marginals()
        assert e.value.field == field


# --------------------------------------------------------------------------------------------------
# search

@pytest.fixture(scope="module")
def searched():
    con, policy = _hospital_like()
    run = Anonymization(policy, connection=con)
    run.score_minimal()
    run.choose()
    ms = Marginals(run, max_sensitive=2)
    return ms, ms.search(run.chosen.levels)


def test_greedy_steps_lower_kl_and_stay_private_and_decomposable(searched):
    ms, res = searched
    assert len(res.steps) >= 3
    kls = [s.kl for s in res.steps]
    assert all(b < a for a, b in zip(kls, kls[1:]))
    for step in res.steps:
        coll = ms.collection([ms.marginal(m) for m in step.marginals])
        assert coll.decomposable and coll.marginals == coll.cliques or set(coll.marginals) == set(coll.cliques)
        assert kl_divergence(coll) == pytest.approx(step.kl, abs=1e-12)
        rep = ms.check(coll)
        assert rep.satisfied, step.move
        assert maxent_l_diversity_brute(coll, ms.privacy.diversity, ms.counts).ok
        assert rep.sensitive_marginals <= 2
    # the start table is the first clique and stays covered by the final collection
    start_vs = ms.schema.vertices(res.start)
    assert any(start_vs <= ms.schema.vertices(m) for m in res.collection)


def test_greedy_stops_only_when_no_private_move_lowers_kl(searched):
    ms, res = searched
    from sqlanon.marginals import structure
    adj = structure.interaction_graph([ms.schema.vertices(m) for m in res.collection])
    better = 0
    for text, new in msearch.moves(ms.schema, adj):
        coll = msearch.collection_of(ms.schema, new)
        assert coll.decomposable, text
        if kl_divergence(coll) < res.kl - 1e-9:
            better += 1
            assert not ms.check(coll).satisfied, text
    assert better >= 1          # the privacy models, not the moves, ended the search


def test_greedy_respects_max_steps_and_the_sensitive_limit():
    con, policy = _hospital_like({"k": 2})
    run = Anonymization(policy, connection=con)
    run.score_minimal()
    run.choose()
    ms = Marginals(run, max_sensitive=1)
    res = ms.search(run.chosen.levels, max_steps=2)
    assert len(res.steps) == 3
    full = Marginals(run, max_sensitive=1).search(run.chosen.levels)
    coll = full.collection
    assert sum("s" in m for m in coll) == 1


def test_one_attribute_path(searched):
    ms, _ = searched
    start = ms.run.chosen.levels
    path, coll = ms.one_attribute_path(start)
    assert [p.attribute for p in path[1:]] and sorted(p.attribute for p in path[1:]) == sorted(ms.schema.qis)
    kls = [p.kl for p in path]
    assert all(b <= a + 1e-12 for a, b in zip(kls, kls[1:]))
    for p in path[1:]:
        if p.level is not None:
            _, n = ms.counts.get(ms.marginal({p.attribute: p.level}))
            assert n.min() >= ms.privacy.k
            if p.level > 0:     # one level finer is not k-anonymous
                _, finer = ms.counts.get(ms.marginal({p.attribute: p.level - 1}))
                assert finer.min() < ms.privacy.k
    assert ms.check(coll).satisfied and kl_divergence(coll) == pytest.approx(kls[-1])


# --------------------------------------------------------------------------------------------------
# release

def _labels(frame, ms, m):
    """Pandas reference: the source grouped by each attribute's label at the marginal's level."""
    cols = {}
    for a, lvl in m.levels:
        if a == ms.schema.sensitive:
            cols[a] = frame[a]
        else:
            h = ms.run.fs.qi(a).hierarchy
            lab = dict(zip(h.values, h.labels[lvl]))
            cols[a] = frame[a].astype(str).map(lab)
    return sorted(pd.DataFrame(cols).value_counts().reset_index().itertuples(index=False, name=None))


@pytest.mark.parametrize("kind", ["table", "view"])
def test_release_tables_and_manifest(tmp_path, kind):
    """The marginals are tables even beside a view release: rows written to the source afterwards reach the
    view, which judges them at every read, but not the marginals, whose collection was judged at the release
    (a view of them would count rows nobody judged)."""
    db = tmp_path / "m.duckdb"
    con = duckdb.connect(str(db))
    frame = random_frame(1, 80)
    con.register("f", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM f")
    con.close()
    policy = {"source": {"table": "t", "database": str(db)}, "quasi_identifiers": QIS, "sensitive": ["s"],
              "privacy": {"k": 3, "l_diversity": {"variant": "distinct", "l": 2}},
              "release": {"name": "rel", "materialize": kind,
                          "marginals": [{"attributes": {"a": 1}}, {"attributes": {"b": 0, "c": 1}, "name": "bc"}]}}
    run = Anonymization(policy, db=db)
    run.choose()
    ms = Marginals(run)
    listed = ms.policy_marginals()
    coll = ms.collection([ms.table(run.chosen.levels), *listed])
    assert ms.check(coll).satisfied
    run.materialize()
    outs = ms.release(coll, skip=ms.table(run.chosen.levels))
    run.outputs.extend(outs)
    manifest = run.manifest()
    entries = [o for o in manifest["outputs"] if o["kind"] == "marginal"]
    assert [e["name"] for e in entries] == ["rel__marginal_1", "bc"]
    assert entries[1]["levels"] == {"b": 0, "c": 1} and entries[1]["attributes"] == ["b", "c"]
    assert entries[1]["materialized"] == "table"
    assert run.backend.relation_kind("bc") == "TABLE" and run.backend.relation_kind("rel") == kind.upper()
    for m, e in zip(listed, entries):
        got = sorted(run.backend.con.execute(f'SELECT * FROM "{e["name"]}"').fetchall())
        assert got == _labels(frame, ms, m)
        assert e["rows"] == len(got)
    run.close()
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO t SELECT * FROM t")
    assert con.execute('SELECT SUM("count") FROM bc').fetchone()[0] == 80
    assert con.execute("SELECT COUNT(*) FROM rel").fetchone()[0] == (80 if kind == "table" else 160)
    con.close()


def test_release_replaces_an_earlier_larger_set_atomically(monkeypatch):
    con, policy = _hospital_like()
    run = Anonymization(policy, connection=con)
    run.choose()
    ms = Marginals(run)
    three = [ms.marginal({"a": 1}), ms.marginal({"b": 0}), ms.marginal({"c": 1})]
    ms.release(ms.collection(three))
    names = lambda: sorted(r[0] for r in con.execute(  # noqa: E731
        "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'rel%'").fetchall())
    assert names() == ["rel__marginal_1", "rel__marginal_2", "rel__marginal_3"]
    before = con.execute("SELECT * FROM rel__marginal_1 ORDER BY ALL").fetchall()
    # a failure while building the second of two new marginals leaves the earlier three untouched
    real = run.backend.execute
    calls = {"n": 0}

    def failing(template, params=None, **ctx):
        if template == "marginal_release_table.sql":
            calls["n"] += 1
            if calls["n"] == 2:
                raise DataError("disk full (simulated)")
        return real(template, params, **ctx)

    monkeypatch.setattr(run.backend, "execute", failing)
    with pytest.raises(DataError):
        ms.release(ms.collection([ms.marginal({"a": 0}), ms.marginal({"b": 0, "c": 0})]))
    monkeypatch.undo()
    assert names() == ["rel__marginal_1", "rel__marginal_2", "rel__marginal_3"]
    assert con.execute("SELECT * FROM rel__marginal_1 ORDER BY ALL").fetchall() == before
    ms.release(ms.collection([ms.marginal({"a": 0}), ms.marginal({"b": 0, "c": 0})]))
    assert names() == ["rel__marginal_1", "rel__marginal_2"]


@pytest.mark.parametrize("kind", ["table", "view"])
def test_table_and_marginals_are_one_release(monkeypatch, tmp_path, kind):
    """`run.materialize([marginals])`: a failure while building the marginals leaves the previous table and
    marginals as they were (no new table beside old marginals); a success replaces both."""
    db = tmp_path / "m.duckdb"
    con = duckdb.connect(str(db))
    con.register("f", random_frame(2, 120))
    con.execute("CREATE TABLE t AS SELECT * FROM f")
    con.close()
    policy = {"source": {"table": "t", "database": str(db)}, "quasi_identifiers": QIS, "sensitive": ["s"],
              "privacy": {"k": 3}, "release": {"name": "rel", "materialize": kind}}
    run = Anonymization(policy, db=db)
    run.choose()
    ms = Marginals(run)
    first = ms.collection([ms.table(run.chosen.levels), ms.marginal({"a": 1})])
    run.materialize([ms.companion(first, skip=ms.table(run.chosen.levels))])
    con = run.backend.con
    snapshot = lambda: (con.execute('SELECT * FROM "rel" ORDER BY ALL').fetchall(),  # noqa: E731
                        con.execute('SELECT * FROM "rel__marginal_1" ORDER BY ALL').fetchall())
    before = snapshot()
    run.use_node({q: h for q, h in zip(run.lattice.names, run.lattice.heights)})     # another table
    second = ms.collection([ms.marginal({"b": 0}), ms.marginal({"c": 0})])
    real = run.backend.execute

    def failing(template, params=None, **ctx):
        if template == "marginal_release_table.sql":
            raise DataError("disk full (simulated)")
        return real(template, params, **ctx)

    monkeypatch.setattr(run.backend, "execute", failing)
    with pytest.raises(DataError):
        run.materialize([ms.companion(second)])
    monkeypatch.undo()
    assert snapshot() == before
    leftovers = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
                 if "sqlanon_tmp" in r[0]]
    assert leftovers == []
    outs = run.materialize([ms.companion(second)])
    assert [o.name for o in outs] == ["rel", "rel__marginal_1", "rel__marginal_2"]
    assert snapshot() != before and con.execute('SELECT COUNT(*) FROM "rel"').fetchone()[0] == 120
    run.close()


@pytest.mark.parametrize("route, how", [("parquet", "alone"), ("csv kept", "companion"), ("table", "alone"),
                                        ("table", "companion"), ("table in place", "alone"),
                                        ("table in place", "companion")])
def test_marginals_of_a_source_changed_since_it_was_judged_are_refused(monkeypatch, tmp_path, route, how):
    """The marginals are counted from the source again: a file rewritten with as many rows (every sensitive value
    now 'LEAK', which the run never judged) is refused by its stamp, even where the table came from a kept staged
    copy; rows written to a table since, by their count; a table's values changed in place, by the counts of the
    cells judged. Alone (`Marginals.release`) or with the table
    (`materialize` with a companion): nothing is released, no temporary table is left."""
    from sqlanon import frequency
    monkeypatch.setattr(frequency, "STAGED_RELEASE_SHARE", 1.0)     # a staged CSV is kept for the table
    con = duckdb.connect()
    con.register("f", random_frame(1, 80))
    con.execute("CREATE TABLE t AS SELECT * FROM f")
    kind = route.split()[0]
    path, fmt = tmp_path / f"t.{kind}", ("HEADER" if kind == "csv" else "FORMAT parquet")
    if kind != "table":
        con.execute(f"COPY t TO '{path}' ({fmt})")
    policy = {"source": {"table": "t"} if kind == "table" else {kind: str(path)}, "quasi_identifiers": QIS,
              "sensitive": ["s"], "privacy": {"k": 3, "l_diversity": {"variant": "distinct", "l": 2}},
              "release": {"name": "rel"}}
    run = Anonymization(policy, connection=con)
    run.choose()
    assert (run.fs.staged is not None) is (route == "csv kept")
    ms = Marginals(run)
    coll = ms.collection([ms.table(run.chosen.levels), ms.marginal({"b": 0, "s": 0})])
    assert ms.check(coll).satisfied
    if route == "table in place":      # as many rows: the cells tell (`release.check_as_judged`)
        con.execute("UPDATE t SET s = 'LEAK'")
        detail = (r"\d+ cells of the release differ in count from those the run judged" if how == "companion"
                  else r"\d+ cells of the marginal rel__marginal_1 differ in count from those the run judged")
    elif kind == "table":
        con.execute("INSERT INTO t SELECT * FROM t LIMIT 3")
        # with the table, the table's own count stops the release first
        detail = (r"80 rows judged for release, 83 read now" if how == "companion"
                  else r"80 rows judged, 83 counted now in the marginal rel__marginal_1")
    else:
        con.execute(f"COPY (SELECT * REPLACE ('LEAK' AS s) FROM t) TO '{path}' ({fmt})")
        detail = r"its files were written, or their status changed, since this run began to read them"
    with pytest.raises(DataError, match=rf"changed while sqlanon read it \({detail}\); nothing was released"):
        if how == "companion":
            run.materialize([ms.companion(coll, skip=ms.table(run.chosen.levels))])
        else:
            ms.release(coll, skip=ms.table(run.chosen.levels))
    assert not con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'rel%'").fetchall()
    run.close()


# --------------------------------------------------------------------------------------------------
# CLI

def _write_fig1(tmp_path, marginals=None):
    tmp_path.mkdir(exist_ok=True)
    db = tmp_path / "fig1.duckdb"
    con = duckdb.connect(str(db))
    con.register("f", FIGURE1)
    con.execute("CREATE TABLE patients AS SELECT * FROM f")
    con.close()
    policy = {"source": {"table": "patients", "database": str(db)}, "quasi_identifiers": FIG1_QIS,
              "sensitive": ["condition"], "privacy": {"k": 3, "l_diversity": {"variant": "distinct", "l": 3}},
              "utility": "kl_divergence", "release": {"name": "rel", "marginals": marginals or []}}
    path = tmp_path / "fig1.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path, db


def _relations(db) -> list[str]:
    con = duckdb.connect(str(db))
    try:
        return sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
    finally:
        con.close()


def test_cli_refuses_a_leaking_collection_with_exit_3_and_writes_nothing(tmp_path):
    path, db = _write_fig1(tmp_path, [{"attributes": {"zip": 0, "condition": 0}}])
    r = CliRunner().invoke(main, ["marginals", str(path), "--start", "zip=1,age=3", "-q"])
    assert r.exit_code == 3, r.output
    assert "not private" in r.output and "zip=13053" in r.output
    assert _relations(db) == ["patients"]


def test_a_listed_marginal_that_is_the_table_is_said_to_be_it(tmp_path):
    """A listed marginal with the table's attributes and levels was left out without a word (no table of its
    name); it is the released table, and the run says so."""
    path, db = _write_fig1(tmp_path, [{"attributes": {"zip": 1, "age": 3, "condition": 0}, "name": "mytab"},
                                      {"attributes": {"zip": 0}, "name": "zips"}])
    r = CliRunner().invoke(main, ["marginals", str(path), "--start", "zip=1,age=3"])
    assert r.exit_code == 0, r.output
    assert ("note: release.marginals[0] (mytab) has the released table's attributes and levels: it is the table "
            "rel, not written twice") in r.stderr
    assert _relations(db) == ["patients", "rel", "sqlanon_releases", "zips"]


def test_the_report_of_a_refused_run_is_replaced_by_the_next_release(tmp_path):
    """A refused run writes its report to --json; the next run that releases replaced nothing there: "refusing
    to overwrite ...: sqlanon did not write it ... or pass --force", an option marginals does not have."""
    out = tmp_path / "m.json"
    path, db = _write_fig1(tmp_path, [{"attributes": {"zip": 0, "condition": 0}}])
    r = CliRunner().invoke(main, ["marginals", str(path), "--start", "zip=1,age=3", "--json", str(out), "-q"])
    assert r.exit_code == 3 and json.loads(out.read_text())["sqlanon_report"].endswith("marginals")
    (tmp_path / "b").mkdir()
    path, db = _write_fig1(tmp_path / "b", [{"attributes": {"zip": 0}, "name": "zips"}])
    r = CliRunner().invoke(main, ["marginals", str(path), "--start", "zip=1,age=3", "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["marginals"]["privacy"]["satisfied"]
    other = tmp_path / "other.json"
    other.write_text("{}")              # a file sqlanon did not write: refused, and no --force suggested
    r = CliRunner().invoke(main, ["marginals", str(path), "--start", "zip=1,age=3", "--json", str(other), "-q"])
    assert r.exit_code == 2 and "sqlanon did not write it" in r.output and "--force" not in r.output, r.output
    assert other.read_text() == "{}"


def test_cli_releases_policy_marginals_and_writes_the_manifest(tmp_path):
    path, db = _write_fig1(tmp_path, [{"attributes": {"zip": 0}, "name": "zips"}])
    out = tmp_path / "m.json"
    r = CliRunner().invoke(main, ["marginals", str(path), "--start", "zip=1,age=3", "--json", str(out)])
    assert r.exit_code == 0, r.output
    m = json.loads(out.read_text())
    assert m["marginals"]["privacy"]["satisfied"] and m["marginals"]["mode"] == "none"
    assert m["marginals"]["kl_divergence"] < m["marginals"]["single_table_kl"]
    assert {"kind": "marginal", "name": "zips", "rows": 3, "attributes": ["zip"], "levels": {"zip": 0},
            "materialized": "table", "count_column": "count"} in m["outputs"]
    assert _relations(db) == ["patients", "rel", "sqlanon_releases", "zips"]
    assert "released marginal zips: 3 rows" in r.output


def test_cli_search_and_bad_input(tmp_path):
    path, db = _write_fig1(tmp_path)
    r = CliRunner().invoke(main, ["marginals", str(path), "--json", "-", "-q", "--no-release"])
    assert r.exit_code == 0, r.output
    m = json.loads(r.output)
    steps = m["marginals"]["search"][0]["steps"]
    assert steps[0]["move"] == "start" and m["marginals"]["kl_divergence"] == steps[-1]["kl"]
    assert _relations(db) == ["patients"]
    r = CliRunner().invoke(main, ["marginals", str(path), "--search", "one-attribute", "--json", "-", "-q"])
    assert r.exit_code == 0, r.output
    assert [p["attribute"] for p in json.loads(r.output)["marginals"]["path"]][0] == "start"
    bad, _ = _write_fig1(tmp_path / "bad", [{"attributes": {"zipcode": 0}}])
    r = CliRunner().invoke(main, ["marginals", str(bad), "-q"])
    assert r.exit_code == 2 and "release.marginals[0].attributes.zipcode" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["marginals", str(path), "--max-sensitive", "0", "-q"])
    assert r.exit_code == 2 and "--max-sensitive" in r.output
    listed, _ = _write_fig1(tmp_path / "listed", [{"attributes": {"zip": 0}}])
    r = CliRunner().invoke(main, ["marginals", str(listed), "--search", "greedy", "-q"])
    assert r.exit_code == 2 and "--search" in r.output
    # the walk continues from the greedy's collection, seeded: never worse, the same on a second run
    walks = []
    for _ in range(2):
        r = CliRunner().invoke(main, ["marginals", str(path), "--search", "walk", "--seed", "3", "--walk-steps", "40",
                                      "--json", "-", "-q", "--no-release"])
        assert r.exit_code == 0, r.output
        walks.append(json.loads(r.output)["marginals"])
    assert walks[0]["walk"] == {**walks[1]["walk"], "seconds": walks[0]["walk"]["seconds"]}
    assert walks[0]["walk"]["kl"] <= walks[0]["search"][0]["kl"] + 1e-12 and walks[0]["walk"]["proposals"] == 40
    assert walks[0]["kl_divergence"] == pytest.approx(walks[0]["walk"]["kl"])
    for alpha, ok in (("0", False), ("1.5", False), ("0.1", True)):
        r = CliRunner().invoke(main, ["marginals", str(path), "--relaxation", alpha, "-q", "--no-release"])
        assert (r.exit_code == 2 and "--relaxation" in r.output) if not ok else r.exit_code in (0, 3), r.output


def test_cli_start_options(tmp_path):
    path, db = _write_fig1(tmp_path)
    r = CliRunner().invoke(main, ["marginals", str(path), "--start", "all", "--json", "-", "-q", "--no-release"])
    assert r.exit_code == 0, r.output
    m = json.loads(r.output)
    searches = m["marginals"]["search"]
    assert len(searches) == len(m["lattice"]["minimal"]) >= 1
    best = min(searches, key=lambda x: x["kl"])
    assert m["marginals"]["kl_divergence"] == pytest.approx(best["kl"])
    # the released table is the start of the best search (attributes at '*' are left out of a marginal)
    assert all(m["chosen"]["levels"][a] == v for a, v in best["start"].items() if a != "condition")
    # a start node that is not private: nothing is searched from it, nothing released
    r = CliRunner().invoke(main, ["marginals", str(path), "--search", "one-attribute", "--start", "zip=0,age=0", "-q"])
    assert r.exit_code == 3 and "not private" in r.output
    assert _relations(db) == ["patients"]


# --------------------------------------------------------------------------------------------------
# Adult

def test_adult_five_marginals_scored_and_checked_like_brute_force():
    run = Anonymization(adult_policy(ADULT4, {"k": 6, "l_diversity": {"variant": "entropy", "l": 3}}),
                        connection=duckdb.connect())
    ms = Marginals(run)
    table = ms.table({"race": 0, "sex": 0, "age": 4, "marital_status": 1})
    private = [table, ms.marginal({"age": 1}), ms.marginal({"age": 2, "occupation": 0}),
               ms.marginal({"sex": 0, "age": 3, "occupation": 0}), ms.marginal({"sex": 0, "marital_status": 0})]
    # each marginal entropy 3-diverse by itself, but their reconstruction is not (only Algorithm 1's joins see it)
    leaking = private[:3] + [ms.marginal({"age": 3, "marital_status": 1, "occupation": 0}),
                             ms.marginal({"marital_status": 0, "occupation": 0})]
    for marginals, want in ((private, True), (leaking, False)):
        coll = ms.collection(marginals)
        assert coll.decomposable and len(coll.cliques) == 5
        rep = ms.check(coll)
        assert rep.diversity.ok == want == maxent_l_diversity_brute(coll, ms.privacy.diversity, ms.counts).ok
        assert rep.k_link >= rep.k_combinatorial >= 6      # k-combinatorial: the tests of test_marginals.py
        assert rep.satisfied == want and not rep.diversity.reason
    single = ms.single_table_kl(table)
    assert single == pytest.approx(1.3923353593, rel=1e-9)       # = metrics.kl_divergence of that node
    assert kl_divergence(ms.collection(private)) < 0.5 * single


def test_a_non_decomposable_collection_is_scored_but_never_private():
    con, policy = _hospital_like({"k": 1})
    ms = Marginals(Anonymization(policy, connection=con))
    coll = ms.collection([ms.marginal({"a": 0, "b": 0}), ms.marginal({"b": 0, "c": 0}), ms.marginal({"a": 0, "c": 0})])
    assert not coll.decomposable
    rep = ms.check(coll)
    assert rep.k_link >= 1 and rep.k_combinatorial is None and not rep.satisfied
    assert "not_decomposable" in rep.as_dict()
    assert ms.kl(coll) == pytest.approx(kl_divergence(coll)) and ms.kl(coll) > 0


def test_adult_experiment_on_a_sample(tmp_path):
    from sqlanon.experiments import marginals as experiment
    from sqlanon.experiments.common import Context
    ctx = Context(tmp_path, sample_rows=2500)
    try:
        res = experiment.run(ctx)
    finally:
        ctx.close()
    assert res["rows"] == 2500 and res["tables"]
    for t in res["tables"]:
        assert t["kl"] == pytest.approx(t["kl_metric"], abs=1e-9)     # the closed form of {table} = the metric
        assert t["plus"]["kl"] < t["kl"] <= res["suppressed_kl"] + 1e-9
        assert t["plus"]["privacy"]["satisfied"]
        kls = [p["kl"] for p in t["path"]]
        assert all(b <= a + 1e-12 for a, b in zip(kls, kls[1:]))
    opt = res["opt"]
    assert opt["kl"] <= min(t["plus"]["kl"] for t in res["tables"]) and opt["privacy"]["satisfied"]
    assert opt["kl"] == min(w["kl"] for w in opt["walks"]) and len(opt["walks"]) == len(res["tables"]) + 1
    assert res["claims"]["b_is_opt"]["holds"] == (opt["kl"] >= min(t["plus"]["kl"] for t in res["tables"]) - 1e-9)
    text = experiment.markdown(res)
    assert "| OPT | " in text
    assert [c["collection"] for c in res["checks"]] == [t["label"] + "+" for t in res["tables"]] + ["OPT"]
    for c in res["checks"]:
        oks = [c["relaxed"][str(a)]["dominance"]["ok"] for a in experiment.RELAXATIONS]
        assert oks == sorted(oks, reverse=True)        # a larger alpha only asks more
    assert "relaxed alpha = 0.25" in text
    assert f"| {res['tables'][0]['label']} | " in text and "Where we differ" in text
    assert experiment.plots(res, tmp_path) == ["marginals.png"]


def test_a_marginal_over_columns_named_count_counts_in_a_column_of_its_own(tmp_path):
    """An attribute named ``Count`` (DuckDB matches names whatever their case) and one named ``count_rows``:
    the count column is ``count_rows_2``, named in the manifest, and every attribute keeps its values."""
    frame = random_frame(1, 80).rename(columns={"b": "Count", "c": "count_rows"})
    con = duckdb.connect()
    con.register("f", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM f")
    qis = {"a": QIS["a"], "Count": QIS["b"], "count_rows": QIS["c"]}
    policy = {"source": {"table": "t"}, "quasi_identifiers": qis, "sensitive": ["s"],
              "privacy": {"k": 3, "l_diversity": {"variant": "distinct", "l": 2}},
              "release": {"name": "rel", "marginals": [{"attributes": {"Count": 0, "count_rows": 0}, "name": "m"}]}}
    run = Anonymization(policy, connection=con)
    run.choose()
    ms = Marginals(run)
    listed = ms.policy_marginals()
    coll = ms.collection([ms.table(run.chosen.levels), *listed])
    run.materialize()
    outs = ms.release(coll, skip=ms.table(run.chosen.levels))
    assert [o.as_dict()["count_column"] for o in outs] == ["count_rows_2"]
    got = con.execute('SELECT "Count", count_rows, count_rows_2 FROM m ORDER BY 1, 2').fetchall()
    want = frame.groupby(["Count", "count_rows"]).size()
    assert got == [(b, c, int(n)) for (b, c), n in want.items()]
    run.close()


@pytest.mark.parametrize("names, release, message", [
    (["m", "m"], "rel", "two marginals are named 'm' and 'm'"),
    (["m", "M"], "rel", "two marginals are named 'm' and 'M'"),          # one table to DuckDB: a Catalog Error
    (["REL"], "rel", "name 'REL' is reserved or is the release's own name"),
    (["__sqlanon_m"], "rel", "name '__sqlanon_m' is reserved"),
    (["main.sqlanon_releases"], "rel", "is reserved"),
    ([None, "REL__MARGINAL_1"], "rel", "two marginals are named 'rel__marginal_1' and 'REL__MARGINAL_1'"),
    (["main.rel"], "rel", "name 'main.rel' is reserved or is the release's own name"),   # one temporary table
    (["m", "main.M"], "rel", "two marginals are named 'm' and 'main.M'"),
])
def test_marginal_names_one_to_the_database_are_refused(names, release, message):
    from sqlanon.marginals.collection import Marginal
    from sqlanon.marginals.release import marginal_names
    with pytest.raises(PolicyError, match=re.escape(message)) as e:
        marginal_names(release, [Marginal((("a", 0),), n) for n in names])
    assert e.value.field == "release.marginals"
    assert marginal_names("rel", [Marginal((("a", 0),), n) for n in (None, "m", "n")]) == ["rel__marginal_1", "m", "n"]
