"""The policy: what to anonymize, how, and what to release (docs/DESIGN.md section 3.1).

A policy is a YAML file or a dict of the same shape. `load_policy` checks it and returns a `Policy`
with every field normalized; anything wrong raises `PolicyError` naming the dotted field. The whole
shape (keys, types, allowed values and ranges, the rules between keys of one section: one source kind,
a hierarchy for every quasi-identifier, a column listed once) is validated once, by
`sqlanon.policy_model`, the same models that give the JSON Schema of `sqlanon schema`; unknown keys are
refused with the closest valid one. The criteria are built from the validated privacy section by
`sqlanon.models.criteria_from_policy` once the sensitive domains are known. Only what needs the files,
the engine or several sections at once (a DuckDB file's magic bytes, input files that exist, relation
names per engine, a column both quasi-identifier and sensitive) is checked here.
"""
from __future__ import annotations

import copy
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import files, policy_model, templates
from .errors import PolicyError

UTILITY_METRICS = typing.get_args(policy_model.PolicyModel.model_fields["utility"].annotation)


@dataclass
class Source:
    """Where the rows are, and which engine holds them (docs/DESIGN.md section 3.1; README, "Policy").

    kind:   table, csv, parquet or query;
    engine: duckdb (embedded, the default), postgres or spark.
    Connection details name environment variables (`dsn_env`, `password_env`), never secrets.
    """

    kind: str
    table: str | None = None          # table name (kind=table), or the name to show for other kinds
    database: Path | None = None      # DuckDB file holding `table`
    path: Path | None = None          # csv / parquet file
    query: str | None = None          # a SELECT
    engine: str = "duckdb"
    url: str | None = None            # spark: a csv / parquet location with a scheme (hdfs://, s3a://...)
    dsn_env: str | None = None        # postgres: environment variable holding the connection string / URL
    password_env: str | None = None   # postgres: environment variable holding the password (optional)
    settings: dict = field(default_factory=dict)   # postgres: session settings (set_config)
    master: str | None = None         # spark: master URL (local[2], spark://host:7077, yarn, ...)
    conf: dict = field(default_factory=dict)       # spark: session configuration
    memory_limit: str | None = None   # duckdb: memory_limit (past it DuckDB spills to temp_directory)
    temp_directory: Path | None = None  # duckdb: where it spills
    threads: int | None = None        # duckdb: threads

    @property
    def label(self) -> str:
        if self.table:
            return self.table
        if self.path:
            return self.path.name
        if self.url:
            return self.url.rstrip("/").rsplit("/", 1)[-1]
        return "query"


@dataclass
class Release:
    name: str
    materialize: str = "table"
    keep: list[str] = field(default_factory=list)       # extra source columns released unchanged
    export: list[Path] = field(default_factory=list)    # .parquet / .csv files to write the release to
    marginals: list = field(default_factory=list)
    replace: bool = True        # false: refuse to replace even this release's own earlier output
    drift: dict = field(default_factory=dict)           # view releases: limits of `sqlanon status` (sqlanon.views)


@dataclass(frozen=True)
class SearchOptions:
    """`search:` how the lattice is searched (README, "Large lattices").

    max_nodes:    lattices up to this many nodes get the exact search (every minimal node, the proven
                  optimum); larger ones the heuristic search (`sqlanon.heuristic`);
    time_limit_s: the heuristic search's time budget (it stops earlier when it has proven its result).
    """

    max_nodes: int = 250_000
    time_limit_s: float = 60.0


