{# One anonymized marginal as released: each attribute's label at the marginal's level (a
   quasi-identifier through its mapping table, the sensitive attribute as it is), and the count of
   rows of each combination, read from the source. Columns keep the source's names; the count column
   is named by sqlanon. #}
SELECT
{% for a in columns %}
{% if a.map %}
    m{{ loop.index0 }}.{{ ('l%d' % a.level) | ident }} AS {{ a.name | ident }},
{% else %}
    src.{{ a.name | ident }},
{% endif %}
{% endfor %}
    COUNT(*) AS {{ count_col | ident }}
FROM {{ source | relation }} AS src
{% for a in columns %}
{% if a.map %}
JOIN {{ a.map | relation }} AS m{{ loop.index0 }} ON m{{ loop.index0 }}."value" = CAST(src.{{ a.name | ident }} AS VARCHAR)
{% endif %}
{% endfor %}
GROUP BY {% for a in columns %}{% if a.map %}m{{ loop.index0 }}.{{ ('l%d' % a.level) | ident }}{% else %}src.{{ a.name | ident }}{% endif %}{% if not loop.last %}, {% endif %}{% endfor %}
