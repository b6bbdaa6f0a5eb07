"""Benchmark: every privacy predicate on the Adult bottom node, and the entropy 6-diverse search.

1. The finest generalization of Adult (8 quasi-identifiers at level 0; occupation sensitive, 14 values):
   per-block counts fetched once, then each model's `block_ok` timed over all blocks (median of
   --repeat calls).
2. All minimal entropy 6-diverse nodes over the 8 attributes of the performance experiment: Incognito
   and brute force, each in fresh processes (medians of --runs), search time only.

    python benchmarks/bench_models.py --out benchmarks/RESULTS-models.md
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_search import machine, write_results  # noqa: E402

PREDICATES = [
    ("k-anonymity (k=6)", {"k": 6}),
    ("distinct l (l=6)", {"l_diversity": {"variant": "distinct", "l": 6}}),
    ("entropy l (l=6)", {"l_diversity": {"variant": "entropy", "l": 6}}),
    ("recursive (c=3, l=6)", {"l_diversity": {"variant": "recursive", "c": 3, "l": 6}}),
    ("pd-recursive (c=3, l=6, Y=2 values)", {"l_diversity": {"variant": "recursive", "c": 3, "l": 6,
                                                              "dont_care": ["Prof-specialty", "Craft-repair"]}}),
    ("npd-recursive (3, 1 %, 6)", {"l_diversity": {"variant": "recursive", "c": 3, "l": 6, "dont_care": ["Sales"],
                                                   "no_negative_disclosure": {"c2": 1, "values": ["Sales"]}}}),
    ("adjusted entropy (l=6, Y=2 values)", {"l_diversity": {"variant": "entropy", "l": 6,
                                                             "dont_care": ["Prof-specialty", "Craft-repair"]}}),
    ("t-closeness equal (t=0.2)", {"t_closeness": {"t": 0.2, "distance": "equal"}}),
    ("t-closeness hierarchical (t=0.2)", {"t_closeness": {"t": 0.2, "distance": "hierarchical"}}),
]


def predicates(repeat: int) -> list[dict]:
    from sqlanon.anonymizer import Anonymization
    from sqlanon.models import criteria_from_policy

    from conftest import ADULT, adult_policy
    policy = adult_policy(8, {"k": 1})
    policy["sensitive"] = {"occupation": {"hierarchy": str(ADULT / "hierarchies" / "occupation.csv")}}
    rows = []
    with Anonymization(policy, db=":memory:") as run:
        bottom = {q: 0 for q in run.lattice.names}
        counts = run.fs.node_counts(bottom, sensitive=["occupation"]).sensitive["occupation"]
        domains = {s.name: s.domain for s in run.fs.sensitives}
        for name, privacy in PREDICATES:
            (criterion,) = criteria_from_policy(privacy, domains)
            matrix = counts if criterion.needs_sensitive else counts.sum(axis=1, keepdims=True)
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                criterion.block_ok(matrix)
                times.append(time.perf_counter() - t)
            rows.append({"model": name, "blocks": int(len(counts)), "median_ms": statistics.median(times) * 1e3,
                         "max_ms": max(times) * 1e3})
    return rows


def search_worker(mode: str) -> dict:
    from sqlanon.anonymizer import Anonymization

    from conftest import adult_policy
    with Anonymization(adult_policy(8, {"l_diversity": {"variant": "entropy", "l": 6}}), db=":memory:") as run:
        t = time.perf_counter()
        result = run.search(mode)
        return {"search_s": time.perf_counter() - t, "evaluated": result.evaluated, "minimal": len(result.minimal)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=50, help="calls per predicate")
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per search mode")
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(search_worker(args.worker)))
        return
    preds = predicates(args.repeat)
    runs = {"incognito": [], "brute_force": []}
    for _ in range(args.runs):
        for mode in runs:
            out = subprocess.run([sys.executable, __file__, "--worker", mode], check=True, capture_output=True,
                                 text=True).stdout
            runs[mode].append(json.loads(out))
    lines = [f"Machine: {machine()}", "", f"Command: `python benchmarks/bench_models.py --repeat {args.repeat} "
             f"--runs {args.runs}`", "",
             f"## Predicates on the Adult bottom node ({preds[0]['blocks']:,} blocks x 14 occupation values)", "",
             f"Median of {args.repeat} calls of `block_ok` over all blocks (the counts fetched once beforehand).", "",
             "| model | median ms | max ms |", "| - | - | - |"]
    lines += [f"| {r['model']} | {r['median_ms']:.3f} | {r['max_ms']:.3f} |" for r in preds]
    inc, bf = runs["incognito"], runs["brute_force"]
    med = {m: statistics.median(r["search_s"] for r in rs) for m, rs in runs.items()}
    lines += ["", "## All minimal entropy 6-diverse nodes, Adult, 8 quasi-identifiers, occupation sensitive", "",
              f"Search time only (frequency set built), medians of {args.runs} fresh processes.", "",
              "| search | nodes evaluated | minimal nodes | median s |", "| - | - | - | - |",
              f"| Incognito | {inc[0]['evaluated']:,} | {inc[0]['minimal']} | {med['incognito']:.3f} |",
              f"| brute force | {bf[0]['evaluated']:,} | {bf[0]['minimal']} | {med['brute_force']:.3f} |", "",
              f"Brute force / Incognito: {med['brute_force'] / med['incognito']:.1f}x."]
    write_results(lines, args.out)


if __name__ == "__main__":
    main()
