"""The `sqlanon` command line (docs/DESIGN.md section 3.2).

Exit codes: 0 success; 2 bad policy or bad input (one line naming the field, column or value, no
traceback), or a release refused because it would replace something sqlanon did not make (`sqlanon.catalog`);
3 a table that does not satisfy the policy (`check`), so a scheduler can block a release; 130 interrupted
(Ctrl-C: "sqlanon: interrupted" on stderr, and nothing written: the swap's transaction rolls back, the
temporary tables are dropped, a database file the run created is removed).
"""
from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import click

from ..progress import Progress
from ..version import __version__
from .common import (
    SqlanonGroup,
    levels_text,
    manifest_target,
    parse_node,
    refuse_non_json,
    search_run,
    table_run,
    user_errors,
    write_json,
)

DIALECTS = ("duckdb", "postgres", "spark", "trino", "bigquery", "snowflake")


def _node_lines(run, levels: dict) -> list[str]:
    """One line per quasi-identifier: its level, and what a value becomes there (an example from the
    hierarchy: the middle base value and its label at that level)."""
    width = max(len(q) for q in levels)
    out = []
    for name, level in levels.items():
        h = run.fs.qi(name).hierarchy
        i = len(h.values) // 2
        if level == 0:
            shown = "kept as is"
        elif len(set(h.labels[level])) == 1:
            shown = f"all values -> {h.labels[level][0]}"
        else:
            shown = f"e.g. {h.values[i]} -> {h.labels[level][i]}"
        out.append(f"  {name:<{width}}  level {level} of {h.height}: {shown}")
    return out


def _summary(run, manifest_path=None) -> None:
    m = run.manifest()
    c = m["chosen"]
    click.echo(f"source: {m['source']['table']} ({m['source']['rows']:,} rows)")
    lat, search = m["lattice"], m.get("search") or {}
    if search.get("method") == "given node":       # `apply`: the manifest's node, no search (it stopped here)
        click.echo(f"lattice: {lat['nodes']:,} nodes; the node given, not searched for")
    elif lat["minimal"] is None:          # the bounded optimum search: no list of minimal nodes
        click.echo(f"lattice: {lat['nodes']:,} nodes, {lat['evaluated']:,} evaluated in "
                   f"{run.timings.get('optimum', 0):.2f} s, only among nodes with at most "
                   f"{search['searched_nodes_with_at_most_suppressed_rows']:,} suppressed rows (no other node can "
                   "beat the greedy release; `sqlanon lattice` lists every minimal node)")
    else:
        click.echo(f"lattice: {lat['nodes']:,} nodes, {lat['evaluated']:,} evaluated, "
                   f"{len(lat['minimal'])} minimal in {run.timings.get('search', 0):.2f} s")
    click.echo(f"chosen by {run.policy.utility}: {levels_text(c['levels'])}")
    if search.get("method") not in (None, "given node"):
        where = "a minimal node" if search["released_is_minimal"] else "above the minimal nodes"
        proven = "the proven optimum" if search["proven_optimal"] else "the best found, NOT proven optimal"
        click.echo(f"  {proven} over every satisfying node ({search['method']}; {where}; "
                   f"{search['nodes_scored']:,} nodes scored, {search['nodes_pruned_by_bound']:,} pruned by bound)")
    for line in _node_lines(run, c["levels"]):
        click.echo(line)
    click.echo(f"  {c['classes']:,} classes, {c['suppressed_rows']:,} rows suppressed, metrics "
               + ", ".join(f"{k}={v:g}" for k, v in c["metrics"].items()))
    click.echo("privacy achieved: " + ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"
                                                 for k, v in m["privacy"].items()))
    where = run.backend.path.resolve() if run.backend.path else run.backend.describe()
    for o in m["outputs"]:
        if o["kind"] in ("table", "view", "marginal"):
            click.echo(f"released {o['kind']} {o['name']} in {where}: {o['rows']:,} rows")
        else:
            click.echo(f"exported {o['name']} ({o['kind']}): {o['rows']:,} rows")
    if not m["outputs"]:
        click.echo("released nothing (release.materialize: none)")
    else:
        from ..catalog import CATALOG
        click.echo(f"recorded in {CATALOG} in {where}")
    if manifest_path is not None:
        click.echo(f"manifest: {manifest_path}")


