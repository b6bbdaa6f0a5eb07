"""The engine-independent half of a backend: templates in, statements counted and timed, results out.

A backend is one connection to the database that does the row work. Everything sqlanon runs goes
through `execute` / `fetchall` / `fetchone` / `fetchnumpy` / `fetchnumpy_union`, which render a
template from `sql_templates/`, check it with sqlglot, transpile it to the engine's dialect
(`sqlanon.engines.dialects`) and run it. Results come back in one shape whatever the engine: rows as
tuples, or a dict of numpy columns (through Arrow where the engine offers it).

A subclass supplies the few operations that differ between engines:

- `_run_sql(sql, params, want)`: run one statement; want = None (consume), "rows" or "numpy";
- `create_table_from_frame`: a small table from a pandas frame (mapping tables, suppressed blocks);
- `attach_source`: expose the policy's source as the view `__sqlanon_source`;
- `columns`, `relation_kind`: the catalog;
- `transaction`: an atomic group of statements (a real transaction where the engine has one);
- `export`: write a relation to a Parquet or CSV file;
- `local_counts`: optionally, an in-process database for the search's count queries (Spark);
- `close`.
"""
from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from .. import templates
from ..errors import DataError, PolicyError
from . import dialects

SOURCE_VIEW = "__sqlanon_source"
# text types that compare case-insensitively under any collation, as `Backend.columns` names them: refused as a
# column under a caseless collation is (`Backend.refuse_collated`); PostgreSQL's citext, a domain over it included
CASELESS_TYPES = frozenset({"CITEXT"})
# the "[]" (one or more) that ends an array type's name, PostgreSQL's and DuckDB's
ARRAY_SUFFIX = re.compile(r"(\[\d*\])+$")

# column types as sqlanon names them (DuckDB's names), whatever the engine reports
NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL",
                 "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


def is_numeric_type(type_name: str) -> bool:
    """Whether a column of `type_name` (as `Backend.columns` names it) holds numbers: a scalar of
    `NUMERIC_TYPES` (DOUBLE, DECIMAL(9,2)), not a list or struct of them (DOUBLE[]).

    >>> [is_numeric_type(t) for t in ("DOUBLE", "DECIMAL(9,2)", "UBIGINT", "DOUBLE[]", "INTEGER[]", "VARCHAR")]
    [True, True, True, False, False, False]
    """
    ty = type_name.upper()
    return ty.startswith(NUMERIC_TYPES) and templates.COLUMN_TYPE.fullmatch(ty) is not None

# the column types a frame handed to `create_table_from_frame` may have (chosen by Python, never by a policy)
FRAME_TYPES = {"b": "BOOLEAN", "i": "BIGINT", "u": "BIGINT", "f": "DOUBLE", "O": "VARCHAR", "U": "VARCHAR",
               "M": "TIMESTAMP"}


def columns_frame(columns: dict) -> dict[str, np.ndarray]:
    """A small table as a dict of equal-length numpy columns (strings as object arrays): what sqlanon hands
    `create_table_from_frame` (mapping tables, suppressed blocks). DuckDB reads it as it is, so the core
    never imports pandas; engines that need a DataFrame convert it (`as_pandas`)."""
    return {str(name): (np.asarray(values, dtype=object) if not isinstance(values, np.ndarray)
                        and values and isinstance(values[0], str) else np.asarray(values))
            for name, values in columns.items()}


def as_pandas(frame):
    """A pandas DataFrame of `frame` (a DataFrame already, or a dict of numpy columns)."""
    if isinstance(frame, dict):
        import pandas as pd  # only the PostgreSQL and Spark engines need it
        return pd.DataFrame(frame)
    return frame


def frame_columns(frame) -> list[tuple[str, str]]:
    """(column, SQL type) of a frame (pandas, or a dict of numpy columns); int32 stays INTEGER so codes keep
    their width."""
    out = []
    dtypes = ({c: np.asarray(v).dtype for c, v in frame.items()} if isinstance(frame, dict)
              else dict(frame.dtypes.items()))
    for col, dtype in dtypes.items():
        if dtype.kind == "i" and dtype.itemsize <= 4:
            out.append((str(col), "INTEGER"))
        else:
            out.append((str(col), FRAME_TYPES.get(dtype.kind, "VARCHAR")))
    return out


def name_parts(name: str) -> list[str | None]:
    """[catalog, schema, table] of a relation name (`templates.split_name`), None for a part not written."""
    parts = templates.split_name(name)
    return [None] * (3 - len(parts)) + parts


