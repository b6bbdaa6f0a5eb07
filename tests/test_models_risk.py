"""The risk and likeness models: hand-computed examples, the search against brute force with and without
suppression, and the decisions against pandas over the generalized rows."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.errors import PolicyError
from sqlanon.models import criteria_from_policy
from sqlanon.models.base import SensitiveDomain
from sqlanon.models.likeness import BetaLikeness, DeltaDisclosure
from sqlanon.models.risk import (
    AverageRisk,
    KMapEstimated,
    RecordsAtRisk,
    enforce_table_criteria,
)

from conftest import ADULT, adult_policy, assert_same_search
from test_models_search import (
    test_incognito_equals_brute_force_for_every_model as same_as_brute_force,
)

# classes of sizes 1, 1, 2, 5 (9 rows), smallest first; entry p: the p smallest removed
HOLDS_AFTER = [
    (AverageRisk(0.4), [False, True, True, True, True]),      # 4/9, 3/8, 2/7, 1/5, empty
    (AverageRisk(4 / 9), [True] * 5),                          # exactly at the bound
    (AverageRisk(0.1), [False, False, False, False, True]),
    (RecordsAtRisk(0.2, 0.25), [False, False, False, True, True]),   # at risk 4/9, 3/8, 2/7, 0/5
    (RecordsAtRisk(0.5, 0.25), [True, True, True, True, True]),      # at risk (size 1 only) 2/9 <= .25
    (RecordsAtRisk(0.5, 0.2), [False, True, True, True, True]),      # 2/9 > .2, 1/8 <= .2
]


@pytest.mark.parametrize("criterion, expected", HOLDS_AFTER, ids=[f"{c.describe()}" for c, _ in HOLDS_AFTER])
def test_table_criteria_after_removing_the_smallest_classes(criterion, expected):
    assert criterion.holds_after(np.array([1, 1, 2, 5])).tolist() == expected


ENFORCE = [
    # sizes, ok before, criteria, ok after
    ([5, 1, 2, 1], [1, 1, 1, 1], [AverageRisk(0.4)], [1, 0, 1, 1]),           # the first of the two uniques
    ([5, 1, 2, 1], [1, 0, 1, 1], [AverageRisk(0.4)], [1, 0, 1, 1]),           # already 3/8
    ([5, 1, 2, 1], [1, 1, 1, 1], [RecordsAtRisk(0.2, 0.25)], [1, 0, 0, 0]),
    ([5, 1, 2, 1], [1, 1, 1, 1], [AverageRisk(0.4), RecordsAtRisk(0.5, 0.2)], [1, 0, 1, 1]),
    ([3, 3], [1, 1], [AverageRisk(0.1)], [0, 0]),                             # never: everything goes
]


@pytest.mark.parametrize("sizes, ok, criteria, expected", ENFORCE)
def test_enforce_table_criteria(sizes, ok, criteria, expected):
    out = enforce_table_criteria(criteria, np.array(sizes), np.array(ok, dtype=bool))
    assert out.astype(int).tolist() == expected


DOMAIN = SensitiveDomain("s", ("a", "b", "c"), totals=np.array([50, 30, 20]))   # p = .5, .3, .2
HALVES = SensitiveDomain("s", ("a", "b", "c"), totals=np.array([50, 25, 25]))   # p = .5, .25, .25
LIKENESS = [
    # criterion, block counts, passes?
    (BetaLikeness(0.25, DOMAIN), [2, 1, 1], True),          # gains 0, 0, (.25 - .2) / .2 = .25
    (BetaLikeness(0.2, DOMAIN), [2, 1, 1], False),
    (BetaLikeness(5, DOMAIN), [0, 0, 4], True),             # gain (1 - .2) / .2 = 4
    (BetaLikeness(5, DOMAIN, "enhanced"), [0, 0, 4], False),  # cap min(5, -ln .2 = 1.609)
    (BetaLikeness(5, DOMAIN, "enhanced"), [4, 0, 0], False),  # gain 1 > -ln .5 = .693
    (BetaLikeness(0.7, DOMAIN, "enhanced"), [3, 1, 0], True),  # gain .75/.5 - 1 = .5 <= min(.7, .693)
    (DeltaDisclosure(0.23, DOMAIN), [2, 1, 1], True),       # max |ln q/p| = ln 1.25 = .2231
    (DeltaDisclosure(0.22, DOMAIN), [2, 1, 1], False),
    (DeltaDisclosure(math.log(2), HALVES), [1, 2, 1], False),   # strict: |ln(.25/.5)| = |ln(.5/.25)| = ln 2
    (DeltaDisclosure(math.log(2) + 1e-9, HALVES), [1, 2, 1], True),
    (DeltaDisclosure(10, DOMAIN), [1, 1, 0], False),        # a value missing: ln 0
]


@pytest.mark.parametrize("criterion, counts, passes", LIKENESS, ids=[f"{c.describe()} {n}" for c, n, _ in LIKENESS])
def test_likeness_on_hand_computed_blocks(criterion, counts, passes):
    assert criterion.block_ok(np.array([counts])).tolist() == [passes]


def test_achieved_values():
    assert BetaLikeness(1, DOMAIN).achieved(np.array([[2, 1, 1], [0, 1, 1]]))["beta"] == pytest.approx(1.5)
    assert DeltaDisclosure(1, DOMAIN).achieved(np.array([[2, 1, 1]]))["delta"] == pytest.approx(math.log(1.25))
    assert DeltaDisclosure(1, DOMAIN).min_distinct_values() == 3


@pytest.mark.parametrize("privacy, field", [
    ({"average_risk": 0}, "privacy.average_risk"),
    ({"average_risk": "low"}, "privacy.average_risk"),
    ({"records_at_risk": {"threshold": 0.2}}, "privacy.records_at_risk.max_fraction"),
    ({"records_at_risk": {"threshold": 2, "max_fraction": 0.1}}, "privacy.records_at_risk.threshold"),
    ({"records_at_risk": {"max_fraction": 0.1, "limit": 3}}, "privacy.records_at_risk.limit"),
    ({"beta_likeness": {"variant": "basic"}}, "privacy.beta_likeness.beta"),
    ({"beta_likeness": {"beta": 1, "variant": "strong"}}, "privacy.beta_likeness.variant"),
    ({"delta_disclosure": {"delta": -1}}, "privacy.delta_disclosure.delta"),
])
def test_policy_errors_name_the_field(privacy, field):
    with pytest.raises(PolicyError) as e:
        criteria_from_policy(privacy, {"s": DOMAIN})
    assert field in str(e.value)


# (name, privacy, sensitive) on Adult's first 4 quasi-identifiers: some nodes pass, some fail
MODELS = [
    ("average risk", {"average_risk": 0.003}, None),
    ("records at risk", {"records_at_risk": {"threshold": 0.05, "max_fraction": 0.005}}, None),
    ("k + average risk with suppression", {"k": 3, "average_risk": 0.004, "max_suppression": 0.02}, None),
    ("average risk with suppression", {"average_risk": 0.002, "max_suppression": 0.01}, None),
    ("records at risk with suppression", {"records_at_risk": {"threshold": 0.05, "max_fraction": 0.002},
                                          "max_suppression": 0.01}, None),
    ("basic beta", {"beta_likeness": {"beta": 6}}, None),
    ("enhanced beta", {"beta_likeness": {"beta": 10, "variant": "enhanced"}}, None),
    ("beta with suppression", {"beta_likeness": {"beta": 4}, "max_suppression": 0.03}, None),
    ("delta disclosure", {"delta_disclosure": {"delta": 0.6}}, ["salary"]),
    ("delta with suppression", {"delta_disclosure": {"delta": 0.5}, "max_suppression": 0.03}, ["salary"]),
    ("k + beta + average risk", {"k": 2, "beta_likeness": {"beta": 8}, "average_risk": 0.01}, None),
]


@pytest.mark.parametrize("name, privacy, sensitive", MODELS, ids=[m[0] for m in MODELS])
def test_incognito_equals_brute_force(name, privacy, sensitive):
    same_as_brute_force(name, privacy, sensitive)


def _generalized(run, node) -> pd.DataFrame:
    """The source generalized to a node in pandas, through the hierarchies' own label tables."""
    frame = pd.read_parquet(ADULT / "adult.parquet")
    out = pd.DataFrame(index=frame.index)
    for q, level in zip(run.lattice.names, node):
        h = run.fs.qi(q).hierarchy
        labels = dict(zip((str(v) for v in h.values), h.labels[level]))
        out[q] = frame[q].astype(str).map(labels)
    out["occupation"] = frame["occupation"]
    return out


