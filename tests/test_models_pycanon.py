"""Our privacy measures against an independent implementation, the PyPI package pycanon.

pycanon works on a released table (a pandas DataFrame) given the quasi-identifier and sensitive
columns; we build the same counts matrix from the frame with pandas and apply our functions.
docs/DESIGN.md section 4 lists where pycanon is known to be wrong, and this file uses it accordingly:

- k, distinct l, t-closeness (equal distance for string columns, ordered distance for numeric
  ones, over the values present in the table): pycanon is right; we compare directly.
- entropy l: pycanon returns int(exp(min H)), truncated to an integer; we check that our
  (unrounded) l_entropy floors to its value.
- recursive (c,l): pycanon cannot take l (it uses the table's distinct l) and sorts each block's
  counts ascending, so its r_1 is the *least* frequent count; it returns
  c = max_b floor(r_asc[0] / (r_asc[l-1] + ...) + 1). We check that formula on our counts (naming
  the defect), that it agrees with Def. 4.2 where the sort order cannot matter (every block's
  counts are equal), and show a table where pycanon's (c,l) is wrong.
- pycanon reads rows by position but classes by index label, and drops rows with NaN in a
  quasi-identifier: every frame here has a fresh RangeIndex and no NaN.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pycanon = pytest.importorskip("pycanon")
from pycanon import anonymity  # noqa: E402

from sqlanon.models.base import SensitiveDomain  # noqa: E402
from sqlanon.models.kanonymity import KAnonymity  # noqa: E402
from sqlanon.models.ldiversity import (  # noqa: E402
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
    recursive_c_star,
)
from sqlanon.models.tcloseness import TCloseness  # noqa: E402

QI = ["zip", "age"]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def counts_from_frame(df: pd.DataFrame, sensitive: str) -> tuple[np.ndarray, tuple]:
    """The (B, m) counts matrix of the released table, values in ascending order."""
    table = pd.crosstab([df[c] for c in QI], df[sensitive])
    values = tuple(table.columns)
    return table.to_numpy(dtype=np.int64), values


@st.composite
def released_tables(draw, min_rows: int = 4, max_rows: int = 30):
    """A small released table: two generalized quasi-identifiers with few values (so blocks have
    several rows) and one sensitive column, fresh RangeIndex, no NaN."""
    n = draw(st.integers(min_rows, max_rows))
    zips = draw(st.lists(st.sampled_from(["130**", "148**", "1306*"]), min_size=n, max_size=n))
    ages = draw(st.lists(st.sampled_from(["<30", "3*", ">=40"]), min_size=n, max_size=n))
    sens = draw(st.lists(st.sampled_from(["cancer", "flu", "heart", "viral"]), min_size=n, max_size=n))
    df = pd.DataFrame({"zip": zips, "age": ages, "disease": sens})
    assert isinstance(df.index, pd.RangeIndex) and not df.isna().any().any()
    return df


@SETTINGS
@given(released_tables())
def test_k_and_distinct_l_agree(df):
    counts, _ = counts_from_frame(df, "disease")
    assert KAnonymity(1).achieved(counts)["k"] == anonymity.k_anonymity(df, QI)
    assert DistinctLDiversity(1).achieved(counts)["l_distinct"] == anonymity.l_diversity(df, QI, ["disease"])


@SETTINGS
@given(released_tables())
def test_entropy_l_floors_to_pycanons_integer(df):
    counts, _ = counts_from_frame(df, "disease")
    ours = EntropyLDiversity(1).achieved(counts)["l_entropy"]
    theirs = anonymity.entropy_l_diversity(df, QI, ["disease"])
    # pycanon's defect: int(exp(min H)) drops the fraction (Figure 4's 2.83 becomes 2); the floor of
    # ours must match, up to float noise when exp(H) is an integer (a uniform block)
    assert theirs in {math.floor(ours - 1e-9), math.floor(ours + 1e-9)}


def test_entropy_l_truncation_on_figure_4():
    df = pd.DataFrame({
        "zip": ["1305*"] * 4 + ["1485*"] * 4 + ["1306*"] * 4,
        "age": ["<=40"] * 4 + [">40"] * 4 + ["<=40"] * 4,
        "disease": ["heart", "viral", "cancer", "cancer", "cancer", "heart", "viral", "viral",
                    "heart", "viral", "cancer", "cancer"],
    })
    counts, _ = counts_from_frame(df, "disease")
    assert EntropyLDiversity(1).achieved(counts)["l_entropy"] == pytest.approx(2.828, abs=1e-3)
    assert anonymity.entropy_l_diversity(df, QI, ["disease"]) == 2


@SETTINGS
@given(released_tables(), st.booleans())
def test_t_closeness_agrees(df, numeric):
    if numeric:   # pycanon uses the ordered distance for numeric columns
        df = df.assign(disease=df["disease"].map({"cancer": 10, "flu": 20, "heart": 30, "viral": 40}))
    counts, values = counts_from_frame(df, "disease")
    if numeric and len(values) < 2:
        return    # pycanon divides by m - 1
    domain = SensitiveDomain("disease", values, numeric=numeric, totals=counts.sum(axis=0))
    crit = TCloseness(0.5, "ordered" if numeric else "equal", domain)
    ours = crit.achieved(counts)[f"t_{crit.distance}"]
    assert ours == pytest.approx(anonymity.t_closeness(df, QI, ["disease"]), abs=1e-12)


def pycanon_recursive_formula(counts: np.ndarray, l: int) -> int:
    """What pycanon computes for c: counts sorted ASCENDING, c = max_b floor(r[0]/sum(r[l-1:]) + 1)."""
    cs = []
    for row in counts:
        r = np.sort(row[row > 0])
        cs.append(math.floor(r[0] / r[l - 1:].sum() + 1))
    return max(cs)


@SETTINGS
@given(released_tables())
def test_recursive_pycanon_sorts_ascending(df):
    counts, _ = counts_from_frame(df, "disease")
    l = DistinctLDiversity(1).achieved(counts)["l_distinct"]
    c, l_theirs = anonymity.recursive_c_l_diversity(df, QI, ["disease"])
    assert l_theirs == l       # pycanon's l is the table's distinct l, not a parameter
    if l == 1:
        assert np.isnan(c)
        return
    assert c == pycanon_recursive_formula(counts, l)


@SETTINGS
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 3)), min_size=1, max_size=3))
def test_recursive_agrees_when_sort_order_cannot_matter(spec):
    # every block holds `distinct` values `each` times: ascending and descending sorts coincide,
    # and pycanon's c is the least integer c for which Def. 4.2 holds (c > c*)
    rows = []
    for b, (distinct, each) in enumerate(spec):
        for v in ["cancer", "flu", "heart", "viral"][:distinct]:
            rows += [(f"z{b}", "*", v)] * each
    df = pd.DataFrame(rows, columns=["zip", "age", "disease"])
    counts, _ = counts_from_frame(df, "disease")
    c, l = anonymity.recursive_c_l_diversity(df, QI, ["disease"])
    if l == 1:
        return
    c_star = recursive_c_star(counts, l).max()
    assert c == math.floor(c_star) + 1
    assert RecursiveCLDiversity(c, l).block_ok(counts).all()
    assert not RecursiveCLDiversity(c - 1, l).block_ok(counts).all()


def test_recursive_pycanon_is_wrong_on_a_skewed_block():
    # blocks: {cancer x5, flu, heart} and {cancer, flu, heart}; pycanon says (2, 3)-diverse, but
    # the first block has r1 = 5 and r3 = 1: 5 < 2 * 1 fails. Def. 4.2 needs c > 5.
    rows = [("a", "*", "cancer")] * 5 + [("a", "*", "flu"), ("a", "*", "heart")] + \
           [("b", "*", "cancer"), ("b", "*", "flu"), ("b", "*", "heart")]
    df = pd.DataFrame(rows, columns=["zip", "age", "disease"])
    counts, _ = counts_from_frame(df, "disease")
    assert anonymity.recursive_c_l_diversity(df, QI, ["disease"]) == (2, 3)
    assert RecursiveCLDiversity(2, 3).block_ok(counts).tolist() == [False, True]
    assert RecursiveCLDiversity(2, 3).achieved(counts)["recursive_c"] == 5.0


# -- a table sqlanon released, end to end -----------------------------------------------------------

def test_a_released_adult_table_agrees_with_pycanon(tmp_path):
    """The manifest's achieved values for a real release, against pycanon on the released rows."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from sqlanon.anonymizer import Anonymization

    from conftest import adult_policy

    qis = ["age", "sex", "race", "marital_status"]
    policy = adult_policy(qis, {"k": 10, "l_diversity": {"variant": "entropy", "l": 3}})
    with Anonymization(policy, db=tmp_path / "r.duckdb") as run:
        run.choose()
        run.materialize()
        achieved = run.manifest()["privacy"]
        # a small released table (a few thousand rows) read back for the independent check only
        df = run.backend.con.execute('SELECT * FROM adult_release').df()
    df = df.astype(str).reset_index(drop=True)        # fresh RangeIndex, no NaN (pycanon's known defects)
    assert not df.isna().any().any()
    assert achieved["k"] == anonymity.k_anonymity(df, qis)
    assert achieved["l_distinct"] == anonymity.l_diversity(df, qis, ["occupation"])
    assert math.floor(achieved["l_entropy"] + 1e-9) == anonymity.entropy_l_diversity(df, qis, ["occupation"])
    assert achieved["t_equal"] == pytest.approx(anonymity.t_closeness(df, qis, ["occupation"]), abs=1e-6)
