"""Progress on a terminal while the lattice is searched: level, nodes evaluated, elapsed time.

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

    def update(self, level: int, evaluated: int, total: int | None = None, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        of = f"/{total}" if total else ""
        self.stream.write(f"\rsqlanon: lattice level {level}, {evaluated}{of} nodes evaluated, "
                          f"{now - self.start:.1f} s ")
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
