{# Privacy-MaxEnt's answer: P*(S | Q) (Section 3.1: sum over the buckets of P*(q, s, b), over P(q)), one row
   per quasi-identifier value and sensitive value it may hold, with the estimate without knowledge beside
   it (Theorem 5's closed form). Values are shown as text.
   Sums are exact (`exact_sum`): the same in every run. #}
{% from "_macros.sql" import exact_sum %}
CREATE OR REPLACE TABLE {{ name | ident }} AS
WITH est AS (
    SELECT "q", "s", {{ exact_sum('"x"') }} AS "x", {{ exact_sum('"x0"') }} AS "x0"
    FROM {{ estimate | ident }}
    GROUP BY "q", "s"
), qn AS (
    SELECT "q", SUM("n") AS "n" FROM {{ qb | ident }} GROUP BY "q"
)
SELECT
{% for c, m in cols %}
    m{{ loop.index0 }}."value" AS {{ c | ident }},
{% endfor %}
    sm."value" AS {{ sensitive | ident }},
    est."x" / qn."n" AS "probability",
    est."x0" / qn."n" AS "baseline"
FROM est
JOIN qn ON qn."q" = est."q"
JOIN {{ qtable | ident }} AS qt ON qt."q" = est."q"
{% for c, m in cols %}
JOIN {{ m | ident }} AS m{{ loop.index0 }} ON m{{ loop.index0 }}."code" = qt.{{ ('a%d' % loop.index0) | ident }}
{% endfor %}
JOIN {{ smap | ident }} AS sm ON sm."code" = est."s"
WHERE est."x" > 0 OR est."x0" > 0
ORDER BY est."q", est."s"
