"""k-anonymity (Samarati & Sweeney; TKDD l-diversity paper, Section 2, Definition 2.3).

A table is k-anonymous when every q*-block holds at least k rows. Monotone under generalization:
merging two blocks of size >= k gives a block of size >= k.
"""
from __future__ import annotations

import numpy as np

from .base import Criterion


def block_sizes(counts: np.ndarray) -> np.ndarray:
    """Rows per block: the row sums of the (B, m) counts matrix."""
    return np.asarray(counts).sum(axis=1)


def k_anonymity(counts: np.ndarray) -> int:
    """The k the blocks achieve: the size of the smallest block (0 for no blocks)."""
    sizes = block_sizes(counts)
    return int(sizes.min()) if sizes.size else 0


class KAnonymity(Criterion):
    name = "k-anonymity"
    needs_sensitive = False

    def __init__(self, k: int):
        self.k = int(k)

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        return block_sizes(counts) >= self.k

    def min_block_size(self) -> int:
        return self.k

    def achieved(self, counts: np.ndarray) -> dict:
        return {"k": k_anonymity(counts)}

    def describe(self) -> str:
        return f"{self.k}-anonymity"
