"""The release report: one self-contained HTML page about a release (`sqlanon report`, `run.report()`).

It shows the policy; the chosen lattice node and why (its utility metrics against every other
minimal node: the policy's metric picks the smallest, ties broken by height, then by levels, as in
`Anonymization.choose`); a picture of the lattice with the satisfying, minimal and chosen nodes
marked; the minimal nodes' levels per attribute; the class-size histogram; the re-identification risk
before and after (`sqlanon.risk.report_section`); each privacy model's
required and achieved values; the homogeneity and similarity attacks on the release (TKDD Section
3.1; Li et al., ICDE 2007, Section 3; see `sqlanon.attacks`); and the utility metrics.

Everything is recomputed in the database from the policy (`applying.report_from_manifest` reloads the
manifest's policy, hierarchies and chosen levels): the lattice search, one GROUP BY per node for class
sizes and sensitive counts, the attacks. Python only draws what comes back (per-class sizes, per-node
flags), never the rows.

The page is self-contained: inline CSS and SVG, no script, no font or image from anywhere, and a
Content-Security-Policy that forbids the browser to fetch anything (a page that tried would log an
error, which the Chromium test looks for).

The lattice picture: up to `HASSE_MAX_NODES` nodes it is the Hasse diagram (every node, every edge
to its direct generalizations, the most general node on top). Larger lattices (Adult's 8
quasi-identifiers: 4,320 nodes) are drawn as nodes by level: one band per generalization height, a
square per node (not satisfying, then minimal, then the other satisfying nodes, each group in
lexicographic order), minimal nodes circled and the chosen one marked; edges are left out since they
would be unreadable. Beside it, a parallel-coordinates chart gives each minimal node's level on each
attribute.

`external=True` leaves out what reveals small cells (a cell: a number of rows, or of persons with an
entity key, below `min_cell`, default 10): every such count is printed as "< min_cell" (the smallest
class size, the rows an attack exposes and its share of the release, exposed rows per disclosed
value, suppressed rows, the rows per histogram bin); the histogram's bins below `min_cell` are merged
into one; the attacks' example blocks (labels, sizes and disclosed values) are left out; and when
fewer than `min_cell` rows were suppressed, the source's row count (and the suppression budget in
rows) and discernibility (of every node, so the best one's value cannot stand in for the chosen one's)
are withheld too, since either, with the release's own row count, gives the number of suppressed
rows; so are the risk section's figures of the source that would give its row count (its average risk, its
rows at risk, its rows and classes per risk band: a band of one class size gives its rows, and their bars).
A median class size below `min_cell` is masked too. Where a table's bands (risk bands, histogram bins) have a
total printed elsewhere and one band's rows are a small cell, every band holding rows is masked with its classes
(the total less the others gave the small one; a band of one class size gives its rows by its classes), and the
risk bars of that side are drawn alike, with no counts in their tooltips; with the source's rows withheld, so are
its classes and sample uniques (all unique, they equal its rows), and so is a view release's live source size.
Risk bands under `min_cell` are merged into one, as the histogram's bins are. With a released class under
`min_cell`, the largest class, the mean class size and discernibility are withheld (with the class count or the
total, two classes give the smallest). Bounds stay derivable (the policy's k with a band's classes and rows).
Other counts of classes (not of rows), the lattice, the privacy values other than k, and the other metrics of
nodes are kept.
"""
from __future__ import annotations

import html
import math
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
import numpy as np
import yaml
from markupsafe import Markup

from .attacks import release_attacks
from .errors import PolicyError
from .lattice import direct_generalizations
from .metrics import METRICS, is_monotone
from .risk.report_section import risk_context, risk_svg, top_risk
from .version import __version__
from .views import view_release_coverage

if TYPE_CHECKING:
    from .anonymizer import Anonymization, Candidate

MIN_CELL = 10
HASSE_MAX_NODES = 300
MAX_MINIMAL_ROWS = 200      # rows of the minimal-nodes table (the best by the policy's metric)

