"""Entity keys: when a person has many rows, classes, diversity and metrics count distinct persons."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.errors import PolicyError

from conftest import assert_same_search

QIS = {"zip": {"hierarchy": "mask", "levels": 2}, "age": {"hierarchy": "intervals", "widths": [10]}}


def _con(frame: pd.DataFrame):
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE orders AS SELECT * FROM frame")
    con.unregister("frame")
    return con


def _policy(privacy, entity=True):
    policy = {"source": {"table": "orders"}, "quasi_identifiers": QIS, "sensitive": ["item"], "privacy": privacy}
    if entity:
        policy["entity_key"] = "customer"
    return policy


def test_ten_rows_of_one_person_do_not_fake_k_10():
    frame = pd.DataFrame({"customer": ["alice"] * 10, "zip": ["13053"] * 10, "age": [28] * 10,
                          "item": ["shoes", "hat"] * 5})
    con = _con(frame)
    rows = Anonymization(_policy({"k": 1}, entity=False), connection=con)
    persons = Anonymization(_policy({"k": 1}), connection=con)
    bottom = {"zip": 0, "age": 0}
    assert rows.achieved(rows.evaluate(bottom))["k"] == 10
    assert persons.achieved(persons.evaluate(bottom))["k"] == 1
    assert persons.fs.rows == 1
    # so 10-anonymity is refused outright (one person), while counting rows would have accepted it
    with pytest.raises(PolicyError, match="1 distinct persons"):
        Anonymization(_policy({"k": 10}), connection=con)
    assert Anonymization(_policy({"k": 10}, entity=False), connection=con).search().minimal == [(0, 0)]


def test_diversity_counts_persons_not_rows():
    # one class: bob bought shoes five times, carol a hat once
    frame = pd.DataFrame({"customer": ["bob"] * 5 + ["carol"], "zip": ["13053"] * 6, "age": [30] * 6,
                          "item": ["shoes"] * 5 + ["hat"]})
    con = _con(frame)
    persons = Anonymization(_policy({"l_diversity": {"variant": "entropy", "l": 2}}), connection=con)
    rows = Anonymization(_policy({"l_diversity": {"variant": "entropy", "l": 2}}, entity=False), connection=con)
    bottom = {"zip": 0, "age": 0}
    assert persons.evaluate(bottom).satisfied          # two persons, one value each: entropy log 2
    assert persons.achieved(persons.evaluate(bottom))["l_entropy"] == pytest.approx(2.0)
    assert not rows.evaluate(bottom).satisfied          # rows 5:1 give exp(H) = 1.57


def _random_orders(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    customers = [f"c{i}" for i in range(25)]
    home = {c: (f"{rng.integers(10, 14)}{rng.integers(0, 10)}", int(rng.integers(20, 70))) for c in customers}
    picks = rng.choice(customers, size=120)
    return pd.DataFrame({"customer": picks, "zip": [home[c][0] for c in picks], "age": [home[c][1] for c in picks],
                         "item": rng.choice(["a", "b", "c"], size=120)})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_with_entity_key_matches_brute_force_and_a_pandas_reference(seed):
    frame = _random_orders(seed)
    con = _con(frame)
    policy = _policy({"k": 3, "l_diversity": {"variant": "distinct", "l": 2}, "max_suppression": 0.2})
    found = Anonymization(policy, connection=con).search()
    run = Anonymization(policy, connection=con)
    reference = run.search("brute_force")
    assert_same_search(found, reference)
    # the reference: distinct customers per class and per (class, item), from the raw rows in pandas
    budget = int(np.floor(0.2 * frame["customer"].nunique() + 1e-9))
    expected = set()
    for node in run.lattice.nodes():
        labels = frame.copy()
        for q, lvl in zip(run.fs.qis, node):
            labels[q.name] = labels[q.name].astype(str).map(dict(zip(q.hierarchy.values, q.hierarchy.labels[lvl])))
        per_class = labels.groupby(["zip", "age"]).agg(n=("customer", "nunique"), items=("item", "nunique"))
        bad = per_class[(per_class["n"] < 3) | (per_class["items"] < 2)]
        if bad["n"].sum() <= budget:
            expected.add(node)
    assert reference.satisfying == expected


def test_one_row_per_person_gives_the_same_metrics_as_no_entity_key():
    frame = _random_orders(3).drop_duplicates("customer")
    con = _con(frame)
    a = Anonymization(_policy({"k": 2}), connection=con)
    b = Anonymization(_policy({"k": 2}, entity=False), connection=con)
    a.score_minimal()
    b.score_minimal()
    assert [c.levels for c in a.candidates] == [c.levels for c in b.candidates]
    for x, y in zip(a.candidates, b.candidates):
        assert x.metrics == pytest.approx(y.metrics)
