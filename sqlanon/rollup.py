"""Node counts rolled up from the smallest finer result already computed (Incognito's roll-up property).

LeFevre, DeWitt and Ramakrishnan ("Incognito: efficient full-domain k-anonymity", SIGMOD 2005) and the
l-diversity paper (Machanavajjhala et al., ACM TKDD 2007, Section 5) note that the frequency set of a
node can be computed from the frequency set of any node below it, not only from the table: each class
of the coarser node is a union of classes of the finer one. sqlanon's database computes the bottom
frequency set (one scan of the table, one GROUP BY); when that aggregate is small enough
(`MAX_CELLS`, without an entity key) it is fetched once, and every node's class sizes, distinct
counts and sparse sensitive counts are then rolled up in memory from the smallest cached result below
the node (its own cells: quasi-identifier codes at its levels, sensitive codes, count), instead of one
GROUP BY over the whole frequency set per node.

The cells of a node N are computed from a cached node M <= N (over the same attributes or more) by
mapping each attribute's codes from M's level to N's (a parent array per attribute and pair of levels)
and summing equal rows. `RollupCounts` answers the same questions as `FrequencySet.batch_counts` and
`FrequencySet.sparse_counts`, in the same block order, so the node checker is unchanged
(tests/test_rollup.py compares both on every node).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from .frequency import (
    FrequencySet,
    NodeCounts,
    SparseCounts,
    _dense_space,
    _runs,
    _sum_packed,
    _unpack,
    _unpack_columns,
)

# the largest bottom frequency set fetched for rolling up in memory (cells = rows of the aggregate; about
# 60 bytes each with a few attributes); larger ones are rolled up by the database, one GROUP BY per node
MAX_CELLS = 2_000_000
# cached cells across all nodes (least recently used dropped first)
CACHE_CELLS = 20_000_000


class Cells:
    """A node's frequency set: one row per distinct (codes at the node's levels, sensitive codes).

    attrs:  attribute indices (quasi-identifier order); levels: the level of each of `attrs`;
    n:      (R,) int64 counts;
    key:    (R,) the packed key of every row (codes then sensitive codes, mixed radix in `radices`),
            ascending: rows are then sorted by block and, within a block, by sensitive value; None for
            the fetched bottom, whose codes are given instead.
    The codes (`codes`, `sens`: one (R,) int64 array per attribute and per sensitive attribute) are unpacked
    from the key on first use: most rolled-up results are only read for their sizes and never need them.
    """

    def __init__(self, attrs: tuple[int, ...], levels: tuple[int, ...], n: np.ndarray,
                 key: np.ndarray | None = None, radices: list[int] | None = None,
                 codes: list[np.ndarray] | None = None, sens: list[np.ndarray] | None = None,
                 sensitive: int = 0):
        self.attrs, self.levels, self.n, self.key, self.radices = attrs, levels, n, key, radices
        self.sensitive = len(sens) if sens is not None else sensitive     # sensitive columns in the key
        self._codes, self._sens = codes, sens

    @property
    def rows(self) -> int:
        return len(self.n)

    def _columns(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """(codes, sens), unpacked from the key on first use."""
        if self._codes is None or self._sens is None:
            assert self.key is not None and self.radices is not None
            columns = _unpack_columns(self.key, self.radices)
            self._codes, self._sens = columns[:len(self.attrs)], columns[len(self.attrs):]
        return self._codes, self._sens

    @property
    def codes(self) -> list[np.ndarray]:
        return self._columns()[0]

    @property
    def sens(self) -> list[np.ndarray]:
        return self._columns()[1]


def _pack(columns: list[np.ndarray] | np.ndarray, radices: list[int], rows: int) -> np.ndarray:
    """Rows of small integer codes (one column each) packed into one int64 in mixed radix, the first
    column most significant: ascending keys are the rows in code order."""
    key = np.zeros(rows, dtype=np.int64)
    for col, radix in zip(columns, radices):
        key *= radix
        key += col
    return key


def _group(columns: list[np.ndarray], radices: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(unique packed keys in ascending order, inverse index of every row) for rows of small integer codes
    (`_pack`). A dense bincount is used when the key space is small, a sort otherwise.
    """
    rows = len(columns[0]) if columns else 0
    key = _pack(columns, radices, rows)
    space = _dense_space(radices, rows)
    if space is not None:
        present = np.zeros(space, dtype=np.int64)
        present[key] = 1
        uniques = np.flatnonzero(present)
        position = np.cumsum(present) - 1
        return uniques, position[key]
    uniques, inverse = np.unique(key, return_inverse=True)
    return uniques, inverse.reshape(-1)