COLORS = {"unsat": "#d4d4d4", "sat": "#9fd38a", "minimal": "#1b7837", "chosen": "#d7301f"}
METRIC_TEXT = {
    "height": "generalization height: the sum of the node's levels",
    "avg_class_size": "average class size: released rows / classes",
    "discernibility": "discernibility: the sum of squared class sizes, plus |D| for every suppressed row",
    "kl_divergence": "KL-divergence between the original's distribution over Q x S and the release's "
                     "(TKDD Section 6)",
}


# --------------------------------------------------------------------------------------------------
# numbers, and which of them are small cells

def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if not math.isfinite(x):
            return str(x)
        if x.is_integer() and abs(x) < 1e15:
            return f"{int(x):,}"
        return f"{x:,.4f}".rstrip("0").rstrip(".") if abs(x) >= 1e-3 else f"{x:.3g}"
    return str(x)


@dataclass
class Cells:
    """How counts of rows (persons) are printed: exactly, or, in an external report, hidden below min_cell."""

    external: bool
    min_cell: int

    def hidden(self, n) -> bool:
        return self.external and n is not None and 0 < int(n) < self.min_cell

    def _masked(self) -> Markup:
        return Markup('<span class="count masked" title="fewer than {0}: not shown in an external report">'
                      '&lt; {0}</span>').format(self.min_cell)

    def count(self, n) -> Markup:
        if self.hidden(n):
            return self._masked()
        return Markup('<span class="count" data-count="{0}">{1}</span>').format(int(n), _fmt(int(n)))

    def value(self, x) -> Markup | str:
        """A statistic of counts (a median class size, at least 1): masked like a count when it is a small cell."""
        return self._masked() if self.hidden(x) else _fmt(x)

    def share(self, n, total) -> str:
        if self.hidden(n) or not total:
            # a bound, never above 100 % (a table of fewer rows than min_cell printed "< 1.7e+02 %")
            return "-" if not total else f"< {min(100.0, 100 * self.min_cell / total):.2f} %"
        return f"{100 * n / total:.2f} %"

    def classes(self, n, rows) -> Markup:
        """A number of classes, masked in an external report where the rows they hold are a small cell: with a
        band of one class size, or beside an average risk (classes / rows), it gives those rows away."""
        return self._masked() if self.hidden(rows) or self.hidden(n) else self.count(n)

    def withheld(self) -> Markup:
        """A figure left out of an external report because, with others printed, it gives a small cell."""
        return Markup('<span class="count masked" title="withheld: with the other figures it would give a count '
                      'under {0}">withheld</span>').format(self.min_cell)

    def bands(self, pairs) -> list[tuple[Markup, Markup]]:
        """(classes, rows) per band of a table whose total is printed elsewhere, as printed. In an external report,
        when one band's rows are a small cell every band holding rows is masked, its classes too: the total less
        the other bands gave the small one, and a band of one class size gives its rows by its classes."""
        pairs = [(int(c), int(r)) for c, r in pairs]
        if self.masks_bands(r for _, r in pairs):
            return [(self._masked(), self._masked()) if r else (self.count(0), self.count(0)) for _, r in pairs]
        return [(Markup(f"{c:,}"), self.count(r)) for c, r in pairs]

    def masks_bands(self, rows) -> bool:
        """Whether `bands` masks these bands' rows."""
        return any(self.hidden(r) for r in rows)


# --------------------------------------------------------------------------------------------------
# the data of a report

