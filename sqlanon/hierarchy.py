"""Generalization hierarchies (value generalization hierarchies, TKDD Section 2 and Figure 3).

A hierarchy maps every base value of a quasi-identifier to one label per level: level 0 is the value
as it appears in the data, the top level is usually the single root '*'. Kinds:

- ``taxonomy``: a CSV file, either wide (one column per level, column 0 = the data value) or an edge
  table (header ``child,parent``, one row per edge; see `edge_table`);
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
import io
import math
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal, InvalidOperation, localcontext
from pathlib import Path

import numpy as np

from . import files
from .errors import DataError, PolicyError

ROOT = "*"
ROUND_LEVELS = 18     # `round` drops up to 17 digits: 10**17 is still exact in a double
KINDS = ("taxonomy", "intervals", "round", "mask", "dates", "suppress")


@dataclass
class HierarchyTable:
    """Labels of every base value at every level.

    values:  the base values as strings (what `CAST(column AS VARCHAR)` gives in the database);
    labels:  list of levels, each a list of labels aligned with `values` (labels[0] == values);

    >>> table = HierarchyTable("sex", ["female", "male"], [["female", "male"], ["*", "*"]])
    >>> table.height, table.domain_sizes(), table.codes().tolist()
    (1, [2, 1], [[0, 1], [0, 0]])
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

    def nested_codes(self) -> bool:
        """Do the level-0 codes, in order, keep each label of every level on consecutive codes? Then sorting
        rows by the level-0 code groups them by every level's label too.

        >>> values = ["1", "2", "3"]
        >>> HierarchyTable("n", values, [values, ["low", "high", "low"], ["*"] * 3]).nested_codes()
        False
        >>> HierarchyTable("n", values, [values, ["low", "low", "high"], ["*"] * 3]).nested_codes()
        True
        """
        codes = self.codes()
        order = np.argsort(codes[0], kind="stable")
        for level in codes[1:]:
            run = level[order]
            starts = run[np.r_[True, run[1:] != run[:-1]]]
            if len(starts) != len(np.unique(starts)):
                return False
        return True

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

    def same_blocks(self) -> list[int]:
        """Per level, the lowest level that splits the values into the same blocks (itself when none lower
        does). Levels nest (`validate`), so two levels with as many labels split the values alike: a node
        with this attribute at either level has the same blocks, whatever the data.

        >>> HierarchyTable("q", ["1", "2"], [["1", "2"], ["*", "*"], ["*", "*"]]).same_blocks()
        [0, 1, 1]
        """
        sizes = self.domain_sizes()
        return [sizes.index(size) for size in sizes]

    def digest(self) -> str:
        h = hashlib.sha256()
        for row in zip(*self.labels):
            h.update("\x1f".join(row).encode() + b"\x1e")
        return h.hexdigest()[:16]

    def validate(self) -> None:
        """A hierarchy must be a tree: unique base values, one parent per label, levels that nest."""
        problems = tree_problems(self.values, self.labels)
        where = f"hierarchy for '{self.attribute}' ({self.source})"
        if problems["duplicates"]:
            v = problems["duplicates"][0]["value"]
            raise DataError(f"{where}: value {v!r} appears twice; give each base value exactly one row")
        for p in problems["two_parents"] + problems["not_nesting"]:
            a, b = p["parents"][:2]
            raise DataError(f"{where}: label {p['label']!r} at level {p['level']} has two parents at level "
                            f"{p['level'] + 1} ({a!r} and {b!r}); levels must nest (a tree)")


def tree_problems(values: list[str], labels: list[list[str]]) -> dict[str, list[dict]]:
    """Every way a wide hierarchy (labels per level, aligned with `values`) fails to be a tree.

    duplicates:  base values on more than one row;
    two_parents: base values given different labels at level 1 (level 0 labels with two parents);
    not_nesting: labels at a level >= 1 whose rows give them different labels one level up.
    Each parents list is in order of first appearance.
    """
    rows: dict[str, int] = {}
    for v in values:
        rows[v] = rows.get(v, 0) + 1
    out: dict[str, list[dict]] = {"duplicates": [{"value": v, "rows": n} for v, n in rows.items() if n > 1],
                                  "two_parents": [], "not_nesting": []}
    for j in range(len(labels) - 1):
        parents: dict[str, dict[str, None]] = {}
        for child, up in zip(labels[j], labels[j + 1]):
            parents.setdefault(child, {})[up] = None
        for child, ups in parents.items():
            if len(ups) > 1:
                out["two_parents" if j == 0 else "not_nesting"].append(
                    {"level": j, "label": child, "parents": list(ups)})
    return out


