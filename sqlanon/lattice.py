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
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Node = tuple[int, ...]


@dataclass(frozen=True)
class Lattice:
    """The generalization lattice of full-domain generalization (Incognito, LeFevre, DeWitt and
    Ramakrishnan, SIGMOD 2005): a node is one level per quasi-identifier, from 0 (the values as they
    are) to the hierarchy's height.

    Args:
        names: the quasi-identifiers, in policy order.
        heights: the height of each one's hierarchy.
        same_blocks: per attribute, per level, the lowest level that splits its values into the same
            blocks (`HierarchyTable.same_blocks`); None: every level splits them differently.
        one_block: per attribute, per level, whether the level maps every value to one label (a single
            root '*', or a column of one value at every level); None: no level is known to be one.

    >>> lattice = Lattice(("age", "zip"), (2, 1))
    >>> lattice.size
    6
    >>> lattice.levels((1, 0)), lattice.node({"zip": 1, "age": 2})
    ({'age': 1, 'zip': 0}, (2, 1))
    """

    names: tuple[str, ...]
    heights: tuple[int, ...]
    # two nodes whose levels split every attribute's values alike have the same blocks, so the same verdict
    # under every privacy model (each is a function of the blocks' sensitive counts): the search infers one
    # from the other. An attribute at a level of one label splits nothing: such a node has the blocks of its
    # projection without that attribute.
    same_blocks: tuple[tuple[int, ...], ...] | None = None
    one_block: tuple[tuple[bool, ...], ...] | None = None

    @property
    def size(self) -> int:
        return int(np.prod([h + 1 for h in self.heights]))

    def nodes(self):
        return itertools.product(*(range(h + 1) for h in self.heights))

    def levels(self, node: Node) -> dict[str, int]:
        return dict(zip(self.names, node))

    def node(self, levels: dict[str, int]) -> Node:
        return tuple(int(levels[n]) for n in self.names)

    def same_blocks_as(self, node: Node) -> Node:
        """The lowest node with the same blocks as `node` (each level replaced by the lowest that splits the
        attribute's values alike): the same verdict under every model.

        >>> Lattice(("zip", "qty"), (2, 1), same_blocks=((0, 1, 2), (0, 0))).same_blocks_as((2, 1))
        (2, 0)
        """
        if self.same_blocks is None:
            return node
        return tuple(self.same_blocks[a][level] for a, level in enumerate(node))


def direct_specializations(node: Node) -> list[Node]:
    """The nodes one level lower in one attribute.

    >>> direct_specializations((1, 1))
    [(0, 1), (1, 0)]
    """
    return [node[:i] + (node[i] - 1,) + node[i + 1:] for i in range(len(node)) if node[i] > 0]


def direct_generalizations(node: Node, heights) -> list[Node]:
    """The nodes one level higher in one attribute, within the hierarchies' heights.

    Args:
        node: a node (one level per attribute).
        heights: the height of each attribute's hierarchy.

    Returns:
        The direct generalizations, attribute by attribute.

    >>> direct_generalizations((1, 0), (2, 1))
    [(2, 0), (1, 1)]
    """
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

    Args:
        satisfying: the satisfying nodes.

    Returns:
        The minimal ones, lowest height first.

    >>> minimal_nodes([(1, 1), (2, 0), (2, 1), (0, 1)])
    [(0, 1), (2, 0)]
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
    """What a search found: every satisfying node it knows of, the minimal ones, and its cost.

    Attributes:
        lattice: the lattice searched.
        satisfying: the satisfying nodes (all of them for a monotone predicate).
        minimal: the minimal satisfying nodes, by height then levels.
        evaluated: checks run, not inferred: one per node of a subset's lattice (Incognito) or of the full
            lattice each time it is checked, so a node presumed in the two-pass search's first pass and
            judged in its second counts twice (`sqlanon.search`).
        seconds: the search's time.
        per_level: per subset size (Incognito) or phase (heuristic): candidates, evaluated, seconds.
        undecided: nodes left unchecked above a satisfying node (non-monotone predicates only).

    >>> lat = Lattice(("zip", "age"), (2, 1))
    >>> result = brute_force(lat, lambda batch: [sum(node) >= 2 for _, node in batch])
    >>> result.minimal, result.evaluated
    ([(1, 1), (2, 0)], 6)
    """

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
    """Evaluate every node of the full lattice (no pruning): the reference the other searches are tested
    against.

    Args:
        lattice: the lattice.
        check: judges a batch of (attribute indices, node) pairs; here always every attribute.
        progress: a `sqlanon.progress.Progress`, or None.
        batch: nodes per call of `check`.

    Returns:
        The `SearchResult`: every satisfying node, the minimal ones, how many were evaluated.

    >>> lattice = Lattice(("age", "zip"), (2, 1))
    >>> result = brute_force(lattice, lambda batch: [sum(node) >= 2 for _, node in batch])
    >>> result.minimal, result.evaluated
    ([(1, 1), (2, 0)], 6)
    """
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


