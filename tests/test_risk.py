"""`sqlanon risk`: the measures on hand-computed histograms, the estimators against independent
computations, and the database figures against pandas over the same rows."""
from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from scipy import optimize, stats

from sqlanon.cli import main
from sqlanon.cli.risk import risk_of
from sqlanon.errors import DataError, UserError
from sqlanon.risk import estimators, measures

from conftest import ADULT, adult_policy
from test_models_risk import THREE_TIMES, adult_database

QIS4 = ["age", "sex", "race", "marital_status"]


# -- measures on hand-computed histograms ----------------------------------------------------------
# classes of sizes 1, 1, 2, 5: 9 rows, 4 classes
PROSECUTOR = [
    # threshold, max, average, records at risk (rows in classes with 1/size > threshold, / 9)
    (0.2, 1.0, 4 / 9, 4 / 9),       # sizes < 5: 1 + 1 + 2
    (0.5, 1.0, 4 / 9, 2 / 9),       # sizes < 2: the two uniques (1/2 is not > 0.5)
    (0.19, 1.0, 4 / 9, 9 / 9),      # 1/5 = 0.2 > 0.19: every row
    (1.0, 1.0, 4 / 9, 0.0),         # nothing is above 1
]


@pytest.mark.parametrize("threshold, top, average, at_risk", PROSECUTOR)
def test_prosecutor_on_a_hand_computed_histogram(threshold, top, average, at_risk):
    p = measures.prosecutor([1, 2, 5], [2, 1, 1], threshold)
    assert p == pytest.approx({"max": top, "average": average, "records_at_risk": at_risk, "threshold": threshold})
    s = measures.summary([1, 2, 5], [2, 1, 1], threshold)
    assert (s["rows"], s["classes"], s["sample_uniques"], s["marketer"]) == (9, 4, 2, pytest.approx(4 / 9))


def test_journalist_on_hand_computed_pairs():
    # sample classes (f, F): (1, 4), (2, 2), (3, 10); 6 rows
    j = measures.journalist([1, 2, 3], [4, 2, 10], [1, 1, 1], threshold=0.2)
    assert j["journalist"]["max"] == pytest.approx(1 / 2)
    assert j["journalist"]["average"] == pytest.approx((1 / 4 + 2 / 2 + 3 / 10) / 6)
    assert j["journalist"]["records_at_risk"] == pytest.approx((1 + 2) / 6)      # F = 4 and 2 are < 5
    # the journalist average is the larger of |J| / sum F and the marketer's mean of f / F (El Emam; ARX): here
    # 2 classes over 6 population people, 1/3, against (1/2 + 3/4) / 4 = 0.3125, which alone understated it
    j2 = measures.journalist([1, 3], [2, 4], [1, 1])
    assert j2["journalist"]["average"] == pytest.approx(1 / 3) and j2["marketer"] == pytest.approx(0.3125)
    assert j["marketer"] == pytest.approx((1 / 4 + 1 + 0.3) / 6)
    assert j["k_map"] == 2
    assert j["delta_presence"] == pytest.approx({"min": 0.25, "max": 1.0})     # f/F: .25, 1, .3
    j5 = measures.journalist([1, 2, 3], [4, 2, 10], [1, 1, 1], population_classes=5)
    assert j5["delta_presence"]["min"] == 0.0       # two population classes hold no sample row
    # a population class smaller than the sample's is raised to it, and counted
    j = measures.journalist([3], [1], [2])
    assert j["journalist"]["max"] == pytest.approx(1 / 3) and j["journalist"]["population_smaller"] == 2
    # a table class the population lacks (F = 0) matches no population class: with 3 population classes, the
    # two matched leave one no table row falls in (counted as matched, it was hidden: min was 0.5)
    j = measures.journalist([1, 2, 4], [2, 4, 0], [1, 1, 1], population_classes=3)
    assert j["delta_presence"]["min"] == 0.0
    assert measures.journalist([1, 2, 4], [2, 4, 0], [1, 1, 1], population_classes=2)["delta_presence"]["min"] == 0.5


# -- estimators -----------------------------------------------------------------------------------

