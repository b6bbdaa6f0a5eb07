"""Re-identification risk measured in the database: the class-size histogram is one GROUP BY over the
classes' GROUP BY (`sql_templates/risk_histogram.sql`), so no row leaves the database; the riskiest
classes (smallest, with their labels) and, against a population table, the pairs (sample class size,
population class size) come from one statement each, all reading the classes work table
(`risk_classes_table.sql`: the one pass over the rows). `sqlanon.risk.measures` and
`sqlanon.risk.estimators` turn those histograms into the figures.

A relation is described by its quasi-identifier keys: the columns as they are (the source, or a release
whose columns already hold the labels), or through the hierarchies' mapping tables at a lattice node's
levels (the source generalized as the node would release it, before any suppression).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..catalog import column_named
from ..engine import Backend
from ..errors import DataError, UserError
from . import estimators, measures


@dataclass(frozen=True)
class Key:
    """One quasi-identifier of a relation: its column, and the mapping table and level that generalize it
    (None: the column as it is)."""

    column: str
    map_table: str | None = None
    level: int = 0


def plain_keys(columns) -> list[Key]:
    return [Key(c) for c in columns]


def node_keys(fs, levels: dict[str, int]) -> list[Key]:
    """Keys generalizing the source to a node through the frequency set's mapping tables (level 0: as is)."""
    return [Key(q.name, q.map_table if levels[q.name] else None, int(levels[q.name])) for q in fs.qis]


CLASSES_TABLE = "__sqlanon_risk_classes"


def classes_table(backend: Backend, relation: str, keys: list[Key], entity: str | None = None) -> str:
    """The relation's classes (labels k0.., size) as a temporary work table: the one pass over the rows."""
    backend.execute("risk_classes_table.sql", name=CLASSES_TABLE, relation=relation, keys=keys, entity=entity)
    return CLASSES_TABLE


def histogram(backend: Backend, relation: str, keys: list[Key], entity: str | None = None,
              classes: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, classes): how many classes of each size the relation has, ascending by size (from the work
    table `classes` when given)."""
    data = backend.fetchnumpy("risk_histogram.sql", relation=relation, keys=keys, entity=entity, classes=classes)
    sizes = np.asarray(data["size"], dtype=np.int64)
    counts = np.asarray(data["classes"], dtype=np.int64)
    order = np.argsort(sizes, kind="stable")
    return sizes[order], counts[order]


def smallest_classes(backend: Backend, relation: str, keys: list[Key], entity: str | None = None,
                     limit: int = 10, classes: str | None = None) -> list[dict]:
    """The `limit` smallest classes: [{"labels": {column: label}, "size": n, "risk": 1/n}], smallest first."""
    rows = backend.fetchall("risk_smallest_classes.sql", relation=relation, keys=keys, entity=entity, limit=limit,
                            classes=classes)
    return [{"labels": {k.column: (v if isinstance(v, (int, float, str)) or v is None else str(v))
                        for k, v in zip(keys, row[:-1])},
             "size": int(row[-1]), "risk": 1.0 / int(row[-1])} for row in rows]


def population_pairs(backend: Backend, relation: str, keys: list[Key], population: str, population_keys: list[Key],
                     entity: str | None = None, classes: str | None = None, population_entity: str | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sample class size, matching population class size, number of classes) triples."""
    data = backend.fetchnumpy("risk_population_histogram.sql", relation=relation, keys=keys, entity=entity,
                              population=population, population_keys=population_keys, classes=classes,
                              population_entity=population_entity)
    return (np.asarray(data["sample_size"], dtype=np.int64), np.asarray(data["population_size"], dtype=np.int64),
            np.asarray(data["classes"], dtype=np.int64))


# the largest population the estimators accept: more than ten times the world's people (Zayatz's log-binomials lose
# precision beyond about 1e12)
MAX_POPULATION = 1e11


