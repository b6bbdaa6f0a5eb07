"""`sqlanon sql --steps`: the statements of a run, transpiled by sqlglot to another SQL dialect.

Printed in the order they run, for reading: the staged source (read once; in the run's own dialect, a source
the run read directly is not staged: `FrequencySet.reads_source_directly`), the mapping tables (DDL and
their rows), the bottom and wide frequency sets, the query of the chosen lattice node, and the
generalizing SELECT of the release.
They need sqlanon's work tables; the script to schedule is `sqlanon.script` (`sqlanon sql` without
`--steps`), which needs only the source table.
"""
from __future__ import annotations

from sqlglot import exp

from . import templates
from .engines import dialects
from .frequency import STAGE_WEIGHT
from .release import select_sql


def _mapping_ddl(q, dialect: str) -> list[str]:
    t = q.hierarchy
    codes, leaves = t.codes(), t.leaf_counts()
    cols = ([("value", "VARCHAR")] + [(f"l{j}", "VARCHAR") for j in range(t.height + 1)]
            + [(f"c{j}", "INT") for j in range(t.height + 1)] + [(f"n{j}", "BIGINT") for j in range(t.height + 1)])
    create = exp.Create(
        this=exp.Schema(this=exp.to_table(q.map_table, quoted=True),
                        expressions=[exp.ColumnDef(this=exp.to_identifier(c, quoted=True),
                                                   kind=exp.DataType.build(ty)) for c, ty in cols]),
        kind="TABLE")
    rows = []
    for i, value in enumerate(t.values):
        row = [value] + [t.labels[j][i] for j in range(t.height + 1)]
        row += [int(codes[j][i]) for j in range(t.height + 1)] + [int(leaves[j][i]) for j in range(t.height + 1)]
        rows.append(exp.Tuple(expressions=[exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v)
                                           for v in row]))
    insert = exp.Insert(this=exp.to_table(q.map_table, quoted=True), expression=exp.Values(expressions=rows))
    return [create.sql(dialect=dialect), insert.sql(dialect=dialect)]


def _sensitive_map_ddl(s, dialect: str) -> list[str]:
    """A sensitive attribute's mapping table: every text of its values with the value's code (equal values
    written apart, 0.0 and -0.0, share one: `FrequencySet._create_sensitive`)."""
    texts = [(v, code) for code, v in enumerate(s.domain.values)] + sorted(s.domain.aliases.items())
    create = exp.Create(
        this=exp.Schema(this=exp.to_table(s.map_table, quoted=True),
                        expressions=[exp.ColumnDef(this=exp.to_identifier(c, quoted=True), kind=exp.DataType.build(ty))
                                     for c, ty in (("value", "VARCHAR"), ("code", "INT"))]),
        kind="TABLE")
    rows = [exp.Tuple(expressions=[exp.Literal.string(t), exp.Literal.number(code)]) for t, code in texts]
    insert = exp.Insert(this=exp.to_table(s.map_table, quoted=True), expression=exp.Values(expressions=rows))
    return [create.sql(dialect=dialect), insert.sql(dialect=dialect)]


