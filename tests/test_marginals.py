"""Anonymized marginals (Kifer & Gehrke, SIGMOD 2006): structure, max-entropy estimate, KL, privacy.

References used here: the definitions checked literally on small graphs (chordality against every
induced cycle, maximal cliques against every vertex subset), iterative proportional fitting against the
closed form, the paper's Theorem 5.3 (more marginals never raise KL), Algorithm 1 with pruning against
the whole reconstructed table, Dobra's bounds against an enumeration of every consistent table, and the
paper's Figure 1 leak (reconstructed: our copy lost its digits).
"""
from __future__ import annotations

import itertools
import math
import random

import duckdb
import numpy as np
import pandas as pd
import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.marginals import structure
from sqlanon.marginals.collection import Collection, Marginal
from sqlanon.marginals.estimate import closed_form_dense, estimate_cells, ipf, kl_divergence, kl_from_marginals
from sqlanon.marginals.privacy import _V as V  # the bound's value column
from sqlanon.marginals.privacy import (
    cell_bounds,
    check_privacy,
    combinatorial_k,
    combinatorial_upper,
    k_combinatorial,
    k_link,
    maxent_l_diversity,
    maxent_l_diversity_brute,
    nnls,
)
from sqlanon.marginals.session import Marginals
from sqlanon.metrics import kl_divergence as node_kl
from sqlanon.models.ldiversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity

# --------------------------------------------------------------------------------------------------
# small tables

def _session(frame: pd.DataFrame, qis: dict, sensitive: str, privacy: dict | None = None) -> Marginals:
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")
    run = Anonymization({"source": {"table": "t"}, "quasi_identifiers": qis, "sensitive": [sensitive],
                         "privacy": privacy or {"k": 1}}, connection=con)
    return Marginals(run)


QIS = {"a": {"hierarchy": "intervals", "widths": [2, 4]},        # 0..5: levels 0..3 (3 = '*')
       "b": {"hierarchy": "suppress"},                             # x, y, z
       "c": {"hierarchy": "mask", "levels": 2}}                    # 10, 11, 20, 21: 1* / 2*, then '*'


def random_frame(seed: int, rows: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, rows)
    b = rng.choice(["x", "y", "z"], rows, p=[0.5, 0.3, 0.2])
    c = rng.choice(["10", "11", "20", "21"], rows)
    # the sensitive value depends on a and b, so the marginals carry real structure
    s = np.array(["p", "q", "r", "u"])[(a + (b == "x") * rng.integers(0, 2, rows) + rng.integers(0, 2, rows)) % 4]
    return pd.DataFrame({"a": a, "b": b, "c": c, "s": s})


@pytest.fixture(scope="module")
def small():
    return [_session(random_frame(seed), QIS, "s") for seed in range(4)]


def random_marginal(ms: Marginals, rng: random.Random, sensitive_p: float = 0.5) -> Marginal:
    s = ms.schema
    while True:
        lv = {}
        for a in s.qis:
            if rng.random() < 0.6:
                lv[a] = rng.randrange(0, s.depth[a])
        if rng.random() < sensitive_p:
            lv[s.sensitive] = 0
        if lv:
            return ms.marginal(lv)


def random_decomposable(ms: Marginals, rng: random.Random, size: int, sensitive_p: float = 0.5) -> Collection:
    while True:
        coll = ms.collection([random_marginal(ms, rng, sensitive_p) for _ in range(size)])
        if coll.decomposable:
            # the graphical collection of its cliques (what a search releases)
            return ms.collection(coll.cliques)


# --------------------------------------------------------------------------------------------------
# structure (Sec. 4.1): definitions checked literally

def _induced_cycle_of_4_or_more(adj) -> bool:
    verts = list(adj)
    for r in range(4, len(verts) + 1):
        for sub in itertools.combinations(verts, r):
            ss = set(sub)
            if all(len(adj[v] & ss) == 2 for v in sub):
                seen, stack = {sub[0]}, [sub[0]]
                while stack:
                    for u in adj[stack.pop()] & ss:
                        if u not in seen:
                            seen.add(u)
                            stack.append(u)
                if seen == ss:
                    return True
    return False


def _random_graph(rng: random.Random, n: int, p: float) -> dict:
    adj = {v: set() for v in range(n)}
    for u, v in itertools.combinations(range(n), 2):
        if rng.random() < p:
            adj[u].add(v)
            adj[v].add(u)
    return adj


