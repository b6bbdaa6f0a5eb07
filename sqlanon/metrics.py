"""Utility metrics of a generalized table (docs/DESIGN.md section 5; TKDD Section 6).

- generalization height: the sum of the node's levels (Samarati; LeFevre et al.);
- average class size: released rows / number of q*-blocks;
- discernibility (Bayardo & Agrawal): sum of squared block sizes, plus |D| for every suppressed row;
- KL-divergence (TKDD Section 6, Kifer & Gehrke): F is the empirical distribution of the original over
  Q x S; F*(x) = n(t*) / (|T| * area(t*)) spreads each generalized cell uniformly over the base cells it
  covers (area = product of the number of base values each generalized value covers); KL = sum over the
  original's cells of F(x) log(F(x) / F*(x)). Suppressed rows count as generalized to the root of every
  hierarchy.

  Computing it: with c the count of an original cell x, g the count of the generalized cell holding it
  and N the table size, KL = (1/N) [sum_x c ln c + sum_x c ln area(x) - sum_x c ln g]. The first sum is
  one aggregate over the bottom frequency set (the original's cells), the same for every node; the
  second is sum over blocks of |B| ln area(B), from the block codes the node's query returned; the third
  is sum over generalized cells of g ln g, one aggregate query returning a single number.

Monotonicity and lower bounds (what the optimum search, `sqlanon.optimum`, relies on). Let N' be any
node above N (N' >= N componentwise): each class of N' is a union of classes of N.

- height grows strictly, so the height optimum is always a minimal node.
- Without suppression (and without an entity key) the other three never decrease either:
  discernibility, because (a + b)^2 >= a^2 + b^2; average class size, because N' has no more classes
  for the same rows; KL-divergence, by the log-sum inequality below. So every satisfying node lies
  above a minimal node that is at least as good: the optimum is a minimal node.
- With suppression they are not monotone: generalizing can remove the |D| penalty of suppressed rows
  (discernibility) or drop small classes (average class size). Each still has a lower bound computed
  from N that holds for N and every node above it, suppression or not (`lower_bound`):
  - discernibility >= sum of s^2 over every class of N (kept or not): a kept class of N' costs its size
    squared, at least the sum of its parts' squares; a suppressed one costs size * |D| >= size^2.
  - average class size >= max(smallest class of N, the smallest class any model keeps): every released
    class of N' is a union of classes of N and passed the models. (0 when the budget may suppress all.)
  - KL-divergence >= the KL of N with nothing suppressed. Write KL = (1/|T|)[C + sum over generalized
    cells G of g ln(area(G)/g)] (C is the same for every node). Each cell G' of N' (a kept block and a
    sensitive value, or the root block of the suppressed rows and a sensitive value) is a disjoint union
    of cells G_j of N inside its region, so area(G') >= sum_j area(G_j), and by the log-sum inequality
    sum_j g_j ln(area_j/g_j) <= g' ln(sum_j area_j / g') <= g' ln(area(G')/g').
- With an entity key none of this holds (one person counts in every class holding a row of theirs, so a
  merged class can be smaller than the sum of its parts): no metric but height is treated as monotone and
  no bound is used; the optimum search then scores every satisfying node.
"""
from __future__ import annotations

import numpy as np

from .checker import NodeResult, NodeStats
from .frequency import FrequencySet, xlogx_by_count
from .models.ldiversity import xlogx

METRICS = ("height", "avg_class_size", "discernibility", "kl_divergence")


def height(levels: dict[str, int]) -> int:
    """Generalization height: the sum of the node's levels.

    Args:
        levels: the level of each quasi-identifier.

    Returns:
        The node's height in the lattice.

    >>> height({"zip": 2, "age": 1, "nationality": 0})
    3
    """
    return int(sum(levels.values()))


