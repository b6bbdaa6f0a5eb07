"""Benchmark: a whole `sqlanon anonymize` process against one DuckDB GROUP BY over the same file (issue 13, item 1).

Data: UCI Adult (datasets/adult/adult.parquet, 45,222 rows) replicated 100 times, 4,522,200 rows, written once by
DuckDB into --data as a CSV file (about 490 MB) and a Parquet file. Policy: the 8 quasi-identifiers and hierarchies
of datasets/adult/adult_k6.yaml, occupation sensitive, k = 5 and entropy 5-diversity, no suppression, the release a
table in a new DuckDB file (`--db`).

Per format and per round, in this order (so the code versions see the same machine load):

- floor: a fresh Python process runs one DuckDB GROUP BY over the 9 columns of the file (read_csv / read_parquet,
  with a count); the query's own time is the floor (the process's wall time is recorded too);
- baseline: `python -m sqlanon.cli anonymize POLICY --db NEW.duckdb -q` with PYTHONPATH pointing at --baseline
  (a checkout of the code before the change; skipped without it), wall time of the whole process;
- new: the same with this checkout.

Medians of --repeat rounds, and the 1-minute load average before each round. Then one profiled run per version
and format (in-process, `Anonymization` with every statement timed by its template) gives where the time goes.

    python benchmarks/bench_read_once.py --baseline /tmp/sqlanon-base --repeat 5 --out benchmarks/RESULTS-read-once.md
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_search import machine, write_results  # noqa: E402

ADULT = ROOT / "datasets" / "adult"
COLUMNS = ["age", "sex", "race", "marital_status", "education", "native_country", "workclass", "salary", "occupation"]
COPIES = 100

POLICY = """# Adult x {copies}, 8 quasi-identifiers (as adult_k6.yaml), k = 5 and entropy 5-diversity
source: {{{fmt}: {file}, table: adult}}
quasi_identifiers:
  age:            {{hierarchy: intervals, widths: [5, 10, 20]}}
  sex:            {{hierarchy: suppress}}
  race:           {{hierarchy: suppress}}
  marital_status: {{hierarchy: {h}/marital_status.csv}}
  education:      {{hierarchy: {h}/education.csv}}
  native_country: {{hierarchy: {h}/native_country.csv}}
  workclass:      {{hierarchy: {h}/workclass.csv}}
  salary:         {{hierarchy: suppress}}
sensitive: [occupation]
privacy:
  k: 5
  l_diversity: {{variant: entropy, l: 5}}
  max_suppression: 0.0
utility: discernibility
release: {{name: adult_release, materialize: table}}
"""


def prepare_data(data: Path) -> dict[str, Path]:
    """The CSV and Parquet files (written when missing) and one policy per format; fmt -> policy path."""
    import duckdb
    data.mkdir(parents=True, exist_ok=True)
    files = {"csv": data / f"adult{COPIES}.csv", "parquet": data / f"adult{COPIES}.parquet"}
    if not all(f.exists() for f in files.values()):
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        con.execute("CREATE TABLE a AS SELECT * FROM read_parquet(?)", [str(ADULT / "adult.parquet")])
        for fmt, f in files.items():
            option = "HEADER" if fmt == "csv" else "FORMAT parquet"
            con.execute(f"COPY (SELECT a.* FROM a, range({COPIES})) TO '{f}' ({option})")
        con.close()
    policies = {}
    for fmt, f in files.items():
        p = data / f"adult{COPIES}_{fmt}_k5_entropy5.yaml"
        p.write_text(POLICY.format(copies=COPIES, fmt=fmt, file=f.name, h=ADULT / "hierarchies"))
        policies[fmt] = p
    return {"files": files, "policies": policies}


FLOOR = """
import duckdb, json, sys, time
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
t = time.perf_counter()
n = con.execute("SELECT COUNT(*) FROM (SELECT {cols}, COUNT(*) FROM {reader}(?) GROUP BY ALL)", [sys.argv[1]]).fetchone()[0]
print(json.dumps({{"query_s": time.perf_counter() - t, "groups": n}}))
"""


def floor(fmt: str, path: Path) -> dict:
    code = FLOOR.format(cols=", ".join(COLUMNS), reader="read_csv" if fmt == "csv" else "read_parquet")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    result["process_s"] = time.perf_counter() - t
    return result


def anonymize(code: Path, policy: Path, db: Path) -> float:
    for f in (db, db.with_name(db.name + ".wal"), db.with_name("adult_release.manifest.json")):
        f.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    t = time.perf_counter()
    # cwd = the checkout: `python -m` puts the working folder first on sys.path
    done = subprocess.run([sys.executable, "-m", "sqlanon.cli", "anonymize", str(policy), "--db", str(db), "-q"],
                          env=env, cwd=code, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"anonymize with {code} failed: {done.stderr[-2000:]}")
    return elapsed


PROFILE = """
import collections, json, sys, time
from sqlanon.anonymizer import Anonymization
from sqlanon.engines.duckdb import DuckDBBackend
per = collections.defaultdict(lambda: [0, 0.0])
run_sql = DuckDBBackend._cursor
def timed(self, template, params, context):
    t = time.perf_counter()       # DuckDB runs the statement in execute(): the clock starts before it
    return Consumed(run_sql(self, template, params, context), template, t)
