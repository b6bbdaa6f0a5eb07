"""Attacks on a generalized table: what an adversary learns from the q*-blocks alone.

- Homogeneity attack (Machanavajjhala et al., TKDD 2007, Section 3.1 and Figures 9-12): a q*-block
  whose sensitive values are all equal discloses that value for everyone in it (Bob's block of four
  Cancer records in Figure 2). The 95 % variant (Figures 11, 12) counts the blocks where the most
  frequent value holds at least a share `threshold` of the rows: the adversary guesses it for everyone,
  right or wrong, so every row of such a block is exposed.
- Similarity attack (Li, Li, Venkatasubramanian, ICDE 2007, Sections 3 and 6): the values of a block
  differ but all fall in one semantic group (say, all stomach diseases, or all blue-collar
  occupations), so the group is disclosed. Groups come from a partition of the sensitive values: a
  level of the sensitive attribute's hierarchy, or a CSV file.

Every measure works on per-block counts, the same matrix the privacy models get::

    counts[b, s] = rows of q*-block b whose sensitive value has code s          shape (B, m)

and answers for all blocks at once (vectorized numpy). `homogeneity_attack` and `similarity_attack`
take an `Anonymization` and a node: the counts come from the database through
``run.fs.node_counts`` (one GROUP BY over the frequency set; no table is read into Python), the
blocks a suppression budget drops are left out (they are not released), and the result names the
exposed blocks by their generalized labels. `attack_minimal` runs an attack over every minimal
satisfying node; `summarize` gives the paper's per-table figures (affected tables, average affected
groups and tuples per table). `release_attacks` runs every attack on the chosen node and
`manifest_with_attacks` adds them to the release manifest as ``attacks`` (`sqlanon attack --manifest`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import DataError, PolicyError
from .hierarchy import load_taxonomy_csv
from .models.base import counts_matrix

ATTACKS = ("homogeneity", "similarity")
TOL = 1e-12

__all__ = ["ATTACKS", "homogeneous_blocks", "top_share", "dominant_value", "group_counts", "similar_blocks",
           "exposed_rows", "BlockExposure", "AttackReport", "homogeneity_attack", "similarity_attack",
           "attack_node", "attack_minimal", "summarize", "groups_from_hierarchy", "groups_from_csv",
           "resolve_groups", "sensitive_attribute", "check_levels", "manifest_section", "release_attacks",
           "manifest_with_attacks"]


# --------------------------------------------------------------------------------------------------
# vectorized measures over a counts matrix

def _counts(counts) -> np.ndarray:
    return counts_matrix(counts, dtype=None, check_negative=True)


def top_share(counts) -> np.ndarray:
    """Per block, the share of its rows holding its most frequent sensitive value (0 for an empty block)."""
    a = _counts(counts).astype(np.float64)
    n = a.sum(axis=1)
    top = a.max(axis=1) if a.shape[1] else np.zeros(len(a))
    return np.divide(top, n, out=np.zeros(len(a)), where=n > 0)


def dominant_value(counts) -> np.ndarray:
    """Per block, the code of its most frequent sensitive value (the smallest code on a tie)."""
    a = _counts(counts)
    return a.argmax(axis=1) if a.shape[1] else np.zeros(len(a), dtype=np.int64)


def homogeneous_blocks(counts, threshold: float = 1.0) -> np.ndarray:
    """Blocks exposed to the homogeneity attack, shape (B,) bool.

    threshold = 1.0: every row of the block has the same sensitive value (TKDD Figures 9, 10);
    threshold < 1: the most frequent value holds at least that share of the rows ("95 % homogeneous",
    Figures 11, 12: threshold 0.95). An empty block is never exposed. Exact in integers for 1.0; for a
    fraction a block exactly at the threshold counts (with a relative tolerance of 1e-12, so 19 of 20
    rows is 95 % homogeneous although 0.95 * 20 is 19.000000000000004 in floating point).
    """
    if not 0 < threshold <= 1 or (isinstance(threshold, float) and math.isnan(threshold)):
        raise ValueError(f"threshold must be in (0, 1]; got {threshold!r}")
    a = _counts(counts)
    n = a.sum(axis=1)
    top = a.max(axis=1) if a.shape[1] else np.zeros(len(a), dtype=a.dtype)
    if threshold == 1.0:
        return (n > 0) & (top == n)
    return (n > 0) & (top >= threshold * n * (1 - TOL))


def group_counts(counts, groups) -> np.ndarray:
    """Counts per semantic group, shape (B, G): groups[s] is the group code (0..G-1) of value code s."""
    a = _counts(counts)
    g = np.asarray(groups, dtype=np.int64).reshape(-1)
    if len(g) != a.shape[1]:
        raise ValueError(f"groups gives {len(g)} group codes for {a.shape[1]} sensitive values")
    if len(g) and g.min() < 0:
        raise ValueError("group codes must be >= 0")
    ngroups = int(g.max()) + 1 if len(g) else 0
    onehot = np.zeros((a.shape[1], ngroups), dtype=a.dtype)
    onehot[np.arange(len(g)), g] = 1
    return a @ onehot


def similar_blocks(counts, groups) -> np.ndarray:
    """Blocks exposed to the similarity attack, shape (B,) bool: all their rows' values in one group."""
    gc = group_counts(counts, groups)
    return (gc > 0).sum(axis=1) == 1


