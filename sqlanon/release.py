"""Materializing the release: the generalized table (or view), exports, written atomically.

The release keeps the source's column names: each quasi-identifier holds its hierarchy label at the
chosen level (the original value at level 0), the sensitive attributes and any `release.keep` columns
are copied unchanged, and the rows of suppressed blocks are left out. A table is built under a
temporary name and swapped in by one transaction (drop old, rename new), so a failed run leaves the
previous release, or nothing, never half a table. When the preparation kept the staged source
(`FrequencySet._keep_staged`: on DuckDB, when it has at most half the source's rows and holds every
released column), the table is built from it, each staged row repeated by its count: the same rows and
column types as the SELECT over the source (`sqlanon sql`), without reading the source again, in an
order of their own (a table has none; this one does not follow the source's). A view needs its
mapping tables to persist: they are written beside it (``<name>__map_<i>``) in the same transaction.
A view enforces the policy at every read (`sqlanon.views`). A table read from the source again must hold what
the run judged before it is swapped in: its row count, then a file source's stamp or, for a table or a query,
its count of every (class, sensitive values) cell (`check_as_judged`).

Ownership: before anything is built, every name the release will write is checked against the release
catalog (`sqlanon.catalog`): the source table is never a target, and an existing table or view is
replaced only when the catalog shows it is this release's own earlier output (and the policy does not
say ``release.replace: false``). The catalog rows, with the manifest JSON, are written in the swap's
transaction. Exports are checked the same way (never the source file, the policy, a hierarchy file,
the database or a manifest; an existing file only when the catalog shows this release wrote it, or
with ``force``) and written after the commit, each to a temporary file renamed into place.

Spark has no transactions: there the drop, the rename and the catalog rows are separate catalog
calls, made in that order; a failed view release drops the tables it created. A process killed
between the rename and the catalog insert leaves a release the catalog does not list: the next run
refuses to replace it (it never destroys it) until it is dropped by hand.
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import templates, views
from .catalog import (
    CATALOG,
    Catalog,
    Target,
    check_file_target,
    check_targets,
    leftovers,
    new_release_id,
    policy_hash,
    protected_files,
    reserved,
    strict_json,
)
from .checker import NodeResult
from .engine import Backend
from .engines.dialects import compared_type
from .errors import DataError, PolicyError, is_interrupt
from .files import missing_folders, name_max, remove_temporaries, rename_temporaries, temporary_file, write_temporary
from .frequency import STAGE_WEIGHT, FrequencySet, QuasiIdentifier, source_changed
from .policy import Policy


@dataclass
class Output:
    kind: str
    name: str
    rows: int

    def as_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "rows": self.rows}


def release_columns(policy: Policy, fs: FrequencySet, levels: dict[str, int]):
    """(column, qi-or-None, level) in source order: QIs generalized, the others copied."""
    order = [c for c, _ in fs.backend.columns(fs.source)]
    wanted = set(policy.quasi_identifiers) | set(policy.sensitive) | set(policy.release.keep)
    out: list[tuple[str, QuasiIdentifier | None, int | None]] = []
    for c in order:
        if c not in wanted:
            continue
        if c in policy.quasi_identifiers:
            out.append((c, fs.qi(c), levels[c]))
        else:
            out.append((c, None, None))
    return out


def select_sql(policy: Policy, fs: FrequencySet, result: NodeResult, map_names: dict | None = None,
               source: str | None = None, dialect: str = templates.TEMPLATE_DIALECT) -> str:
    """The generalizing SELECT as one self-contained statement (the suppressed blocks' codes inline), in the
    template dialect or transpiled: what the release runs, for a scheduled query or a dbt model."""
    ctx = _select_context(policy, fs, result, map_names, None, source, inline_suppressed=True)
    return templates.render_for("release_select.sql", dialect, **ctx)


def suppressed_codes(fs: FrequencySet, result: NodeResult) -> list[tuple[int, ...]]:
    """The codes of the blocks a node result suppresses, one tuple per block, in the release's column order."""
    if not result.suppressed_rows:
        return []
    names = list(result.levels)
    order = [names.index(col) for col, qi, _ in release_columns(fs.policy, fs, result.levels) if qi is not None]
    codes = result.counts.block_codes[~result.ok][:, order]
    return [tuple(int(v) for v in row) for row in codes]


def _select_context(policy, fs, result, map_names, suppressed, source, inline_suppressed: bool = False,
                    joins: dict[str, str] | None = None):
    return dict(columns=release_columns(policy, fs, result.levels), source=source or fs.source,
                maps=map_names or {q.name: q.map_table for q in fs.qis}, suppressed=suppressed,
                suppressed_codes=suppressed_codes(fs, result) if inline_suppressed else [], joins=joins or {})


class Companion:
    """Outputs released together with the table (anonymized marginals): one release, one transaction.

    `targets()` names what it will write (checked against the release catalog before anything is built);
    `build()` creates them under temporary names before anything is swapped (the slow part, where a
    failure leaves the previous release untouched); `swap()` runs inside the release's transaction
    (renames, or views); `cleanup()` drops what `build()` made after a failure; `outputs()` describes
    what was released.
    """

    def targets(self) -> list[Target]:
        return []

    def build(self) -> None:
        pass

    def swap(self) -> None:
        pass

    def cleanup(self) -> None:
        pass

    def outputs(self) -> Sequence[Output]:
        return []


# the kinds of catalog rows a release owns in the database; an earlier release's objects of these kinds
# that the new one does not write again are dropped in its swap
RELEASE_OBJECTS = ("table", "view", "map", "suppressed", "marginal", "marginal_map")


def release_targets(policy: Policy, fs: FrequencySet, result: NodeResult) -> list[Target]:
    """What a release writes into the database: the table, or the view with its mapping tables. (A view once
    listed a table of its suppressed blocks, which it never wrote: the view judges every class at read time.
    That name, recorded as the release's, let a later run drop a user's table of that name; earlier catalogs
    may still hold such rows, kind ``suppressed``.)"""
    name, kind = policy.release.name, policy.release.materialize
    if kind == "table":
        return [Target(name, "table")]
    return [Target(name, "view")] + [Target(f"{name}__map_{q.index}", "map") for q in fs.qis]


def check_exports(policy: Policy, b: Backend, catalog: Catalog, force: bool = False) -> None:
    """Every `release.export` file may be written: not the source, the policy, a hierarchy, the database or a
    manifest; an existing file only when the catalog shows this release wrote it (or `force`)."""
    if not policy.release.export:
        return
    protected, owned = protected_files(policy, b), catalog.current()
    seen: dict[Path, int] = {}
    for i, path in enumerate(policy.release.export):
        first = seen.setdefault(Path(path).absolute(), i)
        if first != i:      # written twice, the second replacing the first
            raise PolicyError(f"release.export[{i}]", f"{path} is release.export[{first}] again; list each file once")
        check_file_target(path, f"release.export[{i}]", protected, owned, policy.release.name, force)
        missing = missing_folders(Path(path).parent)
        nearest = missing[0].parent if missing else Path(path).absolute().parent
        if not nearest.is_dir():
            raise PolicyError(f"release.export[{i}]", f"{nearest} is a file, not a folder, so {path} cannot be "
                              "written; choose another path")
        longest = name_max(nearest)
        if len(os.fsencode(Path(path).name)) > longest:
            # caught now, not by the rename after the release's commit
            raise PolicyError(f"release.export[{i}]", f"the file name is longer than the {longest} bytes the file "
                              "system allows; choose a shorter one")


def export_format(path) -> str:
    """An export's format by its file name: parquet for .parquet, else csv."""
    return "parquet" if Path(path).suffix.lower() == ".parquet" else "csv"


def materialize(policy: Policy, fs: FrequencySet, result: NodeResult,
                companions: Sequence[Companion] = (), manifest: Callable[[list[Output]], dict] | None = None,
                release_id: str | None = None, force: bool = False,
                manifest_path: Path | None = None) -> list[Output]:
    """Write the release (and its companions) and its catalog rows in one transaction, then its exports.

    Before anything is built, every target is checked against the release catalog (`sqlanon.catalog`):
    nothing that is the source, or that this release did not write earlier, is replaced. `manifest`
    (outputs -> manifest dict) is called inside the transaction; its result is the catalog row's JSON, and
    with `manifest_path` the manifest file's too: written inside the transaction like the exports (a file that
    cannot be written rolls the release back), renamed into place once it commits.
    """
    b: Backend = fs.backend
    name = policy.release.name
    kind = policy.release.materialize
    outputs: list[Output] = []
    if kind == "none":
        return outputs
    if reserved(name):
        raise PolicyError("release.name", f"names starting with __sqlanon and {CATALOG} are reserved")
    catalog = Catalog(b)
    companions = list(companions)
    targets = release_targets(policy, fs, result) + [t for c in companions for t in c.targets()]
    check_targets(b, policy, name, targets, replace=policy.release.replace, catalog=catalog)
    check_exports(policy, b, catalog, force)
    stale = leftovers(catalog, name, targets, RELEASE_OBJECTS)
    # rows of kind `suppressed`: a view release of older code wrote that table of block codes, a later one
    # recorded it without writing it (see `release_targets`). Their catalog rows are closed; the relation is
    # dropped only when it is such a table, else it is a user's, made since, and left alone
    never_written = {n for n in leftovers(catalog, name, targets, ("suppressed",)) if not _suppressed_blocks(b, n)}
    release_id = release_id or new_release_id()
    exported: list[tuple[Path, Path]] = []     # (temporary file, export path), renamed once the release commits
    made: list[Path] = []                      # folders the exports made, removed (when empty) on a failure

    def recheck() -> None:
        """The same check again inside the transaction, just before the drop: another run may have written
        one of the names while this one was building."""
        check_targets(b, policy, name, targets, replace=policy.release.replace, catalog=catalog)

    def record(rows: int | None = None) -> None:
        """Inside the transaction, after the swap: outputs (`rows`: the release's, when counted already),
        manifest and catalog rows."""
        rows = int(b.fetchrow("count_rows.sql", relation=name)[0]) if rows is None else rows
        outputs.append(Output(kind, name, rows))
        for c in companions:
            outputs.extend(c.outputs())
        outputs.extend(Output(export_format(p), str(p), rows) for p in policy.release.export)
        by_name = {o.name: o.rows for o in outputs}
        done = [Target(t.name, t.kind, by_name.get(t.name)) for t in targets]
        done += [Target(str(Path(p).resolve()), "export", rows) for p in policy.release.export]
        data = manifest(list(outputs)) if manifest is not None else None
        # the files last, still inside the transaction: one that cannot be written rolls the release back
        for path in policy.release.export:
            exported.append((export_to_temporary(b, name, Path(path), made), Path(path)))
        if manifest_path is not None and data is not None:
            exported.append((write_temporary(Path(manifest_path), strict_json(data) + "\n"), Path(manifest_path)))
        catalog.record(name, done, release_id=release_id, policy_sha256=policy_hash(policy.normalized()),
                       node=dict(result.levels), manifest=data, dropped=stale)

    if kind == "table":
        tmp = templates.temporary_relation(name)
        supp = fs.create_suppressed_table(result)
        # from the staged source when the preparation kept it (`FrequencySet._keep_staged`): the same rows
        ctx = _select_context(policy, fs, result, None, supp, fs.staged, joins=fs.joins)
        try:
            b.drop_relation(tmp)          # left by a run that crashed before it could clean up
            b.execute("release_table.sql", name=tmp, weight=STAGE_WEIGHT if fs.staged else None, **ctx)
            rows = _released_rows(policy, fs, result, tmp, supp)
            for c in companions:
                c.build()
            with b.transaction():
                recheck()
                b.drop_relation(name)
                b.execute("rename_table.sql", old=tmp, new=name)
                for c in companions:
                    c.swap()
                _drop_stale(b, catalog, [n for n in stale if n not in never_written])
                record(rows)
        except BaseException:
            _drop_quietly(b, tmp)
            for c in companions:
                c.cleanup()
            remove_temporaries([t for t, _ in exported], made)
            raise
    else:
        source = _view_source(policy, fs)
        maps = views.view_maps(policy, fs)
        views.enforcement(policy, views.view_criteria(policy, fs))   # refuse what a view cannot enforce, first
        try:
            for c in companions:
                c.build()
            with b.transaction():
                recheck()
                # the old release first: on engines that track dependencies (PostgreSQL) its view holds the old maps
                b.drop_relation(name)
                for q in fs.qis:
                    b.execute("persist_map.sql", name=maps[q.name], map_table=q.map_table)
                # the view enforces the policy at every read (sqlanon/views.py), the release's
                # suppressed blocks included: they fail the same checks
                views.create_view(b, name, policy, fs, release_columns(policy, fs, result.levels), maps, source)
                for c in companions:
                    c.swap()
                _drop_stale(b, catalog, [n for n in stale if n not in never_written])
                record()
        except BaseException:
            for c in companions:
                c.cleanup()
            remove_temporaries([t for t, _ in exported], made)
            raise
    rename_temporaries(exported, f"the release {name} is written")     # after the commit: the release stands
    return outputs


def _released_rows(policy: Policy, fs: FrequencySet, result: NodeResult, table: str,
                   suppressed: str | None) -> int:
    """The rows of the release just built in `table`, which must be the rows the run judged: the source's less
    the suppressed ones. Where the release read the source again (not its staged copy) rows written, deleted
    or changed to a value outside the hierarchies since the preparation read it make them differ: then the
    release is refused (`source_changed`) before it is swapped in. With an entity key the counts are of
    persons, not rows, and are not compared. Rows changed in place keep the count: a source file must then be
    unwritten since the run began to read it (`FrequencySet.check_source_unchanged`), and a table or a query,
    which has no such stamp, must give the release exactly the cells judged (`check_as_judged`)."""
    rows = int(fs.backend.fetchrow("count_rows.sql", relation=table)[0])
    expected = fs.rows - result.suppressed_rows
    if not fs.entity and rows != expected:
        raise source_changed(policy.source.label, f"{expected:,} rows judged for release, {rows:,} read now")
    if fs.staged:           # the staged copy is what the run judged
        return rows
    if fs.source_stamped:
        fs.check_source_unchanged()
    else:
        levels = [(col, lvl) for col, qi, lvl in release_columns(policy, fs, result.levels) if qi is not None]
        check_as_judged(fs, table, levels + [(s.name, 0) for s in fs.sensitives], "the release",
                        suppressed=suppressed, levels=result.levels)
    return rows


def judged_attributes(fs: FrequencySet, columns: Sequence[tuple[str, int]],
                      types: dict[str, str]) -> list[dict[str, object]]:
    """How `judged_difference.sql` compares released columns ((name, level) each: a quasi-identifier at its
    level, a sensitive attribute at 0) with the judged cells: a label by its level's code; a value copied from the
    source by its code, or as a value of the type `compared_type` gives for it (`types`: the released relation's
    column types)."""
    sensitive = {s.name: s for s in fs.sensitives}
    out: list[dict[str, object]] = []
    for name, level in columns:
        typed = compared_type(types.get(name, "")) if level == 0 else None
        if name in sensitive:
            s = sensitive[name]
            out.append({"name": name, "map": s.map_table, "label": None, "code": "code", "qi": None, "cell": s.col,
                        "type": typed})
        else:
            q = fs.qi(name)
            out.append({"name": name, "map": q.map_table, "label": f"l{level}" if level else None,
                        "code": f"c{level}", "qi": q.index, "cell": None, "type": typed})
    return out


def check_as_judged(fs: FrequencySet, relation: str, columns: Sequence[tuple[str, int]], what: str,
                    count_col: str | None = None, suppressed: str | None = None,
                    levels: dict[str, int] | None = None) -> None:
    """Refuse (`source_changed`) a release built from a source read again that does not hold exactly the cells
    the run judged: each combination of the released `columns` ((name, level) each) counted in `relation`
    (its rows, or the sum of `count_col`) against the bottom frequency set less the `suppressed` blocks of the
    node at `levels`. Exact for every model judged per class, whatever changed in the source since the
    preparation read it (a sensitive value rewritten in place keeps every row count). One GROUP BY of the
    release and one of the frequency set, for the sources no file stamp covers (tables, queries)."""
    attributes = judged_attributes(fs, columns, dict(fs.backend.columns(relation)))
    supp_levels = [(fs.qi(a), lvl) for a, lvl in (levels or {}).items()] if suppressed else []
    needed = {a["qi"] for a in attributes if a["qi"] is not None} | {q.index for q, _ in supp_levels}
    differ = int(fs.backend.fetchrow("judged_difference.sql", relation=relation, attributes=attributes,
                                     count_col=count_col, fs=fs.fs_table, qis=[q for q in fs.qis if q.index in needed],
                                     suppressed=suppressed, suppressed_levels=supp_levels, joins=fs.joins)[0])
    if differ:
        raise source_changed(fs.policy.source.label, f"{differ:,} cells of {what} differ in count from those the "
                             "run judged")


def _suppressed_blocks(b: Backend, name: str) -> bool:
    """Whether `name` is a table of suppressed blocks as older view releases wrote it: integer columns of block
    codes named as the wide frequency set's (`QuasiIdentifier.col`: q<i>_<level>), nothing else."""
    if b.relation_kind(name) != "TABLE":
        return False
    columns = b.columns(name)
    return bool(columns) and all(re.fullmatch(r"q\d+_\d+", c) and "INT" in t.upper() for c, t in columns)


def _drop_stale(b: Backend, catalog: Catalog, stale: list[str]) -> None:
    """Drop an earlier release's objects this one does not write again: views (which may read the mapping
    tables) before tables."""
    kinds = {n: b.relation_kind(n) for n in stale}
    for n in sorted(stale, key=lambda n: kinds[n] != "VIEW"):
        if kinds[n] is not None:
            b.execute("drop_relation.sql", name=n, kind=kinds[n])


def _drop_quietly(b: Backend, name: str) -> None:
    """Remove a half-built table after a failure, without hiding that failure behind a second one."""
    with contextlib.suppress(Exception):
        b.execute("drop_relation.sql", name=name, kind="TABLE")


def _view_source(policy: Policy, fs: FrequencySet) -> str:
    src = policy.source
    table = fs.backend.view_source(src)
    if table is not None:
        return table
    raise PolicyError("release.materialize", "a view must read a source table in the same database; this source "
                      f"is a {src.kind if src.kind != 'table' else 'table in another database'}: use "
                      "materialize: table")


def export(b: Backend, relation: str, path: Path) -> Output:
    """Write the release to Parquet or CSV (by the engine), to a temporary file then renamed."""
    path = Path(path)
    export_to_temporary(b, relation, path).replace(path)
    return Output(export_format(path), str(path), int(b.fetchrow("count_rows.sql", relation=relation)[0]))


def export_to_temporary(b: Backend, relation: str, path: Path, made: list[Path] | None = None) -> Path:
    """`relation` written as Parquet or CSV (by `path`'s suffix) into a new temporary file beside `path` (its
    folders made first, each added to `made`), returned for the caller to rename; a failure is one line
    (DataError), and leaves neither the file nor the folders it made."""
    mine = missing_folders(path.parent)
    tmp = None
    try:
        for f in mine:
            f.mkdir()
            if made is not None:
                made.append(f)
        tmp = temporary_file(path)
        b.export(relation, tmp, export_format(path))
    except BaseException as e:
        remove_temporaries([tmp] if tmp is not None else [], mine)
        if is_interrupt(e):
            raise KeyboardInterrupt from None
        if isinstance(e, OSError):
            raise DataError(f"cannot write {path}: {e.strerror or e} ({e.filename or path.parent}); choose another "
                            "path in release.export") from None
        if isinstance(e, (DataError, KeyboardInterrupt)) or not isinstance(e, Exception):
            raise
        raise DataError(f"cannot write {path}: {str(e).splitlines()[0]}") from None
    return tmp


