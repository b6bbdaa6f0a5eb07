"""SQL generation: every statement sqlanon runs is a jinja2 template in `sql_templates/`.

Templates are written in DuckDB's dialect. `render` fills one in, quotes every identifier through
the `ident` filter, and parses the result with sqlglot before it may run: a template that renders
to anything but one valid statement is a bug caught here, not in the database. Values that come
from a policy never enter the text; they travel as bound parameters (`?`).
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jinja2
import sqlglot
from sqlglot import exp

TEMPLATE_DIALECT = "duckdb"


def ident(name: str) -> str:
    """Quote an identifier (a table or column name) for SQL: "name", embedded quotes doubled."""
    return '"' + str(name).replace('"', '""') + '"'


def qualified(*parts: str) -> str:
    """A dotted, quoted name: catalog.schema.table."""
    return ".".join(ident(p) for p in parts if p)


def split_name(name: str) -> list[str]:
    """The parts of a dotted relation name as a policy writes it: ``t``, ``schema.t``, ``catalog.schema.t``.

    A part written in double quotes may hold dots (``sales."2024.q1"``; ``""`` is a quote inside quotes).
    Raises ValueError for an empty part or an unclosed quote; callers turn it into a PolicyError.
    """
    parts, cur, i, text = [], [], 0, str(name)
    while i < len(text):
        ch = text[i]
        if ch == '"':
            end = i + 1
            while True:
                end = text.find('"', end)
                if end < 0:
                    raise ValueError(f"unclosed double quote in {name!r}")
                if text[end + 1:end + 2] == '"':
                    end += 2
                    continue
                break
            cur.append(text[i + 1:end].replace('""', '"'))
            i = end + 1
        elif ch == ".":
            parts.append("".join(cur))
            cur, i = [], i + 1
        else:
            cur.append(ch)
            i += 1
    parts.append("".join(cur))
    if any(not p.strip() for p in parts):
        raise ValueError(f"empty part in {name!r}")
    return parts


def join_name(parts: list[str]) -> str:
    """The inverse of `split_name`: parts joined by dots, a part quoted when it holds a dot or a quote."""
    return ".".join('"' + p.replace('"', '""') + '"' if ("." in p or '"' in p) else p for p in parts)


def temporary_relation(name: str) -> str:
    """The name a table is built under before one transaction renames it to `name`: in `name`'s schema and in
    sqlanon's reserved namespace (``__sqlanon``), so never a user's table (``r__sqlanon_tmp``, a suffix of the
    name, could be one, and was dropped); the same for the same name, so a run drops what a crashed run left.

    Examples:
        >>> temporary_relation("s.r")
        's.__sqlanon_tmp_454349e422f05297'
    """
    parts = split_name(name)
    parts[-1] = "__sqlanon_tmp_" + hashlib.sha256(parts[-1].encode("utf-8")).hexdigest()[:16]
    return join_name(parts)


def relation(name: str) -> str:
    """A relation name for SQL: each part of ``schema.table`` (see `split_name`) quoted by `ident`."""
    return qualified(*split_name(name))


def relation_last(name: str) -> str:
    """The last part of a relation name, quoted (the new name of ALTER TABLE ... RENAME TO, which stays in
    the schema of the old one)."""
    return ident(split_name(name)[-1])


SQL_TYPES = ("BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "DOUBLE", "VARCHAR", "DATE", "TIMESTAMP")


def _sqltype(name: str) -> str:
    """A column type chosen by sqlanon (from a frame's dtypes), checked against a fixed list."""
    if name not in SQL_TYPES:
        raise ValueError(f"not a column type sqlanon creates: {name!r}")
    return name


COLUMN_TYPE = re.compile(r"[A-Z][A-Z0-9_ ]*(\(\s*\d+\s*(,\s*\d+\s*)?\))?")


def _coltype(name: str) -> str:
    """A scalar column type as an engine's catalog named it (`Backend.columns`: DECIMAL(38,20), DOUBLE, INTERVAL):
    words and an optional precision, nothing else."""
    if not COLUMN_TYPE.fullmatch(name.upper()):
        raise ValueError(f"not a scalar column type: {name!r}")
    return name.upper()


def _int(value) -> str:
    """Render an integer literal that Python produced (a code or a level), never a policy value."""
    if isinstance(value, bool) or not isinstance(value, int):
        value = int(value)
    return str(int(value))


def _num(value) -> str:
    """Render a finite real number as a SQL literal, for statements that cannot hold bound parameters
    (a view's definition): the value goes through float(), so only digits, '.', 'e' and a sign reach SQL."""
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    x = float(value)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"not a finite number: {value!r}")
    text = repr(x)
    return f"({text})" if x < 0 else text


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    loader = jinja2.FunctionLoader(_load_template)
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=False, autoescape=False)
    env.filters["ident"] = ident
    env.filters["int"] = _int
    env.filters["num"] = _num
    env.filters["sqltype"] = _sqltype
    env.filters["coltype"] = _coltype
    env.filters["relation"] = relation
    env.filters["relation_last"] = relation_last
    env.globals["qualified"] = qualified
    return env