def exposed_rows(counts, exposed) -> int:
    """Rows in the exposed blocks."""
    a = _counts(counts)
    return int(a.sum(axis=1)[np.asarray(exposed, dtype=bool)].sum())


# --------------------------------------------------------------------------------------------------
# semantic groups of the sensitive values

def groups_from_hierarchy(domain, level: int = 1) -> tuple[np.ndarray, list[str]]:
    """Group codes of each sensitive value at `level` of the attribute's hierarchy, and group names.

    The policy gives the hierarchy (``sensitive: {occupation: {hierarchy: hierarchies/occupation.csv}}``);
    Adult's occupation splits into White-collar, Blue-collar and Service at level 1.
    """
    if domain.levels is None:
        raise PolicyError(f"sensitive.{domain.name}", "the similarity attack needs semantic groups: give the "
                          f"attribute a hierarchy ({domain.name}: {{hierarchy: FILE.csv}}) or pass a groups file")
    top = domain.levels.shape[0] - 1
    if not 1 <= level <= top:
        raise PolicyError("--group-level", f"must be from 1 to {top} for '{domain.name}'; got {level}")
    codes = np.asarray(domain.levels[level], dtype=np.int64)
    names = [f"group {c}" for c in range(int(codes.max()) + 1)]
    return codes, names


def groups_from_csv(path: str | Path, values, level: int = 1, attribute: str = "",
                    aliases: dict[str, int] | None = None) -> tuple[np.ndarray, list[str]]:
    """Group codes of each sensitive value (in `values` order) read from a CSV file, and group names.

    The file is any hierarchy file (`sqlanon.hierarchy.load_taxonomy_csv`): a wide CSV with a header, then
    one row per value, column 0 the value as in the data and column `level` its group; or an edge table
    (header ``child,parent``), whose level counts down from its root. A two-column ``value,group`` file is
    the simplest. Every value of the data must be listed, by any of its texts (`aliases`: the other texts of a
    value, -0.0 beside 0.0, with its position in `values`: `SensitiveDomain.aliases`). Groups are numbered in
    file order.
    """
    from . import files
    path = files.checked_file(path, "--groups", "groups file", files.HIERARCHY_LIMIT)
    table = load_taxonomy_csv(path, attribute or "groups", option="--groups")
    if not 1 <= level <= table.height:
        raise PolicyError("--group-level", f"groups file {path} has levels 1 to {table.height}; got {level}")
    group_of = dict(zip(table.values, table.labels[level]))
    groups = _value_groups(group_of, values, aliases, f"groups file {path}", attribute)
    used = set(groups)
    names = [g for g in dict.fromkeys(group_of.values()) if g in used]      # in file order
    return np.asarray([names.index(g) for g in groups], dtype=np.int64), names


