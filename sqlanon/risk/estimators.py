"""Population uniqueness estimated from a sample's class-size histogram (ARX's risk analysis).

A released sample of n rows is drawn from a population of N rows (sampling fraction f = n / N). Its
equivalence classes (rows that share every quasi-identifier value) are summarized by the histogram
``c[i]`` = number of classes of size i. A sample unique (a class of size 1) is only dangerous when the
person is also unique in the population; these estimators guess how many population uniques there are
(as a number of rows of the population: a population unique is one class of size 1):

- `zayatz`: Zayatz, "Estimation of the percent of unique population elements on a microdata file using
  the sample", US Census Bureau SRD Report RR-91/08 (1991).
- `pitman`: the Pitman sampling formula (Pitman, "Some developments of the Blackwell-MacQueen urn
  scheme", IMS Lecture Notes 30, 1996) fitted by maximum likelihood, as used for population
  uniqueness by Hoshino, "Applying Pitman's sampling formula to microdata disclosure risk assessment",
  Journal of Official Statistics 17(4), 2001.
- `snb`: the slide negative binomial model of Chen and Keller-McNulty, "Estimation of identification
  disclosure risk in microdata", Journal of Official Statistics 14(1), 1998.
- `dankar`: the decision rule of Dankar, El Emam, Neisa, Roffey, "Estimating the re-identification risk
  of clinical data sets", BMC Medical Informatics and Decision Making 12:66 (2012), Section "Decision
  rule": for f <= 10% Pitman's estimate (Zayatz's when Pitman's fit fails), above it the smaller of
  Zayatz's and SNB's (Zayatz's when SNB's fails). With no sample unique every estimate is 0.

Each function returns the estimated number of population uniques, or NaN when its model cannot be fitted
(no sample unique is handled by `population_uniques`, which returns 0 then, as ARX does).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import optimize, special

MODELS = ("zayatz", "pitman", "snb")


def _histogram(sizes, counts) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.asarray(sizes, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    keep = counts > 0
    return sizes[keep], counts[keep]


def _log_comb(a, b):
    return special.gammaln(a + 1) - special.gammaln(b + 1) - special.gammaln(a - b + 1)


def hypergeom_one(population: float, successes, draws: float) -> np.ndarray:
    """P(X = 1) for X ~ Hypergeometric(population, successes, draws): i C(N-i, n-1) / C(N, n)."""
    i = np.asarray(successes, dtype=np.float64)
    N, n = float(population), float(draws)
    out = np.zeros_like(i)
    ok = (i >= 1) & (N - i >= n - 1)
    out[ok] = np.exp(np.log(i[ok]) + _log_comb(N - i[ok], n - 1) - _log_comb(N, n))
    return out


def zayatz(sizes, counts, population: float) -> float:
    """Zayatz (1991): sample uniques times the probability that a sample unique is a population unique,
    scaled up by 1 / f.

    That probability is P(population class of size 1 | sample class of size 1), by Bayes with the sample's
    class-size distribution standing in for the population's (c_i / u) and hypergeometric sampling:
    P = (c_1/u) h(1; N, 1, n) / sum_i (c_i/u) h(1; N, i, n), where h(1; N, i, n) is the chance that a
    class of i of the N population rows shows exactly once among n drawn rows. Estimate: c_1 P / f.
    """
    i, c = _histogram(sizes, counts)
    n = float((i * c).sum())
    c1 = float(c[i == 1].sum())
    if c1 == 0:
        return 0.0
    h = hypergeom_one(population, i, n)
    p = c1 * hypergeom_one(population, [1.0], n)[0] / float((c * h).sum())
    return float(c1 * p / (n / float(population)))


# -- Pitman --------------------------------------------------------------------------------------------

def pitman_log_likelihood(theta: float, alpha: float, sizes, counts) -> float:
    """log of the Pitman sampling formula's probability of the class-size histogram (up to a constant):
    sum_{i=1}^{u-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i) + sum_k c_k sum_{j=1}^{k-1} log(j - alpha),
    in closed form with log-gamma functions (Hoshino 2001, Section 3)."""
    i, c = _histogram(sizes, counts)
    u, n = float(c.sum()), float((i * c).sum())
    return float((u - 1) * math.log(alpha) + special.gammaln(theta / alpha + u) - special.gammaln(theta / alpha + 1)
                 - (special.gammaln(theta + n) - special.gammaln(theta + 1))
                 + (c * (special.gammaln(i - alpha) - special.gammaln(1 - alpha))).sum())


def _pitman_score(params, i, c, u, n):
    theta, alpha = params
    s1 = (special.digamma(theta / alpha + u) - special.digamma(theta / alpha + 1)) / alpha  # sum 1/(theta+i alpha)
    d_theta = s1 - (special.digamma(theta + n) - special.digamma(theta + 1))
    d_alpha = ((u - 1) - theta * s1) / alpha - (c * (special.digamma(i - alpha) - special.digamma(1 - alpha))).sum()
    return np.array([d_theta, d_alpha])


def pitman_fit(sizes, counts) -> tuple[float, float] | None:
    """The maximum-likelihood (theta, alpha) of the Pitman sampling formula: the root of its two score
    equations, started from Hoshino's moment-type guess (then a few fixed starts); None when no root
    with 0 < alpha < 1 and theta > -alpha exists."""
    i, c = _histogram(sizes, counts)
    u, n = float(c.sum()), float((i * c).sum())
    c1 = float(c[i == 1].sum())
    c2 = float(c[i == 2].sum()) or 1.0
    if u < 2 or c1 == 0 or u >= n:
        return None
    starts = []
    g = c1 * (c1 - 1) / c2
    denominator = 2 * c1 * u + c1 * g - n * g
    if denominator != 0:
        t0 = (n * u * g - c1 * (n - 1) * (2 * u + g)) / denominator
        a0 = (t0 * (c1 - n) + (n - 1) * c1) / (n * u)
        if 0 < a0 < 1 and t0 > -a0:
            starts.append((t0, a0))
    starts += [(t, a) for t in (1.0, 10.0, 100.0, 1000.0) for a in (0.5, 0.2, 0.8)]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for start in starts:
            sol = optimize.root(_pitman_score, np.array(start), args=(i, c, u, n), method="hybr")
            theta, alpha = (float(x) for x in sol.x)
            if not (0 < alpha < 1 and theta > -alpha and math.isfinite(theta)):
                continue
            if np.all(np.abs(_pitman_score((theta, alpha), i, c, u, n)) <= 1e-8 * max(1.0, u)):
                return theta, alpha
    return None


def pitman(sizes, counts, population: float) -> float:
    """Pitman's model (Hoshino 2001, eq. for the expected number of population uniques):
    E[uniques] = Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha at the maximum-likelihood (theta, alpha)."""
    fit = pitman_fit(sizes, counts)
    if fit is None:
        return math.nan
    theta, alpha = fit
    value = math.exp(special.gammaln(theta + 1) - special.gammaln(theta + alpha) + alpha * math.log(population))
    return value if 0 <= value <= population else math.nan


# -- SNB -----------------------------------------------------------------------------------------------

def shlosser_classes(sizes, counts, f: float) -> float:
    """The number of classes in the population (non-empty cells), K, by the Shlosser-type estimator of
    Haas and Stokes ("Estimating the number of classes in a finite population", JASA 93(444), 1998, D_Sh2),
    as the SNB model uses it:
    K = u + c_1 [sum i f^2 (1-f^2)^(i-1) c_i / sum (1-f)^i ((1+f)^i - 1) c_i]
              [sum (1-f)^i c_i / sum i f (1-f)^(i-1) c_i]^2.
    """
    i, c = _histogram(sizes, counts)
    u, c1 = float(c.sum()), float(c[i == 1].sum())
    if f >= 1:
        return u
    a = (i * f ** 2 * (1 - f ** 2) ** (i - 1) * c).sum()
    b = (((1 - f ** 2) ** i - (1 - f) ** i) * c).sum()     # (1-f)^i ((1+f)^i - 1), without overflow
    d = ((1 - f) ** i * c).sum()
    e = (i * f * (1 - f) ** (i - 1) * c).sum()
    if b == 0 or e == 0:
        return u
    return float(u + c1 * (a / b) * (d / e) ** 2)


def snb_cell_probabilities(alpha: float, beta: float, f: float) -> tuple[float, float]:
    """P(a population class shows once), P(twice) in the sample under the SNB model.

    Population class sizes F >= 1 with F - 1 ~ NegativeBinomial(alpha, beta), P(F = m) =
    C(m + alpha - 2, m - 1) beta^alpha (1 - beta)^(m - 1); each row sampled with probability f. From the
    probability generating function G(w) = w (beta / (1 - (1 - beta) w))^alpha at w = 1 - f + f s, with
    d = (1 - f)(1 - beta):
    P(1) = f (beta / (1 - d))^alpha (1 + alpha d / (1 - d)),
    P(2) = f^2 alpha beta^alpha (1 - beta) (2 - (1 - alpha) d) / (2 (1 - d)^(alpha + 2)).
    (Derived here from the model; ARX's ModelSNB multiplies by (1 - d)^(alpha + 2) in P(2) where the
    derivation divides.)
    """
    d = (1 - f) * (1 - beta)
    p1 = f * (beta / (1 - d)) ** alpha * (1 + alpha * d / (1 - d))
    p2 = f ** 2 * alpha * beta ** alpha * (1 - beta) * (2 - (1 - alpha) * d) / (2 * (1 - d) ** (alpha + 2))
    return p1, p2


def snb_fit(sizes, counts, f: float) -> tuple[float, float, float] | None:
    """(K, alpha, beta): K by `shlosser_classes`, then alpha > 0, 0 < beta < 1 solving the moment
    equations K P(1) = c_1, K P(2) = c_2 (Chen and Keller-McNulty 1998, Section 3). None if unsolved."""
    i, c = _histogram(sizes, counts)
    c1, c2 = float(c[i == 1].sum()), float(c[i == 2].sum())
    if c1 == 0:
        return None
    K = shlosser_classes(i, c, f)

    def residual(x):
        p1, p2 = snb_cell_probabilities(x[0], x[1], f)
        return np.array([K * p1 / c1 - 1, (K * p2 - c2) / max(c1, 1.0)])

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for start in ((1.0, 0.5), (0.1, 0.1), (5.0, 0.9), (0.5, 0.01), (10.0, 0.5)):
            try:
                sol = optimize.least_squares(residual, np.array(start), bounds=([1e-9, 1e-12], [np.inf, 1 - 1e-12]),
                                             xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=2000)
            except ValueError:
                continue
            if sol.success and np.all(np.abs(sol.fun) <= 1e-7):
                return K, float(sol.x[0]), float(sol.x[1])
    return None


def snb(sizes, counts, population: float) -> float:
    """SNB estimate of population uniques: K P(F = 1) = K beta^alpha (Chen and Keller-McNulty 1998)."""
    i, c = _histogram(sizes, counts)
    n = float((i * c).sum())
    fit = snb_fit(i, c, n / float(population))
    if fit is None:
        return math.nan
    K, alpha, beta = fit
    value = K * beta ** alpha
    return value if 0 <= value <= population else math.nan


def population_uniques(sizes, counts, population: float) -> dict:
    """Every estimate and Dankar et al.'s (2012) choice among them.

    Returns {"model": the chosen model, "estimate": its number of population uniques, "fraction": that
    over the population size, "population_size": N, "sampling_fraction": f, "estimates": {model: value or
    None when it could not be fitted}}.
    """
    i, c = _histogram(sizes, counts)
    n = float((i * c).sum())
    N = float(population)
    f = n / N
    if not (c[i == 1].sum() > 0):
        estimates = {m: 0.0 for m in MODELS}
        model, value = "none (no sample uniques)", 0.0
    else:
        estimates = {"zayatz": zayatz(i, c, N), "pitman": pitman(i, c, N), "snb": snb(i, c, N)}
        valid = {m: v for m, v in estimates.items() if math.isfinite(v) and v != 0}
        if f <= 0.1:
            model = "pitman" if "pitman" in valid else "zayatz"
        elif "snb" in valid and valid["snb"] <= estimates["zayatz"]:
            model = "snb"
        else:
            model = "zayatz"
        value = float(estimates[model]) if math.isfinite(estimates[model]) else 0.0
    return {"model": model, "estimate": value, "fraction": value / N, "population_size": round(N),
            "sampling_fraction": f,
            "estimates": {m: (float(v) if math.isfinite(v) else None) for m, v in estimates.items()}}
