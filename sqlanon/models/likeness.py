"""Attribute-disclosure models that bound how far a block's sensitive distribution may move from the
whole table's, value by value.

With P the whole table's distribution of the sensitive attribute (p_s, from `SensitiveDomain.totals`)
and Q a q*-block's (q_s, its counts normalized):

- basic beta-likeness (Cao and Karras, "Publishing Microdata with a Robust Privacy Guarantee", PVLDB
  5(11), 2012, Definition 2): for every value s with q_s > p_s, the relative gain (q_s - p_s) / p_s <= beta.
- enhanced beta-likeness (same paper, Definition 3): for every s with q_s > p_s,
  (q_s - p_s) / p_s <= min(beta, -ln p_s), which also caps the gain of frequent values.
- delta-disclosure privacy (Brickell and Shmatikov, "The Cost of Privacy: Destruction of Data-Mining
  Utility in Anonymized Data Publishing", KDD 2008, Definition 4): for every s, |ln(q_s / p_s)| < delta
  (strict); a block missing a value of the table (q_s = 0) fails.

Monotone under generalization (and projection): a merged block's Q is a convex combination of its
parts', and each bound is a fixed interval for q_s (q_s <= p_s (1 + bound) for beta-likeness,
p_s e^-delta < q_s < p_s e^delta for delta-disclosure), which convex combinations keep. With tuple
suppression they are not (merging a failing block into a passing one can fail it), as for t-closeness;
the checker handles that (`sqlanon.search`). delta-disclosure also gives a necessary bound: a block
holds every value of the table (`min_distinct_values`).

Tolerance: beta-likeness holds at gain <= bound + 1e-12 (`TOL`), so a block exactly at beta passes.
"""
from __future__ import annotations

import numpy as np

from .base import Criterion, SensitiveDomain, counts_matrix

TOL = 1e-12
BETA_VARIANTS = ("basic", "enhanced")


def _distributions(counts, domain: SensitiveDomain) -> tuple[np.ndarray, np.ndarray]:
    a = counts_matrix(counts)
    totals = np.asarray(domain.totals, dtype=np.float64)
    p = totals / totals.sum()
    sizes = a.sum(axis=1, keepdims=True)
    q = np.divide(a, sizes, out=np.zeros_like(a), where=sizes > 0)
    return p, q


def relative_gain(counts, domain: SensitiveDomain) -> np.ndarray:
    """The relative gain (q_s - p_s) / p_s of every block and value; 0 where q_s <= p_s.

    Args:
        counts: (B, m) counts of each sensitive value per block.
        domain: the attribute, with the whole table's counts (`totals`, the distribution P).

    Returns:
        (B, m) gains. A table half Cancer, half Flu; a block of 1 Cancer and 2 Flu gains 1/3 on Flu:

    >>> d = SensitiveDomain("disease", ("Cancer", "Flu"), totals=np.array([3, 3]))
    >>> relative_gain(np.array([[1, 2], [0, 3]]), d).round(4).tolist()
    [[0.0, 0.3333], [0.0, 1.0]]
    """
    p, q = _distributions(counts, domain)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where((q > p) & (p > 0), (q - p) / np.where(p > 0, p, 1), 0.0)
    return gain


class BetaLikeness(Criterion):
    """Basic or enhanced beta-likeness of one sensitive attribute (Cao and Karras, PVLDB 2012, Defs. 2-3).

    Args:
        beta: the largest relative gain allowed (> 0).
        domain: the attribute, with the whole table's counts.
        variant: "basic" or "enhanced" (the cap min(beta, -ln p_s)).

    A block holding only Flu gains 1.0 on it (q = 1 against p = 1/2): 0.5-likeness refuses it, 1-likeness
    does not:

    >>> d = SensitiveDomain("disease", ("Cancer", "Flu"), totals=np.array([3, 3]))
    >>> BetaLikeness(0.5, d).block_ok(np.array([[1, 2], [0, 3]])).tolist()
    [True, False]
    >>> BetaLikeness(1.0, d).block_ok(np.array([[1, 2], [0, 3]])).tolist()
    [True, True]
    """

    name = "beta_likeness"

    def __init__(self, beta: float, domain: SensitiveDomain, variant: str = "basic"):
        if beta <= 0:
            raise ValueError("beta must be > 0")
        if variant not in BETA_VARIANTS:
            raise ValueError(f"variant must be one of {BETA_VARIANTS}")
        self.beta = float(beta)
        self.variant = variant
        self.domain = domain
        self.sensitive = domain.name
        totals = np.asarray(domain.totals, dtype=np.float64)
        p = totals / totals.sum()
        with np.errstate(divide="ignore"):
            # per value: the largest gain allowed
            self.caps = np.minimum(self.beta, -np.log(p)) if variant == "enhanced" else np.full(len(p), self.beta)

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        gain = relative_gain(counts, self.domain)
        return np.all(gain <= self.caps + TOL, axis=1)

    def achieved(self, counts: np.ndarray) -> dict:
        gain = relative_gain(counts, self.domain)
        return {"beta": float(gain.max()) if gain.size else 0.0}   # the smallest beta of basic beta-likeness

    def describe(self) -> str:
        return f"{self.variant} {self.beta:g}-likeness of {self.sensitive}"


class DeltaDisclosure(Criterion):
    """delta-disclosure privacy of one sensitive attribute (Brickell and Shmatikov, KDD 2008, Def. 4).

    Args:
        delta: the bound on |ln(q_s / p_s)| (strict, > 0).
        domain: the attribute, with the whole table's counts.

    A block of 1 Cancer and 2 Flu has |ln((1/3) / (1/2))| = ln 1.5 = 0.4055 on Cancer; a block without
    Cancer is infinitely far:

    >>> d = SensitiveDomain("disease", ("Cancer", "Flu"), totals=np.array([3, 3]))
    >>> DeltaDisclosure(0.5, d).log_ratios(np.array([[1, 2], [0, 3]])).round(4).tolist()
    [0.4055, inf]
    >>> DeltaDisclosure(0.5, d).block_ok(np.array([[1, 2], [0, 3]])).tolist()
    [True, False]
    """

    name = "delta_disclosure"

    def __init__(self, delta: float, domain: SensitiveDomain):
        if delta <= 0:
            raise ValueError("delta must be > 0")
        self.delta = float(delta)
        self.domain = domain
        self.sensitive = domain.name

    def log_ratios(self, counts: np.ndarray) -> np.ndarray:
        """Per block, max_s |ln(q_s / p_s)| over the values of the table (inf when the block lacks one)."""
        p, q = _distributions(counts, self.domain)
        present = p > 0
        with np.errstate(divide="ignore"):
            r = np.abs(np.log(q[:, present]) - np.log(p[present]))
        return r.max(axis=1) if r.size else np.zeros(len(q))

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        return self.log_ratios(counts) < self.delta

    def min_distinct_values(self) -> int:
        return int((np.asarray(self.domain.totals) > 0).sum())

    def achieved(self, counts: np.ndarray) -> dict:
        r = self.log_ratios(counts)
        return {"delta": float(r.max()) if r.size else 0.0}

    def describe(self) -> str:
        return f"{self.delta:g}-disclosure privacy of {self.sensitive}"
