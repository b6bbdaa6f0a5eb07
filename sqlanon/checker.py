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
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

from .frequency import FrequencySet, NodeCounts
from .models.base import Criterion
from .models.kanonymity import KAnonymity
from .models.ldiversity import TOL, DistinctLDiversity, EntropyLDiversity
from .models.risk import TableCriterion, enforce_table_criteria
from .rollup import counts_source

# rows of sparse counts one statement may return (a node's sparse counts have at most as many rows as
# the wide frequency set, so a batch of Adult nodes fits 48 to a statement, a 4.6-million-row table one)
SPARSE_ROWS_PER_STATEMENT = 2_000_000
# rows of the wide frequency set one statement of node verdicts may read, over all its nodes (each node's
# GROUP BYs hold at most that many groups: this bounds the statement's memory as the above bounds the transfer)
VERDICT_ROWS_PER_STATEMENT = 20_000_000
# witness checks (`satisfied_many`): for nodes whose sample of 4,096 cells has at most this many collisions
# (about 260,000 blocks or more if alike in size: 4096**2 / (2 * 32)), this many nodes per statement (each a
# filtered scan). A check costs about 0.7 s at 100 M rows of Lands End, a class-size pass 1 to 4.7 s; of the
# 55 nodes the search sized there, the check proved failing 6 of the 10 with at most 32 collisions, 14 of
# all 55 (ad hoc, benchmarks/RESULTS-rows.md)
WITNESS_COLLISIONS = 32
WITNESS_BATCH = 8
# where the database judges the nodes (`verdicts_in_database`), a node whose hierarchies allow so few blocks
# that they would average at least this many times the smallest allowed block is judged at once, without
# the class-size pass first: that pass pays for the nodes with blocks too small, which such a node seldom
# has, and the verdict query tests the sizes too
SIZE_PASS_SKIP_RATIO = 100
# the grouped verdict (`FrequencySet.node_verdicts` with `value_groups`): the sensitive values in this many
# groups (at least 2 l for entropy l-diversity), where the attribute has more than twice as many values;
# with fewer, a (block, group) cell is not much rarer than a (block, value) one. Lands End at 10 M rows
# (cost's 147 values, l = 6): the search's grouped verdicts took 9.3 / 9.2 s with 12 groups, 10.0 / 10.0 s
# with 16 (in-process, two runs each); fewer groups leave more blocks to judge exactly (at 100 M rows, up
# to 47 of a minimal node's blocks with 12 groups, 12 with 16, 1,728 with 8)
VALUE_GROUPS = 12


@dataclass(frozen=True)
class NodeStats:
    """What the optimum search needs of a full lattice node, from its class sizes (see `sqlanon.optimum`).

    sum_sq and min_size cover every class, kept or not (they give the metrics' lower bounds for the node
    and every node above it); the kept_* fields and `suppressed` are those of the release the node would
    give, known only when `satisfied` is not None.
    """

    sum_sq: float
    min_size: int
    classes: int
    satisfied: bool | None = None
    kept_rows: int = 0
    kept_classes: int = 0
    kept_sum_sq: float = 0.0
    suppressed: int = 0
    # the sum of c ln c over the kept blocks' cells (block, sensitive value; c its count) where the verdict query
    # gave it and the table has one sensitive attribute: the node-dependent part of its KL-divergence
    # (`metrics.kl_divergence`), which then needs no query of its own. Not part of the stats' identity.
    kept_xlogx: float | None = field(default=None, compare=False)

    @staticmethod
    def of(sizes: np.ndarray, ok: np.ndarray | None, satisfied: bool | None) -> NodeStats:
        sizes = np.asarray(sizes, dtype=np.int64)
        sq = sizes.astype(np.float64) ** 2
        sum_sq, min_size, classes = float(sq.sum()), int(sizes.min()) if len(sizes) else 0, len(sizes)
        if ok is None or satisfied is None:
            return NodeStats(sum_sq, min_size, classes)
        return NodeStats(sum_sq, min_size, classes, satisfied=satisfied, kept_rows=int(sizes[ok].sum()),
                         kept_classes=int(ok.sum()), kept_sum_sq=float(sq[ok].sum()), suppressed=int(sizes[~ok].sum()))


