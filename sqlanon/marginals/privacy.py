"""Privacy of a collection of anonymized marginals (Kifer & Gehrke, SIGMOD 2006,
Section 3 "Extending privacy definitions" and Section 6 "Algorithms").

- k-link anonymity (Def. 3.1): every marginal's non-sensitive part is k-anonymous: each cell of the
  marginal projected on its non-sensitive attributes holds 0 or >= k rows. `k_link` returns the
  smallest positive count (the k achieved).
- k-combinatorial anonymity (Def. 3.2): for every non-sensitive cell t, either all tables consistent
  with the marginals (their sensitive columns included) have T(t) = 0, or one has T(t) >= k. For a
  decomposable collection the largest T(t) is closed-form (`combinatorial_upper`): Dobra's sharp bound
  (Sec. 6, Equation 9, reconstructed since our copy lost its symbols; Dobra & Fienberg 2000), min over
  the marginals, taken per value of the sensitive attribute over the marginals that hold it and summed,
  then with the marginals that do not. `k_combinatorial` is its smallest positive value over every cell
  of the domain, observed in the original or not. It can be below k-link's k: what the sensitive columns
  pin down narrows a cell (rows xup, xup, xvq, yur, yvp, yvq with {a, s} and {b, s}: every (a, b) cell
  holds 1 or 2 rows in every consistent table, though each marginal's cells hold 3). An earlier version
  projected the marginals on their non-sensitive attributes first, so k-combinatorial always equalled
  k-link; the tests now check the bound against an integer program over every consistent table. We also
  report `certain_small`, the observed cells every consistent table puts between 1 and k - 1 rows (L >= 1
  and U < k, the reading of Sec. 6's prose), with L Dobra's lower bound over the projected marginals (a
  valid bound; the sensitive columns may raise it, so the count is a lower bound).
- maxent l-diversity (Def. 3.3): the maximum-entropy reconstruction is l-diverse: for every
  combination t of non-sensitive values with positive probability, P*(s | t) satisfies the policy's
  l-diversity (distinct, entropy or recursive (c,l)). `maxent_l_diversity` is Algorithm 1 (the
  junction-tree check with pruning) over the cliques holding the sensitive attribute only
  (Proposition 6.3: the others do not change P*(s | t)), after the early exit of Proposition 6.2 (a
  clique that is not l-diverse by itself); `maxent_l_diversity_brute` evaluates the whole
  reconstructed table (closed form or IPF over the finest levels) and is the tests' reference.

Pruning (Algorithm 1's `prune`, Theorem 6.1). After a join, groups of the intermediate table are
gathered into *relevant blocks* (equal values of the attributes later joins use); every later factor
multiplies all groups of a block by the same non-negative vector over the sensitive values. The sets
of l-diverse count vectors of the three variants are convex cones (entropy is concave on the simplex;
"r1 - c (r_l + ... + r_m)" is convex, being a max minus c times a sum of smallest entries; supports
only grow under sums), and stay so under such a scaling, so if some group ends up not l-diverse, so does
an extreme ray of its block's cone. `prune="hull"` keeps only the extreme rays (a group is dropped
when a non-negative combination of the block's other remaining groups reproduces its direction, by
non-negative least squares), in blocks of at most `HULL_MAX_GROUPS` groups (larger blocks are kept
whole: one least-squares problem per group would cost more than the vectorized final check saves). The
paper states the convex hull; the conic hull is the same test after normalizing each group to a
distribution, and prunes at least as much. For recursive (c,l) with l = |S| the paper's variant
(`prune="pairs"`) keeps, per ordered pair of sensitive values (s, s'), the group with the largest ratio
r_s / r_s', with no hull at all. `prune="none"` keeps every group.

Relaxed maxent l-diversity (`maxent_l_diversity_relaxed`, Sec. 6, the last paragraph before Sec. 7: "the
other approach is to relax the l-diversity requirements", for large sensitive domains and large joins).
Given a relaxation parameter alpha in (0, 1], every non-sensitive combination must have at least l
sensitive values at least alpha times as frequent as its most frequent one. Each clique holding C is
first divided by its separator with its parent (T'_v = T_v / T_{v & parent(v)}; the root keeps T_v), so
the reconstruction is P*(t, s) ~ prod_v T'_v(t_v, s) times factors free of s (Proposition 6.3). Each
cell becomes an indicator: 1 when T'_v(t) >= alpha T'_v(t_max), t_max the cell of t's anonymized group
(same non-sensitive values) with the largest T'_v. The join multiplies indicators instead of counts,
and `prune="dominance"` removes, in each relevant block, repeated groups and every group that
dominates another (componentwise >=): a later join multiplies the whole block by one 0/1 vector, so a
dominated group always has at most as many 1s. At the root, every group needs >= l ones. We carry one
more state per value, "present but not within alpha", so that a combination with no mass in the
reconstruction is not counted as a group (the encoding 0 = no mass, 1 = mass, 2 = within alpha; the join
is the componentwise minimum; dominance is applied only between groups with the same support, since a
later factor may empty one and not the other). What it guarantees: each of the l values has
P*(s | t) >= alpha^p max_s' P*(s' | t), p the number of marginals holding C (each factor loses at most
alpha; the paper states alpha, which is what it gives for p = 1). It is a sufficient check: a
collection it accepts satisfies the exact condition at alpha^p (the tests check this against the whole
reconstruction, and equality for p = 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import PolicyError
from ..models.base import Criterion
from ..models.kanonymity import KAnonymity
from ..models.ldiversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity
from . import structure
from .collection import Collection, Marginal, Schema
from .estimate import MarginalCounts, closed_form_dense, ipf

RESIDUAL_TOL = 1e-9     # a direction is inside the cone when NNLS reproduces it this closely (relative)
# blocks with more groups than this are not hull-pruned: one NNLS per group costs more than carrying the
# groups to the vectorized final check, and with many sensitive values most groups are extreme rays anyway
# (pruning less is always sound)
HULL_MAX_GROUPS = 64


# --------------------------------------------------------------------------------------------------
# the policy's models, as they apply to marginals

# the policy key of each model marginals do not define, by the criterion's name
NOT_FOR_MARGINALS = {"t-closeness": "t_closeness", "beta_likeness": "beta_likeness",
                     "delta_disclosure": "delta_disclosure", "k-map": "k_map", "delta-presence": "delta_presence",
                     "average_risk": "average_risk", "records_at_risk": "records_at_risk"}

@dataclass
class MarginalPrivacy:
    """What a collection must satisfy: k-link and k-combinatorial anonymity with `k`, maxent
    l-diversity with `diversity` (a plain distinct / entropy / recursive criterion), and at most
    `max_sensitive` marginals holding the sensitive attribute (Sec. 6, to bound the join)."""

    k: int = 1
    diversity: DistinctLDiversity | EntropyLDiversity | RecursiveCLDiversity | None = None
    max_sensitive: int = 3
    relaxation: float | None = None     # alpha: check relaxed maxent l-diversity (the criterion's l) instead

    @classmethod
    def from_criteria(cls, criteria, max_sensitive: int = 3, relaxation: float | None = None) -> MarginalPrivacy:
        k, div = 1, None
        for c in criteria:
            if type(c) is KAnonymity:       # not a subclass: k-map's k is of the population (KMapEstimated)
                k = max(k, int(c.k))
            elif isinstance(c, (DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity)):
                if getattr(c, "dont_care_codes", ()) or getattr(c, "npd", None) is not None:
                    raise PolicyError("privacy.l_diversity", "anonymized marginals check plain distinct, entropy or "
                                      "recursive (c,l)-diversity of the reconstructed table; remove dont_care and "
                                      "no_negative_disclosure")
                if c.multi_attribute:
                    raise PolicyError("privacy.l_diversity.attribute", "anonymized marginals have one sensitive "
                                      "attribute; name it instead of 'all'")
                div = c
            else:       # named as the policy names it: every model but those three was reported as t_closeness
                key = NOT_FOR_MARGINALS.get(c.name, c.name.replace("-", "_"))
                raise PolicyError(f"privacy.{key}", "is not defined for anonymized marginals (Kifer & Gehrke "
                                  "define k-link, k-combinatorial and maxent l-diversity, from the policy's k and "
                                  "l_diversity); remove it to release marginals")
        if isinstance(max_sensitive, bool) or not isinstance(max_sensitive, int) or max_sensitive < 1:
            raise PolicyError("--max-sensitive", f"must be an integer >= 1; got {max_sensitive!r}")
        if relaxation is not None:
            if isinstance(relaxation, bool) or not isinstance(relaxation, (int, float)) or not 0 < relaxation <= 1:
                raise PolicyError("--relaxation", f"must be a number in (0, 1]; got {relaxation!r}")
            if div is None:
                raise PolicyError("--relaxation", "relaxes maxent l-diversity, and the policy has no l_diversity; "
                                  "add one (its l is used) or drop --relaxation")
        return cls(k, div, max_sensitive, None if relaxation is None else float(relaxation))

    def describe(self) -> str:
        parts = [f"{self.k}-link anonymity"]
        if self.diversity is not None and self.relaxation is not None:
            parts.append(f"maxent {self.diversity.l}-diversity with relaxation {self.relaxation:g}")
        elif self.diversity is not None:
            parts.append("maxent " + self.diversity.describe())
        return " + ".join(parts)


# --------------------------------------------------------------------------------------------------
# k-link and k-combinatorial anonymity

def k_link(coll: Collection, counts: MarginalCounts) -> int:
    """The k of k-link anonymity (Def. 3.1): the smallest positive count of any marginal's
    non-sensitive part (|T| for a marginal of the sensitive attribute alone)."""
    out = counts.schema.rows
    for m in coll.marginals:
        ns = counts.nonsensitive(m)
        if len(ns):
            _, n = counts.get(ns)
            pos = n[n > 0]
            if len(pos):
                out = min(out, int(pos.min()))
    return int(out)


def nonsensitive_collection(coll: Collection) -> Collection:
    """The marginals projected on their non-sensitive attributes (Def. 3.2 is about those cells)."""
    s = coll.schema
    return Collection(s, [Marginal(tuple((a, l) for a, l in m.levels if a != s.sensitive)) for m in coll.marginals])


def _lookup(counts: MarginalCounts, m: Marginal, axes, cell_codes: np.ndarray) -> np.ndarray:
    """The count of marginal m at each cell (codes at the levels `axes`)."""
    s = counts.schema
    dense = counts.dense(m)
    idx = []
    pos = {a: i for i, (a, _) in enumerate(axes)}
    lv = dict(axes)
    for a, lvl in m.levels:
        idx.append(s.up(a, lv[a], lvl)[cell_codes[:, pos[a]]])
    return dense[tuple(idx)] if idx else np.full(len(cell_codes), float(dense))


@dataclass
class CellBounds:
    axes: list[tuple[str, int]]
    cells: np.ndarray       # (cells, axes) codes of the observed non-sensitive cells at the finest levels
    lower: np.ndarray
    upper: np.ndarray


# a factor of the bound: (attribute -> level of its codes, frame of those codes and `_V`). The frame's columns
# are the attributes' names; the value and the join keys take reserved names, which no column may have
_Factor = tuple[dict[str, int], pd.DataFrame]
_V, _V1, _V2, _KEY = "__sqlanon_v", "__sqlanon_v1", "__sqlanon_v2", "__sqlanon_key_"


def _factor(counts: MarginalCounts, m: Marginal) -> _Factor:
    """A released marginal's positive cells as a factor: its codes and count."""
    codes, n = counts.get(m)
    keep = n > 0
    frame = pd.DataFrame({a: codes[keep, i] for i, (a, _) in enumerate(m.levels)})
    frame[_V] = n[keep]
    return dict(m.levels), frame


