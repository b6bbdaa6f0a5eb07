"""Privacy models, one module per family, all evaluated per q*-block on sensitive-value counts.

- `kanonymity`:  k-anonymity (`KAnonymity`)
- `ldiversity`:  distinct, entropy (with don't-care sets: adjusted entropy), recursive (c,l),
                 pd-recursive and npd-recursive l-diversity; multi-attribute l-diversity
                 (`DistinctLDiversity`, `EntropyLDiversity`, `RecursiveCLDiversity`)
- `tcloseness`:  t-closeness with the Earth Mover's Distance (`TCloseness`)
- `likeness`:    beta-likeness (basic, enhanced) and delta-disclosure privacy (`BetaLikeness`, `DeltaDisclosure`)
- `risk`:        re-identification risk of the whole release: average risk, records at risk
                 (`AverageRisk`, `RecordsAtRisk`; table-level, see `sqlanon.models.risk`)

`criteria_from_policy` turns a policy's ``privacy:`` mapping into a list of criteria::

    privacy:
      k: 5
      l_diversity: {variant: distinct|entropy|recursive, l: 3, c: 3, dont_care: [values...],
                    no_negative_disclosure: {c2: 5, values: [...]}, attribute: occupation|all}
      t_closeness: {t: 0.2, distance: equal|ordered|hierarchical, attribute: occupation|all}
      beta_likeness: {beta: 1.0, variant: basic|enhanced, attribute: occupation|all}
      delta_disclosure: {delta: 1.5, attribute: occupation|all}
      average_risk: 0.05                                  # classes / rows of the release
      records_at_risk: {threshold: 0.2, max_fraction: 0.01}
      k_map: {k: 10, sampling_fraction: 0.01, significance: 0.01, estimator: poisson|zero_truncated_poisson}
      k_map: {k: 10, population: census}                  # or against a population table
      delta_presence: {delta_min: 0.0, delta_max: 0.5, population: census}
      max_suppression: 0.0

Every model is monotone under generalization (merging blocks keeps it). With tuple suppression
(``max_suppression`` > 0) only k-anonymity keeps the "satisfied within the budget" predicate
monotone: a merged block fails k only if all its parts did, whereas merging a failing block into a
passing one can fail l-diversity or t-closeness and suppress more rows (see `sqlanon.checker`).
beta-likeness and delta-disclosure behave like t-closeness; average risk and records at risk are
table-level (`sqlanon.models.risk`); k-map with an estimator is a k-anonymity and stays monotone.
"""
from __future__ import annotations

import math
from numbers import Real

from ..errors import PolicyError
from .base import Criterion, SensitiveDomain
from .kanonymity import KAnonymity
from .ldiversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity, multi_attribute_ok
from .likeness import BETA_VARIANTS, BetaLikeness, DeltaDisclosure
from .risk import KMAP_ESTIMATORS, AverageRisk, DeltaPresence, KMapEstimated, KMapPopulation, RecordsAtRisk
from .tcloseness import DISTANCES, TCloseness

__all__ = [
    "Criterion", "SensitiveDomain", "KAnonymity", "DistinctLDiversity", "EntropyLDiversity",
    "RecursiveCLDiversity", "TCloseness", "multi_attribute_ok", "criteria_from_policy",
    "PRIVACY_KEYS", "L_DIVERSITY_KEYS", "T_CLOSENESS_KEYS", "L_VARIANTS", "BetaLikeness", "DeltaDisclosure",
    "AverageRisk", "RecordsAtRisk", "KMapEstimated",
]

PRIVACY_KEYS = ("k", "l_diversity", "t_closeness", "beta_likeness", "delta_disclosure", "average_risk",
                "records_at_risk", "k_map", "delta_presence", "max_suppression")
DELTA_PRESENCE_KEYS = ("delta_min", "delta_max", "population")
K_MAP_KEYS = ("k", "sampling_fraction", "significance", "estimator", "population")
BETA_KEYS = ("beta", "variant", "attribute")
DELTA_KEYS = ("delta", "attribute")
RECORDS_AT_RISK_KEYS = ("threshold", "max_fraction")
L_DIVERSITY_KEYS = ("variant", "l", "c", "dont_care", "no_negative_disclosure", "attribute")
NPD_KEYS = ("c2", "values")
T_CLOSENESS_KEYS = ("t", "distance", "attribute")
L_VARIANTS = ("distinct", "entropy", "recursive")


