{# Privacy-MaxEnt Section 4.4: the top association rules between quasi-identifier attributes and the
   sensitive value, mined from the original records (`truth`: per q and s, how many records).

   Q_v ranges over every non-empty subset of the attributes with every value combination present
   (GROUP BY CUBE; g is the GROUPING bitmask, a set bit = attribute not in Q_v, its code shown as -1; built
   from one-argument GROUPINGs, the first attribute the highest bit, as GROUPING(a0, ..., ak-1) would be:
   Spark's GROUPING takes one argument; the number of attributes in Q_v is k minus their sum, which every
   engine has, unlike bit_count).
   Positive rule Q_v => s: support n(Q_v, s), confidence n(Q_v, s) / n(Q_v). Negative rule Q_v => not s:
   support n(Q_v) - n(Q_v, s), confidence 1 - n(Q_v, s) / n(Q_v), over every sensitive value (also those
   Q_v never has). Kept: support >= min_support records; ranked by confidence, then support, then fewer
   attributes, then codes (a total order, so the top K is deterministic). #}
WITH coded AS (
    SELECT {% for i in range(k) %}q.{{ ('a%d' % i) | ident }}, {% endfor %}t."s", t."n"
    FROM {{ truth | ident }} AS t
    JOIN {{ qtable | ident }} AS q ON q."q" = t."q"
), grouped AS (
    SELECT
{% for i in range(k) %}
        COALESCE({{ ('a%d' % i) | ident }}, -1) AS {{ ('a%d' % i) | ident }},
{% endfor %}
        "s",
        ({% for i in range(k) %}GROUPING({{ ('a%d' % i) | ident }}) * {{ 2 ** (k - 1 - i) }}{% if not loop.last %} + {% endif %}{% endfor %}) AS "g",
        {{ k | int }} - ({% for i in range(k) %}GROUPING({{ ('a%d' % i) | ident }}){% if not loop.last %} + {% endif %}{% endfor %}) AS "attributes",
        SUM("n") AS "n"
    FROM coded
    GROUP BY "s", CUBE({% for i in range(k) %}{{ ('a%d' % i) | ident }}{% if not loop.last %}, {% endif %}{% endfor %})
), counted AS (
    SELECT *, SUM("n") OVER (PARTITION BY "g"{% for i in range(k) %}, {{ ('a%d' % i) | ident }}{% endfor %}) AS "nq"
    FROM grouped
    WHERE "g" <> {{ full | int }}
{% if attributes %}
      AND "attributes" = {{ attributes | int }}
{% endif %}
){% if negative %}, qv AS (
    SELECT DISTINCT "g"{% for i in range(k) %}, {{ ('a%d' % i) | ident }}{% endfor %}, "nq", "attributes"
    FROM counted
    WHERE "nq" >= {{ min_support | int }}
), candidates AS (
    SELECT qv."g"{% for i in range(k) %}, qv.{{ ('a%d' % i) | ident }}{% endfor %}, sv."code" AS "s",
           qv."nq", qv."attributes", COALESCE(c."n", 0) AS "n"
    FROM qv
    CROSS JOIN {{ smap | ident }} AS sv
    LEFT JOIN counted AS c
      ON c."g" = qv."g" AND c."s" = sv."code"{% for i in range(k) %} AND c.{{ ('a%d' % i) | ident }} = qv.{{ ('a%d' % i) | ident }}{% endfor %}

)
SELECT "g"{% for i in range(k) %}, {{ ('a%d' % i) | ident }}{% endfor %}, "s", "attributes",
       "nq" - "n" AS "support", "nq", 1.0 - CAST("n" AS DOUBLE) / "nq" AS "confidence"
FROM candidates
WHERE "nq" - "n" >= {{ min_support | int }}
{% else %}

SELECT "g"{% for i in range(k) %}, {{ ('a%d' % i) | ident }}{% endfor %}, "s", "attributes",
       "n" AS "support", "nq", CAST("n" AS DOUBLE) / "nq" AS "confidence"
FROM counted
WHERE "n" >= {{ min_support | int }}
{% endif %}
ORDER BY "confidence" DESC, "support" DESC, "attributes", "g" DESC{% for i in range(k) %}, {{ ('a%d' % i) | ident }}{% endfor %}, "s"
LIMIT {{ limit | int }}
