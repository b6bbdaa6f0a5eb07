"""Searching for a collection of anonymized marginals to release beside a k-anonymous, l-diverse table
(Kifer & Gehrke, SIGMOD 2006, Section 5.2 "stepwise edge/vertex selection" and the
experiments of Section 7).

Greedy search (`greedy`). The state is a decomposable graph over induced attributes whose maximal
cliques are the released marginals (so the collection is always graphical). It starts from the
generalized table itself (one clique: every quasi-identifier at the node's level, the sensitive
attribute) and, at each step, makes the one move that lowers the KL-divergence the most while the
collection stays private (`sqlanon.marginals.privacy`); it stops when no private move lowers it. Moves
are the paper's forward rules (Sec. 5.2):

- add a vertex L_i(A): i = 1 (with no edges: a new one-attribute marginal at A's most general level
  below '*'), or L_1(A) .. L_{i-1}(A) are present and the vertex gets an edge to each of them (A one
  level finer);
- add an edge L_i(A) - L_j(B) (A != B): (rule 2) i = 1 or every L_{i'}(A), i' < i, is adjacent to
  L_j(B), and the same for j, so every clique is still a valid generalization; (rule 1, Deshpande et
  al.) the graph stays decomposable. We test rule 1 directly: the new graph is triangulated (an edge
  keeps a chordal graph chordal exactly when Deshpande's minimal-separator condition holds).

The removal rules of Sec. 5.2 are not needed by a forward search and are not used. At most
`max_sensitive` cliques may hold the sensitive attribute (Sec. 6: it bounds the join of the diversity
check). Candidates are scored by KL first (one SQL statement each, cached per collection) and checked
for privacy in order of KL, so the expensive maxent l-diversity check runs only until the best private
move is found; collections whose cliques holding the sensitive attribute did not change skip it
(Proposition 6.3).

One-attribute marginals (`one_attribute_path`, the paper's Figure 7): starting from the table, add a
marginal over a single quasi-identifier at the finest level that keeps it k-anonymous, each time the
attribute that lowers KL the most.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from . import structure
from .collection import Collection, Marginal

EPS = 1e-12     # a move must lower KL by more than this (relative to 1 + KL) to count


@dataclass
class Step:
    move: str
    kl: float
    marginals: list[dict]
    candidates: int = 0          # moves considered at this step
    rejected: int = 0            # moves better than the chosen one that failed the privacy check

    def as_dict(self) -> dict:
        return {"move": self.move, "kl": self.kl, "marginals": self.marginals, "candidates": self.candidates,
                "rejected_for_privacy": self.rejected}


@dataclass
class SearchResult:
    start: Marginal
    collection: Collection
    kl: float
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0
    kl_evaluations: int = 0
    privacy_checks: int = 0

    def as_dict(self) -> dict:
        return {"start": self.start.as_dict(), "kl": self.kl, "marginals": [m.as_dict() for m in self.collection],
                "steps": [s.as_dict() for s in self.steps], "seconds": round(self.seconds, 4),
                "kl_evaluations": self.kl_evaluations, "privacy_checks": self.privacy_checks}


def _vertex_text(v) -> str:
    return f"{v[0]}:{v[1]}"


def moves(schema, adj: dict):
    """Every legal forward move from a decomposable graph: (description, new adjacency)."""
    present: dict[str, int] = {}
    for a, d in adj:
        present[a] = max(present.get(a, 0), d)
    for a in schema.attributes:
        d = present.get(a, 0) + 1
        if d > schema.depth[a]:
            continue
        new = {v: set(nb) for v, nb in adj.items()}
        prefix = {(a, i) for i in range(1, d)}
        new[(a, d)] = set(prefix)
        for p in prefix:
            new[p].add((a, d))
        yield f"vertex {a}:{d}", new
    verts = sorted(adj, key=lambda v: (schema.attributes.index(v[0]), v[1]))
    for x, u in enumerate(verts):
        for v in verts[x + 1:]:
            if u[0] == v[0] or v in adj[u]:
                continue
            (a, i), (b, j) = u, v
            if any((a, i2) not in adj[v] for i2 in range(1, i)) or any((b, j2) not in adj[u] for j2 in range(1, j)):
                continue
            new = {w: set(nb) for w, nb in adj.items()}
            new[u].add(v)
            new[v].add(u)
            if structure.is_chordal(new):
                yield f"edge {_vertex_text(u)}-{_vertex_text(v)}", new


def collection_of(schema, adj: dict) -> Collection:
    """The graphical collection of a decomposable graph: its maximal cliques as marginals."""
    return Collection(schema, [schema.from_vertices(c) for c in structure.maximal_cliques(adj)])


def greedy(session, start: Marginal, max_steps: int | None = None, progress=None) -> SearchResult:
    """The greedy forward search from the generalized table `start` (see the module docstring)."""
    t0 = time.perf_counter()
    schema = session.schema
    adj = structure.interaction_graph([schema.vertices(start)])
    current = collection_of(schema, adj)
    kl = session.kl(current)
    res = SearchResult(start, current, kl, [Step("start", kl, [m.as_dict() for m in current])])
    checks0 = session.privacy_checks
    evals0 = session.kl_evaluations
    while max_steps is None or len(res.steps) - 1 < max_steps:
        scored = []
        for text, new in moves(schema, adj):
            coll = collection_of(schema, new)
            scored.append((session.kl(coll), text, new, coll))
        scored.sort(key=lambda x: (x[0], x[1]))
        chosen, rejected = None, 0
        for value, text, new, coll in scored:
            if not value < kl - EPS * (1.0 + kl):
                break
            if session.private(coll, reference=current):
                chosen = (value, text, new, coll)
                break
            rejected += 1
        if chosen is None:
            break
        kl, text, adj, current = chosen
        res.steps.append(Step(text, kl, [m.as_dict() for m in current], len(scored), rejected))
        if progress is not None:
            progress.message(f"marginals: step {len(res.steps) - 1}: {text}, KL {kl:.4f} "
                             f"({len(scored)} moves, {rejected} rejected for privacy)")
    res.collection, res.kl = current, kl
    res.seconds = time.perf_counter() - t0
    res.kl_evaluations = session.kl_evaluations - evals0
    res.privacy_checks = session.privacy_checks - checks0
    return res


@dataclass
class PathStep:
    attribute: str
    level: int | None
    kl: float
    adds_information: bool

    def as_dict(self) -> dict:
        return {"attribute": self.attribute, "level": self.level, "kl": self.kl,
                "adds_information": self.adds_information}


def finest_k_anonymous_level(session, attribute: str) -> int | None:
    """The finest level at which the one-attribute marginal of `attribute` is k-anonymous (None: none
    below the top is)."""
    s = session.schema
    for lvl in range(0, s.depth[attribute]):
        _, n = session.counts.get(s.marginal({attribute: lvl}))
        if n[n > 0].min() >= session.privacy.k:
            return lvl
    return None


def one_attribute_path(session, start: Marginal, attributes=None) -> tuple[list[PathStep], Collection]:
    """Add one-attribute marginals to the table, each time the one that lowers KL the most (Figure 7).
    One-attribute marginals of quasi-identifiers do not hold the sensitive attribute, so they leave
    maxent l-diversity unchanged (Proposition 6.3) and are k-link anonymous by construction."""
    s = session.schema
    coll = Collection(s, [start])
    kl = session.kl(coll)
    path = [PathStep("start", None, kl, True)]
    left = [a for a in (attributes or s.qis)]
    while left:
        best = None
        for a in left:
            lvl = finest_k_anonymous_level(session, a)
            if lvl is None:
                cand, value, adds = coll, kl, False
            else:
                cand = coll.with_marginal(s.marginal({a: lvl}))
                value = session.kl(cand)
                adds = lvl < start.level(a, s.depth[a])
            key = (value, left.index(a))
            if best is None or key < best[0]:
                best = (key, a, lvl, cand, adds)
        (value, _), a, lvl, coll, adds = best
        kl = value
        path.append(PathStep(a, lvl, kl, adds))
        left.remove(a)
    return path, coll


def best_of(results: list[SearchResult]) -> SearchResult:
    return min(results, key=lambda r: (r.kl if math.isfinite(r.kl) else math.inf, r.start.levels))
