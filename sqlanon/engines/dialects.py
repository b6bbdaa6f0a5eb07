"""From one template to the statements an engine runs: sqlglot transpiles, and a few rewrites cover
what an engine lacks.

Templates are written once, in DuckDB's dialect (`sqlanon.templates`). sqlglot translates types,
quoting, placeholders and functions; what it cannot translate is a *statement* an engine does not
have. Those are rewritten here, on the parsed tree, into statements the engine does have:

=====================================  ===================================  =========================================
template (DuckDB)                      PostgreSQL                           Spark SQL
=====================================  ===================================  =========================================
CREATE OR REPLACE TEMPORARY TABLE t    DROP TABLE IF EXISTS t;              DROP VIEW IF EXISTS t;
AS SELECT ...                          CREATE TEMPORARY TABLE t AS ...;     CACHE TABLE t AS SELECT ...
                                       ANALYZE t                            (a cached temporary view: Spark has no
                                                                            temporary tables)
CREATE OR REPLACE TABLE t AS ...       DROP TABLE IF EXISTS t;              DROP TABLE IF EXISTS t;
                                       CREATE TABLE t AS ...                CREATE TABLE t USING PARQUET AS ...
CREATE OR REPLACE [TEMPORARY] VIEW v   DROP VIEW IF EXISTS v;               (as written)
                                       CREATE [TEMPORARY] VIEW v
=====================================  ===================================  =========================================

The extra statements come from templates too (`drop_relation.sql`, `analyze.sql`), so identifiers stay
quoted by the same filter. `statements(template, dialect, **context)` is what the backends run and
what `sqlanon sql --dialect` prints.
"""
from __future__ import annotations

import re

from sqlglot import exp

from .. import templates

TEMPLATE_DIALECT = templates.TEMPLATE_DIALECT


def _create_kind(tree: exp.Create) -> str:
    return str(tree.args.get("kind") or "").upper()


def _is_temporary(tree: exp.Create) -> bool:
    props = tree.args.get("properties")
    return bool(props and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions))


def _without_temporary(tree: exp.Create) -> None:
    props = tree.args.get("properties")
    if props:
        kept = [p for p in props.expressions if not isinstance(p, exp.TemporaryProperty)]
        tree.set("properties", exp.Properties(expressions=kept) if kept else None)


def _drop(dialect: str, name: str, kind: str) -> str:
    return templates.render_for("drop_relation.sql", dialect, name=name, kind=kind)


def _is_any_numeric(dt: exp.DataType) -> bool:
    return dt.is_type("decimal") and [e.sql() for e in dt.expressions] == ANY_NUMERIC_DIGITS


def _unconstrained_numeric(tree: exp.Expression) -> exp.Expression:
    """PostgreSQL's numeric of any scale, as `compared_type` writes it for the templates (`ANY_NUMERIC`, a type
    no other engine has: DuckDB's and Spark's decimals hold at most 38 digits), cast to the bare numeric: only
    that holds every value of the column, 'Infinity' included (a scaled numeric refuses it: numeric field
    overflow), and every scale. `tree` is left as it is (parsed templates may be shared)."""
    if not any(_is_any_numeric(dt) for dt in tree.find_all(exp.DataType)):
        return tree
    tree = tree.copy()
    for dt in tree.find_all(exp.DataType):
        if _is_any_numeric(dt):
            dt.set("expressions", [])
    return tree


def adapt(tree: exp.Expression, dialect: str) -> list[str]:
    """The statements that do what `tree` (one parsed template, DuckDB dialect) does, in `dialect`."""
    if dialect == "postgres":
        tree = _unconstrained_numeric(tree)
    if dialect == TEMPLATE_DIALECT or not isinstance(tree, exp.Create):
        return [tree.sql(dialect=dialect)]
    kind, temp = _create_kind(tree), _is_temporary(tree)
    # the whole dotted name (schema.table of a release), as `templates.split_name` reads it back
    name = templates.join_name([p.name for p in tree.this.parts]) if isinstance(tree.this, exp.Table) else None
    replace = bool(tree.args.get("replace"))
    if kind not in ("TABLE", "VIEW") or name is None:
        return [tree.sql(dialect=dialect)]
    tree = tree.copy()
    out: list[str] = []
    if dialect == "postgres":
        if replace:
            out.append(_drop(dialect, name, kind))
            tree.set("replace", False)
        out.append(tree.sql(dialect=dialect))
        if kind == "TABLE" and tree.expression is not None:
            out.append(templates.render_for("analyze.sql", dialect, name=name))
        return out
    if dialect == "spark":
        if kind == "TABLE" and temp and tree.expression is not None:
            # no temporary tables: a temporary view whose rows are computed once and kept (CACHE TABLE is eager)
            out.append(_drop(dialect, name, "VIEW"))
            out.append(exp.Cache(this=tree.this, expression=tree.expression).sql(dialect=dialect))
            return out
        if kind == "TABLE":
            if replace:   # REPLACE TABLE AS SELECT needs a v2 catalog; the session catalog has none
                out.append(_drop(dialect, name, "TABLE"))
                tree.set("replace", False)
            _without_temporary(tree)
            if not tree.find(exp.FileFormatProperty):
                props = tree.args.get("properties")
                extra = [exp.FileFormatProperty(this=exp.Var(this="PARQUET"))]
                tree.set("properties", exp.Properties(expressions=(props.expressions if props else []) + extra))
        out.append(tree.sql(dialect=dialect))
        return out
    return [tree.sql(dialect=dialect)]


