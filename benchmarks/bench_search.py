"""Benchmark: all minimal 6-anonymous nodes on Adult, quasi-identifier = the first j attributes.

For j = 3 ... 8 (docs/DESIGN.md section 6 order; sensitive = occupation) it times, in fresh processes,
Incognito and the brute-force mode (every node evaluated) in the same run, and records nodes
evaluated, minimal nodes and peak memory. Medians of --repeat runs. Writes a Markdown table.

    python benchmarks/bench_search.py --repeat 5 --out benchmarks/RESULTS-search.md
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "tests"))


def worker(j: int, mode: str, privacy: dict) -> dict:
    from sqlanon.anonymizer import Anonymization

    from conftest import adult_policy
    t0 = time.perf_counter()
    run = Anonymization(adult_policy(j, privacy), db=":memory:")
    t1 = time.perf_counter()
    result = run.search(mode)
    t2 = time.perf_counter()
    return {"j": j, "mode": mode, "prepare_s": t1 - t0, "search_s": t2 - t1, "evaluated": result.evaluated,
            "nodes": run.lattice.size, "minimal": len(result.minimal),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def machine() -> str:
    import duckdb
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), Python "
            f"{platform.python_version()}, DuckDB {duckdb.__version__}")


def write_results(lines: list[str], out: str | None) -> None:
    """Print the Markdown results and write them to `out` when given."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        Path(out).write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--min-j", type=int, default=3)
    ap.add_argument("--max-j", type=int, default=8)
    ap.add_argument("--privacy", default='{"k": 6}', help="privacy block as JSON")
    ap.add_argument("--no-brute-force", action="store_true")
    ap.add_argument("--out", default=None, help="Markdown file to write")
    ap.add_argument("--worker", nargs=2, metavar=("J", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    privacy = json.loads(args.privacy)
    if args.worker:
        print(json.dumps(worker(int(args.worker[0]), args.worker[1], privacy)))
        return
    rows = []
    modes = ["incognito"] + ([] if args.no_brute_force else ["brute_force"])
    for j in range(args.min_j, args.max_j + 1):
        runs = {m: [] for m in modes}
        for _ in range(args.repeat):
            for m in modes:   # alternate, so drift of the machine hits both alike
                out = subprocess.run([sys.executable, __file__, "--privacy", args.privacy, "--worker", str(j), m],
                                     check=True, capture_output=True, text=True).stdout
                runs[m].append(json.loads(out))
        row = {"j": j}
        for m in modes:
            rs = runs[m]
            row[m] = {"search_s": statistics.median(r["search_s"] for r in rs),
                      "prepare_s": statistics.median(r["prepare_s"] for r in rs),
                      "evaluated": rs[0]["evaluated"], "nodes": rs[0]["nodes"], "minimal": rs[0]["minimal"],
                      "peak_rss_mb": max(r["peak_rss_mb"] for r in rs)}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    lines = [f"Machine: {machine()}", "",
             f"Command: `python benchmarks/bench_search.py --repeat {args.repeat} --privacy '{args.privacy}'`"
             + (" --no-brute-force" if args.no_brute_force else ""), "",
             f"Adult (45,222 rows), sensitive = occupation, privacy = {args.privacy}; medians of {args.repeat} "
             "runs, each in a fresh process; search = the lattice search alone (frequency set already built); "
             "prepare = opening the source, mapping tables, frequency sets.", "",
             "| j | nodes | minimal | Incognito evaluated | Incognito search s | prepare s | peak RSS MB |"
             + (" brute-force evaluated | brute-force search s | brute / Incognito |" if "brute_force" in modes else ""),
             "| - | - | - | - | - | - | - |" + (" - | - | - |" if "brute_force" in modes else "")]
    for r in rows:
        inc = r["incognito"]
        line = (f"| {r['j']} | {inc['nodes']:,} | {inc['minimal']} | {inc['evaluated']:,} | {inc['search_s']:.3f} | "
                f"{inc['prepare_s']:.3f} | {inc['peak_rss_mb']:.0f} |")
        if "brute_force" in modes:
            bf = r["brute_force"]
            line += f" {bf['evaluated']:,} | {bf['search_s']:.3f} | {bf['search_s'] / inc['search_s']:.1f} |"
        lines.append(line)
    write_results(lines, args.out)


if __name__ == "__main__":
    main()
