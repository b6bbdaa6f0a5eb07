"""The released node: the best node by the policy's utility metric among ALL nodes that satisfy it.

When the metric is monotone under generalization (height always; the others without suppression and
without an entity key: see `sqlanon.metrics`), every satisfying node lies above a minimal one that is at
least as good, so the optimum is the best minimal node and only the minimal nodes are scored.

Otherwise (suppression makes discernibility, average class size and KL-divergence non-monotone) the
optimum may lie above the minimal nodes, and the search is a branch and bound over the lattice, as ARX's
Flash and OLA prune with information-loss bounds (Kohlmayer et al., "Flash: efficient, stable and
optimal k-anonymity", PASSAT 2012; El Emam et al., "A globally optimal k-anonymity method for the
de-identification of health data", JAMIA 2009):

- nodes are visited by height, so all of a node's direct specializations come before it;
- each node gets a lower bound, the largest of its own (`metrics.lower_bound`, from its class sizes,
  when a query has returned them) and its direct specializations' bounds: a bound of N holds for every
  node above N, so it is inherited upward without a query;
- a satisfying node whose bound exceeds the best metric found so far is never scored; one whose bound
  does not is scored (its sizes come from the node checker, which already has most of them from the
  search: `NodeChecker.stats`), and nodes the minimal-node search left undecided are checked first.

Ties are broken by the lower height, then by the levels in quasi-identifier order (lexicographically
smallest): a node is pruned only when its bound is strictly worse than the best, so the rule is exact.

`bounded_optimum` finds the discernibility optimum without listing every minimal node first, for policies
whose models are decided by class sizes and distinct-value counts (k-anonymity, distinct l-diversity) with
a suppression budget. Its argument: discernibility with suppression (Bayardo and Agrawal, "Data privacy
through optimal k-anonymization", ICDE 2005, the metric C_DM with |D| per suppressed row) is
DM*(N) = sum of s^2 over the kept classes + |D| * supp(N), where supp(N) is the rows in classes that fail
a model. Those rows can only shrink under generalization (a merged class fails a size or distinct-value
bound only when each of its parts did), and every kept row costs at least m (the smallest kept class), so
DM*(N) >= |D| * supp(N) + m * (|D| - supp(N)), increasing in supp(N). A node can therefore tie or beat a
release of value B only if supp(N) <= S(B) = floor((B - m|D|) / (|D| - m)): the satisfying nodes with at
most S(B) suppressed rows, an up-set found by the same Incognito search with the budget S(B) in place of
the policy's. A greedy climb from the bottom (`greedy_release`) gives B; the branch and bound then runs
over that up-set only, which is far smaller than the policy's satisfying nodes when B is good.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .checker import NodeChecker, NodeResult, NodeStats
from .frequency import FrequencySet
from .lattice import (
    Lattice,
    Node,
    SearchResult,
    by_height,
    direct_generalizations,
    direct_specializations,
    incognito,
    minimal_in_up_set,
)
from .metrics import from_stats, is_monotone, kl_lower_bound, lower_bound, metric_value

INF = float("inf")
# minimal nodes scored to seed the branch and bound when the search's own class sizes give no release
SEED_NODES = 64


@dataclass
class Optimum:
    """The best satisfying node and how it was found."""

    node: Node
    value: float                       # the policy metric of its release
    minimal: bool                      # is it one of the minimal satisfying nodes?
    scored: int                        # nodes whose metric was computed
    pruned: int                        # satisfying (or undecided) nodes skipped by their bound
    checked: int                       # undecided nodes checked against the privacy models here
    seconds: float
    proven: bool = True                # False for the heuristic search (sqlanon.heuristic)
    method: str = "minimal nodes"      # or "branch and bound", "heuristic"
    scores: dict[Node, float] = field(default_factory=dict)   # every scored satisfying node -> metric
    # `bounded_optimum` only: the suppressed rows a node may have to tie or beat the greedy release, and
    # the nodes its restricted search evaluated
    max_suppressed: int | None = None
    evaluated: int | None = None

    def as_dict(self) -> dict:
        out = {"method": self.method, "proven_optimal": self.proven, "released_is_minimal": self.minimal,
               "nodes_scored": self.scored, "nodes_pruned_by_bound": self.pruned,
               "undecided_nodes_checked": self.checked, "seconds": round(self.seconds, 4)}
        if self.max_suppressed is not None:
            out["searched_nodes_with_at_most_suppressed_rows"] = self.max_suppressed
        return out


def tie_key(node: Node, value: float) -> tuple:
    """The documented order of releases: metric, then height, then levels (smallest first)."""
    return (value, sum(node), node)


class Scorer:
    """The policy metric of satisfying nodes, from the checker's recorded sizes when they suffice."""

    def __init__(self, metric: str, fs: FrequencySet, checker: NodeChecker, lattice: Lattice):
        self.metric, self.fs, self.checker, self.lattice = metric, fs, checker, lattice
        self.bounded = not fs.entity and metric != "height"
        self.kl_bounds: dict[Node, float] = {}

    def stats(self, node: Node) -> NodeStats | None:
        return self.checker.stats.get(node)

    def own_bound(self, node: Node) -> float:
        """The node's own lower bound, if a query has told enough to compute it (else -inf)."""
        if not self.bounded:
            return -INF
        if self.metric == "kl_divergence":
            return self.kl_bounds.get(node, -INF)
        s = self.stats(node)
        if s is None:
            return -INF
        return lower_bound(self.metric, s, self.checker.min_block_size, self.checker.budget, self.fs.rows)

    def known(self, node: Node) -> float | None:
        """The metric of a node already known to satisfy, from recorded sizes (None if it needs a query)."""
        if self.metric == "height":
            return float(sum(node))
        s = self.stats(node)
        return None if s is None or not s.satisfied else from_stats(self.metric, s, self.fs.rows)

    def score(self, nodes: list[Node]) -> dict[Node, float]:
        """The metric of satisfying nodes (sizes fetched in batches where the recorded ones do not suffice)."""
        out: dict[Node, float] = {}
        missing = []
        for node in nodes:
            value = self.known(node)
            if value is None:
                missing.append(node)
            else:
                out[node] = value
        if not missing:
            return out
        if self.metric in ("discernibility", "avg_class_size") and not self.checker.has_multi_attribute:
            # one batched pass records the sizes (and which classes the models keep) of every missing node
            self.checker.satisfied_many([self.lattice.levels(n) for n in missing])
            for node in missing:
                value = self.known(node)
                if value is not None:
                    out[node] = value
            missing = [n for n in missing if n not in out]
        for node in missing:
            result = self.checker.evaluate(self.lattice.levels(node))
            out[node] = self.from_result(node, result)
        return out

    def from_result(self, node: Node, result: NodeResult) -> float:
        if self.metric == "kl_divergence" and self.bounded:
            self.kl_bounds[node] = kl_lower_bound(self.fs, result)
        return metric_value(self.metric, self.fs, result)


