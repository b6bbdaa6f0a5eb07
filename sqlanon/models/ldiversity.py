"""The l-diversity family (Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam: "l-Diversity: Privacy
Beyond k-Anonymity", ACM TKDD 1(1), 2007), Sections 4.2 and 4.3.

Every measure works on a counts matrix (see `sqlanon.models.base`)::

    counts[b, s] = rows of q*-block b whose sensitive value has code s        shape (B, m)

and answers for all B blocks at once (numpy, no Python loop over blocks). The measures:

=============================  ==================================================  ===================
model                          a block satisfies it when                            paper
=============================  ==================================================  ===================
distinct l-diversity           it holds >= l distinct sensitive values              Sec. 4 (Principle 2)
entropy l-diversity            -sum p log p >= log l (natural log)                  Def. 4.1
recursive (c,l)-diversity      r1 < c (r_l + ... + r_m), counts sorted descending   Def. 4.2
pd-recursive (c,l), set Y      r_y < c * tail(s_y), s_y = top value not in Y        Def. 4.3
npd-recursive (c1,c2,l), W     pd-recursive (c1,l) and every s in W is >= c2 %      Def. 4.4
entropy l-div., don't-care Y   adjusted entropy >= log l                            Def. 4.5, Thm 4.1,
                                                                                    Algorithm 1
multi-attribute l-diversity    the above for each S_i with the other S_j added      Def. 4.6
                               to the quasi-identifier
=============================  ==================================================  ===================

All of them are monotone: merging two blocks that satisfy a model gives a block that satisfies it
(TKDD Section 5: Theorem 5.2 entropy, Theorem 5.3 npd-recursive and so recursive and pd-recursive,
Theorem 5.4 entropy with don't-care sets; distinct l-diversity trivially), which is what makes
Incognito's pruning sound. `tests/test_models_properties.py` checks it on random blocks.

Float tolerance: counts are integers but c, l and c2 are user-given reals, so a comparison that is
an exact tie in real arithmetic may land on either side after rounding (0.3 * 10 is
3.0000000000000004). We use a relative tolerance `TOL = 1e-12` and resolve ties the way the
definitions say: strict inequalities (Def. 4.2, 4.3) must hold by more than TOL, non-strict ones
(Def. 4.1, 4.4, 4.5) may fail by at most TOL (so a uniform block of l values is entropy
l-diverse even when log computes H a hair below log l).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .base import Criterion, counts_matrix

TOL = 1e-12

__all__ = [
    "TOL",
    "distinct_values", "block_entropy", "sorted_counts", "xlogx",
    "recursive_tail", "recursive_c_star", "recursive_ok", "recursive_max_l",
    "pd_recursive_terms", "pd_recursive_ok", "pd_recursive_c_star", "pd_recursive_max_l",
    "negative_disclosure_ok", "negative_disclosure_percent",
    "log_entropic_mean", "adjusted_entropy", "adjusted_entropy_trace",
    "refine_blocks", "multi_attribute_ok",
    "DistinctLDiversity", "EntropyLDiversity", "RecursiveCLDiversity",
]


# --------------------------------------------------------------------------------------------------
# small helpers

_counts = counts_matrix


def _integer_counts(counts) -> np.ndarray:
    """Counts as a 2-D array, integer counts keeping their type (their sums are exact in any order, and
    `xlogx` looks them up), anything else as float64."""
    a = counts_matrix(counts, dtype=None)
    return a if a.dtype.kind in "iu" else a.astype(np.float64, copy=False)


# integer counts up to this size get x log x from a table (`xlogx`); larger ones are computed
XLOGX_TABLE_MAX = 1 << 20


def _xlogx_of(x: np.ndarray) -> np.ndarray:
    pos = x > 0
    return np.where(pos, x * np.log(np.where(pos, x, 1.0)), 0.0)


def xlogx(x: np.ndarray) -> np.ndarray:
    """Elementwise x log x with 0 log 0 = 0 (natural log), as float64.

    Non-negative integer counts no larger than XLOGX_TABLE_MAX are looked up in a table of 0 log 0, 1 log 1,
    ... up to the largest of them (the same float64 products, so the same values), when that table has no more
    entries than the array: a dense counts matrix is mostly zeros and small counts, and the lookup avoids a
    logarithm per entry (the manifest's profile of 636,800 classes by 147 values at 100 M rows of Lands End
    spent 2.6 s here, ad hoc), while a few large counts are cheaper computed than tabulated.

    >>> xlogx(np.array([[0, 1, 2], [4, 0, 1]])).round(4).tolist()
    [[0.0, 0.0, 1.3863], [5.5452, 0.0, 0.0]]
    """
    x = np.asarray(x)
    if x.dtype.kind in "iu" and x.size:
        lo, hi = int(x.min()), int(x.max())
        if lo >= 0 and hi <= XLOGX_TABLE_MAX and hi < x.size:
            return _xlogx_of(np.arange(hi + 1, dtype=np.float64))[x]
    return _xlogx_of(np.asarray(x, dtype=np.float64))


def sorted_counts(counts, length: int | None = None) -> np.ndarray:
    """Each block's counts sorted descending, r1 >= r2 >= ... (TKDD Sec. 4.2), zero-padded on the
    right to `length` columns when that is larger than m (so r_l exists for any l)."""
    a = _counts(counts)
    r = -np.sort(-a, axis=1)
    if length is not None and length > r.shape[1]:
        r = np.hstack([r, np.zeros((r.shape[0], length - r.shape[1]))])
    return r


def _tails(r: np.ndarray) -> np.ndarray:
    """tails[:, j] = r[:, j] + r[:, j+1] + ... (0-based): the suffix sums of sorted counts."""
    return np.cumsum(r[:, ::-1], axis=1)[:, ::-1]


# --------------------------------------------------------------------------------------------------
# distinct and entropy l-diversity

def distinct_values(counts) -> np.ndarray:
    """Distinct sensitive values per block, shape (B,): the l of distinct l-diversity.

    Args:
        counts: (B, m) rows of each block holding each sensitive value.

    Returns:
        (B,) how many of the m values each block holds.

    >>> distinct_values([[2, 1, 0], [0, 1, 0], [3, 0, 3]]).tolist()
    [2, 1, 2]
    """
    return (_counts(counts) > 0).sum(axis=1)


def block_entropy(counts) -> np.ndarray:
    """Entropy of each block's sensitive distribution, natural log (TKDD Def. 4.1), shape (B,).

    H(b) = -sum_s p(b,s) log p(b,s) with p(b,s) = counts[b,s] / n(b) and 0 log 0 = 0; computed as
    log n - (sum_s c log c) / n. A block with no rows has entropy 0.

    Args:
        counts: (B, m) rows of each block holding each sensitive value.

    Returns:
        (B,) each block's entropy in nats; entropy l-diversity holds where it is >= log l.

    >>> block_entropy([[2, 2], [3, 0], [1, 1]]).round(4).tolist()      # log 2 = 0.6931
    [0.6931, 0.0, 0.6931]
    """
    a = _integer_counts(counts)
    n = a.sum(axis=1).astype(np.float64)
    out = np.zeros(len(a))
    nz = n > 0
    # integer counts keep their type, so `xlogx` looks them up instead of taking logarithms
    out[nz] = np.log(n[nz]) - xlogx(a[nz] if not nz.all() else a).sum(axis=1) / n[nz]
    return np.maximum(out, 0.0)   # rounding can give -1e-16 for a homogeneous block


# --------------------------------------------------------------------------------------------------
# recursive (c,l)-diversity, Def. 4.2

def recursive_tail(counts, l: int) -> np.ndarray:
    """r_l + r_{l+1} + ... + r_m per block (counts sorted descending), the right side of Def. 4.2."""
    if l < 1:
        raise ValueError("l must be >= 1")
    a = _integer_counts(counts)
    m = a.shape[1]
    if a.dtype.kind in "iu" and 1 < l <= m:
        # the m - l + 1 smallest counts, unordered, are the tail: a partition instead of a sort (integer sums
        # are exact in any order); the manifest's profile of 636,800 classes by 147 values spent 1 s sorting
        return np.partition(a, m - l, axis=1)[:, :m - l + 1].sum(axis=1)
    r = sorted_counts(a, length=l)
    return r[:, l - 1:].sum(axis=1)


def recursive_c_star(counts, l: int) -> np.ndarray:
    """Per block, the infimum c* of the c for which the block is recursive (c,l)-diverse.

    Def. 4.2 holds iff r1 < c (r_l + ... + r_m), i.e. iff c > c* = r1 / (r_l + ... + r_m). c* is
    inf when the block has fewer than l distinct values (the tail is 0), and 0 for l = 1 (the paper:
    "1-diversity is always satisfied") and for an empty block.
    """
    a = _integer_counts(counts)     # integer counts stay integers: `recursive_tail` partitions them
    if l == 1:
        return np.zeros(len(a))
    r1 = a.max(axis=1) if a.shape[1] else np.zeros(len(a))
    tail = recursive_tail(a, l)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(tail > 0, r1 / np.where(tail > 0, tail, 1), np.inf)
    return np.where(r1 > 0, c, 0.0)


def recursive_ok(counts, c: float, l: int) -> np.ndarray:
    """Recursive (c,l)-diversity per block (TKDD Def. 4.2): r1 < c (r_l + ... + r_m); l = 1 always
    holds. The strict inequality must hold by more than the relative tolerance TOL."""
    a = _counts(counts)
    if l == 1:
        return np.ones(len(a), dtype=bool)
    r1 = a.max(axis=1) if a.shape[1] else np.zeros(len(a))
    return r1 < c * recursive_tail(a, l) * (1 - TOL)


def recursive_max_l(counts, c: float) -> np.ndarray:
    """Per block, the largest l for which the block is recursive (c,l)-diverse (at least 1).

    The tail r_l + ... + r_m shrinks as l grows, so the l that pass form a prefix 1..L.
    """
    a = _counts(counts)
    if a.shape[1] == 0:
        return np.ones(len(a), dtype=np.int64)
    r = sorted_counts(a)
    tails = _tails(r)                        # tails[:, l-1] = r_l + ... + r_m
    passes = r[:, :1] < c * tails[:, 1:] * (1 - TOL)   # l = 2..m
    return 1 + passes.sum(axis=1)


# --------------------------------------------------------------------------------------------------
# positive-disclosure recursive (c,l)-diversity with a don't-care set Y, Def. 4.3

def _mask(m: int, codes: Sequence[int]) -> np.ndarray:
    mask = np.zeros(m, dtype=bool)
    mask[list(codes)] = True
    return mask


def pd_recursive_terms(counts, l: int, dont_care_codes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The two sides of TKDD Def. 4.3 per block: (r_y, tail(s_y)).

    Sort all of a block's counts descending, r1 >= r2 >= ... (don't-care values included); let s_y,
    the y-th most frequent value, be the most frequent value NOT in Y, with count r_y. Then

        y <= l-1:  tail = r_l + ... + r_m
        y >  l-1:  tail = (r_{l-1} + ... + r_{y-1}) + (r_{y+1} + ... + r_m)

    i.e. the l-2 most frequent values other than s_y may be eliminated, and s_y must still not be
    too frequent among what is left. Both cases are ``tail = (r_{l-1} + ... + r_m) - min(r_y, r_{l-1})``
    (when y <= l-1, r_y >= r_{l-1}; when y > l-1, r_y <= r_{l-1}), which also shows the value does not
    depend on how ties between s_y and other values are ordered. With Y empty, y = 1 and this is
    Def. 4.2's tail. Requires l >= 2 (for l = 1 the model always holds).
    """
    if l < 2:
        raise ValueError("pd-recursive terms need l >= 2 (l = 1 always holds)")
    a = _counts(counts)
    y_mask = _mask(a.shape[1], dont_care_codes)
    sensitive = a[:, ~y_mask]
    r_y = sensitive.max(axis=1) if sensitive.shape[1] else np.zeros(len(a))
    r = sorted_counts(a, length=l)
    from_l_minus_1 = r[:, l - 2:].sum(axis=1)          # r_{l-1} + ... + r_m
    tail = from_l_minus_1 - np.minimum(r_y, r[:, l - 2])
    return r_y, tail


