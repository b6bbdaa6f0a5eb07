"""Incognito returns exactly the minimal nodes brute force finds (TKDD Section 5; LeFevre et al. 2005)."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.anonymizer import Anonymization
from sqlanon.lattice import minimal_nodes

from conftest import ADULT, adult_policy


def _search_both(policy, **kw):
    inc = Anonymization(policy, db=":memory:", **kw)
    bf = Anonymization(policy, db=":memory:", **kw)
    return inc.search("incognito"), bf.search("brute_force"), inc


@pytest.mark.parametrize("qis", [3, 4, 5])
@pytest.mark.parametrize("k", [2, 6, 50])
def test_adult_incognito_equals_brute_force(qis, k):
    inc, bf, _ = _search_both(adult_policy(qis, {"k": k}))
    assert inc.minimal == bf.minimal
    assert inc.satisfying == bf.satisfying
    assert inc.minimal, "k-anonymity always has a satisfying node (the top)"
    assert inc.evaluated < bf.evaluated


def test_adult_with_suppression_matches_brute_force():
    inc, bf, _ = _search_both(adult_policy(4, {"k": 20, "max_suppression": 0.01}))
    assert inc.minimal == bf.minimal and inc.satisfying == bf.satisfying


def test_minimal_nodes_on_a_chain():
    assert minimal_nodes({(1, 1), (2, 1), (1, 2), (0, 3)}) == [(1, 1), (0, 3)]


# -- random small tables: Incognito == brute force, through the whole engine ------------------------

@st.composite
def small_tables(draw):
    n_rows = draw(st.integers(1, 40))
    n_qi = draw(st.integers(1, 3))
    domains = [draw(st.integers(1, 6)) for _ in range(n_qi)]
    rows = [[draw(st.integers(0, d - 1)) for d in domains] for _ in range(n_rows)]
    sens = [draw(st.sampled_from("abc")) for _ in range(n_rows)]
    k = draw(st.integers(1, 6))
    supp = draw(st.sampled_from([0.0, 0.0, 0.1, 0.3]))
    kinds = [draw(st.sampled_from(["intervals", "suppress", "mask"])) for _ in range(n_qi)]
    return rows, sens, k, supp, kinds


def _policy_for(kinds):
    qis = {}
    for i, kind in enumerate(kinds):
        spec = {"hierarchy": kind}
        if kind == "intervals":
            spec["widths"] = [2, 4]
        if kind == "mask":
            spec["levels"] = 2
        qis[f"q{i}"] = spec
    return qis


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables())
def test_random_tables_incognito_equals_brute_force(table):
    rows, sens, k, supp, kinds = table
    frame = pd.DataFrame(rows, columns=[f"q{i}" for i in range(len(kinds))])
    for i, kind in enumerate(kinds):
        if kind == "mask":
            frame[f"q{i}"] = frame[f"q{i}"].map(lambda v: f"{v * 37 % 100:02d}")
    frame["s"] = sens
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    policy = {"source": {"table": "t"}, "quasi_identifiers": _policy_for(kinds), "sensitive": ["s"],
              "privacy": {"k": min(k, len(rows)), "max_suppression": supp}}
    found = Anonymization(policy, connection=con).search("incognito")
    reference = Anonymization(policy, connection=con).search("brute_force")
    assert found.minimal == reference.minimal
    assert found.satisfying == reference.satisfying
    # and both agree with k-anonymity computed directly in pandas from the hierarchy labels
    run = Anonymization(policy, connection=con)
    budget = int(np.floor(supp * len(rows) + 1e-9))
    expected = set()
    for node in run.lattice.nodes():
        labels = frame[[q.name for q in run.fs.qis]].astype(str).copy()
        for q, lvl in zip(run.fs.qis, node):
            mapping = dict(zip(q.hierarchy.values, q.hierarchy.labels[lvl]))
            labels[q.name] = labels[q.name].map(mapping)
        sizes = labels.value_counts().to_numpy()
        if sizes[sizes < min(k, len(rows))].sum() <= budget:
            expected.add(node)
    assert reference.satisfying == expected
    con.close()
