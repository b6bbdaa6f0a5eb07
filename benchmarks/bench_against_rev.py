"""Benchmark: this checkout against an earlier revision, in the same run (the baseline of a change).

For each Adult policy (8 quasi-identifiers, occupation sensitive) it times, in fresh processes, the
lattice search alone (frequency set built; median of --repeat searches per process) and the whole
`sqlanon anonymize` process, for the working tree and for REV checked out into a temporary git worktree
(its own code and its own sql_templates/). Nodes evaluated and minimal nodes are printed beside the
times, so a speed-up from evaluating fewer nodes is told apart from one from cheaper nodes.

    python benchmarks/bench_against_rev.py --rev f606f6a --out benchmarks/RESULTS-against-rev.md
    python benchmarks/bench_against_rev.py --rev 8e5f328 --process-only --out benchmarks/RESULTS-startup.md
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_search import machine, write_results  # noqa: E402

POLICIES = {
    "k = 6": {"k": 6},
    "entropy l = 6": {"l_diversity": {"variant": "entropy", "l": 6}},
    "recursive (3, 6)": {"l_diversity": {"variant": "recursive", "c": 3, "l": 6}},
    "t = 0.2 (equal)": {"t_closeness": {"t": 0.2, "distance": "equal"}},
    "k = 6 + entropy 6, 2 % suppression": {"k": 6, "l_diversity": {"variant": "entropy", "l": 6},
                                          "max_suppression": 0.02},
}
PROCESS_POLICY = "datasets/adult/adult_k6.yaml"

# run inside a fresh interpreter with the code under test first on sys.path and its own templates
WORKER = r"""
import json, statistics, sys, time
from pathlib import Path
code, repeat, privacy = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
sys.path.insert(0, code)
sys.path.insert(1, str(Path(code) / "tests"))
import sqlanon.templates as T
T.template_dir = lambda: Path(code) / "sql_templates"
T.environment.cache_clear()
from conftest import adult_policy
from sqlanon.anonymizer import Anonymization
times = []
for _ in range(repeat):
    run = Anonymization(adult_policy(8, privacy), db=":memory:")
    t = time.perf_counter(); r = run.search(); times.append(time.perf_counter() - t)
    run.close()
print(json.dumps({"search_s": statistics.median(times), "evaluated": r.evaluated, "minimal": len(r.minimal)}))
"""


def search(code: Path, privacy: dict, repeat: int) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, str(code), str(repeat), json.dumps(privacy)],
                         check=True, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


PROCESS = ("import sys; from pathlib import Path; code = Path(sys.argv[1]); sys.path.insert(0, str(code)); "
           "import sqlanon.templates as T; T.template_dir = lambda: code / 'sql_templates'; from sqlanon.cli import main; "
           "sys.argv = ['sqlanon', 'anonymize', sys.argv[2], '--db', ':memory:', '-q']; main()")
# start-up alone: the command line loaded and its help printed, nothing run
HELP = ("import sys; sys.path.insert(0, sys.argv[1]); from sqlanon.cli import main; "
        "sys.argv = ['sqlanon', '--help']; main()")


def _timed(prog: str, code: Path) -> float:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", prog, str(code), str(code / PROCESS_POLICY)],
                          capture_output=True, cwd=tempfile.gettempdir())
    if done.returncode not in (0,):
        raise SystemExit(done.stderr.decode()[-2000:])
    return time.perf_counter() - t


def process(code: Path, runs: int, prog: str = PROCESS) -> float:
    """Median wall time of the whole anonymize process (the revision's own CLI module and templates)."""
    return statistics.median(_timed(prog, code) for _ in range(runs))


def processes(base: Path, code: Path, runs: int, prog: str) -> tuple[float, float]:
    """Medians for the revision and this checkout, their runs alternating (a load on the machine hits both)."""
    old, new = [], []
    for _ in range(runs):
        old.append(_timed(prog, base))
        new.append(_timed(prog, code))
    return statistics.median(old), statistics.median(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rev", required=True, help="the earlier revision (a commit, tag or branch)")
    ap.add_argument("--repeat", type=int, default=7, help="searches per process (median)")
    ap.add_argument("--runs", type=int, default=5, help="whole-process runs (median)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--process-only", action="store_true",
                    help="only the whole-process and start-up times (no search table), runs alternating")
    args = ap.parse_args()
    rev = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="sqlanon-rev-") as d:
        base = Path(d) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), rev], cwd=ROOT, check=True)
        try:
            if args.process_only:
                old_p, new_p = processes(base, ROOT, args.runs, PROCESS)
                old_h, new_h = processes(base, ROOT, args.runs, HELP)
                write_results(_startup_lines(args, rev, old_p, new_p, old_h, new_h), args.out)
                return
            rows = []
            for name, privacy in POLICIES.items():
                repeat = max(1, args.repeat // 3) if "suppression" in name else args.repeat
                old, new = search(base, privacy, repeat), search(ROOT, privacy, repeat)
                rows.append((name, old, new))
            old_p, new_p = process(base, args.runs), process(ROOT, args.runs)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=True)
    lines = [f"Machine: {machine()}", "",
             f"Command: `python benchmarks/bench_against_rev.py --rev {args.rev} --repeat {args.repeat} "
             f"--runs {args.runs}`", "",
             f"Adult (45,222 rows), 8 quasi-identifiers, occupation sensitive. Revision {rev} (a temporary git "
             "worktree, its own code and templates) against this checkout, in the same run. Search: the lattice "
             f"search alone, median of {args.repeat} per fresh process ({max(1, args.repeat // 3)} with "
             "suppression).", "",
             f"| policy | {rev} search s | now search s | {rev} / now | evaluated ({rev} / now) | minimal ({rev} / now) |",
             "| - | - | - | - | - | - |"]
    for name, old, new in rows:
        lines.append(f"| {name} | {old['search_s']:.3f} | {new['search_s']:.3f} | "
                     f"{old['search_s'] / new['search_s']:.2f} | {old['evaluated']:,} / {new['evaluated']:,} | "
                     f"{old['minimal']} / {new['minimal']} |")
    lines += ["", f"Whole process `sqlanon anonymize {PROCESS_POLICY} --db :memory: -q`, median of {args.runs}: "
              f"{rev} {old_p:.2f} s, now {new_p:.2f} s ({old_p / new_p:.2f}x)."]
    write_results(lines, args.out)


def _startup_lines(args, rev: str, old_p: float, new_p: float, old_h: float, new_h: float) -> list[str]:
    return [f"Machine: {machine()}", "",
            f"Command: `python benchmarks/bench_against_rev.py --rev {args.rev} --runs {args.runs} --process-only`",
            "", f"Revision {rev} (a temporary git worktree, its own code and templates) against this checkout, in "
            f"the same run, their runs alternating; median wall time of {args.runs} fresh processes each.", "",
            f"| process | {rev} s | now s | {rev} / now |", "| - | - | - | - |",
            f"| `sqlanon anonymize {PROCESS_POLICY} --db :memory: -q` (whole process) | {old_p:.2f} | {new_p:.2f} | "
            f"{old_p / new_p:.2f} |",
            f"| `sqlanon --help` (start-up alone) | {old_h:.2f} | {new_h:.2f} | {old_h / new_h:.2f} |"]


if __name__ == "__main__":
    main()
