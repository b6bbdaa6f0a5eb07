"""Progress on a terminal while the lattice is searched: a bar of the nodes evaluated out of the lattice,
the level, the rate, the elapsed time and an estimate of the time left (drawn by rich).

The estimate: with `decided` (lattice nodes whose fate is settled: evaluated, inferred or pruned), the
time per decided node so far times the nodes still open; with `left_s`, a budget's remaining time (the
heuristic search). It is rough: later levels of the lattice cost more per node than early ones.

Written to stderr, only when it is a terminal and not silenced with -q (`Progress(enabled=False)`).
rich is imported the first time a bar is drawn, so `import sqlanon.cli` and a quiet run never load it.
"""
from __future__ import annotations

import sys
import time
from typing import Any, TextIO

REFRESH_S = 0.1      # at most ten redraws a second: the search calls update() once per chunk of nodes


class Progress:
    """`enabled=None`: on when `stream` is a terminal; `enabled=True` draws on any stream (tests)."""

    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.enabled = (self.stream.isatty() if enabled is None else enabled)
        self.start = time.perf_counter()
        self._last = 0.0
        self._bar: Any = None          # the rich Progress while a bar is on screen
        self._task: Any = None
        self._console: Any = None

    def _console_for_stream(self) -> Any:
        if self._console is None:
            from rich.console import Console
            tty = self.stream.isatty()
            # a stream forced on (not a terminal) gets the terminal's drawing and a wide line, so the
            # whole line is written out rather than cut to 80 columns
            self._console = Console(file=self.stream, force_terminal=True, width=None if tty else 160,
                                    highlight=False)
        return self._console

    def _ensure_bar(self) -> bool:
        """Make the bar if none is shown; True when it still has to be started (after its first update)."""
        if self._bar is not None:
            return False
        from rich.progress import BarColumn, TextColumn
        from rich.progress import Progress as RichProgress
        self._bar = RichProgress(
            TextColumn("sqlanon: lattice level {task.fields[level]}, {task.fields[counted]} nodes evaluated"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[rate]}, {task.fields[elapsed]}{task.fields[left]}"),
            console=self._console_for_stream(), auto_refresh=False, transient=False)
        self._task = self._bar.add_task("lattice", total=None, level=0, counted="", rate="", elapsed="",
                                        left="")
        return True

    def update(self, level: int, evaluated: int, total: int | None = None, force: bool = False,
               decided: int | None = None, left_s: float | None = None) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < REFRESH_S:
            return
        self._last = now
        elapsed = now - self.start
        if left_s is None and decided and total and decided < total:
            left_s = elapsed / decided * (total - decided)
        new = self._ensure_bar()
        self._bar.update(
            self._task, completed=evaluated, total=total or None, level=level,
            counted=f"{evaluated:,} of {total:,}" if total else f"{evaluated:,}",
            rate=f"{evaluated / elapsed:,.0f}/s" if elapsed > 0 else "",
            elapsed=f"{elapsed:.1f} s", left=f", about {left_s:.0f} s left" if left_s is not None else "")
        if new:
            self._bar.start()      # draws the first state
        else:
            self._bar.refresh()

    def message(self, text: str) -> None:
        if self.enabled:
            self.done()
            self._console_for_stream().print(f"sqlanon: {text}", markup=False, highlight=False)

    def done(self) -> None:
        """Leave the last state of the bar on screen and end its line."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = self._task = None


class Quiet(Progress):
    def __init__(self) -> None:
        super().__init__(enabled=False)