def _release(run, json_path: str | None, force: bool, quiet: bool, companions=()) -> Path:
    """Materialize, then write the manifest file (its JSON is already in the catalog row); `--json -` also
    prints it. Returns the manifest path."""
    path = manifest_target(run, json_path, force)
    # the manifest file inside the release's transaction: no release without its file (a full disk, Ctrl-C)
    if not run.materialize(companions, force=force, manifest_path=path):
        run.write_manifest(path)        # nothing released (materialize: none): the manifest is still the record
    if json_path == "-":
        write_json(run.manifest(), None)
    elif not quiet:
        _summary(run, path)
    return path


@click.group(cls=SqlanonGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sqlanon")
def main():
    """sqlanon: anonymize tables inside the database (k-anonymity, l-diversity, t-closeness)."""


@main.command()
@click.option("--db", type=click.Path(dir_okay=False), default="sqlanon_demo.duckdb", show_default=True,
              help="DuckDB file to write the release into.")
@click.option("--json", "json_path", default="sqlanon_demo.json", show_default=True, help="Manifest path.")
@click.option("--report", "report_path", default="sqlanon_demo.html", show_default=True,
              help="HTML release report (sqlanon report); '' for none.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@user_errors
def demo(db, json_path, report_path, quiet):
    """Anonymize the embedded UCI Adult data (45,222 rows): 5-anonymity over 8 quasi-identifiers."""
    from ..catalog import ReleaseRefused
    from ..report import check_report_target
    if report_path:         # before anything is released: the report may not replace a file that is not one
        check_report_target(report_path, {Path(db).resolve(): "the database",
                                          Path(json_path).resolve(): "the manifest"},
                            way_out="or give --report another path")
    adult = resources.files("sqlanon.datasets.adult")
    with resources.as_file(adult.joinpath("adult_demo.yaml")) as path, search_run(str(path), db, quiet) as run:
        run.choose()
        try:
            _release(run, json_path, False, False)
        except ReleaseRefused as e:     # the ways out the refusal names are a policy's and anonymize's
            raise ReleaseRefused(_demo_way_out(str(e))) from None
        if report_path:
            # occupation's semantic groups (the shipped hierarchy) for the similarity attack
            with resources.as_file(adult.joinpath("hierarchies", "occupation.csv")) as groups:
                run.report(report_path, groups=str(groups), manifest_path=json_path)
            click.echo(f"report: {report_path}")


def _demo_way_out(message: str) -> str:
    """A refusal of the demo's release told to pass --force (demo has none) or to choose another release.name (the
    demo's policy is built in): its ways out are --json and --db."""
    for theirs, ours in ((" (pass --force to replace it)", ""), (", remove it, or pass --force", ", or remove it"),
                         ("choose another release.name", "give --db another file"),
                         ("choose another path", "give --json another path")):
        message = message.replace(theirs, ours)
    return message


JSON_HELP = ("Manifest path (default: <release>.manifest.json beside the database, or beside the policy when the "
             "database is not a file); '-' also prints it on stdout.")
FORCE_HELP = ("Overwrite an existing export or manifest path the release catalog does not show sqlanon wrote "
              "(never the source, the policy, a hierarchy file or the database).")


@main.command()
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--json", "json_path", default=None, help=JSON_HELP)
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file for the release (default: the source's database, or a file beside the policy).")
@click.option("--mode", type=click.Choice(["incognito", "brute_force", "heuristic"]), default="incognito",
              show_default=True)
@click.option("--force", is_flag=True, help=FORCE_HELP)
@click.option("-q", "--quiet", is_flag=True, help="No progress display and no summary.")
@user_errors
def anonymize(policy, json_path, db, mode, force, quiet):
    """Search the lattice, choose the best satisfying node, materialize the release, write its manifest."""
    # the default mode leaves the search to `choose`: with suppression and discernibility it looks only at
    # the nodes that can beat a greedy release, without listing every minimal node (`sqlanon lattice` does)
    with search_run(policy, db, quiet, mode if mode != "incognito" else None) as run:
        run.choose()
        _release(run, json_path, force, quiet)


@main.command()
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--mode", type=click.Choice(["incognito", "brute_force", "heuristic"]), default="incognito",
              show_default=True)
@click.option("--metrics", type=click.Choice(["policy", "all"]), default="policy", show_default=True,
              help="Score each minimal node by the policy's utility metric only, or by all four.")
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def lattice(policy, db, as_json, mode, metrics, quiet):
    """Every minimal node that satisfies the policy, with its metrics, and the node a release would use."""
    with search_run(policy, db, quiet, mode) as run:
        run.score_minimal(metrics)
        run.choose()
        _print_lattice(run, as_json)


def _print_lattice(run, as_json: bool) -> None:
    data = {"nodes": run.lattice.size, "evaluated": run.result.evaluated,
            "seconds": round(run.timings["search"], 4),
            "minimal": [c.as_dict() for c in run.candidates],
            "release": {"levels": dict(run.chosen.levels), "metrics": dict(run.chosen.metrics),
                        **run.optimum.as_dict()}}
    if as_json:
        write_json(data, None)
    else:
        click.echo(f"{data['nodes']:,} nodes, {data['evaluated']:,} evaluated, {len(data['minimal'])} minimal")
        for c in data["minimal"]:
            click.echo(f"  {levels_text(c['levels'])}  " + " ".join(f"{k}={v:g}" for k, v in c["metrics"].items()))
        r = data["release"]
        where = "a minimal node" if r["released_is_minimal"] else "above the minimal nodes"
        click.echo(f"release ({r['method']}, {where}, {r['nodes_scored']:,} nodes scored): {levels_text(r['levels'])}  "
                   f"{run.policy.utility}={r['metrics'][run.policy.utility]:g}")


@main.command()
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), default=None)
@click.option("--node", default=None, help="Check this node, e.g. age=2,sex=1,... (default: the source as it is).")
@click.option("--table", default=None, help="Check an existing table (e.g. a release) with its values as they are.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@user_errors
def check(policy, db, node, table, as_json):
    """The privacy an existing table, or one node, achieves; exit 0 if it satisfies the policy, 3 if not."""
    from ..anonymizer import Anonymization
    from ..errors import PolicyError
    from ..policy import load_policy
    from ..script import check_source
    pol = load_policy(policy)
    if table is not None:
        if node is not None:
            raise PolicyError("--node", "give --node or --table, not both")
        raw = dict(pol.raw)
        raw["source"] = check_source(pol, table)     # same engine and connection; a view release's NULLs at '*'
        if pol.source.kind == "table" and pol.source.database is not None and db is None:
            db = str(pol.source.database)
        raw["quasi_identifiers"] = {q: {"hierarchy": "suppress"} for q in pol.quasi_identifiers}
        raw["sensitive"] = list(pol.sensitive) if all(v is None for v in pol.sensitive.values()) else raw["sensitive"]
        # a table is judged as it is published: nothing more can be suppressed from it (the budget passed a table
        # of classes under k as "satisfies", their rows counted as suppressed)
        raw["privacy"] = {key: value for key, value in (raw.get("privacy") or {}).items() if key != "max_suppression"}
        pol = load_policy(raw, base_dir=pol.base_dir)
        if db is None:
            from ..anonymizer import default_db
            db = str(default_db(load_policy(policy)))
    with (table_run(pol, table, db) if table is not None else
          Anonymization(pol, db=db, progress=Progress(enabled=False))) as run:
        view = _view_coverage(run, load_policy(policy), table)
        satisfied = _check_report(run, node, table, as_json, view) and not (view or {}).get("drifted")
    if not satisfied:
        sys.exit(3)


def _view_coverage(run, policy, table):
    """For the policy's own view release: its coverage and drift (sqlanon/views.py); None otherwise."""
    from ..views import view_release_coverage
    return view_release_coverage(run.backend, policy, table) if table else None


def _check_report(run, node, table, as_json, view=None) -> bool:
    from ..errors import PolicyError
    levels = parse_node(node) if node is not None else {q: 0 for q in run.lattice.names}
    unknown = [q for q in levels if q not in run.lattice.names]
    if unknown:         # ignored before: `check` judged another node than the one written
        raise PolicyError(f"--node {unknown[0]}", f"not a quasi-identifier of the policy "
                          f"({', '.join(run.lattice.names)})")
    res = run.evaluate(levels)
    failing = int((~res.ok).sum())
    report = {"table": table or run.policy.source.label, "levels": levels, "rows": run.fs.rows,
              "classes": int(len(res.ok)), "failing_classes": failing, "suppressed_rows": res.suppressed_rows,
              "budget_rows": run.checker.budget, "satisfied": bool(res.satisfied),
              # a node that satisfies by suppressing its failing classes: what its release would achieve (as the
              # manifest of that node says); otherwise what every class achieves
              "achieved": run.achieved(res if res.satisfied else _all_blocks(res))}
    if res.satisfied and res.suppressed_rows:
        report["achieved_by_every_class"] = run.achieved(_all_blocks(res))
    if failing:
        sizes = res.counts.sizes[~res.ok]
        report["failing_examples"] = [
            {"block": {q: _label(run, q, lvl, int(code)) for (q, lvl), code in zip(levels.items(), codes)},
             "rows": int(n)}
            for codes, n in list(zip(res.counts.block_codes[~res.ok], sizes))[:10]]
    if view is not None:
        report["view"] = view
    if as_json:
        write_json(report, None)
    else:
        click.echo(f"{report['table']}: {report['rows']:,} rows in {report['classes']:,} classes at "
                   f"{levels_text(levels)}")
        def shown(achieved: dict) -> str:
            return ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in achieved.items())
        if "achieved_by_every_class" in report:
            click.echo("achieved by the classes released (the failing ones suppressed): " + shown(report["achieved"]))
            click.echo("achieved by every class: " + shown(report["achieved_by_every_class"]))
        else:
            click.echo("achieved: " + shown(report["achieved"]))
        click.echo(f"failing classes: {failing} ({res.suppressed_rows:,} rows; suppression budget "
                   f"{run.checker.budget:,} rows)")
        for ex in report.get("failing_examples", []):
            click.echo(f"  {levels_text(ex['block'])}: {ex['rows']} rows")
        click.echo("satisfies the policy" if res.satisfied else "does NOT satisfy the policy")
        if view is not None:
            from ..views import coverage_lines
            for line in coverage_lines(view):
                click.echo("view release: " + line)
            for reason in view["reasons"]:
                click.echo("drifted: " + reason)
    return bool(res.satisfied)


