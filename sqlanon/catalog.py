"""The release catalog: what sqlanon wrote into a database, so that it replaces only what it made.

Every object a release writes (the table or view, a view's mapping tables and suppressed blocks,
anonymized marginals, bucketized and Privacy-MaxEnt tables, exported files) gets a row in the table
``sqlanon_releases`` of the database it went into::

    seq            BIGINT   one number per write: the rows of one release share it
    name           VARCHAR  the table or view name (an export: the file's absolute path)
    kind           VARCHAR  table, view, map, suppressed, marginal, marginal_map (older releases), bucketized, maxent,
                            export; `dropped` marks an object a later release of the same name removed
    release        VARCHAR  the release the object belongs to (release.name)
    release_id     VARCHAR  one id per run (also in the manifest)
    policy_sha256  VARCHAR  hash of the normalized policy (the manifest's "policy")
    node           VARCHAR  the chosen levels as JSON
    rows           BIGINT
    created        VARCHAR  UTC time, ISO 8601
    manifest       VARCHAR  the manifest JSON (on the release's own row; NULL on the others)

The rows are appended, never updated (Spark's session catalog cannot UPDATE or DELETE a Parquet table),
in the same transaction as the swap that writes the objects (`sqlanon.release`): a kill after the
commit leaves both the release and its complete record; a kill before it leaves neither. The newest
row of a name says who owns it now.

The rule (`check_targets`, applied before anything is built and again inside the swap's transaction):
a target that exists is replaced only when the catalog's newest row for it belongs to the same release,
and the policy does not say ``release.replace: false``; the source table is never a target, whoever owns
it. A refusal is a `ReleaseRefused` (exit code 2) naming the object. Files (`check_file_target`): never
the source, the policy, a hierarchy file or the database; an existing file only when the catalog shows
this release wrote it, or with ``--force``.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UserError, is_interrupt

CATALOG = "sqlanon_releases"
COLUMNS = [("seq", "BIGINT"), ("name", "VARCHAR"), ("kind", "VARCHAR"), ("release", "VARCHAR"),
           ("release_id", "VARCHAR"), ("policy_sha256", "VARCHAR"), ("node", "VARCHAR"), ("rows", "BIGINT"),
           ("created", "VARCHAR"), ("manifest", "VARCHAR")]
ROW_COLUMNS = [c for c, _ in COLUMNS if c != "manifest"]
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
RELEASE_KINDS = ("table", "view")     # the kinds of a release's own row (the one holding the manifest)


class ReleaseRefused(UserError):
    """sqlanon would replace something it did not make (or that the policy forbids replacing)."""


@dataclass
class Entry:
    seq: int
    name: str
    kind: str
    release: str
    release_id: str | None
    policy_sha256: str | None
    node: str | None
    rows: int | None
    created: str | None


@dataclass
class Target:
    """An object a run is about to write: a relation (`name`) or an exported file (kind `export`)."""
    name: str
    kind: str
    rows: int | None = None


def policy_hash(normalized_policy: dict) -> str:
    """sha256 of the normalized policy as canonical JSON (sorted keys): what the catalog and manifest record."""
    text = json.dumps(normalized_policy, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_release_id() -> str:
    return os.urandom(8).hex()


class Catalog:
    """The catalog table of one backend's database (its current schema)."""

    def __init__(self, backend):
        self.b = backend
        # Spark's in-memory catalog forgets the table between sessions; its files, the history, stay
        backend.adopt_orphaned(CATALOG, [c for c, _ in COLUMNS])

    def key(self, name: str) -> str:
        """How the engine compares names: PostgreSQL keeps case (names are quoted), DuckDB folds the case of ASCII
        letters only (it holds "été" and "ÉTÉ" apart), Spark lower-cases."""
        return name_key(self.b.engine, name)

    def exists(self) -> bool:
        return self.b.relation_kind(CATALOG) is not None

    def entries(self) -> list[Entry]:
        if not self.exists():
            return []
        rows = self.b.fetchall("catalog_rows.sql", name=CATALOG, columns=ROW_COLUMNS)
        return [Entry(*row) for row in rows]

    def current(self) -> dict[str, Entry]:
        """The newest row of each name (names folded as the engine folds them), dropped objects left out."""
        out: dict[str, Entry] = {}
        for e in self.entries():
            key = e.name if e.kind == "export" else self.key(e.name)
            if e.kind == "dropped":
                out.pop(key, None)
            else:
                out[key] = e
        return out

    def owner(self, name: str, export: bool = False) -> Entry | None:
        return self.current().get(name if export else self.key(name))

    def release(self, release_id: str) -> Entry | None:
        """The release row (table or view) written by one run, however old."""
        for e in self.entries():
            if e.release_id == release_id and e.kind in RELEASE_KINDS:
                return e
        return None

    def latest_release(self, name: str) -> Entry | None:
        e = self.current().get(self.key(name))
        return e if e is not None and e.kind in RELEASE_KINDS else None

    def manifest(self, entry: Entry) -> dict | None:
        row = self.b.fetchone("catalog_manifest.sql", [entry.seq, entry.name], name=CATALOG)
        return json.loads(row[0]) if row and row[0] else None

    def record(self, release: str, targets: list[Target], *, release_id: str, policy_sha256: str | None = None,
               node: dict | None = None, manifest: dict | None = None, dropped: Sequence[str] = ()) -> int:
        """Append the rows of one write (inside the caller's transaction); returns its seq. The manifest goes
        on the release's own row (the first target of kind table/view)."""
        self.b.execute("catalog_create.sql", name=CATALOG, columns=COLUMNS)
        seqs = [e.seq for e in self.entries()]
        seq = (max(seqs) if seqs else 0) + 1
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        node_text = json.dumps(node) if node is not None else None
        manifest_text = strict_json(manifest, indent=None) if manifest is not None else None
        holder = next((t for t in targets if t.kind in RELEASE_KINDS), None)
        cols = [c for c, _ in COLUMNS]
        for t in targets:
            values = [seq, t.name, t.kind, release, release_id, policy_sha256, node_text,
                      None if t.rows is None else int(t.rows), created, manifest_text if t is holder else None]
            self.b.execute("catalog_insert.sql", values, name=CATALOG, columns=cols)
        for name in dropped:
            self.b.execute("catalog_insert.sql", [seq, name, "dropped", release, release_id, None, None, None,
                                                  created, None], name=CATALOG, columns=cols)
        return seq


