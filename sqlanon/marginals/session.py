"""Anonymized marginals over one anonymization run: the Python API of `sqlanon.marginals`.

    run = Anonymization(policy, db=...)            # frequency sets, lattice search as usual
    run.score_minimal(); run.choose()
    ms = Marginals(run)                             # needs one sensitive attribute, no suppression
    coll = ms.collection([ms.table(run.chosen.levels), ms.marginal({"age": 0})])
    ms.kl(coll), ms.check(coll).satisfied           # utility and privacy of the collection
    found = ms.search(run.chosen.levels)            # greedy search (sqlanon.marginals.search)
    walked = ms.walk(found.collection, seed=0, keep=found.start)   # seeded walk, forward and backward moves
    best, kl, walks = ms.optimum([found.collection])              # the paper's OPT: no table required
    ms.release(found.collection, skip=found.start)  # tables/views + manifest entries

Every count comes from the wide frequency set the run built (one GROUP BY per marginal, cached), so the
database does the row work; numpy only sees marginal count tables.
"""
from __future__ import annotations

from ..anonymizer import Anonymization
from ..errors import DataError, PolicyError
from . import search as _search
from .collection import Collection, Marginal, Schema
from .estimate import MarginalCounts, kl_divergence, kl_from_marginals, single_table_kl
from .privacy import MarginalPrivacy, PrivacyReport, check_privacy, combinatorial_k, diversity_check, k_link


