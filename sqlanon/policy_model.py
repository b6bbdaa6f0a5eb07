"""The policy's shape as typed pydantic v2 models: the one description of its keys (docs/DESIGN.md
section 3.1), from which both the JSON Schema editors use (`sqlanon schema`, docs/policy.schema.json) and
the key check of `sqlanon.policy.load_policy` are derived, so the two cannot drift.

Every model forbids keys it does not name; `unknown_key_error` turns a refused key into one line with the
closest valid key (difflib), e.g. ``policy field 'quasi_identifier': unknown key; did you mean
'quasi_identifiers'?``. What the shape cannot say (a file exists, a value occurs in the data, l is at most
the number of sensitive values) stays with the code that has that knowledge (`sqlanon.policy`,
`sqlanon.hierarchy`, `sqlanon.models.criteria_from_policy`).

Imported lazily: `sqlanon schema` and `load_policy` import it, `import sqlanon.cli` does not.
"""
from __future__ import annotations

import difflib
import json
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from .errors import PolicyError

SCHEMA_ID = "https://sqlanon.invalid/policy.schema.json"
HIERARCHY_KINDS = ("intervals", "round", "mask", "dates", "suppress")   # anything else: a taxonomy CSV file
ROUND_LEVELS = 18      # as sqlanon.hierarchy.ROUND_LEVELS (`round` drops up to 17 digits)