def best_minimal(search: SearchResult, scorer: Scorer, started: float) -> Optimum:
    scores = scorer.score(sorted(search.minimal, key=lambda n: (sum(n), n)))
    node = min(scores, key=lambda n: tie_key(n, scores[n]))
    return Optimum(node, scores[node], True, len(scores), 0, 0, time.perf_counter() - started, scores=scores)


def find_optimum(lattice: Lattice, checker: NodeChecker, search: SearchResult, metric: str,
                 progress=None, clock: Callable[[], float] = time.perf_counter) -> Optimum:
    """The best satisfying node by `metric` over the whole lattice (see the module docstring).

    Args:
        lattice: the generalization lattice.
        checker: the policy's node checker (its recorded `stats` are reused).
        search: the minimal-node search's result (its satisfying, minimal and undecided nodes).
        metric: one of `sqlanon.metrics.METRICS`.

    Returns:
        The `Optimum`.

    Raises:
        ValueError: when no node satisfies (`Anonymization.choose` reports that to the user first).
    """
    started = clock()
    fs = checker.fs
    scorer = Scorer(metric, fs, checker, lattice)
    if not search.minimal:
        raise ValueError("no satisfying node")
    if is_monotone(metric, checker.budget > 0, fs.entity):
        return best_minimal(search, scorer, started)
    minimal = set(search.minimal)
    satisfying, undecided = set(search.satisfying), set(search.undecided)
    bound: dict[Node, float] = {}
    best: tuple | None = None
    scores: dict[Node, float] = {}
    pruned = checked = 0

    def offer(node: Node, value: float) -> None:
        nonlocal best
        scores[node] = value
        key = tie_key(node, value)
        if best is None or key < best:
            best = key

    # a good release early makes the bounds prune more: first every satisfying node whose metric the search's
    # recorded sizes already give, then a climb from the best of them through better direct generalizations
    # (generalizing can release suppressed rows)
    for node in satisfying:
        known = scorer.known(node)
        if known is not None:
            offer(node, known)
    if best is None:
        # the search inferred every node without a query: score the lowest minimal nodes to start from
        for node, value in scorer.score(sorted(minimal, key=lambda n: (sum(n), n))[:SEED_NODES]).items():
            offer(node, value)
    while best is not None:
        current = best
        ups = [n for n in direct_generalizations(current[2], lattice.heights) if n in satisfying and n not in scores]
        for node, value in scorer.score(ups).items():
            offer(node, value)
        if best == current:
            break
    for _height, level in by_height(lattice):
        to_check, to_score = [], []
        for node in level:
            inherited = max((bound[s] for s in direct_specializations(node)), default=-INF)
            bound[node] = max(inherited, scorer.own_bound(node))
            if node not in satisfying and node not in undecided:
                continue                                    # fails the privacy models
            known = scores.get(node) if node in satisfying else None
            if known is None and node in satisfying:
                known = scorer.known(node)
            if known is not None:
                offer(node, known)
            elif best is not None and bound[node] > best[0]:
                pruned += 1                                 # cannot beat the best release found
            elif node in undecided:
                to_check.append(node)
            else:
                to_score.append(node)
        if to_check:
            # satisfied_many records each node's sizes and kept classes, so scoring below needs no new query
            # for the size-based metrics
            ok = checker.satisfied_many([lattice.levels(n) for n in to_check])
            checked += len(to_check)
            to_score += [n for n, passed in zip(to_check, ok) if passed]
        for node, value in scorer.score(to_score).items():
            offer(node, value)
        for node in to_check + to_score:
            bound[node] = max(bound[node], scorer.own_bound(node))
        if progress:
            progress.update(level=len(lattice.names), evaluated=checker.evaluated, total=lattice.size)
    assert best is not None
    node = best[2]
    return Optimum(node, best[0], node in minimal, len(scores), pruned, checked, clock() - started,
                   method="branch and bound", scores=scores)