class Marginals:
    def __init__(self, run: Anonymization, max_sensitive: int = 3, prune: str = "auto",
                 relaxation: float | None = None):
        policy = run.policy
        if policy.entity_key:
            raise PolicyError("entity_key", "anonymized marginals count rows, not persons; remove entity_key to "
                              "release marginals")
        if policy.max_suppression:
            raise PolicyError("privacy.max_suppression", "anonymized marginals are marginals of the whole table; a "
                              "table with suppressed rows is not one of them: set max_suppression to 0")
        if len(policy.sensitive) != 1:
            raise PolicyError("sensitive", "anonymized marginals (Kifer & Gehrke 2006) have one sensitive attribute; "
                              f"the policy lists {len(policy.sensitive)}")
        if prune not in ("auto", "hull", "pairs", "none"):
            raise PolicyError("--prune", f"must be auto, hull, pairs or none; got {prune!r}")
        self.run = run
        self.schema = Schema(run.fs)
        self.counts = MarginalCounts(self.schema)
        self.privacy = MarginalPrivacy.from_criteria(run.criteria, max_sensitive, relaxation)
        self.prune = prune
        self._kl: dict[frozenset, float] = {}
        self._div: dict[frozenset, bool] = {}
        self._kcomb: dict[frozenset, int | None] = {}      # the k of k-combinatorial anonymity, per collection
        self._sensitive_parts: dict = {}     # combinatorial_upper's summed part, per set of marginals holding S
        self.kl_evaluations = 0
        self.privacy_checks = 0

    # -- building marginals -------------------------------------------------------------------
    def marginal(self, levels: dict[str, int], name: str | None = None, field_name: str = "marginal") -> Marginal:
        return self.schema.marginal(levels, name, field_name)

    def table(self, levels: dict[str, int]) -> Marginal:
        """The generalized table of a lattice node as a marginal: every quasi-identifier at the node's
        level and the sensitive attribute."""
        return self.schema.marginal({**levels, self.schema.sensitive: 0})

    def collection(self, marginals) -> Collection:
        return Collection(self.schema, marginals)

    def policy_marginals(self) -> list[Marginal]:
        """The marginals listed in the policy's `release.marginals`."""
        out = []
        for i, entry in enumerate(self.run.policy.release.marginals):
            m = self.marginal(entry["attributes"], entry.get("name"), f"release.marginals[{i}]")
            if not len(m):
                raise PolicyError(f"release.marginals[{i}].attributes", "every attribute is at its top level (fully "
                                  "suppressed): the marginal says nothing; remove it or lower a level")
            out.append(m)
        return out

    # -- utility ----------------------------------------------------------------------------------
    def kl(self, coll: Collection) -> float:
        """KL-divergence of the collection's maximum-entropy estimate (cached per set of marginals), summed
        marginal by marginal (`kl_from_marginals`; the search scores many collections of few marginals)."""
        key = frozenset(coll.marginals)
        if key not in self._kl:
            self._kl[key] = kl_from_marginals(coll, self.counts)
            self.kl_evaluations += 1
        return self._kl[key]

    def kl_cells(self, coll: Collection) -> float:
        """KL-divergence cell by cell: the closed-form estimate of every cell of the original, in SQL."""
        return kl_divergence(coll)

    def single_table_kl(self, m: Marginal) -> float:
        return single_table_kl(self.schema, m)

    # -- privacy ----------------------------------------------------------------------------------
    def check(self, coll: Collection) -> PrivacyReport:
        self.privacy_checks += 1
        return check_privacy(coll, self.privacy, self.counts, self.prune)

    def private(self, coll: Collection, reference: Collection | None = None) -> bool:
        """Fast path for the search: k-link, the sensitive-marginal limit, maxent l-diversity only when the cliques
        holding the sensitive attribute are new (cached per set of such cliques), then k-combinatorial (cached per
        collection)."""
        s = self.schema
        if not coll.decomposable:
            return self.check(coll).satisfied
        if k_link(coll, self.counts) < self.privacy.k:
            return False
        sens = frozenset(m for m, v in zip(coll.cliques, coll.tree.cliques) if (s.sensitive, 1) in v)
        if len(sens) > self.privacy.max_sensitive:
            return False
        if sens not in self._div:
            self.privacy_checks += 1
            self._div[sens] = diversity_check(coll, self.privacy, self.counts, self.prune).ok
        if not self._div[sens]:
            return False
        # last, the costliest: what the sensitive columns pin down (None: too large to certify); k <= 1 always holds
        if self.privacy.k <= 1:
            return True
        key = frozenset(coll.marginals)
        if key not in self._kcomb:
            self._kcomb[key] = combinatorial_k(coll, self.counts, self._sensitive_parts)
        kc = self._kcomb[key]
        return kc is not None and kc >= self.privacy.k

    # -- search -----------------------------------------------------------------------------------
    def search(self, levels: dict[str, int], max_steps: int | None = None, progress=None) -> _search.SearchResult:
        start = self.table(levels)
        self._require_private_start(start)
        return _search.greedy(self, start, max_steps, progress)

    def walk(self, start: Collection, seed: int = 0, steps: int = 200, temperature: float = 0.01,
             keep: Marginal | None = None, progress=None) -> _search.WalkResult:
        """The seeded random walk with forward and backward moves (sqlanon.marginals.search.random_walk)
        from a private decomposable collection; with `keep`, only collections containing that marginal."""
        rep = self.check(start)
        if not rep.satisfied:
            raise DataError(f"the walk's start collection is not {self.privacy.describe()}; start from a private one")
        return _search.random_walk(self, start, seed, steps, temperature, keep, progress=progress)

    def suppressed(self) -> Collection:
        """The table with every non-sensitive attribute suppressed: the sensitive attribute's marginal alone."""
        return self.collection([self.marginal({self.schema.sensitive: 0})])

    def optimum(self, starts: list[Collection], seed: int = 0, steps: int = 200,
                temperature: float = 0.01) -> tuple[Collection, float, list[_search.WalkResult]]:
        """The paper's OPT (Sec. 7, the best collection overall, no table required): the best of random walks
        from the suppressed table and from each of `starts` (each walk seeded `seed + i`), and of the starts."""
        walks = [self.walk(c, seed + i, steps, temperature) for i, c in enumerate([self.suppressed(), *starts])]
        cands = [(self.kl(c), i, c) for i, c in enumerate(starts)] + [(w.kl, len(starts) + i, w.collection)
                                                                     for i, w in enumerate(walks)]
        kl, _, best = min(cands, key=lambda x: (x[0], x[1]))
        return best, kl, walks

    def one_attribute_path(self, levels: dict[str, int], attributes=None):
        return _search.one_attribute_path(self, self.table(levels), attributes)

    def _require_private_start(self, start: Marginal) -> None:
        rep = self.check(self.collection([start]))
        if not rep.satisfied:
            raise DataError(f"the start table {start.text()} is not {self.privacy.describe()} (k-link "
                            f"{rep.k_link}); start from a node that satisfies the policy")

    # -- reporting ----------------------------------------------------------------------------
    def score(self, coll: Collection, table: Marginal | None = None) -> dict:
        """Utility, privacy and structure of a collection, for JSON."""
        rep = self.check(coll)
        out = {"kl_divergence": self.kl_cells(coll), "structure": coll.describe(), "privacy": rep.as_dict()}
        if table is not None:
            out["table"] = table.as_dict()
            out["single_table_kl"] = self.single_table_kl(table)
        return out

    def release(self, coll: Collection, skip: Marginal | None = None):
        """Release the collection's marginals (all but `skip`, the table's own) on their own, atomically."""
        from .release import materialize_marginals
        return materialize_marginals(self, [m for m in coll.marginals if m != skip])

    def companion(self, coll: Collection, skip: Marginal | None = None):
        """The marginals as a companion of the table's release: `run.materialize([companion])` writes the table
        and its marginals in one transaction."""
        from .release import MarginalRelease
        return MarginalRelease(self, [m for m in coll.marginals if m != skip])
