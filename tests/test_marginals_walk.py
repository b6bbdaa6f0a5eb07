"""Walking the space of decomposable collections both ways (Kifer & Gehrke, SIGMOD 2006, Sec. 5.2's removal
rules and its random walk) and the paper's OPT: removal moves checked against the definitions (a chordal
graph, every clique a generalization) and as exact inverses of the forward moves; the seeded walk."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from sqlanon.marginals import search as msearch
from sqlanon.marginals import structure
from sqlanon.marginals.privacy import maxent_l_diversity_brute

from test_marginals_release import searched  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def ms(request):
    return request.getfixturevalue("searched")[0]      # tests/test_marginals_release.py's searched run


def _key(adj: dict) -> frozenset:
    return frozenset((v, frozenset(nb)) for v, nb in adj.items())


def _prefix_closed(schema, adj: dict) -> bool:
    """Every maximal clique holds L_1(A) .. L_i(A) whenever it holds L_i(A): it is a generalization."""
    for c in structure.maximal_cliques(adj):
        for a, i in c:
            if any((a, j) not in c for j in range(1, i)):
                return False
    return True


def _random_states(ms, seed: int, n: int) -> list[dict]:
    """Decomposable graphs reached by random forward moves from the suppressed table."""
    rng = random.Random(seed)
    s = ms.schema
    out = []
    for _ in range(n):
        adj = {(s.sensitive, 1): set()}
        for _ in range(rng.randrange(1, 9)):
            opts = list(msearch.moves(s, adj))
            adj = opts[rng.randrange(len(opts))][1]
        out.append(adj)
    return out


def test_hand_built_removals():
    # cliques {a1, b1, s1} and {a1, c1, s1}: a1-s1 is in both (a minimal separator), so it stays
    S = SimpleNamespace(attributes=["a", "b", "c", "s"], sensitive="s")
    adj = structure.interaction_graph([{("a", 1), ("b", 1), ("s", 1)}, {("a", 1), ("c", 1), ("s", 1)}])
    texts = sorted(t for t, _ in msearch.removal_moves(S, adj))
    assert texts == ["remove edge a:1-b:1", "remove edge a:1-c:1", "remove edge b:1-s:1", "remove edge c:1-s:1",
                     "remove vertex a:1", "remove vertex b:1", "remove vertex c:1"]
    # a2 (finer a) adjacent to b1: a1-b1 cannot go (rule 3), a1-a2 never (rule 2), a1 not as a vertex
    adj = structure.interaction_graph([{("a", 1), ("a", 2), ("b", 1)}])
    texts = sorted(t for t, _ in msearch.removal_moves(S, adj))
    assert texts == ["remove edge a:2-b:1", "remove vertex a:2", "remove vertex b:1"]
    # keep: the table's vertices stay a clique
    texts = sorted(t for t, _ in msearch.removal_moves(S, adj, keep=frozenset({("a", 1), ("b", 1)})))
    assert texts == ["remove edge a:2-b:1", "remove vertex a:2"]


def test_removal_rule_1_is_exactly_what_keeps_the_graph_decomposable(ms):
    for adj in _random_states(ms, 0, 40):
        cliques = structure.maximal_cliques(adj)
        for u in adj:
            for v in adj[u]:
                if u[0] == v[0] or repr(u) > repr(v):
                    continue
                new = {w: set(nb) for w, nb in adj.items()}
                new[u].discard(v)
                new[v].discard(u)
                in_one = sum(1 for c in cliques if u in c and v in c) == 1
                assert in_one == structure.is_chordal(new), (u, v)


def test_every_move_is_undone_by_a_move_the_other_way(ms):
    s = ms.schema
    checked = 0
    for adj in _random_states(ms, 1, 30):
        assert structure.is_chordal(adj) and _prefix_closed(s, adj)
        for text, new in msearch.removal_moves(s, adj):
            assert structure.is_chordal(new) and _prefix_closed(s, new), text
            gone = next(iter(set(adj) - set(new)), None)
            if gone is None or all(w[0] == gone[0] for w in adj[gone]):
                # an edge, or a vertex with no edge beyond its own attribute's coarser levels: one forward
                # move undoes it (a vertex with other edges needs that many more edge additions)
                assert _key(adj) in {_key(b) for _, b in msearch.moves(s, new)}, text
            checked += 1
        for text, new in msearch.moves(s, adj):
            assert _key(adj) in {_key(b) for _, b in msearch.removal_moves(s, new)}, text
            checked += 1
    assert checked > 200


def test_walk_is_seeded_private_and_never_worse_than_its_start(ms):
    g = ms.search(ms.run.chosen.levels)
    a = ms.walk(ms.suppressed(), seed=3, steps=150)
    b = ms.walk(ms.suppressed(), seed=3, steps=150)
    assert (a.kl, a.collection.marginals, a.accepted) == (b.kl, b.collection.marginals, b.accepted)
    assert a.kl < a.start_kl and a.accepted > 0 and a.removals_accepted > 0
    for w in (a, ms.walk(g.collection, seed=4, steps=150, keep=g.start)):
        rep = ms.check(w.collection)
        assert rep.satisfied and w.collection.decomposable
        assert maxent_l_diversity_brute(w.collection, ms.privacy.diversity, ms.counts).ok
        assert ms.kl(w.collection) == pytest.approx(w.kl)
    kept = ms.walk(g.collection, seed=4, steps=150, keep=g.start)
    assert kept.kl <= g.kl
    assert any(ms.schema.vertices(g.start) <= ms.schema.vertices(m) for m in kept.collection)


def test_optimum_is_at_least_as_good_as_every_start(ms):
    g = ms.search(ms.run.chosen.levels)
    best, kl, walks = ms.optimum([g.collection], seed=0, steps=150)
    assert len(walks) == 2 and kl <= g.kl and kl == min([g.kl] + [w.kl for w in walks])
    assert ms.check(best).satisfied
    # on this data the walk from the suppressed table, seed 1, finds a collection below the greedy's
    assert ms.walk(ms.suppressed(), seed=1, steps=300).kl < g.kl - 0.05
