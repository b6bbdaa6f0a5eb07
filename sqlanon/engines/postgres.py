"""PostgreSQL through psycopg 3: a real server, the same templates transpiled by sqlglot.

Connection: `source: {engine: postgres, dsn_env: VAR, table: NAME}`; the environment variable VAR
holds a libpq connection string or URL (``postgresql://user@host:5432/db``); a password may be in it,
in a separate variable named by `password_env`, or in libpq's own PGPASSWORD / ~/.pgpass. Neither
the connection string nor the password is written to the manifest or to a message.

What differs from DuckDB:

- mapping tables and suppressed blocks go in by COPY (CSV over the connection), then ANALYZE;
- work tables are session temporary tables (they vanish with the connection), with ANALYZE after
  each CREATE so the planner knows their size (autovacuum never analyzes temporary tables);
- the release is swapped in by a real transaction (PostgreSQL's DDL is transactional);
- results arrive as rows and become numpy columns; SUM over BIGINT is NUMERIC in PostgreSQL, read
  here as int (or float), not Decimal.
"""
from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import numpy as np

from .. import templates
from ..errors import DataError, PolicyError
from . import dialects
from .base import ARRAY_SUFFIX, SOURCE_VIEW, Backend, as_pandas, frame_columns, source_select

_TYPES = {"smallint": "SMALLINT", "integer": "INTEGER", "bigint": "BIGINT", "real": "FLOAT",
          "double precision": "DOUBLE", "boolean": "BOOLEAN", "date": "DATE", "text": "VARCHAR",
          "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "float4": "FLOAT", "float8": "DOUBLE",
          "bool": "BOOLEAN", "bpchar": "VARCHAR", "name": "VARCHAR", "timestamptz": "TIMESTAMP",
          "uuid": "UUID", "json": "JSON", "jsonb": "JSON"}
# pg_catalog's names of the built-in types (`type_names_postgres.sql`) that a type the driver does not know may be
# over or an array of (an array of a domain), named by exact name only: a user's ENUM named numeric_grade is no
# DECIMAL. citext, which compares case-insensitively under any collation, is named apart (`_catalog_type`).
_CATALOG_TYPES = {**_TYPES, "varchar": "VARCHAR", "numeric": "DECIMAL", "timestamp": "TIMESTAMP", "time": "TIME",
                  "timetz": "TIME", "interval": "INTERVAL"}


def _catalog_type(name: str, built_in: bool, base: bool) -> str:
    """A base type from the catalog (`type_names_postgres.sql`) as sqlanon names types, or '' (keep the OID): a
    built-in type (pg_catalog's, by its exact name) or the citext extension's base type; a user's type named text
    or int4 in another schema is neither."""
    if built_in:
        return _CATALOG_TYPES.get(name, "")
    return "CITEXT" if base and name == "citext" else ""


def _type_name(display: str) -> str:
    """A PostgreSQL type as sqlanon names types (DuckDB's names); an array as its element's name and "[]", as
    the driver shows it (one "[]" whatever its dimensions).

    >>> [_type_name(t) for t in ("varchar(5)[]", "timestamp[]", "float8[]", "numeric(4,2)[]", "text[]", "int4",
    ...                          "bpchar(3)[]")]
    ['VARCHAR[]', 'TIMESTAMP[]', 'DOUBLE[]', 'DECIMAL(4,2)[]', 'VARCHAR[]', 'INTEGER', 'VARCHAR[]']
    """
    if display.endswith("[]"):
        return _type_name(display[:-2]) + "[]"
    d = display.lower()
    if d in _TYPES:
        return _TYPES[d]
    for prefix, name in (("numeric", "DECIMAL"), ("character varying", "VARCHAR"), ("character", "VARCHAR"),
                         ("varchar", "VARCHAR"), ("bpchar", "VARCHAR"), ("timestamp", "TIMESTAMP"), ("time", "TIME")):
        if d.startswith(prefix):
            return name + d[len(prefix):].upper() if name == "DECIMAL" else name
    return display.upper()


def _import_psycopg():
    try:
        import psycopg
    except ImportError:
        raise DataError("source.engine postgres needs the psycopg package: pip install 'sqlanon[engines]' "
                        "(or pip install 'psycopg[binary]')") from None
    return psycopg


def _numeric_loader():
    from psycopg.adapt import Loader

    class NumericAsNumber(Loader):
        """NUMERIC as int when integral (SUM over BIGINT), float otherwise; never Decimal."""

        def load(self, data):
            text = bytes(data)
            if text.lstrip(b"-").isdigit():
                return int(text)
            return float(text)

    return NumericAsNumber


