"""Click commands of the release workflow (report, hierarchy authoring).

    sqlanon report MANIFEST [--out FILE.html] [--external] [--min-cell 10] [--threshold 0.95]
                            [--groups FILE.csv] [--group-level 1] [--db PATH] [-q]
    sqlanon hierarchy check FILE --data SOURCE [--table T] [--column C] [--json]

`hierarchy check` exits 0 when the hierarchy is a tree that covers every value of the column, and 3
when it lists problems (like `sqlanon check`: the thing checked fails, so a CI job can block on it);
2 stays for input it cannot check at all (an unreadable file, an unknown column).
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import PolicyError
from .common import SqlanonGroup, user_errors, write_json

COMMANDS: list = []


# --------------------------------------------------------------------------------------------------
# sqlanon report

@click.command("report")
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.option("--out", default=None, type=click.Path(dir_okay=False),
              help="HTML file to write (default: the manifest's name with .html, or .external.html).")
@click.option("--external", is_flag=True,
              help="Leave out what reveals small cells (counts under --min-cell, the exposed classes).")
@click.option("--min-cell", type=int, default=10, show_default=True,
              help="External report: counts of rows (persons) below this are not shown.")
@click.option("--threshold", type=float, default=0.95, show_default=True,
              help="Second homogeneity attack: share of a class held by its most frequent value.")
@click.option("--groups", type=click.Path(dir_okay=False), default=None,
              help="Similarity attack: CSV of sensitive value -> semantic group (default: the policy's hierarchy).")
@click.option("--group-level", type=int, default=1, show_default=True, help="Column (level) of --groups to use.")
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file holding the source table, when the manifest's is elsewhere.")
@click.option("--force", is_flag=True, help="Overwrite an existing --out file that is not a sqlanon report (never "
              "the source, the policy, a hierarchy file, the database or the manifest).")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@user_errors
def report(manifest, out, external, min_cell, threshold, groups, group_level, db, force, quiet):
    """Write a self-contained HTML report of a release, recomputed from its manifest."""
    from .. import files
    from ..applying import report_from_manifest
    from ..progress import Progress
    files.checked_file(manifest, "MANIFEST", "manifest", files.MANIFEST_LIMIT)
    path = report_from_manifest(manifest, out, external=external, db=db, min_cell=min_cell, threshold=threshold,
                                groups=groups, group_level=group_level, force=force,
                                progress=Progress(enabled=False) if quiet else Progress())
    if not quiet:
        click.echo(f"report: {path}")


COMMANDS.append(report)


# --------------------------------------------------------------------------------------------------
# sqlanon hierarchy check

def _data_source(data: str, table: str | None):
    """The --data argument as a policy Source: a CSV or Parquet file, or a table of a DuckDB file."""
    from ..policy import Source
    path = Path(data)
    if not path.is_file():
        raise PolicyError("--data", f"file {data} does not exist; give a .csv, .parquet or .duckdb file")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet"):
        if table is not None:
            raise PolicyError("--table", "is for a DuckDB file; --data is a " + suffix[1:] + " file")
        return Source(suffix[1:], table=path.stem, path=path.resolve())
    if suffix in (".duckdb", ".db"):
        if table is None:
            raise PolicyError("--table", f"missing; name the table of {data} that holds the column")
        return Source("table", table=table, database=path.resolve())
    raise PolicyError("--data", f"give a .csv, .parquet or .duckdb file; got {data}")


def check_hierarchy(file: str, data: str, table: str | None = None, column: str | None = None,
                    encoding: str = "utf-8") -> dict:
    """A hierarchy file against one column of the data: everything `sqlanon hierarchy check` reports.

    The file's own structure comes from `hierarchy.file_problems`; the data side is two queries in an
    in-memory DuckDB that reads the data file (a DuckDB file attached read-only): the column's rows,
    NULLs, distinct values and the base values it never uses, and every value the hierarchy lacks.
    """
    from ..engines.duckdb import connect
    from ..hierarchy import file_problems
    path = Path(file)
    found = file_problems(path, encoding)       # a missing, special or oversized file is a PolicyError naming FILE
    source = _data_source(data, table)
    with connect() as backend:
        view = backend.attach_source(source)
        columns = [c for c, _ in backend.columns(view)]
        if column is None:
            column = found["column"] if found["column"] in columns else (columns[0] if len(columns) == 1 else None)
        if column is None:
            raise PolicyError("--column", f"missing; name the column of {data} the hierarchy is for (its columns: "
                              f"{', '.join(columns[:20])})")
        if column not in columns:
            raise PolicyError("--column", f"'{column}' is not a column of {data} (its columns: "
                              f"{', '.join(columns[:20])})")
        values_table = "__sqlanon_hierarchy_values"
        import pandas as pd  # here, not at the top: the CLI imports this module at start-up
        backend.create_table_from_frame(values_table, pd.DataFrame({"value": found["values"]}))
        rows, nulls, distinct, unused = backend.fetchrow("hierarchy_check_profile.sql", source=view, column=column,
                                                         values_table=values_table)
        missing = backend.fetchall("hierarchy_check_missing.sql", source=view, column=column,
                                   values_table=values_table)
    inner = set(found["inner_labels"])
    problems = dict(found["problems"])
    problems["missing"] = [{"value": v, "rows": int(n), "inner_label": v in inner} for v, n in missing]
    problems["null_values"] = [{"rows": int(nulls)}] if nulls else []
    return {"file": str(path), "format": found["format"], "values": len(found["values"]), "height": found["height"],
            "data": str(data), "table": table, "column": column, "rows": int(rows), "distinct_values": int(distinct),
            "unused_values": int(unused), "notes": found["notes"], "problems": problems,
            "clean": not any(problems.values())}


_HEADINGS = [
    ("missing", "values missing from the hierarchy"),
    ("null_values", "NULL values in the column (no hierarchy covers them)"),
    ("duplicates", "duplicate values (a base value on several rows)"),
    ("two_parents", "values with two parents"),
    ("not_nesting", "levels that do not nest (a label with two parents one level up)"),
    ("cycles", "cycles of parent links"),
    ("several_roots", "several roots (a tree has one)"),
    ("malformed_rows", "malformed rows"),
]


def _problem_text(key: str, p) -> str:
    if key == "missing":
        return f"{p['value']!r} ({p['rows']:,} rows)" + (", an inner label of the hierarchy, not a leaf"
                                                         if p["inner_label"] else "")
    if key == "null_values":
        return f"{p['rows']:,} rows"
    if key == "duplicates":
        return f"{p['value']!r} on {p['rows']} rows" + (f" (lines {p['lines']})" if "lines" in p else "")
    if key in ("two_parents", "not_nesting"):
        level = f" at level {p['level']}" if p.get("level") is not None else ""
        return f"{p['label']!r}{level}: " + ", ".join(map(repr, p["parents"]))
    if key == "cycles":
        return " -> ".join(map(repr, p))
    if key == "several_roots":
        return repr(p)
    return f"line {p['line']}: {p['why']} ({','.join(p['row'])!r})"


def _print_check(result: dict, show: int = 20) -> None:
    height = "?" if result["height"] is None else result["height"]
    click.echo(f"{result['file']}: {result['format']} hierarchy, {result['values']:,} base values, height {height}")
    click.echo(f"{result['data']} column {result['column']}: {result['rows']:,} rows, "
               f"{result['distinct_values']:,} distinct values; {result['unused_values']:,} base values of the "
               "hierarchy never occur")
    depths = result["notes"].get("leaf_depths")
    if depths:
        click.echo("note: leaves at several depths (" + ", ".join(f"{n} at depth {d}" for d, n in depths.items())
                   + "); a shallower leaf keeps its own label on the levels below its depth")
    for key, heading in _HEADINGS:
        found = result["problems"][key]
        if not found:
            continue
        click.echo(f"{heading}: {len(found)}")
        for p in found[:show]:
            click.echo(f"  {_problem_text(key, p)}")
        if len(found) > show:
            click.echo(f"  ... and {len(found) - show} more (--json lists all)")
    click.echo("clean" if result["clean"] else "problems found")


@click.group("hierarchy", cls=SqlanonGroup)
def hierarchy():
    """Author and check generalization hierarchies."""


@hierarchy.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--data", required=True, help="The data: a .csv or .parquet file, or a .duckdb file with --table.")
@click.option("--table", default=None, help="Table of the DuckDB file given as --data.")
@click.option("--column", default=None,
              help="Column the hierarchy is for (default: a wide file's first header cell).")
@click.option("--encoding", default="utf-8", show_default=True,
              help="The file's text encoding, as a policy's `encoding:` beside `hierarchy:` names it (latin-1, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@user_errors
def hierarchy_check(file, data, table, column, encoding, as_json):
    """List values missing from a hierarchy, duplicate values, values with two parents and levels that do
    not nest; exit 0 when clean, 3 when not. FILE is a wide CSV (one column per level) or an edge table
    (header child,parent)."""
    from ..files import encoding_name
    result = check_hierarchy(file, data, table, column, encoding_name(encoding, "--encoding"))
    if as_json:
        write_json(result, None)
    else:
        _print_check(result)
    if not result["clean"]:
        sys.exit(3)


COMMANDS.append(hierarchy)
