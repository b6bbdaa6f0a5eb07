"""Spark SQL through pyspark's SparkSession: local mode on one machine, or any cluster URL.

`source: {engine: spark, master: local[2], table: NAME}` (or `parquet: PATH`, `csv: PATH`,
`query: SELECT ...`), with `conf: {spark.key: value}` for any Spark setting. The templates are the
same as for DuckDB, transpiled by sqlglot; what Spark lacks is rewritten (`sqlanon.engines.dialects`):

- no temporary tables: work tables (mapping tables, frequency sets) are cached temporary views,
  computed once (`CACHE TABLE ... AS SELECT`, or a DataFrame from pandas, cached when first read);
- the lattice search's count queries, hundreds of GROUP BYs over one aggregate, run on a copy of the
  bottom frequency set in an in-process DuckDB database when it has at most `LOCAL_COUNTS_MAX_CELLS`
  cells (`local_counts`): Spark builds it from the source in one job and hands it over once (Arrow);
- no REPLACE TABLE AS SELECT in the session catalog: DROP TABLE IF EXISTS, then CREATE TABLE ... USING
  PARQUET AS SELECT;
- no transactions: a release table is written under a temporary name and renamed over the old one
  (the same protocol as on the other engines; on Spark the drop and the rename are two catalog calls,
  not one atomic step), and a failed release drops what it created; the release catalog's rows
  (`sqlanon.catalog`, an append-only Parquet table) are inserted right after the rename: a process
  killed in between leaves a release the catalog does not list, which later runs refuse to replace;
- results come back as Arrow (`DataFrame.toArrow`) and become numpy columns.

Tables live in the session catalog (`spark.sql.warehouse.dir`); with the default in-memory catalog
they are forgotten when the session ends (their files stay), so set `conf: {spark.sql.catalogImplementation:
hive}` or use `release.export` to keep a release from local mode. The release catalog table is registered
again over its files by the next session (`SparkBackend.adopt_orphaned`).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import templates
from ..errors import DataError, PolicyError
from .base import SOURCE_VIEW, Backend, as_pandas, frame_columns, source_select

DEFAULT_MASTER = "local[*]"

# The largest bottom frequency set (cells, i.e. rows of the aggregate) copied to the driver for the lattice
# search. Spark pays a fixed cost per statement (planning, code generation, scheduling: 0.2 to 1 s) and
# scans the whole cached frequency set for every lattice node; the search asks hundreds of such questions of
# one aggregate. Below this many cells (about 40 bytes each, on the driver) the aggregate is fetched once
# (Arrow) into an in-process DuckDB database and every count query of the search and the metrics runs there;
# the source, the frequency set itself and the release stay on Spark. Larger ones stay on Spark, one
# statement per batch of nodes. Setting `spark.sqlanon.localCountsMaxCells` (source.conf) overrides it;
# 0 keeps every query on Spark.
LOCAL_COUNTS_MAX_CELLS = 20_000_000
LOCAL_COUNTS_SETTING = "spark.sqlanon.localCountsMaxCells"

# log4j 2 settings for a session sqlanon starts: Spark's own messages off the terminal (sqlanon reports
# a failed statement itself, as one line)
_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
logger.sqlctx.name = SQLQueryContextLogger
logger.sqlctx.level = off
logger.spark.name = org.apache.spark
logger.spark.level = fatal
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = fatal
"""

_TYPES = {"int": "INTEGER", "bigint": "BIGINT", "smallint": "SMALLINT", "tinyint": "TINYINT", "double": "DOUBLE",
          "float": "FLOAT", "string": "VARCHAR", "date": "DATE", "timestamp": "TIMESTAMP",
          "timestamp_ntz": "TIMESTAMP", "boolean": "BOOLEAN", "binary": "BLOB"}


def _type_name(simple: str) -> str:
    if simple in _TYPES:
        return _TYPES[simple]
    if simple.startswith("decimal"):
        return "DECIMAL" + simple[len("decimal"):]
    if simple.startswith(("varchar", "char", "string collate ")):     # Spark 4: string collate UTF8_LCASE
        return "VARCHAR"
    return simple.upper()


def _collations(data_type) -> list[str]:
    """The collations of the strings `data_type` holds, itself included (pyspark before 4 has no collations: its
    StringType has no such attribute, and every string is binary)."""
    inner = [getattr(data_type, a) for a in ("elementType", "keyType", "valueType") if hasattr(data_type, a)]
    inner += [f.dataType for f in getattr(data_type, "fields", None) or ()]
    own = [data_type.collation or "UTF8_BINARY"] if hasattr(data_type, "collation") else []
    return own + [c for t in inner for c in _collations(t)]


