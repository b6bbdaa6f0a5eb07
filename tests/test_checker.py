"""The node checker's two-stage evaluation against the plain dense evaluation, node by node.

The checker judges a node from block sizes alone where a model has a size bound (`min_block_size`),
and otherwise from sparse (block, value, count) rows judged in bounded dense chunks. Brute force and
Incognito both go through the checker, so their agreement cannot catch an error there; these tests
compare it with the direct route: one dense `node_counts` matrix per node, every criterion applied to
all blocks at once.
"""
from __future__ import annotations

import contextlib
import math
from unittest import mock

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sqlanon import checker as checker_module
from sqlanon import frequency
from sqlanon.anonymizer import Anonymization
from sqlanon.engines.base import Backend, union_sql
from sqlanon.engines.duckdb import connect
from sqlanon.frequency import SparseCounts
from sqlanon.models.kanonymity import KAnonymity
from sqlanon.models.ldiversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity
from sqlanon.search import find_minimal

from conftest import HOSPITAL, adult_policy, force_staged_route
from test_models_search import MODELS
from test_optimum import _random_policy, _random_table


def _dense_verdict(run: Anonymization, levels: dict) -> tuple[bool, np.ndarray]:
    checker = run.checker
    counts = run.fs.node_counts(levels, sensitive=checker.needed)
    result = checker._judge(levels, counts)
    return result.satisfied, result.ok


def _adult_policy(privacy: dict, sensitive: list[str] | None) -> dict:
    """Adult's first four quasi-identifiers with these models, of these sensitive attributes (default occupation)."""
    policy = adult_policy(4, privacy)
    if sensitive is not None:
        policy["sensitive"] = sensitive
    return policy


def _every_node(run: Anonymization) -> list[dict]:
    return [run.lattice.levels(n) for n in run.lattice.nodes()]


@pytest.mark.parametrize("rollup", [True, False], ids=["rolled up in memory", "GROUP BY per node"])
@pytest.mark.parametrize("name, privacy, sensitive", MODELS, ids=[m[0] for m in MODELS])
def test_two_stage_check_equals_dense_check_on_every_adult_node(name, privacy, sensitive, rollup):
    policy = _adult_policy(privacy, sensitive)
    with Anonymization(policy, db=":memory:") as run:
        run.fs.rollup = rollup
        nodes = _every_node(run)
        reference = [_dense_verdict(run, levels) for levels in nodes]
        assert run.checker.satisfied_many(nodes) == [r[0] for r in reference]
        assert any(r[0] for r in reference) and not all(r[0] for r in reference)
        for levels, (satisfied, ok) in zip(nodes[::7], reference[::7]):
            result = run.checker.evaluate(levels)
            dense = run.fs.node_counts(levels)
            assert result.satisfied == satisfied
            np.testing.assert_array_equal(result.ok, ok)
            np.testing.assert_array_equal(result.counts.block_codes, dense.block_codes)
            np.testing.assert_array_equal(result.counts.sizes, dense.sizes)


def test_size_stage_rejects_without_fetching_sensitive_counts():
    """A node with a block smaller than l fails on sizes alone: no sparse statement is run for it."""
    policy = adult_policy(4, {"l_diversity": {"variant": "entropy", "l": 6}})
    with Anonymization(policy, db=":memory:") as run:
        bottom = {q: 0 for q in run.lattice.names}
        assert run.checker.min_block_size == 6
        assert run.fs.node_counts(bottom).sizes.min() < 6
        run.fs.rollup = False           # the database path (rolled up in memory, no statement runs at all)
        log = run.backend.log = []
        assert run.checker.satisfied_many([bottom]) == [False]
        assert len(log) == 1 and "node_sparse" not in log[0] and '"v"' not in log[0]


def test_suppression_budget_counts_the_rows_of_too_small_blocks():
    """With a budget, blocks below the size bound are suppressed; the node passes when they fit."""
    policy = adult_policy(3, {"l_diversity": {"variant": "distinct", "l": 3}, "max_suppression": 0.05})
    with Anonymization(policy, db=":memory:") as run:
        nodes = _every_node(run)
        verdicts = run.checker.satisfied_many(nodes)
        assert verdicts == [_dense_verdict(run, levels)[0] for levels in nodes]
        small_only = [lv for lv, ok in zip(nodes, verdicts) if ok
                      and (run.fs.node_counts(lv).sizes < 3).any()]
        assert small_only, "some satisfying node suppresses a block that is too small"