def bounded_applies(metric: str, checker: NodeChecker) -> bool:
    """Can `bounded_optimum` find this policy's release (see the module docstring)?"""
    return (metric == "discernibility" and checker.budget > 0 and not checker.fs.entity
            and bool(checker.criteria) and checker.decided_by_bounds and not checker.population_criteria)


def greedy_release(lattice: Lattice, checker: NodeChecker) -> Node:
    """A good satisfying node, fast: from the bottom, the direct generalization of least discernibility (every
    failing class suppressed) until one satisfies, then the best satisfying direct generalization while that improves
    (the start of `bounded_optimum`; any satisfying node would do, a better one prunes more)."""
    fs, names = checker.fs, lattice.names

    def stats_of(nodes: list[Node]) -> dict[Node, NodeStats]:
        todo = [n for n in nodes if n not in checker.stats]
        if todo:
            checker.satisfied_many([lattice.levels(n) for n in todo])
        return {n: checker.stats[n] for n in nodes}

    node = tuple(0 for _ in names)
    current = stats_of([node])[node]
    while not current.satisfied:
        ups = list(direct_generalizations(node, lattice.heights))
        found = stats_of(ups)
        # discernibility counts every failing class as suppressed, whether the node fits the budget or not
        node = min(ups, key=lambda n: (_discernibility(found[n], fs.rows), sum(n), n))
        current = found[node]
    value = _discernibility(current, fs.rows)
    while True:
        ups = list(direct_generalizations(node, lattice.heights))
        found = stats_of(ups)
        best = min(((_discernibility(found[n], fs.rows), sum(n), n) for n in ups if found[n].satisfied), default=None)
        if best is None or best[0] >= value:
            return node
        value, _, node = best


