"""Self-enforcing view releases, their coverage and their drift (docs/DESIGN.md section 4; README "View releases").

A view release (``release: {materialize: view}``) is computed from the live source at every read, so
rows inserted, updated or deleted after the release change its classes. The view therefore enforces
the policy itself: its SQL (`sql_templates/release_view_enforced.sql`) generalizes the live rows,
measures every class (q*-block: the generalized quasi-identifiers, keyed by their integer codes) from
per-(class, sensitive value) counts (GROUP BY; windows only over those small counts), and returns only
rows of classes that satisfy every model of the policy. What is enforced at read time:

- k-anonymity (Samarati and Sweeney; TKDD Sec. 2): the class has >= k rows;
- distinct l-diversity (TKDD Sec. 4.1), entropy l-diversity (TKDD Def. 4.1: H >= ln l, natural log),
  recursive (c,l)-diversity (TKDD Def. 4.2: r1 < c (r_l + ... + r_m); l = 1 always holds);
- t-closeness (ICDE 2007, Def. 2) with the equal and the ordered ground distance (Sec. 4.2 closed
  forms), the reference distribution Q being the LIVE source's (every row the view generalizes,
  suppressed or not): the definition compares a class with the whole table as it is now.

Not expressible in the view (refused when the policy loads, before any search, with exit code 2, "use
materialize: table"; `refuse_unenforceable`): the other privacy models (beta-likeness, delta-disclosure,
k-map, delta-presence, average risk, records at risk), the hierarchical
EMD, don't-care sets (pd-recursive and adjusted entropy), npd-recursive diversity,
multi-attribute l-diversity (``attribute: all`` with several sensitive attributes), and an entity
key (persons, not rows).

Suppression budget at read time: the view drops every failing class whatever their number; the
budget (``privacy.max_suppression``) only governs the release's node choice. How many rows a view
suppresses at read time, and how many source rows hold values unknown to the mapping tables (released
at the hierarchy's top), is what `coverage` measures and `drift` compares with ``release.drift``.

Float comparisons use a tolerance of 1e-9 (`SQL_TOL`) in the permissive direction for sums of many
terms (entropy, EMD), as the numpy models do with 1e-12 for their closed forms; recursive (c,l),
whose sides are exact integers, keeps the models' 1e-12.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .engines.dialects import map_joins
from .errors import PolicyError
from .models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    criteria_from_policy,
)
from .models.ldiversity import TOL as MODEL_TOL

SQL_TOL = 1e-9
DRIFT_KEYS = ("max_suppressed", "max_unknown", "renode")
DEFAULT_DRIFT = {"max_suppressed": 0.05, "max_unknown": 0.0, "renode": False}


@dataclass
class SensitiveChecks:
    """What the view checks on one sensitive attribute (None = not asked); `j` numbers its work tables."""

    j: int
    col: str
    distinct: int | None = None
    entropy: float | None = None            # the threshold ln(l) - tolerance
    recursive: dict | None = None           # {"l": int, "c": c (1 - TOL)}
    t_equal: float | None = None            # t + tolerance
    t_ordered: float | None = None


@dataclass
class Enforcement:
    k: int = 1
    sens: list[SensitiveChecks] = field(default_factory=list)

    def context(self) -> dict:
        sens = [s for s in self.sens if any(v is not None for v in
                                            (s.distinct, s.entropy, s.recursive, s.t_equal, s.t_ordered))]
        return {"k": self.k, "sens": sens, "sensitive_columns": [s.col for s in self.sens]}


def _refuse(field_name: str, what: str) -> PolicyError:
    return PolicyError(field_name, f"{what} cannot be enforced by a view at read time; use "
                       "release.materialize: table")


# the privacy models a view cannot check at read time (they need a population, a prior or a risk model)
NOT_IN_VIEW = ("beta_likeness", "delta_disclosure", "k_map", "delta_presence", "average_risk", "records_at_risk")


def refuse_unenforceable(privacy, sensitive: list[str], entity_key: str | None) -> None:
    """Refuse, at policy load and so before any search, a ``materialize: view`` policy the view cannot enforce
    (PolicyError, exit 2): the same cases `enforcement` refuses from the criteria, read from the validated
    ``privacy:`` model (`sqlanon.policy_model.Privacy`) alone, without the data."""
    if entity_key:
        raise _refuse("entity_key", "counting persons (an entity key)")
    for key in NOT_IN_VIEW:
        if getattr(privacy, key) is not None:
            raise _refuse(f"privacy.{key}", key.replace("_", " "))
    ld, tc = privacy.l_diversity, privacy.t_closeness
    if ld is not None:
        if ld.attribute == "all" and len(sensitive) > 1:
            raise _refuse("privacy.l_diversity.attribute", "multi-attribute l-diversity (attribute: all)")
        if ld.no_negative_disclosure is not None:
            raise _refuse("privacy.l_diversity.no_negative_disclosure", "npd-recursive diversity")
        if ld.dont_care:
            raise _refuse("privacy.l_diversity.dont_care", f"{ld.variant} l-diversity with don't-care values")
    if tc is not None and tc.distance == "hierarchical":
        raise _refuse("privacy.t_closeness.distance", "t-closeness with the hierarchical distance")


def enforcement(policy, criteria) -> Enforcement:
    """The read-time checks of a policy's criteria; PolicyError (exit 2) for a model a view cannot enforce."""
    if policy.entity_key:
        raise _refuse("entity_key", "counting persons (an entity key)")
    out = Enforcement(sens=[SensitiveChecks(j, name) for j, name in enumerate(policy.sensitive)])
    by_name = {s.col: s for s in out.sens}
    for c in criteria:
        if isinstance(c, KAnonymity):
            out.k = max(out.k, c.k)
            continue
        if getattr(c, "multi_attribute", False):
            raise _refuse("privacy.l_diversity.attribute", "multi-attribute l-diversity (attribute: all)")
        s = by_name[c.sensitive]
        if isinstance(c, DistinctLDiversity):
            s.distinct = int(c.l)
        elif isinstance(c, EntropyLDiversity):
            if c.dont_care_codes:
                raise _refuse("privacy.l_diversity.dont_care", "entropy l-diversity with don't-care values")
            s.entropy = math.log(c.l) - SQL_TOL
        elif isinstance(c, RecursiveCLDiversity):
            if c.npd is not None:
                raise _refuse("privacy.l_diversity.no_negative_disclosure", "npd-recursive diversity")
            if c.dont_care_codes:
                raise _refuse("privacy.l_diversity.dont_care", "pd-recursive diversity (don't-care values)")
            s.recursive = {"l": int(c.l), "c": float(c.c) * (1 - MODEL_TOL)}
        elif isinstance(c, TCloseness):
            if c.distance == "equal":
                s.t_equal = c.t + SQL_TOL
            elif c.distance == "ordered":
                s.t_ordered = c.t + SQL_TOL
            else:
                raise _refuse("privacy.t_closeness.distance", f"t-closeness with the {c.distance} distance")
        else:  # a model added later must be taught to the view, not silently skipped
            raise _refuse("privacy", type(c).__name__)
    return out


