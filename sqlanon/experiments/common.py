"""What every experiment shares: the Adult data and its policies, runs with a new privacy block, the
machine description, timing and peak memory.

Data never goes through pandas: the Adult table (or a seeded sample of it) is created inside a DuckDB
connection with DuckDB's relational API, and each experiment's `Anonymization` works on that
connection. Samples are drawn in numpy from a seeded generator over row numbers (only the chosen row
numbers travel to the database), so they are the same on every machine, thread count and DuckDB
version.
"""
from __future__ import annotations

import contextlib
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from ..anonymizer import Anonymization
from ..checker import NodeChecker
from ..metrics import all_metrics
from ..models import criteria_from_policy
from ..models.kanonymity import KAnonymity

SEED = 20070301        # TKDD 1(1), March 2007: the seed of every sample
SAMPLE_FRACTION = 0.05  # the paper's 5 % Bernoulli subsample (Figures 15-19)

# docs/DESIGN.md section 6 / TKDD Figure 7, in the paper's order (the performance experiment's QI order)
ADULT_QIS: dict[str, Any] = {
    "age": {"hierarchy": "intervals", "widths": [5, 10, 20]},
    "sex": {"hierarchy": "suppress"},
    "race": {"hierarchy": "suppress"},
    "marital_status": {"hierarchy": "hierarchies/marital_status.csv"},
    "education": {"hierarchy": "hierarchies/education.csv"},
    "native_country": {"hierarchy": "hierarchies/native_country.csv"},
    "workclass": {"hierarchy": "hierarchies/workclass.csv"},
    "salary": {"hierarchy": "suppress"},
}


def adult_dir() -> Path:
    return Path(str(resources.files("sqlanon.datasets.adult")))


def adult_parquet() -> Path:
    return adult_dir() / "adult.parquet"


def occupation_hierarchy() -> Path:
    return adult_dir() / "hierarchies" / "occupation.csv"


def adult_qis(names) -> dict:
    """Quasi-identifier specs over the shipped Adult hierarchies (absolute paths)."""
    out: dict[str, Any] = {}
    for n in names:
        spec = dict(ADULT_QIS[n])
        if spec["hierarchy"].endswith(".csv"):
            spec["hierarchy"] = str(adult_dir() / spec["hierarchy"])
        out[n] = spec
    return out


def adult_policy(table: str, qis, privacy: dict, sensitive="occupation", occupation_groups: bool = False) -> dict:
    """A policy over an Adult table of the experiment's connection."""
    sens = {sensitive: {"hierarchy": str(occupation_hierarchy())}} if occupation_groups else [sensitive]
    return {"source": {"table": table}, "quasi_identifiers": adult_qis(qis), "sensitive": sens,
            "privacy": privacy, "utility": "discernibility"}


# --------------------------------------------------------------------------------------------------
# data

def _rows(rel) -> int:
    return int(rel.aggregate("count(*)").fetchall()[0][0])


def _keep_rows(con, rel, keep: np.ndarray, name: str) -> None:
    """CREATE TABLE name AS the rows of `rel` (with a file_row_number column) whose number is in `keep`,
    in file order, without the row-number column."""
    cols = [c for c in rel.columns if c != "file_row_number"]
    keep_rel = con.from_df(pd.DataFrame({"file_row_number": np.asarray(keep, dtype=np.int64)}))
    (rel.join(keep_rel, "file_row_number", how="semi").order("file_row_number")
        .select(*[duckdb.ColumnExpression(c) for c in cols]).create(name))


def bernoulli_rows(n: int, fraction: float, seed: int) -> np.ndarray:
    """Row numbers of a seeded Bernoulli sample: each row kept independently with probability `fraction`."""
    return np.flatnonzero(np.random.default_rng(seed).random(n) < fraction)


def create_adult_tables(con, sample_rows: int | None = None, seed: int = SEED) -> dict:
    """Tables `adult` (all 45,222 rows, or a seeded simple random sample of `sample_rows` of them) and
    `adult_sample` (a seeded 5 % Bernoulli sample of `adult`) in `con`; returns their row counts."""
    rel = con.read_parquet(str(adult_parquet()), file_row_number=True)
    n = _rows(rel)
    if sample_rows is not None and sample_rows < n:
        rows = np.sort(np.random.default_rng(seed + 1).choice(n, size=int(sample_rows), replace=False))
        _keep_rows(con, rel, rows, "adult")
    else:
        rows = np.arange(n)
        cols = [c for c in rel.columns if c != "file_row_number"]
        rel.order("file_row_number").select(*[duckdb.ColumnExpression(c) for c in cols]).create("adult")
    _keep_rows(con, rel, rows[bernoulli_rows(len(rows), SAMPLE_FRACTION, seed)], "adult_sample")
    return {"adult": int(len(rows)), "adult_sample": _rows(con.table("adult_sample"))}


