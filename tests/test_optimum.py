"""The released node is the utility optimum over EVERY satisfying node, and the bounds that prune are sound.

Reference: brute force. Every node of the lattice is evaluated with the full privacy models and scored
with every metric; the expected release is the satisfying node with the smallest (metric, height, levels).
"""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sqlanon.anonymizer import Anonymization
from sqlanon.errors import DataError
from sqlanon.lattice import direct_generalizations
from sqlanon.metrics import METRICS, all_metrics, kl_lower_bound, lower_bound
from sqlanon.optimum import tie_key

from conftest import adult_policy

MODELS = [
    ("k", {"k": 10}),
    ("k + suppression", {"k": 10, "max_suppression": 0.02}),
    ("distinct l", {"k": 2, "l_diversity": {"variant": "distinct", "l": 3}}),
    ("distinct l + suppression", {"l_diversity": {"variant": "distinct", "l": 4}, "max_suppression": 0.03}),
    ("entropy l", {"k": 3, "l_diversity": {"variant": "entropy", "l": 3}}),
    ("entropy l + suppression", {"k": 3, "l_diversity": {"variant": "entropy", "l": 3}, "max_suppression": 0.03}),
    ("recursive", {"l_diversity": {"variant": "recursive", "c": 2, "l": 3}}),
    ("recursive + suppression", {"l_diversity": {"variant": "recursive", "c": 2, "l": 3}, "max_suppression": 0.03}),
    ("t-closeness + suppression", {"k": 2, "t_closeness": {"t": 0.3, "distance": "equal"}, "max_suppression": 0.03}),
    ("t-closeness", {"t_closeness": {"t": 0.25, "distance": "equal"}}),
]


def brute_force_scores(run: Anonymization) -> dict:
    """node -> (satisfied, {metric: value}) for every node, each evaluated on its own."""
    out = {}
    for node in run.lattice.nodes():
        result = run.checker.evaluate(run.lattice.levels(node))
        out[node] = (result.satisfied, all_metrics(run.fs, result) if result.satisfied else None)
    return out


def expected_release(scores: dict, metric: str):
    satisfying = {n: m for n, (ok, m) in scores.items() if ok}
    return min(satisfying, key=lambda n: tie_key(n, satisfying[n][metric]))


@pytest.mark.parametrize("name, privacy", MODELS, ids=[m[0] for m in MODELS])
def test_release_is_the_brute_force_optimum_for_every_metric(name, privacy):
    policy = adult_policy(4, privacy)
    reference = Anonymization(policy, db=":memory:")
    scores = brute_force_scores(reference)
    above_minimal = 0
    for metric in METRICS:
        run = Anonymization(dict(policy, utility=metric), db=":memory:")
        chosen = run.choose()
        node = run.lattice.node(chosen.levels)
        want = expected_release(scores, metric)
        assert node == want, (metric, node, want)
        assert chosen.metrics[metric] == pytest.approx(scores[want][1][metric], rel=1e-9)
        # with suppression and discernibility the release comes from the bounded search, which does not list
        # the minimal nodes: `searched()` runs the full search now, to check its "minimal" verdict
        bounded = metric == "discernibility" and privacy.get("max_suppression", 0) > 0 and \
            name in ("k + suppression", "distinct l + suppression")
        assert (run.optimum.max_suppressed is not None) == bounded, (name, metric)
        assert run.optimum.minimal == (node in run.searched().minimal)
        above_minimal += not run.optimum.minimal
        if privacy.get("max_suppression"):
            assert run.optimum.scored < run.lattice.size     # the bounds spared some nodes
    reference.close()
    if name == "k + suppression":
        assert above_minimal >= 1, "this case is chosen so that some metric's optimum is not minimal"


def test_hospital_with_suppression_releases_above_the_minimal_nodes(hospital_dir):
    policy = {"source": {"csv": str(hospital_dir / "hospital.csv")},
              "quasi_identifiers": {"zip_code": {"hierarchy": "mask", "levels": 5},
                                    "age": {"hierarchy": "intervals", "widths": [10, 20]},
                                    "nationality": {"hierarchy": "suppress"}},
              "sensitive": ["condition"], "privacy": {"k": 4, "max_suppression": 0.25},
              "utility": "discernibility"}
    run = Anonymization(policy, db=":memory:")
    scores = brute_force_scores(run)
    chosen = run.choose()
    assert run.lattice.node(chosen.levels) == expected_release(scores, "discernibility")


