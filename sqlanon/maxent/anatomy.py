"""Bucketized releases (Anatomy, Xiao & Tao, VLDB 2006), the publication Privacy-MaxEnt studies.

Du, Teng & Zhu (SIGMOD 2008), Section 1 and Figure 1: the rows are partitioned into buckets; inside a
bucket the quasi-identifiers and the sensitive values are published separately, so the link between
them is broken. The release is two tables:

- ``<name>_qit``: ``pseudonym``, the quasi-identifiers as they are, ``bucket``;
- ``<name>_st``:  ``bucket``, the sensitive value, ``count`` (rows of the bucket holding it);

and the data owner keeps a third, never published, ``<name>_private`` (``pseudonym``, sensitive value):
the link the release breaks, which Privacy-MaxEnt needs to measure its estimation accuracy and to mine
association rules (Sections 4.2, 4.4 and 7). Pseudonyms are the anonymous IDs of Section 6 (Figure 4).

Diversity: every bucket satisfies distinct l-diversity, at least l distinct sensitive values, counting
only the values that count. Values named as not counted (`not_counted`, or the most frequent value, as
the paper's Section 7 footnote 3 does after the l-diversity paper's don't-care values) neither help nor
hurt: their rows are spread over the buckets, or left out with `exact_size` (every bucket then has
exactly l rows, the paper's "buckets of five records").

The assignment is Anatomy's, computed in one SQL pass (``anatomy_assign.sql``) from a plan made on the
per-value counts (the only thing that comes into Python):

1. m, the number of buckets, is the largest m with sum_v min(c_v, m) >= l * m over the counted values'
   counts c_v: the most l-diverse buckets of at least l rows the data allows (each bucket takes at most
   one row of a value, so a value can fill at most m buckets). Rows of a value beyond m are left out
   (Anatomy instead refuses such data as "not eligible"; leaving the surplus out is the suppression
   the paper's selection of 14,210 of Adult's records amounts to).
2. The kept counted rows are ordered by value (larger values first, as Anatomy takes the l largest
   groups) and, within a value, in a seeded pseudo-random order; the row of rank r goes to bucket
   (r mod m) + 1. Each value holds at most m consecutive ranks, so no bucket gets it twice, and every
   bucket gets l or l + 1 rows (exactly l with `exact_size`, which leaves the last ranks out).
"""
from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..engines.dialects import compared_type
from ..errors import DataError, PolicyError
from ..frequency import values_named
from ..templates import temporary_relation
from .tables import RESERVED_COLUMNS, atomic_tables, check_name, output_name, reserved_column

DEFAULT_SEED = "20080609"      # SIGMOD 2008, June 9: the seed of the within-value row order


@dataclass
class BucketPlan:
    """How many buckets, and which rows of each sensitive value go into them (from the counts alone)."""

    l: int
    buckets: int                       # m
    values: list[str]                  # in row order: counted values by decreasing count, then the others
    counts: np.ndarray                 # rows per value in the source
    caps: np.ndarray                   # rows kept per value
    starts: np.ndarray                 # rank of each counted value's first row
    counted: np.ndarray                # bool per value
    limit: int                         # counted ranks below this are kept
    spread: bool                       # rows of values that do not count are spread over the buckets

    @property
    def kept_counted(self) -> int:
        return int(min(self.caps[self.counted].sum(), self.limit))

    @property
    def rows(self) -> int:
        return self.kept_counted + (int(self.counts[~self.counted].sum()) if self.spread else 0)

    def left_out(self) -> dict[str, int]:
        c = self.counted
        return {"over_capacity": int((self.counts[c] - self.caps[c]).sum()),
                "bucket_size": int(self.caps[c].sum() - self.kept_counted),
                "not_counted": 0 if self.spread else int(self.counts[~c].sum())}