def test_decisions_equal_pandas_on_every_node():
    """Without suppression: average risk, records at risk and basic beta-likeness, node by node, against
    the generalized rows grouped in pandas."""
    policy = adult_policy(4, {"average_risk": 0.003, "records_at_risk": {"threshold": 0.05, "max_fraction": 0.01},
                              "beta_likeness": {"beta": 10}})
    with Anonymization(policy, db=":memory:") as run:
        satisfying = run.search("brute_force").satisfying
        p = pd.read_parquet(ADULT / "adult.parquet")["occupation"].value_counts(normalize=True)
        for node in itertools.product(*(range(h + 1) for h in run.lattice.heights)):
            g = _generalized(run, node)
            sizes = g.groupby(list(run.lattice.names)).size()
            average = len(sizes) / len(g) <= 0.003
            at_risk = sizes[sizes < 20].sum() / len(g) <= 0.01
            q = g.groupby(list(run.lattice.names))["occupation"].value_counts(normalize=True)
            gain = ((q - p.reindex(q.index.get_level_values(-1)).to_numpy()) /
                    p.reindex(q.index.get_level_values(-1)).to_numpy())
            beta = gain.max() <= 10 + 1e-12
            assert (node in satisfying) == (average and at_risk and beta), node


def test_suppression_for_average_risk_drops_the_smallest_classes():
    policy = adult_policy(4, {"average_risk": 0.002, "max_suppression": 0.01})
    with Anonymization(policy, db=":memory:") as run:
        run.search()
        chosen = run.choose()
        res = chosen.result
        kept = res.counts.sizes[res.ok]
        assert len(kept) / kept.sum() <= 0.002
        if res.suppressed_rows:
            # every suppressed class is at most as large as every kept one
            assert res.counts.sizes[~res.ok].max() <= kept.min()
        assert res.suppressed_rows <= run.checker.budget
        assert run.achieved(res)["average_risk"] == pytest.approx(len(kept) / kept.sum())