def _binary_type(data_type) -> str:
    """`data_type` in Spark's DDL with every string binary (UTF8_BINARY) and every struct field's name quoted as
    it is (a name may hold spaces, colons or capitals): `STRUCT<`Name`: STRING>` for struct<Name:string collate
    UTF8_LCASE>."""
    if hasattr(data_type, "collation"):
        return "STRING"
    if hasattr(data_type, "elementType"):
        return f"ARRAY<{_binary_type(data_type.elementType)}>"
    if hasattr(data_type, "keyType"):
        return f"MAP<{_binary_type(data_type.keyType)}, {_binary_type(data_type.valueType)}>"
    if hasattr(data_type, "fields"):
        fields = (f"{quote_part(f.name)}: {_binary_type(f.dataType)}" for f in data_type.fields)
        return "STRUCT<" + ", ".join(fields) + ">"
    return data_type.simpleString()


def quote_part(part: str) -> str:
    """One Spark identifier (a column, or one part of a qualified name) as `part`, embedded backticks doubled."""
    return "`" + part.replace("`", "``") + "`"


def quote(name: str) -> str:
    """A Spark name for the catalog API: each part of ``database.table`` (`templates.split_name`) quoted
    (`quote_part`)."""
    return ".".join(quote_part(p) for p in templates.split_name(name))


def _pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import SparkSession
    except ImportError:
        raise DataError("source.engine spark needs the pyspark package (and Java 17): pip install "
                        "'sqlanon[engines]' (or pip install pyspark)") from None
    return SparkSession


def _errors():
    """The exception types a Spark call raises for a refused statement or a lost JVM."""
    out = []
    try:
        from pyspark.errors import PySparkException
        out.append(PySparkException)
    except ImportError:   # pyspark < 3.4
        from pyspark.sql.utils import AnalysisException, ParseException
        out += [AnalysisException, ParseException]
    try:
        from py4j.protocol import Py4JError
        out.append(Py4JError)
    except ImportError:
        pass
    return tuple(out)


def _first_line(e: Exception) -> str:
    for line in str(e).strip().splitlines():
        if line.strip():
            return line.strip()
    return type(e).__name__


def _host_port(hostport: str) -> tuple[str, int]:
    """A standalone master's host and port (7077 when not given): `host:port`, `host`, `[::1]:7077` (an IPv6
    address in brackets, which were passed on to the resolver: "Name or service not known").

    >>> _host_port("127.0.0.1:7078"), _host_port("[::1]:7078"), _host_port("master"), _host_port("[fe80::1]")
    (('127.0.0.1', 7078), ('::1', 7078), ('master', 7077), ('fe80::1', 7077))
    """
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    elif hostport.count(":") == 1:
        host, _, port = hostport.partition(":")
    else:
        host, port = hostport, ""
    return host, int(port or 7077)


def _check_master_reachable(master: str) -> None:
    """A standalone master that does not answer would make Spark retry for a minute: ask first."""
    if not master.startswith("spark://"):
        return
    errors = []
    for hostport in master[len("spark://"):].split(","):
        try:
            with socket.create_connection(_host_port(hostport), timeout=5):
                return
        except (OSError, ValueError) as e:
            errors.append(f"{hostport}: {getattr(e, 'strerror', None) or e}")
    raise DataError(f"cannot reach the Spark master {master} (source.master): {'; '.join(errors)}; start the master "
                    "and its workers, or fix source.master (local[2] runs Spark inside this process)")


