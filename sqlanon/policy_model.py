"""The policy's shape as typed pydantic v2 models: the one description of its keys (docs/DESIGN.md
section 3.1), from which both the JSON Schema editors use (`sqlanon schema`, docs/policy.schema.json) and
the validation of `sqlanon.policy.load_policy` come, so the two cannot drift.

`validate` checks a policy (or a section) against its model; the first error becomes one `PolicyError`
naming the dotted field, the value and what to write (the range or the choices, read from the schema).
Every model forbids keys it does not name; `unknown_key_error` names the closest valid key (difflib), e.g.
``policy field 'quasi_identifier': unknown key; did you mean 'quasi_identifiers'?``. Rules between keys
of one section (c only with recursive l-diversity, k-map with an estimator or a population) are model
validators that raise `PolicyError` themselves. What the shape cannot say (a file exists, a value occurs
in the data, l is at most the number of sensitive values) stays with the code that has that knowledge
(`sqlanon.policy`, `sqlanon.hierarchy`, `sqlanon.models.criteria_from_policy`).

Imported by `sqlanon.models` and `sqlanon.policy` (pydantic: about 0.1 s), not by `import sqlanon.cli`.
"""
from __future__ import annotations

import codecs
import difflib
import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from .errors import PolicyError
from .files import is_text_encoding

SCHEMA_ID = "https://sqlanon.invalid/policy.schema.json"
HIERARCHY_KINDS = ("intervals", "round", "mask", "dates", "suppress")   # anything else: a taxonomy CSV file
ROUND_LEVELS = 18      # as sqlanon.hierarchy.ROUND_LEVELS (`round` drops up to 17 digits)


class Strict(BaseModel):
    """A mapping of the policy: unknown keys are refused (a misspelled key must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        """A key written with no value (`keep:` or `dont_care: null`) takes its default, as it always did;
        a required one is then reported missing."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None or k not in cls.model_fields}
        return data




