"""The t-closeness paper's experiments (Li, Li, Venkatasubramanian, ICDE 2007, Section 6) on Adult.

1. Similarity attack: QI = the paper's seven regular attributes (age, work class, education, country,
   marital status, race, gender), sensitive occupation split into three semantic groups (level 1 of
   `hierarchies/occupation.csv`: White-collar, Blue-collar, Service). On every minimal entropy
   l-diverse and recursive (3,l)-diverse table, the blocks whose occupations all fall in one group
   (`sqlanon.attacks.similarity_attack`); also on k-anonymous and k + t-closeness tables for contrast.
2. Efficiency: search time of k-anonymity, entropy l, recursive (3,l), k + 0.2-closeness and
   k + 0.15-closeness, over the quasi-identifier size (first j of the seven) and over the parameter.
3. Data quality: the smallest discernibility and average group size of each model's minimal tables,
   and a sweep over t (k = 4) for the paper's "a degradation that can be kept minimal by choosing t".

Every verdict on a claim of the paper is computed from these numbers by the rule printed beside it.
"""
from __future__ import annotations

import time
from typing import Any

from .. import attacks
from . import paper
from .common import Context, median, occupation_hierarchy, with_privacy
from .report import fmt, save, table

TIME_PARAM = 4
T_SWEEP = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
PAPER_T = (0.2, 0.15)          # the t the paper compared
MINIMAL_COST = 1.25            # "minimal degradation": min discernibility at most this times k-anonymity's

NAME = "similarity"
TITLE = "Similarity attack, efficiency and data quality (t-closeness paper, ICDE 2007, Section 6)"
QI = paper.ICDE["qi"]
ATTACK_PARAMS = (2, 3, 4, 5)
PARAMS = (2, 4, 6)
QI_SIZES = range(3, 8)
MODELS = {
    "k-anonymity": lambda p: {"k": p},
    "entropy l": lambda p: {"l_diversity": {"variant": "entropy", "l": p}},
    "recursive (3,l)": lambda p: {"l_diversity": {"variant": "recursive", "l": p, "c": 3}},
    "k + 0.2-closeness": lambda p: {"k": p, "t_closeness": {"t": 0.2, "distance": "hierarchical"}},
    "k + 0.15-closeness": lambda p: {"k": p, "t_closeness": {"t": 0.15, "distance": "hierarchical"}},
}


def _attack(r, model: str, p: int) -> dict:
    with_privacy(r, MODELS[model](p))
    result = r.search()
    sim = attacks.attack_minimal(r, "similarity", examples=1)
    hom = attacks.attack_minimal(r, "homogeneity", threshold=1.0, examples=0)
    worst = max(sim, key=lambda x: x.exposed_rows, default=None)
    return {"model": model, "param": p, "evaluated": result.evaluated, "similarity": attacks.summarize(sim),
            "homogeneity": attacks.summarize(hom),
            "worst_table": None if worst is None else {"levels": worst.levels, "affected_blocks": worst.affected_blocks,
                                                       "exposed_rows": worst.exposed_rows,
                                                       "by_group": worst.by_disclosed,
                                                       "largest_block": worst.examples[0].as_dict()
                                                       if worst.examples else None},
            "groups": sim[0].groups if sim else None}


def _age_emd(r) -> list[dict]:
    """Per age level (every other attribute fully generalized): the largest hierarchical EMD of a block's
    occupation distribution to the whole table's, and that block's label and size."""
    from ..models.tcloseness import emd_hierarchical
    dom = r.fs.sensitives[0].domain
    q = dom.totals / dom.totals.sum()
    tops = {n: h for n, h in zip(r.lattice.names, r.lattice.heights)}
    age = r.fs.qi("age").hierarchy
    out = []
    for lvl in range(tops["age"] + 1):
        counts = r.fs.node_counts(dict(tops, age=lvl), sensitive=[dom.name])
        mat = counts.sensitive[dom.name]
        emd = emd_hierarchical(mat / mat.sum(axis=1, keepdims=True), q, dom.levels)
        i = int(emd.argmax())
        code = int(counts.block_codes[i, r.lattice.names.index("age")])
        label = age.labels[lvl][int((age.codes()[lvl] == code).argmax())]
        out.append({"level": lvl, "max_emd": float(emd[i]), "block": label, "rows": int(counts.sizes[i])})
    return out


def _time(r, privacy: dict, repeat: int) -> dict:
    secs = []
    for _ in range(max(1, repeat)):
        with_privacy(r, privacy)
        t = time.perf_counter()
        result = r.search()
        secs.append(time.perf_counter() - t)
    return {"search_s": median(secs), "evaluated": result.evaluated, "minimal": len(result.minimal)}


