"""Privacy-MaxEnt on one release, end to end: the Python API the CLI and the experiment drive.

    from sqlanon.maxent import MaxEnt, ReleaseTables, load_knowledge

    me = MaxEnt(backend, ReleaseTables(qit="adult_qit", st="adult_st", truth=None, quasi_identifiers=[...],
                                       sensitive="education"))
    result = me.solve(load_knowledge("knowledge.yaml"))
    result.posterior()               # P*(s | q) as arrays; me.write(result, "adult_maxent") puts it in the database
    me.accuracy(result)              # Section 7's estimation accuracy, when the original records are known

`open_release` makes the `ReleaseTables` of a policy: a bucketized release (``sqlanon bucketize``) by name,
or the generalized release the core engine chooses for the policy (or a given node), each q*-block a bucket.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..engines.dialects import compared_type
from ..errors import DataError, PolicyError
from ..frequency import free_prefix, values_named
from ..templates import temporary_relation
from .invariants import PREFIX, Problem, ReleaseTables, load_problem
from .knowledge import Knowledge, Rules, build_system
from .rules import MinedRule, mine_rules
from .solver import DEFAULT_TOLERANCE, Solution, solve
from .tables import atomic_tables, check_name, reserved_column

# the columns `MaxEnt.write` adds to the quasi-identifiers and the sensitive attribute (maxent_posterior.sql,
# maxent_risk.sql, the persons table)
OUTPUT_COLUMNS = ("probability", "baseline", "bucket", "records", "top_value", "max_probability", "entropy",
                  "baseline_top_value", "baseline_max_probability", "baseline_entropy", "person")


@dataclass
class MaxEntResult:
    """One solve: the knowledge as used, the solution, P*(q, s, b) per cell (records) and the baseline."""

    problem: Problem
    items: list                          # Conditional / AboutPersons, rules mined into conditionals
    rules: list                          # MinedRule, in the order mined
    solution: Solution
    x: np.ndarray                        # N * P*(q, s, b) per problem cell
    x0: np.ndarray                       # the same without knowledge (Theorem 5)
    persons: dict = field(default_factory=dict)     # name -> {value: P*(value | person)}
    seconds: dict = field(default_factory=dict)
    system: object = None                # the constraints solved (`knowledge.System`)

    def entropy(self, baseline: bool = False) -> float:
        """H(Q, S, B) in nats of the estimate (Eq. 3)."""
        p = (self.x0 if baseline else self.x) / self.problem.N
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())

    def posterior(self, baseline: bool = False):
        """P*(s | q): arrays (q, s, probability) over the cells of positive estimate."""
        p = self.problem
        x = self.x0 if baseline else self.x
        S = len(p.s_values)
        key = p.cell_q * S + p.cell_s
        keys, inv = np.unique(key, return_inverse=True)
        total = np.bincount(inv.ravel(), weights=x)
        q, s = keys // S, keys % S
        prob = total / p.q_n[q]
        keep = prob > 0
        return q[keep], s[keep], prob[keep]

    def posterior_of(self, given: dict, baseline: bool = False) -> dict:
        """P*(value | q) for one full quasi-identifier, as {value: probability} (for tests and reports)."""
        p = self.problem
        codes = [p.attr_codes[i][str(given[a])] for i, a in enumerate(p.attributes)]
        hit = np.flatnonzero((p.q_codes == codes).all(axis=1))
        if not len(hit):
            raise KeyError(given)
        q, s, prob = self.posterior(baseline)
        return {p.s_values[int(v)]: float(w) for v, w in zip(s[q == hit[0]], prob[q == hit[0]])}

    def bucket_posterior(self, bucket, given: dict, baseline: bool = False) -> dict:
        """P*(value | q, b): what an adversary learns about the records of bucket `bucket` with quasi-identifier q."""
        p = self.problem
        b = int(np.flatnonzero(p.bucket_labels == bucket)[0])
        codes = [p.attr_codes[i][str(given[a])] for i, a in enumerate(p.attributes)]
        q = int(np.flatnonzero((p.q_codes == codes).all(axis=1))[0])
        x = self.x0 if baseline else self.x
        cells = np.flatnonzero((p.cell_b == b) & (p.cell_q == q))
        return {p.s_values[int(p.cell_s[c])]: float(x[c] / p.cell_nq[c]) for c in cells if x[c] > 0}

    def as_dict(self) -> dict:
        return {"knowledge": [i.describe() for i in self.items],
                "rules": [r.as_dict() for r in self.rules],
                "solver": self.solution.as_dict(),
                "entropy_nats": self.entropy(), "baseline_entropy_nats": self.entropy(baseline=True),
                "persons": self.persons,
                "seconds": {k: round(v, 4) for k, v in self.seconds.items()}}


def check_tolerance(tolerance: float) -> None:
    """The largest constraint violation accepted must be a positive, finite number of records (PolicyError)."""
    if not (tolerance > 0 and math.isfinite(tolerance)):
        raise PolicyError("--tolerance", f"must be a positive number of records; got {tolerance}")


class MaxEnt:
    """A release loaded once (invariants built in the database, compact arrays in `problem`); solve it
    under any knowledge, measure, write the results back."""

    def __init__(self, backend, release: ReleaseTables, tolerance: float = DEFAULT_TOLERANCE,
                 relevant: str = "knowledge", prefix: str | None = None):
        check_tolerance(tolerance)
        self.backend = backend
        self.release = release
        self.tolerance = float(tolerance)
        self.relevant = relevant
        # its own work tables' prefix: another release or solve may have the connection's __sqlanon_maxent_ tables
        self.prefix = prefix or free_prefix(backend, PREFIX)
        t = time.perf_counter()
        self.problem = load_problem(backend, release, self.prefix)
        self.load_seconds = time.perf_counter() - t
        self._rules_cache: dict = {}
        self._written: MaxEntResult | None = None     # the result the estimate table holds

    @property
    def has_truth(self) -> bool:
        return self.release.truth is not None

    def mine(self, spec: Rules) -> list[MinedRule]:
        """The rules of `spec`, mined once per (support, attributes) and cut to K+ / K-."""
        key = (spec.min_support, spec.attributes)
        have = self._rules_cache.get(key)
        if have is None or have[0] < spec.positive or have[1] < spec.negative:
            pos = max(spec.positive, have[0] if have else 0)
            neg = max(spec.negative, have[1] if have else 0)
            rules = mine_rules(self.backend, self.problem, Rules(pos, neg, spec.min_support, spec.attributes,
                                                                 spec.label))
            have = (pos, neg, rules)
            self._rules_cache[key] = have
        rules = have[2]
        return ([r for r in rules if not r.negative][:spec.positive] +
                [r for r in rules if r.negative][:spec.negative])

    def resolve(self, knowledge: Knowledge | None) -> tuple[list, list]:
        """Knowledge items with every `Rules` mined into conditionals: (items, mined rules)."""
        items, mined = [], []
        for item in (knowledge.items if knowledge else []):
            if isinstance(item, Rules):
                rules = self.mine(item)
                mined += rules
                items += [r.conditional() for r in rules]
            else:
                items.append(item)
        self._name_sensitive_values(items)
        return items, mined

    def _name_sensitive_values(self, items: list) -> None:
        """Let the knowledge name a sensitive value by any text its column's type calls equal ('0.0' of the value
        the release names '-0.0': `frequency.values_named`); names that are no value are left for the knowledge
        to refuse."""
        codes = self.problem.s_codes
        names = [str(v) for item in items for v in getattr(item, "values", ()) if str(v) not in codes]
        if not names:
            return
        column_type = dict(self.backend.columns(self.release.st)).get(self.release.sensitive, "")
        for name, value in values_named(self.backend, f"{self.prefix}_names", column_type, names,
                                        self.problem.s_values).items():
            codes[name] = codes[value]

    def solve(self, knowledge: Knowledge | None = None, relevant: str | None = None) -> MaxEntResult:
        t0 = time.perf_counter()
        items, mined = self.resolve(knowledge)
        t1 = time.perf_counter()
        system = build_system(self.problem, items, knowledge.persons if knowledge else {})
        t2 = time.perf_counter()
        sol = solve(system, self.tolerance, relevant or self.relevant)
        x = np.bincount(system.cell_base, weights=sol.x, minlength=len(self.problem.cell_b))
        persons = {}
        for g, (_q, name, _) in enumerate(system.groups):
            if name is None:
                continue
            mine = system.cell_who == g
            s = self.problem.cell_s[system.cell_base[mine]]
            dist = np.bincount(s, weights=sol.x[mine], minlength=len(self.problem.s_values))
            persons[name] = {self.problem.s_values[i]: float(v) for i, v in enumerate(dist) if v > 0}
        seconds = {"rules": t1 - t0, "constraints": t2 - t1, "solve": sol.seconds.get("total", 0.0)}
        return MaxEntResult(self.problem, items, mined, sol, x, self.problem.closed_form(), persons, seconds, system)

    # -- results in the database ------------------------------------------------------------------
    def _estimate_table(self, result: MaxEntResult) -> str:
        """The cells' estimates as a temporary table (b, q, s, x, x0), written once per result."""
        name = f"{self.prefix}_estimate"
        if self._written is not result:
            p = self.problem
            frame = pd.DataFrame({"b": p.cell_b.astype(np.int32), "q": p.cell_q.astype(np.int32),
                                  "s": p.cell_s.astype(np.int32), "x": result.x, "x0": result.x0})
            self.backend.create_table_from_frame(name, frame)
            self._written = result
        return name

    def accuracy(self, result: MaxEntResult) -> dict | None:
        """Section 7's estimation accuracy (weighted KL, nats) with and without the knowledge; None when the
        original records are not known."""
        if not self.has_truth:
            return None
        row = self.backend.fetchrow("maxent_accuracy.sql", estimate=self._estimate_table(result),
                                    truth=self.problem.tables["truth"], records=self.problem.N)
        kl, kl0, missed, missed0 = row
        return {"estimation_accuracy": float("inf") if missed else float(kl),
                "baseline_estimation_accuracy": float("inf") if missed0 else float(kl0),
                "cells_estimated_impossible": int(missed)}

    def risk(self, result: MaxEntResult) -> dict:
        """Largest posteriors and entropies over the published records, with and without the knowledge."""
        t = self.problem.tables
        data = self.backend.fetchnumpy("maxent_risk_summary.sql", estimate=self._estimate_table(result), qb=t["qb"])
        return {k: (float(v[0]) if "entropy" in k or "posterior" in k else int(v[0])) for k, v in data.items()}

    def write(self, result: MaxEntResult, name: str,
              files: Callable[[list[dict]], list[tuple[Path, Path]]] | None = None) -> list[dict]:
        """P*(S | Q) as table `name`, the per-quasi-identifier risk as `<name>_qi`, the per-record risk as
        `<name>_individuals` (and the named persons' posteriors as `<name>_persons`), atomically.

        Returns the outputs (kind, name, rows). `files` (the outputs -> the (temporary file, path) pairs it
        wrote) runs inside the tables' transaction: a report that cannot be written rolls them back
        (`tables.atomic_tables`)."""
        check_name(name, "--name")
        p, t = self.problem, self.problem.tables
        for field_name, columns in (("quasi_identifiers", p.attributes), ("sensitive", [p.sensitive])):
            for c in columns:
                if c.lower() in OUTPUT_COLUMNS:     # DuckDB renamed ours silently (probability_1), PostgreSQL fails
                    raise PolicyError(field_name, f"column '{c}' has the name of a column of maxent's output tables "
                                      f"({', '.join(OUTPUT_COLUMNS)}, in any case); rename it in a source query, or "
                                      "give --no-write")
        est = self._estimate_table(result)
        cols = list(zip(p.attributes, t["maps"]))
        names = [name, f"{name}_qi", f"{name}_individuals"] + ([f"{name}_persons"] if result.persons else [])
        common = dict(estimate=est, qb=t["qb"], qtable=t["q"], cols=cols, smap=t["smap"])
        rel = self.release
        outputs: list[dict] = []

        def staged(rows: dict[str, int]) -> list[tuple[Path, Path]]:
            outputs.extend({"kind": "table", "name": n, "rows": rows[n]} for n in names)
            return files(list(outputs)) if files is not None else []

        with atomic_tables(self.backend, names, name, "maxent", sources=[t for t in (rel.qit, rel.st, rel.truth) if t],
                           files=staged):
            self.backend.execute("maxent_posterior.sql", name=temporary_relation(names[0]), sensitive=p.sensitive,
                                 **common)
            self.backend.execute("maxent_risk.sql", name=temporary_relation(names[1]), per_bucket=False,
                                 buckets=t["buckets"], **common)
            self.backend.execute("maxent_risk.sql", name=temporary_relation(names[2]), per_bucket=True,
                                 buckets=t["buckets"], **common)
            if result.persons:
                rows = [(who, v, pr) for who, dist in result.persons.items() for v, pr in dist.items()]
                frame = pd.DataFrame(rows, columns=["person", p.sensitive, "probability"])
                self.backend.create_table_from_frame(temporary_relation(names[3]), frame, temp=False)
        return outputs


    def report(self, result: MaxEntResult, outputs: list | None = None) -> dict:
        """Everything about one solve, for `--json` and for a release report (`report_markdown`)."""
        p = self.problem
        rel = self.release
        release = {"kind": rel.kind, "name": rel.name, "records": p.N, "buckets": p.buckets,
                   "quasi_identifiers": list(p.attributes), "distinct_quasi_identifiers": p.q_count,
                   "sensitive": p.sensitive, "sensitive_values": len(p.s_values), "cells": len(p.cell_b)}
        if rel.kind == "bucketized":
            release["tables"] = {"qit": rel.qit, "st": rel.st}
        if rel.levels is not None:
            release["levels"] = dict(rel.levels)
        return {"release": release, **result.as_dict(), "risk": self.risk(result),
                "accuracy": self.accuracy(result), "outputs": outputs or []}


