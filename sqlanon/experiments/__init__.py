"""Reproductions of the source papers' experiments (docs/DESIGN.md section 7), and the report they write.

    sqlanon experiments [NAME ...] --out docs/experiments [--sample-rows N] [--landsend-rows N]

Experiments (each a module with `run(ctx) -> dict`, `markdown(results) -> str`, `plots(results, out)`):

- `homogeneity`: TKDD Figures 9 and 11 (homogeneity attack on minimal k-anonymous Adult tables);
- `performance`: TKDD Figures 13 (Adult) and 14 (synthetic Lands End): all 6-anonymous vs all entropy
  6-diverse tables, time and nodes evaluated;
- `utility`: TKDD Figures 15-20: minimum height, average group size, discernibility, KL-divergence;
- `similarity`: the t-closeness paper's similarity attack, efficiency and data quality;
- `facts`: occupation's entropy 10.57, no recursive (3,12)-diverse table, the age skew.

`runner.run_experiments` is what the CLI calls; it writes `report.md` (its first line is the command), one
PNG per plot and `results.json` with every number the report shows. This package's import is light (the
CLI imports it at start-up); the experiment modules load on first use.
"""
from __future__ import annotations

NAMES = (        # report order; one experiment module per line
    "homogeneity",
    "performance",
    "utility",
    "similarity",
    "facts",
    "maxent",
    "marginals",
)

__all__ = ["NAMES", "experiments"]


def experiments() -> dict:
    """name -> experiment module, in report order."""
    from importlib import import_module
    return {n: import_module(f"{__name__}.{n}") for n in NAMES}