def policy_sql(run, dialect: str) -> str:
    fs, policy = run.fs, run.policy
    src = policy.source
    source = src.table if src.kind == "table" else fs.source
    out = [f"-- sqlanon: SQL for {policy.described} in the {dialect} dialect"]
    if source == fs.source:
        out.append(f"-- {fs.source} stands for the source ({src.kind}: {src.path or src.query})")
    staged = fs.staged_name
    # Spark keeps the rows as they are, each of weight 1 (`Backend.stage_groups`: its GROUP BY is a shuffle)
    group = dialect != "spark"
    # the run's own route where the script is in its dialect: a source cheap to read again is not staged
    direct = fs.reads_source_directly and dialect == run.backend.dialect
    if direct:
        out.append("-- the source read directly, not staged (a Parquet file or a table, cheap to read again): the "
                   "profile and the distinct values read it, and the wide frequency set below is grouped from it")
    else:
        out.append("-- the source read once: " + ("its rows grouped by their values, with a row count"
                                                  if group else "its columns, each row of weight 1")
                   + " (the profile, the distinct values and the frequency set read this table)")
        out.extend(s + ";" for s in dialects.statements("stage_source.sql", dialect, name=staged, source=source,
                                                         columns=fs.stage_columns(), weight=STAGE_WEIGHT,
                                                         group=group))
    out.append("-- mapping tables: one row per base value; l = label, c = code, n = base values covered, per level")
    for q in fs.qis:
        out.extend(s + ";" for s in _mapping_ddl(q, dialect))
    if fs.sensitives:
        out.append("-- the sensitive attributes' mapping tables: every text of a value, with the value's code")
    for sens in fs.sensitives:
        out.extend(s + ";" for s in _sensitive_map_ddl(sens, dialect))
    ctx = dict(source=staged, weight=STAGE_WEIGHT, qis=fs.qis, sensitives=fs.sensitives, fs=fs.fs_table,
               wide=fs.wide_name, entity=policy.entity_key, distinct_rows=group and not policy.entity_key,
               # the run's engine stores codes narrow (`Backend.code_type`); other dialects as the mapping tables
               code_types=fs.code_types(run.backend) if dialect == run.backend.dialect else {})
    # written clustered where the engine does it (`Backend.clusters_wide`: DuckDB, PostgreSQL)
    cluster = fs.cluster_order() if dialect != "spark" else []
    if direct:
        out.append("-- the wide frequency set (every level's code), grouped straight from the source: the bottom "
                   "frequency set is its subquery")
        out.extend(s + ";" for s in dialects.statements("wide_frequency_set.sql", dialect, **ctx, cluster_by=cluster,
                                                         bottom={"source": source, "joins": {}}))
        out.append("-- the bottom frequency set: a view of the wide one's level-0 columns")
        out.extend(s + ";" for s in dialects.statements("bottom_as_view.sql", dialect, **ctx))
    else:
        out.append("-- the bottom frequency set (from the staged source)")
        # statements the dialect has (PostgreSQL: DROP + CREATE TEMPORARY TABLE; Spark: CACHE TABLE; engines.dialects)
        out.extend(s + ";" for s in dialects.statements("frequency_set.sql", dialect, **ctx))
        out.append("-- the wide frequency set (every level's code)")
        out.extend(s + ";" for s in dialects.statements("wide_frequency_set.sql", dialect, **ctx, cluster_by=cluster))
        if dialect != "spark":      # `Backend.bottom_view_over_wide`, for dialects that may have no backend
            out.append("-- where the wide frequency set is a table: the bottom one's table replaced by a view of its "
                       "level-0 columns")
            out.extend(s + ";" for s in dialects.statements("drop_relation.sql", dialect, name=fs.fs_table,
                                                             kind="TABLE"))
            out.extend(s + ";" for s in dialects.statements("bottom_as_view.sql", dialect, **ctx))
    levels = run.chosen.levels
    out.append(f"-- the chosen node's per-block counts ({', '.join(f'{k}={v}' for k, v in levels.items())})")
    pivots = [(s.col, s.domain.size) for s in fs.sensitives]
    out.append(templates.render_for("node_counts.sql", dialect, table=fs.wide_name,
                                    block_cols=[fs.qi(a).col(l) for a, l in levels.items()], pivots=pivots,
                                    entity=fs.entity) + ";")
    if fs.staged and dialect == run.backend.dialect:
        out.append("-- (this run builds the release table from the staged source, which has at most half the "
                   "source's rows: each staged row repeated by its count, release_table.sql; the same rows as "
                   "the SELECT below, not in the source's order)")
    out.append("-- the release: the generalizing SELECT")
    if run.chosen.result.suppressed_rows:
        out.append(f"-- ({run.chosen.result.suppressed_rows:,} rows in suppressed blocks are left out: their codes "
                   "are listed in the anti-join)")
    out.append(select_sql(policy, fs, run.chosen.result, source=source, dialect=dialect) + ";")
    return "\n".join(out)
