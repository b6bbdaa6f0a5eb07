"""Small parsers shared by the CLI modules (`sqlanon.cli`, `sqlanon.experiments.cli`)."""
from __future__ import annotations

from .errors import PolicyError


def parse_node(text: str) -> dict[str, int]:
    """`age=2,sex=1` -> {"age": 2, "sex": 1}; a malformed part is a PolicyError naming `--node`."""
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise PolicyError("--node", f"expected NAME=LEVEL,NAME=LEVEL...; got {text!r}")
        k, v = part.split("=", 1)
        try:
            out[k.strip()] = int(v)
        except ValueError:
            raise PolicyError(f"--node {k.strip()}", f"level must be an integer; got {v!r}") from None
    return out