@dataclass
class ReportOptions:
    external: bool = False
    min_cell: int = MIN_CELL
    threshold: float = 0.95          # the second homogeneity attack: the top value's share of a block
    groups: object = None            # similarity attack groups (a CSV path or a mapping), else the hierarchy
    group_level: int = 1
    examples: int = 5                # exposed blocks listed per attack (internal report only)

    def check(self) -> None:
        if isinstance(self.min_cell, bool) or not isinstance(self.min_cell, int) or self.min_cell < 1:
            raise PolicyError("--min-cell", f"must be a positive integer; got {self.min_cell!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) \
                or not 0 < self.threshold <= 1:
            raise PolicyError("--threshold", f"must be a share in (0, 1], for example 0.95; got {self.threshold!r}")


def _relative(source: str, base_dir: Path) -> str:
    """A hierarchy file as the policy names it (relative to the policy's folder), a generator as it is."""
    try:
        return str(Path(source).relative_to(base_dir))
    except ValueError:
        return source


def _ensure_searched(run: Anonymization) -> None:
    """The search, the scored minimal nodes and the chosen node, whatever the run already did."""
    if run.result is None:
        run.searched()                # keeps a node chosen without searching (`use_node`, the bounded search)
        run.score_minimal()
    elif run.scored != "all":
        run.score_minimal()
    if run.chosen is None:
        run.choose()


def _ranked(run: Anonymization) -> list[Candidate]:
    metric = run.policy.utility
    return sorted(run.candidates, key=lambda c: (c.metrics[metric], c.metrics["height"], tuple(c.levels.values())))


def _node_states(run: Anonymization, chosen: tuple) -> dict[tuple, str]:
    searched = run.searched()
    minimal = set(searched.minimal)
    out = {}
    for node in run.lattice.nodes():
        out[node] = ("chosen" if node == chosen else "minimal" if node in minimal
                     else "sat" if node in searched.satisfying else "unsat")
    return out


def _histogram(sizes: np.ndarray, cells: Cells) -> list[dict]:
    """Class sizes in bins 1, 2, 5, 10, 20, 50, ...; an external report merges the bins below min_cell."""
    top = int(sizes.max()) if len(sizes) else 1
    edges = [1]
    step = 0
    while edges[-1] <= top:
        edges.append((1, 2, 5)[(step + 1) % 3] * 10 ** ((step + 1) // 3))
        step += 1
    if cells.external:
        edges = [1, cells.min_cell] + [e for e in edges if e > cells.min_cell]
    bins = []
    for lo, hi in zip(edges, edges[1:]):
        inside = sizes[(sizes >= lo) & (sizes < hi)]
        label = (f"< {hi}" if cells.external and lo == 1 and hi == cells.min_cell
                 else str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}")
        bins.append({"label": label, "lo": lo, "hi": hi, "classes": int(len(inside)), "rows": int(inside.sum())})
    while len(bins) > 1 and bins[-1]["classes"] == 0:
        bins.pop()
    while len(bins) > 1 and bins[0]["classes"] == 0 and not (cells.external and bins[0]["lo"] == 1):
        bins.pop(0)
    return bins


def _models(run: Anonymization, result) -> list[dict]:
    """Each privacy model of the policy, what it requires and what the released classes achieve."""
    names = [s.name for s in run.fs.sensitives]
    counts = run.fs.node_counts(result.levels, sensitive=names)
    keep = result.ok if result.suppressed_rows else np.ones(len(counts.sizes), dtype=bool)
    first = names[0] if names else ""
    out = []
    for c in run.criteria:
        if getattr(c, "multi_attribute", False):
            achieved = {}
        elif c.needs_sensitive:      # a model needing sensitive counts exists only with a sensitive attribute
            achieved = c.achieved(counts.sensitive[c.sensitive or first][keep])
        else:
            achieved = c.achieved(counts.sizes[keep][:, None])
        out.append({"model": c.describe(), "attribute": (c.sensitive or first) if c.needs_sensitive else None,
                    "achieved": achieved})
    return out


def report_context(run: Anonymization, options: ReportOptions | None = None, warnings: Sequence[str] = (),
                   manifest_path: str | None = None, view: dict | None = None) -> dict:
    """Everything the page shows, computed from the run (searching and choosing first if needed)."""
    options = options or ReportOptions()
    options.check()
    _ensure_searched(run)
    cells = Cells(options.external, options.min_cell)
    lat = run.lattice
    chosen, result = run.chosen_result()
    searched = run.searched()
    unit = "persons" if run.policy.entity_key else "rows"
    released = int(result.released_sizes.sum())
    hide_suppression = cells.hidden(result.suppressed_rows)
    small_classes = bool(len(result.released_sizes)) and cells.hidden(int(np.min(result.released_sizes)))
    reports = release_attacks(run, dict(chosen.levels), threshold=options.threshold, groups=options.groups,
                              level=options.group_level, examples=0 if options.external else options.examples)
    similarity = any(r.attack == "similarity" for r in reports)
    ranked = _ranked(run)
    chosen_node = lat.node(chosen.levels)
    metric = run.policy.utility
    values = [c.metrics[metric] for c in ranked]
    rank = next((i for i, c in enumerate(ranked) if lat.node(c.levels) == chosen_node), None)
    warnings = list(warnings)
    # a release above the minimal nodes is expected when the metric is not monotone (suppression, an entity
    # key: the optimum is searched over every satisfying node); with a monotone metric it means the data changed
    monotone = is_monotone(metric, run.checker.budget > 0, run.fs.entity)
    if rank is None and monotone:
        warnings.append("the chosen node is not one of the minimal satisfying nodes of the data as it is now")
    search = run.optimum.as_dict() if run.optimum is not None else None
    if not result.satisfied:
        warnings.append("the chosen node does NOT satisfy the policy on the data as it is now")
    return {
        "options": options, "cells": cells, "unit": unit, "version": __version__,
        "release": run.policy.release.name, "source": run.policy.source.label, "engine": run.backend.engine,
        "manifest": manifest_path, "warnings": warnings,
        "rows": None if hide_suppression else run.fs.rows, "released": released,
        "policy_yaml": yaml.safe_dump(run.policy.normalized(), sort_keys=False, allow_unicode=True),
        "qis": [{"name": q.name, "height": q.height, "level": chosen.levels[q.name],
                 "labels": q.hierarchy.domain_sizes()[chosen.levels[q.name]], "base_values": len(q.hierarchy.values),
                 "source": _relative(q.hierarchy.source, run.policy.base_dir)} for q in run.fs.qis],
        "chosen": chosen, "chosen_node": chosen_node, "hide_discernibility": hide_suppression or small_classes,
        # with a class under min_cell, the mean class size (rows / classes) and the largest class are withheld:
        # with the total they gave a masked total, or the smallest class (two classes: total - largest)
        "small_classes": small_classes,
        "satisfied": bool(result.satisfied),
        "metric": metric, "metric_text": METRIC_TEXT[metric], "metric_texts": METRIC_TEXT,
        "rank": rank, "ranked": ranked[:MAX_MINIMAL_ROWS], "minimal_count": len(ranked),
        "runner_up": next((c for c in ranked if lat.node(c.levels) != chosen_node), None),
        "metric_range": (min(values), max(values)) if values else (None, None),
        "lattice": {"nodes": lat.size, "evaluated": searched.evaluated, "satisfying": len(searched.satisfying),
                    "minimal": len(searched.minimal), "names": lat.names, "heights": lat.heights},
        "states": _node_states(run, chosen_node),
        "classes": result.classes, "sizes": result.released_sizes,
        "histogram": _histogram(result.released_sizes, cells),
        "models": _models(run, result), "achieved": run.achieved(result),
        "max_suppression": run.policy.max_suppression, "budget": run.checker.budget,
        "suppressed": result.suppressed_rows,
        "attacks": reports, "similarity": similarity, "monotone": monotone, "search": search,
        "risk": risk_context(run, result.released_sizes, min_cell=cells.min_cell if cells.external else None),
        "view": view or _view_coverage(run),
    }


def _view_coverage(run: Anonymization) -> dict | None:
    """A view release's rows suppressed at read time and rows with unknown values (sqlanon.views), when the
    run's database holds the view."""
    if run.policy.release.materialize != "view":
        return None
    return view_release_coverage(run.backend, run.policy, run.policy.release.name)


# --------------------------------------------------------------------------------------------------
# pictures (inline SVG)

def _svg(width: int, height: int, body: list[str], label: str) -> Markup:
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(label)}">'
                  + "".join(body) + "</svg>")


def _node_title(names, node, state) -> str:
    # the chosen node need not be minimal (a release above the minimal nodes: suppression, an entity key)
    what = {"chosen": "chosen for the release", "minimal": "minimal, satisfies", "sat": "satisfies",
            "unsat": "does not satisfy"}[state]
    return html.escape(", ".join(f"{n}={v}" for n, v in zip(names, node)) + f": {what}")


def lattice_svg(names, heights, states: dict[tuple, str]) -> Markup:
    """The Hasse diagram for small lattices, nodes by level for large ones (see the module docstring)."""
    if len(states) <= HASSE_MAX_NODES:
        return _hasse_svg(names, heights, states)
    return _levels_svg(names, states)


def _by_height(states) -> dict[int, list[tuple]]:
    rows: dict[int, list[tuple]] = {}
    for node in sorted(states):
        rows.setdefault(sum(node), []).append(node)
    return rows


def _hasse_svg(names, heights, states) -> Markup:
    rows = _by_height(states)
    top = max(rows)
    width, gap_y, margin = 960, 56, 30
    labels = len(states) <= 40
    height = margin * 2 + top * gap_y + (14 if labels else 0)
    pos = {}
    for h, nodes in rows.items():
        step = min(90 if labels else 40, (width - 2 * margin) / max(len(nodes), 1))
        for i, node in enumerate(nodes):
            pos[node] = (width / 2 + (i - (len(nodes) - 1) / 2) * step, margin + (top - h) * gap_y)
    body = ['<g class="edges" stroke="#b0b0b0" stroke-width="1">']
    for node, (x, y) in pos.items():
        for up in direct_generalizations(node, heights):
            ux, uy = pos[up]
            body.append(f'<line class="edge" x1="{x:.1f}" y1="{y:.1f}" x2="{ux:.1f}" y2="{uy:.1f}"/>')
    body.append("</g>")
    for node, (x, y) in pos.items():
        state = states[node]
        r = {"chosen": 9, "minimal": 7}.get(state, 5)
        stroke = ' stroke="#000" stroke-width="2"' if state == "chosen" else ""
        body.append(f'<circle class="node {state}" cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{COLORS[state]}"{stroke}>'
                    f'<title>{_node_title(names, node, state)}</title></circle>')
        if labels:
            body.append(f'<text x="{x:.1f}" y="{y + r + 12:.1f}" text-anchor="middle" class="nodelabel">'
                        f'{",".join(map(str, node))}</text>')
    return _svg(width, int(height), body, "lattice: Hasse diagram")


def _levels_svg(names, states) -> Markup:
    order = {"unsat": 0, "minimal": 1, "chosen": 1, "sat": 2}
    rows = _by_height(states)
    cell, per_row, left, band_gap = 6, 150, 150, 5
    width = left + per_row * cell + 120
    paths: dict[str, list[str]] = {s: [] for s in COLORS}
    marks, texts = [], []
    y = 10
    for h in sorted(rows, reverse=True):           # the most general node on top
        nodes = sorted(rows[h], key=lambda n: (order[states[n]], n))
        n_rows = math.ceil(len(nodes) / per_row)
        sat = sum(states[n] != "unsat" for n in nodes)
        band = max(n_rows * cell, 12)                 # room for the band's text
        mid = y + band / 2 + 4
        texts.append(f'<text x="{left - 8}" y="{mid:.1f}" text-anchor="end" class="axis">height {h}: '
                     f'{len(nodes):,} node{"s" if len(nodes) != 1 else ""}</text>')
        texts.append(f'<text x="{left + per_row * cell + 8}" y="{mid:.1f}" class="axis">{sat:,} satisfy</text>')
        for i, node in enumerate(nodes):
            r, c = divmod(i, per_row)
            in_row = min(per_row, len(nodes) - r * per_row)
            x = left + (per_row - in_row) * cell / 2 + c * cell
            yy = y + (band - n_rows * cell) / 2 + r * cell
            paths[states[node]].append(f"M{x:.0f} {yy:.0f}h{cell - 1}v{cell - 1}h-{cell - 1}z")
            if states[node] in ("minimal", "chosen"):
                big = states[node] == "chosen"
                marks.append(f'<circle class="node {states[node]}" cx="{x + cell / 2:.1f}" cy="{yy + cell / 2:.1f}" '
                             f'r="{7 if big else 4}" fill="{COLORS[states[node]]}" stroke="#000" '
                             f'stroke-width="{1.5 if big else 0.6}"><title>{_node_title(names, node, states[node])}'
                             "</title></circle>")
        y += band + band_gap
    body = [f'<path class="nodes {s}" fill="{COLORS[s]}" d="{"".join(p)}"/>' for s, p in paths.items() if p]
    # the chosen node last, so it is drawn over its neighbours
    marks.sort(key=lambda m: 'class="node chosen"' in m)
    return _svg(width, y + 4, body + marks + texts, "lattice: nodes by generalization height")


def minimal_levels_svg(names, heights, ranked: list[Candidate], chosen_node: tuple) -> Markup:
    """Parallel coordinates: one axis per quasi-identifier (level 0 at the bottom), one line per minimal node."""
    width, height, top, bottom, left = 960, 240, 20, 50, 40
    step = (width - 2 * left) / max(len(names) - 1, 1)
    xs = [left + i * step for i in range(len(names))]

    def y(level, h):
        return top + (height - top - bottom) * (1 - (level / h if h else 0))
    body = []
    for x, name, h in zip(xs, names, heights):
        body.append(f'<line x1="{x:.1f}" y1="{y(0, h):.1f}" x2="{x:.1f}" y2="{y(h, h):.1f}" stroke="#888"/>')
        for lvl in range(h + 1):
            body.append(f'<text x="{x - 6:.1f}" y="{y(lvl, h) + 4:.1f}" text-anchor="end" class="tick">{lvl}</text>')
        body.append(f'<text x="{x:.1f}" y="{height - bottom + 22}" text-anchor="middle" class="axis">'
                    f'{html.escape(name)}</text>')
    lines = []
    for c in ranked:
        node = tuple(c.levels[n] for n in names)
        pts = " ".join(f"{x:.1f},{y(lvl, h):.1f}" for x, lvl, h in zip(xs, node, heights))
        is_chosen = node == chosen_node
        line = (f'<polyline class="{"chosen" if is_chosen else "minimal"}" points="{pts}" fill="none" '
                f'stroke="{COLORS["chosen"] if is_chosen else COLORS["minimal"]}" '
                f'stroke-width="{3.5 if is_chosen else 1.5}" stroke-opacity="{1 if is_chosen else 0.35}">'
                f'<title>{_node_title(names, node, "chosen" if is_chosen else "minimal")}</title></polyline>')
        lines.append((is_chosen, line))
    body += [line for _, line in sorted(lines, key=lambda t: t[0])]
    return _svg(width, height, body, "levels of the minimal nodes")


def metrics_svg(ranked: list[Candidate], chosen_node: tuple, names, hide: AbstractSet[str] = frozenset()) -> Markup:
    """One strip per utility metric: every minimal node a dot, the chosen node in red (smaller is better)."""
    width, row, left, right = 960, 44, 120, 190
    shown = [m for m in METRICS if m not in hide]
    body = []
    for i, m in enumerate(shown):
        y = 24 + i * row
        vals = [v for c in ranked if (v := c.metrics.get(m)) is not None]
        if not vals:
            continue
        lo, hi = min(vals), max(vals)

        def x(v, lo=lo, hi=hi):
            return left + (width - left - right) * ((v - lo) / (hi - lo) if hi > lo else 0.5)
        body.append(f'<text x="{left - 10}" y="{y + 4}" text-anchor="end" class="axis">{m}</text>')
        body.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#999"/>')
        body.append(f'<text x="{left}" y="{y + 20}" class="tick">{html.escape(_fmt(lo))}</text>')
        body.append(f'<text x="{width - right}" y="{y + 20}" text-anchor="end" class="tick">'
                    f'{html.escape(_fmt(hi))}</text>')
        chosen_dot = ""
        for c in ranked:
            v = c.metrics.get(m)
            node = tuple(c.levels[n] for n in names)
            title = html.escape(", ".join(f"{n}={lvl}" for n, lvl in zip(names, node)) + f": {m} = {_fmt(v)}")
            if node == chosen_node:
                chosen_dot = (f'<circle class="chosen" cx="{x(v):.1f}" cy="{y}" r="7" fill="{COLORS["chosen"]}" '
                              f'stroke="#000" stroke-width="1.5"><title>{title} (chosen)</title></circle>'
                              f'<text x="{width - right + 10}" y="{y + 4}" class="axis">chosen: '
                              f'{html.escape(_fmt(v))}</text>')
            else:
                body.append(f'<circle class="minimal" cx="{x(v):.1f}" cy="{y}" r="5" fill="{COLORS["minimal"]}" '
                            f'fill-opacity="0.45"><title>{title}</title></circle>')
        body.append(chosen_dot)
    return _svg(width, 24 + len(shown) * row, body, "utility metrics of the minimal nodes")


def histogram_svg(bins: list[dict], unit: str) -> Markup:
    width, height, bottom, top = 960, 260, 50, 20
    left: float = 60
    n = len(bins)
    bar = min(110, (width - left - 20) / max(n, 1))
    left += ((width - left - 20) - bar * n) / 2          # a few bins stay narrow, centred
    peak = max((b["classes"] for b in bins), default=1) or 1
    body = [f'<line x1="{left:.1f}" y1="{height - bottom}" x2="{left + bar * n:.1f}" y2="{height - bottom}" '
            'stroke="#666"/>',
            f'<text x="{left - 12:.0f}" y="{(height - bottom) / 2:.0f}" class="axis" transform="rotate(-90 '
            f'{left - 12:.0f} {(height - bottom) / 2:.0f})" text-anchor="middle">classes</text>',
            f'<text x="{left + bar * n / 2:.0f}" y="{height - 8}" class="axis" text-anchor="middle">'
            f'class size ({unit})</text>']
    for i, b in enumerate(bins):
        h = (height - bottom - top) * b["classes"] / peak
        x = left + i * bar
        body.append(f'<rect class="bar" x="{x + 3:.1f}" y="{height - bottom - h:.1f}" width="{bar - 6:.1f}" '
                    f'height="{h:.1f}" fill="#4575b4"><title>{b["classes"]:,} classes of size '
                    f'{html.escape(b["label"])}</title></rect>')
        body.append(f'<text x="{x + bar / 2:.1f}" y="{height - bottom - h - 4:.1f}" text-anchor="middle" '
                    f'class="tick">{b["classes"]:,}</text>')
        body.append(f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 16}" text-anchor="middle" class="tick">'
                    f'{html.escape(b["label"])}</text>')
    return _svg(width, height, body, "class-size histogram")


