"""The heuristic search for lattices too large for the exact one (policy `search.max_nodes`).

Modeled on ARX's Lightning (Prasser, Bild, Eicher, Spengler and Kuhn, "Lightning: utility-driven
anonymization of high-dimensional data", Transactions on Data Privacy 9(2), 2016): a search under a
time budget that first finds a satisfying node quickly, then spends the rest of the budget looking for
better ones, best first.

1. Greedy climb: from the bottom node, repeatedly move to the direct generalization whose release
   would suppress (fail) the fewest rows, ties by the smaller utility bound, until a node satisfies
   the policy. This gives a release after at most (sum of the heights) steps.
2. Best first: a priority queue of nodes ordered by their lower bound on the policy's metric
   (`sqlanon.metrics.lower_bound`, inherited from below as in `sqlanon.optimum`), starting at the
   bottom. A popped node whose bound cannot beat the best release is dropped with everything above
   it; others are checked, offered as releases when they satisfy, and their direct generalizations
   queued (a satisfying node's are queued only when the metric is not monotone).
3. The search stops when the queue is empty or the time budget (`search.time_limit_s`) is spent.
   An emptied queue means every node was checked, pruned by a bound, or lies above a satisfying node
   under a monotone metric: the result is then the proven optimum (`proven`), otherwise it is the best
   found and the manifest says it is not proven optimal.

The minimal nodes it reports are the minimal ones among the satisfying nodes it saw; they are not
proven minimal over the whole lattice.
"""
from __future__ import annotations

import heapq
import time

from .checker import NodeChecker
from .lattice import Lattice, Node, SearchResult, direct_generalizations, minimal_nodes
from .metrics import is_monotone
from .optimum import INF, Optimum, Scorer, tie_key


def heuristic_search(lattice: Lattice, checker: NodeChecker, metric: str, time_limit_s: float,
                     progress=None, clock=time.perf_counter) -> tuple[SearchResult, Optimum | None]:
    """Search a large lattice under a time budget (see the module docstring).

    Args:
        lattice: the generalization lattice.
        checker: the policy's node checker.
        metric: the policy's utility metric.
        time_limit_s: seconds the search may take (it may return earlier with a proven result).

    Returns:
        (the satisfying nodes it saw as a `SearchResult`, the best of them as an `Optimum`; None when it
        found no satisfying node).
    """
    started = clock()
    deadline = started + time_limit_s
    fs = checker.fs
    scorer = Scorer(metric, fs, checker, lattice)
    monotone = is_monotone(metric, checker.budget > 0, fs.entity)
    satisfied: dict[Node, bool] = {}
    scores: dict[Node, float] = {}
    best: tuple | None = None

    def check(nodes: list[Node]) -> None:
        todo = [n for n in nodes if n not in satisfied]
        if not todo:
            return
        for node, ok in zip(todo, checker.satisfied_many([lattice.levels(n) for n in todo])):
            satisfied[node] = ok
        passed = [n for n in todo if satisfied[n]]
        if passed:
            for node, value in scorer.score(passed).items():
                offer(node, value)
        if progress:
            progress.update(level=len(lattice.names), evaluated=len(satisfied), total=lattice.size,
                            left_s=max(0.0, deadline - clock()))

    def offer(node: Node, value: float) -> None:
        nonlocal best
        scores[node] = value
        if best is None or tie_key(node, value) < best:
            best = tie_key(node, value)

    # 1. greedy climb to a first release
    node = (0,) * len(lattice.heights)
    check([node])
    while not satisfied[node] and clock() < deadline:
        ups = direct_generalizations(node, lattice.heights)
        if not ups:
            break
        check(ups)
        done = [n for n in ups if satisfied[n]]
        if done:
            break
        node = min(ups, key=lambda n: (_failing_rows(checker, n), scorer.own_bound(n), n))

    # 2. best first, by lower bound
    bound: dict[Node, float] = {}
    bottom = (0,) * len(lattice.heights)
    queue: list[tuple[float, int, Node]] = [(scorer.own_bound(bottom), 0, bottom)]
    queued = {bottom}
    exhausted = False
    pruned = 0
    while clock() < deadline:
        if not queue:
            exhausted = True
            break
        lb, _, node = heapq.heappop(queue)
        lb = max(lb, scorer.own_bound(node)) if node in satisfied else lb
        if best is not None and lb > best[0]:
            pruned += 1
            continue                     # it and every node above it through here cannot win
        check([node])
        lb = max(lb, scorer.own_bound(node))
        bound[node] = lb
        if best is not None and lb > best[0]:
            pruned += 1
            continue
        if satisfied[node] and monotone:
            continue                     # nodes above are no better
        for up in direct_generalizations(node, lattice.heights):
            if up not in queued:
                queued.add(up)
                heapq.heappush(queue, (lb, sum(up), up))
    seconds = clock() - started
    found = {n for n, ok in satisfied.items() if ok}
    result = SearchResult(lattice, found, minimal_nodes(found), checker.evaluated, seconds,
                          [{"phase": "heuristic", "checked": len(satisfied), "exhausted": exhausted}])
    if best is None:
        return result, None
    node = best[2]
    return result, Optimum(node, best[0], node in set(result.minimal), len(scores), pruned, 0, seconds,
                           proven=exhausted, method="heuristic (greedy climb, then best first by bound)",
                           scores=scores)


def _failing_rows(checker: NodeChecker, node: Node) -> float:
    """Rows in the classes that fail the privacy models at `node` (recorded by the checker), or +inf."""
    stats = checker.stats.get(node)
    if stats is None or stats.satisfied is None:
        return INF
    return float(stats.suppressed)
