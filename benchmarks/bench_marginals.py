"""Benchmark: anonymized marginals on Adult (sqlanon.marginals; Kifer & Gehrke, SIGMOD 2006).

1. Score and privacy-check a collection of five marginals (the decomposable collections of
   tests/test_marginals_release.py: one private, one whose reconstruction leaks, found only by the joins
   of Algorithm 1), Adult with race, sex, age, marital status; occupation sensitive; 6-link anonymity and
   maxent entropy 3-diversity. Each repetition starts from a fresh `Marginals` (no cached counts) over
   a run whose frequency set is built: KL in SQL (closed form) + k-link + k-combinatorial + Algorithm 1.
   Baseline in the same run: the same numbers by IPF (numpy) and the brute-force check of the whole
   reconstruction.
2. The greedy search of `sqlanon marginals` (k = 6, entropy 6-diversity, at most 3 marginals with
   occupation) from each minimal table, in fresh processes. Baseline in the same run: the same search
   scoring collections by IPF and checking them by brute force; and the greedy of an earlier revision
   (--rev, checked out into a temporary git worktree with its own code: the greedy before the removal
   moves existed), so the removal moves are shown not to slow the greedy down.
3. The new search: the seeded random walks with forward and backward moves that find the paper's OPT (the
   marginals experiment's setting: from the suppressed table and from each X+, 1,000 steps each).

    python benchmarks/bench_marginals.py --runs 5 --out benchmarks/RESULTS-marginals.md
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # this checkout's sqlanon, not whichever one is installed
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_search import machine, write_results  # noqa: E402

QI = ["race", "sex", "age", "marital_status"]
TABLE = {"race": 0, "sex": 0, "age": 4, "marital_status": 1}
PRIVATE = [{"age": 1}, {"age": 2, "occupation": 0}, {"sex": 0, "age": 3, "occupation": 0},
           {"sex": 0, "marital_status": 0}]
LEAKING = [{"age": 1}, {"age": 2, "occupation": 0}, {"age": 3, "marital_status": 1, "occupation": 0},
           {"marital_status": 0, "occupation": 0}]
SEARCH_PRIVACY = {"k": 6, "l_diversity": {"variant": "entropy", "l": 6}}


def _run(privacy):
    import duckdb

    from sqlanon.anonymizer import Anonymization

    from conftest import adult_policy
    return Anonymization(adult_policy(QI, privacy), connection=duckdb.connect())


# five marginals over 8 QIs, each one attribute with occupation: at levels where each is entropy 3-diverse by
# itself (Algorithm 1 joins them all), and at level 0 (33 million dense cells; {age, occupation} is not
# 3-diverse by itself, so Proposition 6.2 ends the check)
STAR = [{"age": 1, "occupation": 0}, {"sex": 0, "occupation": 0}, {"race": 0, "occupation": 0},
        {"marital_status": 0, "occupation": 0}, {"education": 1, "occupation": 0}]
STAR0 = [{"age": 0, "occupation": 0}, {"education": 0, "occupation": 0}, {"native_country": 0, "occupation": 0},
         {"workclass": 0, "occupation": 0}, {"marital_status": 0, "occupation": 0}]


def scoring(repeat: int) -> list[dict]:
    import duckdb

    from sqlanon.anonymizer import Anonymization
    from sqlanon.errors import DataError
    from sqlanon.marginals.estimate import ipf
    from sqlanon.marginals.privacy import k_link, maxent_l_diversity_brute
    from sqlanon.marginals.session import Marginals

    from conftest import adult_policy
    privacy = {"k": 6, "l_diversity": {"variant": "entropy", "l": 3}}
    run4 = _run(privacy)
    run8 = Anonymization(adult_policy(8, privacy), connection=duckdb.connect())
    cases = [("4 QIs, private", run4, [TABLE, *PRIVATE]), ("4 QIs, leaking", run4, [TABLE, *LEAKING]),
             ("8 QIs, star around occupation", run8, STAR), ("8 QIs, star at level 0", run8, STAR0)]
    rows = []
    for name, run, spec in cases:
        def build(run=run, spec=spec):
            ms = Marginals(run)
            table = [ms.table(spec[0])] if spec[0] is TABLE else []
            rest = spec[1:] if table else spec
            return ms, ms.collection(table + [ms.marginal(m) for m in rest])
        fast, slow = [], []
        for _ in range(repeat):
            ms, coll = build()
            t = time.perf_counter()
            kl = ms.kl_cells(coll)
            rep = ms.check(coll)
            fast.append(time.perf_counter() - t)
            ms, coll = build()
            t = time.perf_counter()
            try:
                kl_ipf = ipf(coll, ms.counts).kl
                brute = maxent_l_diversity_brute(coll, ms.privacy.diversity, ms.counts)
                ok_brute, cells = brute.ok, brute.groups
                k_ipf = k_link(coll, ms.counts)
            except DataError:      # the dense reconstruction does not fit in memory
                dense = math.prod(ms.schema.labels(a, lvl) for a, lvl in coll.finest().items()
                                  if lvl < ms.schema.depth[a])
                slow, refused, cells = None, f"{dense:,} dense cells", None
                break
            slow.append(time.perf_counter() - t)
            assert abs(kl - kl_ipf) < 1e-9 and ok_brute == rep.diversity.ok and k_ipf == rep.k_link
        rows.append({"collection": name, "marginals": len(coll.cliques), "kl": kl, "k_link": rep.k_link,
                     "k_combinatorial": rep.k_combinatorial,
                     "diverse": rep.diversity.ok, "groups": rep.diversity.groups, "joined": rep.diversity.joined,
                     "cells": cells,
                     "median_s": statistics.median(fast), "max_s": max(fast),
                     "baseline_median_s": statistics.median(slow) if slow else None,
                     "baseline_note": None if slow else refused})
    return rows


def search_worker(method: str) -> dict:
    from sqlanon.marginals.estimate import ipf
    from sqlanon.marginals.privacy import check_privacy, maxent_l_diversity_brute
    from sqlanon.marginals.session import Marginals

    class Baseline(Marginals):
        """The same search with IPF instead of the closed form and brute force instead of Algorithm 1."""

        def kl(self, coll):
            key = frozenset(coll.marginals)
            if key not in self._kl:
                self._kl[key] = ipf(coll, self.counts).kl
                self.kl_evaluations += 1
            return self._kl[key]

        def private(self, coll, reference=None):
            self.privacy_checks += 1
            rep = check_privacy(coll, self.privacy, self.counts)
            return rep.k_link >= self.privacy.k and rep.sensitive_marginals <= self.privacy.max_sensitive and \
                rep.k_combinatorial is not None and rep.k_combinatorial >= self.privacy.k and \
                maxent_l_diversity_brute(coll, self.privacy.diversity, self.counts).ok

    if method == "walk":          # the OPT search of the marginals experiment, after the greedy X+ (not timed)
        from sqlanon.experiments.marginals import WALK
        run = _run(SEARCH_PRIVACY)
        ms = Marginals(run)
        plus = [ms.search(c.levels).collection for c in run.score_minimal()]
        t0 = time.perf_counter()
        best, kl, walks = ms.optimum(plus, WALK["seed"], WALK["steps"], WALK["temperature"])
        return {"kl": kl, "total_s": time.perf_counter() - t0, "walks": len(walks),
                "proposals": sum(w.proposals for w in walks), "accepted": sum(w.accepted for w in walks),
                "removals": sum(w.removals_accepted for w in walks), "steps": WALK["steps"],
                "kl_evaluations": sum(w.kl_evaluations for w in walks),
                "privacy_checks": sum(w.privacy_checks for w in walks)}
    if method == "closed8":       # 8 quasi-identifiers, from the minimal table with the smallest KL
        import duckdb

        from sqlanon.anonymizer import Anonymization

        from conftest import adult_policy
        run = Anonymization(adult_policy(8, SEARCH_PRIVACY), connection=duckdb.connect())
        starts = [min(run.score_minimal(), key=lambda c: c.metrics["kl_divergence"])]
    else:
        run = _run(SEARCH_PRIVACY)
        starts = run.score_minimal()
    out = []
    t0 = time.perf_counter()
    for c in starts:
        ms = (Baseline if method == "baseline" else Marginals)(run)
        t = time.perf_counter()
        res = ms.search(c.levels)
        out.append({"start": c.levels, "kl": res.kl, "steps": len(res.steps) - 1, "seconds": time.perf_counter() - t,
                    "kl_evaluations": res.kl_evaluations, "privacy_checks": res.privacy_checks})
    return {"tables": out, "total_s": time.perf_counter() - t0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7, help="repetitions of the scoring benchmark")
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per search method")
    ap.add_argument("--rev", default="8dd93ee", help="earlier revision whose greedy is timed beside ours")
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(search_worker(args.worker)))
        return
    load_before = _load()
    score = scoring(args.repeat)
    runs = {"closed": [], "baseline": [], "closed8": [], "walk": [], "old": []}
    with tempfile.TemporaryDirectory(prefix="sqlanon-rev-") as tmp:
        base = Path(tmp) / "rev"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), args.rev], cwd=ROOT, check=True)
        # the editable install maps the package sqlanon.sql_templates to this checkout's templates, which the
        # earlier revision's code would read instead of its own: its own folder, where its package finds it first
        mine = base / "sqlanon" / "sql_templates"
        if not mine.exists() and (base / "sql_templates").is_dir():
            mine.symlink_to(base / "sql_templates", target_is_directory=True)
        try:
            for _ in range(args.runs):
                for method in runs:
                    if method == "old":    # the earlier revision's own worker, its own code first on the path
                        cmd = [sys.executable, str(base / "benchmarks" / "bench_marginals.py"), "--worker", "closed"]
                        env = {**os.environ, "PYTHONPATH": str(base)}
                    else:
                        cmd, env = [sys.executable, __file__, "--worker", method], None
                    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
                    runs[method].append(json.loads(out))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=True)
    lines = [f"Machine: {machine()}", "",
             f"Command: `python benchmarks/bench_marginals.py --repeat {args.repeat} --runs {args.runs}`", "",
             "Adult (45,222 rows), quasi-identifier race, sex, age, marital status; sensitive occupation (14 values).",
             "", "## Scoring and privacy-checking a collection of five marginals", "",
             f"4 QIs: the table {TABLE} plus four marginals (tests/test_marginals_release.py). 8 QIs (age, sex, race, "
             "marital status, education, native country, work class, salary): five marginals, each one attribute "
             "with occupation, at levels where each is entropy 3-diverse by itself (the star) or at level 0. 6-link anonymity and maxent entropy 3-diversity. Time from a fresh `Marginals` (no cached counts; frequency set built): KL-divergence "
             "(closed form, SQL over the original's cells), k-link, k-combinatorial bounds, maxent l-diversity "
             f"(Algorithm 1 with hull pruning). Median of {args.repeat}. Baseline, same run and same fresh start: "
             "KL by IPF (numpy) + k-link + the brute-force check of the whole reconstruction; both give the same "
             "answers (asserted).", "",
             "| collection | cliques | KL | k-link | k-combinatorial | maxent 3-diverse | groups checked / joined | "
             "reconstruction cells | median s | max s | baseline median s | baseline / ours |",
             "| - | - | - | - | - | - | - | - | - | - | - | - |"]
    for r in score:
        base = (f"{r['baseline_median_s']:.3f} | {r['baseline_median_s'] / r['median_s']:.1f}"
                if r["baseline_median_s"] is not None else f"refused: {r['baseline_note']} | –")
        kc = "not certified (join too large)" if r["k_combinatorial"] is None else r["k_combinatorial"]
        lines.append(f"| {r['collection']} | {r['marginals']} | {r['kl']:.4f} | {r['k_link']} | {kc} | "
                     f"{'yes' if r['diverse'] else 'no'} | {r['groups']:,} / {r['joined']:,} | "
                     f"{'–' if r['cells'] is None else format(r['cells'], ',')} | {r['median_s']:.3f} | "
                     f"{r['max_s']:.3f} | {base} |")
    med = {m: statistics.median(r["total_s"] for r in rs) for m, rs in runs.items()}
    lines += ["", "## Greedy search (item 6) from each minimal table", "",
              f"k = 6, entropy 6-diversity, at most 3 marginals holding occupation (the experiment's setting). Search "
              f"time only (frequency set built, minimal tables found), medians of {args.runs} fresh processes. "
              "Baseline: the same search scoring every candidate by IPF and checking it by brute force. Revision "
              f"{args.rev}: the greedy of that revision (before the removal moves), its own code in a temporary git "
              "worktree, same run.", "",
              "| start table | moves | KL | collections scored | l-diversity checks | median s | baseline median s "
              f"| {args.rev} median s |",
              "| - | - | - | - | - | - | - | - |"]
    for i, t in enumerate(runs["closed"][0]["tables"]):
        ours = statistics.median(r["tables"][i]["seconds"] for r in runs["closed"])
        base = statistics.median(r["tables"][i]["seconds"] for r in runs["baseline"])
        old = statistics.median(r["tables"][i]["seconds"] for r in runs["old"])
        b0, o0 = runs["baseline"][0]["tables"][i], runs["old"][0]["tables"][i]
        assert abs(b0["kl"] - t["kl"]) < 1e-9, (b0, t)
        assert abs(o0["kl"] - t["kl"]) < 1e-12 and o0["steps"] == t["steps"], (o0, t)
        lines.append(f"| {t['start']} | {t['steps']} | {t['kl']:.4f} | {t['kl_evaluations']} | "
                     f"{t['privacy_checks']} | {ours:.2f} | {base:.2f} | {old:.2f} |")
    lines += ["", f"All three searches: {med['closed']:.2f} s (baseline {med['baseline']:.2f} s, "
              f"{med['baseline'] / med['closed']:.1f}x; revision {args.rev} {med['old']:.2f} s, ratio "
              f"{args.rev} / ours {med['old'] / med['closed']:.2f}); the baseline and the earlier revision reach "
              "the same collections (asserted)."]
    w = runs["walk"][0]
    lines += ["", "## The new search: random walks with removal moves (the paper's OPT)", "",
              f"{w['walks']} seeded walks of {w['steps']} proposed moves each (from the suppressed table and from each "
              "X+; forward and backward moves of Sec. 5.2; each walk's best polished by the greedy), the setting of "
              f"the marginals experiment. Time of the walks only (the greedy X+ before them not counted), median of "
              f"{args.runs} fresh processes: {med['walk']:.2f} s (the three greedy searches: {med['closed']:.2f} s). "
              f"OPT KL {w['kl']:.4f}; {w['accepted']:,} moves accepted of {w['proposals']:,} proposed, "
              f"{w['removals']:,} of them removals; {w['kl_evaluations']:,} collections scored, "
              f"{w['privacy_checks']:,} l-diversity checks."]
    t8 = runs["closed8"][0]["tables"][0]
    lines += ["", f"With all 8 quasi-identifiers (age, sex, race, marital status, education, native country, work "
              f"class, salary), from the minimal table with the smallest KL ({t8['start']}): {t8['steps']} moves, KL "
              f"{t8['kl']:.4f}, {t8['kl_evaluations']} collections scored, {t8['privacy_checks']} l-diversity checks, "
              f"median {statistics.median(r['tables'][0]['seconds'] for r in runs['closed8']):.2f} s (no baseline: "
              "its dense reconstructions may not fit in memory at this width)."]
    worst_score = max(r["max_s"] for r in score)
    worst_search = max(max(r["total_s"] for r in runs["closed"]), max(r["total_s"] for r in runs["closed8"]))
    lines += ["", "## Against the issue's targets", "",
              f"- scoring and privacy-checking five marginals: at most {worst_score:.2f} s of every repetition "
              f"(target: under 2 s): {'met' if worst_score < 2 else 'NOT met'};",
              f"- the greedy search: at most {worst_search:.2f} s for the three 4-QI searches together or the 8-QI one "
              f"(target: under 1 minute): {'met' if worst_search < 60 else 'NOT met'}.", "",
              "Where the baseline wins: on the 4-QI collections the whole reconstruction at the finest released levels "
              f"has only {score[0]['cells']:,} non-sensitive cells x 14 values, so a dense numpy array (IPF, brute force) is cheaper than the closed form's "
              "SQL statement and Algorithm 1's joins and pruning (non-negative least squares per group). With 14 "
              "sensitive values few groups are inside the cone of the others, so pruning removes little (compare the "
              "groups checked with the reconstruction's non-sensitive cells, which the brute force checks); Algorithm 1 then does about the "
              "work of the brute force, in smaller steps. The dense baseline grows with the product of the released "
              "attributes' label counts: at level 0 over 8 attributes that is 33 million cells (over the 20 million "
              "we allow in memory) and it cannot run, while the closed form and Algorithm 1 only see the marginals "
              "(there Proposition 6.2 settles the check at once). In the search the closed form wins because each candidate collection's KL is "
              "summed from per-marginal aggregates that are computed once and cached.", "",
              f"Load average (1 min) before / after: {load_before} / {_load()}; the machine is shared (2 cores), so "
              "absolute times vary between runs; ratios come from the same run."]
    write_results(lines, args.out)


def _load() -> str:
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
