"""`sqlanon risk`: the re-identification risk of the source, a lattice node, or a release table.

    sqlanon risk POLICY [--node a=1,... | --table NAME | --manifest M] [--threshold T]
                        [--population-size N | --sampling-fraction F] [--population TABLE] [--json F]

Without --node / --table / --manifest: the policy's source as it is. --node: the source generalized to
that node (before suppression). --table: a table of the policy's database with its quasi-identifier
columns as they are (a release). --manifest: the release table a manifest records (and, with
--population, the population generalized to the manifest's node to match it). --population TABLE: a
larger population with the same quasi-identifier columns, in the same database (journalist and
marketer risk against it; its row count is the population size unless one is given).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import click

from ..errors import DataError, PolicyError, UserError
from ..risk import measures
from .common import parse_node, refuse_non_json, user_errors, write_json

COMMANDS: list = []


def _positive(value, name: str, upper: float | None = None) -> None:
    if value is None:
        return
    if not math.isfinite(value):
        raise UserError(f"{name}: must be a finite number; got {value:g}")
    if not value > 0 or (upper is not None and value > upper):
        bound = f"above 0 and at most {upper:g}" if upper is not None else "above 0"
        raise UserError(f"{name}: must be {bound}; got {value:g}")


def _manifest_release(path: str) -> tuple[dict, str]:
    """The manifest (checked as every reader checks it: `applying.check_manifest`, its policy's hash) and its
    released relation."""
    from ..applying import check_manifest
    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(f"--manifest: cannot read {path} as a release manifest ({e}); give the JSON written by "
                        "sqlanon anonymize --json") from None
    if isinstance(manifest, dict) and isinstance(manifest.get("policy"), dict):
        check_manifest(manifest, path)
    outputs = [o for o in manifest.get("outputs", []) if o.get("kind") in ("table", "view")]
    if not outputs or "chosen" not in manifest:
        raise UserError(f"--manifest: {path} records no released table or view; release one first (sqlanon "
                        "anonymize with release.materialize: table)")
    return manifest, outputs[0]["name"]


def _check_columns(backend, relation: str, columns, what: str, shown: str | None = None) -> dict[str, str]:
    """`relation`'s (column -> type), read once; refused when one of `columns` is missing, naming the relation as
    `shown` (the user's name of a table read through sqlanon's view of it)."""
    have = dict(backend.columns(relation))
    missing = [c for c in columns if c not in have]
    if missing:
        raise UserError(f"{what} {shown or relation}: has no column '{missing[0]}' (a quasi-identifier of the "
                        f"policy); its columns: {', '.join(sorted(have)[:20])}")
    return have


def _check_population(backend, population: str, qis: list[str]) -> None:
    """The population table has every quasi-identifier, none of them under a collation that merges values."""
    if not backend.table_exists(population) and backend.relation_kind(population) is None:
        raise UserError(f"--population: no table or view '{population}' in {backend.path or backend.describe()}; "
                        "give the population table's name (in the source's database)")
    types = _check_columns(backend, population, qis, "population table")
    backend.refuse_collated(population, qis, f"the population table {population}", types)


def _no_entity_key(entity: str, table: str) -> DataError:
    """A table without the policy's entity key: its classes cannot be counted in persons, and counted in rows they
    understate the risk (a person's several rows look like several people)."""
    return DataError(f"the policy counts persons (entity_key '{entity}'), but {table} does not hold that column, so "
                     "its risk per person cannot be measured (counted in rows it would be understated): release the "
                     "key with release.keep, or measure a node of the source with --node")


def _population_left_out(run, population: str, levels: dict[str, int]) -> dict[str, list[str]]:
    """Values of the population's generalized columns that their mapping tables lack (column -> up to 5 values):
    the population is generalized by joining them, so those rows are left out of its classes. A hierarchy built
    from the source (intervals, mask, ...) holds only the source's values, and a population normally has others.
    Leaving their rows out makes its classes smaller: journalist risk higher, k-map lower, the largest f/F of
    delta-presence higher (the safe side); only the smallest f/F could come out too high, from a class made of
    such rows alone, so the caller reports it as 0."""
    out = {}
    for q in run.fs.qis:
        if not levels[q.name]:
            continue            # level 0: the values as they are, no mapping table
        missing = run.backend.fetchall("missing_values.sql", source=population, column=q.name, map_table=q.map_table)
        if missing:
            out[q.name] = [str(r[0]) for r in missing]
    return out


def risk_of(policy_path: str, *, db=None, node: str | None = None, table: str | None = None,
            manifest: str | None = None, threshold: float = measures.DEFAULT_THRESHOLD,
            population_size: float | None = None, sampling_fraction: float | None = None,
            population: str | None = None) -> dict:
    """The report `sqlanon risk` prints, as a dict (see `sqlanon.risk.analysis.risk_report`)."""
    from ..anonymizer import Anonymization, default_db
    from ..engine import MEMORY, open_backend
    from ..policy import load_policy, source_with_table
    from ..risk.analysis import node_keys, plain_keys, risk_report

    if sum(x is not None for x in (node, table, manifest)) > 1:
        raise PolicyError("--node", "give at most one of --node, --table, --manifest")
    if population_size is not None and sampling_fraction is not None:
        raise UserError("--population-size: give it or --sampling-fraction, not both")
    _positive(threshold, "--threshold", 1.0)
    _positive(population_size, "--population-size")
    _positive(sampling_fraction, "--sampling-fraction", 1.0)
    pol = load_policy(policy_path)
    qis = list(pol.quasi_identifiers)
    options: dict = {"threshold": threshold, "population_size": population_size, "sampling_fraction": sampling_fraction}
    what: dict = {"source": pol.source.label}
    levels = None
    relation = None
    if manifest is not None:
        from ..applying import check_manifest, recorded_database
        recorded, relation = _manifest_release(manifest)
        levels = dict(recorded["chosen"]["levels"])
        db = db or recorded_database(recorded, manifest)
        what = {"table": relation, "manifest": str(manifest), "levels": levels}
    elif node is not None:
        levels = parse_node(node)
        what["levels"] = levels
    if levels is not None and (node is not None or population is not None):
        # the mapping tables are needed: the source generalized to the node, or the population to the release's
        run = Anonymization(pol, db=db if db is not None else (pol.source.database or MEMORY))
        with run:
            if manifest is not None:        # its node against the release catalog's
                check_manifest(recorded, manifest, run.backend)
            for q, h in zip(run.lattice.names, run.lattice.heights):
                if q not in levels:
                    raise PolicyError("--node", f"no level given for quasi-identifier '{q}'")
                if not isinstance(levels[q], int) or not 0 <= levels[q] <= h:
                    raise PolicyError(f"--node {q}", f"level must be an integer from 0 to {h}; got {levels[q]!r}")
            unknown = [q for q in levels if q not in run.lattice.names]
            if unknown:
                raise PolicyError(f"--node {unknown[0]}", f"not a quasi-identifier of the policy ({', '.join(qis)})")
            keys = node_keys(run.fs, levels)
            if relation is None:        # --node: the source generalized
                relation, sample_keys = run.source, keys
            else:                       # --manifest with a population: the release's labels as they are
                types = _check_columns(run.backend, relation, qis, "release table")
                if pol.entity_key is not None and pol.entity_key not in types:
                    raise _no_entity_key(pol.entity_key, relation)
                run.backend.refuse_collated(relation, qis, f"the release table {relation}", types)
                sample_keys = plain_keys(qis)
            if population is not None:
                _check_population(run.backend, population, qis)
            left_out = _population_left_out(run, population, levels) if population is not None else {}
            report = risk_report(run.backend, relation, sample_keys, entity=pol.entity_key, population=population,
                                 population_keys=keys, **options)
            if left_out:
                report["population_left_out"] = left_out
                report["delta_presence"] = {**report["delta_presence"], "min": 0.0}
        return {**what, **report}
    if relation is None and table is not None:
        relation = table
        what = {"table": table}
    if relation is not None:          # a release table, columns as they are
        backend = open_backend(pol.source, db if db is not None else default_db(pol))
        source = load_policy({**pol.raw, "source": source_with_table(pol.raw.get("source"), relation)},
                             base_dir=pol.base_dir).source
    else:                             # the source as it is
        backend = open_backend(pol.source, db if db is not None else (pol.source.database or MEMORY))
        source = pol.source
    with backend:
        if manifest is not None:
            check_manifest(recorded, manifest, backend)
        if relation is not None and not backend.table_exists(relation) and backend.relation_kind(relation) is None:
            raise UserError(f"--table: no table or view '{relation}' in {backend.path or backend.describe()}; "
                            "give the release's name (and --db for its database)")
        view = backend.attach_source(source)
        types = _check_columns(backend, view, qis, "table" if relation else "source", relation or pol.source.label)
        if population is not None:
            _check_population(backend, population, qis)
        entity = pol.entity_key
        if entity is not None and entity not in types:
            raise _no_entity_key(entity, relation or pol.source.label)
        backend.refuse_collated(view, qis + ([entity] if entity else []),
                                f"the table {relation}" if relation else f"the source {pol.source.label}", types)
        report = risk_report(backend, view, plain_keys(qis), entity=entity, population=population,
                             label=f"the table {relation}" if relation else f"the source {pol.source.label}", **options)
    return {**what, **report}


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _print(report: dict) -> None:
    where = report.get("table") or report.get("source")
    node = report.get("levels")
    click.echo(f"{where}{' at ' + ', '.join(f'{k}={v}' for k, v in node.items()) if node else ''}: "
               f"{report['rows']:,} rows in {report['classes']:,} classes, {report['sample_uniques']:,} sample uniques")
    p = report["prosecutor"]
    click.echo(f"prosecutor: highest risk {_pct(p['max'])}, average {_pct(p['average'])}, records at risk "
               f"(risk > {p['threshold']:g}) {_pct(p['records_at_risk'])}")
    if report.get("journalist"):
        j = report["journalist"]
        click.echo(f"journalist: highest risk {_pct(j['max'])}, average {_pct(j['average'])}, records at risk "
                   f"{_pct(j['records_at_risk'])}")
        for column, values in (report.get("population_left_out") or {}).items():
            more = " ..." if len(values) == 5 else ""
            click.echo(f"  note: population rows with {column} = {', '.join(values)}{more} are left out: the "
                       "policy's hierarchy of it (built from the source) lacks them (the figures "
                       "are on the safe side; the smallest delta-presence is given as 0)")
        if j["population_smaller"]:     # only in the JSON before
            click.echo(f"  note: {j['population_smaller']:,} of the table's classes are smaller in the population "
                       "than in the table (the population lacks part of the table); they count at the table's size")
    click.echo(f"marketer: {_pct(report['marketer'])}")
    u = report.get("population_uniques")
    if u:
        click.echo(f"population uniques ({u['model']}): {u['estimate']:,.1f} of {u['population_size']:,} "
                   f"({_pct(u['fraction'])})")
    for c in report["riskiest_classes"]:
        labels = ", ".join(f"{k}={v}" for k, v in c["labels"].items())
        click.echo(f"  {c['size']:>6} rows  {labels}")


@click.command("risk")
@click.argument("policy", type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), default=None, help="DuckDB file holding the tables.")
@click.option("--node", default=None, help="A lattice node, e.g. age=2,sex=1,... (the source generalized to it).")
@click.option("--table", default=None, help="A table as it is (e.g. a release).")
@click.option("--manifest", default=None, type=click.Path(dir_okay=False), help="The release a manifest records.")
@click.option("--threshold", default=measures.DEFAULT_THRESHOLD, show_default=True, type=float,
              help="Records at risk: rows whose risk 1/class size is above this.")
@click.option("--population-size", default=None, type=float, help="Population size, for population uniqueness.")
@click.option("--sampling-fraction", default=None, type=float, help="Sample rows / population rows.")
@click.option("--population", default=None, help="A population table with the same quasi-identifier columns.")
@click.option("--json", "json_path", default=None, help="Write the figures as JSON here ('-' = stdout).")
def risk(policy, db, node, table, manifest, threshold, population_size, sampling_fraction, population, json_path):
    """Re-identification risk: prosecutor, journalist, marketer, sample and population uniques."""
    reads = [policy] + ([manifest] if manifest else [])

    @user_errors
    def run():
        if json_path not in (None, "-"):
            refuse_non_json(Path(json_path), keep=reads)      # before the work
        report = risk_of(policy, db=db, node=node, table=table, manifest=manifest, threshold=threshold,
                         population_size=population_size, sampling_fraction=sampling_fraction, population=population)
        if json_path != "-":
            _print(report)
        if json_path:
            write_json(report, json_path, keep=reads)
    run()


COMMANDS.append(risk)
