"""The structure of a collection of marginals: interaction graph, decomposability, perfect sequence,
junction tree (Kifer & Gehrke, "Injecting Utility into Anonymized Datasets", SIGMOD 2006,
Section 4.1 and Section 6).

Everything here works on abstract vertices (any hashable) and on marginals given as vertex sets; the
reduction of *anonymized* marginals to ordinary ones over induced attributes lives in
`sqlanon.marginals.collection`. The graph algorithms are networkx's (imported lazily: only marginals use
it); graphs are passed around as adjacency dicts (vertex -> set of neighbours) because the searches
copy and edit them move by move.

- interaction graph (Sec. 4.1): one vertex per attribute of any marginal, an edge between two
  attributes that appear together in some marginal;
- triangulated (Def. 4.1): every cycle of length >= 4 has a chord (`networkx.is_chordal`, maximum
  cardinality search, Tarjan & Yannakakis 1984). Decomposable graphs are exactly the triangulated ones
  (Theorem 4.1);
- graphical (Def. 4.5): the marginals contain every maximal clique of the interaction graph
  (`networkx.chordal_graph_cliques`); decomposable marginals (Def. 4.6) are graphical with a
  decomposable interaction graph;
- perfect sequence (Def. 4.7) of the maximal cliques E1..Ep with separators S_i = E_i & (E_1 | ... |
  E_{i-1}), each contained in an earlier clique;
- junction tree (Def. 6.1): a tree on the cliques in which every clique on the path between V_i and
  V_j contains V_i & V_j. Built as a maximum-weight spanning tree of the clique graph (weight = size of
  the intersection; `networkx.maximum_spanning_tree`), which is a junction tree exactly when the graph is
  chordal (Jensen & Jensen 1994); disconnected parts are joined by empty separators, so one tree (and one
  perfect sequence) always exists. Any topological order of the tree from its root (here breadth-first,
  children by clique position) is a perfect sequence whose separators are the intersections with the
  parent (Sec. 6).
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


def _nx_graph(adj: dict[Vertex, set]):
    import networkx as nx  # lazily: only the marginals need a graph library
    g = nx.Graph()
    g.add_nodes_from(adj)
    g.add_edges_from((u, v) for u, nbrs in adj.items() for v in nbrs)
    return g


def is_chordal(adj: dict[Vertex, set]) -> bool:
    """Triangulated (Def. 4.1), i.e. decomposable (Theorem 4.1)."""
    import networkx as nx
    return nx.is_chordal(_nx_graph(adj))


def maximal_cliques(adj: dict[Vertex, set]) -> list[frozenset]:
    """The maximal cliques of a chordal graph, largest first (ties by the vertices' repr, so the order
    is deterministic)."""
    import networkx as nx
    g = _nx_graph(adj)
    if not nx.is_chordal(g):
        raise ValueError("maximal_cliques needs a chordal graph")
    cliques = {frozenset(c) for c in nx.chordal_graph_cliques(g)}
    return sorted(cliques, key=lambda c: (-len(c), sorted(map(_order_key, c))))


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

    Maximum-weight spanning tree of the complete graph on the cliques weighted by intersection size
    (Kruskal; among equal weights the edge between earlier cliques first, so the result is
    deterministic). Cliques with no common vertex hang on the tree with an empty separator (a
    decomposable graph that is not connected). The cliques are listed breadth-first from `root`
    (children by position): a topological order of the tree, hence a perfect sequence.
    """
    import networkx as nx
    if not cliques:
        return JunctionTree([], [], [])
    g = nx.Graph()
    g.add_nodes_from(range(len(cliques)))
    g.add_weighted_edges_from((i, j, len(cliques[i] & cliques[j]))
                              for i in range(len(cliques)) for j in range(i + 1, len(cliques)))
    tree = nx.maximum_spanning_tree(g, algorithm="kruskal")
    order = [root]
    parent: dict[int, int | None] = {root: None}
    for p, c in nx.bfs_edges(tree, root, sort_neighbors=sorted):
        parent[c] = p
        order.append(c)
    pos = {old: new for new, old in enumerate(order)}
    ordered = [cliques[i] for i in order]
    par = [None if (p := parent[i]) is None else pos[p] for i in order]
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
    import networkx as nx
    g = nx.Graph()
    g.add_nodes_from(range(len(tree.cliques)))
    g.add_edges_from((i, p) for i, p in enumerate(tree.parent) if p is not None)
    n = len(tree.cliques)
    for a in range(n):
        for b in range(a + 1, n):
            common = tree.cliques[a] & tree.cliques[b]
            if any(not common <= tree.cliques[x] for x in nx.shortest_path(g, a, b)):
                return False
    return True