def _sample(seed: int, f: float, n_classes: int = 20000):
    rng = np.random.default_rng(seed)
    pop = rng.zipf(1.7, n_classes)
    pop = pop[pop < 5000]
    sample = rng.binomial(pop, f)
    sizes, classes = np.unique(sample[sample > 0], return_counts=True)
    return pop, sizes, classes


def test_zayatz_against_scipy_hypergeometric():
    _, sizes, classes = _sample(1, 0.1)
    N = int((sizes * classes).sum() / 0.1)
    n = int((sizes * classes).sum())
    u = classes.sum()
    c1 = classes[sizes == 1][0]
    h = [stats.hypergeom.pmf(1, N, int(i), n) for i in sizes]
    p = (c1 / u) * stats.hypergeom.pmf(1, N, 1, n) / sum(c / u * hi for c, hi in zip(classes, h))
    assert estimators.zayatz(sizes, classes, N) == pytest.approx(c1 * p / (n / N), rel=1e-9)


def test_zayatz_with_the_whole_population_counts_the_uniques_exactly():
    # f = 1: a sample unique is a population unique
    assert estimators.zayatz([1, 2, 7], [13, 4, 1], 13 + 8 + 7) == pytest.approx(13)


def _pitman_explicit(theta, alpha, sizes, classes):
    """The Pitman sampling formula's log-likelihood as the plain sums (Hoshino 2001), no gamma functions."""
    u, n = classes.sum(), (sizes * classes).sum()
    out = sum(math.log(theta + i * alpha) for i in range(1, u))
    out -= sum(math.log(theta + i) for i in range(1, n))
    out += sum(c * sum(math.log(j - alpha) for j in range(1, k)) for k, c in zip(sizes, classes))
    return out


def test_pitman_fit_maximizes_the_explicit_likelihood():
    _, sizes, classes = _sample(2, 0.05, 3000)
    theta, alpha = estimators.pitman_fit(sizes, classes)
    # an independent maximization: Nelder-Mead on the plain sums
    ref = optimize.minimize(lambda x: -_pitman_explicit(x[0], x[1], sizes, classes), x0=[theta * 1.3, alpha * 0.8],
                            method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-10, "maxiter": 20000})
    assert ref.x == pytest.approx([theta, alpha], rel=1e-4)
    assert estimators.pitman_log_likelihood(theta, alpha, sizes, classes) - \
        estimators.pitman_log_likelihood(1.0, 0.5, sizes, classes) == pytest.approx(
            _pitman_explicit(theta, alpha, sizes, classes) - _pitman_explicit(1.0, 0.5, sizes, classes), rel=1e-9)
    N = 10 ** 6
    expected = math.gamma(theta + 1) / math.gamma(theta + alpha) * N ** alpha if theta < 150 else \
        math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha)) * N ** alpha
    assert estimators.pitman(sizes, classes, N) == pytest.approx(expected, rel=1e-9)


def test_snb_cell_probabilities_against_the_model_summed():
    """P(sample count 1), P(2) of the slide negative binomial model, summed over population class sizes."""
    alpha, beta, f = 0.7, 0.3, 0.2
    m = np.arange(1, 4000)
    pmf = stats.nbinom.pmf(m - 1, alpha, beta)
    p1 = (pmf * stats.binom.pmf(1, m, f)).sum()
    p2 = (pmf * stats.binom.pmf(2, m, f)).sum()
    assert estimators.snb_cell_probabilities(alpha, beta, f) == pytest.approx((p1, p2), rel=1e-9)


def test_snb_fit_solves_its_moment_equations():
    _, sizes, classes = _sample(3, 0.3)
    K, alpha, beta = estimators.snb_fit(sizes, classes, 0.3)
    p1, p2 = estimators.snb_cell_probabilities(alpha, beta, 0.3)
    assert K * p1 == pytest.approx(classes[sizes == 1][0], rel=1e-6)
    assert K * p2 == pytest.approx(classes[sizes == 2][0], rel=1e-6)


