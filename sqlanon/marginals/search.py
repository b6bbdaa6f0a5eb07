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

The greedy search only adds: by Theorem 5.3 a removal never lowers the KL-divergence, so it could
never be the greedy's best move, and the greedy does not enumerate them (its speed is unchanged). At
most `max_sensitive` cliques may hold the sensitive attribute (Sec. 6: it bounds the join of the
diversity check). Candidates are scored by KL first (one SQL statement each, cached per collection) and checked
for privacy in order of KL, so the expensive maxent l-diversity check runs only until the best private
move is found; collections whose cliques holding the sensitive attribute did not change skip it
(Proposition 6.3).

Removal moves (`removal_moves`, Sec. 5.2's backward rules, so a search can walk the space of
decomposable collections both ways):

- remove an edge L_i(A) - L_j(B) when (1) the two vertices appear together in exactly one maximal
  clique (Wermuth's condition: they are in no minimal separator, so the graph stays decomposable), (2)
  A != B, and (3) no L_{i'}(A), i' > i, is adjacent to L_j(B), and no L_{j'}(B), j' > j, to L_i(A)
  (every clique still describes a path from the root of each hierarchy, i.e. a generalization);
- remove a vertex L_i(A) when no L_j(A) with j > i is in the graph (removing a vertex keeps a chordal
  graph chordal). The sensitive attribute's vertex is never removed (the suppressed table {C} is the
  smallest collection we walk to), and `keep` (the start table's vertices, for X+) stays a clique.

Random walk (`random_walk`, Sec. 5.2: "a search algorithm such as a genetic algorithm or a random walk
on the space of models is needed"; the paper gives no further detail, so the procedure is ours): a
seeded Metropolis walk. At each step one legal move (forward or backward, uniformly among all of them)
is proposed; a collection that is not private is never entered; a private one is entered when it
lowers KL, and otherwise with probability exp(-(KL' - KL) / temperature). The best private collection
seen is kept, then polished by the greedy forward climb. Started from the suppressed table {C} and from
each X+ without keeping the table, its best is the paper's OPT (the best collection overall, Sec. 7).

One-attribute marginals (`one_attribute_path`, the paper's Figure 7): starting from the table, add a
marginal over a single quasi-identifier at the finest level that keeps it k-anonymous, each time the
attribute that lowers KL the most.
"""
from __future__ import annotations

import math
import random
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
    adj = structure.interaction_graph([session.schema.vertices(start)])
    return climb(session, start, adj, max_steps, progress)


def climb(session, start: Marginal, adj: dict, max_steps: int | None = None, progress=None,
          label: str = "start") -> SearchResult:
    """Greedy forward moves from the decomposable graph `adj` (a private collection) until no private
    move lowers KL; `start` is only recorded."""
    t0 = time.perf_counter()
    schema = session.schema
    current = collection_of(schema, adj)
    kl = session.kl(current)
    res = SearchResult(start, current, kl, [Step(label, kl, [m.as_dict() for m in current])])
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


def removal_moves(schema, adj: dict, keep: frozenset = frozenset()):
    """Every legal backward move from a decomposable graph (Sec. 5.2's removal rules, see the module
    docstring): (description, new adjacency). Vertices in `keep` stay, and stay pairwise adjacent."""
    order = {a: i for i, a in enumerate(schema.attributes)}
    verts = sorted(adj, key=lambda v: (order[v[0]], v[1]))
    for v in verts:
        a, i = v
        if a == schema.sensitive or v in keep or (a, i + 1) in adj:
            continue
        new = {w: nb - {v} for w, nb in adj.items() if w != v}
        yield f"remove vertex {_vertex_text(v)}", new
    cliques = structure.maximal_cliques(adj) if adj else []
    for x, u in enumerate(verts):
        for v in verts[x + 1:]:
            if v not in adj[u] or u[0] == v[0] or (u in keep and v in keep):          # rule 2; keep the table
                continue
            (a, i), (b, j) = u, v
            if any(w[0] == a and w[1] > i for w in adj[v]) or any(w[0] == b and w[1] > j for w in adj[u]):
                continue                                                             # rule 3
            if sum(1 for c in cliques if u in c and v in c) != 1:                    # rule 1 (Wermuth)
                continue
            new = {w: set(nb) for w, nb in adj.items()}
            new[u].discard(v)
            new[v].discard(u)
            yield f"remove edge {_vertex_text(u)}-{_vertex_text(v)}", new


@dataclass
class WalkResult:
    """The best private collection a random walk saw (then polished by `climb`), and the walk's effort."""

    start: Collection
    collection: Collection
    kl: float
    start_kl: float
    seed: int
    proposals: int = 0
    accepted: int = 0
    removals_accepted: int = 0
    rejected_for_privacy: int = 0
    best_at: int = 0
    seconds: float = 0.0
    kl_evaluations: int = 0
    privacy_checks: int = 0

    def as_dict(self) -> dict:
        return {"start": [m.as_dict() for m in self.start], "start_kl": self.start_kl, "kl": self.kl,
                "marginals": [m.as_dict() for m in self.collection], "seed": self.seed,
                "proposals": self.proposals, "accepted": self.accepted, "removals_accepted": self.removals_accepted,
                "rejected_for_privacy": self.rejected_for_privacy, "best_at_step": self.best_at,
                "seconds": round(self.seconds, 4), "kl_evaluations": self.kl_evaluations,
                "privacy_checks": self.privacy_checks}


def random_walk(session, start: Collection, seed: int = 0, steps: int = 200, temperature: float = 0.01,
                keep: Marginal | None = None, polish: bool = True, progress=None) -> WalkResult:
    """A seeded Metropolis random walk over private decomposable collections, forward and backward moves
    (see the module docstring). `start` must be decomposable and private; with `keep`, every collection
    walked through contains that marginal (X+); `temperature` is in nats of KL."""
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    t0 = time.perf_counter()
    schema = session.schema
    if not start.decomposable:
        raise ValueError("the walk starts from a decomposable collection")
    rng = random.Random(seed)
    checks0, evals0 = session.privacy_checks, session.kl_evaluations
    keep_vs = schema.vertices(keep) if keep is not None else frozenset()
    adj = structure.interaction_graph([schema.vertices(m) for m in start])
    adj.setdefault((schema.sensitive, 1), set())
    current = collection_of(schema, adj)
    kl = session.kl(current)
    res = WalkResult(current, current, kl, kl, seed)
    best = (kl, adj, current)
    for step in range(1, steps + 1):
        options = list(moves(schema, adj)) + list(removal_moves(schema, adj, keep_vs))
        if not options:
            break
        text, new = options[rng.randrange(len(options))]
        res.proposals += 1
        coll = collection_of(schema, new)
        value = session.kl(coll)
        u = rng.random()        # drawn every step, so the stream of proposals does not depend on the caches
        if value > kl and u >= math.exp(-(value - kl) / temperature):
            continue
        if not session.private(coll, reference=current):
            res.rejected_for_privacy += 1
            continue
        res.accepted += 1
        res.removals_accepted += text.startswith("remove")
        kl, adj, current = value, new, coll
        if kl < best[0] - EPS * (1.0 + best[0]):
            best = (kl, adj, current)
            res.best_at = step
            if progress is not None:
                progress.message(f"marginals: walk step {step}: {text}, best KL {kl:.4f}")
    kl, adj, current = best
    if polish:
        top = climb(session, keep or schema.marginal({schema.sensitive: 0}), adj)
        kl, current = top.kl, top.collection
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
        best: tuple | None = None
        for a in left:
            lvl = finest_k_anonymous_level(session, a)
            if lvl is None:
                cand, value, adds = coll, kl, False
            else:
                cand = coll.with_marginal(s.marginal({a: lvl}))
                value = session.kl(cand)
                adds = lvl < dict(start.levels).get(a, s.depth[a])
            key = (value, left.index(a))
            if best is None or key < best[0]:
                best = (key, a, lvl, cand, adds)
        assert best is not None         # `left` is not empty
        (value, _), a, lvl, coll, adds = best
        kl = value
        path.append(PathStep(a, lvl, kl, adds))
        left.remove(a)
    return path, coll


def best_of(results: list[SearchResult]) -> SearchResult:
    return min(results, key=lambda r: (r.kl if math.isfinite(r.kl) else math.inf, r.start.levels))
