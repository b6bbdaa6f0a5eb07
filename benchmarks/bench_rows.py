"""Benchmark: how the cost grows with rows, up to 100 million on one machine (issue 13, item 2).

Synthetic Lands End (datasets/landsend/generate.py, seed 0, written as Parquet by DuckDB; the generator is
SQL run inside DuckDB, so 100 M rows take a few minutes) at --rows sizes, the generator's
landsend_entropy6.yaml: 7 quasi-identifiers, cost sensitive, k = 6 and entropy 6-diversity, no suppression.
The job is the whole run: every minimal node (Incognito), the chosen node, the release as a table in a new
DuckDB file. The policy's source gets `memory_limit`, `temp_directory` and `threads` (--memory-limit,
--temp-directory, --threads) so what does not fit spills.

Each run is a fresh process; the peak memory is the resident memory of the process tree sampled from /proc
every 50 ms, the spilled bytes the largest total of DuckDB's temporary files seen by the worker. A run past
--timeout is stopped and reported with the phases it finished.

    python benchmarks/bench_rows.py --rows 1000000,10000000,100000000 --repeat 1 --out benchmarks/RESULTS-rows.md
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
CODE_ENV = "SQLANON_BENCH_CODE"   # the checkout a worker measures (`measure`): its sqlanon comes first in the worker
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_scale import _commit, watch_peak_rss  # noqa: E402
from bench_search import machine, write_results  # noqa: E402


def dataset(data: Path, rows: int) -> Path:
    """The folder of a generated Lands End table of `rows` rows, with the generator's policies (generated
    when missing)."""
    folder = data / f"landsend_{rows}"
    if not (folder / "landsend_entropy6.yaml").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(ROOT / "datasets" / "landsend" / "generate.py"),
                        str(folder / "landsend.parquet"), "--rows", str(rows)], check=True, stdout=subprocess.DEVNULL)
    return folder


def add_source_arguments(ap: argparse.ArgumentParser) -> None:
    """--data (where the generated tables are) and the settings each run's source gets: --memory-limit,
    --temp-directory, --threads (`source_settings`)."""
    ap.add_argument("--data", default="/tmp/sqlanon-landsend")
    ap.add_argument("--memory-limit", default="6GB")
    ap.add_argument("--temp-directory", default="/tmp/sqlanon-spill")
    ap.add_argument("--threads", type=int, default=2)


def source_settings(args: argparse.Namespace) -> dict:
    """The policy source's `memory_limit`, `temp_directory` and `threads` from `add_source_arguments`."""
    return {"memory_limit": args.memory_limit, "temp_directory": args.temp_directory, "threads": args.threads}


def worker(policy_path: str, db: str, settings: dict) -> None:
    """One run; prints a JSON line after each phase (so a run stopped by the timeout still reports)."""
    # the checkout to measure (`measure`), ahead of the one this script and its imports put first on the path
    sys.path.insert(0, os.environ.get(CODE_ENV, str(ROOT)))
    import yaml

    import sqlanon
    from sqlanon.anonymizer import Anonymization
    from sqlanon.policy import load_policy
    settings = dict(settings)
    last = settings.pop("stop_after", None) or "release"     # --stop-after: the last phase to run
    raw = yaml.safe_load(Path(policy_path).read_text())
    raw["source"].update(settings)
    policy = load_policy(raw, base_dir=Path(policy_path).parent)
    out: dict = {}
    spilled = [0]

    def report(phase: str, t: float) -> None:
        out[phase] = t
        # the worker's own peak resident memory so far (Linux: KiB), after each phase: where the peak is
        out.setdefault("peak_mb_after", {})[phase] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        print(json.dumps({**out, "spilled_mb": spilled[0] / 1e6}), flush=True)

    from sqlanon.engines.duckdb import connect
    t0 = time.perf_counter()
    backend = connect(db)       # opened first so the watcher below sees the preparation spill too
    con = backend.con

    stop = threading.Event()

    def watch():          # the largest total of DuckDB's temporary files, from a second cursor
        cur = con.cursor()
        while not stop.wait(0.5):
            try:
                size = cur.execute("SELECT COALESCE(SUM(size), 0) FROM duckdb_temporary_files()").fetchone()[0]
                spilled[0] = max(spilled[0], int(size))
            except Exception:
                break
        cur.close()

    # stopped and joined before the connection closes: a thread still inside DuckDB at exit aborts the
    # process ("FATAL: exception not rethrown", the first complete 100 M-row run)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    run = Anonymization(policy, connection=backend)
    out["package"] = str(Path(sqlanon.__file__).resolve().parents[1])      # the checkout whose code ran
    out["rows"] = run.fs.rows
    report("prepare_s", time.perf_counter() - t0)
    if last != "prepare":
        t = time.perf_counter()
        result = run.search()
        out.update(evaluated=result.evaluated, nodes=run.lattice.size, minimal=len(result.minimal),
                   witnessed=getattr(run.checker, "witnessed", None),   # None: older code
                   presumed=getattr(run.checker, "presumed", None), per_level=result.per_level)
        report("search_s", time.perf_counter() - t)
    if last not in ("prepare", "search"):
        t = time.perf_counter()
        run.choose()
        out["chosen"] = run.chosen.levels
        report("choose_s", time.perf_counter() - t)
    if last == "release":
        t = time.perf_counter()
        run.materialize()
        out["released"] = run.outputs[0].rows
        report("release_s", time.perf_counter() - t)
    stop.set()
    watcher.join()
    run.close()
    report("total_s", time.perf_counter() - t0)


