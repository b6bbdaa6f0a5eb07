"""Benchmark: the synthetic Lands End table at 0.5, 1, 2 and 4.6 million rows, on DuckDB and on Spark.

The policy is the generator's landsend_k6.yaml: the 7 quasi-identifiers of the TKDD l-diversity paper's
Figure 14 (zipcode, order date, gender, style, price, quantity, shipment), cost sensitive, k = 6, no
suppression; the job is every minimal 6-anonymous node (Incognito) and the metrics of each.

Each run is a fresh process. It records the phases (prepare = source, mapping tables and frequency
sets; search = the lattice search; metrics = the four utility metrics of every minimal node), the nodes
evaluated, and the peak memory of the whole process tree (Python, and for Spark its JVM), sampled from
/proc every 50 ms; for DuckDB also the process's own ru_maxrss. Medians of --repeat runs. The tables are
generated once into --data (datasets/landsend/generate.py, seed 0) and reused.

    python benchmarks/bench_scale.py --repeat 3 --spark-repeat 1 --out benchmarks/RESULTS-scale.md

(about 15 minutes on 2 cores, most of it Spark; `--spark-repeat 0` for DuckDB alone, about 2 minutes).
Each run's JSON line (printed on stderr, kept by --json) also holds `by_template`: every statement's time by
engine and template ("spark:stage_source.sql", "duckdb:node_counts_branch.sql": [runs, seconds]), where a
phase's time goes.
`--json FILE` keeps the raw results; `--render FILE` rewrites the report from them (or from the JSON
lines the script prints on stderr) without running anything.

Spark runs in local mode (`--spark-master local[2]`, driver memory `--spark-memory`), reading the same
Parquet file.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_search import machine, write_results  # noqa: E402

FULL = 4_591_581
SIZES = (500_000, 1_000_000, 2_000_000, FULL)


def dataset(data: Path, rows: int) -> Path:
    """The policy file of a generated Lands End table of `rows` rows (generated when missing)."""
    folder = data / f"landsend_{rows}"
    policy = folder / "landsend_k6.yaml"
    if not policy.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(ROOT / "datasets" / "landsend" / "generate.py"),
                        str(folder / "landsend.parquet"), "--rows", str(rows)], check=True, stdout=subprocess.DEVNULL)
    return policy


def time_statements() -> dict[str, list]:
    """Time every statement by its template from now on, in this process: "engine:template" -> [runs,
    seconds], filled as statements run (DuckDB runs templates through `_cursor`, the others through `_timed`;
    a DuckDB statement's time includes consuming its result)."""
    from sqlanon.engines.base import Backend
    from sqlanon.engines.duckdb import DuckDBBackend
    per: dict[str, list] = {}

    def add(key: str, t: float) -> None:
        entry = per.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += time.perf_counter() - t

    timed, cursor = Backend._timed, DuckDBBackend._cursor

    def timed_sql(self, sql, params, want, template):
        t = time.perf_counter()
        try:
            return timed(self, sql, params, want, template)
        finally:
            add(f"{self.engine}:{template}", t)

    class Consumed:
        def __init__(self, cur, key, t):
            self.cur, self.key, self.t, self.description = cur, key, t, cur.description

        def fetchall(self):
            out = self.cur.fetchall()
            add(self.key, self.t)
            return out

        def fetchnumpy(self):
            out = self.cur.fetchnumpy()
            add(self.key, self.t)
            return out

    def cursor_sql(self, template, params, context):
        t = time.perf_counter()
        return Consumed(cursor(self, template, params, context), f"duckdb:{template}", t)

    Backend._timed = timed_sql
    DuckDBBackend._cursor = cursor_sql
    return per


def worker(engine: str, policy_path: str, master: str, memory: str, metrics: bool, anonymize: bool = False) -> dict:
    import shutil
    import tempfile

    from sqlanon.anonymizer import Anonymization
    from sqlanon.policy import load_policy
    statements = time_statements()
    policy = load_policy(policy_path)
    # --anonymize releases a table: on Spark into a warehouse folder of its own, removed afterwards
    warehouse = tempfile.mkdtemp(prefix="sqlanon-bench-warehouse-")
    if engine == "spark":
        raw = dict(policy.raw)
        raw["source"] = {"engine": "spark", "master": master, "parquet": str(policy.source.path),
                         "table": "landsend", "conf": {"spark.driver.memory": memory,
                                                       "spark.sql.warehouse.dir": warehouse}}
        policy = load_policy(raw, base_dir=policy.base_dir)
    t0 = time.perf_counter()
    run = Anonymization(policy, db=":memory:")
    t1 = time.perf_counter()
    result = run.search()
    t2 = time.perf_counter()
    if metrics:
        run.score_minimal()
        run.choose()
    t3 = time.perf_counter()
    release_s = None
    if anonymize:         # what `sqlanon anonymize` does after the search: choose the node, write the release
        run.choose()
        run.materialize()
        release_s = time.perf_counter() - t3
    t4 = time.perf_counter()
    out = {"engine": engine, "rows": run.fs.rows, "prepare_s": t1 - t0, "search_s": t2 - t1,
           "metrics_s": t3 - t2 if metrics else None, "release_s": release_s, "total_s": t4 - t0,
           "evaluated": result.evaluated, "nodes": run.lattice.size, "minimal": len(result.minimal),
           "chosen": run.chosen.levels if (metrics or anonymize) else None,
           "self_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "statements": run.backend.statements,
           "by_template": dict(sorted(statements.items(), key=lambda kv: -kv[1][1]))}
    run.close()
    shutil.rmtree(warehouse, ignore_errors=True)
    return out


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (MB), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total / 1024


def watch_peak_rss(proc: subprocess.Popen) -> tuple[threading.Thread, list[float]]:
    """A started thread sampling the process tree's resident memory every 50 ms until `proc` ends, and the
    one-item list holding the peak (MB)."""
    peak = [0.0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_mb(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    return sampler, peak


def measure(args: list[str], code: str | None = None) -> dict:
    """Run one worker process (with the sqlanon package of the checkout `code`, default this one); its JSON
    result plus the sampled peak memory of its process tree."""
    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = code + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env)
    sampler, peak = watch_peak_rss(proc)
    out, err = proc.communicate()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"worker {args} failed:\n{err[-3000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["tree_peak_rss_mb"] = peak[0]
    return result


def summarize(runs: list[dict]) -> dict:
    med = {k: statistics.median(r[k] for r in runs) for k in ("prepare_s", "search_s", "total_s")}
    for k in ("metrics_s", "release_s"):
        if runs[0].get(k) is not None:
            med[k] = statistics.median(r[k] for r in runs)
    return {**runs[0], **med, "runs": len(runs), "tree_peak_rss_mb": max(r["tree_peak_rss_mb"] for r in runs),
            "self_maxrss_mb": max(r["self_maxrss_mb"] for r in runs)}


def _load() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default=",".join(map(str, SIZES)), help="comma-separated table sizes")
    ap.add_argument("--repeat", type=int, default=3, help="runs per size on DuckDB (median reported)")
    ap.add_argument("--spark-repeat", type=int, default=1, help="runs per size on Spark (0: no Spark)")
    ap.add_argument("--spark-master", default="local[2]")
    ap.add_argument("--spark-memory", default="4g", help="spark.driver.memory")
    ap.add_argument("--baseline", default=None, metavar="CHECKOUT",
                    help="also run every Spark measurement with the sqlanon package of this checkout (e.g. a git "
                    "worktree of an older commit), alternating with this one: the baseline of the same run")
    ap.add_argument("--no-metrics", action="store_true", help="search only, no metrics of the minimal nodes")
    ap.add_argument("--anonymize", action="store_true",
                    help="after the search, choose the node and write the release table (what `sqlanon anonymize` "
                         "does); with --no-metrics, the job of `sqlanon anonymize`")
    ap.add_argument("--data", default="/tmp/sqlanon-landsend", help="folder for the generated tables")
    ap.add_argument("--out", default=None, help="Markdown file to write")
    ap.add_argument("--json", default=None, help="also write the raw results here (re-render with --render)")
    ap.add_argument("--render", default=None, help="only re-render the report from a --json file (or the JSON "
                    "lines this script prints on stderr)")
    ap.add_argument("--worker", nargs=2, metavar=("ENGINE", "POLICY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    metrics = not args.no_metrics
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.spark_master, args.spark_memory, metrics,
                                args.anonymize), default=str))
        return
    if args.render:
        text = Path(args.render).read_text()
        try:
            saved = json.loads(text)
            rows, loads = saved["rows"], saved["loads"]
        except json.JSONDecodeError:
            rows = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
            loads = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("load: ")] or ["?"]
        write_results(render(rows, args, loads), args.out)
        return
    sizes = [int(s) for s in args.rows.split(",")]
    data = Path(args.data)
    engines = [(e, r) for e, r in (("duckdb", args.repeat), ("spark", args.spark_repeat)) if r > 0]
    # each variant: (label, engine, checkout); the baseline's runs alternate with the current code's
    variants = {"duckdb": [("duckdb", None)], "spark": [("spark", None)]}
    if args.baseline:
        variants["spark"].append((f"spark, baseline {_commit(args.baseline)}", args.baseline))
    rows: list[dict] = []
    loads = []
    for n in sizes:
        policy = dataset(data, n)
        for engine, repeat in engines:
            runs: dict[str, list[dict]] = {label: [] for label, _ in variants[engine]}
            for _ in range(repeat):
                for label, code in variants[engine]:
                    loads.append(_load())
                    extra = ["--spark-master", args.spark_master, "--spark-memory", args.spark_memory]
                    run = measure(["--worker", engine, str(policy), *extra] + (["--no-metrics"] if not metrics else [])
                                  + (["--anonymize"] if args.anonymize else []), code)
                    run["engine"] = label
                    runs[label].append(run)
                    print(json.dumps(run, default=str), file=sys.stderr)
            for measured in runs.values():
                row = summarize(measured)
                rows.append(row)
                print(json.dumps(row, default=str), file=sys.stderr)
    print("load: " + min(loads), file=sys.stderr)
    print("load: " + max(loads), file=sys.stderr)
    write_results(render(rows, args, loads), args.out)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "loads": loads}, indent=1, default=str) + "\n")


