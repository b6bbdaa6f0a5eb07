"""Benchmark: the least any exact search could spend on Lands End, its minimal nodes judged alone (issue 13).

No search can return a minimal node without judging it on the data: nothing below it satisfies (so no
generalization infers it) and no node above it decides it (a generalization of it satisfying says nothing
of it). So a search that judged the minimal nodes and nothing else, each with the same query the search
uses, would spend at least the sum of those queries' times. This script measures that sum beside the
search that found them, in one process per size:

1. the preparation and the search of the product (`Anonymization`, Incognito), timed;
2. each minimal node judged alone by the verdict query (`FrequencySet.node_verdicts`, the statement the
   search runs for a node that passes its class sizes), over the attributes not at a level of one label
   (the blocks the search itself groups), timed: on the values (exactly), and as the search judges it, on
   groups of the values first (`NodeChecker.value_groups`; the same row, checked);
3. with --fastest-forms, each minimal node's verdict again in the fastest forms of its aggregation found on
   DuckDB, the faster of two per node: the class and the value packed into one key, or grouped as two; counts
   as BIGINT; perfect hashing up to 2^30 slots (`perfect_ht_threshold`, which costs gigabytes). Not the
   product's query: how far the aggregation itself could go on this engine;
4. with --floor, the scan and write floors of `bench_rows.py` (one GROUP BY of the file, the file copied
   into a table), in a separate process.

Same data and settings as `bench_rows.py` (synthetic Lands End, landsend_entropy6.yaml: k = 6 and entropy
6-diversity; --memory-limit, --temp-directory, --threads).

    python benchmarks/bench_minimal_floor.py --rows 100000000 --floor --fastest-forms --out results.md
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_rows import add_source_arguments, dataset, measure_floor, run_worker, source_settings  # noqa: E402
from bench_search import machine, write_results  # noqa: E402

FASTEST_FORMS = {
    # the class and the value as one key, then the class by integer division
    "one key": 'SELECT "ks" // {m} AS "k", "c" FROM (SELECT {key} * {m} + "{s}" AS "ks", '
               'CAST(SUM("cnt") AS BIGINT) AS "c" FROM "{wide}" GROUP BY "ks")',
    "two keys": 'SELECT {key} AS "k", "{s}", CAST(SUM("cnt") AS BIGINT) AS "c" FROM "{wide}" GROUP BY 1, 2',
}


def fastest_forms(run, node: dict, thresholds) -> float:
    """The least time of `FASTEST_FORMS` for one node's verdict; each form must give the product's classes and
    suppressed rows."""
    levels = node["levels"]
    fs = run.fs
    con = fs.counts.con
    k, _distinct, entropy = thresholds
    key = "CAST(0 AS BIGINT)"
    for a, lvl in levels.items():
        key = f'({key} * {fs.radix(a, lvl)} + "{fs.qi(a).col(lvl)}")'
    sens = fs.sensitives[0]
    best = float("inf")
    for form in FASTEST_FORMS.values():
        inner = form.format(m=sens.domain.size, key=key, s=sens.col, wide=fs.wide_table)
        ok = f'"n" >= {k} AND LN("n") - "xl" / "n" >= {entropy!r}'
        sql = (f'SELECT COUNT(*), SUM(CASE WHEN {ok} THEN 0 ELSE "n" END) '
               f'FROM (SELECT SUM("c") AS "n", SUM("c" * LN("c")) AS "xl" FROM ({inner}) GROUP BY "k")')
        t = time.perf_counter()
        classes, suppressed = con.execute(sql).fetchone()
        best = min(best, time.perf_counter() - t)
        if (classes, suppressed) != (node["classes"], node["suppressed"]):
            raise SystemExit(f"a fastest form disagrees with the verdict query on {levels}")
    return best


def worker(policy_path: str, db: str, settings: dict) -> None:
    """Prepare, search, then each minimal node's verdict query alone; one JSON line at the end."""
    import yaml

    from sqlanon.anonymizer import Anonymization
    from sqlanon.engines.duckdb import connect
    from sqlanon.policy import load_policy
    settings = dict(settings)
    fastest = settings.pop("fastest_forms", False)
    raw = yaml.safe_load(Path(policy_path).read_text())
    raw["source"].update(settings)
    policy = load_policy(raw, base_dir=Path(policy_path).parent)
    t = time.perf_counter()
    run = Anonymization(policy, connection=connect(db))
    out: dict = {"rows": run.fs.rows, "prepare_s": time.perf_counter() - t}
    t = time.perf_counter()
    result = run.search()
    out.update(search_s=time.perf_counter() - t, evaluated=result.evaluated, minimal=len(result.minimal))
    checker, fs = run.checker, run.fs
    if not checker.verdicts_in_database:
        raise SystemExit("the policy's nodes are not judged by the verdict query here")
    thresholds = checker.verdict_thresholds()
    nodes = []
    for node in result.minimal:
        levels = {name: level for name, level in run.lattice.levels(node).items()
                  if fs.qi(name).hierarchy.domain_sizes()[level] > 1}
        t = time.perf_counter()
        row = fs.node_verdicts([levels], checker.needed[0], *thresholds)[0]
        seconds = time.perf_counter() - t
        t = time.perf_counter()
        grouped = fs.node_verdicts([levels], checker.needed[0], *thresholds, value_groups=checker.value_groups)[0]
        grouped_s = time.perf_counter() - t
        if any(grouped[f] != row[f] for f in ("classes", "suppressed", "kept_classes", "sum_sq")):
            raise SystemExit(f"the grouped verdict of {levels} differs from the exact one")
        nodes.append({"levels": levels, "classes": int(row["classes"]), "suppressed": int(row["suppressed"]),
                      "seconds": seconds, "grouped_s": grouped_s, "undecided": grouped["undecided"]})
    out["nodes"] = nodes
    out["minimal_sum_s"] = sum(n["seconds"] for n in nodes)
    out["grouped_sum_s"] = sum(n["grouped_s"] for n in nodes)
    out["value_groups"] = checker.value_groups
    if fastest:
        fs.counts.con.execute("SET perfect_ht_threshold = 30")
        for n in nodes:
            n["fastest_s"] = fastest_forms(run, n, thresholds)
        out["fastest_sum_s"] = sum(n["fastest_s"] for n in nodes)
        out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    run.close()
    print(json.dumps(out), flush=True)


