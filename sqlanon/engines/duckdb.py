"""DuckDB: the embedded default engine. Templates are written in its dialect and run as written."""
from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import duckdb
import numpy as np

from .. import templates
from ..errors import DataError, PolicyError, is_interrupt
from ..files import missing_folders
from .base import SOURCE_VIEW, Backend, name_parts, source_select, union_sql

MEMORY = ":memory:"
# `DuckDBBackend.perfect_hash_states`. At 100 M rows of Lands End, in perfect hash tables, ten minimal nodes'
# class sizes (44,000 to 703,000 blocks) took 0.3 to 0.7 s each against 0.7 to 2.4 s hashed, their grouped
# verdicts 0.7 to 2.9 s against 1.5 to 5.0 s (ad hoc, in-process, one run each; benchmarks/RESULTS-rows.md).
# Each thread fills a table of every slot, and so does the merge, outside DuckDB's memory_limit: with 2
# threads (3 copies) the one GROUP BY of 2^24 slots and three aggregates there (a node of 10 M blocks) added
# 1.5 GB to the process; none of 2^23 slots and one aggregate did. So at most 3 x 2^24 states over all
# copies, and at most one per PERFECT_HASH_LIMIT_SHARE bytes of memory_limit (at about 16 bytes a state, a
# sixth of it)
PERFECT_HASH_STATES = 3 << 24
PERFECT_HASH_LIMIT_SHARE = 96
# DuckDB's memory sizes as current_setting shows them ("5.5 GiB")
_SIZE_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
               "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12}
# rows per DuckDB vector: `fetch_df_chunk` counts the rows it returns in vectors
VECTOR_ROWS = 2048


@contextlib.contextmanager
def _refused(template: str):
    """DuckDB's errors while running or fetching `template`'s statement, as sqlanon's: Ctrl-C during a
    query is an interrupt, not bad input; a refused query is one DataError line naming the template."""
    try:
        yield
    except Exception as e:
        if is_interrupt(e):
            raise KeyboardInterrupt from None
        if isinstance(e, duckdb.Error):
            raise DataError(f"the database refused a query ({template}): {str(e).splitlines()[0]}") from None
        raise


def _widened(columns: dict) -> dict:
    """Result columns with integers narrower than 32 bits widened to int32: codes are stored narrow
    (`code_type`), and numpy arithmetic on int8 or int16 would wrap where int32, what every caller
    was written for, does not."""
    return {name: (a.astype(np.int32) if a.dtype.kind in "iu" and a.dtype.itemsize < 4 else a)
            for name, a in columns.items()}


def _text_paths(data_type, steps: tuple = ()) -> list[tuple]:
    """The steps (`collation_probe.sql`) to each text a column of `data_type` (a DuckDBPyType) holds where DuckDB
    compares it under its collation: () for a text column, (("item", "1"),) for a list of texts or a tuple's first
    field, (("field", "x"),) for STRUCT(x VARCHAR); none for a type without texts (an enum's labels take no
    collation) nor inside a map, which DuckDB groups by its binary form whatever its texts' collation."""
    kind = data_type.id
    if kind == "varchar":
        return [steps]
    if kind in ("list", "array"):
        return _text_paths(dict(data_type.children)["child"], steps + (("item", "1"),))
    if kind in ("struct", "tuple"):     # a tuple's fields (DuckDB 2's unnamed struct, row(...)) by position
        return [p for i, (name, child) in enumerate(data_type.children)
                for p in _text_paths(child, steps + ((("field", name) if name else ("item", str(i + 1))),))]
    return []


