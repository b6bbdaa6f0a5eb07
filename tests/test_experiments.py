"""`sqlanon experiments`: every experiment end to end on small samples, the report's numbers from the
same code path as the CLI, and the facts of TKDD Section 6 on the full Adult data."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqlanon import attacks
from sqlanon.cli import main
from sqlanon.experiments import NAMES, facts, homogeneity, paper
from sqlanon.experiments.common import Context, bernoulli_rows, create_adult_tables, with_privacy

SAMPLE, LANDSEND = 2500, 3000
ARGS = ["experiments", "--sample-rows", str(SAMPLE), "--landsend-rows", str(LANDSEND), "--repeat", "1", "-q"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One CLI run of every experiment on a 2,500-row Adult sample and a 3,000-row Lands End table."""
    out = tmp_path_factory.mktemp("experiments")
    r = CliRunner().invoke(main, ARGS + ["--out", str(out)])
    assert r.exit_code == 0, r.output
    return out, json.loads((out / "results.json").read_text())


def test_report_folder(smoke):
    out, data = smoke
    report = (out / "report.md").read_text()
    assert report.splitlines()[0] == (f"`sqlanon experiments --out {out} --sample-rows {SAMPLE} --landsend-rows "
                                      f"{LANDSEND} --repeat 1`")
    assert data["command"] in report.splitlines()[0]
    assert list(data["experiments"]) == list(NAMES)
    assert data["adult_tables"]["adult"] == SAMPLE
    for files in data["figures"].values():
        for f in files:
            assert (out / f).read_bytes()[:4] == b"\x89PNG", f
            assert f"({f})" in report
    assert sum(p.stat().st_size for p in out.iterdir()) < 1_000_000
    assert "smoke run" in report


def test_homogeneity_numbers(smoke):
    out, data = smoke
    res = data["experiments"]["homogeneity"]
    assert [r["k"] for r in res["ours"]] == list(paper.HOMOGENEITY_KS)
    for r in res["ours"]:
        h, n = r["homogeneous"], r["near_homogeneous"]
        assert h["tables"] == n["tables"] == len(r["tables"]) >= 1
        assert 0 <= h["affected_tables"] <= n["affected_tables"] <= h["tables"]
        assert h["avg_affected_tuples"] <= n["avg_affected_tuples"] <= SAMPLE
        for t in r["tables"]:
            assert t["homogeneous_rows"] <= t["near_rows"] <= SAMPLE
    # the report shows the JSON's numbers beside the paper's
    report = (out / "report.md").read_text()
    k2 = res["ours"][0]["homogeneous"]
    assert f"| 2 | {k2['tables']} (8) | {k2['affected_tables']} (8) |" in report


def test_report_numbers_come_from_the_cli_code_path(smoke):
    """Recompute one cell of the smoke report directly through the API on the same seeded sample."""
    out, data = smoke
    ctx = Context(out, sample_rows=SAMPLE)
    try:
        with ctx.run("adult", homogeneity.QI, {"k": 10}, sensitive="salary") as r:
            with_privacy(r, {"k": 10})
            reps = attacks.attack_minimal(r, "homogeneity", threshold=0.95)
    finally:
        ctx.close()
    got = next(x for x in data["experiments"]["homogeneity"]["ours"] if x["k"] == 10)["near_homogeneous"]
    want = attacks.summarize(reps)
    assert got == pytest.approx(want)


def test_performance_numbers(smoke):
    res = smoke[1]["experiments"]["performance"]
    adult = res["adult"]
    assert sorted({r["j"] for r in adult}) == [3, 4, 5, 6, 7, 8]
    for r in adult:
        assert 1 <= r["evaluated"] <= r["nodes"] and r["minimal"] >= 1 and r["rows"] == SAMPLE
        assert r["search_s"] > 0 and r["total_s"] >= r["search_s"]
    nodes = {r["j"]: r["nodes"] for r in adult}
    assert nodes[8] == 5 * 2 * 2 * 3 * 4 * 3 * 3 * 2     # TKDD Fig. 7 heights + 1, multiplied
    le = res["landsend"]
    assert le["rows"] == LANDSEND
    assert [r["status"] for r in le["runs"]] == ["ok"] * 10
    for r in le["runs"]:
        assert r["rows"] == LANDSEND and r["peak_rss_mb"] > 0 and r["evaluated"] <= r["nodes"]
    assert set(res["targets"]["met"]) == {"k-anonymity (k=6)", "entropy l-diversity (l=6)"}


