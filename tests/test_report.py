"""`sqlanon report` / `run.report()`: what the release report says, checked against hand-computed values
of the l-diversity paper's hospital table (TKDD Figure 1) and a brute-force pass over the lattice; the
external variant's masking of small cells; the report recomputed from a manifest; bad input."""
from __future__ import annotations

import hashlib
import json
import re

import duckdb
import pytest
from click.testing import CliRunner

import sqlanon
from sqlanon.cli import main
from sqlanon.lattice import minimal_nodes
from sqlanon.report import ReportOptions, render, report_context

from conftest import HOSPITAL

# Heart Disease and Cancer are chronic, Viral Infection is not: the similarity attack's semantic groups
GROUPS = {"Heart Disease": "chronic", "Cancer": "chronic", "Viral Infection": "infection"}


def hospital_policy(k: int = 2, **privacy) -> dict:
    return {"source": {"csv": str(HOSPITAL / "hospital.csv"), "table": "hospital"},
            "quasi_identifiers": {"zip_code": {"hierarchy": str(HOSPITAL / "hierarchies" / "zip_code.csv")},
                                  "age": {"hierarchy": str(HOSPITAL / "hierarchies" / "age.csv")},
                                  "nationality": {"hierarchy": "suppress"}},
            "sensitive": ["condition"], "privacy": {"k": k, **privacy}, "utility": "discernibility",
            "release": {"name": "hospital_release", "materialize": "none"}}


def _counts(page: str) -> list[int]:
    """Every count of rows the page prints exactly (the report marks them with data-count)."""
    return [int(n) for n in re.findall(r'data-count="(\d+)"', page)]


@pytest.fixture(scope="module")
def hospital_run():
    run = sqlanon.search_and_choose(hospital_policy(k=2))
    yield run
    run.close()


def test_lattice_states_match_brute_force(hospital_run):
    run = hospital_run
    ctx = report_context(run, ReportOptions(groups=GROUPS))
    brute = {n for n in run.lattice.nodes() if run.checker.evaluate(run.lattice.levels(n)).satisfied}
    assert {n for n, s in ctx["states"].items() if s != "unsat"} == brute
    assert sorted(n for n, s in ctx["states"].items() if s in ("minimal", "chosen")) == minimal_nodes(brute)
    # k = 2 on Figure 1: zip code kept, age in three ranges, nationality suppressed: six classes of two
    # (discernibility 6 * 2^2 = 24), against the other minimal node (zip *, age *, nationality kept):
    # American 6, others 2 each (36 + 3 * 4 = 48)
    assert [n for n, s in ctx["states"].items() if s == "chosen"] == [(0, 1, 1)]
    assert [c.metrics["discernibility"] for c in ctx["ranked"]] == [24.0, 48.0]
    assert ctx["rank"] == 0 and ctx["classes"] == 6 and list(ctx["sizes"]) == [2] * 6
    assert ctx["histogram"] == [{"label": "2-4", "lo": 2, "hi": 5, "classes": 6, "rows": 12}]


def test_attacks_and_models_by_hand(hospital_run):
    ctx = report_context(hospital_run, ReportOptions(groups=GROUPS))
    homogeneity, homogeneity95, similarity = ctx["attacks"]
    # homogeneous classes at (0, 1, 1): 14850/>=40 (Viral, Viral), 13053/3* and 13068/3* (Cancer, Cancer)
    assert (homogeneity.affected_blocks, homogeneity.exposed_rows) == (3, 6)
    assert homogeneity.by_disclosed == {"Cancer": 4, "Viral Infection": 2}
    assert (homogeneity95.affected_blocks, homogeneity95.exposed_rows) == (3, 6)
    # similarity adds 14853/>=40 (Cancer, Heart Disease: both chronic)
    assert (similarity.affected_blocks, similarity.exposed_rows) == (4, 8)
    assert similarity.by_disclosed == {"chronic": 6, "infection": 2}
    assert ctx["models"] == [{"model": "2-anonymity", "attribute": None, "achieved": {"k": 2}}]
    assert ctx["achieved"]["l_distinct"] == 1