def measure(policy: Path, db: Path, settings: dict) -> dict:
    return run_worker([__file__, "--worker", str(policy), str(db), json.dumps(settings)], db)


def render(results: list[dict], args) -> list[str]:
    lines = ["# Minimal nodes judged alone (Lands End, k = 6 and entropy 6-diversity)", "",
             f"Machine: {machine()}. Settings: --memory-limit {args.memory_limit} --temp-directory "
             f"{args.temp_directory} --threads {args.threads}. One run per size.", "",
             "| rows | prepare s | search s (evaluated) | minimal nodes | their verdict queries alone, sum s "
             "| the same on groups of values first, sum s (groups) "
             "| the same in the fastest forms, sum s (peak MB) | scan floor s | write floor s |",
             "| - | - | - | - | - | - | - | - | - |"]
    for r in results:
        fl = r.get("floor", {})
        fastest = f"{r['fastest_sum_s']:.1f} ({r['peak_mb']:,})" if "fastest_sum_s" in r else "-"
        lines.append(f"| {r['rows']:,} | {r['prepare_s']:.1f} | {r['search_s']:.1f} ({r['evaluated']}) "
                     f"| {r['minimal']} | {r['minimal_sum_s']:.1f} "
                     f"| {r['grouped_sum_s']:.1f} ({r['value_groups']}) | {fastest} "
                     f"| {fl.get('group_by_s', float('nan')):.1f} | {fl.get('write_s', float('nan')):.1f} |")
    for r in results:
        lines += ["", f"Each minimal node at {r['rows']:,} rows (levels of the attributes not at a level of one "
                      "label; classes; seconds of its verdict query, on groups of values first (blocks left "
                      "undecided), and in the fastest forms):", "",
                  "| node | classes | s | groups first s (undecided) | fastest forms s |", "| - | - | - | - | - |"]
        for n in sorted(r["nodes"], key=lambda n: -n["seconds"]):
            node = ", ".join(f"{a}={lv}" for a, lv in n["levels"].items())
            fastest = f"{n['fastest_s']:.2f}" if "fastest_s" in n else "-"
            grouped = f"{n['grouped_s']:.2f} ({n['undecided']:.0f})"
            lines.append(f"| {node} | {n['classes']:,} | {n['seconds']:.2f} | {grouped} | {fastest} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="10000000")
    add_source_arguments(ap)
    ap.add_argument("--floor", action="store_true", help="also the scan and write floors of bench_rows.py")
    ap.add_argument("--fastest-forms", action="store_true",
                    help="also each minimal node's aggregation in the fastest forms found (needs gigabytes more)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], json.loads(args.worker[2]))
        return
    settings = source_settings(args)
    results = []
    for rows in [int(r) for r in args.rows.split(",")]:
        folder = dataset(Path(args.data), rows)
        db = folder / "minimal_floor.duckdb"
        result = measure(folder / "landsend_entropy6.yaml", db, {**settings, "fastest_forms": args.fastest_forms})
        if args.floor:
            result["floor"] = measure_floor(folder / "landsend.parquet", db, settings)
        results.append(result)
        print(json.dumps(result), file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    write_results(render(results, args), args.out)


if __name__ == "__main__":
    main()
