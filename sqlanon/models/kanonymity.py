"""k-anonymity (Samarati & Sweeney; TKDD l-diversity paper, Section 2, Definition 2.3).

A table is k-anonymous when every q*-block holds at least k rows. Monotone under generalization:
merging two blocks of size >= k gives a block of size >= k.
"""
from __future__ import annotations

import numpy as np

from .base import Criterion


def block_sizes(counts: np.ndarray) -> np.ndarray:
    """Rows per block: the row sums of the (B, m) counts matrix.

    Args:
        counts: (B, m) rows of each q*-block (row) holding each sensitive value (column).

    Returns:
        (B,) the size of each block.

    >>> block_sizes(np.array([[2, 1, 0], [0, 1, 0], [3, 0, 3]])).tolist()
    [3, 1, 6]
    """
    return np.asarray(counts).sum(axis=1)


def k_anonymity(counts: np.ndarray) -> int:
    """The k the blocks achieve: the size of the smallest block (0 for no blocks) (Sweeney, "k-anonymity: a
    model for protecting privacy", IJUFKS 2002).

    Args:
        counts: (B, m) rows of each block holding each sensitive value.

    Returns:
        The smallest block's size.

    >>> k_anonymity(np.array([[2, 1, 0], [0, 1, 0], [3, 0, 3]]))
    1
    """
    sizes = block_sizes(counts)
    return int(sizes.min()) if sizes.size else 0


class KAnonymity(Criterion):
    """k-anonymity: every q*-block holds at least k rows (a person is hidden among k).

    Args:
        k: the smallest block size allowed.

    >>> counts = np.array([[2, 1, 0], [0, 1, 0], [3, 0, 3]])    # 3 blocks of 3, 1 and 6 rows
    >>> KAnonymity(2).block_ok(counts).tolist()
    [True, False, True]
    >>> KAnonymity(2).achieved(counts)
    {'k': 1}
    """

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