def floor(parquet: str, db: str, settings: dict) -> None:
    """What no anonymization of this file can do without, under the same settings, in one process: one
    GROUP BY of the 8 columns read (the scan floor of the preparation) and the file copied into a table of a
    new DuckDB file (the write floor of the release). Prints one JSON line."""
    import duckdb
    con = duckdb.connect(db, config={key: settings[key] for key in ("memory_limit", "temp_directory", "threads")})
    out = {}
    t = time.perf_counter()
    cols = "zipcode, order_date, gender, style, price, quantity, shipment, cost"
    out["groups"] = con.execute(f"SELECT COUNT(*) FROM (SELECT {cols}, COUNT(*) FROM read_parquet(?) GROUP BY ALL)",
                                [parquet]).fetchone()[0]
    out["group_by_s"] = time.perf_counter() - t
    t = time.perf_counter()
    con.execute("CREATE TABLE copied AS SELECT * FROM read_parquet(?)", [parquet])
    out["write_s"] = time.perf_counter() - t
    con.close()
    print(json.dumps(out), flush=True)


def run_worker(argv: list[str], db: Path | None = None, code: str | None = None) -> dict:
    """`python argv...` in a fresh process, with the DuckDB file `db` (and its WAL) removed before and after:
    the JSON of its last output line. A failing worker stops the benchmark with its last error line. With `code`
    (a checkout) the worker imports that checkout's sqlanon (`CODE_ENV`), and a worker that reports (`package`)
    having imported another stops the benchmark."""
    files = (db, db.with_name(db.name + ".wal")) if db is not None else ()
    for f in files:
        f.unlink(missing_ok=True)
    env = dict(os.environ, **{CODE_ENV: str(Path(code).resolve())}) if code else None
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, env=env)
    for f in files:
        f.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if code and result["package"] != str(Path(code).resolve()):
        raise SystemExit(f"the run imported sqlanon from {result['package']}, not from {Path(code).resolve()}")
    return result


def baseline_label(checkout: str) -> str:
    """Make a baseline checkout importable as a package (its sql_templates/ copied into its sqlanon/, where an
    installed package has them) and name it by its commit."""
    own = Path(checkout) / "sqlanon" / "sql_templates"
    if not own.exists():
        shutil.copytree(Path(checkout) / "sql_templates", own)
    return f"baseline {_commit(checkout)}"


def measure_floor(parquet: Path, db: Path, settings: dict) -> dict:
    return run_worker([__file__, "--floor-worker", str(parquet), str(db), json.dumps(settings)], db)


