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


@pytest.mark.parametrize("values, widths, origin, want", [
    # (values, widths, origin, each value's labels per level): bounds in exact decimals, as the values are written
    (["0.6", "0.55", "1.7", "1.75"], [0.1, 0.2], 0,
     {"0.6": ["[0.6, 0.7)", "[0.6, 0.8)"], "0.55": ["[0.5, 0.6)", "[0.4, 0.6)"], "1.7": ["[1.7, 1.8)", "[1.6, 1.8)"]}),
    (["-2.7", "-2.8"], [0.3, 0.9], 0, {"-2.7": ["[-2.7, -2.4)", "[-2.7, -1.8)"], "-2.8": ["[-3, -2.7)", "[-3.6, -2.7)"]}),
    (["99999999999999999", "9007199254740999", "9007199254741001"], [10], 0,       # past 2^53
     {"99999999999999999": ["[99999999999999990, 100000000000000000)"],
      "9007199254740999": ["[9007199254740990, 9007199254741000)"],
      "9007199254741001": ["[9007199254741000, 9007199254741010)"]}),
    (["9.999999999999999990", "19.999999999999999999"], [10], 0,                     # DECIMAL(38, 18)
     {"9.999999999999999990": ["[0, 10)"], "19.999999999999999999": ["[10, 20)"]}),
    (["28", "35", "-0.0"], [10, 20], 0, {"28": ["[20, 30)", "[20, 40)"], "-0.0": ["[0, 10)", "[0, 20)"]}),
    (["17.2", "16.9"], [0.7], 17, {"17.2": ["[17, 17.7)"], "16.9": ["[16.3, 17)"]}),
])
def test_intervals_are_exact(values, widths, origin, want):
    """Bounds were floats: 0.6 fell in [0.5, 0.6), 1.7 in [1.7000000000000002, 1.8000000000000003), -2.7 in
    [-3, -2.7), 99999999999999999 in [100000000000000000, ...), and levels failed to nest."""
    table = build_table("x", {"hierarchy": "intervals", "widths": widths, "origin": origin}, Path("."), values)
    got = {v: [table.labels[j][i] for j in range(1, len(widths) + 1)] for i, v in enumerate(table.values)}
    assert {v: got[v] for v in want} == want


def test_widths_are_multiples_as_written():
    """0.3 is a multiple of 0.1 (it was refused: 0.3 / 0.1 is 2.9999999999999996 in floats); 0.25 is not."""
    table = build_table("x", {"hierarchy": "intervals", "widths": [0.1, 0.3]}, Path("."), ["0.35"])
    assert table.labels[1:3] == [["[0.3, 0.4)"], ["[0.3, 0.6)"]]
    with pytest.raises(PolicyError, match="0.25 is not a multiple of 0.1"):
        build_table("x", {"hierarchy": "intervals", "widths": [0.1, 0.25]}, Path("."), ["0.35"])


def test_taxonomy_files_read_as_text(tmp_path):
    """A UTF-8 byte-order mark made the first header cell '\\ufeffchild', so an edge table was read as a wide one
    (no generalization then satisfied); a codec of bytes as encoding (rot13) and a path past the file system's
    limit were tracebacks."""
    (tmp_path / "h.csv").write_bytes("\ufeffchild,parent\nEurope,*\nFrance,Europe\nSpain,Europe\n".encode("utf-8"))
    table = build_table("c", {"hierarchy": "h.csv"}, tmp_path, ["France", "Spain"])
    assert table.labels[1:] == [["Europe", "Europe"], ["*", "*"]]
    with pytest.raises(PolicyError, match="'rot13' is a codec of bytes, not a text encoding") as e:
        build_table("c", {"hierarchy": "h.csv", "encoding": "rot13"}, tmp_path, ["France"])
    assert e.value.field == "quasi_identifiers.c.encoding"
    with pytest.raises(PolicyError, match="cannot look for") as e:
        build_table("c", {"hierarchy": "a" * 300 + ".csv"}, tmp_path, ["France"])
    assert e.value.field == "quasi_identifiers.c.hierarchy"


def test_mask_levels_are_bounded_but_not_by_the_rows_in_hand(tmp_path):
    """levels: 10^7 took 7 GB before any search; bounding levels by the longest value then refused `apply` on new
    rows whose codes are all shorter than the policy's (a 5-level mask over 4-character codes). The bound is the
    longest value or 64, whichever is more: extra levels are '*' again, as before."""
    from sqlanon.errors import PolicyError
    from sqlanon.hierarchy import MASK_LEVELS, build_table
    table = build_table("code", {"hierarchy": "mask", "levels": 5}, tmp_path, ["1234", "1299"])
    assert table.labels[-1] == ["*", "*"] and len(table.labels) == 6
    with pytest.raises(PolicyError, match=f"must be at most {MASK_LEVELS}"):
        build_table("code", {"hierarchy": "mask", "levels": 10 ** 7}, tmp_path, ["1234"])
