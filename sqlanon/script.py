"""`sqlanon sql`: the release as one runnable statement, for a warehouse to schedule.

A release reads the source and mapping tables that only exist inside a sqlanon run. The script printed
here needs neither: it is ONE self-contained SELECT, run as it is on a database that holds only the
source table, whose rows are exactly the released rows (suppressed classes left out):

    WITH "__sqlanon_map_0" AS (SELECT * FROM (VALUES ('39', '[35, 40)', 7), ...) AS "v"("value", "l1", "c1")),
         ...
    SELECT ... FROM "adult" AS src JOIN "__sqlanon_map_0" AS m0 ON m0."value" = CAST(src."age" AS VARCHAR) ...
    WHERE NOT EXISTS (SELECT 1 FROM (VALUES (3, 0), ...) AS sp(...) WHERE sp."q0_1" = m0."c1" AND ...)

The generalizing SELECT is the release's own template (`release_select.sql`, the suppressed classes'
codes inline); each mapping table it joins becomes a CTE holding, for every base value of the hierarchy,
its text, its label and its code at the chosen level. Hierarchy values are literals here (a script for
printing cannot bind parameters): they are built as sqlglot string literals, which quote and escape them
for the target dialect, never pasted into SQL text. A source given as a query becomes one more CTE.

Values the hierarchy does not hold (rows added since the manifest, a value spelled differently by
another engine) find no mapping row and are left out, as the release leaves them out: a scheduled run
never publishes an ungeneralized value. Whether the new rows still satisfy the policy is for
`sqlanon apply` or the dbt tests (`sqlanon dbt`) to judge.
"""
from __future__ import annotations

from sqlglot import exp

from . import templates
from .release import release_columns, select_sql

SOURCE_CTE = "__sqlanon_source"


def map_cte_name(index: int) -> str:
    return f"__sqlanon_map_{index}"


def _mapping_values(q, *levels: int) -> exp.Select:
    """SELECT * FROM (VALUES (value, label, code, ...), ...) AS v(value, l<L>, c<L>, ...), with a label and a
    code per level in `levels`: one row per base value, literals built by sqlglot (quoted and escaped for
    any dialect)."""
    t = q.hierarchy
    all_codes = t.codes()
    levels = tuple(dict.fromkeys(levels))
    rows = [exp.Tuple(expressions=[exp.Literal.string(str(value))] + [
        e for lvl in levels for e in (exp.Literal.string(str(t.labels[lvl][i])),
                                      exp.Literal.number(int(all_codes[lvl][i])))])
            for i, value in enumerate(t.values)]
    names = ["value"] + [f"{p}{lvl}" for lvl in levels for p in ("l", "c")]
    alias = exp.TableAlias(this=exp.to_identifier("v", quoted=True),
                           columns=[exp.to_identifier(c, quoted=True) for c in names])
    return exp.select("*").from_(exp.Values(expressions=rows, alias=alias))


def _needs_map(level: int, suppressed: bool) -> bool:
    # the rule of release_select.sql: a mapping table is joined for a generalized column or to find suppressed classes
    return level > 0 or suppressed


def release_tree(run, source: str | None = None) -> exp.Select:
    """The release of `run`'s chosen node as one sqlglot SELECT (mapping tables as VALUES CTEs).

    `source` names the table the statement reads (default: the policy's source table, or for a query
    source the query itself as a CTE; a CSV / Parquet source is read as the table its `table:` names).
    """
    policy, fs, result = run.policy, run.fs, run.chosen.result
    source, ctes = _source(policy, source)
    suppressed = bool(result.suppressed_rows)
    maps = {}
    for _col, q, level in release_columns(policy, fs, result.levels):
        if q is not None and _needs_map(level, suppressed):
            maps[q.name] = map_cte_name(q.index)
            ctes.append((maps[q.name], _mapping_values(q, level)))
    tree = templates.parse(select_sql(policy, fs, result, map_names=maps, source=source))
    assert isinstance(tree, exp.Select), "release_select.sql renders one SELECT"
    for name, body in ctes:
        tree = tree.with_(exp.TableAlias(this=exp.to_identifier(name, quoted=True)), as_=body, copy=False)
    return tree


def _source(policy, source: str | None) -> tuple[str, list[tuple[str, exp.Expression]]]:
    """The table a script reads, and the CTE of a query source (when it reads the policy's query)."""
    src = policy.source
    if source is not None:
        return source, []
    if src.kind == "query":
        return SOURCE_CTE, [(SOURCE_CTE, templates.parse(src.query, dialect=_engine_dialect(src.engine)))]
    return src.table or src.label, []


