"""t-closeness (Li, Li, Venkatasubramanian: "t-Closeness: Privacy Beyond k-Anonymity and
l-Diversity", ICDE 2007), with the Earth Mover's Distance.

A q*-block satisfies t-closeness when the distance between the distribution P of the sensitive
attribute in the block and its distribution Q in the whole table is at most t. The distance is the
Earth Mover's Distance (EMD): the least total work (mass x ground distance) that turns P into Q,
the optimum of the transportation problem

    minimize sum_ij d_ij f_ij   s.t.  f_ij >= 0,  sum_j f_ij - sum_j f_ji = p_i - q_i,

(the paper's Section 4). With a ground distance normalized to [0, 1], the EMD is in [0, 1]. The paper
(Section 4.2) derives closed forms for three ground distances, implemented here vectorized over the
rows of P (one row per block; `P` is the counts matrix normalized by row sums, `q` a vector):

- equal distance (categorical; d_ij = 1 for i != j):         D = 1/2 sum_i |p_i - q_i|
- ordered distance (numeric; d_ij = |i - j| / (m - 1) over the values in ascending order):
                                                             D = 1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)|
- hierarchical distance (categorical with a domain hierarchy of height H; d_ij = level of the
  lowest common ancestor of i and j, divided by H):
      extra(leaf i) = p_i - q_i,  extra(N) = sum of extra over N's children,
      pos_extra(N) = sum of the positive extras of N's children, neg_extra(N) = sum of |negative
      ones|,  cost(N) = height(N)/H * min(pos_extra(N), neg_extra(N)),
      D = sum of cost(N) over the internal nodes N.

`tests/test_models_properties.py` checks every formula against the linear program solved by scipy.

Monotone (the paper's "generalization property"): the distribution of a merged block is a convex
combination of its parts' distributions and the EMD is convex in P, so the merged block's EMD is at
most the larger of the two.

Tolerance: a block holds when EMD <= t + 1e-12 (`TOL`); the closed forms add floats, so a block
exactly at t (e.g. t = 0.375 for the paper's P1) must not fail on the last bit.
"""
from __future__ import annotations

import numpy as np

from .base import Criterion, SensitiveDomain

TOL = 1e-12
DISTANCES = ("equal", "ordered", "hierarchical")

__all__ = ["TOL", "DISTANCES", "distributions", "emd_equal", "emd_ordered", "emd_hierarchical",
           "hierarchy_parents", "ground_distance", "TCloseness"]


def distributions(counts) -> np.ndarray:
    """Row-normalize a counts matrix (B, m) into distributions P (an empty block stays all zero)."""
    a = np.asarray(counts, dtype=np.float64)
    if a.ndim == 1:
        a = a[None, :]
    n = a.sum(axis=1, keepdims=True)
    return np.divide(a, n, out=np.zeros_like(a), where=n > 0)


def _pq(P, q) -> tuple[np.ndarray, np.ndarray]:
    P = np.asarray(P, dtype=np.float64)
    if P.ndim == 1:
        P = P[None, :]
    q = np.asarray(q, dtype=np.float64).reshape(-1)
    if P.shape[1] != q.shape[0]:
        raise ValueError(f"P has {P.shape[1]} values per row but q has {q.shape[0]}")
    return P, q


def emd_equal(P, q) -> np.ndarray:
    """EMD under the equal ground distance, per row of P: 1/2 sum_i |p_i - q_i| (t-closeness paper,
    Sec. 4.2, "Equal distance").

    Args:
        P: (B, m) one distribution per block (`distributions` of the counts).
        q: (m,) the whole table's distribution.

    Returns:
        (B,) each block's distance to q.

    The paper's salary example (Sec. 4.2): P = {3k, 4k, 5k} against Q uniform over 3k..11k.

    >>> emd_equal([[1/3, 1/3, 1/3, 0, 0, 0, 0, 0, 0]], [1/9] * 9).round(4).tolist()
    [0.6667]
    """
    P, q = _pq(P, q)
    return 0.5 * np.abs(P - q).sum(axis=1)


