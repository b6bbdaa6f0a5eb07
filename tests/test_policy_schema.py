"""The policy's JSON Schema (`sqlanon schema`, docs/policy.schema.json): generated from the pydantic models
that validate policies, committed unchanged, valid draft 2020-12, with a description and an example for
every key; every shipped and documented policy passes it and malformed ones fail at the named key. And
`load_policy` agrees with it: what the schema refuses is refused on load, with one line naming the field,
the value and the fix (the closest valid key for a misspelled one)."""
from __future__ import annotations

import copy
import json
import re

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from sqlanon.cli import main
from sqlanon.errors import PolicyError
from sqlanon.policy import load_policy
from sqlanon.policy_model import json_schema, json_schema_text

from conftest import DATASETS, ROOT

SCHEMA = json_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
TOP_KEYS = set(SCHEMA["properties"])


def _documented_blocks() -> list[tuple[str, dict]]:
    """The YAML blocks of README.md and docs/DESIGN.md whose keys are all policy keys (a whole policy or a
    fragment such as `privacy:` alone)."""
    out = []
    for name in ("README.md", "docs/DESIGN.md"):
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", (ROOT / name).read_text(), re.DOTALL)):
            data = yaml.safe_load(block)
            if isinstance(data, dict) and data and set(data) <= TOP_KEYS:
                out.append((f"{name}#{i}", data))
    return out


DOCUMENTED = _documented_blocks()


def test_committed_schema_is_the_generated_one():
    assert (ROOT / "docs" / "policy.schema.json").read_text(encoding="utf-8") == json_schema_text()


def test_cli_prints_the_schema(tmp_path):
    result = CliRunner().invoke(main, ["schema"], catch_exceptions=False)
    assert result.exit_code == 0 and json.loads(result.output) == SCHEMA
    out = tmp_path / "policy.schema.json"
    assert CliRunner().invoke(main, ["schema", "--out", str(out)]).exit_code == 0
    assert json.loads(out.read_text()) == SCHEMA
    # never overwrites a file that is not JSON (a policy given by mistake)
    policy = tmp_path / "p.yaml"
    policy.write_text("source: {table: t}\n")
    result = CliRunner().invoke(main, ["schema", "--out", str(policy)])
    assert result.exit_code == 2 and policy.read_text() == "source: {table: t}\n"


def test_schema_is_draft_2020_12_and_names_every_top_level_key():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {"source", "quasi_identifiers", "sensitive", "privacy", "utility", "release",
                        "entity_key", "search"} == TOP_KEYS
    assert set(SCHEMA["required"]) == {"source", "quasi_identifiers", "sensitive", "privacy"}
    assert SCHEMA["additionalProperties"] is False
    defs = SCHEMA["$defs"]
    assert set(defs["Privacy"]["properties"]) == {
        "k", "l_diversity", "t_closeness", "beta_likeness", "delta_disclosure", "average_risk",
        "records_at_risk", "k_map", "delta_presence", "max_suppression"}
    assert set(defs["DuckDBSource"]["properties"]) == {"engine", "database", "table", "csv", "parquet", "query",
                                                        "memory_limit", "temp_directory", "threads"}
    assert set(defs["PostgresSource"]["properties"]) == {"engine", "dsn_env", "password_env", "settings",
                                                         "table", "query"}
    assert set(defs["SparkSource"]["properties"]) == {"engine", "master", "conf", "table", "parquet", "csv",
                                                      "query"}


def _properties(node, path=""):
    if isinstance(node, dict):
        for key, sub in (node.get("properties") or {}).items():
            yield f"{path}.{key}", sub
        for key, sub in node.items():
            yield from _properties(sub, f"{path}/{key}")
    elif isinstance(node, list):
        for sub in node:
            yield from _properties(sub, path)


def test_every_key_has_a_description_and_examples_that_pass_its_own_schema():
    props = list(_properties(SCHEMA))
    assert len(props) > 60
    for path, sub in props:
        assert sub.get("description"), path
        assert sub.get("examples"), path
        own = {k: v for k, v in sub.items() if k != "examples"}
        validator = jsonschema.Draft202012Validator({"$defs": SCHEMA["$defs"], **own})
        for example in sub["examples"]:
            assert not list(validator.iter_errors(example)), (path, example)


@pytest.mark.parametrize("path", sorted(DATASETS.glob("**/*.yaml")), ids=lambda p: p.name)
def test_shipped_policies_pass(path):
    errors = list(VALIDATOR.iter_errors(yaml.safe_load(path.read_text())))
    assert not errors, [e.message for e in errors]