def report_markdown(report: dict) -> str:
    """A Markdown section for a release report: the adversary's knowledge, what it lets them infer."""
    rel, risk, acc, sol = report["release"], report["risk"], report["accuracy"], report["solver"]
    lines = ["### Background knowledge (Privacy-MaxEnt)", "",
             f"{rel['records']:,} records in {rel['buckets']:,} buckets ({rel['kind']} release); sensitive "
             f"attribute {rel['sensitive']} ({rel['sensitive_values']} values). Knowledge assumed: "
             + (f"{len(report['knowledge'])} constraint(s)" if report["knowledge"] else "none") + ".", "",
             "| measure | with the knowledge | without (uniform in each bucket) |", "| - | - | - |",
             f"| largest posterior P*(s \\| q, b) | {risk['max_posterior']:.3f} | "
             f"{risk['baseline_max_posterior']:.3f} |",
             f"| records with a posterior >= 0.9 | {risk['records_over_90']:,} | "
             f"{risk['baseline_records_over_90']:,} |",
             f"| records whose value is certain | {risk['records_certain']:,} | {risk['baseline_records_certain']:,} |",
             f"| mean entropy of a record's posterior (nats) | {risk['mean_entropy']:.3f} | "
             f"{risk['baseline_mean_entropy']:.3f} |"]
    if acc is not None:
        lines.append(f"| estimation accuracy (weighted KL to the truth, nats; lower = adversary closer) | "
                     f"{acc['estimation_accuracy']:.4f} | {acc['baseline_estimation_accuracy']:.4f} |")
    lines += ["", f"Solver: {sol['relevant_buckets']:,} bucket(s) touched by the knowledge optimized "
              f"({sol['iterations']} L-BFGS-B iterations), the others in closed form; largest constraint violation "
              f"{sol['max_violation_records']:.2g} records (tolerance {sol['tolerance_records']:.2g}"
              + ("" if sol["converged"] else ", NOT converged") + ")."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# releases of a policy

def bucketized_release(backend, name: str, quasi_identifiers: list[str], sensitive: str) -> ReleaseTables:
    """The tables of the bucketized release `name` (``sqlanon bucketize``); its original records come from
    ``<name>_private`` when the data owner kept it (joined with the quasi-identifier table by pseudonym)."""
    for t in (f"{name}_qit", f"{name}_st"):
        if not backend.table_exists(t):
            raise DataError(f"table {t} does not exist in {backend.describe()}; write the bucketized release with "
                            "`sqlanon bucketize` first")
    truth = None
    if backend.table_exists(f"{name}_private"):
        truth = f"{free_prefix(backend, PREFIX)}_original"     # not another open release's
        backend.execute("maxent_bucketized_truth.sql", out=truth, qit=f"{name}_qit", private=f"{name}_private",
                        qis=list(quasi_identifiers), sensitive=sensitive)
    return ReleaseTables(f"{name}_qit", f"{name}_st", truth, list(quasi_identifiers), sensitive, "bucketized", name)


@contextlib.contextmanager
def open_release(policy, buckets: str | None = None, node: dict | None = None, db=None, connection=None,
                 progress=None):
    """(backend, ReleaseTables) for a policy's release; closes what it opened.

    buckets: the name of a bucketized release (``<buckets>_qit``, ``<buckets>_st``; ``<buckets>_private``,
             when it exists, gives the original records); otherwise the generalized release of the core
             engine: the policy's chosen node (or `node`), each q*-block a bucket. The quasi-identifiers are
             then those of the original records (Privacy-MaxEnt assumes the adversary knows them, as
             Anatomy publishes them; generalization publishes less, so this is the conservative reading)
             and suppressed blocks are not released.
    """
    from ..anonymizer import Anonymization, default_db
    from ..policy import Policy, load_policy
    from .anatomy import refuse_entity_key
    pol = policy if isinstance(policy, Policy) else load_policy(policy)
    refuse_entity_key(pol)
    sensitive = pol.sensitive_names[0]
    qis = pol.qi_names
    if buckets is not None:
        from ..engine import open_backend, wrap_connection
        check_name(buckets, "--buckets")
        backend = wrap_connection(connection) if connection is not None else \
            open_backend(pol.source, db if db is not None else default_db(pol))
        try:
            yield backend, bucketized_release(backend, buckets, qis, sensitive)
        finally:
            if connection is None:
                backend.close()
        return
    run = Anonymization(pol, db=db, connection=connection, progress=progress)
    try:
        if node is None:
            run.search()
            run.score_minimal()
            levels = run.choose().levels
        else:
            levels = run.use_node(node).levels
        result = run.checker.evaluate(levels)
        if not result.satisfied:
            # its failing classes would be dropped beyond the budget, and they are the riskiest: a release that
            # cannot exist, its risk understated
            node_text = ",".join(f"{k}={v}" for k, v in levels.items())
            raise PolicyError("--node", f"{node_text} does not satisfy the policy, so no release of it exists to "
                              f"measure; give a node that does (sqlanon check POLICY --node {node_text} tells why)")
        mine = free_prefix(run.backend, PREFIX)       # another open release's tables keep theirs
        supp = run.fs.create_suppressed_table(result, name=f"{mine}_suppressed")
        rows, st = f"{mine}_released", f"{mine}_blocks"
        for c in qis + [sensitive]:
            if reserved_column(c):
                raise PolicyError("quasi_identifiers", f"column '{c}' has a name Privacy-MaxEnt's tables use")
        run.backend.execute("maxent_generalized_rows.sql", out=rows, source=run.source, qis=run.fs.qis,
                            sensitive=sensitive, node=[(run.fs.qi(q), lvl) for q, lvl in levels.items()],
                            suppressed=supp)
        column_type = dict(run.backend.columns(run.source)).get(sensitive, "")
        run.backend.execute("anatomy_st.sql", name=st, assigned=rows, sensitive=sensitive, temp=True,
                            written_apart=compared_type(column_type) is not None)
        yield run.backend, ReleaseTables(rows, st, rows, qis, sensitive, "generalized", pol.release.name,
                                         dict(levels), run)
    finally:
        if connection is None:
            run.close()