class DuckDBBackend(Backend):
    """A DuckDB connection (a file, or in memory)."""

    engine = "duckdb"
    dialect = "duckdb"
    release_from_staged = True
    samples_rows = True
    materializes_ctes = True
    clusters_wide = True
    typed_map_joins = True
    sum_bits = 127

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path | None = None, created: bool = False,
                 owned: bool = True):
        super().__init__()
        self.con = con
        self.path = path
        self.created = created      # `connect` made the file: `close` removes it again if it stayed empty
        self.owned = owned          # False: the caller's connection, which the caller closes
        self._nested_collate: bool | None = None     # `_nested_texts_collate`, asked once
        self._made_folders: list[Path] = []          # temp_directory folders `apply_settings` made, outermost first

    def describe(self) -> str:
        return f"DuckDB {self.path}" if self.path else "DuckDB (in memory)"

    def code_type(self, largest: int) -> str | None:
        # signed, so no code arithmetic meets unsigned wrap-around; results come back widened (`_widened`)
        return "TINYINT" if largest <= 127 else "SMALLINT" if largest <= 32767 else "INTEGER"

    # -- running templates (the hot path: no transpiling, no extra statement) -----------------
    def sql(self, template: str, **context) -> str:
        return templates.render_for(template, self.dialect, **context)

    def _cursor(self, template: str, params, context):
        sql = templates.render_for(template, self.dialect, **context)
        if self.log is not None:
            self.log.append(sql)
        t = time.perf_counter()
        with _refused(template):
            cur = self.con.execute(sql, params) if params else self.con.execute(sql)
        self.statements += 1
        self.seconds += time.perf_counter() - t
        return cur

    # each call consumes its whole result: DuckDB refuses new work on a connection with a pending one
    def execute(self, template: str, params=None, **context) -> None:
        self._cursor(template, params, context).fetchall()

    def fetchall(self, template: str, params=None, **context) -> list[tuple]:
        return self._cursor(template, params, context).fetchall()

    def fetchone(self, template: str, params=None, **context) -> tuple | None:
        rows = self._cursor(template, params, context).fetchall()
        return rows[0] if rows else None

    def fetchnumpy(self, template: str, params=None, **context) -> dict[str, np.ndarray]:
        return _widened(self._cursor(template, params, context).fetchnumpy())

    def _run_sql(self, sql: str, params, want: str | None, template: str):
        with _refused(template):
            cur = self.con.execute(sql, params) if params else self.con.execute(sql)
            if want == "numpy":
                return _widened(cur.fetchnumpy())
            rows = cur.fetchall()
        return rows if want == "rows" else None

    def fetchnumpy_union_batches(self, template: str, branches: list[dict], order: list[str],
                                 rows: int) -> Iterator[dict[str, np.ndarray]]:
        """Streamed: DuckDB holds the (sorted) result, and each batch is fetched only when asked for (at
        100 M rows of Lands End the chosen node's counts are 41.3 M rows)."""
        sql = union_sql(template, branches, order)
        if self.log is not None:
            self.log.append(sql)
        t = time.perf_counter()
        with _refused(template):
            cur = self.con.execute(sql)
        self.statements += 1
        self.seconds += time.perf_counter() - t
        while True:             # the time between batches is the caller's, not the query's
            t = time.perf_counter()
            with _refused(template):
                frame = cur.fetch_df_chunk(max(1, rows // VECTOR_ROWS))
            self.seconds += time.perf_counter() - t
            if not len(frame):
                return
            yield _widened({c: frame[c].to_numpy() for c in frame.columns})

    # what `perfect_hashing` reads before each count statement, in one statement
    _PERFECT_HASH_SETTINGS = ("perfect_ht_threshold", "memory_limit", "threads")

    def _settings(self, names: Sequence[str]) -> dict[str, str]:
        """DuckDB settings' current values as text, in one statement (not counted as the work's)."""
        row = self.con.execute(templates.render_for("duckdb_current_settings.sql", self.dialect, count=len(names)),
                               list(names)).fetchone()
        return dict(zip(names, map(str, row or ())))

    def perfect_hash_states(self, settings: dict[str, str] | None = None) -> int:
        """`PERFECT_HASH_STATES`, or fewer under a small memory_limit (the tables are outside it), shared among
        the copies: one per thread and the merged one. `settings`: memory_limit and threads, when already read."""
        if settings is None:
            settings = self._settings(self._PERFECT_HASH_SETTINGS)
        states = PERFECT_HASH_STATES
        limit = re.fullmatch(r"([0-9.]+) ?([A-Za-z]+)", settings.get("memory_limit", ""))
        if limit and limit.group(2) in _SIZE_UNITS:
            states = min(states, int(float(limit.group(1)) * _SIZE_UNITS[limit.group(2)]) // PERFECT_HASH_LIMIT_SHARE)
        threads = settings.get("threads", "")
        return states // (int(threads) + 1 if threads.isdigit() else 1)

    def perfect_hash_bits(self, threshold_for: Callable[[int], int]) -> int:
        """`threshold_for(perfect_hash_states())`, or the connection's own perfect_ht_threshold if larger (as
        `perfect_hashing` sets it)."""
        return self._perfect_hash_bits(self._settings(self._PERFECT_HASH_SETTINGS), threshold_for)

    def _perfect_hash_bits(self, settings: dict[str, str], threshold_for: Callable[[int], int]) -> int:
        states = self.perfect_hash_states(settings)
        return max(threshold_for(states) if states else 0, int(settings["perfect_ht_threshold"]))

    @contextlib.contextmanager
    def perfect_hashing(self, threshold_for: Callable[[int], int]) -> Iterator[None]:
        """DuckDB aggregates a GROUP BY in a perfect hash table when its keys' ranges (from the columns'
        statistics) need at most `perfect_ht_threshold` bits (12 unless set). Raised for the block to
        `threshold_for(perfect_hash_states())`, then set back; the settings are read in one statement, and
        none of these statements is counted as the work's."""
        settings = self._settings(self._PERFECT_HASH_SETTINGS)
        before = int(settings["perfect_ht_threshold"])
        bits = self._perfect_hash_bits(settings, threshold_for)
        if bits <= before:
            yield
            return
        setting = templates.render_for("duckdb_setting.sql", self.dialect, name="perfect_ht_threshold")
        self.con.execute(setting, [bits])
        try:
            yield
        finally:
            self.con.execute(setting, [before])

    # -- small tables from Python (mapping tables: one row per base value) --------------------
    def create_table_from_frame(self, name: str, frame, temp: bool = True) -> None:
        """A table from a pandas frame or a dict of numpy columns (DuckDB scans either as it is)."""
        view = f"__sqlanon_frame_{id(frame)}"
        self.con.register(view, frame)
        try:
            self.execute("create_table_as_relation.sql", name=name, relation=view, temp=temp, replace=True)
        finally:
            self.con.unregister(view)

    def columns(self, relation: str) -> list[tuple[str, str]]:
        cur = self._cursor("describe_relation.sql", None, {"relation": relation})
        cols = [(d[0], str(d[1])) for d in cur.description]
        cur.fetchall()
        return cols

    # the names of DuckDB's binary collation: a column declared with one of them compares exactly
    BINARY_COLLATIONS = ("C", "POSIX", "binary")

    def collated_columns(self, relation: str, names: Sequence[str]) -> list[str]:
        default = self._settings(("default_collation",))["default_collation"]
        if default.casefold() not in ("", *(c.casefold() for c in self.BINARY_COLLATIONS)):
            raise DataError(f"the DuckDB connection's default_collation is '{default}', under which distinct values "
                            "may compare equal; sqlanon compares values exactly: RESET default_collation first")
        if not names:
            return []
        cur = self._cursor("describe_relation.sql", None, {"relation": relation})
        types = {d[0]: d[1] for d in cur.description}
        cur.fetchall()
        return [name for name in names
                if any(not any(self._binds(relation, name, c, steps) for c in self.BINARY_COLLATIONS)
                       for steps in _text_paths(types[name]))]

    def binary_collated(self, name: str, type_name: str = "VARCHAR") -> str:
        if templates.COLUMN_TYPE.fullmatch(type_name.upper()):
            return super().binary_collated(name, type_name)
        # a nested column: COLLATE takes a text only, and a cast to its own type keeps the collation; through its
        # text, read under the binary collation, it comes back without
        column = templates.ident(name)
        return f'CAST(CAST({column} AS VARCHAR) COLLATE "C" AS {type_name}) AS {column}'

    def may_collate(self, type_name: str) -> bool:
        # a list or struct built from a collated text keeps its collation, though its type does not show it, and
        # DuckDB 2 groups it under that collation: any type holding a text is then asked about (`collated_columns`
        # probes each text inside). DuckDB 1.4 and 1.5 group such values exactly: only text columns are asked.
        if super().may_collate(type_name):
            return True
        return "VARCHAR" in type_name.upper() and self._nested_texts_collate()

    def _nested_texts_collate(self) -> bool:
        """Does this DuckDB group ['A'] with ['a'] when the texts are under NOCASE (`nested_collation_probe.sql`)?"""
        if self._nested_collate is None:
            row = self.fetchone("nested_collation_probe.sql")
            self._nested_collate = row is not None and row[0] == 1
        return self._nested_collate

    def _binds(self, relation: str, column: str, collation: str, steps: tuple = ()) -> bool:
        """Can `column` (the text `steps` reach inside it) be compared with itself under `collation`
        (`collation_probe.sql`)?"""
        try:
            self.con.execute(self.sql("collation_probe.sql", relation=relation, column=column,
                                      collation=collation, steps=list(steps))).fetchall()
            return True
        except duckdb.Error as e:
            if isinstance(e, duckdb.BinderException) and "collation" in str(e):
                return False
            raise DataError(f"the database refused a query (collation_probe.sql): {str(e).splitlines()[0]}") from None

    def relation_kind(self, name: str) -> str | None:
        row = self.fetchone("relation_kind.sql", name_parts(name), fold=True)
        return row[0] if row and row[0] else None

    def temporary_tables(self) -> list[str]:
        return [name for (name,) in self.fetchall("temporary_tables.sql")]

    def table_exists(self, name: str) -> bool:
        return bool(self.fetchrow("table_exists.sql", [name])[0])

    def transaction(self):
        return _Transaction(self.con)

    # -- the source ---------------------------------------------------------------------------
    def source_files(self, path: Path, kind: str) -> list[Path]:
        """DuckDB reads a folder's files named *.parquet (or *.csv, `attach_source`) at any depth, hidden ones too,
        and nothing else: not a database or spill file sqlanon may write beside a policy kept in the folder."""
        return sorted(p for p in path.rglob(f"*.{kind}") if p.is_file()) if path.is_dir() else [path]

    def attach_source(self, source, view: str = SOURCE_VIEW) -> str:
        """Expose the policy's source as a temporary view, `view` (`__sqlanon_source` unless a run names its own);
        return the view name.

        The source is only read: a DuckDB file other than the output database is attached read-only,
        CSV/Parquet files are read through DuckDB's readers, a query runs as a subquery of the view.
        """
        con = self.con
        self.apply_settings(source)
        self.rereads_source_cheaply = False
        try:
            con.unregister(view)
            if source.kind in ("csv", "parquet"):
                # registered, not create_view(): that one writes a persistent view into the database file
                self.execute("drop_relation.sql", name=view, kind="VIEW")
                reader = con.read_csv if source.kind == "csv" else con.read_parquet
                path = str(source.path)
                if source.kind == "csv":
                    empty = [f for f in self.source_files(source.path, "csv") if f.stat().st_size == 0]
                    if empty:   # else "column 'zip' is not in the source (its columns: column0)"
                        raise DataError(f"source file {empty[0]} is empty: a CSV source needs a header row and rows")
                if source.kind == "csv" and source.path.is_dir():
                    # DuckDB reads a folder of Parquet files itself, of CSV files only through a glob
                    path = str(source.path / "**" / "*.csv")
                # each file of a folder by its own header, not by the position of its columns (a file whose
                # columns came in another order released ages as zip codes)
                con.register(view, reader(path, union_by_name=True) if source.path.is_dir() else reader(path))
                # a Parquet file's row count and NULLs are in its metadata, and its columns read apart; a CSV
                # file would be parsed again
                self.rereads_source_cheaply = source.kind == "parquet"
            elif source.kind == "query":
                query = source_select(source.query, "duckdb")
                catalog = self._attach_source_database(source)
                if catalog is not None:
                    query = _in_catalog(query, catalog)
                try:
                    self.execute("create_source_view.sql", view=view, query=query)
                except DataError as e:     # the query names a table or column that is not there
                    reason = str(e).split("): ", 1)[-1]
                    raise PolicyError("source.query", "DuckDB cannot run it"
                                      + (f" against {source.database}" if source.database else "")
                                      + f": {reason}") from None
            else:
                catalog, schema, table = name_parts(source.table)
                attached = self._attach_source_database(source)
                if attached is not None:
                    if catalog is not None:
                        raise PolicyError("source.table", f"{source.table!r} names a catalog, but the table is read "
                                          f"from source.database {source.database}: write schema.table or table")
                    catalog, schema = attached, schema or "main"
                # 'TABLE' or 'VIEW', no row when there is none
                kind = self.fetchone("relation_kind.sql", [catalog, schema, table], fold=True)
                if kind is None:
                    raise DataError(f"source table '{source.table}' does not exist"
                                    + (f" in {source.database}" if source.database else "")
                                    + "; check the name (schema.table for another schema)")
                self.execute("create_source_view.sql", view=view,
                             query="SELECT * FROM " + templates.qualified(*(p for p in (catalog, schema, table) if p)))
                # a table, not a view whose query would run again at every read
                self.rereads_source_cheaply = kind[0] == "TABLE"
        except duckdb.Error as e:
            raise DataError(f"cannot read source {source.label}: {str(e).splitlines()[0]}") from None
        return view

    def apply_settings(self, source) -> None:
        """The policy's DuckDB settings (source.memory_limit, temp_directory, threads), before any work: past
        memory_limit DuckDB writes what does not fit (hash tables, sorts, temporary tables) to
        temp_directory instead of failing. The folder is created when missing."""
        settings = [(name, getattr(source, name, None)) for name in ("temp_directory", "memory_limit", "threads")]
        for name, value in settings:
            if value is None:
                continue
            if name == "temp_directory":
                try:
                    missing = missing_folders(Path(value))
                    Path(value).mkdir(parents=True, exist_ok=True)
                    self._made_folders += [p for p in missing if p not in self._made_folders]
                except OSError as e:
                    raise PolicyError("source.temp_directory", f"cannot create folder {value}: {e.strerror}") from None
                except ValueError as e:     # a NUL byte in the path
                    raise PolicyError("source.temp_directory", f"cannot create folder {value!r}: {e}") from None
                value = str(value)
            try:
                self.execute("duckdb_setting.sql", [value], name=name)
            except DataError as e:
                reason = str(e).split("): ", 1)[-1]
                raise PolicyError(f"source.{name}", f"DuckDB refuses {value!r}: {reason}") from None

    def _attach_source_database(self, source) -> str | None:
        """Attach `source.database` read-only when it is not the output database; the catalog name, or
        None when the source is in the output database itself."""
        if source.database is None or (self.path is not None and source.database.resolve() == self.path.resolve()):
            return None
        catalog = "__sqlanon_src"
        attached = {r[0] for r in self.con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
        if catalog not in attached:
            self.con.execute(f"ATTACH ? AS {templates.ident(catalog)} (READ_ONLY)", [str(source.database)])
        return catalog

    def view_source(self, source) -> str | None:
        """The source table by the name it resolves to now, its schema written: a view looks a bare name up in
        its own schema first, so a release view `s.r` over `people` read `s.people` when there was one (the
        release's data from a table the run never judged), and `s.people` itself read itself."""
        if source.kind == "table" and (source.database is None or (
                self.path and source.database.resolve() == self.path.resolve())):
            parts = templates.split_name(source.table)
            return self._qualified(parts[0]) if len(parts) == 1 else source.table
        return None

    def _qualified(self, name: str) -> str:
        """`name` (unqualified) with the schema (and catalog, when not the current one) it resolves to through
        the search path; `name` as it is when it resolves to nothing (the caller's check then says so)."""
        searched, current = self.fetchrow("search_path.sql")
        for entry in list(searched or []) or [current]:
            catalog, schema = [None, *templates.split_name(entry)][-2:]
            if self.fetchone("relation_kind.sql", [catalog, schema, name], fold=True):
                parts = [catalog, schema, name] if catalog else [schema, name]
                return ".".join('"' + str(p).replace('"', '""') + '"' for p in parts)
        return name

    # -- exports --------------------------------------------------------------------------------
    def export(self, relation: str, path: Path, fmt: str) -> None:
        rel = self.con.sql("SELECT * FROM " + templates.relation(relation))
        if fmt == "parquet":
            rel.write_parquet(str(path))
        else:
            rel.write_csv(str(path), header=True)

    def close(self) -> None:
        """Close the connection; a database file this backend created and left without a table or view
        (a run that failed, or wrote nothing) is removed, so a failed run leaves no empty file behind. A
        caller's connection stays open (as psycopg's and a SparkSession do), with the run's temporary
        work tables, which go when the caller closes it."""
        if not self.owned:
            return
        empty = False
        if self.created and self.path is not None:
            try:
                # a memory_limit too small for any query (1KB) failed this one too, and kept the file
                with contextlib.suppress(duckdb.Error):
                    self.con.execute("RESET memory_limit")
                row = self.con.execute(
                    "SELECT (SELECT COUNT(*) FROM duckdb_tables() WHERE database_name = current_database() "
                    "AND NOT temporary) + (SELECT COUNT(*) FROM duckdb_views() WHERE database_name = "
                    "current_database() AND NOT temporary AND NOT internal)").fetchone()
                empty = row is not None and not row[0]
            except duckdb.Error:
                empty = False
        self.con.close()
        if empty and self.path is not None:
            for f in (self.path, self.path.with_name(self.path.name + ".wal")):
                f.unlink(missing_ok=True)
        for folder in reversed(self._made_folders):     # DuckDB removed its spill files on closing
            with contextlib.suppress(OSError):
                folder.rmdir()


def _in_catalog(query: str, catalog: str) -> str:
    """A source query with every table it names without a catalog read from `catalog` (the attached
    source database), so `query:` with `database:` reads that file; CTE names are left alone."""
    tree = templates.parse(query)
    ctes = {c.alias_or_name for c in tree.find_all(templates.exp.CTE)}
    for t in tree.find_all(templates.exp.Table):
        if not t.args.get("catalog") and isinstance(t.this, templates.exp.Identifier) and not (
                not t.args.get("db") and t.name in ctes and not _inside_its_namesake(t)):
            t.set("catalog", templates.exp.to_identifier(catalog, quoted=True))
            if not t.args.get("db"):
                t.set("db", templates.exp.to_identifier("main", quoted=True))
    return tree.sql(templates.TEMPLATE_DIALECT)


def _inside_its_namesake(table) -> bool:
    """Whether a table reference lies in the body of a CTE of its own name (not recursive): `WITH orders AS
    (SELECT * FROM orders ...)` reads the table orders there, which was left to the output database."""
    node = table.parent
    while node is not None and not isinstance(node, templates.exp.CTE):
        node = node.parent
    if node is None or node.alias_or_name != table.name:
        return False
    return not (isinstance(node.parent, templates.exp.With) and node.parent.args.get("recursive"))


class _Transaction:
    """BEGIN ... COMMIT, or ROLLBACK on an exception. A BEGIN or COMMIT the database refuses (a full disk) is one
    line, the transaction rolled back; a COMMIT interrupted (Ctrl-C) rolls back too, so the caller's cleanup
    runs outside any transaction (inside one, its DROPs were rolled back at close and a temporary table stayed).
    A COMMIT DuckDB reports as durable though the checkpoint after it failed is a commit: what it recorded (a
    release's manifest and exports) must then stand."""

    def __init__(self, con):
        self.con = con

    def __enter__(self):
        with _refused("BEGIN TRANSACTION"):
            self.con.execute("BEGIN TRANSACTION")
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            with contextlib.suppress(Exception):
                self.con.execute("ROLLBACK")
            return False
        try:
            self.con.execute("COMMIT")
        except BaseException as e:
            if "COMMIT succeeded" in str(e):        # durable; only the automatic checkpoint after it failed
                return False
            with contextlib.suppress(Exception):
                self.con.execute("ROLLBACK")
            if isinstance(e, duckdb.Error) and not is_interrupt(e):
                raise DataError(f"the database could not commit the change, so nothing of it was written: "
                                f"{str(e).splitlines()[0]}") from None
            if is_interrupt(e):
                raise KeyboardInterrupt from None
            raise
        return False


DUCKDB_MAGIC = b"DUCK"      # bytes 8-11 of every DuckDB database file (its main header)


def check_duckdb_file(db: Path | str) -> None:
    """Refuse a file that exists and is not a DuckDB database (a CSV given as --db, say): DuckDB would
    otherwise fail on it, or an empty file it opens would become a database. Reads 12 bytes."""
    path = Path(db)
    if not path.exists():
        return
    if path.is_dir():
        raise DataError(f"{db} is a directory, not a DuckDB database file; give a .duckdb file")
    try:
        with open(path, "rb") as f:
            head = f.read(12)
    except OSError as e:
        raise DataError(f"cannot read database {db}: {e.strerror}") from None
    if len(head) < 12 or head[8:12] != DUCKDB_MAGIC:
        raise DataError(f"{db} is not a DuckDB database (no DuckDB header); nothing was written to it: "
                        "give a .duckdb file, new or written by DuckDB")


def connect(db: Path | str = MEMORY, read_only: bool = False) -> DuckDBBackend:
    """Open (or create) a DuckDB database file; ":memory:" for an in-memory database. An existing file that
    is not a DuckDB database is refused (`check_duckdb_file`)."""
    in_memory = str(db) == MEMORY
    if not in_memory:
        check_duckdb_file(db)
    created = not in_memory and not read_only and not Path(db).exists()
    try:
        con = duckdb.connect(MEMORY if in_memory else str(db), read_only=read_only)
        # no progress bar: DuckDB would draw its own on stderr for every long query, even under -q
        con.execute("SET enable_progress_bar = false")
    except duckdb.Error as e:
        raise DataError(f"cannot open database {db}: {str(e).splitlines()[0]}") from None
    return DuckDBBackend(con, None if in_memory else Path(db), created=created)