KMAP = [
    # k, f, significance, estimator, derived k'
    (10, 0.01, 0.01, "poisson", 2),                   # X ~ Poisson(.1): P(X >= 2) = .0047 <= .01
    (10, 0.01, 0.01, "zero_truncated_poisson", 3),    # P(X >= 2 | X >= 1) = .049 > .01
    (100, 0.1, 0.01, "poisson", 19),                  # Poisson(10): P(X >= 19) = .0072, P(X >= 18) = .0143
    (5, 1.0, 0.01, "poisson", 5),                     # capped at k
]


@pytest.mark.parametrize("k, f, alpha, estimator, derived", KMAP)
def test_kmap_derived_k(k, f, alpha, estimator, derived):
    from scipy import stats
    c = KMapEstimated(k, f, alpha, estimator)
    assert c.k == derived
    if derived < k:
        tail = stats.poisson.sf(derived - 1, f * k)
        before = stats.poisson.sf(derived - 2, f * k)
        if estimator != "poisson":
            tail, before = tail / stats.poisson.sf(0, f * k), before / stats.poisson.sf(0, f * k)
        assert tail <= alpha < before


def test_kmap_in_the_search_is_the_derived_k_anonymity():
    kmap = Anonymization(adult_policy(4, {"k_map": {"k": 100, "sampling_fraction": 0.1}}), db=":memory:").search()
    k19 = Anonymization(adult_policy(4, {"k": 19}), db=":memory:").search()
    assert kmap.satisfying == k19.satisfying and kmap.minimal


