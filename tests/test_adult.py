"""The Adult figures through the engine: rows, domain sizes, lattice heights (docs/DESIGN.md section 6)."""
from __future__ import annotations

from sqlanon.anonymizer import Anonymization

from conftest import adult_policy

# (attribute, distinct values in the data, height of its hierarchy)
ADULT_FIGURES = [
    ("age", 74, 4), ("sex", 2, 1), ("race", 5, 1), ("marital_status", 7, 2), ("education", 16, 3),
    ("native_country", 41, 2), ("workclass", 7, 2), ("salary", 2, 1),
]


def test_adult_rows_domains_and_heights():
    with Anonymization(adult_policy(8), db=":memory:") as run:
        assert run.fs.rows == 45222
        got = [(q.name, len(q.hierarchy.values), q.height) for q in run.fs.qis]
        assert got == ADULT_FIGURES
        assert run.lattice.size == 4320
        occupation = run.fs.sensitives[0].domain
        assert occupation.size == 14 and int(occupation.totals.sum()) == 45222
        # the bottom frequency set: one row per distinct (QI values, occupation), counts summing to the table
        rows, total = run.backend.con.execute('SELECT COUNT(*), SUM("cnt") FROM "__sqlanon_fs"').fetchone()
        assert total == 45222 and rows == 26912
