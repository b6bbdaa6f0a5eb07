"""The maximum-entropy estimate of the original table from a collection of anonymized marginals, and
its KL-divergence to the original (Kifer & Gehrke, SIGMOD 2006).

Utility (Sec. 3.2). F is the empirical distribution of the original table over its cells (every
quasi-identifier at level 0, the sensitive value); F* the maximum-entropy distribution consistent with
the released marginals. Utility is KL(F || F*) = sum_x F(x) ln(F(x) / F*(x)) over the cells of the
original (0 ln 0 = 0), smaller is better. (The paper's logarithm base is not given; we use natural
logarithms, as `sqlanon.metrics` does for the single-table KL of docs/DESIGN.md section 5.)

Decomposable collections: closed form (Sec. 4.1 Equations 2-3, extended to anonymized marginals by
Theorem 5.1). With E_1..E_p the maximal cliques of the induced interaction graph in a perfect sequence
and S_2..S_p their separators, the estimated count of a cell t of the original table is

    est(t) = prod_i T_Ei(t_Ei) / prod_{i>=2} T_Si(t_Si) / prod_B child(t, L_max(B))

where T_E is the marginal count table of E (T_{empty} = |T|) and child(t, L_max(B)) the number of base
values under the finest label of attribute B that any marginal holds (the domain size of B when no
marginal holds it): "the probability for a tuple ... is spread uniformly across all possible
completions of t". Our copy of the paper lost the formula's digits and symbols; this is the
reconstruction from the surrounding text (the product/ratio is Equation 2's, the division by the leaf
counts is the sentence quoted) and it is checked against iterative proportional fitting in the tests.
`kl_divergence` evaluates it in SQL (`marginal_estimate.sql`, `marginal_kl.sql`): one GROUP BY per
clique and separator over the wide frequency set, joined to the original's cells.

Any collection: iterative proportional fitting (Deming & Stephan 1940; the "iterative algorithms" of
Sec. 4) in numpy on the compact cell table, the original rolled up to the finest level of each
attribute any marginal holds (Proposition 6.1: coarser resolution than that is all a marginal says),
then spread uniformly below those labels as above. On a decomposable collection it converges to the
closed form.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..errors import DataError
from ..frequency import xlogx_by_count
from .collection import Collection, Marginal, Schema

MAX_DENSE_CELLS = 20_000_000    # cells of a dense numpy array (IPF, brute force) before we refuse


class MarginalCounts:
    """Count tables of marginals, fetched from the database once each (one GROUP BY over the wide
    frequency set, `marginal_counts.sql`) and cached: codes (cells, attributes) and counts (cells,)."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self._cache: dict[Marginal, tuple[np.ndarray, np.ndarray]] = {}
        self._xlogx: dict[Marginal, float] = {}
        self.queries = 0

    def get(self, m: Marginal) -> tuple[np.ndarray, np.ndarray]:
        m = Marginal(m.levels)
        hit = self._cache.get(m)
        if hit is None:
            s = self.schema
            cols = [s.column(a, lvl) for a, lvl in m.levels]
            data = s.fs.backend.fetchnumpy("marginal_counts.sql", table=s.fs.wide_table, cols=cols)
            self.queries += 1
            n = np.asarray(data["n"], dtype=np.float64)
            codes = (np.column_stack([np.asarray(data[c], dtype=np.int64) for c in cols]) if cols
                     else np.zeros((len(n), 0), dtype=np.int64))
            hit = (codes, n)
            self._cache[m] = hit
        return hit

    def xlogx(self, m: Marginal) -> float:
        """sum of n ln n over the marginal's cells, one aggregate in SQL (`marginal_xlogx.sql`), cached."""
        m = Marginal(m.levels)
        if m not in self._xlogx:
            s = self.schema
            rows = s.fs.backend.fetchall("marginal_xlogx.sql", table=s.fs.wide_table,
                                         cols=[s.column(a, lvl) for a, lvl in m.levels])
            self.queries += 1
            self._xlogx[m] = xlogx_by_count(rows)
        return self._xlogx[m]

    def nonsensitive(self, m: Marginal) -> Marginal:
        return Marginal(tuple((a, l) for a, l in m.levels if a != self.schema.sensitive))

    def dense(self, m: Marginal) -> np.ndarray:
        """The marginal as a dense array, one axis per attribute (its labels at the marginal's level)."""
        codes, n = self.get(m)
        shape = [self.schema.labels(a, lvl) for a, lvl in m.levels]
        out = np.zeros(shape, dtype=np.float64)
        if len(shape):
            np.add.at(out, tuple(codes.T), n)
        else:
            out = np.asarray(n.sum() if len(n) else 0.0)
        return out


# --------------------------------------------------------------------------------------------------
# closed form (decomposable collections), in SQL over the original's cells

def factor_powers(coll: Collection) -> Counter:
    """Clique marginals with power +1, separators (after the first) with power -1; a marginal that is
    both or repeats adds up. The empty separator stands for |T|."""
    powers: Counter = Counter()
    for c in coll.cliques:
        powers[c] += 1
    for s in coll.separators[1:]:
        powers[s] -= 1
    return Counter({m: p for m, p in powers.items() if p})