@dataclass
class Policy:
    source: Source
    quasi_identifiers: dict[str, dict]          # name -> hierarchy spec, in policy order
    sensitive: dict[str, dict | None]           # name -> hierarchy spec (or None), in policy order
    privacy: dict
    utility: str
    release: Release
    base_dir: Path
    raw: dict
    path: Path | None = None
    # the column identifying a person: classes, diversity and metrics then count distinct persons
    entity_key: str | None = None
    search: SearchOptions = field(default_factory=SearchOptions)
    # `privacy` validated (sqlanon.policy_model.Privacy); criteria_from_policy builds the criteria from it
    privacy_model: Any = None
    # the whole policy validated (sqlanon.policy_model.PolicyModel)
    model: Any = None
    # where a policy without a file came from, for the headers of generated SQL ("the manifest m.json")
    origin: str | None = None

    @property
    def described(self) -> str:
        """The policy as the headers of generated SQL name it: ``policy p.yaml``, ``the policy of the manifest
        m.json``, or ``a policy given as a dict``."""
        if self.path is not None:
            return f"policy {self.path}"
        return f"the policy of {self.origin}" if self.origin else "a policy given as a dict"

    @property
    def qi_names(self) -> list[str]:
        return list(self.quasi_identifiers)

    @property
    def sensitive_names(self) -> list[str]:
        return list(self.sensitive)

    @property
    def max_suppression(self) -> float:
        return float(self.privacy.get("max_suppression", 0.0) or 0.0)

    def normalized(self) -> dict:
        """The policy as it will be written into the manifest (paths as strings)."""
        out = copy.deepcopy(self.raw)
        out.setdefault("privacy", {}).setdefault("max_suppression", self.max_suppression)
        out["utility"] = self.utility
        return out


