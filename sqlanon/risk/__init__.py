"""Re-identification risk of a table, measured in the database (ARX's risk analysis).

- `measures`:   prosecutor, journalist and marketer risk from class-size histograms;
- `estimators`: population uniqueness from a sample (Zayatz, Pitman, SNB, Dankar et al.'s rule);
- `analysis`:   the SQL side: one GROUP BY for the histogram, the riskiest classes, the population join;
- ``sqlanon risk`` is in `sqlanon.cli.risk`.

The privacy models built on these figures (average risk, records at risk, k-map, ...) live in
`sqlanon.models.risk`.
"""
from __future__ import annotations

import importlib
from typing import Any

# the names below load their module on first use: `estimators` imports scipy (about a second), and the
# command line imports `sqlanon.risk.measures` at every start (sqlanon.cli.risk)
_HOME = {"Key": "analysis", "histogram": "analysis", "node_keys": "analysis", "plain_keys": "analysis",
         "risk_report": "analysis", "population_uniques": "estimators", "journalist": "measures",
         "prosecutor": "measures", "summary": "measures"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
           "Key",
           "histogram",
           "journalist",
           "node_keys",
           "plain_keys",
           "population_uniques",
           "prosecutor",
           "risk_report",
           "summary",
]