def _whole(value: Any) -> Any:
    """3.0 is the integer 3 (YAML and JSON writers may give whole numbers as floats); 2.5 stays refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Number = Annotated[StrictFloat, Field(allow_inf_nan=False)]       # int or float, never bool or text
PositiveInteger = Annotated[StrictInt, Field(ge=1), BeforeValidator(_whole)]   # the bound inside: in the schema
Name = Annotated[StrictStr, Field(min_length=1, pattern=r"\S")]
Key = Annotated[StrictStr, Field(min_length=1)]        # a column as a mapping's key (additionalProperties)
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
# DuckDB's memory_limit: a size with a unit, or a percentage of the machine's memory
MEMORY_PATTERN = r"^\s*[0-9]+(\.[0-9]+)?\s*([KMGT]i?B|[kmgt]i?b|%)\s*$"
MemorySize = Annotated[StrictStr, Field(pattern=MEMORY_PATTERN)]
Scalar = StrictStr | StrictInt | StrictFloat | Annotated[bool, Field(strict=True)]


# ------------------------------------------------------------------------------------------------
# source, one model per engine

ENGINES = ("duckdb", "postgres", "spark")
# keys that would put connection details (secrets) into the policy, which is copied into the manifest
CONNECTION_KEYS = {"dsn", "url", "uri", "password", "user", "host", "port", "dbname", "connection"}
SECRET_WORDS = ("password", "secret", "token", "credential", "access.key", "accesskey", "private")


def _one_source(src: Any, kinds: tuple[str, ...]) -> None:
    """A source reads one thing: a table, or exactly one of the file / query `kinds` its engine has."""
    given = [k for k in kinds if getattr(src, k, None) is not None]
    if len(given) > 1:
        raise PolicyError("source", f"give only one of {', '.join(kinds)}; got {', '.join(given)}")
    if not given and src.table is None:
        raise PolicyError("source.table", "missing; name the table to anonymize (or give "
                          + ", ".join(f"{k}:" for k in kinds[:-1]) + f" or {kinds[-1]}:)")

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
    memory_limit: MemorySize | None = Field(
        None, description="Memory DuckDB may use (its memory_limit): a size (KB, MB, GB, TB; KiB, MiB, GiB, TiB) or a "
        "percentage of the machine's memory. Past it DuckDB writes intermediate results to temp_directory "
        "instead of failing (default: DuckDB's, 80% of the memory).", examples=["4GB", "50%"])
    temp_directory: Name | None = Field(
        None, description="Folder where DuckDB spills what does not fit in memory_limit, relative to the "
        "policy's folder; created when missing (default: DuckDB's, `<database>.tmp` beside a database file, "
        "none for an in-memory database).", examples=["/tmp/sqlanon-spill", "spill"])
    threads: StrictInt | None = Field(None, ge=1, le=1024, description="Threads DuckDB may use (default: "
                                      "one per core).", examples=[2])

    @model_validator(mode="after")
    def _reads_one_thing(self) -> DuckDBSource:
        _one_source(self, ("csv", "parquet", "query"))
        kind = "csv" if self.csv is not None else "parquet" if self.parquet is not None else None
        if self.database is not None and kind:
            raise PolicyError("source.database", f"goes with table: or query: (the DuckDB file they read); a {kind} "
                              "source is read from its file: remove database:")
        return self


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

    @model_validator(mode="after")
    def _reads_one_thing(self) -> PostgresSource:
        _one_source(self, ("query",))
        return self


class SparkSource(Strict):
    """Spark: a table of the session catalog, a CSV / Parquet location (path or URL) or a query."""

    engine: Literal["spark"] = Field(description="The engine holding the rows.", examples=["spark"])
    master: Name | None = Field(None, description="Spark master URL.", examples=["local[2]", "spark://host:7077"])
    conf: dict[str, Scalar | EnvRef] = Field(
        default_factory=dict, description="Session configuration, name -> value; a secret-looking setting must "
        "be {env: VARIABLE}.", examples=[{"spark.sql.shuffle.partitions": 8}])
    table: Name | None = Field(None, description="Table to anonymize: table or database.table.",
                               examples=["adult"])
    csv: str | None = Field(None, description="CSV file, folder or URL (hdfs://, s3a://, ...).",
                            examples=["s3a://bucket/adult.csv"])
    parquet: str | None = Field(None, description="Parquet file, folder or URL.", examples=["adult.parquet"])
    query: Name | None = Field(None, description="One SELECT in Spark SQL.", examples=["SELECT * FROM adult"])

    @field_validator("conf")
    @classmethod
    def _no_secret_in_policy(cls, conf: dict[str, Any]) -> dict[str, Any]:
        for name, value in conf.items():
            if not isinstance(value, EnvRef) and any(w in name.lower() for w in SECRET_WORDS):
                raise PolicyError(f"source.conf.{name}", "looks like a secret, and the policy is copied into the "
                                  "manifest: give {env: VARIABLE} and put the value in that environment variable")
        return conf

    @model_validator(mode="after")
    def _reads_one_thing(self) -> SparkSource:
        _one_source(self, ("csv", "parquet", "query"))
        return self


SOURCE_MODELS: dict[str, type[Strict]] = {"duckdb": DuckDBSource, "postgres": PostgresSource, "spark": SparkSource}


def _engine(value: Any) -> str:
    engine = value.get("engine", "duckdb") if isinstance(value, dict) else getattr(value, "engine", "duckdb")
    return engine if engine in ENGINES else "duckdb"


def source_key_error(key: str, engine: str) -> PolicyError:
    """A key the source model of `engine` does not have: connection details get their own message (they
    belong in environment variables), a key of another engine says which."""
    if engine == "postgres" and key in CONNECTION_KEYS:
        return PolicyError("source." + key, "connection details do not go in the policy (it is copied into the "
                           "manifest): put the connection string in an environment variable and name it in "
                           "dsn_env (a password may also come from password_env or PGPASSWORD)")
    allowed = list(SOURCE_MODELS[engine].model_fields)
    others = [e for e in ENGINES if e != engine and key in SOURCE_MODELS[e].model_fields]
    hint = f" (that key is for engine {others[0]})" if others else ""
    return PolicyError("source." + key, f"unknown key for engine {engine}{hint}; {did_you_mean(key, allowed)}"
                       f"use {', '.join(allowed)}")


Source = Annotated[Annotated[DuckDBSource, Tag("duckdb")] | Annotated[PostgresSource, Tag("postgres")]
                   | Annotated[SparkSource, Tag("spark")], Discriminator(_engine)]


# ------------------------------------------------------------------------------------------------
# hierarchies, one model per kind

class TaxonomyHierarchy(Strict):
    """A taxonomy from a CSV file: one column per level (base values first), or a child,parent edge table."""

    hierarchy: Name = Field(description="CSV file relative to the policy's folder.",
                            examples=["hierarchies/education.csv"],
                            json_schema_extra={"not": {"enum": list(HIERARCHY_KINDS)}})
    encoding: Name | None = Field(None, description="Text encoding of the CSV file (default utf-8).",
                                  examples=["latin-1"])

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                info = codecs.lookup(value)
            except LookupError:
                raise ValueError(f"unknown text encoding {value!r}; use for example utf-8, latin-1 or cp1252") from None
            if not is_text_encoding(info):
                raise ValueError(f"{value!r} is a codec of bytes, not a text encoding; use for example utf-8, "
                                 "latin-1 or cp1252")
        return value


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
    levels: StrictInt = Field(ge=1, le=ROUND_LEVELS, description="Digits to round away (levels of the hierarchy).",
                        examples=[3])


class MaskHierarchy(Strict):
    """Strings with one more trailing character replaced by '*' per level (zip codes)."""

    hierarchy: Literal["mask"] = Field(description="The hierarchy kind.", examples=["mask"])
    levels: StrictInt | None = Field(None, ge=1, description="Characters to mask at most (default: all of them).",
                               examples=[3])


class DatesHierarchy(Strict):
    """Dates: day -> month -> year -> *."""

    hierarchy: Literal["dates"] = Field(description="The hierarchy kind.", examples=["dates"])


class SuppressHierarchy(Strict):
    """One level: every value becomes '*'."""

    hierarchy: Literal["suppress"] = Field(description="The hierarchy kind.", examples=["suppress"])


HIERARCHY_MODELS: dict[str, type[Strict]] = {
    "taxonomy": TaxonomyHierarchy, "intervals": IntervalsHierarchy, "round": RoundHierarchy, "mask": MaskHierarchy,
    "dates": DatesHierarchy, "suppress": SuppressHierarchy}


def _hierarchy_kind(value: Any) -> str:
    kind = value.get("hierarchy") if isinstance(value, dict) else getattr(value, "hierarchy", None)
    return kind if kind in HIERARCHY_KINDS else "taxonomy"


Hierarchy = Annotated[Annotated[TaxonomyHierarchy, Tag("taxonomy")] | Annotated[IntervalsHierarchy, Tag("intervals")]
                      | Annotated[RoundHierarchy, Tag("round")] | Annotated[MaskHierarchy, Tag("mask")]
                      | Annotated[DatesHierarchy, Tag("dates")] | Annotated[SuppressHierarchy, Tag("suppress")],
    Discriminator(_hierarchy_kind)]

def _columns(section: str, need_hierarchy: bool) -> Any:
    """A check run before the shape of `quasi_identifiers` / `sensitive`: the errors a generic type error
    would explain badly (no column, a column listed twice, a quasi-identifier without a hierarchy)."""
    def check(value: Any) -> Any:
        if isinstance(value, (dict, list)) and not value:
            raise PolicyError(section, "must name at least one column")
        if isinstance(value, dict):
            named = [(f"{section}.{name}", spec) for name, spec in value.items()]
        elif isinstance(value, list):
            named, seen = [], set()
            for i, entry in enumerate(value):
                if isinstance(entry, dict) and len(entry) == 1:
                    (name, spec), = entry.items()
                elif isinstance(entry, str):
                    name, spec = entry, None
                else:
                    continue            # the model names what is wrong with it
                if name in seen:
                    raise PolicyError(f"{section}[{i}]", f"column '{name}' is listed twice; give each column once")
                seen.add(name)
                named.append((f"{section}.{name}", spec))
        else:
            return value
        for field, spec in named:
            if spec is None and need_hierarchy:
                raise PolicyError(field, "needs {hierarchy: FILE.csv | " + " | ".join(HIERARCHY_KINDS) + "}")
            if isinstance(spec, dict) and "hierarchy" not in spec:     # else read as a taxonomy with odd keys
                raise PolicyError(f"{field}.hierarchy", "missing; give a CSV path or one of "
                                  + ", ".join(HIERARCHY_KINDS))
        return value
    return BeforeValidator(check)


QuasiIdentifiers = (
    Annotated[dict[Key, Hierarchy], Field(min_length=1, description="Column -> its hierarchy, in policy order.")]
    | Annotated[list[Annotated[dict[Key, Hierarchy], Field(min_length=1, max_length=1)]],
                Field(min_length=1, description="A list of {column: hierarchy}.")]
)

Sensitive = (
    Annotated[Name, Field(description="One sensitive column.")]
    | Annotated[list[Name | Annotated[dict[Key, Hierarchy], Field(min_length=1, max_length=1)]],
                Field(min_length=1, description="Sensitive columns, or {column: {hierarchy: ...}}.")]
    | Annotated[dict[Key, Hierarchy | None],
                Field(min_length=1, description="Column -> its hierarchy (for the hierarchical EMD) or null.")]
)


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
    no_negative_disclosure: Annotated[
        NoNegativeDisclosure | Annotated[dict[str, Any], Field(max_length=0)] | None,
        BeforeValidator(lambda v: None if v == {} else v)] = Field(   # {} is "none", as today
        None, description="recursive only: values that must not be ruled out of any block.",
        examples=[{"c2": 5, "values": ["HIV"]}])
    attribute: Name | None = _attribute()

    @model_validator(mode="after")
    def _variant_rules(self) -> LDiversity:
        F = "privacy.l_diversity"
        if self.variant != "entropy" and not float(self.l).is_integer():
            raise PolicyError(f"{F}.l", f"must be an integer >= 1 for {self.variant} l-diversity (a number of "
                              f"distinct values); got {self.l!r}")
        if self.variant == "recursive" and self.c is None:
            raise PolicyError(f"{F}.c", "missing; recursive (c,l)-diversity needs c > 0, for example c: 3")
        if self.variant != "recursive" and self.c is not None:
            raise PolicyError(f"{F}.c", f"only applies to variant recursive; remove it or set variant: recursive "
                              f"(variant is {self.variant})")
        if self.dont_care and self.variant == "distinct":
            raise PolicyError(f"{F}.dont_care", "applies to variants entropy and recursive only; remove it or "
                              "change the variant")
        if self.no_negative_disclosure is not None and self.variant != "recursive":
            raise PolicyError(f"{F}.no_negative_disclosure", "applies to variant recursive only (npd-recursive "
                              "(c1,c2,l)-diversity, TKDD Def. 4.4); remove it or set variant: recursive")
        return self


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

    k: PositiveInteger = Field(description="Least number of people of the population a class must match.",
                   examples=[10])
    sampling_fraction: Number | None = Field(None, gt=0, le=1, description="The table's rows over the "
                                             "population's (estimator).", examples=[0.01])
    significance: Number | None = Field(None, gt=0, lt=1, description="Significance of the estimate (default "
                                        "0.01).", examples=[0.01])
    estimator: Literal["poisson", "zero_truncated_poisson"] | None = Field(
        None, description="Estimator of the population's class sizes (default poisson).", examples=["poisson"])
    population: Name | None = Field(None, description="Population table (same quasi-identifier columns, same "
                                    "database) instead of an estimator.", examples=["census"])

    @model_validator(mode="after")
    def _estimator_or_population(self) -> KMap:
        F = "privacy.k_map"
        if self.population is not None:
            extra = [key for key in ("sampling_fraction", "significance", "estimator") if key in self.model_fields_set]
            if extra:
                raise PolicyError(f"{F}.{extra[0]}", "applies to k-map with an estimator; against a population "
                                  "table remove it")
        elif self.sampling_fraction is None:
            raise PolicyError(f"{F}.sampling_fraction", "missing; give the table's rows over the population's, for "
                              "example sampling_fraction: 0.01 (or a population table: population: NAME)")
        return self


class DeltaPresence(Strict):
    """delta-presence (Nergiz, Atzori, Clifton, SIGMOD 2007) against a population table."""

    delta_min: Number = Field(0.0, ge=0, le=1, description="Least probability that a person is in the table.",
                              examples=[0.0])
    delta_max: Number = Field(1.0, ge=0, le=1, description="Largest probability that a person is in the table.",
                              examples=[0.5])
    population: Name = Field(description="Population table the source is a subset of.", examples=["census"])

    @model_validator(mode="after")
    def _ordered(self) -> DeltaPresence:
        if self.delta_min > self.delta_max:
            raise PolicyError("privacy.delta_presence.delta_max", f"needs 0 <= delta_min <= delta_max <= 1; got "
                              f"{self.delta_min} and {self.delta_max}")
        return self


class Privacy(Strict):
    """The privacy models a release must satisfy (at least one)."""

    k: PositiveInteger | None = Field(None, description="k-anonymity: every q*-block holds at least k rows.",
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
    attributes: dict[Key, Annotated[StrictInt, Field(ge=0)]] | list[Name] = Field(
        description="Columns -> generalization level, or a list of columns (level 0).",
        examples=[{"age": 2, "sex": 0}, ["sex", "race"]])
    name: Name | None = Field(None, description="Name of the marginal's table.", examples=["adult_age_sex"])


class Drift(Strict):
    """How far a view release may drift before `sqlanon status` / `check --table` exit 3."""

    max_suppressed: Annotated[float, Field(ge=0, le=1)] = Field(
        0.05, description="Fraction of the source rows a view may suppress at read time.", examples=[0.05])
    max_unknown: Annotated[float, Field(ge=0, le=1)] = Field(
        0.0, description="Fraction of the source rows with values the hierarchies do not know.", examples=[0.0])
    renode: Annotated[bool, Field(strict=True)] = Field(
        False, description="true: a new search choosing another node counts as drift.", examples=[True])


class Release(Strict):
    """What is released and how."""

    # A new key (say `drift`) is one field here with its description and example; sqlanon.policy reads it
    # from the validated model, and `sqlanon schema --out docs/policy.schema.json` refreshes the committed
    # schema (tests/test_policy_schema.py fails until it is).

    name: Name | None = Field(None, description="Release table or view (default <table>_release beside the "
                              "source), possibly schema-qualified.", examples=["adult_release"])
    materialize: Literal["table", "view", "none"] = Field(
        "table", description="table, view or none (export only).", examples=["view"])
    keep: list[Name] = Field(default_factory=list, description="Source columns released unchanged (not "
                             "quasi-identifiers).", examples=[["id"]])
    export: str | list[str] = Field(default_factory=list, description=".parquet / .csv files the release "
                                          "is also written to.", examples=[["adult_release.parquet"]])
    marginals: list[Marginal] = Field(default_factory=list, description="Anonymized marginals released beside "
                                      "the table.", examples=[[{"attributes": {"age": 1, "sex": 0}}]])
    replace: Annotated[bool, Field(strict=True)] = Field(
        True, description="false: refuse to replace even this release's own earlier output.",
                          examples=[False])
    drift: Drift | None = Field(None, description="View releases: the drift limits `sqlanon status` checks.",
                                examples=[{"max_suppressed": 0.05, "renode": True}])


class Search(Strict):
    """How the lattice is searched."""

    max_nodes: StrictInt = Field(250_000, ge=1, description="Lattices up to this many nodes get the exact search; "
                           "larger ones the heuristic search.", examples=[250000])
    time_limit_s: Number = Field(60.0, gt=0, le=86_400, description="The heuristic search's time budget in "
                                 "seconds.", examples=[60])


class PolicyModel(Strict):
    """An sqlanon policy: what to anonymize, how, and what to release."""

    model_config = ConfigDict(extra="forbid", title="sqlanon policy", defer_build=True)

    source: Source = Field(description="Where the rows are and which engine holds them.",
                           examples=[{"database": "data.duckdb", "table": "adult"}, {"csv": "adult.csv"}])
    quasi_identifiers: Annotated[QuasiIdentifiers, _columns("quasi_identifiers", need_hierarchy=True)] = Field(
        description="Columns an attacker may know, each with its generalization hierarchy.",
        examples=[{"age": {"hierarchy": "intervals", "widths": [5, 10, 20]}, "sex": {"hierarchy": "suppress"}}])
    sensitive: Annotated[Sensitive, _columns("sensitive", need_hierarchy=False)] = Field(
        description="Sensitive columns (released unchanged, protected by the privacy models).",
        examples=[["occupation"]])
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


# ------------------------------------------------------------------------------------------------
# validation: a pydantic error becomes one PolicyError naming the dotted field

def validate(model: type[BaseModel], raw: Any, prefix: str) -> Any:
    """`raw` checked against `model`, which sits at the dotted path `prefix` of the policy; the first
    error raises `PolicyError` naming the field, the value and what to write instead."""
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        raise policy_error(err, raw, prefix) from None


def unknown_key_error(key: str, allowed: list[str], where: str) -> PolicyError:
    """A key `where` does not have, with the closest valid one (difflib) and the list of them all."""
    field = f"{where}.{key}" if where else str(key)
    hint = did_you_mean(key, allowed)
    owner = f"the keys of {where} are" if where else "the policy keys are"
    return PolicyError(field, f"unknown key; {hint}{owner} {', '.join(allowed)}")


def did_you_mean(key: Any, allowed: Sequence[str]) -> str:
    """"did you mean 'widths'? " for the valid key closest to a misspelled one (difflib), or ""."""
    close = difflib.get_close_matches(str(key), list(allowed), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'? " if close else ""


def hierarchy_keys(kind: str) -> list[str]:
    """The keys of a hierarchy spec of `kind` (taxonomy, intervals, round, mask, dates, suppress)."""
    return list(HIERARCHY_MODELS[kind].model_fields)


def policy_error(err: ValidationError, raw: Any, prefix: str) -> PolicyError:
    errors = [(_data_path(e["loc"], raw), e) for e in err.errors(include_url=False)]
    """The error to show, as one line: an unknown key first (a misspelled key explains the "missing" one it
    was meant to be), else the deepest (the alternatives of a union that do not fit report at the union's
    own level; the deepest error is about the alternative the policy meant)."""
    path, e = max(errors, key=lambda pe: (pe[1]["type"] == "extra_forbidden", len(pe[0])))
    field = _dotted(prefix, path)
    node = _schema_at(prefix, path, raw)
    kind, value = e["type"], e.get("input")
    if kind == "extra_forbidden":
        owner = _dotted(prefix, path[:-1])
        if owner == "source":
            source = raw.get("source") if isinstance(raw, dict) else None
            return source_key_error(str(path[-1]), _engine(source))
        if path[-1] == "encoding" and owner.startswith(("quasi_identifiers.", "sensitive.")):
            return PolicyError(field, "goes with a hierarchy CSV file (the text encoding of that file); remove it")
        parent = _schema_at(prefix, path[:-1], raw)
        return unknown_key_error(str(path[-1]), list(parent.get("properties", {})), _dotted(prefix, path[:-1]))
    if kind == "missing":
        example = (node.get("examples") or [None])[0]
        eg = f", for example {path[-1]}: {json.dumps(example)}" if example is not None else ""
        about = f" ({_lower(node['description'])})" if node.get("description") else ""
        return PolicyError(field, f"missing; give {path[-1]}{about}{eg}")
    if kind == "value_error":      # a field validator's own words (what is wrong and what to write)
        return PolicyError(field, str(e["ctx"]["error"]))
    if kind == "literal_error" or "enum" in node:
        choices = ENGINES if field == "source.engine" else node.get("enum", [])   # every engine, not one branch's
        return PolicyError(field, f"must be one of {', '.join(map(str, choices))}; got {value!r}")
    what = _what(node)
    about = (f" ({_lower(node['description'])})" if node.get("description") and
             (kind.endswith("_type") or kind.startswith("string_")) else "")
    return PolicyError(field, f"must be {what}{about}; got {value!r}")


def _data_path(loc: tuple, raw: Any) -> list:
    """The error's location with pydantic's union tags left out: only the keys and indexes that walk
    the policy's data."""
    out, node = [], raw
    for i, part in enumerate(loc):
        if (isinstance(node, dict) and part in node) or (
                isinstance(node, (list, tuple)) and isinstance(part, int) and part < len(node)):
            node = node[part]
        elif i == len(loc) - 1 and isinstance(node, dict) and isinstance(part, str) and part not in _UNION_TAGS:
            node = None      # a missing key (always last): the error is about it
        else:
            continue         # a union's tag: the alternative's name, not a key of the data
        out.append(part)
    return out