# --------------------------------------------------------------------------------------------------
# field checks

def _is_number(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(float(v))


def _number(v, field: str, what: str):
    if not _is_number(v):
        raise PolicyError(field, f"must be {what}; got {v!r}")
    return v


def _integer(v, field: str, what: str) -> int:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise PolicyError(field, f"must be {what}; got {v!r}")
    return v


def _mapping(v, field: str, example: str) -> dict:
    if not isinstance(v, dict):
        raise PolicyError(field, f"must be a mapping, for example {example}; got {v!r}")
    return v


def _unknown(d: dict, allowed: tuple, field: str) -> None:
    for key in d:
        if key not in allowed:
            raise PolicyError(f"{field}.{key}", f"unknown key; the keys of {field} are {', '.join(allowed)}")


def _values_list(v, field: str) -> list:
    if v is None:
        return []
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)):
        raise PolicyError(field, f"must be a list of sensitive values, for example [Healthy]; got {v!r}")
    return list(v)


def _shown(domain: SensitiveDomain, limit: int = 8) -> str:
    vals = [str(v) for v in domain.values[:limit]]
    return ", ".join(vals) + (", ..." if domain.size > limit else "")


def _codes(labels: list, domains: list[SensitiveDomain], field: str) -> dict[str, list[int]]:
    """Resolve labels to codes in each domain; every label must exist in at least one of them."""
    out = {d.name: [] for d in domains}
    for label in labels:
        found = False
        for d in domains:
            try:
                code = d.code(label)
            except KeyError:
                continue
            found = True
            if code not in out[d.name]:
                out[d.name].append(code)
        if not found:
            names = " or ".join(f"'{d.name}'" for d in domains)
            raise PolicyError(field, f"value {label!r} is not a value of sensitive attribute {names} "
                              f"(values: {_shown(domains[0])}); use a value that occurs in the data")
    return out


def _attributes(spec: dict, domains: dict[str, SensitiveDomain], field: str) -> tuple[list[SensitiveDomain], bool]:
    """The domains a model applies to and whether the policy asked for all of them."""
    if not domains:
        raise PolicyError(field, "needs a sensitive attribute; list it under `sensitive:`")
    attr = spec.get("attribute")
    if attr is None:
        return [next(iter(domains.values()))], False
    if attr == "all":
        return list(domains.values()), True
    if not isinstance(attr, str) or attr not in domains:
        raise PolicyError(f"{field}.attribute", f"must be one of the sensitive attributes "
                          f"({', '.join(domains)}) or 'all'; got {attr!r}")
    return [domains[attr]], False


# --------------------------------------------------------------------------------------------------
# the models

def _k(v) -> KAnonymity:
    k = _integer(v, "privacy.k", "an integer >= 1 (every q*-block holds at least k rows)")
    if k < 1:
        raise PolicyError("privacy.k", f"must be an integer >= 1; got {k}")
    return KAnonymity(k)


