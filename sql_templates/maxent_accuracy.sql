{# Privacy-MaxEnt Section 7, estimation accuracy: the weighted Kullback-Leibler distance
   sum_q P(q) sum_s P(s | q) ln(P(s | q) / P*(s | q)) between the original's conditional distribution and the
   estimate, in nats. With counts (n(q, s) of the original, x(q, s) = N P*(q, s), and n(q) shared) each term
   is n(q, s) / N * ln(n(q, s) / x(q, s)). `missed` counts original cells the estimate gives probability 0
   (an infinite distance: the knowledge was false of the data). x0 is the estimate without knowledge.
   Sums are exact (`exact_sum`): the same in every run. #}
{% from "_macros.sql" import exact_sum %}
WITH est AS (
    SELECT "q", "s", {{ exact_sum('"x"') }} AS "x", {{ exact_sum('"x0"') }} AS "x0"
    FROM {{ estimate | ident }}
    GROUP BY "q", "s"
)
SELECT {{ exact_sum('CASE WHEN e."x" > 0 THEN t."n" * LN(t."n" / e."x") ELSE 0 END') }} / {{ records | int }} AS "kl",
       {{ exact_sum('CASE WHEN e."x0" > 0 THEN t."n" * LN(t."n" / e."x0") ELSE 0 END') }} / {{ records | int }} AS "kl0",
       COUNT(*) FILTER (WHERE COALESCE(e."x", 0) <= 0) AS "missed",
       COUNT(*) FILTER (WHERE COALESCE(e."x0", 0) <= 0) AS "missed0"
FROM {{ truth | ident }} AS t
LEFT JOIN est AS e ON e."q" = t."q" AND e."s" = t."s"
