"""Benchmark: Privacy-MaxEnt on the paper's Adult setting (2,842 buckets of five records, 14,210 records).

1. 200 knowledge constraints (the top 100 positive and 100 negative association rules, and 200 of each
   kind alone) solved with Theorem 5 (only the buckets the knowledge touches optimized) against the
   baseline of optimizing every bucket (the paper's timing runs, Section 7.2); time = building the
   constraints and solving (the rules are mined once beforehand; mining and loading reported apart).
   Target: under 10 s.
2. Scaling in the number of buckets, 200 constraints (100 + 100 rules mined from each release): seeded
   samples of the adult.data bucketization, the bucketization of all 45,222 rows, and of two copies of
   them; the log-log slope of time against buckets (1 = linear). Target: no faster than linear.
3. A generalized release (the core engine's 6-anonymous Adult, each q*-block a bucket): few, large buckets.

    python benchmarks/bench_maxent.py --repeat 5 --out benchmarks/RESULTS-maxent.md
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from sqlanon.engine import wrap_connection  # noqa: E402
from sqlanon.experiments import maxent as exp  # noqa: E402
from sqlanon.experiments.common import adult_parquet  # noqa: E402
from sqlanon.maxent import Knowledge, Rules  # noqa: E402

from bench_search import machine, write_results  # noqa: E402

TARGET_S = 10.0
SCALE_BUCKETS = (500, 1000, 2000, 2842)


def timed(me, know, repeat, relevant="knowledge") -> dict:
    times, r = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        r = me.solve(know, relevant=relevant)
        times.append(time.perf_counter() - t - r.seconds.get("rules", 0.0))
    s = r.solution
    return {"median_s": statistics.median(times), "max_s": max(times), "iterations": s.iterations,
            "relevant_buckets": s.relevant_buckets, "dual_variables": s.dual_variables, "converged": s.converged,
            "violation": s.max_violation, "lp": s.linear_program, "constraints": len(r.items)}


def setting(repeat: int) -> tuple[dict, list[dict]]:
    con = duckdb.connect()
    backend = wrap_connection(con)
    source = exp.adult_source(con, None)
    t = time.perf_counter()
    rel, me = exp.adult_release(backend, source, exp.PAPER["buckets"])
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    me.mine(Rules(200, 200, 3))
    mine_s = time.perf_counter() - t
    info = {"records": rel.rows, "buckets": rel.buckets, "cells": len(me.problem.cell_b),
            "bucketize_and_load_s": load_s, "mine_s": mine_s}
    rows = []
    for label, pos, neg in (("100 positive + 100 negative", 100, 100), ("200 positive", 200, 0),
                            ("200 negative", 0, 200)):
        know = Knowledge([Rules(pos, neg, 3)])
        rows.append({"knowledge": label, "theorem5": timed(me, know, repeat), "all": timed(me, know, repeat, "all")})
    con.close()
    return info, rows


def scaling(repeat: int) -> list[dict]:
    con = duckdb.connect()
    backend = wrap_connection(con)
    source = exp.adult_source(con, None)
    rel = con.read_parquet(str(adult_parquet()))
    rel.create("adult_all")
    con.execute("CREATE TABLE adult_twice AS SELECT * FROM adult_all UNION ALL SELECT * FROM adult_all")
    points = [(source, n) for n in SCALE_BUCKETS] + [("adult_all", None), ("adult_twice", None)]
    out = []
    for src, n in points:
        rel, me = exp.adult_release(backend, src, n, name="bench")
        me.mine(Rules(100, 100, 3))
        know = Knowledge([Rules(100, 100, 3)])
        out.append({"source": src, "buckets": rel.buckets, "records": rel.rows, "cells": len(me.problem.cell_b),
                    "theorem5": timed(me, know, repeat), "all": timed(me, know, repeat, "all")})
        print(f"{src} {rel.buckets} buckets: {out[-1]['theorem5']['median_s']:.3f} s, all buckets "
              f"{out[-1]['all']['median_s']:.3f} s", file=sys.stderr)
    con.close()
    return out


def generalized(repeat: int) -> dict:
    """The core engine's 6-anonymous release of all of Adult (occupation sensitive), each q*-block a bucket."""
    from sqlanon.maxent import MaxEnt, open_release

    from conftest import adult_policy
    with open_release(adult_policy(8, {"k": 6}), db=":memory:") as (backend, release):
        me = MaxEnt(backend, release)
        me.mine(Rules(100, 100, 3))
        know = Knowledge([Rules(100, 100, 3)])
        return {"levels": release.levels, "buckets": me.problem.buckets, "records": me.problem.N,
                "cells": len(me.problem.cell_b), "theorem5": timed(me, know, repeat),
                "all": timed(me, know, repeat, "all")}