def _name(value, fieldname: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PolicyError(fieldname, f"must be a non-empty name; got {value!r}")
    return value


# how many dotted parts a relation name may have on each engine: catalog.schema.table (DuckDB, PostgreSQL),
# database.table (Spark's session catalog)
NAME_PARTS = {"duckdb": 3, "postgres": 3, "spark": 2}


def _relation_name(value, fieldname: str, engine: str) -> str:
    """A table name as the policy writes it: ``t``, ``schema.t`` or ``catalog.schema.t`` (a part in double
    quotes may hold a dot); checked here so a bad one is a PolicyError, not a failed statement."""
    value = _name(value, fieldname)
    try:
        parts = templates.split_name(value)
    except ValueError as e:
        raise PolicyError(fieldname, f"{e}; write table, schema.table or catalog.schema.table (double-quote a part "
                          "that holds a dot)") from None
    most = NAME_PARTS.get(engine, 3)
    if len(parts) > most:
        shape = "database.table" if most == 2 else "catalog.schema.table"
        raise PolicyError(fieldname, f"{value!r} has {len(parts)} dotted parts; engine {engine} takes at most {most} "
                          f"({shape}); double-quote a part that holds a dot")
    if engine == "spark" and any("`" in part for part in parts):
        # quoted right, yet Spark's session catalog refuses the rename at the very end of the run
        raise PolicyError(fieldname, f"{value!r}: Spark's catalog takes no backtick in a table name; choose another")
    return value


def _path(value, base_dir: Path, fieldname: str) -> Path:
    if not isinstance(value, str) or not value:
        raise PolicyError(fieldname, f"must be a file path; got {value!r}")
    p = Path(value)
    return p if p.is_absolute() else (base_dir / p)


def _duckdb_settings(m: Any, base_dir: Path) -> dict:
    """memory_limit, temp_directory and threads of a DuckDB source (their shape validated by
    `policy_model.DuckDBSource`; here what the shape cannot say: the folder is not a file)."""
    out: dict = {key: getattr(m, key) for key in ("memory_limit", "temp_directory", "threads")
                 if getattr(m, key) is not None}
    if "temp_directory" in out:
        folder = _path(out["temp_directory"], base_dir, "source.temp_directory")
        if folder.exists() and not folder.is_dir():
            raise PolicyError("source.temp_directory", f"{folder} exists and is not a folder; give a folder where "
                              "DuckDB may write its spill files")
        out["temp_directory"] = folder
    if "memory_limit" in out:
        out["memory_limit"] = out["memory_limit"].strip()
    return out


def _source(m: Any, raw: dict, base_dir: Path) -> Source:
    """The validated source model (`policy_model.DuckDBSource` / `PostgresSource` / `SparkSource`: keys,
    types, one table / file / query) completed with what needs the files and the engine: relation names,
    the DuckDB file's magic bytes, input files that exist."""
    engine = m.engine
    table = _relation_name(m.table, "source.table", engine) if m.table is not None else None
    db = None
    if getattr(m, "database", None) is not None:
        db = _path(m.database, base_dir, "source.database")
        if not db.is_file():
            raise PolicyError("source.database", f"database file {db} does not exist" if not db.exists() else
                              f"{db} is not a regular file; give a DuckDB database file")
        with open(db, "rb") as fh:
            if fh.read(12)[8:12] != b"DUCK":      # DuckDB's magic bytes, after the first block's checksum
                raise PolicyError("source.database", f"{db} is not a DuckDB database file; for a CSV or Parquet file "
                                  "write csv: or parquet: instead of database:")
    extra: dict[str, Any] = {"engine": engine}
    if engine == "postgres":
        extra.update(dsn_env=m.dsn_env, password_env=m.password_env, settings=dict(raw.get("settings") or {}))
    elif engine == "duckdb":
        extra.update(_duckdb_settings(m, base_dir))
    elif engine == "spark":
        extra.update(master=m.master, conf=dict(raw.get("conf") or {}))   # {env: VARIABLE} kept as written
    if m.query is not None:
        return Source("query", table=table, query=m.query, database=db, **extra)
    kind = next((k for k in ("csv", "parquet") if getattr(m, k, None) is not None), None)
    if kind is None:
        return Source("table", table=table, database=db, **extra)
    value = getattr(m, kind)
    if engine == "spark" and "://" in value:
        return Source(kind, table=table, url=value, **extra)      # hdfs://, s3a://, file://: Spark reads it
    path = _path(value, base_dir, f"source.{kind}")
    if not path.exists():
        raise PolicyError(f"source.{kind}", f"file {path} does not exist")
    if not (path.is_file() or path.is_dir()):      # a folder is a partitioned data set
        raise PolicyError(f"source.{kind}", f"{path} is not a regular file (a device, pipe or socket); give "
                          f"a {kind.upper() if kind == 'csv' else 'Parquet'} file")
    return Source(kind, table=table, path=path, **extra)


def source_with_table(raw_source: dict | None, table: str) -> dict:
    """A policy's raw `source` pointed at another table of the same engine and connection (for `check
    --table` and `apply`): the connection keys are kept, the table / file / query keys replaced."""
    raw_source = dict(raw_source or {})
    keep = {"engine", "dsn_env", "password_env", "settings", "master", "conf", "memory_limit", "temp_directory",
            "threads"}
    out = {k: v for k, v in raw_source.items() if k in keep}
    out["table"] = table        # DuckDB: a table of the database given by --db (or the default one)
    return out


def _columns(raw: Any) -> dict[str, dict | None]:
    """`quasi_identifiers` / `sensitive` as validated by the model (a mapping, a list of names or of
    {column: hierarchy}, or one name), as column -> hierarchy spec (None: no hierarchy), in policy order."""
    if isinstance(raw, str):
        return {raw: None}
    if isinstance(raw, dict):
        return dict(raw)
    return dict(next(iter(e.items())) if isinstance(e, dict) else (e, None) for e in raw)


def _parse_release(raw, base_dir: Path, default_name: str, engine: str = "duckdb",
                   quasi_identifiers: dict | None = None) -> Release:
    quasi_identifiers = quasi_identifiers or {}
    # the shape (keys, types, allowed values) from the model; what follows needs the engine, the
    # quasi-identifiers and the policy's folder
    m = raw if isinstance(raw, policy_model.Release) else policy_model.validate(policy_model.Release, raw or {},
                                                                                 "release")
    name = _relation_name(default_name if m.name is None else m.name, "release.name", engine)
    keep = list(m.keep)
    for i, c in enumerate(keep):
        if c in keep[:i]:
            raise PolicyError(f"release.keep[{i}]", f"column '{c}' is listed twice; give each column once")
        if c in quasi_identifiers:
            raise PolicyError(f"release.keep[{i}]", f"'{c}' is a quasi-identifier, released generalized, never "
                              "unchanged; remove it from keep")
    export = [m.export] if isinstance(m.export, str) else list(m.export)
    paths = []
    for i, e in enumerate(export):
        p = _path(e, base_dir, f"release.export[{i}]")
        if p.suffix.lower() not in (".parquet", ".csv"):
            raise PolicyError(f"release.export[{i}]", f"must end in .parquet or .csv; got {e!r}")
        paths.append(p)
    from .views import parse_drift  # release.drift: the limits `sqlanon status` checks a view release against
    drift = parse_drift(m.drift.model_dump(exclude_unset=True) if m.drift is not None else None)
    return Release(name, m.materialize, keep, paths, _parse_marginals(m.marginals, engine), m.replace, drift)


def _parse_marginals(marginals: list, engine: str = "duckdb") -> list[dict]:
    """`release.marginals` (anonymized marginals, `sqlanon.marginals`): a list of
    ``{attributes: {column: level, ...}, name: optional}``; a list of columns means level 0 for each.
    Normalized to ``{"attributes": {column: int}, "name": str | None}``; columns and levels are checked
    against the hierarchies when the marginals are built."""
    out = []
    for i, entry in enumerate(marginals):
        attrs = entry.attributes
        if isinstance(attrs, list):
            attrs = {a: 0 for a in attrs}
        if not attrs:
            raise PolicyError(f"release.marginals[{i}].attributes", "must map columns to generalization levels, "
                              "e.g. {age: 2, sex: 0}, or list columns (level 0); got an empty one")
        # a name is a relation's, checked like release.name (an unclosed quote stopped the run with a traceback
        # after its whole search)
        name = None if entry.name is None else _relation_name(entry.name, f"release.marginals[{i}].name", engine)
        out.append({"attributes": dict(attrs), "name": name})
    return out


def _default_release_name(src: Source) -> str:
    """<table>_release beside a source table (in its schema), <file stem>_release for a file, query_release."""
    if src.kind == "table" and src.table:
        parts = templates.split_name(src.table)
        return templates.join_name(parts[:-1] + [parts[-1] + "_release"])
    return f"{src.label.split('.')[0]}_release"


def load_policy(source, base_dir: Path | None = None) -> Policy:
    """Read and check a policy from a YAML path or a dict. Paths are relative to the policy's folder."""
    path = None
    if isinstance(source, (str, Path)):
        path = Path(source)
        text = files.read_text(path, "(file)", "policy", files.POLICY_LIMIT)
        raw = files.load_yaml(text, path, "(file)")
        base_dir = path.resolve().parent
    else:
        raw = copy.deepcopy(source)
        base_dir = Path(base_dir or ".").resolve()
    if not isinstance(raw, dict):
        raise PolicyError("(top level)", "a policy must be a mapping with source, quasi_identifiers, sensitive, "
                          "privacy")
    # the whole policy against its model, once: the shape of every section, with the messages of
    # `sqlanon.policy_model`; what follows needs the files, the engine or several sections at once
    model = policy_model.validate(policy_model.PolicyModel, raw, "")
    src = _source(model.source, raw["source"], base_dir)
    # the model gave every quasi-identifier a hierarchy
    qis = {name: spec for name, spec in _columns(raw["quasi_identifiers"]).items() if spec is not None}
    sens = _columns(raw["sensitive"])
    both = set(qis) & set(sens)
    if both:
        raise PolicyError("sensitive", f"column '{sorted(both)[0]}' is also a quasi-identifier; a column is one or "
                          "the other")
    from .models import privacy_model
    privacy_checked = privacy_model(model.privacy)      # at least one model; the criteria are built from it
    release = _parse_release(model.release, base_dir, _default_release_name(src), src.engine, qis)
    entity = model.entity_key
    if entity is not None and (entity in qis or entity in sens):
        raise PolicyError("entity_key", f"column '{entity}' is also a quasi-identifier or sensitive attribute")
    if release.materialize == "view":     # refused before any search, not after it
        from .views import refuse_unenforceable
        refuse_unenforceable(privacy_checked, list(sens), entity)
    search = SearchOptions(model.search.max_nodes, float(model.search.time_limit_s))
    return Policy(src, qis, sens, dict(raw["privacy"]), model.utility, release, base_dir, raw, path, entity, search,
                  privacy_checked, model)
