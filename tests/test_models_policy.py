"""`criteria_from_policy`: the privacy mapping of a policy becomes the right criteria, and every bad
field is refused with a PolicyError naming it."""
from __future__ import annotations

import numpy as np
import pytest

from sqlanon.errors import PolicyError
from sqlanon.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    criteria_from_policy,
)
from sqlanon.models.base import SensitiveDomain

OCCUPATION = SensitiveDomain("occupation", ("Adm-clerical", "Craft-repair", "Exec-managerial", "Other-service",
                                            "Prof-specialty", "Sales"),
                             levels=np.array([[0, 1, 2, 3, 4, 5], [0, 1, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0]]),
                             totals=np.array([5, 4, 3, 6, 2, 1]))
SALARY = SensitiveDomain("salary", (10, 20, 30, 40), numeric=True, totals=np.array([1, 2, 3, 4]))
DISEASE = SensitiveDomain("disease", ("cancer", "flu", "healthy", "hiv"), totals=np.array([3, 3, 10, 1]))
DOMAINS = {"occupation": OCCUPATION, "salary": SALARY}


def build(privacy, domains=DOMAINS):
    return criteria_from_policy(privacy, domains)


# --------------------------------------------------------------------------------------------------
# what it builds

def test_k_only():
    [k] = build({"k": 5})
    assert isinstance(k, KAnonymity) and k.k == 5 and k.sensitive is None


def test_design_example():
    crits = build({"k": 5, "l_diversity": {"variant": "recursive", "l": 3, "c": 3, "dont_care": [],
                                           "no_negative_disclosure": {}},
                   "t_closeness": {"t": 0.2, "distance": "hierarchical"}, "max_suppression": 0.0})
    assert [type(c) for c in crits] == [KAnonymity, RecursiveCLDiversity, TCloseness]
    rec, tc = crits[1], crits[2]
    assert (rec.c, rec.l, rec.dont_care_codes, rec.npd) == (3.0, 3, (), None)
    assert rec.name == "recursive (c,l)-diversity" and rec.sensitive == "occupation"
    assert (tc.t, tc.distance, tc.sensitive) == (0.2, "hierarchical", "occupation")
    assert not rec.multi_attribute


@pytest.mark.parametrize("spec, cls, attrs", [
    ({"variant": "distinct", "l": 3}, DistinctLDiversity, {"l": 3}),
    ({"l": 2}, DistinctLDiversity, {"l": 2}),                                     # variant defaults to distinct
    ({"variant": "entropy", "l": 2.5}, EntropyLDiversity, {"l": 2.5, "dont_care_codes": ()}),
    ({"variant": "entropy", "l": 2, "dont_care": ["Sales", "Adm-clerical"]}, EntropyLDiversity,
     {"dont_care_codes": (5, 0)}),                                               # adjusted entropy, Def. 4.5
    ({"variant": "recursive", "l": 2, "c": 1.5, "dont_care": ["Sales"]}, RecursiveCLDiversity,
     {"dont_care_codes": (5,), "npd": None, "name": "pd-recursive (c,l)-diversity"}),
    ({"variant": "recursive", "l": 2, "c": 2, "no_negative_disclosure": {"c2": 5, "values": ["Sales"]}},
     RecursiveCLDiversity, {"npd": (5.0, (5,)), "name": "npd-recursive (c1,c2,l)-diversity"}),
])
def test_l_diversity_variants(spec, cls, attrs):
    [crit] = build({"l_diversity": spec})
    assert type(crit) is cls and crit.sensitive == "occupation"
    for key, value in attrs.items():
        assert getattr(crit, key) == value


def test_attribute_choice_and_all():
    [crit] = build({"l_diversity": {"l": 2, "attribute": "salary"}})
    assert crit.sensitive == "salary" and not crit.multi_attribute
    crits = build({"l_diversity": {"l": 2, "attribute": "all"}})
    assert [c.sensitive for c in crits] == ["occupation", "salary"]
    assert all(c.multi_attribute for c in crits)               # Def. 4.6
    [crit] = build({"l_diversity": {"l": 2, "attribute": "all"}}, {"occupation": OCCUPATION})
    assert not crit.multi_attribute                             # one sensitive attribute: plain
    crits = build({"t_closeness": {"t": 0.3, "attribute": "all"}})
    assert [(c.sensitive, c.distance) for c in crits] == [("occupation", "equal"), ("salary", "equal")]


def test_dont_care_with_all_resolves_per_attribute():
    crits = build({"l_diversity": {"variant": "entropy", "l": 2, "dont_care": ["Sales", 40], "attribute": "all"}})
    assert [c.dont_care_codes for c in crits] == [(5,), (3,)]


