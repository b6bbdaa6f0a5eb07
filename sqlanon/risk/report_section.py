"""The release report's risk section (`sqlanon.report`): re-identification risk before (the source as it
is) and after (the released classes), and a class-size risk histogram: the records per prosecutor risk
band (1/class size), before beside after.

The source's class-size histogram is one GROUP BY in the database (`sqlanon.risk.analysis.histogram`);
the release's class sizes are the chosen node's, which the report already has. The section's HTML is
the template sqlanon/html_templates/risk_section.html, included by the report's page.
"""
from __future__ import annotations

import html

import numpy as np
from markupsafe import Markup

from . import measures
from .analysis import histogram, plain_keys

# risk bands by class size: (label, smallest size, largest size or None)
BANDS = [("1 (unique)", 1, 1), ("1/2", 2, 2), ("1/5 - 1/3", 3, 5), ("1/10 - 1/6", 6, 10),
         ("1/20 - 1/11", 11, 20), ("1/100 - 1/21", 21, 100), ("< 1/100", 101, None)]


def risk_bands(sizes, classes, min_cell: int | None = None) -> list[dict]:
    """Records and classes per risk band, from a histogram (sizes, classes). With `min_cell` (an external report)
    the bands of class sizes under it are one band, as the class-size histogram merges its bins: bands of one
    class size (1, 2) gave the smallest class, k, which the report masks."""
    s = np.asarray(sizes, dtype=np.int64)
    c = np.asarray(classes, dtype=np.int64)
    out = []
    for label, lo, hi in merged_bands(min_cell):
        inside = (s >= lo) & (s <= hi if hi is not None else True)
        out.append({"label": label, "classes": int(c[inside].sum()), "rows": int((s[inside] * c[inside]).sum())})
    return out


def merged_bands(min_cell: int | None) -> list[tuple[str, int, int | None]]:
    """`BANDS`, those starting under `min_cell` merged into one (None: as they are).

    Examples:
        >>> merged_bands(10)[:2]
        [('1/10 - 1', 1, 10), ('1/20 - 1/11', 11, 20)]
    """
    if not min_cell or min_cell <= 1:
        return list(BANDS)
    low = [b for b in BANDS if b[1] < min_cell]
    rest = [b for b in BANDS if b[1] >= min_cell]
    hi = low[-1][2]
    return [(f"1/{hi} - 1" if hi is not None else "all", 1, hi)] + rest


def risk_context(run, released_sizes: np.ndarray, threshold: float = measures.DEFAULT_THRESHOLD,
                 min_cell: int | None = None) -> dict:
    """{"before": summary of the source, "after": summary of the release, "bands": [{label, before, after}]};
    `min_cell` merges the bands under it (`risk_bands`)."""
    sizes, classes = histogram(run.backend, run.source, plain_keys(run.lattice.names), run.policy.entity_key)
    after_sizes, after_classes = np.unique(np.asarray(released_sizes, dtype=np.int64), return_counts=True)
    before = measures.summary(sizes, classes, threshold)
    after = measures.summary(after_sizes, after_classes, threshold)
    bands = [{"label": b["label"], "before": b, "after": a}
             for b, a in zip(risk_bands(sizes, classes, min_cell), risk_bands(after_sizes, after_classes, min_cell))]
    return {"before": before, "after": after, "bands": bands, "threshold": threshold}


def top_risk(cells, highest: float) -> str:
    """The highest risk as a percentage; in an external report, a bound when the smallest class is a small cell."""
    if highest and cells.hidden(round(1 / highest)):
        return f"> {100 / cells.min_cell:.2f} %"
    return f"{100 * highest:.2f} %"


def risk_svg(bands: list[dict], unit: str, source: bool = True, cells=None) -> Markup:
    """Records per risk band, the source's bar beside the release's (the release's alone without `source`: an
    external report that withholds the source's row count, which the bars' common scale would give away).
    With `cells` (`sqlanon.report.Cells`) of an external report where a side's band holds fewer rows than
    `min_cell`, every band of that side holding rows is drawn as high as `min_cell` rows, with no count in its
    tooltip: exact heights and tooltips gave the small count (as its table does: `Cells.bands`)."""
    width, height, left, bottom, top = 960, 240, 60, 50, 20
    n = len(bands)
    group = (width - left - 20) / max(n, 1)
    keys = (("before", "#bdbdbd"), ("after", "#d7301f")) if source else (("after", "#d7301f"),)
    masked = {key: cells is not None and cells.masks_bands([b[key]["rows"] for b in bands]) for key, _ in keys}

    def drawn(key: str, n: int) -> int:
        return cells.min_cell if masked[key] and n else n
    peak = max([drawn(key, b[key]["rows"]) for b in bands for key, _ in keys] + [1])
    body = [f'<line x1="{left}" y1="{height - bottom}" x2="{left + group * n:.1f}" y2="{height - bottom}" '
            'stroke="#666"/>',
            (f'<text x="{left + group * n / 2:.0f}" y="{height - 8}" class="axis" text-anchor="middle">'
            f'prosecutor risk (1 / class size)</text>'),
            (f'<text x="{left - 12}" y="{(height - bottom) / 2:.0f}" class="axis" text-anchor="middle" '
            f'transform="rotate(-90 {left - 12} {(height - bottom) / 2:.0f})">{html.escape(unit)}</text>')]
    for i, b in enumerate(bands):
        x = left + i * group
        for j, (key, color) in enumerate(keys):
            h = (height - bottom - top) * drawn(key, b[key]["rows"]) / peak
            title = ("not shown in an external report" if masked[key] and b[key]["rows"] else
                     f'{b[key]["rows"]:,} {html.escape(unit)} in {b[key]["classes"]:,} classes')
            body.append(f'<rect class="riskbar {key}" x="{x + 6 + j * (group - 12) / 2:.1f}" '
                        f'y="{height - bottom - h:.1f}" '
                        f'width="{(group - 12) / 2 - 2:.1f}" height="{h:.1f}" fill="{color}"><title>{key}: '
                        f'{title}</title></rect>')
        body.append(f'<text x="{x + group / 2:.1f}" y="{height - bottom + 16}" text-anchor="middle" class="tick">'
                    f'{html.escape(b["label"])}</text>')
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
                  f'height="{height}" role="img" aria-label="risk histogram">' + "".join(body) + "</svg>")
