{# sum of g ln g over the generalized cells (q*-block, sensitive values) of one node, leaving out the
   blocks it suppresses: one number, the node-dependent part of the KL-divergence. #}
SELECT SUM("g" * LN("g"))
FROM (
    SELECT CAST({% if entity %}COUNT(DISTINCT w."e"){% else %}SUM(w."cnt"){% endif %} AS DOUBLE) AS "g"
    FROM {{ table | ident }} AS w
{% if suppressed %}
    WHERE NOT EXISTS (SELECT 1 FROM {{ suppressed | ident }} AS sp
                      WHERE {% for c in block_cols %}sp.{{ c | ident }} = w.{{ c | ident }}{% if not loop.last %} AND {% endif %}{% endfor %})
{% endif %}
    GROUP BY {% for c in block_cols + sens_cols %}w.{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

) AS cells