def source_select(query: str, dialect: str) -> str:
    """A policy's `source.query`, written in the engine's dialect, checked to be exactly one SELECT and
    returned as template-dialect text (the body of the source view). Anything else is a PolicyError."""
    from sqlglot.errors import ParseError, SqlglotError
    try:
        statements = [s for s in templates.sqlglot.parse(query, read=dialect) if s is not None]
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        where = f" (line {first['line']}, column {first['col']})" if first.get("line") else ""
        what = str(first.get("description") or e).split(" but got <")[0]
        raise PolicyError("source.query", f"is not valid SQL for {dialect}{where}: {what}") from None
    except SqlglotError as e:
        raise PolicyError("source.query", f"is not valid SQL for {dialect}: {str(e).splitlines()[0]}") from None
    if len(statements) != 1:
        raise PolicyError("source.query", f"must be one SELECT statement; got {len(statements)} statements "
                          "(remove the ';' and everything after it, or use a view)")
    if not isinstance(statements[0], templates.exp.Query):
        raise PolicyError("source.query", "must be one SELECT statement (a query that returns the rows to anonymize)")
    return statements[0].sql(templates.TEMPLATE_DIALECT)


def union_sql(template: str, branches: list[dict], order: list[str] | None) -> str:
    """One UNION ALL statement of `template` rendered per branch (`fetchnumpy_union`), in the templates'
    dialect: each branch checked by sqlglot on its own, the union only putting checked SELECTs together."""
    selects = [templates.render_for(template, templates.TEMPLATE_DIALECT, **ctx) for ctx in branches]
    return templates.render("union_all.sql", selects=selects, order=order or [])


