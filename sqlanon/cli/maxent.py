"""The commands of sqlanon.maxent.

    sqlanon bucketize POLICY --l 5 [--name NAME] [--not-counted VALUE ...] [--most-frequent-not-counted]
                             [--exact-size] [--buckets N] [--seed TEXT] [--no-private] [--db PATH] [--json OUT] [-q]
    sqlanon maxent POLICY [--knowledge FILE] [--positive K] [--negative K] [--min-support 3]
                          [--buckets NAME | --node age=1,...] [--name OUT] [--tolerance 1e-6]
                          [--db PATH] [--json OUT] [--manifest OUT] [--no-write] [-q]

`maxent` exits 2 (one line) on infeasible knowledge, like any bad input.
"""
from __future__ import annotations

from pathlib import Path

import click

from ..errors import PolicyError
from .common import (
    parse_node,
    progress_for,
    refuse_non_json,
    refuse_one_output_twice,
    stage_json,
    user_errors,
    write_json,
)

COMMANDS: list = []


def _say(quiet: bool):
    return (lambda text: None) if quiet else (lambda text: click.echo(f"sqlanon: {text}", err=True))


@click.command("bucketize")
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--l", "l", type=int, required=True, help="Distinct l-diversity: counted sensitive values per bucket.")
@click.option("--name", default=None,
              help="Tables NAME_qit, NAME_st, NAME_private (default: the policy's release name).")
@click.option("--not-counted", multiple=True, help="A sensitive value that does not count for diversity (repeatable).")
@click.option("--most-frequent-not-counted", is_flag=True,
              help="The most frequent sensitive value does not count (Privacy-MaxEnt Section 7, footnote 3).")
@click.option("--exact-size", is_flag=True, help="Every bucket exactly l rows; rows that do not fit are left out.")
@click.option("--seed", default=None, help="Seed of the order in which a value's rows are taken (and of --buckets).")
@click.option("--buckets", "sample", type=int, default=None,
              help="Release only N of the buckets, a seeded random sample (the paper's 2,842 of Adult).")
@click.option("--no-private", is_flag=True, help="Do not keep NAME_private (the pseudonym -> value link).")
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file for the tables (default: the source's database, or a file beside the policy).")
@click.option("--json", "json_path", default=None, help="Write what was released as JSON here ('-' = stdout).")
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def bucketize(policy, l, name, not_counted, most_frequent_not_counted, exact_size, seed, sample, no_private, db,
              json_path, quiet):
    """Bucketize the policy's source (Anatomy): distinct l-diverse buckets, published as a quasi-identifier
    table and a sensitive table."""
    from ..maxent.anatomy import DEFAULT_SEED, bucketize_policy
    if json_path not in (None, "-"):
        refuse_non_json(Path(json_path), keep=[policy])      # before any table is written
    to_file = json_path not in (None, "-")
    rel = bucketize_policy(policy, l, name, db=db, not_counted=list(not_counted),
                           most_frequent_not_counted=most_frequent_not_counted, exact_size=exact_size,
                           seed=DEFAULT_SEED if seed is None else seed, private=not no_private, buckets=sample,
                           # the report is written with the tables: one that cannot be written rolls them back
                           files=(lambda r: [stage_json(r.as_dict(), json_path, keep=[policy])]) if to_file else None)
    if not quiet and json_path != "-":
        left = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in rel.left_out.items() if v)
        sampled = (f" (a sample of the {rel.possible_buckets:,} the data allows)"
                   if rel.possible_buckets != rel.buckets else "")
        click.echo(f"{rel.rows:,} of {rel.source_rows:,} rows in {rel.buckets:,} buckets{sampled}, each with at least "
                   f"{rel.l} distinct counted values of {rel.sensitive}"
                   + (f" (not counted: {', '.join(rel.not_counted)})" if rel.not_counted else "")
                   + (f"; left out: {left}" if left else ""))
        click.echo(f"released: {rel.qit}, {rel.st}" + (f"; kept private: {rel.private_table}" if rel.private else ""))
    if json_path == "-":
        write_json(rel.as_dict(), json_path)


