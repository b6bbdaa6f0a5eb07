"""The maximum-entropy solver (Privacy-MaxEnt, Du, Teng & Zhu, SIGMOD 2008, Sections 3.2-3.3 and 5.5).

Definition 3.1: find P(Q, S, B) maximizing H(Q, S, B) = -sum P log P subject to the invariants of the
release (Section 5) and the background knowledge (Sections 4, 6). The unknowns are counted in records
(x = N * P): the maximizer is the same, every right-hand side is a record count, and the solver's
tolerance is a number of records.

1. Irrelevant buckets (Definition 5.6: no cell of theirs in any knowledge row) take the closed form of
   Theorem 5, x(q, s, b) = n(q, b) n(s, b) / n(b) (Proposition 1: the global maximum needs each of them at
   its own maximum). Only the relevant buckets are optimized.
2. Presolve, exact: a row whose remaining right-hand side is 0 forces its cells to 0 (P(Breast Cancer | male)
   = 0); an equality row with one free cell fixes it; a row whose cells can only reach its lower bound at
   their upper bounds fixes them there; a row that cannot be met is infeasible. Repeated to a fixpoint. This
   is what makes the examples of Section 3.1 exact: with P(s1 | q2) = 0 and P(s1 or s2 | q3) = 0 the
   assignment of bucket 1 follows by propagation, not by an optimizer creeping toward a boundary.
3. The rest is the Lagrangian dual (Section 3.3, Appendix B): x_c = exp(sum_r lambda_r A_rc), minimize
   g(lambda) = sum_c x_c - sum_r lambda_r rhs_r, whose gradient is A x - rhs, the constraint residuals in
   records. Equalities have free multipliers; a bound lo <= a.x (or a.x <= hi) gets a multiplier >= 0 (<= 0):
   the box-constrained dual of Kazama & Tsujii for inequality knowledge (Section 4.5). scipy's L-BFGS-B
   minimizes it (the method the paper used, Section 7), started from the closed form, with one
   redundant invariant per bucket dropped (Theorem 3; in buckets of at most ten invariant rows, see
   `_dual_system`) and each multiplier scaled by the inverse square root of its Hessian diagonal. It runs
   in rounds, each measuring g relative to the round's start: g itself is about N, and near the optimum
   its decrease would fall below a double's resolution (L-BFGS-B then stops at residuals near 1e-6
   records).
4. Tolerance: converged when every constraint, invariants and knowledge alike, holds to within
   `tolerance` records (default 1e-6 records: probabilities to 1e-6 / N). If L-BFGS-B stops short, or a
   cell ends below the tolerance (a cell the constraints force to 0 without a presolve rule seeing it
   drives a multiplier to infinity: the dual only approaches the zero), one linear program (HiGHS) finds
   every cell that is zero in all feasible solutions (maximize sum_c min(x_c, 1) over the homogenized
   feasible cone; a cell is forced to zero iff it stays 0), or proves the knowledge infeasible; the dual is
   then solved again without those cells, which are exactly 0.

Infeasible knowledge is reported as `InfeasibleKnowledge` (a user error: one line, exit code 2), naming
the constraint that cannot hold when the presolve finds it; it is never dropped silently.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, minimize
from threadpoolctl import threadpool_limits

from .knowledge import ROW_KNOWLEDGE, ROW_PERSON, ROW_QI, ROW_SA, InfeasibleKnowledge, System

DEFAULT_TOLERANCE = 1e-6       # records
MAX_ITERATIONS = 20000         # L-BFGS-B iterations per attempt
EXP_CAP = 700.0                # exp() of more overflows a double
DROP_ROWS = 10                 # Theorem 3's redundant row is dropped in buckets of at most this many invariant rows


@dataclass
class Solution:
    """x per cell of the system (records, N * P(q, s, b)) and how it was found."""

    x: np.ndarray
    converged: bool
    max_violation: float                 # records, over every constraint
    tolerance: float
    relevant_buckets: int
    relevant_cells: int
    free_cells: int = 0                  # optimized by the dual
    fixed_cells: int = 0                 # fixed by the presolve (to a positive count)
    zero_cells: int = 0                  # forced to 0 by knowledge, presolve or the linear program
    dual_variables: int = 0
    iterations: int = 0
    evaluations: int = 0
    linear_program: bool = False
    seconds: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"converged": self.converged, "max_violation_records": self.max_violation,
                "tolerance_records": self.tolerance, "relevant_buckets": self.relevant_buckets,
                "relevant_cells": self.relevant_cells, "free_cells": self.free_cells,
                "fixed_cells": self.fixed_cells, "zero_cells": self.zero_cells,
                "dual_variables": self.dual_variables, "iterations": self.iterations,
                "evaluations": self.evaluations, "linear_program": self.linear_program,
                "seconds": {k: round(v, 4) for k, v in self.seconds.items()}}


def violation(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, x: np.ndarray) -> float:
    """The largest amount (records) by which x misses a row's bounds."""
    if A.shape[0] == 0:
        return 0.0
    ax = A @ x
    return float(max(np.max(lo - ax, initial=0.0), np.max(ax - hi, initial=0.0)))


