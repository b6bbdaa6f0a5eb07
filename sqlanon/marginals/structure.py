"""The structure of a collection of marginals: interaction graph, decomposability, perfect sequence,
junction tree (Kifer & Gehrke, "Injecting Utility into Anonymized Datasets", SIGMOD 2006,
Section 4.1 and Section 6).

Everything here works on abstract vertices (any hashable) and on marginals given as vertex sets; the
reduction of *anonymized* marginals to ordinary ones over induced attributes lives in
`sqlanon.marginals.collection`. Graphs are small (one vertex per induced attribute, a few dozen at
most), so plain Python is enough and no graph library is needed.

- interaction graph (Sec. 4.1): one vertex per attribute of any marginal, an edge between two
  attributes that appear together in some marginal;
- triangulated (Def. 4.1): every cycle of length >= 4 has a chord; checked with maximum cardinality
  search (Tarjan & Yannakakis 1984): the reverse of an MCS order is a perfect elimination order iff the
  graph is chordal. Decomposable graphs are exactly the triangulated ones (Theorem 4.1);
- graphical (Def. 4.5): the marginals contain every maximal clique of the interaction graph;
  decomposable marginals (Def. 4.6) are graphical with a decomposable interaction graph;
- perfect sequence (Def. 4.7) of the maximal cliques E1..Ep with separators S_i = E_i & (E_1 | ... |
  E_{i-1}), each contained in an earlier clique;
- junction tree (Def. 6.1): a tree on the cliques in which every clique on the path between V_i and
  V_j contains V_i & V_j. Built as a maximum-weight spanning tree of the clique graph (weight = size of
  the intersection), which is a junction tree exactly when the graph is chordal (Jensen & Jensen 1994);
  disconnected parts are joined by empty separators, so one tree (and one perfect sequence) always
  exists. Any topological order of the tree from its root is a perfect sequence whose separators are
  the intersections with the parent (Sec. 6).
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

Vertex = Hashable


def interaction_graph(vertex_sets: Iterable[Iterable[Vertex]]) -> dict[Vertex, set]:
    """Adjacency sets of the interaction graph of marginals given as vertex sets (Sec. 4.1)."""
    adj: dict[Vertex, set] = {}
    for vs in vertex_sets:
        vs = list(vs)
        for v in vs:
            adj.setdefault(v, set()).update(u for u in vs if u != v)
    return adj


def _order_key(v) -> str:
    return repr(v)


def mcs_order(adj: dict[Vertex, set]) -> list:
    """A maximum cardinality search order: each next vertex has the most already-numbered neighbours
    (ties broken by the vertex's repr, so the order is deterministic)."""
    weight = {v: 0 for v in adj}
    order = []
    left = set(adj)
    while left:
        v = max(left, key=lambda u: (weight[u], _order_key(u)))
        order.append(v)
        left.remove(v)
        for u in adj[v]:
            if u in left:
                weight[u] += 1
    return order


def is_chordal(adj: dict[Vertex, set]) -> bool:
    """Triangulated (Def. 4.1), i.e. decomposable (Theorem 4.1): the MCS order, reversed, is a perfect
    elimination order. For each vertex, its earlier-numbered neighbours must form a clique; it suffices
    that they are all neighbours of the latest-numbered one of them (Tarjan & Yannakakis)."""
    order = mcs_order(adj)
    pos = {v: i for i, v in enumerate(order)}
    for v in order:
        earlier = [u for u in adj[v] if pos[u] < pos[v]]
        if len(earlier) < 2:
            continue
        last = max(earlier, key=pos.__getitem__)
        if any(u != last and u not in adj[last] for u in earlier):
            return False
    return True


def maximal_cliques(adj: dict[Vertex, set]) -> list[frozenset]:
    """The maximal cliques of a chordal graph, from its MCS order: each vertex with its earlier
    neighbours is a clique, and the maximal ones among them are all the maximal cliques."""
    if not is_chordal(adj):
        raise ValueError("maximal_cliques needs a chordal graph")
    order = mcs_order(adj)
    pos = {v: i for i, v in enumerate(order)}
    cands = [frozenset([v, *[u for u in adj[v] if pos[u] < pos[v]]]) for v in order]
    out: list[frozenset] = []
    for c in sorted(set(cands), key=len, reverse=True):
        if not any(c < d for d in out):
            out.append(c)
    return sorted(out, key=lambda c: (-len(c), sorted(map(_order_key, c))))


def is_graphical(vertex_sets: Iterable[Iterable[Vertex]]) -> bool:
    """Def. 4.5: every maximal clique of the interaction graph is the vertex set of some marginal.
    (Only meaningful for chordal graphs here; a non-chordal graph is never decomposable anyway.)"""
    sets = [frozenset(s) for s in vertex_sets]
    adj = interaction_graph(sets)
    if not is_chordal(adj):
        return False
    have = set(sets)
    return all(c in have for c in maximal_cliques(adj))


def is_decomposable(vertex_sets: Iterable[Iterable[Vertex]]) -> bool:
    """Def. 4.6: graphical, with a decomposable (= triangulated, Theorem 4.1) interaction graph."""
    return is_graphical(vertex_sets)


@dataclass
class JunctionTree:
    """Cliques in a perfect sequence (root first), each clique's parent (None for the root) and
    separator (the intersection with the parent; empty for the root and between disconnected parts)."""

    cliques: list[frozenset]
    parent: list[int | None]
    separators: list[frozenset] = field(default_factory=list)

    def children(self, i: int) -> list[int]:
        return [j for j, p in enumerate(self.parent) if p == i]


def junction_tree(cliques: list[frozenset], root: int = 0) -> JunctionTree:
    """A junction tree of the maximal cliques of a chordal graph, listed in a perfect sequence.

    Maximum-weight spanning tree (Prim, from `root`) of the complete graph on the cliques weighted by
    intersection size; ties broken by clique position, so the result is deterministic. Cliques with no
    common vertex hang on the tree with an empty separator (a decomposable graph that is not connected).
    The order in which Prim adds cliques is a topological order of the tree, hence a perfect sequence.
    """
    if not cliques:
        return JunctionTree([], [], [])
    n = len(cliques)
    in_tree = [root]
    parent: dict[int, int | None] = {root: None}
    best = {j: (len(cliques[j] & cliques[root]), root) for j in range(n) if j != root}
    while best:
        j = max(best, key=lambda x: (best[x][0], -x))
        parent[j] = best.pop(j)[1]
        in_tree.append(j)
        for x in best:
            w = len(cliques[x] & cliques[j])
            if w > best[x][0]:
                best[x] = (w, j)
    pos = {old: new for new, old in enumerate(in_tree)}
    ordered = [cliques[i] for i in in_tree]
    par = [None if parent[i] is None else pos[parent[i]] for i in in_tree]
    seps = [frozenset() if p is None else ordered[i] & ordered[p] for i, p in enumerate(par)]
    return JunctionTree(ordered, par, seps)


def is_perfect_sequence(cliques: list[frozenset]) -> bool:
    """Def. 4.7 checked literally: S_i = E_i & (E_1 | ... | E_{i-1}) lies inside some earlier E_j.
    (Completeness of S_i follows, since E_j is a clique.)"""
    seen: set = set()
    for i, e in enumerate(cliques):
        s = e & seen
        if i and not any(s <= cliques[j] for j in range(i)):
            return False
        seen |= e
    return True


def has_running_intersection(tree: JunctionTree) -> bool:
    """Def. 6.1 checked literally: for every pair of cliques, every clique on the tree path between them
    contains their intersection."""
    n = len(tree.cliques)
    nbrs = {i: set() for i in range(n)}
    for i, p in enumerate(tree.parent):
        if p is not None:
            nbrs[i].add(p)
            nbrs[p].add(i)

    def path(a: int, b: int) -> list[int]:
        prev = {a: None}
        stack = [a]
        while stack:
            x = stack.pop()
            for y in nbrs[x]:
                if y not in prev:
                    prev[y] = x
                    stack.append(y)
        out, x = [], b
        while x is not None:
            out.append(x)
            x = prev[x]
        return out

    for a in range(n):
        for b in range(a + 1, n):
            common = tree.cliques[a] & tree.cliques[b]
            if any(not common <= tree.cliques[x] for x in path(a, b)):
                return False
    return True