COMMANDS.append(bucketize)


@click.command("maxent")
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--knowledge", type=click.Path(dir_okay=False), default=None,
              help="Background knowledge file (YAML/JSON; see sqlanon.maxent.knowledge).")
@click.option("--positive", type=int, default=0, show_default=True,
              help="Add the top K positive association rules Q_v => s mined from the original (Section 4.4).")
@click.option("--negative", type=int, default=0, show_default=True,
              help="Add the top K negative association rules Q_v => not s.")
@click.option("--min-support", type=int, default=3, show_default=True, help="Minimum support of a rule, in records.")
@click.option("--buckets", default=None, help="A bucketized release (tables NAME_qit, NAME_st) instead of the "
              "policy's generalized release.")
@click.option("--node", default=None, help="Generalized release at this node, e.g. age=2,sex=1,... (default: the "
              "node the policy would release).")
@click.option("--name", default=None, help="Output tables NAME, NAME_qi, NAME_individuals (default: "
              "<release>_maxent).")
@click.option("--tolerance", type=float, default=None, help="Largest constraint violation accepted, in records "
              "(default 1e-6).")
@click.option("--db", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "json_path", default=None, help="Write the risk report as JSON here ('-' = stdout).")
@click.option("--manifest", "manifest_path", default=None,
              help="Write the generalized release's manifest with a `maxent` section (the risk report) here.")
@click.option("--no-write", is_flag=True, help="Do not write the output tables.")
@click.option("-q", "--quiet", is_flag=True)
@user_errors
def maxent(policy, knowledge, positive, negative, min_support, buckets, node, name, tolerance, db, json_path,
           manifest_path, no_write, quiet):
    """What an adversary with background knowledge learns from a release: P*(S | Q) by maximum entropy
    (Du, Teng & Zhu, SIGMOD 2008), the largest posteriors and entropies, and the estimation accuracy."""
    from ..files import remove_temporaries, rename_temporaries
    from ..maxent.knowledge import RULES_LIMIT, Knowledge, Rules, load_knowledge
    from ..maxent.run import MaxEnt, check_tolerance, open_release
    from ..maxent.solver import DEFAULT_TOLERANCE
    from ..maxent.tables import output_name
    if buckets and node:
        raise PolicyError("--buckets/--node", "give one of them: a bucketized release, or a node of the generalized "
                          "one")
    if buckets and manifest_path:
        raise PolicyError("--manifest", "applies to the generalized release of the policy, not to --buckets")
    for opt, v, low in (("--positive", positive, 0), ("--negative", negative, 0), ("--min-support", min_support, 1)):
        if not low <= v <= RULES_LIMIT:     # a huge K reached the database as an INT128 conversion error
            raise PolicyError(opt, f"must be from {low} to {RULES_LIMIT:,}; got {v}")
    if tolerance is not None:       # before the release is built
        check_tolerance(tolerance)
    refuse_one_output_twice(json_path, manifest_path)
    reads = [policy] + ([knowledge] if knowledge else [])
    if json_path not in (None, "-"):
        refuse_non_json(Path(json_path), keep=reads)      # before any table is written
    know = load_knowledge(knowledge) if knowledge else Knowledge()
    if positive or negative:
        know = know + Knowledge([Rules(positive, negative, min_support, None, "--positive/--negative")])
    to_stdout = "-" in (json_path, manifest_path)       # stdout holds the JSON alone
    say = _say(quiet or to_stdout)
    levels = parse_node(node) if node else None
    with open_release(policy, buckets=buckets, node=levels, db=db,
                      progress=progress_for(quiet)) as (backend, release):
        if manifest_path not in (None, "-"):        # the release's name now known; still before any table is written
            refuse_non_json(Path(manifest_path), "--manifest", keep=reads,
                            manifest_of=release.anonymization.policy.release.name)
        out_name = None if no_write else output_name(name, f"{release.name or 'release'}_maxent")   # before solving
        say(f"release: {release.kind} ({release.qit if release.kind == 'bucketized' else 'node ' + _levels(release)})")
        me = MaxEnt(backend, release, tolerance if tolerance is not None else DEFAULT_TOLERANCE)
        p = me.problem
        say(f"{p.N:,} records in {p.buckets:,} buckets, {p.q_count:,} distinct quasi-identifiers, "
            f"{len(p.s_values)} values of {p.sensitive}; {len(p.cell_b):,} cells")
        result = me.solve(know)
        sol = result.solution
        if result.rules:
            say(f"mined {len(result.rules)} association rule(s) in {result.seconds['rules']:.2f} s")
        say(f"solved in {sol.seconds.get('total', 0):.2f} s: {sol.relevant_buckets:,} bucket(s) touched by the "
            f"knowledge optimized, the rest in closed form; {sol.iterations} L-BFGS-B iterations; largest "
            f"violation {sol.max_violation:.2g} records")
        reports: list[dict] = [{}]      # the report the files hold, printed after the commit without a query

        def manifest_with(report: dict) -> dict:
            """The generalized release's manifest with the risk report as its `maxent` section."""
            return {**release.anonymization.manifest(), "maxent": report}

        def files(outputs: list[dict]) -> list[tuple[Path, Path]]:
            """The JSON files written with the tables (`me.write`), or at once when there are none."""
            report = reports[0] = me.report(result, outputs)
            staged: list[tuple[Path, Path]] = []
            try:
                if manifest_path not in (None, "-"):
                    staged.append(stage_json(manifest_with(report), manifest_path, keep=reads,
                                             manifest_of=release.anonymization.policy.release.name))
                if json_path not in (None, "-"):
                    staged.append(stage_json(report, json_path, keep=reads))
            except BaseException:       # the first file staged when the second cannot be: not left behind
                remove_temporaries([tmp for tmp, _ in staged])
                raise
            return staged

        if out_name is not None:
            outputs = me.write(result, out_name, files=files)
        else:
            outputs = []
            rename_temporaries(files(outputs), "the risk is computed")
        report = reports[0]         # files() ran, inside me.write or just above
        if manifest_path == "-":
            write_json(manifest_with(report), manifest_path)
    if not sol.converged:
        click.echo(f"sqlanon: warning: the solver did not reach the tolerance ({sol.max_violation:.3g} > "
                   f"{sol.tolerance:.3g} records); the estimate is the best found", err=True)
    if not quiet and not to_stdout:
        _print_report(report)
    if json_path == "-":
        write_json(report, json_path)


