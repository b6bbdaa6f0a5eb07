"""Benchmark: `sqlanon risk` of the 4.6-million-row synthetic Lands End source on DuckDB.

The job: every figure of the source's risk report (class-size histogram, prosecutor and marketer risk,
sample uniques, the 10 riskiest classes, population uniqueness by Zayatz, Pitman, SNB and Dankar's rule
at a 1 % sampling fraction), over the 7 quasi-identifiers of the generator's landsend_k6.yaml. The
baseline, measured in the same run and interleaved with it, is the same histogram computed the way
sqlanon avoids: the 7 columns read into pandas (from the same Parquet file) and grouped there. Both
must find the same classes and sample uniques, or the script stops.

    python benchmarks/bench_risk.py --repeat 5 --out benchmarks/RESULTS-risk.md

The table is generated once into --data (datasets/landsend/generate.py, seed 0; shared with
bench_scale.py). Medians of --repeat runs, in one process (the Parquet file is in the page cache after
the first run for both). The machine's load average is recorded before and after, since it is shared,
and the process's CPU time (all threads) beside the wall time: on a loaded machine the wall time
grows with the other processes, the CPU time much less.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from bench_scale import FULL, dataset
from bench_search import machine, write_results


def sqlanon_risk(policy: Path) -> tuple[float, float, dict]:
    from sqlanon.cli.risk import risk_of
    t, c = time.perf_counter(), time.process_time()
    report = risk_of(str(policy), sampling_fraction=0.01)
    return time.perf_counter() - t, time.process_time() - c, report


def pandas_histogram(policy: Path) -> tuple[float, float, dict]:
    import pandas as pd

    from sqlanon.policy import load_policy
    pol = load_policy(policy)
    columns = list(pol.quasi_identifiers)
    t, c = time.perf_counter(), time.process_time()
    frame = pd.read_parquet(pol.source.path, columns=columns)
    sizes = frame.groupby(columns, observed=True, sort=False).size()
    histogram = sizes.value_counts()
    out = {"classes": len(sizes), "sample_uniques": int(histogram.get(1, 0)), "rows": len(frame)}
    return time.perf_counter() - t, time.process_time() - c, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, default=FULL)
    ap.add_argument("--data", default="/tmp/sqlanon-landsend", help="folder for the generated tables")
    ap.add_argument("--out", default=None, help="Markdown file to write")
    args = ap.parse_args()
    policy = dataset(Path(args.data), args.rows)
    load_before = os.getloadavg()
    ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
    report = None
    for _ in range(args.repeat):
        s, s_cpu, report = sqlanon_risk(policy)
        b, b_cpu, reference = pandas_histogram(policy)
        if (reference["classes"], reference["sample_uniques"], reference["rows"]) != \
                (report["classes"], report["sample_uniques"], report["rows"]):
            raise SystemExit(f"sqlanon and pandas disagree: {reference} vs {report['classes']}, "
                             f"{report['sample_uniques']}")
        ours.append(s)
        theirs.append(b)
        ours_cpu.append(s_cpu)
        theirs_cpu.append(b_cpu)
        print(f"sqlanon risk {s:.2f} s (cpu {s_cpu:.2f}), pandas {b:.2f} s (cpu {b_cpu:.2f})", file=sys.stderr)
    load_after = os.getloadavg()
    m_ours, m_theirs = statistics.median(ours), statistics.median(theirs)
    u = report["population_uniques"]
    lines = [
        "# `sqlanon risk` on the 4.6-million-row Lands End source (DuckDB)",
        "",
        (f"Machine: {machine()}; shared with other developers: load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.1f}' for x in load_before)} before and {', '.join(f'{x:.1f}' for x in load_after)} after."),
        "",
        (f"Command: `python benchmarks/bench_risk.py --repeat {args.repeat}"
        f"{'' if args.rows == FULL else f' --rows {args.rows}'} --out benchmarks/RESULTS-risk.md`"),
        "",
        (f"Data: datasets/landsend/generate.py, {report['rows']:,} rows (seed 0), the 7 quasi-identifiers of "
        "landsend_k6.yaml, read from Parquet."),
        "",
        f"| job | median of {args.repeat} runs, wall (s) | runs (s) | median CPU time of the process, all threads (s) |",
        "|---|---:|---|---:|",
        (f"| `sqlanon risk` (every figure, in DuckDB) | {m_ours:.2f} | {', '.join(f'{x:.2f}' for x in ours)} | "
        f"{statistics.median(ours_cpu):.2f} |"),
        (f"| baseline: the class-size histogram alone in pandas | {m_theirs:.2f} | "
        f"{', '.join(f'{x:.2f}' for x in theirs)} | {statistics.median(theirs_cpu):.2f} |"),
        "",
        (f"Ratio baseline / sqlanon: {m_theirs / m_ours:.2f}. Target: under 5 s; "
        f"{'met' if m_ours < 5 else 'NOT met'} here."),
        "",
        (f"What it found: {report['classes']:,} classes, {report['sample_uniques']:,} sample uniques, highest "
        f"prosecutor risk {report['prosecutor']['max']:.2f}, average {report['prosecutor']['average']:.4f}; "
        f"population uniques at f = 1 %: {u['model']} {u['estimate']:,.0f} of {u['population_size']:,}. The "
        "synthetic table is almost all unique on its 7 quasi-identifiers (order date and style are very "
        "fine), so this measures the worst case for the GROUP BY: one group per row."),
    ]
    write_results(lines, args.out)


if __name__ == "__main__":
    main()