def _field(qi: str, section: str = "quasi_identifiers") -> str:
    return f"{section}.{qi}"


def spec_kind(spec: dict, qi: str, section: str = "quasi_identifiers") -> str:
    """The kind of a hierarchy spec; `section` (quasi_identifiers or sensitive) names the field in errors."""
    kind = spec.get("hierarchy")
    if kind is None:
        raise PolicyError(_field(qi, section) + ".hierarchy", "missing; give a CSV path or one of "
                          + ", ".join(KINDS[1:]))
    if not isinstance(kind, str):
        raise PolicyError(_field(qi, section) + ".hierarchy", f"must be a string; got {kind!r}")
    return kind if kind in KINDS[1:] else "taxonomy"


EDGE_HEADER = ("child", "parent")


ENCODING_HINT = "save it as UTF-8, or name its encoding beside hierarchy:, e.g. encoding: latin-1"


def read_hierarchy_csv(path: Path, field: str, encoding: str = "utf-8",
                       hint: str = ENCODING_HINT) -> list[tuple[int, list[str]]]:
    """The non-blank rows of a hierarchy CSV with their line numbers, header first, cells stripped.

    The file must be a regular file of at most `files.HIERARCHY_LIMIT` bytes in `encoding` (UTF-8 unless
    the spec says `encoding: latin-1`, ...): a Latin-1 file read as UTF-8 would give labels that match no
    value, so it is refused with the line of the first undecodable byte."""
    text = files.read_text(path, field, "hierarchy file", files.HIERARCHY_LIMIT, encoding, hint=hint)
    try:
        rows = [(i, [c.strip() for c in r]) for i, r in enumerate(csv.reader(io.StringIO(text, newline="")), start=1)
                if r and any(c.strip() for c in r)]
    except csv.Error as e:
        raise PolicyError(field, f"hierarchy file {path} is not a CSV file: {e}") from None
    if len(rows) < 2:
        raise DataError(f"hierarchy file {path}: needs a header row and at least one value row")
    return rows


def is_edge_header(header: list[str]) -> bool:
    return tuple(c.lower() for c in header) == EDGE_HEADER


def load_taxonomy_csv(path: Path, attribute: str, encoding: str = "utf-8",
                      section: str = "quasi_identifiers", option: str | None = None) -> HierarchyTable:
    """Read a taxonomy: a wide CSV (header row, then one row per base value, one column per level) or,
    when the header is ``child,parent``, an edge table (`edge_table`). Errors name the policy field, or
    `option` for a file given on the command line (`attack --groups`)."""
    field, hint = ((option, "save it as UTF-8") if option else
                   (_field(attribute, section) + ".hierarchy", ENCODING_HINT))
    rows = read_hierarchy_csv(path, field, encoding, hint)
    if is_edge_header(rows[0][1]):
        return edge_table(attribute, rows[1:], str(path))
    width = len(rows[0][1])
    body = [r for _, r in rows[1:]]
    for i, r in rows[1:]:
        if len(r) != width:
            raise DataError(f"hierarchy file {path}, line {i}: {len(r)} columns, the header has {width}")
    labels = [[r[j] for r in body] for j in range(width)]
    table = HierarchyTable(attribute, labels[0], labels, source=str(path))
    table.validate()
    return table


