"""Click commands for attacks and experiments, registered on the `sqlanon` group by sqlanon.cli."""
from __future__ import annotations

COMMANDS: list = []
