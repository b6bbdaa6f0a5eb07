"""Re-identification risk as privacy models: bounds on the prosecutor risk of the whole release.

- average risk (ARX's ``AverageReidentificationRisk``; El Emam, "Guide to the De-Identification of
  Personal Health Information", 2013, the average prosecutor risk): the mean over released records of
  1 / (size of the record's class) = classes / rows <= `max_risk`.
- records at risk (the same criterion's second and third parameters in ARX): the fraction of released
  records in classes whose risk 1/size is strictly above `threshold` <= `max_fraction`.

Both are functions of the released class sizes only (`needs_sensitive` False), and of all of them at
once: not a per-block test. The checker first suppresses the blocks other models reject, then asks
`enforce_table_criteria` which further classes the release must lose: the smallest first (they carry
the highest risk; removing a class smaller than the mean class size lowers classes/rows, and removing
an at-risk class lowers the at-risk fraction), as few as make every table-level criterion hold. A node
satisfies the policy when all the suppressed rows fit the budget.

Monotone without suppression: generalizing (or projecting to fewer attributes) merges classes, so the
number of classes falls while the rows stay, and a merged class is at risk only when all its parts
were. With suppression the predicate is not monotone in general (which classes another model rejects
changes with the node), so the search uses the monotone necessary part of the other models and checks
every candidate with the full predicate (`sqlanon.search`), exactly as for l-diversity with suppression.

- k-map with an estimator (`KMapEstimated`): the population known only by its size; a bound on class
  sizes (k'-anonymity), see `kmap_derived_k`.
- k-map and delta-presence against a population table (`KMapPopulation`, `DeltaPresence`): judged per
  class against the population's classes at the same node (`population_ok`, called by the checker).
"""
from __future__ import annotations

import numpy as np

from .base import Criterion
from .kanonymity import KAnonymity

TOL = 1e-12


class TableCriterion(Criterion):
    """A model of the whole release's class sizes. `block_ok` passes every block (nothing is decided per
    block); `holds_after` says, for each number p of smallest classes removed, whether the model holds."""

    needs_sensitive = False
    table_level = True

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        return np.ones(len(np.asarray(counts)), dtype=bool)

    def holds_after(self, sorted_sizes: np.ndarray) -> np.ndarray:
        """(L + 1,) booleans: does the model hold once the p smallest of these L classes are removed?"""
        raise NotImplementedError

    def achieved(self, counts: np.ndarray) -> dict:
        sizes = np.asarray(counts, dtype=np.float64).sum(axis=1) if np.ndim(counts) == 2 else np.asarray(counts)
        return self.value(sizes)

    def value(self, sizes: np.ndarray) -> dict:
        return {}