def pd_recursive_ok(counts, c: float, l: int, dont_care_codes: Sequence[int] = ()) -> np.ndarray:
    """pd-recursive (c,l)-diversity per block (TKDD Def. 4.3): r_y < c * tail(s_y).

    A block whose values all lie in Y (r_y = 0) satisfies it ("both conditions in Definition 4.3
    are trivially satisfied", Sec. 4.2); l = 1 always holds. With Y empty this is Def. 4.2.
    """
    a = _counts(counts)
    if l == 1:
        return np.ones(len(a), dtype=bool)
    r_y, tail = pd_recursive_terms(a, l, dont_care_codes)
    return (r_y == 0) | (r_y < c * tail * (1 - TOL))


def pd_recursive_c_star(counts, l: int, dont_care_codes: Sequence[int] = ()) -> np.ndarray:
    """Per block, the infimum c* = r_y / tail(s_y) of the c that make it pd-recursive (c,l)-diverse
    (0 when r_y = 0 or l = 1, inf when the tail is 0)."""
    a = _counts(counts)
    if l == 1:
        return np.zeros(len(a))
    r_y, tail = pd_recursive_terms(a, l, dont_care_codes)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(tail > 0, r_y / np.where(tail > 0, tail, 1), np.inf)
    return np.where(r_y > 0, c, 0.0)


