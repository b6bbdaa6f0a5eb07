"""Relaxed maxent l-diversity (Kifer & Gehrke, SIGMOD 2006, Sec. 6, the relaxation parameter alpha): the
indicators, the dominance pruning, hand-built collections, and the check against the condition itself on
the whole reconstruction (brute force): equal for one marginal holding the sensitive attribute, sufficient
at alpha^p for p of them, pruning never changing the answer."""
from __future__ import annotations

import random

import duckdb
import numpy as np
import pandas as pd
import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.errors import PolicyError
from sqlanon.marginals.privacy import (
    Groups,
    maxent_l_diversity_relaxed,
    prune_dominance,
    relaxed_exact,
    relaxed_indicators,
)
from sqlanon.marginals.session import Marginals

from test_marginals import (
    QIS,
    _session,
    random_decomposable,
    random_frame,
    three_value_frame,
)


def test_indicators_are_three_states():
    got = relaxed_indicators(np.array([[10.0, 5, 1, 0], [1, 1, 1, 1], [0, 0, 3, 2]]), 0.5)
    assert got.tolist() == [[2, 2, 1, 0], [2, 2, 2, 2], [0, 0, 2, 2]]


def test_dominance_pruning_keeps_the_minimal_groups_per_block():
    s = _session(random_frame(0), QIS, "s").schema
    vecs = np.array([[2, 2, 1], [2, 1, 1], [2, 2, 2], [2, 0, 1], [2, 1, 1], [2, 2, 2]], dtype=np.int8)
    keys = np.array([[0], [0], [0], [0], [0], [1]])
    kept = prune_dominance(s, Groups([("b", 0)], keys, vecs), [("b", 0)])
    # block 0: [2,2,1] and [2,2,2] dominate [2,1,1] (same support), the repeated [2,1,1] counts once, and
    # [2,0,1] stays (another support: a later factor may empty [2,1,1] and not it); block 1 alone
    assert sorted(map(tuple, kept.vecs.tolist())) == [(2, 0, 1), (2, 1, 1), (2, 2, 2)]
    assert sorted(kept.keys[:, 0].tolist()) == [0, 0, 1]


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame([{"a": a, "b": b, "s": v} for a, b, v, n in rows for _ in range(n)])


QIS2 = {"a": {"hierarchy": "suppress"}, "b": {"hierarchy": "suppress"}}


def test_hand_built_single_marginal():
    # a = 0: p 4, q 2, r 1; a = 1: p 3, q 3, r 3
    ms = _session(_frame([("0", "x", "p", 4), ("0", "x", "q", 2), ("0", "y", "r", 1),
                          ("1", "x", "p", 3), ("1", "y", "q", 3), ("1", "y", "r", 3)]), QIS2, "s")
    coll = ms.collection([ms.marginal({"a": 0, "s": 0})])
    cases = [(2, 0.5, True), (2, 0.51, False), (3, 0.25, True), (3, 0.26, False), (1, 1.0, True)]
    for l, alpha, want in cases:
        got = maxent_l_diversity_relaxed(coll, l, alpha, ms.counts)
        assert got.ok == want == relaxed_exact(coll, l, alpha, ms.counts), (l, alpha)
    bad = maxent_l_diversity_relaxed(coll, 2, 0.6, ms.counts)
    assert bad.violation["group"] == {"a": "0"} and bad.violation["within_relaxation"] == ["p"]


