"""`sqlanon status MANIFEST`: how far a view release has drifted (sqlanon/views.py).

    sqlanon status MANIFEST [--db PATH] [--renode/--no-renode] [--json]

Exit code 0 when the live view is within the policy's ``release.drift`` limits, 3 when it has drifted
past them (a scheduler can then re-run ``sqlanon anonymize`` or ``sqlanon apply``), 2 for bad input.
"""
from __future__ import annotations

import json
import sys

import click

from .common import user_errors

COMMANDS: list = []


@click.command("status")
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file holding the release (default: the manifest's).")
@click.option("--renode/--no-renode", default=None,
              help="Search the live source again and report whether another node would be chosen "
                   "(default: the policy's release.drift.renode).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("-q", "--quiet", is_flag=True,
              help="Accepted as by the other commands; status shows no progress (its report is its output).")
@user_errors
def status(manifest, db, renode, as_json, quiet):
    """Drift of a view release against its MANIFEST: rows suppressed at read time, rows with unknown values,
    and whether a new search would choose another node; exit 3 past the policy's release.drift limits."""
    from ..applying import view_status
    from ..views import coverage_lines
    out = view_status(manifest, db=db, renode=renode)
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"view {out['release']} (released at {out['released_levels']})")
        for line in coverage_lines(out):
            click.echo("  " + line)
        if out.get("renode_error"):
            click.echo("  a new search cannot run on the live source")
        elif "new_levels" in out:
            same = out["new_levels"] == out["released_levels"]
            click.echo(f"  a new search chooses {'the same node' if same else out['new_levels']}")
        for reason in out["reasons"]:
            click.echo("drifted: " + reason)
        if not out["drifted"]:
            click.echo("within the release.drift limits")
    if out["drifted"]:
        sys.exit(3)


COMMANDS.append(status)