def _commit(checkout: str) -> str:
    try:
        return subprocess.run(["git", "-C", checkout, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=False).stdout.strip() or checkout
    except (OSError, subprocess.SubprocessError):
        return checkout


def render(rows: list[dict], args, loads: list[str]) -> list[str]:
    """The Markdown report: machine, command, one line per (engine, size), and what the series shows."""
    metrics = not args.no_metrics
    command = (f"python benchmarks/bench_scale.py --rows {args.rows} --repeat {args.repeat} --spark-repeat "
               f"{args.spark_repeat} --spark-master '{args.spark_master}' --spark-memory {args.spark_memory}"
               + (" --no-metrics" if not metrics else "") + (" --anonymize" if args.anonymize else "")
               + (f" --baseline {args.baseline}" if args.baseline else "")
               + (f" --out {args.out}" if args.out else ""))
    lines = [f"Machine: {machine()}; Spark {spark_version()} (local mode), Java {java_version()}", "",
             f"Command: `{command}`", "",
             "Synthetic Lands End (datasets/landsend/generate.py, seed 0), policy landsend_k6.yaml: 7 quasi-identifiers "
             "(Figure 14), cost sensitive, k = 6, no suppression; all minimal 6-anonymous nodes (Incognito)"
             + (", then the four metrics of each" if metrics else "")
             + (", then the chosen node's release written as a table" if args.anonymize else "")
             + ". Each run a fresh process; DuckDB medians of "
             f"{args.repeat} runs, Spark {args.spark_repeat}. prepare = source, mapping tables, frequency sets (for "
             "Spark also starting the session: JVM and local executors); total = prepare + search + metrics (the "
             "Python process start, about 0.5 s, not included; with --anonymize also + release: choosing the node "
             "by the policy's metric and writing the release table, what `sqlanon anonymize` does). Peak memory: the process tree's resident memory "
             "(Python and, for Spark, its JVM) sampled every 50 ms. Load averages (1/5/15 min) at the start of the "
             f"runs: {min(loads)} .. {max(loads)} (other work shared the machine).", "",
             "| engine | rows | prepare s | search s | metrics s | release s | total s | search ms per node "
             "| nodes evaluated | minimal | peak memory MB |",
             "| - | - | - | - | - | - | - | - | - | - | - |"]
    for r in rows:
        m = f"{r['metrics_s']:.1f}" if r.get("metrics_s") is not None else "-"
        rel = f"{r['release_s']:.1f}" if r.get("release_s") is not None else "-"
        lines.append(f"| {r['engine']} | {r['rows']:,} | {r['prepare_s']:.1f} | {r['search_s']:.1f} | {m} | {rel} | "
                     f"{r['total_s']:.1f} | {1000 * r['search_s'] / r['evaluated']:.1f} | {r['evaluated']} / "
                     f"{r['nodes']} | {r['minimal']} | {r['tree_peak_rss_mb']:,.0f} |")
    lines.append("")
    for r in rows:
        base = next((b for b in rows if b["engine"].startswith("spark, baseline") and b["rows"] == r["rows"]), None)
        if r["engine"] == "spark" and base is not None:
            lines.append(f"- Spark at {r['rows']:,} rows: {r['total_s']:.1f} s, the baseline ({base['engine'][7:]}) "
                         f"{base['total_s']:.1f} s in the same run: {base['total_s'] / r['total_s']:.1f} x faster "
                         f"(search {base['search_s'] / r['search_s']:.1f} x, "
                         + (f"metrics {(base['metrics_s'] or 0) / max(r['metrics_s'] or 1e-9, 1e-9):.1f} x, "
                            if r.get("metrics_s") is not None else "")
                         + f"prepare "
                         f"{base['prepare_s'] / r['prepare_s']:.1f} x); statements on Spark "
                         f"{base['statements']} -> {r['statements']}.")
    for engine in ("duckdb", "spark"):
        series = sorted((r for r in rows if r["engine"] == engine), key=lambda r: r["rows"])
        if len(series) < 2:
            continue
        a, b = series[0], series[-1]
        grow = b["rows"] / a["rows"]
        per_node = (b["search_s"] / b["evaluated"]) / (a["search_s"] / a["evaluated"])
        lines.append(f"- {engine}: from {a['rows']:,} to {b['rows']:,} rows ({grow:.1f} x): total time "
                     f"{b['total_s'] / a['total_s']:.1f} x, search {b['search_s'] / a['search_s']:.1f} x, search time per "
                     f"evaluated node {per_node:.1f} x, nodes evaluated {a['evaluated']} -> {b['evaluated']}.")
    lines.append("- Spark pays a fixed cost per statement (a job: planning, code generation, task scheduling; 0.2 to "
                 "1 s each in local mode) and, before, scanned the whole cached frequency set once per lattice node "
                 "(about 100 statements, 30 to 40 of them batches of up to 48 nodes, and one KL-divergence query and "
                 "one node query per minimal node). Now Spark builds the bottom frequency set from the source (one "
                 "job) and hands it to the driver once (Arrow) when it has at most 20 million cells; the search and "
                 "the metrics run on an in-process DuckDB copy (`Backend.local_counts`), so 'statements' counts only "
                 "what runs on Spark. DuckDB's per-node search time grows about with the rows (the frequency set has "
                 "about one row per source row here, and each node's query returns one row per class).")
    full = [r for r in rows if r["engine"] == "duckdb" and r["rows"] == FULL]
    if full:
        r = full[0]
        lines.append(f"- DuckDB at full size ({FULL:,} rows): {r['total_s']:.1f} s for every minimal node with its "
                     f"metrics (goal: under 60 s), peak memory {r['tree_peak_rss_mb']:,.0f} MB (goal: under 3 GB).")
    return lines


def spark_version() -> str:
    try:
        import pyspark
        return pyspark.__version__
    except ImportError:
        return "not installed"


def java_version() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        first = (done.stderr or done.stdout).splitlines()[0]
        return first.split('"')[1] if '"' in first else first
    except (OSError, IndexError, subprocess.SubprocessError):
        return "?"


if __name__ == "__main__":
    main()
