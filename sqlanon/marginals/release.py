"""Releasing anonymized marginals: each a count table (or view) in the database beside the release,
and an entry ``{"kind": "marginal", ...}`` in the manifest's outputs.

A marginal named ``<release>__marginal_<i>`` (or the name given in the policy) has one column per
attribute, holding its label at the marginal's level (the source column's name; the sensitive
attribute as it is), and ``count``, the rows of that combination; it is one GROUP BY over the source
(`marginal_select.sql`). All marginals are built under temporary names and swapped in by one
transaction with the marginals of an earlier run of the same release (``__marginal_<j>`` beyond the
new count) dropped, so a failed run leaves the previous set, never a mix. A view needs its mapping
tables: they are written beside it (``<marginal>__map_<i>``) in the same transaction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import PolicyError
from ..release import Output, _drop_quietly, _view_source
from .collection import Marginal


@dataclass
class MarginalOutput(Output):
    levels: dict = field(default_factory=dict)
    materialized: str = "table"

    def as_dict(self) -> dict:
        return {"kind": "marginal", "name": self.name, "rows": self.rows, "attributes": list(self.levels),
                "levels": dict(self.levels), "materialized": self.materialized}


def marginal_names(release_name: str, marginals: list[Marginal]) -> list[str]:
    names = [m.name or f"{release_name}__marginal_{i + 1}" for i, m in enumerate(marginals)]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise PolicyError("release.marginals", f"two marginals are named '{sorted(dup)[0]}'; give each its own name")
    for n in names:
        if n.startswith("__sqlanon") or n == release_name:
            raise PolicyError("release.marginals", f"name '{n}' is reserved or is the release's own name")
    return names


def _columns(session, m: Marginal, maps: dict | None) -> list[dict]:
    s = session.schema
    out = []
    for a, lvl in m.levels:
        if a == s.sensitive or lvl == 0:
            out.append({"name": a, "level": lvl, "map": None})
        else:
            out.append({"name": a, "level": lvl, "map": (maps or {}).get(a, s.map_table(a))})
    return out


def materialize_marginals(session, marginals: list[Marginal]) -> list[MarginalOutput]:
    """Create the marginals' tables (or views, as `release.materialize` says) atomically."""
    run = session.run
    policy, b = run.policy, run.backend
    kind = policy.release.materialize
    if kind == "none" or not marginals:
        return []
    names = marginal_names(policy.release.name, marginals)
    count_cols = {n: ("count" if "count" not in m.attributes else "count_rows") for n, m in zip(names, marginals)}
    stale = _stale(b, policy.release.name, len(marginals))
    if kind == "table":
        temps = [f"{n}__sqlanon_tmp" for n in names]
        try:
            for tmp, m, n in zip(temps, marginals, names):
                b.drop_relation(tmp)
                b.execute("marginal_release_table.sql", name=tmp, source=run.source, columns=_columns(session, m, None),
                          count_col=count_cols[n])
            with b.transaction():
                for n in stale:
                    b.drop_relation(n)
                for tmp, n in zip(temps, names):
                    b.drop_relation(n)
                    b.execute("rename_table.sql", old=tmp, new=n)
        except Exception:
            for tmp in temps:
                _drop_quietly(b, tmp)
            raise
    else:
        source = _view_source(policy, run.fs)
        with b.transaction():
            for n in stale:
                b.drop_relation(n)
            for m, n in zip(marginals, names):
                b.drop_relation(n)
                maps = {}
                for a, lvl in m.levels:
                    if a != session.schema.sensitive and lvl > 0:
                        maps[a] = f"{n}__map_{session.schema.qi_index(a)}"
                        b.execute("persist_map.sql", name=maps[a], map_table=session.schema.map_table(a))
                b.execute("marginal_release_view.sql", name=n, source=source, columns=_columns(session, m, maps),
                          count_col=count_cols[n])
    out = []
    for m, n in zip(marginals, names):
        rows = int(b.fetchone("count_rows.sql", relation=n)[0])
        out.append(MarginalOutput("marginal", n, rows, m.as_dict(), kind))
    return out


def _stale(b, release_name: str, keep: int) -> list[str]:
    """Marginals of an earlier, larger release with the default names (``__marginal_<j>``, j > keep)."""
    out, j = [], keep + 1
    while b.relation_kind(f"{release_name}__marginal_{j}") is not None:
        out.append(f"{release_name}__marginal_{j}")
        j += 1
    return out
