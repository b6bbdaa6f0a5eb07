"""Background knowledge (Privacy-MaxEnt, Du, Teng & Zhu, SIGMOD 2008, Sections 4 and 6), from a file or the API.

Four kinds, each a linear constraint on the unknowns P(q, s, b) (counted in records, N * P):

- `Conditional`, knowledge about the data distribution (Section 4.1): P(S in values | Q_v = given) = p over
  any subset Q_v of the quasi-identifier attributes, which becomes
  ``sum_b sum_{q matches Q_v} sum_{s in values} P(q, s, b) = p * P(Q_v)``, with P(Q_v) taken from the
  published quasi-identifiers (the sample distribution, as the paper does). Several values make
  "s1 or s2" (the P(s1 or s2 | q3) = 0 of Section 3.1).
- the same with bounds, `at_least` <= P <= `at_most` (Section 4.5, the inequalities the paper leaves to
  future work after Kazama & Tsujii): two one-sided constraints.
- `AboutPersons`, knowledge about individuals (Section 6): persons are named with their full
  quasi-identifier and get a pseudonym among the records carrying it (Figure 4). The paper's three
  kinds: (1) P(s | Alice) = p; (2) Alice has one of several values (P(s1 or s4 | Alice) = 1); (3) k of
  several persons have s (``sum_person P(s | person) = k``), each with bounds allowed.
- `Rules` (Section 4.4): the top K+ positive rules Q_v => s and the top K- negative rules Q_v => not s,
  mined from the original table with a minimum support and ranked by confidence (`sqlanon.maxent.rules`),
  each then a `Conditional` with p = its confidence (1 - confidence for a negative rule).

A knowledge file is YAML (or JSON)::

    persons:                                   # optional: names used by person knowledge
      Alice: {sex: Female, education: Bachelors}
    knowledge:
      - given: {sex: Male}                     # P(Breast Cancer | male) = 0
        sensitive: Breast Cancer
        probability: 0
      - given: {sex: Female, age: 39}          # 0.2 <= P(Flu or HIV | female, 39) <= 0.5
        sensitive: [Flu, HIV]
        at_least: 0.2
        at_most: 0.5
      - person: Alice                          # kind (1)
        sensitive: HIV
        probability: 0.2
      - persons: [Alice, Bob, Charlie]         # kind (3): two of them have HIV
        sensitive: HIV
        count: 2
      - rules: {positive: 10, negative: 10, min_support: 3}

`build_system` turns the knowledge and the release's invariants (`sqlanon.maxent.invariants`) into one
set of 0/1 linear constraints over the cells, the solver's input (`sqlanon.maxent.solver`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..errors import PolicyError, UserError

if TYPE_CHECKING:
    from .invariants import Problem

KINDS = ("given", "person", "persons", "rules")
BOUND_KEYS = ("probability", "p", "count", "at_least", "at_most")


@dataclass(frozen=True)
class Conditional:
    """P(S in `values` | the quasi-identifier attributes `given`) in [low, high] (Sections 4.1, 4.5)."""

    given: tuple                 # ((attribute, value), ...)
    values: tuple                # sensitive values (any of them)
    low: float
    high: float
    label: str = ""

    def describe(self) -> str:
        q = ", ".join(f"{a}={v}" for a, v in self.given) or "anyone"
        s = " or ".join(self.values)
        return f"P({s} | {q}) {_bounds_text(self.low, self.high)}"


@dataclass(frozen=True)
class AboutPersons:
    """sum over `persons` of P(S in `values` | person) in [low, high] (Section 6; a count of persons)."""

    persons: tuple
    values: tuple
    low: float
    high: float
    label: str = ""

    def describe(self) -> str:
        who = ", ".join(self.persons)
        s = " or ".join(self.values)
        if len(self.persons) == 1:
            return f"P({s} | {who}) {_bounds_text(self.low, self.high)}"
        return f"persons among {who} with {s}: {_bounds_text(self.low, self.high)}"


@dataclass(frozen=True)
class Rules:
    """The top `positive` rules Q_v => s and top `negative` rules Q_v => not s (Section 4.4)."""

    positive: int = 0
    negative: int = 0
    min_support: int = 3
    attributes: int | None = None      # only rules whose Q_v has exactly this many attributes (Figure 6)
    label: str = ""

    def describe(self) -> str:
        t = f", {self.attributes} attributes" if self.attributes else ""
        return f"top {self.positive} positive and {self.negative} negative rules (support >= {self.min_support}{t})"


class InfeasibleKnowledge(UserError):
    """The background knowledge contradicts the published data (or itself): no distribution satisfies it."""

    def __init__(self, detail: str):
        super().__init__(f"the background knowledge is infeasible with the published data: {detail}")


@dataclass
class Knowledge:
    """What the adversary is assumed to know: items of the kinds above, and the named persons."""

    items: list = field(default_factory=list)
    persons: dict = field(default_factory=dict)     # name -> {attribute: value}, the full quasi-identifier

    def __add__(self, other: Knowledge) -> Knowledge:
        persons = dict(self.persons)
        for k, v in other.persons.items():
            if k in persons and persons[k] != v:
                raise PolicyError(f"persons.{k}", "named twice with different quasi-identifiers")
            persons[k] = v
        return Knowledge(self.items + other.items, persons)

    @property
    def rules(self) -> list[Rules]:
        return [i for i in self.items if isinstance(i, Rules)]


def _bounds_text(low: float, high: float) -> str:
    if low == high:
        return f"= {low:g}"
    if high == float("inf"):
        return f">= {low:g}"
    if low <= 0:
        return f"<= {high:g}"
    return f"in [{low:g}, {high:g}]"


def _text(v) -> str:
    """A value as the release holds it as text (YAML may read 39 as an integer)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _values(raw, field: str) -> tuple:
    vals = raw if isinstance(raw, list) else [raw]
    if not vals or any(v is None or isinstance(v, (dict, list)) for v in vals):
        raise PolicyError(field, f"must be a sensitive value or a list of them; got {raw!r}")
    out = tuple(dict.fromkeys(_text(v) for v in vals))
    return out