@dataclass
class NodeResult:
    levels: dict[str, int]
    satisfied: bool
    counts: NodeCounts
    ok: np.ndarray                # per block: satisfies every criterion
    suppressed_rows: int
    # the sum of c ln c over the kept blocks' (block, value) cells, when known: from the node's stats
    # (`NodeStats.kept_xlogx`), or from its counts streamed for its profile (`Anonymization._profile_and_xlogx`)
    kept_xlogx: float | None = None

    @property
    def classes(self) -> int:
        return int(self.ok.sum()) if self.suppressed_rows else int(len(self.ok))

    @property
    def released_sizes(self) -> np.ndarray:
        return self.counts.sizes[self.ok] if self.suppressed_rows else self.counts.sizes


def _all_decided(out: list[bool | None]) -> list[bool]:
    """Every node's verdict, once each has one."""
    if any(v is None for v in out):
        raise RuntimeError("a node was left undecided")        # a bug, not a user error
    return [bool(v) for v in out]


class StatsByBlocks(dict[tuple[int, ...], NodeStats]):
    """`NodeStats` by full node, where nodes whose levels split every attribute's values alike
    (`HierarchyTable.same_blocks`) share one entry: they have the same blocks, so the same stats. The search
    infers such nodes instead of querying them; the optimum search then finds their stats under the node
    that was queried."""

    def __init__(self, same_blocks: list[list[int]]):
        super().__init__()
        self._same = same_blocks

    def key(self, node: tuple[int, ...]) -> tuple[int, ...]:
        """The lowest node with the same blocks as `node`: the entry it shares."""
        return tuple(self._same[a][level] for a, level in enumerate(node))

    def __getitem__(self, node):
        return super().__getitem__(self.key(node))

    def __setitem__(self, node, stats) -> None:
        super().__setitem__(self.key(node), stats)

    def __contains__(self, node) -> bool:
        return super().__contains__(self.key(node))

    def get(self, node, default=None):
        return super().get(self.key(node), default)

    def setdefault(self, node, default=None):
        return super().setdefault(self.key(node), default)


def suppression_budget(max_suppression: float, rows: int) -> int:
    """The rows (persons with an entity key) a release may suppress: floor(max_suppression x rows), the share
    read as the decimal it is written as. A float product with a slack of 1e-9 gave 28,999,999 for 0.29 of
    100,000,000 rows (the product's error is about 4e-9 there).

    Examples:
        >>> suppression_budget(0.29, 100_000_000), suppression_budget(0.01, 45_222), suppression_budget(0.07, 100)
        (29000000, 452, 7)
    """
    return int(math.floor(Decimal(repr(float(max_suppression))) * rows))