def test_page_shows_the_chosen_node_attacks_and_policy(hospital_run):
    page = render(report_context(hospital_run, ReportOptions(groups=GROUPS)))
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r'(src|href)="(?!data:)', page)          # nothing to fetch: no src/href at all
    assert page.count('<tr class="chosen">') == 1
    assert page.count('class="node ') == 18                         # every node of the Hasse diagram
    chosen_row = re.search(r'<tr class="chosen">(.*?)</tr>', page, re.S).group(1)
    assert [int(x) for x in re.findall(r"<td>(\d+)</td>", chosen_row)[1:4]] == [0, 1, 1]
    # the largest exposed classes are named by their generalized labels (internal report)
    assert "14850" in page and "Viral Infection" in page and 'class="examples"' in page
    assert "similarity (one semantic group)" in page
    assert "hospital.csv" in page                                  # the policy, as YAML
    small = [n for n in _counts(page) if 0 < n < 10]
    assert 2 in small and 6 in small                               # class sizes, exposed rows


def test_external_report_hides_small_cells(hospital_run):
    internal = render(report_context(hospital_run, ReportOptions(groups=GROUPS)))
    external = render(report_context(hospital_run, ReportOptions(external=True, groups=GROUPS)))
    assert all(n == 0 or n >= 10 for n in _counts(external)), _counts(external)
    assert external.count('class="count masked"') >= 8
    # the exposed classes' labels and the examples table are gone; counts of classes stay
    for label in ("13053", "13068", "14850", "14853"):
        assert label in internal and label not in external
    assert 'class="examples"' not in external and "external-note" in external
    attack_rows = re.findall(r'<tr class="attack">(.*?)</tr>', external, re.S)
    assert len(attack_rows) == 3 and all("&lt; 10" in r for r in attack_rows)
    # a lower threshold shows what is not small under it, and still hides the rest
    low = render(report_context(hospital_run, ReportOptions(external=True, min_cell=3, groups=GROUPS)))
    assert 6 in _counts(low) and 2 not in _counts(low)
    # a count exactly at min_cell is shown: only counts below it are masked
    at = render(report_context(hospital_run, ReportOptions(external=True, min_cell=6, groups=GROUPS)))
    assert 6 in _counts(at) and 2 not in _counts(at)


@pytest.mark.parametrize("external, min_cell, n, hidden", [
    # external  min_cell  count  masked?
    (True,      10,       9,     True),
    (True,      10,       10,    False),    # exactly at min_cell: shown
    (True,      10,       11,    False),
    (True,      10,       0,     False),    # zero reveals no one
    (True,      1,        1,     False),
    (False,     10,       3,     False),    # the internal report shows every count
])
def test_cells_mask_counts_strictly_below_min_cell(external, min_cell, n, hidden):
    from sqlanon.report import Cells
    cells = Cells(external, min_cell)
    assert cells.hidden(n) is hidden
    assert ("masked" in str(cells.count(n))) is hidden


def test_external_report_withholds_what_gives_away_a_small_suppression():
    con = duckdb.connect()
    # 20 + 17 rows in two classes, 3 rows in a class that k = 5 suppresses (budget 10 % = 4 rows)
    con.execute("""CREATE TABLE t AS SELECT CASE WHEN i < 20 THEN 'a' WHEN i < 37 THEN 'b' ELSE 'c' END AS g,
                   'v' || (i % 4) AS s FROM range(40) r(i)""")
    run = sqlanon.search_and_choose(con, {"source": {"table": "t"}, "quasi_identifiers": {"g": {"hierarchy": "suppress"}},
                                "sensitive": ["s"], "privacy": {"k": 5, "max_suppression": 0.1}})
    assert run.chosen.levels == {"g": 0} and run.chosen.result.suppressed_rows == 3
    disc = 20 ** 2 + 17 ** 2 + 40 * 3
    assert run.chosen.metrics["discernibility"] == disc
    internal = render(report_context(run))
    external = render(report_context(run, ReportOptions(external=True)))
    assert 40 in _counts(internal) and f"{disc:,}" in internal
    assert 40 not in _counts(external) and f"{disc:,}" not in external and f"{disc}" not in external
    assert 37 in _counts(external)                                 # the release's own size stays
    assert "withheld" in external
    # nor from the risk section: the source's rows per band (20 + 17 + 3), its average risk (3 classes / 40 rows),
    # its rows at risk beside their share, or its bars on the release's scale (helper-33 summed the bands)
    assert 3 not in _counts(external) and "7.50 %" not in external and "riskbar before" not in external
    assert "riskbar before" in internal and "7.50 %" in internal
    run.close()
    con.close()