def _after(sorted_sizes: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Rows left (of all classes, or of the masked ones) after removing the p smallest, p = 0..L."""
    s = np.asarray(sorted_sizes, dtype=np.int64)
    if mask is not None:
        s = np.where(mask, s, 0)
    return s.sum() - np.concatenate([[0], np.cumsum(s)])


class AverageRisk(TableCriterion):
    """Average prosecutor re-identification risk (classes / rows of the release) <= max_risk.

    Args:
        max_risk: the bound, in (0, 1].

    Classes of 3, 1 and 2 rows: 3 classes over 6 rows.

    >>> AverageRisk(0.5).value(np.array([3, 1, 2]))
    {'average_risk': 0.5}
    """

    name = "average_risk"

    def __init__(self, max_risk: float):
        if not 0 < max_risk <= 1:
            raise ValueError("the average risk bound must be in (0, 1]")
        self.max_risk = float(max_risk)

    def holds_after(self, sorted_sizes: np.ndarray) -> np.ndarray:
        L = len(sorted_sizes)
        classes = L - np.arange(L + 1)
        rows = _after(sorted_sizes)
        return (classes <= (self.max_risk + TOL) * rows) | (rows == 0)

    def value(self, sizes) -> dict:
        rows = float(np.sum(sizes))
        return {"average_risk": len(sizes) / rows if rows else 0.0}

    def describe(self) -> str:
        return f"average re-identification risk <= {self.max_risk:g}"


class RecordsAtRisk(TableCriterion):
    """Fraction of records whose prosecutor risk 1/size is above `threshold` <= max_fraction.

    Args:
        threshold: a record is at risk when 1 / (its class size) is above this, in (0, 1].
        max_fraction: the largest fraction of records at risk, in [0, 1).

    Classes of 3, 1 and 2 rows, threshold 0.4: the classes of 1 and 2 rows (risk 1 and 0.5) are at risk,
    3 records of 6.

    >>> RecordsAtRisk(0.4, 0.2).value(np.array([3, 1, 2]))
    {'records_at_risk': 0.5}
    """

    name = "records_at_risk"

    def __init__(self, threshold: float, max_fraction: float):
        if not 0 < threshold <= 1 or not 0 <= max_fraction < 1:
            raise ValueError("threshold must be in (0, 1] and the fraction in [0, 1)")
        self.threshold = float(threshold)
        self.max_fraction = float(max_fraction)

    def risky(self, sizes) -> np.ndarray:
        return np.asarray(sizes, dtype=np.float64) * self.threshold < 1.0

    def holds_after(self, sorted_sizes: np.ndarray) -> np.ndarray:
        rows = _after(sorted_sizes)
        risky = _after(sorted_sizes, self.risky(sorted_sizes))
        return risky <= (self.max_fraction + TOL) * rows

    def min_block_size(self) -> int:
        return 1

    def value(self, sizes) -> dict:
        sizes = np.asarray(sizes)
        rows = float(sizes.sum())
        return {"records_at_risk": float(sizes[self.risky(sizes)].sum()) / rows if rows else 0.0}

    def describe(self) -> str:
        return f"records with risk > {self.threshold:g} <= {self.max_fraction:g}"


def enforce_table_criteria(criteria: list[TableCriterion], sizes: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """The blocks the release keeps once the table-level criteria hold: `ok` (the blocks other models keep)
    minus the fewest smallest of them (ties by block order) after which every criterion holds.

    When no number of removals makes them hold, every block is dropped, so the node exceeds any budget.

    Args:
        criteria: the table-level criteria.
        sizes: (B,) class sizes.
        ok: (B,) the blocks the other models keep.

    Returns:
        (B,) the blocks kept. Average risk 0.4 over classes of 3, 1 and 2 rows (0.5) holds once the
        class of 1 row is removed (2 classes over 5 rows):

    >>> enforce_table_criteria([AverageRisk(0.4)], np.array([3, 1, 2]), np.ones(3, dtype=bool)).tolist()
    [True, False, True]
    """
    if not criteria:
        return ok
    kept = np.flatnonzero(ok)
    order = kept[np.argsort(sizes[kept], kind="stable")]
    sorted_sizes = sizes[order]
    holds = np.ones(len(order) + 1, dtype=bool)
    for c in criteria:
        holds &= c.holds_after(sorted_sizes)
    p = int(np.argmax(holds)) if holds.any() else len(order)
    out = ok.copy()
    out[order[:p]] = False
    return out


# -- k-map with an estimator -------------------------------------------------------------------------

KMAP_ESTIMATORS = ("poisson", "zero_truncated_poisson")


def kmap_derived_k(k: int, sampling_fraction: float, significance: float = 0.01, estimator: str = "poisson") -> int:
    """The sample class size that stands in for k-map when the population is only known by its size.

    k-map (Sweeney; El Emam and Dankar, "Protecting Privacy Using k-Anonymity", JAMIA 15(5), 2008): every
    released class must match at least k people of the population. Without the population, El Emam and
    Dankar model a population class of size k as showing in a sample (fraction f) with a size
    X ~ Poisson(f k) (or zero-truncated Poisson, when only classes that show are counted). A sample
    class of size c >= k' where P(X >= k') <= `significance` is then unlikely to come from a population
    class of k or fewer people: the derived k' is that smallest c, capped at k (a class of k sample rows
    has at least k people in the population). ARX's `KMap` derives the same quantile and adds one more;
    this is the smallest size the test allows.

    Args:
        k: the k of k-map.
        sampling_fraction: the table's rows over the population's, in (0, 1].
        significance: the test's level.
        estimator: "poisson" or "zero_truncated_poisson".

    Returns:
        The derived k'. A tenth of the population, k = 10: X ~ Poisson(1), P(X >= 4) = 0.019 and
        P(X >= 5) = 0.0037, so k' = 5:

    >>> kmap_derived_k(10, 0.1)
    5
    """
    from scipy import stats

    lam = sampling_fraction * k
    c = 1
    while c < k:
        tail = stats.poisson.sf(c - 1, lam)                     # P(X >= c)
        if estimator == "zero_truncated_poisson":
            tail = tail / stats.poisson.sf(0, lam)              # P(X >= c | X >= 1)
        if tail <= significance:
            break
        c += 1
    return max(1, min(int(k), c))


class KMapEstimated(KAnonymity):
    """k-map with the population modelled (El Emam and Dankar 2008): k'-anonymity of the sample with k'
    from `kmap_derived_k`. Exactly a bound on class sizes, so monotone, with or without suppression."""

    name = "k-map"

    def __init__(self, k: int, sampling_fraction: float, significance: float = 0.01, estimator: str = "poisson"):
        self.k_map = int(k)
        self.sampling_fraction = float(sampling_fraction)
        self.significance = float(significance)
        self.estimator = estimator
        super().__init__(kmap_derived_k(k, sampling_fraction, significance, estimator))

    def describe(self) -> str:
        return f"{self.k_map}-map ({self.estimator}, f = {self.sampling_fraction:g}: {self.k}-anonymity)"


# -- k-map against a population table ----------------------------------------------------------------

def _packed(codes: np.ndarray, radices: list[int]) -> np.ndarray:
    """Block codes (B, a) as one integer key per block (mixed radix, the first attribute most significant)."""
    key = np.zeros(len(codes), dtype=np.int64)
    for i, r in enumerate(radices):
        key = key * int(r) + codes[:, i].astype(np.int64)
    return key


class KMapPopulation(Criterion):
    """k-map against a population table (Sweeney, "Computational Disclosure Control", PhD thesis, MIT 2001,
    Section 2.6; El Emam and Dankar 2008): every released class matches at least k rows of the
    population table (the same quasi-identifier columns) generalized to the same node.

    The population is coded through the policy's own mapping tables (its values must all be in the
    hierarchies) into a frequency set of its own, once; a node's population class sizes are then one
    GROUP BY over it (`sqlanon.frequency.FrequencySet.node_counts`), matched to the sample's classes by
    their codes. Monotone, with or without suppression: a merged class matches the sum of its parts'
    population classes, so it fails only when every part did (as k-anonymity)."""

    name = "k-map"
    needs_sensitive = False

    def __init__(self, k: int, population: str):
        self.k_map = int(k)     # not `k`: k-map may ask for more people than the sample has rows
        self.population = population
        self._wide: dict[int, str] = {}      # id(frequency set) -> the population's wide frequency set
        self._entity: dict[int, str | None] = {}     # id(frequency set) -> the entity key the population counts by

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        return np.ones(len(np.asarray(counts)), dtype=bool)   # decided by `population_ok`

    def prepare(self, fs) -> str:
        """The population's wide frequency set in the run's database (built on first use)."""
        if id(fs) in self._wide:
            return self._wide[id(fs)]
        from ..catalog import column_named
        from ..errors import DataError
        b = fs.backend
        have = {c for c, _ in b.columns(self.population)} if b.relation_kind(self.population) or \
            b.table_exists(self.population) else None
        if have is None:
            raise DataError(f"privacy.k_map.population: no table '{self.population}' in the source's database; "
                            "give the population table's name")
        for q in fs.qis:
            if q.name not in have:
                raise DataError(f"privacy.k_map.population: table '{self.population}' has no column '{q.name}' "
                                "(a quasi-identifier); the population needs every quasi-identifier column")
        b.refuse_collated(self.population, [q.name for q in fs.qis], f"the population table {self.population}")
        for q in fs.qis:
            missing = b.fetchall("missing_values.sql", source=self.population, column=q.name, map_table=q.map_table)
            if missing:
                raise DataError(f"privacy.k_map.population: value(s) {', '.join(repr(r[0]) for r in missing)} of "
                                f"'{q.name}' in '{self.population}' are not in its hierarchy; k-map against a "
                                "population needs hierarchies that list the population's values (a taxonomy file)")
        fs_table, wide = f"{fs.prefix}_pop_fs", f"{fs.prefix}_pop_wide"
        # persons, as the table counts them, when the population holds the entity key; else its rows are persons
        key = fs.policy.entity_key
        self._entity[id(fs)] = column_named(b, have, key) if key is not None else None
        ctx = {"source": self.population, "qis": fs.qis, "sensitives": [], "fs": fs_table, "wide": wide,
               "entity": self._entity[id(fs)]}
        b.execute("frequency_set.sql", **ctx)
        b.execute("wide_frequency_set.sql", **ctx)
        self._wide[id(fs)] = wide
        return wide

    def population_sizes(self, fs, levels: dict[str, int], block_codes: np.ndarray) -> np.ndarray:
        """Per sample block (codes in `levels`' attribute order), the rows of the matching population class."""
        return self.match(fs, levels, block_codes)[0]

    def match(self, fs, levels: dict[str, int], block_codes: np.ndarray) -> tuple[np.ndarray, int]:
        """(rows of each sample block's population class, 0 when it has none; the population's classes)."""
        pop = fs.node_counts(levels, source_table=self.prepare(fs), source_entity=self._entity.get(id(fs)))
        radices = [fs.radix(a, lvl) for a, lvl in levels.items()]
        keys, pop_keys = _packed(block_codes, radices), _packed(pop.block_codes, radices)
        order = np.argsort(pop_keys, kind="stable")
        pos = np.clip(np.searchsorted(pop_keys[order], keys), 0, max(len(order) - 1, 0))
        found = (pop_keys[order][pos] == keys) if len(order) else np.zeros(len(keys), dtype=bool)
        return np.where(found, pop.sizes[order][pos] if len(order) else 0, 0), len(pop_keys)

    def population_ok(self, fs, levels: dict[str, int], block_codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Per sample block (codes and sizes), does it satisfy the model against the population?"""
        return self.population_sizes(fs, levels, block_codes) >= self.k_map

    def describe(self) -> str:
        return f"{self.k_map}-map against {self.population}"


class DeltaPresence(KMapPopulation):
    """delta-presence (Nergiz, Atzori, Clifton, "Hiding the Presence of Individuals from Shared Databases",
    SIGMOD 2007, Definition 3): the table is a research subset of the population table, and for every
    person t of the population, delta_min <= P(t in the table | the release) <= delta_max, where that
    probability is f / F for t's generalized class (f of its F population rows are in the table).

    Per released class: delta_min <= f / F <= delta_max. A population class holding no row of the table
    has f / F = 0, and so has the class of a suppressed block; with delta_min > 0 either makes the node
    fail (suppression cannot help then). Monotone without suppression: a merged class's f / F lies between
    its parts', and a merged population class is empty only when all its parts were. With suppression
    (delta_min = 0) not monotone (a merged class fails when one part did), so the search checks every
    candidate with the full model."""

    name = "delta-presence"

    def __init__(self, delta_min: float, delta_max: float, population: str):
        super().__init__(1, population)
        self.delta_min, self.delta_max = float(delta_min), float(delta_max)

    def population_ok(self, fs, levels: dict[str, int], block_codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        F, population_classes = self.match(fs, levels, block_codes)
        ratio = np.divide(sizes, F, out=np.full(len(F), np.inf), where=F > 0)   # F = 0: not in the population
        ok = (ratio <= self.delta_max + TOL) & (ratio >= self.delta_min - TOL)
        if self.delta_min > 0 and (not ok.all() or population_classes > int((F > 0).sum())):
            return np.zeros(len(ok), dtype=bool)
        return ok

    def describe(self) -> str:
        return f"({self.delta_min:g}, {self.delta_max:g})-presence in {self.population}"