@dataclass
class EdgeTree:
    """A parent-child edge table read as a graph (before it is known to be a tree).

    parents:  child -> its distinct parents in file order (a tree gives each exactly one);
    lines:    child -> the file lines that name it as a child;
    leaves:   children that are nobody's parent, in file order (the base values);
    roots:    parents that are nobody's child, in file order (a tree has exactly one);
    malformed: [(line, row, why)] rows that are not two non-empty cells, or name a node as its own parent.
    """

    parents: dict[str, list[str]]
    lines: dict[str, list[int]]
    leaves: list[str]
    roots: list[str]
    malformed: list[tuple[int, list[str], str]]

    @classmethod
    def read(cls, rows: list[tuple[int, list[str]]]) -> EdgeTree:
        parents: dict[str, list[str]] = {}
        lines: dict[str, list[int]] = {}
        malformed = []
        for i, r in rows:
            if len(r) != 2 or not r[0] or not r[1]:
                malformed.append((i, r, "a row needs two non-empty cells: child,parent"))
                continue
            if r[0] == r[1]:
                malformed.append((i, r, "a node cannot be its own parent"))
                continue
            ups = parents.setdefault(r[0], [])
            if r[1] not in ups:
                ups.append(r[1])
            lines.setdefault(r[0], []).append(i)
        named_parents = dict.fromkeys(p for ups in parents.values() for p in ups)
        leaves = [c for c in parents if c not in named_parents]
        roots = [p for p in named_parents if p not in parents]
        return cls(parents, lines, leaves, roots, malformed)

    def cycles(self) -> list[list[str]]:
        """Cycles of parent links (following each node's first parent), each once, as [a, b, ..., a]."""
        out, done = [], set()
        for start in self.parents:
            path: list[str] = []
            on_path: dict[str, int] = {}
            node = start
            while node in self.parents and node not in done and node not in on_path:
                on_path[node] = len(path)
                path.append(node)
                node = self.parents[node][0]
            if node in on_path:
                out.append(path[on_path[node]:] + [node])
            done.update(path)
        return out

    def problems(self) -> dict[str, list]:
        """Every way the edge table fails to be a tree (the keys of `tree_problems`, plus its own)."""
        return {
            "malformed_rows": [{"line": i, "row": r, "why": why} for i, r, why in self.malformed],
            "duplicates": [{"value": c, "rows": len(ls), "lines": ls} for c, ls in self.lines.items() if len(ls) > 1],
            "two_parents": [{"level": None, "label": c, "parents": ups, "lines": self.lines[c]}
                            for c, ups in self.parents.items() if len(ups) > 1],
            "not_nesting": [],   # a tree always nests: broken nesting shows as two parents or a cycle
            "cycles": self.cycles(),
            "several_roots": list(self.roots) if len(self.roots) > 1 else [],
        }

    def path_to_root(self, leaf: str) -> list[str]:
        path = [leaf]
        while path[-1] in self.parents:
            path.append(self.parents[path[-1]][0])
        return path


def edge_table(attribute: str, rows: list[tuple[int, list[str]]], source: str) -> HierarchyTable:
    """A hierarchy from a parent-child edge table: rows ``child,parent`` (header ``child,parent``).

    The leaves (children that are nobody's parent) are the base values as they are in the data; the
    root (the one parent that is nobody's child) is the top level; the height is the depth of the
    deepest leaf. The table must be a tree: one parent per child, one root, no cycles, no duplicate
    rows for a child. Leaves may sit at different depths: levels are counted down from the root
    (level H - t holds the nodes at depth t), and a leaf shallower than the deepest keeps its own
    label on the levels below its depth. With root '*' -> Europe -> {France, Germany} and
    '*' -> Unknown, "Unknown" is its own label at levels 0 and 1 and '*' at level 2, while France
    becomes Europe at level 1.
    """
    tree = EdgeTree.read(rows)
    where = f"hierarchy for '{attribute}' ({source})"
    problems = tree.problems()
    if problems["malformed_rows"]:
        p = problems["malformed_rows"][0]
        raise DataError(f"{where}, line {p['line']}: {p['why']}; got {','.join(p['row'])!r}")
    if problems["two_parents"]:
        p = problems["two_parents"][0]
        raise DataError(f"{where}: {p['label']!r} has two parents ({p['parents'][0]!r} and {p['parents'][1]!r}, "
                        f"lines {p['lines']}); a hierarchy must be a tree")
    if problems["duplicates"]:
        p = problems["duplicates"][0]
        raise DataError(f"{where}: child {p['value']!r} appears on lines {p['lines']}; give each child one row")
    if problems["cycles"]:
        raise DataError(f"{where}: the parent links form a cycle ({' -> '.join(problems['cycles'][0])}); a "
                        "hierarchy must be a tree")
    if problems["several_roots"]:
        shown = ", ".join(map(repr, problems["several_roots"][:5]))
        raise DataError(f"{where}: {len(problems['several_roots'])} roots ({shown}); a tree has one root: add a "
                        "row ROOT,* for each of them")
    paths = [tree.path_to_root(leaf) for leaf in tree.leaves]
    height = max(len(p) for p in paths) - 1
    # level j of a leaf at depth d is its ancestor at depth min(d, height - j): path[max(0, d - height + j)]
    labels = [[p[max(0, len(p) - 1 - height + j)] for p in paths] for j in range(height + 1)]
    table = HierarchyTable(attribute, list(tree.leaves), labels, source=source)
    table.validate()
    return table