def _levels(release) -> str:
    levels = release.levels or {}
    return ",".join(f"{k}={v}" for k, v in levels.items())


def _print_report(report: dict) -> None:
    rel, risk, acc = report["release"], report["risk"], report["accuracy"]
    kinds = [r["kind"] for r in report["rules"]]
    click.echo(f"knowledge: {len(report['knowledge'])} constraint(s)"
               + (f" ({kinds.count('positive')} positive and {kinds.count('negative')} negative rules)"
                  if kinds else ""))
    for who, dist in report["persons"].items():
        top = max(dist.items(), key=lambda kv: kv[1])
        click.echo(f"  {who}: most likely {top[0]} ({top[1]:.3f})")
    click.echo(f"largest posterior P*(s | q, b): {risk['max_posterior']:.3f} (without knowledge "
               f"{risk['baseline_max_posterior']:.3f})")
    click.echo(f"records with a posterior >= 0.9: {risk['records_over_90']:,} of {rel['records']:,} (without knowledge "
               f"{risk['baseline_records_over_90']:,}); certain: {risk['records_certain']:,}")
    click.echo(f"mean entropy of a record's posterior: {risk['mean_entropy']:.3f} nats (without knowledge "
               f"{risk['baseline_mean_entropy']:.3f})")
    if acc is not None:
        click.echo(f"estimation accuracy (weighted KL to the original, nats): {acc['estimation_accuracy']:.4f} "
                   f"(without knowledge {acc['baseline_estimation_accuracy']:.4f})")
    for o in report["outputs"]:
        click.echo(f"wrote {o['name']}: {o['rows']:,} rows")


COMMANDS.append(maxent)
