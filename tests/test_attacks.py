"""Attacks (sqlanon.attacks and `sqlanon attack`): homogeneity (TKDD Sec. 3.1, Figs. 9-12) and
similarity (ICDE 2007), on hand-built count matrices, the paper's hospital table and Adult."""
from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon import attacks
from sqlanon.anonymizer import Anonymization
from sqlanon.cli import main
from sqlanon.errors import DataError, PolicyError
from sqlanon.policy import load_policy

from conftest import ADULT, HOSPITAL, adult_policy

FIGURE_2_NODE = {"zip_code": 1, "age": 1, "nationality": 1}


# --------------------------------------------------------------------------------------------------
# the vectorized measures on hand-built counts

COUNTS = np.array([
    [4, 0, 0],     # homogeneous
    [19, 1, 0],    # exactly 95 %
    [18, 1, 1],    # 90 %
    [0, 0, 0],     # empty block
    [0, 3, 0],     # homogeneous, another value
    [1, 1, 1],
])


def test_homogeneous_blocks_all_equal():
    assert attacks.homogeneous_blocks(COUNTS).tolist() == [True, False, False, False, True, False]
    assert attacks.exposed_rows(COUNTS, attacks.homogeneous_blocks(COUNTS)) == 7


def test_homogeneous_blocks_at_95_percent_includes_the_boundary():
    # 19 of 20 is exactly 95 % (0.95 * 20 = 19.000000000000004 in floating point)
    assert attacks.homogeneous_blocks(COUNTS, 0.95).tolist() == [True, True, False, False, True, False]
    assert attacks.homogeneous_blocks(COUNTS, 0.9).tolist() == [True, True, True, False, True, False]
    assert attacks.exposed_rows(COUNTS, attacks.homogeneous_blocks(COUNTS, 0.95)) == 27


def test_top_share_and_dominant_value():
    np.testing.assert_allclose(attacks.top_share(COUNTS), [1, 0.95, 0.9, 0, 1, 1 / 3])
    assert attacks.dominant_value(COUNTS).tolist() == [0, 0, 0, 0, 1, 0]


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, float("nan")])
def test_threshold_must_be_a_share(bad):
    with pytest.raises(ValueError):
        attacks.homogeneous_blocks(COUNTS, bad)


def test_similar_blocks_by_groups():
    # the ICDE paper's example: salary and three stomach diseases vs lung diseases
    # values: gastric ulcer, gastritis, stomach cancer, flu, bronchitis, pneumonia
    groups = [0, 0, 0, 1, 1, 1]
    counts = np.array([
        [1, 1, 1, 0, 0, 0],   # all stomach: vulnerable although 3-diverse
        [1, 0, 1, 0, 1, 0],   # mixed
        [0, 0, 0, 2, 1, 0],   # all respiratory
        [0, 0, 0, 0, 0, 0],   # empty
    ])
    assert attacks.group_counts(counts, groups).tolist() == [[3, 0], [2, 1], [0, 3], [0, 0]]
    assert attacks.similar_blocks(counts, groups).tolist() == [True, False, True, False]
    # a homogeneous block is also similar; the converse does not hold
    assert not attacks.homogeneous_blocks(counts)[0]


def test_groups_must_cover_every_value():
    with pytest.raises(ValueError):
        attacks.group_counts(COUNTS, [0, 1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), min_size=4, max_size=4), min_size=1, max_size=12),
       st.sampled_from([1.0, 0.95, 0.8, 0.5]))
def test_measures_match_a_plain_loop(rows, threshold):
    counts = np.array(rows)
    groups = [0, 0, 1, 2]
    expect_h, expect_s = [], []
    for r in rows:
        n = sum(r)
        expect_h.append(n > 0 and max(r) >= threshold * n - 1e-9)
        g = {groups[i] for i, c in enumerate(r) if c}
        expect_s.append(len(g) == 1)
    assert attacks.homogeneous_blocks(counts, threshold).tolist() == expect_h
    assert attacks.similar_blocks(counts, groups).tolist() == expect_s


# --------------------------------------------------------------------------------------------------
# the hospital table of TKDD Figures 1 and 2

@pytest.fixture
def hospital(tmp_path):
    run = Anonymization(load_policy(HOSPITAL / "hospital_k4.yaml"), db=tmp_path / "h.duckdb")
    yield run
    run.close()