def run(ctx: Context) -> dict:
    t0 = time.perf_counter()
    out: dict[str, Any] = {"qi": list(QI), "attack": [], "time_by_qi": [], "time_by_param": [], "quality": []}
    with ctx.run("adult", QI, {"k": 2}, occupation_groups=True) as r:
        out["rows"] = r.fs.rows
        codes, names = attacks.resolve_groups(r.fs.sensitives[0].domain, occupation_hierarchy())
        out["group_sizes"] = {n: int((codes == i).sum()) for i, n in enumerate(names)}
        out["age_emd"] = _age_emd(r)
        for model in ("entropy l", "recursive (3,l)", "k-anonymity", "k + 0.2-closeness"):
            for p in ATTACK_PARAMS:
                out["attack"].append(_attack(r, model, p))
        ctx.say("similarity: attacks done")
        for model, make in MODELS.items():
            for p in PARAMS:
                entry: dict[str, Any] = {"model": model, "param": p, **_time(r, make(p), ctx.repeat)}
                r.score_minimal()
                entry["minimal_levels"] = [c.levels for c in r.candidates][:4]
                entry["min_discernibility"] = min((c.metrics["discernibility"] for c in r.candidates), default=None)
                entry["min_avg_group_size"] = min((c.metrics["avg_class_size"] for c in r.candidates), default=None)
                out["quality"].append(entry)
        out["t_sweep"] = []
        for t in T_SWEEP:
            with_privacy(r, {"k": TIME_PARAM, "t_closeness": {"t": t, "distance": "hierarchical"}})
            r.search()
            r.score_minimal()
            out["t_sweep"].append({"t": t, "k": TIME_PARAM, "minimal": len(r.candidates),
                                   "min_discernibility": min((c.metrics["discernibility"] for c in r.candidates),
                                                             default=None)})
    for j in QI_SIZES:
        with ctx.run("adult", QI[:j], {"k": 2}, occupation_groups=True) as r:
            prepare = r.timings["prepare"]
            for model, make in MODELS.items():
                out["time_by_qi"].append({"j": j, "model": model, "param": TIME_PARAM, "prepare_s": prepare,
                                          **_time(r, make(TIME_PARAM), ctx.repeat)})
    out["repeat"] = ctx.repeat
    out["seconds"] = time.perf_counter() - t0
    ctx.say(f"similarity: done in {out['seconds']:.1f} s")
    return out