_QUOTED_OR_PERCENT = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|%s|%""")


def _escape_percent(sql: str) -> str:
    """`sql` for psycopg with parameters, which reads every '%' as a placeholder's start: each '%' doubled but
    the '%s' placeholders outside quotes, a '%' inside a quoted name or text included (a column "rate%s" was
    read as a placeholder: "the query has 8 placeholders but 2 parameters were passed").

    >>> print(_escape_percent("SELECT x % 2, 'a%s' FROM t WHERE y = %s"))
    SELECT x %% 2, 'a%%s' FROM t WHERE y = %s
    """
    def one(m: re.Match) -> str:
        token = m.group(0)
        return token if token == "%s" else token.replace("%", "%%")
    return _QUOTED_OR_PERCENT.sub(one, sql)

class PostgresBackend(Backend):
    """A psycopg connection in autocommit mode; `transaction()` opens a real transaction."""

    engine = "postgres"
    dialect = "postgres"
    materializes_ctes = True        # PostgreSQL 12 and later
    clusters_wide = True

    def __init__(self, con, owned: bool = True, where: str = "PostgreSQL", secrets: tuple[str, ...] = ()):
        super().__init__()
        self.psycopg = _import_psycopg()
        self.con = con
        self.owned = owned
        self.where = where
        self._secrets = tuple(s for s in secrets if s)
        con.adapters.register_loader("numeric", _numeric_loader())

    @classmethod
    def open(cls, source) -> PostgresBackend:
        psycopg = _import_psycopg()
        from psycopg import conninfo
        dsn = os.environ.get(source.dsn_env or "")
        if not dsn:
            raise PolicyError("source.dsn_env", f"environment variable {source.dsn_env} is not set; set it to a "
                              "PostgreSQL connection string or URL, e.g. postgresql://user@host:5432/dbname")
        kwargs = {}
        if source.password_env:
            password = os.environ.get(source.password_env)
            if password is None:
                raise PolicyError("source.password_env", f"environment variable {source.password_env} is not set")
            kwargs["password"] = password
        try:
            info = conninfo.conninfo_to_dict(dsn)
        except psycopg.Error:
            raise PolicyError("source.dsn_env", f"environment variable {source.dsn_env} does not hold a valid "
                              "PostgreSQL connection string or URL") from None
        secrets = tuple(str(s) for s in (info.get("password"), kwargs.get("password"), dsn) if s)
        where = _where(info)
        try:
            con = psycopg.connect(dsn, autocommit=True, connect_timeout=int(info.get("connect_timeout") or 10),
                                  application_name="sqlanon", **kwargs)
        except psycopg.Error as e:
            raise DataError(f"cannot connect to PostgreSQL at {where}: {_first_line(e, secrets)}; check that the "
                            f"server runs and accepts connections there, or fix the connection string in "
                            f"{source.dsn_env} (source.dsn_env)") from None
        backend = cls(con, owned=True, where=where, secrets=secrets)
        try:
            for name, value in (source.settings or {}).items():
                backend.fetchall("set_config.sql", [str(name), _setting(value)])
        except BaseException:
            backend.close()
            raise
        return backend

    def describe(self) -> str:
        return f"PostgreSQL {self.where}"

    # -- running statements ---------------------------------------------------------------------
    def _run_sql(self, sql: str, params, want: str | None, template: str):
        if params:
            # with parameters psycopg reads '%' as a placeholder's start: the modulo operator must be doubled
            sql = _escape_percent(sql)
        try:
            with self.con.cursor() as cur:
                cur.execute(sql, params or None)
                if want is None:
                    return None
                rows = cur.fetchall() if cur.description else []
                if want == "rows":
                    return rows
                names = [d.name for d in cur.description]
        except self.psycopg.Error as e:
            raise DataError(f"PostgreSQL refused a query ({template}): {_first_line(e, self._secrets)}") from None
        if not rows:
            return {n: np.array([]) for n in names}
        return {n: np.asarray(col) for n, col in zip(names, zip(*rows))}

    # -- small tables from Python: CREATE + COPY (CSV) -------------------------------------------
    def create_table_from_frame(self, name: str, frame, temp: bool = True) -> None:
        frame = as_pandas(frame)
        cols = frame_columns(frame)
        buf = io.StringIO()
        # strings quoted (so an empty string is not NULL), numbers bare
        frame.to_csv(buf, index=False, header=False, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        self.execute("drop_relation.sql", name=name, kind="TABLE")
        self.execute("create_table_columns.sql", name=name, columns=cols, temp=temp)
        copy_sql, = dialects.statements("copy_from_stdin.sql", self.dialect, name=name, columns=[c for c, _ in cols])
        try:
            with self.con.cursor() as cur, cur.copy(copy_sql) as copy:
                copy.write(buf.getvalue())
        except self.psycopg.Error as e:
            raise DataError(f"PostgreSQL refused the rows of {name}: {_first_line(e, self._secrets)}") from None
        self.execute("analyze.sql", name=name)

    # -- catalog ------------------------------------------------------------------------------------
    def _described(self, relation: str) -> list[tuple[str, int, str]]:
        """Each column's name, type OID and the driver's name of its type."""
        sql, = dialects.statements("describe_relation.sql", self.dialect, relation=relation)
        try:
            with self.con.cursor() as cur:
                cur.execute(sql)
                return [(d.name, d.type_code, d.type_display) for d in cur.description]
        except self.psycopg.Error as e:
            raise DataError(f"PostgreSQL refused a query (describe_relation.sql): "
                            f"{_first_line(e, self._secrets)}") from None

    def columns(self, relation: str) -> list[tuple[str, str]]:
        described = self._described(relation)
        # the driver shows a type it does not know (an extension's, an array of a domain) as its OID: one whose base
        # type (or, for an array, its element's) is citext or a built-in type is named from the catalog (a scalar
        # domain needs nothing: the driver is given its base type); every other such type keeps its OID, which no
        # rule below reads as a built-in type (an ENUM named numeric_grade is not a DECIMAL)
        unknown = sorted({oid for _name, oid, display in described if display == str(oid)})
        rows = self.fetchall("type_names_postgres.sql", oids=unknown) if unknown else []
        names = {oid: named + ("[]" if is_array else "")
                 for oid, name, is_array, built_in, base in rows if (named := _catalog_type(name, built_in, base))}
        return [(name, names.get(oid) or _type_name(display)) for name, oid, display in described]

    def collated_columns(self, relation: str, names: Sequence[str]) -> list[str]:
        """Those of `names` under a nondeterministic collation (`nondeterministic_columns_postgres.sql`)."""
        if not names:
            return []
        row = self.fetchone("nondeterministic_columns_postgres.sql", relation=relation, columns=list(names))
        return [n for n, nondeterministic in zip(names, row or ()) if nondeterministic]

    def binary_collated(self, name: str, type_name: str = "VARCHAR") -> str:
        # cast to text first: a citext column stays case-insensitive under any collation; an array to text[]
        column = templates.ident(name)
        return f'CAST({column} AS text{"[]" if type_name.endswith("]") else ""}) COLLATE "C" AS {column}'

    def may_collate(self, type_name: str) -> bool:
        # an array of texts takes its elements' collation, and its GROUP BY compares them under it
        return super().may_collate(ARRAY_SUFFIX.sub("", type_name))

    # PostgreSQL's NAMEDATALEN - 1: a longer identifier is cut, silently (two names may become one)
    max_identifier_bytes = 63

    def relation_kind(self, name: str) -> str | None:
        """The kind of the relation `name` resolves to, through the search_path when unqualified (see
        relation_kind_postgres.sql)."""
        row = self.fetchone("relation_kind_postgres.sql", [templates.relation(name)])
        return row[0] if row and row[0] else None

    def temporary_tables(self) -> list[str]:
        return [name for (name,) in self.fetchall("temporary_tables_postgres.sql")]

    def transaction(self):
        return self.con.transaction()

    # -- the source -------------------------------------------------------------------------------
    def attach_source(self, source, view: str = SOURCE_VIEW) -> str:
        if source.kind == "table":
            if self.relation_kind(source.table) is None:
                schema = self.fetchrow("current_schema.sql")[0]
                raise DataError(f"source table '{source.table}' does not exist in PostgreSQL {self.where} "
                                f"(schema {schema})")
            query = "SELECT * FROM " + templates.relation(source.table)
        elif source.kind == "query":
            query = source_select(source.query, "postgres")
        else:
            raise PolicyError("source", f"engine postgres reads a table or a query, not {source.kind}")
        self.execute("create_source_view.sql", view=view, query=query)
        return view

    # -- exports ------------------------------------------------------------------------------------
    def export(self, relation: str, path: Path, fmt: str) -> None:
        if fmt == "csv":
            sql, = dialects.statements("copy_to_stdout.sql", self.dialect, relation=relation)
            with open(path, "wb") as out, self.con.cursor() as cur, cur.copy(sql) as copy:
                for block in copy:
                    out.write(block)
            return
        _export_parquet(self, relation, path)

    def close(self) -> None:
        if self.owned and not self.con.closed:
            self.con.close()


_TIMESTAMPTZ_OID = 1184
_DECIMAL_TYPE = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")


def _parquet_column(pa, described: tuple[str, int, str], type_name: str):
    """How one column goes into the Parquet file: (its Parquet type, is it read as text, is that text a decimal).

    A numeric of declared precision is a Parquet decimal of that precision and scale, read as its exact text (the
    connection's loader makes numerics floats, and a float64 column lost the cents of numeric(20,2)); a numeric
    without one (any scale in any row) is its exact text, as the CSV export writes it. A timestamptz is an instant
    in UTC (`isAdjustedToUTC`), as DuckDB exports one. A column Parquet has no type for here (an array, uuid,
    interval, json, a composite...) is PostgreSQL's text of it: the driver returns such values as Python lists,
    UUIDs, timedeltas, dicts, which no string column takes."""
    _name, oid, _display = described
    if oid == _TIMESTAMPTZ_OID:
        return pa.timestamp("us", tz="UTC"), False, False
    decimal = _DECIMAL_TYPE.fullmatch(type_name)
    if decimal:
        precision, scale = int(decimal[1]), int(decimal[2])
        if precision <= 38:
            return pa.decimal128(precision, scale), True, True
        if precision <= 76:
            return pa.decimal256(precision, scale), True, True
        return pa.string(), True, False     # numeric's declared precision goes to 1000, Parquet's decimals to 76
    arrow = {"SMALLINT": pa.int16(), "INTEGER": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
             "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "DATE": pa.date32(), "TIMESTAMP": pa.timestamp("us"),
             "VARCHAR": pa.string()}.get(type_name)
    return (arrow, False, False) if arrow is not None else (pa.string(), True, False)


def _export_parquet(b: PostgresBackend, relation: str, path: Path, batch: int = 100_000) -> None:
    """Stream a relation into a Parquet file, `batch` rows at a time (a server-side cursor); each column's type
    as `_parquet_column` chooses."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("exporting to Parquet from PostgreSQL needs pyarrow: pip install pyarrow") from None
    described = b._described(relation)
    named = dict(b.columns(relation))
    plan = [_parquet_column(pa, d, named[d[0]]) for d in described]
    schema = pa.schema([(d[0], t) for d, (t, _text, _decimal) in zip(described, plan)])
    sql, = dialects.statements("export_select_postgres.sql", b.dialect, relation=relation,
                               columns=[(d[0], text) for d, (_t, text, _decimal) in zip(described, plan)])
    with b.con.transaction(), b.con.cursor(name="sqlanon_export") as cur, pq.ParquetWriter(str(path), schema) as w:
        cur.execute(sql)
        while True:
            try:
                rows = cur.fetchmany(batch)
            except b.psycopg.DataError as e:      # a value the driver cannot load: a date or timestamp 'infinity'
                raise DataError(f"{relation} holds a value Parquet cannot hold here ({_first_line(e, b._secrets)}); "
                                "export it as CSV, or cast the column in a source query") from None
            if not rows:
                break
            arrays = []
            for col, f, (_t, _text, decimal) in zip(zip(*rows), schema, plan):
                values = [None if v is None else Decimal(v) for v in col] if decimal else list(col)
                try:
                    arrays.append(pa.array(values, type=f.type))
                except pa.ArrowInvalid as e:
                    bad = next((v for v in values if v is not None and not v.is_finite()), None) if decimal else None
                    what = f"holds {bad}, which" if bad is not None else "holds a value that"
                    raise DataError(f"column '{f.name}' of {relation} {what} a Parquet {f.type} cannot hold "
                                    f"({str(e).splitlines()[0]}); export it as CSV, or cast the column in a "
                                    "source query") from None
            w.write_table(pa.table(arrays, schema=schema))


def _setting(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _where(info: dict) -> str:
    host = info.get("host") or info.get("hostaddr") or "(local socket)"
    port = info.get("port") or "5432"
    db = info.get("dbname") or info.get("user") or ""
    user = info.get("user")
    return f"{host}:{port}/{db}" + (f" as {user}" if user else "")


def _first_line(e: Exception, secrets=()) -> str:
    text = str(e).strip()
    for line in text.splitlines():
        if line.strip():
            text = line.strip()
            break
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text
