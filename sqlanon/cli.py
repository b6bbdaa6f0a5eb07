"""The `sqlanon` command line (docs/DESIGN.md section 3.2).

Exit codes: 0 success; 2 bad policy or bad input (one line naming the field, column or value, no
traceback); 3 a table that does not satisfy the policy (`check`), so a scheduler can block a release.
"""
from __future__ import annotations

import json
import sys
from functools import wraps
from importlib import resources
from pathlib import Path

import click

from . import __version__
from .cli_common import parse_node as _parse_node
from .errors import PrivacyNotMet, UserError
from .progress import Progress

DIALECTS = ("duckdb", "postgres", "spark", "trino", "bigquery", "snowflake")


def _fail(message: str, code: int) -> None:
    click.echo(f"sqlanon: error: {message}", err=True)
    sys.exit(code)


def user_errors(fn):
    """Turn user errors into one line and an exit code; anything else is a bug and keeps its traceback."""
    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            _fail(str(e), e.exit_code)
        except PrivacyNotMet as e:
            _fail(str(e), e.exit_code)
    return wrapper


def _progress(quiet: bool) -> Progress:
    return Progress(enabled=False) if quiet else Progress()


def _run(policy, db, quiet, mode="incognito"):
    """An Anonymization with its minimal nodes found; use it in a `with` block."""
    from .anonymizer import Anonymization
    run = Anonymization(policy, db=db, progress=_progress(quiet))
    try:
        run.search(mode)
    except BaseException:
        run.close()
        raise
    return run


def _write_json(data: dict, path: str | None) -> None:
    text = json.dumps(data, indent=2, default=_json_default)
    if path in (None, "-"):
        click.echo(text)
    else:
        tmp = Path(path).with_name(Path(path).name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(path)


def _json_default(o):
    import numpy as np
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o).__name__)


def _levels_text(levels: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in levels.items())


def _summary(run) -> None:
    m = run.manifest()
    c = m["chosen"]
    click.echo(f"source: {m['source']['table']} ({m['source']['rows']:,} rows)")
    click.echo(f"lattice: {m['lattice']['nodes']:,} nodes, {m['lattice']['evaluated']:,} evaluated, "
               f"{len(m['lattice']['minimal'])} minimal in {run.timings.get('search', 0):.2f} s")
    click.echo(f"chosen by {run.policy.utility}: {_levels_text(c['levels'])}")
    click.echo(f"  {c['classes']:,} classes, {c['suppressed_rows']:,} rows suppressed, metrics "
               + ", ".join(f"{k}={v:g}" for k, v in c["metrics"].items()))
    click.echo("privacy achieved: " + ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"
                                                 for k, v in m["privacy"].items()))
    for o in m["outputs"]:
        where = ""
        if o["kind"] in ("table", "view") and (run.backend.path or run.backend.engine != "duckdb"):
            where = f" in {run.backend.path or run.backend.describe()}"
        click.echo(f"released {o['kind']} {o['name']}{where}: {o['rows']:,} rows")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    adult = resources.files("sqlanon.datasets.adult")
    with resources.as_file(adult.joinpath("adult_demo.yaml")) as path, _run(str(path), db, quiet) as run:
        run.choose()
        run.materialize()
        _summary(run)
        _write_json(run.manifest(), json_path)
        click.echo(f"manifest: {json_path}")
        if report_path:
            # occupation's semantic groups (the shipped hierarchy) for the similarity attack
            with resources.as_file(adult.joinpath("hierarchies", "occupation.csv")) as groups:
                run.report(report_path, groups=str(groups), manifest_path=json_path)
            click.echo(f"report: {report_path}")


