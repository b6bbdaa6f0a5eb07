"""Hierarchy authoring: the parent-child edge-table kind, and `sqlanon hierarchy check` listing values
missing from a hierarchy, duplicate values, values with two parents and levels that do not nest."""
from __future__ import annotations

import csv
import json
import random
import tempfile
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.cli import main
from sqlanon.errors import DataError
from sqlanon.hierarchy import edge_table, file_problems, load_taxonomy_csv

from conftest import ADULT

TAXONOMIES = ["education", "marital_status", "native_country", "workclass", "occupation"]


def wide_to_edges(path) -> str:
    """A wide taxonomy CSV as an edge table: each row's path from its value up, a label repeated on the
    next level (workclass: Private, Private, *) being one node, so such a leaf is shallower."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))[1:]
    edges = {}
    for row in rows:
        path_up = [row[0]] + [label for i, label in enumerate(row[1:], 1) if label != row[i - 1]]
        for child, parent in zip(path_up, path_up[1:]):
            edges.setdefault((child, parent), None)
    return "child,parent\n" + "".join(f'"{c}","{p}"\n' for c, p in edges)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("name", TAXONOMIES)
def test_edge_table_gives_the_same_hierarchy_as_the_wide_csv(tmp_path, name):
    wide = load_taxonomy_csv(ADULT / "hierarchies" / f"{name}.csv", name)
    edges = load_taxonomy_csv(_write(tmp_path, f"{name}_edges.csv", wide_to_edges(ADULT / "hierarchies" /
                                                                                    f"{name}.csv")), name)
    assert edges.values == wide.values
    assert edges.labels == wide.labels
    assert edges.digest() == wide.digest()          # so a manifest's hash does not depend on the format


def test_unequal_depths_keep_a_shallow_leaf_on_the_lower_levels(tmp_path):
    text = "child,parent\nFrance,Europe\nGermany,Europe\nEurope,*\nUnknown,*\nPeru,South-America\n" \
           "South-America,America\nAmerica,*\n"
    t = load_taxonomy_csv(_write(tmp_path, "c.csv", text), "country")
    assert t.values == ["France", "Germany", "Unknown", "Peru"]
    assert t.height == 3
    by_value = {v: [level[i] for level in t.labels] for i, v in enumerate(t.values)}
    assert by_value == {"France": ["France", "France", "Europe", "*"],
                        "Germany": ["Germany", "Germany", "Europe", "*"],
                        "Unknown": ["Unknown", "Unknown", "Unknown", "*"],
                        "Peru": ["Peru", "South-America", "America", "*"]}


@st.composite
def trees(draw):
    """A random rooted tree: node i > 0 gets a parent among the nodes before it; leaves are the data values."""
    n = draw(st.integers(2, 40))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    order = draw(st.permutations(list(range(1, n))))
    return parents, order


@settings(max_examples=60, deadline=None)
@given(trees())
def test_edge_table_levels_are_each_leafs_path_to_the_root(tree):
    parents, order = tree
    name = {i: f"n{i}" if i else "*" for i in range(len(parents))}
    rows = [(line, [name[i], name[parents[i]]]) for line, i in enumerate(order, start=2)]
    t = edge_table("a", rows, "random")
    children = {p for p in parents if p is not None}
    leaves = [i for i in order if i not in children]
    assert t.values == [name[i] for i in leaves]
    for i, leaf in enumerate(leaves):
        path = [leaf]
        while parents[path[-1]] is not None:
            path.append(parents[path[-1]])
        column = [level[i] for level in t.labels]
        # the labels from level 0 up are the path to the root with the leaf repeated at the bottom
        collapsed = [label for j, label in enumerate(column) if j == 0 or label != column[j - 1]]
        assert collapsed == [name[p] for p in path]
        assert column[-1] == "*" and column.count(name[leaf]) == t.height + 1 - (len(path) - 1)
    # and the same tree written as a wide CSV reads back as the same table
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "wide.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow([f"level_{j}" for j in range(t.height + 1)])
            w.writerows(zip(*t.labels))
        wide = load_taxonomy_csv(path, "a")
    assert (wide.values, wide.labels) == (t.values, t.labels)


@pytest.mark.parametrize("text, message", [
    ("child,parent\na,x\na,y\nx,*\ny,*\n", "'a' has two parents ('x' and 'y'"),
    ("child,parent\na,x\nx,y\ny,x\n", "cycle (x -> y -> x)"),
    ("child,parent\na,x\nb,y\n", "2 roots ('x', 'y')"),
    ("child,parent\na,x\na,x\nx,*\n", "child 'a' appears on lines [2, 3]"),
    ("child,parent\na\nx,*\n", "line 2: a row needs two non-empty cells"),
    ("child,parent\na,a\n", "line 2: a node cannot be its own parent"),
])
def test_edge_tables_that_are_not_trees_are_refused(tmp_path, text, message):
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        load_taxonomy_csv(_write(tmp_path, "h.csv", text), "attr")


def test_file_problems_lists_every_problem_of_an_edge_table(tmp_path):
    text = "child,parent\na,x\na,y\nb,x\nb,x\nx,*\ny,*\np,q\nq,p\nr,r\nlonely\nz,other_root\n"
    found = file_problems(_write(tmp_path, "h.csv", text))
    p = found["problems"]
    assert found["format"] == "edges"
    assert p["two_parents"] == [{"level": None, "label": "a", "parents": ["x", "y"], "lines": [2, 3]}]
    assert [d["value"] for d in p["duplicates"]] == ["a", "b"] and p["duplicates"][1]["lines"] == [4, 5]
    assert p["cycles"] == [["p", "q", "p"]]
    assert p["several_roots"] == ["*", "other_root"]
    assert [m["line"] for m in p["malformed_rows"]] == [10, 11]
    assert found["height"] is None                   # undefined while there is a cycle


def test_file_problems_lists_every_problem_of_a_wide_csv(tmp_path):
    text = "v,l1,l2\na,x,*\na,x,*\nb,x,*\nb,y,*\nc,y,*\nd,z,*\ne,z,**\nf,w\n"
    found = file_problems(_write(tmp_path, "h.csv", text))
    p = found["problems"]
    assert found["format"] == "wide" and found["column"] == "v" and found["height"] == 2
    assert p["duplicates"] == [{"value": "a", "rows": 2}, {"value": "b", "rows": 2}]
    assert p["two_parents"] == [{"level": 0, "label": "b", "parents": ["x", "y"]}]
    assert p["not_nesting"] == [{"level": 1, "label": "z", "parents": ["*", "**"]}]
    assert p["malformed_rows"] == [{"line": 9, "row": ["f", "w"], "why": "2 columns, the header has 3"}]


def _adult_policy(hierarchy_dir, occupation):
    return {"source": {"parquet": str(ADULT / "adult.parquet"), "table": "adult"},
            "quasi_identifiers": {"age": {"hierarchy": "intervals", "widths": [5, 10, 20]},
                                  "marital_status": {"hierarchy": str(hierarchy_dir / "marital_status.csv")},
                                  "education": {"hierarchy": str(hierarchy_dir / "education.csv")},
                                  "workclass": {"hierarchy": str(hierarchy_dir / "workclass.csv")}},
            "sensitive": {"occupation": {"hierarchy": str(occupation)}},
            "privacy": {"k": 5, "t_closeness": {"t": 0.4, "distance": "hierarchical"}},
            "release": {"name": "r", "materialize": "none"}}


def test_anonymizing_with_edge_tables_gives_the_same_release(tmp_path):
    for name in TAXONOMIES:
        _write(tmp_path, f"{name}.csv", wide_to_edges(ADULT / "hierarchies" / f"{name}.csv"))
    results = []
    for folder in (ADULT / "hierarchies", tmp_path):
        with sqlanon.search_and_choose(_adult_policy(folder, folder / "occupation.csv")) as run:
            results.append(([c.as_dict() for c in run.candidates], run.chosen.levels,
                            run.achieved(run.chosen.result), run.fs.sensitives[0].domain.levels.tolist()))
    assert results[0] == results[1]
    assert len(results[0][0]) >= 2 and "t_hierarchical" in results[0][2]


# --------------------------------------------------------------------------------------------------
# sqlanon hierarchy check

def _check(*args):
    return CliRunner().invoke(main, ["hierarchy", "check", *map(str, args)])


def test_check_is_clean_on_the_shipped_hierarchies():
    for name in TAXONOMIES:
        r = _check(ADULT / "hierarchies" / f"{name}.csv", "--data", ADULT / "adult.parquet")
        assert r.exit_code == 0, r.output
        assert r.output.strip().endswith("clean")


def test_check_lists_missing_values_with_their_rows_like_pandas(tmp_path):
    # the countries hierarchy without its Central American rows
    lines = (ADULT / "hierarchies" / "native_country.csv").read_text().splitlines()
    kept = [line for line in lines if "Central-America" not in line]
    path = _write(tmp_path, "countries.csv", "\n".join(kept) + "\n")
    r = _check(path, "--data", ADULT / "adult.parquet", "--json")
    assert r.exit_code == 3, r.output
    result = json.loads(r.output)
    listed = {row.split(",")[0] for row in kept[1:]}
    counts = pd.read_parquet(ADULT / "adult.parquet", columns=["native_country"])["native_country"].value_counts()
    expected = [{"value": v, "rows": int(counts[v]), "inner_label": False}
                for v in sorted(set(counts.index) - listed)]
    assert len(expected) >= 5 and result["problems"]["missing"] == expected
    assert result["column"] == "native_country" and result["rows"] == 45222 and not result["clean"]
    assert all(not v for k, v in result["problems"].items() if k != "missing")


def test_check_reports_every_kind_of_problem_and_exits_3(tmp_path):
    hierarchy = _write(tmp_path, "cities.csv", "child,parent\nLyon,France\nLyon,Europe\nRome,Italy\n"
                                              "Italy,Europe\nFrance,Europe\nEurope,*\nOslo,Norway\nOslo,Norway\n"
                                              "Norway,*\n")
    data = _write(tmp_path, "people.csv", "id,city\n1,Lyon\n2,Rome\n3,Paris\n4,Paris\n5,Paris\n6,Europe\n7,\n8,\n"
                                         "9,Oslo\n")
    r = _check(hierarchy, "--data", data, "--column", "city", "--json")
    assert r.exit_code == 3, r.output
    p = json.loads(r.output)["problems"]
    assert p["missing"] == [{"value": "Europe", "rows": 1, "inner_label": True},
                            {"value": "Paris", "rows": 3, "inner_label": False}]
    assert p["null_values"] == [{"rows": 2}]
    assert [d["label"] for d in p["two_parents"]] == ["Lyon"]
    assert [d["value"] for d in p["duplicates"]] == ["Lyon", "Oslo"]
    text = _check(hierarchy, "--data", data, "--column", "city")
    assert text.exit_code == 3
    for line in ("values missing from the hierarchy: 2", "'Paris' (3 rows)", "an inner label",
                 "values with two parents: 1", "'Lyon': 'France', 'Europe'", "problems found"):
        assert line in text.output, text.output


def test_check_names_the_other_text_of_a_listed_float(tmp_path):
    """-0.0 equals 0.0, but the run joins a float to its hierarchy by text: a file listing 0.0 only does not cover
    the rows of -0.0, and the check must say so (it said clean: DuckDB decorrelated its NOT EXISTS by grouping
    the column's values, 0.0 and -0.0 as one)."""
    db = tmp_path / "d.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (0.0::DOUBLE), (CAST('-0.0' AS DOUBLE)), "
                "(CAST('-0.0' AS DOUBLE)), (1.5::DOUBLE)) v(x)")
    con.close()
    hierarchy = _write(tmp_path, "x.csv", "x,level_1\n0.0,low\n1.5,high\n")
    r = _check(hierarchy, "--data", db, "--table", "t", "--json")
    assert r.exit_code == 3, r.output
    assert json.loads(r.output)["problems"]["missing"] == [{"value": "-0.0", "rows": 2, "inner_label": False}]