def _branch_for(node: dict, data: Any) -> dict:
    """Of a union's alternatives (source per engine, hierarchy per kind, mapping or list), the one `data`
    is written for: of its type, no fixed value (engine: postgres, hierarchy: intervals) contradicted,
    a fixed value matched, most keys known."""
    kind = {dict: "object", list: "array", str: "string", bool: "boolean"}.get(type(data))

    def fits(b: dict) -> tuple[bool, int, int, int]:
        props = b.get("properties", {})
        items = data.items() if isinstance(data, dict) else []
        clash = sum(1 for k, v in items if k in props and "const" in props[k] and props[k]["const"] != v)
        match = sum(1 for k, v in items if k in props and props[k].get("const", object()) == v)
        return (b.get("type") == kind, -clash, match, sum(1 for k, _ in items if k in props))
    return max(_alternatives(node), key=fits)


_UNION_TAGS = {"duckdb", "postgres", "spark", "taxonomy", *HIERARCHY_KINDS}


def _dotted(prefix: str, path: list) -> str:
    out = prefix
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _lower(text: str) -> str:
    text = text.rstrip(".")
    return text if text[1:2].isupper() else text[:1].lower() + text[1:]     # "CSV file" stays as it is


def _resolve(node: dict) -> dict:
    while "$ref" in node:
        node = {**_schema()["$defs"][node["$ref"].rsplit("/", 1)[-1]],
                **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _alternatives(node: dict) -> list[dict]:
    """A schema's alternatives, unions of unions flattened, references resolved."""
    node = _resolve(node)
    subs = node.get("anyOf", []) + node.get("oneOf", [])
    if not subs:
        return [node]
    outer = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf", "discriminator")}
    return [{**outer, **alt} for sub in subs for alt in _alternatives(sub)]


def _schema_at(prefix: str, path: list, data: Any = None) -> dict:
    """The JSON Schema of the value at `prefix` + `path`: through a union, the alternative `data` (the
    value at `prefix`) is written for."""
    node: dict = _schema()
    parts = [p for p in prefix.replace("]", "").replace("[", ".").split(".") if p]
    steps = [(p, None) for p in parts] + [(p, True) for p in path]
    for part, walk in steps:
        found = None
        candidates = [b for b in _alternatives(node) if _has(b, part)]
        if candidates:
            found = _child(_branch_for({"anyOf": candidates}, data) if walk else candidates[0], part)
        if found is None:
            return {}
        node = found
        if walk:
            data = data.get(part) if isinstance(data, dict) else (
                data[part] if isinstance(data, list) and isinstance(part, int) and part < len(data) else None)
    alts = [b for b in _alternatives(node) if b.get("type") != "null"]
    kind = {dict: "object", list: "array", str: "string", bool: "boolean"}.get(type(data))
    if len(alts) > 1 and kind and not any(b.get("type") == kind for b in alts):
        return {"anyOf": alts}        # a value of none of the union's types: `_what` names them all
    return _branch_for({"anyOf": alts}, data) if alts else _resolve(node)


def _has(node: dict, part: Any) -> bool:
    if isinstance(part, int):
        return "items" in node
    return part in node.get("properties", {}) or isinstance(node.get("additionalProperties"), dict)


def _child(node: dict, part: Any) -> dict:
    if isinstance(part, int):
        return node["items"]
    return node.get("properties", {}).get(part) or node["additionalProperties"]


def _what(node: dict) -> str:
    """What a value must be, from its schema: 'an integer >= 1', 'a number > 0 and <= 1', 'a list', ..."""
    if "anyOf" in node:
        kinds = list(dict.fromkeys(_what(alt) for alt in node["anyOf"]))
        return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
    kind = node.get("type")
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        if "minimum" in node and "maximum" in node:
            return f"{noun} from {node['minimum']:g} to {node['maximum']:g}"
        if node.get("exclusiveMinimum") == 0 and len({"minimum", "maximum", "exclusiveMaximum"} & set(node)) == 0:
            return f"a positive {noun.split()[-1]}"
        bounds = [f"{op} {node[key]:g}" for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"),
                                                        ("maximum", "<="), ("exclusiveMaximum", "<"))
                  if key in node]
        return noun + (" " + " and ".join(bounds) if bounds else "")
    if kind == "string":
        if node.get("pattern") == MEMORY_PATTERN:
            return "a size such as 4GB or 512MiB, or a percentage of the memory such as 50%"
        if node.get("pattern", "\\S") != "\\S":
            return "a name of letters, digits and _ (an environment variable)"
        return "a non-empty text" if node.get("minLength") or "pattern" in node else "a text"
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        return "a list" + (" of at least one item" if node.get("minItems") else "")
    if kind == "object" or "properties" in node:
        return "a mapping" + (" with at least one entry" if node.get("minProperties") else "")
    return "a mapping or a list as in `sqlanon schema`"


_SCHEMA: dict | None = None


def _schema() -> dict:
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = json_schema()
    return _SCHEMA


def json_schema() -> dict:
    """The policy's JSON Schema (draft 2020-12), with a description and examples for every key."""
    schema = PolicyModel.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