@pytest.mark.parametrize("f, model", [(0.05, "pitman"), (0.3, None), (0.6, None)])
def test_dankar_rule_and_estimates_near_the_truth(f, model):
    pop, sizes, classes = _sample(4, f, 40000)
    N = int(pop.sum())
    u = estimators.population_uniques(sizes, classes, N)
    e = u["estimates"]
    if model:
        assert u["model"] == model
    else:   # above 10%: the smaller of Zayatz and SNB
        assert u["model"] in ("zayatz", "snb")
        assert u["estimate"] == pytest.approx(min(e["zayatz"], e["snb"]))
    true = int((pop == 1).sum())
    assert abs(u["estimate"] - true) / true < 0.5, (u, true)    # the right order of magnitude
    assert u["fraction"] == pytest.approx(u["estimate"] / N)


def test_no_sample_uniques_means_no_population_uniques():
    u = estimators.population_uniques([2, 3], [5, 5], 1000)
    assert u["estimate"] == 0 and all(v == 0 for v in u["estimates"].values())


# -- in the database, against pandas ----------------------------------------------------------------

def _policy_file(tmp_path, qis=QIS4, **extra):
    policy = adult_policy(qis, {"k": 2}, **extra)
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


def _pandas_report(frame: pd.DataFrame, columns, threshold=0.2) -> dict:
    sizes = frame.groupby(columns, observed=True).size()
    rows = len(frame)
    risky = sizes[1 / sizes > threshold].sum()
    return {"rows": rows, "classes": len(sizes), "sample_uniques": int((sizes == 1).sum()),
            "prosecutor": {"max": 1 / sizes.min(), "average": len(sizes) / rows,
                           "records_at_risk": risky / rows, "threshold": threshold},
            "histogram": {int(k): int(v) for k, v in sizes.value_counts().sort_index().items()},
            "smallest": sorted(sizes.tolist())[:10]}


@pytest.mark.parametrize("threshold", [0.2, 0.05])
def test_source_risk_equals_pandas(tmp_path, threshold):
    frame = pd.read_parquet(ADULT / "adult.parquet")
    ref = _pandas_report(frame, QIS4, threshold)
    got = risk_of(str(_policy_file(tmp_path)), threshold=threshold)
    for key in ("rows", "classes", "sample_uniques", "histogram"):
        assert got[key] == ref[key], key
    assert got["prosecutor"] == pytest.approx(ref["prosecutor"])
    assert [c["size"] for c in got["riskiest_classes"]] == ref["smallest"]
    first = got["riskiest_classes"][0]["labels"]
    assert len(frame[(frame[list(first)] == pd.Series(first)).all(axis=1)]) == got["riskiest_classes"][0]["size"]


