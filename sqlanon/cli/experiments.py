"""The commands of the attacks and the experiments.

    sqlanon attack POLICY [--node age=1,... | --minimal | --table RELEASE] [--attack homogeneity|similarity|all]
                          [--threshold 0.95] [--groups FILE.csv] [--group-level 1] [--json OUT] [--manifest OUT]
    sqlanon experiments [NAME ...] --out docs/experiments [--sample-rows N] [--landsend-rows N]
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from ..errors import PolicyError
from .common import (
    levels_text,
    parse_node,
    progress_for,
    refuse_non_json,
    refuse_one_output_twice,
    table_run,
    user_errors,
    write_json,
)

COMMANDS: list = []


def _table_policy(policy: str, table: str, db):
    """The policy re-pointed at an existing (released) table, values taken as they are (like `check --table`)."""
    from ..anonymizer import default_db
    from ..policy import load_policy
    pol = load_policy(policy)
    raw = dict(pol.raw)
    raw["source"] = {"table": table}
    if db is None:
        db = str(pol.source.database) if pol.source.kind == "table" and pol.source.database is not None \
            else str(default_db(pol))
    raw["quasi_identifiers"] = {q: {"hierarchy": "suppress"} for q in pol.quasi_identifiers}
    raw.pop("release", None)
    privacy = dict(raw.get("privacy") or {})
    privacy.pop("max_suppression", None)     # the release is judged as it is: nothing more is suppressed
    raw["privacy"] = privacy or {"k": 1}
    return load_policy(raw, base_dir=pol.base_dir), db


def _describe(report, show: int) -> list[str]:
    pct = 100.0 * report.exposed_rows / report.rows if report.rows else 0.0
    if report.attack == "homogeneity":
        what = ("homogeneity (all rows one value)" if report.threshold >= 1 else
                f"homogeneity (one value >= {report.threshold:.0%} of the rows)")
    else:
        what = f"similarity (all values in one of the groups {', '.join(report.groups or [])})"
    lines = [f"  {what}: {report.affected_blocks:,} of {report.blocks:,} blocks expose {report.exposed_rows:,} of "
             f"{report.rows:,} rows ({pct:.1f} %)"]
    if report.by_disclosed:
        lines.append("    disclosed: " + ", ".join(f"{k} {v:,} rows" for k, v in report.by_disclosed.items()))
    for ex in report.examples[:show]:
        share = "all" if ex.share >= 1 else f"{ex.share:.0%}"
        lines.append(f"    {levels_text(ex.block)}: {ex.rows:,} rows, {share} {ex.disclosed}")
    return lines


@click.command("attack")
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file (default: as `sqlanon anonymize` would use).")
@click.option("--node", default=None, help="Attack this node, e.g. age=2,sex=1,... (default: the node the policy "
              "would release).")
@click.option("--minimal", is_flag=True, help="Attack every minimal satisfying node and summarize (TKDD Figs. 9, 11).")
@click.option("--table", default=None, help="Attack an existing released table, its values as they are.")
@click.option("--attack", "which", type=click.Choice(["homogeneity", "similarity", "all"]), default="all",
              show_default=True, help="all = homogeneity, plus similarity when groups are known.")
@click.option("--threshold", type=float, default=0.95, show_default=True,
              help="Homogeneity: also report blocks where one value holds at least this share of the rows.")
@click.option("--sensitive", default=None, help="Sensitive attribute to attack (default: the policy's first).")
@click.option("--groups", type=click.Path(dir_okay=False), default=None,
              help="Similarity: CSV with the value in column 0 and its semantic group in column --group-level "
              "(default: the sensitive attribute's hierarchy in the policy).")
@click.option("--group-level", type=int, default=1, show_default=True)
@click.option("--show", type=click.IntRange(min=0), default=5, show_default=True,
              help="Exposed blocks to list per attack.")
@click.option("--json", "json_path", default=None, help="Write every report as JSON here ('-' = stdout).")
@click.option("--manifest", "manifest_path", default=None,
              help="Write the release manifest with an `attacks` section here (not with --table or --minimal).")
@click.option("--fail-if-exposed", is_flag=True, help="Exit 3 when any block is exposed (for release gates).")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no text report.")
@user_errors
def attack(policy, db, node, minimal, table, which, threshold, sensitive, groups, group_level, show, json_path,
           manifest_path, fail_if_exposed, quiet):
    """Homogeneity and similarity attacks on a release, a node, or every minimal node of a policy."""
    from .. import attacks
    from ..anonymizer import Anonymization
    if sum(x is not None and x is not False for x in (node, table, minimal or None)) > 1:
        raise PolicyError("--node/--minimal/--table", "give at most one of them")
    if table is not None and not table.strip():     # a blank name attacked the policy's chosen node instead
        raise PolicyError("--table", "give the name of the released table to attack (or leave --table out)")
    if not 0 < threshold <= 1:
        raise PolicyError("--threshold", f"must be a share in (0, 1], for example 0.95; got {threshold}")
    if manifest_path and (table or minimal):
        raise PolicyError("--manifest", "applies to the release of a policy (or --node), not to --table or --minimal")
    refuse_one_output_twice(json_path, manifest_path)
    reads = [policy] + ([groups] if groups else [])
    if json_path not in (None, "-"):
        refuse_non_json(Path(json_path), keep=reads)      # before the work; --manifest once the release is known
    quiet = quiet or "-" in (json_path, manifest_path)      # stdout holds the JSON alone
    if table:
        pol, db = _table_policy(policy, table, db)
    else:
        pol = policy
    progress = progress_for(quiet)
    with (table_run(pol, table, db, progress) if table else Anonymization(pol, db=db, progress=progress)) as run:
        if manifest_path not in (None, "-"):        # now that the release's name is known
            refuse_non_json(Path(manifest_path), "--manifest", keep=reads, manifest_of=run.policy.release.name)
        sens = attacks.sensitive_attribute(run, sensitive)
        has_groups = groups is not None or sens.domain.levels is not None
        if which == "similarity" and not has_groups:
            raise PolicyError("--groups", f"the similarity attack needs semantic groups of '{sens.name}': pass "
                              f"--groups FILE.csv or give it a hierarchy under sensitive: in the policy")
        kinds = []
        if which in ("homogeneity", "all"):
            kinds.append(("homogeneity", {"threshold": 1.0}))
            if threshold < 1:
                kinds.append(("homogeneity", {"threshold": threshold}))
        if which == "similarity" or (which == "all" and has_groups):
            kinds.append(("similarity", {"groups": groups, "level": group_level}))
        if minimal:
            targets = [run.lattice.levels(n) for n in run.search().minimal]
            if not quiet:
                click.echo(f"{len(targets)} minimal nodes of {run.lattice.size:,} "
                           f"({run.searched().evaluated:,} evaluated)")
        elif table or node is not None:     # --node '' is a malformed node, not "no node"
            targets = [{q: 0 for q in run.lattice.names} if table else parse_node(node)]
            if node is not None:
                run.use_node(attacks.check_levels(run, targets[0]))
        else:
            run.search()
            run.score_minimal()
            targets = [run.choose().levels]
        reports = []
        for levels in targets:
            node_reports = [attacks.attack_node(run, levels, kind, sensitive=sens.name, examples=show,
                                                **opts) for kind, opts in kinds]
            reports.append(node_reports)
            if not quiet and not minimal:
                where = f"table {table}" if table else f"node {levels_text(levels)}"
                r0 = node_reports[0]
                click.echo(f"{where}: {r0.blocks:,} blocks, {r0.rows:,} rows"
                           + (f" ({r0.suppressed_rows:,} suppressed)" if r0.suppressed_rows else "")
                           + f"; sensitive {sens.name}")
                if not r0.satisfied:
                    budget = (f" within its suppression budget of {run.checker.budget:,} rows"
                              if run.checker.budget else "")
                    click.echo(f"  note: this node does not satisfy the policy{budget}, so no release of it exists: "
                               "every class is attacked, the failing ones included")
                for r in node_reports:
                    click.echo("\n".join(_describe(r, show)))
        summary = []
        if minimal:
            for i, (kind, opts) in enumerate(kinds):
                s = attacks.summarize([rs[i] for rs in reports])
                s.update({"attack": kind,
                          "threshold": reports[0][i].threshold if reports else opts.get("threshold", 1.0)})
                summary.append(s)
                if not quiet:
                    label = (f"homogeneity >= {s['threshold']:.0%}" if kind == "homogeneity" else "similarity")
                    avg_g = "–" if s["avg_affected_groups"] is None else f"{s['avg_affected_groups']:.2f}"
                    avg_t = "–" if s["avg_affected_tuples"] is None else f"{s['avg_affected_tuples']:.2f}"
                    click.echo(f"  {label}: {s['affected_tables']} of {s['tables']} tables affected; per table "
                               f"{avg_g} groups and {avg_t} tuples on average")
        flat = [r for rs in reports for r in rs]
        if json_path:
            write_json({"policy": str(policy), "table": table, "sensitive": sens.name,
                         "nodes": [{"levels": rs[0].levels if rs else None, "attacks": [r.as_dict() for r in rs]}
                                   for rs in reports], "summary": summary}, json_path, keep=reads)
        if manifest_path:
            manifest = run.manifest()
            manifest["attacks"] = attacks.manifest_section(flat)
            write_json(manifest, manifest_path, keep=reads, manifest_of=run.policy.release.name)
    if fail_if_exposed and any(r.affected for r in flat):
        click.echo("sqlanon: attack: blocks are exposed (--fail-if-exposed)", err=True)
        sys.exit(3)


@click.command("experiments")
@click.argument("names", nargs=-1)
@click.option("--out", default="docs/experiments", show_default=True, type=click.Path(file_okay=False),
              help="Report folder: report.md, PNG plots, results.json.")
@click.option("--sample-rows", type=int, default=None,
              help="Run on a seeded sample of N Adult rows instead of all 45,222 (smoke runs; not comparable).")
@click.option("--landsend-rows", type=int, default=None,
              help="Rows of the synthetic Lands End table (default 4,591,581).")
@click.option("--repeat", type=int, default=3, show_default=True, help="Timed runs per Adult measurement (median).")
@click.option("--landsend-timeout", type=float, default=None,
              help="Seconds before a Lands End measurement is killed (default 120).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@user_errors
def experiments(names, out, sample_rows, landsend_rows, repeat, landsend_timeout, quiet):
    """Reproduce the papers' experiments: homogeneity, performance, utility, similarity, facts, maxent, marginals
    (all by default)."""
    from ..experiments import NAMES
    from ..experiments.runner import run_experiments
    for n in names:
        if n not in NAMES:
            raise PolicyError("NAME", f"unknown experiment {n!r}; choose from {', '.join(NAMES)}")
    for opt, v, low in (("--sample-rows", sample_rows, 100), ("--landsend-rows", landsend_rows, 100),
                        ("--repeat", repeat, 1)):
        if v is not None and v < low:
            raise PolicyError(opt, f"must be at least {low}; got {v}")
    if landsend_timeout is not None and not (math.isfinite(landsend_timeout) and landsend_timeout > 0):
        raise PolicyError("--landsend-timeout", f"must be a positive number of seconds; got {landsend_timeout}")
    log = None if quiet else (lambda text: click.echo(f"sqlanon: {text}", err=True))
    data = run_experiments(names, out, sample_rows, landsend_rows, repeat, landsend_timeout, log=log)
    if not quiet:
        click.echo(f"wrote {Path(out) / 'report.md'}, {Path(out) / 'results.json'} and "
                   f"{sum(len(v) for v in data['figures'].values())} plots in {data['seconds']['total']:.1f} s")


COMMANDS.extend([attack, experiments])