def json_default(o):
    """JSON for what manifests and reports hold besides plain values: numpy numbers and arrays, paths."""
    import numpy as np
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o).__name__)


_INFINITE = ("\x00sqlanon:+inf\x00", "\x00sqlanon:-inf\x00")     # stand-ins no value holds (a NUL in a text)


def strict_json(data: Any, indent: int | None = 2) -> str:
    """JSON text every parser reads (RFC 8259): json.dumps writes an infinite float as Infinity and NaN as NaN,
    which JavaScript's JSON.parse and other strict readers refuse. An infinite number is written 1e999 (or
    -1e999), a number of the grammar that Python's json and JSON.parse read back as infinity; NaN, which has no
    JSON form, as null. Otherwise as json.dumps with `json_default`.

    >>> strict_json({"a": float("inf"), "b": [float("nan"), 1.5]}, indent=None)
    '{"a": 1e999, "b": [null, 1.5]}'
    """
    import numpy as np

    def finite(o: Any) -> Any:
        if isinstance(o, dict):
            return {k: finite(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [finite(v) for v in o]
        if isinstance(o, np.ndarray):
            return finite(o.tolist())
        if isinstance(o, (float, np.floating)) and not math.isfinite(o):
            return None if math.isnan(o) else _INFINITE[int(o < 0)]
        return o
    text = json.dumps(finite(data), indent=indent, default=json_default)
    for mark, number in zip(_INFINITE, ("1e999", "-1e999")):
        text = text.replace(json.dumps(mark), number)
    return text


# -- ownership ------------------------------------------------------------------------------------

def name_key(engine: str, name: str) -> str:
    """A table's or a column's name as `engine` compares it (`Catalog.key`)."""
    if engine == "postgres":
        return name
    return name.translate(_ASCII_LOWER) if engine == "duckdb" else name.lower()


def column_named(backend, columns, name: str) -> str | None:
    """The column of `columns` (names) the engine reads for `name`, or None: DuckDB and Spark match a name
    whatever the case of its letters, so `PID` is the column `pid` names."""
    wanted = name_key(backend.engine, name)
    return next((c for c in columns if name_key(backend.engine, c) == wanted), None)


def reserved(name: str) -> bool:
    """Whether a relation name is sqlanon's: the catalog, or any name starting with __sqlanon, whatever its
    schema (``main.sqlanon_releases`` is the catalog too)."""
    last = _parts(name)[-1].translate(_ASCII_LOWER)   # DuckDB matches __SQLANON_TMP_... to __sqlanon_tmp_...
    return last.startswith("__sqlanon") or last.casefold() == CATALOG


def source_relations(policy, backend) -> list[tuple[str | None, str]]:
    """(schema or None, table) of every relation of the output database the policy's source reads: the
    source table when it lives there, or the tables a source query names."""
    src = policy.source
    if src.kind == "table":
        if backend.engine == "duckdb" and src.database is not None and (
                backend.path is None or Path(src.database).resolve() != Path(backend.path).resolve()):
            return []       # another DuckDB file, attached read-only
        parts = _parts(src.table)
        return [(parts[-2] if len(parts) > 1 else None, parts[-1])]
    if src.kind == "query":
        from . import templates
        try:
            tree = templates.parse(src.query, backend.dialect if backend.engine != "duckdb" else "duckdb")
        except Exception:
            return []
        return [(t.db or None, t.name) for t in tree.find_all(templates.exp.Table)]
    return []


def _parts(name: str) -> list[str]:
    """``schema.table`` split as the policy writes relation names (quoted parts may hold dots)."""
    from . import templates
    try:
        return templates.split_name(name)
    except ValueError:
        return [str(name)]


def _current_schema(backend) -> str | None:
    try:
        if backend.engine == "spark":
            return backend.spark.catalog.currentDatabase()
        return backend.fetchrow("current_schema.sql")[0]
    except Exception as e:
        if is_interrupt(e):         # Ctrl-C, which DuckDB reports as an exception: still an interrupt
            raise KeyboardInterrupt from None
        return None


def _where(backend) -> str:
    return backend.describe()


def check_targets(backend, policy, release: str, targets: list[Target], replace: bool = True,
                  catalog: Catalog | None = None, sources: Sequence[str] = (),
                  name_field: str = "release.name") -> None:
    """Refuse (ReleaseRefused) before anything is written when a relation target is the source (the policy's,
    or one of `sources`: relations the run reads), or exists and is not this release's own earlier output
    per the catalog, or exists and `replace` is false. `name_field` is what the line tells the user to change
    (maxent and bucketize name their tables by --name, not by release.name)."""
    cat = catalog or Catalog(backend)
    owned = cat.current()
    read = (source_relations(policy, backend) if policy is not None else []) + [(None, s) for s in sources if s]
    schema = _current_schema(backend) if read else None
    for t in targets:
        if t.kind == "export":
            continue
        if reserved(t.name):
            raise ReleaseRefused(f"refusing to write {t.name}: names starting with __sqlanon and the catalog "
                                 f"{CATALOG} are reserved; choose another {name_field}")
        parts = _parts(t.name)
        t_schema, t_name = (parts[-2] if len(parts) > 1 else None), parts[-1]
        longest = getattr(backend, "max_identifier_bytes", None)
        if longest is not None and len(t_name.encode("utf-8")) > longest:
            # PostgreSQL cuts longer names silently: a view release's r__map_0 and r__map_1 became one table, and
            # the view joined one attribute against the other's map
            raise ReleaseRefused(f"refusing to write {t.kind} {t.name}: the name {t_name} is longer than the "
                                 f"{longest} bytes {_where(backend)} keeps; choose a shorter {name_field}")
        for s_schema, s_name in read:
            a, b = s_schema or schema, t_schema or schema       # no schema: the current one
            if cat.key(s_name) == cat.key(t_name) and (a is None or b is None or cat.key(a) == cat.key(b)):
                raise ReleaseRefused(f"refusing to write {t.kind} {t.name}: it is a source this run reads "
                                     f"(in {_where(backend)}); choose another name")
        existing = backend.name_in_use(t.name)
        if existing is None:
            continue
        e = owned.get(cat.key(t.name))
        if e is None or e.release != release or _family(e.kind) != _family(t.kind):
            # a release's outputs of another kind are not its own earlier output: `sqlanon maxent --name tr`
            # replaced the anonymized release tr with raw quasi-identifiers beside inferred sensitive values
            whose = ("sqlanon did not create it" if e is None else f"it belongs to release {e.release}"
                     if e.release != release else f"it is the {e.kind} of release {e.release}, not a {t.kind} output")
            raise ReleaseRefused(f"refusing to replace {existing.lower()} {t.name} in {_where(backend)}: {whose} "
                                 f"(per {CATALOG}); choose another {name_field} or drop it yourself")
        if not replace:
            raise ReleaseRefused(f"refusing to replace {existing.lower()} {t.name} in {_where(backend)}: the "
                                 f"policy says release.replace: false; choose another {name_field} or drop it")


def _family(kind: str) -> str:
    """Kinds one writer replaces among themselves: a release's table, view and their mapping and suppressed
    tables (a release may switch from view to table); every other writer's kind (marginal, maxent, bucketized)
    stands alone."""
    return "release" if kind in (*RELEASE_KINDS, "map", "suppressed") else kind


def leftovers(catalog: Catalog, release: str, keep: list[Target], kinds: tuple[str, ...]) -> list[str]:
    """Objects (of `kinds`) an earlier write of `release` made and this one does not: dropped in its swap."""
    names = {catalog.key(t.name) for t in keep}
    return [e.name for k, e in catalog.current().items()
            if e.release == release and e.kind in kinds and k not in names]


# -- files ----------------------------------------------------------------------------------------

def protected_files(policy, backend=None) -> dict[Path, str]:
    """Files no export may overwrite, even with --force: the source, the policy, hierarchy files, the database."""
    out: dict[Path, str] = {}
    src = policy.source
    for p in (src.path, src.database):
        if p is not None:
            out[Path(p).resolve()] = "the source"
    if policy.path is not None:
        out[Path(policy.path).resolve()] = "the policy"
    if backend is not None and getattr(backend, "path", None):
        out[Path(backend.path).resolve()] = "the database"
    for specs in (policy.quasi_identifiers, policy.sensitive):
        for spec in (specs or {}).values():
            for value in _strings(spec):
                p = Path(value)
                p = p if p.is_absolute() else Path(policy.base_dir) / p
                if p.is_file():
                    out[p.resolve()] = "a hierarchy file"
    return out


def _strings(spec):
    if isinstance(spec, str):
        yield spec
    elif isinstance(spec, dict):
        for v in spec.values():
            yield from _strings(v)
    elif isinstance(spec, list):
        for v in spec:
            yield from _strings(v)


def is_manifest(path: Path) -> bool:
    """A JSON file sqlanon wrote as a manifest (it carries sqlanon_version)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"sqlanon_version"' in head


def manifest_release(path: Path) -> str | None:
    """The release name a manifest file records (None when it is not a readable manifest)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return release_name(data) if isinstance(data, dict) else None


def release_name(manifest: dict) -> str | None:
    """The release a manifest describes: its table/view output, else the policy's release.name, else the
    default name (`<source label>_release`)."""
    for o in manifest.get("outputs") or []:
        if isinstance(o, dict) and o.get("kind") in ("table", "view"):
            return o.get("name")
    policy = manifest.get("policy")
    release = policy.get("release") if isinstance(policy, dict) else None
    if isinstance(release, dict) and release.get("name"):
        return release["name"]
    src = manifest.get("source")
    label = src.get("table") if isinstance(src, dict) else None
    return f"{str(label).split('.')[0]}_release" if label else None


def check_file_target(path: Path, what: str, protected: dict[Path, str], owned: dict[str, Entry],
                      release: str, force: bool, manifest_ok: bool = False, forcible: bool = True) -> None:
    """Refuse to overwrite a protected file, a manifest (for the manifest itself: another release's), or an
    existing file the catalog does not show this release wrote (unless `force`; `forcible`: whether the
    command has --force to suggest)."""
    force_hint = " (pass --force to replace it)" if forcible else ""
    p = Path(path).resolve()
    if p in protected:
        raise ReleaseRefused(f"refusing to write {what} {path}: it is {protected[p]}; choose another path")
    if p.is_dir():
        raise ReleaseRefused(f"refusing to write {what} {path}: it is a directory")
    if not p.exists():
        return
    if is_manifest(p):
        if manifest_ok and (force or manifest_release(p) == release):
            return
        raise ReleaseRefused(f"refusing to overwrite {path} with {what}: it is a sqlanon manifest"
                             + ("" if not manifest_ok else " of another release" + force_hint)
                             + "; choose another path")
    if force:
        return
    e = owned.get(str(p))
    if e is None or e.release != release:
        raise ReleaseRefused(f"refusing to overwrite {path} ({what}): sqlanon did not write it for release "
                             f"{release} (per {CATALOG}); choose another path"
                             + (", remove it, or pass --force" if forcible else ", or remove it"))