def _all_blocks(res):
    """The node result with no block suppressed: achieved values over every block."""
    import numpy as np

    from ..checker import NodeResult
    return NodeResult(res.levels, res.satisfied, res.counts, np.ones(len(res.ok), dtype=bool), 0)


def _label(run, qi: str, level: int, code: int) -> str:
    q = run.fs.qi(qi)
    codes = q.hierarchy.codes()[level]
    idx = int((codes == code).argmax())
    return q.hierarchy.labels[level][idx]


@main.command()
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--dialect", type=click.Choice(DIALECTS), default=None,
              help="Default: duckdb; for a view release, the policy's engine.")
@click.option("--db", type=click.Path(dir_okay=False), default=None)
@click.option("--source", "source_table", default=None,
              help="Table the script reads (default: the policy's source table).")
@click.option("--steps", is_flag=True,
              help="Print the statements of the search instead (mapping tables, frequency sets, node query), "
                   "for reading: they need sqlanon's work tables.")
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def sql(policy, dialect, db, source_table, steps, quiet):
    """A script for a POLICY (searched now) or a release MANIFEST (.json: its recorded node, no search),
    transpiled by sqlglot: one self-contained SELECT whose rows are the release, runnable as it is on a
    database holding only the source table (mapping tables inline as VALUES). For a view release
    (release.materialize: view) the CREATE VIEW of the self-enforcing view the release creates."""
    from ..script import release_script, view_script
    from ..sqlgen import policy_sql

    _named_source(source_table)
    with _chosen(policy, db, quiet) as run:
        if steps:
            click.echo(policy_sql(run, dialect or "duckdb"))
        elif run.policy.release.materialize == "view":
            click.echo(view_script(run, dialect, source=source_table))
        else:
            click.echo(release_script(run, dialect or "duckdb", source=source_table))


