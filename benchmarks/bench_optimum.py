"""Benchmark: the optimum release on Adult, side by side with ARX 3.9.2 and with an earlier revision.

Configurations (docs/DESIGN.md, "ARX side by side"): Adult, 45,222 rows, 8 quasi-identifiers (age, sex,
race, marital_status, education, native_country, workclass, salary; the shipped hierarchies),
occupation sensitive, discernibility with |D| per suppressed row. c1 k=5; c2 + entropy l=5; c3 +
recursive (3,5); c4 + distinct l=5; c5 + t=0.2 (equal); c6 k=5 and 4 % suppression; c7 c2 and 4 %
suppression; c10 the 8 plus relationship (suppress) and hours_per_week (intervals 10, 20, 40), k=5 and
4 % suppression (43,200 nodes).

For each configuration, in one run:
- warm: in one process after a warm-up, a fresh `Anonymization` (frequency set built) + search + choose
  of the released node, median of --runs; ARX's harness the same way (build data, anonymize) in its JVM;
- cold: the whole `sqlanon anonymize` process against ARX's whole process (JVM start, read CSV, search,
  write CSV), alternating, median of --runs;
- c10: the whole process against one DuckDB GROUP BY over the same ten columns (and occupation) of the
  same Parquet file, timed in a fresh process the same way;
- roll-up: the same warm measure with node counts rolled up in memory (the default) and with one GROUP
  BY per node in the database (`FrequencySet.rollup = False`), to show what the roll-up saves;
- --rev: the earlier revision's in-process search + scoring of the minimal nodes + choice (what its
  `anonymize` did before the release), against this checkout's, each in its own fresh process.

ARX is not part of the project: --arx names a folder holding a `run.sh CONFIG warm|cold` harness that
prints one JSON line per run (`{"ms": ..., "node": ..., "discernibility": ...}`), built from ARX's
sources outside the repository (benchmarks/RESULTS-optimum.md says how). Without --arx only sqlanon runs.

    python benchmarks/bench_optimum.py --runs 5 --arx /path/to/arx-bench --rev 8dd93ee \
        --out benchmarks/RESULTS-optimum.md
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from bench_search import machine, write_results  # noqa: E402

K5 = {"k": 5}
ENTROPY = {"variant": "entropy", "l": 5}
CONFIGS = {
    "c1": K5,
    "c2": {**K5, "l_diversity": ENTROPY},
    "c3": {**K5, "l_diversity": {"variant": "recursive", "c": 3, "l": 5}},
    "c4": {**K5, "l_diversity": {"variant": "distinct", "l": 5}},
    "c5": {**K5, "t_closeness": {"t": 0.2, "distance": "equal"}},
    "c6": {**K5, "max_suppression": 0.04},
    "c7": {**K5, "l_diversity": ENTROPY, "max_suppression": 0.04},
    "c10": {**K5, "max_suppression": 0.04},
}
EXTRA_QIS = {"relationship": {"hierarchy": "suppress"},
             "hours_per_week": {"hierarchy": "intervals", "widths": [10, 20, 40]}}

# one configuration in a fresh interpreter, code under test first on sys.path with its own templates;
# "old" searches and scores every minimal node (anonymize before the optimum search), "search-choose" lists every
# minimal node then chooses (anonymize up to e081462), "new" chooses as anonymize does now
WORKER = r"""
import json, statistics, sys, time
from pathlib import Path
code, runs, policy, style = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
sys.path.insert(0, code)
import sqlanon.templates as T
T.template_dir = lambda: Path(code) / "sql_templates"
T.environment.cache_clear()
from sqlanon.anonymizer import Anonymization
def once():
    t = time.perf_counter()
    run = Anonymization(policy, db=":memory:")
    if style == "no-rollup":
        run.fs.rollup = False                 # every node one GROUP BY in the database, as before the roll-up
    if style in ("old", "search-choose"):
        run.search()
    if style == "old":
        run.score_minimal()
    # otherwise what `sqlanon anonymize` does: choose() searches as it needs (with suppression and
    # discernibility, only among the nodes that can beat a greedy release)
    chosen = run.choose()
    seconds = time.perf_counter() - t
    node = "".join(str(chosen.levels[q]) for q in run.lattice.names)
    out = (seconds, node, chosen.metrics["discernibility"], run.checker.evaluated)
    run.close()
    return out