def _eps(v: np.ndarray) -> np.ndarray:
    return 1e-9 * np.maximum(1.0, np.abs(np.where(np.isfinite(v), v, 0.0)))


def _cell_upper(At: sp.csr_matrix, rhi: np.ndarray) -> np.ndarray:
    """Per cell, the smallest remaining upper bound of the rows it is in (a cell is >= 0, each row a sum)."""
    C = At.shape[0]
    ub = np.full(C, np.inf)
    if At.nnz:
        vals = rhi[At.indices]
        nonempty = np.diff(At.indptr) > 0
        ub[nonempty] = np.minimum.reduceat(vals, At.indptr[:-1][nonempty])
    return np.maximum(ub, 0.0)


def presolve(system: System, A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, rows: np.ndarray,
             zero: np.ndarray | None = None):
    """Exact reductions to a fixpoint (see the module docstring). Returns (free, value) per cell:
    free cells go to the dual, the others are fixed at `value` (0 for forced zeros).

    `rows` maps the local rows to the system's (for messages); `zero` marks cells known to be 0."""
    C = A.shape[1]
    At = A.T.tocsr()
    free = np.ones(C, dtype=bool) if zero is None else ~zero
    value = np.zeros(C)
    is_eq = (hi - lo) <= _eps(lo)
    for _ in range(10 * C + 10):
        cnt = A @ free.astype(float)
        done = A @ value
        rlo, rhi = lo - done, hi - done
        eps = _eps(lo)
        over = np.flatnonzero(rhi < -eps)
        if len(over):
            raise InfeasibleKnowledge(f"{system.describe_row(rows[over[0]])} is exceeded by what the other constraints "
                                      f"force{system.involved(rows[over[0]])}")
        empty = np.flatnonzero((cnt == 0) & (rlo > eps))
        if len(empty):
            raise InfeasibleKnowledge(f"{system.describe_row(rows[empty[0]])} cannot be met: every record that could "
                                      f"take part in it is ruled out{system.involved(rows[empty[0]])}")
        zero_rows = (cnt > 0) & (rhi <= eps)
        if zero_rows.any():
            cells = A[zero_rows].indices
            free[cells[free[cells]]] = False          # fixed cells keep their value
            continue
        ub = _cell_upper(At, rhi)
        reach = A @ np.where(free, ub, 0.0)
        short = np.flatnonzero((cnt > 0) & (reach < rlo - eps))
        if len(short):
            r = short[0]
            raise InfeasibleKnowledge(f"{system.describe_row(rows[r])} cannot be met: at most {reach[r]:.6g} "
                                      f"record(s) can take part in it, it needs {rlo[r]:.6g}{system.involved(rows[r])}")
        tight = (cnt > 0) & (np.abs(reach - rlo) <= eps) & np.isfinite(reach)
        single = is_eq & (cnt == 1)
        if not tight.any() and not single.any():
            break
        if tight.any():
            cells = A[tight].indices
            cells = cells[free[cells]]
            value[cells] = ub[cells]
            free[cells] = False
            continue
        rows_single = np.flatnonzero(single)
        sub = A[rows_single]
        owner = np.repeat(np.arange(len(rows_single)), np.diff(sub.indptr))
        mine = free[sub.indices]
        cells, owner = sub.indices[mine], owner[mine]
        value[cells] = np.maximum(rlo[rows_single[owner]], 0.0)
        free[cells] = False
    return free, value