def view_criteria(policy, fs) -> list:
    return criteria_from_policy(policy.privacy_model or policy.privacy, {s.name: s.domain for s in fs.sensitives})


VIEW_TEMPLATE = "release_view_enforced.sql"
# The ordered EMD alone on an attribute is first bounded from per-class counts in this many buckets of
# consecutive values (|error| <= 2 (w - 1) / (m - 1), w = ceil(m / buckets)) and computed exactly only for
# the classes the bounds leave undecided (`release_view_enforced.sql`); 0 computes every class exactly
# (always so on Spark).
ORDERED_BUCKETS = 16


def view_context(name: str, policy, fs, columns: list, maps: dict[str, str], source: str,
                 types: dict[str, str] | None = None, dialect: str = "duckdb") -> dict:
    """The context of `VIEW_TEMPLATE` for the self-enforcing view `name` over `source`, reading the mapping
    tables (or CTEs) `maps`: column ``value`` and, per level L the view needs (the released level, and the
    top for a generalized column), ``l<L>`` / ``c<L>``. `types` (source column -> type) and `dialect` choose
    how quasi-identifiers join their mapping tables (`map_joins`; None: every value cast to text).
    `columns` are the release's (`release.release_columns`)."""
    ctx = enforcement(policy, view_criteria(policy, fs)).context()
    qi_cols = [col for col, qi, _ in columns if qi is not None]
    packed = packed_key(fs, [(col, lvl) for col, qi, lvl in columns if qi is not None])
    keys = ["__sqlanon_key"] if packed else [f"__sqlanon_k{i}" for i in range(len(qi_cols))]
    joins = map_joins({c: t for c, t in (types or {}).items() if c in qi_cols}, dialect)
    return dict(name=name, columns=columns, source=source, maps=maps, qi_cols=qi_cols, keys=keys, packed=packed,
                joins=joins, partition_window=dialect == "spark",
                # Spark inlines every reference to a CTE into the view's plan, and the bounds' second pass of
                # the EMD machinery made that plan large enough to exhaust a 1 GB driver's heap when a read
                # analyzes it (CI): Spark measures every class exactly
                ordered_buckets=0 if dialect == "spark" else ORDERED_BUCKETS, **ctx)


def create_view(backend, name: str, policy, fs, columns: list, maps: dict[str, str], source: str) -> None:
    """CREATE OR REPLACE the self-enforcing view `name` over `source` (mapping tables `maps` already persisted);
    `columns` are the release's (`release.release_columns`)."""
    types = dict(backend.columns(source))
    backend.execute(VIEW_TEMPLATE, **view_context(name, policy, fs, columns, maps, source, types, backend.dialect))