def markdown(res: dict) -> str:
    rows = []
    for a in res["attack"]:
        s, h = a["similarity"], a["homogeneity"]
        w = a["worst_table"]
        rows.append([a["model"], a["param"], s["tables"], s["affected_tables"], fmt(s["avg_affected_groups"]),
                     fmt(s["avg_affected_tuples"], 1), fmt(s["max_affected_tuples"]),
                     f"{h['affected_tables']} / {fmt(h['avg_affected_tuples'], 1)}",
                     ", ".join(f"{g} {n:,}" for g, n in (w["by_group"] if w else {}).items()) or "–"])
    groups: list = next((a["groups"] for a in res["attack"] if a["groups"]), [])
    text = [f"Adult ({fmt(res['rows'])} rows), QI = {{{', '.join(res['qi'])}}} (the paper's seven regular "
            f"attributes), sensitive occupation in {len(groups)} semantic groups ({', '.join(groups)}: level 1 of "
            "`datasets/adult/hierarchies/occupation.csv`). A block is vulnerable when all its occupations fall in one "
            "group. Run time of the whole experiment: " f"{res['seconds']:.1f} s.\n",
            "**Similarity attack on every minimal table**\n",
            table(["model", "k or l", "minimal tables", "vulnerable tables", "avg vulnerable groups per table",
                   "avg exposed tuples per table", "most tuples exposed in one table",
                   "homogeneity: affected tables / avg tuples", "worst table: exposed rows by group"], rows),
            f"\nThe paper: {paper.ICDE['similarity_claim']} Its numbers (how many tables, how many records, and the "
            "l it used) are stripped in the project's copy of the paper, so we report our own for l = "
            f"{', '.join(map(str, ATTACK_PARAMS))}, and we do not quote numbers we cannot check. What we can "
            "compare: "]
    ent = [a for a in res["attack"] if a["model"] == "entropy l"]
    rec = [a for a in res["attack"] if a["model"] == "recursive (3,l)"]
    t02 = [a for a in res["attack"] if a["model"] == "k + 0.2-closeness"]
    vuln_e = sum(a["similarity"]["affected_tables"] for a in ent)
    tot_e = sum(a["similarity"]["tables"] for a in ent)
    vuln_r = sum(a["similarity"]["affected_tables"] for a in rec)
    tot_r = sum(a["similarity"]["tables"] for a in rec)
    vuln_t = sum(a["similarity"]["affected_tables"] for a in t02)
    tot_t = sum(a["similarity"]["tables"] for a in t02)
    text[-1] += (f"{vuln_e} of our {tot_e} minimal entropy l-diverse tables and {vuln_r} of {tot_r} minimal "
                 f"recursive (3,l)-diverse tables (all l above) are vulnerable, against {vuln_t} of {tot_t} "
                 "k + 0.2-closeness tables (hierarchical EMD). A block all in one group has at most "
                 f"{max(res['group_sizes'].values())} distinct occupations here (the largest group; sizes "
                 f"{', '.join(f'{g} {n}' for g, n in res['group_sizes'].items())}), so entropy l-diversity with l > "
                 f"{max(res['group_sizes'].values())} rules the attack out by itself; it matters for small l.\n")
    qrows = []
    for e in res["quality"]:
        qrows.append([e["model"], e["param"], e["minimal"], e["evaluated"], f"{e['search_s']:.3f}",
                      fmt(e["min_discernibility"], 0), fmt(e["min_avg_group_size"], 1)])
    text.append(f"\n**Efficiency and data quality**, QI = all seven, k = l = p (recursive c = 3, closeness with the "
                f"hierarchical EMD); search time = median of {res['repeat']} Incognito searches on a built frequency "
                "set (the prepare step, the same for every model, is shown in the next table).\n")
    text.append(table(["model", "p", "minimal tables", "nodes evaluated", "search s", "min discernibility",
                       "min avg group size"], qrows))
    trow: dict[str, Any] = {}
    for e in res["time_by_qi"]:
        trow.setdefault(e["j"], {"prepare": e["prepare_s"]})[e["model"]] = e
    models = list(MODELS)
    trows = [[j, f"{v['prepare']:.3f}"] + [f"{v[m]['search_s']:.3f} ({v[m]['evaluated']})" for m in models]
             for j, v in sorted(trow.items())]
    text.append(f"\n**Search time against the quasi-identifier size** (first j of the seven; p = {TIME_PARAM}); "
                "cells: seconds (nodes evaluated)\n")
    text.append(table(["j", "prepare s"] + models, trows))
    fastest: dict = {}
    worst_q: dict = {}
    ent_faster, ent_fewer, cells = 0, 0, 0
    by = {(e["model"], e["param"]): e for e in res["quality"]}
    for e in res["quality"]:
        fastest.setdefault(e["param"], []).append((e["search_s"], e["model"]))
        if e["min_discernibility"] is not None:
            worst_q.setdefault(e["param"], []).append((e["min_discernibility"], e["model"]))
    for p in PARAMS:
        others = [by[(m, p)] for m in models if m != "entropy l"]
        cells += 1
        ent_faster += all(by[("entropy l", p)]["search_s"] < o["search_s"] for o in others)
        ent_fewer += all(by[("entropy l", p)]["evaluated"] <= o["evaluated"] for o in others)
    fast_text = "; ".join(f"p = {p}: {min(v)[1]}" for p, v in sorted(fastest.items()))
    worst_text = "; ".join(f"p = {p}: {max(v)[1]}" for p, v in sorted(worst_q.items()))
    ent_worst = sum(max(v)[1] == "entropy l" for v in worst_q.values())
    text.append(f"\nThe paper: {paper.ICDE['efficiency_claim']}; {paper.ICDE['quality_claim']}.\n")
    closeness = [m for m in models if "closeness" in m]
    costs = {(m, p): _ratio(by[(m, p)]["min_discernibility"], by[("k-anonymity", p)]["min_discernibility"])
             for m in closeness for p in PARAMS}
    costlier = sum(c is not None and c > 1 for c in costs.values())
    cost_text = "; ".join(f"{m}: " + ", ".join(f"p = {p} {_x(costs[(m, p)])}" for p in PARAMS) for m in closeness)
    sweep = res.get("t_sweep", [])
    k_disc = by[("k-anonymity", TIME_PARAM)]["min_discernibility"]
    sweep_cost = [(e["t"], _ratio(e["min_discernibility"], k_disc)) for e in sweep]
    cheap = [t for t, c in sweep_cost if c is not None and c <= MINIMAL_COST]
    at_paper_t = [c for (m, _), c in costs.items() if any(m == f"k + {t}-closeness" for t in PAPER_T)]
    minimal_ok = bool(at_paper_t) and all(c is not None and c <= MINIMAL_COST for c in at_paper_t)
    text.append(table(["paper (ICDE Sec. 6)", "ours", "rule", "verdict"], [
        ["a part of the minimal entropy l-diverse and recursive (c,l)-diverse tables suffer from the similarity "
         "attack", f"vulnerable: {vuln_e} of {tot_e} entropy l, {vuln_r} of {tot_r} recursive (3,l) tables "
         f"(l = {', '.join(map(str, ATTACK_PARAMS))})",
         "holds: some but not all minimal tables vulnerable, for each of the two models",
         "holds" if 0 < vuln_e < tot_e and 0 < vuln_r < tot_r else "does NOT hold here"],
        ["entropy l-diversity is the fastest", f"fastest search per p: {fast_text}; entropy l fastest for "
         f"{ent_faster} of {cells} p, and evaluates the fewest nodes for {ent_fewer} of {cells}",
         "holds: entropy l has the smallest median search time at every p",
         "holds" if ent_faster == cells else "does NOT hold here"],
        ["entropy l-diversity has the worst data quality", f"worst minimal discernibility per p: {worst_text}",
         "holds: entropy l's smallest discernibility is the largest of the five models at every p",
         "holds" if ent_worst == len(worst_q) else "does NOT hold here"],
        ["t-closeness costs data quality", "smallest discernibility of k + t-closeness / that of k-anonymity: "
         + cost_text, "holds: the ratio exceeds 1 for every t and p",
         "holds" if costlier == len(costs) else ("partly" if costlier else "does NOT hold here")],
        ["the degradation can be kept minimal by choosing t", f"at the paper's t ({', '.join(map(str, PAPER_T))}) "
         f"the ratio is {_x(min((c for c in at_paper_t if c is not None), default=None))} to "
         f"{_x(max((c for c in at_paper_t if c is not None), default=None))}; sweep at k = {TIME_PARAM}: "
         + ", ".join(f"t = {t} {_x(c)}" for t, c in sweep_cost)
         + (f"; the smallest t within {MINIMAL_COST:g}x is {min(cheap)}" if cheap else
            f"; no t up to {max(T_SWEEP, default=0)} is within {MINIMAL_COST:g}x"),
         f"holds: at the paper's t the ratio is at most {MINIMAL_COST:g} for every p",
         "holds" if minimal_ok else "does NOT hold here"]]))
    tl = by[("k + 0.2-closeness", PARAMS[0])]["minimal_levels"]
    text.append("\nWhy the timings differ from the paper's: in our engine a node check costs one query, and "
                "entropy l (like recursive l and t-closeness) fetches every block's occupation counts where "
                "k-anonymity needs block sizes only; entropy l prunes more (fewer nodes evaluated) but each check "
                "is dearer, and on Adult every search takes well under a second. Why t-closeness costs so much "
                "here: the largest hierarchical EMD of an age band's occupations to the whole table's, per age "
                "level (every other attribute generalized away), is "
                + ", ".join(f"{a['max_emd']:.3f} at level {a['level']} (block {a['block']}, {a['rows']:,} "
                            f"row{'s' if a['rows'] != 1 else ''})" for a in res["age_emd"])
                + ", so no table with age below its top level is 0.2-close; the minimal 0.2-close tables are "
                + "; ".join(_levels(lv) for lv in tl) + ". The "
                "paper found the degradation small at these t; its hierarchies are not published, and our copy of "
                "the paper has lost its numbers, so we cannot tell how much of the difference the hierarchies "
                "explain.\n")
    return "\n".join(text)