def _candidates(subset: tuple[int, ...], heights, S: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """Nodes over `subset` whose every projection to one attribute fewer satisfied (subset property), as a
    boolean array over the subset's lattice (one axis per attribute, one index per level).

    The join of Apriori, vectorized: a node is a candidate when each projection's satisfying array,
    broadcast along the removed attribute's axis, holds it.
    """
    shape = tuple(heights[a] + 1 for a in subset)
    if len(subset) == 1:
        return np.ones(shape, dtype=bool)
    out: np.ndarray | None = None
    for j in range(len(subset)):
        # the projection without attribute j, with a length-1 axis where j was (it broadcasts along it)
        part = S[subset[:j] + subset[j + 1:]].reshape(shape[:j] + (1,) + shape[j + 1:])
        if out is None:
            out = np.broadcast_to(part, shape).copy()
        else:
            out &= part
        if not out.any():
            break                           # no candidate left: the other projections cannot add one
    assert out is not None
    return out


def incognito(lattice: Lattice, check: Check, progress=None) -> SearchResult:
    """All satisfying nodes of the full lattice, evaluating as few as monotonicity allows.

    `check` must be monotone under generalization and under projection to fewer attributes
    (k-anonymity with or without suppression; the l-diversity family and t-closeness without
    suppression). Subsets of one size are independent given the smaller ones, so they are searched
    together, height by height: at each height the unmarked candidates of every subset go to the
    database in batches. Each subset's satisfying nodes are a boolean array over its lattice, so the
    candidate join and the inferences below are array operations.

    Inferences, without a query: a candidate one of whose direct specializations satisfied satisfies
    (generalization property). Two more are sound for any predicate, since a verdict is a function of the
    blocks: an attribute at a level of one label (`Lattice.one_block`: a single root '*', or a column of
    one value) splits no block, so such a candidate has exactly the blocks of its projection without it,
    which satisfied (that is what made it a candidate); and a candidate whose levels split the values
    like lower ones (`Lattice.same_blocks`) has the verdict of that lower node, already decided (a lower
    height), so one that failed makes it fail.

    Args:
        lattice: the lattice.
        check: judges a batch of (attribute indices, node over those attributes) pairs.
        progress: a `sqlanon.progress.Progress`, or None.

    Returns:
        The `SearchResult`: every satisfying node of the full lattice, the minimal ones, how many nodes
        (of the full lattice and of the subsets' lattices) were evaluated.

    3-anonymity of six rows, each attribute's labels per level written out:

    >>> ages = {0: ["21", "28", "29", "47", "49", "55"], 1: ["[20, 40)"] * 3 + ["[40, 60)"] * 3, 2: ["*"] * 6}
    >>> zips = {0: ["13068", "13053", "13068", "14850", "14853", "14850"], 1: ["130**"] * 3 + ["148**"] * 3,
    ...         2: ["*"] * 6}
    >>> def three_anonymous(batch):
    ...     out = []
    ...     for attributes, node in batch:
    ...         keys = list(zip(*((ages, zips)[a][level] for a, level in zip(attributes, node))))
    ...         out.append(min(keys.count(key) for key in keys) >= 3)
    ...     return out
    >>> result = incognito(Lattice(("age", "zip"), (2, 2)), three_anonymous)
    >>> result.minimal, sorted(result.satisfying), result.evaluated     # brute force evaluates 9
    ([(1, 1)], [(1, 1), (1, 2), (2, 1), (2, 2)], 5)
    """
    t = time.perf_counter()
    n = len(lattice.names)
    heights = lattice.heights
    one = lattice.one_block or tuple((False,) * (h + 1) for h in heights)
    same = [np.asarray(lattice.same_blocks[a] if lattice.same_blocks else range(heights[a] + 1), dtype=np.int64)
            for a in range(n)]
    S: dict[tuple[int, ...], np.ndarray] = {}
    evaluated = 0
    per_level = []
    # how many nodes of the full lattice have each height: the progress estimate counts them as decided
    full_shape = tuple(h + 1 for h in heights)
    full_heights = np.indices(full_shape).sum(axis=0) if n else np.zeros((), dtype=int)
    per_height = np.bincount(full_heights.ravel())
    decided = 0
    # each node's height, per subset lattice shape (the full lattice's is the one just computed)
    height_of: dict[tuple[int, ...], np.ndarray] = {full_shape: full_heights}
    for size in range(1, n + 1):
        level_start, level_evaluated = time.perf_counter(), 0
        work: dict[tuple[int, ...], tuple[np.ndarray, ...]] = {}
        candidates = 0
        for subset in itertools.combinations(range(n), size):
            cand = _candidates(subset, heights, S)
            S[subset] = np.zeros(cand.shape, dtype=bool)
            if not cand.any():
                continue
            if cand.shape not in height_of:
                height_of[cand.shape] = np.indices(cand.shape).sum(axis=0)
            rooted = np.zeros(cand.shape, dtype=bool)       # an attribute at a level of one label
            if size > 1:
                for axis, a in enumerate(subset):
                    for level, single in enumerate(one[a]):
                        if single:
                            index: list[slice | int] = [slice(None)] * size
                            index[axis] = level
                            rooted[tuple(index)] = True
            # the candidates as flat indices sorted by height, with their levels: each height's nodes are
            # then a slice, and a direct specialization is the flat index less one axis's stride
            flat = np.flatnonzero(cand)
            hs = height_of[cand.shape].ravel()[flat]
            order = np.argsort(hs, kind="stable")
            flat, hs = flat[order], hs[order]
            coords = np.column_stack(np.unravel_index(flat, cand.shape))
            strides = np.array([int(st) // S[subset].itemsize for st in S[subset].strides], dtype=np.int64)
            bounds = np.searchsorted(hs, np.arange(int(hs[-1]) + 2))
            # each candidate's lowest node with the same blocks (itself, mostly): a lower one is decided first
            twin = np.ravel_multi_index(tuple(same[a][coords[:, axis]] for axis, a in enumerate(subset)), cand.shape)
            work[subset] = (flat, coords, strides, bounds, rooted.ravel()[flat], twin)
            candidates += len(flat)
        top = max((len(w[3]) - 2 for w in work.values()), default=-1)
        for h in range(top + 1):
            todo: list = []
            for subset, (flat, coords, strides, bounds, rooted, twin) in work.items():
                if h + 1 >= len(bounds) or bounds[h] == bounds[h + 1]:
                    continue
                lo, hi = bounds[h], bounds[h + 1]
                nodes, levels = flat[lo:hi], coords[lo:hi]
                s = S[subset].reshape(-1)           # a view: writes land in S[subset]
                # every direct specialization at once: the flat index less one axis's stride, where that
                # axis's level is above 0 (else index 0, masked out)
                below = levels > 0
                specializations = np.where(below, nodes[:, None] - strides[None, :], 0)
                twins = twin[lo:hi]
                lower = twins != nodes
                inferred = rooted[lo:hi] | (s[specializations] & below).any(axis=1) | (lower & s[twins])
                s[nodes[inferred]] = True
                # the rest with a lower twin: it failed (or was no candidate, so failed), and so do they
                todo.extend((subset, tuple(int(v) for v in idx)) for idx in levels[~inferred & ~lower])
            if todo:
                for (subset, node), ok in zip(todo, check(todo)):
                    if ok:
                        S[subset][node] = True
            evaluated += len(todo)
            level_evaluated += len(todo)
            if size == n:
                decided += int(per_height[h]) if h < len(per_height) else 0
            if progress:
                progress.update(level=size, evaluated=evaluated, total=lattice.size, decided=decided or None)
        per_level.append({"subset_size": size, "candidates": candidates, "evaluated": level_evaluated,
                          "seconds": round(time.perf_counter() - level_start, 4)})
    everything = tuple(range(n))
    full = {tuple(int(v) for v in idx) for idx in np.argwhere(S[everything])} if n else set()
    return SearchResult(lattice, full, minimal_in_up_set(full), evaluated, time.perf_counter() - t, per_level)


def minimal_in_up_set(satisfying: set[Node]) -> list[Node]:
    """`minimal_nodes` of an up-set (a monotone predicate's satisfying nodes): those with no direct
    specialization in it. Linear, where the general version compares every pair."""
    return sorted((n for n in satisfying if not any(s in satisfying for s in direct_specializations(n))),
                  key=lambda n: (sum(n), n))
