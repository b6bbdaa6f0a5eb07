"""From a policy's checker to all minimal satisfying nodes, choosing the search that stays sound.

- Every model monotone (no suppression, or k-anonymity alone with suppression): Incognito prunes with
  the whole predicate.
- Suppression with an l-diversity or t-closeness model: those are not monotone then, so Incognito runs
  on the monotone necessary part (k-anonymity with the same budget; suppressed rows can only grow when a
  model is added), and every node that passes it is checked with the full predicate.
- `mode="brute_force"` evaluates every node (the tests' reference).
"""
from __future__ import annotations

import time

from .checker import NodeChecker
from .lattice import Lattice, SearchResult, brute_force, incognito, minimal_nodes


def find_minimal(lattice: Lattice, checker: NodeChecker, mode: str = "incognito", progress=None) -> SearchResult:
    check = checker.check(lattice.names)
    if mode == "brute_force":
        return brute_force(lattice, check, progress)
    if mode != "incognito":
        raise ValueError(f"unknown search mode {mode!r}")
    if checker.prunable:
        return incognito(lattice, check, progress)
    t = time.perf_counter()
    necessary = checker.monotone_part()
    if necessary.criteria:
        pre = incognito(lattice, necessary.check(lattice.names), progress)
    else:   # nothing monotone to prune with: every node is a candidate
        pre = SearchResult(lattice, set(lattice.nodes()), [], 0, 0.0)
    satisfying = set()
    evaluated = pre.evaluated
    everything = tuple(range(len(lattice.names)))
    todo = sorted(pre.satisfying, key=lambda n: (sum(n), n))
    # every candidate passed the monotone part, so the checker skips those bounds and judges the models
    full = checker.check(lattice.names, bounds_hold=bool(necessary.criteria))
    for node, ok in zip(todo, full([(everything, n) for n in todo])):
        if ok:
            satisfying.add(node)
    evaluated += len(todo)
    per_level = pre.per_level + [{"phase": "full predicate on k-satisfying nodes",
                                  "evaluated": evaluated - pre.evaluated}]
    return SearchResult(lattice, satisfying, minimal_nodes(satisfying), evaluated, time.perf_counter() - t,
                        per_level)
