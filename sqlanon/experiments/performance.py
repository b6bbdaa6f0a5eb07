"""TKDD Figures 13 and 14: time to return all minimal 6-anonymous vs all entropy 6-diverse tables.

- Figure 13, Adult: sensitive occupation, quasi-identifier = the first j attributes of Figure 7
  (age, gender, race, marital status, education, native country, work class, salary class), j = 3..8.
- Figure 14, synthetic Lands End (`datasets/landsend/generate.py`, 4,591,581 rows by default):
  sensitive cost, quasi-identifier = the first j attributes of Figure 8, j = 3..7.

Each measurement is a fresh `Anonymization` (prepare: mapping tables and frequency sets, the one scan
of the data) followed by `search()` (Incognito, all minimal nodes). Adult runs in this process, the
median of `repeat` runs. Each Lands End run is a child process (`python -m
sqlanon.experiments.performance`), so its peak memory is its own; the parent kills it past a time
limit or a resident-memory cap and then skips the larger quasi-identifiers of that model (they only
cost more).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..anonymizer import Anonymization
from . import paper
from .common import ADULT_QIS, Context, adult_policy, machine, median, peak_memory_mb, reset_peak_memory
from .report import fmt, save, table

NAME = "performance"
TITLE = "Performance: all 6-anonymous vs all entropy 6-diverse tables (TKDD Figures 13 and 14)"
MODELS: dict[str, Any] = {"k-anonymity (k=6)": {"k": 6},
          "entropy l-diversity (l=6)": {"l_diversity": {"variant": "entropy", "l": 6}}}
ADULT_J = range(3, 9)
LANDSEND_J = range(3, 8)
TARGET_SECONDS = 60.0      # issue #4: the Lands End Figure 14 run with 7 attributes
TARGET_MB = 3072.0
SIMILAR_FACTOR = 10.0      # "similar running times": the two totals within a factor of 10 (one order of magnitude)


def _measure(policy: dict, connection=None, db=":memory:") -> dict:
    t0 = time.perf_counter()
    run = Anonymization(policy, connection=connection, db=None if connection is not None else db)
    try:
        t1 = time.perf_counter()
        result = run.search()
        t2 = time.perf_counter()
        return {"prepare_s": t1 - t0, "search_s": t2 - t1, "total_s": t2 - t0, "evaluated": result.evaluated,
                "nodes": run.lattice.size, "minimal": len(result.minimal), "rows": run.fs.rows}
    finally:
        if connection is None:      # close() would also close a shared connection
            run.close()


def adult(ctx: Context) -> list[dict]:
    out = []
    names = list(ADULT_QIS)
    for j in ADULT_J:
        for model, privacy in MODELS.items():
            runs = [_measure(adult_policy("adult", names[:j], privacy), connection=ctx.con)
                    for _ in range(max(1, ctx.repeat))]
            out.append({"j": j, "model": model, "repeat": len(runs),
                        **{k: median([r[k] for r in runs]) for k in ("prepare_s", "search_s", "total_s")},
                        **{k: runs[0][k] for k in ("evaluated", "nodes", "minimal", "rows")}})
        ctx.say(f"performance: Adult j = {j} done")
    return out


# --------------------------------------------------------------------------------------------------
# Lands End: one child process per measurement

def landsend_policy(parquet: Path, hierarchies: dict, j: int, privacy: dict) -> dict:
    from sqlanon.datasets.landsend.generate import QI_HEIGHTS, SENSITIVE
    qis = {c: {"hierarchy": str(hierarchies[c])} for c in list(QI_HEIGHTS)[:j]}
    return {"source": {"parquet": str(parquet), "table": "landsend"}, "quasi_identifiers": qis,
            "sensitive": [SENSITIVE], "privacy": privacy, "utility": "discernibility"}


def worker(spec: dict) -> dict:
    """One Lands End measurement in this (child) process: its own DuckDB in memory, its own peak RSS."""
    reset_peak_memory()
    out = _measure(spec["policy"], db=":memory:")
    out["peak_rss_mb"] = peak_memory_mb()
    return out


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _child(spec: dict, timeout: float, memory_mb: float) -> dict:
    """Run `worker(spec)` in a child process; kill it past `timeout` seconds or `memory_mb` resident."""
    fd, result_path = tempfile.mkstemp(prefix="sqlanon-perf-", suffix=".json")
    os.close(fd)
    try:
        return _child_run(spec, timeout, memory_mb, Path(result_path))
    finally:
        Path(result_path).unlink(missing_ok=True)


def _child_run(spec: dict, timeout: float, memory_mb: float, result_path: Path) -> dict:
    # the result goes through a file: DuckDB may draw a progress bar on the child's stdout
    err_path = result_path.with_suffix(".err")
    with open(err_path, "w") as err:     # a file, not a pipe: a chatty child must not block on a full pipe
        proc = subprocess.Popen([sys.executable, "-m", "sqlanon.experiments.performance", json.dumps(spec),
                                 str(result_path)], stdout=subprocess.DEVNULL, stderr=err)
    try:
        return _wait(proc, timeout, memory_mb, result_path, err_path)
    except BaseException:       # interrupted: do not leave the child running
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        raise
    finally:
        err_path.unlink(missing_ok=True)


def _wait(proc, timeout: float, memory_mb: float, result_path: Path, err_path: Path) -> dict:
    t0, peak, status = time.perf_counter(), 0.0, None
    while proc.poll() is None:
        peak = max(peak, _rss_mb(proc.pid))
        if peak > memory_mb:
            status = "memory"
        elif time.perf_counter() - t0 > timeout:
            status = "timeout"
        if status:
            proc.kill()
            proc.wait()
            return {"status": status, "wall_s": time.perf_counter() - t0, "peak_rss_mb": peak}
        time.sleep(0.05)
    proc.wait()
    if proc.returncode != 0:
        stderr = err_path.read_text(errors="replace")
        return {"status": "error", "error": (stderr.strip().splitlines() or ["?"])[-1],
                "wall_s": time.perf_counter() - t0}
    out = json.loads(result_path.read_text())
    out["status"] = "ok"
    out["wall_s"] = time.perf_counter() - t0
    return out


def landsend(ctx: Context) -> dict:
    from sqlanon.datasets.landsend.generate import DEFAULT_ROWS, write_parquet
    rows = ctx.landsend_rows or DEFAULT_ROWS
    out: dict[str, Any] = {"rows": rows, "seed": 0, "timeout_s": ctx.landsend_timeout,
                           "memory_cap_mb": ctx.landsend_memory_mb, "runs": []}
    with tempfile.TemporaryDirectory(prefix="sqlanon-landsend-") as d:
        t = time.perf_counter()
        info = write_parquet(Path(d) / "landsend.parquet", rows=rows, seed=0)
        out["generate_s"] = time.perf_counter() - t
        out["distinct"] = info["distinct"]
        ctx.say(f"performance: Lands End generated ({rows:,} rows) in {out['generate_s']:.1f} s")
        for model, privacy in MODELS.items():
            failed = None
            for j in LANDSEND_J:
                if failed:
                    out["runs"].append({"j": j, "model": model, "status": "skipped"})
                    continue
                spec = {"policy": landsend_policy(info["parquet"], info["hierarchies"], j, privacy)}
                r = _child(spec, ctx.landsend_timeout, ctx.landsend_memory_mb)
                r.update({"j": j, "model": model})
                out["runs"].append(r)
                ctx.say(f"performance: Lands End j = {j}, {model}: {r['status']} "
                        f"({r.get('total_s', r['wall_s']):.1f} s, {r.get('peak_rss_mb', 0):.0f} MB)")
                if r["status"] != "ok":
                    failed = j
    for r in out["runs"]:
        if r["status"] == "skipped":
            first = next(x for x in out["runs"] if x["model"] == r["model"] and x["status"] not in ("ok", "skipped"))
            r["reason"] = (f"not run: j = {first['j']} already failed ({first['status']}); a larger "
                           "quasi-identifier only costs more")
    return out


def run(ctx: Context) -> dict:
    t = time.perf_counter()
    res: dict[str, Any] = {"machine": machine(), "repeat": ctx.repeat, "adult": adult(ctx), "landsend": landsend(ctx)}
    res["seconds"] = time.perf_counter() - t
    seven = [r for r in res["landsend"]["runs"] if r["j"] == max(LANDSEND_J)]
    res["targets"] = {"landsend_j7_seconds": TARGET_SECONDS, "landsend_j7_peak_mb": TARGET_MB,
                      "met": {r["model"]: (r["status"] == "ok" and r["total_s"] < TARGET_SECONDS
                                           and r["peak_rss_mb"] < TARGET_MB) for r in seven}}
    return res


# --------------------------------------------------------------------------------------------------
# report

def markdown(res: dict) -> str:
    from .common import machine_text
    models = list(MODELS)
    rows = []
    by = {(r["j"], r["model"]): r for r in res["adult"]}
    for j in ADULT_J:
        a, b = by[(j, models[0])], by[(j, models[1])]
        rows.append([j, fmt(a["nodes"]), f"{a['evaluated']} / {b['evaluated']}", f"{a['minimal']} / {b['minimal']}",
                     f"{a['prepare_s']:.3f}", f"{a['search_s']:.3f} / {b['search_s']:.3f}",
                     f"{a['total_s']:.2f} / {b['total_s']:.2f}"])
    le = res["landsend"]
    rows14 = []
    by14 = {(r["j"], r["model"]): r for r in le["runs"]}
    for j in LANDSEND_J:
        cells: list[str | int] = [j]
        for m in models:
            r = by14[(j, m)]
            if r["status"] == "ok":
                cells += [fmt(r["nodes"]), f"{r['evaluated']}", f"{r['minimal']}", f"{r['prepare_s']:.1f}",
                          f"{r['search_s']:.1f}", f"{r['total_s']:.1f}", f"{r['peak_rss_mb']:,.0f}"]
            else:
                what = {"timeout": f"killed after {le['timeout_s']:.0f} s",
                        "memory": f"killed at {r.get('peak_rss_mb', 0):,.0f} MB resident",
                        "error": f"error: {r.get('error', '')}", "skipped": "not run"}[r["status"]]
                cells += [what, "", "", "", "", "", ""]
        rows14.append(cells)
    heads14 = ["j"] + [f"{short} {h}" for short in ("k=6", "entropy l=6")
                       for h in ("nodes", "evaluated", "minimal", "prepare s", "search s", "total s", "peak MB")]
    factor = max(max(by[(j, models[0])]["total_s"], by[(j, models[1])]["total_s"]) /
                 min(by[(j, models[0])]["total_s"], by[(j, models[1])]["total_s"]) for j in ADULT_J)
    met = res["targets"]["met"]
    target_lines = "; ".join(f"{m}: {'met' if ok else 'NOT met'}" for m, ok in met.items())
    text = [
        f"Machine: {machine_text(res['machine'])}. The paper: {paper.PERFORMANCE['machine']}.\n",
        f"**Adult (Figure 13)**: {fmt(res['adult'][0]['rows'])} rows, sensitive occupation, quasi-identifier = the "
        "first j of age, sex, race, marital_status, education, native_country, workclass, salary. Medians of "
        f"{res['repeat']} runs in one process (each a fresh `Anonymization`: prepare = mapping tables and frequency "
        "sets; search = Incognito returning every minimal node). Cells with two values: k = 6 / entropy l = 6.\n",
        table(["j", "lattice nodes", "evaluated", "minimal tables", "prepare s", "search s", "total s"], rows),
        f"\nThe paper's Figure 13 reaches about {paper.PERFORMANCE['adult_max_minutes']} minutes at j = 8 (its y "
        "axis; the plot carries no data labels). Ours takes at most "
        f"{max(r['total_s'] for r in res['adult']):.2f} s for any j and model: an in-process column store on a "
        "current CPU against Java over DB2 on a 2005 Pentium 4, so only the shape is comparable. The paper's "
        "claim: " + paper.PERFORMANCE["claim"] + ". Ours: entropy l = 6 evaluates fewer nodes than k = 6 for "
        f"{sum(by[(j, models[1])]['evaluated'] < by[(j, models[0])]['evaluated'] for j in ADULT_J)} of "
        f"{len(ADULT_J)} quasi-identifier sizes (it prunes earlier: a 6-diverse block has at least 6 rows and more), "
        "and is faster in search time for "
        f"{sum(by[(j, models[1])]['search_s'] < by[(j, models[0])]['search_s'] for j in ADULT_J)}"
        f" of {len(ADULT_J)}; each of its node checks costs more (it fetches the occupation counts of every "
        "block, where k-anonymity needs block sizes only). The totals (prepare + search) of the two models differ "
        f"by a factor of at most {factor:.1f}, so \"similar\" "
        + ("holds" if factor < SIMILAR_FACTOR else "does NOT hold here")
        + f" (rule: holds when the totals differ by less than a factor of {SIMILAR_FACTOR:g}, the same order of "
        "magnitude, for every j).\n",
        f"**Lands End (Figure 14)**: synthetic table, {fmt(le['rows'])} rows (seed {le['seed']}, generated in "
        f"{le['generate_s']:.1f} s; distinct values {', '.join(f'{c} {fmt(n)}' for c, n in le['distinct'].items())}"
        "), sensitive cost (147 buckets at full size). One child process per cell; one run each (no median); "
        f"time limit {le['timeout_s']:.0f} s and resident-memory cap {le['memory_cap_mb']:,.0f} MB per run.\n",
        table(heads14, rows14),
        f"\nTarget of issue #4 (j = 7 in under {TARGET_SECONDS:.0f} s with peak memory under {TARGET_MB:,.0f} MB): "
        f"{target_lines}. The paper's Figure 14 reaches about {paper.PERFORMANCE['landsend_max_minutes']} minutes "
        "(its y axis) on the real Lands End data, which is not public; our generator matches its schema and "
        "domain sizes (Figure 8), not its joint distribution, so the lattice pruning (and the time) differ.\n"]
    failed = [r for r in le["runs"] if r["status"] in ("timeout", "memory", "error")]
    if any(r["model"] == models[1] for r in failed) and not any(r["model"] == models[0] for r in failed):
        first = min((r for r in failed if r["model"] == models[1]), key=lambda r: r["j"])
        text.append(f"\nThe entropy runs stop at j = {first['j']} ({first['status']}; resident memory reached "
                    f"{first.get('peak_rss_mb', 0):,.0f} MB).\n")
    return "\n".join(text)


def plots(res: dict, out) -> list[str]:
    from .report import pyplot
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8, 2.8))
    for ax, rows, js, title in ((axes[0], res["adult"], ADULT_J, "Fig. 13: Adult"),
                                (axes[1], [r for r in res["landsend"]["runs"] if r["status"] == "ok"], LANDSEND_J,
                                 f"Fig. 14: Lands End ({res['landsend']['rows']:,} rows)")):
        for model in MODELS:
            pts = [(r["j"], r["total_s"]) for r in rows if r["model"] == model]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=model)
        ax.set_xticks(list(js))
        ax.set_xlabel("size of quasi-identifier")
        ax.set_ylabel("seconds (prepare + search)")
        ax.set_title(title)
        ax.legend()
    return [save(fig, out, "performance.png")]


if __name__ == "__main__":   # the child process of one Lands End measurement: SPEC_JSON RESULT_PATH
    Path(sys.argv[2]).write_text(json.dumps(worker(json.loads(sys.argv[1]))))