def _dual_system(system, A, lo, hi, rows, cells, free, value):
    """The dual's rows for the free cells: each kept equality row one free multiplier, each bound of an
    inequality row one signed multiplier.

    Theorem 3: the first SA-invariant of a bucket is the sum of its QI rows minus its other SA rows, so it
    is left out (its right-hand side is returned per bucket, `s0`), but only in buckets of at most
    `DROP_ROWS` invariant rows: the dropped row's error is the sum of the others' residuals (each within a
    tenth of the tolerance), which a q*-block with thousands of quasi-identifiers would add up past the
    tolerance. Kept, the redundant row only makes the dual flat along one direction, which L-BFGS-B ignores."""
    Af = A[:, free].tocsr()
    keep = np.diff(Af.indptr) > 0
    done = A @ value
    rlo, rhi = lo - done, hi - done
    kind = system.kind[rows]
    fcells = np.flatnonzero(free)
    bucket = np.full(len(rows), -1)
    bucket[keep] = system.cell_bucket[cells[fcells[Af.indices[Af.indptr[:-1][keep]]]]]
    s0 = np.ones(system.problem.buckets)
    sa = np.flatnonzero(keep & (kind == ROW_SA))
    if len(sa):
        _, first = np.unique(bucket[sa], return_index=True)
        dropped = sa[first]
        invariant_rows = np.bincount(bucket[keep & (kind <= ROW_SA)], minlength=system.problem.buckets)
        dropped = dropped[invariant_rows[bucket[dropped]] <= DROP_ROWS]
        keep[dropped] = False
        s0[bucket[dropped]] = rlo[dropped]
    eps = _eps(lo)
    eq = keep & ((rhi - rlo) <= eps)
    low = keep & ~eq & (rlo > eps)
    up = keep & ~eq & np.isfinite(rhi)
    parts = [(np.flatnonzero(eq), rlo, (None, None)), (np.flatnonzero(low), rlo, (0.0, None)),
             (np.flatnonzero(up), rhi, (None, 0.0))]
    idx = np.concatenate([p[0] for p in parts]).astype(np.int64)
    rhs = np.concatenate([p[1][p[0]] for p in parts])
    bounds = [p[2] for p in parts for _ in p[0]]
    return Af[idx].tocsr(), rhs, bounds, kind[idx], bucket[idx], s0


def _start(system, cells, free, D, rhs, kinds, buckets, s0) -> np.ndarray:
    """Multipliers that give each bucket its closed form x = r_q r_s / r_b (Theorem 5) on what remains:
    lambda_QI = log(r_q s0 / r_b), lambda_SA = log(r_s / s0) (the dropped SA row has multiplier 0), a
    person's share of its quasi-identifier's records for person rows, 0 for knowledge."""
    lam = np.zeros(len(rhs))
    total = np.zeros(system.problem.buckets)
    qi = np.flatnonzero(kinds == ROW_QI)
    np.add.at(total, buckets[qi], rhs[qi])
    tiny = 1e-300
    lam[qi] = np.log(np.maximum(rhs[qi] * s0[buckets[qi]], tiny) / np.maximum(total[buckets[qi]], tiny))
    sa = np.flatnonzero(kinds == ROW_SA)
    lam[sa] = np.log(np.maximum(rhs[sa], tiny) / np.maximum(s0[buckets[sa]], tiny))
    person = np.flatnonzero(kinds == ROW_PERSON)
    if len(person):
        first = cells[np.flatnonzero(free)[D.indices[D.indptr[person]]]]
        q = system.problem.cell_q[system.cell_base[first]]
        lam[person] = np.log(np.maximum(rhs[person], tiny) / np.maximum(system.problem.q_n[q], 1))
    return lam


def _scaled(bounds, lam_ref, d):
    """Bounds on lambda (None, 0.0 or (0.0, None)) as bounds on mu, where lambda = lam_ref + d * mu."""
    out = []
    for (lo, hi), l0, di in zip(bounds, lam_ref, d):
        out.append((None if lo is None else (lo - l0) / di, None if hi is None else (hi - l0) / di))
    return out