def build_session(master: str | None = None, conf: dict | None = None, app_name: str = "sqlanon"):
    """A SparkSession (the running one if there is one: Spark allows one per process).

    Returns (session, created): `created` is False when a session was already running, which sqlanon
    then leaves running when it closes.
    """
    SparkSession = _pyspark()
    master = master or DEFAULT_MASTER
    _check_master_reachable(master)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    settings = {"spark.sql.execution.arrow.pyspark.enabled": "true", "spark.ui.showConsoleProgress": "false",
                "spark.sql.session.timeZone": "UTC"}
    if master.startswith("local"):
        inside = master[len("local["):-1] if master.startswith("local[") and master.endswith("]") else "1"
        first = inside.split(",")[0].strip()
        n = (os.cpu_count() or 2) if first == "*" else int(first) if first.isdigit() else 2
        # one partition per core: the work tables are small next to a cluster's, and fewer tasks cost less
        settings.update({"spark.sql.shuffle.partitions": str(max(2, n)), "spark.ui.enabled": "false",
                         "spark.default.parallelism": str(max(2, n))})
    settings.update({str(k): _conf_value(k, v) for k, v in (conf or {}).items()})
    log4j = None
    if "spark.driver.extraJavaOptions" not in settings:
        fd, log4j = tempfile.mkstemp(prefix="sqlanon-log4j2-", suffix=".properties")
        with os.fdopen(fd, "w") as f:
            f.write(_QUIET_LOG4J)
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{log4j}"
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    log = _jvm_log()
    try:
        with _output_to(log):     # the JVM's own startup chatter (and later output) goes to a log file
            session = builder.getOrCreate()
    except Exception as e:   # no Java, a bad setting, a cluster that refuses: one line
        raise DataError(f"cannot start Spark ({master}): {_first_line(e)} (Spark's output: {log})") from None
    finally:
        if log4j:
            os.unlink(log4j)      # read once, at the JVM's start
    os.unlink(log)                # started: nobody needs the startup chatter (the JVM keeps writing to nowhere)
    return session, True


def _jvm_log() -> str:
    fd, path = tempfile.mkstemp(prefix="sqlanon-spark-", suffix=".log")
    os.close(fd)
    return path


