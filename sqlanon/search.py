"""From a policy's checker to all minimal satisfying nodes, choosing the search that stays sound.

- Every model monotone (no suppression, or k-anonymity alone with suppression): Incognito prunes with
  the whole predicate.
- Suppression with an l-diversity or t-closeness model: those are not monotone then, so Incognito runs
  on the monotone necessary part (k-anonymity with the same budget; suppressed rows can only grow when a
  model is added). The nodes that pass it are checked with the full predicate in height order, except
  those with a satisfying node below them: such a node is never minimal, so it stays `undecided` and
  the optimum search (`sqlanon.optimum`) checks it only if its utility bound can still beat the best
  release found.
- Every model monotone, judged in the database on the sensitive counts (`NodeChecker.presumes`: entropy
  l-diversity over a frequency set too large to roll up in memory): two passes. Incognito first runs with
  a check that judges a node of one attribute in full, but a node of more attributes only as far as cheap
  tests go (witness blocks, class sizes) and presumes it satisfies when none proves it failing. Presuming
  keeps Incognito's pruning sound: a node is pruned only when a projection of it failed, and every failure
  here is a real one. Its satisfying nodes are then a superset of the true ones, and the full predicate
  is checked on them in height order, except those with a satisfying node below (satisfying too, by
  monotonicity). Incognito alone pays a (block, value) aggregation of the whole frequency set for every
  satisfying node of every subset of the attributes; this pays it for the minimal nodes and for the
  presumed nodes that fail. Lands End at 100 M rows: 42 satisfying nodes of smaller subsets took about
  60 s of Incognito's 260 s (in-process), and the search went from 294.2 s to 256.2 s (paired;
  benchmarks/RESULTS-rows.md).
- `mode="brute_force"` evaluates every node (the tests' reference).
"""
from __future__ import annotations

import time

from .checker import NodeChecker, NodeStats
from .lattice import Lattice, SearchResult, brute_force, by_height, direct_specializations, incognito


def find_minimal(lattice: Lattice, checker: NodeChecker, mode: str = "incognito", progress=None) -> SearchResult:
    if mode == "brute_force":     # the tests' reference: every node judged in full, no witness checks
        return brute_force(lattice, checker.check(lattice.names), progress)
    if mode != "incognito":
        raise ValueError(f"unknown search mode {mode!r}")
    t = time.perf_counter()
    if checker.prunable:
        # Incognito reads nothing of a failing node but its verdict, so witness checks may decide it
        if not checker.presumes:
            return incognito(lattice, checker.check(lattice.names, witness=True), progress)
        pre = incognito(lattice, checker.check(lattice.names, witness=True, presume=True), progress)
        # the presumed nodes' class sizes are recorded: the second pass skips the size pass where they pass
        full = checker.check(lattice.names, witness=True)
    else:
        necessary = checker.monotone_part()
        if necessary.criteria:
            pre = incognito(lattice, necessary.check(lattice.names, witness=True), progress)
        else:   # nothing monotone to prune with: every node is a candidate
            pre = SearchResult(lattice, set(lattice.nodes()), [], 0, 0.0)
        for node, stats in necessary.stats.items():
            # class sizes the monotone pass fetched: their bounds serve the optimum search (its verdicts do not)
            checker.stats.setdefault(node, NodeStats(stats.sum_sq, stats.min_size, stats.classes))
        # every candidate passed the monotone part, so the checker skips those bounds and judges the models
        full = checker.check(lattice.names, bounds_hold=bool(necessary.criteria))
    evaluated = pre.evaluated
    candidates = pre.satisfying
    everything = tuple(range(len(lattice.names)))
    satisfying: set = set()
    undecided: set = set()
    dominated: set = set()          # nodes with a satisfying node strictly below them: never minimal
    for _height, level in by_height(lattice):
        todo = []
        for node in level:
            if any(s in satisfying or s in dominated for s in direct_specializations(node)):
                dominated.add(node)
                if node in candidates:
                    undecided.add(node)     # not minimal; the optimum search checks it if it can still win
            elif node in candidates and lattice.same_blocks_as(node) == node:
                known = checker.stats.get(node)
                if known is not None and known.satisfied is not None:     # judged in full already (first pass)
                    if known.satisfied:
                        satisfying.add(node)
                else:
                    todo.append(node)
            # a candidate with a lower node of the same blocks is left failing: that node (a candidate too,
            # with the same verdicts) was judged and failed, else this one would be dominated
        for node, ok in zip(todo, full([(everything, n) for n in todo])):
            if ok:
                satisfying.add(node)
        evaluated += len(todo)
        if progress and todo:
            progress.update(level=len(everything), evaluated=evaluated, total=lattice.size)
    per_level = pre.per_level + [{"phase": "full predicate on candidates with no satisfying node below",
                                  "candidates": len(candidates), "evaluated": evaluated - pre.evaluated,
                                  "undecided": len(undecided)}]
    # each node checked had no satisfying node below it, so every satisfying one found is minimal
    minimal = sorted(satisfying, key=lambda n: (sum(n), n))
    if checker.prunable:
        # monotone: a node with a satisfying node below satisfies, and is a candidate (the first pass's
        # satisfying nodes hold every truly satisfying one)
        return SearchResult(lattice, satisfying | dominated, minimal, evaluated, time.perf_counter() - t,
                            per_level)
    return SearchResult(lattice, satisfying, minimal, evaluated, time.perf_counter() - t, per_level, undecided)