def pd_recursive_max_l(counts, c: float, dont_care_codes: Sequence[int] = ()) -> np.ndarray:
    """Per block, the largest l (>= 1) for which the block is pd-recursive (c,l)-diverse.

    tail(s_y) does not grow with l (from l to l+1 it loses r_{l-1} - min(r_y, r_{l-1}) +
    min(r_y, r_l) >= 0), so the passing l form a prefix 2..L; all l are judged at once.
    """
    a = _counts(counts)
    B, m = a.shape
    if m < 2:
        return np.ones(B, dtype=np.int64)
    y_mask = _mask(m, dont_care_codes)
    sensitive = a[:, ~y_mask]
    r_y = sensitive.max(axis=1) if sensitive.shape[1] else np.zeros(B)
    r = sorted_counts(a)
    tails = _tails(r)[:, : m - 1] - np.minimum(r_y[:, None], r[:, : m - 1])   # column l-2 is tail for l
    passes = (r_y[:, None] == 0) | (r_y[:, None] < c * tails * (1 - TOL))
    return 1 + np.cumprod(passes, axis=1).sum(axis=1)


# --------------------------------------------------------------------------------------------------
# negative disclosure, Def. 4.4

def negative_disclosure_percent(counts, w_codes: Sequence[int]) -> np.ndarray:
    """Per block, the smallest share (in percent) of the block's rows held by any value of W."""
    a = _counts(counts)
    n = a.sum(axis=1)
    share = a[:, list(w_codes)].min(axis=1) if len(w_codes) else np.full(len(a), 100.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, 100.0 * share / np.where(n > 0, n, 1), 100.0)