def _number(raw, field: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise PolicyError(field, f"must be a number; got {raw!r}")
    return float(raw)


def _bounds(item: dict, field: str, top: float, unit: str) -> tuple[float, float]:
    exact = [k for k in ("probability", "p", "count") if k in item]
    if len(exact) > 1:
        raise PolicyError(field, f"give one of probability / count, not {' and '.join(exact)}")
    if exact and ("at_least" in item or "at_most" in item):
        raise PolicyError(field, "give either an exact value (probability / count) or bounds (at_least / at_most)")
    if exact:
        low = high = _number(item[exact[0]], f"{field}.{exact[0]}")
    elif "at_least" in item or "at_most" in item:
        low = _number(item.get("at_least", 0.0), f"{field}.at_least")
        high = _number(item.get("at_most", top), f"{field}.at_most")
    else:
        raise PolicyError(field, "needs probability (or count), or at_least / at_most")
    for _name, v in (("low", low), ("high", high)):
        if not 0.0 <= v <= top:
            raise PolicyError(field, f"{unit} must be between 0 and {top:g}; got {v:g}")
    if low > high:
        raise PolicyError(field, f"at_least {low:g} is above at_most {high:g}")
    return low, high


def _mapping(raw, field: str, allow_empty: bool = False) -> dict:
    if raw is None and allow_empty:
        return {}
    if not isinstance(raw, dict) or not (raw or allow_empty):
        raise PolicyError(field, f"must be a mapping of attribute -> value; got {raw!r}")
    for k, v in raw.items():
        if not isinstance(k, str) or v is None or isinstance(v, (dict, list)):
            raise PolicyError(f"{field}.{k}", f"must be one value; got {v!r}")
    return {k: _text(v) for k, v in raw.items()}


def _item(raw, i: int, prefix: str, persons: dict):
    field = f"{prefix}[{i}]"
    if not isinstance(raw, dict):
        raise PolicyError(field, f"must be a mapping; got {raw!r}")
    kinds = [k for k in KINDS if k in raw]
    if len(kinds) != 1:
        known = {*KINDS, "sensitive", *BOUND_KEYS}
        strange = [str(k) for k in raw if k not in known]     # a typo (givne:) is named, not left to guess
        hint = f" ('{strange[0]}' is none of the keys a knowledge item takes)" if strange and not kinds else ""
        raise PolicyError(field, "give exactly one of given: (a conditional probability), person:, persons: "
                          f"or rules:{hint}")
    kind = kinds[0]
    allowed = {"given": {"given", "sensitive", *BOUND_KEYS}, "person": {"person", "sensitive", *BOUND_KEYS},
               "persons": {"persons", "sensitive", *BOUND_KEYS}, "rules": {"rules"}}[kind]
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise PolicyError(f"{field}.{unknown[0]}", f"unknown key; use {', '.join(sorted(allowed))}")
    if kind == "rules":
        return _rules(raw["rules"], f"{field}.rules")
    if "sensitive" not in raw:
        raise PolicyError(f"{field}.sensitive", "missing; name the sensitive value(s) the knowledge is about")
    values = _values(raw["sensitive"], f"{field}.sensitive")
    if kind == "given":
        given = _mapping(raw["given"], f"{field}.given", allow_empty=True)     # {}: everyone (Q_v empty)
        low, high = _bounds(raw, field, 1.0, "a probability")
        return Conditional(tuple(given.items()), values, low, high, field)
    names = [raw["person"]] if kind == "person" else raw["persons"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise PolicyError(f"{field}.{kind}", f"must name {'a person' if kind == 'person' else 'persons'}; "
                          f"got {raw[kind]!r}")
    if len(set(names)) != len(names):
        raise PolicyError(f"{field}.persons", "names a person twice")
    for n in names:
        if n not in persons:
            raise PolicyError(f"{field}.{kind}", f"person {n!r} is not defined under persons: (give their "
                              "quasi-identifier there)")
    top = float(len(names))
    low, high = _bounds(raw, field, top, "a probability" if top == 1 else "a count of persons")
    return AboutPersons(tuple(names), values, low, high, field)


# the most association rules (or the least support) a run may ask for, in a knowledge file or on the command line
RULES_LIMIT = 10 ** 9


def _rules(raw, field: str) -> Rules:
    if not isinstance(raw, dict):
        raise PolicyError(field, f"must be a mapping like {{positive: 10, negative: 10, min_support: 3}}; got {raw!r}")
    unknown = sorted(set(raw) - {"positive", "negative", "min_support", "attributes"})
    if unknown:
        raise PolicyError(f"{field}.{unknown[0]}", "unknown key; use positive, negative, min_support, attributes")
    out: dict = {}
    for key, default, low in (("positive", 0, 0), ("negative", 0, 0), ("min_support", 3, 1), ("attributes", None, 1)):
        v = raw.get(key, default)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not low <= v <= RULES_LIMIT):
            # a huge count reached the database as an INT128 conversion error
            raise PolicyError(f"{field}.{key}", f"must be an integer from {low} to {RULES_LIMIT:,}; got {v!r}")
        out[key] = v
    return Rules(out["positive"], out["negative"], out["min_support"], out["attributes"], field)


def parse_knowledge(raw, prefix: str = "knowledge") -> Knowledge:
    """Knowledge from a parsed file: a list of items, or {persons: {...}, knowledge: [...]}."""
    if raw is None:
        return Knowledge()
    if isinstance(raw, list):
        raw = {"knowledge": raw}
    if not isinstance(raw, dict):
        raise PolicyError(prefix, "must be a list of knowledge items or a mapping with knowledge: and persons:")
    unknown = sorted(set(raw) - {"knowledge", "persons"})
    if unknown:
        raise PolicyError(unknown[0], "unknown key; a knowledge file has knowledge: (a list) and persons:")
    persons = {}
    named = raw.get("persons") or {}
    if not isinstance(named, dict):
        raise PolicyError("persons", f"must be a mapping of name -> {{attribute: value}}; got {named!r}")
    for name, qi in named.items():
        persons[str(name)] = _mapping(qi, f"persons.{name}")
    items = raw.get("knowledge") or []
    if not isinstance(items, list):
        raise PolicyError(prefix, f"must be a list of items; got {type(items).__name__}")
    return Knowledge([_item(it, i, prefix, persons) for i, it in enumerate(items)], persons)


def load_knowledge(path) -> Knowledge:
    """Read a knowledge file (YAML or JSON); errors name the field, as policy errors do."""
    path = Path(path)
    from .. import files
    text = files.read_text(path, "--knowledge", "knowledge file", files.POLICY_LIMIT)
    if not text.strip():        # taken for "no knowledge" before: a file emptied by mistake said nothing
        raise PolicyError("--knowledge", f"{path} is empty; write knowledge: [...] in it (an empty list for none), "
                          "or leave --knowledge out")
    raw = files.load_yaml(text, path, "--knowledge")     # JSON is YAML too
    return parse_knowledge(raw)


# --------------------------------------------------------------------------------------------------
# knowledge + invariants -> one system of 0/1 constraints over the cells

ROW_QI, ROW_SA, ROW_PERSON, ROW_KNOWLEDGE = 0, 1, 2, 3


@dataclass
class System:
    """The solver's input: cells and 0/1 rows ``lo <= sum_{cells of row} x <= hi`` (x in records).

    A cell is (b, q, s), or (person, b, q, s) for a quasi-identifier some person knowledge names: its
    records are split into one pseudonym per named person and one group for the others, which is exact
    (the unnamed pseudonyms of q are interchangeable, so the maximum-entropy solution treats them alike
    and the split only adds a constant to the entropy).

    rows: QI-invariants (Eq. 4), SA-invariants (Eq. 5), person rows (each pseudonym is one record;
    the others group is m records) and knowledge rows. `redundant` marks the one SA-invariant per bucket
    Theorem 3 allows to drop.
    """

    problem: Problem
    cell_base: np.ndarray                 # index of the (b, q, s) cell of the problem
    cell_who: np.ndarray                  # -1, or the person group of the cell
    rows: sp.csr_matrix                   # (R, C) 0/1
    lo: np.ndarray
    hi: np.ndarray
    kind: np.ndarray                      # ROW_QI / ROW_SA / ROW_PERSON / ROW_KNOWLEDGE
    redundant: np.ndarray                 # bool per row
    labels: dict                          # knowledge row -> its description
    groups: list                          # person groups: (q, name or None, records)
    knowledge_rows: list = field(default_factory=list)   # (item, row indices) per knowledge item

    @property
    def cell_bucket(self) -> np.ndarray:
        return self.problem.cell_b[self.cell_base]

    @property
    def cells(self) -> int:
        return len(self.cell_base)

    def involved(self, r: int, most: int = 3) -> str:
        """The knowledge rows that share a bucket with row r, for an infeasibility message."""
        if self.kind[r] == ROW_KNOWLEDGE:
            return ""
        cells = self.rows.indices[self.rows.indptr[r]:self.rows.indptr[r + 1]]
        buckets = set(self.cell_bucket[cells].tolist())
        found = []
        for k in np.flatnonzero(self.kind == ROW_KNOWLEDGE):
            kc = self.rows.indices[self.rows.indptr[k]:self.rows.indptr[k + 1]]
            if buckets & set(self.cell_bucket[kc].tolist()):
                found.append(self.labels.get(int(k), f"knowledge row {k}"))
        if not found:
            return ""
        more = f" and {len(found) - most} more" if len(found) > most else ""
        return "; knowledge involved: " + "; ".join(found[:most]) + more

    def describe_row(self, r: int) -> str:
        p = self.problem
        k = int(self.kind[r])
        cells = self.rows.indices[self.rows.indptr[r]:self.rows.indptr[r + 1]]
        if k == ROW_KNOWLEDGE:
            return self.labels.get(r, f"knowledge row {r}")
        if k == ROW_PERSON:
            q, name, n = self.groups[int(self.cell_who[cells[0]])] if len(cells) else (None, None, 0)
            return (f"person {name}" if name else f"the {n} other record(s) with quasi-identifier "
                    f"({p.q_text(q)})")
        base = self.cell_base[cells[0]] if len(cells) else None
        if base is None:
            return f"row {r}"
        b = p.bucket_labels[p.cell_b[base]]
        if k == ROW_QI:
            return f"bucket {b}: the {p.cell_nq[base]} record(s) with quasi-identifier ({p.q_text(p.cell_q[base])})"
        return f"bucket {b}: the {p.cell_ns[base]} record(s) with {p.sensitive} = {p.s_values[p.cell_s[base]]}"


def _match_q(problem, given: tuple, field: str) -> np.ndarray:
    """Boolean over the problem's q: does q match every attribute = value of `given`?"""
    mask = np.ones(problem.q_count, dtype=bool)
    for attr, value in given:
        if attr not in problem.attributes:
            raise PolicyError(f"{field}.given.{attr}", f"'{attr}' is not a quasi-identifier of the release "
                              f"({', '.join(problem.attributes)})")
        i = problem.attributes.index(attr)
        code = problem.attr_codes[i].get(value)
        if code is None:
            code = _numeric_match(problem.attr_values[i], value, f"{field}.given.{attr}")
        if code is None:
            raise PolicyError(f"{field}.given.{attr}", f"value {value!r} does not occur in the release")
        mask &= problem.q_codes[:, i] == code
    return mask


def _decimal(value) -> Decimal | None:
    """`value` (a number, or a text) as an exact finite decimal; None when it is none."""
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _numeric_match(texts: list[str], value, field: str) -> int | None:
    """The code of the one published text equal to `value` as a number (`70` in the knowledge file, ``70.0`` in
    a DOUBLE column's release), or None; two such texts (``0.0`` and ``-0.0``, two labels to a reader) are
    refused as ambiguous. Compared as exact decimals: through floats, 9007199254740993 met 9007199254740992."""
    number = _decimal(value)
    if number is None:
        return None
    equal = [code for code, text in enumerate(texts) if _decimal(text) == number]
    if len(equal) > 1:
        raise PolicyError(field, f"value {value!r} is equal to {', '.join(repr(texts[c]) for c in equal)} in the "
                          "release; write the one meant as the release shows it")
    return equal[0] if equal else None


def _s_mask(problem, values: tuple, field: str) -> np.ndarray:
    mask = np.zeros(len(problem.s_values), dtype=bool)
    for v in values:
        code = problem.s_codes.get(v)
        if code is None:
            raise PolicyError(f"{field}.sensitive", f"value {v!r} of {problem.sensitive} does not occur in the release")
        mask[code] = True
    return mask


def _person_q(problem, persons: dict, used: list[str]) -> dict[str, int]:
    out = {}
    for name in used:
        qi = persons[name]
        missing = [a for a in problem.attributes if a not in qi]
        extra = [a for a in qi if a not in problem.attributes]
        if missing or extra:
            what = f"lacks {missing[0]}" if missing else f"has {extra[0]}, not a quasi-identifier"
            raise PolicyError(f"persons.{name}", "must give the full quasi-identifier "
                              f"({', '.join(problem.attributes)}); it {what}")
        mask = _match_q(problem, tuple((a, qi[a]) for a in problem.attributes), f"persons.{name}")
        hits = np.flatnonzero(mask)
        if len(hits) == 0:
            raise PolicyError(f"persons.{name}", "no published record has this quasi-identifier")
        out[name] = int(hits[0])
    return out


def build_system(problem, items: list, persons: dict | None = None) -> System:
    """Invariants (Section 5) plus knowledge rows (Sections 4, 6) over the problem's cells.

    `items` holds `Conditional` and `AboutPersons` (rules must already be mined into conditionals).
    A knowledge row that pins a probability to 1 is written as its complement pinned to 0, so the
    solver's presolve sees the zeros it implies.
    """
    persons = persons or {}
    used = list(dict.fromkeys(n for it in items if isinstance(it, AboutPersons) for n in it.persons))
    person_q = _person_q(problem, persons, used)
    # person groups: per named q, one group per named person and one for the other records of q
    groups: list = []
    group_of: dict[str, int] = {}
    by_q: dict[int, list[str]] = {}
    for name in used:
        by_q.setdefault(person_q[name], []).append(name)
    q_groups: dict[int, list[int]] = {}
    for q, names in by_q.items():
        n_q = int(problem.q_n[q])
        if len(names) > n_q:
            raise InfeasibleKnowledge(f"{len(names)} persons ({', '.join(names)}) are named with quasi-identifier "
                                      f"({problem.q_text(q)}), which only {n_q} published record(s) carry")
        ids = []
        for name in names:
            group_of[name] = len(groups)
            ids.append(len(groups))
            groups.append((q, name, 1))
        if n_q > len(names):
            ids.append(len(groups))
            groups.append((q, None, n_q - len(names)))
        q_groups[q] = ids
    # cells: base cells, those of named q repeated once per group
    ncell = len(problem.cell_b)
    reps = np.ones(ncell, dtype=np.int64)
    split = np.zeros(problem.q_count, dtype=np.int64)
    for q, ids in q_groups.items():
        split[q] = len(ids)
    named = split[problem.cell_q] > 0
    reps[named] = split[problem.cell_q[named]]
    cell_base = np.repeat(np.arange(ncell), reps)
    cell_who = np.full(len(cell_base), -1, dtype=np.int64)
    if q_groups:
        starts = np.concatenate([[0], np.cumsum(reps)[:-1]])
        for base in np.flatnonzero(named):
            ids = q_groups[int(problem.cell_q[base])]
            cell_who[starts[base]:starts[base] + len(ids)] = ids
    C = len(cell_base)
    cols = np.arange(C)
    # invariant rows: one per (b, q) and per (b, s); the first SA row of each bucket is redundant (Thm 3)
    qb = problem.cell_qb[cell_base]
    sb = problem.cell_sb[cell_base]
    n_qb, n_sb = len(problem.qb_n), len(problem.sb_n)
    row_idx = [qb, n_qb + sb]
    lo = [problem.qb_n.astype(float), problem.sb_n.astype(float)]
    kind = [np.full(n_qb, ROW_QI), np.full(n_sb, ROW_SA)]
    redundant = [np.zeros(n_qb, dtype=bool), problem.sb_first.copy()]
    col_idx = [cols, cols]
    R = n_qb + n_sb
    if groups:
        mine = cell_who >= 0
        row_idx.append(R + cell_who[mine])
        col_idx.append(cols[mine])
        lo.append(np.array([g[2] for g in groups], dtype=float))
        kind.append(np.full(len(groups), ROW_PERSON))
        redundant.append(np.zeros(len(groups), dtype=bool))
        R += len(groups)
    hi = list(lo)
    labels, knowledge_rows = {}, []
    cell_s = problem.cell_s[cell_base]
    cell_q = problem.cell_q[cell_base]
    for item in items:
        field = item.label or "knowledge"
        if isinstance(item, Conditional):
            qmask = _match_q(problem, item.given, field)
            smask = _s_mask(problem, item.values, field)
            total = float(problem.q_n[qmask].sum())          # N * P(Q_v), from the published data
            low, high, top = item.low * total, item.high * total, total
            in_q = qmask[cell_q]
        elif isinstance(item, AboutPersons):
            smask = _s_mask(problem, item.values, field)
            who = np.zeros(len(groups) + 1, dtype=bool)
            who[[group_of[n] for n in item.persons]] = True
            in_q = who[cell_who]       # cell_who = -1 reads the last entry, always False
            low, high, top = item.low, item.high, float(len(item.persons))
        else:
            raise TypeError(f"not a knowledge item the solver takes: {type(item).__name__}")
        rows_here = []
        if low >= top and top > 0:
            # all of them: the complement is pinned to zero (sum over the other values = 0)
            cells = np.flatnonzero(in_q & ~smask[cell_s])
            bounds = (0.0, 0.0)
        else:
            cells = np.flatnonzero(in_q & smask[cell_s])
            bounds = (low, high)
        row_idx.append(np.full(len(cells), R))
        col_idx.append(cells)
        lo.append(np.array([bounds[0]]))
        hi.append(np.array([bounds[1]]))
        kind.append(np.array([ROW_KNOWLEDGE]))
        redundant.append(np.array([False]))
        labels[R] = f"{item.label}: {item.describe()}" if item.label else item.describe()
        rows_here.append(R)
        R += 1
        knowledge_rows.append((item, rows_here))
    rows = sp.csr_matrix((np.ones(sum(len(c) for c in col_idx)), (np.concatenate(row_idx), np.concatenate(col_idx))),
                         shape=(R, C))
    rows.sum_duplicates()
    rows.data[:] = 1.0
    return System(problem, cell_base, cell_who, rows, np.concatenate(lo), np.concatenate(hi), np.concatenate(kind),
                  np.concatenate(redundant), labels, groups, knowledge_rows)