class Consumed:
    def __init__(self, cur, template, t):
        self.cur, self.template, self.t, self.description = cur, template, t, cur.description
    def _done(self, out):
        per[self.template][0] += 1
        per[self.template][1] += time.perf_counter() - self.t
        return out
    def fetchall(self):
        return self._done(self.cur.fetchall())
    def fetchnumpy(self):
        return self._done(self.cur.fetchnumpy())
DuckDBBackend._cursor = timed
union = DuckDBBackend.fetchnumpy_union
def timed_union(self, template, branches, order=None):
    t = time.perf_counter()
    out = union(self, template, branches, order)
    per["UNION ALL of " + template][0] += 1
    per["UNION ALL of " + template][1] += time.perf_counter() - t
    return out
DuckDBBackend.fetchnumpy_union = timed_union
t0 = time.perf_counter()
run = Anonymization(sys.argv[1], db=sys.argv[2])
t1 = time.perf_counter(); run.search(); t2 = time.perf_counter(); run.choose(); t3 = time.perf_counter()
run.materialize(); t4 = time.perf_counter()
phases = {"prepare": t1 - t0, "search": t2 - t1, "choose": t3 - t2, "release": t4 - t3, "total": t4 - t0}
result = {"minimal": len(run.result.minimal), "chosen": run.chosen.levels, "released": run.outputs[0].rows}
run.close()
print(json.dumps({"phases": phases, "statements": dict(per), "result": result}))
"""


def profile(code: Path, policy: Path, db: Path) -> dict:
    for f in (db, db.with_name(db.name + ".wal")):
        f.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run([sys.executable, "-c", PROFILE, str(policy), str(db)], env=env, cwd=code, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def load1() -> float:
    return os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/tmp/sqlanon-adult100", help="folder for the generated files and policies")
    ap.add_argument("--baseline", default=None, help="a checkout of the code before the change (PYTHONPATH)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--formats", default="csv,parquet")
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None, help="also write the raw measurements here")
    args = ap.parse_args()
    data = Path(args.data)
    files = prepare_data(data)
    versions = ([("baseline", Path(args.baseline).resolve())] if args.baseline else []) + [("new", ROOT)]
    formats = args.formats.split(",")
    runs: dict = {fmt: {"floor_query": [], "floor_process": [], **{v: [] for v, _ in versions}} for fmt in formats}
    loads: list[float] = []
    for i in range(args.repeat):
        for fmt in formats:
            loads.append(load1())
            f = floor(fmt, files["files"][fmt])
            runs[fmt]["floor_query"].append(f["query_s"])
            runs[fmt]["floor_process"].append(f["process_s"])
            for name, code in versions:
                runs[fmt][name].append(anonymize(code, files["policies"][fmt], data / f"out_{name}.duckdb"))
            print(f"round {i + 1} {fmt}: " + json.dumps({k: round(v[-1], 2) for k, v in runs[fmt].items()}),
                  file=sys.stderr)
    profiles = {fmt: {name: profile(code, files["policies"][fmt], data / f"prof_{name}.duckdb")
                      for name, code in versions} for fmt in formats}
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "loads": loads, "profiles": profiles}, indent=1) + "\n")
    write_results(render(runs, loads, profiles, args, [v for v, _ in versions]), args.out)


def render(runs: dict, loads: list[float], profiles: dict, args, versions: list[str]) -> list[str]:
    med = {fmt: {k: statistics.median(v) for k, v in r.items()} for fmt, r in runs.items()}
    command = (f"python benchmarks/bench_read_once.py --repeat {args.repeat} --formats {args.formats}"
               + (" --baseline BASELINE_CHECKOUT" if args.baseline else "") + (f" --out {args.out}" if args.out else ""))
    lines = [f"Machine: {machine()}", "", f"Command: `{command}`", "",
             f"Adult x {COPIES} ({45222 * COPIES:,} rows), 8 quasi-identifiers, occupation sensitive, k = 5 and entropy "
             "5-diversity, release a table in a new DuckDB file. Medians of "
             f"{args.repeat} rounds; each round runs the floor, then "
             + (" and ".join(versions)) + " one after the other, for each format. 1-minute load average before "
             f"the rounds: {min(loads):.1f} .. {max(loads):.1f} (2 cores shared with other developers' work).", "",
             "floor = one DuckDB GROUP BY over the 9 columns of the file (query time; the process around it in "
             "brackets); baseline / new = the whole `sqlanon anonymize` process (Python start, policy, search, "
             "release, manifest).", "",
             "| format | floor s | " + " | ".join(f"{v} s" for v in versions) + " | new / floor | new / floor "
             "per round (median; range) |" + (" baseline / new |" if "baseline" in versions else ""),
             "| - | - | " + " | ".join("-" for _ in versions) + " | - | - |"
             + (" - |" if "baseline" in versions else "")]
    for fmt, m in med.items():
        # each round's ratio, its floor and its process measured a few seconds apart under the same load
        ratios = [n / f for n, f in zip(runs[fmt]["new"], runs[fmt]["floor_query"])]
        row = f"| {fmt} | {m['floor_query']:.2f} ({m['floor_process']:.2f}) | " + " | ".join(
            f"{m[v]:.2f}" for v in versions) + f" | {m['new'] / m['floor_query']:.1f} x | " + (
            f"{statistics.median(ratios):.1f} x; {min(ratios):.1f} .. {max(ratios):.1f} |")
        if "baseline" in versions:
            row += f" {m['baseline'] / m['new']:.1f} x |"
        lines.append(row)
    lines += ["", "Every round (s):", ""]
    for fmt, r in runs.items():
        for k, v in r.items():
            lines.append(f"- {fmt} {k}: " + ", ".join(f"{x:.2f}" for x in v))
    lines.append("- 1-minute load average before each round (formats in turn): " + ", ".join(f"{x:.1f}" for x in loads))
    lines += ["", "## Where the time goes (one profiled run per version and format, in-process)", ""]
    for fmt, per_version in profiles.items():
        for version, p in per_version.items():
            ph = p["phases"]
            lines += [f"### {fmt}, {version}: {ph['total']:.2f} s (prepare {ph['prepare']:.2f}, search "
                      f"{ph['search']:.2f}, choose {ph['choose']:.2f}, release {ph['release']:.2f}); "
                      f"{p['result']['minimal']} minimal nodes, chosen {p['result']['chosen']}, "
                      f"{p['result']['released']:,} rows released", "",
                      "| statement (template) | runs | seconds | share of the total |", "| - | - | - | - |"]
            lines += statement_rows(p["statements"], ph["total"], top=8, digits=2) + [""]
    return lines


def statement_rows(per: dict, total: float, top: int, digits: int) -> list[str]:
    """Markdown rows `| template | runs | seconds | share |` of the `top` costliest templates (per: template ->
    [runs, seconds]), the others summed on one row."""
    items = sorted(per.items(), key=lambda kv: -kv[1][1])
    lines = [f"| {name} | {n} | {s:.{digits}f} | {100 * s / total:.0f} % |" for name, (n, s) in items[:top]]
    rest = items[top:]
    if rest:
        lines.append(f"| {len(rest)} other templates | {sum(n for _, (n, _) in rest)} | "
                     f"{sum(s for _, (_, s) in rest):.{digits}f} | |")
    return lines


if __name__ == "__main__":
    main()