def test_bobs_homogeneous_cancer_block(hospital):
    rep = attacks.homogeneity_attack(hospital, FIGURE_2_NODE)
    assert (rep.blocks, rep.rows, rep.affected_blocks, rep.exposed_rows) == (3, 12, 1, 4)
    assert rep.by_disclosed == {"Cancer": 4}
    [ex] = rep.examples
    assert ex.block == {"zip_code": "130**", "age": "3*", "nationality": "*"}
    assert (ex.rows, ex.disclosed, ex.share) == (4, "Cancer", 1.0)


def test_homogeneity_on_every_minimal_node(hospital):
    reps = attacks.attack_minimal(hospital, "homogeneity")
    assert [r.levels for r in reps] == [FIGURE_2_NODE]
    assert attacks.summarize(reps) == {"tables": 1, "affected_tables": 1, "avg_affected_groups": 1.0,
                                       "avg_affected_tuples": 4.0, "max_affected_tuples": 4}


def test_half_homogeneous_blocks(hospital):
    # blocks of Figure 2: (HD, HD, VI, VI), (C, HD, VI, VI), (C, C, C, C): each top value holds >= 50 %
    rep = attacks.homogeneity_attack(hospital, FIGURE_2_NODE, threshold=0.5)
    assert (rep.affected_blocks, rep.exposed_rows) == (3, 12)
    assert rep.by_disclosed == {"Cancer": 4, "Heart Disease": 4, "Viral Infection": 4}
    assert attacks.homogeneity_attack(hospital, FIGURE_2_NODE, threshold=0.51).exposed_rows == 4


def test_similarity_with_a_grouping(hospital):
    groups = {"Cancer": "cancer", "Heart Disease": "other", "Viral Infection": "other"}
    rep = attacks.similarity_attack(hospital, FIGURE_2_NODE, groups=groups)
    # <30 block: heart disease and viral infection (one group); 3* block: all cancer
    assert (rep.affected_blocks, rep.exposed_rows) == (2, 8)
    assert rep.by_disclosed == {"cancer": 4, "other": 4}
    assert rep.groups == ["cancer", "other"]


def test_release_attacks_in_the_manifest(hospital):
    groups = {"Cancer": "cancer", "Heart Disease": "other", "Viral Infection": "other"}
    m = attacks.manifest_with_attacks(hospital, groups=groups)      # searches and chooses Figure 2
    assert m["chosen"]["levels"] == FIGURE_2_NODE
    assert [(a["attack"], a["threshold"], a["exposed_rows"]) for a in m["attacks"]] == [
        ("homogeneity", 1.0, 4), ("homogeneity", 0.95, 4), ("similarity", 1.0, 8)]
    json.dumps(m)      # plain JSON types


def test_similarity_groups_from_a_csv(hospital, tmp_path):
    path = tmp_path / "groups.csv"
    path.write_text("condition,group\nCancer,a\nHeart Disease,a\nViral Infection,b\n")
    rep = attacks.similarity_attack(hospital, FIGURE_2_NODE, groups=path)
    assert (rep.affected_blocks, rep.exposed_rows) == (1, 4)      # only the all-cancer block
    path.write_text("condition,group\nCancer,a\nHeart Disease,a\n")
    with pytest.raises(DataError, match="Viral Infection"):
        attacks.similarity_attack(hospital, FIGURE_2_NODE, groups=path)


def test_similarity_needs_groups(hospital):
    with pytest.raises(PolicyError, match="groups"):
        attacks.similarity_attack(hospital, FIGURE_2_NODE)


@pytest.mark.parametrize("groups, field", [
    ({"Cancer": "all", "Heart Disease": "all", "Viral Infection": "all"}, "groups"),
    ("condition,group\nCancer,x\nHeart Disease,x\nViral Infection,x\n", "--groups"),
])
def test_similarity_with_one_group_is_refused(hospital, tmp_path, groups, field):
    """One group holding every value flagged every block, 100 % exposed (and failed --fail-if-exposed gates):
    the group discloses what the whole table does."""
    if isinstance(groups, str):
        (tmp_path / "g.csv").write_text(groups)
        groups = tmp_path / "g.csv"
    with pytest.raises(PolicyError, match="two groups or more") as e:
        attacks.similarity_attack(hospital, FIGURE_2_NODE, groups=groups)
    assert e.value.field == field