def test_node_risk_equals_pandas_on_the_generalized_rows(tmp_path):
    frame = pd.read_parquet(ADULT / "adult.parquet")
    frame["age5"] = (frame["age"] // 5) * 5     # the intervals hierarchy's level 1 (width 5)
    ref = _pandas_report(frame, ["age5", "sex", "race"], 0.2)
    got = risk_of(str(_policy_file(tmp_path)), node="age=1,sex=0,race=0,marital_status=2")
    # marital_status at its top level is one value: classes are age band x sex x race
    assert got["histogram"] == ref["histogram"] and got["classes"] == ref["classes"]
    assert got["prosecutor"] == pytest.approx(ref["prosecutor"])


def _census_policy(tmp_path, extra_sql: str) -> Path:
    """A policy over the Adult table of a DuckDB file that also holds the population `census` (every person
    three times) and whatever `extra_sql` adds."""
    db = adult_database(tmp_path / "census.duckdb", THREE_TIMES, extra_sql)
    policy = adult_policy(QIS4, {"k": 2})
    policy["source"] = {"database": str(db), "table": "adult"}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


def test_journalist_against_a_population_table(tmp_path):
    frame = pd.read_parquet(ADULT / "adult.parquet")
    # the population: every person three times, and one extra class absent from the sample
    path = _census_policy(tmp_path, "INSERT INTO census (age, sex, race, marital_status) VALUES (200, 'X', 'Y', 'Z')")
    got = risk_of(str(path), population="census")
    sizes = frame.groupby(QIS4).size()
    assert got["journalist"]["max"] == pytest.approx(1 / (3 * sizes.min()))
    assert got["journalist"]["average"] == pytest.approx(len(sizes) / 3 / len(frame))
    assert got["marketer"] == pytest.approx(len(sizes) / 3 / len(frame))
    assert got["journalist"]["records_at_risk"] == pytest.approx(sizes[3 * sizes < 5].sum() / len(frame))
    assert got["population_uniques"]["population_size"] == 3 * len(frame) + 1
    assert got["k_map"] == 3 * sizes.min()
    assert got["delta_presence"] == pytest.approx({"min": 0.0, "max": 1 / 3})   # the extra class has no sample row


def test_a_population_that_matches_no_class_is_refused(tmp_path):
    """A release's table against the raw population: no class matched, and every journalist figure silently
    equalled the prosecutor's (only `population_smaller` in the JSON hinted at it)."""
    path = _census_policy(tmp_path, "CREATE TABLE shifted AS SELECT age + 1000 AS age, sex, race, marital_status "
                                    "FROM adult")
    with pytest.raises(UserError, match=r"^--population: no class of the table occurs in census"):
        risk_of(str(path), table="shifted", population="census")


def test_population_values_no_hierarchy_holds_are_reported_and_judged_on_the_safe_side(tmp_path):
    """At a node, the population is generalized through the policy's mapping tables, built from the source: the
    rows of a value they lack (age 200 here, a person the sample does not hold) are left out of its classes.
    That keeps journalist risk, k-map and the largest delta-presence on the safe side, but a population class of
    such rows alone holds no sample row, so the smallest delta-presence is 0: it came out above 0 before, and
    nothing said rows were left out. (Refusing such values, tried first, refused every ordinary population.)"""
    path = _census_policy(tmp_path, "INSERT INTO census (age, sex, race, marital_status) "
                                    "VALUES (200, 'Male', 'White', 'Divorced')")
    node = "age=1,sex=0,race=0,marital_status=2"
    got = risk_of(str(path), population="census", node=node)
    assert got["population_left_out"] == {"age": ["200"]}
    assert got["delta_presence"]["min"] == 0.0
    frame = pd.read_parquet(ADULT / "adult.parquet")
    frame["age5"] = (frame["age"] // 5) * 5
    assert got["k_map"] == 3 * frame.groupby(["age5", "sex", "race"]).size().min()     # the census: 3 x the sample
    text = CliRunner().invoke(main, ["risk", str(path), "--population", "census", "--node", node])
    assert text.exit_code == 0 and "population rows with age = 200 are left out" in text.output
    assert "population_left_out" not in risk_of(str(path), population="census",
                                                 node="age=0,sex=0,race=0,marital_status=2")


def test_a_population_in_another_schema_gives_the_same_figures(tmp_path):
    """`--population people.census` was quoted as one identifier: the Catalog Error of the database after the
    checks had found the table."""
    path = _census_policy(tmp_path, "INSERT INTO census (age, sex, race, marital_status) VALUES "
                                    "(200, 'Male', 'White', 'Divorced'); CREATE SCHEMA people; "
                                    "CREATE TABLE people.census AS SELECT * FROM census")
    node = "age=1,sex=0,race=0,marital_status=2"
    for options in ({}, {"node": node}):
        got = risk_of(str(path), population="people.census", **options)
        assert got == risk_of(str(path), population="census", **options)
        assert got["journalist"]["max"] > 0
    assert risk_of(str(path), population="people.census", node=node)["population_left_out"] == {"age": ["200"]}


def test_risk_command_json_and_bad_input(tmp_path):
    path = _policy_file(tmp_path)
    out = tmp_path / "risk.json"
    r = CliRunner().invoke(main, ["risk", str(path), "--json", str(out), "--sampling-fraction", "0.1"])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    for key in ("rows", "classes", "sample_uniques", "prosecutor", "journalist", "marketer", "population_uniques"):
        assert key in data
    assert set(data["prosecutor"]) == {"max", "average", "records_at_risk", "threshold"}
    assert data["population_uniques"]["model"] == "pitman"
    for args, needle in [(["--sampling-fraction", "1.5"], "--sampling-fraction"),
                         (["--node", "age=9,sex=0,race=0,marital_status=0"], "age"),
                         (["--population", "nope"], "--population: no table or view 'nope'"),
                         (["--table", "nope"], "nope"),
                         # a traceback (OverflowError), and a population smaller than the table raised silently
                         (["--population-size", "inf"], "--population-size: must be a finite number"),
                         (["--population-size", "1e400"], "--population-size: must be a finite number"),
                         (["--population-size", "100"], "--population-size: 100 is smaller than the table (45,222 "
                                                        "rows)"),
                         # rows / f infinite: an OverflowError traceback; a population of 1e308 estimated 0 uniques
                         (["--sampling-fraction", "1e-320"], "--sampling-fraction: the population would be inf"),
                         (["--population-size", "1e308"], "--population-size: the population would be 1e+308")]:
        r = CliRunner().invoke(main, ["risk", str(path), *args])
        assert r.exit_code == 2, (args, r.output)
        assert needle in r.output and "Traceback" not in r.output


def test_a_population_size_is_a_whole_number_of_people(tmp_path):
    """N was used unrounded by the estimators and rounded in the report: 17.1 population uniques "of 17"."""
    path = _policy_file(tmp_path)
    got = {}
    for size in ("50000.4", "50000"):
        r = CliRunner().invoke(main, ["risk", str(path), "--population-size", size, "--json", "-"])
        assert r.exit_code == 0, r.output
        got[size] = json.loads(r.output)["population_uniques"]
    assert got["50000.4"] == got["50000"] and got["50000"]["population_size"] == 50000


def test_an_entity_key_with_nulls_is_refused_in_one_line(tmp_path):
    """COUNT(DISTINCT key) skips NULLs: a class of NULL keys counted 0 persons (ZeroDivisionError traceback) and
    NULL keys in a class were dropped. Refused, as anonymize refuses them, for the source and for --table."""
    import duckdb
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a', 'x'), (2, 'a', 'y'), (NULL, 'b', 'x')) v(pid, g, s)")
    con.close()
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"source": {"database": str(db), "table": "t"}, "entity_key": "pid",
                                    "quasi_identifiers": {"g": {"hierarchy": "suppress"}}, "sensitive": ["s"],
                                    "privacy": {"k": 1}}))
    for extra, where in (([], "in the source"), (["--table", "t"], "in the table t")):
        r = CliRunner().invoke(main, ["risk", str(path), *extra])
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert f"column 'pid' (the entity key) has 1 NULL value(s) {where}" in r.output