# --------------------------------------------------------------------------------------------------
# the page

# the page: sqlanon/html_templates/report.html (and risk_section.html, which it includes), shipped in the wheel
PAGES = jinja2.Environment(loader=jinja2.PackageLoader("sqlanon", "html_templates"), autoescape=True,
                           trim_blocks=True, lstrip_blocks=True)


def _attack_name(r) -> str:
    if r.attack == "similarity":
        return "similarity (one semantic group)"
    return "homogeneity (all equal)" if r.threshold >= 1 else f"homogeneity (top value >= {r.threshold * 100:g} %)"


def render(context: dict) -> str:
    ctx = context
    lat = ctx["lattice"]
    names, heights = lat["names"], lat["heights"]
    ranked = ctx["ranked"]
    hide = {"discernibility"} if ctx["hide_discernibility"] else set()
    if ctx.get("small_classes"):
        hide.add("avg_class_size")
    all_values = {m: [c.metrics[m] for c in ranked] for m in METRICS}
    return PAGES.get_template("report.html").render(
        **ctx, fmt=_fmt, colors=COLORS, metric_names=[m for m in METRICS if m not in hide],
        hasse=len(ctx["states"]) <= HASSE_MAX_NODES,
        node_of=lambda c: tuple(c.levels[n] for n in names), attack_name=_attack_name,
        median=float(np.median(ctx["sizes"])) if len(ctx["sizes"]) else None,
        best=lambda m: min(all_values[m], default=None),
        worst=lambda m: max(all_values[m], default=None),
        metrics_svg=metrics_svg(ranked, ctx["chosen_node"], names, hide),
        lattice_svg=lattice_svg(names, heights, ctx["states"]),
        levels_svg=minimal_levels_svg(names, heights, ranked, ctx["chosen_node"]),
        histogram_svg=histogram_svg(ctx["histogram"], ctx["unit"]),
        histogram_cells=ctx["cells"].bands([(b["classes"], b["rows"]) for b in ctx["histogram"]]),
        disclosed_cells=[ctx["cells"].bands([(0, n) for n in r.by_disclosed.values()]) for r in ctx["attacks"]],
        risk_band_cells={side: ctx["cells"].bands([(b[side]["classes"], b[side]["rows"]) for b in ctx["risk"]["bands"]])
                         for side in ("before", "after")},
        risk_svg=risk_svg(ctx["risk"]["bands"], ctx["unit"], source=ctx["rows"] is not None, cells=ctx["cells"]),
        pct=lambda x: f"{100 * x:.2f} %",
        top_risk=lambda x: top_risk(ctx["cells"], x))


