"""Benchmark: Lands End 4.6 M rows on PostgreSQL, against DuckDB on the same rows (issue 13, item 5).

A PostgreSQL server is started as tests/test_engines.py starts it (initdb in a temporary folder, fsync off,
127.0.0.1 on a free port) and stopped at the end. The synthetic Lands End table (datasets/landsend/generate.py,
seed 0, 4,591,581 rows) is loaded with COPY (DuckDB writes the CSV, psycopg streams it) and ANALYZEd. Policy:
the generator's landsend_k6.yaml (7 quasi-identifiers, cost sensitive, k = 6, no suppression), the source
pointed at the PostgreSQL table; the job is every minimal node, the chosen node and the release (a table).

Each configuration (--configs: `default` = no session settings; `work_mem` = `settings: {work_mem: 256MB}`)
and DuckDB (reading the Parquet file) run in turn, --repeat rounds, each run in a fresh process; every statement
is timed by its template (Backend._timed), so the table shows which statement kinds dominate. With --baseline
CHECKOUT (a worktree of another commit) every configuration runs again with that checkout's sqlanon, after this
one's in each round: the baseline of the same run. The runs must agree: minimal nodes, chosen node and
released rows.

    python benchmarks/bench_postgres.py --repeat 1 --out benchmarks/RESULTS-postgres.md
    python benchmarks/bench_postgres.py --configs default --baseline /tmp/worktree --out results.md
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from bench_read_once import statement_rows  # noqa: E402
from bench_rows import CODE_ENV, baseline_label, dataset, run_worker  # noqa: E402
from bench_search import machine, write_results  # noqa: E402

# a worker (`measure`) imports sqlanon from the checkout it was given: put first on the path after the imports
# above (each benchmark module puts its own checkout first when imported) and before test_engines imports sqlanon
sys.path.insert(0, os.environ.get(CODE_ENV, str(ROOT)))
from test_engines import PostgresServer, _pg_bin  # noqa: E402  (the tests' server: initdb + pg_ctl in /tmp)

ROWS = 4_591_581
ENV = "SQLANON_BENCH_PG_DSN"
CONFIGS = {"default": {}, "work_mem": {"work_mem": "256MB"}}


def load(dsn: str, parquet: Path) -> float:
    """CREATE TABLE landsend + COPY from a CSV DuckDB writes, then ANALYZE; seconds."""
    import duckdb
    import psycopg
    t = time.perf_counter()
    csv = parquet.with_suffix(".csv")
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute("COPY (SELECT * FROM read_parquet(?)) TO '" + str(csv).replace("'", "''") + "' (HEADER false)",
                [str(parquet)])
    con.close()
    with psycopg.connect(dsn, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS landsend")
        pg.execute("CREATE TABLE landsend (zipcode VARCHAR, order_date DATE, gender VARCHAR, style INTEGER, "
                   "price INTEGER, quantity INTEGER, shipment VARCHAR, cost INTEGER)")
        with pg.cursor() as cur, cur.copy("COPY landsend FROM STDIN (FORMAT csv)") as copy, open(csv, "rb") as f:
            while block := f.read(1 << 20):
                copy.write(block)
        pg.execute("ANALYZE landsend")
    csv.unlink()
    return time.perf_counter() - t


AB_QUERY = ("SELECT COUNT(*), SUM(n) FROM (SELECT COUNT(*) AS n FROM landsend "
            "GROUP BY zipcode, order_date, style, price) AS blocks")


def work_mem_ab(dsn: str, repeat: int) -> dict[str, list[float]]:
    """One GROUP BY of the search's shape (a node of four quasi-identifiers over the 4.6 M rows, about one group
    per row) under work_mem 4MB (PostgreSQL's default) and 256MB, alternating in one session: seconds per run."""
    import psycopg
    out: dict[str, list[float]] = {"4MB": [], "256MB": []}
    with psycopg.connect(dsn, autocommit=True) as pg:
        for _ in range(repeat):
            for mem in out:
                pg.execute("SELECT set_config('work_mem', %s, false)", [mem])
                t = time.perf_counter()
                pg.execute(AB_QUERY).fetchall()
                out[mem].append(time.perf_counter() - t)
    return out


def run_one(policy_raw: dict, base_dir: Path) -> dict:
    """One run in this process, every statement timed by template."""
    import sqlanon
    from sqlanon.anonymizer import Anonymization
    from sqlanon.engines.base import Backend
    from sqlanon.policy import load_policy
    per: dict = collections.defaultdict(lambda: [0, 0.0])
    timed = Backend._timed

    def timed_by_template(self, sql, params, want, template):
        t = time.perf_counter()
        try:
            return timed(self, sql, params, want, template)
        finally:
            kind = sql.lstrip().split(None, 1)[0].upper()     # a CREATE ... AS template runs DROP, CREATE, ANALYZE
            key = template + (f" ({kind})" if kind in ("ANALYZE", "DROP") else "")
            per[key][0] += 1
            per[key][1] += time.perf_counter() - t

    Backend._timed = timed_by_template      # PostgreSQL runs every statement through it (DuckDB does not)
    try:
        t0 = time.perf_counter()
        run = Anonymization(load_policy(policy_raw, base_dir=base_dir), db=":memory:")
        t1 = time.perf_counter()
        result = run.search()
        t2 = time.perf_counter()
        run.choose()
        t3 = time.perf_counter()
        run.materialize()
        t4 = time.perf_counter()
        out = {"prepare_s": t1 - t0, "search_s": t2 - t1, "choose_s": t3 - t2, "release_s": t4 - t3,
               "total_s": t4 - t0, "minimal": sorted(str(run.lattice.levels(n)) for n in result.minimal),
               "evaluated": result.evaluated, "chosen": run.chosen.levels, "released": run.outputs[0].rows,
               "statements": run.backend.statements, "per_template": dict(per),
               "package": str(Path(sqlanon.__file__).resolve().parents[1])}
        run.close()
        return out
    finally:
        Backend._timed = timed


def worker(policy_json: str, base_dir: str) -> None:
    """One run (`run_one`) with the checkout `measure` names (put first on the path on import); its result as
    a JSON line."""
    print(json.dumps(run_one(json.loads(policy_json), Path(base_dir)), default=str), flush=True)


def measure(policy: dict, base_dir: Path, code: str) -> dict:
    """One run in a fresh process with the sqlanon package of the checkout `code` (`bench_rows.run_worker`)."""
    return run_worker([__file__, "--worker", json.dumps(policy), str(base_dir)], code=code)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/tmp/sqlanon-landsend")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--configs", default="default,work_mem")
    ap.add_argument("--baseline", default=None, metavar="CHECKOUT",
                    help="also run every configuration with this checkout's sqlanon (a worktree of another commit)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--ab-only", type=int, default=0, metavar="N",
                    help="only the work_mem A/B of one GROUP BY, N times each, alternating (no full runs)")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    folder = dataset(Path(args.data), ROWS)
    raw = yaml.safe_load((folder / "landsend_k6.yaml").read_text())
    versions = [("", str(ROOT))]
    if args.baseline:
        versions.append((f" ({baseline_label(args.baseline)})", args.baseline))
    server = PostgresServer(_pg_bin())
    try:
        import psycopg
        with psycopg.connect(server.dsn(), autocommit=True) as con:
            con.execute("CREATE DATABASE bench")
        dsn = server.dsn("bench")
        os.environ[ENV] = dsn       # the workers inherit it
        load_s = load(dsn, folder / "landsend.parquet")
        print(f"loaded in {load_s:.1f} s", file=sys.stderr, flush=True)
        if args.ab_only:
            before = os.getloadavg()[0]
            ab = work_mem_ab(dsn, args.ab_only)
            print(json.dumps({"work_mem_ab": ab, "load_before": before, "load_after": os.getloadavg()[0],
                              "medians": {k: statistics.median(v) for k, v in ab.items()}}))
            return
        configs = ["duckdb", *args.configs.split(",")]
        runs: dict[str, list[dict]] = {c + suffix: [] for suffix, _ in versions for c in configs}
        loads = []
        for _ in range(args.repeat):
            for suffix, code in versions:
                for name in configs:
                    loads.append(os.getloadavg()[0])
                    policy = dict(raw)
                    if name != "duckdb":
                        policy["source"] = {"engine": "postgres", "dsn_env": ENV, "table": "landsend",
                                            "settings": CONFIGS[name]}
                    policy["release"] = {"name": "landsend_release", "materialize": "table"}
                    r = measure(policy, folder, code)
                    runs[name + suffix].append(r)
                    print(name + suffix, json.dumps({k: v for k, v in r.items() if k != "per_template"}, default=str),
                          file=sys.stderr, flush=True)
    finally:
        server.stop()
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "loads": loads, "load_s": load_s}, indent=1,
                                              default=str) + "\n")
    write_results(render(runs, loads, load_s, args), args.out)