def file_problems(path: Path, encoding: str = "utf-8") -> dict:
    """A hierarchy CSV (wide or edge table) checked whole, every problem listed (`sqlanon hierarchy check`).

    Returns format ("wide" | "edges"), column (a wide file's first header cell: the data column it
    describes), values (the base values, first occurrence order), inner_labels (labels above level 0),
    height (None when cycles leave it undefined), problems (the keys of `tree_problems` and
    `EdgeTree.problems`, each a list; empty lists when clean) and notes (leaf depths of an edge table
    whose leaves sit at several depths: allowed, see `edge_table`).
    """
    rows = read_hierarchy_csv(path, "FILE", encoding, "save it as UTF-8, or name its encoding: --encoding latin-1")
    header = rows[0][1]
    notes: dict = {}
    if is_edge_header(header):
        tree = EdgeTree.read(rows[1:])
        problems = tree.problems()
        height = None
        if not problems["cycles"] and tree.leaves:
            depths: dict[int, int] = {}
            for leaf in tree.leaves:
                d = len(tree.path_to_root(leaf)) - 1
                depths[d] = depths.get(d, 0) + 1
            height = max(depths)
            if len(depths) > 1:
                notes["leaf_depths"] = dict(sorted(depths.items()))
        inner = [p for ups in tree.parents.values() for p in ups]
        return {"format": "edges", "column": None, "values": list(tree.leaves), "inner_labels": sorted(set(inner)),
                "height": height, "problems": problems, "notes": notes}
    width = len(header)
    malformed = [{"line": i, "row": r, "why": f"{len(r)} columns, the header has {width}"}
                 for i, r in rows[1:] if len(r) != width]
    body = [r for _, r in rows[1:] if len(r) == width]
    labels = [[r[j] for r in body] for j in range(width)]
    problems = {"malformed_rows": malformed, **tree_problems(labels[0], labels), "cycles": [], "several_roots": []}
    inner_labels = {label for level in labels[1:] for label in level}
    return {"format": "wide", "column": header[0], "values": list(dict.fromkeys(labels[0])),
            "inner_labels": sorted(inner_labels), "height": width - 1, "problems": problems, "notes": notes}


def _number(v: str, attribute: str) -> Decimal:
    """A value's text as the exact decimal it writes: floats went wrong past 2^53 (99999999999999999 fell in
    [100000000000000000, ...)) and at decimal widths (0.6 in [0.5, 0.6))."""
    try:
        x = Decimal(str(v).strip())
    except (InvalidOperation, ValueError):
        raise DataError(f"column '{attribute}': value {v!r} is not a number, but its hierarchy "
                        "(intervals/round) needs numbers; use a taxonomy CSV instead") from None
    if not x.is_finite():
        raise DataError(f"column '{attribute}': value {v!r} is not a finite number and falls in no interval; "
                        "filter it out with a query: source, or use a taxonomy CSV") from None
    return x


def _decimal(x) -> Decimal:
    """A width or an origin of the policy as the decimal it is written as (0.1, not 0.1000000000000000055...)."""
    return Decimal(repr(x)) if isinstance(x, float) else Decimal(x)