def test_chordality_and_cliques_match_the_definitions_on_random_graphs():
    rng = random.Random(7)
    seen = {True: 0, False: 0}
    for _ in range(300):
        adj = _random_graph(rng, rng.randint(1, 7), rng.choice([0.3, 0.5, 0.7]))
        chordal = structure.is_chordal(adj)
        assert chordal == (not _induced_cycle_of_4_or_more(adj))
        seen[chordal] += 1
        if chordal:
            cliques = structure.maximal_cliques(adj)
            brute = [frozenset(s) for r in range(1, len(adj) + 1) for s in itertools.combinations(adj, r)
                     if all(v in adj[u] for u, v in itertools.combinations(s, 2))]
            maximal = {c for c in brute if not any(c < d for d in brute)}
            assert set(cliques) == maximal
            tree = structure.junction_tree(cliques)
            assert structure.is_perfect_sequence(tree.cliques)
            assert structure.has_running_intersection(tree)
            for c, p, sep in zip(tree.cliques, tree.parent, tree.separators):
                assert sep == (frozenset() if p is None else c & tree.cliques[p])
    assert seen[True] > 30 and seen[False] > 30


def test_paper_examples_of_section_4():
    abc, bcd, de = frozenset("abc"), frozenset("bcd"), frozenset("de")
    # Figure 2: {abc, bcd, de} is decomposable; {abc, bd, cd, de} has the same graph but is not graphical
    assert structure.is_decomposable([abc, bcd, de])
    assert not structure.is_decomposable([abc, frozenset("bd"), frozenset("cd"), de])
    adj = structure.interaction_graph([abc, bcd, de])
    assert structure.is_chordal(adj) and set(structure.maximal_cliques(adj)) == {abc, bcd, de}
    tree = structure.junction_tree([abc, bcd, de])
    assert tree.cliques == [abc, bcd, de] and tree.separators == [frozenset(), frozenset("bc"), frozenset("d")]
    assert tree.parent == [None, 0, 1]                    # Figure 6: {abc} - {bcd} - {de}
    # Figure 3: the 4-cycle is the smallest non-decomposable graph
    square = structure.interaction_graph([frozenset("ab"), frozenset("bd"), frozenset("dc"), frozenset("ca")])
    assert not structure.is_chordal(square)
    assert structure.is_chordal(structure.interaction_graph([frozenset("ab"), frozenset("bd"), frozenset("dc"),
                                                             frozenset("ca"), frozenset("ad")]))


def test_reduction_to_induced_attributes(small):
    ms = small[0]
    s = ms.schema
    assert s.depth == {"a": 3, "b": 1, "c": 2, "s": 1}
    m = ms.marginal({"a": 1, "c": 0, "s": 0})
    assert s.vertices(m) == {("a", 1), ("a", 2), ("c", 1), ("c", 2), ("s", 1)}
    assert s.from_vertices(s.vertices(m)) == m
    # the intersection holds shared attributes at the coarser level
    assert s.meet(m, ms.marginal({"a": 0, "c": 1, "b": 0})) == ms.marginal({"a": 1, "c": 1})
    # top levels are suppression: dropped
    assert ms.marginal({"a": 3, "b": 0}) == ms.marginal({"b": 0})
    # generalized marginals: an attribute at two levels in two marginals gives a chain of induced vertices
    coll = ms.collection([ms.marginal({"a": 0}), ms.marginal({"a": 2, "s": 0})])
    assert coll.decomposable
    assert coll.cliques == [ms.marginal({"a": 0}), ms.marginal({"a": 2, "s": 0})]
    assert coll.separators[1] == ms.marginal({"a": 2})
    # codes: up maps and leaf counts agree with the hierarchy
    assert list(s.up("a", 0, 1)) == [0, 0, 1, 1, 2, 2] and list(s.covered("a", 2)) == [4, 2]


def test_hierarchy_without_a_root_gets_a_virtual_one(tmp_path):
    csv = tmp_path / "g.csv"
    csv.write_text("g,l1\nx,X\ny,X\nz,Z\n")     # top level has two labels
    frame = pd.DataFrame({"g": ["x", "y", "z", "x", "z", "y"], "s": ["p", "q", "p", "q", "p", "q"]})
    ms = _session(frame, {"g": {"hierarchy": str(csv)}}, "s")
    assert ms.schema.depth["g"] == 2
    coll = ms.collection([ms.marginal({"g": 1, "s": 0})])
    assert kl_divergence(coll) == pytest.approx(ipf(coll).kl, abs=1e-12)
    assert ms.marginal({"g": 2}) == Marginal(())        # level 2 = the virtual root = suppressed


