"""Node counts rolled up in memory from cached finer results equal the database's GROUP BY of every node."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.anonymizer import Anonymization
from sqlanon.rollup import GroupKeys, RollupCounts, _group, _pack, _sum_packed, counts_source

from conftest import adult_policy


@pytest.mark.parametrize("order", ["bottom-up", "top-down"])
def test_every_node_and_subset_equals_the_database(order):
    policy = adult_policy(4, {"k": 2})
    run = Anonymization(policy, db=":memory:")
    fs = run.fs
    rollup = RollupCounts.open(fs)
    assert rollup is not None
    names = [q.name for q in fs.qis]
    nodes = []
    for size in range(1, len(names) + 1):
        for subset in itertools.combinations(names, size):
            heights = [fs.qi(a).height for a in subset]
            for levels in itertools.product(*(range(h + 1) for h in heights)):
                nodes.append(dict(zip(subset, levels)))
    nodes.sort(key=lambda n: sum(n.values()), reverse=(order == "top-down"))
    for levels in nodes:
        (mine,), (theirs,) = rollup.batch_counts([levels], ["occupation"]), fs.batch_counts([levels], ["occupation"])
        # batch_counts makes no promise on block order: compare (size, distinct) pairs as multisets
        assert sorted(zip(mine.sizes, mine.distinct["occupation"])) == \
            sorted(zip(theirs.sizes, theirs.distinct["occupation"])), levels
        (a,), (b,) = rollup.sparse_counts([levels], "occupation"), fs.sparse_counts([levels], "occupation")
        assert np.array_equal(a.block_codes, b.block_codes), levels
        assert np.array_equal(a.starts, b.starts) and np.array_equal(a.values, b.values)
        assert np.array_equal(a.counts, b.counts)
    # most nodes came from a cached finer result, not from the bottom frequency set
    if order == "bottom-up":
        assert rollup.rolled_from_cache > rollup.rolled_from_bottom
    run.close()


def test_group_orders_keys_like_the_codes():
    a, b = np.array([2, 0, 2, 1, 0]), np.array([1, 3, 0, 3, 3])
    for radices in ([3, 4], [3, 10 ** 6]):              # dense bincount and sort paths
        uniques, inverse = _group([a, b], radices)
        assert list(uniques) == [0 * radices[1] + 3, 1 * radices[1] + 3, 2 * radices[1] + 0, 2 * radices[1] + 1]
        assert list(inverse) == [3, 0, 2, 1, 0]


@pytest.mark.parametrize("radices", [
    pytest.param([3, 4], id="dense"),               # 12 slots for 5 rows: a bincount over the key space
    pytest.param([3, 10 ** 6], id="sort"),          # 3 M slots: one sort of keys with each row's count in low bits
    pytest.param([2 ** 30, 2 ** 30], id="unique"),  # keys too wide for the count's bits: np.unique
])
def test_sum_packed_every_path_sums_counts_per_key(radices):
    a, b = np.array([1, 0, 1, 1, 0]), np.array([2, 3, 2, 0, 3])
    n = np.array([5, 1, 7, 2, 40000])
    keys, sums = _sum_packed(_pack([a, b], radices, 5), radices, n)
    assert list(keys) == [0 * radices[1] + 3, 1 * radices[1] + 0, 1 * radices[1] + 2]
    assert list(sums) == [40001, 2, 12]
    assert sums.dtype == np.int64


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_group_keys_equal_packing_every_attribute(data):
    """A node's key from the kept per-group keys is `_pack` of its codes, for any subset and levels."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    attributes = data.draw(st.integers(1, 7))
    rows = data.draw(st.integers(1, 60))
    up, radix, codes = [], [], []
    for _ in range(attributes):
        sizes = sorted(data.draw(st.lists(st.integers(1, 9), min_size=1, max_size=4)), reverse=True)
        per_level = [np.arange(sizes[0])] + [np.arange(sizes[0]) * s // sizes[0] for s in sizes[1:]]
        up.append(per_level)
        radix.append(sizes)
        codes.append(rng.integers(0, sizes[0], rows))
    tail = [rng.integers(0, 3, rows)] if data.draw(st.booleans()) else None
    keys = GroupKeys(codes, up, radix, tail, [3] if tail else None)
    attrs = tuple(sorted(data.draw(st.sets(st.integers(0, attributes - 1), min_size=1))))
    levels = tuple(data.draw(st.integers(0, len(radix[a]) - 1)) for a in attrs)
    columns = [up[a][lv][codes[a]] for a, lv in zip(attrs, levels)] + (tail or [])
    radices = [radix[a][lv] for a, lv in zip(attrs, levels)] + ([3] if tail else [])
    key, got_radices = keys.key(attrs, levels)
    assert got_radices == radices
    assert np.array_equal(key, _pack(columns, radices, rows))


def test_search_is_the_same_with_and_without_rollup():
    for privacy in ({"k": 5, "max_suppression": 0.02},
                    {"k": 3, "l_diversity": {"variant": "entropy", "l": 3}, "max_suppression": 0.02}):
        with_, without = (Anonymization(adult_policy(5, privacy), db=":memory:") for _ in range(2))
        without.fs.rollup = False
        assert with_.choose().levels == without.choose().levels
        assert with_.searched().minimal == without.searched().minimal
        assert counts_source(with_.fs) is not with_.fs and counts_source(without.fs) is without.fs


def test_node_counts_and_kl_in_memory_equal_the_database():
    """Every full node of a 4-QI lattice: block codes, sizes, dense sensitive counts and the KL-divergence
    (with and without suppressed blocks) from the roll-up equal the database's queries."""
    from sqlanon.checker import NodeResult
    from sqlanon.metrics import kl_divergence

    policy = adult_policy(4, {"k": 2})
    mem, sql = (Anonymization(policy, db=":memory:") for _ in range(2))
    sql.fs.rollup = False
    assert counts_source(mem.fs) is not mem.fs and counts_source(sql.fs) is sql.fs
    assert mem.fs.rolled_up() is not None and sql.fs.rolled_up() is None
    heights = [q.height for q in mem.fs.qis]
    names = [q.name for q in mem.fs.qis]
    rng = np.random.default_rng(0)
    compared = 0
    for node in itertools.product(*(range(h + 1) for h in heights)):
        levels = dict(zip(names, node))
        a = mem.fs.node_counts(levels, sensitive=["occupation"])
        b = sql.fs.node_counts(levels, sensitive=["occupation"])
        assert np.array_equal(a.block_codes, b.block_codes) and np.array_equal(a.sizes, b.sizes), levels
        assert np.array_equal(a.sensitive["occupation"], b.sensitive["occupation"]), levels
        sizes_only = mem.fs.node_counts(levels)
        assert np.array_equal(sizes_only.block_codes, b.block_codes) and np.array_equal(sizes_only.sizes, b.sizes)
        for suppress in (False, True):
            ok = (rng.random(len(b.sizes)) > 0.3) if suppress else np.ones(len(b.sizes), dtype=bool)
            gone = int(b.sizes[~ok].sum())
            assert mem.fs.rolled_up().kl_terms(levels, a.block_codes, ok) is not None    # answered in memory
            mine = kl_divergence(mem.fs, NodeResult(levels, True, a, ok, gone))
            theirs = kl_divergence(sql.fs, NodeResult(levels, True, b, ok, gone))
            assert mine == pytest.approx(theirs, rel=1e-9, abs=1e-12), (levels, suppress)
            compared += 1
    assert compared == 2 * int(np.prod([h + 1 for h in heights]))
    # a node given with its attributes out of policy order is answered by the database, still equal
    backwards = dict(reversed(list(dict(zip(names, heights)).items())))
    assert mem.fs.rolled_up().node_counts(backwards) is None
    assert np.array_equal(mem.fs.node_counts(backwards).sizes, sql.fs.node_counts(backwards).sizes)
    mem.close(), sql.close()


def test_sparse_counts_of_a_node_given_out_of_policy_order_equal_the_database():
    """The cells' run-length shortcut applies only when the node's attributes come in policy order."""
    policy = adult_policy(4, {"k": 2})
    run = Anonymization(policy, db=":memory:")
    rollup = RollupCounts.open(run.fs)
    names = [q.name for q in run.fs.qis]
    for levels in ({names[2]: 1, names[0]: 1}, {names[3]: 0, names[1]: 1, names[0]: 2}):
        rollup.cells(dict(sorted(levels.items(), key=lambda kv: names.index(kv[0]))))    # cached in order
        (a,), (b,) = rollup.sparse_counts([levels], "occupation"), run.fs.sparse_counts([levels], "occupation")
        assert np.array_equal(a.block_codes, b.block_codes), levels
        assert np.array_equal(a.starts, b.starts) and np.array_equal(a.values, b.values)
        assert np.array_equal(a.counts, b.counts)
    run.close()