def test_utility_numbers(smoke):
    res = smoke[1]["experiments"]["utility"]
    for data, by_q in res["results"].items():
        for q, cell in by_q.items():
            base = cell["baseline"]
            k = cell["by_model"]["k-anonymity"]
            # larger k: the k-anonymous tables are a subset, so every minimum can only grow
            for m in ("height", "avg_class_size", "discernibility", "kl_divergence"):
                vals = [e[m] for e in k]
                assert vals == sorted(vals), (data, q, m)
                assert all(v <= base[m] + 1e-9 for v in vals), (data, q, m)
            # an entropy or recursive l-diverse table is l-anonymous: never better than k = l
            for model in ("entropy l", "recursive (3,l)", "k + 0.2-closeness"):
                for a, b in zip(k, cell["by_model"][model]):
                    if b.get("height") is not None:
                        assert b["discernibility"] >= a["discernibility"] - 1e-6, (data, q, model)
                        assert b["kl_divergence"] >= a["kl_divergence"] - 1e-9, (data, q, model)
    assert set(res["claims"]) >= {"heights_equal", "recursive_better", "full_kl_close", "sample_near_base"}


def test_similarity_numbers(smoke):
    res = smoke[1]["experiments"]["similarity"]
    assert res["group_sizes"] == {"White-collar": 5, "Blue-collar": 5, "Service": 4}
    for a in res["attack"]:
        s = a["similarity"]
        assert 0 <= s["affected_tables"] <= s["tables"]
        if a["model"] == "entropy l" and a["param"] > 5:
            assert s["affected_tables"] == 0
    assert {e["model"] for e in res["time_by_qi"]} == {"k-anonymity", "entropy l", "recursive (3,l)",
                                                       "k + 0.2-closeness", "k + 0.15-closeness"}


def test_facts_on_full_adult(tmp_path):
    """TKDD Section 6's statements, through the engine, on all 45,222 rows."""
    ctx = Context(tmp_path)
    try:
        res = facts.run(ctx)
    finally:
        ctx.close()
    assert res["rows"] == 45222
    assert res["occupation_entropy_l"] == pytest.approx(10.5669, abs=1e-4)    # the paper's 10.57
    assert res["searches"]["recursive (3,12)"]["minimal"] == 0
    assert res["searches"]["recursive (3,11)"]["minimal"] >= 1 and res["recursive_max_l_c3"] == 11
    assert (res["age_81_90"], res["age_31_40"]) == (114, 12291)
    assert res["q5_k4_over_1000"] >= 1
    assert "Agree with the paper: rows, entropy, recursive, ages." in facts.markdown(res)


def test_samples_are_seeded():
    a, b = bernoulli_rows(45222, 0.05, 7), bernoulli_rows(45222, 0.05, 7)
    assert (a == b).all() and abs(len(a) - 2261) < 150
    assert not (bernoulli_rows(45222, 0.05, 8)[:50] == a[:50]).all()
    import duckdb
    con = duckdb.connect()
    counts = create_adult_tables(con)
    assert counts["adult"] == 45222 and counts["adult_sample"] == len(bernoulli_rows(45222, 0.05, 20070301))


@pytest.mark.parametrize("args, msg", [
    (["nope"], "unknown experiment"), (["--sample-rows", "3"], "--sample-rows"), (["--repeat", "0"], "--repeat"),
    # 50 rows failed later, on a policy the user never wrote (facts' recursive (3,12)) or "adult_sample has no rows"
    (["facts", "--sample-rows", "50"], "must be at least 100"),
    # NaN passed `<= 0` and turned the time limit off (and wrote NaN into results.json)
    (["facts", "--sample-rows", "100", "--landsend-timeout", "nan"], "--landsend-timeout"),
    (["facts", "--sample-rows", "100", "--landsend-timeout", "inf"], "--landsend-timeout"),
])
def test_bad_options(tmp_path, args, msg):
    r = CliRunner().invoke(main, ["experiments", "--out", str(tmp_path), *args])
    assert r.exit_code == 2 and msg in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("files", [{"report.md": "# my notes\n"}, {"results.json": '{"my": "data"}'},
                                   {"homogeneity.png": "not a plot"}, {"utility_adult.png": "mine"}])