def negative_disclosure_ok(counts, c2: float, w_codes: Sequence[int]) -> np.ndarray:
    """Every s in W occurs in at least c2 percent of the block's tuples (the second half of
    TKDD Def. 4.4): 100 n(s) >= c2 n, with tolerance TOL."""
    a = _counts(counts)
    n = a.sum(axis=1)
    if not len(w_codes):
        return np.ones(len(a), dtype=bool)
    need = c2 * n * (1 - TOL)
    return np.all(100.0 * a[:, list(w_codes)] >= need[:, None], axis=1)


# --------------------------------------------------------------------------------------------------
# entropy l-diversity with don't-care sets: adjusted entropy, Def. 4.5, Theorem 4.1, Algorithm 1

def log_entropic_mean(values) -> float:
    """M(c_1..c_k) = (sum c_i log c_i) / (sum c_i), the "log-entropic mean" of TKDD Sec. 4.2
    (a weighted average of the logs; zeros contribute nothing). nan when all values are 0."""
    v = np.asarray(values, dtype=np.float64)
    s = v.sum()
    return float(xlogx(v).sum() / s) if s > 0 else float("nan")


def adjusted_entropy(counts, dont_care_codes: Sequence[int]) -> np.ndarray:
    """Adjusted entropy of each block (TKDD Def. 4.5), natural log, shape (B,).

    Def. 4.5: with don't-care counts phi_1..phi_r and sensitive counts p_1..p_m, the adjusted
    entropy is sup over 0 <= x_i <= phi_i of the normalized entropy H^(x_1..x_r, p_1..p_m)
    (Eq. (9)-(10)): a block is no riskier for holding more don't-care rows, so each don't-care
    count may be lowered to whatever maximizes the entropy.

    Computed by Algorithm 1, vectorized over blocks: sort each block's phi ascending; fix them one
    at a time (smallest first) while log(smallest changeable phi) < M(fixed), the log-entropic mean
    of the sensitive counts and the fixed phi; the remaining (changeable) phi are set to e^M
    (Theorem 4.1: the cutoff theta is the largest fixed phi). With S = sum of the fixed counts and
    k changeable values set to e^M, sum x log x = M (S + k e^M), so the adjusted entropy is
    ``log(S + k e^M) - M``.

    Edge case the paper leaves open: a block with no sensitive (non-Y) rows has M(fixed) undefined
    at the start; we keep fixing the smallest don't-care counts until the fixed set has rows, which
    yields the supremum of Def. 4.5 (all present don't-care values lowered to equal counts: log of
    their number). The loop runs over the r don't-care values, not over blocks.
    """
    a = _counts(counts)
    B, m = a.shape
    y_mask = _mask(m, dont_care_codes)
    phi = np.sort(a[:, y_mask], axis=1)               # (B, r) ascending
    p = a[:, ~y_mask]
    r = phi.shape[1]
    S = p.sum(axis=1)                                  # rows in the fixed set
    L = xlogx(p).sum(axis=1)                           # sum x log x over the fixed set
    done = np.zeros(B, dtype=bool)
    M_final = np.zeros(B)
    S_final = np.zeros(B)
    k_final = np.zeros(B)
    for k in range(r + 1):
        with np.errstate(divide="ignore", invalid="ignore"):
            M = np.where(S > 0, L / np.where(S > 0, S, 1), np.nan)
        if k < r:
            with np.errstate(divide="ignore"):
                log_min = np.log(phi[:, k])
            stop = (S > 0) & (log_min >= M)            # Algorithm 1, line 7 fails: stop fixing
        else:
            stop = np.ones(B, dtype=bool)
        now = stop & ~done
        M_final[now] = M[now]
        S_final[now] = S[now]
        k_final[now] = r - k                           # changeable values left
        done |= now
        if k < r:                                      # fix phi_(k) for the blocks still going
            go = ~done
            S = np.where(go, S + phi[:, k], S)
            L = np.where(go, L + xlogx(phi[:, k]), L)
    out = np.zeros(B)
    nz = S_final > 0
    M = M_final[nz]
    out[nz] = np.log(S_final[nz] + k_final[nz] * np.exp(M)) - M
    return np.maximum(out, 0.0)