def template_dir():
    """The templates folder: the installed subpackage sqlanon.sql_templates, or a checkout's sql_templates/."""
    try:
        return resources.files("sqlanon.sql_templates")
    except ModuleNotFoundError:   # running from a source checkout that was not installed
        return Path(__file__).resolve().parents[1] / "sql_templates"


def _load_template(name: str):
    path = template_dir().joinpath(name)
    return path.read_text(encoding="utf-8") if path.is_file() else None


def template_names() -> list[str]:
    return sorted(p.name for p in template_dir().iterdir() if p.name.endswith(".sql"))


def render(template: str, **context) -> str:
    """Render a template to SQL text in the template dialect (not yet parsed)."""
    return environment().get_template(template).render(**context).strip().rstrip(";")


def parse(sql: str, dialect: str = TEMPLATE_DIALECT) -> exp.Expression:
    """Parse one statement; raise ValueError when the text is not exactly one statement."""
    statements = [s for s in sqlglot.parse(sql, read=dialect) if isinstance(s, exp.Expression)]
    if len(statements) != 1:
        raise ValueError(f"expected one SQL statement, got {len(statements)}: {sql[:200]}")
    return statements[0]


def to_dialect(tree: exp.Expression, dialect: str) -> str:
    return tree.sql(dialect=dialect)


_QUOTED = re.compile(r'"(?:[^"]|"")*"')
_NUMBER = re.compile(r"\b\d+\b")


def shape(sql: str) -> str:
    """The statement with every quoted identifier and integer literal blanked out.

    Identifiers only enter templates through `ident` (one quoted token whatever their content) and
    numbers only through `int`, so two statements of the same shape parse to the same tree structure.
    """
    return _NUMBER.sub("0", _QUOTED.sub('"_"', sql))


@lru_cache(maxsize=4096)
def _check_shape(shaped: str) -> None:
    parse(shaped)


def check(sql: str) -> None:
    """Parse a rendered statement with sqlglot (raise ValueError if it is not one valid statement).

    The lattice search renders thousands of statements that differ only in column names and value
    codes; each is checked through its shape, so sqlglot parses each distinct shape once, which keeps
    the check at microseconds per node instead of a millisecond.
    """
    _check_shape(shape(sql))


def render_for(template: str, dialect: str = TEMPLATE_DIALECT, **context) -> str:
    """Render, check with sqlglot, and return the statement for `dialect`.

    For the template dialect the rendered text runs as written once it has been checked; for any other
    dialect it is parsed and transpiled by sqlglot.
    """
    sql = render(template, **context)
    if dialect == TEMPLATE_DIALECT:
        check(sql)
        return sql
    return to_dialect(parse(sql), dialect)