def test_a_report_folder_holding_files_it_did_not_write_is_refused(tmp_path, files):
    """`--out` (default docs/experiments, relative to where it runs) replaced a report.md, results.json or plot
    of that name, exit 0. Refused before any experiment runs, one line, exit 2, the files as they were."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    r = CliRunner().invoke(main, ["experiments", "facts", "--sample-rows", "100", "-q", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "which sqlanon experiments did not write" in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == files


def test_a_report_folder_that_cannot_be_created_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    r = CliRunner().invoke(main, ["experiments", "facts", "-q", "--out", str(tmp_path / "file" / "sub")])
    assert r.exit_code == 2 and "--out: cannot create the folder" in r.stderr and "Traceback" not in r.output


def test_a_rerun_over_an_older_versions_results_keeps_the_folder_consistent(tmp_path):
    """results.json was written before report.md was rendered: a section of an earlier version (merged for a
    partial rerun) failed the rendering with a KeyError traceback after results.json had changed, and a
    results.json holding a list failed with an AttributeError. Now this run's experiments alone, both files."""
    from sqlanon.experiments.runner import render
    args = ["experiments", "facts", "--sample-rows", "100", "-q", "--out", str(tmp_path)]
    assert CliRunner().invoke(main, args).exit_code == 0
    data = json.loads((tmp_path / "results.json").read_text())
    data["experiments"]["homogeneity"] = {"an older": "shape"}
    (tmp_path / "results.json").write_text(json.dumps(data))
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    now = json.loads((tmp_path / "results.json").read_text())
    assert list(now["experiments"]) == ["facts"]
    assert (tmp_path / "report.md").read_text() == render(now)


def test_results_are_strict_json():
    """The committed results.json held `Infinity` (an estimation accuracy where knowledge makes a true cell
    impossible), which JSON.parse refuses; infinity is written 1e999 (read back as inf), NaN as null."""
    from pathlib import Path
    text = (Path(__file__).parent.parent / "docs" / "experiments" / "results.json").read_text()

    def refuse(token):
        raise ValueError(token)
    data = json.loads(text, parse_constant=refuse)
    assert data["experiments"]["maxent"]["toy"]


# --------------------------------------------------------------------------------------------------
# verdicts are computed from the counts, by the rule printed beside them

@pytest.mark.parametrize("holds, of, verdict", [
    (9, 10, "holds"), (8, 10, "mostly"), (5, 10, "mostly"), (4, 10, "does NOT hold here"), (0, 0, "not testable here"),
])
def test_share_verdict(holds, of, verdict):
    from sqlanon.experiments.report import share_verdict
    assert share_verdict(holds, of) == verdict


@pytest.mark.parametrize("better, worse, verdict", [
    (3, 0, "holds"), (3, 1, "mixed"), (0, 0, "does NOT hold here"), (0, 2, "does NOT hold here"),
])
def test_sign_verdict(better, worse, verdict):
    from sqlanon.experiments.report import sign_verdict
    assert sign_verdict(better, worse) == verdict


def test_utility_claims_count_ties_apart():
    """Recursive vs entropy: strictly better, equal and worse are three counts; no table is worst."""
    from sqlanon.experiments import utility
    series = {"k-anonymity": [1, 1], "entropy l": [2, None], "recursive (3,l)": [2, 3], "k + 0.2-closeness": [1, 1]}
    cell = {"qi": ["age"], "baseline": {"kl_divergence": 1.0},
            "by_model": {m: [{"param": p, **{x: v for x in utility.METRICS}, "kl_divergence_age74": v}
                             for p, v in zip((6, 8), vals)] for m, vals in series.items()}}
    out = {"params": [6, 8], "results": {"sample": {"Q3": cell}}}
    c = utility.claims(out)
    assert (c["recursive_better"]["better"], c["recursive_better"]["equal"], c["recursive_better"]["worse"]) == (4, 4, 0)
    assert c["recursive_better"]["verdict"] == "holds"
    # l = 6: recursive 2 = entropy 2, a tie, so the paper's "recursive performs better" does not hold
    assert (c["l6_recursive_kl"]["better"], c["l6_recursive_kl"]["equal"]) == (0, 1)
    assert c["l6_recursive_kl"]["verdict"] == "does NOT hold here"
    # comparable: l-diverse <= 1.25 x k-anonymous; 2 > 1.25 and "no table" are not comparable
    assert (c["comparable"]["holds"], c["comparable"]["of"]) == (0, 12)