def test_bad_node(hospital):
    with pytest.raises(PolicyError, match="nationality"):
        attacks.homogeneity_attack(hospital, {"zip_code": 1, "age": 1})
    with pytest.raises(PolicyError, match="level"):
        attacks.homogeneity_attack(hospital, {"zip_code": 9, "age": 1, "nationality": 1})


def test_suppressed_blocks_are_not_released(tmp_path):
    raw = dict(load_policy(HOSPITAL / "hospital_k4.yaml").raw)
    raw["privacy"] = {"k": 5, "max_suppression": 0.34}      # a budget of 4 rows
    with Anonymization(load_policy(raw, base_dir=HOSPITAL), db=tmp_path / "s.duckdb") as run:
        node = {"zip_code": 1, "age": 2, "nationality": 1}   # blocks 130** (8 rows) and 1485* (4: suppressed)
        rep = attacks.homogeneity_attack(run, node, threshold=0.5)
        assert (rep.blocks, rep.rows, rep.suppressed_rows) == (1, 8, 4)
        assert (rep.affected_blocks, rep.exposed_rows) == (1, 8)   # 4 cancer of 8: the 1485* block is not counted


# --------------------------------------------------------------------------------------------------
# Adult: the database path against an independent pandas computation

def test_adult_bottom_node_matches_pandas():
    qis = ["age", "sex", "race", "marital_status", "education"]
    policy = adult_policy(qis, {"k": 1})
    policy["sensitive"] = ["salary"]
    with Anonymization(policy, db=":memory:") as run:
        rep = attacks.homogeneity_attack(run, {q: 0 for q in qis})
        near = attacks.homogeneity_attack(run, {q: 0 for q in qis}, threshold=0.95)
        top = attacks.homogeneity_attack(run, {q: h for q, h in zip(run.lattice.names, run.lattice.heights)})
    df = duckdb.connect().execute("SELECT * FROM read_parquet(?)", [str(ADULT / "adult.parquet")]).df()
    g = df.groupby(qis)["salary"]
    n, top_n = g.size(), g.agg(lambda s: s.value_counts().iloc[0])
    assert rep.blocks == len(n)
    assert rep.affected_blocks == int((top_n == n).sum())
    assert rep.exposed_rows == int(n[top_n == n].sum())
    assert near.exposed_rows == int(n[top_n >= 0.95 * n - 1e-9].sum())
    assert (top.blocks, top.affected_blocks, top.exposed_rows) == (1, 0, 0)   # 34,014 vs 11,208


def test_adult_similarity_uses_the_occupation_hierarchy():
    policy = adult_policy(["age", "sex"], {"k": 5})
    policy["sensitive"] = {"occupation": {"hierarchy": str(ADULT / "hierarchies" / "occupation.csv")}}
    with Anonymization(policy, db=":memory:") as run:
        rep = attacks.similarity_attack(run, {"age": 0, "sex": 0})
        assert rep.groups == ["White-collar", "Blue-collar", "Service"]
        assert rep.rows == 45222 and rep.affected_blocks >= 1
        for ex in rep.examples:
            assert ex.disclosed in rep.groups and ex.share == 1.0


# --------------------------------------------------------------------------------------------------
# the command line

@pytest.fixture
def hospital_dir_copy(hospital_dir):
    return hospital_dir


def test_cli_attack_release(hospital_dir_copy):
    r = CliRunner().invoke(main, ["attack", str(hospital_dir_copy / "hospital_k4.yaml")])
    assert r.exit_code == 0, r.output
    assert "1 of 3 blocks expose 4 of 12 rows" in r.output
    assert "zip_code=130**, age=3*, nationality=*: 4 rows, all Cancer" in r.output