def test_python_api_report_and_bad_options(tmp_path, hospital_run):
    out = hospital_run.report(tmp_path / "r.html", groups=GROUPS)
    assert out == tmp_path / "r.html" and "Release report: hospital_release" in out.read_text()
    with pytest.raises(sqlanon.errors.PolicyError, match="min-cell"):
        hospital_run.report(tmp_path / "x.html", external=True, min_cell=0)
    with pytest.raises(sqlanon.errors.PolicyError, match="does not exist"):
        hospital_run.report(tmp_path / "no" / "x.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]   # nothing half-written


def _anonymize_into_db(tmp_path):
    """Hospital in a DuckDB file; a policy naming only the table (its database comes from --db)."""
    db = tmp_path / "h.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hospital AS SELECT * FROM read_csv(?)", [str(HOSPITAL / "hospital.csv")])
    con.close()
    policy = hospital_policy(k=4)
    policy["source"] = {"table": "hospital"}
    policy["release"]["materialize"] = "table"
    (tmp_path / "p.json").write_text(json.dumps(policy))     # JSON is YAML
    manifest = tmp_path / "m.json"
    r = CliRunner().invoke(main, ["anonymize", str(tmp_path / "p.json"), "--db", str(db), "--json", str(manifest),
                                  "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return db, manifest


def test_report_from_manifest_reads_the_database_and_changes_nothing(tmp_path, monkeypatch):
    db, manifest = _anonymize_into_db(tmp_path)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["report", str(manifest), "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    page = (tmp_path / "m.html").read_text()
    # Figure 2: the 4-anonymous node, three classes of four, the 3* class all Cancer
    assert 'class="warn"' not in page
    assert re.search(r'<tr class="chosen"><td>1</td><td>1</td><td>1</td><td>1</td>', page)
    assert "3*" in page and 'id="attack-table"' in page
    r = CliRunner().invoke(main, ["report", str(manifest), "--external", "-q"], catch_exceptions=False)
    assert r.exit_code == 0 and (tmp_path / "m.external.html").exists()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_report_warns_when_the_manifest_no_longer_matches(tmp_path):
    """On a copy of the data without its release catalog (which would refuse the edited node): warnings."""
    db, manifest = _anonymize_into_db(tmp_path)
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE sqlanon_releases")
    con.close()
    m = json.loads(manifest.read_text())
    m["hierarchies"]["age"]["sha256_16"] = "0" * 16
    m["source"]["rows"] = 99
    m["chosen"]["levels"] = {"zip_code": 2, "age": 2, "nationality": 1}     # satisfies, but is not minimal
    manifest.write_text(json.dumps(m))
    out = tmp_path / "w.html"
    r = CliRunner().invoke(main, ["report", str(manifest), "--out", str(out), "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    warnings = re.findall(r'<p class="warn"[^>]*>(.*?)</p>', out.read_text(), re.S)
    assert len(warnings) == 3
    assert "hierarchy of age" in warnings[0] and "size differs" in warnings[1] and "not one of the minimal" in warnings[2]


@pytest.mark.parametrize("args, needle", [
    (["report", "missing.json"], "does not exist"),
    (["report", "{manifest}", "--min-cell", "0"], "min-cell"),
    (["report", "{manifest}", "--threshold", "1.5"], "threshold"),
    (["report", "{manifest}", "--out", "{tmp}/no/such/folder/r.html"], "does not exist"),
    (["report", "{bad_levels}"], "it records the node {'zip_code': 1, 'age': 7, 'nationality': 1}"),   # the catalog's
    (["report", "{not_json}"], "not JSON"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, needle):
    db, manifest = _anonymize_into_db(tmp_path)
    bad = json.loads(manifest.read_text())
    bad["chosen"]["levels"]["age"] = 7
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    (tmp_path / "nj.json").write_text("{not json")
    subs = {"manifest": str(manifest), "tmp": str(tmp_path), "bad_levels": str(tmp_path / "bad.json"),
            "not_json": str(tmp_path / "nj.json")}
    r = CliRunner().invoke(main, [a.format(**subs) for a in args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sqlanon: error:") and needle in lines[0], r.stderr
    assert not list(tmp_path.glob("*.html")) and not list(tmp_path.glob("*.tmp"))


def test_a_release_above_the_minimal_nodes_is_explained_not_warned_about(tmp_path):
    """With suppression the optimum may lie above the minimal nodes (Adult, k = 5, 4 %: ARX's optimum
    00122221): the report says why, and does not warn that the data changed."""
    from sqlanon.anonymizer import Anonymization

    from conftest import adult_policy
    with Anonymization(adult_policy(8, {"k": 5, "max_suppression": 0.04}), db=":memory:") as run:
        run.choose()
        assert not run.optimum.minimal
        page = run.report(tmp_path / "r.html").read_text(encoding="utf-8")
    assert "The chosen node lies above the minimal nodes" in page
    assert "branch and bound" in page and "nodes scored" in page
    assert "not one of the minimal satisfying nodes" not in page
    assert ": chosen for the release" in page and "chosen (minimal)" not in page    # the node's title said minimal


@pytest.mark.parametrize("target, needle", [
    ("h.duckdb", "it is the release's database"),
    ("m.json", "it is the manifest"),
    ("notes.txt", "it is not a sqlanon report; choose another path, remove it, or pass --force"),
    # the policy: a manifest does not record its file, so --force replaced it; known now by what it holds
    ("p.json", "it is a sqlanon policy; choose another path"),
])
def test_report_out_never_replaces_what_it_did_not_write(tmp_path, target, needle):
    """`--out r.duckdb` replaced the database with the page (and the policy, the manifest, any file). Refused,
    one line, nothing changed; a file that is not a report is replaced only with --force, an earlier report
    always; the database, the manifest and the policy never (a manifest does not record its policy's file: the
    policy is known by its content)."""
    db, manifest = _anonymize_into_db(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.name.endswith(".wal")}
    r = CliRunner().invoke(main, ["report", str(manifest), "--out", str(tmp_path / target), "-q"])
    assert r.exit_code == 2, r.output
    line, = r.stderr.strip().splitlines()
    assert line.startswith("sqlanon: error: refusing to") and needle in line, line
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in before} == before
    forced = CliRunner().invoke(main, ["report", str(manifest), "--out", str(tmp_path / target), "--force", "-q"])
    assert forced.exit_code == (0 if target == "notes.txt" else 2), forced.output
    again = CliRunner().invoke(main, ["report", str(manifest), "--out", str(tmp_path / "r.html"), "-q"])
    assert again.exit_code == 0 and CliRunner().invoke(
        main, ["report", str(manifest), "--out", str(tmp_path / "r.html"), "-q"]).exit_code == 0


def test_a_chosen_node_that_fails_now_says_what_its_attacks_read(tmp_path):
    """The source lost a row since the release: its node fails k = 4. The header counts the failing class's rows
    as suppressed while the attacks read every class; the page says so beside them."""
    db, manifest = _anonymize_into_db(tmp_path)
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM hospital WHERE rowid = (SELECT MIN(rowid) FROM hospital)")
    con.close()
    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["report", str(manifest), "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert "does NOT satisfy the policy on the data as it is now" in page
    assert "the attacks read every class, the failing ones included" in page


def _risk_table(page: str, table: str) -> str:
    body = page[page.index(f'id="{table}"'):]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body[:body.index("</table>")]))


def test_external_risk_section_gives_no_small_cell_away():
    """helper-40: the bars' tooltips printed exact rows under min_cell; a band of one class size printed its
    classes (3 unique classes: 3 rows); the release's total less the other bands gave a masked band; and with the
    source's rows withheld, its classes and sample uniques (all unique: its rows) were printed."""
    con = duckdb.connect()
    # three people alone, and one class of 50: k = 1 keeps every row
    con.execute("CREATE TABLE t AS SELECT CASE WHEN i < 3 THEN 'u' || i ELSE 'big' END AS g, 'v' || (i % 4) AS s "
                "FROM range(53) r(i)")
    run = sqlanon.search_and_choose(con, {"source": {"table": "t"}, "quasi_identifiers": {"g": {"hierarchy": "suppress"}},
                                          "sensitive": ["s"], "privacy": {"k": 1}})
    assert run.chosen.levels == {"g": 0}
    external = render(report_context(run, ReportOptions(external=True)))
    titles = re.findall(r'<rect class="riskbar[^>]*><title>([^<]*)</title>', external)
    assert titles and all("not shown" in t or t.endswith(": 0 rows in 0 classes") for t in titles), titles
    bands = _risk_table(external, "risk-bands")
    # the bands under min_cell are one (bands of one size gave k), and a small one masks every band holding rows
    assert "1/10 - 1 &lt; 10 &lt; 10 &lt; 10 &lt; 10" in bands and " 50 " not in bands, bands
    assert "1 (unique) 3 3 3 3" in _risk_table(render(report_context(run)), "risk-bands")
    run.close()
    # all unique, 3 rows suppressed: the source's rows are withheld, and so are its classes and uniques (43)
    con.execute("CREATE TABLE u AS SELECT i AS g, 'v' || (i % 4) AS s FROM range(43) r(i)")
    run = sqlanon.search_and_choose(con, {"source": {"table": "u"},
                                          "quasi_identifiers": {"g": {"hierarchy": "intervals", "widths": [5]}},
                                          "sensitive": ["s"], "privacy": {"k": 5, "max_suppression": 0.1}})
    assert run.chosen.levels == {"g": 1} and run.chosen.result.suppressed_rows == 3
    table = _risk_table(render(report_context(run, ReportOptions(external=True))), "risk-table")
    assert "43" not in table and table.count("withheld") >= 4, table
    run.close()
    con.close()


def _classes_run(con, table: str, classes: list[tuple[int, list[str]]], **privacy):
    """A table of one quasi-identifier `a` whose values are classes of the given rows' sensitive values."""
    rows = [(i, s) for i, (_, values) in enumerate(classes) for s in values]
    con.execute(f"CREATE TABLE {table} (a INTEGER, s VARCHAR)")
    con.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)
    return sqlanon.search_and_choose(con, {"source": {"table": table},
                                           "quasi_identifiers": {"a": {"hierarchy": "suppress"}},
                                           "sensitive": ["s"], "privacy": privacy, "utility": "discernibility"})


def test_external_report_derives_no_small_cell_from_other_figures(tmp_path):
    """helper-41: exposed rows per value beside their total (x: 12 of 15 gave y: 3); the total less the largest class
    (two classes: the smallest, k); the mean class size or discernibility with the class count (a masked total);
    bands of one class size (k); the live source's rows of a view release whose source size is withheld."""
    con = duckdb.connect()
    mixed = ["v0", "v1", "v2"] * 5
    run = _classes_run(con, "t1", [(0, ["x"] * 12), (1, ["y"] * 3), (2, mixed)], k=3)
    ext = render(report_context(run, ReportOptions(external=True)))
    attacks = _risk_table(ext, "attack-table")
    assert "x: &lt; 10 ; y: &lt; 10" in attacks and " 12 " not in attacks, attacks
    assert "x: 12 ; y: 3" in _risk_table(render(report_context(run)), "attack-table")
    # a class of 3: the largest (15), the mean size and discernibility (the policy's metric) are withheld
    assert re.search(r"largest\s*<span class=\"count masked\"[^>]*>withheld", ext)
    utility = _risk_table(ext, "utility-table")
    assert "avg_class_size" not in utility and "discernibility" not in utility, utility
    assert re.search(r"a class\s+holds fewer than 10", ext)
    run.close()
    # six classes of 2 and one of 12: the bands under 10 are one, so none says "1/2: 6 classes"
    run = _classes_run(con, "t2", [(i, ["v0", "v1"]) for i in range(6)] + [(6, mixed[:12])], k=2)
    bands = _risk_table(render(report_context(run, ReportOptions(external=True))), "risk-bands")
    assert " 1/2 " not in bands and "1 (unique)" not in bands and " 1/10 - 1 6 12 " in bands, bands
    run.close()
    con.close()
    # a view release with 1 row suppressed: the live source's size is withheld with the source's
    db = tmp_path / "v.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT CASE WHEN i = 0 THEN 0 WHEN i < 16 THEN 1 ELSE 2 END AS a, "
                "'v' || (i % 3) AS s FROM range(28) r(i)")
    con.close()
    policy = tmp_path / "p.yaml"
    policy.write_text(json.dumps({"source": {"table": "t", "database": str(db)},
                                  "quasi_identifiers": {"a": {"hierarchy": "suppress"}}, "sensitive": ["s"],
                                  "privacy": {"k": 2, "max_suppression": 0.1},
                                  "release": {"name": "rel", "materialize": "view"}}))
    assert CliRunner().invoke(main, ["anonymize", str(policy), "--json", str(tmp_path / "m.json"), "-q"]).exit_code == 0
    assert CliRunner().invoke(main, ["report", str(tmp_path / "m.json"), "--external", "-q"]).exit_code == 0
    page = (tmp_path / "m.external.html").read_text()
    coverage = page[page.index('id="view-coverage"'):]
    assert "withheld" in coverage[:400] and "28" not in coverage[:400], coverage[:400]
