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
4. the lattice's maximal failing nodes (the other half of its border, `border_nodes.py`: nothing above them
   fails, so nothing else proves them failing), each judged in the product's three forms, a witness check, a
   class-size pass and the grouped verdict, timed; the cheapest form that proves it failing counts (as if a
   search knew beforehand which one would);
5. choosing the release (`Anonymization.choose`), timed, and the chosen node's verdict on the values less
   its grouped verdict: what the manifest's profile and KL-divergence, which read its (class, value)
   counts, cost beyond judging it;
6. with --floor, the scan and write floors of `bench_rows.py` (one GROUP BY of the file, the file copied
   into a table), in a separate process; and the sum of the floors: the scan, the minimal nodes' grouped
   verdicts, the failing border's cheapest proofs, the chosen node's counts and the write.

Same data and settings as `bench_rows.py` (synthetic Lands End, landsend_entropy6.yaml: k = 6 and entropy
6-diversity; --memory-limit, --temp-directory, --threads).

    python benchmarks/bench_minimal_floor.py --rows 100000000 --floor --fastest-forms --out results.md
"""
from __future__ import annotations

import argparse
import itertools
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "benchmarks"))
from sqlanon.lattice import direct_generalizations  # noqa: E402

from bench_rows import add_source_arguments, dataset, measure_floor, run_worker, source_settings  # noqa: E402
from bench_search import machine, write_results  # noqa: E402
from border_nodes import collapsed  # noqa: E402

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
    out["wide_table"] = run.fs.wide_table      # built on first use: timed apart from the search
    out["wide_s"] = time.perf_counter() - t
    t = time.perf_counter()
    result = run.search()
    out.update(search_s=time.perf_counter() - t, evaluated=result.evaluated, minimal=len(result.minimal))
    checker, fs = run.checker, run.fs
    if not checker.verdicts_in_database:
        raise SystemExit("the policy's nodes are not judged by the verdict query here")
    thresholds = checker.verdict_thresholds()
    nodes = []
    for node in result.minimal:
        levels = split_levels(run, node)
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
    out["failing"] = [judge_failing(run, split_levels(run, node), thresholds)
                      for node in maximal_failing(run.lattice, result.satisfying)]
    out["failing_sum_s"] = sum(n["cheapest_s"] for n in out["failing"])
    t = time.perf_counter()
    chosen = split_levels(run, run.lattice.node(run.choose().levels))
    out["choose_s"] = time.perf_counter() - t
    mine = next((n for n in nodes if n["levels"] == chosen), None)
    if mine is None:        # a metric that is not monotone may choose above the minimal nodes
        raise SystemExit(f"the chosen node {chosen} is not minimal: its counts' cost is not measured here")
    out["chosen"] = {"levels": chosen, "counts_s": max(mine["seconds"] - mine["grouped_s"], 0.0)}
    if fastest:
        fs.counts.con.execute("SET perfect_ht_threshold = 30")
        for n in nodes:
            n["fastest_s"] = fastest_forms(run, n, thresholds)
        out["fastest_sum_s"] = sum(n["fastest_s"] for n in nodes)
        out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    run.close()
    print(json.dumps(out), flush=True)


def split_levels(run, node) -> dict[str, int]:
    """The node's levels of the attributes not at a level of one label: the blocks the search groups."""
    return {name: level for name, level in run.lattice.levels(node).items()
            if run.fs.qi(name).hierarchy.domain_sizes()[level] > 1}


def maximal_failing(lattice, satisfying) -> list[tuple[int, ...]]:
    """The failing nodes whose direct generalizations all satisfy, one per set of blocks (as `border_nodes.py`
    counts them), each as its lowest node of those blocks."""
    levels = collapsed(lattice)
    heights = tuple(len(lv) - 1 for lv in levels)
    real = {n: tuple(lv[p] for lv, p in zip(levels, n)) for n in itertools.product(*(range(h + 1) for h in heights))}
    ok = {n for n, r in real.items() if r in satisfying}
    return [real[n] for n in real if n not in ok
            and all(g in ok for g in direct_generalizations(n, heights))]