def slope(xs, ys) -> float:
    return float(np.polyfit([math.log(x) for x in xs], [math.log(y) for y in ys], 1)[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    ap.add_argument("--out", default=None, help="Markdown file to write")
    args = ap.parse_args()
    info, rows = setting(args.repeat)
    scale = scaling(args.repeat)
    gen = generalized(args.repeat)
    cmd = "python benchmarks/bench_maxent.py --repeat " + str(args.repeat) + (f" --out {args.out}" if args.out else "")
    lines = [f"Machine: {machine()}", "", f"Command: `{cmd}`", "",
             "# Privacy-MaxEnt on the paper's Adult setting", "",
             f"{info['records']:,} records in {info['buckets']:,} buckets of five (adult.data's complete records, "
             f"education sensitive with HS-grad not counted, eight quasi-identifiers; a seeded sample of the "
             f"2,866 buckets the data allows, as in `sqlanon experiments maxent`); {info['cells']:,} cells "
             f"P(q, s, b). Bucketizing and loading the invariants: {info['bucketize_and_load_s']:.2f} s; mining the "
             f"top 200 positive and 200 negative rules (support >= 3) in SQL: {info['mine_s']:.2f} s.", "",
             f"Time = building the constraints and solving (median of {args.repeat} runs in one process; the rules "
             "mined once beforehand). Baseline in the same run: every bucket optimized (no Theorem 5), as the paper's "
             "timing runs. Tolerance 1e-6 records; every run converged unless marked.", "",
             "| knowledge | constraints | Theorem 5: s (max) | buckets optimized | iterations | all buckets: s | "
             "iterations | all / Theorem 5 | target < 10 s |", "| - | - | - | - | - | - | - | - | - |"]
    for r in rows:
        a, b = r["theorem5"], r["all"]
        ok = "yes" if a["median_s"] < TARGET_S and a["converged"] else "NO"
        lines.append(f"| {r['knowledge']} | {a['constraints']} | {a['median_s']:.3f} ({a['max_s']:.3f}) | "
                     f"{a['relevant_buckets']:,} | {a['iterations']} | {b['median_s']:.3f} | {b['iterations']} | "
                     f"{b['median_s'] / max(a['median_s'], 1e-9):.1f} | {ok}"
                     + ("" if a["converged"] and b["converged"] else " (not converged)") + " |")
    lines += ["", "## Scaling in the number of buckets (200 constraints: 100 + 100 rules mined from each release)", "",
              "| source | buckets | records | cells | Theorem 5: s | iterations | all buckets: s | iterations |",
              "| - | - | - | - | - | - | - | - |"]
    for r in scale:
        lines.append(f"| {r['source']} | {r['buckets']:,} | {r['records']:,} | {r['cells']:,} | "
                     f"{r['theorem5']['median_s']:.3f} | {r['theorem5']['iterations']} | {r['all']['median_s']:.3f} | "
                     f"{r['all']['iterations']} |")
    xs = [r["buckets"] for r in scale]
    s5 = slope(xs, [r["theorem5"]["median_s"] for r in scale])
    sa = slope(xs, [r["all"]["median_s"] for r in scale])
    lines += ["", f"Log-log slope of time against buckets: {s5:.2f} with Theorem 5, {sa:.2f} with every bucket "
              "optimized (1 = linear; target: no faster than linear, i.e. at most about 1). With Theorem 5 the time "
              "follows the buckets the knowledge touches and how hard their constraints are, not the release's size; "
              "each release here has its own top rules, so the points are not one curve of a fixed problem."]
    a, b = gen["theorem5"], gen["all"]
    lines += ["", "## A generalized release: q*-blocks as buckets", "",
              f"All 45,222 Adult rows, occupation sensitive, the 6-anonymous node the core engine chooses "
              f"({', '.join(f'{k}={v}' for k, v in gen['levels'].items())}): {gen['buckets']:,} buckets of up to "
              f"thousands of records, {gen['cells']:,} cells; 100 + 100 rules mined from the source.", "",
              "| constraints | Theorem 5: s | buckets optimized | iterations | all buckets: s | iterations |",
              "| - | - | - | - | - | - |",
              f"| {a['constraints']} | {a['median_s']:.3f} | {a['relevant_buckets']:,} | {a['iterations']} | "
              f"{b['median_s']:.3f} | {b['iterations']} |"]
    write_results(lines, args.out)


if __name__ == "__main__":
    main()
