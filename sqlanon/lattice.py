"""The generalization lattice and the search for all minimal satisfying nodes.

A node assigns each quasi-identifier a generalization level (0 = the original values). Node X is a
generalization of Y when X >= Y componentwise (TKDD Section 5, the lattice of Figure 3 / LeFevre et
al. 2005). For a monotone privacy model (Theorems 5.2-5.4: a generalization of a satisfying node
satisfies), sqlanon returns ALL minimal satisfying nodes:

- `incognito`: LeFevre, DeWitt, Ramakrishnan (SIGMOD 2005) as described in TKDD Section 5. Subsets
  of the quasi-identifier are searched bottom-up by size: a node over an i-subset is a candidate only
  when each of its (i-1)-projections satisfied (subset property: projecting merges blocks); inside a
  subset's lattice nodes are visited by height and a node whose direct specialization satisfied is
  marked satisfying without a query (generalization property). Counts are rolled up from the
  frequency set by one GROUP BY per evaluated node (rollup).
- `brute_force`: evaluate every node of the full lattice; the reference for tests.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

Node = tuple[int, ...]


@dataclass(frozen=True)
class Lattice:
    names: tuple[str, ...]
    heights: tuple[int, ...]
    # per attribute: is its top level one single value ('*')? Then a node with that attribute at the
    # top has the same blocks as its projection without the attribute.
    single_root: tuple[bool, ...] | None = None

    @property
    def size(self) -> int:
        return int(np.prod([h + 1 for h in self.heights]))

    def nodes(self):
        return itertools.product(*(range(h + 1) for h in self.heights))

    def levels(self, node: Node) -> dict[str, int]:
        return dict(zip(self.names, node))

    def node(self, levels: dict[str, int]) -> Node:
        return tuple(int(levels[n]) for n in self.names)


def direct_specializations(node: Node) -> list[Node]:
    return [node[:i] + (node[i] - 1,) + node[i + 1:] for i in range(len(node)) if node[i] > 0]


def direct_generalizations(node: Node, heights) -> list[Node]:
    return [node[:i] + (node[i] + 1,) + node[i + 1:] for i in range(len(node)) if node[i] < heights[i]]


def by_height(lattice: Lattice) -> list[tuple[int, list[Node]]]:
    """(height, nodes of that height), lowest first: every direct specialization comes before its node."""
    groups: dict[int, list[Node]] = {}
    for node in lattice.nodes():
        groups.setdefault(sum(node), []).append(node)
    return sorted(groups.items())


def minimal_nodes(satisfying) -> list[Node]:
    """Satisfying nodes with no satisfying node strictly below them (componentwise), sorted.

    Works for any predicate, monotone or not (with suppression, l-diversity and t-closeness are not
    monotone, so a direct-children test would not be enough).
    """
    nodes = sorted(set(satisfying), key=lambda n: (sum(n), n))
    if not nodes:
        return []
    arr = np.array(nodes, dtype=np.int16)
    out = []
    for i, node in enumerate(nodes):
        below = np.all(arr[:i] <= arr[i], axis=1)   # earlier nodes have smaller or equal height
        if not below.any():
            out.append(node)
    return out


@dataclass
class SearchResult:
    lattice: Lattice
    satisfying: set[Node]
    minimal: list[Node]
    evaluated: int
    seconds: float
    per_level: list[dict] = field(default_factory=list)
    # nodes the search left unchecked because a satisfying node lies below them (so none is minimal); only
    # with a non-monotone predicate, where satisfying nodes do not form an up-set (`sqlanon.search`)
    undecided: set[Node] = field(default_factory=set)


# check([(attribute indices, node), ...]) -> [bool, ...]: does each node, over that subset of the
# attributes, satisfy? Batched so the engine can evaluate many nodes per statement.
Check = Callable[[list[tuple[tuple[int, ...], Node]]], list[bool]]


def brute_force(lattice: Lattice, check: Check, progress=None, batch: int = 240) -> SearchResult:
    """Evaluate every node of the full lattice (no pruning)."""
    t = time.perf_counter()
    everything = tuple(range(len(lattice.names)))
    nodes = list(lattice.nodes())
    satisfying = set()
    for i in range(0, len(nodes), batch):
        chunk = nodes[i:i + batch]
        for node, ok in zip(chunk, check([(everything, n) for n in chunk])):
            if ok:
                satisfying.add(node)
        if progress:
            progress.update(level=len(everything), evaluated=i + len(chunk), total=len(nodes))
    return SearchResult(lattice, satisfying, minimal_nodes(satisfying), len(nodes), time.perf_counter() - t)


def _candidates(subset: tuple[int, ...], heights, S: dict) -> list[Node]:
    """Nodes over `subset` whose every projection to one attribute fewer satisfied (subset property).

    Generated as in Apriori: join the satisfying nodes of the first size-1 attributes with each level of
    the last one, then prune by the other projections. The satisfying sets are up-sets (the predicate is
    monotone), so for one prefix the levels of the last attribute that pass a projection are all those
    from its lowest passing level up: one scan per projection gives them.
    """
    size = len(subset)
    if size == 1:
        return [(lvl,) for lvl in range(heights[subset[0]] + 1)]
    projections = [subset[:j] + subset[j + 1:] for j in range(size)]
    if any(not S[p] for p in projections):
        return []
    top = heights[subset[-1]]
    others = [S[projections[j]] for j in range(size - 1)]
    out = []
    for prefix in S[projections[-1]]:
        low = 0
        for j, passing in enumerate(others):
            sub = prefix[:j] + prefix[j + 1:]
            while low <= top and sub + (low,) not in passing:
                low += 1
            if low > top:
                break
        out.extend(prefix + (lvl,) for lvl in range(low, top + 1))
    return out


def incognito(lattice: Lattice, check: Check, progress=None) -> SearchResult:
    """All satisfying nodes of the full lattice, evaluating as few as monotonicity allows.

    `check` must be monotone under generalization and under projection to fewer attributes
    (k-anonymity with or without suppression; the l-diversity family and t-closeness without
    suppression). Subsets of one size are independent given the smaller ones, so they are searched
    together, height by height: at each height the unmarked candidates of every subset go to the
    database in batches.

    One more inference, sound for any predicate: an attribute generalized to a single root value does
    not split any block, so a candidate with such an attribute at its top level has exactly the blocks
    of its projection without it, which satisfied (that is what made it a candidate).
    """
    roots = lattice.single_root or (False,) * len(lattice.heights)
    t = time.perf_counter()
    n = len(lattice.names)
    heights = lattice.heights
    S: dict[tuple[int, ...], set[Node]] = {}
    evaluated = 0
    per_level = []
    # how many nodes of the full lattice have each height: the progress estimate counts them as decided
    per_height: dict[int, int] = {}
    for node in lattice.nodes():
        per_height[sum(node)] = per_height.get(sum(node), 0) + 1
    decided = 0
    for size in range(1, n + 1):
        level_start, level_evaluated = time.perf_counter(), 0
        by_height: dict[int, list[tuple[tuple[int, ...], Node]]] = {}
        candidates = 0
        for subset in itertools.combinations(range(n), size):
            S[subset] = set()
            for node in _candidates(subset, heights, S):
                by_height.setdefault(sum(node), []).append((subset, node))
                candidates += 1
        for h in sorted(by_height):
            todo = []
            for subset, node in by_height[h]:
                if any(child in S[subset] for child in direct_specializations(node)):
                    S[subset].add(node)        # generalization property: satisfies without a query
                elif size > 1 and any(roots[a] and lvl == heights[a] for a, lvl in zip(subset, node)):
                    S[subset].add(node)        # same blocks as a satisfying projection
                else:
                    todo.append((subset, node))
            for (subset, node), ok in zip(todo, check(todo)):
                if ok:
                    S[subset].add(node)
            evaluated += len(todo)
            level_evaluated += len(todo)
            if size == n:
                decided += per_height.get(h, 0)
            if progress:
                progress.update(level=size, evaluated=evaluated, total=lattice.size, decided=decided or None)
        per_level.append({"subset_size": size, "candidates": candidates, "evaluated": level_evaluated,
                          "seconds": round(time.perf_counter() - level_start, 4)})
    full = S.get(tuple(range(n)), set())
    return SearchResult(lattice, full, minimal_in_up_set(full), evaluated, time.perf_counter() - t, per_level)


def minimal_in_up_set(satisfying: set[Node]) -> list[Node]:
    """`minimal_nodes` of an up-set (a monotone predicate's satisfying nodes): those with no direct
    specialization in it. Linear, where the general version compares every pair."""
    return sorted((n for n in satisfying if not any(s in satisfying for s in direct_specializations(n))),
                  key=lambda n: (sum(n), n))
