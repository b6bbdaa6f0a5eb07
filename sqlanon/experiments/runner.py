"""`sqlanon experiments`: run the experiments and write the report folder (see the package docstring)."""
from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path
from typing import Any

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
    listed = check_report_folder(out)
    command = command_line(names if len(names) < len(EXPERIMENTS) else (), out, sample_rows, landsend_rows, repeat,
                           landsend_timeout)
    ctx = Context(out, sample_rows=sample_rows, landsend_rows=landsend_rows, repeat=repeat, log=log)
    if landsend_timeout is not None:
        ctx.landsend_timeout = landsend_timeout
    t0 = time.perf_counter()
    started = time.time()
    results, timings, figures = {}, {}, {}
    try:
        for name in names:
            t = time.perf_counter()
            results[name] = EXPERIMENTS[name].run(ctx)
            timings[name] = time.perf_counter() - t
            ctx.close()          # a fresh connection (and Adult tables) for the next experiment
            if plots:
                figures[name] = EXPERIMENTS[name].plots(results[name], out)
    except BaseException:
        _remove_new_plots(out, listed, started)
        raise
    finally:
        ctx.close()
    total = time.perf_counter() - t0
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    data: dict[str, Any] = {"command": command, "generated": generated,
            "machine": machine(), "options": {"sample_rows": sample_rows, "landsend_rows": landsend_rows,
                                              "repeat": repeat, "landsend_timeout_s": ctx.landsend_timeout},
            "adult_tables": ctx.tables, "seconds": {**timings, "total": total}, "figures": figures,
            "experiments": results}
    if len(names) < len(EXPERIMENTS):
        try:
            merged = merge_previous(out / "results.json", data)
            text = render(merged)
            data = merged
        except (KeyError, TypeError, ValueError, AttributeError):     # an earlier version's sections
            if log:
                log(f"the earlier {out / 'results.json'} does not read as this version's results; the report "
                    "holds this run's experiments only")
            text = render(data)
    else:
        text = render(data)
    try:
        write_json(out / "results.json", data)      # both files only once the report is rendered
    except BaseException:       # results.json not written: its plots would be refused as a user's next time
        _remove_new_plots(out, listed, started)
        raise
    write_text(out / "report.md", text)
    # plots the previous results listed and these do not (a run with other options replaced them): sqlanon's
    # own, which the next run would otherwise refuse as a user's files
    for name in listed - {f for files in data["figures"].values() for f in files}:
        (out / name).unlink(missing_ok=True)
    return data


def _remove_new_plots(out: Path, listed: set, started: float) -> None:
    """Plots this run wrote that no results.json lists: the next run would take them for a user's files."""
    for path in _plot_files(out):
        if path.name not in listed and path.stat().st_mtime >= started - 1:
            path.unlink(missing_ok=True)


PLOTS = ("homogeneity.png", "performance.png", "similarity.png", "maxent.png", "marginals.png", "utility_*.png")


def _is_results(path: Path) -> bool:
    """Is `path` a results.json that `sqlanon experiments` wrote (its command and its experiments)?"""
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(old, dict) and str(old.get("command", "")).startswith("sqlanon experiments")
            and isinstance(old.get("experiments"), dict))


def check_report_folder(out: Path) -> set[str]:
    """The report folder, created if missing; refused (UserError, exit 2) before any experiment runs where it
    holds a report.md, results.json or plot that `sqlanon experiments` did not write: a results.json must be one
    of its results, a report.md must begin with its command line, a plot must be one results.json lists. Returns the
    plots results.json lists."""
    from ..errors import UserError
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--out: cannot create the folder {out}: {e.strerror or e}; give another folder") from None
    results = out / "results.json"
    ours = _is_results(results)
    listed: set[str] = set()
    if ours:
        figures = json.loads(results.read_text(encoding="utf-8")).get("figures")
        listed = {f for fs in (figures.values() if isinstance(figures, dict) else []) if isinstance(fs, list)
                  for f in fs if isinstance(f, str)}
    foreign = [] if ours or not results.exists() else [results.name]
    report = out / "report.md"
    if report.exists():
        with open(report, "rb") as f:
            if not f.readline().startswith(b"`sqlanon experiments"):
                foreign.append(report.name)
    foreign += sorted(p.name for p in _plot_files(out) if p.name not in listed)
    if foreign:
        raise UserError(f"--out: {out} holds {', '.join(foreign)}, which sqlanon experiments did not write; give "
                        "another folder, or move them")
    return listed


def _plot_files(out: Path) -> list[Path]:
    return [p for pattern in PLOTS for p in out.glob(pattern)]


def merge_previous(path: Path, data: dict) -> dict:
    """`data` (a run of some experiments) merged into the results already at `path` when they were
    written with the same options; `data` as it is otherwise."""
    try:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return data
    if (not isinstance(old, dict) or old.get("options") != data["options"]
            or not isinstance(old.get("experiments"), dict) or not isinstance(old.get("machine"), dict)):
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