THREE_TIMES = "SELECT * FROM adult UNION ALL SELECT * FROM adult UNION ALL SELECT * FROM adult"


def adult_database(db, census: str, *statements: str):
    """A DuckDB file with table adult and table census (`census` a SELECT over adult), then `statements`."""
    import duckdb
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE adult AS SELECT * FROM read_parquet('{ADULT / 'adult.parquet'}')")
    con.execute(f"CREATE TABLE census AS {census}")
    for sql in statements:
        con.execute(sql)
    con.close()
    return db


@pytest.fixture(scope="module")
def census_db(tmp_path_factory):
    """Every Adult person three times in the census."""
    return adult_database(tmp_path_factory.mktemp("census") / "census.duckdb", THREE_TIMES)


def _searcher(db, suppression: float):
    def search(privacy, mode="incognito"):
        policy = adult_policy(4, {**privacy, "max_suppression": suppression},
                              source={"database": str(db), "table": "adult"})
        with Anonymization(policy, db=str(db)) as run:
            return run.search(mode)
    return search


@pytest.mark.parametrize("suppression", [0.0, 0.01])
def test_kmap_against_a_population_table(census_db, suppression):
    """Every class of the census is three times the sample's, so 6-map is 2-anonymity; brute force agrees."""
    search = _searcher(census_db, suppression)
    kmap = search({"k_map": {"k": 6, "population": "census"}})
    reference = search({"k_map": {"k": 6, "population": "census"}}, "brute_force")
    k2 = search({"k": 2})
    assert reference.satisfying == k2.satisfying and kmap.minimal == k2.minimal
    assert_same_search(kmap, reference)
    assert kmap.minimal and len(reference.satisfying) < kmap.lattice.size


@pytest.mark.parametrize("privacy, satisfied, suppressed", [
    # (a1, b0): 1 sample row, under k = 2, suppressed within the budget of 1 row: its 4 population people are left
    # at f / F = 0 < 0.2. It was judged by delta-presence before k dropped it, and the node passed
    ({"k": 2, "delta_presence": {"delta_min": 0.2, "delta_max": 1.0, "population": "pop"}}, False, 4),
    ({"k": 2, "delta_presence": {"delta_min": 0.0, "delta_max": 1.0, "population": "pop"}}, True, 1),
    ({"k": 1, "delta_presence": {"delta_min": 0.2, "delta_max": 1.0, "population": "pop"}}, True, 0),
    ({"k": 2}, True, 1),
])
def test_delta_min_fails_a_node_whatever_model_suppresses_a_class(tmp_path, privacy, satisfied, suppressed):
    import duckdb
    (tmp_path / "a.csv").write_text("a,l1\na0,A\na1,A\n")
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('a0', 'x0'), ('a0', 'x1'), ('a0', 'x2'), ('a1', 'x0')) v(a, s)")
    con.execute("CREATE TABLE pop AS SELECT 'a' || (i % 2) AS a FROM range(8) r(i)")
    policy = {"source": {"table": "t"}, "quasi_identifiers": {"a": {"hierarchy": str(tmp_path / "a.csv")}},
              "sensitive": ["s"], "privacy": {**privacy, "max_suppression": 0.25}}
    with Anonymization(policy, connection=con) as run:
        res = run.evaluate({"a": 0})
        assert (res.satisfied, res.suppressed_rows) == (satisfied, suppressed)
        assert run.search().minimal == [run.lattice.node({"a": 0 if satisfied else 1})]
    con.close()


