"""`sqlanon experiments`: run the experiments and write the report folder (see the package docstring)."""
from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path

from . import experiments
from .common import Context, machine, machine_text
from .report import write_json, write_text

EXPERIMENTS = experiments()

__all__ = ["EXPERIMENTS", "run_experiments", "command_line"]


def command_line(names=(), out="docs/experiments", sample_rows=None, landsend_rows=None, repeat=3,
                 landsend_timeout=None) -> str:
    """The `sqlanon experiments` command that reproduces a report with these options."""
    parts = ["sqlanon", "experiments", *names, "--out", str(out)]
    if sample_rows is not None:
        parts += ["--sample-rows", str(sample_rows)]
    if landsend_rows is not None:
        parts += ["--landsend-rows", str(landsend_rows)]
    if repeat != 3:
        parts += ["--repeat", str(repeat)]
    if landsend_timeout is not None:
        parts += ["--landsend-timeout", f"{landsend_timeout:g}"]
    return " ".join(parts)


def run_experiments(names=(), out: str | Path = "docs/experiments", sample_rows: int | None = None,
                    landsend_rows: int | None = None, repeat: int = 3, landsend_timeout: float | None = None,
                    log=None, plots: bool = True) -> dict:
    """Run the named experiments (all when none), write the report folder, return every number.

    When only some experiments run and the folder already holds a `results.json` written with the same
    options, the others keep their numbers from it: the report is re-rendered from both, and says
    which experiments were rerun, when, and by which command (`updates`)."""
    names = list(names) or list(EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment {unknown[0]!r}; known: {', '.join(EXPERIMENTS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    command = command_line(names if len(names) < len(EXPERIMENTS) else (), out, sample_rows, landsend_rows, repeat,
                           landsend_timeout)
    ctx = Context(out, sample_rows=sample_rows, landsend_rows=landsend_rows, repeat=repeat, log=log)
    if landsend_timeout is not None:
        ctx.landsend_timeout = landsend_timeout
    t0 = time.perf_counter()
    results, timings, figures = {}, {}, {}
    try:
        for name in names:
            t = time.perf_counter()
            results[name] = EXPERIMENTS[name].run(ctx)
            timings[name] = time.perf_counter() - t
            ctx.close()          # a fresh connection (and Adult tables) for the next experiment
            if plots:
                figures[name] = EXPERIMENTS[name].plots(results[name], out)
    finally:
        ctx.close()
    total = time.perf_counter() - t0
    data = {"command": command, "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(), "options": {"sample_rows": sample_rows, "landsend_rows": landsend_rows,
                                              "repeat": repeat, "landsend_timeout_s": ctx.landsend_timeout},
            "adult_tables": ctx.tables, "seconds": {**timings, "total": total}, "figures": figures,
            "experiments": results}
    if len(names) < len(EXPERIMENTS):
        data = merge_previous(out / "results.json", data)
    write_json(out / "results.json", data)
    write_text(out / "report.md", render(data))
    return data


def merge_previous(path: Path, data: dict) -> dict:
    """`data` (a run of some experiments) merged into the results already at `path` when they were
    written with the same options; `data` as it is otherwise."""
    try:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return data
    if old.get("options") != data["options"] or not isinstance(old.get("experiments"), dict):
        return data
    ran = list(data["experiments"])
    # earlier partial runs, less what this one reran
    earlier = [{**u, "experiments": [n for n in u["experiments"] if n not in ran]} for u in old.get("updates", [])]
    earlier = [u for u in earlier if u["experiments"]]
    experiments = {n: data["experiments"][n] if n in ran else old["experiments"][n]
                   for n in EXPERIMENTS if n in ran or n in old["experiments"]}
    seconds = {n: data["seconds"][n] if n in ran else old.get("seconds", {}).get(n, 0.0) for n in experiments}
    seconds["total"] = sum(seconds.values())
    merged = {**old, "experiments": experiments, "seconds": seconds,
              "figures": {n: data["figures"].get(n, []) if n in ran else old.get("figures", {}).get(n, [])
                          for n in experiments},
              "updates": earlier + [{"experiments": ran, "command": data["command"],
                                     "generated": data["generated"], "machine": data["machine"]}]}
    return merged


def render(data: dict) -> str:
    m = data["machine"]
    lines = [f"`{data['command']}`", "",
             "# sqlanon: the papers' experiments, reproduced", "",
             f"Written by the command on the first line ({data['generated']}; {machine_text(m)}). Every number "
             "below is in `results.json` beside this file; the plots are the PNG files here. The numbers come from "
             "the same code the CLI runs (`sqlanon.experiments`, over the engine's `Anonymization` and "
             "`sqlanon.attacks`).", "",
             *[line for u in data.get("updates", []) for line in (
                 f"Rerun since: {', '.join(u['experiments'])} on {u['generated']} (`{u['command']}`; "
                 f"{machine_text(u['machine'])}); the other sections are from the run above.", "")],
             "Run times: " + ", ".join(f"{n} {s:.1f} s" for n, s in data["seconds"].items() if n != "total")
             + f"; total {data['seconds']['total']:.1f} s.", ""]
    opts = data["options"]
    if opts.get("sample_rows"):
        lines += [f"**This is a smoke run on a seeded sample of {opts['sample_rows']:,} Adult rows**: numbers are not "
                  "comparable with the papers'.", ""]
    lines += ["Where a number differs from a paper's, the section says so beside it and explains why. The "
              "papers' Adult hierarchies were never published in full (only domain sizes and heights, TKDD "
              "Figure 7); ours are documented in `datasets/adult/README.md` and were not tuned toward the papers' "
              "numbers.", ""]
    lines += ["Contents: " + ", ".join(f"[{EXPERIMENTS[n].TITLE}](#{n})" for n in data["experiments"]), ""]
    for name, res in data["experiments"].items():
        mod = EXPERIMENTS[name]
        lines += [f'<a id="{name}"></a>', "", f"## {mod.TITLE}", "", mod.markdown(res).rstrip(), ""]
        for fig in data["figures"].get(name, []):
            lines += [f"![{name}]({fig})", ""]
    return "\n".join(lines)
