"""Click commands of sqlanon.marginals, registered on the `sqlanon` group by sqlanon.cli."""
from __future__ import annotations

COMMANDS: list = []