def _refuse_null_entity(backend: Backend, relation: str, entity: str | None, label: str | None = None) -> None:
    """Persons are counted by their entity key, so none may be NULL (as `FrequencySet.prepare` requires of the
    source): a class of NULL keys counted 0 persons (a division by zero) and NULL keys in a class were dropped."""
    if entity is None:
        return
    nulls = int(backend.fetchrow("risk_entity_nulls.sql", relation=relation, entity=entity)[0])
    if nulls:
        where = label or ("the source" if relation.startswith("__sqlanon") else relation)   # not a work view's name
        raise DataError(f"column '{entity}' (the entity key) has {nulls:,} NULL value(s) in {where}; every person "
                        "needs a key to be counted: filter those rows out or fill the key")


def risk_report(backend: Backend, relation: str, keys: list[Key], *, entity: str | None = None,
                threshold: float = measures.DEFAULT_THRESHOLD, population_size: float | None = None,
                sampling_fraction: float | None = None, population: str | None = None,
                population_keys: list[Key] | None = None, top: int = 10, label: str | None = None) -> dict:
    """Everything `sqlanon risk` prints, for one relation (see the README's "Re-identification risk").

    Keys: rows, classes, sample_uniques, prosecutor {max, average, records_at_risk, threshold},
    marketer, histogram {size: classes}, riskiest_classes; with a population size or sampling fraction
    population_uniques {model, estimate, fraction, estimates...}; with a population table journalist
    {max, average, records_at_risk, threshold, population_smaller} (and marketer against it), k_map and
    delta_presence {min, max} (`sqlanon.risk.measures.journalist`). Keys the
    inputs do not allow are None.
    """
    _refuse_null_entity(backend, relation, entity, label)
    work = classes_table(backend, relation, keys, entity)
    sizes, classes = histogram(backend, relation, keys, entity, work)
    out = measures.summary(sizes, classes, threshold)
    if population_size is not None and population_size < out["rows"]:
        # the population holds the table: a smaller one was raised to the table's size without a word
        raise UserError(f"--population-size: {population_size:g} is smaller than the table ({out['rows']:,} "
                        f"{'persons' if entity else 'rows'}), which is a sample of the population; give at least "
                        f"{out['rows']:,}")
    out["riskiest_classes"] = smallest_classes(backend, relation, keys, entity, top, work) if top else []
    out["journalist"] = None
    out["population_uniques"] = None
    if population is not None:
        # persons, as the table counts them, when the population holds the entity key (else its rows are persons)
        pop_entity = (column_named(backend, [c for c, _ in backend.columns(population)], entity)
                      if entity is not None else None)
        _refuse_null_entity(backend, population, pop_entity)
        f, F, c = population_pairs(backend, relation, keys, population, population_keys or keys, entity, work,
                                   pop_entity)
        if len(F) and not np.any(np.asarray(F) > 0):
            # every journalist figure would silently be the prosecutor's: the two hold different values (a
            # release's labels against a population's raw values, most likely)
            raise UserError(f"--population: no class of the table occurs in {population}: their quasi-identifier "
                            "values differ (a release's generalized labels against raw values?); for a release give "
                            "--manifest with the population, which generalizes the population to the release's node")
        pop_sizes, population_classes = histogram(backend, population, population_keys or keys, pop_entity)
        j = measures.journalist(f, F, c, threshold, int(population_classes.sum()))
        out["journalist"] = j["journalist"]
        out["marketer"] = j["marketer"]
        out["k_map"] = j["k_map"]
        out["delta_presence"] = j["delta_presence"]
        if population_size is None and sampling_fraction is None:
            population_size = (float((pop_sizes * population_classes).sum()) if pop_entity else
                               float(backend.fetchrow("count_rows.sql", relation=population)[0]))
    if sampling_fraction is not None:
        population_size = out["rows"] / float(sampling_fraction)
    if population_size is not None:
        if not population_size <= MAX_POPULATION:      # inf from a tiny fraction was an OverflowError traceback
            option = "--sampling-fraction" if sampling_fraction is not None else "--population-size"
            raise UserError(f"{option}: the population would be {population_size:.3g} people, more than "
                            f"{MAX_POPULATION:.0e}; give the size of a real population")
        # people are whole: rounded once (as ARX's population model does), so the estimators and the report
        # use the same N (17.1 population uniques were reported of a population of 17)
        population_size = float(round(population_size))
    if population_size is not None and out["rows"]:
        out["population_uniques"] = estimators.population_uniques(sizes, classes, max(float(population_size),
                                                                                      float(out["rows"])))
    return out