def _fmt(x: Decimal) -> str:
    """A bound as plain text: 20, 0.5, -3, 100000000000000010 (no exponent, no trailing zeros, no -0)."""
    return "0" if x == 0 else format(x.normalize(), "f")


def is_multiple(b, a) -> bool:
    """Whether the width `b` is a whole multiple of `a`, as the decimals they are written as (0.3 of 0.1 is;
    in floats 0.3 / 0.1 is 2.9999999999999996).

    Examples:
        >>> is_multiple(0.3, 0.1), is_multiple(0.9, 0.3), is_multiple(0.25, 0.1)
        (True, True, False)
    """
    return _decimal(b) % _decimal(a) == 0


def interval_table(attribute: str, values: list[str], widths: list[float], origin: float = 0.0,
                   top: bool = True) -> HierarchyTable:
    """Nested intervals [lo, lo + w) aligned at origin + multiples of w, one level per width, then '*'.

    Args:
        attribute: the column's name (for error messages).
        values: the column's distinct values, as strings of numbers.
        widths: the interval width of each level, each a multiple of the one before.
        origin: where the intervals start (0: [20, 30) for width 10).
        top: add the single root '*' as the last level.

    Returns:
        The `HierarchyTable`, values in numeric order.

    >>> for level in interval_table("age", ["28", "35", "47", "21"], [10, 20]).labels:
    ...     print(level)
    ['21', '28', '35', '47']
    ['[20, 30)', '[20, 30)', '[30, 40)', '[40, 50)']
    ['[20, 40)', '[20, 40)', '[20, 40)', '[40, 60)']
    ['*', '*', '*', '*']
    """
    nums = [_number(v, attribute) for v in values]
    order = sorted(range(len(values)), key=lambda i: nums[i])
    values = [values[i] for i in order]
    nums = [nums[i] for i in order]
    labels = [list(values)]
    start = _decimal(origin)
    with localcontext() as exact:
        exact.prec = 200        # a quotient's floor is exact for any value a column holds
        for w in map(_decimal, widths):
            level = []
            for x in nums:
                lo = start + ((x - start) / w).to_integral_value(rounding=ROUND_FLOOR) * w
                level.append(f"[{_fmt(lo)}, {_fmt(lo + w)})")
            labels.append(level)
    if top:
        labels.append([ROOT] * len(values))
    return HierarchyTable(attribute, values, labels, source=f"intervals {widths}")


# the most levels a mask hierarchy may ask for beyond its longest value's length
MASK_LEVELS = 64


def mask_table(attribute: str, values: list[str], levels: int | None) -> HierarchyTable:
    """Replace one more trailing character by '*' per level (13053 -> 1305* -> 130** ...), then '*'.

    Args:
        attribute: the column's name.
        values: the column's distinct values as strings.
        levels: how many levels (default: the longest value's length); the last is always '*'.

    Returns:
        The `HierarchyTable`, values in sorted order.

    >>> mask_table("zip", ["14850", "13053", "13068"], 2).labels
    [['13053', '13068', '14850'], ['1305*', '1306*', '1485*'], ['130**', '130**', '148**'], ['*', '*', '*']]
    """
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
    """Day -> month (YYYY-MM) -> year (YYYY) -> '*'.

    Args:
        attribute: the column's name.
        values: the column's distinct values, ISO dates (YYYY-MM-DD, a time part ignored).

    Returns:
        The `HierarchyTable`, values in date order.

    Raises:
        DataError: a value that is not a date.

    >>> date_table("admitted", ["2024-03-05", "2023-12-31"]).labels
    [['2023-12-31', '2024-03-05'], ['2023-12', '2024-03'], ['2023', '2024'], ['*', '*']]
    """
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
    """Two levels: the values as they are, then '*' (the attribute kept or suppressed).

    Args:
        attribute: the column's name.
        values: the column's distinct values as strings.

    Returns:
        The `HierarchyTable`, values in sorted order.

    >>> suppress_table("nationality", ["Russian", "American"]).labels
    [['American', 'Russian'], ['*', '*']]
    """
    values = sorted(values)
    return HierarchyTable(attribute, values, [list(values), [ROOT] * len(values)], source="suppress")