def test_risk_of_a_collated_source_or_population_is_refused(tmp_path):
    """`sqlanon risk` groups the source (or a population) by the quasi-identifiers: under NOCASE 'Male' and 'male'
    would be one class, and the risk too low. One line, exit code 2."""
    import duckdb
    db = tmp_path / "c.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE adult AS SELECT * REPLACE (CASE WHEN age % 2 = 0 THEN upper(sex) ELSE sex END "
                f"COLLATE NOCASE AS sex) FROM read_parquet('{ADULT / 'adult.parquet'}')")
    con.execute("CREATE TABLE census AS SELECT age, sex, race, marital_status FROM adult")
    con.execute(f"CREATE TABLE exact AS SELECT * FROM read_parquet('{ADULT / 'adult.parquet'}')")
    con.close()
    for table, args, needle in [("adult", [], "column(s) 'sex' of the source adult compare under a collation"),
                                ("exact", ["--population", "census"],
                                 "column(s) 'sex' of the population table census compare under a collation")]:
        path = _policy_file(tmp_path, source={"database": str(db), "table": table})
        r = CliRunner().invoke(main, ["risk", str(path), *args])
        assert r.exit_code == 2, r.output
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.output, r.output


def test_risk_of_a_collated_release_against_a_population_is_refused(tmp_path):
    """--manifest with a population groups the release table by its labels as they are: a release whose column
    was given NOCASE since would merge 'Male' with 'male' there too. One line, exit code 2."""
    path = _policy_file(tmp_path)
    manifest = tmp_path / "m.json"
    assert CliRunner().invoke(main, ["anonymize", str(path), "--json", str(manifest), "-q"]).exit_code == 0
    con = duckdb.connect(json.loads(manifest.read_text())["database"])
    con.execute(f"CREATE TABLE census AS SELECT * FROM read_parquet('{ADULT / 'adult.parquet'}')")
    con.execute("CREATE OR REPLACE TABLE adult_release AS SELECT * REPLACE (sex COLLATE NOCASE AS sex) "
                "FROM adult_release")
    con.close()
    r = CliRunner().invoke(main, ["risk", str(path), "--manifest", str(manifest), "--population", "census"])
    assert r.exit_code == 2, r.output
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    assert "column(s) 'sex' of the release table adult_release compare under a collation" in lines[0]


