{# Privacy-MaxEnt risk over all published records, with knowledge (x) and without (x0): per record its
   largest posterior P*(s | q, b) and entropy (nats); the largest posterior, how many records have one of at
   least 0.5, 0.9 and 1 (within 1e-9), and the records' mean entropy. Sums of entropies are exact
   (`exact_sum`), so the figures are the same in every run. #}
{% from "_macros.sql" import exact_sum %}
WITH est AS (
    SELECT e."b", e."q", e."s", e."x" / qb."n" AS "p", e."x0" / qb."n" AS "p0", qb."n"
    FROM {{ estimate | ident }} AS e
    JOIN {{ qb | ident }} AS qb ON qb."b" = e."b" AND qb."q" = e."q"
), rec AS (
    SELECT "b", "q", MAX("n") AS "n", MAX("p") AS "top", MAX("p0") AS "top0",
           0.0 - {{ exact_sum('CASE WHEN "p" > 0 THEN "p" * LN("p") ELSE 0 END') }} AS "h",
           0.0 - {{ exact_sum('CASE WHEN "p0" > 0 THEN "p0" * LN("p0") ELSE 0 END') }} AS "h0"
    FROM est
    GROUP BY "b", "q"
)
SELECT MAX("top") AS "max_posterior",
       SUM(CASE WHEN "top" >= 0.5 THEN "n" ELSE 0 END) AS "records_over_half",
       SUM(CASE WHEN "top" >= 0.9 THEN "n" ELSE 0 END) AS "records_over_90",
       SUM(CASE WHEN "top" >= 1 - 1e-9 THEN "n" ELSE 0 END) AS "records_certain",
       {{ exact_sum('"n" * "h"') }} / SUM("n") AS "mean_entropy",
       MAX("top0") AS "baseline_max_posterior",
       SUM(CASE WHEN "top0" >= 0.5 THEN "n" ELSE 0 END) AS "baseline_records_over_half",
       SUM(CASE WHEN "top0" >= 0.9 THEN "n" ELSE 0 END) AS "baseline_records_over_90",
       SUM(CASE WHEN "top0" >= 1 - 1e-9 THEN "n" ELSE 0 END) AS "baseline_records_certain",
       {{ exact_sum('"n" * "h0"') }} / SUM("n") AS "baseline_mean_entropy"
FROM rec