def test_numeric_labels_match_by_text():
    [crit] = build({"l_diversity": {"variant": "recursive", "l": 2, "c": 2, "dont_care": ["20"],
                                    "attribute": "salary"}})
    assert crit.dont_care_codes == (1,)


def test_t_closeness_distances():
    [tc] = build({"t_closeness": {"t": 0.1, "distance": "ordered", "attribute": "salary"}})
    assert tc.distance == "ordered" and tc.sensitive == "salary"
    assert tc.q == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert tc.block_ok(np.array([[1, 2, 3, 4], [4, 0, 0, 0]])).tolist() == [True, False]
    [tc] = build({"t_closeness": {"t": 1}})
    assert tc.distance == "equal"


def test_the_built_criteria_judge_blocks():
    # disease codes: 0 cancer, 1 flu, 2 healthy (don't-care), 3 hiv (no negative disclosure)
    counts = np.array([[1, 1, 8, 1], [0, 0, 5, 0], [2, 0, 0, 1], [0, 3, 0, 0]])
    # block 1: r_y = 1 (y = 2 > l-1), tail = 8 + 1 + 1 = 10, 1 < 10; hiv 1/11 = 9.1 %
    # block 2: only healthy (r_y = 0) passes pd-recursive, but hiv is 0 %
    # block 3: r_y = 2 is r1, tail = r2 + r3 = 1: 2 < 1 fails;  block 4: one value, tail 0
    expected = {10: [False, False, False, False], 9: [True, False, False, False]}
    for c2, holds in expected.items():
        k, crit = build({"k": 2, "l_diversity": {"variant": "recursive", "l": 2, "c": 1, "dont_care": ["healthy"],
                                                 "no_negative_disclosure": {"c2": c2, "values": ["hiv"]}}},
                        {"disease": DISEASE})
        assert (crit.dont_care_codes, crit.npd) == ((2,), (float(c2), (3,)))
        assert crit.block_ok(counts).tolist() == holds
        assert k.block_ok(counts.sum(axis=1, keepdims=True)).tolist() == [True, True, True, True]


# --------------------------------------------------------------------------------------------------
# what it refuses