def test_adult_seven_configurations_equal_arx_optimum():
    """The seven Adult configurations measured side by side with ARX 3.9.2 (docs/DESIGN.md, ARX comparison):
    the release's node and discernibility equal ARX's global optimum (|D| per suppressed row)."""
    cases = [  # privacy, ARX's optimum node (age, sex, race, marital, education, country, workclass, salary)
        ({"k": 5}, "40111221", 122_873_842),
        ({"k": 5, "l_diversity": {"variant": "entropy", "l": 5}}, "40113220", 322_431_150),
        ({"k": 5, "l_diversity": {"variant": "recursive", "c": 3, "l": 5}}, "11123221", 218_407_392),
        ({"k": 5, "l_diversity": {"variant": "distinct", "l": 5}}, "40111221", 122_873_842),
        ({"k": 5, "t_closeness": {"t": 0.2, "distance": "equal"}}, "41103221", 699_994_216),
        ({"k": 5, "max_suppression": 0.04}, "00122221", 16_478_049),
        ({"k": 5, "l_diversity": {"variant": "entropy", "l": 5}, "max_suppression": 0.04}, "01113221", 31_438_261),
    ]
    for privacy, node, disc in cases:
        with Anonymization(adult_policy(8, privacy), db=":memory:") as run:
            chosen = run.choose()
            assert "".join(map(str, run.lattice.node(chosen.levels))) == node, privacy
            assert chosen.metrics["discernibility"] == disc, privacy


# -- the bounds: for a node N and every N' >= N that satisfies, bound(N) <= metric(N') -------------------

def _random_table(rows: list[tuple[int, int, int, int]]) -> duckdb.DuckDBPyConnection:
    frame = pd.DataFrame(rows, columns=["zip", "age", "sex", "s"])
    frame["zip"] = frame["zip"].map(lambda v: f"{1300 + v * 7:05d}")
    frame["age"] = frame["age"] * 3 + 20
    frame["sex"] = frame["sex"].map({0: "F", 1: "M"})
    frame["s"] = frame["s"].map(lambda v: f"v{v}")
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")
    return con


def _random_policy(k: int, supp: float, l_diversity: dict | None) -> dict:
    privacy: dict = {"k": k, "max_suppression": supp}
    if l_diversity:
        privacy["l_diversity"] = l_diversity
    return {"source": {"table": "t"}, "sensitive": ["s"], "privacy": privacy,
            "quasi_identifiers": {"zip": {"hierarchy": "mask", "levels": 3},
                                  "age": {"hierarchy": "intervals", "widths": [6, 12]},
                                  "sex": {"hierarchy": "suppress"}}}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 12), st.integers(0, 1), st.integers(0, 3)),
                     min_size=6, max_size=70),
       k=st.integers(1, 5), supp=st.sampled_from([0.0, 0.05, 0.2, 0.5]),
       l=st.sampled_from([None, 2]))
def test_bounds_hold_for_every_node_above(rows, k, supp, l):
    con = _random_table(rows)
    run = Anonymization(_random_policy(k, supp, {"variant": "entropy", "l": l} if l else None), connection=con)
    checker, lattice = run.checker, run.lattice
    metric_of, bound_of = {}, {}
    for node in lattice.nodes():
        result = checker.evaluate(lattice.levels(node))
        stats = checker.stats[node]
        bound_of[node] = {m: lower_bound(m, stats, checker.min_block_size, checker.budget, run.fs.rows)
                          for m in ("discernibility", "avg_class_size")}
        bound_of[node]["kl_divergence"] = kl_lower_bound(run.fs, result)
        if result.satisfied:
            metric_of[node] = all_metrics(run.fs, result)
    for node in lattice.nodes():
        # every node above, by walking the direct generalizations
        above, frontier = {node}, [node]
        while frontier:
            nxt = [g for n in frontier for g in direct_generalizations(n, lattice.heights) if g not in above]
            above.update(nxt)
            frontier = nxt
        for upper in above & set(metric_of):
            for m, b in bound_of[node].items():
                assert b <= metric_of[upper][m] + 1e-9, (m, node, upper, b, metric_of[upper][m])
    con.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 12), st.integers(0, 1), st.integers(0, 3)),
                     min_size=6, max_size=90),
       k=st.integers(2, 6), supp=st.sampled_from([0.02, 0.05, 0.2, 0.5]), l=st.sampled_from([None, 2]))
