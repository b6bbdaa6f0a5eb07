"""The command of sqlanon.marginals.

    sqlanon marginals POLICY [--search greedy|walk|one-attribute|none] [--start chosen|all|age=1,sex=0,...]
                             [--max-sensitive N] [--max-steps N] [--prune auto|hull|pairs|none]
                             [--relaxation ALPHA] [--seed N] [--walk-steps N]
                             [--db PATH] [--json MANIFEST] [--no-release] [-q]

Finds the minimal k-anonymous (l-diverse) tables as `sqlanon anonymize` does, then releases a
collection of anonymized marginals beside the chosen table: the policy's `release.marginals` (scored
and checked; exit 3 and nothing written when they are not private), or the collection the search finds
(the default when the policy lists none). The manifest is `anonymize`'s, with one
``{"kind": "marginal", ...}`` output per marginal and a ``marginals`` section: the collection, its
structure (cliques, separators, junction tree), KL-divergence beside the table's own, the privacy it
achieves and the search's steps.
"""
from __future__ import annotations

from pathlib import Path

import click

from ..catalog import is_manifest
from .common import (
    manifest_target,
    parse_node,
    progress_for,
    refuse_non_json,
    search_run,
    user_errors,
    write_json,
)

COMMANDS: list = []


@click.command("marginals")
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--search", "search_mode", type=click.Choice(["greedy", "walk", "one-attribute", "none"]),
              default=None, help="How to find the marginals (default: none when the policy lists release.marginals, "
                                 "else greedy; walk: the greedy, then a seeded random walk adding and removing "
                                 "vertices and edges, keeping the table).")
@click.option("--start", default="chosen", show_default=True,
              help="Start table: 'chosen' (the policy's utility metric picks among the minimal nodes), 'all' (search "
                   "from every minimal node, keep the best), or a node such as age=1,sex=0,...")
@click.option("--max-sensitive", default=3, show_default=True, type=int,
              help="At most this many marginals may hold the sensitive attribute.")
@click.option("--max-steps", default=None, type=int, help="Stop the greedy search after this many moves.")
@click.option("--prune", type=click.Choice(["auto", "hull", "pairs", "none"]), default="auto", show_default=True,
              help="Pruning of the maxent l-diversity check (Algorithm 1).")
@click.option("--relaxation", default=None, type=float,
              help="Check maxent l-diversity with this relaxation alpha in (0, 1] (Sec. 6): at least l values at "
                   "least alpha times as frequent as the most frequent, per marginal holding the sensitive attribute.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the random walk (--search walk).")
@click.option("--walk-steps", default=1000, show_default=True, type=int, help="Moves proposed by the random walk.")
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="DuckDB file for the release (default: the source's database, or a file beside the policy).")
@click.option("--json", "json_path", default=None, help="Write the manifest (JSON) here ('-' = stdout).")
@click.option("--no-release", is_flag=True, help="Search and score only; write nothing to the database.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display and no summary.")
def marginals_command(policy, search_mode, start, max_sensitive, max_steps, prune, relaxation, seed, walk_steps, db,
                      json_path, no_release, quiet):
    """Search, score and release anonymized marginals beside the anonymized table (Kifer & Gehrke 2006)."""
    user_errors(_marginals)(policy, search_mode, start, max_sensitive, max_steps, prune, db, json_path, no_release,
                            quiet, relaxation, seed, walk_steps)