def test_a_partial_run_merges_into_a_report_of_the_same_options(smoke, tmp_path):
    import shutil
    out, data = smoke
    folder = tmp_path / "report"
    shutil.copytree(out, folder)
    r = CliRunner().invoke(main, ARGS + ["facts", "--out", str(folder)])
    assert r.exit_code == 0, r.output
    merged = json.loads((folder / "results.json").read_text())
    assert list(merged["experiments"]) == list(NAMES)                       # the others are kept
    assert merged["experiments"]["homogeneity"] == data["experiments"]["homogeneity"]
    assert [u["experiments"] for u in merged["updates"]] == [["facts"]]
    report = (folder / "report.md").read_text()
    assert report.splitlines()[0] == data["command"].join("``") and "Rerun since: facts on" in report
    # different options: no merge, the report holds what ran
    r = CliRunner().invoke(main, ARGS[:-2] + ["2", "-q", "facts", "--out", str(folder)])
    assert r.exit_code == 0, r.output
    assert list(json.loads((folder / "results.json").read_text())["experiments"]) == ["facts"]


def test_an_interrupted_run_leaves_no_plot_that_blocks_the_next(tmp_path, monkeypatch):
    """Plots are written as each experiment ends, results.json at the end: an interrupt between them left a plot
    no results.json listed, and the next run refused the folder as holding a file sqlanon did not write."""
    from sqlanon.experiments import runner

    def interrupted(ctx):
        raise KeyboardInterrupt
    monkeypatch.setattr(runner.EXPERIMENTS["similarity"], "run", interrupted)
    args = ["experiments", "homogeneity", "similarity", "--sample-rows", "100", "-q", "--out", str(tmp_path)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 130 and list(tmp_path.iterdir()) == [], r.output
    monkeypatch.undo()
    r = CliRunner().invoke(main, args[:1] + args[2:])
    assert r.exit_code == 0, r.output
    assert {p.name for p in tmp_path.iterdir()} == {"report.md", "results.json", "similarity.png"}


@pytest.mark.parametrize("where", ["results", "plot"])
def test_a_full_disk_leaves_no_plot_and_no_half_written_file(tmp_path, monkeypatch, where):
    """results.json that could not be written left the run's plot, which the next run refused as a user's file; a
    plot that could not be written was an OSError traceback and left a half-written temporary PNG."""
    import matplotlib.figure

    from sqlanon.experiments import runner

    def full(*a, **k):
        raise OSError(27, "File too large")
    if where == "results":
        monkeypatch.setattr(runner, "write_json", full)
    else:
        real = matplotlib.figure.Figure.savefig

        def half(self, fname, **k):
            Path(fname).write_bytes(b"\x89PNG half")
            raise OSError(27, "File too large")
        monkeypatch.setattr(matplotlib.figure.Figure, "savefig", half)
        assert real is not half
    args = ["experiments", "homogeneity", "--sample-rows", "100", "-q", "--out", str(tmp_path)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code != 0 and "Traceback" not in r.output and list(tmp_path.iterdir()) == [], r.output
    if where == "plot":
        assert r.exit_code == 2 and "cannot write" in r.output and "homogeneity.png" in r.output
    monkeypatch.undo()
    assert CliRunner().invoke(main, args).exit_code == 0


def test_a_run_with_other_options_removes_the_plots_it_no_longer_lists(tmp_path):
    """A run whose options differ from results.json's (or whose old results cannot be merged) rewrote it with its
    own plots only: the earlier run's plots stayed, unlisted, and the next run refused them as a user's files."""
    def run(*args):
        return CliRunner().invoke(main, ["experiments", *args, "-q", "--out", str(tmp_path)])
    assert run("homogeneity", "--sample-rows", "100").exit_code == 0
    assert (tmp_path / "homogeneity.png").exists()
    assert run("facts", "--sample-rows", "120").exit_code == 0
    assert not (tmp_path / "homogeneity.png").exists()
    r = run("homogeneity", "--sample-rows", "120")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "results.json").read_text())["figures"] == {"facts": [],
                                                                               "homogeneity": ["homogeneity.png"]}