def statements(template: str, dialect: str = TEMPLATE_DIALECT, **context) -> list[str]:
    """Render a template, check it with sqlglot, and return the statements that run it on `dialect`."""
    if dialect == TEMPLATE_DIALECT:
        return [templates.render_for(template, dialect, **context)]
    return adapt(templates.parse(templates.render(template, **context)), dialect)


def transpile(sql: str, dialect: str) -> list[str]:
    """Already rendered template-dialect text (e.g. a UNION ALL of checked branches) for `dialect`."""
    if dialect == TEMPLATE_DIALECT:
        return [sql]
    return adapt(templates.parse(sql), dialect)


# source column types whose values join their mapping rows on the typed value (macro `map_join` in
# _macros.sql): integers and dates, whose text form is canonical on every engine; the cast type rendered
TYPED_JOIN = {"TINYINT": "INTEGER", "SMALLINT": "INTEGER", "INTEGER": "INTEGER", "BIGINT": "BIGINT", "DATE": "DATE"}


def map_joins(types: dict[str, str], dialect: str) -> dict[str, str]:
    """How each column joins its mapping table (macro `map_join`: the self-enforcing view, and on DuckDB the
    bottom frequency set and the release table, `Backend.typed_map_joins`): "text" for a text column, a
    type from `TYPED_JOIN` for an integer or date column (not on PostgreSQL, which has no TRY_CAST),
    absent (the source value cast to text) otherwise. `types`: column -> type as `Backend.columns` names it.

    >>> map_joins({"zip": "VARCHAR", "age": "integer", "day": "DATE", "pay": "DOUBLE"}, "duckdb")
    {'zip': 'text', 'age': 'INTEGER', 'day': 'DATE'}
    >>> map_joins({"age": "INTEGER"}, "postgres")
    {}
    """
    out = {}
    for col, ty in types.items():
        ty = ty.upper()
        if ty == "VARCHAR":
            out[col] = "text"
        elif ty in TYPED_JOIN and dialect != "postgres":
            out[col] = TYPED_JOIN[ty]
    return out


# column types (as `Backend.columns` names them) whose values SQL may call equal though their text differs:
# 0.0 and -0.0, 1.5 and 1.50 (a PostgreSQL numeric), '1 day' and '24:00:00' (a PostgreSQL interval). Their values
# are compared in their own type (`judged_difference.sql`), the others by their text's code; a sensitive column's
# equal values share one code (`sensitive_value_classes.sql`).
EQUAL_UNLIKE_TYPES = ("DECIMAL", "NUMERIC", "DOUBLE", "FLOAT", "REAL", "INTERVAL")

# PostgreSQL's numeric of any scale in the templates: rendered for PostgreSQL as the bare numeric
# (`_unconstrained_numeric`)
ANY_NUMERIC_DIGITS = ["1000", "500"]
ANY_NUMERIC = f"DECIMAL({', '.join(ANY_NUMERIC_DIGITS)})"


# a word of EQUAL_UNLIKE_TYPES in a type's name: a nested type (DuckDB's DOUBLE[] and STRUCT(x DOUBLE), PostgreSQL's
# DOUBLE PRECISION[], Spark's ARRAY<DOUBLE>) holding such values; read once the names that are not types are gone
_EQUAL_UNLIKE_WORD = re.compile(r"\b(" + "|".join(EQUAL_UNLIKE_TYPES) + r")\d*\b", re.IGNORECASE)
# what in a nested type's name is not a type: Spark's field names (STRUCT<REAL:STRING>, written unquoted, whatever
# they hold: OWNER'S); in DuckDB's and PostgreSQL's names, quoted literals and names (an ENUM's labels, DuckDB's
# "interval" field) and unquoted field names (STRUCT(x DOUBLE): the first word of a field when a word follows it)
_SPARK_FIELD_NAMES = re.compile(r"(?<=[<,])[^<>,:]*:")
_NOT_TYPES = (re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\""), re.compile(r"(?<=[(,])\s*\w+\s+(?=[A-Za-z])"))
# a decimal of declared scale: one text per value on every engine (1.5 of a DECIMAL(9, 2) is always 1.50, and
# none has a negative zero), so a nested type holding it is compared by its text safely. PostgreSQL's numeric of
# any scale (1.5 and 1.50 apart), named DECIMAL without one, is not this.
_FIXED_SCALE = re.compile(r"\b(?:DECIMAL|NUMERIC)\s*\(\s*\d+\s*,\s*\d+\s*\)", re.IGNORECASE)