class Strict(BaseModel):
    """A mapping of the policy: unknown keys are refused (a misspelled key must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


Number = Annotated[float, Field(allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1)]
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Scalar = Union[str, int, float, bool]


# ------------------------------------------------------------------------------------------------
# source, one model per engine

class EnvRef(Strict):
    env: EnvName = Field(description="Environment variable whose value is used at connect time (never written "
                         "into the manifest).", examples=["SPARK_S3_SECRET"])


class DuckDBSource(Strict):
    """DuckDB (embedded, the default engine): a table of a database file, a CSV or Parquet file, or a query."""

    engine: Literal["duckdb"] = Field("duckdb", description="The engine holding the rows: duckdb (default).",
                                     examples=["duckdb"])
    database: str | None = Field(None, description="DuckDB database file holding `table` (or read by `query`), "
                                 "relative to the policy's folder.", examples=["data.duckdb"])
    table: Name | None = Field(None, description="Table to anonymize: table, schema.table or catalog.schema.table "
                               "(double-quote a part holding a dot). With csv/parquet/query: the name shown.",
                               examples=["adult", "sales.orders"])
    csv: str | None = Field(None, description="CSV file (or folder) to read, relative to the policy's folder; "
                            "the release goes into the database given by --db.", examples=["adult.csv"])
    parquet: str | None = Field(None, description="Parquet file (or partitioned folder) to read.",
                                examples=["adult.parquet"])
    query: Name | None = Field(None, description="One SELECT whose rows are anonymized.",
                               examples=["SELECT * FROM adult WHERE age >= 18"])


class PostgresSource(Strict):
    """PostgreSQL: connection details come from environment variables, never from the policy."""

    engine: Literal["postgres"] = Field(description="The engine holding the rows.", examples=["postgres"])
    dsn_env: EnvName = Field(description="Environment variable holding the connection string or URL.",
                             examples=["SQLANON_PG_DSN"])
    password_env: EnvName | None = Field(None, description="Environment variable holding the password "
                                         "(optional; PGPASSWORD also works).", examples=["SQLANON_PG_PASSWORD"])
    settings: dict[str, Scalar] = Field(default_factory=dict, description="Session settings (set_config), "
                                        "name -> text, number or boolean.", examples=[{"work_mem": "256MB"}])
    table: Name | None = Field(None, description="Table to anonymize: table or schema.table.",
                               examples=["public.adult"])
    query: Name | None = Field(None, description="One SELECT in PostgreSQL's dialect.",
                               examples=["SELECT * FROM adult"])


class SparkSource(Strict):
    """Spark: a table of the session catalog, a CSV / Parquet location (path or URL) or a query."""

    engine: Literal["spark"] = Field(description="The engine holding the rows.", examples=["spark"])
    master: Name | None = Field(None, description="Spark master URL.", examples=["local[2]", "spark://host:7077"])
    conf: dict[str, Union[Scalar, EnvRef]] = Field(
        default_factory=dict, description="Session configuration, name -> value; a secret-looking setting must "
        "be {env: VARIABLE}.", examples=[{"spark.sql.shuffle.partitions": 8}])
    table: Name | None = Field(None, description="Table to anonymize: table or database.table.",
                               examples=["adult"])
    csv: str | None = Field(None, description="CSV file, folder or URL (hdfs://, s3a://, ...).",
                            examples=["s3a://bucket/adult.csv"])
    parquet: str | None = Field(None, description="Parquet file, folder or URL.", examples=["adult.parquet"])
    query: Name | None = Field(None, description="One SELECT in Spark SQL.", examples=["SELECT * FROM adult"])


def _engine(value: Any) -> str:
    engine = value.get("engine", "duckdb") if isinstance(value, dict) else getattr(value, "engine", "duckdb")
    return engine if engine in ("duckdb", "postgres", "spark") else "duckdb"


Source = Annotated[Union[Annotated[DuckDBSource, Tag("duckdb")], Annotated[PostgresSource, Tag("postgres")],
                         Annotated[SparkSource, Tag("spark")]], Discriminator(_engine)]


# ------------------------------------------------------------------------------------------------
# hierarchies, one model per kind

class TaxonomyHierarchy(Strict):
    """A taxonomy from a CSV file: one column per level (base values first), or a child,parent edge table."""

    hierarchy: Name = Field(description="CSV file relative to the policy's folder.",
                            examples=["hierarchies/education.csv"],
                            json_schema_extra={"not": {"enum": list(HIERARCHY_KINDS)}})
    encoding: Name | None = Field(None, description="Text encoding of the CSV file (default utf-8).",
                                  examples=["latin-1"])


class IntervalsHierarchy(Strict):
    """Numbers binned by nested widths: [5, 10, 20] gives [15, 20) -> [10, 20) -> [0, 20) -> *."""

    hierarchy: Literal["intervals"] = Field(description="The hierarchy kind.", examples=["intervals"])
    widths: list[Annotated[Number, Field(gt=0)]] = Field(
        min_length=1, description="Interval widths, one per level; each a multiple of the previous one.",
        examples=[[5, 10, 20]])
    origin: Number = Field(0, description="Where the intervals start (default 0).", examples=[0, 17])


class RoundHierarchy(Strict):
    """Numbers with one more digit rounded away per level."""

    hierarchy: Literal["round"] = Field(description="The hierarchy kind.", examples=["round"])
    levels: int = Field(ge=1, le=ROUND_LEVELS, description="Digits to round away (levels of the hierarchy).",
                        examples=[3])


class MaskHierarchy(Strict):
    """Strings with one more trailing character replaced by '*' per level (zip codes)."""

    hierarchy: Literal["mask"] = Field(description="The hierarchy kind.", examples=["mask"])
    levels: int | None = Field(None, ge=1, description="Characters to mask at most (default: all of them).",
                               examples=[3])


class DatesHierarchy(Strict):
    """Dates: day -> month -> year -> *."""

    hierarchy: Literal["dates"] = Field(description="The hierarchy kind.", examples=["dates"])


class SuppressHierarchy(Strict):
    """One level: every value becomes '*'."""

    hierarchy: Literal["suppress"] = Field(description="The hierarchy kind.", examples=["suppress"])


def _hierarchy_kind(value: Any) -> str:
    kind = value.get("hierarchy") if isinstance(value, dict) else getattr(value, "hierarchy", None)
    return kind if kind in HIERARCHY_KINDS else "taxonomy"


Hierarchy = Annotated[Union[
    Annotated[TaxonomyHierarchy, Tag("taxonomy")], Annotated[IntervalsHierarchy, Tag("intervals")],
    Annotated[RoundHierarchy, Tag("round")], Annotated[MaskHierarchy, Tag("mask")],
    Annotated[DatesHierarchy, Tag("dates")], Annotated[SuppressHierarchy, Tag("suppress")]],
    Discriminator(_hierarchy_kind)]

QuasiIdentifiers = Union[
    Annotated[dict[Name, Hierarchy], Field(min_length=1, description="Column -> its hierarchy, in policy order.")],
    Annotated[list[Annotated[dict[Name, Hierarchy], Field(min_length=1, max_length=1)]],
              Field(min_length=1, description="A list of {column: hierarchy}.")],
]

Sensitive = Union[
    Annotated[Name, Field(description="One sensitive column.")],
    Annotated[list[Union[Name, Annotated[dict[Name, Hierarchy], Field(min_length=1, max_length=1)]]],
              Field(min_length=1, description="Sensitive columns, or {column: {hierarchy: ...}}.")],
    Annotated[dict[Name, Union[Hierarchy, None]],
              Field(min_length=1, description="Column -> its hierarchy (for the hierarchical EMD) or null.")],
]


# ------------------------------------------------------------------------------------------------
# privacy models



def _attribute() -> Any:
    return Field(None, description="The sensitive attribute this model protects, or 'all' (default: the first "
                 "sensitive attribute).", examples=["occupation", "all"])


class NoNegativeDisclosure(Strict):
    c2: Number = Field(gt=0, lt=100, description="Least percentage of every block each value in `values` must "
                       "hold (npd-recursive (c1,c2,l)-diversity).", examples=[5])
    values: list[Scalar] = Field(min_length=1, description="Sensitive values whose negative disclosure is not "
                                 "allowed.", examples=[["HIV"]])


class LDiversity(Strict):
    """l-diversity (Machanavajjhala et al., TKDD 2007): distinct, entropy or recursive (c,l)."""

    variant: Literal["distinct", "entropy", "recursive"] = Field(
        "distinct", description="Which l-diversity.", examples=["recursive"])
    l: Number = Field(ge=1, description="The l: distinct values per block (an integer for distinct and "
                      "recursive), exp of the least block entropy for entropy.", examples=[3])
    c: Number | None = Field(None, gt=0, description="recursive only: r1 < c (r_l + ... + r_m).", examples=[3])
    dont_care: list[Scalar] = Field(default_factory=list, description="entropy and recursive: values whose "
                                    "disclosure does not matter (adjusted entropy, pd-recursive).",
                                    examples=[["Healthy"]])
    no_negative_disclosure: NoNegativeDisclosure | None = Field(
        None, description="recursive only: values that must not be ruled out of any block.",
        examples=[{"c2": 5, "values": ["HIV"]}])
    attribute: Name | None = _attribute()


class TCloseness(Strict):
    """t-closeness with the Earth Mover's Distance (Li, Li, Venkatasubramanian, ICDE 2007)."""

    t: Number = Field(ge=0, le=1, description="Largest EMD of a block's sensitive distribution to the table's.",
                      examples=[0.2])
    distance: Literal["equal", "ordered", "hierarchical"] = Field(
        "equal", description="Ground distance: equal, ordered (numeric attribute) or hierarchical (needs a "
        "hierarchy under sensitive).", examples=["hierarchical"])
    attribute: Name | None = _attribute()