REPORT_TITLE = b"<title>sqlanon release report: "


def is_report(path: Path) -> bool:
    """An HTML file sqlanon wrote as a release report (its title, in the first 4 KB)."""
    try:
        with open(path, "rb") as f:
            return REPORT_TITLE in f.read(4096)
    except OSError:
        return False


def check_report_target(path, protected: dict[Path, str], force: bool = False,
                        way_out: str = "or pass --force") -> None:
    """Refuse (ReleaseRefused, exit 2) to write a report over a protected file (the source, the policy, a
    hierarchy file, the database, the manifest: never, even with `force`), over a sqlanon manifest, or over an
    existing file that is not an earlier sqlanon report unless `force`. `--out r.duckdb` replaced the database."""
    from .catalog import ReleaseRefused, is_manifest
    p = Path(path).resolve()
    if p in protected:
        raise ReleaseRefused(f"refusing to write the report {path}: it is {protected[p]}; choose another path")
    if not p.is_file() or is_report(p):
        return
    if is_manifest(p):
        raise ReleaseRefused(f"refusing to overwrite {path} with the report: it is a sqlanon manifest; choose another "
                             "path")
    if _is_policy(p):       # a report from a manifest does not know its policy's path: known by its content
        raise ReleaseRefused(f"refusing to overwrite {path} with the report: it is a sqlanon policy; choose another "
                             "path")
    if not force:
        raise ReleaseRefused(f"refusing to overwrite {path} with the report: it is not a sqlanon report; choose "
                             f"another path, remove it, {way_out}")