def emd_ordered(P, q) -> np.ndarray:
    """EMD under the ordered ground distance |i - j| / (m - 1), per row of P: with r_i = p_i - q_i,
    D = 1/(m-1) sum_{i=1..m} |r_1 + ... + r_i| (t-closeness paper, Sec. 4.2, numerical attributes).
    The values must be in ascending order (SensitiveDomain keeps numeric values that way). 0 when
    the domain has a single value.

    Args:
        P: (B, m) one distribution per block, values in ascending order.
        q: (m,) the whole table's distribution.

    Returns:
        (B,) each block's distance to q.

    The paper's salary example (Sec. 4.2) gives D[P1, Q] = 0.375:

    >>> emd_ordered([[1/3, 1/3, 1/3, 0, 0, 0, 0, 0, 0]], [1/9] * 9).round(4).tolist()
    [0.375]
    """
    P, q = _pq(P, q)
    m = P.shape[1]
    if m < 2:
        return np.zeros(len(P))
    return np.abs(np.cumsum(P - q, axis=1)).sum(axis=1) / (m - 1)


def hierarchy_parents(levels) -> list[tuple[np.ndarray, int]]:
    """For each level h = 1..H of a `SensitiveDomain.levels` array (shape (H+1, m)), the parent of
    every node of level h-1 as an array of dense node indices, and the number of nodes at level h.

    Raises ValueError unless `levels` describes a tree: levels[0] distinguishes every value, the top
    row is a single root, and each node of level h-1 has exactly one parent at level h.
    """
    lv = np.asarray(levels)
    if lv.ndim != 2 or lv.shape[0] < 2:
        raise ValueError("levels must have shape (H+1, m) with H >= 1")
    m = lv.shape[1]
    if len(np.unique(lv[0])) != m:
        raise ValueError("levels[0] must give every value its own leaf")
    if len(np.unique(lv[-1])) != 1:
        raise ValueError("the top level of the hierarchy must be a single root")
    out = []
    child = np.unique(lv[0], return_inverse=True)[1].reshape(-1)
    n_child = m
    for h in range(1, lv.shape[0]):
        node = np.unique(lv[h], return_inverse=True)[1].reshape(-1)
        n_node = int(node.max()) + 1
        parent = np.full(n_child, -1)
        parent[child] = node
        # a tree: every value under a level-(h-1) node has the same level-h ancestor
        if np.any(parent[child] != node):
            raise ValueError(f"level {h} of the hierarchy is not a tree: a node of level {h - 1} has two parents")
        out.append((parent, n_node))
        child, n_child = node, n_node
    return out


def emd_hierarchical(P, q, levels, parents=None) -> np.ndarray:
    """EMD under the hierarchical ground distance, per row of P (t-closeness paper, Sec. 4.2).

    `levels` is the (H+1, m) array of `SensitiveDomain.levels`: levels[h, s] is the ancestor of value
    s at level h, leaves at level 0, the root at level H. The ground distance of two values is the
    level of their lowest common ancestor divided by H. Going up one level at a time,
    extra(N) = sum of its children's extras (leaves: p_i - q_i), and each node N of level h costs
    h/H * min(pos_extra(N), neg_extra(N)) over its children; the EMD is the sum of the costs.
    Vectorized: each level is one matrix product with the child -> parent incidence matrix.
    `parents` (from `hierarchy_parents(levels)`) may be passed to skip re-validating the tree.
    """
    P, q = _pq(P, q)
    if parents is None:
        parents = hierarchy_parents(levels)
    H = len(parents)
    if P.shape[1] != np.asarray(levels).shape[1]:
        raise ValueError("levels and P disagree on the number of values")
    extra = P - q
    # leaves are already in dense order 0..m-1 when levels[0] = arange(m); reorder otherwise
    leaf = np.unique(np.asarray(levels)[0], return_inverse=True)[1].reshape(-1)
    child_extra = np.zeros_like(extra)
    child_extra[:, leaf] = extra
    cost = np.zeros(len(P))
    for h, (parent, n_node) in enumerate(parents, start=1):
        A = np.zeros((len(parent), n_node))
        A[np.arange(len(parent)), parent] = 1.0
        pos = np.maximum(child_extra, 0.0) @ A
        neg = np.maximum(-child_extra, 0.0) @ A
        cost += (h / H) * np.minimum(pos, neg).sum(axis=1)
        child_extra = child_extra @ A
    return cost