class BetaLikeness(Strict):
    """beta-likeness (Cao and Karras, VLDB 2012)."""

    beta: Number = Field(gt=0, description="Largest relative gain (q - p) / p of a value's frequency in a block "
                         "over the table's.", examples=[1.0])
    variant: Literal["basic", "enhanced"] = Field("basic", description="basic or enhanced beta-likeness.",
                                                   examples=["enhanced"])
    attribute: Name | None = _attribute()


class DeltaDisclosure(Strict):
    """delta-disclosure privacy (Brickell and Shmatikov, KDD 2008)."""

    delta: Number = Field(gt=0, description="Bound on |ln(block frequency / table frequency)|.", examples=[1.5])
    attribute: Name | None = _attribute()


class RecordsAtRisk(Strict):
    threshold: Number = Field(0.2, gt=0, le=1, description="A record is at risk when 1 / its class size is above "
                              "this.", examples=[0.2])
    max_fraction: Number = Field(ge=0, lt=1, description="Largest fraction of released records at risk.",
                                 examples=[0.01])


class KMap(Strict):
    """k-map: every released class matches at least k people of the population, estimated from a sampling
    fraction or counted in a population table."""

    k: int = Field(ge=1, description="Least number of people of the population a class must match.",
                   examples=[10])
    sampling_fraction: Number | None = Field(None, gt=0, le=1, description="The table's rows over the "
                                             "population's (estimator).", examples=[0.01])
    significance: Number | None = Field(None, gt=0, lt=1, description="Significance of the estimate (default "
                                        "0.01).", examples=[0.01])
    estimator: Literal["poisson", "zero_truncated_poisson"] | None = Field(
        None, description="Estimator of the population's class sizes (default poisson).", examples=["poisson"])
    population: Name | None = Field(None, description="Population table (same quasi-identifier columns, same "
                                    "database) instead of an estimator.", examples=["census"])


class DeltaPresence(Strict):
    """delta-presence (Nergiz, Atzori, Clifton, SIGMOD 2007) against a population table."""

    delta_min: Number = Field(0.0, ge=0, le=1, description="Least probability that a person is in the table.",
                              examples=[0.0])
    delta_max: Number = Field(1.0, ge=0, le=1, description="Largest probability that a person is in the table.",
                              examples=[0.5])
    population: Name = Field(description="Population table the source is a subset of.", examples=["census"])