BAD = [
    # privacy mapping                                                       field named
    ({"k": 0},                                                              "privacy.k"),
    ({"k": 2.5},                                                            "privacy.k"),
    ({"k": "5"},                                                            "privacy.k"),
    ({"k": True},                                                           "privacy.k"),
    ({"k": 5, "l-diversity": {"l": 2}},                                     "privacy.l-diversity"),
    ({},                                                                    "privacy"),
    ("k: 5",                                                                "privacy"),
    ({"l_diversity": {"variant": "strong", "l": 2}},                        "privacy.l_diversity.variant"),
    ({"l_diversity": {"variant": "distinct"}},                              "privacy.l_diversity.l"),
    ({"l_diversity": {"l": 0}},                                             "privacy.l_diversity.l"),
    ({"l_diversity": {"l": 2.5}},                                           "privacy.l_diversity.l"),
    ({"l_diversity": {"variant": "entropy", "l": 0.5}},                     "privacy.l_diversity.l"),
    ({"l_diversity": {"variant": "entropy", "l": float("nan")}},            "privacy.l_diversity.l"),
    ({"l_diversity": {"l": 7}},                                             "privacy.l_diversity.l"),   # 6 values
    ({"l_diversity": {"variant": "recursive", "l": 2}},                     "privacy.l_diversity.c"),
    ({"l_diversity": {"variant": "recursive", "l": 2, "c": 0}},             "privacy.l_diversity.c"),
    ({"l_diversity": {"variant": "recursive", "l": 2, "c": -1}},            "privacy.l_diversity.c"),
    ({"l_diversity": {"variant": "distinct", "l": 2, "c": 3}},              "privacy.l_diversity.c"),
    ({"l_diversity": {"variant": "entropy", "l": 2, "dont_care": ["Pilot"]}}, "privacy.l_diversity.dont_care"),
    ({"l_diversity": {"variant": "entropy", "l": 2, "dont_care": "Sales"}}, "privacy.l_diversity.dont_care"),
    ({"l_diversity": {"variant": "distinct", "l": 2, "dont_care": ["Sales"]}}, "privacy.l_diversity.dont_care"),
    ({"l_diversity": {"variant": "recursive", "l": 2, "c": 2,
                      "dont_care": list(OCCUPATION.values)}},               "privacy.l_diversity.dont_care"),
    ({"l_diversity": {"variant": "entropy", "l": 2,
                      "no_negative_disclosure": {"c2": 5, "values": ["Sales"]}}},
     "privacy.l_diversity.no_negative_disclosure"),
    ({"l_diversity": {"variant": "recursive", "l": 2, "c": 2,
                      "no_negative_disclosure": {"values": ["Sales"]}}},
     "privacy.l_diversity.no_negative_disclosure.c2"),
    ({"l_diversity": {"variant": "recursive", "l": 2, "c": 2,
                      "no_negative_disclosure": {"c2": 100, "values": ["Sales"]}}},
     "privacy.l_diversity.no_negative_disclosure.c2"),
    ({"l_diversity": {"variant": "recursive", "l": 2, "c": 2,
                      "no_negative_disclosure": {"c2": 5}}},
     "privacy.l_diversity.no_negative_disclosure.values"),
    ({"l_diversity": {"variant": "recursive", "l": 2, "c": 2,
                      "no_negative_disclosure": {"c2": 5, "values": ["Pilot"]}}},
     "privacy.l_diversity.no_negative_disclosure.values"),
    ({"l_diversity": {"variant": "recursive", "l": 2, "c": 2,
                      "no_negative_disclosure": {"c2": 5, "values": ["Sales"], "c3": 1}}},
     "privacy.l_diversity.no_negative_disclosure.c3"),
    ({"l_diversity": {"l": 2, "attribute": "income"}},                      "privacy.l_diversity.attribute"),
    ({"l_diversity": {"l": 2, "k": 3}},                                     "privacy.l_diversity.k"),
    ({"l_diversity": [2]},                                                  "privacy.l_diversity"),
    ({"t_closeness": {"distance": "equal"}},                                "privacy.t_closeness.t"),
    ({"t_closeness": {"t": 1.5}},                                           "privacy.t_closeness.t"),
    ({"t_closeness": {"t": -0.1}},                                          "privacy.t_closeness.t"),
    ({"t_closeness": {"t": "0.2"}},                                         "privacy.t_closeness.t"),
    ({"t_closeness": {"t": 0.2, "distance": "euclid"}},                     "privacy.t_closeness.distance"),
    ({"t_closeness": {"t": 0.2, "distance": "ordered"}},                    "privacy.t_closeness.distance"),  # not numeric
    ({"t_closeness": {"t": 0.2, "distance": "hierarchical", "attribute": "salary"}},
     "privacy.t_closeness.distance"),                                       # salary has no hierarchy
    ({"t_closeness": {"t": 0.2, "attribute": "income"}},                    "privacy.t_closeness.attribute"),
    ({"t_closeness": {"t": 0.2, "metric": "equal"}},                        "privacy.t_closeness.metric"),
    ({"k": 2, "max_suppression": 1.0},                                      "privacy.max_suppression"),
    ({"k": 2, "max_suppression": -0.1},                                     "privacy.max_suppression"),
    ({"k": 2, "max_suppression": "5%"},                                     "privacy.max_suppression"),
]


@pytest.mark.parametrize("privacy, field", BAD)
def test_bad_fields_are_named(privacy, field):
    with pytest.raises(PolicyError) as err:
        build(privacy)
    assert err.value.field == field
    assert f"'{field}'" in str(err.value)


def test_no_sensitive_attribute():
    with pytest.raises(PolicyError) as err:
        build({"l_diversity": {"l": 2}}, {})
    assert err.value.field == "privacy.l_diversity" and "sensitive" in str(err.value)


def test_a_tangled_hierarchy_is_refused():
    tangled = SensitiveDomain("x", ("a", "b", "c"), levels=np.array([[0, 1, 2], [0, 0, 1], [0, 1, 1], [0, 0, 0]]),
                              totals=np.array([1, 1, 1]))
    with pytest.raises(PolicyError) as err:
        build({"t_closeness": {"t": 0.2, "distance": "hierarchical"}}, {"x": tangled})
    assert err.value.field == "privacy.t_closeness.distance" and "two parents" in str(err.value)


def test_messages_say_what_to_do():
    with pytest.raises(PolicyError, match=r"must be an integer >= 1; got 0"):
        build({"k": 0})
    with pytest.raises(PolicyError, match=r"'Pilot' is not a value of sensitive attribute 'occupation'"):
        build({"l_diversity": {"variant": "entropy", "l": 2, "dont_care": ["Pilot"]}})
    with pytest.raises(PolicyError, match=r"only 6 distinct values.*lower l"):
        build({"l_diversity": {"l": 7}})