def test_bounded_search_releases_the_brute_force_optimum(rows, k, supp, l):
    """`bounded_optimum` (no minimal-node listing) equals brute force over every node, and its premise holds:
    a node's suppressed rows never grow under generalization (k-anonymity and distinct l-diversity)."""
    con = _random_table(rows)
    if l:
        assume(len({r[3] for r in rows}) >= l)             # else the policy is refused at load
    policy = _random_policy(k, supp, {"variant": "distinct", "l": l} if l else None)
    reference = Anonymization(policy, connection=con)
    suppressed, scores = {}, {}
    for node in reference.lattice.nodes():
        result = reference.checker.evaluate(reference.lattice.levels(node))
        suppressed[node] = result.suppressed_rows
        scores[node] = (result.satisfied, all_metrics(reference.fs, result) if result.satisfied else None)
    for node in reference.lattice.nodes():
        for up in direct_generalizations(node, reference.lattice.heights):
            assert suppressed[up] <= suppressed[node], (node, up)
    run = Anonymization(policy, connection=con)
    if not any(ok for ok, _ in scores.values()):
        with pytest.raises(DataError):
            run.choose()
        return
    chosen = run.choose()
    # the bounded search ran, unless the budget rounds down to no row (then the metric is monotone)
    assert (run.optimum.max_suppressed is not None) == (run.checker.budget > 0)
    want = expected_release(scores, "discernibility")
    assert run.lattice.node(chosen.levels) == want
    assert chosen.metrics["discernibility"] == scores[want][1]["discernibility"]
    assert (run.manifest()["lattice"]["minimal"] is None) == (run.checker.budget > 0)
    assert run.optimum.minimal == (want in run.searched().minimal)
    # listing the minimal nodes afterwards (what the report does) keeps the release and fills the manifest
    manifest = run.manifest()
    assert run.lattice.node(manifest["chosen"]["levels"]) == want
    assert [run.lattice.node(m["levels"]) for m in manifest["lattice"]["minimal"]] == run.result.minimal
    con.close()


def test_bounds_are_tight_where_they_should_be():
    """Hand-computed: classes of sizes 3, 1, 2 (6 rows), k = 2, one row may be suppressed."""
    from sqlanon.checker import NodeStats
    sizes, ok = np.array([3, 1, 2]), np.array([True, False, True])
    stats = NodeStats.of(sizes, ok, True)
    assert stats.sum_sq == 14 and stats.kept_sum_sq == 13 and stats.suppressed == 1 and stats.min_size == 1
    assert lower_bound("discernibility", stats, 2, 1, 6) == 14         # 9 + 1 + 4: the 1 counted as 1^2
    assert lower_bound("avg_class_size", stats, 2, 1, 6) == 2          # every kept class has >= k rows
    assert lower_bound("avg_class_size", stats, 2, 6, 6) == 0          # the budget may suppress everything


# -- large lattices: the heuristic search ---------------------------------------------------------------

@pytest.mark.parametrize("privacy", [{"k": 10, "max_suppression": 0.02},
                                     {"k": 3, "l_diversity": {"variant": "entropy", "l": 3}, "max_suppression": 0.03},
                                     {"k": 10}])
def test_heuristic_with_time_to_spare_proves_the_exact_optimum(privacy):
    exact = Anonymization(adult_policy(4, privacy), db=":memory:")
    want = exact.choose()
    run = Anonymization(adult_policy(4, privacy, search={"max_nodes": 10, "time_limit_s": 120}), db=":memory:")
    run.search()                                     # 60 nodes > max_nodes: the heuristic
    chosen = run.choose()
    assert run.optimum.method.startswith("heuristic") and run.optimum.proven
    assert run.optimum.pruned > 0        # reported 0: the nodes its bounds dropped were not counted
    assert chosen.levels == want.levels and chosen.metrics == pytest.approx(want.metrics)
    assert set(run.result.satisfying) <= {n for n in exact.lattice.nodes() if exact.checker.evaluate(
        exact.lattice.levels(n)).satisfied}
    assert run.manifest()["search"]["proven_optimal"] is True


