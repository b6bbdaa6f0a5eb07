"""Anonymized marginals (Kifer & Gehrke) and Privacy-MaxEnt (bucketize, maxent) on DuckDB, PostgreSQL and Spark:
the same policies on the three engines, the results compared (as tests/test_engines.py does for the core
engine). The servers come from tests/test_engines.py's fixtures (skipped without them, failing in CI)."""
from __future__ import annotations

import collections
import re

import pytest

from sqlanon.anonymizer import Anonymization
from sqlanon.marginals.session import Marginals
from sqlanon.maxent import Knowledge, MaxEnt, Rules
from sqlanon.maxent.anatomy import bucketize_policy
from sqlanon.maxent.run import open_release
from sqlanon.policy import load_policy

from conftest import adult_policy
from test_engines import HOSPITAL_QIS, _source, postgres, spark  # noqa: F401  (fixtures)

MARGINAL_QIS = ["race", "sex", "age", "marital_status"]
MARGINAL_PRIVACY = {"k": 6, "l_diversity": {"variant": "entropy", "l": 6}}


def _engine(request, engine: str) -> None:
    if engine != "duckdb":
        request.getfixturevalue(engine)


def _report_text(html: str) -> list[str]:
    """The release report's text, without markup, times and the engine's own words (where the rows are)."""
    text = re.sub(r"<[^>]+>", "\n", re.sub(r"<(style|svg)[^>]*>.*?</\1>", "", html, flags=re.S))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # the policy's source block names the engine's own keys (dsn_env, parquet, master)
    own = r"(?i)duckdb|postgres|spark|seconds|\d{4}-\d\d-\d\d|\d s\b|^(dsn_env|parquet|csv|master|engine):"
    return [ln for ln in lines if not re.search(own, ln)]


def _marginals_outcome(engine: str, tmp_path) -> dict:
    policy = adult_policy(MARGINAL_QIS, MARGINAL_PRIVACY, release={"name": "adult_m"})
    policy["source"] = _source(engine, "adult")
    with Anonymization(load_policy(policy, base_dir=tmp_path), db=":memory:") as run:
        run.score_minimal()
        run.choose()
        ms = Marginals(run, max_sensitive=3)
        found = ms.search(run.chosen.levels)
        coll = found.collection
        kl_sql = ms.kl_cells(coll)                      # the closed form in SQL over the original's cells
        rep = ms.check(coll).as_dict()
        path, _ = ms.one_attribute_path(run.chosen.levels)
        walk = ms.walk(coll, seed=5, steps=60, keep=found.start)
        run.materialize([ms.companion(coll, skip=found.start)])
        report = _report_text(run.report(tmp_path / "report.html").read_text())
        rows = {}
        for o in run.manifest()["outputs"]:
            if o["kind"] == "marginal":
                got = run.backend.fetchall("select_all.sql", relation=o["name"])
                rows[o["name"]] = collections.Counter(tuple(str(v) for v in r) for r in got)
        return {"chosen": dict(run.chosen.levels), "kl": found.kl, "kl_sql": kl_sql,
                "marginals": [m.as_dict() for m in coll], "steps": [s.move for s in found.steps],
                "privacy": rep, "path": [(p.attribute, p.level, p.kl) for p in path],
                "walk": (walk.kl, [m.as_dict() for m in walk.collection], walk.accepted), "rows": rows,
                "report": report}


@pytest.fixture(scope="module")
def duckdb_marginals(tmp_path_factory):
    return _marginals_outcome("duckdb", tmp_path_factory.mktemp("m"))