# --------------------------------------------------------------------------------------------------
# the estimate (Theorem 5.1) and KL (Sec. 3.2)

def test_closed_form_equals_ipf_on_decomposable_collections(small):
    rng = random.Random(11)
    for ms in small:
        for _ in range(6):
            coll = random_decomposable(ms, rng, rng.randint(1, 4))
            fit = ipf(coll, ms.counts)
            assert fit.max_error < 1e-6
            closed = closed_form_dense(coll, ms.counts)
            assert closed.axes == fit.axes
            np.testing.assert_allclose(closed.counts, fit.counts, rtol=1e-7, atol=1e-9)
            # the SQL closed form over the original's cells: same KL, and the same estimate per cell
            assert kl_divergence(coll) == pytest.approx(fit.kl, rel=1e-9, abs=1e-12)
            assert kl_from_marginals(coll, ms.counts) == pytest.approx(fit.kl, rel=1e-9, abs=1e-12)
            cells = estimate_cells(coll)
            s = ms.schema
            idx = tuple(s.up(a, 0, lvl)[cells.codes[a]] for a, lvl in fit.axes)
            spread = np.prod([s.covered(a, lvl)[s.up(a, 0, lvl)[cells.codes[a]]] for a, lvl in fit.axes], axis=0)
            absent = math.prod(s.domain_size(a) for a, lvl in coll.finest().items() if lvl == s.depth[a])
            want = (fit.counts[idx] if idx else fit.counts) / spread / absent
            np.testing.assert_allclose(cells.estimate, want, rtol=1e-7)
            assert cells.count.sum() == s.rows


def test_kl_is_zero_when_the_collection_holds_the_full_table(small):
    for ms in small:
        full = ms.schema.full()
        assert kl_divergence(ms.collection([full])) == pytest.approx(0.0, abs=1e-12)
        coll = ms.collection([full, ms.marginal({"a": 1, "b": 0})])
        assert kl_divergence(coll) == pytest.approx(0.0, abs=1e-12)
        # and only then: any coarser collection of this data loses something
        assert kl_divergence(ms.collection([ms.marginal({"a": 0, "b": 0, "c": 0})])) > 1e-3


def test_single_table_kl_is_the_metric_of_design_section_5(small):
    for ms in small:
        run = ms.run
        for levels in ({"a": 1, "b": 0, "c": 1}, {"a": 3, "b": 1, "c": 0}, {"a": 0, "b": 1, "c": 2}):
            res = run.evaluate(levels)
            assert ms.single_table_kl(ms.table(levels)) == pytest.approx(node_kl(run.fs, res), rel=1e-9, abs=1e-12)


def test_adding_a_marginal_never_raises_kl(small):
    """Theorem 5.3 (decomposable, closed form) and the same for any collection by IPF."""
    rng = random.Random(5)
    checked = 0
    for ms in small:
        for _ in range(10):
            coll = random_decomposable(ms, rng, rng.randint(1, 3))
            bigger = coll.with_marginal(random_marginal(ms, rng))
            before = kl_divergence(coll)
            after = kl_divergence(bigger) if bigger.decomposable else ipf(bigger, ms.counts).kl
            assert after <= before + 1e-9
            checked += bigger.decomposable
    assert checked >= 10


def test_ipf_scores_a_non_decomposable_collection(small):
    ms = small[1]
    pairs = [ms.marginal({"a": 0, "b": 0}), ms.marginal({"b": 0, "s": 0}), ms.marginal({"a": 0, "s": 0})]
    coll = ms.collection(pairs)
    assert coll.triangulated and not coll.decomposable          # a triangle, but no marginal {a, b, s}
    fit = ipf(coll, ms.counts)
    for m in pairs:                                              # every marginal is matched
        from sqlanon.marginals.estimate import _maps, coarsen
        np.testing.assert_allclose(coarsen(fit.counts, _maps(ms.schema, fit.axes, m)), ms.counts.dense(m), atol=1e-6)
    assert kl_divergence(coll) == fit.kl
    with_triple = ms.collection([ms.marginal({"a": 0, "b": 0, "s": 0})])
    assert kl_divergence(with_triple) <= fit.kl + 1e-9 and fit.kl <= kl_divergence(ms.collection(pairs[:2])) + 1e-9