def adjusted_entropy_trace(phi: Sequence[float], p: Sequence[float]) -> dict:
    """Algorithm 1 (TKDD Sec. 4.2) for one block, step by step, as written in the paper.

    Returns the log-entropic means computed (`means`, in order), the cutoff `theta` of
    Theorem 4.1 (the largest fixed don't-care count, 0 when none is fixed), the maximizing
    don't-care counts `x` (in the order of `phi`) and the adjusted entropy `value`. Slow and
    scalar: for documentation and tests; the engine uses `adjusted_entropy`.
    """
    phi = [float(v) for v in phi]
    fixed = [float(v) for v in p]
    changeable = list(range(len(phi)))                 # indices into phi
    x = list(phi)
    means = []
    m = log_entropic_mean(fixed)
    means.append(m)
    # while log(min(changeable)) < m (nan when nothing fixed yet: keep fixing)
    while changeable:
        i = min(changeable, key=lambda j: phi[j])
        if not (np.isnan(m) or (phi[i] == 0) or np.log(phi[i]) < m):
            break
        fixed.append(phi[i])
        changeable.remove(i)
        m = log_entropic_mean(fixed)
        means.append(m)
    for i in changeable:
        x[i] = float(np.exp(m))
    fixed_phi = [phi[i] for i in range(len(phi)) if i not in changeable]
    theta = max(fixed_phi + [0.0])
    value = float(block_entropy(np.array(x + [float(v) for v in p]))[0])
    return {"means": means, "theta": theta, "x": x, "value": value}


