"""Small helpers to write the report: Markdown tables, number formats, plots, atomic files."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..catalog import strict_json


def fmt(x, digits: int = 2, none: str = "–") -> str:
    """A number for a table: thousands separators, `digits` decimals for floats, '–' for None."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return none
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        return f"{float(x):,.{digits}f}"
    return str(x)


def table(headers: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join("-" for _ in headers) + " |"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out) + "\n"


def pair(ours, paper, digits: int = 2) -> str:
    """'ours (paper)' for a side-by-side cell."""
    return f"{fmt(ours, digits)} ({fmt(paper, digits)})"


def write_text(path: Path, text: str) -> None:
    """Write a file atomically (a temporary file beside it, then a rename)."""
    from ..files import write_atomically
    write_atomically(Path(path), text)


def write_json(path: Path, data) -> None:
    write_text(path, strict_json(data, indent=1) + "\n")


def pyplot():
    """matplotlib's pyplot with a non-interactive backend (installed with the `experiments` extra)."""
    try:
        import matplotlib
    except ImportError:   # pragma: no cover - the extra is part of the test group
        raise SystemExit("sqlanon experiments needs matplotlib: pip install 'sqlanon[experiments]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "legend.fontsize": 7, "figure.dpi": 80})
    return plt


def save(fig, out: Path, name: str) -> str:
    """Save a figure as a small PNG in `out`; returns the file name."""
    path = Path(out) / name
    import matplotlib.pyplot as plt

    from ..errors import DataError
    from ..files import temporary_file
    tmp = None
    try:
        tmp = temporary_file(path)
        fig.savefig(tmp, format="png", dpi=80, bbox_inches="tight", metadata={"Software": None})
        tmp.replace(path)
    except BaseException as e:      # a full disk: no half-written PNG left, and one line
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise DataError(f"cannot write {path}: {e.strerror or e}; choose another --out") from None
        raise
    finally:
        plt.close(fig)
    return name


# --------------------------------------------------------------------------------------------------
# verdicts: always computed from the numbers, each with its rule printed beside it

SHARE_RULE = "holds: in >= 90 % of the cases; mostly: >= 50 %; does NOT hold here: < 50 %"
SIGN_RULE = ("holds: strictly better in at least one case and worse in none; mixed: better in some, worse in "
             "others; does NOT hold here: never strictly better")


def share_verdict(holds: int, of: int) -> str:
    """The verdict on a claim about most cases, by SHARE_RULE."""
    if not of:
        return "not testable here"
    share = holds / of
    return "holds" if share >= 0.9 else ("mostly" if share >= 0.5 else "does NOT hold here")


def sign_verdict(better: int, worse: int) -> str:
    """The verdict on "A permits better tables than B", by SIGN_RULE."""
    if better and not worse:
        return "holds"
    if better:
        return "mixed"
    return "does NOT hold here"


def compare(a, b) -> int | None:
    """-1 when a is strictly better (smaller) than b, 0 when equal, 1 when worse; None (no table) is
    worse than any value; None when neither exists."""
    if a is None and b is None:
        return None
    if b is None:
        return -1
    if a is None:
        return 1
    return (a > b) - (a < b)