def test_check_profile_reports_the_pd_variant_c_star_beside_def_4_2():
    # healthy (code 2) is don't-care; blocks (4, 3, 10, 1) and (4, 3, 10, 3). Def. 4.2 at l = 3 needs
    # c > max(10 / 4, 10 / 6) = 2.5, pd-recursive (Def. 4.3) only c > max(4 / 4, 4 / 6) = 1
    from sqlanon.models.profile import achieved_profile
    blocks = np.array([[4, 3, 10, 1], [4, 3, 10, 3]])
    [_, rec] = build({"k": 2, "l_diversity": {"variant": "recursive", "l": 3, "c": 0.9, "dont_care": ["healthy"]}},
                     {"disease": DISEASE})
    out = achieved_profile(blocks.sum(axis=1), {"disease": blocks}, {"disease": DISEASE}, [rec])
    assert out["recursive_c"] == 2.5 and out["recursive_c_at_l"] == 3
    assert out["pd_recursive_c"] == 1.0
    assert out["pd_recursive_l"] == 2        # c = 0.9 fails at l = 3 (4 < 0.9 * 4), holds at l = 2 (4 < 0.9 * 14)
    assert "recursive_l" not in out          # no plain recursive model: no l achieved "with its c" to report


@pytest.mark.parametrize("criterion", [DistinctLDiversity(2), EntropyLDiversity(1.5),
                                       EntropyLDiversity(1.5, dont_care_codes=[1])],
                         ids=["distinct", "entropy", "entropy-dont-care"])
def test_criteria_the_profile_covers_are_not_run_again(monkeypatch, criterion):
    """`achieved_profile` skips a criterion's own `achieved` when its keys are the profile's
    (`achieved_in_profile`): the profile is the same as when every criterion runs, key for key."""
    from sqlanon.models.base import Criterion
    from sqlanon.models.profile import achieved_profile
    blocks = np.array([[4, 3, 10, 1], [4, 3, 10, 3], [0, 2, 2, 0]])
    criterion.sensitive = "disease"      # the profile runs the criteria of its attribute
    covered = criterion.achieved_in_profile()
    assert covered == (not getattr(criterion, "dont_care_codes", None))
    skipping = achieved_profile(blocks.sum(axis=1), {"disease": blocks}, {"disease": DISEASE}, [criterion])
    monkeypatch.setattr(type(criterion), "achieved_in_profile", Criterion.achieved_in_profile)
    running = achieved_profile(blocks.sum(axis=1), {"disease": blocks}, {"disease": DISEASE}, [criterion])
    assert skipping == running
    # skipped only where the profile has every key it would add; else it ran (the adjusted entropy)
    assert set(criterion.achieved(blocks)) <= set(skipping) if covered else "l_entropy_adjusted" in skipping


CHUNKED_PROFILES = [
    ({"k": 3, "l_diversity": {"variant": "entropy", "l": 2, "dont_care": ["Prof-specialty"]}, "max_suppression": 0.05},
     ["occupation", "salary"]),
    ({"l_diversity": {"variant": "recursive", "c": 3, "l": 2, "dont_care": ["Sales"],
                      "no_negative_disclosure": {"c2": 1, "values": ["Craft-repair"]}}}, ["occupation", "salary"]),
    ({"l_diversity": {"variant": "distinct", "l": 2}, "t_closeness": {"t": 0.3, "distance": "equal"},
      "average_risk": 0.5, "records_at_risk": {"threshold": 0.2, "max_fraction": 0.5}, "max_suppression": 0.1},
     ["occupation", "salary"]),
    ({"k": 2, "beta_likeness": {"beta": 5, "variant": "enhanced"}, "delta_disclosure": {"delta": 4},
      "t_closeness": {"t": 0.5, "distance": "ordered"}}, ["education_num"]),
    # one sensitive attribute: its counts streamed from the engine (`FrequencySet.sparse_count_chunks`)
    ({"k": 3, "l_diversity": {"variant": "entropy", "l": 2}, "t_closeness": {"t": 0.4, "distance": "equal"},
      "records_at_risk": {"threshold": 0.2, "max_fraction": 0.5}, "max_suppression": 0.05}, ["occupation"]),
]