once()                                        # warm-up: imports, template shapes, DuckDB
results = [once() for _ in range(runs)]
print(json.dumps({"ms": statistics.median(r[0] for r in results) * 1000, "node": results[0][1],
                  "discernibility": results[0][2], "evaluated": results[0][3]}))
"""

GROUP_BY = r"""
import sys, time, duckdb
path, cols = sys.argv[1], sys.argv[2].split(",")
t = time.perf_counter()
con = duckdb.connect()
q = ", ".join('"' + c + '"' for c in cols)
con.execute(f"SELECT {q}, COUNT(*) FROM read_parquet(?) GROUP BY {q}", [path]).fetchall()
print(time.perf_counter() - t)
"""


def policy(cfg: str) -> dict:
    from conftest import adult_policy
    p = adult_policy(8, dict(CONFIGS[cfg]))
    if cfg == "c10":
        p["quasi_identifiers"].update(EXTRA_QIS)
    p["release"] = {"name": f"adult_{cfg}", "materialize": "table"}
    return p


def worker(code: Path, cfg: str, runs: int, style: str) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, str(code), str(runs), json.dumps(policy(cfg)), style],
                         check=True, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def wall(args: list[str], cwd: str) -> float:
    t = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, _ = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(args)} failed with status {status}")
    return time.perf_counter() - t


def arx_warm(arx: Path, cfg: str, runs: int) -> dict:
    out = subprocess.run([str(arx / "run.sh"), cfg, "warm", str(runs)], check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {"ms": statistics.median(r["ms"] for r in rows), "node": rows[0]["node"],
            "discernibility": rows[0]["discernibility"]}


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--arx", type=Path, default=None, help="folder with ARX's run.sh harness (outside the project)")
    ap.add_argument("--rev", default=None, help="an earlier revision to compare with (a temporary git worktree)")
    ap.add_argument("--rev-style", choices=["old", "search-choose"], default="search-choose",
                    help="what the earlier revision runs: its search then choose (anonymize up to e081462), or "
                         "also score every minimal node with every metric (anonymize before the optimum search)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    configs = args.configs.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="sqlanon-bench-"))
    warm, cold, groupby, old, no_rollup = {}, {}, {}, {}, {}
    base = None
    if args.rev:
        base = tmp / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), args.rev], cwd=ROOT, check=True)
    try:
        for cfg in configs:
            path = tmp / f"{cfg}.yaml"
            path.write_text(yaml.safe_dump(policy(cfg)))
            mine = worker(ROOT, cfg, args.runs, "new")
            no_rollup[cfg] = worker(ROOT, cfg, args.runs, "no-rollup")
            theirs = arx_warm(args.arx, cfg, args.runs) if args.arx else None
            if base is not None:
                old[cfg] = worker(base, cfg, args.runs, args.rev_style)
            warm[cfg] = (mine, theirs)
            me, them, gb = [], [], []
            for i in range(args.runs):        # alternate, so drift of the machine hits both alike
                db = tmp / f"{cfg}_{i}.duckdb"
                me.append(wall([sys.executable, "-m", "sqlanon.cli", "anonymize", str(path), "--db", str(db), "-q"],
                               str(ROOT)))
                if args.arx:
                    them.append(wall([str(args.arx / "run.sh"), cfg, "cold", str(tmp / f"{cfg}_arx.csv")], str(tmp)))
                if cfg == "c10":
                    cols = ",".join([*policy(cfg)["quasi_identifiers"], "occupation"])
                    out = subprocess.run([sys.executable, "-c", GROUP_BY, str(ROOT / "datasets/adult/adult.parquet"),
                                          cols], check=True, capture_output=True, text=True)
                    gb.append(float(out.stdout.strip()))
            cold[cfg] = (median(me), median(them) if them else None)
            if gb:
                groupby[cfg] = median(gb)
    finally:
        if base is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=True)
    load = os.getloadavg()[0]
    lines = [f"Machine: {machine()}; 1-minute load average at the end: {load:.1f}", "",
             f"Command: `python benchmarks/bench_optimum.py --runs {args.runs}"
             + (" --arx ARX_HARNESS" if args.arx else "") + (f" --rev {args.rev} --rev-style {args.rev_style}" if args.rev else "")
             + "`", "",
             f"Medians of {args.runs} runs; sqlanon and ARX measured in the same run, alternating.", "",
             "## In-process: prepare + search + choice of the release (warm)", "",
             "| cfg | sqlanon ms | ARX ms | sqlanon / ARX | sqlanon node (discernibility) | ARX node (discernibility) |"
             " nodes evaluated |", "| - | - | - | - | - | - | - |"]
    for cfg in configs:
        mine, theirs = warm[cfg]
        arx = (f"{theirs['ms']:.0f} | {mine['ms'] / theirs['ms']:.2f} | {theirs['node']} ({theirs['discernibility']:,.0f})"
               if theirs else "- | - | -")
        lines.append(f"| {cfg} | {mine['ms']:.0f} | {arx.split(' | ')[0]} | {arx.split(' | ')[1]} | {mine['node']} "
                     f"({mine['discernibility']:,.0f}) | {arx.split(' | ')[2]} | {mine['evaluated']:,} |")
    lines += ["", "## Whole process (cold): `sqlanon anonymize POLICY --db FILE -q` against ARX's process", "",
              "| cfg | sqlanon s | ARX s | sqlanon / ARX |", "| - | - | - | - |"]
    for cfg in configs:
        me, them = cold[cfg]
        lines.append(f"| {cfg} | {me:.2f} | {them:.2f} | {me / them:.2f} |" if them else f"| {cfg} | {me:.2f} | - | - |")
    for cfg, gb in groupby.items():
        lines += ["", f"{cfg}: the whole process takes {cold[cfg][0]:.2f} s; one DuckDB GROUP BY over the same "
                  f"columns of the same Parquet file (a fresh process, connect included) {gb:.3f} s: "
                  f"{cold[cfg][0] / gb:.1f}x."]
    lines += ["", "## What the roll-up saves (in-process, warm)", "",
              "| cfg | GROUP BY per node ms | rolled up in memory ms | ratio | same node |", "| - | - | - | - | - |"]
    for cfg in configs:
        a, b = no_rollup[cfg], warm[cfg][0]
        lines.append(f"| {cfg} | {a['ms']:.0f} | {b['ms']:.0f} | {a['ms'] / b['ms']:.2f} | "
                     f"{'yes' if a['node'] == b['node'] else 'NO'} |")
    if old:
        what = ("searched every minimal node, then chose" if args.rev_style == "search-choose"
                else "scored every minimal node with every metric")
        lines += ["", f"## Against revision {args.rev} (in-process, warm; it {what})", "",
                  f"| cfg | {args.rev} ms | now ms | {args.rev} / now | "
                  f"{args.rev} node (discernibility) | now node (discernibility) |", "| - | - | - | - | - | - |"]
        for cfg in configs:
            o, n = old[cfg], warm[cfg][0]
            lines.append(f"| {cfg} | {o['ms']:.0f} | {n['ms']:.0f} | {o['ms'] / n['ms']:.2f} | {o['node']} "
                         f"({o['discernibility']:,.0f}) | {n['node']} ({n['discernibility']:,.0f}) |")
    write_results(lines, args.out)


if __name__ == "__main__":
    main()