def _named_source(source_table: str | None) -> None:
    """`--source ''` (or blank) wrote a script reading sqlanon's internal name for the source, which fails where
    it runs: refused before the search."""
    from ..errors import PolicyError
    if source_table is not None and not source_table.strip():
        raise PolicyError("--source", "give the name of the table the script reads (or leave --source out)")


def _chosen(policy: str, db, quiet: bool):
    """A run at a release MANIFEST's recorded node (.json, no search) or at a POLICY's chosen node (searched
    now); use it in a `with` block."""
    if policy.lower().endswith(".json"):
        from ..applying import open_manifest
        return open_manifest(policy, db=db)
    run = search_run(policy, db, quiet)
    try:
        run.choose()
    except BaseException:
        run.close()
        raise
    return run


@main.command()
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--project", required=True, type=click.Path(file_okay=False),
              help="The dbt project folder (holding dbt_project.yml).")
@click.option("--dialect", type=click.Choice(DIALECTS), default="duckdb", show_default=True,
              help="The SQL dialect of the project's warehouse.")
@click.option("--source", "source_table", default=None, help="Table the model reads (default: the policy's).")
@click.option("--source-schema", default=None, help="Schema of that table (default: the dbt target's schema).")
@click.option("--db", type=click.Path(dir_okay=False), default=None)
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def dbt(policy, project, dialect, source_table, source_schema, db, quiet):
    """Write a POLICY's (searched now) or a release MANIFEST's (.json) release into a dbt project: the model,
    its source, and schema tests that fail when the model stops satisfying the policy."""
    from ..dbt import write_project

    _named_source(source_table)
    with _chosen(policy, db, quiet) as run:
        for path in write_project(run, project, dialect, source_table, source_schema):
            if not quiet:
                click.echo(f"wrote {path}")