@pytest.mark.parametrize("engine", ["postgres", "spark"])
def test_marginals_equal_duckdb(request, engine, duckdb_marginals, tmp_path):
    _engine(request, engine)
    got, want = _marginals_outcome(engine, tmp_path), duckdb_marginals
    assert got["chosen"] == want["chosen"] and got["marginals"] == want["marginals"]
    assert got["steps"] == want["steps"]
    assert got["kl"] == pytest.approx(want["kl"], rel=1e-9)
    assert got["kl_sql"] == pytest.approx(want["kl_sql"], rel=1e-9) and want["kl_sql"] == pytest.approx(want["kl"])
    assert got["privacy"]["satisfied"] and got["privacy"]["k_link"] == want["privacy"]["k_link"]
    assert got["privacy"]["maxent_l_diversity"] == want["privacy"]["maxent_l_diversity"]
    assert [p[:2] for p in got["path"]] == [p[:2] for p in want["path"]]
    assert [p[2] for p in got["path"]] == pytest.approx([p[2] for p in want["path"]], rel=1e-9)
    assert got["walk"][1:] == want["walk"][1:] and got["walk"][0] == pytest.approx(want["walk"][0], rel=1e-9)
    assert got["rows"] == want["rows"] and len(want["rows"]) >= 1
    assert len(want["report"]) > 50 and got["report"] == want["report"]     # the release report, text for text


def _maxent_outcome(engine: str, tmp_path) -> dict:
    policy = {"source": _source(engine, "hospital"), "quasi_identifiers": HOSPITAL_QIS, "sensitive": ["condition"],
              "privacy": {"k": 4}, "utility": "height", "release": {"name": "hosp_me"}}
    pol = load_policy(policy, base_dir=tmp_path)
    db = str(tmp_path / "me.duckdb") if engine == "duckdb" else None
    rel = bucketize_policy(pol, 3, "hb", db=db)
    out = {"bucketized": {k: v for k, v in rel.as_dict().items() if k not in ("seconds",)}}
    know = Knowledge([Rules(3, 3, 1)])
    with open_release(pol, buckets="hb", db=db) as (backend, release):
        me = MaxEnt(backend, release)
        r = me.solve(know)
        qit = backend.fetchall("select_all.sql", relation="hb_qit")
        st = backend.fetchall("select_all.sql", relation="hb_st")
        out["tables"] = (collections.Counter(tuple(str(v) for v in row) for row in qit),
                         collections.Counter(tuple(str(v) for v in row) for row in st))
        out["rules"] = [x.describe() for x in r.rules]
        out["accuracy"] = me.accuracy(r)
        out["risk"] = me.risk(r)
        out["x"] = sorted(r.x.tolist())
        outputs = me.write(r, "hb_me")
        out["written"] = [(o["name"], o["rows"]) for o in outputs]
    with open_release(pol, db=db) as (backend, release):         # the generalized release, each block a bucket
        me = MaxEnt(backend, release)
        r = me.solve(know)
        out["generalized"] = {"accuracy": me.accuracy(r), "risk": me.risk(r), "rules": [x.describe() for x in r.rules],
                              "levels": dict(release.levels)}
    return out


@pytest.fixture(scope="module")
def duckdb_maxent(tmp_path_factory):
    return _maxent_outcome("duckdb", tmp_path_factory.mktemp("me"))


def _close(got, want):
    if isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            _close(got[k], want[k])
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-7, abs=1e-9)
    else:
        assert got == want


@pytest.mark.parametrize("engine", ["postgres", "spark"])
def test_bucketize_and_maxent_equal_duckdb(request, engine, duckdb_maxent, tmp_path):
    _engine(request, engine)
    got, want = _maxent_outcome(engine, tmp_path), duckdb_maxent
    assert got["bucketized"]["buckets"] == want["bucketized"]["buckets"] == 3
    assert got["tables"] == want["tables"]              # the same seeded buckets, row for row
    assert got["rules"] == want["rules"] and len(want["rules"]) >= 3
    _close(got["accuracy"], want["accuracy"])
    _close(got["risk"], want["risk"])
    assert got["x"] == pytest.approx(want["x"], rel=1e-6, abs=1e-9)
    assert got["written"] == want["written"]
    _close(got["generalized"], want["generalized"])
