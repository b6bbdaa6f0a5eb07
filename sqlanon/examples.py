"""The data of the docstring examples: six patients (zip code, age, disease) and a policy that makes them
3-anonymous by generalizing zip codes (a mask: 13053 -> 1305* -> 130** ...) and ages (intervals of 10,
then 20 years).

>>> con = patients_connection()
>>> con.execute("SELECT count(*) FROM patients").fetchall()
[(6,)]
"""
from __future__ import annotations

from typing import Any

import duckdb

PATIENTS = [("13053", 28, "Flu"), ("13068", 29, "Cancer"), ("13068", 21, "Flu"),
            ("14850", 47, "Cancer"), ("14853", 49, "Flu"), ("14850", 55, "Cancer")]

PATIENTS_POLICY: dict[str, Any] = {
    "source": {"table": "patients"},
    "quasi_identifiers": {"zip": {"hierarchy": "mask", "levels": 5},
                          "age": {"hierarchy": "intervals", "widths": [10, 20]}},
    "sensitive": ["disease"],
    "privacy": {"k": 3},
    "release": {"name": "patients_release"},
}


def patients_connection() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection holding the table `patients` (zip, age, disease) of `PATIENTS`.

    Returns:
        The connection.
    """
    con = duckdb.connect()
    con.execute("CREATE TABLE patients (zip VARCHAR, age INTEGER, disease VARCHAR)")
    con.executemany("INSERT INTO patients VALUES (?, ?, ?)", PATIENTS)
    return con