def avg_class_size(result: NodeResult) -> float:
    """Average class size: released rows over released classes (suppressed blocks left out).

    Args:
        result: a node's evaluation.

    Returns:
        The average size of the released classes (0 when none is released).

    Three blocks of 3, 2 and 1 rows, the last suppressed:

    >>> import numpy as np
    >>> from sqlanon.checker import NodeResult
    >>> from sqlanon.frequency import NodeCounts
    >>> counts = NodeCounts(block_codes=np.array([[0], [1], [2]]), sizes=np.array([3, 2, 1]))
    >>> result = NodeResult({"age": 1}, True, counts, ok=np.array([True, True, False]), suppressed_rows=1)
    >>> avg_class_size(result)          # (3 + 2) / 2
    2.5
    """
    sizes = result.released_sizes
    return float(sizes.sum() / len(sizes)) if len(sizes) else 0.0


def discernibility(result: NodeResult, table_rows: int) -> float:
    """Discernibility (Bayardo and Agrawal, ICDE 2005): the sum of the released classes' squared sizes,
    plus the table's size for every suppressed row.

    Args:
        result: a node's evaluation.
        table_rows: |D|, the rows of the table (persons with an entity key).

    Returns:
        The node's discernibility.

    >>> import numpy as np
    >>> from sqlanon.checker import NodeResult
    >>> from sqlanon.frequency import NodeCounts
    >>> counts = NodeCounts(block_codes=np.array([[0], [1], [2]]), sizes=np.array([3, 2, 1]))
    >>> result = NodeResult({"age": 1}, True, counts, ok=np.array([True, True, False]), suppressed_rows=1)
    >>> discernibility(result, table_rows=6)      # 3^2 + 2^2 + 6 * 1
    19.0
    """
    sizes = result.released_sizes.astype(np.float64)
    return float((sizes ** 2).sum() + float(table_rows) * result.suppressed_rows)


def kl_divergence(fs: FrequencySet, result: NodeResult) -> float:
    """The KL-divergence between the original table and the release of a node (TKDD Sec. 6, after Kifer
    and Gehrke): each released block's rows spread uniformly over the cells (base values) it covers,
    suppressed rows over the whole domain. From the node's cells in memory when the search rolled up
    (`sqlanon.rollup`), else one query over the wide frequency set.

    Args:
        fs: the run's frequency set.
        result: the node's result (block codes, sizes, which blocks are kept).

    Returns:
        The divergence, in nats per row (0 for the original table). The six patients at zip 130** / 148**
        and age [20, 40) / [40, 60), two blocks of 3 rows: (1/6)(4 ln 3 + 2 ln 6):

    >>> from sqlanon.anonymizer import Anonymization
    >>> from sqlanon.examples import PATIENTS_POLICY, patients_connection
    >>> with Anonymization(PATIENTS_POLICY, connection=patients_connection()) as run:
    ...     round(kl_divergence(run.fs, run.evaluate({"zip": 2, "age": 2})), 4)
    1.3297
    """
    if fs.entity:
        return _kl_over_person_cells(fs, result)
    levels = result.levels
    keep = result.ok if result.suppressed_rows else np.ones(len(result.counts.sizes), dtype=bool)
    rolled = fs.rolled_up()
    known = result.kept_xlogx is not None and not result.suppressed_rows
    terms = rolled.kl_terms(levels, result.counts.block_codes, keep) if rolled is not None and not known else None
    suppressed = None
    if known:
        # the search's verdict query summed it over the node's cells (`NodeStats.kept_xlogx`): no query; at
        # 100 M rows of Lands End that query was most of choosing the node
        kept_cells_xlogx = result.kept_xlogx
    elif terms is not None:       # the node's cells are in memory (`sqlanon.rollup`): no query
        kept_cells_xlogx, suppressed_counts = terms
    else:
        block_cols = [fs.qi(a).col(lvl) for a, lvl in levels.items()]
        sens_cols = [s.col for s in fs.sensitives]
        suppressed = fs.create_suppressed_table(result, beside_counts=True)
        kept_cells_xlogx = xlogx_by_count(fs.counts.fetchall("node_kl_terms.sql", table=fs.wide_table,
                                                             block_cols=block_cols, sens_cols=sens_cols,
                                                             suppressed=suppressed, entity=fs.entity))
    # sum over released blocks of |B| ln area(B), from the block codes the node's query returned
    log_area = np.zeros(int(keep.sum()))
    for i, (name, lvl) in enumerate(levels.items()):
        log_area += fs.log_area(name, lvl)[result.counts.block_codes[keep, i]]
    total = fs.cells_xlogx() + float((result.counts.sizes[keep] * log_area).sum()) - float(kept_cells_xlogx or 0.0)
    if suppressed:
        rows = fs.counts.fetchall("suppressed_sensitive_counts.sql", table=fs.wide_table, suppressed=suppressed,
                                   suppressed_cols=block_cols, sens_cols=sens_cols, entity=fs.entity)
        suppressed_counts = np.array([n for (n,) in rows])
    if result.suppressed_rows:
        # suppressed rows form one generalized block at the root of every hierarchy
        root_area = float(np.prod([len(q.hierarchy.values) for q in fs.qis], dtype=np.float64))
        total += result.suppressed_rows * np.log(root_area) - float(xlogx(suppressed_counts).sum())
    return max(total / fs.rows, 0.0)


