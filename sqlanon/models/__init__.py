"""Privacy models, one module per family, all evaluated per q*-block on sensitive-value counts.

- `kanonymity`:  k-anonymity (`KAnonymity`)
- `ldiversity`:  distinct, entropy (with don't-care sets: adjusted entropy), recursive (c,l),
                 pd-recursive and npd-recursive l-diversity; multi-attribute l-diversity
                 (`DistinctLDiversity`, `EntropyLDiversity`, `RecursiveCLDiversity`)
- `tcloseness`:  t-closeness with the Earth Mover's Distance (`TCloseness`)
- `likeness`:    beta-likeness (basic, enhanced) and delta-disclosure privacy (`BetaLikeness`, `DeltaDisclosure`)
- `risk`:        re-identification risk of the whole release: average risk, records at risk
                 (`AverageRisk`, `RecordsAtRisk`; table-level, see `sqlanon.models.risk`)

`criteria_from_policy` turns a policy's ``privacy:`` (validated by `sqlanon.policy_model.Privacy`, whose
fields are the keys below) into a list of criteria::

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
table-level (`sqlanon.models.risk`); k-map with an estimator is a k-anonymity and stays monotone. With an
entity key only k-anonymity and distinct l-diversity are monotone, budget or not: a merged block counts
each person once, so its counts are no mixture of its parts' (`NodeChecker.prunable`).
"""
from __future__ import annotations

from .. import policy_model as pm
from ..errors import PolicyError
from .base import Criterion, SensitiveDomain
from .kanonymity import KAnonymity
from .ldiversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity, multi_attribute_ok
from .likeness import BetaLikeness, DeltaDisclosure
from .risk import AverageRisk, DeltaPresence, KMapEstimated, KMapPopulation, RecordsAtRisk
from .tcloseness import TCloseness

__all__ = [
    "Criterion", "SensitiveDomain", "KAnonymity", "DistinctLDiversity", "EntropyLDiversity",
    "RecursiveCLDiversity", "TCloseness", "multi_attribute_ok", "criteria_from_policy",
    "PRIVACY_KEYS", "L_DIVERSITY_KEYS", "T_CLOSENESS_KEYS", "L_VARIANTS", "BetaLikeness", "DeltaDisclosure",
    "AverageRisk", "RecordsAtRisk", "KMapEstimated",
]

# the keys, from the one description of the policy's shape
PRIVACY_KEYS = tuple(pm.Privacy.model_fields)
L_DIVERSITY_KEYS = tuple(pm.LDiversity.model_fields)
T_CLOSENESS_KEYS = tuple(pm.TCloseness.model_fields)
L_VARIANTS = ("distinct", "entropy", "recursive")


# --------------------------------------------------------------------------------------------------
# what needs the sensitive domains: values that must occur, the attribute a model applies to

def _shown(domain: SensitiveDomain, limit: int = 8) -> str:
    vals = [str(v) for v in domain.values[:limit]]
    return ", ".join(vals) + (", ..." if domain.size > limit else "")


def _codes(labels: list, domains: list[SensitiveDomain], field: str) -> dict[str, list[int]]:
    """Resolve labels to codes in each domain; every label must exist in at least one of them."""
    out: dict[str, list[int]] = {d.name: [] for d in domains}
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


def _attributes(attr: str | None, domains: dict[str, SensitiveDomain], field: str
                ) -> tuple[list[SensitiveDomain], bool]:
    """The domains a model applies to and whether the policy asked for all of them."""
    if not domains:
        raise PolicyError(field, "needs a sensitive attribute; list it under `sensitive:`")
    if attr is None:
        return [next(iter(domains.values()))], False
    if attr == "all":
        return list(domains.values()), True
    if attr not in domains:
        raise PolicyError(f"{field}.attribute", f"must be one of the sensitive attributes "
                          f"({', '.join(domains)}) or 'all'; got {attr!r}")
    return [domains[attr]], False


# --------------------------------------------------------------------------------------------------
# the models

def _l_diversity(spec: pm.LDiversity, domains: dict[str, SensitiveDomain]) -> list[Criterion]:
    F = "privacy.l_diversity"
    variant, c = spec.variant, spec.c
    l = spec.l if variant == "entropy" else int(spec.l)
    # {} in the policy is "none" (its validator makes it None): only the model's own type remains
    npd = spec.no_negative_disclosure if isinstance(spec.no_negative_disclosure, pm.NoNegativeDisclosure) else None
    targets, all_attrs = _attributes(spec.attribute, domains, F)
    y_codes = _codes(spec.dont_care, targets, f"{F}.dont_care")
    w_codes = _codes(npd.values, targets, f"{F}.no_negative_disclosure.values") if npd else {}
    multi = all_attrs and len(domains) > 1

    out: list[Criterion] = []
    for d in targets:
        if d.size and l > d.size:
            raise PolicyError(f"{F}.l", f"l = {l:g} but sensitive attribute '{d.name}' has only {d.size} "
                              f"distinct values, so no table can be l-diverse; lower l")
        if y_codes[d.name] and len(y_codes[d.name]) >= d.size:
            raise PolicyError(f"{F}.dont_care", f"covers every value of '{d.name}', leaving nothing to protect; "
                              "remove some values")
        crit: DistinctLDiversity | EntropyLDiversity | RecursiveCLDiversity
        if variant == "distinct":
            crit = DistinctLDiversity(int(l))
        elif variant == "entropy":
            crit = EntropyLDiversity(l, y_codes[d.name])
        else:
            if c is None:       # the policy model requires c for the recursive variant
                raise PolicyError(f"{F}.c", "missing; recursive (c,l)-diversity needs c")
            crit = RecursiveCLDiversity(c, int(l), y_codes[d.name],
                                        npd=(npd.c2, w_codes[d.name]) if npd and w_codes[d.name] else None)
        crit.sensitive = d.name
        crit.multi_attribute = multi
        out.append(crit)
    return out