def _estimate_context(coll: Collection) -> dict:
    if not coll.decomposable:
        raise ValueError("the closed form needs a decomposable collection; use ipf()")
    s = coll.schema
    factors = [{"alias": f"f{i}", "cols": [s.column(a, lvl) for a, lvl in m.levels], "power": p}
               for i, (m, p) in enumerate(sorted(factor_powers(coll).items(), key=lambda kv: kv[0].levels))]
    areas: list[dict[str, str]] = []
    absent: list[int] = []
    for a, lvl in coll.finest().items():
        if lvl == s.depth[a]:
            absent.append(s.domain_size(a))
        elif lvl > 0:   # a quasi-identifier released coarser than its values: its label's base values
            areas.append({"alias": f"a{len(areas)}", "map": s.map_table(a), "col": s.base_column(a),
                          "ncol": f"n{lvl}"})
    return {"table": s.fs.wide_table, "factors": factors, "areas": areas, "absent": absent,
            "out_cols": [s.base_column(a) for a in s.attributes]}


def kl_divergence(coll: Collection) -> float:
    """KL(F || F*) of the collection: the closed form in SQL for a decomposable collection, IPF
    otherwise."""
    if not coll.decomposable:
        return ipf(coll).kl
    row = coll.schema.fs.backend.fetchrow("marginal_kl.sql", **_estimate_context(coll))
    return max(float(row[0]), 0.0)


def kl_from_marginals(coll: Collection, counts: MarginalCounts) -> float:
    """The same KL-divergence as `kl_divergence`, summed marginal by marginal instead of cell by cell.

    Taking the log of the closed form and summing c(x) ln est(x) over the original's cells, each factor
    T_E contributes sum_e T_E(e) ln T_E(e) (its cells' counts add up to T_E(e)), so

        KL = (1/N) [sum_x c ln c - sum_E power_E sum_e T_E ln T_E + sum_B sum_b T_B(b) ln child(b)]
             + sum over attributes no marginal holds of ln |domain|,

    with one aggregate per marginal (`marginal_xlogx.sql`), cached across collections: the greedy search
    scores hundreds of collections built from a few dozen marginals. `sqlanon.metrics` computes the
    single-table KL the same way. The tests check it against the cell-by-cell SQL.
    """
    if not coll.decomposable:
        return ipf(coll, counts).kl
    s = coll.schema
    n = float(s.rows)
    total = s.fs.cells_xlogx()
    for m, power in factor_powers(coll).items():
        total -= power * counts.xlogx(m)
    spread = 0.0
    for a, lvl in coll.finest().items():
        if lvl == s.depth[a]:
            spread += math.log(s.domain_size(a))
        elif lvl > 0:
            codes, cnt = counts.get(Marginal(((a, lvl),)))
            total += float((cnt * np.log(s.covered(a, lvl)[codes[:, 0]].astype(np.float64))).sum())
    return max(total / n + spread, 0.0)


@dataclass
class CellEstimate:
    """The original's cells (codes of every attribute at level 0), their counts and estimates."""

    codes: dict[str, np.ndarray]
    count: np.ndarray
    estimate: np.ndarray


def estimate_cells(coll: Collection) -> CellEstimate:
    """The closed-form estimate of every cell of the original table, computed in SQL."""
    s = coll.schema
    ctx = _estimate_context(coll)
    data = s.fs.backend.fetchnumpy("marginal_estimate.sql", **ctx)
    codes = {a: np.asarray(data[s.base_column(a)], dtype=np.int64) for a in s.attributes}
    return CellEstimate(codes, np.asarray(data["c"], dtype=np.float64), np.exp(np.asarray(data["ln_est"])))


# --------------------------------------------------------------------------------------------------
# dense arrays over the finest levels (numpy): IPF, and the closed form for brute-force checks

@dataclass
class Dense:
    """A distribution (in counts) over the finest released labels of the attributes any marginal
    holds: `axes` (attribute, level) and an array of that shape."""

    axes: list[tuple[str, int]]
    counts: np.ndarray


def _finest_axes(coll: Collection) -> list[tuple[str, int]]:
    s = coll.schema
    return [(a, lvl) for a, lvl in coll.finest().items() if lvl < s.depth[a]]


def _check_size(shape) -> None:
    size = math.prod(shape) if shape else 1
    if size > MAX_DENSE_CELLS:
        raise DataError(f"the marginals' finest levels span {size:,} cells, too many for iterative proportional "
                        f"fitting in memory (limit {MAX_DENSE_CELLS:,}); use a decomposable collection (closed form "
                        "in SQL) or coarser levels")


def _maps(s: Schema, axes, m: Marginal) -> list:
    """Per axis of `axes`: None (m does not hold the attribute: sum it out) or the code map from the
    axis's level to m's level."""
    lv = m.as_dict()
    return [None if a not in lv else s.up(a, lvl, lv[a]) for a, lvl in axes]