def ground_distance(m: int, distance: str, levels=None) -> np.ndarray:
    """The (m, m) ground-distance matrix d_ij of a distance (for the transportation LP and docs)."""
    i, j = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    if distance == "equal":
        return (i != j).astype(float)
    if distance == "ordered":
        return np.abs(i - j) / max(m - 1, 1)
    if distance == "hierarchical":
        lv = np.asarray(levels)
        H = lv.shape[0] - 1
        same = lv[:, :, None] == lv[:, None, :]          # (H+1, m, m)
        lca = np.argmax(same, axis=0)                    # lowest level where they meet
        return lca / H
    raise ValueError(f"unknown distance {distance!r}")


class TCloseness(Criterion):
    """t-closeness with the EMD: every block's distribution P of the sensitive attribute is within
    t of the whole table's Q (t-closeness paper, Definition of the t-closeness principle, Sec. 3).

    Q is `domain.totals` normalized (read at evaluation time, so the engine may fill the totals in
    after building the criterion) unless `q` is given. `distance` is ``equal``, ``ordered`` (the
    domain must be numeric, values ascending) or ``hierarchical`` (the domain must have `levels`).
    Achieved: ``t_<distance>``, the largest EMD of any block.

    Args:
        t: the largest distance allowed.
        distance: the EMD's ground distance: ``equal``, ``ordered`` or ``hierarchical``.
        domain: the sensitive attribute (its values, and its `totals` for Q unless `q` is given).
        q: the whole table's counts (or distribution) of the values, instead of `domain.totals`.

    The paper's salary example (Sec. 4.2): P1 = {3k, 4k, 5k} is 0.375 from the table's Q (3k..11k, one
    each), P2 = {6k, 8k, 11k} 0.167.

    >>> salary = SensitiveDomain("salary", tuple(range(3, 12)), numeric=True)
    >>> blocks = np.array([[1, 1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 0, 1, 0, 0, 1]])
    >>> model = TCloseness(0.2, "ordered", salary, q=[1] * 9)
    >>> model.emd(blocks).round(3).tolist()
    [0.375, 0.167]
    >>> model.block_ok(blocks).tolist()
    [False, True]
    """

    name = "t-closeness"

    def __init__(self, t: float, distance: str, domain: SensitiveDomain, q=None):
        if distance not in DISTANCES:
            raise ValueError(f"distance must be one of {', '.join(DISTANCES)}; got {distance!r}")
        self._parents = None
        if distance == "hierarchical":
            if domain.levels is None:
                raise ValueError(f"sensitive attribute '{domain.name}' has no hierarchy for the hierarchical distance")
            self._parents = hierarchy_parents(domain.levels)   # validate once
        self.t = float(t)
        self.distance = distance
        self.domain = domain
        self.sensitive = domain.name
        self._q = None if q is None else np.asarray(q, dtype=np.float64)

    @property
    def q(self) -> np.ndarray:
        """The whole table's distribution Q of the sensitive attribute."""
        if self._q is not None:
            return self._q / self._q.sum()
        if self.domain.totals is None:
            raise ValueError(f"t-closeness needs the table's distribution of '{self.domain.name}' "
                             "(SensitiveDomain.totals) before it can judge blocks")
        tot = np.asarray(self.domain.totals, dtype=np.float64)
        return tot / tot.sum()

    def emd(self, counts: np.ndarray) -> np.ndarray:
        """Per block, the EMD between its distribution and Q under this criterion's distance."""
        P = distributions(counts)
        if self.distance == "equal":
            return emd_equal(P, self.q)
        if self.distance == "ordered":
            return emd_ordered(P, self.q)
        return emd_hierarchical(P, self.q, self.domain.levels, self._parents)

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        return self.emd(counts) <= self.t + TOL

    def achieved(self, counts: np.ndarray) -> dict:
        d = self.emd(counts)
        return {f"t_{self.distance}": float(d.max()) if d.size else 0.0}

    def describe(self) -> str:
        return f"{self.t:g}-closeness ({self.distance} distance)"