# --------------------------------------------------------------------------------------------------
# privacy (Sec. 3, 6)

def test_nnls_matches_scipy():
    from scipy.optimize import nnls as scipy_nnls
    rng = np.random.default_rng(3)
    for _ in range(50):
        a = rng.random((rng.integers(2, 8), rng.integers(1, 8)))
        b = rng.random(a.shape[0])
        x, res = nnls(a, b)
        x2, res2 = scipy_nnls(a, b)
        assert res == pytest.approx(res2, abs=1e-9) and np.all(x >= 0)


def _threshold_criteria(g) -> list:
    """Criteria right at the reconstruction's achieved values: each pair (just met, just missed) is
    decided by the single worst group, so a check that loses it answers wrong."""
    from sqlanon.models.ldiversity import block_entropy, distinct_values, recursive_c_star
    d = int(distinct_values(g.vecs).min())
    out = [(DistinctLDiversity(d), True)]
    if d < g.vecs.shape[1]:
        out.append((DistinctLDiversity(d + 1), False))
    h = float(np.exp(block_entropy(g.vecs).min()))
    if h > 1.01:
        out += [(EntropyLDiversity(h * 0.999), True), (EntropyLDiversity(h * 1.001), False)]
    for l in range(2, d + 1):
        c = float(recursive_c_star(g.vecs, l).max())
        if math.isfinite(c) and c > 0:
            out += [(RecursiveCLDiversity(c * 1.001, l), True), (RecursiveCLDiversity(c * 0.999, l), False)]
    return out