def _kl_over_person_cells(fs: FrequencySet, result: NodeResult) -> float:
    """`kl_divergence` with an entity key: over (person, original cell) pairs, each weighing 1/P (P pairs), each
    generalized cell's pairs g spread uniformly over its area. That is (1/P)[sum_x c ln c + sum_B pairs(B) ln
    area(B) - sum_G g ln g] (plus the suppressed pairs' root term), c a cell's persons, pairs(B) = sum of its
    generalized cells' g: the row formula over the distinct (person, cell) rows, so a divergence, >= 0. A
    block's persons are not its pairs (a person with rows in two of its cells counts in both), so the sizes
    the node's classes are judged on cannot stand in for pairs(B) here. The wide frequency set holds one row
    per pair (it groups by cell and person): each count below is a COUNT of its rows."""
    levels = result.levels
    block_cols = [fs.qi(a).col(lvl) for a, lvl in levels.items()]
    sens_cols = [s.col for s in fs.sensitives]
    suppressed = fs.create_suppressed_table(result, beside_counts=True)
    rows = fs.counts.fetchall("node_kl_blocks.sql", table=fs.wide_table, block_cols=block_cols, suppressed=suppressed)
    codes = np.array([r[:-1] for r in rows], dtype=np.int64).reshape(len(rows), len(block_cols))
    pairs = np.array([r[-1] for r in rows], dtype=np.float64)
    log_area = np.zeros(len(rows))
    for i, (name, lvl) in enumerate(levels.items()):
        log_area += fs.log_area(name, lvl)[codes[:, i]]
    kept_g = xlogx_by_count(fs.counts.fetchall("node_kl_terms.sql", table=fs.wide_table, block_cols=block_cols,
                                                sens_cols=sens_cols, suppressed=suppressed, entity=True))
    total = fs.cells_xlogx() + float((pairs * log_area).sum()) - kept_g
    all_pairs = float(pairs.sum())
    if suppressed:
        g = np.array([n for (n,) in fs.counts.fetchall("suppressed_sensitive_counts.sql", table=fs.wide_table,
                                                         suppressed=suppressed, suppressed_cols=block_cols,
                                                         sens_cols=sens_cols, entity=True)], dtype=np.float64)
        root_area = float(np.prod([len(q.hierarchy.values) for q in fs.qis], dtype=np.float64))
        total += float(g.sum()) * np.log(root_area) - float(xlogx(g).sum())
        all_pairs += float(g.sum())
    return max(total / all_pairs, 0.0) if all_pairs else 0.0


