"""Re-identification risk of a table, measured in the database (ARX's risk analysis).

- `measures`:   prosecutor, journalist and marketer risk from class-size histograms;
- `estimators`: population uniqueness from a sample (Zayatz, Pitman, SNB, Dankar et al.'s rule);
- `analysis`:   the SQL side: one GROUP BY for the histogram, the riskiest classes, the population join;
- `cli`:        ``sqlanon risk``.

The privacy models built on these figures (average risk, records at risk, k-map, ...) live in
`sqlanon.models.risk`.
"""
from .analysis import Key, histogram, node_keys, plain_keys, risk_report
from .estimators import population_uniques
from .measures import journalist, prosecutor, summary

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