# the most cells `combinatorial_upper` joins (the marginals holding the sensitive attribute, for their sum over
# its values); beyond it a collection is not certified k-combinatorially anonymous (a star of five
# one-attribute marginals with the sensitive one at level 0 joins 33 million cells of Adult)
MAX_COMBINATORIAL_CELLS = 2_000_000


class CombinatorialTooLarge(Exception):
    """The join of `combinatorial_upper` would exceed its limit of cells."""


def _keyed(schema: Schema, left: _Factor, right: _Factor) -> tuple[pd.DataFrame, pd.DataFrame, list[str], dict]:
    """The two frames with a key column per shared attribute (its codes at the coarser of the two levels), the
    keys, and the levels of their join (each attribute at the finer)."""
    (l1, d1), (l2, d2) = left, right
    d1, d2 = d1.copy(), d2.copy()
    on, levels = [], {**l2, **l1}
    for a in [a for a in l1 if a in l2]:
        key = _KEY + a
        on.append(key)
        coarse = max(l1[a], l2[a])
        d1[key] = schema.up(a, l1[a], coarse)[d1[a].to_numpy()]
        d2[key] = schema.up(a, l2[a], coarse)[d2[a].to_numpy()]
        levels[a] = min(l1[a], l2[a])
    return d1, d2, on, levels


