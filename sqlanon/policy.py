"""The policy: what to anonymize, how, and what to release (DESIGN.md section 3).

A policy is a YAML file or a dict of the same shape. `load_policy` checks its shape and returns a
`Policy` with every field normalized; anything wrong raises `PolicyError` naming the field. The
privacy models themselves are validated by `sqlanon.models.criteria_from_policy` once the sensitive
domains are known.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import PolicyError
from .hierarchy import KINDS, spec_kind

TOP_KEYS = {"source", "quasi_identifiers", "sensitive", "privacy", "utility", "release", "entity_key"}
SOURCE_KINDS = ("table", "csv", "parquet", "query")
UTILITY_METRICS = ("height", "avg_class_size", "discernibility", "kl_divergence")
MATERIALIZE = ("table", "view", "none")


@dataclass
class Source:
    """Where the rows are. kind: table (in `database`, or the connection given), csv, parquet or query."""

    kind: str
    table: str | None = None          # table name (kind=table), or the name to show for other kinds
    database: Path | None = None      # DuckDB file holding `table`
    path: Path | None = None          # csv / parquet file
    query: str | None = None          # a SELECT

    @property
    def label(self) -> str:
        return self.table or (self.path.name if self.path else "query")


@dataclass
class Release:
    name: str
    materialize: str = "table"
    keep: list[str] = field(default_factory=list)       # extra source columns released unchanged
    export: list[Path] = field(default_factory=list)    # .parquet / .csv files to write the release to
    marginals: list = field(default_factory=list)


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

    @property
    def qi_names(self) -> list[str]:
        return list(self.quasi_identifiers)

    @property
    def sensitive_names(self) -> list[str]:
        return list(self.sensitive)

    @property
    def max_suppression(self) -> float:
        return float(self.privacy.get("max_suppression", 0.0) or 0.0)

    def with_quasi_identifiers(self, names: list[str]) -> "Policy":
        """The same policy restricted to some quasi-identifiers (experiments use prefixes of the list)."""
        raw = copy.deepcopy(self.raw)
        raw["quasi_identifiers"] = {n: raw["quasi_identifiers"][n] for n in names}
        return load_policy(raw, base_dir=self.base_dir)

    def normalized(self) -> dict:
        """The policy as it will be written into the manifest (paths as strings)."""
        out = copy.deepcopy(self.raw)
        out.setdefault("privacy", {}).setdefault("max_suppression", self.max_suppression)
        out["utility"] = self.utility
        return out


def _require_mapping(value, fieldname: str) -> dict:
    if not isinstance(value, dict):
        raise PolicyError(fieldname, f"must be a mapping; got {type(value).__name__}")
    return value


def _name(value, fieldname: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PolicyError(fieldname, f"must be a non-empty name; got {value!r}")
    return value


def _path(value, base_dir: Path, fieldname: str) -> Path:
    if not isinstance(value, str) or not value:
        raise PolicyError(fieldname, f"must be a file path; got {value!r}")
    p = Path(value)
    return p if p.is_absolute() else (base_dir / p)


def _parse_source(raw, base_dir: Path) -> Source:
    if raw is None:
        raise PolicyError("source", "missing; give {table: NAME} with database: FILE.duckdb, or csv:, parquet: "
                          "or query:")
    raw = _require_mapping(raw, "source")
    unknown = set(raw) - {"database", "table", "csv", "parquet", "query"}
    if unknown:
        raise PolicyError("source." + sorted(unknown)[0], "unknown key; use database, table, csv, parquet or query")
    given = [k for k in ("csv", "parquet", "query") if k in raw]
    if len(given) > 1:
        raise PolicyError("source", f"give only one of csv, parquet, query; got {', '.join(given)}")
    table = raw.get("table")
    if table is not None:
        table = _name(table, "source.table")
    if given:
        kind = given[0]
        if kind == "query":
            q = raw["query"]
            if not isinstance(q, str) or not q.strip():
                raise PolicyError("source.query", "must be a SELECT statement")
            return Source("query", table=table, query=q)
        path = _path(raw[kind], base_dir, f"source.{kind}")
        if not path.exists():
            raise PolicyError(f"source.{kind}", f"file {path} does not exist")
        return Source(kind, table=table, path=path)
    if table is None:
        raise PolicyError("source.table", "missing; name the table to anonymize (or give csv:, parquet: or query:)")
    database = raw.get("database")
    db = None
    if database is not None:
        db = _path(database, base_dir, "source.database")
        if not db.exists():
            raise PolicyError("source.database", f"database file {db} does not exist")
    return Source("table", table=table, database=db)


def _parse_attributes(raw, fieldname: str, need_hierarchy: bool) -> dict[str, dict | None]:
    if raw is None:
        raise PolicyError(fieldname, "missing")
    out: dict[str, dict | None] = {}
    if isinstance(raw, list):
        for i, name in enumerate(raw):
            if isinstance(name, dict) and len(name) == 1:
                (n, spec), = name.items()
                out[_name(n, f"{fieldname}[{i}]")] = _require_mapping(spec, f"{fieldname}.{n}")
            else:
                out[_name(name, f"{fieldname}[{i}]")] = None
    elif isinstance(raw, dict):
        for name, spec in raw.items():
            _name(name, fieldname)
            out[name] = None if spec is None else _require_mapping(spec, f"{fieldname}.{name}")
    elif isinstance(raw, str):
        out[_name(raw, fieldname)] = None
    else:
        raise PolicyError(fieldname, f"must be a mapping of column -> {{hierarchy: ...}} or a list; got {raw!r}")
    if not out:
        raise PolicyError(fieldname, "must name at least one column")
    for name, spec in out.items():
        if spec is None:
            if need_hierarchy:
                raise PolicyError(f"{fieldname}.{name}", "needs {hierarchy: FILE.csv | " + " | ".join(KINDS[1:]) + "}")
            continue
        unknown = set(spec) - {"hierarchy", "widths", "origin", "levels"}
        if unknown:
            raise PolicyError(f"{fieldname}.{name}.{sorted(unknown)[0]}", "unknown key; use hierarchy, widths, "
                              "origin or levels")
        spec_kind(spec, name)
    return out


def _parse_release(raw, base_dir: Path, default_name: str) -> Release:
    raw = _require_mapping(raw or {}, "release")
    unknown = set(raw) - {"name", "materialize", "keep", "export", "marginals"}
    if unknown:
        raise PolicyError("release." + sorted(unknown)[0], "unknown key; use name, materialize, keep, export, marginals")
    name = _name(raw.get("name", default_name), "release.name")
    materialize = raw.get("materialize", "table")
    if materialize not in MATERIALIZE:
        raise PolicyError("release.materialize", f"must be one of {', '.join(MATERIALIZE)}; got {materialize!r}")
    keep = raw.get("keep", []) or []
    if not isinstance(keep, list) or not all(isinstance(c, str) for c in keep):
        raise PolicyError("release.keep", f"must be a list of column names; got {keep!r}")
    export = raw.get("export", []) or []
    if isinstance(export, str):
        export = [export]
    if not isinstance(export, list):
        raise PolicyError("release.export", f"must be a file path or a list of them; got {export!r}")
    paths = []
    for i, e in enumerate(export):
        p = _path(e, base_dir, f"release.export[{i}]")
        if p.suffix.lower() not in (".parquet", ".csv"):
            raise PolicyError(f"release.export[{i}]", f"must end in .parquet or .csv; got {e!r}")
        paths.append(p)
    return Release(name, materialize, keep, paths, list(raw.get("marginals", []) or []))


def load_policy(source, base_dir: Path | None = None) -> Policy:
    """Read and check a policy from a YAML path or a dict. Paths are relative to the policy's folder."""
    path = None
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise PolicyError("(file)", f"cannot read policy {path}: {e.strerror}") from None
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            raise PolicyError("(file)", f"{path} is not valid YAML{where}: {getattr(e, 'problem', e)}") from None
        base_dir = path.resolve().parent
    else:
        raw = copy.deepcopy(source)
        base_dir = Path(base_dir or ".").resolve()
    if not isinstance(raw, dict):
        raise PolicyError("(top level)", "a policy must be a mapping with source, quasi_identifiers, sensitive, "
                          "privacy")
    unknown = set(raw) - TOP_KEYS
    if unknown:
        raise PolicyError(sorted(unknown)[0], "unknown key; the policy keys are " + ", ".join(sorted(TOP_KEYS)))
    src = _parse_source(raw.get("source"), base_dir)
    qis = _parse_attributes(raw.get("quasi_identifiers"), "quasi_identifiers", need_hierarchy=True)
    sens = _parse_attributes(raw.get("sensitive"), "sensitive", need_hierarchy=False)
    both = set(qis) & set(sens)
    if both:
        raise PolicyError("sensitive", f"column '{sorted(both)[0]}' is also a quasi-identifier; a column is one or "
                          "the other")
    privacy = _require_mapping(raw.get("privacy", {}) or {}, "privacy")
    if not privacy:
        raise PolicyError("privacy", "missing; give at least k (for example privacy: {k: 5})")
    utility = raw.get("utility", "discernibility")
    if utility not in UTILITY_METRICS:
        raise PolicyError("utility", f"must be one of {', '.join(UTILITY_METRICS)}; got {utility!r}")
    default_name = f"{src.label.split('.')[0]}_release"
    release = _parse_release(raw.get("release"), base_dir, default_name)
    entity = raw.get("entity_key")
    if entity is not None:
        entity = _name(entity, "entity_key")
        if entity in qis or entity in sens:
            raise PolicyError("entity_key", f"column '{entity}' is also a quasi-identifier or sensitive attribute")
    return Policy(src, qis, sens, dict(privacy), utility, release, base_dir, raw, path, entity)