def is_monotone(metric: str, suppression: bool, entity: bool) -> bool:
    """Does the metric never improve under generalization, so that its optimum is a minimal node?

    Args:
        metric: one of `METRICS`.
        suppression: the policy allows suppressing rows (privacy.max_suppression > 0).
        entity: the policy counts persons (entity_key).

    Returns:
        True when the best node by `metric` is always a minimal satisfying node (see the module docstring).

    >>> is_monotone("discernibility", suppression=False, entity=False)
    True
    >>> is_monotone("discernibility", suppression=True, entity=False)
    False
    >>> is_monotone("height", suppression=True, entity=True)
    True
    """
    return metric == "height" or not (suppression or entity)


def from_stats(metric: str, stats: NodeStats, table_rows: int) -> float | None:
    """The metric of a satisfying node's release from its class sizes alone, or None when it needs a query."""
    if stats.satisfied is None:
        return None
    if metric == "discernibility":
        return stats.kept_sum_sq + float(table_rows) * stats.suppressed
    if metric == "avg_class_size":
        return round(stats.kept_rows / stats.kept_classes, 6) if stats.kept_classes else 0.0
    return None


def lower_bound(metric: str, stats: NodeStats, min_kept_size: int, budget: int, table_rows: int) -> float:
    """A lower bound on `metric` for this node and every node above it (see the module docstring).

    Args:
        metric: "discernibility" or "avg_class_size".
        stats: the node's class sizes (`NodeStats`: every class, kept or not).
        min_kept_size: the smallest class any privacy model keeps (k, say).
        budget: rows that may be suppressed.
        table_rows: the table's rows.

    Returns:
        The bound. Discernibility: the sum of squared class sizes, kept or not (a suppressed row costs
        |D| >= its class size; merging classes only grows the sum):

    >>> import numpy as np
    >>> lower_bound("discernibility", NodeStats.of(np.array([3, 2, 1]), None, None), 2, 1, 6)
    14.0
    """
    if metric == "discernibility":
        return stats.sum_sq
    if metric == "avg_class_size":
        return 0.0 if budget >= table_rows else float(max(stats.min_size, min_kept_size))
    raise ValueError(f"no size-based bound for {metric}")


def kl_lower_bound(fs: FrequencySet, result: NodeResult) -> float:
    """KL-divergence of the node with every class released: a lower bound for it and every node above."""
    if not result.suppressed_rows:
        return kl_divergence(fs, result)
    whole = NodeResult(result.levels, True, result.counts, np.ones(len(result.ok), dtype=bool), 0)
    return kl_divergence(fs, whole)


def metric_value(metric: str, fs: FrequencySet, result: NodeResult) -> float:
    """One metric of a node result (KL only when asked for: it costs a query).

    Args:
        metric: one of `METRICS`.
        fs: the run's frequency set (its table size; its database for KL-divergence).
        result: the node's evaluation.

    Returns:
        The metric's value (lower is better for every metric).
    """
    if metric == "kl_divergence":
        return round(kl_divergence(fs, result), 10)
    if metric == "height":
        return height(result.levels)
    if metric == "avg_class_size":
        return round(avg_class_size(result), 6)
    return discernibility(result, fs.rows)


def all_metrics(fs: FrequencySet, result: NodeResult, with_kl: bool = True) -> dict:
    """Every metric of a node result, `metric_value` of each.

    Args:
        fs: the run's frequency set.
        result: the node's evaluation.
        with_kl: include KL-divergence (one query).

    Returns:
        metric -> value, in the order of `METRICS`.

    >>> from sqlanon.anonymizer import Anonymization
    >>> from sqlanon.examples import PATIENTS_POLICY, patients_connection
    >>> with Anonymization(PATIENTS_POLICY, connection=patients_connection()) as run:
    ...     metrics = all_metrics(run.fs, run.evaluate({"zip": 2, "age": 2}))
    >>> metrics["height"], metrics["avg_class_size"], metrics["discernibility"]   # two classes of 3
    (4, 3.0, 18.0)
    >>> round(metrics["kl_divergence"], 4)      # (1/6)(4 ln 3 + 2 ln 6): each block covers 2 zips x 3 ages
    1.3297
    """
    return {m: metric_value(m, fs, result) for m in METRICS if with_kl or m != "kl_divergence"}