@pytest.mark.parametrize("population_has_key", [True, False])
def test_kmap_and_delta_presence_with_an_entity_key(tmp_path, population_has_key):
    """With an entity key the population's node counts asked for the entity column its frequency set never had (a
    Binder Error on every such policy). A population holding the key counts persons, as the table does; one
    without it counts rows, each a person."""
    import duckdb
    con = duckdb.connect()
    # 12 persons, 2 rows each, in 6 classes of 2 persons; the population is the table itself (or its persons)
    con.execute("CREATE TABLE t AS SELECT i // 2 AS pid, (i // 4) % 6 AS a, ['x', 'y'][1 + i % 2] AS s "
                "FROM range(24) r(i)")
    con.execute("CREATE TABLE pop AS SELECT pid, a FROM t" if population_has_key else
                "CREATE TABLE pop AS SELECT DISTINCT pid // 1 AS person, a FROM t")
    (tmp_path / "a.csv").write_text("a,l1\n" + "".join(f"{i},{i // 3}\n" for i in range(6)))
    for privacy, node_0 in (({"k_map": {"k": 2, "population": "pop"}}, True),
                            ({"k_map": {"k": 3, "population": "pop"}}, False),
                            ({"delta_presence": {"delta_min": 0.9, "delta_max": 1.0, "population": "pop"}}, True)):
        policy = {"source": {"table": "t"}, "quasi_identifiers": {"a": {"hierarchy": str(tmp_path / "a.csv")}},
                  "sensitive": ["s"], "entity_key": "pid", "privacy": privacy}
        with Anonymization(policy, connection=con) as run:
            assert run.evaluate({"a": 0}).satisfied == node_0, privacy      # 2 persons per class either way
            assert run.evaluate({"a": 1}).satisfied, privacy
    con.close()


def test_a_population_in_another_schema(tmp_path):
    """`schema.table` as the population: its name was quoted as one identifier ('"people.census"'), so k-map and
    delta-presence stopped with the database's Catalog Error."""
    db = adult_database(tmp_path / "schema.duckdb", THREE_TIMES, "CREATE SCHEMA people",
                        "CREATE TABLE people.census AS SELECT * FROM census", "DROP TABLE census")
    search = _searcher(db, 0.0)
    k2 = search({"k": 2})
    assert search({"k_map": {"k": 6, "population": "people.census"}}).minimal == k2.minimal
    presence = search({"k": 2, "delta_presence": {"delta_max": 0.34, "population": "people.census"}})
    assert presence.minimal == k2.minimal


def test_kmap_population_must_be_covered_by_the_hierarchies(census_db, tmp_path):
    db = adult_database(tmp_path / "c.duckdb", "SELECT * FROM adult",
                        "INSERT INTO census (age, sex, race, marital_status) VALUES (200, 'Male', 'White', 'Divorced')")
    policy = adult_policy(4, {"k_map": {"k": 6, "population": "census"}}, source={"database": str(db), "table": "adult"})
    from sqlanon.errors import DataError
    with Anonymization(policy, db=str(db)) as run, pytest.raises(DataError, match="'200' of 'age'"):
        run.search()
    with pytest.raises(PolicyError, match="privacy.k_map.sampling_fraction"):
        criteria_from_policy({"k_map": {"k": 6, "population": "census", "sampling_fraction": 0.1}}, {"s": DOMAIN})


def test_kmap_population_under_a_collation_is_refused(tmp_path):
    """The population is joined to the mapping tables: a NOCASE column would match 'Male' and 'male' alike."""
    db = adult_database(tmp_path / "c.duckdb", "SELECT age, sex COLLATE NOCASE AS sex, race, marital_status FROM adult")
    policy = adult_policy(4, {"k_map": {"k": 6, "population": "census"}}, source={"database": str(db), "table": "adult"})
    from sqlanon.errors import DataError
    with Anonymization(policy, db=str(db)) as run, pytest.raises(
            DataError, match=r"column\(s\) 'sex' of the population table census compare under a collation"):
        run.search()