def _value_groups(group_of: dict, values, aliases: dict[str, int] | None, where: str, attribute: str) -> list[str]:
    """The group of each of `values` in `group_of` (value text -> group), found by any text of the value (its
    own, or one of `aliases`, text -> position in `values`); every value must have one, and texts of one value
    the same one."""
    texts: list[list[str]] = [[str(v)] for v in values]
    for text, code in (aliases or {}).items():
        texts[code].append(text)
    out, missing = [], []
    for value_texts in texts:
        listed = [t for t in value_texts if t in group_of]
        if not listed:
            missing.append(value_texts[0])
            continue
        apart = [t for t in listed if str(group_of[t]) != str(group_of[listed[0]])]
        if apart:
            raise DataError(f"{where}: {listed[0]!r} and {apart[0]!r} are one value of '{attribute}' (equal in its "
                            "type) but in different groups; put them in the same group")
        out.append(str(group_of[listed[0]]))
    if missing:
        shown = ", ".join(repr(v) for v in missing[:5])
        raise DataError(f"{where}: value(s) {shown} of '{attribute}' have no group; add them")
    return out


def _named_groups(domain, codes: np.ndarray) -> list[str]:
    """Readable names for hierarchy groups: the group's own label is not kept in the domain, so list
    its members (``Craft-repair|Farming-fishing|...``) when the hierarchy gives no names."""
    out = []
    for g in range(int(codes.max()) + 1 if len(codes) else 0):
        members = [str(domain.values[s]) for s in np.flatnonzero(codes == g)]
        out.append("|".join(members[:4]) + ("|..." if len(members) > 4 else ""))
    return out


# --------------------------------------------------------------------------------------------------
# attacks on an Anonymization's node

@dataclass
class BlockExposure:
    """One exposed q*-block: its generalized quasi-identifier, its size and what it discloses."""

    block: dict[str, str]
    rows: int
    disclosed: str          # the dominant value (homogeneity) or the semantic group (similarity)
    share: float            # share of the block's rows holding it (1.0 when homogeneous or similar)

    def as_dict(self) -> dict:
        return {"block": dict(self.block), "rows": self.rows, "disclosed": self.disclosed,
                "share": round(self.share, 6)}


@dataclass
class AttackReport:
    """An attack on one node (a release's generalization): how many blocks and rows it exposes."""

    attack: str                     # homogeneity | similarity
    sensitive: str
    levels: dict[str, int]
    threshold: float                # homogeneity: share of the top value; similarity: 1.0
    blocks: int                     # released blocks
    rows: int                       # released rows
    affected_blocks: int
    exposed_rows: int
    suppressed_rows: int = 0
    groups: list[str] | None = None  # similarity: the semantic groups
    examples: list[BlockExposure] = field(default_factory=list)
    by_disclosed: dict[str, int] = field(default_factory=dict)   # exposed rows per disclosed value / group
    # whether the node satisfies the policy: when not, no release of it exists and every class was read, the
    # failing ones included (with a budget they would be suppressed only if the rest satisfied)
    satisfied: bool = True

    @property
    def affected(self) -> bool:
        return self.affected_blocks > 0

    def as_dict(self) -> dict:
        out = {"attack": self.attack, "sensitive": self.sensitive, "levels": dict(self.levels),
               "threshold": self.threshold, "blocks": self.blocks, "rows": self.rows,
               "affected_blocks": self.affected_blocks, "exposed_rows": self.exposed_rows,
               "suppressed_rows": self.suppressed_rows, "satisfied": self.satisfied,
               "by_disclosed": dict(self.by_disclosed),
               "examples": [e.as_dict() for e in self.examples]}
        if self.groups is not None:
            out["groups"] = list(self.groups)
        return out


