"""Hierarchy kinds become label tables with the expected labels, heights and codes (table-driven)."""
from __future__ import annotations

from pathlib import Path

import pytest

from sqlanon.errors import DataError, PolicyError
from sqlanon.hierarchy import HierarchyTable, build_table, load_taxonomy_csv

CASES = [
    # (spec, data values, value to look at, its labels from level 0 up)
    ({"hierarchy": "intervals", "widths": [5, 10, 20]}, ["17", "23", "90"], "17",
     ["17", "[15, 20)", "[10, 20)", "[0, 20)", "*"]),
    ({"hierarchy": "intervals", "widths": [5, 10, 20]}, ["17", "23", "90"], "90",
     ["90", "[90, 95)", "[90, 100)", "[80, 100)", "*"]),
    ({"hierarchy": "round", "levels": 4}, ["1234", "7"], "1234",
     ["1234", "[1230, 1240)", "[1200, 1300)", "[1000, 2000)", "*"]),
    ({"hierarchy": "mask", "levels": 5}, ["13053", "14853"], "13053",
     ["13053", "1305*", "130**", "13***", "1****", "*"]),
    ({"hierarchy": "mask", "levels": 2}, ["13053", "14853"], "14853", ["14853", "1485*", "148**", "*"]),
    ({"hierarchy": "dates"}, ["2024-02-29", "2023-12-31"], "2024-02-29", ["2024-02-29", "2024-02", "2024", "*"]),
    ({"hierarchy": "suppress"}, ["Male", "Female"], "Female", ["Female", "*"]),
]


@pytest.mark.parametrize("spec, values, value, expected", CASES)
def test_generated_hierarchy_labels(spec, values, value, expected):
    table = build_table("a", spec, Path("."), values)
    table.validate()
    i = table.values.index(value)
    assert [level[i] for level in table.labels] == expected
    assert table.height == len(expected) - 1


def test_codes_follow_value_order_and_leaf_counts_cover_the_domain():
    table = build_table("age", {"hierarchy": "intervals", "widths": [5, 10]}, Path("."),
                        ["31", "17", "19", "23"])
    assert table.values == ["17", "19", "23", "31"]            # numeric order, not text order
    assert table.codes().tolist() == [[0, 1, 2, 3], [0, 0, 1, 2], [0, 0, 1, 2], [0, 0, 0, 0]]
    # [15, 20) covers 17 and 19; the root covers all four base values
    assert table.leaf_counts().tolist() == [[1, 1, 1, 1], [2, 2, 1, 1], [2, 2, 1, 1], [4, 4, 4, 4]]


@pytest.mark.parametrize("labels, nested", [
    # (labels per level, aligned with the values; HierarchyTable.nested_codes())
    ([["1", "2", "3", "4"], ["a", "a", "b", "b"], ["*"] * 4], True),
    ([["1", "2", "3", "4"], ["a", "b", "a", "b"], ["*"] * 4], False),     # each label split in two runs
    ([["1", "2", "3"], ["x", "y", "y"], ["x", "y", "y"], ["*"] * 3], True),
    ([["1", "2", "3", "4"], ["a", "a", "b", "c"], ["p", "q", "p", "p"], ["*"] * 4], False),   # level 2 only
    ([["7"], ["*"]], True),
])
def test_nested_codes(labels, nested):
    assert HierarchyTable("q", list(labels[0]), labels).nested_codes() is nested


def test_generated_hierarchies_have_nested_codes():
    """Generated hierarchies sort their values, so sorting rows by the level-0 code groups every level."""
    values = [str(v) for v in range(17, 90, 3)]
    for spec in ({"hierarchy": "intervals", "widths": [5, 10, 20]}, {"hierarchy": "round", "levels": 2},
                 {"hierarchy": "mask"}):
        assert build_table("age", spec, Path("."), values).nested_codes(), spec


def _csv(tmp_path, text):
    p = tmp_path / "h.csv"
    p.write_text(text)
    return p


def test_taxonomy_csv_reads_levels(tmp_path):
    t = load_taxonomy_csv(_csv(tmp_path, "v,l1,l2\na,x,*\nb,x,*\nc,y,*\n"), "attr")
    assert t.height == 2
    assert t.domain_sizes() == [3, 2, 1]


@pytest.mark.parametrize("text, message", [
    ("v,l1,l2\na,x,*\na,y,*\n", "appears twice"),
    ("v,l1,l2\na,x,*\nb,x,**\n", "two parents"),
    ("v,l1\na,x,*\n", "columns"),
])
def test_taxonomy_that_is_not_a_tree_is_refused(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        load_taxonomy_csv(_csv(tmp_path, text), "attr")


@pytest.mark.parametrize("spec, field", [
    ({"hierarchy": "intervals", "widths": [5, 7]}, "widths"),
    ({"hierarchy": "intervals", "widths": "5"}, "widths"),
    ({"hierarchy": "round", "levels": 0}, "levels"),
    ({"hierarchy": "missing_file.csv"}, "hierarchy"),
])
def test_bad_hierarchy_specs_name_their_field(spec, field):
    with pytest.raises(PolicyError, match=field):
        build_table("a", spec, Path("."), ["1", "2"])


def test_intervals_refuse_text_values():
    with pytest.raises(DataError, match="not a number"):
        build_table("a", {"hierarchy": "intervals", "widths": [5]}, Path("."), ["x"])
