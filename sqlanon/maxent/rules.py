"""Automatic background knowledge: the Top-(K+, K-) strongest associations (Privacy-MaxEnt, Section 4.4).

The bound of background knowledge the paper proposes: mine every association rule between a subset Q_v
of the quasi-identifier attributes (with values) and the sensitive attribute from the original data
(Section 4.2: the best source of knowledge about the data is the data itself), positive rules
Q_v => s and negative rules Q_v => not s (Savasere et al.), keep those supported by at least
`min_support` records (Section 7: 3 of 14,210), rank each kind by confidence and take the top K+ and
K-. Each rule then is knowledge P(s | Q_v) = confidence (positive) or 1 - confidence (negative).

Mining runs in the database (``maxent_rules.sql``: one GROUP BY CUBE over the original's per-(q, s)
counts); only the K rules come back. Ties in confidence are broken by support (the rule that covers
more records first), then by fewer attributes, then by codes, so the top K is deterministic and the top
K is always a prefix of the top K + 1 (the paper does not say how it broke ties).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PolicyError
from .knowledge import Conditional, Rules


@dataclass(frozen=True)
class MinedRule:
    negative: bool
    given: tuple               # ((attribute, value), ...)
    value: str                 # the sensitive value s
    support: int               # records supporting the rule
    given_records: int         # records with Q_v
    confidence: float
    rank: int                  # 1 = strongest of its kind

    @property
    def probability(self) -> float:
        """The knowledge it gives: P(s | Q_v)."""
        return 1.0 - self.confidence if self.negative else self.confidence

    def describe(self) -> str:
        q = ", ".join(f"{a}={v}" for a, v in self.given)
        arrow = f"not {self.value}" if self.negative else self.value
        return f"{q} => {arrow} (confidence {self.confidence:.4g}, support {self.support})"

    def conditional(self) -> Conditional:
        sign = "-" if self.negative else "+"
        return Conditional(self.given, (self.value,), self.probability, self.probability,
                           f"rule {sign}{self.rank} [{self.describe()}]")

    def as_dict(self) -> dict:
        return {"kind": "negative" if self.negative else "positive", "rank": self.rank,
                "given": dict(self.given), "value": self.value, "support": self.support,
                "given_records": self.given_records, "confidence": self.confidence,
                "probability": self.probability}


def mine_rules(backend, problem, spec: Rules) -> list[MinedRule]:
    """The top `spec.positive` positive and `spec.negative` negative rules (positive first)."""
    if problem.tables.get("truth_rows") is None:
        raise PolicyError(spec.label or "rules", "mining association rules needs the original records, which "
                          "this release does not have (give the private table of a bucketized release, or "
                          "a generalized release of the policy's source)")
    k = len(problem.attributes)
    out: list[MinedRule] = []
    for negative, limit in ((False, spec.positive), (True, spec.negative)):
        if not limit:
            continue
        data = backend.fetchnumpy("maxent_rules.sql", truth=problem.tables["truth"], qtable=problem.tables["q"],
                                  smap=problem.tables["smap"], k=k, full=(1 << k) - 1,
                                  min_support=spec.min_support, attributes=spec.attributes, negative=negative,
                                  limit=limit)
        codes = np.column_stack([np.asarray(data[f"a{i}"], dtype=np.int64) for i in range(k)]) \
            if len(data["s"]) else np.zeros((0, k), dtype=np.int64)
        for rank, (row, s, sup, nq, conf) in enumerate(zip(codes, data["s"], data["support"], data["nq"],
                                                            data["confidence"]), start=1):
            given = tuple((a, problem.attr_values[i][c]) for i, (a, c) in enumerate(zip(problem.attributes, row))
                          if c >= 0)
            out.append(MinedRule(negative, given, problem.s_values[int(s)], int(sup), int(nq), float(conf), rank))
    return out
