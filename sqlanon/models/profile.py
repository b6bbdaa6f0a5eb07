"""The privacy a set of blocks achieves, whatever the policy asked for (`sqlanon check`, the manifest).

For the blocks' sizes and, per sensitive attribute, their counts matrix: the smallest class (k), the
distinct l, exp of the smallest block entropy (entropy l, TKDD Def. 4.1), the infimum c* of plain
recursive (c,l)-diversity (Def. 4.2, no don't-care values; the table is recursive (c,l)-diverse for
every c > c*) as ``recursive_c``, computed at ``recursive_c_at_l`` = the l of the policy's recursive
model (2 without one), and the largest EMD of any block under each distance the attribute allows
(equal always, ordered for numbers, hierarchical when it has a hierarchy).

The policy's own criteria add their values under their own keys: a recursive model the largest l it
holds for with its c (``recursive_l``); a pd-recursive one (Def. 4.3) its c* with its don't-care set
and its achieved l (``pd_recursive_c``, ``pd_recursive_l``); an npd-recursive one (Def. 4.4)
``npd_recursive_c``, ``npd_recursive_l`` and ``npd_min_percent``; entropy with don't-care values
``l_entropy_adjusted``. Keys of the first sensitive attribute are plain (``l_entropy``); the others are
prefixed with their name (``salary.l_entropy``). An infinite c* (a block whose tail is 0) is reported
as None.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .base import Criterion, SensitiveDomain
from .ldiversity import TOL, RecursiveCLDiversity, block_entropy, distinct_values, recursive_c_star
from .risk import TableCriterion
from .tcloseness import TCloseness


def _finite(x: float):
    return float(x) if math.isfinite(x) else None


def achieved_profile(sizes: np.ndarray, counts: dict[str, np.ndarray], domains: dict[str, SensitiveDomain],
                     criteria: Sequence[Criterion] = ()) -> dict:
    """The privacy the released classes achieve, whatever the policy asked: k, distinct and entropy l,
    recursive c* at the policy's l (2 by default), t under the equal distance (and the table-level models'
    values); for a second sensitive attribute the keys carry its name as a prefix.

    Args:
        sizes: (B,) the released classes' sizes.
        counts: sensitive attribute -> (B, m) counts of each value per class.
        domains: sensitive attribute -> its `SensitiveDomain` (with `totals` for t).
        criteria: the policy's criteria (the l of recursive (c,l), the table-level models).

    Returns:
        name -> achieved value (None where infinite).

    Two classes of 3 over two diseases, 1:2 and 2:1, the table 3:3:

    >>> disease = SensitiveDomain("disease", ("Cancer", "Flu"), totals=np.array([3, 3]))
    >>> p = achieved_profile(np.array([3, 3]), {"disease": np.array([[1, 2], [2, 1]])}, {"disease": disease})
    >>> p["k"], p["l_distinct"], p["l_entropy"], p["recursive_c"], p["t_equal"]   # exp(H(1/3, 2/3)); 2 < c * 1
    (3, 2, 1.889881, 2.0, 0.166667)
    """
    out: dict = {"k": int(sizes.min()) if len(sizes) else 0, "classes": int(len(sizes))}
    for c in criteria:     # table-level models (average risk, records at risk) report on the class sizes
        if isinstance(c, TableCriterion):
            out.update(c.value(sizes))
    names = list(domains)
    for name, mat in counts.items():
        prefix = "" if name == names[0] else f"{name}."
        domain = domains[name]
        l = next((c.l for c in criteria if isinstance(c, RecursiveCLDiversity) and c.sensitive == name), 2)
        if len(mat):
            out[prefix + "l_distinct"] = int(distinct_values(mat).min())
            out[prefix + "l_entropy"] = reported(float(np.exp(block_entropy(mat).min())), down=True)
            out[prefix + "recursive_c"] = _finite(float(recursive_c_star(mat, l).max()))
            out[prefix + "recursive_c_at_l"] = int(l)
        distances = ["equal"] + (["ordered"] if domain.numeric and domain.size > 1 else []) + \
            (["hierarchical"] if domain.levels is not None else [])
        for d in distances:
            out[prefix + f"t_{d}"] = reported(TCloseness(1.0, d, domain).achieved(mat)[f"t_{d}"], down=False)
        for c in criteria:
            # a criterion whose keys the profile set above adds nothing (`achieved_in_profile`): not run again
            if c.needs_sensitive and c.sensitive == name and not (len(mat) and c.achieved_in_profile()):
                for key, value in c.achieved(mat).items():
                    out.setdefault(prefix + key, _finite(value) if isinstance(value, float) else value)
    return out


def reported(value: float, down: bool) -> float:
    """`value` to 6 decimals for a report, never on the side that claims more privacy than the table has: an
    achieved l (more is more private) is not rounded up, an achieved t (less is more private) not down, beyond
    the models' tolerance (`ldiversity.TOL`). Plain rounding reported l_entropy 3 for 2.9999997 beside "does NOT
    satisfy l = 3", and t 0.2 for 0.2000005.

    Examples:
        >>> reported(2.9999997, down=True), reported(2.0 - 4e-16, down=True), reported(0.2000005, down=False)
        (2.999999, 2.0, 0.200001)
    """
    r = round(value, 6)
    if down and r > value * (1 + TOL):
        return math.floor(value * 1e6) / 1e6
    if not down and r < value * (1 - TOL):
        return math.ceil(value * 1e6) / 1e6
    return r


# How `achieved_profile_in_chunks` combines one key's values over chunks of blocks (the key without its
# attribute prefix): every value is a worst case over blocks, so the least of the chunks' values or the
# largest; these take the largest (None, an infinite c*, beats any number), "classes" adds up, "recursive_c_at_l"
# is the same in every chunk, and any other key takes the least (k, the l values, npd_min_percent).
LARGEST_KEYS = ("beta", "delta")
LARGEST_SUFFIXES = ("_c",)
LARGEST_PREFIXES = ("t_",)


def _combine(key: str, values: list):
    bare = key.rsplit(".", 1)[-1]
    if bare == "classes":
        return sum(values)
    if bare == "recursive_c_at_l":
        return values[0]
    if bare in LARGEST_KEYS or bare.endswith(LARGEST_SUFFIXES) or bare.startswith(LARGEST_PREFIXES):
        return None if any(v is None for v in values) else max(values)
    return min(values)


def achieved_profile_in_chunks(sizes: np.ndarray | None, chunks, domains: dict[str, SensitiveDomain],
                               criteria: Sequence[Criterion] = ()) -> dict:
    """`achieved_profile` of many blocks, from chunks of them: what a release of millions of classes can
    afford (a dense matrix of 1.3 M classes by 147 values is 1.5 GB, and the entropies as much again).

    Args:
        sizes: (B,) every released class's size (the table-level models read them all at once); None: the
            chunks' sizes, in order (every released class is in a chunk: a caller that learns the sizes from the
            chunks themselves).
        chunks: an iterable of (sizes of some of the blocks, attribute -> their (b, m) counts); every block in
            exactly one chunk.
        domains, criteria: as for `achieved_profile`.

    Returns:
        The same dict as `achieved_profile` of all the blocks at once.

    >>> disease = SensitiveDomain("disease", ("Cancer", "Flu"), totals=np.array([3, 3]))
    >>> mat = np.array([[1, 2], [2, 1]])
    >>> parts = [(np.array([3]), {"disease": mat[:1]}), (np.array([3]), {"disease": mat[1:]})]
    >>> achieved_profile_in_chunks(np.array([3, 3]), parts, {"disease": disease}) == achieved_profile(
    ...     np.array([3, 3]), {"disease": mat}, {"disease": disease})
    True
    >>> achieved_profile_in_chunks(None, parts, {"disease": disease})["k"]       # the sizes from the chunks
    3
    """
    per_block = [c for c in criteria if not isinstance(c, TableCriterion)]
    values: dict[str, list] = {}
    seen: list[np.ndarray] = []
    for part_sizes, counts in chunks:
        if sizes is None:
            seen.append(np.asarray(part_sizes))
        for key, value in achieved_profile(part_sizes, counts, domains, per_block).items():
            values.setdefault(key, []).append(value)
    if not values:
        raise ValueError("no blocks: use achieved_profile")
    # k, classes and the table-level models from every size, first, as achieved_profile orders them
    sizes = np.concatenate(seen) if sizes is None else np.asarray(sizes)
    out = achieved_profile(sizes, {}, domains, [c for c in criteria if isinstance(c, TableCriterion)])
    out.update({key: _combine(key, vs) for key, vs in values.items() if key not in out})
    return out