def _discernibility(stats: NodeStats, rows: int) -> float:
    """Discernibility of a judged node's release (its failing classes suppressed), satisfying or not."""
    value = from_stats("discernibility", stats, rows)
    assert value is not None        # the node's models were judged: its release's sizes are known
    return value


def bounded_optimum(lattice: Lattice, checker: NodeChecker, progress=None,
                    clock: Callable[[], float] = time.perf_counter) -> Optimum:
    """The discernibility optimum over every satisfying node, without enumerating the minimal nodes.

    A greedy release gives a value B; only nodes with at most S(B) suppressed rows can tie or beat it
    (module docstring), and those form an up-set that Incognito finds with S(B) as its budget. The branch
    and bound of `find_optimum` then runs over that set. Whether the release is a minimal satisfying node
    is decided from its direct specializations (the policy's predicate is monotone here).

    Args:
        lattice: the generalization lattice.
        checker: the policy's node checker (`bounded_applies` must hold).
        progress: a `sqlanon.progress.Progress`, or None.

    Returns:
        The `Optimum` (`max_suppressed`: the limit of the last pass; `evaluated`: nodes its searches and
        the checks of the greedy climb and the branch and bound evaluated).

    Raises:
        ValueError: when no node satisfies (`Anonymization.choose` reports that to the user first).
    """
    started = clock()
    fs = checker.fs
    evaluated_before = checker.evaluated
    top = tuple(lattice.heights)
    if not checker.satisfied_many([lattice.levels(top)])[0]:
        raise ValueError("no satisfying node")
    start = greedy_release(lattice, checker)
    value = _discernibility(checker.stats[start], fs.rows)
    m, rows = max(checker.min_block_size, 1), fs.rows

    def can_beat(best: float) -> int:
        """S(best): the most suppressed rows of a node that can tie or beat `best`, within the budget."""
        limit = checker.budget if rows <= m else math.floor((best - m * rows) / (rows - m) + 1e-9)
        return max(0, min(checker.budget, limit))

    # first a quarter of what the greedy release allows (the optimum usually suppresses far fewer rows: each
    # costs |D|); when the best node found there proves that nothing outside could beat it, that is the
    # optimum, else one more pass with the limit that best node allows (the start is in every set searched,
    # so that limit is at most the greedy release's, and the roll-ups are cached by then)
    attempt = can_beat(value) // 4
    evaluated = 0
    restricted = checker.monotone_part()
    while True:
        restricted.budget = attempt
        search = incognito(lattice, restricted.check(lattice.names), progress)
        evaluated += search.evaluated
        for node, stats in restricted.stats.items():
            # the same models: a node's suppressed rows are the policy's, only the budget differs
            if node not in checker.stats and stats.satisfied is not None:
                checker.stats[node] = dataclasses.replace(stats, satisfied=stats.suppressed <= checker.budget)
        satisfying = search.satisfying | {start}
        up_set = SearchResult(lattice, satisfying, minimal_in_up_set(satisfying), search.evaluated,
                              search.seconds, search.per_level)
        found = find_optimum(lattice, checker, up_set, "discernibility", progress, clock)
        limit, attempt = attempt, can_beat(found.value)
        if attempt <= limit:
            break                   # every node that could tie or beat it was in the set searched
    below = list(direct_specializations(found.node))
    minimal = not any(checker.satisfied_many([lattice.levels(n) for n in below])) if below else True
    return Optimum(found.node, found.value, minimal, found.scored, found.pruned, found.checked, clock() - started,
                   method="branch and bound", scores=found.scores, max_suppressed=limit,
                   evaluated=evaluated + checker.evaluated - evaluated_before)
