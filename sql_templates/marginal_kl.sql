{# KL-divergence between the original table's empirical distribution and the maximum-entropy estimate
   from a decomposable collection of anonymized marginals (Kifer & Gehrke 2006, Section 3.2):
   sum over the original's cells of F(x) ln(F(x) / F*(x)) = (1/N) sum c (ln c - ln est). #}
SELECT SUM("c" * (LN("c") - "ln_est")) / SUM("c") AS "kl", SUM(EXP("ln_est")) AS "mass", COUNT(*) AS "cells"
FROM (
{% include "marginal_estimate.sql" %}

) AS "cells"
