"""Generalization hierarchies (value generalization hierarchies, TKDD Section 2 and Figure 3).

A hierarchy maps every base value of a quasi-identifier to one label per level: level 0 is the value
as it appears in the data, the top level is usually the single root '*'. Kinds:

- ``taxonomy``: a CSV file, one column per level (column 0 = the data value);
- ``intervals``: numbers binned by a list of nested widths ([5, 10, 20] gives [15, 20) -> [10, 20) -> [0, 20) -> *);
- ``round``: numbers with one more digit rounded away per level (intervals of widths 10, 100, ...);
- ``mask``: strings with one more trailing character replaced by '*' per level (zip codes);
- ``dates``: day -> month -> year -> *;
- ``suppress``: value -> '*'.

Each becomes a `HierarchyTable` (labels per level, small: one row per base value) and then a mapping
table in the database with an integer code per level (see `sqlanon.frequency`).
"""
from __future__ import annotations

import csv
import datetime as _dt
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import PolicyError, DataError

ROOT = "*"
KINDS = ("taxonomy", "intervals", "round", "mask", "dates", "suppress")


@dataclass
class HierarchyTable:
    """Labels of every base value at every level.

    values:  the base values as strings (what `CAST(column AS VARCHAR)` gives in the database);
    labels:  list of levels, each a list of labels aligned with `values` (labels[0] == values);
    """

    attribute: str
    values: list[str]
    labels: list[list[str]]
    source: str = ""

    @property
    def height(self) -> int:
        return len(self.labels) - 1

    def codes(self) -> np.ndarray:
        """Integer codes, shape (height + 1, n): labels dense-ranked per level in order of first appearance.

        Codes follow the order of `values`, so for ordered hierarchies (intervals, dates) code order is
        value order.
        """
        out = np.empty((self.height + 1, len(self.values)), dtype=np.int64)
        for j, level in enumerate(self.labels):
            seen: dict[str, int] = {}
            out[j] = [seen.setdefault(label, len(seen)) for label in level]
        return out

    def leaf_counts(self) -> np.ndarray:
        """Shape (height + 1, n): how many base values the label of value i at level j covers (its area)."""
        codes = self.codes()
        out = np.empty_like(codes)
        for j in range(codes.shape[0]):
            out[j] = np.bincount(codes[j])[codes[j]]
        return out

    def domain_sizes(self) -> list[int]:
        """Number of distinct labels at each level."""
        return [len(set(level)) for level in self.labels]

    def digest(self) -> str:
        h = hashlib.sha256()
        for row in zip(*self.labels):
            h.update("\x1f".join(row).encode() + b"\x1e")
        return h.hexdigest()[:16]

    def validate(self) -> None:
        """A hierarchy must be a tree: unique base values, one parent per label, levels that nest."""
        seen: set[str] = set()
        for v in self.values:
            if v in seen:
                raise DataError(f"hierarchy for '{self.attribute}' ({self.source}): value {v!r} appears twice; "
                                "give each base value exactly one row")
            seen.add(v)
        for j in range(self.height):
            parent: dict[str, str] = {}
            for child, up in zip(self.labels[j], self.labels[j + 1]):
                if parent.setdefault(child, up) != up:
                    raise DataError(
                        f"hierarchy for '{self.attribute}' ({self.source}): label {child!r} at level {j} has two "
                        f"parents at level {j + 1} ({parent[child]!r} and {up!r}); levels must nest (a tree)")


def _field(qi: str) -> str:
    return f"quasi_identifiers.{qi}"


def spec_kind(spec: dict, qi: str) -> str:
    kind = spec.get("hierarchy")
    if kind is None:
        raise PolicyError(_field(qi) + ".hierarchy", "missing; give a CSV path or one of " + ", ".join(KINDS[1:]))
    if not isinstance(kind, str):
        raise PolicyError(_field(qi) + ".hierarchy", f"must be a string; got {kind!r}")
    return kind if kind in KINDS[1:] else "taxonomy"