def test_documented_policies_pass():
    names = [n for n, _ in DOCUMENTED]
    assert any(n.startswith("README.md") for n in names) and any(n.startswith("docs/DESIGN.md") for n in names)
    fragment = copy.deepcopy(SCHEMA)
    fragment.pop("required")          # a README block showing only `privacy:` is a fragment of a policy
    validator = jsonschema.Draft202012Validator(fragment)
    for name, data in DOCUMENTED:
        errors = list(validator.iter_errors(data))
        assert not errors, (name, [e.message for e in errors])


BASE = {"source": {"database": "data.duckdb", "table": "adult"},
        "quasi_identifiers": {"age": {"hierarchy": "intervals", "widths": [5, 10]}},
        "sensitive": ["occupation"], "privacy": {"k": 5}}


def _with(path: str, value):
    policy = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = policy
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    return policy


VALID = [
    ("privacy.l_diversity", {"variant": "recursive", "l": 3, "c": 3, "dont_care": ["x"],
                             "no_negative_disclosure": {"c2": 5, "values": ["HIV"]}, "attribute": "all"}),
    ("privacy.t_closeness", {"t": 0.2, "distance": "hierarchical", "attribute": "occupation"}),
    ("privacy.k_map", {"k": 10, "population": "census"}),
    ("privacy.k_map", {"k": 10, "sampling_fraction": 0.01, "estimator": "zero_truncated_poisson"}),
    ("privacy.delta_presence", {"delta_min": 0.1, "delta_max": 0.5, "population": "census"}),
    ("privacy.records_at_risk", {"max_fraction": 0.01}),
    ("privacy.average_risk", 0.05),
    ("privacy.beta_likeness", {"beta": 1, "variant": "enhanced"}),
    ("privacy.delta_disclosure", {"delta": 1.5}),
    ("source", {"engine": "postgres", "dsn_env": "PG_DSN", "password_env": "PG_PW", "table": "public.t",
                "settings": {"work_mem": "64MB"}}),
    ("source", {"engine": "spark", "master": "local[2]", "parquet": "s3a://b/t.parquet",
                "conf": {"spark.hadoop.fs.s3a.secret.key": {"env": "S3_SECRET"}}}),
    ("source", {"csv": "t.csv", "table": "t"}),
    ("quasi_identifiers", [{"zip": {"hierarchy": "mask"}}, {"edu": {"hierarchy": "edu.csv", "encoding": "latin-1"}}]),
    ("quasi_identifiers", {"price": {"hierarchy": "round", "levels": 4}, "d": {"hierarchy": "dates"}}),
    ("sensitive", {"occupation": {"hierarchy": "occ.csv"}, "income": None}),
    ("sensitive", "occupation"),
    ("release", {"name": "s.r", "materialize": "view", "keep": ["id"], "export": "r.parquet",
                 "marginals": [{"attributes": ["sex"]}, {"attributes": {"age": 1}, "name": "m"}], "replace": False}),
    ("search", {"max_nodes": 10, "time_limit_s": 0.5}),
    ("entity_key", "person_id"),
    ("utility", "kl_divergence"),
]


@pytest.mark.parametrize("path,value", VALID, ids=[f"{p}-{i}" for i, (p, _) in enumerate(VALID)])
def test_valid_variants_pass(path, value):
    errors = list(VALIDATOR.iter_errors(_with(path, value)))
    assert not errors, [e.message for e in errors]


# (field set, value, a word of the validator's message): each breaks exactly the named rule
INVALID = [
    ("quasi_identifier", {"age": {"hierarchy": "suppress"}}, "quasi_identifier"),
    ("privacy.k", 0, "minimum"),
    ("privacy.k", "five", "integer"),
    ("privacy.kk", 5, "kk"),
    ("privacy.l_diversity", {"variant": "recursiv", "l": 3}, "recursiv"),
    ("privacy.l_diversity", {"variant": "entropy"}, "'l' is a required property"),
    ("privacy.l_diversity", {"l": 3, "no_negative_disclosure": {"c2": 120, "values": ["x"]}}, "maximum"),
    ("privacy.t_closeness", {"t": 1.5}, "maximum"),
    ("privacy.t_closeness", {"t": 0.2, "distance": "manhattan"}, "manhattan"),
    ("privacy.average_risk", 0, "minimum"),
    ("privacy.records_at_risk", {"threshold": 0.2}, "max_fraction"),
    ("privacy.k_map", {"k": 10, "estimator": "normal"}, "normal"),
    ("privacy.delta_presence", {"delta_max": 0.5}, "population"),
    ("privacy.max_suppression", 1.0, "maximum"),
    ("source", {"engine": "postgres", "table": "t"}, "dsn_env"),
    ("source", {"engine": "postgres", "dsn_env": "X", "password": "secret", "table": "t"}, "password"),
    ("source", {"engine": "oracle", "table": "t"}, "oracle"),
    ("source", {"engine": "duckdb", "master": "local", "table": "t"}, "master"),
    ("quasi_identifiers", {"age": {"hierarchy": "intervals"}}, "widths"),
    ("quasi_identifiers", {"age": {"hierarchy": "intervals", "widths": [0, 5]}}, "minimum"),
    ("quasi_identifiers", {"age": {"hierarchy": "round", "levels": 19}}, "maximum"),
    ("quasi_identifiers", {"age": {"hierarchy": "suppress", "widths": [5]}}, "widths"),
    ("quasi_identifiers", {"age": {"hierarchy": "dates", "encoding": "latin-1"}}, "encoding"),
    ("quasi_identifiers", {}, "non-empty"),
    ("sensitive", [], "non-empty"),
    ("utility", "speed", "speed"),
    ("release", {"materialize": "file"}, "file"),
    ("release", {"materialise": "view"}, "materialise"),
    ("release", {"marginals": [{"attributes": {"age": -1}}]}, "minimum"),
    ("search", {"max_nodes": 0}, "minimum"),
    ("search", {"time_limit_s": 100000}, "maximum"),
]