@main.command()
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--json", "json_path", default=None, help="Write the release manifest (JSON) here ('-' = stdout).")
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file for the release (default: the source's database, or a file beside the policy).")
@click.option("--mode", type=click.Choice(["incognito", "brute_force"]), default="incognito", show_default=True)
@click.option("-q", "--quiet", is_flag=True, help="No progress display and no summary.")
@user_errors
def anonymize(policy, json_path, db, mode, quiet):
    """Search the lattice, choose the best minimal node, materialize the release."""
    with _run(policy, db, quiet, mode) as run:
        run.choose()
        run.materialize()
        if not quiet and json_path != "-":
            _summary(run)
        if json_path:
            _write_json(run.manifest(), json_path)


@main.command()
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--mode", type=click.Choice(["incognito", "brute_force"]), default="incognito", show_default=True)
@click.option("--metrics", type=click.Choice(["policy", "all"]), default="policy", show_default=True,
              help="Score each minimal node by the policy's utility metric only, or by all four.")
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def lattice(policy, db, as_json, mode, metrics, quiet):
    """Every minimal node that satisfies the policy, with its metrics, and the node a release would use."""
    with _run(policy, db, quiet, mode) as run:
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
        _write_json(data, None)
    else:
        click.echo(f"{data['nodes']:,} nodes, {data['evaluated']:,} evaluated, {len(data['minimal'])} minimal")
        for c in data["minimal"]:
            click.echo(f"  {_levels_text(c['levels'])}  " + " ".join(f"{k}={v:g}" for k, v in c["metrics"].items()))
        r = data["release"]
        where = "a minimal node" if r["released_is_minimal"] else "above the minimal nodes"
        click.echo(f"release ({r['method']}, {where}, {r['nodes_scored']:,} nodes scored): {_levels_text(r['levels'])}  "
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
    from .anonymizer import Anonymization
    from .policy import load_policy, source_with_table
    from .errors import PolicyError
    pol = load_policy(policy)
    if table is not None:
        if node is not None:
            raise PolicyError("--node", "give --node or --table, not both")
        raw = dict(pol.raw)
        raw["source"] = source_with_table(pol.raw.get("source"), table)   # same engine and connection
        if pol.source.kind == "table" and pol.source.database is not None and db is None:
            db = str(pol.source.database)
        raw["quasi_identifiers"] = {q: {"hierarchy": "suppress"} for q in pol.quasi_identifiers}
        raw["sensitive"] = list(pol.sensitive) if all(v is None for v in pol.sensitive.values()) else raw["sensitive"]
        pol = load_policy(raw, base_dir=pol.base_dir)
        if db is None:
            from .anonymizer import default_db
            db = str(default_db(load_policy(policy)))
    with Anonymization(pol, db=db, progress=Progress(enabled=False)) as run:
        view = _view_coverage(run, load_policy(policy), table)
        satisfied = _check_report(run, node, table, as_json, view) and not (view or {}).get("drifted")
    if not satisfied:
        sys.exit(3)


def _view_coverage(run, policy, table):
    """For the policy's own view release: its coverage and drift (sqlanon/views.py); None otherwise."""
    from .views import view_release_coverage
    return view_release_coverage(run.backend, policy, table) if table else None


def _check_report(run, node, table, as_json, view=None) -> bool:
    levels = _parse_node(node) if node else {q: 0 for q in run.lattice.names}
    res = run.evaluate(levels)
    failing = int((~res.ok).sum())
    report = {"table": table or run.policy.source.label, "levels": levels, "rows": run.fs.rows,
              "classes": int(len(res.ok)), "failing_classes": failing, "suppressed_rows": res.suppressed_rows,
              "budget_rows": run.checker.budget, "satisfied": bool(res.satisfied),
              "achieved": run.achieved(_all_blocks(res))}
    if failing:
        sizes = res.counts.sizes[~res.ok]
        report["failing_examples"] = [
            {"block": {q: _label(run, q, lvl, int(code)) for (q, lvl), code in zip(levels.items(), codes)},
             "rows": int(n)}
            for codes, n in list(zip(res.counts.block_codes[~res.ok], sizes))[:10]]
    if view is not None:
        report["view"] = view
    if as_json:
        _write_json(report, None)
    else:
        click.echo(f"{report['table']}: {report['rows']:,} rows in {report['classes']:,} classes at "
                   f"{_levels_text(levels)}")
        click.echo("achieved: " + ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"
                                            for k, v in report["achieved"].items()))
        click.echo(f"failing classes: {failing} ({res.suppressed_rows:,} rows; suppression budget "
                   f"{run.checker.budget:,} rows)")
        for ex in report.get("failing_examples", []):
            click.echo(f"  {_levels_text(ex['block'])}: {ex['rows']} rows")
        click.echo("satisfies the policy" if res.satisfied else "does NOT satisfy the policy")
        if view is not None:
            from .views import coverage_lines
            for line in coverage_lines(view):
                click.echo("view release: " + line)
            for reason in view["reasons"]:
                click.echo("drifted: " + reason)
    return bool(res.satisfied)


def _all_blocks(res):
    """The node result with no block suppressed: achieved values over every block."""
    import numpy as np
    from .checker import NodeResult
    return NodeResult(res.levels, res.satisfied, res.counts, np.ones(len(res.ok), dtype=bool), 0)


def _label(run, qi: str, level: int, code: int) -> str:
    q = run.fs.qi(qi)
    codes = q.hierarchy.codes()[level]
    idx = int((codes == code).argmax())
    return q.hierarchy.labels[level][idx]


@main.command()
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--dialect", type=click.Choice(DIALECTS), default="duckdb", show_default=True)
@click.option("--db", type=click.Path(dir_okay=False), default=None)
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def sql(policy, dialect, db, quiet):
    """The SQL for a POLICY (searched now) or a release MANIFEST (.json: its recorded node, no search),
    transpiled by sqlglot: mapping tables, frequency sets, the node query, the release SELECT."""
    from .sqlgen import policy_sql
    if policy.lower().endswith(".json"):
        from .applying import open_manifest
        with open_manifest(policy, db=db) as run:
            click.echo(policy_sql(run, dialect))
        return
    with _run(policy, db, quiet) as run:
        run.choose()
        click.echo(policy_sql(run, dialect))


@main.command()
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.option("--source", "new_source", required=True,
              help="The new rows: a table in --db, or a .csv / .parquet file.")
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file holding the source table and receiving the release (default: the manifest's).")
@click.option("--name", default=None, help="Release name (default: the manifest's).")
@click.option("--json", "json_path", default=None, help="Write the new manifest here ('-' = stdout).")
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def apply(manifest, new_source, db, name, json_path, quiet):
    """Apply a manifest's exact transformation to new rows; refuse (exit 3) if the models no longer hold."""
    from .applying import apply_manifest
    run = apply_manifest(manifest, new_source, db=db, name=name)
    with run:
        if not quiet and json_path != "-":
            _summary(run)
        if json_path:
            _write_json(run.manifest(), json_path)


def _register_feature_commands() -> None:
    """Commands that live beside their feature (attacks, experiments), each module listing COMMANDS."""
    from . import views_cli, workflow_cli
    from .experiments import cli as experiments_cli
    from .marginals import cli as marginals_cli
    from .maxent import cli as maxent_cli
    for module in (experiments_cli, workflow_cli, views_cli, marginals_cli, maxent_cli):
        for command in module.COMMANDS:
            main.add_command(command)


_register_feature_commands()


if __name__ == "__main__":  # pragma: no cover
    main()