def _dual_ascent(D, rhs, bounds, lam, tolerance, max_iterations, check):
    """Minimize g(lambda) = sum exp(D^T lambda) - lambda . rhs with L-BFGS-B, in rounds.

    Each round measures g relative to where it starts (sum x_ref expm1(z - z_ref) - (lambda - lambda_ref) . rhs):
    g itself is about N, so near the optimum its decrease falls below a double's resolution and L-BFGS-B stops
    at residuals near 1e-6 records; relative to the round's start the decrease stays resolvable. Rounds go on
    until `check(x)` (the largest violation of any constraint, in records) is within the tolerance, or a
    round makes no progress. Returns (x, iterations, evaluations)."""
    Dt = D.T.tocsr()
    iterations = evaluations = 0
    x = None
    for _ in range(8):
        z_ref = np.minimum(Dt @ lam, EXP_CAP)
        x_ref = np.exp(z_ref)
        lam_ref = lam.copy()
        # Jacobi scaling: lambda = lambda_ref + d * mu with d = 1 / sqrt(diagonal of the Hessian D diag(x) D^T);
        # a QI row of one record and an SA row of a thousand then look alike to L-BFGS-B (ten times fewer
        # iterations on large q*-blocks)
        d = 1.0 / np.sqrt(np.maximum(D @ x_ref, 1e-12))

        def fun(mu, lam_ref=lam_ref, d=d, z_ref=z_ref, x_ref=x_ref):   # bound now: called in this iteration
            l = lam_ref + d * mu
            with np.errstate(over="ignore", invalid="ignore"):
                e = np.expm1(np.minimum(Dt @ l, EXP_CAP) - z_ref)
                xe = x_ref * e
                f = xe.sum() - (d * mu) @ rhs
            if not np.isfinite(f):          # far outside: tell the line search to step back
                return np.inf, np.zeros_like(mu)
            return f, d * (D @ (x_ref + xe) - rhs)

        res = minimize(fun, np.zeros_like(lam), jac=True, method="L-BFGS-B", bounds=_scaled(bounds, lam_ref, d),
                       options={"maxcor": 10, "gtol": tolerance / 10 * float(d.min()), "ftol": 0.0,
                                "maxiter": max_iterations, "maxfun": 2 * max_iterations})
        iterations += int(res.nit)
        evaluations += int(res.nfev)
        lam = lam_ref + d * res.x
        x = np.exp(np.minimum(Dt @ lam, EXP_CAP))
        if check(x) <= tolerance or res.nit == 0:
            break
    return x, iterations, evaluations


def _facial_reduction(A, lo, hi, free, value, system, rows):
    """One LP: which free cells are 0 in every feasible solution? Raises InfeasibleKnowledge if none exists."""
    Af = A[:, free]
    done = A @ value
    rlo, rhi = lo - done, hi - done
    keep = np.diff(Af.indptr) > 0
    Af, rlo, rhi = Af[keep], rlo[keep], rhi[keep]
    eq = (rhi - rlo) <= _eps(rlo)
    C = Af.shape[1]
    # variables: x (C), y (C), tau (1); maximize sum y; y <= x, 0 <= y <= 1, tau >= 1; rows scaled by tau
    I = sp.identity(C, format="csr")
    tau_eq = sp.csr_matrix(-rlo[eq].reshape(-1, 1))
    A_eq = sp.hstack([Af[eq], sp.csr_matrix((int(eq.sum()), C)), tau_eq]).tocsr()
    ub_parts = [sp.hstack([-I, I, sp.csr_matrix((C, 1))])]
    ineq = ~eq
    has_lo = ineq & (rlo > _eps(rlo))
    has_hi = ineq & np.isfinite(rhi)
    if has_lo.any():
        ub_parts.append(sp.hstack([-Af[has_lo], sp.csr_matrix((int(has_lo.sum()), C)),
                                   sp.csr_matrix(rlo[has_lo].reshape(-1, 1))]))
    if has_hi.any():
        ub_parts.append(sp.hstack([Af[has_hi], sp.csr_matrix((int(has_hi.sum()), C)),
                                   sp.csr_matrix(-rhi[has_hi].reshape(-1, 1))]))
    A_ub = sp.vstack(ub_parts).tocsr()
    c = np.concatenate([np.zeros(C), -np.ones(C), [0.0]])
    bounds = [(0, None)] * C + [(0, 1)] * C + [(1, None)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=A_eq, b_eq=np.zeros(A_eq.shape[0]),
                  bounds=bounds, method="highs")
    if res.status == 2:
        k = int((system.kind == ROW_KNOWLEDGE).sum()) + int((system.kind == ROW_PERSON).sum())
        raise InfeasibleKnowledge(f"no assignment of the buckets satisfies the {k} knowledge and person "
                                  "constraints together (a linear program over the buckets they touch is "
                                  "infeasible); each may hold alone: drop or loosen some")
    if res.status != 0:
        return None
    y = res.x[C:2 * C]
    forced = np.zeros(len(free), dtype=bool)
    forced[np.flatnonzero(free)[y < 0.5]] = True
    return forced


