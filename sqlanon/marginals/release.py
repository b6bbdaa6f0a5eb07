"""Releasing anonymized marginals: each a count table in the database beside the release, and an entry
``{"kind": "marginal", ...}`` in the manifest's outputs.

A marginal named ``<release>__marginal_<i>`` (or the name given in the policy) has one column per
attribute, holding its label at the marginal's level (the source column's name; the sensitive
attribute as it is), and ``count``, the rows of that combination (``count_rows``, or ``count_rows_2`` and on,
when an attribute already has that name in any case: `count_column`; the manifest's output names it as
``count_column``); it is one GROUP BY over the source (`marginal_select.sql`). All marginals are built under
temporary names and swapped in by one transaction with the marginals of an earlier run of the same release
that this one does not write again dropped, so a failed run leaves the previous set, never a mix.

A marginal is a table even beside a view release (`materialize: view`): the collection's privacy (maxent
l-diversity over all its marginals, Kifer & Gehrke) is judged once, on the rows read at the release, and no
per-row test at read time could enforce it, so a view counting the live source would publish counts nobody
judged. (Earlier releases wrote views with their mapping tables, kind ``marginal_map``; a release of the same
name drops them.)

Ownership follows the release's rule (`sqlanon.catalog`): a marginal's name that exists is replaced only
when the release catalog shows it is a marginal of this same release; the catalog rows (kind
``marginal``) are written in the same transaction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import (
    Catalog,
    Target,
    _parts,
    check_targets,
    leftovers,
    new_release_id,
    policy_hash,
    reserved,
)
from ..errors import PolicyError
from ..frequency import source_changed
from ..release import Companion, Output, _drop_quietly, _drop_stale, check_as_judged
from ..templates import temporary_relation
from .collection import Marginal


@dataclass
class MarginalOutput(Output):
    levels: dict = field(default_factory=dict)
    materialized: str = "table"
    count_column: str = "count"

    def as_dict(self) -> dict:
        return {"kind": "marginal", "name": self.name, "rows": self.rows, "attributes": list(self.levels),
                "levels": dict(self.levels), "materialized": self.materialized, "count_column": self.count_column}


def count_column(attributes) -> str:
    """The name of a marginal's count column: ``count``, unless an attribute is named so (in any case: DuckDB
    and Spark match column names whatever the case of their ASCII letters), then the first of ``count_rows``,
    ``count_rows_2``, ``count_rows_3``, ... that no attribute is named.

    Examples:
        >>> count_column(["age", "sex"]), count_column(["Count"]), count_column(["count", "COUNT_ROWS"])
        ('count', 'count_rows', 'count_rows_2')
    """
    taken = {a.lower() for a in attributes}     # lower() folds the ASCII letters DuckDB folds, and Spark's
    candidates = ["count", "count_rows"] + [f"count_rows_{i}" for i in range(2, len(taken) + 3)]
    return next(c for c in candidates if c not in taken)



def marginal_names(release_name: str, marginals: list[Marginal]) -> list[str]:
    names = [m.name or f"{release_name}__marginal_{i + 1}" for i, m in enumerate(marginals)]
    # compared as the engines compare them: DuckDB and Spark match names whatever the case of their letters
    seen: dict[str, str] = {}
    for n in names:
        if _key(n) in seen:
            raise PolicyError("release.marginals", f"two marginals are named '{seen[_key(n)]}' and '{n}' (one name "
                              "to the database); give each its own name")
        seen[_key(n)] = n
    for n in names:
        if reserved(n) or _key(n) == _key(release_name):
            raise PolicyError("release.marginals", f"name '{n}' is reserved or is the release's own name")
    return names


def _key(name: str) -> str:
    """A name as the database tells tables apart: its last part (``main.rel`` is ``rel``: schemas are not compared,
    which refuses two marginals in two schemas of one name too), its letters folded."""
    return _parts(name)[-1].lower()


def _columns(session, m: Marginal) -> list[dict]:
    s = session.schema
    out = []
    for a, lvl in m.levels:
        if a == s.sensitive or lvl == 0:
            out.append({"name": a, "level": lvl, "map": None})
        else:
            out.append({"name": a, "level": lvl, "map": s.map_table(a)})
    return out


class MarginalRelease(Companion):
    """The marginals of a collection as a companion of the release (`sqlanon.release.materialize`): tables built
    under temporary names and renamed in the release's transaction; marginals of an earlier, larger release of
    the same name (and the views and mapping tables earlier releases wrote) are dropped in it."""

    def __init__(self, session, marginals: list[Marginal]):
        self.session, self.marginals = session, list(marginals)
        run = session.run
        self.b = run.backend
        self.names = marginal_names(run.policy.release.name, self.marginals)
        self.count_cols = {n: count_column(m.attributes) for n, m in zip(self.names, self.marginals)}
        self.temps = [temporary_relation(n) for n in self.names]

    def targets(self) -> list[Target]:
        return [Target(n, "marginal") for n in self.names]

    def build(self) -> None:
        """The marginal tables under temporary names, each read from the source again: refused
        (`frequency.source_changed`) when a marginal does not count the rows the run judged (rows written,
        deleted or given a value outside a hierarchy since the preparation read the source; marginals refuse
        an entity key and suppression, so every source row is counted) or a source file was written since the
        run began to read it, as the release table is (`release._released_rows`); from a table or a query, when
        its cells' counts differ from those judged (`release.check_as_judged`). A kept staged copy does not
        spare the checks: the marginals read the source itself."""
        fs = self.session.run.fs
        for tmp, m, n in zip(self.temps, self.marginals, self.names):
            self.b.drop_relation(tmp)
            self.b.execute("marginal_release_table.sql", name=tmp, source=self.session.run.source,
                           columns=_columns(self.session, m), count_col=self.count_cols[n])
            counted = int(self.b.fetchrow("sum_of_column.sql", relation=tmp, column=self.count_cols[n])[0])
            if counted != fs.rows:
                raise source_changed(self.session.run.policy.source.label,
                                     f"{fs.rows:,} rows judged, {counted:,} counted now in the marginal {n}")
            if not fs.source_stamped:
                check_as_judged(fs, tmp, m.levels, f"the marginal {n}", count_col=self.count_cols[n])
        fs.check_source_unchanged()

    def swap(self) -> None:
        for tmp, n in zip(self.temps, self.names):
            self.b.drop_relation(n)
            self.b.execute("rename_table.sql", old=tmp, new=n)

    def cleanup(self) -> None:
        for tmp in self.temps:
            _drop_quietly(self.b, tmp)

    def outputs(self) -> list[MarginalOutput]:
        out = []
        for m, n in zip(self.marginals, self.names):
            rows = int(self.b.fetchrow("count_rows.sql", relation=n)[0])
            out.append(MarginalOutput("marginal", n, rows, m.as_dict(), count_column=self.count_cols[n]))
        return out


def materialize_marginals(session, marginals: list[Marginal]) -> list[MarginalOutput]:
    """Create the marginals' tables atomically, on their own (beside a table or view released earlier); `sqlanon
    marginals` releases them with the table instead."""
    if session.run.policy.release.materialize == "none" or not marginals:
        return []
    rel = MarginalRelease(session, marginals)
    run = session.run
    release = run.policy.release.name
    catalog = Catalog(rel.b)
    targets = rel.targets()
    check_targets(rel.b, run.policy, release, targets, replace=run.policy.release.replace, catalog=catalog)
    stale = leftovers(catalog, release, targets, ("marginal", "marginal_map"))
    try:
        rel.build()
        with rel.b.transaction():
            rel.swap()
            _drop_stale(rel.b, catalog, stale)
            outputs = rel.outputs()
            rows = {o.name: o.rows for o in outputs}
            catalog.record(release, [Target(t.name, t.kind, rows.get(t.name)) for t in targets],
                           release_id=new_release_id(), policy_sha256=policy_hash(run.policy.normalized()),
                           dropped=stale)
    except BaseException:
        rel.cleanup()
        raise
    return outputs