def test_check_reads_a_duckdb_table_and_notes_unequal_depths(tmp_path):
    db = tmp_path / "d.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people AS SELECT * FROM (VALUES ('France'), ('Peru'), ('Unknown')) t(country)")
    con.close()
    hierarchy = _write(tmp_path, "c.csv", "child,parent\nFrance,Europe\nEurope,*\nUnknown,*\nPeru,South-America\n"
                                         "South-America,America\nAmerica,*\n")
    r = _check(hierarchy, "--data", db, "--table", "people")
    assert r.exit_code == 0, r.output
    assert "leaves at several depths (1 at depth 1, 1 at depth 2, 1 at depth 3)" in r.output


@pytest.mark.parametrize("args, needle", [
    (["{tmp}/nope.csv", "--data", "{adult}"], "does not exist"),
    (["{edu}", "--data", "{tmp}/nope.parquet"], "does not exist"),
    (["{edu}", "--data", "{adult}", "--column", "nope"], "'nope' is not a column"),
    (["{edges}", "--data", "{adult}"], "--column"),
    (["{edu}", "--data", "{edu}", "--table", "t"], "is for a DuckDB file"),
    (["{edu}", "--data", "{tmp}/x.txt"], "give a .csv, .parquet or .duckdb"),
    (["{tmp}/broken.csv", "--data", "{adult}"], "needs a header row"),
])
def test_check_bad_input_is_one_line_and_exit_2(tmp_path, args, needle):
    _write(tmp_path, "x.txt", "hello")
    _write(tmp_path, "broken.csv", "only a header\n")
    _write(tmp_path, "edges.csv", "child,parent\na,*\n")
    subs = {"tmp": tmp_path, "adult": ADULT / "adult.parquet", "edu": ADULT / "hierarchies" / "education.csv",
            "edges": tmp_path / "edges.csv"}
    r = _check(*[a.format(**subs) for a in args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sqlanon: error:") and needle in lines[0], r.stderr


def test_random_edge_rows_order_does_not_change_the_hierarchy(tmp_path):
    text = wide_to_edges(ADULT / "hierarchies" / "education.csv").splitlines()
    rows = text[1:]
    random.Random(7).shuffle(rows)
    a = load_taxonomy_csv(_write(tmp_path, "a.csv", "\n".join(text) + "\n"), "education")
    b = load_taxonomy_csv(_write(tmp_path, "b.csv", "\n".join([text[0]] + rows) + "\n"), "education")
    # the same tree: the same labels per value (the order of the values follows the file)
    assert {v: [lv[i] for lv in a.labels] for i, v in enumerate(a.values)} == \
        {v: [lv[i] for lv in b.labels] for i, v in enumerate(b.values)}