def _marginals(policy, search_mode, start, max_sensitive, max_steps, prune, db, json_path, no_release, quiet,
               relaxation=None, seed=0, walk_steps=1000):
    from ..errors import DataError, PolicyError, PrivacyNotMet
    from ..marginals.search import best_of
    from ..marginals.session import Marginals

    progress = progress_for(quiet)
    if walk_steps < 1:          # before the search, which these options do not change
        raise PolicyError("--walk-steps", f"must be >= 1; got {walk_steps}")
    if max_steps is not None and max_steps < 0:         # -1 acted as 0
        raise PolicyError("--max-steps", f"must be >= 0; got {max_steps}")
    if json_path not in (None, "-") and no_release:       # before the search; a release checks its manifest path
        from ..policy import load_policy
        refuse_non_json(Path(json_path), keep=[policy], manifest_of=load_policy(policy).release.name)
    with search_run(policy, db, quiet) as run:
        if not run.searched().minimal:
            raise DataError("no generalization satisfies the policy, not even the most general one; loosen the "
                            "privacy models")
        ms = Marginals(run, max_sensitive=max_sensitive, prune=prune, relaxation=relaxation)
        listed = ms.policy_marginals()
        mode = search_mode or ("none" if listed else "greedy")
        if listed and search_mode not in (None, "none"):
            raise PolicyError("--search", "the policy lists release.marginals; give --search none (the default "
                              "then) or remove them to search")
        chosen = run.choose()
        if start == "all":
            starts = [c.levels for c in run.candidates]
        elif start == "chosen":
            starts = [chosen.levels]
        else:   # a given node: it becomes the released table (the lattice's minimal nodes stay in the manifest)
            minimal = list(run.candidates)
            try:
                levels = parse_node(start)
                unknown = [q for q in levels if q not in run.lattice.names]
                if unknown:     # named before the quasi-identifiers it lacks: the name is the likelier slip
                    raise PolicyError(f"node.{unknown[0]}", "not a quasi-identifier of the policy "
                                      f"({', '.join(run.lattice.names)})")
                chosen = run.use_node(levels)
            except PolicyError as e:        # named --node or node.<qi>, options of other commands
                part = e.field.split(".", 1)[1] if e.field.startswith("node.") else e.field.partition(" ")[2]
                raise PolicyError(f"--start {part}".strip(), e.message) from None
            run.candidates = minimal
            starts = [chosen.levels]
        section: dict = {"mode": mode, "max_sensitive": max_sensitive}
        if mode == "none":
            table = ms.table(chosen.levels)
            coll = ms.collection([table, *listed])
        elif mode in ("greedy", "walk"):
            results = [ms.search(levels, max_steps, progress) for levels in starts]
            best = best_of(results)
            levels = starts[results.index(best)]
            if levels != chosen.levels:     # the table of the best collection becomes the released table
                minimal = list(run.candidates)
                run.use_node(levels)
                run.candidates = minimal
            table, coll = best.start, best.collection
            section["search"] = [r.as_dict() for r in results]
            if mode == "walk":
                walk = ms.walk(coll, seed, walk_steps, keep=table, progress=progress)
                coll = walk.collection
                section["walk"] = {k: v for k, v in walk.as_dict().items() if k != "start"}
        else:
            table = ms.table(chosen.levels)
            path, coll = ms.one_attribute_path(chosen.levels)
            section["path"] = [p.as_dict() for p in path]
        section.update(ms.score(coll, table))
        if not section["privacy"]["satisfied"]:
            _echo_summary(section, quiet or json_path == "-")
            if json_path and (json_path == "-" or not is_manifest(Path(json_path))):    # a release's record stays
                write_json({"marginals": section}, json_path, keep=[policy])
            raise PrivacyNotMet("the marginals are not private: " + _privacy_text(section["privacy"])
                                + "; nothing was released")
        run.manifest_extra["marginals"] = section                 # in the catalog row's manifest too
        for i, m in enumerate(listed):
            if m == table and not (quiet or json_path == "-"):
                # one marginal of those levels is released: the table (it was left out without a word)
                click.echo(f"sqlanon: note: release.marginals[{i}]{f' ({m.name})' if m.name else ''} has the "
                           f"released table's attributes and levels: it is the table {run.policy.release.name}, not "
                           "written twice", err=True)
        if not no_release:
            path = manifest_target(run, json_path, False)
            # the table, its marginals and the manifest file (always a record, beside the database by default): one
            # transaction
            if not run.materialize([ms.companion(coll, skip=table)], manifest_path=path):
                run.write_manifest(path)
        manifest = run.manifest()
        if not quiet and json_path != "-":
            _echo_summary(section, False, manifest["outputs"])
            if not no_release:
                click.echo(f"manifest: {path}")
        if json_path == "-" or (json_path and no_release):
            write_json(manifest, json_path, keep=[policy], manifest_of=run.policy.release.name)


def _privacy_text(p: dict) -> str:
    d = p["maxent_l_diversity"]
    text = (f"k-link {p['k_link']}, k-combinatorial {p['k_combinatorial']}, maxent l-diversity "
            f"{'holds' if d['ok'] else 'FAILS'}")
    if d.get("violation"):
        v = d["violation"]
        text += (" at " + ", ".join(f"{a}={x}" for a, x in v["group"].items())
                 + f" ({d.get('reason') or 'reconstruction'})")
    if p.get("not_decomposable"):
        text += ", the collection is not decomposable"
    if p.get("not_certified"):
        text += f", k-combinatorial not certified ({p['not_certified']})"
    if p["sensitive_marginals"] > p["max_sensitive_marginals"]:
        text += (f", {p['sensitive_marginals']} marginals hold the sensitive attribute "
                 f"(limit {p['max_sensitive_marginals']})")
    return text


def _echo_summary(section: dict, quiet: bool, outputs=()) -> None:
    if quiet:
        return
    table = section.get("table", {})
    click.echo("table: " + ", ".join(f"{a}={l}" for a, l in table.items())
               + f"; KL-divergence alone {section.get('single_table_kl', float('nan')):.4f}")
    click.echo(f"collection ({section['mode']}): {len(section['structure']['marginals'])} marginals, "
               f"{'decomposable' if section['structure']['decomposable'] else 'not decomposable'}, "
               f"KL-divergence {section['kl_divergence']:.4f}")
    for m in section["structure"]["marginals"]:
        click.echo("  {" + ", ".join(f"{a}@{l}" for a, l in m.items()) + "}")
    click.echo(f"privacy ({section['privacy']['required']}): " + _privacy_text(section["privacy"]))
    for o in outputs:
        if o["kind"] == "marginal":
            click.echo(f"released marginal {o['name']}: {o['rows']:,} rows")
        else:
            click.echo(f"released {o['kind']} {o['name']}: {o['rows']:,} rows")


COMMANDS.append(marginals_command)
