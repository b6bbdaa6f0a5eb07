"""The one small interface every privacy model implements (after ARX's `criteria` package).

A lattice node's query returns, for each q*-block (an equivalence class of the generalized
quasi-identifier), the number of rows holding each sensitive value. The engine hands a model that
result as a dense counts matrix::

    counts[b, s] = rows of block b whose sensitive value has code s      shape (B, m), int64

Sensitive values are dictionary-encoded as codes 0..m-1 in the order of `SensitiveDomain.values`.
A model answers, for every block at once (vectorized numpy), whether that block satisfies it;
blocks that fail may be suppressed within the policy's budget (see `sqlanon.lattice`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

import numpy as np


@dataclass(frozen=True)
class SensitiveDomain:
    """The dictionary of one sensitive attribute.

    values:  the labels, index = code. Numeric attributes are in ascending numeric order (so the
             ordered EMD distance can use code order); categorical ones in ascending label order.
    levels:  optional hierarchy for the hierarchical EMD ground distance: an int array of shape
             (H + 1, m); levels[h, s] is the code of the ancestor of value s at level h
             (levels[0] = arange(m), levels[H] = all zeros, the root).
    numeric: whether the values are numbers (enables the ordered distance).
    aliases: the other texts of a value whose column's type calls them equal (-0.0 beside 0.0), with its code.
    """

    name: str
    values: tuple
    levels: np.ndarray | None = None
    numeric: bool = False
    # the whole table's distribution of the attribute (counts per code), for t-closeness
    totals: np.ndarray | None = field(default=None, compare=False)
    # the other texts of a value (-0.0 beside 0.0 of a float column: `FrequencySet._value_classes`) -> its code
    aliases: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def size(self) -> int:
        return len(self.values)

    def code(self, label) -> int:
        """The code of a sensitive value given by its label (as written in a policy)."""
        for i, v in enumerate(self.values):
            if v == label or str(v) == str(label):
                return i
        if str(label) in self.aliases:
            return self.aliases[str(label)]
        if self.numeric and isinstance(label, (int, float)) and not isinstance(label, bool):
            # a number as YAML reads it (1.50 -> 1.5) names the value of a DECIMAL column the database writes 1.50;
            # a text must be one the column holds ("0" is no value of a DOUBLE column holding 0.0)
            want = _decimal(label)
            if want is not None:
                for i, v in enumerate(self.values):
                    if _decimal(v) == want:
                        return i
        raise KeyError(label)


def _decimal(value) -> Decimal | None:
    """`value` (a number or its text) as an exact decimal, or None when it is no finite number."""
    try:
        d = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    return d if d.is_finite() else None


def counts_matrix(counts, dtype=np.float64, check_negative: bool = False) -> np.ndarray:
    """Per-block counts as a 2-D array (B, m) of `dtype` (None: as given); a 1-D array is one block."""
    a = np.asarray(counts)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"counts must have shape (blocks, values); got {a.shape}")
    if check_negative and a.size and a.min() < 0:
        raise ValueError("counts must be non-negative")
    return a if dtype is None else a.astype(dtype, copy=False)


class Criterion(ABC):
    """A privacy model evaluated per q*-block.

    Subclasses set `name` and implement `block_ok`. `needs_sensitive` is False for models that
    only need block sizes (k-anonymity): the engine then may pass a (B, 1) matrix of sizes.
    `monotone` says whether the model is preserved when blocks merge (generalization property),
    which Incognito's pruning relies on.
    """

    name: str = "criterion"
    needs_sensitive: bool = True
    monotone: bool = True
    # which sensitive attribute the counts must be about (None: the policy's first one)
    sensitive: str | None = None
    # multi-attribute l-diversity (TKDD Def. 4.6): the engine evaluates this criterion on blocks
    # refined by the values of the *other* sensitive attributes (q*-block, other sensitive values),
    # and a q*-block passes when every one of its refined blocks passes
    multi_attribute: bool = False

    @abstractmethod
    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        """Boolean array of shape (B,): does each block satisfy the model?"""

    def min_distinct_values(self) -> int:
        """A necessary condition: a block with fewer distinct sensitive values fails this model (1: no bound).

        Together with `min_block_size` it lets the node checker judge a node from one cheap query (block
        sizes and distinct counts, no per-value counts). "Rows in blocks below the bounds" can only shrink
        under generalization (a merged block has at least the rows and the values of each part), so the
        bounds also give a monotone necessary condition when suppression makes the model itself non-monotone.
        """
        return 1

    def min_block_size(self) -> int:
        """A necessary condition on block sizes: a block with fewer rows fails this model (1: no bound).

        By default the distinct-value bound (a block holds at least as many rows as values). That is only
        sound when a block's size bounds its number of distinct values, which an entity key breaks (one
        person may hold several values); the checker then uses this bound for k-anonymity only.
        """
        return self.min_distinct_values()

    def achieved(self, counts: np.ndarray) -> dict:
        """The values the table achieves (for `sqlanon check` and the manifest), over all blocks."""
        return {}

    def achieved_in_profile(self) -> bool:
        """Does `models.profile.achieved_profile` report every key `achieved` returns? The profile sets its own
        keys first and keeps them, so it then skips this criterion's `achieved` (a pass over every block)."""
        return False

    def describe(self) -> str:
        return self.name