def _l_diversity(spec, domains: dict[str, SensitiveDomain]) -> list[Criterion]:
    F = "privacy.l_diversity"
    spec = _mapping(spec, F, "{variant: distinct, l: 3}")
    _unknown(spec, L_DIVERSITY_KEYS, F)
    variant = spec.get("variant", "distinct")
    if variant not in L_VARIANTS:
        raise PolicyError(f"{F}.variant", f"must be one of {', '.join(L_VARIANTS)}; got {variant!r}")
    if "l" not in spec:
        raise PolicyError(f"{F}.l", "missing; give the l of l-diversity, for example l: 3")
    l = spec["l"]
    if variant == "entropy":
        l = _number(l, f"{F}.l", "a number >= 1 (entropy l-diversity: every block's entropy >= log l)")
        if l < 1:
            raise PolicyError(f"{F}.l", f"must be a number >= 1; got {l}")
    else:
        l = _integer(l, f"{F}.l", f"an integer >= 1 for {variant} l-diversity (a number of distinct values)")
        if l < 1:
            raise PolicyError(f"{F}.l", f"must be an integer >= 1; got {l}")

    c = spec.get("c")
    if variant == "recursive":
        if c is None:
            raise PolicyError(f"{F}.c", "missing; recursive (c,l)-diversity needs c > 0, for example c: 3")
        c = _number(c, f"{F}.c", "a number > 0 (recursive (c,l): r1 < c (r_l + ... + r_m))")
        if c <= 0:
            raise PolicyError(f"{F}.c", f"must be a number > 0; got {c}")
    elif c is not None:
        raise PolicyError(f"{F}.c", f"only applies to variant recursive; remove it or set variant: recursive "
                          f"(variant is {variant})")

    dont_care = _values_list(spec.get("dont_care"), f"{F}.dont_care")
    if dont_care and variant == "distinct":
        raise PolicyError(f"{F}.dont_care", "applies to variants entropy and recursive only; remove it or "
                          "change the variant")

    npd = spec.get("no_negative_disclosure") or {}
    npd = _mapping(npd, f"{F}.no_negative_disclosure", "{c2: 5, values: [HIV]}")
    if npd:
        _unknown(npd, NPD_KEYS, f"{F}.no_negative_disclosure")
        if variant != "recursive":
            raise PolicyError(f"{F}.no_negative_disclosure", "applies to variant recursive only (npd-recursive "
                              "(c1,c2,l)-diversity, TKDD Def. 4.4); remove it or set variant: recursive")
        if "c2" not in npd:
            raise PolicyError(f"{F}.no_negative_disclosure.c2", "missing; give the least percentage of every "
                              "block each value must hold, for example c2: 5")
        c2 = _number(npd["c2"], f"{F}.no_negative_disclosure.c2", "a percentage greater than 0 and below 100")
        if not 0 < c2 < 100:
            raise PolicyError(f"{F}.no_negative_disclosure.c2", f"must be greater than 0 and below 100 (a "
                              f"percentage); got {c2}")
        w = _values_list(npd.get("values"), f"{F}.no_negative_disclosure.values")
        if not w:
            raise PolicyError(f"{F}.no_negative_disclosure.values", "missing or empty; list the sensitive values "
                              "whose negative disclosure is not allowed")

    targets, all_attrs = _attributes(spec, domains, F)
    y_codes = _codes(dont_care, targets, f"{F}.dont_care")
    w_codes = _codes(w, targets, f"{F}.no_negative_disclosure.values") if npd else {}
    multi = all_attrs and len(domains) > 1

    out = []
    for d in targets:
        if d.size and l > d.size:
            raise PolicyError(f"{F}.l", f"l = {l:g} but sensitive attribute '{d.name}' has only {d.size} "
                              f"distinct values, so no table can be l-diverse; lower l")
        if y_codes[d.name] and len(y_codes[d.name]) >= d.size:
            raise PolicyError(f"{F}.dont_care", f"covers every value of '{d.name}', leaving nothing to protect; "
                              "remove some values")
        if variant == "distinct":
            crit = DistinctLDiversity(l)
        elif variant == "entropy":
            crit = EntropyLDiversity(l, y_codes[d.name])
        else:
            crit = RecursiveCLDiversity(c, l, y_codes[d.name],
                                        npd=(c2, w_codes[d.name]) if npd and w_codes[d.name] else None)
        crit.sensitive = d.name
        crit.multi_attribute = multi
        out.append(crit)
    return out


def _t_closeness(spec, domains: dict[str, SensitiveDomain]) -> list[Criterion]:
    F = "privacy.t_closeness"
    spec = _mapping(spec, F, "{t: 0.2, distance: equal}")
    _unknown(spec, T_CLOSENESS_KEYS, F)
    if "t" not in spec:
        raise PolicyError(f"{F}.t", "missing; give the largest allowed distance, a number from 0 to 1, for "
                          "example t: 0.2")
    t = _number(spec["t"], f"{F}.t", "a number from 0 to 1 (the largest EMD of a block to the whole table)")
    if not 0 <= t <= 1:
        raise PolicyError(f"{F}.t", f"must be a number from 0 to 1; got {t}")
    distance = spec.get("distance", "equal")
    if distance not in DISTANCES:
        raise PolicyError(f"{F}.distance", f"must be one of {', '.join(DISTANCES)}; got {distance!r}")
    targets, _ = _attributes(spec, domains, F)
    out = []
    for d in targets:
        if distance == "ordered" and not d.numeric:
            raise PolicyError(f"{F}.distance", f"ordered needs a numeric sensitive attribute and '{d.name}' is "
                              "categorical; use equal or hierarchical")
        if distance == "hierarchical" and d.levels is None:
            raise PolicyError(f"{F}.distance", f"hierarchical needs a hierarchy for sensitive attribute "
                              f"'{d.name}'; give one under sensitive: ({d.name}: {{hierarchy: ...}}) or use equal")
        try:
            crit = TCloseness(t, distance, d)
        except ValueError as e:
            raise PolicyError(f"{F}.distance", f"{e}; fix the hierarchy of '{d.name}'") from None
        out.append(crit)
    return out