def nested_equal_unlike(type_name: str) -> bool:
    """Whether `type_name` is a nested type (a list, an array, a struct, a map) that holds values of an
    `EQUAL_UNLIKE_TYPES` type: equal values whose texts differ ([0.0] and [-0.0]), which sqlanon, comparing a
    nested value by its text, would count apart. (`compared_type` compares scalars only: a nested type's name
    is not one that can be written into a template safely, and Spark cannot cast a text to an array.) An enum's
    labels and a struct's field names are not read as types.

    >>> [nested_equal_unlike(t) for t in ("DOUBLE[]", "STRUCT(x DECIMAL)", "ARRAY<DOUBLE>", "INTEGER[]",
    ...                                   "DOUBLE", "VARCHAR[]", "MAP(VARCHAR, DOUBLE)", "STRUCT(a STRUCT(b FLOAT))")]
    [True, True, True, False, False, False, True, True]

    A decimal of declared scale prints one text per value:

    >>> [nested_equal_unlike(t) for t in ("DECIMAL(9,2)[]", "ARRAY<DECIMAL(9,2)>", "STRUCT(x DECIMAL(9, 2), y REAL)",
    ...                                   "DECIMAL[]")]
    [False, False, True, True]
    >>> [nested_equal_unlike(t) for t in ("ENUM('single', 'double')", 'STRUCT("interval" VARCHAR, dose INTEGER)',
    ...                                   "STRUCT<REAL:STRING>", "STRUCT(real VARCHAR)", "STRUCT<X:DOUBLE>",
    ...                                   "STRUCT<OWNER'S:STRING,SCORE:DOUBLE,O'CLOCK:INT>")]
    [False, False, False, False, True, True]
    """
    ty = type_name.upper()
    if templates.COLUMN_TYPE.fullmatch(ty) or ty.startswith("ENUM"):
        return False
    if "<" in ty:           # Spark's simpleString: no quotes, field names before a colon
        ty = _SPARK_FIELD_NAMES.sub(" ", ty)
    else:
        for pattern in _NOT_TYPES:
            ty = pattern.sub(" ", ty)
    return bool(_EQUAL_UNLIKE_WORD.search(_FIXED_SCALE.sub(" ", ty)))


# scalar column types (as `Backend.columns` names them) whose text is their value: one text per value, on every
# engine, in one session. A sensitive column of another type that neither `compared_type` compares nor
# `nested_equal_unlike` refuses (a PostgreSQL composite or range, a list of texts) has its texts counted against
# its values before the run (`value_text_counts.sql`).
TEXT_IS_VALUE_TYPES = ("VARCHAR", "CHAR", "TEXT", "STRING", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
                       "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "BOOLEAN", "DATE", "TIME",
                       "TIMESTAMP", "UUID", "JSON", "BLOB", "BYTEA", "CITEXT")


def text_is_value(type_name: str) -> bool:
    """Whether a value of `type_name` has exactly one text (`TEXT_IS_VALUE_TYPES`), so that its texts are its
    values.

    >>> [text_is_value(t) for t in ("VARCHAR", "BIGINT", "TIMESTAMP WITH TIME ZONE", "DOUBLE", "VARCHAR[]",
    ...                             "NUMRANGE", "16390")]
    [True, True, True, False, False, False, False]
    """
    ty = type_name.upper()
    return ty.startswith(TEXT_IS_VALUE_TYPES) and templates.COLUMN_TYPE.fullmatch(ty) is not None


def compared_type(type_name: str) -> str | None:
    """The type a copied value of a column of `type_name` is compared in (`release.judged_attributes`), and
    its equal values grouped in (`FrequencySet._create_sensitive`); None: by its text.

    >>> [compared_type(t) for t in ("DECIMAL(10,2)", "DECIMAL", "INTERVAL(3)", "INTERVAL DAY TO SECOND", "DOUBLE[]")]
    ['DECIMAL(10,2)', 'DECIMAL(1000, 500)', 'INTERVAL', 'INTERVAL DAY TO SECOND', None]
    """
    ty = type_name.upper()
    if not ty.startswith(EQUAL_UNLIKE_TYPES) or not templates.COLUMN_TYPE.fullmatch(ty):
        return None
    if ty in ("DECIMAL", "NUMERIC"):     # PostgreSQL's numeric of any scale: the templates' dialect would read a
        return ANY_NUMERIC               # bare DECIMAL as DECIMAL(18, 3) and round 1.23456 to 1.235
    if ty.startswith("INTERVAL("):       # PostgreSQL's interval(3): sqlglot would write CAST(... AS INTERVAL 3);
        return "INTERVAL"                # Spark's INTERVAL DAY TO SECOND keeps its fields
    return ty