def solve(system: System, tolerance: float = DEFAULT_TOLERANCE, relevant: str = "knowledge",
          max_iterations: int = MAX_ITERATIONS) -> Solution:
    """Maximum-entropy x (records) per cell of `system`; see the module docstring.

    relevant="knowledge" optimizes only the buckets the knowledge touches (Theorem 5 for the rest);
    relevant="all" sends every bucket through presolve and dual (to test them against the closed form).

    BLAS runs on one thread meanwhile: L-BFGS-B's vector operations are far too small to gain from more,
    and OpenBLAS threads that wait for a busy core slowed the solver fifty-fold on a shared 2-core machine.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _solve(system, tolerance, relevant, max_iterations)


def _solve(system: System, tolerance: float, relevant: str, max_iterations: int) -> Solution:
    if not tolerance > 0:
        raise ValueError("tolerance must be positive")
    t0 = time.perf_counter()
    problem = system.problem
    A = system.rows
    bucket = system.cell_bucket
    touched = system.kind >= ROW_PERSON
    rel_b = np.zeros(problem.buckets, dtype=bool)
    if relevant == "all":
        rel_b[:] = True
    else:
        cells = A[touched].indices
        rel_b[bucket[cells]] = True
    # a knowledge row over no cell at all must allow 0 (e.g. P(s | Q_v) with no record of Q_v in the release)
    empty = touched & (np.diff(A.indptr) == 0)
    for r in np.flatnonzero(empty & (system.lo > _eps(system.lo))):
        raise InfeasibleKnowledge(f"{system.describe_row(int(r))} concerns no published record that could hold it")
    rel_cell = rel_b[bucket]
    x = np.zeros(system.cells)
    closed = problem.closed_form()[system.cell_base]
    x[~rel_cell] = closed[~rel_cell]
    sol = Solution(x, True, 0.0, tolerance, int(rel_b.sum()), int(rel_cell.sum()))
    if not rel_cell.any():
        sol.seconds["total"] = time.perf_counter() - t0
        return sol
    cells = np.flatnonzero(rel_cell)
    row_mask = (A @ rel_cell.astype(float)) > 0
    rows = np.flatnonzero(row_mask)
    sub = A[rows][:, cells].tocsr()
    lo, hi = system.lo[rows], system.hi[rows]
    t = time.perf_counter()
    free, value = presolve(system, sub, lo, hi, rows)
    sol.seconds["presolve"] = time.perf_counter() - t
    for attempt in range(2):
        sol.free_cells = int(free.sum())
        D, rhs, bounds, kinds, buckets, s0 = _dual_system(system, sub, lo, hi, rows, cells, free, value)
        sol.dual_variables = len(rhs)
        t = time.perf_counter()
        if len(rhs):
            lam = _start(system, cells, free, D, rhs, kinds, buckets, s0)

            def check(xf, free=free, value=value):
                full = value.copy()
                full[free] = xf
                return violation(sub, lo, hi, full)

            xf, nit, nfev = _dual_ascent(D, rhs, bounds, lam, tolerance, max_iterations, check)
            sol.iterations += nit
            sol.evaluations += nfev
            full = value.copy()
            full[free] = xf
            sol.max_violation = violation(sub, lo, hi, full)
        else:
            full = value.copy()
            sol.max_violation = violation(sub, lo, hi, full)
        sol.seconds["dual" if attempt == 0 else "dual_again"] = time.perf_counter() - t
        # a free cell ending below the tolerance is probably one the constraints force to 0 that the presolve
        # could not see: the dual only approaches such a zero, the linear program finds it exactly
        near_zero = bool(len(rhs)) and bool((full[free] < tolerance).any())
        if attempt == 1 or (sol.max_violation <= tolerance and not near_zero):
            break
        t = time.perf_counter()
        forced = _facial_reduction(sub, lo, hi, free, value, system, rows)
        sol.seconds["linear_program"] = time.perf_counter() - t
        sol.linear_program = True
        if forced is None or not forced.any():
            break
        free, value = presolve(system, sub, lo, hi, rows, zero=~free & (value == 0) | forced)
    sol.converged = sol.max_violation <= tolerance
    sol.fixed_cells = int((~free & (full > 0)).sum())
    sol.zero_cells = int((~free & (full == 0)).sum())
    x[cells] = full
    sol.x = x
    sol.seconds["total"] = time.perf_counter() - t0
    return sol