def judge_failing(run, levels: dict[str, int], thresholds) -> dict:
    """A failing node judged in each form the search has (a witness check, a class-size pass, the grouped
    verdict), each timed; `cheapest_s` is the least time of those that prove it failing."""
    fs, checker = run.fs, run.checker
    forms: dict[str, tuple[float, bool]] = {}
    t = time.perf_counter()
    row = fs.node_verdicts([levels], checker.needed[0], *thresholds, witness=True)[0]
    forms["witness"] = (time.perf_counter() - t, row["suppressed"] > checker.budget)
    t = time.perf_counter()
    sizes = fs.batch_counts([levels])[0].sizes
    forms["class sizes"] = (time.perf_counter() - t, int(sizes[sizes < thresholds[0]].sum()) > checker.budget)
    t = time.perf_counter()
    row = fs.node_verdicts([levels], checker.needed[0], *thresholds, value_groups=checker.value_groups)[0]
    forms["grouped verdict"] = (time.perf_counter() - t, row["suppressed"] > checker.budget)
    if not forms["grouped verdict"][1]:
        raise SystemExit(f"a maximal failing node satisfies: {levels}")
    cheapest = min((form for form, (_, proves) in forms.items() if proves), key=lambda form: forms[form][0])
    return {"levels": levels, "classes": int(row["classes"]), "cheapest": cheapest, "cheapest_s": forms[cheapest][0],
            "forms": {form: {"s": s, "proves": proves} for form, (s, proves) in forms.items()}}


def measure(policy: Path, db: Path, settings: dict) -> dict:
    return run_worker([__file__, "--worker", str(policy), str(db), json.dumps(settings)], db)


def render(results: list[dict], args) -> list[str]:
    nan = float("nan")
    lines = ["# Minimal nodes judged alone (Lands End, k = 6 and entropy 6-diversity)", "",
             f"Machine: {machine()}. Settings: --memory-limit {args.memory_limit} --temp-directory "
             f"{args.temp_directory} --threads {args.threads}. One run per size.", "",
             "| rows | prepare s | wide set s | search s (evaluated) | minimal nodes | their verdict queries alone, "
             "sum s | the same on groups of values first, sum s (groups) "
             "| the same in the fastest forms, sum s (peak MB) | scan floor s | write floor s |",
             "| - | - | - | - | - | - | - | - | - | - |"]
    for r in results:
        fl = r.get("floor", {})
        fastest = f"{r['fastest_sum_s']:.1f} ({r['peak_mb']:,})" if "fastest_sum_s" in r else "-"
        lines.append(f"| {r['rows']:,} | {r['prepare_s']:.1f} | {r['wide_s']:.1f} | {r['search_s']:.1f} "
                     f"({r['evaluated']}) | {r['minimal']} | {r['minimal_sum_s']:.1f} "
                     f"| {r['grouped_sum_s']:.1f} ({r['value_groups']}) | {fastest} "
                     f"| {fl.get('group_by_s', nan):.1f} | {fl.get('write_s', nan):.1f} |")
    lines += ["", "The least a run could spend that judges the border as the search judges it (the scan floor, the "
              "minimal nodes' grouped verdicts, each maximal failing node's cheapest proof, the chosen node's "
              "counts beyond its verdict, the write floor), beside what this run spent on the same steps "
              "(preparation with the wide set, search, choosing; the release is not run here):", "",
              "| rows | scan | minimal nodes | failing border (nodes) | chosen node's counts | write | floor, sum s "
              "| preparation + wide set + search + choosing s |", "| - | - | - | - | - | - | - | - |"]
    for r in results:
        fl = r.get("floor", {})
        parts = [fl.get("group_by_s", nan), r["grouped_sum_s"], r["failing_sum_s"], r["chosen"]["counts_s"],
                 fl.get("write_s", nan)]
        spent = r["prepare_s"] + r["wide_s"] + r["search_s"] + r["choose_s"]
        lines.append(f"| {r['rows']:,} | {parts[0]:.1f} | {parts[1]:.1f} | {parts[2]:.1f} ({len(r['failing'])}) "
                     f"| {parts[3]:.1f} | {parts[4]:.1f} | {sum(parts):.1f} | {spent:.1f} |")
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
        lines += ["", f"Each maximal failing node at {r['rows']:,} rows (seconds of each form; * where it proves the "
                      "node failing):", "",
                  "| node | classes | witness check s | class-size pass s | grouped verdict s | cheapest |",
                  "| - | - | - | - | - | - |"]
        for n in sorted(r["failing"], key=lambda n: -n["cheapest_s"]):
            node = ", ".join(f"{a}={lv}" for a, lv in n["levels"].items())
            forms = " | ".join(f"{f['s']:.2f}{' *' if f['proves'] else ''}" for f in n["forms"].values())
            lines.append(f"| {node} | {n['classes']:,} | {forms} | {n['cheapest']} |")
        chosen = ", ".join(f"{a}={lv}" for a, lv in r["chosen"]["levels"].items())
        lines += ["", f"Chosen node: {chosen}; choosing took {r['choose_s']:.1f} s."]
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
