"""Property tests (hypothesis) of the privacy models.

1. Monotonicity (TKDD Theorems 5.2-5.4; the t-closeness paper's generalization property): merging
   two blocks (adding their count rows) never breaks a model that held on both. For the measures
   with a value (entropy, adjusted entropy, c*, EMD) the merged value is checked directly.
2. Algorithm 1 computes Def. 4.5's supremum: compared with a brute-force maximization over the
   don't-care counts (a grid over the box 0 <= x_i <= phi_i, polished by L-BFGS-B).
3. Each EMD closed form equals the optimum of the transportation linear program (scipy linprog)
   with the matching ground-distance matrix, on random distributions and random hierarchies.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize

from sqlanon.models.ldiversity import (
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
    adjusted_entropy,
    adjusted_entropy_trace,
    block_entropy,
    pd_recursive_c_star,
    pd_recursive_max_l,
    pd_recursive_ok,
    recursive_c_star,
    recursive_max_l,
    recursive_ok,
)
from sqlanon.models.tcloseness import emd_equal, emd_hierarchical, emd_ordered, ground_distance

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def two_blocks(draw, min_m=1, max_m=6, max_count=12):
    """Two count rows over the same m values, each with at least one row."""
    m = draw(st.integers(min_m, max_m))
    row = st.lists(st.integers(0, max_count), min_size=m, max_size=m).filter(lambda r: sum(r) > 0)
    return np.array([draw(row), draw(row)], dtype=np.int64)


def merged(blocks: np.ndarray) -> np.ndarray:
    return blocks.sum(axis=0, keepdims=True)


def subset(draw, m, max_size=None):
    return sorted(draw(st.sets(st.integers(0, m - 1), max_size=m if max_size is None else max_size)))


C_VALUES = st.sampled_from([0.3, 0.5, 1, 1.5, 2, 3, 5])


# --------------------------------------------------------------------------------------------------
# 1. monotonicity

@SETTINGS
@given(two_blocks(), st.integers(1, 6))
def test_distinct_monotone(blocks, l):
    crit = DistinctLDiversity(l)
    if crit.block_ok(blocks).all():
        assert crit.block_ok(merged(blocks)).all()


@SETTINGS
@given(two_blocks(), st.floats(1, 6))
def test_entropy_monotone(blocks, l):
    h = block_entropy(blocks)
    assert block_entropy(merged(blocks))[0] >= h.min() - 1e-12       # Theorem 5.2 (concavity)
    crit = EntropyLDiversity(l)
    if crit.block_ok(blocks).all():
        assert crit.block_ok(merged(blocks)).all()


@SETTINGS
@given(two_blocks(), C_VALUES, st.integers(1, 6))
def test_recursive_monotone(blocks, c, l):
    assert recursive_c_star(merged(blocks), l)[0] <= recursive_c_star(blocks, l).max() * (1 + 1e-12)
    if recursive_ok(blocks, c, l).all():
        assert recursive_ok(merged(blocks), c, l).all()
    assert recursive_max_l(merged(blocks), c)[0] >= recursive_max_l(blocks, c).min()


@SETTINGS
@given(st.data(), two_blocks(min_m=2), C_VALUES, st.integers(1, 6))
def test_pd_recursive_monotone(data, blocks, c, l):
    Y = subset(data.draw, blocks.shape[1])
    assert pd_recursive_c_star(merged(blocks), l, Y)[0] <= pd_recursive_c_star(blocks, l, Y).max() * (1 + 1e-12)
    if pd_recursive_ok(blocks, c, l, Y).all():
        assert pd_recursive_ok(merged(blocks), c, l, Y).all()


@SETTINGS
@given(st.data(), two_blocks(min_m=2), C_VALUES, st.integers(1, 5), st.sampled_from([1, 5, 10, 25, 33.3]))
def test_npd_recursive_monotone(data, blocks, c, l, c2):
    Y = subset(data.draw, blocks.shape[1])
    W = subset(data.draw, blocks.shape[1], max_size=2)
    crit = RecursiveCLDiversity(c, l, Y, npd=(c2, W))               # Theorem 5.3
    if crit.block_ok(blocks).all():
        assert crit.block_ok(merged(blocks)).all()


@SETTINGS
@given(st.data(), two_blocks(min_m=2), st.floats(1, 5))
def test_adjusted_entropy_monotone(data, blocks, l):
    Y = subset(data.draw, blocks.shape[1])
    h = adjusted_entropy(blocks, Y)
    assert adjusted_entropy(merged(blocks), Y)[0] >= h.min() - 1e-9   # Theorem 5.4
    crit = EntropyLDiversity(l, Y)
    if crit.block_ok(blocks).all():
        assert crit.block_ok(merged(blocks)).all()


@SETTINGS
@given(st.data(), two_blocks(min_m=2))
def test_emd_monotone(data, blocks):
    m = blocks.shape[1]
    q = np.array(data.draw(st.lists(st.integers(1, 9), min_size=m, max_size=m)), dtype=float)
    q /= q.sum()
    levels = data.draw(hierarchies(m))
    P = blocks / blocks.sum(axis=1, keepdims=True)
    Pm = merged(blocks) / blocks.sum()
    for emd in (emd_equal, emd_ordered, lambda P, q: emd_hierarchical(P, q, levels)):
        assert emd(Pm, q)[0] <= emd(P, q).max() + 1e-12


# --------------------------------------------------------------------------------------------------
# 2. Algorithm 1 against Def. 4.5 by brute force

def normalized_entropy(x: np.ndarray) -> np.ndarray:
    """H^ of Eq. (9) for each row of x (0 log 0 = 0; all-zero rows give 0)."""
    return block_entropy(x)


def brute_force_adjusted_entropy(phi: list[int], p: list[int], grid: int = 33) -> float:
    """sup over 0 <= x_i <= phi_i of H^(x_1..x_r, p_1..p_m) (Def. 4.5), by a grid over the box and
    a bounded quasi-Newton polish from the best grid points (H^ is quasi-concave by Cor. 5.1 and
    degree-0 homogeneous, so the local polish does not get stuck)."""
    phi = np.asarray(phi, float)
    p = np.asarray(p, float)
    axes = [np.linspace(0, f, grid) for f in phi]
    pts = np.array(list(itertools.product(*axes)))
    vals = normalized_entropy(np.hstack([pts, np.tile(p, (len(pts), 1))]))
    best = vals.max()
    for start in pts[np.argsort(vals)[-3:]]:
        res = minimize(lambda x: -normalized_entropy(np.concatenate([x, p])[None, :])[0], start,
                       bounds=[(0, f) for f in phi], method="L-BFGS-B")
        best = max(best, -res.fun)
    return float(best)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=3), st.lists(st.integers(0, 9), min_size=0, max_size=3))
def test_algorithm_1_is_the_supremum(phi, p):
    assume(sum(phi) + sum(p) > 0)
    counts = np.array([phi + p])
    ours = adjusted_entropy(counts, list(range(len(phi))))[0]
    brute = brute_force_adjusted_entropy(phi, p)
    assert ours == pytest.approx(brute, abs=1e-6)
    # the literal, scalar Algorithm 1 agrees, and its x is feasible and attains the value
    trace = adjusted_entropy_trace(phi, p)
    assert trace["value"] == pytest.approx(ours, abs=1e-12)
    assert all(0 <= x <= f + 1e-9 for x, f in zip(trace["x"], phi))
    assert normalized_entropy(np.array([trace["x"] + p]))[0] == pytest.approx(ours, abs=1e-12)


def test_algorithm_1_vectorized_matches_scalar_on_many_blocks():
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 20, size=(500, 7)) * (rng.random((500, 7)) < 0.7)
    counts[counts.sum(axis=1) == 0, 0] = 1
    Y = [1, 3, 4]
    vec = adjusted_entropy(counts, Y)
    for row, v in zip(counts, vec):
        trace = adjusted_entropy_trace(row[Y], np.delete(row, Y))
        assert trace["value"] == pytest.approx(v, abs=1e-12)


def test_recursive_max_l_agrees_with_the_definition():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 9, size=(300, 6))
    counts[counts.sum(axis=1) == 0, 0] = 1
    for c in (0.5, 1, 2, 3):
        brute = np.ones(len(counts), dtype=int)
        for l in range(2, 7):
            brute = np.where(recursive_ok(counts, c, l) & (brute == l - 1), l, brute)
        assert recursive_max_l(counts, c).tolist() == brute.tolist()
        assert pd_recursive_max_l(counts, c, []).tolist() == brute.tolist()
        Y = [0, 2]
        brute = np.ones(len(counts), dtype=int)
        for l in range(2, 7):
            brute = np.where(pd_recursive_ok(counts, c, l, Y) & (brute == l - 1), l, brute)
        assert pd_recursive_max_l(counts, c, Y).tolist() == brute.tolist()


# --------------------------------------------------------------------------------------------------
# 3. EMD closed forms against the transportation linear program

@st.composite
def hierarchies(draw, m):
    """A random domain hierarchy over m leaves as `SensitiveDomain.levels` (H+1, m): each level
    groups the nodes of the level below under randomly chosen parents; the top is one root."""
    H = draw(st.integers(1, 3))
    rows = [np.arange(m)]
    n = m
    for _ in range(H - 1):
        n_parent = draw(st.integers(1, n))
        parent = np.array(draw(st.lists(st.integers(0, n_parent - 1), min_size=n, max_size=n)))
        parent = np.unique(parent, return_inverse=True)[1].reshape(-1)     # dense codes
        rows.append(parent[rows[-1]])
        n = int(parent.max()) + 1
    rows.append(np.zeros(m, dtype=int))
    return np.vstack(rows)


def transport_lp(p: np.ndarray, q: np.ndarray, d: np.ndarray) -> float:
    """min sum d_ij f_ij over flows f >= 0 with row sums p and column sums q."""
    m = len(p)
    A_eq = np.vstack([np.kron(np.eye(m), np.ones(m)), np.kron(np.ones(m), np.eye(m))])
    res = linprog(d.ravel(), A_eq=A_eq, b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


@settings(max_examples=80, deadline=None)
@given(st.data(), st.integers(2, 7))
def test_emd_formulas_equal_the_transportation_lp(data, m):
    p = np.array(data.draw(st.lists(st.integers(0, 9), min_size=m, max_size=m).filter(lambda v: sum(v) > 0)), float)
    q = np.array(data.draw(st.lists(st.integers(0, 9), min_size=m, max_size=m).filter(lambda v: sum(v) > 0)), float)
    p, q = p / p.sum(), q / q.sum()
    levels = data.draw(hierarchies(m))
    assert emd_equal(p, q)[0] == pytest.approx(transport_lp(p, q, ground_distance(m, "equal")), abs=1e-9)
    assert emd_ordered(p, q)[0] == pytest.approx(transport_lp(p, q, ground_distance(m, "ordered")), abs=1e-9)
    assert emd_hierarchical(p, q, levels)[0] == pytest.approx(
        transport_lp(p, q, ground_distance(m, "hierarchical", levels)), abs=1e-9)


def test_ground_distances_are_what_the_paper_says():
    assert ground_distance(3, "equal").tolist() == [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    assert ground_distance(3, "ordered").tolist() == [[0, 0.5, 1], [0.5, 0, 0.5], [1, 0.5, 0]]
    levels = np.array([[0, 1, 2], [0, 0, 1], [0, 0, 0]])
    assert ground_distance(3, "hierarchical", levels).tolist() == [[0, 0.5, 1], [0.5, 0, 1], [1, 1, 0]]


def test_emd_vectorized_over_blocks():
    rng = np.random.default_rng(11)
    P = rng.dirichlet(np.ones(5), size=40)
    q = rng.dirichlet(np.ones(5))
    levels = np.array([[0, 1, 2, 3, 4], [0, 0, 1, 1, 1], [0, 0, 0, 0, 0]])
    for f in (emd_equal, emd_ordered, lambda P, q: emd_hierarchical(P, q, levels)):
        whole = f(P, q)
        assert whole.shape == (40,)
        assert whole == pytest.approx([f(row, q)[0] for row in P])


# --------------------------------------------------------------------------------------------------
# 4. x log x looked up for integer counts (`ldiversity.xlogx`)

@SETTINGS
@given(st.lists(st.lists(st.integers(-3, 40), min_size=4, max_size=4), min_size=1, max_size=8),
       st.sampled_from([np.int64, np.int32, np.uint16]))
@example(rows=[[0, 1, 2, 3]] * 8, dtype=np.int64)        # a table of 4 entries for 32 counts: looked up
def test_xlogx_and_entropy_of_integer_counts_equal_the_float_computation(rows, dtype):
    """The table lookup gives the very floats of x * log(x) on float64 (0 for x <= 0), and block_entropy of
    integer counts the very entropies of the same counts as floats: a lookup, not an approximation."""
    from sqlanon.models.ldiversity import xlogx
    ints = np.array(rows)
    if np.dtype(dtype).kind == "u":
        ints = np.abs(ints)
    ints = ints.astype(dtype)
    floats = ints.astype(np.float64)
    expected = np.where(floats > 0, floats * np.log(np.where(floats > 0, floats, 1.0)), 0.0)
    assert np.array_equal(xlogx(ints), expected) and xlogx(ints).dtype == np.float64
    counts = np.abs(ints)
    assert np.array_equal(block_entropy(counts), block_entropy(counts.astype(np.float64)))


@SETTINGS
@given(st.lists(st.lists(st.integers(0, 40), min_size=5, max_size=5), min_size=1, max_size=8),
       st.integers(1, 7), st.sampled_from([np.int64, np.int32, np.uint16]))
@example(rows=[[3, 3, 3, 1, 0], [0, 0, 0, 0, 7]], l=2, dtype=np.int64)       # ties, and a block of one value
def test_recursive_tail_of_integer_counts_equals_the_sorted_definition(rows, l, dtype):
    """For integer counts the tail r_l + ... + r_m (TKDD Def. 4.2) is the sum of the m - l + 1 smallest counts,
    found by a partition instead of a sort: the very numbers of the float computation, which sorts (and pads with
    zeros past m), and so the very c* values."""
    from sqlanon.models.ldiversity import recursive_tail
    ints = np.array(rows).astype(dtype)
    floats = ints.astype(np.float64)
    by_sort = np.array([sum(sorted(r.tolist(), reverse=True)[l - 1:]) for r in floats])
    assert np.array_equal(recursive_tail(ints, l), by_sort) and np.array_equal(recursive_tail(floats, l), by_sort)
    assert np.array_equal(recursive_c_star(ints, l), recursive_c_star(floats, l))


def test_xlogx_of_counts_past_the_table_is_computed(monkeypatch):
    from sqlanon.models import ldiversity
    monkeypatch.setattr(ldiversity, "XLOGX_TABLE_MAX", 4)
    x = np.array([[0, 3, 5, 1000003]])
    assert ldiversity.xlogx(x).tolist() == [[0.0, 3 * np.log(3.0), 5 * np.log(5.0), 1000003 * np.log(1000003.0)]]
