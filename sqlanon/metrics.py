"""Utility metrics of a generalized table (DESIGN.md section 5; TKDD Section 6).

- generalization height: the sum of the node's levels (Samarati; LeFevre et al.);
- average class size: released rows / number of q*-blocks;
- discernibility (Bayardo & Agrawal): sum of squared block sizes, plus |D| for every suppressed row;
- KL-divergence (TKDD Section 6, Kifer & Gehrke): F is the empirical distribution of the original over
  Q x S; F*(x) = n(t*) / (|T| * area(t*)) spreads each generalized cell uniformly over the base cells it
  covers (area = product of the number of base values each generalized value covers); KL = sum over the
  original's cells of F(x) log(F(x) / F*(x)). Suppressed rows count as generalized to the root of every
  hierarchy. Computed in SQL over the frequency set.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .checker import NodeResult
from .frequency import WIDE, FrequencySet

METRICS = ("height", "avg_class_size", "discernibility", "kl_divergence")
SUPPRESSED_BLOCKS = "__sqlanon_suppressed"


def height(levels: dict[str, int]) -> int:
    return int(sum(levels.values()))


def avg_class_size(result: NodeResult) -> float:
    sizes = result.released_sizes
    return float(sizes.sum() / len(sizes)) if len(sizes) else 0.0


def discernibility(result: NodeResult, table_rows: int) -> float:
    sizes = result.released_sizes.astype(np.float64)
    return float((sizes ** 2).sum() + float(table_rows) * result.suppressed_rows)


def create_suppressed_table(fs: FrequencySet, result: NodeResult, name: str = SUPPRESSED_BLOCKS,
                            temp: bool = True) -> str | None:
    """The codes of the blocks a node suppresses, as a (small) table for SQL anti-joins; None if none."""
    if not result.suppressed_rows:
        return None
    cols = [fs.qi(a).col(lvl) for a, lvl in result.levels.items()]
    codes = result.counts.block_codes[~result.ok]
    frame = pd.DataFrame({c: codes[:, i].astype(np.int64) for i, c in enumerate(cols)})
    fs.backend.create_table_from_frame(name, frame, temp=temp)
    return name


def kl_divergence(fs: FrequencySet, result: NodeResult) -> float:
    levels = result.levels
    qis = [(fs.qi(a), lvl) for a, lvl in levels.items()]
    supp = create_suppressed_table(fs, result)
    total_area = float(np.prod([q.hierarchy.leaf_counts()[0].size for q in fs.qis], dtype=np.float64))
    value = fs.backend.fetchone("node_kl.sql", wide=WIDE, qis=qis, sensitives=fs.sensitives,
                                suppressed=supp, rows=fs.rows, total_area=total_area)[0]
    return max(float(value or 0.0), 0.0)


def all_metrics(fs: FrequencySet, result: NodeResult, with_kl: bool = True) -> dict:
    out = {"height": height(result.levels), "avg_class_size": round(avg_class_size(result), 6),
           "discernibility": discernibility(result, fs.rows)}
    if with_kl:
        out["kl_divergence"] = round(kl_divergence(fs, result), 10)
    return out