def load_taxonomy_csv(path: Path, attribute: str) -> HierarchyTable:
    """Read a taxonomy: header row, then one row per base value, one column per level."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    except OSError as e:
        raise PolicyError(_field(attribute) + ".hierarchy", f"cannot read {path}: {e.strerror}") from None
    if len(rows) < 2:
        raise DataError(f"hierarchy file {path}: needs a header row and at least one value row")
    width = len(rows[0])
    body = rows[1:]
    for i, r in enumerate(body, start=2):
        if len(r) != width:
            raise DataError(f"hierarchy file {path}, line {i}: {len(r)} columns, the header has {width}")
    labels = [[r[j].strip() for r in body] for j in range(width)]
    table = HierarchyTable(attribute, labels[0], labels, source=str(path))
    table.validate()
    return table


def _number(v: str, attribute: str) -> float:
    try:
        return float(v)
    except ValueError:
        raise DataError(f"column '{attribute}': value {v!r} is not a number, but its hierarchy "
                        "(intervals/round) needs numbers; use a taxonomy CSV instead") from None


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def interval_table(attribute: str, values: list[str], widths: list[float], origin: float = 0.0,
                   top: bool = True) -> HierarchyTable:
    """Nested intervals [lo, lo + w) aligned at origin + multiples of w, one level per width, then '*'."""
    nums = [_number(v, attribute) for v in values]
    order = sorted(range(len(values)), key=lambda i: nums[i])
    values = [values[i] for i in order]
    nums = [nums[i] for i in order]
    labels = [list(values)]
    for w in widths:
        level = []
        for x in nums:
            lo = origin + np.floor((x - origin) / w) * w
            level.append(f"[{_fmt(lo)}, {_fmt(lo + w)})")
        labels.append(level)
    if top:
        labels.append([ROOT] * len(values))
    return HierarchyTable(attribute, values, labels, source=f"intervals {widths}")


def mask_table(attribute: str, values: list[str], levels: int | None) -> HierarchyTable:
    """Replace one more trailing character by '*' per level (13053 -> 1305* -> 130** ...), then '*'."""
    values = sorted(values)
    longest = max((len(v) for v in values), default=1)
    height = longest if levels is None else int(levels)
    labels = [list(values)]
    for j in range(1, height + 1):
        if j >= longest:
            labels.append([ROOT] * len(values))
        else:
            labels.append([v[: max(len(v) - j, 0)] + "*" * min(j, len(v)) for v in values])
    if labels[-1] != [ROOT] * len(values):
        labels.append([ROOT] * len(values))
    return HierarchyTable(attribute, values, labels, source=f"mask {height}")


def date_table(attribute: str, values: list[str]) -> HierarchyTable:
    """Day -> month (YYYY-MM) -> year (YYYY) -> '*'."""
    parsed = []
    for v in values:
        try:
            parsed.append(_dt.date.fromisoformat(str(v)[:10]))
        except ValueError:
            raise DataError(f"column '{attribute}': value {v!r} is not a date (YYYY-MM-DD), but its hierarchy is "
                            "'dates'") from None
    order = sorted(range(len(values)), key=lambda i: parsed[i])
    values = [values[i] for i in order]
    parsed = [parsed[i] for i in order]
    labels = [values, [d.strftime("%Y-%m") for d in parsed], [d.strftime("%Y") for d in parsed],
              [ROOT] * len(values)]
    return HierarchyTable(attribute, values, labels, source="dates")


def suppress_table(attribute: str, values: list[str]) -> HierarchyTable:
    values = sorted(values)
    return HierarchyTable(attribute, values, [list(values), [ROOT] * len(values)], source="suppress")


def build_table(attribute: str, spec: dict, base_dir: Path, data_values: list[str] | None) -> HierarchyTable:
    """The HierarchyTable for one attribute from its policy spec.

    Generated kinds (intervals, round, mask, dates, suppress) are built over the distinct values
    present in the data (`data_values`); a taxonomy comes from its file and must cover them.
    """
    kind = spec_kind(spec, attribute)
    field = _field(attribute)
    if kind == "taxonomy":
        path = Path(spec["hierarchy"])
        if not path.is_absolute():
            path = base_dir / path
        if not path.exists():
            raise PolicyError(field + ".hierarchy", f"file {path} does not exist; give a CSV path relative to the "
                              "policy file, or one of " + ", ".join(KINDS[1:]))
        return load_taxonomy_csv(path, attribute)
    values = list(data_values or [])
    if kind == "intervals":
        widths = spec.get("widths")
        if not isinstance(widths, list) or not widths or not all(
                isinstance(w, (int, float)) and not isinstance(w, bool) and w > 0 for w in widths):
            raise PolicyError(field + ".widths", f"must be a list of positive numbers; got {widths!r}")
        for a, b in zip(widths, widths[1:]):
            if b <= a or (b / a) != int(b / a):
                raise PolicyError(field + ".widths", f"each width must be a multiple of the previous one "
                                  f"(nested intervals); {b} is not a multiple of {a}")
        origin = spec.get("origin", 0)
        if not isinstance(origin, (int, float)) or isinstance(origin, bool):
            raise PolicyError(field + ".origin", f"must be a number; got {origin!r}")
        return interval_table(attribute, values, list(widths), origin)
    if kind == "round":
        levels = spec.get("levels")
        if not isinstance(levels, int) or isinstance(levels, bool) or levels < 1:
            raise PolicyError(field + ".levels", f"must be a positive integer (digits to round); got {levels!r}")
        table = interval_table(attribute, values, [10 ** j for j in range(1, levels)], 0)
        table.source = f"round {levels}"
        return table
    if kind == "mask":
        levels = spec.get("levels")
        if levels is not None and (not isinstance(levels, int) or isinstance(levels, bool) or levels < 1):
            raise PolicyError(field + ".levels", f"must be a positive integer; got {levels!r}")
        return mask_table(attribute, values, levels)
    if kind == "dates":
        return date_table(attribute, values)
    return suppress_table(attribute, values)
