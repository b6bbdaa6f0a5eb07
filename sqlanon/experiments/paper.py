"""The published numbers the experiments are compared with, as printed in the papers.

TKDD = Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam, "l-Diversity: Privacy Beyond k-Anonymity",
ACM TKDD 1(1), 2007. ICDE = Li, Li, Venkatasubramanian, "t-Closeness: Privacy Beyond
k-Anonymity and l-Diversity", ICDE 2007.

Only numbers printed in the text or in tables are here. Figures 13-20 of TKDD are plots without data
labels: for them we keep what the text states and the axis ranges, never values read off a curve.
The project's copy of the ICDE paper is a stop-word-stripped text whose numbers are all gone, so its
experiments are compared on the claims the text makes, not on numbers.
"""
from typing import Any

# TKDD Figure 9 (completely homogeneous groups) and Figure 11 (95 % homogeneous), Adult,
# QI = {age, gender, race, marital status, education}, sensitive = salary class.
# k -> (minimal tables, affected tables, avg affected groups per table, avg affected tuples per table)
FIG9 = {2: (8, 8, 7.38, 558.00), 5: (12, 11, 3.58, 381.58), 10: (12, 10, 1.75, 300.42),
        15: (8, 7, 2.12, 317.25), 20: (10, 8, 1.20, 228.20), 30: (10, 7, 0.90, 215.40),
        50: (5, 5, 1.00, 202.80)}
FIG11 = {2: (8, 8, 20.50, 13574.5), 5: (12, 12, 12.67, 13328.3), 10: (12, 12, 7.83, 10796.5),
         15: (8, 8, 8.88, 12009.4), 20: (10, 10, 7.10, 11041.0), 30: (10, 10, 5.50, 11177.0),
         50: (5, 5, 5.80, 8002.0)}
HOMOGENEITY_KS = (2, 5, 10, 15, 20, 30, 50)

# TKDD Section 6, "Performance" and Figures 13 / 14
PERFORMANCE: dict[str, Any] = {
    "machine": "3 GHz Intel Pentium 4, 1 GB RAM, Fedora Core 3; Incognito in Java over IBM DB2 v8.1",
    "adult_max_minutes": 6,          # the y axis of Figure 13 ends at 6 minutes (quasi-identifier size 8)
    "landsend_max_minutes": 30,      # the y axis of Figure 14 ends at 30 minutes (quasi-identifier size 7)
    "claim": "the running times for k-anonymity and l-diversity were similar; sometimes l-diversity was "
             "faster, when the algorithm pruned parts of the generalization lattice earlier",
}

# TKDD Section 6, "Utility"
FACTS: dict[str, Any] = {
    "rows": 45222,
    "occupation_entropy_l": 10.57,   # "the marginal distribution of the sensitive attribute is entropy 10.57-diverse"
    # "there is no generalization of the Adults database that is recursive (3, l)-diverse for l = 12"
    "recursive_3_12_tables": 0,
    "age_81_90": 114,                # "there were only 114 tuples with age between 81 and 90"
    "age_31_40": 12291,              # "while there were 12,291 tuples with age between 31 and 40"
    "min_avg_group_over_1000": "minimal 4-anonymous tables (QI age, gender, race, marital status, education, full "
                               "data) with average group sizes larger than 1,000 tuples",
    "sample_age_rows": "in the 5 % Bernoulli subsample most age values appeared in around 20 tuples each, only a "
                       "few in less than 10",
}

UTILITY_PARAMS = (2, 4, 6, 8, 10)
# Figures 15-18 (on the 5 % sample) and 19 (sample) / 20 (full data): the quasi-identifiers
UTILITY_QIS = {
    "Q3": ("age", "sex", "race"),                                   # Fig. 15, 19 left, 20 left
    "Q4": ("age", "sex", "race", "marital_status"),                 # Fig. 16, 19 middle, 20 middle
    "Q5": ("age", "sex", "race", "marital_status", "education"),    # Fig. 17, 19 right, 20 right
    "Q7": ("age", "sex", "race", "marital_status", "education", "workclass", "native_country"),   # Fig. 18
}
UTILITY_FIGURES = {"Q3": "Fig. 15", "Q4": "Fig. 16", "Q5": "Fig. 17", "Q7": "Fig. 18"}
# axis ranges printed on the figures (upper ends), the only numbers the plots carry
UTILITY_AXES: dict[str, Any] = {
    "min_height": {"Q3": 10, "Q4": 12, "Q5": 14, "Q7": 16},
    "min_avg_group_size": 2500,
    "discernibility": 5.0e6,
    "kl_sample": {"Q3": 4.0, "Q4": 6.0, "Q5": 10.0},
    "kl_full": {"Q3": 3.0, "Q4": 4.5},
}
UTILITY_CLAIMS = [
    ("heights_equal", "the minimum generalization heights for identical values of k and l were usually identical"),
    ("comparable", "the best k-anonymous and l-diverse tables often (but not always) had comparable utility "
                   "(Figs. 15-18)"),
    ("recursive_better", "recursive (3, l)-diversity permits tables with better utility than entropy l-diversity"),
    ("full_kl_close", "on the full data, the KL-divergence of the best l-diverse table (entropy or recursive) is very "
                      "close to that of the best k-anonymous table for k = l = 2, 4, 6"),
    ("sample_near_base", "on the sample, for l = 8, 10 the best l-diverse tables were very close to the baseline"),
    ("l6_recursive_kl", "for l = 6, the recursive definition performs better than the entropy definition (Fig. 19, "
                        "sample KL)"),
    ("l6_recursive_kl_age74", "the same, with the KL over the 74-age domain"),
]

# ICDE 2007 Section 6 (numbers stripped in our copy)
ICDE: dict[str, Any] = {
    "qi": ("age", "workclass", "education", "native_country", "marital_status", "race", "sex"),
    "similarity_claim": "Occupation's values are divided into three roughly equal-size groups by semantic "
                        "closeness; an equivalence class whose values all fall in one group is vulnerable. Among "
                        "the minimal entropy l-diverse tables (and among the minimal recursive (c, l)-diverse "
                        "tables) found by Incognito, a part suffer from the similarity attack, and in one table a "
                        "number of records can be inferred to have a value in one class.",
    "efficiency_claim": "entropy l-diversity runs faster than the other measures, and the difference grows with "
                        "l, because for large l entropy l-diversity prunes the search lattice earlier",
    "quality_claim": "entropy l-diversity tables have worse data quality than the other measures; t-closeness "
                     "provides extra protection at the cost of decreased data quality, a degradation that can "
                     "be kept minimal by choosing t",
    "machine": "a Java implementation on a Pentium machine (its GHz and GB are stripped in our copy)",
}