def sensitive_attribute(run, name: str | None):
    sens = run.fs.sensitives
    if not sens:
        raise PolicyError("sensitive", "the attacks need a sensitive attribute; list it under `sensitive:`")
    if name is None:
        return sens[0]
    for s in sens:
        if s.name == name:
            return s
    raise PolicyError("sensitive", f"'{name}' is not a sensitive attribute of the policy "
                      f"({', '.join(s.name for s in sens)}); add it under `sensitive:`")


def check_levels(run, levels: dict[str, int]) -> dict[str, int]:
    missing = [q for q in run.lattice.names if q not in levels]
    if missing:
        raise PolicyError("node", f"no level given for quasi-identifier '{missing[0]}'")
    extra = [q for q in levels if q not in run.lattice.names]
    if extra:
        raise PolicyError("node", f"'{extra[0]}' is not a quasi-identifier of the policy")
    out = {}
    for q, h in zip(run.lattice.names, run.lattice.heights):
        lvl = levels[q]
        if isinstance(lvl, bool) or not isinstance(lvl, (int, np.integer)) or not 0 <= int(lvl) <= h:
            raise PolicyError(f"node.{q}", f"level must be an integer from 0 to {h}; got {lvl!r}")
        out[q] = int(lvl)
    return out


def _released_counts(run, levels: dict[str, int], sensitive: str):
    """Block codes and sensitive counts of the node's released blocks, the rows suppressed, and whether the
    node satisfies the policy.

    Counts come from the database (`fs.node_counts`: one GROUP BY over the frequency set). With a
    suppression budget the blocks the policy's models fail are suppressed in the release, so they are
    left out here (matched to the checker's result by block codes). A node that does not satisfy the policy
    has no release: every block is read, and the caller says so.
    """
    counts = run.fs.node_counts(levels, sensitive=[sensitive])
    codes, mat = counts.block_codes, counts.sensitive[sensitive]
    res = run.evaluate(levels)
    if run.checker.budget == 0 or not res.suppressed_rows or not res.satisfied:
        return codes, mat, 0, bool(res.satisfied)
    if len(res.counts.block_codes) == len(codes) and np.array_equal(res.counts.block_codes, codes):
        keep = res.ok
    else:   # align by block codes (the queries should return the same order; do not rely on it)
        ok_by_code = {tuple(c): bool(o) for c, o in zip(res.counts.block_codes.tolist(), res.ok.tolist())}
        keep = np.array([ok_by_code[tuple(c)] for c in codes.tolist()], dtype=bool)
    return codes[keep], mat[keep], int(res.suppressed_rows), True


def _labeler(run, levels: dict[str, int]):
    """code -> label per quasi-identifier at the node's levels."""
    maps = []
    for name, lvl in levels.items():
        h = run.fs.qi(name).hierarchy
        codes = h.codes()[lvl]
        labels = h.labels[lvl]
        m: dict[int, str] = {}
        for c, lab in zip(codes.tolist(), labels):
            m.setdefault(c, lab)
        maps.append((name, m))

    def label(code_row) -> dict[str, str]:
        return {name: m.get(int(c), str(c)) for (name, m), c in zip(maps, code_row)}
    return label


