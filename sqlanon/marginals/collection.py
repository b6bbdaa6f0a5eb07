"""Anonymized marginals and collections of them, reduced to ordinary marginals over induced attributes
(Kifer & Gehrke, SIGMOD 2006, Section 5.1 "A reduction", Definition 5.1 validity).

An anonymized marginal is a set of attributes, each generalized to one level of its hierarchy, released
as a count table (one GROUP BY). Attributes are the policy's quasi-identifiers and its (one) sensitive
attribute, which a marginal holds at level 0 or not at all.

The reduction (Sec. 5.1). An attribute whose hierarchy has levels 0 (the values) .. H (the root '*')
is a path from the root to a leaf of its hierarchy tree, i.e. a vector of H *induced attributes*
(L_1, ..., L_H): L_d is which child is taken at depth d. Generalization level j is the prefix
(L_1, ..., L_{H-j}): the label at level j determines, and is determined by, the first H - j steps.
So a marginal with attribute A at level j is an ordinary marginal over the induced attributes
(A, 1) .. (A, H - j), and a collection of anonymized marginals is an ordinary collection over induced
attributes in which every marginal holding (A, d) also holds (A, 1) .. (A, d - 1). A hierarchy whose
top level is not a single root gets a virtual root above it (one more induced attribute), and the
sensitive attribute is one induced attribute (it is not generalized). Level `depth(A)` means A is
not in the marginal at all (suppressed).

Cliques and separators of the induced interaction graph are prefix-closed per attribute (a vertex
(A, d) is adjacent to everything (A, d + 1) is adjacent to), so each is again an anonymized marginal:
per attribute, the finest level present. The intersection of two marginals holds each shared attribute
at the coarser of its two levels (`Marginal.meet`).

Codes: level-j labels of a quasi-identifier are the integer codes of its mapping table (column
``c{j}``, dense from 0, the wide frequency set's ``q{i}_{j}``); the sensitive attribute's codes are
``s{i}``. `Schema` holds, per attribute, the code maps between levels and how many base values each
label covers (the ``n{j}`` of the mapping tables: the "child" counts of Theorem 5.1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..errors import PolicyError
from ..frequency import FrequencySet
from . import structure

Vertex = tuple  # (attribute, depth)


@dataclass(frozen=True)
class Marginal:
    """Attributes with their generalization levels, in schema order; attributes at their top (absent)
    are left out. Compared and hashed by its levels only (the name is a label for the release)."""

    levels: tuple[tuple[str, int], ...]
    name: str | None = field(default=None, compare=False)

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(a for a, _ in self.levels)

    def as_dict(self) -> dict[str, int]:
        return dict(self.levels)

    def level(self, attribute: str, default: int | None = None) -> int | None:
        return dict(self.levels).get(attribute, default)

    def __contains__(self, attribute: str) -> bool:
        return attribute in self.attributes

    def __len__(self) -> int:
        return len(self.levels)

    def text(self) -> str:
        return "{" + ", ".join(f"{a}@{l}" for a, l in self.levels) + "}"


class Schema:
    """The attributes a collection may use, from a built `FrequencySet` (one sensitive attribute).

    depth[a]:  number of induced attributes of a (level depth[a] = a is absent);
    wide columns, code maps between levels, label counts and base values covered per label.
    """

    def __init__(self, fs: FrequencySet, sensitive: str | None = None):
        if not fs.sensitives:
            raise PolicyError("sensitive", "anonymized marginals need a sensitive attribute")
        self.fs = fs
        self.sensitive = sensitive or fs.sensitives[0].name
        sens = next((s for s in fs.sensitives if s.name == self.sensitive), None)
        if sens is None:
            raise PolicyError("sensitive", f"'{self.sensitive}' is not a sensitive attribute of the policy")
        self._sens = sens
        self.qis = [q.name for q in fs.qis]
        self.attributes = self.qis + [self.sensitive]
        self.depth: dict[str, int] = {}
        self._codes: dict[str, np.ndarray] = {}      # (levels, base values) codes
        self._leaves: dict[str, np.ndarray] = {}     # (levels, base values) base values covered
        for q in fs.qis:
            h = q.hierarchy
            codes, leaves = h.codes(), h.leaf_counts()
            if h.domain_sizes()[-1] != 1:     # no single root: add a virtual one above the top level
                codes = np.vstack([codes, np.zeros((1, codes.shape[1]), dtype=codes.dtype)])
                leaves = np.vstack([leaves, np.full((1, leaves.shape[1]), leaves.shape[1], dtype=leaves.dtype)])
            self.depth[q.name] = codes.shape[0] - 1
            self._codes[q.name], self._leaves[q.name] = codes, leaves
        m = self._sens.domain.size
        self.depth[self.sensitive] = 1
        self._codes[self.sensitive] = np.vstack([np.arange(m), np.zeros(m, dtype=np.int64)])
        self._leaves[self.sensitive] = np.vstack([np.ones(m, dtype=np.int64), np.full(m, m, dtype=np.int64)])
        self.rows = fs.rows

    # -- attributes and levels ----------------------------------------------------------------
    def is_sensitive(self, a: str) -> bool:
        return a == self.sensitive

    def column(self, a: str, level: int) -> str:
        """The wide frequency set's column of a at `level` (codes)."""
        if a == self.sensitive:
            return self._sens.col
        return self.fs.qi(a).col(level)

    def base_column(self, a: str) -> str:
        return self.column(a, 0)

    def map_table(self, a: str) -> str:
        return self._sens.map_table if a == self.sensitive else self.fs.qi(a).map_table

    def labels(self, a: str, level: int) -> int:
        """Number of labels (codes 0..labels-1) of a at `level`."""
        return int(self._codes[a][level].max()) + 1

    def domain_size(self, a: str) -> int:
        """Base values of a (the hierarchy's values; the sensitive attribute's values in the data)."""
        return int(self._codes[a].shape[1])

    def up(self, a: str, lo: int, hi: int) -> np.ndarray:
        """Code map from level `lo` to the coarser level `hi` (lo <= hi): out[code at lo] = code at hi."""
        out = np.zeros(self.labels(a, lo), dtype=np.int64)
        out[self._codes[a][lo]] = self._codes[a][hi]
        return out

    def covered(self, a: str, level: int) -> np.ndarray:
        """Per code at `level`: how many base values its label covers (child(t, L) of Theorem 5.1)."""
        out = np.zeros(self.labels(a, level), dtype=np.int64)
        out[self._codes[a][level]] = self._leaves[a][level]
        return out

    def label_text(self, a: str, level: int) -> list[str]:
        """The label of each code at `level`, for messages and release checks."""
        if a == self.sensitive:
            return [str(v) for v in self._sens.domain.values] if level == 0 else ["*"]
        h = self.fs.qi(a).hierarchy
        if level > h.height:
            return ["*"]
        out = [""] * self.labels(a, level)
        for code, lab in zip(self._codes[a][level], h.labels[level]):
            out[code] = lab
        return out

    # -- marginals ------------------------------------------------------------------------------
    def marginal(self, levels: dict[str, int], name: str | None = None, field_name: str = "marginal") -> Marginal:
        """A validated `Marginal`; attributes at their top level are dropped (they are suppressed)."""
        unknown = [a for a in levels if a not in self.depth]
        if unknown:
            raise PolicyError(f"{field_name}.attributes.{unknown[0]}", "is not a quasi-identifier or the sensitive "
                              f"attribute of the policy (those are: {', '.join(self.attributes)})")
        for a, lvl in levels.items():
            if isinstance(lvl, bool) or not isinstance(lvl, (int, np.integer)) or not 0 <= lvl <= self.depth[a]:
                if a == self.sensitive:
                    raise PolicyError(f"{field_name}.attributes.{a}", f"the sensitive attribute is released at level "
                                      f"0 (its values) or left out; got {lvl!r}")
                raise PolicyError(f"{field_name}.attributes.{a}", f"level must be an integer from 0 to "
                                  f"{self.depth[a]} (the hierarchy's top); got {lvl!r}")
        kept = tuple((a, int(levels[a])) for a in self.attributes if a in levels and levels[a] < self.depth[a])
        return Marginal(kept, name)

    def vertices(self, m: Marginal) -> frozenset:
        """Induced attributes of a marginal: (a, 1) .. (a, depth - level) for each attribute (Sec. 5.1)."""
        return frozenset((a, d) for a, lvl in m.levels for d in range(1, self.depth[a] - lvl + 1))

    def from_vertices(self, vs) -> Marginal:
        """The marginal of a prefix-closed set of induced attributes (a clique or separator)."""
        deepest: dict[str, int] = {}
        for a, d in vs:
            deepest[a] = max(deepest.get(a, 0), d)
        return Marginal(tuple((a, self.depth[a] - deepest[a]) for a in self.attributes if a in deepest))

    def meet(self, m1: Marginal, m2: Marginal) -> Marginal:
        """The intersection of two marginals: shared attributes at the coarser level."""
        return self.from_vertices(self.vertices(m1) & self.vertices(m2))

    def finer(self, m: Marginal, attribute: str) -> Marginal:
        """m with one more induced attribute of `attribute` (one level finer; added at its most general
        level below the top when absent)."""
        lv = m.as_dict()
        lv[attribute] = lv.get(attribute, self.depth[attribute]) - 1
        if lv[attribute] < 0:
            raise ValueError(f"{attribute} is already at level 0 in {m.text()}")
        return self.marginal(lv)

    def full(self) -> Marginal:
        """The marginal of the whole original table: every attribute at level 0."""
        return self.marginal({a: 0 for a in self.attributes})


