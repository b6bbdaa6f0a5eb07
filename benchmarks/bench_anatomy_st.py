"""Benchmark: Anatomy's sensitive table (`anatomy_st.sql`) with and without `written_apart`.

A DOUBLE sensitive column may write one value two ways (0.0 and -0.0); with `written_apart` the table writes
every value by its least text in the whole table, which casts every row to text (docs/DESIGN.md, section 1).
Other columns keep the plain GROUP BY. Both forms run on the same assigned rows, alternating, in one process;
both must hold the same (bucket, value, count) cells by value, or the script stops.

    python benchmarks/bench_anatomy_st.py --rows 4500000 --bucket-size 5 --repeat 5

The rows: `--rows` rows in buckets of `--bucket-size` (900,000 buckets by default, Anatomy's N / l), scores
drawn from 40 values, one row in 7 holding -0.0. DuckDB, 2 threads. Medians of --repeat runs; the ratio of
the medians is printed.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from sqlanon import templates

from bench_search import machine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_500_000)
    ap.add_argument("--bucket-size", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import duckdb
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute(f"CREATE TABLE assigned AS SELECT i // {int(args.bucket_size)} AS bucket, CASE WHEN i % 7 = 0 THEN "
                f"CAST('-0.0' AS DOUBLE) ELSE ((i * 7919) % 40)::DOUBLE END AS score FROM range({int(args.rows)}) r(i)")
    times: dict[bool, list[float]] = {False: [], True: []}
    cells = {}
    for _ in range(args.repeat):
        for written_apart in (False, True):
            sql = templates.render_for("anatomy_st.sql", name=f"st_{int(written_apart)}", assigned="assigned",
                                       sensitive="score", temp=True, written_apart=written_apart)
            t = time.perf_counter()
            con.execute(sql)
            times[written_apart].append(time.perf_counter() - t)
            cells[written_apart] = con.execute(f"SELECT bucket, score + 0.0, count FROM st_{int(written_apart)} "
                                               "ORDER BY 1, 2").fetchall()
    if cells[False] != cells[True]:
        sys.exit("the two forms hold different cells")
    plain, apart = statistics.median(times[False]), statistics.median(times[True])
    print(f"Machine: {machine()}")
    print(f"{args.rows:,} rows, {len(set(b for b, _, _ in cells[True])):,} buckets, {len(cells[True]):,} cells; "
          f"median of {args.repeat}")
    print("| form | median s | runs s |\n| - | - | - |")
    print(f"| plain GROUP BY | {plain:.2f} | {' / '.join(f'{t:.2f}' for t in times[False])} |")
    print(f"| written_apart | {apart:.2f} | {' / '.join(f'{t:.2f}' for t in times[True])} |")
    print(f"written_apart / plain: {apart / plain:.1f}x")


if __name__ == "__main__":
    main()
