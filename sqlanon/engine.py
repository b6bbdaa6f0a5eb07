"""The backend layer: one connection to the database that does the row work.

Everything sqlanon runs goes through `Backend.execute`/`fetch*`, which render a template from
`sql_templates/`, parse it with sqlglot, and run it with bound parameters. DuckDB is the embedded
default; other engines plug in here (one class each) and receive the same templates transpiled by sqlglot.
"""
from __future__ import annotations

import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from . import templates
from .errors import DataError, PolicyError
from .policy import Source

SOURCE_VIEW = "__sqlanon_source"


class Backend:
    """A DuckDB connection plus the templates. `stats` counts statements and their time."""

    dialect = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path | None = None):
        self.con = con
        self.path = path
        self.statements = 0
        self.seconds = 0.0
        self.log: list[str] | None = None   # set to a list to record every statement (for `sqlanon sql`)

    # -- running templates -------------------------------------------------------------------
    def sql(self, template: str, **context) -> str:
        return templates.render_for(template, self.dialect, **context)

    def _run(self, template: str, params, context):
        sql = self.sql(template, **context)
        if self.log is not None:
            self.log.append(sql)
        t = time.perf_counter()
        try:
            cur = self.con.execute(sql, params) if params else self.con.execute(sql)
        except duckdb.Error as e:
            raise DataError(f"the database refused a query ({template}): {str(e).splitlines()[0]}") from None
        self.statements += 1
        self.seconds += time.perf_counter() - t
        return cur

    # each call consumes its whole result: DuckDB refuses new work on a connection with a pending one
    def execute(self, template: str, params=None, **context) -> None:
        self._run(template, params, context).fetchall()

    def fetchall(self, template: str, params=None, **context) -> list[tuple]:
        return self._run(template, params, context).fetchall()

    def fetchone(self, template: str, params=None, **context) -> tuple | None:
        rows = self._run(template, params, context).fetchall()
        return rows[0] if rows else None

    def fetchnumpy(self, template: str, params=None, **context) -> dict[str, np.ndarray]:
        return self._run(template, params, context).fetchnumpy()

    def fetchnumpy_union(self, template: str, branches: list[dict]) -> dict[str, np.ndarray]:
        """Run several renderings of one SELECT template as a single UNION ALL statement.

        Each branch is rendered and checked by sqlglot on its own (its shape is cached, so a batch of
        48 lattice nodes costs no parse at all once the shapes are known); `union_all.sql` only puts
        checked SELECTs together, which cannot make an invalid statement.
        """
        selects = [self.sql(template, **ctx) for ctx in branches]
        sql = templates.render("union_all.sql", selects=selects)
        if self.dialect != templates.TEMPLATE_DIALECT:
            sql = templates.to_dialect(templates.parse(sql), self.dialect)
        if self.log is not None:
            self.log.append(sql)
        t = time.perf_counter()
        try:
            out = self.con.execute(sql).fetchnumpy()
        except duckdb.Error as e:
            raise DataError(f"the database refused a query ({template}): {str(e).splitlines()[0]}") from None
        self.statements += 1
        self.seconds += time.perf_counter() - t
        return out

    def fetchdf(self, template: str, params=None, **context) -> pd.DataFrame:
        return self._run(template, params, context).df()

    # -- small tables from Python (mapping tables: one row per base value) --------------------
    def create_table_from_frame(self, name: str, frame: pd.DataFrame, temp: bool = True) -> None:
        view = f"__sqlanon_frame_{id(frame)}"
        self.con.register(view, frame)
        try:
            self.execute("create_table_as_relation.sql", name=name, relation=view, temp=temp, replace=True)
        finally:
            self.con.unregister(view)

    def columns(self, relation: str) -> list[tuple[str, str]]:
        cur = self._run("describe_relation.sql", None, {"relation": relation})
        cols = [(d[0], str(d[1])) for d in cur.description]
        cur.fetchall()
        return cols

    def table_exists(self, name: str) -> bool:
        return bool(self.fetchone("table_exists.sql", [name])[0])

    def transaction(self):
        return _Transaction(self.con)

    def close(self):
        self.con.close()


class _Transaction:
    def __init__(self, con):
        self.con = con

    def __enter__(self):
        self.con.execute("BEGIN TRANSACTION")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.con.execute("ROLLBACK" if exc_type else "COMMIT")
        return False


MEMORY = ":memory:"


def connect(db: Path | str = MEMORY, read_only: bool = False) -> Backend:
    """Open (or create) a DuckDB database file; ":memory:" for an in-memory database."""
    in_memory = str(db) == MEMORY
    try:
        con = duckdb.connect(MEMORY if in_memory else str(db), read_only=read_only)
    except duckdb.Error as e:
        raise DataError(f"cannot open database {db}: {str(e).splitlines()[0]}") from None
    return Backend(con, None if in_memory else Path(db))


def attach_source(backend: Backend, source: Source) -> str:
    """Expose the policy's source as a temporary view `__sqlanon_source`; return the view name.

    The source is only read: a DuckDB file other than the output database is attached read-only,
    CSV/Parquet files are read through DuckDB's readers, a query runs as a subquery of the view.
    """
    con = backend.con
    try:
        if source.kind == "csv":
            con.read_csv(str(source.path)).create_view(SOURCE_VIEW, replace=True)
        elif source.kind == "parquet":
            con.read_parquet(str(source.path)).create_view(SOURCE_VIEW, replace=True)
        elif source.kind == "query":
            tree = templates.parse(source.query)
            if not isinstance(tree, templates.exp.Query):
                raise PolicyError("source.query", "must be one SELECT statement")
            backend.execute("create_source_view.sql", view=SOURCE_VIEW, query=tree.sql("duckdb"))
        else:
            relation = [source.table]
            if source.database is not None and (backend.path is None or
                                                source.database.resolve() != backend.path.resolve()):
                catalog = "__sqlanon_src"
                attached = {r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
                if catalog not in attached:
                    con.execute(f"ATTACH ? AS {templates.ident(catalog)} (READ_ONLY)", [str(source.database)])
                relation = [catalog, "main", source.table]
            exists = backend.fetchone("relation_exists.sql", [relation[0] if len(relation) == 3 else None,
                                                              source.table])[0]
            if not exists:
                raise DataError(f"source table '{source.table}' does not exist"
                                + (f" in {source.database}" if source.database else ""))
            backend.execute("create_source_view.sql", view=SOURCE_VIEW,
                            query="SELECT * FROM " + templates.qualified(*relation))
    except duckdb.Error as e:
        raise DataError(f"cannot read source {source.label}: {str(e).splitlines()[0]}") from None
    return SOURCE_VIEW