def _is_policy(path: Path) -> bool:
    """Whether a file reads as a sqlanon policy: a small YAML (or JSON) mapping with `source` and
    `quasi_identifiers`."""
    try:
        if path.stat().st_size > 1024 * 1024:
            return False
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and "source" in data and "quasi_identifiers" in data


def _write_atomically(path: Path, text: str) -> Path:
    path = Path(path)
    if path.is_dir():
        raise PolicyError("--out", f"{path} is a folder; give a file name ending in .html")
    if not path.parent.exists():
        raise PolicyError("--out", f"folder {path.parent} does not exist")
    from .files import temporary_file
    try:
        tmp = temporary_file(path)
    except OSError as e:
        raise PolicyError("--out", f"cannot write {path}: {e.strerror}") from None
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise PolicyError("--out", f"cannot write {path}: {e.strerror}") from None
    return path


def write_report(run: Anonymization, path, external: bool = False, warnings: Sequence[str] = (),
                 manifest_path: str | None = None, view: dict | None = None, force: bool = False,
                 protected: dict[Path, str] | None = None, **options) -> Path:
    """Write the report of `run`'s chosen node (searching and choosing first if needed) to `path`: never over
    the run's source, policy, hierarchy files or database, the manifest (`protected`, added to those) or a
    file that is not an earlier report unless `force` (`check_report_target`)."""
    from .catalog import protected_files
    check_report_target(path, {**protected_files(run.policy, run.backend), **(protected or {})}, force)
    context = report_context(run, ReportOptions(external=external, **options), warnings, manifest_path, view)
    return _write_atomically(Path(path), render(context))