@contextlib.contextmanager
def _output_to(path: str):
    """Point file descriptors 1 and 2 at `path` while the JVM starts (it inherits them), then restore."""
    import sys
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.flush()
    saved = []
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:        # no usable descriptors (an embedded interpreter): leave the output alone
        yield
        return
    target = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def _conf_value(key: str, v) -> str:
    if isinstance(v, dict):       # {env: VARIABLE}: a secret kept out of the policy (and the manifest)
        value = os.environ.get(v["env"])
        if value is None:
            raise PolicyError(f"source.conf.{key}.env", f"environment variable {v['env']} is not set")
        return value
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class SparkBackend(Backend):
    """A SparkSession. Work tables are cached temporary views, dropped again by `close`."""

    engine = "spark"
    dialect = "spark"
    stage_groups = False
    # its "temporary tables" are cached views (CACHE TABLE), kept by the executors: the bottom frequency set
    # stays as it is beside the wide one (`FrequencySet.wide_table`)
    bottom_view_over_wide = False
    stage_view = True

    def __init__(self, spark, owned: bool = False):
        super().__init__()
        _pyspark()
        self.spark = self.con = spark
        self.owned = owned
        self._errors = _errors()
        self._frames: dict[str, Any] = {}     # temporary views made from pandas frames (cached DataFrames)
        self._local: list[Backend] = []          # in-process copies of frequency sets (`local_counts`)
        self._binary_types: dict[str, str] = {}  # collated nested columns' binary types (`collated_columns`)
        # the temporary views this backend made (`_made_temporary`): `close` drops those only, not another
        # backend's on the same session (a caller's session may hold several runs)
        self._temp_views: set[str] = set()

    @classmethod
    def open(cls, source) -> SparkBackend:
        session, created = build_session(source.master, source.conf)
        return cls(session, owned=created)

    def describe(self) -> str:
        try:
            return f"Spark {self.spark.sparkContext.master}"
        except Exception:
            return "Spark"

    # -- running statements ---------------------------------------------------------------------
    def _run_sql(self, sql: str, params, want: str | None, template: str):
        created = _TEMP_VIEW.match(sql)
        try:
            df = self.spark.sql(sql, args=list(params)) if params else self.spark.sql(sql)
            if created:     # recorded once made: a statement that failed made no view, `close` must not drop one
                self._temp_views.add(_unquote(created[1]).lower())
            if want is None:
                return None       # commands (CREATE, DROP, CACHE) run eagerly in spark.sql
            if want == "rows":
                return [tuple(r) for r in df.collect()]
            return _numpy_columns(df)
        except self._errors as e:
            raise DataError(f"Spark refused a query ({template}): {_first_line(e)}") from None

    # -- small tables from Python: a DataFrame from pandas (Arrow), cached as a view ---------------
    def create_table_from_frame(self, name: str, frame, temp: bool = True) -> None:
        frame = as_pandas(frame)
        from pyspark.sql import types as T
        kinds = {"INTEGER": T.IntegerType(), "BIGINT": T.LongType(), "DOUBLE": T.DoubleType(),
                 "BOOLEAN": T.BooleanType(), "VARCHAR": T.StringType(), "TIMESTAMP": T.TimestampType()}
        schema = T.StructType([T.StructField(c, kinds[t], True) for c, t in frame_columns(frame)])
        try:
            df = self.spark.createDataFrame(frame, schema=schema)
            if temp:
                self._drop_temp(name)
                # cached when first read (no job of its own: the statement that reads it fills the cache)
                df = df.cache()
                df.createOrReplaceTempView(name)
                self._temp_views.add(name.lower())
                self._frames[name] = df
                return
            view = f"__sqlanon_frame_{id(frame)}"
            df.createOrReplaceTempView(view)
            try:
                self.execute("create_table_as_relation.sql", name=name, relation=view, temp=False, replace=True)
            finally:
                self.spark.catalog.dropTempView(view)
        except self._errors as e:
            raise DataError(f"Spark refused the rows of {name}: {_first_line(e)}") from None

    def snapshot(self, name: str) -> None:
        """A cached view is no copy: Spark recomputes it from the source when the source is written in this
        session (its cache is invalidated) or a cached block is lost, and the run would then judge, or compare
        its release with, rows it did not read first. So the staged source, written as a view (`stage_view`), is
        read once into a local checkpoint (stored by the executors, memory then disk; a lost block fails the job
        instead of being read again from the source), which takes the view's name."""
        try:
            df = self.spark.table(quote(name)).localCheckpoint(eager=True)
            self._drop_temp(name)
            df.createOrReplaceTempView(name)
            self._temp_views.add(name.lower())
            self._frames[name] = df
        except self._errors as e:
            raise DataError(f"Spark refused to keep a copy of {name}: {_first_line(e)}") from None

    def _drop_temp(self, name: str) -> None:
        old = self._frames.pop(name, None)
        self.spark.catalog.dropTempView(name)
        if old is not None:
            _unpersist(old)

    # -- catalog ------------------------------------------------------------------------------------
    def columns(self, relation: str) -> list[tuple[str, str]]:
        sql = self.sql("describe_relation.sql", relation=relation)
        try:
            schema = self.spark.sql(sql).schema
        except self._errors as e:
            raise DataError(f"Spark refused a query (describe_relation.sql): {_first_line(e)}") from None
        return [(f.name, _type_name(f.dataType.simpleString())) for f in schema.fields]

    def collated_columns(self, relation: str, names: Sequence[str]) -> list[str]:
        """Those of `names` declared with a collation other than UTF8_BINARY (Spark 4: UTF8_LCASE, UNICODE_CI, a
        trailing-space-insensitive RTRIM one...), or holding texts that are (an array, a map or a struct of them):
        a GROUP BY groups 'A' with 'a', and ['A'] with ['a'], under UTF8_LCASE."""
        if not names:
            return []
        sql = self.sql("describe_relation.sql", relation=relation)
        try:
            fields = self.spark.sql(sql).schema.fields
        except self._errors as e:
            raise DataError(f"Spark refused a query (describe_relation.sql): {_first_line(e)}") from None
        collated = {f.name: f.dataType for f in fields
                    if any(c.upper() != "UTF8_BINARY" for c in _collations(f.dataType))}
        # the way out of a nested one, for `binary_collated`: its type written from the schema, not from the name
        # `columns` gives it (upper-cased: a struct's field `name` would come back as NAME)
        self._binary_types.update({n: _binary_type(t) for n, t in collated.items()})
        return [n for n in names if n in collated]

    def binary_collated(self, name: str, type_name: str = "VARCHAR") -> str:
        column = quote_part(name)
        if "<" in type_name:        # COLLATE takes a string only: a nested type is cast to its binary form
            return f"CAST({column} AS {self._binary_types[name]}) AS {column}"
        return f"{column} COLLATE UTF8_BINARY AS {column}"

    def may_collate(self, type_name: str) -> bool:
        # an array, map or struct of strings: Spark compares the strings inside under their collation
        return super().may_collate(type_name) or ("<" in type_name and "STRING" in type_name.upper())

    def relation_kind(self, name: str) -> str | None:
        try:
            if not self.spark.catalog.tableExists(quote(name)):
                return None
            table = self.spark.catalog.getTable(quote(name))
        except self._errors as e:
            raise DataError(f"Spark cannot look up {name}: {_first_line(e)}") from None
        return "VIEW" if (table.tableType or "").upper() in ("VIEW", "TEMPORARY") else "TABLE"

    def name_in_use(self, name: str) -> str | None:
        # a table an earlier session wrote is forgotten by the in-memory catalog, its files kept: the swap's
        # drop_relation deletes them, so they count as a table (a user's saveAsTable was deleted, exit 0)
        return self.relation_kind(name) or ("TABLE" if self._orphaned_location(name) is not None else None)

    def drop_relation(self, name: str) -> None:
        super().drop_relation(name)
        orphan = self._orphaned_location(name)
        if orphan is not None:
            orphan[0].delete(orphan[1], True)

    def adopt_orphaned(self, name: str, columns: list[str]) -> None:
        """With the in-memory catalog, register again a table an earlier session wrote into the warehouse (its
        files are there, its name forgotten), as a table over those files. The release catalog uses it: a
        run in a new session then reads the history the earlier runs recorded and appends to it, where
        creating the table again would fail (Spark refuses a table over an existing location). Files whose
        columns are not `columns` are not sqlanon's: they are left alone, and the run stops."""
        orphan = self._orphaned_location(name)
        if orphan is None:
            return
        location = orphan[1].toString()
        fix = "move them away or set spark.sql.catalogImplementation: hive"
        try:
            self.spark.catalog.createTable(quote(name), path=location, source="parquet")
            found = [f.name for f in self.spark.table(quote(name)).schema.fields]
        except self._errors as e:
            raise DataError(f"{name}: an earlier Spark session left files at {location} that cannot be read as a "
                            f"table ({_first_line(e)}); {fix}") from None
        if found != list(columns):
            # registered over the files' path: dropping it forgets the name and leaves the files
            self.execute("drop_relation.sql", name=name, kind="TABLE")
            raise DataError(f"{name}: the files at {location} are not a sqlanon release catalog (columns "
                            f"{', '.join(found)}); {fix}")

    def _orphaned_location(self, name: str):
        """The files of a managed table an in-memory catalog forgot (it lives as long as its session).

        Spark refuses to create a table over an existing location; with the in-memory catalog a release
        written by an earlier session leaves exactly that. Dropping the release name must then remove
        them, as DROP TABLE would have. Returns (Hadoop FileSystem, Path) or None.
        """
        conf = self.spark.conf
        if conf.get("spark.sql.catalogImplementation", "in-memory") != "in-memory":
            return None
        if self.spark.catalog.tableExists(quote(name)):
            return None
        warehouse = conf.get("spark.sql.warehouse.dir").rstrip("/")
        parts = templates.split_name(name)
        db = parts[-2] if len(parts) > 1 else self.spark.catalog.currentDatabase()
        table = parts[-1].lower()
        location = f"{warehouse}/{table}" if db == "default" else f"{warehouse}/{db}.db/{table}"
        jvm = self.spark._jvm
        path = jvm.org.apache.hadoop.fs.Path(location)
        fs = path.getFileSystem(self.spark._jsc.hadoopConfiguration())
        return (fs, path) if fs.exists(path) else None

    def temporary_tables(self) -> list[str]:
        return [t.name for t in self.spark.catalog.listTables() if t.isTemporary]

    def transaction(self):
        return _DropOnFailure(self)

    def local_counts(self, cells: int) -> Backend | None:
        """An in-memory DuckDB database for a frequency set of at most `LOCAL_COUNTS_MAX_CELLS` cells (see
        there), closed with this backend; None for a larger one."""
        try:
            limit = int(self.spark.conf.get(LOCAL_COUNTS_SETTING, str(LOCAL_COUNTS_MAX_CELLS)))
        except ValueError:
            raise PolicyError(f"source.conf.{LOCAL_COUNTS_SETTING}", "must be a whole number of cells") from None
        if cells > limit:
            return None
        from .duckdb import MEMORY, connect
        local = connect(MEMORY)
        self._local.append(local)
        return local

    def _tables(self) -> set[str]:
        """Every persistent table of every database, as database.table (a release may go into any)."""
        return {templates.join_name([db.name, t.name]) for db in self.spark.catalog.listDatabases()
                for t in self.spark.catalog.listTables(db.name) if not t.isTemporary}

    # -- the source -------------------------------------------------------------------------------
    def source_files(self, path: Path, kind: str) -> list[Path]:
        """Spark reads every file under a folder but those in or named after a '.' or a '_' (its _SUCCESS
        markers, .crc checksums, hidden files), except a partition folder '_name=value'."""
        if not path.is_dir():
            return [path]

        def hidden(part: str) -> bool:
            return part.startswith(".") or (part.startswith("_") and "=" not in part)

        return sorted(p for p in path.rglob("*") if p.is_file()
                      and not any(hidden(part) for part in p.relative_to(path).parts))

    def attach_source(self, source, view: str = SOURCE_VIEW) -> str:
        try:
            if source.kind == "table":
                if self.relation_kind(source.table) is None:
                    db = self.spark.catalog.currentDatabase()
                    raise DataError(f"source table '{source.table}' does not exist in the Spark catalog "
                                    f"(database {db})")
                self.execute("create_source_view.sql", view=view,
                             query="SELECT * FROM " + templates.relation(source.table))
            elif source.kind in ("parquet", "csv"):
                location = source.url or str(source.path)
                reader = self.spark.read
                if source.kind == "csv":
                    reader = reader.option("header", "true").option("inferSchema", "true")
                df = reader.parquet(location) if source.kind == "parquet" else reader.csv(location)
                df.createOrReplaceTempView(view)
                self._temp_views.add(view.lower())
            elif source.kind == "query":
                self.execute("create_source_view.sql", view=view,
                             query=source_select(source.query, "spark"))
            else:
                raise PolicyError("source", f"engine spark reads a table, parquet, csv or a query, not {source.kind}")
        except self._errors as e:
            raise DataError(f"cannot read source {source.label}: {_first_line(e)}") from None
        return view

    # -- exports ------------------------------------------------------------------------------------
    def export(self, relation: str, path: Path, fmt: str) -> None:
        """One file, written by Spark (one partition) next to `path` and moved into place.

        The folder must be one the driver and the executors share (always so in local mode).
        """
        staging = path.with_name(path.name + ".sqlanon_dir")
        try:
            writer = self.spark.table(quote(relation)).coalesce(1).write.mode("overwrite").format(fmt)
            if fmt == "csv":
                writer = writer.option("header", "true")
            writer.save(str(staging))
            parts = sorted(p for p in staging.glob("part-*") if not p.name.endswith(".crc"))
            if len(parts) != 1:
                raise DataError(f"Spark wrote {len(parts)} files for {path.name}; expected one")
            shutil.move(str(parts[0]), str(path))
        except self._errors as e:
            raise DataError(f"cannot write {path}: {_first_line(e)}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def close(self) -> None:
        for local in self._local:
            local.close()
        self._local.clear()
        try:
            for t in self.spark.catalog.listTables():
                if t.isTemporary and t.name.lower() in self._temp_views:   # Spark folds their case
                    self.spark.catalog.dropTempView(t.name)   # also uncaches it
            self._temp_views.clear()
            for df in self._frames.values():
                _unpersist(df)
            self._frames.clear()
        except Exception:   # a session already stopped
            pass
        if self.owned:
            self.spark.stop()


# a statement that makes a temporary view, as `dialects.adapt` writes them for Spark (a temporary table is a
# CACHE TABLE), and its name
_TEMP_VIEW = re.compile(r"\s*(?:CACHE\s+(?:LAZY\s+)?TABLE|CREATE\s+(?:OR\s+REPLACE\s+)?(?:GLOBAL\s+)?TEMP(?:ORARY)?"
                        r"\s+VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(`(?:[^`]|``)*`|[\w.]+)", re.IGNORECASE)


def _unquote(name: str) -> str:
    """A Spark identifier as the catalog lists it: `a``b` -> a`b."""
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _unpersist(df) -> None:
    """Free a cached DataFrame, or a local checkpoint's blocks: those are not in Spark's cache manager, so
    `unpersist()` alone would leave them on the executors of a session the caller keeps."""
    df.unpersist()
    with contextlib.suppress(Exception):     # a plan over no RDD of its own (a cached query): nothing more to free
        df._jdf.queryExecution().analyzed().rdd().unpersist(False)


class _DropOnFailure:
    """Spark has no transactions: tables created inside the block are dropped again if it fails."""

    def __init__(self, backend: SparkBackend):
        self.b = backend

    def __enter__(self):
        self.before = self.b._tables()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            for name in sorted(self.b._tables() - self.before):
                with contextlib.suppress(Exception):
                    self.b.execute("drop_relation.sql", name=name, kind=self.b.relation_kind(name))
        return False


def _numpy_columns(df) -> dict[str, np.ndarray]:
    if hasattr(df, "toArrow"):          # Spark 4
        table = df.toArrow()
        return {name: table.column(i).to_numpy() for i, name in enumerate(table.column_names)}
    frame = df.toPandas()               # Spark 3.5: through Arrow when spark.sql.execution.arrow is on
    return {c: frame[c].to_numpy() for c in frame.columns}