def _t_closeness(spec: pm.TCloseness, domains: dict[str, SensitiveDomain]) -> list[Criterion]:
    F = "privacy.t_closeness"
    targets, _ = _attributes(spec.attribute, domains, F)
    out: list[Criterion] = []
    for d in targets:
        if spec.distance == "ordered" and not d.numeric:
            raise PolicyError(f"{F}.distance", f"ordered needs a numeric sensitive attribute and '{d.name}' is "
                              "categorical; use equal or hierarchical")
        if spec.distance == "hierarchical" and d.levels is None:
            raise PolicyError(f"{F}.distance", f"hierarchical needs a hierarchy for sensitive attribute "
                              f"'{d.name}'; give one under sensitive: ({d.name}: {{hierarchy: ...}}) or use equal")
        try:
            crit = TCloseness(spec.t, spec.distance, d)
        except ValueError as e:
            raise PolicyError(f"{F}.distance", f"{e}; fix the hierarchy of '{d.name}'") from None
        out.append(crit)
    return out


def privacy_model(privacy: dict | pm.Privacy | None) -> pm.Privacy:
    """The validated ``privacy:`` mapping (`sqlanon.policy_model.Privacy`), which must name a privacy model (a
    model passes through, checked the same: `load_policy` passes one, and `privacy: {}` released the raw rows)."""
    model = privacy if isinstance(privacy, pm.Privacy) else pm.validate(pm.Privacy, {} if privacy is None else
                                                                         privacy, "privacy")
    if not any(getattr(model, key) is not None for key in PRIVACY_KEYS if key != "max_suppression"):
        raise PolicyError("privacy", "names no privacy model; give at least k (for example privacy: {k: 5})")
    return model


def criteria_from_policy(privacy: dict | pm.Privacy | None, domains: dict[str, SensitiveDomain]) -> list[Criterion]:
    """The criteria a policy's ``privacy:`` asks for: built from the validated model (`load_policy`
    validates it once; a dict, as tests and experiments pass, is validated here by the same model).

    `domains` maps each sensitive attribute (in policy order; the first is the default
    `attribute`) to its `SensitiveDomain`. Returns, in order: `KAnonymity` (if k is given), the
    l-diversity criteria (one per attribute; with ``attribute: all`` and several sensitive
    attributes each is flagged ``multi_attribute`` for Def. 4.6), the t-closeness criteria, then
    beta-likeness, delta-disclosure, k-map, delta-presence, average risk, records at risk.
    ``max_suppression`` is validated but is not a criterion (the engine applies it).

    Args:
        privacy: the policy's ``privacy:`` mapping (or its validated model).
        domains: sensitive attribute -> its `SensitiveDomain`, in policy order.

    Returns:
        The criteria, in the order above.

    Raises:
        PolicyError: naming the field, e.g. ``privacy.l_diversity.l``.

    >>> disease = SensitiveDomain("disease", ("Cancer", "Flu", "HIV"))
    >>> criteria = criteria_from_policy({"k": 3, "l_diversity": {"variant": "distinct", "l": 2}},
    ...                                 {"disease": disease})
    >>> [c.describe() for c in criteria]
    ['3-anonymity', 'distinct 2-diversity']
    >>> criteria_from_policy({"k": 3, "l_diversity": {"variant": "distinct", "l": 4}},
    ...                      {"disease": disease})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sqlanon.errors.PolicyError: policy field 'privacy.l_diversity.l': l = 4 but ... has only 3 distinct values, ...
    """
    p = privacy_model(privacy)
    out: list[Criterion] = []
    if p.k is not None:
        out.append(KAnonymity(p.k))
    if p.l_diversity is not None:
        out.extend(_l_diversity(p.l_diversity, domains))
    if p.t_closeness is not None:
        out.extend(_t_closeness(p.t_closeness, domains))
    if p.beta_likeness is not None:
        targets, _ = _attributes(p.beta_likeness.attribute, domains, "privacy.beta_likeness")
        out.extend(BetaLikeness(p.beta_likeness.beta, d, p.beta_likeness.variant) for d in targets)
    if p.delta_disclosure is not None:
        targets, _ = _attributes(p.delta_disclosure.attribute, domains, "privacy.delta_disclosure")
        out.extend(DeltaDisclosure(p.delta_disclosure.delta, d) for d in targets)
    if p.k_map is not None:
        m = p.k_map
        if m.population is not None:
            out.append(KMapPopulation(m.k, m.population))
        elif m.sampling_fraction is not None:        # the model's validator requires one of the two
            out.append(KMapEstimated(m.k, m.sampling_fraction, 0.01 if m.significance is None else m.significance,
                                     m.estimator or "poisson"))
    if p.delta_presence is not None:
        d = p.delta_presence
        out.append(DeltaPresence(d.delta_min, d.delta_max, d.population))
    if p.average_risk is not None:
        out.append(AverageRisk(p.average_risk))
    if p.records_at_risk is not None:
        out.append(RecordsAtRisk(p.records_at_risk.threshold, p.records_at_risk.max_fraction))
    return out