def measure(policy: Path, db: Path, settings: dict, timeout: float, code: str | None = None) -> dict:
    """One run in a fresh process, with the sqlanon package (and SQL templates) of the checkout `code`
    (default the one this script is in: not whichever sqlanon is installed, which for a script run from a
    worktree is another checkout's). A run that imported another checkout's package stops the benchmark."""
    for f in (db, db.with_name(db.name + ".wal")):
        f.unlink(missing_ok=True)
    code = str(Path(code or ROOT).resolve())
    env = dict(os.environ, **{CODE_ENV: code})      # the worker puts it first on its path (`worker`)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--worker", str(policy), str(db), json.dumps(settings)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    sampler, peak = watch_peak_rss(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        timed_out = True
    sampler.join()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 and not timed_out:
        result["error"] = err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"
    result.update(wall_s=time.perf_counter() - t0, tree_peak_rss_mb=peak[0], timed_out=timed_out,
                  load=os.getloadavg()[0])
    for f in (db, db.with_name(db.name + ".wal")):
        f.unlink(missing_ok=True)
    if result.get("package", code) != code:
        raise SystemExit(f"the run imported sqlanon from {result['package']}, not from {code}: compare checkouts "
                         "whose package is importable from their own folder")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="1000000,10000000,100000000")
    ap.add_argument("--repeat", type=int, default=1)
    add_source_arguments(ap)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--baseline", default=None, metavar="CHECKOUT",
                    help="also run every size with the sqlanon of this checkout (e.g. `git worktree add` of an older "
                    "commit), alternating with this one (this code first, then the baseline, then the other order on "
                    "the next repeat): the baseline of the same run. Its sql_templates/ is copied into its sqlanon/ "
                    "package (when missing there) so that it runs its own templates, not an installed copy's")
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--stop-after", choices=("prepare", "search", "choose", "release"), default="release",
                    help="the last phase each run does (its total is then up to there)")
    ap.add_argument("--floor", action="store_true",
                    help="first measure, per size, the floors no run can go under (`floor`): one GROUP BY of the "
                    "file's columns and the file written into a table")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--floor-worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], json.loads(args.worker[2]))
        return
    if args.floor_worker:
        floor(args.floor_worker[0], args.floor_worker[1], json.loads(args.floor_worker[2]))
        return
    settings = source_settings(args)
    run_settings = dict(settings, stop_after=args.stop_after)
    data = Path(args.data)
    variants: list[tuple[str, str | None]] = [("this", None)]
    if args.baseline:
        variants.append((baseline_label(args.baseline), args.baseline))
    rows = []
    for n in [int(s) for s in args.rows.split(",")]:
        folder = dataset(data, n)
        if args.floor:
            load = os.getloadavg()[0]
            r = measure_floor(folder / "landsend.parquet", data / "bench_rows_floor.duckdb", settings)
            r.update(size=n, load_before=load, load=os.getloadavg()[0], version="floor")
            rows.append(r)
            print(json.dumps(r, default=str), file=sys.stderr, flush=True)
        for i in range(args.repeat):
            for label, code in (variants if i % 2 == 0 else variants[::-1]):
                load = os.getloadavg()[0]
                r = measure(folder / "landsend_entropy6.yaml", data / "bench_rows_release.duckdb", run_settings,
                            args.timeout, code)
                r.update(size=n, load_before=load, version=label)
                rows.append(r)
                print(json.dumps(r, default=str), file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str) + "\n")
    write_results(render(rows, args), args.out)


def render(rows: list[dict], args) -> list[str]:
    command = (f"python benchmarks/bench_rows.py --rows {args.rows} --repeat {args.repeat} --memory-limit "
               f"{args.memory_limit} --temp-directory {args.temp_directory} --threads {args.threads} --timeout "
               f"{args.timeout:g}" + (f" --baseline {args.baseline}" if args.baseline else "")
               + (" --floor" if args.floor else "")
               + (f" --stop-after {args.stop_after}" if args.stop_after != "release" else "")
               + (f" --out {args.out}" if args.out else ""))
    lines = [f"Machine: {machine()}", "", f"Command: `{command}`", "",
             "Synthetic Lands End (seed 0), landsend_entropy6.yaml: 7 quasi-identifiers, cost sensitive, k = 6 and "
             "entropy 6-diversity, no suppression; every minimal node, the chosen node (discernibility) and the "
             "release as a table in a new DuckDB file. Each run a fresh process; peak memory = the process tree's "
             "resident memory sampled every 50 ms; spilled = the largest total of DuckDB's temporary files.", "",
             "| version | rows | prepare s | search s | choose s | release s | total s | nodes evaluated (by witness; "
             "presumed) "
             "| minimal | chosen | peak memory MB | spilled MB | load before/after |",
             "| - | - | - | - | - | - | - | - | - | - | - | - | - |"]

    def f(r, k):
        return f"{r[k]:.1f}" if k in r else "-"

    for r in rows:
        if r.get("version") == "floor":
            lines.append(f"| floor | {r['size']:,} | one GROUP BY of the file's 8 columns: {r['group_by_s']:.1f} "
                         f"({r['groups']:,} groups) | - | - | the file written into a table: {r['write_s']:.1f} | - "
                         f"| - | - | - | - | - | {r['load_before']:.1f} / {r['load']:.1f} |")
            continue
        total = f(r, "total_s") if "total_s" in r else (f"stopped at {r['wall_s']:.0f}" if r["timed_out"]
                                                        else f"failed: {r.get('error', '?')}")
        chosen = ", ".join(f"{k}={v}" for k, v in r["chosen"].items()) if "chosen" in r else "-"
        lines.append(f"| {r.get('version', 'this')} | {r['size']:,} | {f(r, 'prepare_s')} | {f(r, 'search_s')} | "
                     f"{f(r, 'choose_s')} | {f(r, 'release_s')} | {total} | {r.get('evaluated', '-')} / "
                     f"{r.get('nodes', '-')} ({r.get('witnessed', '-')}; {r.get('presumed', '-')}) | "
                     f"{r.get('minimal', '-')} | {chosen} | {r['tree_peak_rss_mb']:,.0f} | "
                     f"{r.get('spilled_mb', 0):,.0f} | {r['load_before']:.1f} / {r['load']:.1f} |")
    return lines


if __name__ == "__main__":
    main()