class Backend:
    """One connection to one engine, plus the templates. `statements` and `seconds` count the statements run
    and their time; `log`, when a list, records each statement."""

    engine = "base"
    dialect = templates.TEMPLATE_DIALECT
    path: Path | None = None    # the database file, for engines that have one
    # the longest identifier the engine keeps whole, in bytes (None: no limit that matters); a release whose
    # names are longer is refused (`catalog.check_targets`)
    max_identifier_bytes: int | None = None
    # a table release may be built from the staged source, each of its rows repeated by its count
    # (`release_table.sql` with `weight`), instead of reading the source again
    release_from_staged = False
    # the staged source groups the source's rows by their values (`stage_source.sql`); False: it is the
    # source's columns as they are, each row of weight 1 (Spark, where the GROUP BY is a full shuffle that
    # reduces nothing on a nearly distinct source, and the frequency set's GROUP BY, which follows anyway,
    # pre-aggregates before its shuffle)
    stage_groups = True
    # once the wide frequency set is built as a table, the bottom one's table becomes a view of its level-0
    # columns (`bottom_as_view.sql`): the same rows held once
    bottom_view_over_wide = True
    # the engine draws a seeded sample of a table's cells (`witness_sample.sql`: the cells of smallest hash), for the
    # witness checks
    samples_rows = False
    # the engine reads a CTE marked MATERIALIZED once however often it is named (the grouped verdict,
    # `node_verdict_grouped_branch.sql`; Spark SQL has no such mark)
    materializes_ctes = False
    # the bits of the widest integer a SUM holds exactly (DuckDB's HUGEINT: 127), for the grouped verdict's
    # counts per group packed into one sum per block (`FrequencySet.packed_group_width`); 0: not packed
    sum_bits = 0
    # the wide frequency set is written sorted by one attribute's codes (`FrequencySet.cluster_order`), so that
    # the blocks of a node are near each other in it (DuckDB, PostgreSQL; Spark's shuffles would lose the order)
    clusters_wide = False
    # the bottom frequency set and the release table join each integer or date column to its mapping table on
    # the typed value (`dialects.map_joins`, macro `map_join`) instead of casting every source value to text
    # (DuckDB: the engine measured; the printed scripts keep the text join, for any engine's column types)
    typed_map_joins = False
    # the attached source is columnar and cheap to read again (a Parquet file, a table; set by `attach_source`):
    # the preparation then reads it where it needs it instead of staging it (`FrequencySet.reads_source_directly`)
    rereads_source_cheaply = False
    # the staged source is written as a view and made a copy by `snapshot` (Spark: a cached view is no copy)
    stage_view = False

    def code_type(self, largest: int) -> str | None:
        """The column type for integer codes up to `largest` in the frequency sets, or None to keep the
        mapping tables' INTEGER. Narrow types matter where the wide frequency set lives in memory: on
        DuckDB a 100-million-row one takes 5 GB with them and 13 GB (spilled) without."""
        return None

    def __init__(self):
        self.statements = 0
        self.seconds = 0.0
        self.log: list[str] | None = None   # set to a list to record every statement (for `sqlanon sql`)

    # -- rendering ----------------------------------------------------------------------------
    def sql(self, template: str, **context) -> str:
        """One template as this engine runs it (several statements are joined with ';')."""
        return ";\n".join(dialects.statements(template, self.dialect, **context))

    def describe(self) -> str:
        """Where the rows are, for messages (never a password)."""
        return self.engine

    # -- running templates --------------------------------------------------------------------
    def _run_sql(self, sql: str, params, want: str | None, template: str):
        raise NotImplementedError

    def _run(self, template: str, params, context: dict, want: str | None):
        out = None
        stmts = dialects.statements(template, self.dialect, **context)
        for sql in stmts:
            # a rewrite's extra statements (DROP before a CREATE, ANALYZE after it) bind no parameters
            extra = len(stmts) > 1 and sql.lstrip().split(None, 1)[0].upper() in ("DROP", "ANALYZE")
            out = self._timed(sql, None if extra else params, want, template)
        return out

    def _timed(self, sql: str, params, want: str | None, template: str):
        if self.log is not None:
            self.log.append(sql)
        t = time.perf_counter()
        out = self._run_sql(sql, params, want, template)
        self.statements += 1
        self.seconds += time.perf_counter() - t
        return out

    def execute(self, template: str, params=None, **context) -> None:
        self._run(template, params, context, None)

    def fetchall(self, template: str, params=None, **context) -> list[tuple]:
        return self._run(template, params, context, "rows")

    def fetchone(self, template: str, params=None, **context) -> tuple | None:
        rows = self.fetchall(template, params, **context)
        return rows[0] if rows else None

    def fetchrow(self, template: str, params=None, **context) -> tuple:
        """The one row of an aggregate query (a SELECT of aggregates without GROUP BY always returns one)."""
        row = self.fetchone(template, params, **context)
        if row is None:
            raise RuntimeError(f"{template} returned no row")     # a bug in the template, not a user error
        return row

    def fetchnumpy(self, template: str, params=None, **context) -> dict[str, np.ndarray]:
        return self._run(template, params, context, "numpy")

    def fetchnumpy_union(self, template: str, branches: list[dict], order: list[str] | None = None
                         ) -> dict[str, np.ndarray]:
        """Run several renderings of one SELECT template as a single UNION ALL statement.

        Each branch is rendered and checked by sqlglot on its own (its shape is cached, so a batch of
        48 lattice nodes costs no parse at all once the shapes are known); `union_all.sql` only puts
        checked SELECTs together, which cannot make an invalid statement. Other dialects then transpile
        the whole statement once. With `order` (result column names) the rows come back sorted by them.
        """
        out: dict[str, np.ndarray] = {}
        for statement in dialects.transpile(union_sql(template, branches, order), self.dialect):
            out = self._timed(statement, None, "numpy", template)
        return out

    def fetchnumpy_union_batches(self, template: str, branches: list[dict], order: list[str],
                                 rows: int) -> Iterator[dict[str, np.ndarray]]:
        """`fetchnumpy_union`'s result in consecutive batches of about `rows` rows, for a caller that
        needs only one batch at a time. Here the whole result is fetched, then sliced; DuckDB streams it
        (`DuckDBBackend.fetchnumpy_union_batches`), so the process never holds more than a batch. Nothing
        else may run on the connection until the last batch has been read."""
        data = self.fetchnumpy_union(template, branches, order)
        n = len(next(iter(data.values()))) if data else 0
        for lo in range(0, n, rows):
            yield {k: v[lo:lo + rows] for k, v in data.items()}

    def perfect_hash_states(self, settings: dict[str, str] | None = None) -> int:
        """How many aggregate states each copy of one count statement's perfect hash tables may hold together (a
        GROUP BY's key range allocated whole, a state per aggregate in every slot; `perfect_hashing`). 0: the
        engine decides alone."""
        return 0

    def perfect_hash_bits(self, threshold_for: Callable[[int], int]) -> int:
        """The key size in bits up to which a GROUP BY is aggregated in a perfect hash table within
        `perfect_hashing(threshold_for)`. Here 0: none is."""
        return 0

    @contextlib.contextmanager
    def perfect_hashing(self, threshold_for: Callable[[int], int]) -> Iterator[None]:
        """Within the block, a GROUP BY whose key range needs at most `threshold_for(perfect_hash_states())` bits
        is aggregated in a perfect hash table; the engine's own setting is restored after. Here: nothing."""
        yield

    # -- engine-specific ----------------------------------------------------------------------
    def create_table_from_frame(self, name: str, frame, temp: bool = True) -> None:
        raise NotImplementedError

    def columns(self, relation: str) -> list[tuple[str, str]]:
        """(name, type) of a relation's columns, types named as DuckDB names them (INTEGER, VARCHAR...)."""
        raise NotImplementedError

    def collated_columns(self, relation: str, names: Sequence[str]) -> list[str]:
        """Those of the text columns `names` that the engine compares under a collation other than the binary one
        (DuckDB's NOCASE, NOACCENT): their GROUP BYs and joins may merge values that sqlanon and the hierarchies
        keep apart (PostgreSQL: a nondeterministic collation, such as a case-insensitive ICU one; Spark: any but
        UTF8_BINARY). Here none are found."""
        return []

    def binary_collated(self, name: str, type_name: str = "VARCHAR") -> str:
        """A select item reading the text column `name` (of type `type_name`, as `columns` names it) under the
        engine's binary collation, as itself: the way out `refuse_collated` names."""
        # "C" quoted: PostgreSQL folds an unquoted C to c, which it does not have; DuckDB takes either
        return f'{templates.ident(name)} COLLATE "C" AS {templates.ident(name)}'

    def may_collate(self, type_name: str) -> bool:
        """Can a column of `type_name` (as `columns` names it) compare under a collation? A scalar text column
        can. An engine whose GROUP BY compares the texts inside a nested value under their collation says so too:
        PostgreSQL's arrays, Spark's arrays, maps and structs, DuckDB 2's lists and structs."""
        ty = type_name.upper()
        return ty.startswith("VARCHAR") and bool(templates.COLUMN_TYPE.fullmatch(ty))

    def refuse_collated(self, relation: str, names: Sequence[str], what: str,
                        columns: dict[str, str] | None = None) -> None:
        """Refuse the text columns among `names` that `relation` compares under a collation other than the binary
        one (`collated_columns`: NOCASE, a case-insensitive ICU collation...), or of a type that ignores case
        (`CASELESS_TYPES`: PostgreSQL's citext, and an array of it): their GROUP BYs and joins to the mapping
        tables would merge values that the hierarchies, the sensitive domain or the entity key keep apart. Arrays
        and other nested types of texts too, where the engine compares them under a collation (`may_collate`).
        `what` names the relation in the message; `columns`: its (name -> type), when already read."""
        types = columns if columns is not None else dict(self.columns(relation))
        text = [n for n in names if self.may_collate(types.get(n, ""))]
        refused = {n for n in names if ARRAY_SUFFIX.sub("", types.get(n, "").upper()) in CASELESS_TYPES}
        refused.update(self.collated_columns(relation, text))
        collated = [n for n in names if n in refused]
        if collated:
            named = ", ".join(f"'{n}'" for n in collated)
            selects = ", ".join(self.binary_collated(n, types.get(n, "VARCHAR")) for n in collated)
            raise DataError(f"column(s) {named} of {what} compare under a collation (such as NOCASE) that may make "
                            "distinct values equal (or are of a type that does, as PostgreSQL's citext), merging "
                            "values that the hierarchies, the sensitive domain or the entity key keep apart; read it "
                            f"through a query (source.query for the source) selecting {selects}")

    def relation_kind(self, name: str) -> str | None:
        """'TABLE' or 'VIEW' for a relation the release may replace, or None when there is none."""
        raise NotImplementedError

    def name_in_use(self, name: str) -> str | None:
        """What holds `name` for a release that would write it: its `relation_kind`, or on engines that can
        forget a table while keeping its files (Spark's in-memory catalog), 'TABLE' for those files, which
        writing the name would delete (`catalog.check_targets` asks this)."""
        return self.relation_kind(name)

    def drop_relation(self, name: str) -> None:
        """Drop a table or view the release replaces (nothing when there is none)."""
        self.execute("drop_relation.sql", name=name, kind=self.relation_kind(name))

    def temporary_tables(self) -> list[str]:
        """Names of this connection's temporary tables and views (work tables of runs sharing the connection)."""
        raise NotImplementedError

    def table_exists(self, name: str) -> bool:
        return self.relation_kind(name) is not None

    def attach_source(self, source, view: str = SOURCE_VIEW) -> str:
        """Expose the policy's source as the temporary view `view`; return its name."""
        raise NotImplementedError

    def source_files(self, path: Path, kind: str) -> list[Path]:
        """The files of a file source (`kind` csv or parquet: a file, or a folder of them) that the engine reads,
        whose stamps tell whether the source was written during a run (`frequency.source_stamp`). Here the file,
        or every file under the folder."""
        return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]

    def view_source(self, source) -> str | None:
        """The relation a view release may read (the source table itself), or None when a view cannot."""
        return source.table if source.kind == "table" else None

    def transaction(self):
        return contextlib.nullcontext(self)

    def adopt_orphaned(self, name: str, columns: list[str]) -> None:
        """Make a table of `columns` an earlier session wrote but this one does not know visible again (Spark
        with its in-memory catalog); nothing on engines whose catalog persists."""

    def snapshot(self, name: str) -> None:
        """Make the staged source `name` a copy that no later change of the source reaches (`FrequencySet._stage`).
        A temporary table already is one (DuckDB, PostgreSQL)."""

    def local_counts(self, cells: int) -> Backend | None:
        """An in-process database to copy a frequency set of `cells` rows into and run the lattice search's
        count queries on, or None to run them here (what every engine but Spark does)."""
        return None

    def export(self, relation: str, path: Path, fmt: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