def packed_key(fs, qis: list[tuple[str, int]]) -> dict[str, int] | None:
    """Multipliers packing the class's codes into one BIGINT (code + 1 in 0 .. radix, -1 being an unknown
    value), so classes group and join on one integer column; None when the product would pass 2^62."""
    out, mult = {}, 1
    for col, lvl in qis:
        out[col] = mult
        mult *= fs.radix(col, lvl) + 1
    return out if mult < 2 ** 62 else None


def view_maps(policy, fs) -> dict[str, str]:
    """The mapping tables a view release keeps beside it (``<name>__map_<i>``)."""
    return {q.name: f"{policy.release.name}__map_{q.index}" for q in fs.qis}


# -- coverage and drift -------------------------------------------------------------------------------

def coverage(backend, view: str, source: str, qis: list[tuple[str, str]]) -> dict:
    """Source rows, rows the view returns now, rows it suppresses at read time, and source rows holding
    a quasi-identifier value unknown to its mapping table (released at the hierarchy's top).
    `qis`: (column, mapping table) per quasi-identifier."""
    total, unknown = backend.fetchrow("view_coverage.sql", source=source, qis=qis)
    shown = int(backend.fetchrow("count_rows.sql", relation=view)[0])
    total, unknown = int(total or 0), int(unknown or 0)
    return {"source_rows": total, "view_rows": shown, "suppressed_rows": total - shown, "unknown_rows": unknown,
            "suppressed_share": (total - shown) / total if total else 0.0,
            "unknown_share": unknown / total if total else 0.0}


def parse_drift(raw) -> dict:
    """``release.drift: {max_suppressed: 0.05, max_unknown: 0.0, renode: false}`` (fractions of the source
    rows; renode: a different node chosen by a new search counts as drift)."""
    if raw is None:
        return dict(DEFAULT_DRIFT)
    if not isinstance(raw, dict):
        raise PolicyError("release.drift",
                          f"must be a mapping like {{max_suppressed: 0.05, renode: true}}; got {raw!r}")
    for key in raw:
        if key not in DRIFT_KEYS:
            raise PolicyError(f"release.drift.{key}", f"unknown key; use {', '.join(DRIFT_KEYS)}")
    out = dict(DEFAULT_DRIFT)
    for key in ("max_suppressed", "max_unknown"):
        if key in raw:
            v = raw[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise PolicyError(f"release.drift.{key}",
                                  f"must be a fraction of the source rows from 0 to 1; got {v!r}")
            out[key] = float(v)
    if "renode" in raw:
        if not isinstance(raw["renode"], bool):
            raise PolicyError("release.drift.renode", f"must be true or false; got {raw['renode']!r}")
        out["renode"] = raw["renode"]
    return out


def drift_verdict(cov: dict, limits: dict, renode: dict | None = None) -> list[str]:
    """The reasons the live view has drifted past the policy's limits (empty: within them)."""
    reasons = []
    if cov["suppressed_share"] > limits["max_suppressed"]:
        reasons.append(f"{cov['suppressed_rows']:,} rows ({cov['suppressed_share']:.2%}) suppressed at read time, "
                       f"above release.drift.max_suppressed = {limits['max_suppressed']:g}")
    if cov["unknown_share"] > limits["max_unknown"]:
        reasons.append(f"{cov['unknown_rows']:,} rows ({cov['unknown_share']:.2%}) hold values unknown to the "
                       f"mapping tables, above release.drift.max_unknown = {limits['max_unknown']:g}")
    if renode is not None and renode.get("error"):
        reasons.append(f"a new search cannot run on the live source: {renode['error']}")
    elif renode is not None and renode["levels"] != renode["released"]:
        reasons.append(f"a new search chooses another node ({renode['levels']}, released {renode['released']})")
    return reasons


def view_release_coverage(backend, policy, table: str) -> dict | None:
    """Coverage and drift of `table` when it is the policy's view release (its mapping tables beside it);
    None for any other table."""
    if policy.release.materialize != "view" or table != policy.release.name:
        return None
    source = backend.view_source(policy.source)
    if source is None or backend.relation_kind(table) != "VIEW":
        return None
    cov = coverage(backend, table, source, [(q, f"{table}__map_{i}") for i, q in enumerate(policy.quasi_identifiers)])
    reasons = drift_verdict(cov, policy.release.drift)
    return {**cov, "limits": policy.release.drift, "drifted": bool(reasons), "reasons": reasons}


def coverage_lines(cov: dict) -> list[str]:
    """The coverage of a view release in words (for `check`, `status` and the report)."""
    return [f"source rows: {cov['source_rows']:,}; the view shows {cov['view_rows']:,} now",
            (f"suppressed at read time: {cov['suppressed_rows']:,} rows ({cov['suppressed_share']:.2%}; classes that "
            "fail the policy on the live source)"),
            (f"values unknown to the mapping tables: {cov['unknown_rows']:,} source rows ({cov['unknown_share']:.2%}; "
            "released at the hierarchy's top)")]