def test_hand_built_two_marginals_lose_up_to_alpha_squared():
    # p: a 0/1 = 4/6, b x/y = 6/4; q: a 0/1 = 2/8, b x/y = 4/6 (T(p) = T(q) = 10). Each marginal's groups
    # have p and q within 0.5 of their top (a = 0: 4, 2; b = x: 0.6, 0.4 after dividing by T(s)), but
    # the reconstruction at a = 0, b = x is p 4 * 0.6 = 2.4, q 2 * 0.4 = 0.8: q is 1/3 of p
    ms = _session(_frame([("0", "x", "p", 4), ("1", "x", "p", 2), ("1", "y", "p", 4),
                          ("0", "y", "q", 2), ("1", "y", "q", 4), ("1", "x", "q", 4)]), QIS2, "s")
    coll = ms.collection([ms.marginal({"a": 0, "s": 0}), ms.marginal({"b": 0, "s": 0})])
    relaxed = maxent_l_diversity_relaxed(coll, 2, 0.5, ms.counts)
    assert relaxed.ok and relaxed_exact(coll, 2, 0.25, ms.counts) and relaxed_exact(coll, 2, 1 / 3, ms.counts)
    # the relaxed check passes it: it promises alpha^p (here 0.25), and no more
    assert not relaxed_exact(coll, 2, 0.34, ms.counts)
    assert not maxent_l_diversity_relaxed(coll, 2, 0.7, ms.counts).ok      # 0.4 / 0.6 < 0.7 for b = x


@pytest.fixture(scope="module")
def sessions():
    return ([_session(random_frame(seed, 150), QIS, "s") for seed in (10, 11)]
            + [_session(three_value_frame(seed), QIS, "s") for seed in (0, 1)])


def test_relaxed_check_against_the_whole_reconstruction(sessions):
    rng = random.Random(16)
    seen = {"p1": 0, "pmore": 0, True: 0, False: 0, "pruned": 0}
    for case in range(40):
        ms = sessions[case % len(sessions)]
        coll = random_decomposable(ms, rng, rng.randint(1, 4), sensitive_p=0.8)
        p = sum(1 for c in coll.clique_sets if (ms.schema.sensitive, 1) in c)
        for l in (1, 2, 3):
            for alpha in (0.2, 0.5, 0.8):
                got = maxent_l_diversity_relaxed(coll, l, alpha, ms.counts)
                full = maxent_l_diversity_relaxed(coll, l, alpha, ms.counts, prune=False)
                assert got.ok == full.ok, (case, l, alpha)
                seen["pruned"] += got.groups < full.groups
                if p <= 1:
                    assert got.ok == relaxed_exact(coll, l, alpha, ms.counts), (case, l, alpha)
                    seen["p1"] += 1
                else:
                    if got.ok:
                        assert relaxed_exact(coll, l, alpha ** p, ms.counts), (case, l, alpha, p)
                    seen["pmore"] += 1
                seen[got.ok] += 1
    assert seen["p1"] >= 20 and seen["pmore"] >= 20 and seen[True] >= 30 and seen[False] >= 30
    assert seen["pruned"] >= 5


def _run(privacy):
    frame = random_frame(1, 80)
    con = duckdb.connect()
    con.register("f", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM f")
    return Anonymization({"source": {"table": "t"}, "quasi_identifiers": QIS, "sensitive": ["s"],
                          "privacy": privacy}, connection=con)


@pytest.mark.parametrize("privacy, alpha", [({"k": 2, "l_diversity": {"variant": "distinct", "l": 2}}, 0.0),
                                            ({"k": 2, "l_diversity": {"variant": "distinct", "l": 2}}, 1.5),
                                            ({"k": 2}, 0.5)])
def test_bad_relaxation_is_refused(privacy, alpha):
    with pytest.raises(PolicyError) as e:
        Marginals(_run(privacy), relaxation=alpha)
    assert e.value.field == "--relaxation"


def test_search_under_the_relaxed_check_releases_what_the_condition_allows():
    run = _run({"k": 3, "l_diversity": {"variant": "distinct", "l": 2}})
    run.score_minimal()
    run.choose()
    ms = Marginals(run, max_sensitive=2, relaxation=0.2)
    res = ms.search(run.chosen.levels)
    rep = ms.check(res.collection)
    assert rep.satisfied and rep.diversity.method == "relaxed/dominance"
    assert "relaxation 0.2" in ms.privacy.describe()
    p = rep.sensitive_marginals
    assert len(res.steps) >= 2 and relaxed_exact(res.collection, 2, 0.2 ** p, ms.counts)
