"""Privacy-MaxEnt (Du, Teng & Zhu, SIGMOD 2008): background-knowledge risk by maximum entropy.

What an adversary who knows something beyond the release (P(Breast Cancer | male) = 0, facts about named
persons, the top association rules of the data) can infer about each record: the maximum-entropy
estimate P*(S | Q) under the release's invariants and that knowledge.

- `anatomy`: bucketized releases (Anatomy), the publication the paper studies;
- `invariants`: the constraints a release implies (Section 5), built in the database;
- `knowledge`: background knowledge from a file or the API (Sections 4, 6);
- `rules`: the Top-(K+, K-) association rules, mined in SQL (Section 4.4);
- `solver`: the maximum-entropy solver (Sections 3.3, 5.5; Theorem 5);
- `run`: one release end to end (`MaxEnt`), its outputs in the database and its report;
`sqlanon bucketize` and `sqlanon maxent` are in `sqlanon.cli.maxent`.
"""
from importlib import import_module

# name -> submodule; loaded on first use, so that `sqlanon` (whose CLI imports sqlanon.cli.maxent at start-up)
# does not pay for scipy unless Privacy-MaxEnt runs
_EXPORTS = {
    "anatomy": ("BucketizedRelease", "bucketize", "bucketize_policy", "plan_buckets"),
    "invariants": ("Problem", "ReleaseTables", "load_problem"),
    "knowledge": ("AboutPersons", "Conditional", "InfeasibleKnowledge", "Knowledge", "Rules", "build_system",
                  "load_knowledge", "parse_knowledge"),
    "rules": ("MinedRule", "mine_rules"),
    "run": ("MaxEnt", "MaxEntResult", "bucketized_release", "open_release", "report_markdown"),
    "solver": ("DEFAULT_TOLERANCE", "Solution", "solve"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