def sample_buckets(m: int, n: int, seed: str) -> np.ndarray:
    """n of the bucket numbers 1..m, chosen uniformly by a generator seeded from the text `seed`."""
    if not isinstance(n, int) or isinstance(n, bool) or not n >= 1:
        raise PolicyError("--buckets", f"must be a positive number of buckets; got {n!r}")
    if n > m:
        raise DataError(f"the data allows {m} l-diverse buckets; cannot keep {n} of them")
    rng = np.random.default_rng(int(hashlib.sha256(str(seed).encode()).hexdigest()[:16], 16))
    return np.sort(rng.choice(np.arange(1, m + 1), size=n, replace=False))


def max_buckets(counts: np.ndarray, l: int) -> int:
    """The largest m with sum_v min(c_v, m) >= l * m: how many distinct-l-diverse buckets the counts allow."""
    c = np.sort(np.asarray(counts, dtype=np.int64))
    if len(c) < l or l < 1:
        return 0
    m = np.arange(0, int(c.sum()) // l + 1, dtype=np.int64)
    # sum_v min(c_v, m) = (sum of the counts <= m) + m * (number of counts > m)
    below = np.searchsorted(c, m, side="right")
    prefix = np.concatenate([[0], np.cumsum(c)])
    fill = prefix[below] + m * (len(c) - below)
    ok = np.flatnonzero(fill >= l * m)
    return int(ok[-1])


def plan_buckets(value_counts: dict[str, int], l: int, not_counted=(), exact_size: bool = False) -> BucketPlan:
    """The Anatomy plan for these per-value counts (see the module docstring)."""
    if not isinstance(l, int) or isinstance(l, bool) or l < 1:
        raise PolicyError("--l", f"must be a positive integer; got {l!r}")
    not_counted = set(not_counted)
    unknown = sorted(not_counted - set(value_counts))
    if unknown:
        raise PolicyError("--not-counted", f"value {unknown[0]!r} does not occur in the sensitive attribute")
    order = sorted(value_counts, key=lambda v: (v in not_counted, -value_counts[v], v))
    counts = np.array([value_counts[v] for v in order], dtype=np.int64)
    counted = np.array([v not in not_counted for v in order], dtype=bool)
    m = max_buckets(counts[counted], l)
    if m == 0:
        raise DataError(f"no bucket can hold {l} distinct counted sensitive values: the data has "
                        f"{int(counted.sum())} counted value(s); lower l or count more values")
    caps = np.where(counted, np.minimum(counts, m), 0)
    starts = np.concatenate([[0], np.cumsum(caps)[:-1]])
    limit = l * m if exact_size else int(caps.sum())
    return BucketPlan(l, m, order, counts, caps, starts, counted, limit, spread=not exact_size)


@dataclass
class BucketizedRelease:
    """A bucketized release in the database: the two published tables and the owner's private link."""

    name: str
    quasi_identifiers: list[str]
    sensitive: str
    l: int
    buckets: int
    rows: int
    source_rows: int
    not_counted: list[str] = field(default_factory=list)
    exact_size: bool = False
    possible_buckets: int = 0          # buckets the data allows (more than `buckets` when a sample was kept)
    left_out: dict = field(default_factory=dict)
    private: bool = True

    @property
    def qit(self) -> str:
        return f"{self.name}_qit"

    @property
    def st(self) -> str:
        return f"{self.name}_st"

    @property
    def private_table(self) -> str | None:
        return f"{self.name}_private" if self.private else None

    def as_dict(self) -> dict:
        return {"name": self.name, "tables": {"qit": self.qit, "st": self.st, "private": self.private_table},
                "quasi_identifiers": list(self.quasi_identifiers), "sensitive": self.sensitive, "l": self.l,
                "not_counted": list(self.not_counted), "exact_size": self.exact_size, "buckets": self.buckets,
                "possible_buckets": self.possible_buckets,
                "rows": self.rows, "source_rows": self.source_rows, "left_out": dict(self.left_out)}


def _check_columns(backend, source: str, qis: list[str], sensitive: str, label: str) -> dict[str, str]:
    """The source's columns (name -> type), once the policy's are found in it without NULLs."""
    columns = dict(backend.columns(source))
    for fieldname, names in (("quasi_identifiers", qis), ("sensitive", [sensitive])):
        for c in names:
            if c not in columns:
                raise DataError(f"{fieldname}: column '{c}' is not in the source {label}")
            if reserved_column(c):
                raise PolicyError(fieldname, f"column '{c}' has a name the bucketized tables use "
                                  f"({', '.join(RESERVED_COLUMNS)}, in any case); rename it in a source query")
    # a caseless collation (or citext) would make 'Flu' and 'FLU' one value to the buckets' GROUP BY, two in
    # the published tables: refused, with the way out, as `sqlanon anonymize` refuses it
    backend.refuse_collated(source, qis + [sensitive], f"the source {label}", columns)
    nulls = backend.fetchrow("profile.sql", source=source, columns=qis + [sensitive], entity=None)
    for c, n in zip(qis + [sensitive], nulls[1:]):
        if n:
            raise DataError(f"column '{c}' has {n} NULL value(s); a bucketized release needs every quasi-identifier "
                            "and sensitive value present: filter them out with a source query")
    return columns


def source_plan(backend, source: str, sensitive: str, l: int, not_counted=(), most_frequent_not_counted: bool = False,
                exact_size: bool = False, label: str | None = None) -> BucketPlan:
    """The Anatomy plan for a relation: its per-value counts (one GROUP BY), then `plan_buckets`."""
    rows = backend.fetchall("anatomy_value_counts.sql", source=source, sensitive=sensitive)
    value_counts = {v: int(n) for v, n in rows}
    if not value_counts:
        raise DataError(f"the source {label or source} has no rows; there is nothing to bucketize")
    nc = _named_values(backend, source, sensitive, list(not_counted), list(value_counts))
    if most_frequent_not_counted:
        nc.append(min(value_counts, key=lambda v: (-value_counts[v], v)))
    return plan_buckets(value_counts, l, nc, exact_size)


def _named_values(backend, source: str, sensitive: str, names: list[str], values: list[str]) -> list[str]:
    """Values named in `names` (not_counted) as `anatomy_values` names them (`values`): a name may be any text of
    a value the column's type calls equal ('0.0' of the value '-0.0': `frequency.values_named`). Names that are
    no value stay as given, for `plan_buckets` to refuse."""
    known = set(values)
    if all(n in known for n in names):      # no catalog read, no query
        return names
    column_type = dict(backend.columns(source)).get(sensitive, "")
    found = values_named(backend, "__sqlanon_anatomy_names", column_type, names, values)
    return [found.get(n, n) for n in names]


def bucketize(backend, source: str, quasi_identifiers: list[str], sensitive: str, l: int, name: str,
              not_counted=(), most_frequent_not_counted: bool = False, exact_size: bool = False,
              seed: str = DEFAULT_SEED, private: bool = True, label: str | None = None,
              buckets: int | None = None, policy=None,
              files: Callable[[BucketizedRelease], list[tuple[Path, Path]]] | None = None) -> BucketizedRelease:
    """Bucketize the relation `source` (a table or view of `backend`) into distinct l-diverse buckets and
    write ``<name>_qit``, ``<name>_st`` (and ``<name>_private``) atomically.

    `buckets`: release only that many of the buckets, a seeded uniform sample of them (the paper's Adult
    experiment uses 2,842 buckets of five records). `policy`: the policy the source comes from, so that its
    source table is never a target (`sqlanon.catalog`). `files` (the release -> the (temporary file, path) pairs
    it wrote) runs inside the tables' transaction: a report that cannot be written rolls them back
    (`tables.atomic_tables`)."""
    check_name(name, "--name")
    qis = list(quasi_identifiers)
    if not qis:
        raise PolicyError("quasi_identifiers", "name at least one quasi-identifier")
    if sensitive in qis:
        raise PolicyError("sensitive", f"column '{sensitive}' is also a quasi-identifier")
    column_type = _check_columns(backend, source, qis, sensitive, label or source)[sensitive]
    plan = source_plan(backend, source, sensitive, l, not_counted, most_frequent_not_counted, exact_size, label)
    nc = [v for v, c in zip(plan.values, plan.counted) if not c]
    groups = pd.DataFrame({"value": plan.values, "start": plan.starts.astype(np.int64),
                           "cap": plan.caps.astype(np.int64), "counted": plan.counted})
    prefix = f"__sqlanon_anatomy_{name}"
    backend.create_table_from_frame(f"{prefix}_groups", groups)
    keep = None
    if buckets is not None:
        keep = f"{prefix}_keep"
        backend.create_table_from_frame(keep, pd.DataFrame({"bucket": sample_buckets(plan.buckets, buckets, seed)}))
    assigned = f"{prefix}_rows"
    backend.execute("anatomy_assign.sql", [str(seed), str(seed)], table=assigned, source=source, qis=qis,
                    sensitive=sensitive, groups=f"{prefix}_groups", m=plan.buckets, limit=plan.limit,
                    spread=plan.spread, keep=keep)
    names = [f"{name}_qit", f"{name}_st"] + ([f"{name}_private"] if private else [])
    released: list[BucketizedRelease] = []

    def staged(rows: dict[str, int]) -> list[tuple[Path, Path]]:
        left_out = plan.left_out()
        if buckets is not None:
            left_out["not_sampled"] = plan.rows - rows[names[0]]
        released.append(BucketizedRelease(name, qis, sensitive, l, buckets or plan.buckets, rows[names[0]],
                                          int(plan.counts.sum()), not_counted=sorted(set(nc)), exact_size=exact_size,
                                          left_out=left_out, private=private, possible_buckets=plan.buckets))
        return files(released[0]) if files is not None else []

    try:
        with atomic_tables(backend, names, name, "bucketized", policy=policy, sources=[source], files=staged):
            backend.execute("anatomy_qit.sql", name=temporary_relation(names[0]), assigned=assigned, qis=qis)
            backend.execute("anatomy_st.sql", name=temporary_relation(names[1]), assigned=assigned,
                            sensitive=sensitive, written_apart=compared_type(column_type) is not None, temp=False)
            if private:
                backend.execute("anatomy_private.sql", name=temporary_relation(names[2]), assigned=assigned,
                                sensitive=sensitive)
    finally:
        for t in (assigned, f"{prefix}_groups", keep):
            if t:
                with contextlib.suppress(Exception):
                    backend.execute("drop_relation.sql", name=t, kind="TABLE")
    return released[0]


def refuse_entity_key(pol) -> None:
    """Anatomy and Privacy-MaxEnt count records: a bucket's l distinct values, P(q, s, b) and the estimation
    accuracy are all over rows (Du, Teng & Zhu, SIGMOD 2008, Sec. 3; Xiao & Tao's Anatomy). With an
    entity_key a person may own several rows, which may share a bucket (its l values then protect fewer than l
    persons) or land in several; a person-level bucketization is not defined by either paper. So we refuse
    rather than count rows under a policy that says rows are not persons."""
    if pol.entity_key:
        raise PolicyError("entity_key", "bucketize and maxent count records, and the policy says a person may own "
                          "several (entity_key); buckets and P(q, s, b) over persons are not defined by "
                          "Anatomy or Privacy-MaxEnt: remove entity_key (one row per person) to use them")


def bucketize_policy(policy, l: int, name: str | None = None, db=None, connection=None, **options) -> BucketizedRelease:
    """`bucketize` over a policy's source, quasi-identifiers and (first) sensitive attribute; the tables go
    where a release of the policy would (the source's DuckDB file, `--db`, or a file beside the policy)."""
    from ..anonymizer import default_db
    from ..engine import attach_source, open_backend, wrap_connection
    from ..frequency import free_prefix
    from ..policy import Policy, load_policy
    pol = policy if isinstance(policy, Policy) else load_policy(policy)
    refuse_entity_key(pol)
    if connection is not None:
        backend = wrap_connection(connection)
    else:
        backend = open_backend(pol.source, db if db is not None else default_db(pol))
    try:
        # under a free prefix: on a shared connection an open run's source view is __sqlanon_source
        source = attach_source(backend, pol.source, f"{free_prefix(backend)}_source")
        return bucketize(backend, source, pol.qi_names, pol.sensitive_names[0], l,
                         output_name(name, pol.release.name), label=pol.source.label, policy=pol, **options)
    finally:
        if connection is None:
            backend.close()