def coarsen(arr: np.ndarray, maps: list) -> np.ndarray:
    """Roll a dense array up: sum out axes whose map is None, merge codes along the others."""
    out = arr
    for ax in reversed(range(arr.ndim)):
        up = maps[ax]
        if up is None:
            out = out.sum(axis=ax)
        elif not np.array_equal(up, np.arange(len(up))):
            g = np.zeros((len(up), int(up.max()) + 1))
            g[np.arange(len(up)), up] = 1.0
            out = np.moveaxis(np.tensordot(out, g, axes=([ax], [0])), -1, ax)
    return out


def expand(small: np.ndarray, maps: list) -> np.ndarray:
    """The inverse broadcast of `coarsen`: each fine cell gets the value of its coarse cell."""
    out = small
    for ax, up in enumerate(maps):
        # axes before `ax` are already fine-shaped; small's axis for this attribute sits at `ax`
        out = np.expand_dims(out, ax) if up is None else np.take(out, up, axis=ax)
    return out


def compact_cells(coll: Collection, counts: MarginalCounts | None = None) -> Dense:
    """The compact cell table: the original rolled up to the collection's finest levels (one GROUP BY)."""
    counts = counts or MarginalCounts(coll.schema)
    axes = _finest_axes(coll)
    shape = [coll.schema.labels(a, lvl) for a, lvl in axes]
    _check_size(shape)
    return Dense(axes, counts.dense(Marginal(tuple(axes))))


@dataclass
class IPFResult(Dense):
    iterations: int = 0
    max_error: float = 0.0
    kl: float = 0.0


def ipf(coll: Collection, counts: MarginalCounts | None = None, tol: float = 1e-10,
        max_iter: int = 2000) -> IPFResult:
    """Iterative proportional fitting of the maximum-entropy distribution to the collection's marginals.

    Starts from the uniform table over the finest levels and rescales it to each marginal in turn until
    every marginal is matched within tol * |T|. The KL-divergence is then taken over the original's
    cells, with the uniform spread below the finest labels (Theorem 5.1).
    """
    s = coll.schema
    counts = counts or MarginalCounts(s)
    cells = compact_cells(coll, counts)
    axes = cells.axes
    n = float(s.rows)
    p = np.full(cells.counts.shape, n / max(cells.counts.size, 1))
    targets = [(m, _maps(s, axes, m), counts.dense(m)) for m in coll.marginals]
    it, err = 0, math.inf
    while it < max_iter and err > tol * n:
        it += 1
        for _, maps, target in targets:
            cur = coarsen(p, maps)
            ratio = np.divide(target, cur, out=np.zeros_like(target), where=cur > 0)
            p = p * expand(ratio, maps)
        err = max((float(np.abs(coarsen(p, maps) - target).max()) for _, maps, target in targets), default=0.0)
    res = IPFResult(axes, p, it, err)
    res.kl = _kl_from_dense(coll, cells, p)
    return res


def _kl_from_dense(coll: Collection, cells: Dense, est: np.ndarray) -> float:
    """KL over the original's cells for an estimate given over the finest levels:
    (1/N) [sum c ln c - sum_v T_V(v) ln est(v) + sum_B sum_v T_V(v) ln child(v_B)]."""
    s = coll.schema
    n = float(s.rows)
    obs = cells.counts
    pos = obs > 0
    if np.any(est[pos] <= 0):
        return math.inf
    total = s.fs.cells_xlogx() - float((obs[pos] * np.log(est[pos])).sum())
    for ax, (a, lvl) in enumerate(cells.axes):
        if lvl > 0:
            per = np.log(s.covered(a, lvl).astype(np.float64))
            total += float((coarsen(obs, [None if i != ax else np.arange(obs.shape[ax])
                                          for i in range(obs.ndim)]) * per).sum())
    for a, lvl in coll.finest().items():
        if lvl == s.depth[a]:
            total += n * math.log(s.domain_size(a))
    return max(total / n, 0.0)


def closed_form_dense(coll: Collection, counts: MarginalCounts | None = None) -> Dense:
    """The closed form (Theorem 5.1) over the finest levels, as a dense numpy array (brute-force checks)."""
    s = coll.schema
    counts = counts or MarginalCounts(s)
    axes = _finest_axes(coll)
    shape = [s.labels(a, lvl) for a, lvl in axes]
    _check_size(shape)
    num = np.ones(shape)
    den = np.ones(shape)
    for m, power in factor_powers(coll).items():
        part = expand(counts.dense(m), _maps(s, axes, m)) * np.ones(shape)
        if power > 0:
            num = num * part ** power
        else:
            den = den * part ** (-power)
    return Dense(axes, np.divide(num, den, out=np.zeros(shape), where=den > 0))


def single_table_kl(schema: Schema, m: Marginal) -> float:
    """The single-table KL-divergence (docs/DESIGN.md section 5) of one marginal released alone: the closed
    form of the collection {m}. For the generalized table (every quasi-identifier at the node's level,
    the sensitive value) this is `sqlanon.metrics.kl_divergence` of that node."""
    return kl_divergence(Collection(schema, [m]))