def _required_positive(spec: dict, field: str, key: str, example: str, what: str):
    """A required number > 0 of a model's mapping."""
    if key not in spec:
        raise PolicyError(f"{field}.{key}", f"missing; give {what}, a number > 0, for example {key}: {example}")
    v = _number(spec[key], f"{field}.{key}", f"a number > 0 ({what})")
    if v <= 0:
        raise PolicyError(f"{field}.{key}", f"must be a number > 0; got {v}")
    return v


def _beta_likeness(spec, domains: dict[str, SensitiveDomain]) -> list[Criterion]:
    F = "privacy.beta_likeness"
    spec = _mapping(spec, F, "{beta: 1.0, variant: enhanced}")
    _unknown(spec, BETA_KEYS, F)
    beta = _required_positive(spec, F, "beta", "1.0", "the largest relative gain (q - p) / p of a value's "
                              "frequency in a block over the table's")
    variant = spec.get("variant", "basic")
    if variant not in BETA_VARIANTS:
        raise PolicyError(f"{F}.variant", f"must be one of {', '.join(BETA_VARIANTS)}; got {variant!r}")
    targets, _ = _attributes(spec, domains, F)
    return [BetaLikeness(beta, d, variant) for d in targets]


def _delta_disclosure(spec, domains: dict[str, SensitiveDomain]) -> list[Criterion]:
    F = "privacy.delta_disclosure"
    spec = _mapping(spec, F, "{delta: 1.5}")
    _unknown(spec, DELTA_KEYS, F)
    delta = _required_positive(spec, F, "delta", "1.5", "the bound on |ln(block frequency / table frequency)|")
    targets, _ = _attributes(spec, domains, F)
    return [DeltaDisclosure(delta, d) for d in targets]


def _average_risk(v) -> AverageRisk:
    r = _number(v, "privacy.average_risk", "a number above 0 and at most 1 (classes / rows of the release)")
    if not 0 < r <= 1:
        raise PolicyError("privacy.average_risk", f"must be above 0 and at most 1; got {r}")
    return AverageRisk(r)


def _records_at_risk(spec) -> RecordsAtRisk:
    F = "privacy.records_at_risk"
    spec = _mapping(spec, F, "{threshold: 0.2, max_fraction: 0.01}")
    _unknown(spec, RECORDS_AT_RISK_KEYS, F)
    t = _number(spec.get("threshold", 0.2), f"{F}.threshold", "a risk above 0 and at most 1 (1 / class size)")
    if not 0 < t <= 1:
        raise PolicyError(f"{F}.threshold", f"must be above 0 and at most 1; got {t}")
    if "max_fraction" not in spec:
        raise PolicyError(f"{F}.max_fraction", "missing; give the largest fraction of released records whose "
                          "risk is above the threshold, for example max_fraction: 0.01")
    a = _number(spec["max_fraction"], f"{F}.max_fraction", "a fraction, at least 0 and below 1")
    if not 0 <= a < 1:
        raise PolicyError(f"{F}.max_fraction", f"must be at least 0 and below 1; got {a}")
    return RecordsAtRisk(t, a)


def _k_map(spec) -> KMapEstimated | KMapPopulation:
    F = "privacy.k_map"
    spec = _mapping(spec, F, "{k: 10, sampling_fraction: 0.01}")
    _unknown(spec, K_MAP_KEYS, F)
    if "k" not in spec:
        raise PolicyError(f"{F}.k", "missing; give the least number of people of the population a released "
                          "class must match, for example k: 10")
    k = _integer(spec["k"], f"{F}.k", "an integer >= 1")
    if k < 1:
        raise PolicyError(f"{F}.k", f"must be an integer >= 1; got {k}")
    if spec.get("population") is not None:
        if not isinstance(spec["population"], str) or not spec["population"]:
            raise PolicyError(f"{F}.population", f"must be the name of a table; got {spec['population']!r}")
        extra = [key for key in ("sampling_fraction", "significance", "estimator") if key in spec]
        if extra:
            raise PolicyError(f"{F}.{extra[0]}", "applies to k-map with an estimator; against a population table "
                              "remove it")
        return KMapPopulation(k, spec["population"])
    if "sampling_fraction" not in spec:
        raise PolicyError(f"{F}.sampling_fraction", "missing; give the table's rows over the population's, for "
                          "example sampling_fraction: 0.01 (or a population table: population: NAME)")
    f = _number(spec["sampling_fraction"], f"{F}.sampling_fraction", "a fraction above 0 and at most 1")
    if not 0 < f <= 1:
        raise PolicyError(f"{F}.sampling_fraction", f"must be above 0 and at most 1; got {f}")
    alpha = _number(spec.get("significance", 0.01), f"{F}.significance", "a probability above 0 and below 1")
    if not 0 < alpha < 1:
        raise PolicyError(f"{F}.significance", f"must be above 0 and below 1; got {alpha}")
    estimator = spec.get("estimator", "poisson")
    if estimator not in KMAP_ESTIMATORS:
        raise PolicyError(f"{F}.estimator", f"must be one of {', '.join(KMAP_ESTIMATORS)}; got {estimator!r}")
    return KMapEstimated(k, f, alpha, estimator)