@main.command()
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.option("--source", "new_source", required=True,
              help="The new rows: a table in --db, or a .csv / .parquet file.")
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file holding the source table and receiving the release (default: the manifest's).")
@click.option("--name", default=None, help="Release name (default: the manifest's).")
@click.option("--json", "json_path", default=None, help=JSON_HELP)
@click.option("--force", is_flag=True, help=FORCE_HELP)
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def apply(manifest, new_source, db, name, json_path, force, quiet):
    """Apply a manifest's exact transformation to new rows; refuse (exit 3) if the models no longer hold."""
    from ..applying import open_manifest, require_satisfied
    with open_manifest(manifest, new_source, db=db, name=name) as run:
        require_satisfied(run)
        _release(run, json_path, force, quiet)


@main.command()
@click.option("--out", "out_path", default=None, type=click.Path(dir_okay=False),
              help="Write the schema into this file instead of printing it.")
@user_errors
def schema(out_path):
    """Print the policy's JSON Schema (draft 2020-12) for editors: point a YAML language server at it."""
    from ..policy_model import SCHEMA_ID, json_schema_text
    text = json_schema_text()
    if out_path is None:
        click.echo(text, nl=False)
    else:
        # never a policy or a manifest given by mistake: only a schema it wrote
        refuse_non_json(Path(out_path), "--out", ours=lambda path: SCHEMA_ID.encode() in path.read_bytes()[:400])
        from ..files import write_atomically
        write_atomically(Path(out_path), text)


def _register_feature_commands() -> None:
    """The commands of the other modules of this package, each module listing its COMMANDS."""
    from . import experiments, marginals, maxent, risk, views, workflow
    for module in (experiments, workflow, views, marginals, maxent, risk):
        for command in module.COMMANDS:
            main.add_command(command)


_register_feature_commands()