def test_release_risk_from_a_manifest(tmp_path):
    path = _policy_file(tmp_path)
    manifest = tmp_path / "m.json"
    r = CliRunner().invoke(main, ["anonymize", str(path), "--json", str(manifest), "-q"])
    assert r.exit_code == 0, r.output
    got = risk_of(str(path), manifest=str(manifest))
    m = json.loads(manifest.read_text())
    con = duckdb.connect(m["database"], read_only=True)
    release = con.execute("SELECT * FROM adult_release").df()
    con.close()
    ref = _pandas_report(release, QIS4)
    assert got["histogram"] == ref["histogram"] and got["prosecutor"]["max"] <= 1 / 2   # k = 2 holds
    assert got["table"] == "adult_release"


# -- the release report's risk section, on the l-diversity paper's hospital table (TKDD Figure 1) ------

def test_report_risk_section_before_and_after_by_hand():
    import re

    import sqlanon
    from sqlanon.report import ReportOptions, render, report_context

    from conftest import HOSPITAL
    policy = {"source": {"csv": str(HOSPITAL / "hospital.csv"), "table": "hospital"},
              "quasi_identifiers": {"zip_code": {"hierarchy": str(HOSPITAL / "hierarchies" / "zip_code.csv")},
                                    "age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
                                    "nationality": {"hierarchy": "suppress"}},
              "sensitive": ["condition"], "privacy": {"k": 2}, "utility": "discernibility",
              "release": {"name": "hospital_release", "materialize": "none"}}
    with sqlanon.search_and_choose(policy) as run:
        context = report_context(run, ReportOptions())
        risk = context["risk"]
        # the 12 rows are all unique on (zip, age, nationality); the release (zip, age band, *) pairs them
        assert (risk["before"]["classes"], risk["before"]["sample_uniques"]) == (12, 12)
        assert risk["before"]["prosecutor"] == pytest.approx(
            {"max": 1.0, "average": 1.0, "records_at_risk": 1.0, "threshold": 0.2})
        assert (risk["after"]["classes"], risk["after"]["sample_uniques"]) == (6, 0)
        assert risk["after"]["prosecutor"] == pytest.approx(
            {"max": 0.5, "average": 0.5, "records_at_risk": 1.0, "threshold": 0.2})
        bands = {b["label"]: (b["before"]["rows"], b["after"]["rows"]) for b in risk["bands"]}
        assert bands["1 (unique)"] == (12, 0) and bands["1/2"] == (0, 12)
        page = render(context)
        section = re.search(r'<h2 id="risk">(.*?)<h2 id="attacks">', page, re.DOTALL).group(1)
        assert "100.00 %" in section and "50.00 %" in section and 'class="riskbar after"' in section
        external = render(report_context(run, ReportOptions(external=True)))
        section = re.search(r'<h2 id="risk">(.*?)<h2 id="attacks">', external, re.DOTALL).group(1)
        highest = re.search(r"highest risk.*?</tr>", section, re.DOTALL).group(0)
        assert highest.count("&gt; 10.00 %") == 2 and "50.00" not in highest   # 1/2 would give the smallest class


