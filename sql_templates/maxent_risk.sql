{# Privacy-MaxEnt risk per quasi-identifier value (P*(s | q)) or, with per_bucket, per published record
   group (P*(s | q, b): the records of bucket b with quasi-identifier q, what an adversary who links a person
   to those rows learns): the largest posterior, its value (ties: the first value), and the entropy
   -sum p ln p in nats; the same without knowledge (Theorem 5) beside them.
   Sums are exact (`exact_sum`): the same in every run. #}
{% from "_macros.sql" import exact_sum %}
CREATE OR REPLACE TABLE {{ name | ident }} AS
WITH est AS (
    SELECT {% if per_bucket %}"b", {% endif %}"q", "s", {{ exact_sum('"x"') }} AS "x", {{ exact_sum('"x0"') }} AS "x0"
    FROM {{ estimate | ident }}
    GROUP BY {% if per_bucket %}"b", {% endif %}"q", "s"
), base AS (
    SELECT {% if per_bucket %}"b", {% endif %}"q", SUM("n") AS "n"
    FROM {{ qb | ident }}
    GROUP BY {% if per_bucket %}"b", {% endif %}"q"
), p AS (
    SELECT est.*, base."n", est."x" / base."n" AS "p", est."x0" / base."n" AS "p0",
           ROW_NUMBER() OVER (PARTITION BY {% if per_bucket %}est."b", {% endif %}est."q" ORDER BY est."x" DESC, est."s") AS "rank",
           ROW_NUMBER() OVER (PARTITION BY {% if per_bucket %}est."b", {% endif %}est."q" ORDER BY est."x0" DESC, est."s") AS "rank0"
    FROM est
    JOIN base ON base."q" = est."q"{% if per_bucket %} AND base."b" = est."b"{% endif %}

), agg AS (
    SELECT {% if per_bucket %}"b", {% endif %}"q", MAX("n") AS "records",
           MAX("p") AS "max_probability",
           MAX(CASE WHEN "rank" = 1 THEN "s" END) AS "top",
           0.0 - {{ exact_sum('CASE WHEN "p" > 0 THEN "p" * LN("p") ELSE 0 END') }} AS "entropy",
           MAX("p0") AS "baseline_max_probability",
           MAX(CASE WHEN "rank0" = 1 THEN "s" END) AS "top0",
           0.0 - {{ exact_sum('CASE WHEN "p0" > 0 THEN "p0" * LN("p0") ELSE 0 END') }} AS "baseline_entropy"
    FROM p
    GROUP BY {% if per_bucket %}"b", {% endif %}"q"
)
SELECT
{% if per_bucket %}
    bk."label" AS "bucket",
{% endif %}
{% for c, m in cols %}
    m{{ loop.index0 }}."value" AS {{ c | ident }},
{% endfor %}
    agg."records",
    sm."value" AS "top_value",
    agg."max_probability",
    agg."entropy",
    sm0."value" AS "baseline_top_value",
    agg."baseline_max_probability",
    agg."baseline_entropy"
FROM agg
JOIN {{ qtable | ident }} AS qt ON qt."q" = agg."q"
{% for c, m in cols %}
JOIN {{ m | ident }} AS m{{ loop.index0 }} ON m{{ loop.index0 }}."code" = qt.{{ ('a%d' % loop.index0) | ident }}
{% endfor %}
JOIN {{ smap | ident }} AS sm ON sm."code" = agg."top"
JOIN {{ smap | ident }} AS sm0 ON sm0."code" = agg."top0"
{% if per_bucket %}
JOIN {{ buckets | ident }} AS bk ON bk."b" = agg."b"
{% endif %}
ORDER BY {% if per_bucket %}agg."b", {% endif %}agg."q"