@pytest.mark.parametrize("privacy, sensitive", CHUNKED_PROFILES, ids=lambda p: ",".join(p))
def test_profile_from_chunks_of_blocks_equals_the_profile_of_all_blocks(monkeypatch, privacy, sensitive):
    """The manifest's privacy profile of a node with many blocks is computed from sparse counts, a few
    blocks at a time (`achieved_profile_in_chunks`): on every Adult node, every model's achieved values
    (table-level ones, a second sensitive attribute's, t under the ordered distance, beta, delta) and their
    keys equal those of the whole dense matrix, with and without suppressed blocks."""
    import sqlanon.anonymizer as anonymizer
    from sqlanon.anonymizer import Anonymization

    from conftest import adult_policy
    seen = set()
    with Anonymization(adult_policy(4, privacy, sensitive=sensitive), db=":memory:") as run:
        run.fs.rollup = False
        for node in run.lattice.nodes():
            result = run.evaluate(run.lattice.levels(node))
            if not result.ok.any():
                continue
            monkeypatch.setattr(anonymizer, "ACHIEVED_DENSE_CELLS", 1 << 40)
            whole = run.achieved(result)
            monkeypatch.setattr(anonymizer, "ACHIEVED_DENSE_CELLS", 64)     # a few blocks per chunk
            chunked = run.achieved(result)
            assert list(chunked) == list(whole)
            for key, value in whole.items():
                assert chunked[key] == (pytest.approx(value) if isinstance(value, float) else value), (node, key)
            seen.add(bool(result.suppressed_rows))
    assert True in seen or not privacy.get("max_suppression")


@pytest.mark.parametrize("privacy", [
    {"k": 2, "t_closeness": {"t": 0.6, "distance": "equal"}},
    {"l_diversity": {"variant": "recursive", "c": 4, "l": 2}},
    {"k": 2, "t_closeness": {"t": 0.6, "distance": "equal"}, "max_suppression": 1e-4},
], ids=["t-closeness", "recursive", "t-closeness with a budget"])
def test_chosen_node_evaluation_profile_and_kl_terms_come_from_one_stream_of_its_counts(monkeypatch, privacy):
    """Where the chosen node's profile is streamed from its counts (`_in_chunks`; no roll-up), its profile and its
    KL-divergence terms come from that one stream, not from `node_kl_terms.sql` beside it; without a suppression
    budget its blocks' codes and sizes too, not from `node_counts.sql` (`Anonymization._evaluate_streamed`). With
    a budget the node is judged on its own first (its blocks may be suppressed), and when it suppresses nothing
    its profile and KL terms still share the stream (`_profile_beside_kl`). Either way: the same blocks,
    divergence and profile as the separate computations, and fewer statements."""
    import sqlanon.anonymizer as anonymizer
    from sqlanon.anonymizer import Anonymization

    from conftest import adult_policy
    monkeypatch.setattr(anonymizer, "ACHIEVED_DENSE_CELLS", 64)          # a few blocks per chunk
    budget = "max_suppression" in privacy
    runs = {}
    for streamed in (True, False):
        if not streamed:        # the separate computations: node_counts, node_kl_terms, the profile's own stream
            monkeypatch.setattr(Anonymization, "_evaluate_streamed", lambda self, levels: None)
            monkeypatch.setattr(Anonymization, "_profile_beside_kl", lambda self, result: None)
        with Anonymization(adult_policy(4, privacy), db=":memory:") as run:
            run.fs.rollup = False
            run.search()
            run.backend.log = []
            chosen = run.choose()
            log = list(run.backend.log)
            assert (run.checker.budget > 0) is budget and chosen.result.suppressed_rows == 0
            kl_statements = sum("node_kl_terms" in q or "GROUP BY \"g\"" in q for q in log)
            runs[streamed] = (chosen.levels, chosen.metrics["kl_divergence"], run.achieved(chosen.result),
                              kl_statements, chosen.result.kept_xlogx, len(log), chosen.result.counts)
    (levels, kl, profile, statements, xl, n, counts), (levels0, kl0, profile0, statements0, xl0, n0, counts0) = \
        runs[True], runs[False]
    assert levels == levels0 and xl0 is None and xl is not None
    assert np.array_equal(counts.block_codes, counts0.block_codes) and np.array_equal(counts.sizes, counts0.sizes)
    assert counts.sizes.dtype == counts0.sizes.dtype and counts.block_codes.dtype == counts0.block_codes.dtype
    assert kl == pytest.approx(kl0, rel=1e-12) and kl > 0
    assert list(profile) == list(profile0)
    for key, value in profile0.items():
        assert profile[key] == (pytest.approx(value) if isinstance(value, float) else value), key
    assert statements == 0 and statements0 == 1
    # the stream instead of node_kl_terms.sql, and without a budget instead of node_counts.sql too
    assert n == n0 - (0 if budget else 1)