class GroupKeys:
    """Packed keys of a fixed set of cells (a bottom frequency set) at any levels of any subset of its
    attributes, with fewer passes over the cells than one multiply-add per attribute.

    The attributes are split into groups of consecutive ones; for each group and each combination of its
    attributes' levels (an attribute left out counts as one value, radix 1) the group's packed codes are
    computed once and kept. A node's key is then one multiply-add per group, and it equals `_pack` of the
    node's codes in attribute order: the same keys, so the same (code) order of the classes.
    """

    # combinations of levels per group (with "left out"); and the bytes of group keys kept at most
    MAX_COMBINATIONS = 64
    MAX_BYTES = 256 * 2 ** 20

    def __init__(self, codes: list[np.ndarray], up: list[list[np.ndarray]], radix: list[list[int]],
                 tail: list[np.ndarray] | None = None, tail_radices: list[int] | None = None):
        self.codes, self.up, self.radix = codes, up, radix
        self.rows = len(codes[0]) if codes else 0
        self.groups: list[list[int]] = []
        combinations = 1
        for a in range(len(codes)):
            options = len(up[a]) + 1
            if self.groups and combinations * options <= self.MAX_COMBINATIONS:
                self.groups[-1].append(a)
                combinations *= options
            else:
                self.groups.append([a])
                combinations = options
        # columns packed after the attributes (the sensitive codes), always present
        self.tail_radices = list(tail_radices or []) if tail else []
        self.tail = _pack(tail, self.tail_radices, self.rows) if tail else None
        self.tail_radix = int(np.prod(self.tail_radices, dtype=np.int64))
        self.kept: dict[tuple, tuple[np.ndarray, int]] = {}
        self.kept_bytes = 0

    def _group(self, g: int, levels: tuple[int | None, ...]) -> tuple[np.ndarray, int]:
        known = self.kept.get((g, levels))
        if known is not None:
            return known
        columns, radices = [], []
        for a, level in zip(self.groups[g], levels):
            if level is not None:
                columns.append(self.up[a][level][self.codes[a]] if level else self.codes[a])
                radices.append(self.radix[a][level])
        out = (_pack(columns, radices, self.rows), int(np.prod(radices, dtype=np.int64)))
        if self.kept_bytes + 8 * self.rows <= self.MAX_BYTES:
            self.kept[(g, levels)] = out
            self.kept_bytes += 8 * self.rows
        return out

    def groups_used(self, attrs: tuple[int, ...]) -> int:
        """How many groups hold one of `attrs` (the multiply-adds of their key)."""
        present = set(attrs)
        return sum(1 for members in self.groups if present.intersection(members))

    def key(self, attrs: tuple[int, ...], levels: tuple[int, ...]) -> tuple[np.ndarray, list[int]]:
        """(every cell's packed key, the radices) at `levels` of `attrs` (ascending attribute indices),
        followed by the tail's columns."""
        at = dict(zip(attrs, levels))
        key: np.ndarray | None = None
        for g, members in enumerate(self.groups):
            combo = tuple(at.get(a) for a in members)
            if all(level is None for level in combo):
                continue
            part, radix = self._group(g, combo)
            key = part.copy() if key is None else key * radix + part
        if key is None:
            key = np.zeros(self.rows, dtype=np.int64)
        if self.tail is not None:
            key = key * self.tail_radix + self.tail
        return key, [self.radix[a][lv] for a, lv in zip(attrs, levels)] + self.tail_radices