def test_cli_attack_json_minimal_and_gate(hospital_dir_copy):
    policy = str(hospital_dir_copy / "hospital_k4.yaml")
    r = CliRunner().invoke(main, ["attack", policy, "--minimal", "--json", "-", "-q"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["summary"][0] == {"tables": 1, "affected_tables": 1, "avg_affected_groups": 1.0,
                                  "avg_affected_tuples": 4.0, "max_affected_tuples": 4, "attack": "homogeneity",
                                  "threshold": 1.0}
    r = CliRunner().invoke(main, ["attack", policy, "--fail-if-exposed", "-q"])
    assert r.exit_code == 3


def test_cli_attack_manifest_and_table(hospital_dir_copy, tmp_path):
    policy = str(hospital_dir_copy / "hospital_k4.yaml")
    out = tmp_path / "m.json"
    r = CliRunner().invoke(main, ["attack", policy, "--manifest", str(out), "-q"])
    assert r.exit_code == 0, r.output
    m = json.loads(out.read_text())
    assert m["chosen"]["levels"] == FIGURE_2_NODE
    assert [a["exposed_rows"] for a in m["attacks"]] == [4, 4]      # all-equal and >= 95 %
    assert CliRunner().invoke(main, ["anonymize", policy, "-q"]).exit_code == 0
    r = CliRunner().invoke(main, ["attack", policy, "--table", "hospital_release"])
    assert r.exit_code == 0, r.output
    assert "table hospital_release: 3 blocks, 12 rows" in r.output
    assert "4 rows, all Cancer" in r.output


@pytest.mark.parametrize("privacy, budget_text", [({"k": 5, "max_suppression": 0.34}, " within its suppression "
                                                     "budget of 4 rows"), ({"k": 5}, "")])
def test_cli_attack_on_a_node_that_fails_says_no_release_of_it_exists(hospital_dir_copy, privacy, budget_text):
    """A node over its budget (every class of one row, 12 rows failing against a budget of 4): every class is
    read, and the command printed "12 rows" beside no word that the node cannot be released."""
    path = hospital_dir_copy / "failing.yaml"
    raw = yaml.safe_load((hospital_dir_copy / "hospital_k4.yaml").read_text())
    path.write_text(yaml.safe_dump({**raw, "privacy": privacy}))
    args = ["attack", str(path), "--node", "zip_code=0,age=0,nationality=0"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "node zip_code=0, age=0, nationality=0: 12 blocks, 12 rows; sensitive condition" in r.output
    assert (f"note: this node does not satisfy the policy{budget_text}, so no release of it exists: every class "
            "is attacked, the failing ones included") in r.output
    data = json.loads(CliRunner().invoke(main, args + ["--json", "-", "-q"]).output)
    assert [(a["satisfied"], a["suppressed_rows"], a["rows"]) for a in data["nodes"][0]["attacks"]] == \
        [(False, 0, 12)] * 2        # homogeneity: all rows equal, and one value >= 95 %
    r = CliRunner().invoke(main, ["attack", str(path), "--node", "zip_code=2,age=2,nationality=1"])   # one class
    assert r.exit_code == 0 and "note:" not in r.output, r.output


@pytest.mark.parametrize("args, field", [
    (["--attack", "similarity"], "--groups"),
    (["--threshold", "1.5"], "--threshold"),
    (["--node", "zip_code=1,age=x,nationality=1"], "--node age"),
    (["--node", "zip_code=1"], "node"),
    (["--minimal", "--table", "t"], "--node/--minimal/--table"),
])
def test_cli_attack_bad_input(hospital_dir_copy, args, field):
    r = CliRunner().invoke(main, ["attack", str(hospital_dir_copy / "hospital_k4.yaml"), *args])
    assert r.exit_code == 2, r.output
    assert field in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("level", [1, 2])
def test_groups_from_an_edge_table_equal_the_wide_file(tmp_path, level):
    """A groups file may be any hierarchy file: the edge-table form of education gives the same groups."""
    from sqlanon.attacks import groups_from_csv

    from conftest import ADULT
    wide = ADULT / "hierarchies" / "education.csv"
    rows = [line.split(",") for line in wide.read_text().splitlines()[1:]]
    edges = {(r[j], r[j + 1]) for r in rows for j in range(len(r) - 1) if r[j] != r[j + 1]}
    edge_file = tmp_path / "education_edges.csv"
    edge_file.write_text("child,parent\n" + "".join(f"{c},{p}\n" for c, p in sorted(edges)))
    values = sorted(r[0] for r in rows)
    codes_w, names_w = groups_from_csv(wide, values, level, "education")
    codes_e, names_e = groups_from_csv(edge_file, values, level, "education")
    assert [names_w[c] for c in codes_w] == [names_e[c] for c in codes_e]
    assert len(set(codes_e)) == {1: 7, 2: 3}[level]      # education's groups at levels 1 and 2