# --------------------------------------------------------------------------------------------------
# multi-attribute l-diversity, Def. 4.6

def refine_blocks(joint, attribute: int) -> tuple[np.ndarray, np.ndarray]:
    """Def. 4.6's view of a joint counts array for sensitive attribute `attribute`.

    `joint` has shape (B, m_1, ..., m_k): joint[b, s_1, ..., s_k] = rows of q*-block b with those
    values of the k sensitive attributes. Treating every other sensitive attribute as part of the
    quasi-identifier splits block b into one refined block per combination of the other values.
    Returns (counts, block): `counts` (B', m_attribute) holds the refined blocks that have rows, and
    `block` (B',) the q*-block each came from.
    """
    j = np.asarray(joint)
    if j.ndim < 2:
        raise ValueError("joint counts need shape (blocks, m_1, ..., m_k)")
    axis = attribute + 1
    moved = np.moveaxis(j, axis, -1)                   # (B, others..., m_i)
    B, m_i = moved.shape[0], moved.shape[-1]
    flat = moved.reshape(B, -1, m_i)                   # (B, combos, m_i)
    block = np.repeat(np.arange(B), flat.shape[1])
    rows = flat.reshape(-1, m_i)
    present = rows.sum(axis=1) > 0
    return rows[present], block[present]


def multi_attribute_ok(joint, criteria: Sequence[Criterion] | Callable[[int], Criterion]) -> np.ndarray:
    """Multi-attribute l-diversity per q*-block (TKDD Def. 4.6), shape (B,).

    `joint` is (B, m_1, ..., m_k) as in `refine_blocks`; `criteria[i]` (or `criteria(i)`) is the
    single-attribute criterion for sensitive attribute i (e.g. ``DistinctLDiversity(3)``). Block b
    passes when, for every i, every refined block (b, values of the other attributes) satisfies
    criteria[i] with S_i as the sole sensitive attribute. (A q*-block is empty of a combination
    that has no rows: only refined blocks with rows are judged.)
    """
    j = np.asarray(joint)
    B, k = j.shape[0], j.ndim - 1
    ok = np.ones(B, dtype=bool)
    for i in range(k):
        crit = criteria(i) if callable(criteria) else criteria[i]
        counts, block = refine_blocks(j, i)
        failing = block[~crit.block_ok(counts)]
        ok[failing] = False
    return ok


# --------------------------------------------------------------------------------------------------
# criteria (the engine's interface)