def _join_min(schema: Schema, left: _Factor, right: _Factor, limit: int | None = None) -> _Factor:
    """The cells of two factors that agree (an attribute both hold is matched at the coarser of its two levels
    and kept at the finer), each with the smaller of the two values: where either is 0 the cell is left out.
    CombinatorialTooLarge, before the join, when it would hold more than `limit` cells."""
    d1, d2, on, levels = _keyed(schema, left, right)
    l1, l2 = left[0], right[0]
    # the coarser side's attribute column is dropped: the finer one's stays
    d1 = d1.drop(columns=[a for a in l1 if a in l2 and l1[a] > l2[a]]).rename(columns={_V: _V1})
    d2 = d2.drop(columns=[a for a in l2 if a in l1 and l2[a] >= l1[a]]).rename(columns={_V: _V2})
    if limit is not None:       # the join's size from its keys' counts, before it is made
        if on:
            size = int((d1.groupby(on).size().rename("a").to_frame()
                        .join(d2.groupby(on).size().rename("b"), how="inner").prod(axis=1)).sum())
        else:
            size = len(d1) * len(d2)
        if size > limit:
            raise CombinatorialTooLarge(size)
    joined = d1.merge(d2, on=on, how="inner") if on else d1.merge(d2, how="cross")
    joined[_V] = np.minimum(joined.pop(_V1).to_numpy(), joined.pop(_V2).to_numpy())
    return levels, joined.drop(columns=on)


def _factors(coll: Collection, counts: MarginalCounts, limit: int | None, cache: dict | None) -> list[_Factor]:
    """The bound's factors: each released marginal without S, and the marginals holding S joined and summed
    over the values of S (one factor; `cache`, a dict the caller keeps, holds it per set of such marginals)."""
    s = coll.schema
    withs = [m for m in coll.marginals if s.sensitive in m]
    factors = [_factor(counts, m) for m in coll.marginals if s.sensitive not in m]
    if withs:
        key = frozenset(withs)
        part = cache.get(key) if cache is not None else None
        if part is None:
            levels, joined = _factor(counts, withs[0])
            for m in withs[1:]:
                levels, joined = _join_min(s, (levels, joined), _factor(counts, m), limit)
            levels = {a: lvl for a, lvl in levels.items() if a != s.sensitive}
            keys = list(levels)
            summed = (joined.groupby(keys, sort=False)[_V].sum().reset_index() if keys else
                      pd.DataFrame({_V: [joined[_V].sum()]}))
            part = (levels, summed)
            if cache is not None:
                cache[key] = part
        factors.append((dict(part[0]), part[1]))
    return factors


def combinatorial_upper(coll: Collection, counts: MarginalCounts, limit: int | None = None,
                        cache: dict | None = None) -> _Factor:
    """max over the tables consistent with every released marginal (the sensitive columns too) of T(t), for
    every non-sensitive cell t (finest levels) where it is positive, observed in the original or not: the
    factors (`_factors`) joined, their values' minimum (a frame of the attributes' codes and `_V`).

    max T(t) = min( min over marginals E without S of T_E(t), sum over s of min over marginals E with S of
    T_E(t, s) ): the marginals holding S form a connected part of the junction tree, whose problem separates
    by the value of s (each slice decomposable: Dobra's sharp min); merged into one node, the rest is Dobra's
    min again (Kifer & Gehrke Sec. 6 and Def. 3.2; Dobra & Fienberg 2000). Every released marginal may enter
    the minima, cliques or not: a marginal inside a clique has counts at least the clique's. Checked in the
    tests against an integer program over every consistent table. CombinatorialTooLarge when a join would hold
    more than `limit` cells (default `MAX_COMBINATORIAL_CELLS`). The whole join is for the tests and small
    collections: `combinatorial_k` needs only its smallest value, without it."""
    limit = MAX_COMBINATORIAL_CELLS if limit is None else limit
    factors = _factors(coll, counts, limit, cache)
    if not factors:
        return {}, pd.DataFrame({_V: [float(coll.schema.rows)]})
    out = factors[0]
    for f in factors[1:]:
        out = _join_min(coll.schema, out, f, limit)
    levels, frame = out
    return levels, frame[frame[_V] > 0]