def test_release_table_and_manifest_with_a_population(tmp_path):
    """--table on the release equals --manifest; --manifest with a population generalizes the population to
    the manifest's node (here the population is every person twice, so every class doubles)."""
    path = _policy_file(tmp_path)
    manifest = tmp_path / "m.json"
    assert CliRunner().invoke(main, ["anonymize", str(path), "--json", str(manifest), "-q"]).exit_code == 0
    m = json.loads(manifest.read_text())
    con = duckdb.connect(m["database"])
    con.execute(f"CREATE TABLE census AS SELECT * FROM read_parquet('{ADULT / 'adult.parquet'}') "
                f"UNION ALL SELECT * FROM read_parquet('{ADULT / 'adult.parquet'}')")
    con.close()
    by_manifest = risk_of(str(path), manifest=str(manifest))
    by_table = risk_of(str(path), table="adult_release", db=m["database"])
    assert by_table["histogram"] == by_manifest["histogram"]
    assert by_table["riskiest_classes"] == by_manifest["riskiest_classes"]
    with_population = risk_of(str(path), manifest=str(manifest), population="census")
    assert m["chosen"]["suppressed_rows"] == 0
    assert with_population["journalist"]["max"] == pytest.approx(by_manifest["prosecutor"]["max"] / 2)
    assert with_population["journalist"]["average"] == pytest.approx(by_manifest["prosecutor"]["average"] / 2)
    assert with_population["journalist"]["population_smaller"] == 0
    assert with_population["delta_presence"] == pytest.approx({"min": 0.5, "max": 0.5})
    assert with_population["k_map"] == 2 * min(int(s) for s in by_manifest["histogram"])


def test_a_release_under_average_risk_and_records_at_risk_measures_within_them(tmp_path):
    """End to end: the released table, measured by `sqlanon risk`, meets the risk models the search enforced
    (with suppression: the smallest classes are left out of the release)."""
    policy = adult_policy(QIS4, {"average_risk": 0.003, "records_at_risk": {"threshold": 0.05, "max_fraction": 0.002},
                                 "max_suppression": 0.02})
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    manifest = tmp_path / "m.json"
    r = CliRunner().invoke(main, ["anonymize", str(path), "--json", str(manifest), "-q"])
    assert r.exit_code == 0, r.output
    m = json.loads(manifest.read_text())
    got = risk_of(str(path), manifest=str(manifest), threshold=0.05)
    assert m["chosen"]["suppressed_rows"] > 0, "this case is meant to exercise suppression"
    assert got["rows"] == 45222 - m["chosen"]["suppressed_rows"]
    assert got["prosecutor"]["average"] <= 0.003 and got["prosecutor"]["records_at_risk"] <= 0.002
    assert m["privacy"]["average_risk"] == pytest.approx(got["prosecutor"]["average"])
    assert m["privacy"]["records_at_risk"] == pytest.approx(got["prosecutor"]["records_at_risk"])


@pytest.mark.parametrize("keep", [False, True])
def test_a_release_without_the_entity_key_is_not_measured_in_rows(tmp_path, keep):
    """An entity-key policy counts persons. Its release does not hold the key unless release.keep names it: risk
    --manifest then counted rows (a person's 3 rows looked like 3 people: 25 % where the node's risk is 33 %)
    without saying so. Refused now, naming the way out; with the key kept, persons are counted."""
    db = tmp_path / "o.duckdb"
    con = duckdb.connect(str(db))
    # 6 persons; alice has 3 rows in the class 130**/[20, 30): 3 persons, 5 rows there
    con.execute("""CREATE TABLE orders AS SELECT * FROM (VALUES
        ('alice', '13053', 21, 'a'), ('alice', '13053', 21, 'b'), ('alice', '13053', 21, 'c'),
        ('bob', '13068', 22, 'a'), ('carol', '13061', 25, 'b'),
        ('dave', '14850', 41, 'a'), ('erin', '14853', 42, 'b'), ('fay', '14857', 45, 'c')) t(customer, zip, age, item)""")
    con.close()
    policy = {"source": {"database": str(db), "table": "orders"}, "entity_key": "customer",
              "quasi_identifiers": {"zip": {"hierarchy": "mask", "levels": 2}, "age": {"hierarchy": "intervals",
                                                                                      "widths": [10]}},
              "sensitive": ["item"], "privacy": {"k": 3},
              "release": {"name": "rel", **({"keep": ["customer"]} if keep else {})}}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(policy))
    r = CliRunner().invoke(main, ["anonymize", str(path), "--json", str(tmp_path / "m.json"), "-q"])
    assert r.exit_code == 0, r.output
    if not keep:
        with pytest.raises(DataError, match=r"^the policy counts persons \(entity_key 'customer'\), but rel does not "
                                            r"hold that column.*release.keep"):
            risk_of(str(path), manifest=str(tmp_path / "m.json"))
        # check and attack --table said "fix the name in the policy": the table lacks the key, not the policy
        for command in ("check", "attack"):
            r = CliRunner().invoke(main, [command, str(path), "--table", "rel"])
            assert r.exit_code == 2, r.output
            line, = r.stderr.strip().splitlines()
            assert line.startswith("sqlanon: error: --table: column 'customer' (entity_key of the policy) is not in "
                                   "rel") and "release.keep" in line, line
        return
    got = risk_of(str(path), manifest=str(tmp_path / "m.json"))
    assert got["rows"] == 6 and got["prosecutor"]["max"] == pytest.approx(1 / 3)


