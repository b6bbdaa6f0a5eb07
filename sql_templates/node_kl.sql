{# KL-divergence between the original's distribution over Q x S (the cells of the wide frequency set)
   and the generalized table's, whose cell counts spread uniformly over the area they cover
   (TKDD Section 6). Rows of suppressed blocks count as generalized to the root of every hierarchy.
   `qis` holds every quasi-identifier with its level in the node. #}
WITH cells AS (
    SELECT
{% for q, lvl in qis %}
        CASE WHEN w."sup" THEN -1 ELSE w.{{ q.col(lvl) | ident }} END AS {{ ('b%d' % loop.index0) | ident }},
{% endfor %}
{% for s in sensitives %}
        w.{{ s.col | ident }},
{% endfor %}
        CAST(w."cnt" AS DOUBLE) AS "cnt",
        CASE WHEN w."sup" THEN CAST({{ total_area }} AS DOUBLE)
             ELSE CAST(1 AS DOUBLE){% for q, lvl in qis %} * m{{ loop.index0 }}.{{ ('n%d' % lvl) | ident }}{% endfor %}

        END AS "area"
    FROM (
        SELECT w0.*, {% if suppressed %}(sp.{{ qis[0][0].col(qis[0][1]) | ident }} IS NOT NULL){% else %}FALSE{% endif %} AS "sup"
        FROM {{ wide | ident }} AS w0
{% if suppressed %}
        LEFT JOIN {{ suppressed | ident }} AS sp
          ON {% for q, lvl in qis %}sp.{{ q.col(lvl) | ident }} = w0.{{ q.col(lvl) | ident }}{% if not loop.last %} AND {% endif %}{% endfor %}

{% endif %}
    ) AS w
{% for q, lvl in qis %}
    JOIN {{ q.map_table | ident }} AS m{{ loop.index0 }} ON m{{ loop.index0 }}."c0" = w.{{ q.col(0) | ident }}
{% endfor %}
),
generalized AS (
    SELECT *, SUM("cnt") OVER (PARTITION BY {% for q, lvl in qis %}{{ ('b%d' % loop.index0) | ident }}{% if not loop.last or sensitives %}, {% endif %}{% endfor %}{% for s in sensitives %}{{ s.col | ident }}{% if not loop.last %}, {% endif %}{% endfor %}) AS "gcnt"
    FROM cells
)
SELECT SUM("cnt" / {{ rows | int }} * LN("cnt" * "area" / "gcnt")) AS "kl"
FROM generalized