def combinatorial_k(coll: Collection, counts: MarginalCounts, cache: dict | None = None) -> int | None:
    """The k of Def. 3.2: the smallest positive `combinatorial_upper` over every non-sensitive cell, without the
    join (for a table and eight one-attribute marginals of Adult it holds 12 million cells): the smallest value
    of any factor. Every row of every factor is part of a cell of the join: the marginals come from one table,
    so neighbours agree on what they share, and on an acyclic structure (the junction tree, its cliques holding
    S merged into one) agreement between neighbours extends to the whole (Beeri, Fagin, Maier & Yannakakis,
    JACM 1983); the tests check it against the join. None when the marginals holding S join more than
    `MAX_COMBINATORIAL_CELLS` cells: not certified."""
    try:
        factors = _factors(coll, counts, MAX_COMBINATORIAL_CELLS, cache)
    except CombinatorialTooLarge:
        return None
    mins = [float(fr[_V].min()) for _, fr in factors if len(fr)]
    return int(round(min(mins))) if mins else coll.schema.rows


def cell_bounds(coll: Collection, counts: MarginalCounts, cache: dict | None = None) -> CellBounds:
    """Bounds on every observed non-sensitive cell (finest levels) of a decomposable collection: upper the
    sharp bound of `combinatorial_upper`, looked up in each factor (an observed cell is part of every one);
    lower Dobra's max(0, sum cliques - sum separators) over the marginals projected on their non-sensitive
    attributes, a valid bound (every table consistent with the marginals is consistent with their
    projections) that the sensitive columns may raise further. CombinatorialTooLarge as `combinatorial_upper`."""
    ns = nonsensitive_collection(coll)
    s = coll.schema
    if not len(ns):
        return CellBounds([], np.zeros((1, 0), dtype=np.int64), np.array([float(s.rows)]), np.array([float(s.rows)]))
    if not ns.decomposable:
        raise ValueError("closed-form bounds need a decomposable collection")
    axes = [(a, l) for a, l in ns.finest().items() if l < s.depth[a]]
    codes, n = counts.get(Marginal(tuple(axes)))
    cells = codes[n > 0]
    lower = np.zeros(len(cells))
    for c in ns.cliques:
        lower += _lookup(counts, c, axes, cells)
    for sep in ns.separators[1:]:
        lower -= _lookup(counts, sep, axes, cells)
    upper = np.full(len(cells), np.inf)
    observed = pd.DataFrame({a: cells[:, i] for i, (a, _) in enumerate(axes)})
    for levels, frame in _factors(coll, counts, MAX_COMBINATORIAL_CELLS, cache):
        if not levels:
            upper = np.minimum(upper, float(frame[_V].min()))
            continue
        at = observed[list(levels)].copy()
        for a, lvl in levels.items():
            at[a] = s.up(a, dict(axes)[a], lvl)[at[a].to_numpy()]
        upper = np.minimum(upper, at.merge(frame, on=list(levels), how="left")[_V].to_numpy())
    return CellBounds(axes, cells, np.maximum(lower, 0.0), upper)


def k_combinatorial(coll: Collection, counts: MarginalCounts, k: int = 1) -> tuple[int | None, int | None]:
    """(the k of Def. 3.2: the smallest positive `combinatorial_upper` over every non-sensitive cell, observed
    or not; the number of observed cells every consistent table puts between 1 and k - 1 rows by
    `cell_bounds`, which is at least that many)."""
    cache: dict = {}
    kk = combinatorial_k(coll, counts, cache)
    if kk is None:
        return None, None
    b = cell_bounds(coll, counts, cache)
    certain = int(((b.lower >= 1) & (b.upper < k)).sum())
    return kk, certain


# --------------------------------------------------------------------------------------------------
# groups: non-sensitive keys with a vector of counts over the sensitive values

@dataclass
class Groups:
    """Anonymized groups of an intermediate table of Algorithm 1: `keys` (groups, attributes) codes of
    the non-sensitive attributes `attrs` (attribute, level), `vecs` (groups, |S|) the (estimated)
    count of each sensitive value."""

    attrs: list[tuple[str, int]]
    keys: np.ndarray
    vecs: np.ndarray

    def __len__(self) -> int:
        return len(self.vecs)


