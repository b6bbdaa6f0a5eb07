"""Re-identification risk as a function of class sizes (ARX's risk analysis; El Emam, "Guide to the
De-Identification of Personal Health Information", 2013, chapters on the prosecutor, journalist and
marketer attackers).

Every figure here takes a histogram, never rows: ``sizes[j]`` a class size and ``classes[j]`` how many
equivalence classes (rows sharing every quasi-identifier value) have it; the database computes that
histogram with one GROUP BY (`sqlanon.risk.analysis`).

- Prosecutor (the attacker knows the target is in the release): a record in a class of size f is
  re-identified with probability 1/f. Highest risk 1 / min f; average risk over records
  sum_records 1/f / n = classes / rows; records at risk: rows whose 1/f is strictly above a threshold.
- Journalist (the target is somewhere in a larger population, e.g. a census extract): a record's risk is
  1/F with F the size of its class in the population; highest max 1/F, average sum f/F / n.
- Marketer (re-identify as many records as possible): the expected fraction re-identified, classes / rows
  for the sample alone (same as the prosecutor's average), sum_records 1/F / n against a population.
"""
from __future__ import annotations

import numpy as np

DEFAULT_THRESHOLD = 0.2


def _arrays(sizes, classes) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(sizes, dtype=np.int64).reshape(-1)
    c = np.asarray(classes, dtype=np.int64).reshape(-1)
    keep = c > 0
    return s[keep], c[keep]


def at_risk(sizes, threshold: float) -> np.ndarray:
    """Which class sizes carry a prosecutor risk 1/size strictly above `threshold`."""
    s = np.asarray(sizes, dtype=np.float64)
    return s * threshold < 1.0 if threshold > 0 else np.ones(s.shape, dtype=bool)


def prosecutor(sizes, classes, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """{max, average, records_at_risk (a fraction of the rows), threshold} of a class-size histogram."""
    s, c = _arrays(sizes, classes)
    rows = int((s * c).sum())
    if rows == 0:
        return {"max": 0.0, "average": 0.0, "records_at_risk": 0.0, "threshold": threshold}
    risky = at_risk(s, threshold)
    return {"max": 1.0 / float(s.min()), "average": float(c.sum()) / rows,
            "records_at_risk": float((s[risky] * c[risky]).sum()) / rows, "threshold": threshold}


def summary(sizes, classes, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """rows, classes, sample_uniques (rows in classes of size 1), prosecutor, marketer (sample), histogram."""
    s, c = _arrays(sizes, classes)
    rows = int((s * c).sum())
    return {"rows": rows, "classes": int(c.sum()), "sample_uniques": int(c[s == 1].sum()),
            "prosecutor": prosecutor(s, c, threshold),
            "marketer": float(c.sum()) / rows if rows else 0.0,
            "histogram": {int(a): int(b) for a, b in zip(s, c)}}


def journalist(sample_sizes, population_sizes, classes, threshold: float = DEFAULT_THRESHOLD,
               population_classes: int | None = None) -> dict:
    """Journalist and marketer risk against a population: (f, F, number of classes) triples.

    The journalist's average risk is max(|J| / sum_j F_j, sum_j (f_j / F_j) / n) over the sample's classes J
    (El Emam, "Guide to the De-Identification of Personal Health Information", 2013, the journalist
    attack; ARX's `RiskModelSampleSummary` computes the same); the second term alone is the marketer risk.

    F below f (the population lacks some of the sample's people) is raised to f: the sample is part of
    the population, so its classes there are at least as large; how many classes needed it is reported
    as ``population_smaller`` (a population table that does not contain the sample).

    Also the privacy models a population table lets one measure: ``k_map``, the fewest population people
    any released class matches (k-map holds for every k up to it; Sweeney; El Emam and Dankar, JAMIA
    2008), and ``delta_presence`` {min, max} of P(t in sample | t's generalized class) = f / F over the
    population's classes (Nergiz, Atzori, Clifton, "Hiding the Presence of Individuals from Shared
    Databases", SIGMOD 2007, Definition 3): a population class no sample row falls in has 0, known
    when `population_classes` (its number of classes) exceeds the matched ones.
    """
    f = np.asarray(sample_sizes, dtype=np.int64).reshape(-1)
    F = np.asarray(population_sizes, dtype=np.int64).reshape(-1)
    c = np.asarray(classes, dtype=np.int64).reshape(-1)
    smaller = int(c[f > F].sum())
    # population classes some table class falls in (a table class the population lacks, F = 0, matches none:
    # counted, it hid the population class no table row falls in, whose f / F is 0)
    matched = int(c[F > 0].sum())
    F = np.maximum(F, f)
    rows = int((f * c).sum())
    risky = at_risk(F, threshold)
    return {
        "journalist": {"max": 1.0 / float(F.min()) if len(F) else 0.0,
                       # El Emam's (and ARX's) average: the larger of classes over their population people
                       # and the marketer's mean of f / F (the latter alone understated it)
                       "average": max(float(c.sum()) / float((F * c).sum()), float((f * c / F).sum()) / rows)
                       if rows else 0.0,
                       "records_at_risk": float((f[risky] * c[risky]).sum()) / rows if rows else 0.0,
                       "threshold": threshold, "population_smaller": smaller},
        "marketer": float((f * c / F).sum()) / rows if rows else 0.0,
        "k_map": int(F.min()) if len(F) else 0,
        "delta_presence": {"min": 0.0 if population_classes is not None and population_classes > matched
                           else (float((f / F).min()) if len(F) else 0.0),
                           "max": float((f / F).max()) if len(F) else 0.0},
    }