# --------------------------------------------------------------------------------------------------
# runs

def with_privacy(run: Anonymization, privacy: dict) -> Anonymization:
    """Point an Anonymization at another privacy block, keeping its frequency sets (no rebuild).

    The criteria are made by the same `criteria_from_policy` and checked by the same `NodeChecker` as
    a fresh `Anonymization(policy)` would; only the frequency set (the one scan of the data) is shared.
    """
    run.criteria = criteria_from_policy(privacy, {s.name: s.domain for s in run.fs.sensitives})
    run.checker = NodeChecker(run.fs, run.criteria, privacy.get("max_suppression", 0.0) or 0.0)
    run.result, run.candidates, run.chosen, run.optimum = None, [], None, None
    return run


def minimal_metrics(run: Anonymization) -> list[dict]:
    """Every minimal satisfying node of the current privacy block with its four metrics."""
    if run.result is None:
        run.search()
    return [{"levels": c.levels, "metrics": c.metrics} for c in run.score_minimal()]


def best(rows: list[dict], metric: str):
    """The smallest value of a metric over minimal nodes (None when there is none). Every metric here
    is monotone under generalization, so this is also the minimum over all satisfying nodes."""
    vals = [r["metrics"][metric] for r in rows]
    return min(vals) if vals else None


def baseline_metrics(run: Anonymization) -> dict:
    """Metrics of the fully generalized table (every quasi-identifier at its top level): the paper's
    "base" bar of Figures 19 and 20 (the table where Q is completely suppressed)."""
    top = {q: h for q, h in zip(run.lattice.names, run.lattice.heights)}
    result = NodeChecker(run.fs, [KAnonymity(1)]).evaluate(top)
    return all_metrics(run.fs, result)


# --------------------------------------------------------------------------------------------------
# measuring

def machine() -> dict:
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = round(int(f.readline().split()[1]) / 1024 ** 2, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        load = round(os.getloadavg()[0], 1)     # other work on the machine slows the timings down
    except (OSError, AttributeError):
        load = None
    return {"system": f"{platform.system()} {platform.machine()}", "cores": os.cpu_count(), "cpu": cpu,
            "memory_gb": mem, "python": platform.python_version(), "duckdb": duckdb.__version__,
            "numpy": np.__version__, "load_average": load}


def machine_text(m: dict) -> str:
    mem = f", {m['memory_gb']} GB RAM" if m.get("memory_gb") else ""
    load = f"; load average {m['load_average']:g} at the start" if m.get("load_average") is not None else ""
    return (f"{m['system']}, {m['cores']} cores ({m['cpu']}){mem}, Python {m['python']}, DuckDB {m['duckdb']}, "
            f"numpy {m['numpy']}{load}")


def reset_peak_memory() -> bool:
    """Reset this process's peak resident set size (Linux: clear_refs 5); False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_memory_mb() -> float:
    """Peak resident set size of this process in MB (since the last reset, where resets work)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


@dataclass
class Context:
    """Options of one `sqlanon experiments` run and the shared Adult connection."""

    out: Path
    sample_rows: int | None = None
    landsend_rows: int | None = None
    repeat: int = 3
    landsend_timeout: float = 120.0
    landsend_memory_mb: float = 6144.0
    log: Callable[[str], None] | None = None
    _con: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)
    tables: dict = field(default_factory=dict)

    def say(self, text: str) -> None:
        if self.log:
            self.log(text)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = duckdb.connect()
            self.tables = create_adult_tables(self._con, self.sample_rows)
        return self._con

    @contextlib.contextmanager
    def run(self, table: str, qis, privacy: dict, sensitive="occupation", occupation_groups=False):
        """An Anonymization over one of the Adult tables of the shared connection (`with ctx.run(...) as r`).

        The shared connection stays open (an Anonymization's close() would close it); its work tables
        go when the connection closes, after each experiment (`close`).
        """
        yield self.anonymization(adult_policy(table, qis, privacy, sensitive, occupation_groups))

    def anonymization(self, policy: dict) -> Anonymization:
        return Anonymization(policy, connection=self.con)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


class Timer:
    def __enter__(self):
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t
