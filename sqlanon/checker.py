"""The node checker: does one lattice node satisfy the policy's privacy models?

For a node it asks the frequency set for per-q*-block counts (one query), applies every criterion to
all blocks at once, and suppresses the failing blocks when the suppression budget allows it
(`max_suppression`, a fraction of the table's rows; tuple suppression as in TKDD Section 6 and
LeFevre et al.). A node satisfies the policy when the suppressed rows fit in the budget.

Monotonicity with suppression: k-anonymity stays monotone (a merged block is too small only if all
its parts were); the l-diversity family and t-closeness do not (merging a failing block into a
passing one can fail and suppress more rows). `NodeChecker.prunable` says which case applies, and
`sqlanon.search` keeps Incognito's pruning sound accordingly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .frequency import FrequencySet, NodeCounts
from .models.base import Criterion
from .models.kanonymity import KAnonymity


@dataclass
class NodeResult:
    levels: dict[str, int]
    satisfied: bool
    counts: NodeCounts
    ok: np.ndarray                # per block: satisfies every criterion
    suppressed_rows: int

    @property
    def classes(self) -> int:
        return int(self.ok.sum()) if self.suppressed_rows else int(len(self.ok))

    @property
    def released_sizes(self) -> np.ndarray:
        return self.counts.sizes[self.ok] if self.suppressed_rows else self.counts.sizes


class NodeChecker:
    def __init__(self, fs: FrequencySet, criteria: list[Criterion], max_suppression: float = 0.0):
        self.fs = fs
        self.criteria = list(criteria)
        self.max_suppression = float(max_suppression)
        self.budget = int(math.floor(self.max_suppression * fs.rows + 1e-9))
        first = fs.sensitives[0].name if fs.sensitives else None
        self.attribute = {id(c): (c.sensitive or first) for c in self.criteria}
        self.needed = []
        for c in self.criteria:
            if c.needs_sensitive and not getattr(c, "multi_attribute", False):
                a = self.attribute[id(c)]
                if a not in self.needed:
                    self.needed.append(a)
        self.evaluated = 0

    @property
    def prunable(self) -> bool:
        """Is the whole predicate monotone, so Incognito may prune with it directly?"""
        if not all(c.monotone for c in self.criteria):
            return False
        return self.budget == 0 or all(isinstance(c, KAnonymity) for c in self.criteria)

    def monotone_part(self) -> "NodeChecker":
        """A necessary, monotone condition: the k-anonymity criteria with the same budget."""
        return NodeChecker(self.fs, [c for c in self.criteria if isinstance(c, KAnonymity)], self.max_suppression)

    def evaluate(self, levels: dict[str, int]) -> NodeResult:
        """One node, with its block codes (for metrics, suppression and the release)."""
        self.evaluated += 1
        return self._judge(levels, self.fs.node_counts(levels, sensitive=self.needed))

    def satisfied_many(self, nodes: list[dict[str, int]], batch: int = 48) -> list[bool]:
        """Do these nodes satisfy the policy? Evaluated `batch` nodes per statement."""
        if self.has_multi_attribute:   # needs block codes to join refined blocks back: one node at a time
            return [self.evaluate(levels).satisfied for levels in nodes]
        out = []
        for i in range(0, len(nodes), batch):
            chunk = nodes[i:i + batch]
            self.evaluated += len(chunk)
            for levels, counts in zip(chunk, self.fs.batch_counts(chunk, sensitive=self.needed)):
                out.append(self._judge(levels, counts).satisfied)
        return out

    @property
    def has_multi_attribute(self) -> bool:
        return any(getattr(c, "multi_attribute", False) for c in self.criteria)

    def _judge(self, levels: dict[str, int], counts: NodeCounts) -> NodeResult:
        ok = np.ones(len(counts.sizes), dtype=bool)
        for c in self.criteria:
            if getattr(c, "multi_attribute", False):
                ok &= self._multi_attribute_ok(c, levels, counts)
            elif c.needs_sensitive:
                ok &= c.block_ok(counts.sensitive[self.attribute[id(c)]])
            else:
                ok &= c.block_ok(counts.sizes[:, None])
        suppressed = int(counts.sizes[~ok].sum())
        return NodeResult(dict(levels), suppressed <= self.budget, counts, ok, suppressed)

    def _multi_attribute_ok(self, c: Criterion, levels, counts: NodeCounts) -> np.ndarray:
        """Def. 4.6: l-diversity of S_i with the other sensitive attributes added to the quasi-identifier.

        A q*-block passes when every refined block (q*, other sensitive values) passes.
        """
        attr = self.attribute[id(c)]
        others = [s.name for s in self.fs.sensitives if s.name != attr]
        refined = self.fs.node_counts(levels, sensitive=[attr], refine=others)
        refined_ok = c.block_ok(refined.sensitive[attr])
        a = counts.block_codes.shape[1]
        both = np.vstack([counts.block_codes, refined.block_codes[:, :a]])
        _, inverse = np.unique(both, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        failing = np.zeros(inverse.max() + 1, dtype=bool)
        failing[inverse[len(counts.block_codes):][~refined_ok]] = True
        return ~failing[inverse[:len(counts.block_codes)]]

    def check(self, names: tuple[str, ...]):
        """A `lattice.Check`: for [(attribute indices into `names`, node)], does each satisfy?"""
        def check(items) -> list[bool]:
            return self.satisfied_many([{names[i]: lvl for i, lvl in zip(subset, node)} for subset, node in items])
        return check