class NodeChecker:
    def __init__(self, fs: FrequencySet, criteria: list[Criterion], max_suppression: float = 0.0):
        self.fs = fs
        self.criteria = list(criteria)
        self.max_suppression = float(max_suppression)
        self.budget = suppression_budget(self.max_suppression, fs.rows)
        first = fs.sensitives[0].name if fs.sensitives else None
        # the sensitive attribute each model judges (a model without one judges the first); none without any
        self.attribute: dict[int, str] = {id(c): a for c in self.criteria if (a := c.sensitive or first) is not None}
        self.needed: list[str] = []
        for c in self.criteria:
            if c.needs_sensitive and not getattr(c, "multi_attribute", False):
                a = self.attribute[id(c)]
                if a not in self.needed:
                    self.needed.append(a)
        # models of the whole release's class sizes (average risk, records at risk): applied after the
        # per-block models, they may suppress further classes (`sqlanon.models.risk`)
        self.table_criteria = [c for c in self.criteria if isinstance(c, TableCriterion)]
        # models judged against a population table's classes at the node (k-map): need block codes
        self.population_criteria = [c for c in self.criteria if hasattr(c, "population_ok")]
        self.evaluated = 0
        self.witnessed = 0      # nodes proven failing by a witness check (`satisfied_many`)
        # nodes (`StatsByBlocks.key` of their full node) a witness check did not prove failing: the same sample
        # would say the same again (the two-pass search meets a presumed node a second time)
        self._witness_inconclusive: set[tuple[int, ...]] = set()
        self.presumed = 0       # nodes presumed to satisfy without their sensitive counts (`satisfied_many`)
        # full lattice node (levels in quasi-identifier order) -> its NodeStats, for every full node whose
        # class sizes a query returned: the optimum search reads bounds and metrics from here for free
        self.stats: StatsByBlocks = StatsByBlocks([q.hierarchy.same_blocks() for q in fs.qis])
        self._qi_names = tuple(q.name for q in fs.qis)
        # each attribute's number of labels per level (`_blocks_at_most`)
        self._label_counts = {q.name: q.hierarchy.domain_sizes() for q in fs.qis}
        # a node over a subset of the attributes (Incognito's smaller lattices) has exactly the blocks of the
        # full node with every other attribute at its top level, when each such top is one root value
        self._root_tops = {q.name: q.height for q in fs.qis if self._label_counts[q.name][q.height] == 1}

    def _record(self, levels: dict[str, int], sizes: np.ndarray, ok: np.ndarray | None,
                satisfied: bool | None) -> None:
        key = self._record_key(levels)
        if key is not None:
            self.stats[key] = NodeStats.of(sizes, ok, satisfied)

    def _full_node(self, levels: dict[str, int]) -> tuple[int, ...] | None:
        """The full node with these levels' blocks, or None: a projection (fewer attributes) equals the full
        node with every other attribute at its top level when each such top is one root value; not with
        population models, which read the levels themselves."""
        projection = len(levels) != len(self._qi_names)
        if projection and (self.population_criteria
                           or not all(n in levels or n in self._root_tops for n in self._qi_names)):
            return None
        return tuple(levels[n] if n in levels else self._root_tops[n] for n in self._qi_names)

    def _record_key(self, levels: dict[str, int]) -> tuple[int, ...] | None:
        """The full node whose stats these levels' results give, when they are to be recorded (not yet known
        with a verdict), else None."""
        # a projection is recorded as the full node it equals: the search infers that node from it, and the
        # optimum search then reads its sizes here instead of querying it again
        key = self._full_node(levels)
        if key is None:
            return None
        known = self.stats.get(key)
        return key if known is None or known.satisfied is None else None

    def _sizes_pass(self, levels: dict[str, int], min_size: int) -> bool:
        """Are these levels' class sizes known, from an earlier query of them or of a node with the same
        blocks, to be at least `min_size` each?"""
        key = self._full_node(levels)
        known = self.stats.get(key) if key is not None else None
        return known is not None and known.classes > 0 and known.min_size >= min_size

    @property
    def prunable(self) -> bool:
        """Is the whole predicate monotone, so Incognito may prune with it directly?

        Without suppression every model here is (Theorems 5.2-5.4, t-closeness's generalization property).
        With suppression only models decided by the size and distinct-value bounds are (k-anonymity,
        distinct l-diversity): see `monotone_part`. So too with an entity key: a merged class counts each
        person once, so its count of a value is the union of its parts' persons, not their sum, and its
        distribution is no mixture of theirs. Persons {1,2} with x and {3,4} with y in one class, {5,6} with
        x and {3,4} with y in another: each has entropy ln 2, merged 4:2 has 0.637. A class's persons and its
        values only grow under a union, so k and distinct l stay monotone.
        """
        if not all(c.monotone for c in self.criteria):
            return False
        return (self.budget == 0 and not self.fs.entity) or self.decided_by_bounds

    @property
    def decided_by_bounds(self) -> bool:
        """Is every criterion exactly a bound on block sizes or distinct values (k, distinct l)?"""
        return all(isinstance(c, KAnonymity) or (type(c) is DistinctLDiversity and not c.multi_attribute)
                   for c in self.criteria)

    @property
    def min_block_size(self) -> int:
        """Blocks with fewer rows fail some criterion (see `Criterion.min_block_size`); 1 when no bound."""
        sizes = [c.min_block_size() for c in self.criteria
                 if isinstance(c, KAnonymity) or not self.fs.entity]
        return max(sizes, default=1)

    @property
    def min_distinct(self) -> dict[str, int]:
        """Sensitive attribute -> the fewest distinct values a block needs (`Criterion.min_distinct_values`),
        for the attributes where that is more than 1. Sound under an entity key too."""
        out: dict[str, int] = {}
        for c in self.criteria:
            d = c.min_distinct_values()
            if d > 1:
                a = self.attribute[id(c)]
                out[a] = max(out.get(a, 1), d)
        return out

    def monotone_part(self) -> NodeChecker:
        """A necessary, monotone condition: blocks of at least `min_block_size` rows and `min_distinct` values,
        with the same suppression budget.

        A merged block is too small, or has too few values, only when each of its parts did, so the rows in
        such blocks can only shrink under generalization, whatever is suppressed: Incognito may prune with
        this condition, then every node passing it is checked with the whole policy (`sqlanon.search`).
        """
        parts: list[Criterion] = [KAnonymity(self.min_block_size)] if self.min_block_size > 1 else []
        for attribute, l in self.min_distinct.items():
            distinct = DistinctLDiversity(l)
            distinct.sensitive = attribute
            parts.append(distinct)
        return NodeChecker(self.fs, parts, self.max_suppression)

    def evaluate(self, levels: dict[str, int], known_satisfying: bool = False,
                 counts: NodeCounts | None = None) -> NodeResult:
        """One node, with its block codes (for metrics, suppression and the release).

        The result's counts carry block codes and sizes; the sensitive counts are judged in chunks and
        not kept (a node of millions of blocks would not fit as a dense matrix). `known_satisfying`: the
        search already found that the node satisfies; with no suppression budget every block then
        passes, so only block codes and sizes are fetched, or taken from `counts` where the caller has
        them already (`Anonymization` streams a large chosen node's counts for its profile).
        """
        self.evaluated += 1
        if known_satisfying and self.budget == 0:
            counts = counts if counts is not None else self.fs.node_counts(levels)
            ok = np.ones(len(counts.sizes), dtype=bool)
            # what the search's verdict query already summed over this node's cells (every block kept here)
            known = self.stats.get(tuple(levels[n] for n in self._qi_names))
            xlogx = known.kept_xlogx if known is not None and known.satisfied else None
            self._record(levels, counts.sizes, ok, True)
            return NodeResult(dict(levels), True, counts, ok, 0, xlogx)
        if not self.needed:
            return self._judge(levels, self.fs.node_counts(levels))
        return self._judge_sparse_many([levels])[0]

    def satisfied_many(self, nodes: list[dict[str, int]], batch: int = 48, bounds_hold: bool = False,
                       witness: bool = False, presume: bool = False) -> list[bool]:
        """Do these nodes satisfy the policy? Evaluated `batch` nodes per statement.

        0. With `witness` (a search that needs no stats of the nodes that fail), where the nodes are judged
           in the database: a node whose blocks a sample suggests are millions (`witness_collisions`) is first
           judged on the blocks its sampled cells fall in (`_fails_on_witnesses`), one filtered scan; when
           those alone hold more rows that must be suppressed than the budget allows, it fails, and its full
           GROUP BY (tens of millions of groups at 100 M rows) is never run. Nothing is recorded for it.

        1. Block sizes (one GROUP BY per node, no per-value counts), and for k-anonymity and distinct
           l-diversity alone the distinct-value counts too, which decide those exactly; for the other models
           the size bound (`min_block_size`) is a necessary condition: a node whose too-small blocks hold
           more rows than the suppression budget fails here. Skipped with `bounds_hold` (the search already
           checked the bounds).
           Where the database judges the nodes, a node whose class sizes are known to pass (queried
           before, for it or a node of the same blocks) and a node of few possible blocks
           (`SIZE_PASS_SKIP_RATIO`) skip this pass: the verdict query tests the sizes too.
        2. The survivors' sensitive counts, fetched sparse (block, value, count) and judged in chunks,
           as many nodes per statement as fit a row budget.

        With `presume` (the first pass of `sqlanon.search`'s two-pass search, where the database judges the
        nodes), a node of two or more attributes that no witness and no size bound proves failing is
        returned True without step 2: presumed to satisfy, a verdict the second pass checks wherever it
        matters (`presumes` says when this applies). A node of one attribute is judged in full: it has few
        blocks, and its failing prunes every node with its level.
        """
        if self.has_multi_attribute or self.population_criteria:   # need block codes: one node at a time
            return [bool(self.evaluate(levels).satisfied) for levels in nodes]
        self.evaluated += len(nodes)
        out: list[bool | None] = [None] * len(nodes)
        todo = list(range(len(nodes)))
        if witness and self.verdicts_in_database and self.fs.counts.samples_rows:
            keys = [self._full_node(levels) for levels in nodes]
            entries = [self.stats.key(k) if k is not None else None for k in keys]
            likely = [i for i in todo if entries[i] not in self._witness_inconclusive
                      and self.fs.witness_collisions(nodes[i]) <= WITNESS_COLLISIONS]
            for i in range(0, len(likely), WITNESS_BATCH):
                chunk = likely[i:i + WITNESS_BATCH]
                for idx, fails in zip(chunk, self._fails_on_witnesses([nodes[j] for j in chunk])):
                    if fails:
                        out[idx] = False
                        self.witnessed += 1
                    elif (entry := entries[idx]) is not None:
                        self._witness_inconclusive.add(entry)
            todo = [i for i in todo if out[i] is None]
            if not todo:
                return _all_decided(out)
        exact = self.decided_by_bounds
        min_size = self.min_block_size
        # distinct counts cost about as much as the sparse counts themselves (a GROUP BY on block and value),
        # so they are fetched only where they decide the node: for the other models sizes filter, cheaply
        min_distinct = self.min_distinct if exact else {}
        if bounds_hold and not exact:      # these nodes passed `monotone_part`: its bounds hold already
            min_size = 1
        # no model needs sensitive counts (k with table-level risk models): the block sizes decide the node
        sizes_decide = not self.needed and not exact
        presuming = presume and self.presumes

        def presumed(idx: int) -> bool:
            if presuming and len(nodes[idx]) > 1:
                out[idx] = True
                self.presumed += 1
                return True
            return False

        if exact or sizes_decide or min_size > 1 or min_distinct:
            survivors, sized = [], todo
            if self.verdicts_in_database and not (exact or sizes_decide):
                few = self.fs.rows // (SIZE_PASS_SKIP_RATIO * min_size)
                skip = [self._blocks_at_most(nodes[i]) <= few or self._sizes_pass(nodes[i], min_size) for i in todo]
                survivors = [i for i, s in zip(todo, skip) if s]
                sized = [i for i, s in zip(todo, skip) if not s]
            for i in range(0, len(sized), batch):
                chunk = sized[i:i + batch]
                for idx, counts in zip(chunk, counts_source(self.fs).batch_counts([nodes[j] for j in chunk],
                                                                   distinct=list(min_distinct))):
                    below = counts.sizes < min_size
                    for attribute, l in min_distinct.items():
                        below |= counts.distinct[attribute] < l
                    fits = int(counts.sizes[below].sum()) <= self.budget
                    if sizes_decide:
                        out[idx] = self._judge(nodes[idx], counts).satisfied     # records the node's stats
                    elif exact or not fits:
                        if exact:
                            self._record(nodes[idx], counts.sizes, ~below, fits)
                        else:
                            self._record(nodes[idx], counts.sizes, None, None)
                        out[idx] = fits
                    elif presumed(idx):
                        self._record(nodes[idx], counts.sizes, None, None)     # its sizes, for the second pass
                    else:
                        survivors.append(idx)
            todo = sorted(survivors)
        todo = [i for i in todo if not presumed(i)]
        if not todo:
            return _all_decided(out)
        # a node's sparse counts, and the groups of its verdict query, have at most as many rows as the wide
        # frequency set: each path's row budget gives its nodes per statement
        if self.verdicts_in_database:
            limit, judge = VERDICT_ROWS_PER_STATEMENT, self._judge_in_database
        else:
            limit, judge = SPARSE_ROWS_PER_STATEMENT, self._satisfied_sparse
        per_statement = max(1, min(batch, limit // max(self.fs.wide_rows, 1)))
        for i in range(0, len(todo), per_statement):
            chunk = todo[i:i + per_statement]
            for idx, ok in zip(chunk, judge([nodes[j] for j in chunk])):
                out[idx] = ok
        return _all_decided(out)

    @property
    def presumes(self) -> bool:
        """Does `satisfied_many(presume=True)` presume nodes (`sqlanon.search`'s two-pass search)? Where the
        database judges the nodes on their sensitive counts (`verdicts_in_database`) and the size and
        distinct-value bounds do not decide them alone: there a satisfying node's verdict is an aggregation of
        the whole frequency set into (block, value) groups, which Incognito pays for every satisfying node of a
        smaller subset of the attributes, though such a node only matters to it by failing."""
        return self.verdicts_in_database and not self.decided_by_bounds and bool(self.needed)

    def _blocks_at_most(self, levels: dict[str, int]) -> int:
        """The most blocks the node can have: the product of its levels' label counts in the hierarchies."""
        return math.prod(self._label_counts[a][level] for a, level in levels.items())

    def _satisfied_sparse(self, nodes: list[dict[str, int]]) -> list[bool]:
        return [result.satisfied for result in self._judge_sparse_many(nodes)]

    @property
    def verdicts_in_database(self) -> bool:
        """Are the nodes judged by the database itself (`FrequencySet.node_verdicts`), one row per node?

        When the node counts are not rolled up in memory (a frequency set past `rollup.MAX_CELLS`) and every
        model is one the verdict query states: k-anonymity, distinct and entropy l-diversity (without
        don't-care values), all of one sensitive attribute, rows counted (no entity key). Otherwise the
        blocks' sparse counts are fetched and judged here.
        """
        if (self.fs.entity or len(self.needed) != 1 or self.table_criteria or self.population_criteria
                or counts_source(self.fs) is not self.fs):
            return False
        for c in self.criteria:
            if getattr(c, "multi_attribute", False):
                return False
            if not (isinstance(c, KAnonymity) or type(c) is DistinctLDiversity
                    or (type(c) is EntropyLDiversity and not c.dont_care_codes)):
                return False
        return True

    def verdict_thresholds(self) -> tuple[int, int, float | None]:
        """The verdict query's tests (`FrequencySet.node_verdicts`): smallest block, fewest distinct values,
        least entropy (the same test as EntropyLDiversity.block_ok: entropy >= ln l - TOL; None when l <= 1)."""
        k = max((c.k for c in self.criteria if isinstance(c, KAnonymity)), default=1)
        distinct = max((c.l for c in self.criteria if type(c) is DistinctLDiversity), default=1)
        entropy_l = max((c.l for c in self.criteria if type(c) is EntropyLDiversity), default=1.0)
        return k, distinct, (math.log(entropy_l) - TOL if entropy_l > 1 else None)

    @property
    def value_groups(self) -> int | None:
        """How many groups of the sensitive values the verdict query judges the blocks on first, or None (every
        block judged on its values at once): with entropy l-diversity, on an engine that reads a materialized
        CTE once; `VALUE_GROUPS` groups, or 2 l if more, and only for an attribute of more than twice as many
        values."""
        entropy = self.verdict_thresholds()[2]
        if entropy is None or not self.fs.counts.materializes_ctes:
            return None
        groups = max(VALUE_GROUPS, math.ceil(2 * math.exp(entropy)))
        values = next(s.domain.size for s in self.fs.sensitives if s.name == self.needed[0])
        return groups if values > 2 * groups else None

    def _fails_on_witnesses(self, nodes: list[dict[str, int]]) -> list[bool]:
        """Does each node fail on the blocks its witness cells fall in alone? Each such block is judged whole,
        so a failing one must be suppressed in any release of the node: more such rows than the budget is a
        proof that the node fails. False proves nothing (the node is then judged in full)."""
        rows = self.fs.node_verdicts(nodes, self.needed[0], *self.verdict_thresholds(), witness=True)
        return [r["suppressed"] > self.budget for r in rows]

    def _judge_in_database(self, nodes: list[dict[str, int]]) -> list[bool]:
        """Nodes judged by `FrequencySet.node_verdicts`; each one's stats recorded for the optimum search."""
        rows = self.fs.node_verdicts(nodes, self.needed[0], *self.verdict_thresholds(),
                                     value_groups=self.value_groups)
        out = []
        for levels, r in zip(nodes, rows):
            satisfied = r["suppressed"] <= self.budget
            stats = NodeStats(r["sum_sq"], int(r["min_size"]), int(r["classes"]), satisfied=satisfied,
                              kept_rows=self.fs.rows - int(r["suppressed"]), kept_classes=int(r["kept_classes"]),
                              kept_sum_sq=r["kept_sum_sq"], suppressed=int(r["suppressed"]),
                              kept_xlogx=r["kept_xl"] if len(self.fs.sensitives) == 1
                              and not math.isnan(r["kept_xl"]) else None)
            key = self._record_key(levels)
            if key is not None:
                self.stats[key] = stats
            out.append(satisfied)
        return out

    @property
    def has_multi_attribute(self) -> bool:
        return any(getattr(c, "multi_attribute", False) for c in self.criteria)

    def _judge_sparse_many(self, nodes: list[dict[str, int]]) -> list[NodeResult]:
        """Nodes judged from their sparse sensitive counts, fetched in one statement per needed attribute."""
        source = counts_source(self.fs)
        sparse = {a: source.sparse_counts(nodes, a) for a in self.needed}
        sizes = self.fs.ordered_sizes(nodes) if self.fs.entity else None
        out = []
        for pos, levels in enumerate(nodes):
            parts = {a: sparse[a][pos] for a in self.needed}
            first = parts[self.needed[0]]
            counts = NodeCounts(first.block_codes, sizes[pos] if sizes is not None else first.sizes())
            out.append(self._judge(levels, counts, parts))
        return out

    def _judge(self, levels: dict[str, int], counts: NodeCounts, sparse: dict | None = None) -> NodeResult:
        """A node from its counts: dense (`counts.sensitive` holds every attribute a criterion needs) or, with
        `sparse` (attribute -> SparseCounts), each criterion applied to bounded dense chunks of blocks."""
        ok = np.ones(len(counts.sizes), dtype=bool)
        for c in self.criteria:
            if getattr(c, "multi_attribute", False):
                ok &= self._multi_attribute_ok(c, levels, counts)
            elif c.needs_sensitive:
                attribute = self.attribute[id(c)]
                if sparse is None:
                    ok &= c.block_ok(counts.sensitive[attribute])
                else:
                    for lo, hi, dense in sparse[attribute].chunks():
                        ok[lo:hi] &= c.block_ok(dense)
            else:
                ok &= c.block_ok(counts.sizes[:, None])
        for c in self.population_criteria:
            ok &= c.population_ok(self.fs, levels, counts.block_codes, counts.sizes)
        ok = enforce_table_criteria(self.table_criteria, counts.sizes, ok)
        if not ok.all() and any(getattr(c, "delta_min", 0) > 0 for c in self.population_criteria):
            # a class suppressed for any model leaves its population class at f / F = 0 < delta_min (SIGMOD 2007,
            # Def. 3): no suppression can help (it was judged before the other models dropped the class)
            ok = np.zeros(len(ok), dtype=bool)
        suppressed = int(counts.sizes[~ok].sum())
        self._record(levels, counts.sizes, ok, suppressed <= self.budget)
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

    def check(self, names: tuple[str, ...], bounds_hold: bool = False, witness: bool = False,
              presume: bool = False):
        """A `lattice.Check`: for [(attribute indices into `names`, node)], does each satisfy?
        `bounds_hold`: the nodes are known to pass `monotone_part` (skip the bounds pass); `witness`: the
        search reads no stats of failing nodes, so witness checks may prove them failing; `presume`: nodes
        no cheap test proves failing may be presumed to satisfy (`satisfied_many`)."""
        def check(items) -> list[bool]:
            return self.satisfied_many([{names[i]: lvl for i, lvl in zip(subset, node)} for subset, node in items],
                                       bounds_hold=bounds_hold, witness=witness, presume=presume)
        return check
