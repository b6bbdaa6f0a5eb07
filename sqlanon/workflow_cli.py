"""Click commands of the release workflow (report, hierarchy authoring), registered by sqlanon.cli."""
from __future__ import annotations

COMMANDS: list = []