def test_kmap_may_ask_for_more_people_than_the_sample_has(census_db):
    policy = adult_policy(2, {"k_map": {"k": 50_000, "population": "census"}},
                          source={"database": str(census_db), "table": "adult"})
    with Anonymization(policy, db=str(census_db)) as run:
        top = run.evaluate(dict(zip(run.lattice.names, run.lattice.heights)))
        assert top.satisfied                                  # one class: 3 x 45,222 people
        assert not run.evaluate({"age": 4, "sex": 0}).satisfied   # two classes, the smaller under 50,000


DELTA_PRESENCE = [
    # sample sizes, population sizes, population classes, delta_min, delta_max, ok per block
    ([1, 2, 3], [4, 2, 10], 3, 0.0, 0.5, [True, False, True]),       # f/F = .25, 1, .3
    ([1, 2, 3], [4, 2, 10], 3, 0.2, 1.0, [True, True, True]),
    ([1, 2, 3], [4, 2, 10], 3, 0.3, 1.0, [False] * 3),               # .25 < .3 and suppression cannot help
    ([1, 2, 3], [4, 2, 10], 4, 0.1, 1.0, [False] * 3),               # a population class with no sample row
    ([1, 2, 3], [4, 2, 10], 4, 0.0, 1.0, [True] * 3),
]


@pytest.mark.parametrize("f, F, classes, lo, hi, expected", DELTA_PRESENCE)
def test_delta_presence_by_hand(f, F, classes, lo, hi, expected):
    from sqlanon.models.risk import DeltaPresence
    c = DeltaPresence(lo, hi, "census")
    c.match = lambda fs, levels, codes: (np.array(F), classes)     # the population side, as the database gives it
    assert c.population_ok(None, {}, np.zeros((3, 0)), np.array(f)).tolist() == expected


@pytest.mark.parametrize("suppression", [0.0, 0.01])
def test_delta_presence_against_a_population_table(census_db, suppression):
    """The census holds every person three times: f / F = 1/3 in every class, at every node."""
    search = _searcher(census_db, suppression)
    everything = search({"delta_presence": {"delta_min": 0.3, "delta_max": 0.34, "population": "census"}})
    # (with suppression the search leaves nodes above a satisfying one undecided: none of them is minimal)
    assert len(everything.satisfying | everything.undecided) == everything.lattice.size
    assert everything.minimal == [(0,) * len(everything.lattice.heights)]
    nothing = search({"delta_presence": {"delta_min": 0.0, "delta_max": 0.3, "population": "census"}})
    assert not nothing.satisfying
    # with k: the delta-presence part always holds, so the result is k's
    both = search({"k": 5, "delta_presence": {"delta_max": 0.34, "population": "census"}})
    reference = search({"k": 5, "delta_presence": {"delta_max": 0.34, "population": "census"}}, "brute_force")
    assert reference.satisfying == search({"k": 5}).satisfying
    assert_same_search(both, reference)


def test_delta_presence_decisions_equal_pandas(tmp_path):
    """Population = the table plus its men again: a class's f / F = f / (f + men in it), which varies."""
    db = adult_database(tmp_path / "p.duckdb", "SELECT * FROM adult UNION ALL SELECT * FROM adult WHERE sex = 'Male'")
    privacy = {"delta_presence": {"delta_max": 0.68, "population": "census"}}
    policy = adult_policy(4, privacy, source={"database": str(db), "table": "adult"})
    with Anonymization(policy, db=str(db)) as run:
        found = run.search()
        assert found.satisfying == run.search("brute_force").satisfying
        for node in itertools.product(*(range(h + 1) for h in run.lattice.heights)):
            g = _generalized(run, node)
            g["male"] = pd.read_parquet(ADULT / "adult.parquet")["sex"].eq("Male").to_numpy()
            per = g.groupby(list(run.lattice.names))["male"].agg(["size", "sum"])
            ratio = per["size"] / (per["size"] + per["sum"])
            assert (node in found.satisfying) == bool((ratio <= 0.68 + 1e-12).all()), node
    assert found.minimal and len(found.satisfying) < found.lattice.size