class RollupCounts:
    """Node counts from cached, rolled-up frequency sets held in memory (see the module docstring)."""

    def __init__(self, fs: FrequencySet, data: dict[str, np.ndarray]):
        self.fs = fs
        self.names = [q.name for q in fs.qis]
        self.index = {name: i for i, name in enumerate(self.names)}
        # per attribute and level: level-0 code -> code at that level; and the number of codes per level
        self.up: list[list[np.ndarray]] = []
        self.radix: list[list[int]] = []
        for q in fs.qis:
            codes = q.hierarchy.codes()
            per_level = []
            for j in range(q.height + 1):
                arr = np.zeros(int(codes[0].max()) + 1, dtype=np.int64)
                arr[codes[0]] = codes[j]
                per_level.append(arr)
            self.up.append(per_level)
            self.radix.append([int(c.max()) + 1 for c in codes])
        self.m = [s.domain.size for s in fs.sensitives]
        everything = tuple(range(len(self.names)))
        bottom_codes = [np.asarray(data[f"q{i}"], dtype=np.int64) for i in everything]
        sens = [np.asarray(data[s.col], dtype=np.int64) for s in fs.sensitives]
        self.bottom = Cells(everything, (0,) * len(self.names), np.asarray(data["cnt"], dtype=np.int64),
                            codes=bottom_codes, sens=sens)
        self.bottom_keys = GroupKeys(bottom_codes, self.up, self.radix, sens, self.m)
        # k-anonymity needs only class sizes: a second hierarchy of results without the sensitive codes,
        # whose bottom has one cell per distinct combination of quasi-identifier values
        self.bottom_sizes = self._roll(self.bottom, everything, (0,) * len(self.names), with_sensitive=False)
        self.sizes_keys = GroupKeys(self.bottom_sizes.codes, self.up, self.radix)
        self.cache: OrderedDict[tuple, Cells] = OrderedDict()
        self.cached_cells = 0
        self.rolled_from_bottom = 0
        self.rolled_from_cache = 0

    @staticmethod
    def open(fs: FrequencySet) -> RollupCounts | None:
        """A RollupCounts over the frequency set, or None when it is too large or counts persons."""
        if fs.entity or fs.bottom_rows > MAX_CELLS:
            return None
        return RollupCounts(fs, fs.fetch_bottom())

    # -- rolling up ------------------------------------------------------------------------------
    def _parent(self, attr: int, lo: int, hi: int) -> np.ndarray:
        """Code at level `lo` -> code at level `hi` of one attribute (`FrequencySet.parent_codes`)."""
        return self.fs.parent_codes(self.names[attr], lo, hi)

    def _source(self, attrs: tuple[int, ...], levels: tuple[int, ...], with_sensitive: bool) -> Cells:
        """The cheapest result to roll the node up from: a cached direct specialization, the attributes' own
        bottom (cached when its node was asked for), or the bottom frequency set, whose kept group keys make
        a roll-up a few passes over its rows (`GroupKeys`); each costed in passes over its rows."""
        full = self.bottom if with_sensitive else self.bottom_sizes
        options = [full]
        for i, lvl in enumerate(levels):
            if lvl:
                below = self.cache.get((attrs, levels[:i] + (lvl - 1,) + levels[i + 1:], with_sensitive))
                if below is not None:
                    options.append(below)
        if len(attrs) < len(self.names) and any(levels):
            own = self.cache.get((attrs, (0,) * len(attrs), with_sensitive))
            if own is not None:
                options.append(own)
        return min(options, key=lambda src: self._roll_cost(src, attrs))

    def _keys_of(self, src: Cells) -> GroupKeys | None:
        """The kept group keys of `src` when it is a bottom (with or without the sensitive codes), else None."""
        if src is self.bottom:
            return self.bottom_keys
        if src is getattr(self, "bottom_sizes", None):          # None while __init__ builds it
            return self.sizes_keys
        return None

    def _roll_cost(self, src: Cells, attrs: tuple[int, ...]) -> int:
        """Passes over `src`'s rows times its rows: from a bottom, one multiply-add per group of attributes
        used and the sum; else a gather and a multiply-add per attribute, the sum, and unpacking its codes
        when no roll-up has read them yet."""
        keys = self._keys_of(src)
        if keys is not None:
            return src.rows * (keys.groups_used(attrs) + 3)
        unpack = 0 if src._codes is not None else len(src.attrs) + src.sensitive
        return src.rows * (2 * len(attrs) + 3 + unpack)

    def cells(self, levels: dict[str, int], with_sensitive: bool = True) -> Cells:
        """The node's frequency set (with the sensitive codes, or sizes only), rolled up and cached."""
        pairs = sorted((self.index[a], int(v)) for a, v in levels.items())
        attrs, lv = tuple(a for a, _ in pairs), tuple(v for _, v in pairs)
        key = (attrs, lv, with_sensitive)
        hit = self.cache.get(key)
        if hit is not None:
            self.cache.move_to_end(key)
            return hit
        src = self._source(attrs, lv, with_sensitive)
        if self._keys_of(src) is not None:
            self.rolled_from_bottom += 1
        else:
            self.rolled_from_cache += 1
        out = self._roll(src, attrs, lv, with_sensitive)
        self.cache[key] = out
        self.cached_cells += out.rows
        while self.cached_cells > CACHE_CELLS and len(self.cache) > 1:
            _, dropped = self.cache.popitem(last=False)
            self.cached_cells -= dropped.rows
        return out

    def _roll(self, src: Cells, attrs: tuple[int, ...], levels: tuple[int, ...], with_sensitive: bool) -> Cells:
        """`src` rolled up to `levels` over `attrs` (a subset of its attributes, at levels no lower)."""
        m = self.m if with_sensitive else []
        keys = self._keys_of(src)
        if keys is not None:
            # from a bottom: its keys at any levels are a few multiply-adds of kept group keys
            key, radices = keys.key(attrs, levels)
            if not with_sensitive and src is self.bottom:        # the bottom's sizes-only roll-up (once)
                key, radices = key // int(np.prod(self.m, dtype=np.int64)), radices[:len(attrs)]
        else:
            where = {a: i for i, a in enumerate(src.attrs)}
            columns, radices = [], []
            for a, level in zip(attrs, levels):
                col = src.codes[where[a]]
                from_level = src.levels[where[a]]
                columns.append(self._parent(a, from_level, level)[col] if from_level != level else col)
                radices.append(self.radix[a][level])
            columns += src.sens if with_sensitive else []
            radices += m
            key = _pack(columns, radices, src.rows)
        uniques, n = _sum_packed(key, radices, src.n)
        return Cells(attrs, levels, n, uniques, radices, sensitive=len(m))

    def _blocks(self, levels: dict[str, int], cells: Cells) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """(block of every cell, unique packed block keys, the radices) with blocks in code order of `levels`."""
        where = {a: i for i, a in enumerate(cells.attrs)}
        cols, radices = [], []
        for name, level in levels.items():
            a = self.index[name]
            cols.append(cells.codes[where[a]])
            radices.append(self.radix[a][level])
        if not cols:
            return np.zeros(cells.rows, dtype=np.int64), np.zeros(1 if cells.rows else 0, dtype=np.int64), []
        if cells.key is not None and tuple(self.index[a] for a in levels) == cells.attrs:
            # the cells are sorted by their key, whose leading part is the block: blocks are runs of rows
            block_key = cells.key // int(np.prod(self.m[:cells.sensitive], dtype=np.int64))
            change = np.empty(len(block_key), dtype=bool)
            change[:1] = True
            np.not_equal(block_key[1:], block_key[:-1], out=change[1:])
            return np.cumsum(change) - 1, block_key[change], radices
        uniques, inverse = _group(cols, radices)
        return inverse, uniques, radices

    # -- the questions the node checker asks -------------------------------------------------------
    def batch_counts(self, nodes: list[dict[str, int]], distinct: Sequence[str] = ()) -> list[NodeCounts]:
        """Like `FrequencySet.batch_counts`: block sizes, and distinct values of `distinct` per block."""
        empty = np.zeros((0, 0), dtype=np.int64)
        sens_index = {s.name: j for j, s in enumerate(self.fs.sensitives)}
        out = []
        for levels in nodes:
            cells = self.cells(levels, with_sensitive=bool(distinct))
            if not distinct:                 # sizes-only cells are the classes themselves
                out.append(NodeCounts(empty, cells.n))
                continue
            block, uniques, _ = self._blocks(levels, cells)
            sizes = np.bincount(block, weights=cells.n, minlength=len(uniques)).astype(np.int64)
            dist = {}
            for name in distinct:
                j = sens_index[name]
                pairs, _ = _group([block, cells.sens[j]], [len(uniques), self.m[j]])
                dist[name] = np.bincount(pairs // self.m[j], minlength=len(uniques)).astype(np.int64)
            out.append(NodeCounts(empty, sizes, distinct=dist))
        return out

    def _in_order(self, levels: dict[str, int]) -> bool:
        """Are the node's attributes given in quasi-identifier order (the column order of the cells)?"""
        idx = [self.index[a] for a in levels]
        return bool(idx) and idx == sorted(idx)

    def node_counts(self, levels: dict[str, int], sensitive: Sequence[str] = ()) -> NodeCounts | None:
        """Like `FrequencySet.node_counts` without `refine`: block codes, sizes and dense (B, m) counts of
        the `sensitive` attributes, blocks in code order; None for a node it cannot answer."""
        if not self._in_order(levels):
            return None
        if not sensitive:                 # sizes-only cells are the classes themselves, in code order
            cells = self.cells(levels, with_sensitive=False)
            return NodeCounts(np.column_stack(cells.codes), cells.n.copy())
        cells = self.cells(levels)
        block, uniques, radices = self._blocks(levels, cells)
        sizes = np.bincount(block, weights=cells.n, minlength=len(uniques)).astype(np.int64)
        sens_index = {s.name: j for j, s in enumerate(self.fs.sensitives)}
        dense = {}
        for name in sensitive:
            j = sens_index[name]
            matrix = np.zeros((len(uniques), self.m[j]), dtype=np.int64)
            np.add.at(matrix, (block, cells.sens[j]), cells.n)
            dense[name] = matrix
        return NodeCounts(_unpack(uniques, radices), sizes, dense)

    def kl_terms(self, levels: dict[str, int], block_codes: np.ndarray, ok: np.ndarray
                 ) -> tuple[float, np.ndarray] | None:
        """The node-dependent terms of the KL-divergence (`sqlanon.metrics.kl_divergence`), in memory:
        sum of g ln g over the generalized cells (block, sensitive values) of the blocks kept, and the
        suppressed rows' counts per combination of sensitive values. `block_codes` and `ok` are the node
        result's blocks (code order) and which are kept; None when they are not this node's blocks."""
        if not self._in_order(levels):
            return None
        cells = self.cells(levels)
        block, uniques, radices = self._blocks(levels, cells)
        key = _pack(block_codes.T, radices, len(block_codes))
        if len(ok) != len(uniques) or not np.array_equal(key, uniques):
            return None
        keep = ok[block]
        g = cells.n[keep].astype(np.float64)
        kept = float((g * np.log(g)).sum())
        gone = ~keep
        if not gone.any():
            return kept, np.zeros(0, dtype=np.int64)
        _, inverse = _group([c[gone] for c in cells.sens], list(self.m))
        return kept, np.bincount(inverse, weights=cells.n[gone]).astype(np.int64)

    def sparse_counts(self, nodes: list[dict[str, int]], sensitive: str) -> list[SparseCounts]:
        """Like `FrequencySet.sparse_counts`: (block, value, count) rows, blocks in code order."""
        j = next(i for i, s in enumerate(self.fs.sensitives) if s.name == sensitive)
        m = self.m[j]
        out = []
        for levels in nodes:
            cells = self.cells(levels)
            block, uniques, radices = self._blocks(levels, cells)
            if cells.key is not None and cells.sensitive == 1 and self._in_order(levels):
                # one sensitive attribute: the cells are the (block, value) pairs already, in that order
                value, counts = cells.sens[0], cells.n
                starts = np.append(np.flatnonzero(np.diff(block, prepend=-1)), len(block)).astype(np.int64)
            else:
                pairs, inverse = _group([block, cells.sens[j]], [len(uniques), m])
                counts = np.bincount(inverse, weights=cells.n, minlength=len(pairs)).astype(np.int64)
                blk, value = np.divmod(pairs, m)
                starts = _runs(blk[:, None])
            out.append(SparseCounts(_unpack(uniques, radices), starts, value, counts, m))
        return out


def counts_source(fs: FrequencySet) -> RollupCounts | FrequencySet:
    """What answers `batch_counts` and `sparse_counts` for the node checker: node counts rolled up in memory
    from cached finer results when the frequency set is small (`RollupCounts`), else the frequency set itself
    (one GROUP BY per node in the database). Chosen once per frequency set."""
    source = fs._counts_source
    if source is None:
        source = fs._counts_source = (RollupCounts.open(fs) if fs.rollup else None) or fs
    return source
