{# sum of g ln g over the generalized cells (q*-block, sensitive values) of one node, leaving out the
   blocks it suppresses: the node-dependent part of the KL-divergence, as how many cells have each count g
   (`frequency.xlogx_by_count` adds the terms exactly). With an entity key g counts the cell's (person, original
   cell) pairs, the wide frequency set's rows: the sum of its original cells' counts of persons. #}
SELECT "g", COUNT(*) AS "cells"
FROM (
    SELECT CAST({% if entity %}COUNT(*){% else %}SUM(w."cnt"){% endif %} AS BIGINT) AS "g"
    FROM {{ table | ident }} AS w
{% if suppressed %}
    WHERE NOT EXISTS (SELECT 1 FROM {{ suppressed | ident }} AS sp
                      WHERE {% for c in block_cols %}sp.{{ c | ident }} = w.{{ c | ident }}{% if not loop.last %} AND {% endif %}{% endfor %})
{% endif %}
    GROUP BY {% for c in block_cols + sens_cols %}w.{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

) AS cells
GROUP BY "g"
