"""The backend layer: one connection to the database that does the row work.

The engines live in `sqlanon.engines` (a `Backend` base class and one subclass per engine: DuckDB,
PostgreSQL, Spark). This module is the short import path the rest of sqlanon uses.
"""
from __future__ import annotations

from .engines import (
                      ENGINES,
                      MEMORY,
                      SOURCE_VIEW,
                      Backend,
                      DuckDBBackend,
                      attach_source,
                      connect,
                      open_backend,
                      wrap_connection,
)

__all__ = ["ENGINES", "MEMORY", "SOURCE_VIEW", "Backend", "DuckDBBackend", "attach_source", "connect",
           "open_backend", "wrap_connection"]
