"""Facts TKDD Section 6 states about Adult, recomputed through the engine.

- the marginal distribution of occupation is entropy 10.57-diverse (so no generalization is more than
  entropy 10.57-diverse short of suppressing everything);
- no generalization is recursive (3,12)-diverse;
- 114 tuples have age 81-90 and 12,291 have age 31-40 (the data skew behind large groups);
- minimal 4-anonymous tables over {age, gender, race, marital status, education} have average group
  sizes over 1,000;
- in the 5 % sample most ages occur in about 20 tuples.

The marginal comes from the database as the counts of the single block of the top lattice node, and the
"no table" facts are Incognito searches that return no minimal node.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..models.ldiversity import block_entropy, recursive_c_star, recursive_max_l
from . import paper
from .common import ADULT_QIS, Context, with_privacy
from .report import fmt, table

NAME = "facts"
TITLE = "Facts about Adult stated in TKDD Section 6"
Q5 = ("age", "sex", "race", "marital_status", "education")


def _count(con, table: str, lo: int, hi: int) -> int:
    rel = con.table(table).filter(f"age BETWEEN {int(lo)} AND {int(hi)}")
    return int(rel.aggregate("count(*)").fetchall()[0][0])


def run(ctx: Context) -> dict:
    t0 = time.perf_counter()
    out = {}
    names = list(ADULT_QIS)
    with ctx.run("adult", names, {"k": 1}) as r:
        out["rows"] = r.fs.rows
        top = {q: h for q, h in zip(r.lattice.names, r.lattice.heights)}
        counts = r.fs.node_counts(top, sensitive=["occupation"]).sensitive["occupation"]
        values = [str(v) for v in r.fs.sensitives[0].domain.values]
        out["occupation_counts"] = dict(zip(values, counts[0].tolist()))
        h = float(block_entropy(counts)[0])
        out["occupation_entropy"] = h
        out["occupation_entropy_l"] = math.exp(h)
        out["recursive_max_l_c3"] = int(recursive_max_l(counts, 3)[0])
        out["recursive_c_star_l12"] = float(recursive_c_star(counts, 12)[0])
        searches = {}
        for label, privacy in (("recursive (3,12)", {"l_diversity": {"variant": "recursive", "c": 3, "l": 12}}),
                               ("recursive (3,11)", {"l_diversity": {"variant": "recursive", "c": 3, "l": 11}}),
                               ("entropy 10.57", {"l_diversity": {"variant": "entropy", "l": 10.57}}),
                               ("entropy 10.56", {"l_diversity": {"variant": "entropy", "l": 10.56}})):
            with_privacy(r, privacy)
            res = r.search()
            searches[label] = {"minimal": len(res.minimal), "evaluated": res.evaluated, "nodes": r.lattice.size,
                               "minimal_levels": [r.lattice.levels(n) for n in res.minimal][:3]}
        out["searches"] = searches
    con = ctx.con
    out["age_81_90"] = _count(con, "adult", 81, 90)
    out["age_31_40"] = _count(con, "adult", 31, 40)
    with ctx.run("adult", Q5, {"k": 4}) as r:
        rows = [c.metrics["avg_class_size"] for c in r.score_minimal()]
        out["q5_k4_minimal"] = len(rows)
        out["q5_k4_avg_group_sizes"] = sorted(rows)
        out["q5_k4_over_1000"] = sum(v > 1000 for v in rows)
    ages = con.table("adult_sample").aggregate("age, count(*) AS n", "age").fetchall()
    per_age = np.array([n for _, n in ages])
    out["sample_rows"] = int(per_age.sum())
    out["sample_ages"] = {"distinct": len(per_age), "median_rows": float(np.median(per_age)) if len(per_age) else None,
                          "under_10": int((per_age < 10).sum()), "from_10_to_30": int(((per_age >= 10) &
                                                                                         (per_age <= 30)).sum())}
    out["seconds"] = time.perf_counter() - t0
    ctx.say(f"facts: done in {out['seconds']:.1f} s")
    return out


def markdown(res: dict) -> str:
    s = res["searches"]
    p = paper.FACTS
    rows = [
        ["rows of Adult (complete records)", fmt(res["rows"]), fmt(p["rows"]), ""],
        ["occupation's marginal: entropy l = exp(H)", f"{res['occupation_entropy_l']:.4f}", "10.57",
         f"H = {res['occupation_entropy']:.4f} nats; an Incognito search for entropy 10.57 returns "
         f"{s['entropy 10.57']['minimal']} tables ({s['entropy 10.57']['evaluated']} nodes evaluated) because "
         f"{res['occupation_entropy_l']:.4f} < 10.57 (the paper rounds up); entropy 10.56 returns "
         f"{s['entropy 10.56']['minimal']}"],
        ["recursive (3,12)-diverse generalizations", fmt(s["recursive (3,12)"]["minimal"]), "0",
         f"Incognito over all {fmt(s['recursive (3,12)']['nodes'])} nodes of the 8-attribute lattice "
         f"({s['recursive (3,12)']['evaluated']} evaluated); even the whole table has r1 / (r12 + r13 + r14) = "
         f"{res['recursive_c_star_l12']:.2f} >= 3. The largest l with c = 3 the whole table reaches: "
         f"{res['recursive_max_l_c3']} (recursive (3,11): {s['recursive (3,11)']['minimal']} minimal tables)"],
        ["tuples with age 81-90", fmt(res["age_81_90"]), fmt(p["age_81_90"]), ""],
        ["tuples with age 31-40", fmt(res["age_31_40"]), fmt(p["age_31_40"]), ""],
        ["minimal 4-anonymous tables (Q5, full data) with average group size > 1,000",
         f"{res['q5_k4_over_1000']} of {res['q5_k4_minimal']}", "some",
         "average group sizes " + ", ".join(f"{v:,.0f}" for v in res["q5_k4_avg_group_sizes"])],
        ["5 % sample: rows per age value", f"median {fmt(res['sample_ages']['median_rows'], 0)}; "
         f"{res['sample_ages']['under_10']} of {res['sample_ages']['distinct']} ages under 10", "around 20; a few "
         "under 10", f"sample of {fmt(res['sample_rows'])} rows; the paper's sample size is not given"],
    ]
    return (table(["fact", "ours", "paper", "notes"], rows) +
            "\n" + _agreement(res))


def _agreement(res: dict) -> str:
    p = paper.FACTS
    same = {"rows": res["rows"] == p["rows"],
            "entropy": round(res["occupation_entropy_l"], 2) == p["occupation_entropy_l"],
            "recursive": res["searches"]["recursive (3,12)"]["minimal"] == p["recursive_3_12_tables"],
            "ages": res["age_81_90"] == p["age_81_90"] and res["age_31_40"] == p["age_31_40"]}
    agree = [k for k, v in same.items() if v]
    differ = [k for k, v in same.items() if not v]
    text = f"Agree with the paper: {', '.join(agree) or 'none'}."
    if differ:
        text += (f" Differ: {', '.join(differ)} (a run on a sample of Adult (`--sample-rows`) changes these; the "
                 "committed report runs on all rows).")
    ages = res["sample_ages"]["distinct"]
    text += (f" The 5 % sample has {res['sample_rows']:,} rows, {res['sample_rows'] / max(ages, 1):.0f} per age "
             f"value on average over the {ages} ages present and a median of "
             f"{res['sample_ages']['median_rows']:.0f} (the ages are skewed); the paper gives neither its sample's "
             "size nor its seed, so this row is only a plausibility check of the paper's \"around 20\".\n")
    return text


def plots(res: dict, out) -> list[str]:
    return []