class Privacy(Strict):
    """The privacy models a release must satisfy (at least one)."""

    k: int | None = Field(None, ge=1, description="k-anonymity: every q*-block holds at least k rows.",
                          examples=[5])
    l_diversity: LDiversity | None = Field(None, description="l-diversity of the sensitive attribute(s).",
                                           examples=[{"variant": "recursive", "l": 3, "c": 3}])
    t_closeness: TCloseness | None = Field(None, description="t-closeness of the sensitive attribute(s).",
                                           examples=[{"t": 0.2, "distance": "equal"}])
    beta_likeness: BetaLikeness | None = Field(None, description="beta-likeness.",
                                               examples=[{"beta": 1.0, "variant": "enhanced"}])
    delta_disclosure: DeltaDisclosure | None = Field(None, description="delta-disclosure privacy.",
                                                     examples=[{"delta": 1.5}])
    average_risk: Number | None = Field(None, gt=0, le=1, description="Largest average re-identification risk "
                                        "(classes / rows of the release).", examples=[0.05])
    records_at_risk: RecordsAtRisk | None = Field(None, description="Largest fraction of records at risk.",
                                                  examples=[{"threshold": 0.2, "max_fraction": 0.01}])
    k_map: KMap | None = Field(None, description="k-map.", examples=[{"k": 10, "sampling_fraction": 0.01}])
    delta_presence: DeltaPresence | None = Field(None, description="delta-presence.",
                                                 examples=[{"delta_max": 0.5, "population": "census"}])
    max_suppression: Number | None = Field(None, ge=0, lt=1, description="Fraction of the rows that may be "
                                           "suppressed (default 0).", examples=[0.0, 0.02])


# ------------------------------------------------------------------------------------------------
# release and search

class Marginal(Strict):
    attributes: Union[dict[Name, Annotated[int, Field(ge=0)]], list[Name]] = Field(
        description="Columns -> generalization level, or a list of columns (level 0).",
        examples=[{"age": 2, "sex": 0}, ["sex", "race"]])
    name: Name | None = Field(None, description="Name of the marginal's table.", examples=["adult_age_sex"])


class Release(Strict):
    """What is released and how. Extend by adding a field here (and its check in sqlanon.policy)."""

    name: Name | None = Field(None, description="Release table or view (default <table>_release beside the "
                              "source), possibly schema-qualified.", examples=["adult_release"])
    materialize: Literal["table", "view", "none"] = Field(
        "table", description="table, view or none (export only).", examples=["view"])
    keep: list[Name] = Field(default_factory=list, description="Source columns released unchanged (not "
                             "quasi-identifiers).", examples=[["id"]])
    export: Union[str, list[str]] = Field(default_factory=list, description=".parquet / .csv files the release "
                                          "is also written to.", examples=[["adult_release.parquet"]])
    marginals: list[Marginal] = Field(default_factory=list, description="Anonymized marginals released beside "
                                      "the table.", examples=[[{"attributes": {"age": 1, "sex": 0}}]])
    replace: bool = Field(True, description="false: refuse to replace even this release's own earlier output.",
                          examples=[False])


class Search(Strict):
    """How the lattice is searched."""

    max_nodes: int = Field(250_000, ge=1, description="Lattices up to this many nodes get the exact search; "
                           "larger ones the heuristic search.", examples=[250000])
    time_limit_s: Number = Field(60.0, gt=0, le=86_400, description="The heuristic search's time budget in "
                                 "seconds.", examples=[60])


class PolicyModel(Strict):
    """An sqlanon policy: what to anonymize, how, and what to release."""

    model_config = ConfigDict(extra="forbid", title="sqlanon policy")

    source: Source = Field(description="Where the rows are and which engine holds them.",
                           examples=[{"database": "data.duckdb", "table": "adult"}, {"csv": "adult.csv"}])
    quasi_identifiers: QuasiIdentifiers = Field(
        description="Columns an attacker may know, each with its generalization hierarchy.",
        examples=[{"age": {"hierarchy": "intervals", "widths": [5, 10, 20]}, "sex": {"hierarchy": "suppress"}}])
    sensitive: Sensitive = Field(description="Sensitive columns (released unchanged, protected by the privacy "
                                 "models).", examples=[["occupation"]])
    privacy: Privacy = Field(description="The privacy models (at least one).", examples=[{"k": 5}])
    utility: Literal["height", "avg_class_size", "discernibility", "kl_divergence"] = Field(
        "discernibility", description="The metric that chooses among the nodes satisfying the policy.",
        examples=["kl_divergence"])
    release: Release = Field(default_factory=Release, description="What is released.",
                             examples=[{"name": "adult_release", "materialize": "table"}])
    entity_key: Name | None = Field(None, description="Column identifying a person: classes count persons, not "
                                    "rows.", examples=["person_id"])
    search: Search = Field(default_factory=Search, description="Exact or heuristic search of the lattice.",
                           examples=[{"max_nodes": 250000, "time_limit_s": 60}])


def json_schema() -> dict:
    """The policy's JSON Schema (draft 2020-12), with a description and examples for every key."""
    schema = PolicyModel.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