def test_heuristic_out_of_time_releases_a_satisfying_node_and_says_it_is_not_proven():
    clock_calls = iter(range(10 ** 6))
    from sqlanon.heuristic import heuristic_search
    run = Anonymization(adult_policy(8, {"k": 5, "max_suppression": 0.04}), db=":memory:")
    # a clock that advances one second a call: the budget of 30 s runs out after a few dozen checks
    result, optimum = heuristic_search(run.lattice, run.checker, "discernibility", 30.0,
                                       clock=lambda: float(next(clock_calls)))
    assert optimum is not None and not optimum.proven
    assert result.satisfying and optimum.node in result.satisfying
    assert run.checker.evaluate(run.lattice.levels(optimum.node)).satisfied
    assert len(result.per_level) == 1 and result.per_level[0]["checked"] < run.lattice.size


@pytest.mark.parametrize("search, field", [({"max_nodes": 0}, "search.max_nodes"),
                                           ({"max_nodes": "many"}, "search.max_nodes"),
                                           ({"time_limit_s": -1}, "search.time_limit_s"),
                                           ({"time_limit": 5}, "search.time_limit"),
                                           ("fast", "search")])
def test_bad_search_options_name_the_field(search, field):
    from sqlanon.errors import PolicyError
    with pytest.raises(PolicyError, match=f"'{field}'"):
        Anonymization(adult_policy(3, {"k": 2}, search=search), db=":memory:")


def test_anonymize_says_how_the_release_was_found_and_records_it(hospital_dir):
    import json

    import yaml
    from click.testing import CliRunner

    from sqlanon.cli import main
    policy = {"source": {"csv": "hospital.csv"},
              "quasi_identifiers": {"zip_code": {"hierarchy": "mask", "levels": 5},
                                    "age": {"hierarchy": "intervals", "widths": [10, 20]},
                                    "nationality": {"hierarchy": "suppress"}},
              "sensitive": ["condition"], "privacy": {"k": 4, "max_suppression": 0.25},
              "release": {"name": "patients_release"}}
    (hospital_dir / "p.yaml").write_text(yaml.safe_dump(policy))
    out = CliRunner().invoke(main, ["anonymize", str(hospital_dir / "p.yaml"), "--json", str(hospital_dir / "m.json")])
    assert out.exit_code == 0, out.output
    manifest = json.loads((hospital_dir / "m.json").read_text())
    search = manifest["search"]
    assert search["method"] == "branch and bound" and search["proven_optimal"] is True
    assert search["nodes_scored"] >= 1 and search["nodes_scored"] + search["nodes_pruned_by_bound"] <= 3 * 4 * 2
    where = "a minimal node" if search["released_is_minimal"] else "above the minimal nodes"
    assert f"the proven optimum over every satisfying node (branch and bound; {where}" in out.output
    # discernibility with suppression and k alone: the bounded search, which lists no minimal node
    assert manifest["lattice"]["minimal"] is None and manifest["lattice"]["minimal_metrics"] is None
    limit = search["searched_nodes_with_at_most_suppressed_rows"]
    assert 0 <= limit <= 3                                    # 25 % of 12 rows
    assert f"only among nodes with at most {limit} suppressed rows" in out.output
    assert manifest["lattice"]["evaluated"] >= search["nodes_scored"]


def test_a_heuristic_search_that_checked_everything_says_nothing_satisfies(tmp_path):
    """Flu in five of six rows: no node is recursive (1,2)-diverse. The heuristic search emptied its queue, which
    proves it, yet said it "found no satisfying node in 60 s; raise search.time_limit_s" after 0.01 s."""
    from sqlanon.errors import DataError
    (tmp_path / "pat.csv").write_text("zip,age,disease\n13053,28,Flu\n13068,29,Flu\n13068,21,Flu\n"
                                      "14850,47,Cancer\n14853,49,Flu\n14850,55,Flu\n")
    policy = {"source": {"csv": str(tmp_path / "pat.csv")}, "sensitive": ["disease"],
              "quasi_identifiers": {"zip": {"hierarchy": "mask"}, "age": {"hierarchy": "intervals", "widths": [10, 20]}},
              "privacy": {"l_diversity": {"variant": "recursive", "l": 2, "c": 1}},
              "search": {"max_nodes": 2, "time_limit_s": 60}}
    with Anonymization(policy, db=":memory:") as run, pytest.raises(DataError, match="not even the most general"):
        run.choose()
    assert run.result.per_level[0]["exhausted"]