@pytest.mark.parametrize("path,value,word", INVALID, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(INVALID)])
def test_invalid_policies_fail(path, value, word):
    errors = list(VALIDATOR.iter_errors(_with(path, value)))
    assert errors
    text = " ".join(_messages(errors))
    assert word in text, text


def _messages(errors) -> list[str]:
    """The messages of the errors and of the alternatives' errors under anyOf / oneOf, all the way down."""
    out = []
    for e in errors:
        out.append(e.message)
        out.extend(_messages(e.context or []))
    return out


# load_policy and the schema agree: a policy the schema refuses is refused when loaded (one PolicyError
# naming the field), one it accepts loads (files aside: the loader also checks that they exist)
LOADABLE = {**BASE, "source": {"csv": str(DATASETS / "hospital" / "hospital.csv")}}


def _loadable(path: str, value):
    policy = _with(path, value)
    if path != "source":
        policy["source"] = LOADABLE["source"]
    return policy


@pytest.mark.parametrize("path,value,word", INVALID, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(INVALID)])
def test_what_the_schema_refuses_load_policy_refuses(path, value, word):
    with pytest.raises(PolicyError) as err:
        load_policy(_loadable(path, value))
    assert err.value.field.startswith(path.split(".")[0]) and "\n" not in str(err.value)


@pytest.mark.parametrize("path,value", [(p, v) for p, v in VALID if not (p == "source" and "csv" in v)],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_what_the_schema_accepts_load_policy_accepts(path, value):
    assert load_policy(_loadable(path, value)).model is not None


@pytest.mark.parametrize("path,value,field,message", [
    ("quasi_identifier", {"age": {"hierarchy": "suppress"}}, "quasi_identifier",
     "unknown key; did you mean 'quasi_identifiers'? the policy keys are source, quasi_identifiers,"),
    ("privacy.l_diversity", {"l": 2, "varient": "entropy"}, "privacy.l_diversity.varient",
     "did you mean 'variant'?"),
    ("privacy.t_closness", {"t": 0.2}, "privacy.t_closness", "did you mean 't_closeness'?"),
    ("release.materialise", "view", "release.materialise", "did you mean 'materialize'?"),
    ("search.max_node", 5, "search.max_node", "did you mean 'max_nodes'?"),
    ("quasi_identifiers", {"age": {"hierarchy": "intervals", "widhts": [5]}}, "quasi_identifiers.age.widhts",
     "did you mean 'widths'? the keys of quasi_identifiers.age are hierarchy, widths, origin"),
    ("source", {"csv": str(DATASETS / "hospital" / "hospital.csv"), "tabel": "t"}, "source.tabel",
     "did you mean 'table'?"),
    ("privacy.k", 0, "privacy.k", "must be an integer >= 1; got 0"),
    ("privacy.l_diversity", {"l": 2, "variant": "recursive", "c": -1}, "privacy.l_diversity.c",
     "must be a positive number; got -1"),
    ("privacy.t_closeness", {"t": 1.5}, "privacy.t_closeness.t", "must be a number from 0 to 1; got 1.5"),
    ("quasi_identifiers", [{"zip": {"hierarchy": "mask", "levels": 0}}], "quasi_identifiers[0].zip.levels",
     "must be an integer >= 1; got 0"),
    ("sensitive", {"condition": {"hierarchy": "round"}}, "sensitive.condition.levels",
     "missing; give levels (digits to round away"),
    ("release.replace", "yes", "release.replace", "must be true or false"),
    ("utility", "kl", "utility", "must be one of height, avg_class_size, discernibility, kl_divergence; got 'kl'"),
])
def test_errors_name_the_field_the_value_and_the_fix(path, value, field, message):
    with pytest.raises(PolicyError) as err:
        load_policy(_loadable(path, value))
    assert err.value.field == field
    assert message in str(err.value), str(err.value)
