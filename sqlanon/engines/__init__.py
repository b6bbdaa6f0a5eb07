"""The engine layer: one `Backend` subclass per database engine, the same templates for all.

- `duckdb.DuckDBBackend`: embedded, the default (a file or in memory);
- `postgres.PostgresBackend`: a PostgreSQL server through psycopg;
- `spark.SparkBackend`: Spark SQL through a SparkSession (local mode or a cluster).

`open_backend(source, db)` picks one from the policy's `source.engine`; `wrap_connection(con)` wraps a
connection the caller already holds (a DuckDB connection, a psycopg connection or a SparkSession).
psycopg and pyspark are imported only when their engine is used (`pip install 'sqlanon[engines]'`).
"""
from __future__ import annotations

from pathlib import Path

from .base import NUMERIC_TYPES, SOURCE_VIEW, Backend
from .duckdb import MEMORY, DuckDBBackend, connect

ENGINES = ("duckdb", "postgres", "spark")

__all__ = ["Backend", "DuckDBBackend", "ENGINES", "MEMORY", "NUMERIC_TYPES", "SOURCE_VIEW", "attach_source",
           "connect", "open_backend", "wrap_connection"]


def open_backend(source, db: Path | str | None = None) -> Backend:
    """A backend for the policy's source. `db` is the DuckDB file for the duckdb engine (ignored by the
    others: their release goes into the database they read)."""
    engine = getattr(source, "engine", "duckdb")
    if engine == "postgres":
        from .postgres import PostgresBackend
        return PostgresBackend.open(source)
    if engine == "spark":
        from .spark import SparkBackend
        return SparkBackend.open(source)
    return connect(db if db is not None else MEMORY)


def wrap_connection(connection) -> Backend:
    """A backend over a connection the caller owns (and closes): DuckDB, psycopg or a SparkSession."""
    if isinstance(connection, Backend):
        return connection
    import duckdb
    if isinstance(connection, duckdb.DuckDBPyConnection):
        return DuckDBBackend(connection, owned=False)
    module = type(connection).__module__
    if module.startswith("psycopg"):
        from .postgres import PostgresBackend
        return PostgresBackend(connection, owned=False)
    if module.startswith("pyspark"):
        from .spark import SparkBackend
        return SparkBackend(connection, owned=False)
    raise TypeError(f"not a connection sqlanon can use: {type(connection).__name__}")


def attach_source(backend: Backend, source, view: str = SOURCE_VIEW) -> str:
    """Expose the policy's source as the temporary view `view` (by default `__sqlanon_source`; a run names its
    own, `{prefix}_source`, so that another run on the connection cannot re-point it); return the view name."""
    return backend.attach_source(source, view)
