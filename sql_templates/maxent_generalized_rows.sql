{# Privacy-MaxEnt on a generalized release (the paper's future work, Section 8): every released row with
   its quasi-identifiers as they are, its sensitive value, and its q*-block as the bucket (numbered 1..
   in the order of the blocks' codes at the node's levels). Rows of suppressed blocks are not released. #}
CREATE OR REPLACE TEMPORARY TABLE {{ out | ident }} AS
SELECT
{% for q in qis %}
    src.{{ q.name | ident }},
{% endfor %}
    src.{{ sensitive | ident }},
    DENSE_RANK() OVER (ORDER BY {% for q, level in node %}m{{ loop.index0 }}.{{ ('c%d' % level) | ident }}{% if not loop.last %}, {% endif %}{% endfor %}) AS "bucket"
FROM {{ source | ident }} AS src
{% for q in qis %}
JOIN {{ q.map_table | ident }} AS m{{ loop.index0 }} ON m{{ loop.index0 }}."value" = CAST(src.{{ q.name | ident }} AS VARCHAR)
{% endfor %}
{% if suppressed %}
WHERE NOT EXISTS (
    SELECT 1 FROM {{ suppressed | ident }} AS sp
    WHERE {% for q, level in node %}sp.{{ q.col(level) | ident }} = m{{ loop.index0 }}.{{ ('c%d' % level) | ident }}{% if not loop.last %} AND {% endif %}{% endfor %}

)
{% endif %}