def _ratio(a, b):
    return None if a is None or not b else a / b


def _x(r) -> str:
    return "–" if r is None else f"{r:.1f}x"


def _levels(levels: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in levels.items())


def plots(res: dict, out) -> list[str]:
    from .report import pyplot
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(11, 2.8))
    for model in ("entropy l", "recursive (3,l)", "k-anonymity", "k + 0.2-closeness"):
        pts = [a for a in res["attack"] if a["model"] == model]
        axes[0].plot([a["param"] for a in pts], [a["similarity"]["affected_tables"] /
                                                  max(1, a["similarity"]["tables"]) for a in pts],
                     marker="o", label=model)
    axes[0].set_xlabel("k or l")
    axes[0].set_ylabel("share of minimal tables vulnerable")
    axes[0].set_title("similarity attack")
    axes[0].legend()
    for model in MODELS:
        pts = [e for e in res["time_by_qi"] if e["model"] == model]
        axes[1].plot([e["j"] for e in pts], [e["search_s"] for e in pts], marker="o", label=model)
        q = [e for e in res["quality"] if e["model"] == model and e["min_discernibility"] is not None]
        axes[2].plot([e["param"] for e in q], [e["min_discernibility"] for e in q], marker="o", label=model)
    axes[1].set_xlabel("size of quasi-identifier")
    axes[1].set_ylabel("search seconds")
    axes[1].set_title(f"efficiency (p = {TIME_PARAM})")
    axes[1].legend()
    axes[2].set_xlabel("p (k = l)")
    axes[2].set_ylabel("min discernibility")
    axes[2].set_title("data quality")
    fig.tight_layout()
    return [save(fig, out, "similarity.png")]