def view_tree(run, source: str | None = None, dialect: str = templates.TEMPLATE_DIALECT) -> exp.Create:
    """What a view release (``release: {materialize: view}``) creates, as one statement: CREATE OR REPLACE
    VIEW of the self-enforcing view (sqlanon/views.py, `release_view_enforced.sql`) at the chosen node,
    its mapping tables inline as VALUES CTEs (value, and label and code at the released level and at the
    hierarchy's top) instead of the persisted ``<name>__map_<i>`` tables."""
    from . import views
    policy, fs, result = run.policy, run.fs, run.chosen.result
    # the source's column types (how the view joins the mapping rows) when it reads the policy's own table
    types = dict(run.backend.columns(policy.source.table)) if source is None and policy.source.kind == "table" else None
    source, ctes = _source(policy, source)
    maps = {q.name: map_cte_name(q.index) for q in fs.qis}
    for q in fs.qis:
        ctes.append((maps[q.name], _mapping_values(q, result.levels[q.name], q.height)))
    ctx = views.view_context(policy.release.name, policy, fs, release_columns(policy, fs, result.levels), maps,
                             source, types, dialect)
    tree = templates.parse(templates.render(views.VIEW_TEMPLATE, **ctx))
    assert isinstance(tree, exp.Create) and isinstance(tree.expression, exp.Select), "one CREATE VIEW ... AS SELECT"
    with_ = tree.expression.args["with_"]
    # the mapping CTEs go first: the view's own CTEs read them
    with_.set("expressions", [exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(name, quoted=True)))
                              for name, body in ctes] + list(with_.expressions))
    return tree


def view_script(run, dialect: str | None = None, source: str | None = None) -> str:
    """What `sqlanon sql` prints for a view release: comments, then the CREATE VIEW the release runs, in
    `dialect` (default: the policy's engine's)."""
    policy = run.policy
    dialect = dialect or _engine_dialect(policy.source.engine)
    levels = ", ".join(f"{k}={v}" for k, v in run.chosen.levels.items())
    lines = [(f"-- sqlanon: the view release {policy.release.name} of {policy.described} at {levels}, "
              f"in the {dialect} dialect"),
             "-- It creates the self-enforcing view: at every read it generalizes the live source, measures every",
             "-- class and returns only rows of classes that satisfy the policy (values unknown to the mapping",
             "-- tables at the hierarchy's top). Mapping tables are inline (VALUES): base value, label and code at",
             "-- the released level and at the top."]
    lines.append(view_tree(run, source, dialect).sql(dialect=dialect, pretty=True) + ";")
    return "\n".join(lines)


def _engine_dialect(engine: str) -> str:
    return {"duckdb": "duckdb", "postgres": "postgres", "spark": "spark"}.get(engine, templates.TEMPLATE_DIALECT)


def release_statement(run, dialect: str = templates.TEMPLATE_DIALECT, source: str | None = None,
                      pretty: bool = True) -> str:
    """The release SELECT in `dialect` (no trailing semicolon)."""
    return release_tree(run, source).sql(dialect=dialect, pretty=pretty)


def release_script(run, dialect: str = templates.TEMPLATE_DIALECT, source: str | None = None) -> str:
    """What `sqlanon sql` prints: comments saying what the statement is, then the statement."""
    policy, result = run.policy, run.chosen.result
    levels = ", ".join(f"{k}={v}" for k, v in run.chosen.levels.items())
    lines = [f"-- sqlanon: the release of {policy.described} at {levels}, in the {dialect} dialect",
             "-- Run it as it is on a database holding the source table: it creates nothing, and its rows are",
             "-- the released rows. Mapping tables are inline (VALUES): base value, label and code at the chosen "
             "level."]
    if source is None and policy.source.kind in ("csv", "parquet"):
        lines.append(f"-- It reads the table {policy.source.table or policy.source.label} (load the "
                     f"{policy.source.kind} file into it, or pass --source NAME).")
    if result.suppressed_rows:
        lines.append(f"-- {result.suppressed_rows:,} rows in {int((~result.ok).sum()):,} suppressed classes are left "
                     "out (their codes are listed in the anti-join).")
    lines.append(release_statement(run, dialect, source) + ";")
    return "\n".join(lines)


def check_source(policy, table: str) -> dict:
    """The raw ``source:`` `sqlanon check --table` reads when `table` is the policy's view release: a query of
    the view with its NULL quasi-identifiers (level-0 values unknown to the mapping tables, released at the
    top) shown as the top label '*', so they count as one class, as the view counts them, instead of being
    refused as missing values. Any other table: the table itself."""
    from .policy import source_with_table
    out = source_with_table(policy.raw.get("source"), table)
    if policy.release.materialize != "view" or table != policy.release.name:
        return out
    del out["table"]
    out["query"] = templates.render_for("view_check_source.sql", _engine_dialect(policy.source.engine),
                                        relation=table, qis=list(policy.quasi_identifiers),
                                        sensitive=list(policy.sensitive))
    return out
