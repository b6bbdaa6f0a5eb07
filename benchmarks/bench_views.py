"""Benchmark: reading a self-enforcing view release against reading the plain generalized SELECT.

A view release (sqlanon/views.py) measures every class at read time (window aggregates) and returns
only rows of classes that satisfy the policy; the plain generalized SELECT (`sqlanon.release.select_sql`,
what a table release runs once, with the release's suppressed blocks inline) only generalizes. Both
read the same source table and the same persisted mapping tables in one DuckDB file, and a read is the
whole result fetched into Python as an Arrow table. Goal: the view costs at most 3x the plain SELECT.

Data: Adult (45,222 rows; the 8 quasi-identifiers of adult_demo.yaml, occupation sensitive) and the
synthetic Lands End at full size (4,591,581 rows, datasets/landsend/generate.py seed 0; 7
quasi-identifiers, cost sensitive). Each data set is searched once with k (5 for Adult, 6 for Lands End)
and released at its chosen node; then one view per model shape is created at that same node (the shape
of the enforcement SQL, not the node, is what is measured): k only; k + distinct l; k + entropy l; k +
recursive (c,l); k + t-closeness equal; k + t-closeness ordered (on cost for Lands End; on hours_per_week
for Adult, added to its sensitive attributes for every shape, since occupation is categorical).
Reads alternate plain / view within each repetition, so both sides share the machine's load; medians of
--repeat runs.

    python benchmarks/bench_views.py --repeat 5 --before benchmarks/RESULTS-views.md --out benchmarks/RESULTS-views.md

--before reads the ratios of an earlier results file (same table layout) and prints them beside the new
ones. The load average (1/5/15 min) is recorded before and after each data set: the machine is shared.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from sqlanon import views
from sqlanon.anonymizer import Anonymization
from sqlanon.policy import load_policy
from sqlanon.release import release_columns, select_sql

from bench_scale import FULL, dataset
from bench_search import machine, write_results


def shapes(k: int, l: int, ordered: str | None) -> dict[str, dict]:
    out = {"k": {"k": k},
           "k + distinct l": {"k": k, "l_diversity": {"variant": "distinct", "l": l}},
           "k + entropy l": {"k": k, "l_diversity": {"variant": "entropy", "l": l}},
           "k + recursive (3,l)": {"k": k, "l_diversity": {"variant": "recursive", "l": l, "c": 3}},
           "k + t-closeness equal": {"k": k, "t_closeness": {"t": 0.2, "distance": "equal"}}}
    if ordered:
        out["k + t-closeness ordered"] = {"k": k, "t_closeness": {"t": 0.2, "distance": "ordered", "attribute": ordered}}
    return out


def prepare(name: str, policy_path: Path, parquet: Path, k: int, l: int, ordered: str | None, work: Path) -> dict:
    """Load the table into a DuckDB file, search and release it as a view; one view per shape; the plain SELECT."""
    db = work / f"{name}.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet('{parquet}')")
    con.close()
    raw = yaml.safe_load(policy_path.read_text())
    raw["source"] = {"database": str(db), "table": name}
    raw["sensitive"] = [s for s in (raw["sensitive"] if isinstance(raw["sensitive"], list) else list(raw["sensitive"]))]
    if ordered and ordered not in raw["sensitive"]:
        raw["sensitive"].append(ordered)      # the numeric attribute of the ordered shape (released by every shape)
    raw["privacy"] = {"k": k}
    raw["release"] = {"name": f"{name}_view", "materialize": "view"}
    t0 = time.perf_counter()
    with Anonymization(load_policy(raw, base_dir=policy_path.parent), db=str(db)) as run:
        run.search()
        run.choose()
        run.materialize()
        search_s = time.perf_counter() - t0
        levels = dict(run.chosen.levels)
        maps = views.view_maps(run.policy, run.fs)
        plain = select_sql(run.policy, run.fs, run.chosen.result, map_names=maps, source=name)
        made = {}
        for shape, privacy in shapes(k, l, ordered).items():
            pol = load_policy({**raw, "privacy": privacy}, base_dir=policy_path.parent)
            view = f"{name}_v{len(made)}"
            views.create_view(run.backend, view, pol, run.fs, release_columns(pol, run.fs, levels), maps, name)
            made[shape] = view
    return {"db": db, "plain": plain, "views": made, "levels": levels, "search_s": search_s}


def read(con, sql: str) -> tuple[float, int]:
    t = time.perf_counter()
    n = con.execute(sql).to_arrow_table().num_rows
    return time.perf_counter() - t, n


def ordered_classes(con, view: str) -> tuple[int, int, int, int] | None:
    """(classes, classes whose ordered EMD the view measured exactly, its (class, bucket) counts, the
    (class, value) counts an exact pass over every class would group) of one read of a view whose ordered
    EMD is bounded first (its "__sqlanon_o<j>" work table has an "exact" column), or None."""
    import re
    sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [view]).fetchone()[0]
    sql = re.sub(r"^CREATE VIEW \S+ AS ", "", sql).rstrip().rstrip(";")
    names = set(re.findall(r"__sqlanon_o(\d+) AS \(SELECT bd\.", sql))
    if len(names) != 1:
        return None
    j = names.pop()
    value = re.search(rf"__sqlanon_csx{j} AS \(SELECT g\.__sqlanon_key, g\.(\S+) AS v", sql)
    assert value is not None, "the exact pass's (class, value) GROUP BY"
    row = con.execute(sql[:sql.rindex(" SELECT g.")] +
                      f" SELECT (SELECT COUNT(*) FROM __sqlanon_o{j}), (SELECT COUNT(exact) FROM __sqlanon_o{j}),"
                      f" (SELECT COUNT(*) FROM __sqlanon_cb{j}),"
                      f" (SELECT COUNT(*) FROM (SELECT DISTINCT __sqlanon_key, {value.group(1)} FROM __sqlanon_g))"
                      ).fetchone()
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def measure(prep: dict, repeat: int) -> list[dict]:
    con = duckdb.connect(str(prep["db"]), read_only=True)
    out = []
    try:
        for shape, view in prep["views"].items():
            sql_view = f'SELECT * FROM "{view}"'
            read(con, prep["plain"])             # warm both once
            read(con, sql_view)
            plain_t, view_t = [], []
            for _ in range(repeat):
                t, n_plain = read(con, prep["plain"])
                plain_t.append(t)
                t, n_view = read(con, sql_view)
                view_t.append(t)
            p, v = statistics.median(plain_t), statistics.median(view_t)
            out.append({"shape": shape, "plain_s": p, "view_s": v, "ratio": v / p,
                        "plain_rows": n_plain, "view_rows": n_view, "ordered": ordered_classes(con, view)})
    finally:
        con.close()
    return out


def earlier_ratios(path: Path) -> dict[tuple[str, str], str]:
    """(data, model shape) -> ratio, from the first (newest) table of an earlier results file."""
    out = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7 and cells[0] in ("adult", "landsend"):
            out.setdefault((cells[0], cells[3]), cells[6])     # the first table: the latest run
    return out


def load_text() -> str:
    import os
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default="/tmp/sqlanon-landsend", help="Folder of the generated Lands End table.")
    ap.add_argument("--skip-landsend", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--before", default=None, help="An earlier RESULTS-views.md: its ratios go beside the new ones.")
    args = ap.parse_args()
    before = earlier_ratios(Path(args.before)) if args.before else {}
    cases = [("adult", ROOT / "datasets" / "adult" / "adult_demo.yaml", ROOT / "datasets" / "adult" / "adult.parquet",
              5, 3, "hours_per_week")]
    if not args.skip_landsend:
        ls = dataset(Path(args.data), FULL)
        cases.append(("landsend", ls, ls.parent / "landsend.parquet", 6, 3, "cost"))
    import os
    load = os.getloadavg()
    lines = [f"Machine: {machine()}", "",
             (f"Command: `python benchmarks/bench_views.py --repeat {args.repeat}"
              f"{' --skip-landsend' if args.skip_landsend else ''}{' --before ' + args.before if args.before else ''} "
              "--out benchmarks/RESULTS-views.md`"), "",
             ("A read = `SELECT * FROM <relation>` fetched whole into Python as an Arrow table (DuckDB, one file). "
             "plain = the generalized SELECT of the release (`sqlanon.release.select_sql`: mapping-table joins, "
             "the release's suppressed blocks inline); view = the self-enforcing view at the same node "
             "(`sql_templates/release_view_enforced.sql`) with the model shape of the row. Medians of "
             f"{args.repeat} reads each, plain and view alternating in the same run. Load average (1/5/15 min) at "
             f"the start: {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} (a shared machine)."), "",
             "| data | rows | node | model shape | plain ms | view ms | ratio | ratio before | rows plain | rows view |",
             "| - | - | - | - | - | - | - | - | - | - |"]
    loads = []
    worst = {}
    exact_note: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sqlanon-bench-views-") as tmp:
        for name, policy_path, parquet, k, l, ordered in cases:
            prep = prepare(name, policy_path, parquet, k, l, ordered, Path(tmp))
            node = ",".join(str(v) for v in prep["levels"].values())
            load_before = load_text()
            for r in measure(prep, args.repeat):
                print(name, r, file=sys.stderr, flush=True)
                lines.append(f"| {name} | {r['plain_rows']:,} | ({node}) | {r['shape']} | {r['plain_s'] * 1000:.0f} | "
                             f"{r['view_s'] * 1000:.0f} | {r['ratio']:.2f} | {before.get((name, r['shape']), '-')} | "
                             f"{r['plain_rows']:,} | {r['view_rows']:,} |")
                worst[name] = max(worst.get(name, 0), r["ratio"])
                if r["ordered"]:
                    classes, exact, buckets, values = r["ordered"]
                    exact_note.append(f"{name}, {r['shape']}: {exact:,} of {classes:,} classes measured exactly, "
                                      f"the others decided by their bounds; {buckets:,} (class, bucket) counts "
                                      f"grouped where every class measured exactly would group {values:,} "
                                      "(class, value) counts")
            loads.append(f"{name}: {load_before} before its reads, {load_text()} after")
            Path(prep["db"]).unlink(missing_ok=True)
    lines.append("")
    lines.append("- Load average (1/5/15 min): " + "; ".join(loads) + ".")
    if exact_note:
        lines.append("- The ordered EMD bounded first from per-bucket counts (one read of the view): "
                     + "; ".join(exact_note) + ".")
    for name, ratio in worst.items():
        lines.append(f"- {name}: the largest ratio view / plain is {ratio:.2f} (goal: at most 3).")
    lines.append("- rows view < rows plain: the shape checks a model the k-anonymous node was not searched for, and "
                 "the view leaves out the classes that fail it (a view of the same policy as its release shows "
                 "every row until the source changes).")
    write_results(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