def render(runs: dict, loads: list[float], load_s: float, args) -> list[str]:
    command = (f"python benchmarks/bench_postgres.py --repeat {args.repeat} --configs {args.configs}"
               + (f" --baseline {args.baseline}" if args.baseline else "") + (f" --out {args.out}" if args.out else ""))
    ref = runs["duckdb"][0]
    lines = [f"Machine: {machine()}; PostgreSQL from {_pg_bin()}", "", f"Command: `{command}`", "",
             f"Synthetic Lands End, {ROWS:,} rows (seed 0), landsend_k6.yaml (7 quasi-identifiers, cost sensitive, "
             "k = 6, no suppression): every minimal node, the chosen node, the release as a table. PostgreSQL "
             "started as the tests start it (fsync off, default settings otherwise); the table loaded with COPY and "
             f"ANALYZEd in {load_s:.0f} s (not counted). Medians of {args.repeat} round(s); configurations run one "
             f"after the other in each round. 1-minute load average before the runs: {min(loads):.1f} .. "
             f"{max(loads):.1f} (2 cores shared with other developers' work).", "",
             "| engine / settings | prepare s | search s | choose s | release s | total s | statements | minimal "
             "| chosen | released rows | same result as DuckDB |", "| - | - | - | - | - | - | - | - | - | - | - |"]
    for name, rs in runs.items():
        m = {k: statistics.median(r[k] for r in rs) for k in ("prepare_s", "search_s", "choose_s", "release_s",
                                                              "total_s")}
        r = rs[0]
        same = all(x["minimal"] == ref["minimal"] and x["chosen"] == ref["chosen"] and x["released"] == ref["released"]
                   for x in rs)
        config, _, baseline = name.partition(" (")
        label = "DuckDB (Parquet)" if config == "duckdb" else f"PostgreSQL, {config} {CONFIGS[config] or ''}".strip()
        label += f" ({baseline}" if baseline else ""
        lines.append(f"| {label} | {m['prepare_s']:.1f} | {m['search_s']:.1f} | {m['choose_s']:.1f} | "
                     f"{m['release_s']:.1f} | {m['total_s']:.1f} | {r['statements']} | {len(r['minimal'])} | "
                     + ", ".join(f"{k}={v}" for k, v in r["chosen"].items())
                     + f" | {r['released']:,} | {'yes' if same else 'NO'} |")
    lines.append("")
    for name, rs in runs.items():
        r = rs[0]
        if name.partition(" (")[0] == "duckdb":
            continue
        lines += [f"### Statements by template: {name} (first round, {r['total_s']:.1f} s)", "",
                  "| template | runs | seconds | share |", "| - | - | - | - |"]
        lines += statement_rows(r["per_template"], r["total_s"], top=10, digits=1) + [""]
    return lines


if __name__ == "__main__":
    main()
