"""Materializing the release: the generalized table (or view), exports, written atomically.

The release keeps the source's column names: each quasi-identifier holds its hierarchy label at the
chosen level (the original value at level 0), the sensitive attributes and any `release.keep` columns
are copied unchanged, and the rows of suppressed blocks are left out. A table is built under a
temporary name and swapped in by one transaction (drop old, rename new), so a failed run leaves the
previous release, or nothing, never half a table. A view needs its mapping tables to persist: they are
written beside it (``<name>__map_<i>``) in the same transaction. A view enforces the policy at every
read (`sqlanon.views`). Spark has no transactions: there the
drop and the rename are two catalog calls, and a failed view release drops the tables it created.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import templates, views
from .checker import NodeResult
from .engine import Backend
from .errors import DataError, PolicyError
from .frequency import FrequencySet
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
    out = []
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


def _select_context(policy, fs, result, map_names, suppressed, source, inline_suppressed: bool = False):
    return dict(columns=release_columns(policy, fs, result.levels), source=source or fs.source,
                maps=map_names or {q.name: q.map_table for q in fs.qis}, suppressed=suppressed,
                suppressed_codes=suppressed_codes(fs, result) if inline_suppressed else [])


class Companion:
    """Outputs released together with the table (anonymized marginals): one release, one transaction.

    `build()` creates them under temporary names before anything is swapped (the slow part, where a
    failure leaves the previous release untouched); `swap()` runs inside the release's transaction
    (renames, or views); `cleanup()` drops what `build()` made after a failure; `outputs()` describes
    what was released.
    """

    def build(self) -> None:
        pass

    def swap(self) -> None:
        pass

    def cleanup(self) -> None:
        pass

    def outputs(self) -> list[Output]:
        return []


def materialize(policy: Policy, fs: FrequencySet, result: NodeResult,
                companions: list[Companion] = ()) -> list[Output]:
    b: Backend = fs.backend
    name = policy.release.name
    kind = policy.release.materialize
    outputs: list[Output] = []
    if kind == "none":
        return outputs
    if name.startswith("__sqlanon"):
        raise PolicyError("release.name", "names starting with __sqlanon are reserved")
    if kind == "table":
        tmp = f"{name}__sqlanon_tmp"
        supp = fs.create_suppressed_table(result)
        ctx = _select_context(policy, fs, result, None, supp, None)
        try:
            b.drop_relation(tmp)          # left by a run that crashed before it could clean up
            b.execute("release_table.sql", name=tmp, **ctx)
            for c in companions:
                c.build()
            with b.transaction():
                b.drop_relation(name)
                b.execute("rename_table.sql", old=tmp, new=name)
                for c in companions:
                    c.swap()
        except Exception:
            _drop_quietly(b, tmp)
            for c in companions:
                c.cleanup()
            raise
    else:
        source = _view_source(policy, fs)
        maps = views.view_maps(policy, fs)
        views.enforcement(policy, views.view_criteria(policy, fs))   # refuse what a view cannot enforce, first
        try:
            for c in companions:
                c.build()
            with b.transaction():
                # the old release first: on engines that track dependencies (PostgreSQL) its view holds the old maps
                b.drop_relation(name)
                for q in fs.qis:
                    b.execute("persist_map.sql", name=maps[q.name], map_table=q.map_table)
                # the view enforces the policy at every read (sqlanon/views.py), the release's
                # suppressed blocks included: they fail the same checks
                views.create_view(b, name, policy, fs, result.levels, maps, source)
                for c in companions:
                    c.swap()
        except Exception:
            for c in companions:
                c.cleanup()
            raise
    rows = b.fetchone("count_rows.sql", relation=name)[0]
    outputs.append(Output(kind, name, int(rows)))
    for c in companions:
        outputs.extend(c.outputs())
    for path in policy.release.export:
        outputs.append(export(b, name, path))
    return outputs


def _drop_quietly(b: Backend, name: str) -> None:
    """Remove a half-built table after a failure, without hiding that failure behind a second one."""
    try:
        b.execute("drop_relation.sql", name=name, kind="TABLE")
    except Exception:
        pass


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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".sqlanon_tmp")
    fmt = "parquet" if path.suffix.lower() == ".parquet" else "csv"
    try:
        b.export(relation, tmp, fmt)
    except DataError:
        tmp.unlink(missing_ok=True)
        raise
    except Exception as e:
        tmp.unlink(missing_ok=True)
        raise DataError(f"cannot write {path}: {str(e).splitlines()[0]}") from None
    tmp.replace(path)
    return Output(fmt, str(path), int(b.fetchone("count_rows.sql", relation=relation)[0]))