class DistinctLDiversity(Criterion):
    """Distinct l-diversity: every q*-block holds at least l distinct sensitive values (TKDD
    Sec. 4.1, the simplest reading of Principle 2). Achieved: ``l_distinct``, the fewest distinct
    values in any block.

    Args:
        l: the fewest distinct sensitive values a block may hold.

    >>> counts = np.array([[2, 1, 0], [0, 1, 0], [3, 0, 3]])
    >>> DistinctLDiversity(2).block_ok(counts).tolist()
    [True, False, True]
    >>> DistinctLDiversity(2).achieved(counts)
    {'l_distinct': 1}
    """

    name = "distinct l-diversity"

    def __init__(self, l: int):
        self.l = int(l)

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        return distinct_values(counts) >= self.l

    def min_distinct_values(self) -> int:
        return max(1, self.l)

    def achieved(self, counts: np.ndarray) -> dict:
        d = distinct_values(counts)
        return {"l_distinct": int(d.min()) if d.size else 0}

    def achieved_in_profile(self) -> bool:
        return True

    def describe(self) -> str:
        return f"distinct {self.l}-diversity"


class EntropyLDiversity(Criterion):
    """Entropy l-diversity (TKDD Def. 4.1): every block has entropy >= log l (natural log).

    With a non-empty don't-care set (codes of values whose positive disclosure is acceptable) the
    block's entropy is replaced by its adjusted entropy (Def. 4.5, computed by Algorithm 1).
    Achieved: ``l_entropy`` = exp(min block entropy) (the l the table is entropy l-diverse for), and
    with don't-care values also ``l_entropy_adjusted`` = exp(min adjusted entropy).

    Args:
        l: the l of the model (a real number >= 1): every block's entropy must be at least log l.
        dont_care_codes: codes of the sensitive values whose disclosure is acceptable (Def. 4.5).

    >>> counts = np.array([[2, 2, 0], [3, 1, 0], [1, 1, 1]])    # entropies log 2, 0.56, log 3
    >>> EntropyLDiversity(2).block_ok(counts).tolist()
    [True, False, True]
    >>> EntropyLDiversity(2).achieved(counts)["l_entropy"] < 2
    True
    """

    name = "entropy l-diversity"

    def __init__(self, l: float, dont_care_codes: Sequence[int] = ()):
        self.l = float(l)
        self.dont_care_codes = tuple(int(c) for c in dont_care_codes)

    def entropies(self, counts: np.ndarray) -> np.ndarray:
        """The per-block value compared with log l: entropy, or adjusted entropy with don't-cares."""
        if self.dont_care_codes:
            return adjusted_entropy(counts, self.dont_care_codes)
        return block_entropy(counts)

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        return self.entropies(counts) >= np.log(self.l) - TOL

    def min_distinct_values(self) -> int:
        """d distinct values have entropy at most log d (all equally frequent), so a block needs
        log d >= log l - TOL. Adjusted entropy (don't-care values) has no such bound."""
        if self.dont_care_codes:
            return 1
        n = max(1, math.ceil(self.l))
        while n > 1 and math.log(n - 1) >= math.log(self.l) - TOL:
            n -= 1
        return n

    def achieved(self, counts: np.ndarray) -> dict:
        h = block_entropy(counts)
        out = {"l_entropy": float(np.exp(h.min())) if h.size else 0.0}
        if self.dont_care_codes:
            ha = self.entropies(counts)
            out["l_entropy_adjusted"] = float(np.exp(ha.min())) if ha.size else 0.0
        return out

    def achieved_in_profile(self) -> bool:
        return not self.dont_care_codes        # l_entropy alone; the adjusted entropy is not in the profile

    def describe(self) -> str:
        extra = f" (adjusted, {len(self.dont_care_codes)} don't-care values)" if self.dont_care_codes else ""
        return f"entropy {self.l:g}-diversity{extra}"