class Collection:
    """A collection of anonymized marginals and its structure in induced attributes (Sec. 4.1, 5.1).

    `marginals` keeps the order and names given; `cliques` are the maximal cliques of the induced
    interaction graph as marginals, and `tree` a junction tree (perfect sequence) of them when the
    collection is decomposable.
    """

    def __init__(self, schema: Schema, marginals):
        self.schema = schema
        seen: dict[Marginal, Marginal] = {}
        for m in marginals:
            if len(m) and m not in seen:
                seen[m] = m
        self.marginals: list[Marginal] = list(seen.values())

    def __iter__(self):
        return iter(self.marginals)

    def __len__(self) -> int:
        return len(self.marginals)

    def with_marginal(self, m: Marginal) -> Collection:
        return Collection(self.schema, [*self.marginals, m])

    @cached_property
    def vertex_sets(self) -> list[frozenset]:
        return [self.schema.vertices(m) for m in self.marginals]

    @cached_property
    def graph(self) -> dict:
        """The interaction graph over induced attributes (vertex -> adjacent vertices)."""
        return structure.interaction_graph(self.vertex_sets)

    @cached_property
    def triangulated(self) -> bool:
        return structure.is_chordal(self.graph)

    @cached_property
    def graphical(self) -> bool:
        return structure.is_graphical(self.vertex_sets)

    @property
    def decomposable(self) -> bool:
        """Def. 4.6 (for anonymized marginals via the reduction of Sec. 5.1, as Sec. 5.2 says)."""
        return self.graphical

    @cached_property
    def clique_sets(self) -> list[frozenset]:
        if not self.triangulated:
            raise ValueError("the collection's interaction graph is not triangulated")
        return structure.maximal_cliques(self.graph)

    @cached_property
    def tree(self) -> structure.JunctionTree:
        """Junction tree of the maximal cliques, rooted at the clique holding the most induced
        attributes (ties: the first); its clique order is a perfect sequence (Def. 4.7)."""
        if not self.decomposable:
            raise ValueError("the collection is not decomposable")
        return structure.junction_tree(self.clique_sets, root=0)

    @property
    def cliques(self) -> list[Marginal]:
        """The maximal cliques, as marginals, in the perfect sequence of `tree`."""
        return [self.schema.from_vertices(c) for c in self.tree.cliques]

    @property
    def separators(self) -> list[Marginal]:
        """Separators of the perfect sequence (the first is empty), as marginals."""
        return [self.schema.from_vertices(s) for s in self.tree.separators]

    def finest(self) -> dict[str, int]:
        """Per attribute, the finest level any marginal holds (absent attributes: their top)."""
        out = {a: self.schema.depth[a] for a in self.schema.attributes}
        for m in self.marginals:
            for a, lvl in m.levels:
                out[a] = min(out[a], lvl)
        return out

    def with_sensitive(self) -> list[Marginal]:
        return [m for m in self.marginals if self.schema.sensitive in m]

    def describe(self) -> dict:
        """The structure, for JSON output."""
        out = {"marginals": [m.as_dict() for m in self.marginals], "decomposable": self.decomposable,
               "triangulated": self.triangulated,
               "graph": {"vertices": sorted(f"{a}:{d}" for a, d in self.graph),
                         "edges": sorted({tuple(sorted((f"{a}:{d}", f"{b}:{e}")))
                                          for (a, d), nb in self.graph.items() for (b, e) in nb})}}
        if self.decomposable:
            t = self.tree
            out["cliques"] = [c.as_dict() for c in self.cliques]
            out["separators"] = [s.as_dict() for s in self.separators]
            out["junction_tree_parent"] = list(t.parent)
        return out