def three_value_frame(seed: int, rows: int = 150) -> pd.DataFrame:
    """A sensitive attribute with 3 frequent values, so recursive (c, 3) is the l = |S| case."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, rows)
    b = rng.choice(["x", "y", "z"], rows)
    c = rng.choice(["10", "11", "20", "21"], rows)
    s = np.array(["p", "q", "r"])[(a + rng.integers(0, 3, rows) * (b != "z") + (c == "10")) % 3]
    return pd.DataFrame({"a": a, "b": b, "c": c, "s": s})


@pytest.fixture(scope="module")
def larger():
    return ([_session(random_frame(seed, 150), QIS, "s") for seed in (10, 11)]
            + [_session(three_value_frame(seed), QIS, "s") for seed in (0, 1)])


def test_pruning_check_agrees_with_brute_force_on_random_cases(larger):
    """Algorithm 1 (with and without pruning, with and without Proposition 6.2's early exit) against the
    whole reconstructed table, at l-diversity thresholds where one group decides."""
    from sqlanon.marginals.privacy import reconstructed_groups
    rng = random.Random(2006)
    decided = {True: 0, False: 0}
    pruned = pairs = 0
    for case in range(32):
        ms = larger[case % len(larger)]
        coll = random_decomposable(ms, rng, rng.randint(2, 4), sensitive_p=0.9)
        g = reconstructed_groups(coll, ms.counts)
        for crit, want in _threshold_criteria(g):
            assert maxent_l_diversity_brute(coll, crit, ms.counts).ok == want
            prunes = ["hull", "none"]
            if isinstance(crit, RecursiveCLDiversity) and crit.l == g.vecs.shape[1]:
                prunes.append("pairs")
                pairs += 1
            for prune in prunes:
                for early in (True, False):
                    got = maxent_l_diversity(coll, crit, ms.counts, prune, early_exit=early)
                    assert got.ok == want, (case, prune, early, coll.describe()["marginals"], crit.describe())
            decided[want] += 1
        full = maxent_l_diversity(coll, CRITERIA_ANY, ms.counts, "none", early_exit=False)
        hull = maxent_l_diversity(coll, CRITERIA_ANY, ms.counts, "hull", early_exit=False)
        pruned += (hull.joined, hull.groups) < (full.joined, full.groups)
    assert decided[True] >= 40 and decided[False] >= 40
    assert pruned >= 3 and pairs >= 10


CRITERIA_ANY = DistinctLDiversity(1)


def test_prune_keeps_extreme_rays_and_best_ratios(small):
    from sqlanon.marginals.privacy import Groups, prune_hull, prune_pairs
    s = small[0].schema
    vecs = np.array([[1, 0, 0, 0], [0, 2, 0, 0], [3, 3, 0, 0], [1, 1, 1, 0], [0, 0, 5, 0], [2, 2, 2, 0.5],
                     [4, 4, 4, 1], [0, 1, 0, 0]], dtype=float)
    keys = np.array([[0], [0], [0], [0], [0], [0], [0], [1]])
    g = Groups([("b", 0)], keys, vecs)
    kept = prune_hull(s, g, [("b", 0)])
    # [3,3,0,0] = 3 e1 + 1.5 e2 and [1,1,1,0] are inside the cone; [4,4,4,1] has [2,2,2,.5]'s direction
    assert sorted(map(tuple, kept.vecs)) == sorted(map(tuple, vecs[[0, 1, 4, 5, 7]]))
    assert len(prune_hull(s, g, [])) == 4          # one block: [0,1,0,0] is [0,2,0,0]'s direction
    pairs = prune_pairs(s, g, [("b", 0)])
    assert len(pairs) < len(g) and tuple(vecs[7]) in set(map(tuple, pairs.vecs))


def test_only_the_join_can_fail_and_pruning_still_finds_it():
    """Each marginal l-diverse by itself (Proposition 6.2 cannot decide), the reconstruction not."""
    rows = []
    for a, b, s in [(0, 0, "p"), (0, 0, "q"), (0, 1, "q"), (0, 1, "r"), (1, 0, "p"), (1, 0, "r"),
                    (1, 1, "p"), (1, 1, "q"), (0, 0, "p"), (1, 1, "r")]:
        rows.append({"a": a, "b": str(b), "s": s})
    ms = _session(pd.DataFrame(rows), {"a": {"hierarchy": "suppress"}, "b": {"hierarchy": "suppress"}}, "s")
    coll = ms.collection([ms.marginal({"a": 0, "s": 0}), ms.marginal({"b": 0, "s": 0})])
    crit = DistinctLDiversity(3)
    for m in coll:
        assert maxent_l_diversity(ms.collection([m]), crit, ms.counts).ok
    brute = maxent_l_diversity_brute(coll, crit, ms.counts)
    for prune in ("hull", "none"):
        got = maxent_l_diversity(coll, crit, ms.counts, prune)
        assert got.ok == brute.ok
    assert maxent_l_diversity(coll, DistinctLDiversity(2), ms.counts).ok == \
        maxent_l_diversity_brute(coll, DistinctLDiversity(2), ms.counts).ok


def _consistent_tables(counts: np.ndarray, margins):
    """Every table over the same cells with the same total whose marginals equal the given ones."""
    n = int(counts.sum())
    cells = counts.size
    target = [(axes, counts.sum(axis=tuple(i for i in range(counts.ndim) if i not in axes))) for axes in margins]
    for bars in itertools.combinations(range(n + cells - 1), cells - 1):
        parts = np.diff([-1, *bars, n + cells - 1]) - 1
        t = parts.reshape(counts.shape)
        if all(np.array_equal(t.sum(axis=tuple(i for i in range(t.ndim) if i not in axes)), want)
               for axes, want in target):
            yield t


def test_dobra_bounds_are_sharp_against_every_consistent_table():
    frame = pd.DataFrame({"a": [0, 0, 1, 1, 2, 0, 1], "b": ["x", "y", "x", "y", "y", "x", "x"],
                          "c": ["u", "u", "v", "u", "v", "v", "u"], "s": ["p"] * 7})
    ms = _session(frame, {"a": {"hierarchy": "suppress"}, "b": {"hierarchy": "suppress"},
                          "c": {"hierarchy": "suppress"}}, "s")
    coll = ms.collection([ms.marginal({"a": 0, "b": 0}), ms.marginal({"b": 0, "c": 0})])
    full = ms.counts.dense(ms.marginal({"a": 0, "b": 0, "c": 0}))
    tables = list(_consistent_tables(full, [(0, 1), (1, 2)]))
    assert len(tables) > 1
    hi = np.max(tables, axis=0)
    lo = np.min(tables, axis=0)
    b = cell_bounds(coll, ms.counts)
    assert len(b.cells) == int((full > 0).sum())
    for (a, bb, c), low, up in zip(b.cells, b.lower, b.upper):
        assert (low, up) == (lo[a, bb, c], hi[a, bb, c])
    # Def. 3.2's k: the smallest positive upper bound over every cell of the domain (not only observed ones)
    assert k_combinatorial(coll, ms.counts)[0] == int(hi[hi > 0].min()) == k_link(coll, ms.counts)


def test_k_link_is_the_smallest_non_sensitive_marginal_count(small):
    rng = random.Random(3)
    for ms in small:
        frame = ms.run.backend.con.execute("SELECT * FROM t").df()
        for _ in range(5):
            coll = random_decomposable(ms, rng, 3)
            want = len(frame)
            for m in coll:
                cols = []
                for a, lvl in m.levels:
                    if a == "s":
                        continue
                    codes = ms.schema.up(a, 0, lvl)
                    base = {v: i for i, v in enumerate(ms.run.fs.qi(a).hierarchy.values)}
                    cols.append(frame[a].astype(str).map(base).map(lambda x, c=codes: c[x]))
                if cols:
                    want = min(want, int(pd.concat(cols, axis=1).value_counts().min()))
            assert k_link(coll, ms.counts) == want


def _cell_maxima_by_milp(ms: Marginals, coll: Collection) -> dict[tuple, int]:
    """The reference for Def. 3.2: per non-sensitive cell t (codes at the collection's finest levels), the largest
    T(t) of any integer table, over the base values of every attribute and the sensitive one, whose marginals
    equal every released marginal (its sensitive column too): one integer program per cell (scipy's milp)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    s = ms.schema
    attrs = [a for a in s.attributes if any(a in m for m in coll.marginals)]
    shape = [s.labels(a, 0) for a in attrs]
    grid = np.array(list(itertools.product(*[range(n) for n in shape])), dtype=np.int64).reshape(-1, len(attrs))
    rows, want = [], []
    for m in coll.marginals:
        dense = ms.counts.dense(m)
        idx = tuple(s.up(a, 0, lvl)[grid[:, attrs.index(a)]] for a, lvl in m.levels)
        flat = np.ravel_multi_index(idx, dense.shape) if idx else np.zeros(len(grid), dtype=np.int64)
        for cell in range(dense.size):
            rows.append((flat == cell).astype(float))
            want.append(dense.reshape(-1)[cell])
    constraint = LinearConstraint(np.array(rows), np.array(want), np.array(want))
    axes = [(a, lvl) for a, lvl in coll.finest().items() if a in attrs and a != s.sensitive and lvl < s.depth[a]]
    cell_of = np.column_stack([s.up(a, 0, lvl)[grid[:, attrs.index(a)]] for a, lvl in axes]) if axes else \
        np.zeros((len(grid), 0), dtype=np.int64)
    out = {}
    for t in itertools.product(*[range(s.labels(a, lvl)) for a, lvl in axes]):
        c = -np.all(cell_of == np.array(t, dtype=np.int64), axis=1).astype(float)
        r = milp(c, constraints=[constraint], integrality=np.ones(len(grid)), bounds=Bounds(0, np.inf))
        assert r.success
        out[t] = int(round(-r.fun))
    return out


@pytest.mark.parametrize("sensitive_p", [0.5, 1.0])
def test_k_combinatorial_is_the_largest_cell_any_consistent_table_holds(small, sensitive_p):
    """Def. 3.2 against an integer program over every consistent table, every cell of the domain (observed or
    not). The bound once ignored what the sensitive columns pin down (the marginals projected on their
    non-sensitive attributes, so k-combinatorial was always k-link): a cell certain to hold 1 or 2 rows was
    reported as able to hold 3."""
    rng = random.Random(11)
    below_link = 0
    for ms in small[:2]:
        for _ in range(4):
            coll = random_decomposable(ms, rng, 3, sensitive_p)
            truth = _cell_maxima_by_milp(ms, coll)
            levels, upper = combinatorial_upper(coll, ms.counts)
            axes = [a for a, lvl in coll.finest().items() if a != ms.schema.sensitive and lvl < ms.schema.depth[a]]
            got = {tuple(int(r[a]) for a in axes): int(round(r[V])) for _, r in upper.iterrows()}
            assert got == {t: v for t, v in truth.items() if v > 0}
            k = min(v for v in truth.values() if v > 0)
            assert k_combinatorial(coll, ms.counts)[0] == k <= k_link(coll, ms.counts)
            below_link += k < k_link(coll, ms.counts)
    assert sensitive_p < 1 or below_link        # the case the old bound missed occurs here


# (rows as a b [c] s, the marginals, the largest T(t) of each cell; cells not listed: 0) by integer programs
K_COMBINATORIAL_CASES = [
    # every marginal holds s: each (a, b) cell is certain to hold 1 or 2 rows (reported 3 before)
    (["xup", "xup", "xvq", "yur", "yvp", "yvq"], [{"a": 0, "s": 0}, {"b": 0, "s": 0}],
     {"xu": 2, "xv": 2, "yu": 2, "yv": 2}),
    # k set by cells that never occur (xv, yu): reported 2 before
    (["xup", "xup", "yvp", "yvq"], [{"a": 0, "s": 0}, {"b": 0, "s": 0}], {"xu": 2, "xv": 1, "yu": 1, "yv": 2}),
    (["xup", "xvp", "yup", "yvq"], [{"a": 0, "s": 0}, {"b": 0, "s": 0}], {"xu": 2, "xv": 1, "yu": 1, "yv": 2}),
    # mixed, a at two levels: the term without s binds at 2ux / 2uy, the sum over s at 0vy, 1ux, 1uy
    (["0uxq", "0vyq", "1uyq", "1vyp", "2uxp", "2uxq", "2uyp", "2uyq"],
     [{"a": 0, "s": 0}, {"a": 1, "b": 0, "s": 0}, {"b": 0, "c": 0}],
     {"0ux": 2, "0uy": 2, "0vy": 1, "1ux": 1, "1uy": 1, "1vy": 2, "2ux": 3, "2uy": 3}),
    (["1uxq", "1uxq", "1vyq", "2uxp", "2vyp"], [{"a": 0, "s": 0}, {"b": 0, "s": 0}, {"b": 0, "c": 0}],
     {"1ux": 2, "1vy": 1, "2ux": 1, "2vy": 1}),
]


@pytest.mark.parametrize("rows, marginals, expected", K_COMBINATORIAL_CASES)
def test_k_combinatorial_cases_in_plain_sight(rows, marginals, expected):
    names = "abcs"[:len(rows[0]) - 1] + "s"
    frame = pd.DataFrame([dict(zip(names, r)) for r in rows])
    qis = {n: {"hierarchy": "suppress"} for n in names[:-1]}
    if frame["a"].str.isdigit().all():
        frame["a"] = frame["a"].astype(int)
        qis["a"] = {"hierarchy": "intervals", "widths": [2]}       # a@1: {0, 1}, {2}
    ms = _session(frame, qis, "s")
    coll = ms.collection([ms.marginal(m) for m in marginals])
    levels, upper = combinatorial_upper(coll, ms.counts)
    axes = [a for a in ms.schema.attributes if a in levels]
    text = {a: ms.schema.label_text(a, levels[a]) for a in axes}
    got = {"".join(text[a][int(r[a])] for a in axes): int(round(r[V])) for _, r in upper.iterrows()}
    assert got == expected
    assert k_combinatorial(coll, ms.counts)[0] == min(expected.values())


# --------------------------------------------------------------------------------------------------
# the paper's Figure 1 (reconstructed: our copy of the paper lost every digit of it)

FIGURE1 = pd.DataFrame({
    "zip": ["13053", "13058", "13058", "13058", "13053", "13053", "13058", "13058", "14850", "14850", "14850", "14850"],
    "age": [25, 28, 22, 27, 45, 50, 41, 47, 35, 31, 37, 33],
    "condition": ["measles", "allergy", "gout", "cancer", "heart", "flu", "heart", "cancer",
                  "flu", "cancer", "heart", "cancer"]})
FIG1_QIS = {"zip": {"hierarchy": "mask", "levels": 5}, "age": {"hierarchy": "intervals", "widths": [10, 20, 40]}}


def test_figure1_zip_condition_marginal_leaks_measles_and_is_rejected():
    """(b) the 4-anonymous, 3-diverse table (zip 1305*/1485*, age [0, 40)/[40, 80)); (d) the zip/condition
    marginal. Each is fine alone (every zip has 3 conditions), but someone known to live in 13053 and be
    under 40 is in group (1305*, [0, 40)) = {measles, allergy, gout, cancer}, and 13053's conditions are
    {measles, heart, flu}: the maximum-entropy reconstruction gives them measles with certainty."""
    ms = _session(FIGURE1, FIG1_QIS, "condition", {"k": 3, "l_diversity": {"variant": "distinct", "l": 3}})
    table = ms.table({"zip": 1, "age": 3})
    zip_condition = ms.marginal({"zip": 0, "condition": 0})
    age = ms.marginal({"age": 3})
    assert ms.check(ms.collection([table])).satisfied
    assert ms.check(ms.collection([zip_condition])).satisfied          # 3-link, 3-diverse by itself
    leak = ms.collection([table, zip_condition])
    rep = ms.check(leak)
    assert rep.k_link >= 3 and not rep.satisfied and not rep.diversity.ok
    assert rep.diversity.violation["group"] == {"zip": "13053", "age": "[0, 40)"}
    assert rep.diversity.violation["distribution"] == {"measles": 1.0}
    assert not maxent_l_diversity_brute(leak, ms.privacy.diversity, ms.counts).ok
    # a marginal without the sensitive attribute cannot break maxent l-diversity (Proposition 6.3)
    assert ms.check(ms.collection([table, age])).satisfied
    assert kl_divergence(leak) < kl_divergence(ms.collection([table]))


def test_check_privacy_reports_every_model(small):
    ms = small[0]
    coll = ms.collection([ms.table({"a": 2, "b": 1, "c": 1}), ms.marginal({"a": 1})])
    rep = check_privacy(coll, ms.privacy, ms.counts)
    d = rep.as_dict()
    assert d["k_link"] == k_link(coll, ms.counts) and d["k_combinatorial"] == d["k_link"]
    assert d["sensitive_marginals"] == 1 and d["satisfied"]


def test_a_combinatorial_join_too_large_is_not_certified(small, monkeypatch):
    """Beyond MAX_COMBINATORIAL_CELLS the marginals holding S are not joined (sized from their keys first):
    k-combinatorial anonymity is then not certified, the collection not private at k >= 2 (k = 1 holds for any
    decomposable collection), and the report says why."""
    import sqlanon.marginals.privacy as privacy
    ms = small[0]
    coll = ms.collection([ms.marginal({"a": 0, "s": 0}), ms.marginal({"b": 0, "s": 0}), ms.marginal({"c": 0, "s": 0})])
    two = privacy.MarginalPrivacy(k=2)
    assert check_privacy(coll, two, ms.counts).k_combinatorial is not None
    monkeypatch.setattr(privacy, "MAX_COMBINATORIAL_CELLS", 5)
    rep = check_privacy(coll, two, ms.counts)
    assert rep.k_combinatorial is None and not rep.satisfied and "not_certified" in rep.as_dict()
    assert check_privacy(coll, privacy.MarginalPrivacy(k=1), ms.counts).satisfied
    with pytest.raises(privacy.CombinatorialTooLarge):
        combinatorial_upper(coll, ms.counts)
    monkeypatch.setattr(ms, "privacy", two)
    monkeypatch.setattr(ms, "_kcomb", {})
    monkeypatch.setattr(ms, "_sensitive_parts", {})
    assert not ms.private(coll)


def test_the_k_without_the_join_is_the_joins_smallest_value(small):
    """`combinatorial_k` reduces each marginal's cells to those in some cell of the join (semi-joins) instead of
    making the join (which for one table and eight one-attribute marginals of Adult holds 12 million cells): the
    same k as the join's smallest value, on collections with marginals inside others too."""
    rng = random.Random(5)
    for ms in small:
        for _ in range(6):
            coll = random_decomposable(ms, rng, 3)
            extra = [ms.marginal({a: min(lvl + 1, ms.schema.depth[a] - 1) for a, lvl in m.levels
                                  if a != ms.schema.sensitive}) for m in coll.marginals[:1]]
            for c in (coll, ms.collection(coll.marginals + [m for m in extra if len(m)])):
                if not c.decomposable:
                    continue
                _, upper = combinatorial_upper(c, ms.counts)
                assert combinatorial_k(c, ms.counts) == int(round(float(upper[V].min())))


@pytest.mark.parametrize("names", [("v", "v1", "v2"), ("v2", "__key_v", "v")])
def test_columns_named_like_the_bounds_work_columns(names):
    """The bound's frames named their count v (and v1, v2 in a join) among the attributes' columns: a column v
    was overwritten, and every marginals run failed (KeyError traceback)."""
    a, b, sens = names
    frame = random_frame(2, 40)[["a", "b", "s"]].rename(columns={"a": a, "b": b, "s": sens})
    ms = _session(frame, {a: QIS["a"], b: QIS["b"]}, sens)
    plain = _session(random_frame(2, 40)[["a", "b", "s"]], {"a": QIS["a"], "b": QIS["b"]}, "s")
    for session, (x, y, z) in ((ms, names), (plain, ("a", "b", "s"))):
        coll = session.collection([session.marginal({x: 0, z: 0}), session.marginal({y: 0, z: 0})])
        session.got = (k_combinatorial(coll, session.counts, 3), combinatorial_k(coll, session.counts))
    assert ms.got == plain.got
