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
"""
from __future__ import annotations

import numpy as np

from .checker import NodeResult
from .frequency import FrequencySet

METRICS = ("height", "avg_class_size", "discernibility", "kl_divergence")


def height(levels: dict[str, int]) -> int:
    return int(sum(levels.values()))


def avg_class_size(result: NodeResult) -> float:
    sizes = result.released_sizes
    return float(sizes.sum() / len(sizes)) if len(sizes) else 0.0


def discernibility(result: NodeResult, table_rows: int) -> float:
    sizes = result.released_sizes.astype(np.float64)
    return float((sizes ** 2).sum() + float(table_rows) * result.suppressed_rows)


def _xlogx(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    x = x[x > 0]
    return float((x * np.log(x)).sum())


def kl_divergence(fs: FrequencySet, result: NodeResult) -> float:
    levels = result.levels
    block_cols = [fs.qi(a).col(lvl) for a, lvl in levels.items()]
    sens_cols = [s.col for s in fs.sensitives]
    suppressed = fs.create_suppressed_table(result)
    kept_cells_xlogx, = fs.backend.fetchone("node_kl_terms.sql", table=fs.wide_table, block_cols=block_cols,
                                            sens_cols=sens_cols, suppressed=suppressed, entity=fs.entity)
    # sum over released blocks of |B| ln area(B), from the block codes the node's query returned
    keep = result.ok if result.suppressed_rows else np.ones(len(result.counts.sizes), dtype=bool)
    log_area = np.zeros(int(keep.sum()))
    for i, (name, lvl) in enumerate(levels.items()):
        log_area += fs.log_area(name, lvl)[result.counts.block_codes[keep, i]]
    total = fs.cells_xlogx() + float((result.counts.sizes[keep] * log_area).sum()) - float(kept_cells_xlogx or 0.0)
    if suppressed:
        # suppressed rows form one generalized block at the root of every hierarchy
        rows = fs.backend.fetchall("suppressed_sensitive_counts.sql", table=fs.wide_table, suppressed=suppressed,
                                   suppressed_cols=block_cols, sens_cols=sens_cols, entity=fs.entity)
        root_area = float(np.prod([len(q.hierarchy.values) for q in fs.qis], dtype=np.float64))
        total += result.suppressed_rows * np.log(root_area) - _xlogx(np.array([n for (n,) in rows]))
    return max(total / fs.rows, 0.0)


def all_metrics(fs: FrequencySet, result: NodeResult, with_kl: bool = True) -> dict:
    out = {"height": height(result.levels), "avg_class_size": round(avg_class_size(result), 6),
           "discernibility": discernibility(result, fs.rows)}
    if with_kl:
        out["kl_divergence"] = round(kl_divergence(fs, result), 10)
    return out