def build_table(attribute: str, spec: dict, base_dir: Path, data_values: list[str] | None,
                section: str = "quasi_identifiers") -> HierarchyTable:
    """The HierarchyTable for one attribute from its policy spec.

    Generated kinds (intervals, round, mask, dates, suppress) are built over the distinct values
    present in the data (`data_values`); a taxonomy comes from its file and must cover them.

    Args:
        attribute: the column.
        spec: its policy spec (``{hierarchy: intervals, widths: [10, 20]}``, ``{hierarchy: FILE.csv}``...).
        base_dir: the policy's folder (a taxonomy file's path is relative to it).
        data_values: the column's distinct values as text (None: a taxonomy's own values).
        section: quasi_identifiers or sensitive (names the field in errors).

    Returns:
        The table: values, and their label at every level.

    >>> t = build_table("age", {"hierarchy": "intervals", "widths": [10, 20]}, Path("."), ["21", "28", "47"])
    >>> t.height, t.labels[1], t.labels[2]
    (3, ['[20, 30)', '[20, 30)', '[40, 50)'], ['[20, 40)', '[20, 40)', '[40, 60)'])
    """
    kind = spec_kind(spec, attribute, section)
    field = _field(attribute, section)
    if kind == "taxonomy":
        path = Path(spec["hierarchy"])
        if not path.is_absolute():
            path = base_dir / path
        try:
            found = path.exists()
        except OSError as e:        # a name longer than the file system allows, say
            raise PolicyError(field + ".hierarchy", f"cannot look for {path}: {e.strerror}") from None
        if not found:
            raise PolicyError(field + ".hierarchy", f"file {path} does not exist; give a CSV path relative to the "
                              "policy file, or one of " + ", ".join(KINDS[1:]))
        encoding = files.encoding_name(spec.get("encoding", "utf-8"), field + ".encoding")
        return load_taxonomy_csv(path, attribute, encoding, section)
    values = list(data_values or [])
    if kind == "intervals":
        widths = spec.get("widths")
        if not isinstance(widths, list) or not widths or not all(
                isinstance(w, (int, float)) and not isinstance(w, bool) and 0 < w < math.inf for w in widths):
            raise PolicyError(field + ".widths", f"must be a list of positive numbers; got {widths!r}")
        for a, b in zip(widths, widths[1:]):
            if b <= a or not is_multiple(b, a):
                raise PolicyError(field + ".widths", f"each width must be a multiple of the previous one "
                                  f"(nested intervals); {b} is not a multiple of {a}")
        origin = spec.get("origin", 0)
        if not isinstance(origin, (int, float)) or isinstance(origin, bool) or not math.isfinite(origin):
            raise PolicyError(field + ".origin", f"must be a number; got {origin!r}")
        return interval_table(attribute, values, list(widths), origin)
    if kind == "round":
        levels = spec.get("levels")
        if not isinstance(levels, int) or isinstance(levels, bool) or not 1 <= levels <= ROUND_LEVELS:
            raise PolicyError(field + ".levels", f"must be an integer from 1 to {ROUND_LEVELS} (digits to round); "
                              f"got {levels!r}")
        table = interval_table(attribute, values, [10 ** j for j in range(1, levels)], 0)
        table.source = f"round {levels}"
        return table
    if kind == "mask":
        levels = spec.get("levels")
        if levels is not None and (not isinstance(levels, int) or isinstance(levels, bool) or levels < 1):
            raise PolicyError(field + ".levels", f"must be a positive integer; got {levels!r}")
        most = max(max((len(v) for v in values), default=1), MASK_LEVELS)
        if levels is not None and levels > most:
            # each level past the longest value is '*' again (10^7 of them took 7 GB before any search); a few are
            # kept: `apply` rebuilds the hierarchy over new rows, whose values may all be shorter
            raise PolicyError(field + ".levels", f"must be at most {most} (the longest value of '{attribute}' or "
                              f"{MASK_LEVELS}, whichever is more: more levels change nothing); got {levels}")
        return mask_table(attribute, values, levels)
    if kind == "dates":
        return date_table(attribute, values)
    return suppress_table(attribute, values)