def _report(run, attack, sens, levels, codes, mat, exposed, disclosed_codes, disclosed_names, share,
            threshold, suppressed, satisfied, examples, groups=None) -> AttackReport:
    sizes = mat.sum(axis=1)
    by = {}
    if exposed.any():
        per = np.bincount(disclosed_codes[exposed], weights=sizes[exposed], minlength=len(disclosed_names))
        by = {disclosed_names[i]: int(v) for i, v in enumerate(per) if v}
    shown = []
    if examples:
        idx = np.flatnonzero(exposed)
        idx = idx[np.argsort(-sizes[idx], kind="stable")][:examples]   # the largest exposed blocks first
        label = _labeler(run, levels)
        shown = [BlockExposure(label(codes[i]), int(sizes[i]), disclosed_names[int(disclosed_codes[i])],
                               float(share[i])) for i in idx]
    return AttackReport(attack, sens.name, dict(levels), float(threshold), int(len(sizes)), int(sizes.sum()),
                        int(exposed.sum()), int(sizes[exposed].sum()), suppressed, groups, shown, by, satisfied)


def homogeneity_attack(run, levels: dict[str, int], threshold: float = 1.0, sensitive: str | None = None,
                       examples: int = 10) -> AttackReport:
    """The homogeneity attack on one node of `run` (an `Anonymization`): the released blocks whose most
    frequent sensitive value holds at least `threshold` of the rows (1.0: all rows equal)."""
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 < threshold <= 1:
        raise PolicyError("threshold", f"must be a share in (0, 1], for example 0.95; got {threshold!r}")
    sens = sensitive_attribute(run, sensitive)
    levels = check_levels(run, levels)
    codes, mat, suppressed, satisfied = _released_counts(run, levels, sens.name)
    exposed = homogeneous_blocks(mat, threshold)
    names = [str(v) for v in sens.domain.values]
    return _report(run, "homogeneity", sens, levels, codes, mat, exposed, dominant_value(mat), names,
                   top_share(mat), threshold, suppressed, satisfied, examples)


def similarity_attack(run, levels: dict[str, int], groups=None, sensitive: str | None = None, level: int = 1,
                      examples: int = 10) -> AttackReport:
    """The similarity attack on one node of `run`: the released blocks whose sensitive values all fall in
    one semantic group.

    groups: None (the sensitive attribute's hierarchy at `level`), a path to a groups CSV (column
    `level` is the group), a mapping value -> group name, or an array of group codes per value code.
    """
    sens = sensitive_attribute(run, sensitive)
    levels = check_levels(run, levels)
    if groups is None:
        groups = _policy_taxonomy(run, sens.name)   # a CSV gives the groups their names
    codes_g, names = resolve_groups(sens.domain, groups, level)
    codes, mat, suppressed, satisfied = _released_counts(run, levels, sens.name)
    gc = group_counts(mat, codes_g)
    exposed = (gc > 0).sum(axis=1) == 1
    disclosed = gc.argmax(axis=1) if gc.size else np.zeros(len(mat), dtype=np.int64)
    return _report(run, "similarity", sens, levels, codes, mat, exposed, disclosed, names, top_share(gc), 1.0,
                   suppressed, satisfied, examples, names)


def _policy_taxonomy(run, name: str) -> Path | None:
    """The hierarchy CSV the policy gives a sensitive attribute, if any."""
    spec = run.policy.sensitive.get(name)
    if not isinstance(spec, dict) or not isinstance(spec.get("hierarchy"), str):
        return None
    from .hierarchy import KINDS
    if spec["hierarchy"] in KINDS:
        return None
    path = Path(spec["hierarchy"])
    return path if path.is_absolute() else run.policy.base_dir / path


def resolve_groups(domain, groups=None, level: int = 1) -> tuple[np.ndarray, list[str]]:
    """Group codes per sensitive value code and the group names, from any accepted form of `groups`. Refused
    (PolicyError) where every value of the data falls in one group: a block then always "discloses" that group,
    which the whole table discloses too, and every block would be flagged (ICDE 2007 Sec. 6 splits occupation
    into three)."""
    codes, names = _resolve_groups(domain, groups, level)
    if len(domain.values) > 1 and len(np.unique(codes)) < 2:
        where = ("--groups" if groups is not None and isinstance(groups, (str, Path)) else
                 "--group-level" if groups is None else "groups")
        raise PolicyError(where, f"puts every value of '{domain.name}' in one group ({names[int(codes[0])]}), so "
                          "every block would be flagged; the similarity attack needs two groups or more"
                          + (": choose a lower level" if where != "groups" else ""))
    return codes, names