class RecursiveCLDiversity(Criterion):
    """Recursive (c,l)-diversity and its positive/negative-disclosure variants (TKDD Sec. 4.2).

    - no don't-care values, no npd: Def. 4.2, r1 < c (r_l + ... + r_m);
    - ``dont_care_codes``: pd-recursive (c,l)-diversity, Def. 4.3;
    - ``npd=(c2, w_codes)``: npd-recursive (c1 = c, c2, l)-diversity, Def. 4.4: pd-recursive (c,l)
      and every value of W in at least c2 percent of every block.

    Achieved, under the variant's own prefix (``recursive_``, ``pd_recursive_``, ``npd_recursive_``,
    `achieved_prefix`) so that the three never share a key: ``<prefix>c``, the infimum c* over the
    blocks at this l with this variant's don't-care set (the table satisfies the model for every
    c > c*; inf when a block's tail is 0); ``<prefix>l``, the largest l the table satisfies with this
    c (0 when none does: a W value under c2 percent fails npd at every l); with npd also
    ``npd_min_percent``, the smallest share (%) of a W value in any block.

    Args:
        c: the constant c (c1 with npd): the most frequent value's count must stay below c times the
            sum of the l-th most frequent and rarer ones.
        l: the l of the model.
        dont_care_codes: codes of the values whose positive disclosure is acceptable (pd-recursive).
        npd: (c2, codes of W) for npd-recursive: every value of W in at least c2 percent of every block.

    >>> counts = np.array([[4, 2, 1], [6, 1, 0], [2, 2, 2]])    # r1 < 3 (r2 + r3)?  4 < 9, 6 < 3, 2 < 12
    >>> RecursiveCLDiversity(3, 2).block_ok(counts).tolist()
    [True, False, True]
    """

    def __init__(self, c: float, l: int, dont_care_codes: Sequence[int] = (),
                 npd: tuple[float, Sequence[int]] | None = None):
        self.c = float(c)
        self.l = int(l)
        self.dont_care_codes = tuple(int(v) for v in dont_care_codes)
        self.npd = None if npd is None else (float(npd[0]), tuple(int(v) for v in npd[1]))
        if self.npd is not None:
            self.name = "npd-recursive (c1,c2,l)-diversity"
        elif self.dont_care_codes:
            self.name = "pd-recursive (c,l)-diversity"
        else:
            self.name = "recursive (c,l)-diversity"

    def min_distinct_values(self) -> int:
        """Def. 4.2 with l >= 2: r1 < c (r_l + ... + r_m) fails when r_l = 0, so a block needs l distinct
        values. The don't-care variants (Defs. 4.3, 4.4) have no such bound."""
        if self.dont_care_codes or self.npd is not None or self.l < 2:
            return 1
        return self.l

    def block_ok(self, counts: np.ndarray) -> np.ndarray:
        ok = pd_recursive_ok(counts, self.c, self.l, self.dont_care_codes)
        if self.npd is not None:
            ok &= negative_disclosure_ok(counts, self.npd[0], self.npd[1])
        return ok

    @property
    def achieved_prefix(self) -> str:
        return "npd_recursive_" if self.npd is not None else ("pd_recursive_" if self.dont_care_codes else
                                                              "recursive_")

    def achieved(self, counts: np.ndarray) -> dict:
        a = _counts(counts)
        p = self.achieved_prefix
        if not len(a):
            out = {p + "c": 0.0, p + "l": 0}
        else:
            out = {p + "c": float(pd_recursive_c_star(a, self.l, self.dont_care_codes).max()),
                   p + "l": int(pd_recursive_max_l(a, self.c, self.dont_care_codes).min())}
        if self.npd is not None:
            share = negative_disclosure_percent(a, self.npd[1])
            out["npd_min_percent"] = float(share.min()) if share.size else 100.0
            if len(a) and not negative_disclosure_ok(a, *self.npd).all():
                out[p + "l"] = 0
        return out

    def describe(self) -> str:
        if self.npd is not None:
            return f"npd-recursive ({self.c:g}, {self.npd[0]:g}, {self.l})-diversity"
        if self.dont_care_codes:
            return f"pd-recursive ({self.c:g}, {self.l})-diversity"
        return f"recursive ({self.c:g}, {self.l})-diversity"