def test_entity_key_disables_the_size_bound_of_l_diversity():
    """One person with three values: a block of one person is distinct 3-diverse, so l gives no size bound."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a', 'x'), (1, 'a', 'y'), (1, 'a', 'z'), "
                "(2, 'b', 'x'), (3, 'b', 'y'), (4, 'b', 'z')) v(person, zone, item)")
    policy = {"source": {"table": "t"}, "entity_key": "person",
              "quasi_identifiers": {"zone": {"hierarchy": "suppress"}}, "sensitive": ["item"],
              "privacy": {"l_diversity": {"variant": "distinct", "l": 3}}}
    run = Anonymization(policy, connection=con)
    assert run.checker.min_block_size == 1 and run.checker.min_distinct == {"item": 3}
    assert run.checker.satisfied_many([{"zone": 0}]) == [True]
    result = run.checker.evaluate({"zone": 0})
    assert result.counts.sizes.tolist() == [1, 3] and result.ok.all()


def test_hospital_sparse_counts_round_trip_to_the_dense_matrix():
    policy = HOSPITAL / "hospital_k4.yaml"
    with Anonymization(policy, db=":memory:") as run:
        cond = run.fs.sensitives[0].name
        for levels in _every_node(run):
            dense = run.fs.node_counts(levels, sensitive=[cond])
            (sparse,) = run.fs.sparse_counts([levels], cond)
            np.testing.assert_array_equal(sparse.dense(), dense.sensitive[cond])
            np.testing.assert_array_equal(sparse.block_codes, dense.block_codes)
            np.testing.assert_array_equal(sparse.sizes(), dense.sizes)
            assert np.array_equal(np.vstack([d for _, _, d in sparse.chunks(max_cells=7)]),
                                  dense.sensitive[cond])


@settings(max_examples=200, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(1, 30), st.integers(1, 6)), elements=st.integers(0, 4)),
       st.integers(1, 8), st.floats(1.0, 7.5), st.floats(1.0, 4.0))
def test_min_block_size_is_a_necessary_condition(counts, l, l_real, c):
    """Whatever block a model accepts has at least `min_block_size` rows (the bound the checker prunes by).
    Blocks are never empty (a block exists because rows fall in it)."""
    counts = counts[counts.sum(axis=1) > 0]
    sizes, distinct = counts.sum(axis=1), (counts > 0).sum(axis=1)
    for crit in (KAnonymity(l), DistinctLDiversity(l), EntropyLDiversity(l_real), RecursiveCLDiversity(c, l),
                 EntropyLDiversity(l_real, dont_care_codes=[0]), RecursiveCLDiversity(c, l, dont_care_codes=[0])):
        ok = crit.block_ok(counts)
        assert (sizes[ok] >= crit.min_block_size()).all(), crit.describe()
        assert (distinct[ok] >= crit.min_distinct_values()).all(), crit.describe()


def test_entropy_size_bound_is_tight():
    """entropy l: n distinct values in n rows reach log n exactly, so n = ceil(l) rows can pass."""
    for l in (2, 3, 5.5, 6, 10.57):
        crit = EntropyLDiversity(l)
        n = crit.min_block_size()
        assert n == math.ceil(l)
        assert crit.block_ok(np.ones((1, n), dtype=np.int64))[0]
        assert not crit.block_ok(np.ones((1, n - 1), dtype=np.int64))[0] or n == 1


def test_sparse_counts_chunks_cover_every_block_once():
    sc = SparseCounts(np.arange(5)[:, None], np.array([0, 2, 3, 3, 6, 7]), np.array([0, 2, 1, 0, 1, 3, 2]),
                      np.array([4, 1, 2, 1, 1, 1, 9]), m=4)
    # block 2 is empty on purpose: starts may repeat
    dense = sc.dense()
    assert dense.tolist() == [[4, 0, 1, 0], [0, 2, 0, 0], [0, 0, 0, 0], [1, 1, 0, 1], [0, 0, 9, 0]]
    assert sc.sizes().tolist() == [5, 2, 0, 3, 9]
    for cells in (1, 4, 8, 100):
        assert np.vstack([d for _, _, d in sc.chunks(max_cells=cells)]).tolist() == dense.tolist()


@pytest.mark.parametrize("privacy", [{"l_diversity": {"variant": "entropy", "l": 4}},
                                     {"k": 3, "t_closeness": {"t": 0.2, "distance": "equal"}}])
def test_known_satisfying_minimal_nodes_score_as_a_full_evaluation(privacy):
    """Scoring minimal nodes skips their sensitive counts (every block passes); nothing else changes."""
    from sqlanon.metrics import all_metrics
    with Anonymization(adult_policy(4, privacy), db=":memory:") as run:
        minimal = run.search().minimal
        assert minimal
        for node in minimal:
            levels = run.lattice.levels(node)
            full, quick = run.checker.evaluate(levels), run.checker.evaluate(levels, known_satisfying=True)
            assert full.satisfied and quick.satisfied and full.ok.all() and quick.ok.all()
            np.testing.assert_array_equal(full.counts.block_codes, quick.counts.block_codes)
            np.testing.assert_array_equal(full.counts.sizes, quick.counts.sizes)
            assert all_metrics(run.fs, full) == all_metrics(run.fs, quick)


@pytest.mark.parametrize("packed", [True, False], ids=["packed key", "code columns"])
def test_sparse_counts_in_both_forms_equal_the_dense_counts(monkeypatch, packed):
    """Block codes packed into one BIGINT, or (when that could overflow) one column per attribute: the same
    blocks, in the same order, with the same counts; entity-key sizes too."""
    import sqlanon.frequency as frequency
    if not packed:
        monkeypatch.setattr(frequency, "PACKED_KEY_LIMIT", 1.0)
    policy = adult_policy(4, {"k": 2}, entity_key="education_num")
    with Anonymization(policy, db=":memory:") as run:
        nodes = _every_node(run)[::5]
        sparse = run.fs.sparse_counts(nodes, "occupation")      # one batch of nodes of several shapes
        sizes = run.fs.ordered_sizes(nodes)
        for levels, sc, sz in zip(nodes, sparse, sizes):
            dense = run.fs.node_counts(levels, sensitive=["occupation"])
            np.testing.assert_array_equal(sc.block_codes, dense.block_codes)
            np.testing.assert_array_equal(sc.dense(), dense.sensitive["occupation"])
            np.testing.assert_array_equal(sz, dense.sizes)
        log = run.backend.log = []
        run.fs.sparse_counts(nodes[:2], "occupation")
        assert ('"key"' in log[0]) == packed


# (engine batching, max_cells): DuckDB streams its batches, the base class slices one fetched result; 1 and 8
# cells give batches of a row or two, so that nearly every block straddles two of them
STREAMED_CASES = [("duckdb", 1), ("duckdb", 8), ("duckdb", 1 << 22), ("base", 8), ("base", 1 << 22)]


@pytest.mark.parametrize("packed", [True, False], ids=["packed key", "code columns"])
@pytest.mark.parametrize("engine, max_cells", STREAMED_CASES, ids=[f"{e}, {c} cells" for e, c in STREAMED_CASES])
def test_streamed_sparse_count_chunks_equal_the_dense_counts(monkeypatch, packed, engine, max_cells):
    """`sparse_count_chunks` (the manifest's privacy profile of a node of millions of blocks): on every fifth
    Adult node, its chunks put together are the node's blocks in code order with their dense counts, each
    chunk at most `max_cells` cells (or one block), whether the rows come streamed in batches of a row or
    two (blocks carried across batches), sliced from one result, or (no packed key) fetched whole."""
    from sqlanon.engines.base import Backend
    from sqlanon.engines.duckdb import DuckDBBackend
    if not packed:
        monkeypatch.setattr(frequency, "PACKED_KEY_LIMIT", 1.0)
    if engine == "base":
        monkeypatch.setattr(DuckDBBackend, "fetchnumpy_union_batches", Backend.fetchnumpy_union_batches)
    with Anonymization(adult_policy(4, {"k": 2}), db=":memory:") as run:
        m = run.fs.sensitives[0].domain.size
        for levels in _every_node(run)[::5]:
            dense = run.fs.node_counts(levels, sensitive=["occupation"])
            chunks = list(run.fs.sparse_count_chunks(levels, "occupation", max_cells))
            assert all(len(c) == 1 or c.size <= max_cells for _, c in chunks)
            np.testing.assert_array_equal(np.vstack([codes for codes, _ in chunks]), dense.block_codes)
            np.testing.assert_array_equal(np.vstack([c for _, c in chunks]).reshape(-1, m),
                                          dense.sensitive["occupation"])


@pytest.mark.parametrize("meets", [True, False], ids=["meets", "no meets"])
@pytest.mark.parametrize("packed", [True, False], ids=["packed key", "code columns"])
@pytest.mark.parametrize("entity_key, distinct", [(None, []), (None, ["occupation"]),
                                                  ("education_num", []), ("education_num", ["occupation"])],
                         ids=["rows, sizes", "rows, distinct values", "entity key, sizes",
                              "entity key, distinct values"])
def test_batch_counts_in_both_forms_equal_the_dense_counts(monkeypatch, packed, entity_key, distinct, meets):
    """The class-size pass (`batch_counts`) with the blocks of several attributes grouped on one packed key, or
    (past `PACKED_KEY_LIMIT`) on their code columns: on every fifth Adult node, the multiset of (size, distinct
    values) per block equals the dense counts' (persons under an entity key). Sizes alone of rows come from
    the nodes' meets (`_meets`): here all 12 nodes from one GROUP BY of the bottom's 5,180 possible blocks,
    grouped on its packed key; not for distinct values or persons, which do not add up."""
    if not packed:
        monkeypatch.setattr(frequency, "PACKED_KEY_LIMIT", 1.0)
    monkeypatch.setattr(frequency, "MEET_ROWS_PER_BLOCK", 1)      # meets as large as MEET_BLOCKS allows
    if not meets:
        monkeypatch.setattr(frequency, "MEET_BLOCKS", 0)
    policy = adult_policy(4, {"k": 2}, **({"entity_key": entity_key} if entity_key else {}))
    with Anonymization(policy, db=":memory:") as run:
        nodes = _every_node(run)[::5]
        assert run.fs.wide_table and run.fs.wide_rows       # built and counted on first use
        log = run.backend.log = []
        batch = run.fs.batch_counts(nodes, distinct=distinct)
        rolled = meets and not distinct and not entity_key
        assert len(log) == 1 and ('AS "k"' in log[0]) == (packed or rolled)
        assert log[0].count('AS "g"') == (1 if rolled else len(nodes)) and len(nodes) == 12
        for levels, counts in zip(nodes, batch):
            dense = run.fs.node_counts(levels, sensitive=["occupation"])
            got = sorted(zip(counts.sizes.tolist(), *(counts.distinct[d].tolist() for d in distinct)))
            want = sorted(zip(dense.sizes.tolist(), *((dense.sensitive["occupation"] > 0).sum(axis=1).tolist()
                                                      for _ in distinct)))
            assert got == want, levels


@pytest.mark.parametrize("entity_key", [None, "education_num"], ids=["rows", "entity key"])
def test_node_counts_from_sparse_counts_equal_the_pivot(monkeypatch, entity_key):
    """Past DENSE_PIVOT_VALUES sensitive values, `node_counts` fills its matrices from sparse counts: on every
    Adult node, with two sensitive attributes, the same blocks in the same order, sizes and counts as the
    pivot of one column per value (with an entity key, which counts persons, the pivot stays)."""
    policy = adult_policy(4, {"k": 2}, sensitive=["occupation", "relationship"])
    if entity_key:
        policy["entity_key"] = entity_key
    with Anonymization(policy, db=":memory:") as run:
        run.fs.rollup = False
        nodes = _every_node(run)
        assert run.fs.wide_table        # built on first use: not a node statement
        monkeypatch.setattr(frequency, "DENSE_PIVOT_VALUES", 10 ** 6)
        log = run.backend.log = []
        pivot = [run.fs.node_counts(levels, sensitive=["occupation", "relationship"]) for levels in nodes]
        assert all("CASE WHEN" in q for q in log)
        monkeypatch.setattr(frequency, "DENSE_PIVOT_VALUES", 0)
        log = run.backend.log = []
        sparse = [run.fs.node_counts(levels, sensitive=["occupation", "relationship"]) for levels in nodes]
        assert all(("CASE WHEN" in q) == bool(entity_key) for q in log)
        for a, b in zip(pivot, sparse):
            np.testing.assert_array_equal(a.block_codes, b.block_codes)
            np.testing.assert_array_equal(a.sizes, b.sizes)
            for name in ("occupation", "relationship"):
                np.testing.assert_array_equal(a.sensitive[name], b.sensitive[name])


def test_codes_are_stored_narrow_in_duckdb_and_come_back_as_int32():
    """DuckDB stores each code column of the frequency sets in the narrowest type that holds its largest
    code (`Backend.code_type`): Adult's age at level 0 (74 ages) in TINYINT, native country likewise; what
    a query returns is widened to int32, so no numpy arithmetic on the codes wraps around."""
    with Anonymization(adult_policy(8, {"k": 5}), db=":memory:") as run:
        run.fs.rollup = False
        con = run.backend.con
        fs_types = dict(row[:2] for row in con.execute(f'DESCRIBE "{run.fs.fs_table}"').fetchall())
        types = dict(row[:2] for row in con.execute(f'DESCRIBE "{run.fs.wide_table}"').fetchall())
        for q in run.fs.qis:
            largest = q.hierarchy.codes().max(axis=1)
            for j in range(q.height + 1):
                assert types[q.col(j)] == ("TINYINT" if largest[j] <= 127 else "SMALLINT"), (q.col(j), largest[j])
            assert fs_types[f"q{q.index}"] == types[q.col(0)]
        assert types["cnt"] == fs_types["cnt"] == "BIGINT" and fs_types["s0"] == "TINYINT"
        counts = run.fs.node_counts({"age": 0, "workclass": 0}, sensitive=["occupation"])
        assert counts.block_codes.dtype == np.int64
        data = run.backend.fetchnumpy("select_all.sql", relation=run.fs.wide_table)
        assert data["q0_0"].dtype == np.int32 and data["cnt"].dtype == np.int64
    assert Backend().code_type(10) is None      # engines without narrow types keep the mapping tables' INTEGER


@pytest.mark.parametrize("nested, clusters", [(True, True), (False, True), (True, False)],
                         ids=["level-0 code", "coarse to fine", "not clustered"])
def test_duckdb_writes_the_wide_frequency_set_clustered(nested, clusters, monkeypatch):
    """On DuckDB the wide frequency set's rows are in `FrequencySet.cluster_order`: by the attribute of most
    base values, its level-0 code alone when its codes are nested, else its levels from the coarsest down.
    Without `clusters_wide` the same rows come in no such order (so the check below can fail). PostgreSQL:
    tests/test_engines.py."""
    from sqlanon.engines.duckdb import DuckDBBackend
    from sqlanon.hierarchy import HierarchyTable
    monkeypatch.setattr(HierarchyTable, "nested_codes", lambda self: nested)
    monkeypatch.setattr(DuckDBBackend, "clusters_wide", clusters)
    with Anonymization(adult_policy(8, {"k": 5}), db=":memory:") as run:
        run.fs.rollup = False
        q = max(run.fs.qis, key=lambda q: len(q.hierarchy.values))
        order = run.fs.cluster_order()
        assert order == ([q.col(0)] if nested else [q.col(j) for j in range(q.height, -1, -1)])
        key = ", ".join(f'"{c}"' for c in order)
        assert run.fs.wide_table
        descents = run.backend.con.execute(       # the rows as written: the table under the wide set's view
            f'SELECT count(*) FROM (SELECT ({key}) AS k, lag(({key})) OVER (ORDER BY rowid) AS p '
            f'FROM "{run.fs.wide_stored}") WHERE k < p').fetchone()[0]
        assert (descents == 0) is clusters
    assert not Backend.clusters_wide


@pytest.mark.parametrize("engine", ["duckdb", "duckdb, no narrow codes"])
def test_the_wide_frequency_set_is_written_without_its_constant_columns(engine, monkeypatch):
    """Level columns whose code is 0 for every value (each attribute's top level here) are not written into the
    wide set's table (`FrequencySet.constant_columns`); the wide set is a view adding them back as 0, and
    every level column of it is the hierarchy's code of the row's level-0 code."""
    from sqlanon.engines.duckdb import DuckDBBackend
    if engine.endswith("no narrow codes"):
        monkeypatch.setattr(DuckDBBackend, "code_type", lambda self, largest: None)
    with Anonymization(adult_policy(5, {"k": 5}), db=":memory:") as run:
        fs, con = run.fs, run.backend.con
        fs.rollup = False
        assert fs.wide_table == fs.wide_name != fs.wide_stored
        constant = fs.constant_columns()
        assert constant == [q.col(q.height) for q in fs.qis]        # Adult's hierarchies: one label on top
        stored = [r[0] for r in con.execute(f'DESCRIBE "{fs.wide_stored}"').fetchall()]
        seen = [r[0] for r in con.execute(f'DESCRIBE "{fs.wide_name}"').fetchall()]
        assert not set(constant) & set(stored) and set(seen) == set(stored) | set(constant)
        for q in fs.qis:
            cols = ", ".join(f'"{q.col(j)}"' for j in range(q.height + 1))
            got = con.execute(f'SELECT DISTINCT {cols} FROM "{fs.wide_name}"').fetchall()
            codes = q.hierarchy.codes()         # per level, the code of each value (its level-0 code)
            assert got and all(tuple(codes[:, row[0]]) == row for row in got), q.name
        minimal = run.search("brute_force").minimal     # every node grouped over the view
    with Anonymization(adult_policy(5, {"k": 5}), db=":memory:") as rolled:      # rolled up in memory
        assert minimal == rolled.search("brute_force").minimal


@pytest.mark.parametrize("entity_key", [None, "education_num"], ids=["rows", "entity key"])
def test_bottom_frequency_set_becomes_a_view_over_the_wide_one_with_the_same_rows(entity_key, monkeypatch):
    """Once the wide frequency set is built, the bottom one's table is dropped and the same name is a view
    of the wide set's level-0 columns: the same rows (cells, counts, persons), and a second run on the same
    connection still finds a free prefix. (The staged route: a source read directly has the view from the start,
    tests/test_direct_source.py.)"""
    force_staged_route(monkeypatch)
    policy = adult_policy(4, {"k": 2, "l_diversity": {"variant": "entropy", "l": 2}})
    if entity_key:
        policy["entity_key"] = entity_key
    con = duckdb.connect()
    with Anonymization(policy, connection=con) as run:
        run.fs.rollup = False
        kind = "SELECT table_type FROM information_schema.tables WHERE table_name = ?"
        assert con.execute(kind, [run.fs.fs_table]).fetchone()[0] == "LOCAL TEMPORARY"
        before = con.execute(f'SELECT * FROM "{run.fs.fs_table}" ORDER BY ALL').fetchall()
        assert run.fs.wide_table
        assert con.execute(kind, [run.fs.fs_table]).fetchone()[0] == "VIEW"
        assert con.execute(f'SELECT * FROM "{run.fs.fs_table}" ORDER BY ALL').fetchall() == before
        if not entity_key:          # with one, a person with several values counts under each
            assert run.fs.sensitive_totals()["occupation"].sum() == run.fs.rows
        with Anonymization(policy, connection=con) as second:
            assert second.fs.fs_table != run.fs.fs_table
    con.close()


def test_distinct_bound_decides_k_and_distinct_l_without_per_value_counts():
    """k and distinct l are decided from sizes and distinct counts alone, and with suppression they stay
    monotone, so Incognito prunes with them; entropy l with suppression prunes with its bounds."""
    with Anonymization(adult_policy(4, {"k": 3, "l_diversity": {"variant": "distinct", "l": 5},
                                        "max_suppression": 0.02}), db=":memory:") as run:
        assert run.checker.decided_by_bounds and run.checker.prunable
        run.fs.rollup = False
        log = run.backend.log = []
        run.checker.satisfied_many(_every_node(run)[:60])
        assert log and all('"v"' not in q and '"key"' not in q for q in log)
    with Anonymization(adult_policy(4, {"l_diversity": {"variant": "entropy", "l": 5}, "max_suppression": 0.02}),
                       db=":memory:") as run:
        assert not run.checker.prunable
        part = run.checker.monotone_part()
        assert part.prunable and [(type(c).__name__, c.min_distinct_values()) for c in part.criteria] == [
            ("KAnonymity", 1), ("DistinctLDiversity", 5)]


@pytest.mark.parametrize("privacy", [{"k": 5, "l_diversity": {"variant": "entropy", "l": 3}},
                                     {"k": 20, "max_suppression": 0.01},
                                     {"k": 3, "t_closeness": {"t": 0.3, "distance": "equal"}}])
def test_sizes_recorded_from_projections_equal_the_full_nodes(privacy):
    """Incognito judges a node over a subset of the attributes; its blocks are those of the full node with
    every other attribute at its (single-valued) top, so the checker records it as that full node, and the
    optimum search reads it instead of querying again. Every recorded node's stats equal a direct evaluation
    of the full node by a fresh checker."""
    with Anonymization(adult_policy(5, privacy)) as run:
        run.search()
        recorded = dict(run.checker.stats)
        # every minimal node, evaluated as it is or inferred from a projection, has its sizes recorded
        assert run.result.minimal and all(node in recorded for node in run.result.minimal)
        fresh = type(run.checker)(run.fs, run.criteria, run.policy.max_suppression)
        for node, stats in recorded.items():
            fresh.evaluate(run.lattice.levels(node))
            direct = fresh.stats[node]
            assert (stats.sum_sq, stats.min_size, stats.classes) == (direct.sum_sq, direct.min_size, direct.classes)
            if stats.satisfied is not None:
                assert stats == direct, node


# -- verdicts in the database: one row per node, no block fetched (the path of frequency sets too large to
#    roll up in memory) ------------------------------------------------------------------------------------

VERDICT_CASES = [
    ({"l_diversity": {"variant": "entropy", "l": 3}}, None),
    ({"k": 5, "l_diversity": {"variant": "entropy", "l": 2.5}, "max_suppression": 0.03}, None),
    ({"k": 3, "l_diversity": {"variant": "entropy", "l": 2}, "max_suppression": 0.2}, ["relationship"]),
    ({"k": 4, "l_diversity": {"variant": "distinct", "l": 3}}, None),
]


def _fresh_dense_stats(run: Anonymization, nodes: list[dict]):
    dense = type(run.checker)(run.fs, run.criteria, run.policy.max_suppression)
    verdicts = [dense._judge(levels, run.fs.node_counts(levels, sensitive=dense.needed)).satisfied
                for levels in nodes]
    return verdicts, dense.stats


@pytest.mark.parametrize("packed", [True, False], ids=["blocks as one packed key", "blocks as code columns"])
@pytest.mark.parametrize("privacy, sensitive", VERDICT_CASES, ids=lambda v: str(v))
def test_node_verdicts_in_the_database_equal_the_dense_judgement(monkeypatch, privacy, sensitive, packed):
    """Every Adult node judged by the verdict query has the dense route's verdict and the same NodeStats
    (sizes, kept classes, suppressed rows), and no statement fetched a block; with the blocks of several
    attributes grouped on one packed key and on their code columns (past `PACKED_KEY_LIMIT`)."""
    if not packed:
        monkeypatch.setattr(frequency, "PACKED_KEY_LIMIT", 1.0)
    policy = _adult_policy(privacy, sensitive)
    with Anonymization(policy, db=":memory:") as run:
        run.fs.rollup = False
        assert run.checker.verdicts_in_database
        nodes = _every_node(run)
        assert run.fs.wide_table        # built on first use
        log = run.backend.log = []
        verdicts = run.checker._judge_in_database(nodes)
        assert len(log) == 1 and '"xl"' in log[0] and '"key"' not in log[0]
        assert ('AS "keyed"' in log[0]) == packed
        expected, dense_stats = _fresh_dense_stats(run, nodes)
        assert verdicts == expected
        assert any(verdicts) and not all(verdicts)
        for levels in nodes:
            key = tuple(levels[n] for n in run.lattice.names)
            assert run.checker.stats[key] == dense_stats[key], key


@pytest.mark.parametrize("privacy, sensitive", VERDICT_CASES[:3], ids=lambda v: str(v))
def test_nodes_of_few_blocks_skip_the_size_pass_with_the_same_verdicts_and_stats(monkeypatch, privacy, sensitive):
    """A node whose hierarchies allow few blocks for the rows (`SIZE_PASS_SKIP_RATIO`) goes straight to the
    verdict query: on every Adult node the verdicts, and the stats of the nodes that skipped, equal the dense
    route's, whether many nodes skip (ratio 1) or none; skipping runs fewer class-size statements."""
    policy = _adult_policy(privacy, sensitive)
    seen = {}
    for ratio in (1, 10 ** 9):
        monkeypatch.setattr(checker_module, "SIZE_PASS_SKIP_RATIO", ratio)
        with Anonymization(policy, db=":memory:") as run:
            run.fs.rollup = False
            checker = run.checker
            assert checker.verdicts_in_database and checker.min_block_size > 1
            nodes = _every_node(run)
            few = run.fs.rows // (ratio * checker.min_block_size)
            skipping = [levels for levels in nodes if checker._blocks_at_most(levels) <= few]
            assert run.fs.wide_table
            log = run.backend.log = []
            verdicts = checker.satisfied_many(nodes)
            expected, dense_stats = _fresh_dense_stats(run, nodes)
            assert verdicts == expected
            for levels in skipping:
                key = tuple(levels[n] for n in run.lattice.names)
                assert checker.stats[key] == dense_stats[key], key
            seen[ratio] = (len(skipping), sum('"xl"' not in q for q in log))
    assert seen[1][0] > 0 and seen[10 ** 9][0] == 0
    assert seen[1][1] < seen[10 ** 9][1]


@pytest.mark.parametrize("privacy, sensitive", VERDICT_CASES[:3], ids=lambda v: str(v))
def test_verdict_query_gives_the_kl_terms_of_the_kept_blocks(privacy, sensitive):
    """`NodeStats.kept_xlogx` from the verdict query is the sum of c ln c over the kept blocks' cells of the dense
    route, on every Adult node (none with two sensitive attributes); a satisfying minimal node's KL-divergence
    taken from it equals the one computed by its own query, and runs no such query."""
    from sqlanon.metrics import kl_divergence
    for names in ([sensitive[0] if sensitive else "occupation"], ["occupation", "relationship"]):
        policy = _adult_policy(privacy, names)
        with Anonymization(policy, db=":memory:") as run:
            run.fs.rollup = False
            checker = run.checker
            nodes = _every_node(run)
            checker._judge_in_database(nodes)
            for levels in nodes:
                stats = checker.stats[tuple(levels[n] for n in run.lattice.names)]
                if len(names) > 1:
                    assert stats.kept_xlogx is None
                    continue
                counts = run.fs.node_counts(levels, sensitive=checker.needed)
                ok = checker._judge(levels, counts).ok
                cells = counts.sensitive[checker.needed[0]][ok].astype(np.float64)
                want = float((cells[cells > 0] * np.log(cells[cells > 0])).sum())
                assert stats.kept_xlogx == pytest.approx(want, rel=1e-12, abs=1e-9), levels
            if len(names) > 1 or run.policy.max_suppression:
                continue
            minimal = run.search().minimal
            assert minimal
            levels = run.lattice.levels(minimal[0])
            run.fs.cells_xlogx()        # the part of the divergence no node changes, computed once
            log = run.backend.log = []
            quick = run.checker.evaluate(levels, known_satisfying=True)
            assert quick.kept_xlogx is not None
            from_stats = kl_divergence(run.fs, quick)
            assert not any("LN" in q for q in log)
            queried = run.checker.evaluate(levels)
            assert queried.kept_xlogx is None
            assert from_stats == pytest.approx(kl_divergence(run.fs, queried), rel=1e-12)


@pytest.mark.parametrize("totals, groups, expected", [
    ([5, 1, 4, 2], 2, [0, 0, 1, 1]),            # 5 -> 0, 4 -> 1, 2 -> 1 (4 < 5), 1 -> 0 (5 < 6): loads 6 and 6
    ([3, 3, 3], 3, [0, 1, 2]),                  # one value per group, ties to the lowest group
    ([10, 1, 1, 1, 1], 2, [0, 1, 1, 1, 1]),    # the heavy value alone
    ([0, 7, 0], 2, [1, 0, 1]),                 # values never seen still get a group (the lightest)
])
def test_equal_mass_groups(totals, groups, expected):
    assert frequency.equal_mass_groups(np.array(totals), groups).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(counts=arrays(np.int64, st.integers(1, 30), elements=st.integers(0, 50)), groups=st.integers(1, 8),
       seed=st.integers(0, 2 ** 16))
def test_grouping_the_values_never_raises_the_entropy_or_the_distinct_values(counts, groups, seed):
    """The premise of the grouped verdict: a block's entropy and distinct values over any grouping of its values
    are at most those over the values (H(g(S)) <= H(S))."""
    if counts.sum() == 0:
        return
    group = np.random.default_rng(seed).integers(0, groups, len(counts))
    grouped = np.bincount(group, weights=counts, minlength=groups)

    def entropy(c):
        p = c[c > 0] / c.sum()
        return float(-(p * np.log(p)).sum())

    assert entropy(grouped) <= entropy(counts.astype(np.float64)) + 1e-12
    assert (grouped > 0).sum() <= (counts > 0).sum()


GROUPED_CASES = [c for c in VERDICT_CASES if c[1] is None]      # occupation: 14 values
# every field of a verdict row but kept_xl, which the grouped verdict does not know
VERDICT_FIELDS = ("classes", "sum_sq", "min_size", "suppressed", "kept_classes", "kept_sum_sq")


def _packing(width: int | None):
    """Every grouped verdict counted in the packed sum (`FrequencySet._packed_branches` picks all), its groups'
    digits `width` bits wide (None: `packed_group_width`'s own width)."""
    def every(self, nodes, sensitive, groups):
        rows = int(self._sens(sensitive).domain.totals.sum())
        return list(range(len(nodes))), width if width is not None else self.packed_group_width(groups, rows)

    return mock.patch.object(frequency.FrequencySet, "_packed_branches", every)


# how a grouped verdict counts a block's groups: a GROUP BY of (block, group) pairs; one packed sum per block,
# its digits as wide as the table allows (8 bits at Adult's 45,222 rows with 14 groups); digits of 2 bits (a
# group of 4 rows carries: most blocks are then judged on their values)
GROUP_COUNTS = {"pairs": False, "packed": None, "packed, carrying": 2}


@pytest.mark.parametrize("form", GROUP_COUNTS)
@pytest.mark.parametrize("groups", [1, 2, 4, 14])
@pytest.mark.parametrize("privacy, sensitive", GROUPED_CASES, ids=lambda v: str(v))
def test_grouped_verdicts_equal_the_exact_ones(privacy, sensitive, groups, form):
    """On every Adult node the grouped verdict query (blocks judged on groups of the values, then exactly where
    the groups leave them undecided) gives the exact query's row: classes, sizes, suppressed rows, kept classes.
    It is not the exact query in disguise: with one group (no block proven by the groups) every block of enough
    rows is judged exactly, with one value per group only the failing ones are, and in between some of each.
    The same with the groups counted in a packed sum, also where its digits carry (those blocks undecided)."""
    policy = _adult_policy(privacy, sensitive)
    width = GROUP_COUNTS[form]
    with Anonymization(policy, db=":memory:") as run, \
            (_packing(width) if width is not False else contextlib.nullcontext()):
        run.fs.rollup = False
        checker = run.checker
        nodes = _every_node(run)
        thresholds = checker.verdict_thresholds()
        exact = run.fs.node_verdicts(nodes, checker.needed[0], *thresholds)
        log = run.backend.log = []
        grouped = run.fs.node_verdicts(nodes, checker.needed[0], *thresholds, value_groups=groups)
        # one group: its own width is none (no digits to pack); a forced one packs it, into one digit
        packs = width is not False and (groups > 1 or width is not None)
        assert any(('HUGEINT' if packs else '"vg"') in q for q in log)
        assert not any(('"vg"' if packs else 'HUGEINT') in q for q in log)
        carrying = width == 2
        packed = [run.fs._block_radix(levels) is not None for levels in nodes]
        undecided, judged, failing = 0, 0, 0
        for levels, e, g, is_packed in zip(nodes, exact, grouped, packed):
            for f in VERDICT_FIELDS:
                assert g[f] == e[f], (levels, f)
            if not is_packed:           # one attribute, or none: judged exactly as before
                assert g["kept_xl"] == e["kept_xl"] and math.isnan(g["undecided"]), levels
                continue
            assert math.isnan(g["kept_xl"]), levels
            dense = run.fs.node_counts(levels, sensitive=checker.needed)
            big = int((dense.sizes >= thresholds[0]).sum())
            failing_big = big - int(e["kept_classes"])
            assert failing_big <= g["undecided"] <= big, levels
            if groups == 1 and thresholds[2] is not None:
                assert g["undecided"] == big, levels
            if groups == 14 and width is False:       # a packed sum may carry: then more are undecided
                assert g["undecided"] == failing_big, levels
            undecided += int(g["undecided"])
            judged += big
            failing += failing_big
        assert any(packed)
        # fewer groups than l (or than the distinct values needed) cannot prove a block: all undecided
        provable = groups >= max(thresholds[1], math.exp(thresholds[2]) if thresholds[2] is not None else 1)
        if 1 < groups < 14 and not carrying:
            assert 0 < undecided < judged if provable else undecided == judged
        if carrying and groups > 1:     # the carried blocks are judged on their values, not on wrong digits
            assert undecided > failing


@pytest.mark.parametrize("ranges", [[1], [2], [3], [6], [1000], [702_966], [1000, 12], [44_000, 147],
                                    [31_953, 11, 2]])
def test_required_bits_are_the_least_threshold_at_which_duckdb_plans_a_perfect_hash_table(ranges):
    """`required_bits` of a GROUP BY on columns of codes 0 .. n - 1 (the statistics DuckDB keeps of them) is
    the least perfect_ht_threshold at which DuckDB's planner aggregates it in a perfect hash table."""
    con = duckdb.connect()
    cols = ", ".join(f"CAST(CASE WHEN range = 0 THEN 0 ELSE {n - 1} END AS BIGINT) AS c{i}"
                     for i, n in enumerate(ranges))
    con.execute(f"CREATE TABLE t AS SELECT {cols} FROM range(2)")
    keys = ", ".join(f"c{i}" for i in range(len(ranges)))

    def perfect(bits: int) -> bool:
        con.execute(f"SET perfect_ht_threshold = {bits}")
        plan = con.execute(f"EXPLAIN SELECT {keys}, COUNT(*) FROM t GROUP BY {keys}").fetchall()[0][1]
        return "Perfect Hash Group By" in plan

    bits = frequency.required_bits(ranges)
    assert perfect(bits) and not perfect(bits - 1)


@pytest.mark.parametrize("group_bys, states, expected", [
    # (bits, aggregates): 2^20 + 3 * 2^20 + 2^24 states exceed 2^24, so the two of 20 bits only
    ([(20, 1), (24, 1), (20, 3), (27, 1)], 1 << 24, 20),
    ([(20, 1), (24, 1), (20, 3), (27, 1)], 1 << 25, 24),
    ([(24, 1)], 1 << 24, 24),
    ([(24, 3)], 1 << 24, 0),              # the three aggregates of a verdict's blocks: three states a slot
    ([(25, 1)], 1 << 24, 0),
    ([(10, 1), (10, 1), (11, 1)], 1 << 12, 11),      # 1,024 + 1,024 + 2,048: exactly the states
    ([(12, 1)] * 5, 1 << 14, 0),          # five of 4,096 exceed 16,384: not even the smallest fits
    ([], 1 << 24, 0),
])
def test_perfect_hash_threshold(group_bys, states, expected):
    assert frequency.perfect_hash_threshold(group_bys, states) == expected


@pytest.mark.parametrize("states", [1 << 24, 1 << 12, 0], ids=["states for all", "for none", "engine decides"])
def test_count_statements_are_aggregated_in_perfect_hash_tables_within_the_states(monkeypatch, states):
    """The class-size pass and the verdict queries (exact, grouped, witness) raise DuckDB's perfect_ht_threshold
    for their statement so that each of its GROUP BYs (Adult's bottom node: 5,180 blocks, 13 bits; with the
    value, 17) is planned as a perfect hash table, within the backend's `perfect_hash_states`; the caller's
    setting (11) is back after each statement. States for none, or none offered: every GROUP BY is hashed, and the
    grouped verdict counts its groups in a packed sum instead of a GROUP BY of (block, group)."""
    with Anonymization(_adult_policy(*VERDICT_CASES[0]), db=":memory:") as run:
        run.fs.rollup = False
        counts = run.fs.counts
        con = counts.con
        con.execute("SET perfect_ht_threshold = 11")
        monkeypatch.setattr(counts, "perfect_hash_states", lambda settings=None: states)
        seen = []
        fetch = counts.fetchnumpy_union

        def spy(template, branches, order=None):
            threshold = con.execute("SELECT current_setting('perfect_ht_threshold')").fetchall()[0][0]
            plan = con.execute("EXPLAIN " + union_sql(template, branches, order)).fetchall()[0][1]
            seen.append((threshold, plan.count("Perfect Hash Group By"), plan.count("Hash Group By")))
            return fetch(template, branches, order)

        monkeypatch.setattr(counts, "fetchnumpy_union", spy)
        node = {"age": 0, "sex": 0, "race": 0, "marital_status": 0}
        thresholds = run.checker.verdict_thresholds()
        run.fs.batch_counts([node])
        run.fs.batch_counts([node], distinct=["occupation"])
        run.fs.node_verdicts([node], "occupation", *thresholds)
        run.fs.node_verdicts([node], "occupation", *thresholds, value_groups=4)
        run.fs.node_verdicts([node], "occupation", *thresholds, witness=True)
        assert con.execute("SELECT current_setting('perfect_ht_threshold')").fetchall() == [(11,)]
    group_bys = [1, 2, 2, 4, 2]         # the GROUP BYs of each statement
    if states != 1 << 24:               # no perfect hash table for (block, group): its groups in a packed sum
        group_bys[3] = 3
    if states == 1 << 24:
        assert [s[0] for s in seen] == [13, 17, 17, 17, 17]
        assert [s[1] for s in seen] == [s[2] for s in seen] == group_bys
    else:
        assert [s[:2] for s in seen] == [(11, 0)] * 5
        assert [s[2] for s in seen] == group_bys


@pytest.mark.parametrize("states, sum_bits, rows, groups, packed, width", [
    (1 << 24, 127, 45_222, 4, [], 37),      # (block, group) on 16 bits: a perfect hash table, not packed
    (1 << 12, 127, 45_222, 4, [0], 37),     # no perfect hash table for it: packed, (127 - 16) // 3 bits a digit
    (0, 127, 45_222, 14, [0], 8),           # DuckDB's own threshold (12 bits) alone: packed
    (1 << 12, 0, 45_222, 4, [], None),      # an engine without a 128-bit sum (PostgreSQL, Spark)
    (1 << 12, 127, 45_222, 1, [], None),    # one group: nothing to pack
    (1 << 12, 127, 2 ** 100, 14, None, None),   # 2^100 rows leave 26 bits for 13 digits: 2 each, too few
])
def test_grouped_verdicts_pack_their_groups_where_no_perfect_hash_table_fits(monkeypatch, states, sum_bits, rows,
                                                                              groups, packed, width):
    """`_packed_branches`: a grouped verdict counts its groups in a packed sum only where its (block, group)
    GROUP BY would be hashed, and `packed_group_width` leaves the last digit the table's row count (Adult: 45,222
    rows, 16 bits) and the others at least `PACKED_GROUP_MIN_BITS`."""
    with Anonymization(_adult_policy(*VERDICT_CASES[0]), db=":memory:") as run:
        counts = run.fs.counts
        monkeypatch.setattr(counts, "perfect_hash_states", lambda settings=None: states)
        monkeypatch.setattr(counts, "sum_bits", sum_bits)
        node = {"age": 0, "sex": 0, "race": 0, "marital_status": 0}      # 5,180 blocks: 13 bits
        assert run.fs.packed_group_width(groups, rows) == width
        if packed is not None:          # Adult's own rows
            assert run.fs._packed_branches([(node, run.fs._block_radix(node))], "occupation", groups) == (
                packed, width)
        counts.con.execute("SET perfect_ht_threshold = 20")     # a connection's own higher threshold counts
        if width is not None:
            assert run.fs._packed_branches([(node, run.fs._block_radix(node))], "occupation", groups) == ([], width)


def _one_block_per_sex(counts: dict[int, list[int]]) -> duckdb.DuckDBPyConnection:
    """`_random_table` of one zip code and age: a block per sex, `counts[sex][v]` rows of value v."""
    return _random_table([(0, 0, sex, v) for sex, per_value in counts.items()
                          for v, c in enumerate(per_value) for _ in range(c)])


@pytest.mark.parametrize("counts, groups, expected", [
    # 5 rows of v0 (entropy 0): their group's count 5 carries in 2 bits, digits (1, 1) look like entropy ln 2;
    # the digits sum to 2, not 5, so the block is judged on its values and fails (with the other, of one value)
    ({0: [5, 0], 1: [0, 1]}, 2, {"suppressed": 6, "kept_classes": 0, "undecided": 2}),
    # v3 is the table's lightest value, so its group is the last digit, read whole: 9 > 3 does not carry, and
    # (1, 1, 1, 9) proves the first block; the second's 20s carry and it is judged on its values (it passes)
    ({0: [1, 1, 1, 9], 1: [20, 20, 20, 0]}, 4, {"suppressed": 0, "kept_classes": 2, "undecided": 1}),
])
def test_packed_digits_of_two_bits(counts, groups, expected):
    """The packed sum's digits with 2 bits each, on blocks chosen for it: a carry is caught by the digits' sum,
    and the last digit is not masked. Entropy ln 2 (the TKDD threshold less `TOL`), any size."""
    con = _one_block_per_sex(counts)
    run = Anonymization(_random_policy(1, 0.0, {"variant": "entropy", "l": 2}), connection=con)
    run.fs.rollup = False
    node = {"zip": 0, "age": 0, "sex": 0}
    thresholds = run.checker.verdict_thresholds()
    with _packing(2):
        row = run.fs.node_verdicts([node], run.checker.needed[0], *thresholds, value_groups=groups)[0]
    assert {f: row[f] for f in expected} == expected
    exact = run.fs.node_verdicts([node], run.checker.needed[0], *thresholds)[0]
    assert all(row[f] == exact[f] for f in VERDICT_FIELDS)
    con.close()


# a cell's count in the wide frequency set scaled to make blocks of billions of rows
BILLIONS = 2_000_000_000


@pytest.mark.parametrize("groups, width", [(None, False), (2, False), (2, None)],
                         ids=["exact", "grouped", "grouped, packed"])
def test_verdicts_sum_the_squares_of_blocks_past_bigint_exactly(groups, width):
    """Blocks of 12e9 and 10e9 rows (each cell's count times `BILLIONS` in the wide frequency set): a square
    passes 2^63, so the verdict queries sum squares in DECIMAL(38, 0) (`FrequencySet.wide_squares`). In BIGINT
    the packed form stops with an overflow on DuckDB (its block sizes are BIGINT there; elsewhere DuckDB's SUM
    is HUGEINT), and on Spark, whose SUM of BIGINT stays BIGINT, every form does. The first block passes entropy
    ln 2 (values 3:3), the second (1:4) is suppressed; every sum is the exact one, rounded once to a float."""
    con = _one_block_per_sex({0: [3, 3], 1: [1, 4]})
    run = Anonymization(_random_policy(1, 0.5, {"variant": "entropy", "l": 2}), connection=con)
    run.fs.rollup = False
    con.execute(f'UPDATE "{run.fs.wide_stored}" SET "cnt" = "cnt" * {BILLIONS}')
    domain = run.fs.sensitives[0].domain
    object.__setattr__(domain, "totals", domain.totals * BILLIONS)
    assert run.fs.wide_squares(run.checker.needed[0])
    node = {"zip": 0, "age": 0, "sex": 0}
    with _packing(width) if width is not False else contextlib.nullcontext():
        row = run.fs.node_verdicts([node], run.checker.needed[0], *run.checker.verdict_thresholds(),
                                   value_groups=groups)[0]
    kept, suppressed = 6 * BILLIONS, 5 * BILLIONS
    assert {f: row[f] for f in VERDICT_FIELDS} == {
        "classes": 2, "sum_sq": float(kept ** 2 + suppressed ** 2), "min_size": suppressed,
        "suppressed": suppressed, "kept_classes": 1, "kept_sum_sq": float(kept ** 2)}
    con.close()


@pytest.mark.parametrize("rows, wide", [(frequency.BIGINT_SQUARE_ROWS - 1, False),
                                        (frequency.BIGINT_SQUARE_ROWS, False),
                                        (frequency.BIGINT_SQUARE_ROWS + 1, True)])
def test_squares_widen_just_past_the_most_rows_whose_square_fits_bigint(rows, wide):
    """A table of N rows has no block, and no sum of squared block sizes, above N^2: BIGINT holds them up to
    N = isqrt(2^63 - 1) rows, and one row more needs the wide sums."""
    assert frequency.BIGINT_SQUARE_ROWS ** 2 <= 2 ** 63 - 1 < (frequency.BIGINT_SQUARE_ROWS + 1) ** 2
    con = _one_block_per_sex({0: [3, 3], 1: [1, 4]})
    run = Anonymization(_random_policy(1, 0.5, {"variant": "entropy", "l": 2}), connection=con)
    domain = run.fs.sensitives[0].domain
    totals = np.zeros_like(domain.totals)
    totals[0] = rows
    object.__setattr__(domain, "totals", totals)
    assert run.fs.wide_squares(run.checker.needed[0]) is wide
    con.close()


def test_a_statement_packs_only_its_nodes_past_the_perfect_hash_bits(monkeypatch):
    """In one statement of a node of one attribute (judged exactly), a node of 5,180 blocks and one of 5 blocks,
    with perfect hash tables up to 15 bits: only the first grouped node's (block, group) GROUP BY (16 bits)
    misses one, and only its branch is packed."""
    with Anonymization(_adult_policy(*VERDICT_CASES[0]), db=":memory:") as run:
        run.fs.rollup = False
        counts = run.fs.counts
        monkeypatch.setattr(counts, "perfect_hash_bits", lambda threshold_for: 15)
        seen = []
        fetch = counts.fetchnumpy_union

        def spy(template, branches, order=None):
            seen.append((template, [(sorted(b["block_cols"]), b.get("packed")) for b in branches]))
            return fetch(template, branches, order)

        monkeypatch.setattr(counts, "fetchnumpy_union", spy)
        nodes = [{"age": 0}, {"age": 0, "sex": 0, "race": 0, "marital_status": 0},
                 {"age": 4, "sex": 1, "race": 1, "marital_status": 0}]
        run.fs.node_verdicts(nodes, "occupation", *run.checker.verdict_thresholds(), value_groups=4)
        cols = [[run.fs.qi(a).col(lvl) for a, lvl in sorted(n.items())] for n in nodes]
        assert seen == [("node_verdict_branch.sql", [(sorted(cols[0]), None)]),
                        ("node_verdict_grouped_branch.sql", [(sorted(cols[1]), run.fs.packed_group_width(4, 45_222)),
                                                             (sorted(cols[2]), None)])]


@pytest.mark.parametrize("threads, memory_limit, states", [
    (2, "6GB", 1 << 24),                # 3 x 2^24 among 3 copies (two threads and the merge)
    (1, "6GB", 3 << 23),
    (7, "6GB", (3 << 24) // 8),
    (2, "1GB", int(953.6 * 2 ** 20) // 96 // 3),       # DuckDB shows 1 GB as 953.6 MiB; a 96th of it
    (1, "50MB", int(47.6 * 2 ** 20) // 96 // 2),
])
def test_duckdb_perfect_hash_states_are_shared_among_copies_and_bounded_by_the_memory_limit(threads, memory_limit,
                                                                                               states):
    """Each thread fills a copy of a perfect hash table and the merge one more, outside DuckDB's memory_limit:
    the states a statement may use are shared among them, and a small memory_limit lowers them."""
    backend = connect()
    backend.con.execute(f"SET threads = {threads}")
    backend.con.execute(f"SET memory_limit = '{memory_limit}'")
    assert backend.perfect_hash_states() == states


def test_the_callers_perfect_hash_setting_is_back_after_a_failed_statement():
    backend = connect()
    with pytest.raises(RuntimeError), backend.perfect_hashing(lambda states: 20):
        assert backend.con.execute("SELECT current_setting('perfect_ht_threshold')").fetchall() == [(20,)]
        raise RuntimeError("the statement failed")
    assert backend.con.execute("SELECT current_setting('perfect_ht_threshold')").fetchall() == [(12,)]


@pytest.mark.parametrize("privacy", [c[0] for c in GROUPED_CASES if "entropy" in str(c[0])], ids=str)
def test_the_checker_judges_on_value_groups_with_the_dense_verdicts_and_stats(monkeypatch, privacy):
    """With fewer `VALUE_GROUPS` (Adult's occupation has 14 values, too few for the default 12 groups), the
    checker's verdict query judges on groups of values first: on every Adult node the verdicts and NodeStats equal the
    dense route's; the stats of the nodes judged on groups carry no kept_xlogx (it takes the values)."""
    monkeypatch.setattr(checker_module, "VALUE_GROUPS", 2)
    with Anonymization(_adult_policy(privacy, None), db=":memory:") as run:
        run.fs.rollup = False
        checker = run.checker
        assert checker.value_groups == math.ceil(2 * privacy["l_diversity"]["l"])
        nodes = _every_node(run)
        assert run.fs.wide_table
        log = run.backend.log = []
        verdicts = checker._judge_in_database(nodes)
        assert any('"vg"' in q for q in log)
        expected, dense_stats = _fresh_dense_stats(run, nodes)
        assert verdicts == expected and any(verdicts) and not all(verdicts)
        for levels in nodes:
            key = tuple(levels[n] for n in run.lattice.names)
            assert checker.stats[key] == dense_stats[key], key
            assert (checker.stats[key].kept_xlogx is None) == (run.fs._block_radix(levels) is not None), key
    monkeypatch.setattr(checker_module, "VALUE_GROUPS", 7)       # 14 values: not more than twice as many
    with Anonymization(_adult_policy(privacy, None), db=":memory:") as run:
        run.fs.rollup = False
        assert run.checker.value_groups is None


def test_satisfied_many_judges_in_the_database_only_what_the_verdict_query_states():
    """The search's entry point takes the verdict query for entropy l past the in-memory roll-up; in memory,
    for recursive (c,l), with don't-care values or with an entity key it keeps the sparse counts."""
    with Anonymization(adult_policy(4, {"k": 2, "l_diversity": {"variant": "entropy", "l": 2}}), db=":memory:") as run:
        assert not run.checker.verdicts_in_database          # rolled up in memory: nothing to gain
        run.fs.rollup, run.fs._counts_source = False, None
        assert run.checker.verdicts_in_database
        nodes = _every_node(run)[:40]
        log = run.backend.log = []
        got = run.checker.satisfied_many(nodes)
        assert any('"xl"' in q for q in log) and not any('"key"' in q or '"v"' in q for q in log)
        assert got == _fresh_dense_stats(run, nodes)[0]
    for privacy in ({"l_diversity": {"variant": "recursive", "c": 3, "l": 2}},
                    {"l_diversity": {"variant": "entropy", "l": 2, "dont_care": ["Prof-specialty"]}}):
        with Anonymization(adult_policy(4, privacy), db=":memory:") as run:
            run.fs.rollup = False
            assert not run.checker.verdicts_in_database, privacy


def _random_rows(values: int):
    """Rows (zip, age, sex, sensitive value) for `_random_table`: 6 to 80 of them, `values` sensitive values."""
    return st.lists(st.tuples(st.integers(0, 6), st.integers(0, 12), st.integers(0, 1), st.integers(0, values - 1)),
                    min_size=6, max_size=80)


def _random_run(rows: list[tuple], k: int, supp: float, l: float) -> tuple[duckdb.DuckDBPyConnection, Anonymization]:
    """A random table's run with k, a suppression budget and entropy l (lowered to what the table's values
    allow), its counts kept in the database (no roll-up)."""
    con = _random_table(rows)
    if len({r[3] for r in rows}) < l:
        l = 1.5 if len({r[3] for r in rows}) >= 2 else 1
    privacy = {"variant": "entropy", "l": l} if l > 1 else None
    run = Anonymization(_random_policy(k, supp, privacy), connection=con)
    run.fs.rollup = False
    return con, run


@settings(max_examples=40, deadline=None)
@given(rows=_random_rows(4),
       k=st.integers(1, 5), supp=st.sampled_from([0.0, 0.05, 0.3]), l=st.sampled_from([1.5, 2, 3]))
def test_node_verdicts_equal_the_dense_judgement_on_random_tables(rows, k, supp, l):
    """Random tables, every node: the verdict query agrees with the dense judgement, stats included."""
    con, run = _random_run(rows, k, supp, l)
    nodes = _every_node(run)
    if run.checker.needed:
        assert run.checker.verdicts_in_database
        verdicts = run.checker._judge_in_database(nodes)
        expected, dense_stats = _fresh_dense_stats(run, nodes)
        assert verdicts == expected
        for levels in nodes:
            key = tuple(levels[n] for n in run.lattice.names)
            assert run.checker.stats[key] == dense_stats[key], key
    con.close()


@settings(max_examples=40, deadline=None)
@given(rows=_random_rows(4), meet_blocks=st.sampled_from([1, 8, 60, 1 << 22]), data=st.data())
def test_class_sizes_rolled_up_from_meets_equal_each_nodes_own_on_random_tables(rows, meet_blocks, data):
    """Random tables, 1 to 8 nodes over any attributes at any levels, meets of at most 1, 8, 60 or 2^22 possible
    blocks: the sizes `batch_counts` rolls up from the meets (`_meets`) are each node's own GROUP BY's."""
    con, run = _random_run(rows, 2, 0.0, 1)
    heights = {q.name: q.height for q in run.fs.qis}
    node = st.fixed_dictionaries({}, optional={a: st.integers(0, h) for a, h in heights.items()}).filter(bool)
    nodes = data.draw(st.lists(node, min_size=1, max_size=8))
    with mock.patch.object(frequency, "MEET_BLOCKS", meet_blocks), \
            mock.patch.object(frequency, "MEET_ROWS_PER_BLOCK", 1):
        rolled = run.fs.batch_counts(nodes)
    with mock.patch.object(frequency, "MEET_BLOCKS", 0):      # no meets: each node its own GROUP BY
        own = run.fs.batch_counts(nodes)
    for levels, r, o in zip(nodes, rolled, own):
        assert sorted(r.sizes.tolist()) == sorted(o.sizes.tolist()), levels
    con.close()


def test_nodes_of_fewer_attributes_than_their_meet_roll_up_to_their_own_sizes(monkeypatch):
    """Nodes over other attributes than their meet's (one GROUP BY of age, sex, race and marital_status at their
    lowest levels): each rolls up to its own GROUP BY's sizes, whatever the attributes' places in the meet."""
    monkeypatch.setattr(frequency, "MEET_ROWS_PER_BLOCK", 1)
    nodes = [{"sex": 0, "race": 1}, {"age": 0, "marital_status": 0}, {"age": 2, "race": 0}, {"marital_status": 1}]
    with Anonymization(adult_policy(4, {"k": 2}), db=":memory:") as run:
        assert [members for _meet, members in run.fs._meets(nodes)] == [[0, 1, 2, 3]]
        rolled = run.fs.batch_counts(nodes)
        monkeypatch.setattr(frequency, "MEET_BLOCKS", 0)
        own = run.fs.batch_counts(nodes)
    for levels, r, o in zip(nodes, rolled, own):
        assert sorted(r.sizes.tolist()) == sorted(o.sizes.tolist()), levels


@pytest.mark.parametrize("meet_blocks, rows_per_block, expected", [
    # age 74 codes, sex 2, race 5, marital_status 7 at level 0: {age, sex} has 148 possible blocks, past 100, so
    # {sex} and {age, sex} start groups of their own; {race, marital_status} (35) joins {sex}: 70 blocks; {age: 4}
    # (the top, one code) joins {age: 0}, whose meet it leaves as it is
    (100, 1, [({"age": 0}, [0, 4]), ({"sex": 0, "race": 0, "marital_status": 0}, [1, 3]),
              ({"age": 0, "sex": 0}, [2])]),
    # the same from the wide frequency set's 7,965 rows over MEET_ROWS_PER_BLOCK (64): 124 blocks
    (1 << 22, 64, [({"age": 0}, [0, 4]), ({"sex": 0, "race": 0, "marital_status": 0}, [1, 3]),
                   ({"age": 0, "sex": 0}, [2])]),
    # the bottom's 5,180 blocks hold them all
    (5_180, 1, [({"age": 0, "sex": 0, "race": 0, "marital_status": 0}, [0, 1, 2, 3, 4])]),
    (0, 1, [({"age": 0}, [0]), ({"sex": 0}, [1]), ({"age": 0, "sex": 0}, [2]),
            ({"race": 0, "marital_status": 0}, [3]), ({"age": 4}, [4])]),
])
def test_meets_group_the_nodes_greedily_within_meet_blocks(monkeypatch, meet_blocks, rows_per_block, expected):
    """`_meets`: in the nodes' order, each joins the first group whose meet (every attribute at its lowest
    level) stays within `MEET_BLOCKS` possible blocks and the wide frequency set's rows over
    `MEET_ROWS_PER_BLOCK`; the meet's attributes in quasi-identifier order."""
    monkeypatch.setattr(frequency, "MEET_BLOCKS", meet_blocks)
    monkeypatch.setattr(frequency, "MEET_ROWS_PER_BLOCK", rows_per_block)
    with Anonymization(adult_policy(4, {"k": 2}), db=":memory:") as run:
        nodes = [{"age": 0}, {"sex": 0}, {"age": 0, "sex": 0}, {"marital_status": 0, "race": 0}, {"age": 4}]
        groups = run.fs._meets(nodes)
    assert [(list(meet.items()), members) for meet, members in groups] == \
        [(list(meet.items()), members) for meet, members in expected]


@settings(max_examples=40, deadline=None)
@given(rows=_random_rows(10),
       k=st.integers(1, 5), supp=st.sampled_from([0.0, 0.05, 0.3]), l=st.sampled_from([1.5, 2, 3]),
       groups=st.integers(1, 5), form=st.sampled_from(list(GROUP_COUNTS)))
def test_grouped_verdicts_equal_the_exact_ones_on_random_tables(rows, k, supp, l, groups, form):
    """Random tables of up to 10 sensitive values, every node, 1 to 5 groups, each way of counting the groups:
    the grouped verdict query's row equals the exact one's (classes, sizes, suppressed rows, kept classes)."""
    con, run = _random_run(rows, k, supp, l)
    if run.checker.needed:
        nodes = _every_node(run)
        thresholds = run.checker.verdict_thresholds()
        exact = run.fs.node_verdicts(nodes, run.checker.needed[0], *thresholds)
        width = GROUP_COUNTS[form]
        with _packing(width) if width is not False else contextlib.nullcontext():
            grouped = run.fs.node_verdicts(nodes, run.checker.needed[0], *thresholds, value_groups=groups)
        for levels, e, g in zip(nodes, exact, grouped):
            for f in VERDICT_FIELDS:
                assert g[f] == e[f], (levels, f)
    con.close()


@pytest.mark.parametrize("value_groups", [16, 2], ids=["values", "groups of values first"])
@pytest.mark.parametrize("privacy", [{"k": 5, "l_diversity": {"variant": "entropy", "l": 3}},
                                     {"k": 5, "l_diversity": {"variant": "entropy", "l": 3}, "max_suppression": 0.04}])
def test_search_judged_in_the_database_equals_brute_force_and_the_in_memory_choice(monkeypatch, privacy,
                                                                                  value_groups):
    """With the verdicts in the database, Incognito's minimal nodes equal brute force over every node (both
    through the same checker) and the in-memory route's (a separate judgement), and the chosen node and its
    discernibility equal the in-memory route's (whose choice test_optimum checks against the brute-force
    optimum), with and without suppression, and with the blocks judged on groups of values first."""
    monkeypatch.setattr(checker_module, "VALUE_GROUPS", value_groups)
    got = {}
    for rollup in (True, False):
        with Anonymization(adult_policy(5, privacy), db=":memory:") as run:
            run.fs.rollup = rollup
            assert run.checker.verdicts_in_database == (not rollup)
            reference = find_minimal(run.lattice, run.checker, mode="brute_force")
        with Anonymization(adult_policy(5, privacy), db=":memory:") as run:
            run.fs.rollup = rollup
            assert (run.checker.value_groups is not None) == (value_groups == 2)
            run.search()
            assert sorted(run.result.minimal) == sorted(reference.minimal) and reference.minimal
            chosen = run.choose()
            got[rollup] = (sorted(run.result.minimal), dict(chosen.levels), chosen.metrics["discernibility"])
    assert got[True] == got[False]


def _witness_rows(run: Anonymization, nodes: list[dict]) -> list[dict]:
    return run.fs.node_verdicts(nodes, run.checker.needed[0], *run.checker.verdict_thresholds(), witness=True)


@pytest.mark.parametrize("cells", [64, 4096], ids=["64 sampled cells", "4,096 sampled cells"])
@pytest.mark.parametrize("privacy, sensitive", VERDICT_CASES, ids=lambda v: str(v))
def test_witness_checks_prove_only_nodes_that_fail(monkeypatch, privacy, sensitive, cells):
    """On every Adult node, the blocks a witness sample falls in are judged exactly as the full verdict
    judges them: a subset of its classes and of its suppressed rows. So a node the witness check fails
    does fail (the dense judgement says so); and the check is not the full verdict in disguise: on some
    nodes it sees fewer classes (where the sample is smaller than the table), and it proves some failing
    (with a budget, only a large sample holds more failing rows than the budget)."""
    monkeypatch.setattr(frequency, "WITNESS_CELLS", cells)
    policy = _adult_policy(privacy, sensitive)
    with Anonymization(policy, db=":memory:") as run:
        run.fs.rollup = False
        nodes = _every_node(run)
        witness = _witness_rows(run, nodes)
        full = run.fs.node_verdicts(nodes, run.checker.needed[0], *run.checker.verdict_thresholds())
        fails = run.checker._fails_on_witnesses(nodes)
        expected, _ = _fresh_dense_stats(run, nodes)
        for levels, w, f, proven, ok in zip(nodes, witness, full, fails, expected):
            assert w["classes"] <= f["classes"] and w["suppressed"] <= f["suppressed"], levels
            assert w["kept_classes"] <= f["kept_classes"], levels
            assert not (proven and ok), levels
        if run.fs.wide_rows > cells:        # else the sample is every cell, and the check the full verdict
            assert any(w["classes"] < f["classes"] for w, f in zip(witness, full))
        if cells > 64 or not run.policy.max_suppression:   # a few sampled blocks rarely pass a budget's rows
            assert any(fails)


@settings(max_examples=40, deadline=None)
@given(rows=_random_rows(4),
       k=st.integers(1, 5), supp=st.sampled_from([0.0, 0.05, 0.3]), l=st.sampled_from([1.5, 2, 3]),
       cells=st.integers(1, 20))
def test_witness_checks_prove_only_failing_nodes_on_random_tables(rows, k, supp, l, cells):
    """Random tables and samples, every node: a node the witness check fails fails the dense judgement."""
    con, run = _random_run(rows, k, supp, l)
    if run.checker.needed:
        old = frequency.WITNESS_CELLS
        frequency.WITNESS_CELLS = cells      # hypothesis runs many examples per test: no monkeypatch fixture
        try:
            nodes = _every_node(run)
            fails = run.checker._fails_on_witnesses(nodes)
        finally:
            frequency.WITNESS_CELLS = old
        expected, _ = _fresh_dense_stats(run, nodes)
        assert not any(f and ok for f, ok in zip(fails, expected))
    con.close()


@pytest.mark.parametrize("privacy", [{"k": 5, "l_diversity": {"variant": "entropy", "l": 3}},
                                     {"k": 5, "l_diversity": {"variant": "entropy", "l": 3}, "max_suppression": 0.04}])
def test_search_with_witness_checks_equals_brute_force(monkeypatch, privacy):
    """Incognito with every node witness-checked first (any number of sample collisions allowed) finds
    brute force's minimal nodes (judged in full, no witness) and the same chosen node, and witness checks
    ran (and, without suppression, decided nodes). With suppression the search runs them as witness
    checks, in the monotone pre-pass (k-anonymity and the entropy's distinct-value bound); the full check
    after it is never witnessed."""
    monkeypatch.setattr(frequency, "WITNESS_CELLS", 256)
    monkeypatch.setattr(checker_module, "WITNESS_COLLISIONS", 10 ** 9)
    with Anonymization(adult_policy(5, privacy), db=":memory:") as run:
        run.fs.rollup = False
        reference = find_minimal(run.lattice, run.checker, mode="brute_force")
        assert run.checker.witnessed == 0
    with Anonymization(adult_policy(5, privacy), db=":memory:") as run:
        run.fs.rollup = False
        log = run.backend.log = []
        run.search()
        assert sorted(run.result.minimal) == sorted(reference.minimal) and reference.minimal
        witness_statements = sum("EXISTS" in q for q in log)
        witnessed = run.checker.witnessed
        chosen = run.choose()
    with Anonymization(adult_policy(5, privacy), db=":memory:") as run:
        log = run.backend.log = []
        run.search()            # rolled up in memory: no witness checks, the reference choice
        assert run.checker.witnessed == 0 and not any("EXISTS" in q for q in log)
        assert dict(run.choose().levels) == dict(chosen.levels)
    assert witness_statements > 0
    if "max_suppression" not in privacy:       # else the pre-pass's own checker witnessed them
        assert witnessed > 0


def test_the_witness_sample_depends_on_the_cells_not_on_the_order_they_were_written_in(monkeypatch):
    """The witness sample (`witness_sample.sql`) is the WITNESS_CELLS cells of smallest hash of their codes and
    the seed: written again in another order (a multi-threaded sort leaves ties in any order), the wide set
    gives the same sample, so runs of the same policy decide the same nodes by witness checks; another seed
    draws other cells. (DuckDB's seeded reservoir sample drew other cells from the same rows reordered.)"""
    monkeypatch.setattr(frequency, "WITNESS_CELLS", 512)
    with Anonymization(adult_policy(5, {"k": 5, "l_diversity": {"variant": "entropy", "l": 3}}), db=":memory:") as run:
        fs, con = run.fs, run.backend.con
        assert fs.wide_table
        wide = fs.wide_stored       # the table under the wide set's view (`constant_columns`)

        def sample() -> list[tuple]:
            fs._witness = None
            return con.execute(f'SELECT * FROM "{fs.witness_table()}" ORDER BY ALL').fetchall()
        first = sample()
        cells = con.execute(f'SELECT COUNT(*) FROM "{wide}"').fetchone()[0]
        assert len(first) == len(set(first)) == 512 < cells
        for order in ("random()", "ALL DESC"):
            con.execute("SELECT setseed(0.5)")
            con.execute(f'CREATE TEMP TABLE reordered AS SELECT * FROM "{wide}" ORDER BY {order}')
            con.execute(f'DROP TABLE "{wide}"')
            con.execute(f'ALTER TABLE reordered RENAME TO "{wide}"')
            assert sample() == first, order
        monkeypatch.setattr(frequency, "WITNESS_SEED", frequency.WITNESS_SEED + 1)
        assert sample() != first


def test_a_node_the_witness_check_left_undecided_is_not_checked_again(monkeypatch):
    """The same sample gives the same answer, so a node a witness check did not prove failing (or one of its
    blocks) is not checked again: a second `satisfied_many` over every Adult node gives the same verdicts and
    witness-checks only the nodes the first proved failing (the two-pass search meets presumed nodes twice)."""
    monkeypatch.setattr(frequency, "WITNESS_CELLS", 256)
    monkeypatch.setattr(checker_module, "WITNESS_COLLISIONS", 10 ** 9)
    with Anonymization(adult_policy(5, {"k": 5, "l_diversity": {"variant": "entropy", "l": 3}}), db=":memory:") as run:
        run.fs.rollup = False
        nodes = _every_node(run)
        witness_filter = f'EXISTS (SELECT 1 FROM "{run.fs.witness_table()}"'       # the check's filter
        log = run.backend.log = []
        first = run.checker.satisfied_many(nodes, witness=True)
        failing = run.checker.witnessed
        assert sum(witness_filter in q for q in log) == -(-len(nodes) // checker_module.WITNESS_BATCH)
        assert 0 < failing < len(nodes)
        log.clear()
        assert run.checker.satisfied_many(nodes, witness=True) == first
        assert run.checker.witnessed - failing == failing
        assert sum(witness_filter in q for q in log) == -(-failing // checker_module.WITNESS_BATCH)


def test_witness_checks_run_only_where_the_collisions_suggest_many_blocks():
    """With the default threshold, Adult's nodes (30,162 rows: a sample of 4,096 cells collides often) are
    judged in full, not witness-checked: at most a few of the finest nodes qualify."""
    with Anonymization(adult_policy(5, {"k": 5, "l_diversity": {"variant": "entropy", "l": 3}}), db=":memory:") as run:
        run.fs.rollup = False
        nodes = _every_node(run)
        collisions = [run.fs.witness_collisions(levels) for levels in nodes]
        assert min(collisions) >= 0 and max(collisions) == 4095        # the top node: one block
        assert sum(c <= checker_module.WITNESS_COLLISIONS for c in collisions) < len(nodes) // 10


@pytest.mark.parametrize("share, rows, budget", [
    (0.29, 100_000_000, 29_000_000),      # the float product with a slack of 1e-9 gave one row less
    (0.57, 100_000_000, 57_000_000),
    (0.58, 100_000_000, 58_000_000),
    (0.01, 45_222, 452),
    (0.0, 10, 0),
    (1.0, 7, 7),
    (0.1, 9, 0),
])
def test_the_suppression_budget_is_the_share_as_written_times_the_rows(share, rows, budget):
    from sqlanon.checker import suppression_budget
    assert suppression_budget(share, rows) == budget
