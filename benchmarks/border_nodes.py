"""Count: how many nodes any exact search must judge on Lands End, beside those Incognito judges (issue 13).

For a monotone policy the satisfying nodes are an up-set of the lattice, and a search that returns every
minimal node must judge on the data at least its border:

- every minimal satisfying node (nothing below it satisfies, nothing above it decides it);
- every maximal failing node, whose direct generalizations all satisfy (nothing above it fails, and a
  projection to fewer attributes is a generalization, so it satisfies too).

Nodes whose levels split every attribute's values alike have the same blocks (`Lattice.same_blocks_as`) and
count once. For each --rows size this runs the product's search (Incognito) once, reads the satisfying nodes
it returns (all of them, for a monotone policy), and counts the border. It also replays, on those verdicts, a
bisection that each time judges the undecided node splitting the undecided nodes most evenly between its
generalizations and its specializations (as OLA's binary search on the lattice's chains does), to show what
a search judging other nodes than Incognito would judge. Counts only: no time is measured.

    python benchmarks/border_nodes.py --rows 1000000,10000000,100000000 --out results.md
"""
from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "benchmarks"))
from sqlanon.lattice import Node, direct_generalizations, minimal_in_up_set  # noqa: E402

from bench_rows import add_source_arguments, dataset, source_settings  # noqa: E402
from bench_search import machine, write_results  # noqa: E402


def collapsed(lattice) -> list[tuple[int, ...]]:
    """Per attribute, its levels of different blocks (the lowest of each run of alike levels). Position i in
    that list is level i of the collapsed lattice, whose nodes are one per set of blocks."""
    names = range(len(lattice.names))
    return [tuple(sorted({lattice.same_blocks_as(tuple(0 if b != a else lv for b in names))[a]
                          for lv in range(lattice.heights[a] + 1)})) for a in names]


def border(nodes: list[Node], heights: tuple[int, ...], satisfying: set[Node]) -> tuple[int, int]:
    """(minimal satisfying, maximal failing) of `nodes`, the lattice of `heights`, for an up-set `satisfying`."""
    maximal_failing = sum(all(g in satisfying for g in direct_generalizations(n, heights))
                          for n in nodes if n not in satisfying)
    return len(minimal_in_up_set(satisfying)), maximal_failing


def bisection(nodes: list[Node], satisfying: set[Node]) -> int:
    """Nodes judged by the most-even-split bisection until every node is decided (monotone inference)."""
    arr = np.array(nodes)
    # above[i, j]: node j is a generalization of node i (or i itself)
    above = (arr[None, :, :] >= arr[:, None, :]).all(axis=2)
    below = above.T
    truth = np.array([n in satisfying for n in nodes])
    undecided = np.ones(len(nodes), dtype=bool)
    judged = 0
    while undecided.any():
        ups = above[:, undecided].sum(axis=1)
        downs = below[:, undecided].sum(axis=1)
        score = np.where(undecided, np.minimum(ups, downs), -1)
        i = int(np.argmax(score))
        judged += 1
        undecided &= ~(above[i] if truth[i] else below[i])
    return judged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="1000000")
    add_source_arguments(ap)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from sqlanon.anonymizer import Anonymization
    from sqlanon.policy import load_policy
    lines = [f"Machine: {machine()}", "",
             f"Command: `python benchmarks/border_nodes.py --rows {args.rows}`", "",
             "| rows | lattice nodes | of different blocks | satisfying | minimal | maximal failing | border "
             "| Incognito judged | bisection would judge |", "| - | - | - | - | - | - | - | - | - |"]
    for rows in [int(r) for r in args.rows.split(",")]:
        path = dataset(Path(args.data), rows) / "landsend_entropy6.yaml"
        raw = yaml.safe_load(path.read_text())
        raw["source"].update(source_settings(args))
        with tempfile.TemporaryDirectory() as tmp:
            run = Anonymization(load_policy(raw, base_dir=path.parent), db=str(Path(tmp) / "b.duckdb"))
            if not run.checker.prunable:
                raise SystemExit("the policy is not monotone: its satisfying nodes are no up-set")
            result = run.search()
            lattice = run.lattice
            run.close()
        levels = collapsed(lattice)
        heights = tuple(len(lv) - 1 for lv in levels)
        nodes = list(itertools.product(*(range(h + 1) for h in heights)))
        satisfying = {n for n in nodes if tuple(lv[p] for lv, p in zip(levels, n)) in result.satisfying}
        minimal, maximal_failing = border(nodes, heights, satisfying)
        assert minimal == len({lattice.same_blocks_as(n) for n in result.minimal})
        lines.append(f"| {rows:,} | {lattice.size:,} | {len(nodes):,} | {len(satisfying):,} | {minimal} | "
                     f"{maximal_failing} | {minimal + maximal_failing} | {result.evaluated} | "
                     f"{bisection(nodes, satisfying)} |")
        print(lines[-1], flush=True)
    write_results(lines, args.out)


if __name__ == "__main__":
    main()
