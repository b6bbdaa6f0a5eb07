"""The TKDD l-diversity paper's running example (Figures 1 and 2): the inpatient table."""
from __future__ import annotations

from sqlanon.anonymizer import Anonymization
from sqlanon.policy import load_policy

from conftest import HOSPITAL

# Figure 2, row by row: (zip code, age, nationality) as printed in the paper
FIGURE_2 = [("130**", "<30", "*")] * 4 + [("1485*", ">=40", "*")] * 4 + [("130**", "3*", "*")] * 4
FIGURE_2_NODE = {"zip_code": 1, "age": 1, "nationality": 1}


def _run(tmp_path, **privacy):
    policy = load_policy(HOSPITAL / "hospital_k4.yaml")
    if privacy:
        raw = dict(policy.raw)
        raw["privacy"] = privacy
        policy = load_policy(raw, base_dir=policy.base_dir)
    return Anonymization(policy, db=tmp_path / "h.duckdb")


def test_figure_2_is_the_only_minimal_4_anonymous_node(tmp_path):
    run = _run(tmp_path)
    inc = run.search()
    assert [run.lattice.levels(n) for n in inc.minimal] == [FIGURE_2_NODE]
    assert run.search("brute_force").minimal == inc.minimal


def test_figure_2_node_is_4_anonymous_with_three_blocks(tmp_path):
    run = _run(tmp_path)
    res = run.evaluate(FIGURE_2_NODE)
    assert res.satisfied
    assert sorted(res.counts.sizes.tolist()) == [4, 4, 4]
    # one level less on any attribute breaks 4-anonymity: the node is minimal
    for attr in FIGURE_2_NODE:
        below = dict(FIGURE_2_NODE, **{attr: 0})
        assert not run.evaluate(below).satisfied, attr


def test_release_reproduces_figure_2(tmp_path):
    run = _run(tmp_path)
    run.choose()
    run.materialize()
    con = run.backend.con
    got = con.execute("SELECT zip_code, age, nationality FROM hospital_release").fetchall()
    assert sorted(got) == sorted(FIGURE_2)
    # the homogeneous block of Bob's example: the four 3* records all have cancer
    cancer = con.execute("SELECT COUNT(*) FROM hospital_release WHERE age = '3*' AND condition = 'Cancer'").fetchone()
    assert cancer == (4,)


def test_k5_needs_more_generalization(tmp_path):
    run = _run(tmp_path, k=5)
    levels = [run.lattice.levels(n) for n in run.search().minimal]
    assert FIGURE_2_NODE not in levels
    for lv in levels:       # every minimal 5-anonymous node generalizes something beyond Figure 2
        assert any(lv[a] > FIGURE_2_NODE[a] for a in lv)