def groups_of(counts: MarginalCounts, m: Marginal) -> Groups:
    """A marginal holding the sensitive attribute as groups: its non-sensitive cells, each with its
    counts per sensitive value."""
    s = counts.schema
    codes, n = counts.get(m)
    attrs = [(a, l) for a, l in m.levels if a != s.sensitive]
    si = [a for a, _ in m.levels].index(s.sensitive)
    scode = codes[:, si]
    keycols = np.delete(codes, si, axis=1)
    msize = s.labels(s.sensitive, 0)
    if keycols.shape[1]:
        keys, inv = np.unique(keycols, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
    else:
        keys, inv = np.zeros((1, 0), dtype=np.int64), np.zeros(len(n), dtype=np.int64)
    vecs = np.zeros((len(keys), msize))
    np.add.at(vecs, (inv, scode), n)
    return Groups(attrs, keys, vecs)


def project(schema: Schema, g: Groups, target: list[tuple[str, int]]) -> np.ndarray:
    """Group keys rolled up to `target` (attributes at levels no finer than the groups')."""
    lv = {a: (i, l) for i, (a, l) in enumerate(g.attrs)}
    cols = []
    for a, lt in target:
        i, lg = lv[a]
        cols.append(schema.up(a, lg, lt)[g.keys[:, i]])
    return np.column_stack(cols) if cols else np.zeros((len(g), 0), dtype=np.int64)


def _merge_keys(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row index pairs (i, j) with left[i] == right[j] (an inner equi-join on all columns)."""
    if left.shape[1] == 0:
        i, j = np.meshgrid(np.arange(len(left)), np.arange(len(right)), indexing="ij")
        return i.ravel(), j.ravel()
    cols = [f"k{c}" for c in range(left.shape[1])]
    lf = pd.DataFrame(left, columns=cols).assign(_i=np.arange(len(left)))
    rf = pd.DataFrame(right, columns=cols).assign(_j=np.arange(len(right)))
    both = lf.merge(rf, on=cols, how="inner")
    return both["_i"].to_numpy(), both["_j"].to_numpy()


def _separator_rows(keys: np.ndarray, sep: Groups) -> np.ndarray:
    """Each row's separator counts per sensitive value (rows keyed at the separator's levels; keys are unique
    in `sep`; a row with no separator cell gets 0)."""
    pair, isep = _merge_keys(keys, sep.keys)
    den = np.zeros((len(keys), sep.vecs.shape[1]))
    den[pair] = sep.vecs[isep]
    return den


def join(schema: Schema, gv: Groups, gx: Groups, sep: Groups) -> Groups:
    """Algorithm 1, lines 4-7: tmp = I_v join I_x, tmp(t) = I_v(t_v) I_x(t_x) / T_{v & x}(t_{v & x}),
    per sensitive value (0 where the separator is 0, which makes the numerator 0 too)."""
    kv = project(schema, gv, sep.attrs)
    iv, ix = _merge_keys(kv, project(schema, gx, sep.attrs))
    den = _separator_rows(kv[iv], sep)
    num = gv.vecs[iv] * gx.vecs[ix]
    vecs = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    attrs, keys = _joined_keys(schema, gv, gx, iv, ix)
    live = vecs.sum(axis=1) > 0        # a combination with no mass is not a group of the reconstruction
    return Groups(attrs, keys[live], vecs[live])


def _joined_keys(schema: Schema, gv: Groups, gx: Groups, iv: np.ndarray, ix: np.ndarray):
    """The joined groups' keys: every attribute of either side at the finer of its levels."""
    lv_v = {a: (i, l) for i, (a, l) in enumerate(gv.attrs)}
    lv_x = {a: (i, l) for i, (a, l) in enumerate(gx.attrs)}
    attrs, cols = [], []
    for a in schema.attributes:
        if a in lv_v and (a not in lv_x or lv_v[a][1] <= lv_x[a][1]):
            attrs.append((a, lv_v[a][1]))
            cols.append(gv.keys[iv, lv_v[a][0]])
        elif a in lv_x:
            attrs.append((a, lv_x[a][1]))
            cols.append(gx.keys[ix, lv_x[a][0]])
    keys = np.column_stack(cols) if cols else np.zeros((len(iv), 0), dtype=np.int64)
    return attrs, keys


# --------------------------------------------------------------------------------------------------
# pruning

def nnls(a: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> tuple[np.ndarray, float]:
    """Non-negative least squares, min ||a x - b|| subject to x >= 0 (Lawson & Hanson 1974, ch. 23).
    Returns (x, residual norm)."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * max(m, n) * max(float(np.abs(a).sum(axis=0).max(initial=0.0)), 1.0)
    w = a.T @ (b - a @ x)
    max_iter = max_iter or 3 * n + 10
    for _ in range(max_iter):
        if passive.all() or not np.any(w[~passive] > tol):
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if np.all(z[passive] > tol):
                x = z
                break
            neg = passive & (z <= tol)
            alpha = float(np.min(x[neg] / (x[neg] - z[neg])))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
            if not passive.any():
                break
        w = a.T @ (b - a @ x)
    return x, float(np.linalg.norm(a @ x - b))


def _hull_keep(dirs: np.ndarray) -> np.ndarray:
    """Which of these directions (rows, each summing to 1, all different) are extreme rays of their cone."""
    keep = np.ones(len(dirs), dtype=bool)
    support = dirs > 0
    # a point that alone maximizes some coordinate is a vertex of the hull: no test needed
    top = dirs.max(axis=0)
    sure = np.zeros(len(dirs), dtype=bool)
    for j in np.flatnonzero((dirs == top).sum(axis=0) == 1):
        sure[int(np.argmax(dirs[:, j]))] = True
    for i in np.flatnonzero(~sure):
        others = keep.copy()
        others[i] = False
        # only groups whose support lies inside i's can take part in a non-negative combination of it
        others &= ~np.any(support & ~support[i], axis=1)
        if not others.any():
            continue
        _, res = nnls(dirs[others].T, dirs[i])
        if res <= RESIDUAL_TOL * max(float(np.linalg.norm(dirs[i])), 1e-300):
            keep[i] = False
    return keep


def _blocks(schema: Schema, g: Groups, rel: list[tuple[str, int]]) -> np.ndarray:
    key = project(schema, g, rel)
    if key.shape[1] == 0:
        return np.zeros(len(g), dtype=np.int64)
    return np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)


def _distinct_per_block(schema: Schema, g: Groups, rel: list[tuple[str, int]], vectors: np.ndarray):
    """(keep: the first group of each (relevant block, vector), the kept members of each block)."""
    block = _blocks(schema, g, rel)
    _, first = np.unique(np.column_stack([block, vectors]), axis=0, return_index=True)
    keep = np.zeros(len(g), dtype=bool)
    keep[first] = True
    order = np.argsort(block, kind="stable")
    bounds = np.flatnonzero(np.diff(block[order])) + 1
    return keep, [m[keep[m]] for m in np.split(order, bounds)]


def prune_hull(schema: Schema, g: Groups, rel: list[tuple[str, int]]) -> Groups:
    """Keep, in each relevant block, the groups that are extreme rays of the block's cone (duplicate
    directions count once)."""
    if len(g) <= 1:
        return g
    dirs = g.vecs / g.vecs.sum(axis=1, keepdims=True)
    # one group per (block, direction): equal directions are the same ray
    keep, blocks = _distinct_per_block(schema, g, rel, np.round(dirs, 12))
    for members in blocks:
        if 1 < len(members) <= HULL_MAX_GROUPS:
            keep[members] = _hull_keep(dirs[members])
    return Groups(g.attrs, g.keys[keep], g.vecs[keep])


def prune_pairs(schema: Schema, g: Groups, rel: list[tuple[str, int]]) -> Groups:
    """The paper's variant for recursive (c,l) with l = |S|: per relevant block and ordered pair of
    sensitive values (s, s'), keep the group with the largest r_s / r_s' (infinite when r_s' = 0 < r_s)."""
    if len(g) <= 1:
        return g
    block = _blocks(schema, g, rel)
    v = g.vecs
    keep = np.zeros(len(g), dtype=bool)
    m = v.shape[1]
    for s in range(m):
        for t in range(m):
            if s == t:
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(v[:, s] > 0, np.where(v[:, t] > 0, v[:, s] / np.where(v[:, t] > 0, v[:, t], 1),
                                                       np.inf), -1.0)
            order = np.lexsort((-ratio, block))
            firsts = order[np.r_[True, block[order][1:] != block[order][:-1]]]
            keep[firsts] = True
    return Groups(g.attrs, g.keys[keep], g.vecs[keep])


def prune_none(schema: Schema, g: Groups, rel) -> Groups:
    return g


PRUNERS = {"hull": prune_hull, "pairs": prune_pairs, "none": prune_none}


def choose_pruner(criterion: Criterion, m: int) -> str:
    """The paper's variant (pairwise ratios) for recursive (c, l) with l = |S|, extreme rays otherwise.
    (Keeping only the groups with the fewest values would not do for distinct l-diversity: a later factor
    can zero every value of such a group, which then is no group at all, while a larger one survives.)"""
    if isinstance(criterion, RecursiveCLDiversity) and criterion.l >= m:
        return "pairs"
    return "hull"


# --------------------------------------------------------------------------------------------------
# maxent l-diversity

@dataclass
class DiversityCheck:
    """The outcome of a maxent l-diversity check. `groups` counts the groups whose distribution was
    evaluated at the end (after pruning); `joined` the groups produced by joins before pruning."""

    ok: bool
    method: str
    groups: int = 0
    joined: int = 0
    violation: dict | None = None
    reason: str = ""

    def as_dict(self) -> dict:
        return {"ok": self.ok, "method": self.method, "groups_checked": self.groups, "groups_joined": self.joined,
                "violation": self.violation, "reason": self.reason}


def _violation(schema: Schema, g: Groups, criterion: Criterion) -> dict | None:
    ok = criterion.block_ok(g.vecs)
    if ok.all():
        return None
    i = int(np.flatnonzero(~ok)[0])
    labels = {a: schema.label_text(a, l)[int(c)] for (a, l), c in zip(g.attrs, g.keys[i])}
    vec = g.vecs[i] / g.vecs[i].sum()
    values = schema.label_text(schema.sensitive, 0)
    dist = {values[j]: round(float(p), 6) for j, p in enumerate(vec) if p > 0}
    return {"group": labels, "levels": dict(g.attrs), "distribution": dist}


def _nonsensitive(schema: Schema, m: Marginal) -> list[tuple[str, int]]:
    return [(a, lv) for a, lv in m.levels if a != schema.sensitive]


def _bottom_up(schema: Schema, tree: structure.JunctionTree, start, joiner, pruner) -> tuple[Groups, int]:
    """Algorithm 1's traversal from the leaves: I_v = start(v) (line 1), joined with each child's result
    (lines 4-7: joiner(I_v, I_x, separator marginal)), pruned after each join but the last (line 8) and
    within the separator with the parent (line 13). Returns (the root's groups, groups produced by joins)."""
    joined = 0
    margs = [schema.from_vertices(c) for c in tree.cliques]

    def check(v: int) -> Groups:
        nonlocal joined
        iv = start(v)
        children = tree.children(v)
        for i, x in enumerate(children):
            iv = joiner(iv, check(x), schema.from_vertices(tree.separators[x]))
            joined += len(iv)
            # line 8; after the last child it is skipped: at the root every group is checked next anyway,
            # elsewhere line 13 prunes within coarser blocks, keeping a subset of what line 8 would keep
            if i < len(children) - 1:
                iv = pruner(schema, iv, _nonsensitive(schema, margs[v]))
        if tree.parent[v] is not None:
            iv = pruner(schema, iv, _nonsensitive(schema, schema.from_vertices(tree.separators[v])))
        return iv

    return check(0), joined


def maxent_l_diversity(coll: Collection, criterion: Criterion | None, counts: MarginalCounts,
                       prune: str = "auto", early_exit: bool = True) -> DiversityCheck:
    """Algorithm 1 (junction-tree check with pruning) over the cliques holding the sensitive attribute;
    with `early_exit`, first Proposition 6.2 (1) on each clique alone."""
    if criterion is None:
        return DiversityCheck(True, "none", reason="no l-diversity model in the policy")
    s = coll.schema
    if not coll.decomposable:
        raise ValueError("Algorithm 1 needs a decomposable collection; use maxent_l_diversity_brute")
    msize = s.labels(s.sensitive, 0)
    if prune == "auto":
        prune = choose_pruner(criterion, msize)
    if prune == "pairs" and choose_pruner(criterion, msize) != "pairs":
        raise PolicyError("--prune", "pairs is exact only for recursive (c,l)-diversity with l = the number of "
                          f"sensitive values ({msize}); use auto or hull")
    pruner = PRUNERS[prune]
    vs = [c for c in coll.clique_sets if (s.sensitive, 1) in c]
    if not vs:
        # no marginal holds the sensitive attribute: P*(s | t) is uniform over its values
        ok = bool(criterion.block_ok(np.ones((1, msize)))[0])
        return DiversityCheck(ok, f"algorithm1/{prune}", 1, 1, None if ok else {"group": {}, "distribution": "uniform"},
                              "no marginal holds the sensitive attribute")
    cliques = [s.from_vertices(c) for c in vs]
    # Proposition 6.2 (1): a clique that is not l-diverse by itself cannot give an l-diverse reconstruction
    for c in cliques if early_exit else ():
        g = groups_of(counts, c)
        bad = _violation(s, g, criterion)
        if bad is not None:
            return DiversityCheck(False, f"algorithm1/{prune}", len(g), len(g), bad,
                                  f"the marginal {c.text()} is not l-diverse by itself (Proposition 6.2)")
    tree = structure.junction_tree(vs, root=0)
    margs = [s.from_vertices(c) for c in tree.cliques]
    root, joined = _bottom_up(s, tree, lambda v: groups_of(counts, margs[v]),
                              lambda iv, ix, sep: join(s, iv, ix, groups_of(counts, sep)), pruner)
    bad = _violation(s, root, criterion)
    return DiversityCheck(bad is None, f"algorithm1/{prune}", len(root), joined, bad)


# --------------------------------------------------------------------------------------------------
# relaxed maxent l-diversity (see the module docstring)

NO_MASS, PRESENT, WITHIN = 0, 1, 2


def relaxed_indicators(vecs: np.ndarray, alpha: float) -> np.ndarray:
    """Per group (row) and sensitive value: WITHIN when the value is at least alpha times the group's most
    frequent one (and positive), PRESENT when positive but below, NO_MASS when zero."""
    top = vecs.max(axis=1, keepdims=True)
    return np.where(vecs <= 0, NO_MASS, np.where(vecs >= alpha * top, WITHIN, PRESENT)).astype(np.int8)


def join_relaxed(schema: Schema, gv: Groups, gx: Groups, sep_attrs: list[tuple[str, int]]) -> Groups:
    """Algorithm 1's join with the relaxed line 6: tmp(t) = I_v(t_v) * I_x(t_x), here the componentwise
    minimum of the three-state indicators (a value is within alpha in the product's bound when it is in
    every factor; it has mass when it has in every factor)."""
    iv, ix = _merge_keys(project(schema, gv, sep_attrs), project(schema, gx, sep_attrs))
    vecs = np.minimum(gv.vecs[iv], gx.vecs[ix])
    attrs, keys = _joined_keys(schema, gv, gx, iv, ix)
    live = vecs.max(axis=1) > NO_MASS
    return Groups(attrs, keys[live], vecs[live])


def prune_dominance(schema: Schema, g: Groups, rel: list[tuple[str, int]]) -> Groups:
    """The relaxed check's pruning: in each relevant block keep one group per indicator vector, and drop
    every group that dominates (>= componentwise, not equal) another group with the same support."""
    if len(g) <= 1:
        return g
    keep, blocks = _distinct_per_block(schema, g, rel, g.vecs)
    for members in blocks:
        if len(members) < 2:
            continue
        v = g.vecs[members].astype(np.int16)
        ge = np.all(v[:, None, :] >= v[None, :, :], axis=2)             # ge[i, j]: i >= j componentwise
        same_support = np.all((v[:, None, :] > 0) == (v[None, :, :] > 0), axis=2)
        np.fill_diagonal(ge, False)
        keep[members[np.any(ge & same_support, axis=1)]] = False
    return Groups(g.attrs, g.keys[keep], g.vecs[keep])


def maxent_l_diversity_relaxed(coll: Collection, l: float, alpha: float, counts: MarginalCounts,
                               prune: bool = True) -> DiversityCheck:
    """Maxent l-diversity with relaxation `alpha` (Kifer & Gehrke, Sec. 6; see the module docstring): every
    non-sensitive combination of the reconstruction has >= l sensitive values whose indicator is 1 in
    every marginal holding C. Sufficient for P*(s | t) >= alpha^p max P*(. | t) on l values."""
    s = coll.schema
    if not coll.decomposable:
        raise ValueError("the relaxed check needs a decomposable collection")
    if not 0 < alpha <= 1:
        raise ValueError("alpha must be in (0, 1]")
    method = "relaxed/" + ("dominance" if prune else "none")
    msize = s.labels(s.sensitive, 0)
    vs = [c for c in coll.clique_sets if (s.sensitive, 1) in c]
    if not vs:
        ok = msize >= l
        return DiversityCheck(ok, method, 1, 1, None if ok else {"group": {}, "distribution": "uniform"},
                              "no marginal holds the sensitive attribute")
    tree = structure.junction_tree(vs, root=0)
    margs = [s.from_vertices(c) for c in tree.cliques]
    pruner = prune_dominance if prune else prune_none

    def indicators(v: int) -> Groups:
        g = groups_of(counts, margs[v])
        vecs = g.vecs
        if tree.parent[v] is not None:        # the preprocessing: divide by the separator with the parent
            sep = groups_of(counts, s.from_vertices(tree.separators[v]))
            den = _separator_rows(project(s, g, sep.attrs), sep)
            vecs = np.divide(vecs, den, out=np.zeros_like(vecs), where=den > 0)
        return Groups(g.attrs, g.keys, relaxed_indicators(vecs, alpha))

    root, joined = _bottom_up(s, tree, indicators,
                              lambda iv, ix, sep: join_relaxed(s, iv, ix, _nonsensitive(s, sep)), pruner)
    ok = (root.vecs == WITHIN).sum(axis=1) >= l
    bad = None
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        values = s.label_text(s.sensitive, 0)
        bad = {"group": {a: s.label_text(a, lv)[int(c)] for (a, lv), c in zip(root.attrs, root.keys[i])},
               "levels": dict(root.attrs),
               "within_relaxation": [values[j] for j in np.flatnonzero(root.vecs[i] == WITHIN)]}
    return DiversityCheck(bool(ok.all()), method, len(root), joined, bad,
                          f"at least {l} values within {alpha:g}^p of the most frequent, p = {len(vs)}")


def relaxed_exact(coll: Collection, l: float, beta: float, counts: MarginalCounts) -> bool:
    """The condition itself on the whole reconstruction (brute force): every non-sensitive cell with mass
    has >= l sensitive values with P*(s | t) >= beta max_s' P*(s' | t). The relaxed check's reference."""
    g = reconstructed_groups(coll, counts)
    top = g.vecs.max(axis=1, keepdims=True)
    tol = 1e-9 * top
    return bool((((g.vecs > 0) & (g.vecs >= beta * top - tol)).sum(axis=1) >= l).all())


def reconstruction(coll: Collection, counts: MarginalCounts):
    """The maximum-entropy table over the finest levels: closed form when decomposable, else IPF."""
    return closed_form_dense(coll, counts) if coll.decomposable else ipf(coll, counts)


def reconstructed_groups(coll: Collection, counts: MarginalCounts) -> Groups:
    """Every non-sensitive cell (finest levels) of the whole reconstructed table with positive mass,
    with its estimated counts per sensitive value: the blocks maxent l-diversity is about."""
    s = coll.schema
    rec = reconstruction(coll, counts)
    msize = s.labels(s.sensitive, 0)
    axes = list(rec.axes)
    arr = rec.counts
    if axes and axes[-1][0] == s.sensitive:
        vecs = arr.reshape(-1, msize)
        ns_axes = axes[:-1]
    else:   # the sensitive attribute is in no marginal: uniform over its values
        vecs = np.repeat(arr.reshape(-1, 1), msize, axis=1) / msize
        ns_axes = axes
    shape = [s.labels(a, l) for a, l in ns_axes]
    keys = (np.column_stack([k.ravel() for k in np.indices(shape)]) if shape
            else np.zeros((len(vecs), 0), dtype=np.int64))
    live = vecs.sum(axis=1) > 1e-12 * s.rows
    return Groups(ns_axes, keys[live], vecs[live])


def maxent_l_diversity_brute(coll: Collection, criterion: Criterion | None, counts: MarginalCounts) -> DiversityCheck:
    """Brute force: every non-sensitive cell of the whole reconstructed table (all marginals, finest
    levels), each with positive mass checked for l-diversity."""
    if criterion is None:
        return DiversityCheck(True, "none")
    g = reconstructed_groups(coll, counts)
    bad = _violation(coll.schema, g, criterion)
    return DiversityCheck(bad is None, "brute", len(g), len(g), bad)


# --------------------------------------------------------------------------------------------------
# everything at once

@dataclass
class PrivacyReport:
    k_link: int
    k_combinatorial: int | None
    certain_small: int | None
    diversity: DiversityCheck
    sensitive_marginals: int
    privacy: MarginalPrivacy
    extra: dict = field(default_factory=dict)

    @property
    def satisfied(self) -> bool:
        """k-link, k-combinatorial (certified only for decomposable collections: in general the bounds are
        NP-hard, Sec. 6, so a non-decomposable collection is never released), maxent l-diversity and the
        limit on marginals holding the sensitive attribute."""
        # k <= 1 holds for any decomposable collection, certified or not
        combinatorial = (self.k_combinatorial >= self.privacy.k if self.k_combinatorial is not None
                         else self.privacy.k <= 1 and "not_decomposable" not in self.extra)
        return (self.k_link >= self.privacy.k and combinatorial and self.diversity.ok
                and self.sensitive_marginals <= self.privacy.max_sensitive)

    def as_dict(self) -> dict:
        return {"satisfied": self.satisfied, "required": self.privacy.describe(), "k_link": self.k_link,
                "k_combinatorial": self.k_combinatorial, "cells_certainly_below_k": self.certain_small,
                "maxent_l_diversity": self.diversity.as_dict(), "sensitive_marginals": self.sensitive_marginals,
                "max_sensitive_marginals": self.privacy.max_sensitive, **self.extra}


def diversity_check(coll: Collection, privacy: MarginalPrivacy, counts: MarginalCounts,
                    prune: str = "auto") -> DiversityCheck:
    """Maxent l-diversity of a decomposable collection as the privacy asks: Algorithm 1, or the relaxed check
    when `privacy.relaxation` is set."""
    if privacy.relaxation is not None and privacy.diversity is not None:
        return maxent_l_diversity_relaxed(coll, privacy.diversity.l, privacy.relaxation, counts, prune != "none")
    return maxent_l_diversity(coll, privacy.diversity, counts, prune)


def check_privacy(coll: Collection, privacy: MarginalPrivacy, counts: MarginalCounts,
                  prune: str = "auto") -> PrivacyReport:
    s = coll.schema
    if coll.decomposable:
        kc, certain = k_combinatorial(coll, counts, privacy.k)
        div = diversity_check(coll, privacy, counts, prune)
        n_sens = sum(1 for c in coll.clique_sets if (s.sensitive, 1) in c)
    else:
        kc, certain = None, None
        div = maxent_l_diversity_brute(coll, privacy.diversity, counts)
        if privacy.relaxation is not None and privacy.diversity is not None:
            ok = relaxed_exact(coll, privacy.diversity.l, privacy.relaxation, counts)
            div = DiversityCheck(ok, "relaxed/brute", div.groups, div.joined, None if ok else {"group": "some"})
        n_sens = len(coll.with_sensitive())
    extra = {} if coll.decomposable else {"not_decomposable": "k-combinatorial anonymity cannot be certified for a "
                                                              "collection that is not decomposable (Sec. 6)"}
    if coll.decomposable and kc is None:
        extra["not_certified"] = (f"the marginals holding the sensitive attribute join more than "
                                  f"{MAX_COMBINATORIAL_CELLS:,} cells, too many to bound; use fewer or coarser "
                                  "marginals holding it")
    return PrivacyReport(k_link(coll, counts), kc, certain, div, n_sens, privacy, extra)


__all__ = ["MarginalPrivacy", "k_link", "cell_bounds", "combinatorial_upper", "combinatorial_k", "k_combinatorial",
           "MAX_COMBINATORIAL_CELLS", "CombinatorialTooLarge",
           "maxent_l_diversity",
           "maxent_l_diversity_relaxed", "relaxed_exact", "diversity_check",
           "maxent_l_diversity_brute", "check_privacy", "PrivacyReport", "DiversityCheck", "nnls"]
