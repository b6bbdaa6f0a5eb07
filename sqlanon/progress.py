"""Progress on a terminal while the lattice is searched: level, nodes evaluated of the lattice, rate,
elapsed time and an estimate of the time left.

The estimate: with `decided` (lattice nodes whose fate is settled: evaluated, inferred or pruned), the
time per decided node so far times the nodes still open; with `left_s`, a budget's remaining time (the
heuristic search). It is rough: later levels of the lattice cost more per node than early ones.

Written to stderr, only when it is a terminal and not silenced with -q; one line rewritten in place.
"""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, enabled: bool | None = None, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = (self.stream.isatty() if enabled is None else enabled)
        self.start = time.perf_counter()
        self._last = 0.0
        self._shown = False

    def update(self, level: int, evaluated: int, total: int | None = None, force: bool = False,
               decided: int | None = None, left_s: float | None = None) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        elapsed = now - self.start
        of = f" of {total:,}" if total else ""
        rate = f", {evaluated / elapsed:,.0f}/s" if elapsed > 0 else ""
        if left_s is None and decided and total and decided < total:
            left_s = elapsed / decided * (total - decided)
        left = f", about {left_s:.0f} s left" if left_s is not None else ""
        self.stream.write(f"\rsqlanon: lattice level {level}, {evaluated:,}{of} nodes evaluated{rate}, "
                          f"{elapsed:.1f} s{left} ")
        self.stream.flush()
        self._shown = True

    def message(self, text: str) -> None:
        if self.enabled:
            self.done()
            self.stream.write(f"sqlanon: {text}\n")
            self.stream.flush()

    def done(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False


class Quiet(Progress):
    def __init__(self):
        super().__init__(enabled=False)