def _resolve_groups(domain, groups=None, level: int = 1) -> tuple[np.ndarray, list[str]]:
    if groups is None:
        codes, _ = groups_from_hierarchy(domain, level)
        return codes, _named_groups(domain, codes)
    if isinstance(groups, (str, Path)):
        return groups_from_csv(groups, domain.values, level, domain.name, domain.aliases)
    if isinstance(groups, dict):
        found = _value_groups({str(v): g for v, g in groups.items()}, domain.values, domain.aliases, "groups",
                              domain.name)
        names = list(dict.fromkeys(found))
        return np.asarray([names.index(g) for g in found], dtype=np.int64), names
    codes = np.asarray(groups, dtype=np.int64).reshape(-1)
    if len(codes) != domain.size:
        raise ValueError(f"groups gives {len(codes)} codes for {domain.size} values of '{domain.name}'")
    return codes, [f"group {g}" for g in range(int(codes.max()) + 1)]


def attack_node(run, levels: dict[str, int], attack: str = "homogeneity", **options) -> AttackReport:
    """Run one attack by name ("homogeneity" or "similarity") on one node."""
    if attack == "homogeneity":
        return homogeneity_attack(run, levels, **options)
    if attack == "similarity":
        return similarity_attack(run, levels, **options)
    raise PolicyError("attack", f"must be one of {', '.join(ATTACKS)}; got {attack!r}")


def attack_minimal(run, attack: str = "homogeneity", **options) -> list[AttackReport]:
    """The attack on every minimal satisfying node of `run` (searching first if needed), in lattice order."""
    if run.result is None:
        run.search()
    return [attack_node(run, run.lattice.levels(node), attack, **options) for node in run.result.minimal]


def summarize(reports: list[AttackReport]) -> dict:
    """The paper's per-k row (TKDD Figures 9-12): tables, affected tables, and per table (all tables,
    affected or not) the average number of affected groups and of affected tuples."""
    n = len(reports)
    return {"tables": n, "affected_tables": sum(r.affected for r in reports),
            "avg_affected_groups": (sum(r.affected_blocks for r in reports) / n) if n else None,
            "avg_affected_tuples": (sum(r.exposed_rows for r in reports) / n) if n else None,
            "max_affected_tuples": max((r.exposed_rows for r in reports), default=None)}


def manifest_section(reports: list[AttackReport]) -> list[dict]:
    """The ``attacks`` entry of a release manifest: one dict per attack report."""
    return [r.as_dict() for r in reports]


def release_attacks(run, levels: dict[str, int] | None = None, threshold: float = 0.95, groups=None,
                    level: int = 1, sensitive: str | None = None, examples: int = 3) -> list[AttackReport]:
    """Every attack on a release: homogeneity (all rows equal, and one value >= `threshold`), and similarity
    when semantic groups are known (`groups`, or a hierarchy of the sensitive attribute in the policy).

    `levels` defaults to the chosen node (searching and choosing first if needed).
    """
    if levels is None:
        levels = (run.chosen or run.choose()).levels
    sens = sensitive_attribute(run, sensitive)
    out = [homogeneity_attack(run, levels, 1.0, sens.name, examples)]
    if threshold < 1:
        out.append(homogeneity_attack(run, levels, threshold, sens.name, examples))
    if groups is not None or sens.domain.levels is not None:
        out.append(similarity_attack(run, levels, groups, sens.name, level, examples))
    return out


def manifest_with_attacks(run, **options) -> dict:
    """The release manifest (`run.manifest()`) with an ``attacks`` section on the chosen node."""
    reports = release_attacks(run, **options)
    manifest = run.manifest()
    manifest["attacks"] = manifest_section(reports)
    return manifest