def _delta_presence(spec) -> DeltaPresence:
    F = "privacy.delta_presence"
    spec = _mapping(spec, F, "{delta_min: 0.0, delta_max: 0.5, population: census}")
    _unknown(spec, DELTA_PRESENCE_KEYS, F)
    population = spec.get("population")
    if not isinstance(population, str) or not population:
        raise PolicyError(f"{F}.population", "missing; give the population table (same quasi-identifier columns, "
                          "same database) the source is a subset of, for example population: census")
    lo = _number(spec.get("delta_min", 0.0), f"{F}.delta_min", "a probability from 0 to 1")
    hi = _number(spec.get("delta_max", 1.0), f"{F}.delta_max", "a probability from 0 to 1")
    if not 0 <= lo <= hi <= 1:
        raise PolicyError(f"{F}.delta_max", f"needs 0 <= delta_min <= delta_max <= 1; got {lo} and {hi}")
    return DeltaPresence(lo, hi, population)


def criteria_from_policy(privacy: dict, domains: dict[str, SensitiveDomain]) -> list[Criterion]:
    """The criteria a policy's ``privacy:`` mapping asks for, after validating every field.

    `domains` maps each sensitive attribute (in policy order; the first is the default
    `attribute`) to its `SensitiveDomain`. Returns, in order: `KAnonymity` (if k is given), the
    l-diversity criteria (one per attribute; with ``attribute: all`` and several sensitive
    attributes each is flagged ``multi_attribute`` for Def. 4.6), the t-closeness criteria.
    ``max_suppression`` is validated but is not a criterion (the engine applies it).

    Raises `PolicyError(field, message)` naming the field, e.g. ``privacy.l_diversity.l``.
    """
    if privacy is None:
        privacy = {}
    _mapping(privacy, "privacy", "{k: 5}")
    _unknown(privacy, PRIVACY_KEYS, "privacy")
    out: list[Criterion] = []
    if privacy.get("k") is not None:
        out.append(_k(privacy["k"]))
    if privacy.get("l_diversity") is not None:
        out.extend(_l_diversity(privacy["l_diversity"], domains))
    if privacy.get("t_closeness") is not None:
        out.extend(_t_closeness(privacy["t_closeness"], domains))
    if privacy.get("beta_likeness") is not None:
        out.extend(_beta_likeness(privacy["beta_likeness"], domains))
    if privacy.get("delta_disclosure") is not None:
        out.extend(_delta_disclosure(privacy["delta_disclosure"], domains))
    if privacy.get("k_map") is not None:
        out.append(_k_map(privacy["k_map"]))
    if privacy.get("delta_presence") is not None:
        out.append(_delta_presence(privacy["delta_presence"]))
    if privacy.get("average_risk") is not None:
        out.append(_average_risk(privacy["average_risk"]))
    if privacy.get("records_at_risk") is not None:
        out.append(_records_at_risk(privacy["records_at_risk"]))
    if "max_suppression" in privacy and privacy["max_suppression"] is not None:
        s = _number(privacy["max_suppression"], "privacy.max_suppression",
                    "a fraction of the rows, at least 0 and below 1")
        if not 0 <= s < 1:
            raise PolicyError("privacy.max_suppression", f"must be at least 0 and below 1 (a fraction of the "
                              f"rows); got {s}")
    if not out:
        raise PolicyError("privacy", "names no privacy model; give at least k (for example privacy: {k: 5})")
    return out
