"""Constraints from the published data (Privacy-MaxEnt, Du, Teng & Zhu, SIGMOD 2008, Section 5).

The unknowns are the probabilities P(q, s, b) (Definition 5.1): q a quasi-identifier value (all the
attributes together), s a sensitive value, b a bucket. What the release says about them, with certainty,
is the invariant set U of Section 5.2, per bucket b with distinct values QI(b) and SA(b):

- QI-invariants (Eq. 4): sum_{s in SA(b)} P(q, s, b) = P(q, b)  for q in QI(b);
- SA-invariants (Eq. 5): sum_{q in QI(b)} P(q, s, b) = P(s, b)  for s in SA(b);
- zero-invariants (Eq. 6): P(q, s, b) = 0 unless q in QI(b) and s in SA(b).

U is sound (Theorem 1: every assignment of the buckets satisfies it) and complete (Theorem 2: every
invariant is a linear combination of U); in each bucket the g + h QI- and SA-invariants have exactly one
dependency (sum of the QI rows = sum of the SA rows), so one is dropped (Theorem 3, conciseness). The
zero-invariants are not rows: the cells of the problem are only the pairs QI(b) x SA(b), every other
probability is zero by construction.

The database computes all of it (``maxent_*.sql``): value codes, the distinct q, the counts n(q, b) and
n(s, b) (the right-hand sides, in records: N * P), and one row per cell. Only those compact arrays come
into Python, as a `Problem`. Without background knowledge each bucket's maximum-entropy distribution is
the closed form of Theorem 5, P(q, s, b) = P(q, b) P(s, b) / P(b) (`Problem.closed_form`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import DataError, PolicyError
from .tables import reserved_column

PREFIX = "__sqlanon_maxent"


@dataclass
class ReleaseTables:
    """The relations of a release in the database.

    qit:   quasi-identifier columns and ``bucket`` (one row per released record);
    st:    ``bucket``, the sensitive column and ``count``;
    truth: quasi-identifier columns and the sensitive column of the released records (the original,
           when the data owner has it: accuracy and association rules need it), or None.
    """

    qit: str
    st: str
    truth: str | None
    quasi_identifiers: list[str]
    sensitive: str
    kind: str = "bucketized"          # bucketized | generalized
    name: str = ""
    levels: dict | None = None        # generalized: the node whose q*-blocks are the buckets
    anonymization: object = None      # generalized: the core engine's run (for its release manifest)


@dataclass
class Problem:
    """The compact solver input: codes, counts and the cells (b, q, s) of a release."""

    attributes: list[str]
    sensitive: str
    attr_values: list[list[str]]          # per attribute: value text by code
    s_values: list[str]                   # sensitive value text by code
    q_codes: np.ndarray                   # (Q, attributes): each q's value codes
    bucket_labels: np.ndarray             # bucket label by bucket code
    cell_b: np.ndarray
    cell_q: np.ndarray
    cell_s: np.ndarray
    cell_nq: np.ndarray                   # n(q, b) of the cell's q in its bucket
    cell_ns: np.ndarray                   # n(s, b)
    tables: dict = field(default_factory=dict)   # temporary tables holding the codes (for the outputs)

    def __post_init__(self):
        self.attr_codes = [{v: i for i, v in enumerate(vals)} for vals in self.attr_values]
        # sensitive value text -> code; other texts of a value are added as knowledge names them (`MaxEnt.resolve`)
        self.s_codes = {v: i for i, v in enumerate(self.s_values)}
        Q, S, B = self.q_count, len(self.s_values), len(self.bucket_labels)
        _, self.cell_qb = np.unique(self.cell_b * Q + self.cell_q, return_inverse=True)
        _, self.cell_sb = np.unique(self.cell_b * S + self.cell_s, return_inverse=True)
        self.cell_qb = self.cell_qb.ravel()
        self.cell_sb = self.cell_sb.ravel()
        self.qb_n = np.zeros(self.cell_qb.max() + 1 if len(self.cell_qb) else 0, dtype=np.int64)
        self.qb_n[self.cell_qb] = self.cell_nq
        self.qb_b = np.zeros_like(self.qb_n)
        self.qb_b[self.cell_qb] = self.cell_b
        self.qb_q = np.zeros_like(self.qb_n)
        self.qb_q[self.cell_qb] = self.cell_q
        self.sb_n = np.zeros(self.cell_sb.max() + 1 if len(self.cell_sb) else 0, dtype=np.int64)
        self.sb_n[self.cell_sb] = self.cell_ns
        self.sb_b = np.zeros_like(self.sb_n)
        self.sb_b[self.cell_sb] = self.cell_b
        self.bucket_n = np.bincount(self.qb_b, weights=self.qb_n, minlength=B).astype(np.int64)
        self.q_n = np.bincount(self.qb_q, weights=self.qb_n, minlength=Q).astype(np.int64)
        # the first SA-invariant of each bucket: the one Theorem 3 drops (sb rows are in (b, s) order)
        self.sb_first = np.ones(len(self.sb_n), dtype=bool)
        self.sb_first[1:] = self.sb_b[1:] != self.sb_b[:-1]

    @property
    def q_count(self) -> int:
        return len(self.q_codes)

    @property
    def N(self) -> int:
        return int(self.qb_n.sum())

    @property
    def buckets(self) -> int:
        return len(self.bucket_labels)

    def q_text(self, q) -> str:
        if q is None:
            return "?"
        return ", ".join(f"{a}={self.attr_values[i][c]}" for i, (a, c) in enumerate(zip(self.attributes,
                                                                                         self.q_codes[int(q)])))

    def closed_form(self) -> np.ndarray:
        """Theorem 5 (consistency; Eq. 9): N * P(q, s, b) = n(q, b) n(s, b) / n(b), per cell."""
        return self.cell_nq * self.cell_ns / self.bucket_n[self.cell_b]

    def invariant_matrix(self, drop_redundant: bool = True) -> tuple[sp.csr_matrix, np.ndarray]:
        """The QI- and SA-invariants (Eqs. 4, 5) as rows over the cells, right-hand sides in records.

        With `drop_redundant`, the first SA-invariant of each bucket is left out (Theorem 3)."""
        C = len(self.cell_b)
        keep_sb = ~self.sb_first if drop_redundant else np.ones(len(self.sb_n), dtype=bool)
        sb_row = np.cumsum(keep_sb) - 1 + len(self.qb_n)
        cols = np.arange(C)
        mine = keep_sb[self.cell_sb]
        r = np.concatenate([self.cell_qb, sb_row[self.cell_sb[mine]]])
        c = np.concatenate([cols, cols[mine]])
        R = len(self.qb_n) + int(keep_sb.sum())
        A = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(R, C))
        rhs = np.concatenate([self.qb_n, self.sb_n[keep_sb]]).astype(float)
        return A, rhs


_NUMERIC = re.compile(r"INT|DECIMAL|NUMERIC|DOUBLE|FLOAT|REAL", re.IGNORECASE)


def _check_release_columns(backend, release: ReleaseTables) -> None:
    qit = dict(backend.columns(release.qit))
    st = dict(backend.columns(release.st))
    for c in release.quasi_identifiers:
        if c not in qit:
            raise DataError(f"quasi-identifier '{c}' is not a column of {release.qit}")
        if reserved_column(c):
            raise PolicyError("quasi_identifiers", f"column '{c}' has a name the bucketized tables use")
    if "bucket" not in qit:
        raise DataError(f"{release.qit} has no column 'bucket'; a bucketized release's quasi-identifier table "
                        "holds the quasi-identifiers and a bucket id")
    for c in ("bucket", release.sensitive, "count"):
        if c not in st:
            raise DataError(f"{release.st} has no column '{c}'; a bucketized release's sensitive table holds "
                            f"bucket, {release.sensitive}, count")
    if not _NUMERIC.search(st["count"]):
        raise DataError(f"column 'count' of {release.st} is {st['count']}; a bucketized release's sensitive table "
                        "counts the records of each (bucket, value) in whole numbers")
    faults = dict(zip(("qit_bucket", "qit_value", "st_bucket", "st_value", "st_count"),
                      backend.fetchone("maxent_tables_check.sql", qit=release.qit, st=release.st,
                                       qis=list(release.quasi_identifiers), sensitive=release.sensitive)))
    for fault, what in (("qit_bucket", f"of {release.qit} have no bucket"),
                        ("qit_value", f"of {release.qit} have a NULL quasi-identifier"),
                        ("st_bucket", f"of {release.st} have no bucket"),
                        ("st_value", f"of {release.st} have a NULL {release.sensitive}"),
                        ("st_count", f"of {release.st} have a count that is NULL, negative or not whole")):
        if faults[fault]:
            raise DataError(f"{faults[fault]:,} row(s) {what}; a bucketized release gives every record a bucket "
                            "and its values, and counts each (bucket, value) in whole numbers")
    if release.truth is not None:
        truth = dict(backend.columns(release.truth))
        for c in release.quasi_identifiers + [release.sensitive]:
            if c not in truth:
                raise DataError(f"column '{c}' is not in the original records {release.truth}")


def load_problem(backend, release: ReleaseTables, prefix: str = PREFIX) -> Problem:
    """Build the coded tables and invariant counts in the database and fetch the compact `Problem`."""
    _check_release_columns(backend, release)
    qis = list(release.quasi_identifiers)
    maps = [f"{prefix}_a{i}" for i in range(len(qis))]
    for c, m in zip(qis, maps):
        backend.execute("maxent_value_map.sql", map=m, column=c, relation=release.qit, typed=False)
    smap = f"{prefix}_s"
    backend.execute("maxent_value_map.sql", map=smap, column=release.sensitive, relation=release.st, typed=True)
    t = {name: f"{prefix}_{name}" for name in ("buckets", "q", "qb", "sb", "truth")}
    cols = list(zip(qis, maps))
    backend.execute("maxent_buckets.sql", out=t["buckets"], qit=release.qit, st=release.st)
    backend.execute("maxent_q.sql", out=t["q"], qit=release.qit, cols=cols)
    backend.execute("maxent_qb.sql", out=t["qb"], rows=release.qit, buckets=t["buckets"], cols=cols,
                    qtable=t["q"], sensitive=None, smap=None)
    backend.execute("maxent_sb.sql", out=t["sb"], st=release.st, buckets=t["buckets"], smap=smap,
                    sensitive=release.sensitive)
    bad = backend.fetchall("maxent_bucket_check.sql", qb=t["qb"], sb=t["sb"])
    if bad:
        b, nq, ns = bad[0]
        raise DataError(f"the release's tables disagree: a bucket has {nq} record(s) in {release.qit} and "
                        f"{ns} in {release.st} ({len(bad)} such bucket(s) shown at most 5); they are not one "
                        "bucketized release")
    attr_values = []
    for m in maps:
        rows = backend.fetchall("maxent_map_values.sql", map=m)
        attr_values.append([v for v, _ in rows])
    s_values = [v for v, _ in backend.fetchall("maxent_map_values.sql", map=smap)]
    labels = backend.fetchnumpy("maxent_map_values.sql", map=t["buckets"], value="label", code="b")["label"]
    qd = backend.fetchnumpy("select_all.sql", relation=t["q"])
    q_codes = (np.column_stack([np.asarray(qd[f"a{i}"], dtype=np.int64) for i in range(len(qis))])
               if len(qd["q"]) else np.zeros((0, len(qis)), dtype=np.int64))
    order = np.argsort(np.asarray(qd["q"], dtype=np.int64))
    q_codes = q_codes[order]
    cells = backend.fetchnumpy("maxent_cells.sql", qb=t["qb"], sb=t["sb"])
    if len(cells["b"]) == 0:
        raise DataError(f"the release {release.qit} has no records")
    b, q, s, nq, ns = (np.asarray(cells[k], dtype=np.int64) for k in ("b", "q", "s", "nq", "ns"))
    problem = Problem(qis, release.sensitive, attr_values, s_values, q_codes, np.asarray(labels), b, q, s, nq, ns,
                      tables={**t, "maps": maps, "smap": smap, "truth_rows": release.truth})
    if release.truth is not None:
        # the original's per-(q, s) counts stay in the database (accuracy and rules are SQL over them)
        backend.execute("maxent_qb.sql", out=t["truth"], rows=release.truth, buckets=None, cols=cols,
                        qtable=t["q"], sensitive=release.sensitive, smap=smap)
        total = int(backend.fetchone("maxent_total.sql", relation=t["truth"])[0])
        if total != problem.N:
            raise DataError(f"the original records ({release.truth}) do not match the release: {total} of them "
                            f"carry a published quasi-identifier and sensitive value, the release has {problem.N} "
                            "records")
    return problem