def test_a_table_lacking_a_column_is_named_as_the_user_named_it(tmp_path):
    """It was named by sqlanon's view of it (__sqlanon_source)."""
    db = tmp_path / "a.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE adult AS SELECT * FROM read_parquet('{ADULT / 'adult.parquet'}')")
    con.execute("CREATE TABLE nosex AS SELECT age, race, marital_status FROM adult")
    con.close()
    policy = adult_policy(QIS4, {"k": 2})
    policy["source"] = {"database": str(db), "table": "adult"}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(policy))
    r = CliRunner().invoke(main, ["risk", str(path), "--table", "nosex"])
    assert r.exit_code == 2
    assert r.stderr.strip() == ("sqlanon: error: table nosex: has no column 'sex' (a quasi-identifier of the policy); "
                                "its columns: age, marital_status, race")


@pytest.mark.parametrize("key_column", ["pid", "PID"])       # DuckDB reads PID for pid: the same column
def test_a_population_holding_the_entity_key_counts_persons(tmp_path, key_column):
    """The table counts persons with an entity key; the population was counted in rows, so a population that is
    the table itself (12 persons, 2 rows each) read as 24 people: journalist risk halved, k-map doubled (the
    unsafe side)."""
    db = tmp_path / "p.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT i // 2 AS pid, (i // 4) % 6 AS a, ['x', 'y'][1 + i % 2] AS s "
                "FROM range(24) r(i)")
    con.execute(f'CREATE TABLE census AS SELECT pid AS "{key_column}", a, s FROM t')
    con.close()
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"source": {"table": "t", "database": str(db)}, "entity_key": "pid",
                                    "quasi_identifiers": {"a": {"hierarchy": "suppress"}}, "sensitive": ["s"],
                                    "privacy": {"k": 2}}))
    got = risk_of(str(path), population="census")
    assert got["prosecutor"]["max"] == got["journalist"]["max"] == pytest.approx(0.5)
    assert got["k_map"] == 2 and got["delta_presence"] == pytest.approx({"min": 1.0, "max": 1.0})
    assert got["population_uniques"]["population_size"] == 12


def test_a_null_label_matches_the_populations_null():
    """At the source a NULL quasi-identifier is measured as a value: its class matched no population class (NULL =
    NULL is not true), so it counted as absent from the population: k-map 3 for 6, journalist risk 1/3 for 1/6."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT CASE WHEN i < 3 THEN NULL ELSE i % 2 END AS g FROM range(13) r(i)")
    con.execute("CREATE TABLE pop AS SELECT CASE WHEN i < 6 THEN NULL ELSE i % 2 END AS g FROM range(40) r(i)")
    from sqlanon.engine import wrap_connection
    from sqlanon.risk.analysis import plain_keys, risk_report
    got = risk_report(wrap_connection(con), "t", plain_keys(["g"]), population="pop")
    # table classes NULL 3, 0 5, 1 5; population NULL 6, 0 17, 1 17
    assert got["k_map"] == 6 and got["journalist"]["max"] == pytest.approx(1 / 6)
    assert got["delta_presence"] == pytest.approx({"min": 5 / 17, "max": 0.5})
    assert got["journalist"]["population_smaller"] == 0
    con.close()
